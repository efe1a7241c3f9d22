//! `Display` prints what NumPy 2.4's `str` prints for the same array, on
//! every device and through views (the expected strings were printed by
//! NumPy); `Debug` adds the shape, dtype, device and a view's strides.

mod common;

use common::devices;
use webtensor::{Complex32, DType, Device, Tensor, f16};

fn f32s(v: &[f32], shape: &[usize], dev: &Device) -> Tensor {
    Tensor::from_slice(v, shape, dev).unwrap()
}

fn cases(dev: &Device) -> Vec<(&'static str, Tensor, &'static str)> {
    let arange = |n: usize| Tensor::arange(0.0f32, n as f32, 1.0, dev).unwrap();
    let iarange = |n: i32| Tensor::arange(0i32, n, 1, dev).unwrap();
    vec![
        (
            "wrap",
            arange(40).reshape([2, 20]).unwrap(),
            "[[ 0.  1.  2.  3.  4.  5.  6.  7.  8.  9. 10. 11. 12. 13. 14. 15. 16. 17.\n  18. 19.]\n [20. 21. 22. 23. 24. 25. 26. 27. 28. 29. 30. 31. 32. 33. 34. 35. 36. 37.\n  38. 39.]]",
        ),
        (
            "summary",
            arange(2000),
            "[0.000e+00 1.000e+00 2.000e+00 ... 1.997e+03 1.998e+03 1.999e+03]",
        ),
        (
            "ints",
            Tensor::from_slice(&[1i32, -200, 3, 4], [2, 2], dev).unwrap(),
            "[[   1 -200]\n [   3    4]]",
        ),
        (
            "bools",
            Tensor::from_slice(&[true, false], [2], dev).unwrap(),
            "[ True False]",
        ),
        (
            "cube",
            iarange(8).reshape([2, 2, 2]).unwrap(),
            "[[[0 1]\n  [2 3]]\n\n [[4 5]\n  [6 7]]]",
        ),
        (
            "complex",
            Tensor::from_complex(
                &[Complex32::new(1.0, 2.0), Complex32::new(-0.5, -1.25)],
                [2],
                dev,
            )
            .unwrap(),
            "[ 1. +2.j   -0.5-1.25j]",
        ),
        (
            "half",
            Tensor::from_slice(
                &[
                    f16::from_f64(0.1),
                    f16::from_f64(1.0 / 3.0),
                    f16::from_f64(100.0),
                ],
                [3],
                dev,
            )
            .unwrap(),
            "[  0.1      0.3333 100.    ]",
        ),
        (
            "grid",
            iarange(2000).reshape([20, 100]).unwrap(),
            "[[   0    1    2 ...   97   98   99]\n [ 100  101  102 ...  197  198  199]\n [ 200  201  202 ...  297  298  299]\n ...\n [1700 1701 1702 ... 1797 1798 1799]\n [1800 1801 1802 ... 1897 1898 1899]\n [1900 1901 1902 ... 1997 1998 1999]]",
        ),
        (
            "special",
            f32s(&[f32::NAN, 1.5, f32::NEG_INFINITY], &[3], dev),
            "[ nan  1.5 -inf]",
        ),
        (
            "sums",
            f32s(&[0.1, 0.2, 0.7], &[3], dev).add_scalar(0.2).unwrap(),
            "[0.3 0.4 0.9]",
        ),
        (
            "wide_u8",
            Tensor::arange(200u8, 240, 1, dev).unwrap(),
            "[200 201 202 203 204 205 206 207 208 209 210 211 212 213 214 215 216 217\n 218 219 220 221 222 223 224 225 226 227 228 229 230 231 232 233 234 235\n 236 237 238 239]",
        ),
        (
            "matrix_t",
            arange(12)
                .reshape([3, 4])
                .unwrap()
                .t()
                .div_scalar(3.0)
                .unwrap(),
            "[[0.         1.3333334  2.6666667 ]\n [0.33333334 1.6666666  3.        ]\n [0.6666667  2.         3.3333333 ]\n [1.         2.3333333  3.6666667 ]]",
        ),
        (
            "small",
            f32s(&[1e-5, 2.5, -3.0], &[3], dev),
            "[ 1.0e-05  2.5e+00 -3.0e+00]",
        ),
        (
            "boolgrid",
            iarange(1200)
                .reshape([40, 30])
                .unwrap()
                .remainder_scalar(3)
                .unwrap()
                .eq_scalar(0)
                .unwrap(),
            "[[ True False False ...  True False False]\n [ True False False ...  True False False]\n [ True False False ...  True False False]\n ...\n [ True False False ...  True False False]\n [ True False False ...  True False False]\n [ True False False ...  True False False]]",
        ),
        ("scalar f32", f32s(&[3.5], &[], dev), "3.5"),
        ("scalar whole f32", f32s(&[2.0], &[], dev), "2.0"),
        (
            "scalar i32",
            Tensor::from_slice(&[7i32], [], dev).unwrap(),
            "7",
        ),
        (
            "scalar bool",
            Tensor::from_slice(&[true], [], dev).unwrap(),
            "True",
        ),
        (
            "scalar c64",
            Tensor::from_complex(&[Complex32::new(1.0, 2.0)], [], dev).unwrap(),
            "(1+2j)",
        ),
        // NumPy's lone complex of a real part of +0: the imaginary part.
        (
            "scalar c64 imaginary",
            Tensor::from_complex(&[Complex32::new(0.0, 2.0)], [], dev).unwrap(),
            "2j",
        ),
        (
            "scalar c64 -0j",
            Tensor::from_complex(&[Complex32::new(0.0, -0.0)], [], dev).unwrap(),
            "-0j",
        ),
        (
            "scalar c64 nanj",
            Tensor::from_complex(&[Complex32::new(0.0, f32::NAN)], [], dev).unwrap(),
            "nanj",
        ),
        (
            "scalar c64 of -0",
            Tensor::from_complex(&[Complex32::new(-0.0, 2.0)], [], dev).unwrap(),
            "(-0+2j)",
        ),
        // f16 2^-6 reads back from 0.01563 (NumPy's), not the nearest
        // 0.01562 (a tie rounded to even), which another f16 is nearer.
        (
            "f16 power of two",
            f32s(&[0.015625, 1.0], &[2], dev)
                .to_dtype(DType::F16)
                .unwrap(),
            "[0.01563 1.     ]",
        ),
        (
            "f16 power of two, negative",
            f32s(&[-0.015625, 0.5], &[2], dev)
                .to_dtype(DType::F16)
                .unwrap(),
            "[-0.01563  0.5    ]",
        ),
        (
            "scalar f16 power of two",
            f32s(&[0.015625], &[], dev).to_dtype(DType::F16).unwrap(),
            "0.01563",
        ),
        (
            "empty",
            Tensor::zeros([2, 0], DType::F32, dev).unwrap(),
            "[]",
        ),
        // Shortest digits halfway between two of one length take the even
        // one, as NumPy's Dragon4 (Rust's shortest form took the upper):
        // 44601.5625, 1225.15625 and 1825365.25, exact in f32.
        ("tie", f32s(&[713625.0 / 16.0], &[1], dev), "[44601.562]"),
        (
            "tie beside a short value",
            f32s(&[39205.0 / 32.0, 1.5], &[2], dev),
            "[1225.1562    1.5   ]",
        ),
        ("scalar tie", f32s(&[39205.0 / 32.0], &[], dev), "1225.1562"),
        (
            "scalar tie, scientific",
            f32s(&[7301461.0 / 4.0], &[], dev),
            "1.8253652e+06",
        ),
        (
            "complex tie",
            Tensor::from_complex(
                &[
                    Complex32::new(665.69727, 1661.5991),
                    Complex32::new(39205.0 / 32.0, 226.83781),
                ],
                [2],
                dev,
            )
            .unwrap(),
            "[ 665.69727+1661.5991j  1225.1562  +226.83781j]",
        ),
    ]
}

