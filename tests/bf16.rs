//! bf16 stored values are f32 results rounded once to nearest, ties to
//! even: on the GPU (packed two to a `u32` on every adapter) bit for bit
//! what the CPU stores, through whole-word (vec4) and atomic stores, views
//! of every layout, fused programs, reductions and products. The other
//! suites run bf16 through every op with tolerances; this one checks the
//! rounding itself, which a tolerance would let a truncating store pass.

mod common;

use common::{devices, noise, read_f32};
use webtensor::{DType, Device, Tensor, bf16, s};

fn bits(t: &Tensor) -> Vec<u16> {
    t.to_vec::<bf16>()
        .unwrap()
        .iter()
        .map(|v| v.to_bits())
        .collect()
}

/// f32 values around the midpoints between bf16 neighbours (the low half
/// 0x7fff, 0x8000, 0x8001, and exact ones), over the whole exponent range
/// (no subnormals: GPUs may flush them), and the special values.
fn rounding_cases() -> Vec<f32> {
    let mut values = Vec::new();
    for (k, hi) in (0x0080u32..0x7f80)
        .step_by(97)
        .chain([0x7f7f, 0x3f80])
        .enumerate()
    {
        for low in [0x0000u32, 0x7fff, 0x8000, 0x8001, 0xffff, 0x1234] {
            let sign = if k % 3 == 0 { 0x8000_0000 } else { 0 };
            values.push(f32::from_bits(sign | (hi << 16) | low));
        }
    }
    values.extend([
        0.0,
        -0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::MAX,
        -f32::MAX,
    ]);
    values
}

#[test]
fn casts_to_bf16_round_to_nearest_even_on_every_device() {
    let values = rounding_cases();
    let want: Vec<u16> = values
        .iter()
        .map(|&v| bf16::from_f32(v).to_bits())
        .collect();
    // 0x3f80_8000 (1 + 2^-8) is a tie: it rounds to the even 1.0.
    assert!(want.contains(&0x3f80));
    for dev in devices() {
        let x = Tensor::from_vec(values.clone(), [values.len()], &dev).unwrap();
        // Whole words (contiguous, four per thread) and single elements
        // stored with atomics (a reversed view, an odd offset).
        assert_eq!(bits(&x.to_dtype(DType::BF16).unwrap()), want, "{dev}");
        let reversed = x.flip(&[0]).unwrap().to_dtype(DType::BF16).unwrap();
        let mut back = want.clone();
        back.reverse();
        assert_eq!(bits(&reversed), back, "{dev} reversed");
        let dest = Tensor::zeros([values.len() + 1], DType::BF16, &dev).unwrap();
        dest.slice(s![1..]).unwrap().assign(&x).unwrap();
        assert_eq!(bits(&dest)[1..], want[..], "{dev} at offset 1");
        // NaN stays NaN.
        let nan = Tensor::full([3], f32::NAN, DType::F32, &dev).unwrap();
        let nan = nan.to_dtype(DType::BF16).unwrap().to_vec::<bf16>().unwrap();
        assert!(nan.iter().all(|v| v.is_nan()), "{dev}");
    }
}

type BinaryOp = fn(&Tensor, &Tensor) -> Tensor;

/// Random bf16 operands of `n` elements (exact on every device).
fn operands(n: usize, dev: &Device) -> (Tensor, Tensor) {
    let t = |seed| {
        let v: Vec<bf16> = noise(n, seed)
            .iter()
            .map(|&x| bf16::from_f32(x * 7.0))
            .collect();
        Tensor::from_vec(v, [n], dev).unwrap()
    };
    (t(3), t(4))
}

