//! Operator sugar on every device: tensors owned or borrowed on either side,
//! scalars of every Rust numeric type on either side, the `*Assign` forms
//! through views, `-`, the logical and bitwise operators, and panics that point at the
//! caller's line. Also `reshape` with an inferred extent and `flatten`.

mod common;

use common::devices;
use std::cell::RefCell;
use webtensor::{DType, Device, Scalar, Tensor, f16, s};

fn t(dev: &Device, v: &[f32]) -> Tensor {
    Tensor::from_slice(v, [v.len()], dev).unwrap()
}

fn vals(t: &Tensor) -> Vec<f32> {
    common::read_f32(t)
}

#[test]
fn every_owned_and_borrowed_combination() {
    for dev in devices() {
        let a = t(&dev, &[1.0, -2.0, 3.5, 8.0]);
        let b = t(&dev, &[4.0, 0.5, -1.0, 3.0]);
        let want_add = vec![5.0, -1.5, 2.5, 11.0];
        assert_eq!(vals(&(&a + &b)), want_add, "{dev}");
        assert_eq!(vals(&(a.clone() + &b)), want_add);
        assert_eq!(vals(&(&a + b.clone())), want_add);
        assert_eq!(vals(&(a.clone() + b.clone())), want_add);
        assert_eq!(vals(&(&a - &b)), vec![-3.0, -2.5, 4.5, 5.0]);
        assert_eq!(vals(&(&a * &b)), vec![4.0, -1.0, -3.5, 24.0]);
        assert_eq!(vals(&(&a / &b)), vec![0.25, -4.0, -3.5, 8.0 / 3.0]);
        // NumPy's remainder: the sign of the divisor.
        assert_eq!(vals(&(&a % &b)), vec![1.0, 0.0, -0.5, 2.0]);
        // A chain without a borrow in sight, as a NumPy user writes it.
        let x = t(&dev, &[1.0, 2.0, 3.0, 6.0]);
        let mean = x.mean_keepdim(..).unwrap();
        let std = x.std_keepdim(.., 0).unwrap();
        let z = (&x - &mean) / &std;
        let want: Vec<f32> = [1.0f32, 2.0, 3.0, 6.0]
            .iter()
            .map(|v| (v - 3.0) / 1.870_828_7)
            .collect();
        common::assert_close(&vals(&z), &want, 1e-6, "standardised");
        let up = t(&dev, &[1.0; 4]);
        let blurred = (up.clone() + &up + &up + &up + &up) * 0.2;
        common::assert_close(&vals(&blurred), &[1.0; 4], 1e-6, "blur");
        assert_eq!(vals(&-(&a)), vec![-1.0, 2.0, -3.5, -8.0]);
        assert_eq!(vals(&-a.clone()), vec![-1.0, 2.0, -3.5, -8.0]);
    }
}