#[test]
fn display_matches_numpy_str() {
    for dev in devices() {
        for (name, t, want) in cases(&dev) {
            assert_eq!(t.to_string(), want, "{dev} {name}");
        }
    }
    // f64 98134297385819.125 (NumPy 2.4: 98134297385819.12).
    let tie = Tensor::from_slice(&[785074379086553.0f64 / 8.0], [], &Device::cpu()).unwrap();
    assert_eq!(tie.to_string(), "98134297385819.12");
}

#[test]
fn summaries_show_the_corners_of_strided_views() {
    // A summary of a large GPU tensor shows its corners; each of them is
    // right even when the view is reversed and stepped.
    for dev in devices() {
        let t = Tensor::arange(0i32, 3000, 1, &dev)
            .unwrap()
            .reshape([60, 50])
            .unwrap()
            .slice(webtensor::s![..;-1, ..;2])
            .unwrap();
        let s = t.to_string();
        assert!(
            s.starts_with("[[2950 2952 2954 ... 2994 2996 2998]"),
            "{dev}: {s}"
        );
        assert!(
            s.ends_with(" [   0    2    4 ...   44   46   48]]"),
            "{dev}: {s}"
        );
        assert_eq!(s.lines().count(), 7);
    }
}

#[test]
fn debug_adds_shape_dtype_device_and_view_layout() {
    let dev = Device::cpu();
    let t = f32s(&[1.0, 2.5, 3.0, 4.0], &[2, 2], &dev);
    assert_eq!(
        format!("{t:?}"),
        "tensor([[1.  2.5]\n        [3.  4. ]], shape=[2, 2], dtype=f32, device=cpu)"
    );
    assert_eq!(
        format!("{:?}", t.t()),
        "tensor([[1.  3. ]\n        [2.5 4. ]], shape=[2, 2], dtype=f32, device=cpu, strides=[1, 2], offset=0)"
    );
    // The blank line between blocks stays blank.
    let t = f32s(&[0.0, 1.0, 2.0, 3.0], &[2, 1, 2], &dev);
    assert_eq!(
        format!("{t:?}"),
        "tensor([[[0. 1.]]\n\n        [[2. 3.]]], shape=[2, 1, 2], dtype=f32, device=cpu)"
    );
}