#[test]
fn arithmetic_rounds_as_the_cpu_does_on_every_layout() {
    let cpu = Device::cpu();
    // Odd sizes: a tail after the whole words.
    for n in [1, 7, 64, 1001] {
        let (xc, yc) = operands(n, &cpu);
        let ops: [(&str, BinaryOp); 5] = [
            ("add", |a, b| a.add(b).unwrap()),
            ("sub", |a, b| a.sub(b).unwrap()),
            ("mul", |a, b| a.mul(b).unwrap()),
            ("maximum", |a, b| a.maximum(b).unwrap()),
            // Dropped intermediates: one fused program that rounds each.
            ("fused", |a, b| {
                let t = a.mul(b).unwrap().add(a).unwrap();
                t.sub(b).unwrap().mul_scalar(1.5).unwrap()
            }),
        ];
        for dev in devices().into_iter().filter(|d| d.is_gpu()) {
            let (xg, yg) = (xc.to_device(&dev).unwrap(), yc.to_device(&dev).unwrap());
            for (name, op) in ops {
                let what = format!("{name} of {n} on {dev}");
                assert_eq!(bits(&op(&xg, &yg)), bits(&op(&xc, &yc)), "{what}");
                // A reversed view at an offset with a stepped one.
                let half = n.div_ceil(2);
                let rev = |t: &Tensor| t.flip(&[0]).unwrap().slice(s![n - half..]).unwrap();
                let step = |t: &Tensor| t.slice(s![..;2]).unwrap();
                assert_eq!(
                    bits(&op(&rev(&xg), &step(&yg))),
                    bits(&op(&rev(&xc), &step(&yc))),
                    "{what} reversed and stepped"
                );
            }
            // In place through a stepped view.
            let (dc, dg) = (xc.clone(), xg.clone());
            let (vc, vg) = (dc.slice(s![..;3]).unwrap(), dg.slice(s![..;3]).unwrap());
            vc.mul_(&vc.clone()).unwrap();
            vg.mul_(&vg.clone()).unwrap();
            assert_eq!(bits(&dg), bits(&dc), "mul_ of {n} on {dev}");
        }
    }
}

#[test]
fn sums_and_products_of_exact_values_round_as_the_cpu_does() {
    let cpu = Device::cpu();
    // Small integers: f32 accumulation is exact in any order, so only the
    // final rounding to bf16 (sums past 256 need it) is tested.
    let ints = |n: usize, seed: u64| -> Vec<f32> {
        noise(n, seed).iter().map(|&x| (x * 9.0).round()).collect()
    };
    for (m, k, n) in [(1, 37, 1), (3, 200, 5), (67, 41, 130), (130, 66, 1)] {
        let a = Tensor::from_vec(ints(m * k, 1), [m, k], &cpu).unwrap();
        let b = Tensor::from_vec(ints(k * n, 2), [k, n], &cpu).unwrap();
        let (a, b) = (
            a.to_dtype(DType::BF16).unwrap(),
            b.to_dtype(DType::BF16).unwrap(),
        );
        let want = bits(&a.matmul(&b).unwrap());
        let want_t = bits(&b.t().matmul(&a.t()).unwrap());
        let sums = bits(&a.sum(1).unwrap());
        for dev in devices().into_iter().filter(|d| d.is_gpu()) {
            let (ag, bg) = (a.to_device(&dev).unwrap(), b.to_device(&dev).unwrap());
            let what = format!("{m}x{k}x{n} on {dev}");
            assert_eq!(bits(&ag.matmul(&bg).unwrap()), want, "{what}");
            assert_eq!(
                bits(&bg.t().matmul(&ag.t()).unwrap()),
                want_t,
                "{what} transposed"
            );
            assert_eq!(bits(&ag.sum(1).unwrap()), sums, "sum of {what}");
        }
    }
}

#[test]
fn bf16_mixes_with_the_other_dtypes_as_pytorch_does() {
    for dev in devices() {
        let h = Tensor::full([2], 1.5, DType::F16, &dev).unwrap();
        let b = Tensor::full([2], 2.0, DType::BF16, &dev).unwrap();
        let i = Tensor::full([2], 3, DType::I32, &dev).unwrap();
        assert_eq!(h.add(&b).unwrap().dtype(), DType::F32);
        assert_eq!(b.mul(&i).unwrap().dtype(), DType::BF16);
        assert_eq!(i.mul_scalar(0.5).unwrap().dtype(), DType::F32);
        assert_eq!(
            read_f32(&b.mul_scalar(0.1).unwrap()),
            [2.0 * bf16::from_f32(0.1).to_f32(); 2]
        );
        assert_eq!(read_f32(&b.add(&i).unwrap()), [5.0; 2]);
        // Past 2^8 integers need rounding: 257 is a tie, to the even 256.
        let big = Tensor::full([1], 257, DType::I32, &dev).unwrap();
        assert_eq!(read_f32(&big.to_dtype(DType::BF16).unwrap()), [256.0]);
        // Printed with the shortest digits that read back as the same bf16.
        let p = Tensor::from_vec(vec![bf16::from_f32(0.1), bf16::from_f32(3.0)], [2], &dev);
        assert_eq!(p.unwrap().to_string(), "[0.1 3. ]");
    }
}