#[test]
fn scalars_of_every_type_on_either_side() {
    for dev in devices() {
        let f = t(&dev, &[1.0, 2.0, 4.0]);
        assert_eq!(vals(&(&f + 1.5)), vec![2.5, 3.5, 5.5], "{dev}");
        assert_eq!(vals(&(&f + 1.5f32)), vec![2.5, 3.5, 5.5]);
        assert_eq!(vals(&(&f * 2)), vec![2.0, 4.0, 8.0]);
        assert_eq!(vals(&(2.0 * &f)), vec![2.0, 4.0, 8.0]);
        // Unsuffixed literals on the left need no annotation, chained too.
        let z = 2.0 * &f + 1.0;
        assert_eq!(vals(&z), vec![3.0, 5.0, 9.0]);
        assert_eq!(vals(&(1 - &f).abs().unwrap()), vec![0.0, 1.0, 3.0]);
        assert_eq!(
            vals(&(2.0 / f.clone()).sqrt().unwrap()),
            vec![2f32.sqrt(), 1.0, 0.5f32.sqrt()]
        );
        assert_eq!(vals(&(f16::from_f32(0.5) * f.clone())), vec![0.5, 1.0, 2.0]);
        assert_eq!(vals(&(10.0 - &f)), vec![9.0, 8.0, 6.0]);
        assert_eq!(vals(&(1.0 / &f)), vec![1.0, 0.5, 0.25]);
        assert_eq!(vals(&(Scalar::from(5u8) % &f)), vec![0.0, 1.0, 1.0]);
        assert_eq!(vals(&(-5i64 % f.clone())), vec![0.0, 1.0, 3.0]);

        let i = Tensor::from_slice(&[7i32, -7, 3], [3], &dev).unwrap();
        assert_eq!((&i + 1).to_vec::<i32>().unwrap(), vec![8, -6, 4], "{dev}");
        assert_eq!((&i * 2u16).to_vec::<i32>().unwrap(), vec![14, -14, 6]);
        assert_eq!((&i / 2).to_vec::<i32>().unwrap(), vec![3, -3, 1]);
        assert_eq!((&i % 2i8).to_vec::<i32>().unwrap(), vec![1, 1, 1]);
        assert_eq!((100 - &i).to_vec::<i32>().unwrap(), vec![93, 107, 97]);
        assert_eq!((20 / &i).to_vec::<i32>().unwrap(), vec![2, -2, 6]);
        assert_eq!((&i - 3usize).to_vec::<i32>().unwrap(), vec![4, -10, 0]);
        let u = Tensor::from_slice(&[1u32, 5], [2], &dev).unwrap();
        // Wrapping, as the method forms.
        assert_eq!((3 - &u).to_vec::<u32>().unwrap(), vec![2, u32::MAX - 1]);
        let h = t(&dev, &[1.0, 3.0]).to_dtype(DType::F16).unwrap();
        assert_eq!(vals(&(0.5 + &h * 2)), vec![2.5, 6.5], "{dev}");
        let z = Tensor::from_complex(&[webtensor::Complex32::new(1.0, 2.0)], [1], &dev).unwrap();
        let w: Tensor = 2.0 - &z * webtensor::Complex32::new(0.0, 1.0);
        assert_eq!(
            w.to_complex_vec().unwrap(),
            vec![webtensor::Complex32::new(4.0, -1.0)]
        );
    }
}

#[test]
fn assign_operators_write_through_views() {
    for dev in devices() {
        let base = Tensor::arange(0.0f32, 12.0, 1.0, &dev)
            .unwrap()
            .reshape([3, 4])
            .unwrap();
        let mut col = base.slice(s![.., 1..;2]).unwrap();
        col += 100.0;
        col *= &Tensor::from_slice(&[1.0f32, -1.0], [2], &dev).unwrap();
        col -= col.clone();
        let mut rev = base.slice(s![..;-1, 0]).unwrap();
        rev /= 2;
        rev %= 3.0;
        let mut all = base.clone();
        all += Tensor::ones([4], DType::F32, &dev).unwrap();
        assert_eq!(
            vals(&base),
            vec![1.0, 1.0, 3.0, 1.0, 3.0, 1.0, 7.0, 1.0, 2.0, 1.0, 11.0, 1.0],
            "{dev}"
        );
        let mut i = Tensor::from_slice(&[1i32, 2], [2], &dev).unwrap();
        i += 5;
        i *= 3u8;
        assert_eq!(i.to_vec::<i32>().unwrap(), vec![18, 21]);
    }
}