/// An integer or bool case's tensor from its bits (two's complement).
fn integers(dtype: &str, bits: impl Iterator<Item = u64>, shape: &[usize], dev: &Device) -> Tensor {
    match dtype {
        "i32" => Tensor::from_vec(bits.map(|b| b as u32 as i32).collect(), shape, dev),
        "u32" => Tensor::from_vec(bits.map(|b| b as u32).collect(), shape, dev),
        "i64" => Tensor::from_vec(bits.map(|b| b as i64).collect(), shape, dev),
        "u8" => Tensor::from_vec(bits.map(|b| b as u8).collect(), shape, dev),
        _ => Tensor::from_vec(bits.map(|b| b != 0).collect(), shape, dev),
    }
    .unwrap()
}

/// The arrays of tests/data/numpy_print_cases.txt (1,200 generated f16, f32
/// and f64 arrays and 0-d values across every rule NumPy's printing turns
/// on, then powers of two in scientific columns of f16, f32, f64 and c64,
/// then integers, bools and c64 of every shape kind, wrapping and
/// summarised), printed as NumPy 2.4 printed them. f64 is CPU-only; f16 runs on each
/// device, native and packed.
#[test]
fn display_matches_numpy_on_generated_arrays() {
    let text = include_str!("data/numpy_print_cases.txt");
    let mut devs = devices();
    devs.extend(common::gpu_packed_f16());
    for dev in devs {
        let mut wrong = Vec::new();
        let mut count = 0;
        for line in text.lines() {
            let fields: Vec<&str> = line.split('\t').collect();
            let [dtype, shape, bits, want] = fields[..] else {
                panic!("bad case line: {line}");
            };
            let shape: Vec<usize> = shape
                .split(',')
                .filter(|s| !s.is_empty())
                .map(|s| s.parse().unwrap())
                .collect();
            let bits = bits.split(',').map(|b| u64::from_str_radix(b, 16).unwrap());
            let t = match dtype {
                "f16" => {
                    let v: Vec<f16> = bits.map(|b| f16::from_bits(b as u16)).collect();
                    Tensor::from_slice(&v, shape.as_slice(), &dev).unwrap()
                }
                "f32" => {
                    let v: Vec<f32> = bits.map(|b| f32::from_bits(b as u32)).collect();
                    Tensor::from_slice(&v, shape.as_slice(), &dev).unwrap()
                }
                "c64" => {
                    let parts: Vec<f32> = bits.map(|b| f32::from_bits(b as u32)).collect();
                    let v: Vec<Complex32> = parts
                        .chunks(2)
                        .map(|p| Complex32::new(p[0], p[1]))
                        .collect();
                    Tensor::from_complex(&v, shape.as_slice(), &dev).unwrap()
                }
                "i32" | "u32" | "i64" | "u8" | "bool" => integers(dtype, bits, &shape, &dev),
                _ if dev.is_gpu() => continue,
                _ => {
                    let v: Vec<f64> = bits.map(f64::from_bits).collect();
                    Tensor::from_slice(&v, shape.as_slice(), &dev).unwrap()
                }
            };
            count += 1;
            let got = t.to_string().replace('\n', "|");
            if got != want {
                wrong.push(format!("{dtype} {shape:?}\n  got  {got}\n  want {want}"));
            }
        }
        assert!(count >= 800, "{dev}: only {count} cases ran");
        assert!(
            wrong.is_empty(),
            "{dev}: {} of {count} differ from NumPy:\n{}",
            wrong.len(),
            wrong[..wrong.len().min(20)].join("\n")
        );
    }
}