#[test]
fn logical_operators_on_bool_tensors() {
    for dev in devices() {
        let a = Tensor::from_slice(&[true, true, false, false], [4], &dev).unwrap();
        let b = Tensor::from_slice(&[true, false, true, false], [4], &dev).unwrap();
        assert_eq!(
            (&a & &b).to_vec::<bool>().unwrap(),
            [true, false, false, false]
        );
        assert_eq!(
            (&a | b.clone()).to_vec::<bool>().unwrap(),
            [true, true, true, false]
        );
        assert_eq!(
            (a.clone() ^ &b).to_vec::<bool>().unwrap(),
            [false, true, true, false]
        );
        assert_eq!((!&a).to_vec::<bool>().unwrap(), [false, false, true, true]);
        assert_eq!(
            (&a & true).to_vec::<bool>().unwrap(),
            [true, true, false, false]
        );
        let x = t(&dev, &[1.0, 5.0, 2.0]);
        let mask = !(x.gt_scalar(1.5).unwrap() & x.lt_scalar(4.0).unwrap());
        assert_eq!(mask.to_vec::<bool>().unwrap(), [true, true, false], "{dev}");
    }
}

#[test]
fn bitwise_operators_on_integer_tensors() {
    for dev in devices() {
        let x = Tensor::from_slice(&[12i32, -7, 5], [3], &dev).unwrap();
        let y = Tensor::from_slice(&[10i32, 3, 33], [3], &dev).unwrap();
        let v = |t: Tensor| t.to_vec::<i32>().unwrap();
        assert_eq!(v(&x & &y), [8, 1, 1]);
        assert_eq!(v(&x | y.clone()), [14, -5, 37]);
        assert_eq!(v(x.clone() ^ &y), [6, -6, 36]);
        assert_eq!(v(!&x), [-13, 6, -6]);
        assert_eq!(v(&x << &y), [12 << 10, -7 << 3, 0]);
        assert_eq!(v(&x >> 2), [3, -2, 1]);
        assert_eq!(v(6 & &x), [4, 0, 4]);
        assert_eq!(v(1 << &y.slice(s![..2]).unwrap()), [1024, 8]);
        // In place through a reversed view.
        let z = x.empty_like().unwrap();
        z.assign(&x).unwrap();
        let mut r = z.flip(&[0]).unwrap();
        r &= 0xF;
        r <<= 1;
        r |= &y.flip(&[0]).unwrap();
        r ^= 1;
        r >>= 1;
        assert_eq!(v(z), [13, 9, 21], "{dev}");
    }
}

thread_local! {
    static PANIC_AT: RefCell<Option<(String, u32, String)>> = const { RefCell::new(None) };
}

/// Runs `f`, which must panic; returns the file, line and message.
fn panic_site(f: impl FnOnce()) -> (String, u32, String) {
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let recorded = PANIC_AT.with(|p| {
                let mut p = p.borrow_mut();
                if p.is_some() {
                    return false;
                }
                let loc = info.location().expect("a location");
                let msg = info
                    .payload()
                    .downcast_ref::<String>()
                    .cloned()
                    .unwrap_or_default();
                *p = Some((loc.file().to_string(), loc.line(), msg));
                true
            });
            if !recorded {
                previous(info);
            }
        }));
    });
    PANIC_AT.with(|p| *p.borrow_mut() = None);
    let f = std::panic::AssertUnwindSafe(f);
    assert!(std::panic::catch_unwind(f).is_err(), "expected a panic");
    PANIC_AT
        .with(|p| p.borrow_mut().take())
        .expect("the hook saw the panic")
}

#[test]
fn operator_panics_carry_the_error_and_the_callers_line() {
    let dev = Device::cpu();
    let a = Tensor::zeros([2, 3], DType::F32, &dev).unwrap();
    let b = Tensor::zeros([4], DType::F32, &dev).unwrap();
    let i = Tensor::zeros([2], DType::I32, &dev).unwrap();
    let u = Tensor::zeros([2], DType::U8, &dev).unwrap();
    let cases: Vec<(u32, (String, u32, String), &str)> = vec![
        (line!(), panic_site(|| drop(&a + &b)), "add"),
        (line!(), panic_site(|| drop(&a / b.clone())), "div"),
        (line!(), panic_site(|| drop(&u * 300)), "mul"),
        (line!(), panic_site(|| drop(300 - &u)), "sub"),
        (line!(), panic_site(|| drop(!&a)), "bitwise_not"),
        (line!(), panic_site(|| drop(&a << 1)), "bitwise_left_shift"),
        (
            line!(),
            panic_site(|| {
                let mut x = i.clone();
                x += 0.5;
            }),
            "add",
        ),
    ];
    for (line, (file, got_line, msg), op) in cases {
        assert!(
            file.ends_with("operators.rs") && file.contains("tests"),
            "{file}"
        );
        // The closure starts on the recorded line (or the next, when
        // rustfmt breaks it).
        assert!(
            got_line >= line && got_line <= line + 4,
            "{op}: line {got_line}, want {line}"
        );
        assert!(msg.contains(op), "{msg}");
    }
}

#[test]
fn reshape_infers_one_extent_and_flattens() {
    for dev in devices() {
        let t = Tensor::arange(0i32, 24, 1, &dev).unwrap();
        assert_eq!(t.reshape([-1, 4]).unwrap().shape().dims(), &[6, 4]);
        assert_eq!(t.reshape([2, -1, 3]).unwrap().shape().dims(), &[2, 4, 3]);
        assert_eq!(t.reshape(vec![4isize, -1]).unwrap().shape().dims(), &[4, 6]);
        let e = t.reshape([-1, 5]).unwrap_err().to_string();
        assert!(e.contains("reshape") && e.contains("[-1, 5]"), "{e}");
        common::assert_op_err(t.reshape([-1, -1]), "reshape");
        common::assert_op_err(t.reshape([-3, 8]), "reshape");
        // flatten: a view when the strides allow, row-major order always.
        let m = t.reshape([4, 6]).unwrap();
        let flat = m.flatten().unwrap();
        assert!(flat.shares_storage(&m));
        let tf = m.t().flatten().unwrap();
        let want: Vec<i32> = (0..6)
            .flat_map(|c| (0..4).map(move |r| r * 6 + c))
            .collect();
        assert_eq!(tf.to_vec::<i32>().unwrap(), want, "{dev}");
        let stepped = m.slice(s![.., ..;-2]).unwrap().reshape([-1]).unwrap();
        assert_eq!(stepped.to_vec::<i32>().unwrap()[..3], [5, 3, 1]);
        let empty = Tensor::zeros([0, 3], DType::F32, &dev).unwrap();
        assert_eq!(empty.reshape([3, -1]).unwrap().shape().dims(), &[3, 0]);
        common::assert_op_err(empty.reshape([-1, 0]), "reshape");
    }
}

#[test]
fn devices_print_apart_and_a_software_adapter_is_not_the_default() {
    let Some(one) = common::own_gpu(Default::default()) else {
        return;
    };
    let two = common::own_gpu(Default::default()).unwrap();
    assert_ne!(one.to_string(), two.to_string());
    assert_ne!(one.info().id, two.info().id);
    let a = Tensor::zeros([2], DType::F32, &one).unwrap();
    let b = Tensor::zeros([2], DType::F32, &two).unwrap();
    let e = a.add(&b).unwrap_err().to_string();
    assert!(
        e.contains(&one.to_string()) && e.contains(&two.to_string()),
        "{e}"
    );
    let from = Tensor::from_slice(&[1.0f32], [2], &Device::cpu()).unwrap_err();
    assert!(from.to_string().contains("from_slice"), "{from}");
    if std::env::var("WEBTENSOR_DEVICE").is_err() {
        let default = pollster::block_on(Device::default_async()).unwrap();
        if one.info().is_software() {
            assert!(default.is_cpu());
            let why = default.info().fallback_reason.unwrap();
            assert!(
                why.contains("software") && why.contains("WEBTENSOR_DEVICE=gpu"),
                "{why}"
            );
        } else {
            assert!(default.is_gpu());
        }
    }
}
