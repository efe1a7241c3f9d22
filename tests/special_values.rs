//! Every float op on ±0, ±1, ±inf, NaN, subnormals and the f32 extremes,
//! GPU against the CPU path (NumPy's special-value rules), in f32 and f16.
//!
//! WGSL lets a GPU flush subnormal inputs and results to zero, so for a
//! subnormal operand the GPU may also answer as the CPU does for a zero,
//! and a subnormal result may be zero; results are compared to a relative
//! 1e-5 (WGSL's transcendentals are a few ulp off) down to the dtype's
//! least normal magnitude, infinities and NaN exactly, at every magnitude (sine,
//! cosine and tangent of 3e38 too: webtensor reduces their arguments
//! itself, as WGSL's built-ins are accurate only near 0). Sine, cosine,
//! tangent, tanh and atan2 are also held to a relative error near the f32
//! ulp across magnitudes from 1e-30 to 3e38.
//!
//! An op on one tensor twice (`x - x` is NaN at infinities) and short
//! chains of fused ops (`(a - b) + b` is not `a`) must come out as the
//! CPU's, bit for bit: a driver's compiler folds such algebra unless the
//! kernel stops it.

mod common;

use common::{gpu, gpu_packed_f16};
use webtensor::{DType, Device, GpuOptions, Tensor};

const VALUES: [f32; 30] = [
    0.0,
    -0.0,
    1.0,
    -1.0,
    0.5,
    -0.5,
    1.5,
    -1.5,
    2.0,
    -3.0,
    7.25,
    f32::INFINITY,
    f32::NEG_INFINITY,
    f32::NAN,
    1e-40,
    -1e-40,
    3.0e38,
    -3.0e38,
    1e-30,
    1e5,
    -1e10,
    1e-6,
    -2.5e-3,
    8193.0,
    1.2345678e20,
    // Near 1, where WGSL bounds log's error only absolutely (2^-21: 0.3%
    // of log(1.0001)).
    1.0001,
    0.99995,
    // Where a built-in exp of ex2(x log2(e)) is 12 to 27 ulp off (sigmoid,
    // silu, expm1).
    30.0,
    -70.0,
    87.0,
];

fn ftz(x: f32) -> f32 {
    if x.is_subnormal() {
        0.0f32.copysign(x)
    } else {
        x
    }
}

type Unary = fn(&Tensor) -> webtensor::Result<Tensor>;
type Binary = fn(&Tensor, &Tensor) -> webtensor::Result<Tensor>;

fn unary_ops() -> Vec<(&'static str, Unary)> {
    vec![
        ("neg", Tensor::neg),
        ("abs", Tensor::abs),
        ("exp", Tensor::exp),
        ("log", Tensor::log),
        ("sqrt", Tensor::sqrt),
        ("rsqrt", Tensor::rsqrt),
        ("sin", Tensor::sin),
        ("cos", Tensor::cos),
        ("tanh", Tensor::tanh),
        ("sigmoid", Tensor::sigmoid),
        ("relu", Tensor::relu),
        ("gelu", Tensor::gelu),
        ("gelu_tanh", Tensor::gelu_tanh),
        ("erf", Tensor::erf),
        ("silu", Tensor::silu),
        ("floor", Tensor::floor),
        ("ceil", Tensor::ceil),
        ("round", Tensor::round),
        ("sign", Tensor::sign),
        ("recip", Tensor::recip),
        ("square", Tensor::square),
        ("tan", Tensor::tan),
        ("log1p", Tensor::log1p),
        ("expm1", Tensor::expm1),
        ("log2", Tensor::log2),
        ("exp2", Tensor::exp2),
        ("lgamma", Tensor::lgamma),
        ("digamma", Tensor::digamma),
        ("erfinv", Tensor::erfinv),
        ("erfc", Tensor::erfc),
        ("i0", Tensor::i0),
    ]
}

fn binary_ops() -> Vec<(&'static str, Binary)> {
    vec![
        ("add", Tensor::add),
        ("sub", Tensor::sub),
        ("mul", Tensor::mul),
        ("div", Tensor::div),
        ("pow", Tensor::pow),
        ("maximum", Tensor::maximum),
        ("minimum", Tensor::minimum),
        ("remainder", Tensor::remainder),
        ("atan2", Tensor::atan2),
        ("floor_divide", Tensor::floor_divide),
    ]
}

fn values(xs: &[f32], dtype: DType, dev: &Device) -> Tensor {
    Tensor::from_slice(xs, [xs.len()], dev)
        .unwrap()
        .to_dtype(dtype)
        .unwrap()
}

fn read(t: &Tensor) -> Vec<f32> {
    common::read_f32(t)
}

/// True when `got` is one of `wants` within a relative `rel` (down to the
/// dtype's least normal magnitude: an absolute floor of 1 passed any
/// result under 1e-5 as zero), or a subnormal of the dtype flushed.
fn agrees(got: f32, wants: &[f32], dtype: DType) -> bool {
    let rel = common::half_tol(dtype, 2e-3, 1e-5);
    let least_normal = match dtype {
        DType::F16 => webtensor::f16::MIN_POSITIVE.to_f32(),
        _ => f32::MIN_POSITIVE,
    };
    wants.iter().any(|&w| {
        (got.is_nan() && w.is_nan())
            || got == w
            || (got.is_finite()
                && w.is_finite()
                && (got - w).abs() <= rel * w.abs().max(least_normal))
            // A result the GPU may flush to zero.
            || (got == 0.0 && w.abs() < least_normal)
    })
}

fn gpus() -> Vec<Device> {
    gpu().into_iter().chain(gpu_packed_f16()).collect()
}

#[test]
fn unary_float_ops_follow_the_cpu_on_special_values() {
    let cpu = Device::cpu();
    let mut failures = Vec::new();
    for dev in gpus() {
        for dtype in [DType::F32, DType::F16, DType::BF16] {
            let input = values(&VALUES, dtype, &dev);
            let stored = read(&input);
            let flushed: Vec<f32> = stored.iter().map(|&x| ftz(x)).collect();
            for (name, op) in unary_ops() {
                let want = read(&op(&values(&stored, dtype, &cpu)).unwrap());
                let want_ftz = read(&op(&values(&flushed, dtype, &cpu)).unwrap());
                let got = read(&op(&input).unwrap());
                for (k, &x) in stored.iter().enumerate() {
                    if !agrees(got[k], &[want[k], want_ftz[k]], dtype) {
                        failures.push(format!(
                            "{dev} {dtype} {name}({x:e}) = {:e}, cpu {:e}",
                            got[k], want[k]
                        ));
                    }
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn binary_float_ops_follow_the_cpu_on_special_values() {
    let cpu = Device::cpu();
    let mut failures = Vec::new();
    // Every pair: a runs down the rows, b along the columns.
    let n = VALUES.len();
    let a: Vec<f32> = (0..n * n).map(|i| VALUES[i / n]).collect();
    let b: Vec<f32> = (0..n * n).map(|i| VALUES[i % n]).collect();
    for dev in gpus() {
        for dtype in [DType::F32, DType::F16, DType::BF16] {
            let (ga, gb) = (values(&a, dtype, &dev), values(&b, dtype, &dev));
            let (sa, sb) = (read(&ga), read(&gb));
            let (fa, fb): (Vec<f32>, Vec<f32>) =
                sa.iter().zip(&sb).map(|(&x, &y)| (ftz(x), ftz(y))).unzip();
            for (name, op) in binary_ops() {
                let on_cpu = |x: &[f32], y: &[f32]| {
                    read(&op(&values(x, dtype, &cpu), &values(y, dtype, &cpu)).unwrap())
                };
                let want = on_cpu(&sa, &sb);
                let wants_ftz = [on_cpu(&fa, &sb), on_cpu(&sa, &fb), on_cpu(&fa, &fb)];
                let got = read(&op(&ga, &gb).unwrap());
                for k in 0..n * n {
                    let wants = [want[k], wants_ftz[0][k], wants_ftz[1][k], wants_ftz[2][k]];
                    if !agrees(got[k], &wants, dtype) {
                        failures.push(format!(
                            "{dev} {dtype} {name}({:e}, {:e}) = {:e}, cpu {:e}",
                            sa[k], sb[k], got[k], want[k]
                        ));
                    }
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn ops_of_a_tensor_with_itself_follow_the_cpu() {
    let cpu = Device::cpu();
    let mut failures = Vec::new();
    for dev in gpus() {
        for dtype in [DType::F32, DType::F16, DType::BF16] {
            let x = values(&VALUES, dtype, &dev);
            let stored = read(&x);
            let flushed: Vec<f32> = stored.iter().map(|&v| ftz(v)).collect();
            for (name, op) in binary_ops() {
                let on_cpu = |v: &[f32]| {
                    let t = values(v, dtype, &cpu);
                    read(&op(&t, &t).unwrap())
                };
                let (want, want_ftz) = (on_cpu(&stored), on_cpu(&flushed));
                let got = read(&op(&x, &x).unwrap());
                for (k, &v) in stored.iter().enumerate() {
                    if !agrees(got[k], &[want[k], want_ftz[k]], dtype) {
                        failures.push(format!(
                            "{dev} {dtype} {name}({v:e}, itself) = {:e}, cpu {:e}",
                            got[k], want[k]
                        ));
                    }
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// `(a - b) + b`, `(a + b) - b`, `(a * b) - a * b` and `(a - a) * b`, each
/// recorded as separate ops, on every pair of normal values: additions,
/// subtractions and products round exactly once per op in WGSL as on the
/// CPU, so fused (one kernel) or not, the GPU must give the CPU's bits.
#[test]
fn fused_chains_round_each_op_as_the_cpu() {
    let normal: Vec<f32> = VALUES
        .iter()
        .copied()
        .filter(|v| !v.is_subnormal())
        .chain([1e-4, 36.0, 0.1, 3.0])
        .collect();
    let n = normal.len();
    let a: Vec<f32> = (0..n * n).map(|i| normal[i / n]).collect();
    let b: Vec<f32> = (0..n * n).map(|i| normal[i % n]).collect();
    type Chain = fn(&Tensor, &Tensor) -> webtensor::Result<Tensor>;
    let chains: [(&str, Chain); 4] = [
        ("(a - b) + b", |a, b| a.sub(b)?.add(b)),
        ("(a + b) - b", |a, b| a.add(b)?.sub(b)),
        ("a * b - a * b", |a, b| a.mul(b)?.sub(&a.mul(b)?)),
        ("(a - a) * b", |a, b| a.sub(a)?.mul(b)),
    ];
    let unfused = common::own_gpu(GpuOptions {
        flush_threshold: Some(1),
        fusion: Some(false),
        ..Default::default()
    });
    let cpu = Device::cpu();
    let mut failures = Vec::new();
    for dev in gpus().into_iter().chain(unfused) {
        for dtype in [DType::F32, DType::F16, DType::BF16] {
            let (ga, gb) = (values(&a, dtype, &dev), values(&b, dtype, &dev));
            let (ca, cb) = (values(&a, dtype, &cpu), values(&b, dtype, &cpu));
            let (sa, sb) = (read(&ca), read(&cb));
            for (name, chain) in chains {
                let want = read(&chain(&ca, &cb).unwrap());
                let got = read(&chain(&ga, &gb).unwrap());
                // A GPU may flush a subnormal product or difference to 0.
                let inner = read(&ca.mul(&cb).unwrap());
                for k in 0..n * n {
                    let same = got[k].to_bits() == want[k].to_bits()
                        || (got[k].is_nan() && want[k].is_nan());
                    let flushed = inner[k].is_subnormal() || want[k].is_subnormal();
                    if !same && !flushed {
                        failures.push(format!(
                            "{dev} {dtype} {name} at a = {:e}, b = {:e}: {:e}, cpu {:e}",
                            sa[k], sb[k], got[k], want[k]
                        ));
                    }
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures[..failures.len().min(40)].join("\n")
    );
}

/// Arguments from 1e-30 to 3e38 (a few per binade, both signs, the
/// multiples of pi/2 nearest to f32 values among them) for the
/// relative-accuracy test.
fn magnitudes() -> Vec<f32> {
    let mut v = Vec::new();
    let mut seed = 0x9e37_79b9_u32;
    for e in -100..=127 {
        for _ in 0..3 {
            seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            let mantissa = 1.0 + (seed >> 8) as f32 / (1u32 << 24) as f32;
            let x = mantissa * 2f32.powi(e);
            v.push(if seed & 1 == 1 { -x } else { x });
        }
    }
    for k in 1..40 {
        v.push(k as f32 * std::f32::consts::FRAC_PI_2);
    }
    v.extend([3.0e38, -3.0e38, 1e10, 1e5, 8192.0, 8193.0, 1e-6, 1e-3]);
    v
}

/// |got - want| within a few f32 ulp of `want` (or of the smallest
/// normal, which a GPU may flush below).
fn ulp_close(got: f32, want: f64) -> bool {
    let tol = 8.0 * f32::EPSILON as f64 * want.abs() + f32::MIN_POSITIVE as f64;
    (got.is_nan() && want.is_nan()) || (got as f64 - want).abs() <= tol
}

#[test]
fn trig_tanh_and_atan2_are_relatively_accurate_at_every_magnitude() {
    let x = magnitudes();
    // atan2 of pairs across magnitudes: a from the list, b from it reversed.
    let y: Vec<f32> = x.iter().rev().copied().collect();
    type Reference = fn(f64) -> f64;
    let exact: [(&str, Unary, Reference); 5] = [
        ("sin", Tensor::sin, f64::sin),
        ("cos", Tensor::cos, f64::cos),
        ("tan", Tensor::tan, f64::tan),
        ("tanh", Tensor::tanh, f64::tanh),
        ("erf", Tensor::erf, libm::erf),
    ];
    let mut failures = Vec::new();
    for dev in gpus() {
        let t = values(&x, DType::F32, &dev);
        for (name, op, f) in exact {
            let got = read(&op(&t).unwrap());
            for (k, &v) in x.iter().enumerate() {
                if !ulp_close(got[k], f(v as f64)) {
                    failures.push(format!(
                        "{dev} {name}({v:e}) = {:e}, want {:e}",
                        got[k],
                        f(v as f64)
                    ));
                }
            }
        }
        let got = read(&t.atan2(&values(&y, DType::F32, &dev)).unwrap());
        for k in 0..x.len() {
            let want = (x[k] as f64).atan2(y[k] as f64);
            if !ulp_close(got[k], want) {
                failures.push(format!(
                    "{dev} atan2({:e}, {:e}) = {:e}, want {want:e}",
                    x[k], y[k], got[k]
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures[..failures.len().min(40)].join("\n")
    );
}

/// `exp2` within 2 ulp of the f64 power at every exponent a normal f32
/// result has, and exact at integers (NumPy's powers of two): WGSL allows
/// its built-in 3 + 2|x| ulp.
#[test]
fn exp2_is_within_two_ulp_and_exact_at_integers() {
    let mut x: Vec<f32> = (-126..=127).map(|k| k as f32).collect();
    let mut seed = 0x2545_f491_u32;
    for _ in 0..4000 {
        seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        x.push(-126.0 + 253.99 * ((seed >> 8) as f32 / (1u32 << 24) as f32));
    }
    x.extend([
        0.5,
        -0.5,
        0.49999997,
        -0.49999997,
        1e-8,
        -1e-8,
        127.99999,
        -125.5,
    ]);
    let mut failures = Vec::new();
    for dev in gpus() {
        let got = read(&values(&x, DType::F32, &dev).exp2().unwrap());
        for (&v, &g) in x.iter().zip(&got) {
            let want = (v as f64).exp2();
            let exact = v.fract() == 0.0;
            let tol = if exact {
                0.0
            } else {
                2.0 * f32::EPSILON as f64 * want
            };
            if (g as f64 - want).abs() > tol {
                failures.push(format!("{dev} exp2({v:e}) = {g:e}, want {want:e}"));
            }
        }
        let special = [
            f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            128.0,
            -150.0,
            200.0,
        ];
        let got = read(&values(&special, DType::F32, &dev).exp2().unwrap());
        let want = [
            f32::NAN,
            f32::INFINITY,
            0.0,
            f32::INFINITY,
            0.0,
            f32::INFINITY,
        ];
        for k in 0..special.len() {
            if !(got[k] == want[k] || got[k].is_nan() && want[k].is_nan()) {
                failures.push(format!("{dev} exp2({}) = {}", special[k], got[k]));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures[..failures.len().min(40)].join("\n")
    );
}

/// f32 NaNs and infinities stored as f16 and bf16 keep their sign on every
/// device, and a NaN its payload's top bits where webtensor converts (the
/// CPU, and packed f16 on a GPU): NumPy's f16 bits (tests/data/make_nan_bits.py).
/// A GPU with native f16 converts with its own instruction, so there only the
/// sign and NaN-ness are held. bf16 keeps the top half's bits where they are
/// a NaN (signalling ones too, so that a bf16 NaN moves through f32
/// unchanged), else quiets it.
#[test]
fn sixteen_bit_stores_keep_a_nans_sign_and_payload() {
    const NUMPY_F16: [(u32, u16); 7] = [
        (0x7fc00000, 0x7e00),
        (0xffc00000, 0xfe00),
        (0x7fd02000, 0x7e81),
        (0xfffff000, 0xffff),
        (0x7fc01fff, 0x7e00),
        (0x7f800000, 0x7c00),
        (0xff800000, 0xfc00),
    ];
    let xs: Vec<f32> = NUMPY_F16.iter().map(|&(b, _)| f32::from_bits(b)).collect();
    for dev in [Some(Device::cpu()), gpu(), gpu_packed_f16()]
        .into_iter()
        .flatten()
    {
        let exact = !dev.info().native_f16;
        let x = Tensor::from_slice(&xs, [xs.len()], &dev).unwrap();
        let h: Vec<webtensor::f16> = x.to_dtype(DType::F16).unwrap().to_vec().unwrap();
        for (&(b, want), got) in NUMPY_F16.iter().zip(&h) {
            let got = got.to_bits();
            if exact {
                assert_eq!(got, want, "{dev:?}: f16 of f32 bits {b:#010x}");
            } else {
                assert_eq!(
                    got & 0x8000,
                    want & 0x8000,
                    "{dev:?}: sign of f16({b:#010x})"
                );
                assert!(
                    got & 0x7c00 == 0x7c00,
                    "{dev:?}: f16({b:#010x}) = {got:#06x}"
                );
                assert_eq!(
                    got & 0x3ff == 0,
                    want & 0x3ff == 0,
                    "{dev:?}: f16({b:#010x}) = {got:#06x}"
                );
            }
        }
        // Signalling NaNs too: whose top half is one, and one whose top
        // half is an infinity.
        let bits: Vec<u32> = NUMPY_F16
            .iter()
            .map(|&(b, _)| b)
            .chain([0x7fa00000, 0xff810000, 0x7f800001, 0xff80ffff])
            .collect();
        let xs: Vec<f32> = bits.iter().map(|&b| f32::from_bits(b)).collect();
        let x = Tensor::from_slice(&xs, [xs.len()], &dev).unwrap();
        let h: Vec<webtensor::bf16> = x.to_dtype(DType::BF16).unwrap().to_vec().unwrap();
        for (&b, got) in bits.iter().zip(&h) {
            let top = (b >> 16) as u16;
            let want = if b & 0x7fffffff > 0x7f800000 && top & 0x7f == 0 {
                top | 0x40
            } else {
                top
            };
            assert_eq!(got.to_bits(), want, "{dev:?}: bf16 of f32 bits {b:#010x}");
        }
        // And back: bf16 widens to f32 exactly, signalling NaNs too.
        let b16: Vec<u16> = vec![0x7f81, 0xffa0, 0x7fc1, 0x7f80, 0x0001, 0x8000];
        let b = b16.iter().map(|&b| webtensor::bf16::from_bits(b)).collect();
        let b = Tensor::from_vec(b, [b16.len()], &dev).unwrap();
        let wide: Vec<f32> = b.to_dtype(DType::F32).unwrap().to_vec().unwrap();
        for (&b, w) in b16.iter().zip(&wide) {
            assert_eq!(
                w.to_bits(),
                u32::from(b) << 16,
                "{dev:?}: f32 of bf16 bits {b:#06x}"
            );
        }
    }
}

/// `x^0` and `1^y` are 1 for a signaling NaN too, as NumPy's `power`
/// (2.4: `power(f32 sNaN, 0)` and `power(1, sNaN)` are 1; libm's `powf`
/// gave the CPU NaN); other powers of it are NaN.
#[test]
fn powers_of_a_signaling_nan_follow_numpy() {
    let snan = f32::from_bits(0x7f80_0001);
    for dev in common::devices() {
        let x = Tensor::from_slice(&[snan, 1.0, snan, snan], [4], &dev).unwrap();
        let y = Tensor::from_slice(&[0.0f32, snan, -0.0, 2.0], [4], &dev).unwrap();
        let got = x.pow(&y).unwrap().to_vec::<f32>().unwrap();
        assert_eq!(got[..3], [1.0; 3], "{dev}");
        assert!(got[3].is_nan(), "{dev}");
        assert_eq!(
            x.pow_scalar(0.0).unwrap().to_vec::<f32>().unwrap(),
            [1.0; 4]
        );
        if dev.is_cpu() {
            let snan = f64::from_bits(0x7ff0_0000_0000_0001);
            let x = Tensor::from_slice(&[snan, 1.0], [2], &dev).unwrap();
            let y = Tensor::from_slice(&[0.0f64, snan], [2], &dev).unwrap();
            assert_eq!(x.pow(&y).unwrap().to_vec::<f64>().unwrap(), [1.0, 1.0]);
        }
    }
}

/// `patterns` as f16 or bf16 bits, a 256 x 256 tensor on `dev`.
fn sixteen_bit_patterns(patterns: &[u16], dtype: DType, dev: &Device) -> Tensor {
    use webtensor::{bf16, f16};
    match dtype {
        DType::F16 => {
            let v: Vec<f16> = patterns.iter().map(|&b| f16::from_bits(b)).collect();
            Tensor::from_vec(v, [256, 256], dev).unwrap()
        }
        _ => {
            let v: Vec<bf16> = patterns.iter().map(|&b| bf16::from_bits(b)).collect();
            Tensor::from_vec(v, [256, 256], dev).unwrap()
        }
    }
}

/// The bits of an f16 or bf16 tensor's elements.
fn sixteen_bits(t: &Tensor) -> Vec<u16> {
    use webtensor::{bf16, f16};
    match t.dtype() {
        DType::F16 => t
            .to_vec::<f16>()
            .unwrap()
            .iter()
            .map(|v| v.to_bits())
            .collect(),
        _ => t
            .to_vec::<bf16>()
            .unwrap()
            .iter()
            .map(|v| v.to_bits())
            .collect(),
    }
}

/// Gathers and scatters move f16 and bf16 values as copies do: every one
/// of the 65,536 bit patterns unchanged, signalling NaNs and payloads too
/// (a GPU's f16 gather converted through f32, so sort, topk and unique
/// gave 0x7e00 for every NaN, or quieted them where f16 is packed), on
/// every device: index_select along either axis (i32 and i64 indices),
/// gather, scatter, and the values sort gathers.
#[test]
fn sixteen_bit_gathers_and_scatters_move_every_bit_pattern() {
    let patterns: Vec<u16> = (0..=u16::MAX).collect();
    // A permutation of 256: i -> 97 i + 13 (mod 256).
    let perm: Vec<usize> = (0..256).map(|i| (97 * i + 13) % 256).collect();
    for dev in common::devices() {
        for dtype in [DType::F16, DType::BF16] {
            let t = sixteen_bit_patterns(&patterns, dtype, &dev);
            let bits_of = sixteen_bits;
            let at = |r: usize, c: usize| patterns[256 * r + c];
            let wide: Vec<i64> = perm.iter().map(|&p| p as i64).collect();
            let narrow: Vec<i32> = perm.iter().map(|&p| p as i32).collect();
            let rows = Tensor::from_slice(&wide, [256], &dev).unwrap();
            let columns = Tensor::from_slice(&narrow, [256], &dev).unwrap();
            let by_rows: Vec<u16> = perm
                .iter()
                .flat_map(|&r| (0..256).map(move |c| at(r, c)))
                .collect();
            let by_columns: Vec<u16> = (0..256)
                .flat_map(|r| perm.iter().map(move |&c| at(r, c)))
                .collect();
            let index = columns
                .broadcast_to([256, 256])
                .unwrap()
                .contiguous()
                .unwrap();
            let cases = [
                (
                    "index_select rows",
                    t.index_select(&rows, 0).unwrap(),
                    by_rows,
                ),
                (
                    "index_select columns",
                    t.index_select(&columns, 1).unwrap(),
                    by_columns.clone(),
                ),
                ("gather", t.gather(&index, 1).unwrap(), by_columns),
            ];
            for (what, got, want) in &cases {
                assert!(bits_of(got) == *want, "{dtype} {what} on {dev}");
            }
            // scatter writes t's row r at column perm[c]: the inverse.
            let dest = Tensor::zeros([256, 256], dtype, &dev).unwrap();
            let scattered = dest.scatter(&index, &t, 1).unwrap();
            let mut want = vec![0u16; 65536];
            for r in 0..256 {
                for (c, &p) in perm.iter().enumerate() {
                    want[256 * r + p] = at(r, c);
                }
            }
            assert!(bits_of(&scattered) == want, "{dtype} scatter on {dev}");
            // A sort gathers its values: each line's bits are its own,
            // only reordered.
            let sorted = bits_of(&t.sort(1, webtensor::SortOrder::Ascending).unwrap());
            for r in 0..256 {
                let mut line = sorted[256 * r..256 * (r + 1)].to_vec();
                line.sort_unstable();
                let own: Vec<u16> = (0..256).map(|c| at(r, c)).collect();
                assert!(line == own, "{dtype} sort of row {r} on {dev}");
            }
        }
    }
}

/// Copies of f16 and bf16 views move every one of the 65,536 bit patterns
/// unchanged (NumPy's copies are bit copies), signalling NaNs and payloads
/// too, on every device and through every way the copy kernel walks a view:
/// whole 16-byte entries, a transpose through workgroup tiles, reversed
/// rows, steps along a row, a broadcast, an odd offset; read back, written
/// into a view, and saved as `.npy` (f16) and safetensors.
#[test]
fn sixteen_bit_copies_move_every_bit_pattern() {
    use webtensor::{io, s};
    let patterns: Vec<u16> = (0..=u16::MAX).collect();
    for dev in common::devices() {
        for dtype in [DType::F16, DType::BF16] {
            let t = sixteen_bit_patterns(&patterns, dtype, &dev);
            let bits_of = sixteen_bits;
            // Each view with the patterns it selects, by index arithmetic.
            let at = |r: usize, c: usize| patterns[256 * r + c];
            let views: Vec<(&str, Tensor, Vec<u16>)> = vec![
                (
                    "transposed",
                    t.t(),
                    (0..256)
                        .flat_map(|c| (0..256).map(move |r| at(r, c)))
                        .collect(),
                ),
                (
                    "reversed rows",
                    t.flip(&[1]).unwrap(),
                    (0..256)
                        .flat_map(|r| (0..256).rev().map(move |c| at(r, c)))
                        .collect(),
                ),
                (
                    "stepped",
                    t.slice(s![1..;3, ..;2]).unwrap(),
                    (1..256)
                        .step_by(3)
                        .flat_map(|r| (0..256).step_by(2).map(move |c| at(r, c)))
                        .collect(),
                ),
                (
                    "broadcast",
                    t.slice(s![7..8, ..])
                        .unwrap()
                        .broadcast_to([5, 256])
                        .unwrap(),
                    (0..5).flat_map(|_| (0..256).map(|c| at(7, c))).collect(),
                ),
                (
                    "offset",
                    t.reshape([65536]).unwrap().slice(s![3..65533]).unwrap(),
                    patterns[3..65533].to_vec(),
                ),
            ];
            for (label, view, want) in &views {
                let what = format!("{dtype} {label} on {dev}");
                assert!(bits_of(view) == *want, "{what}: read back");
                // Written into a view of a fresh tensor (whole 16-byte
                // entries where the view is contiguous).
                let dest = Tensor::zeros(view.dims(), dtype, &dev).unwrap();
                dest.assign(view).unwrap();
                assert!(bits_of(&dest) == *want, "{what}: assigned");
                let again = Tensor::zeros(view.dims(), dtype, &dev).unwrap();
                again.assign(&dest).unwrap();
                assert!(bits_of(&again) == *want, "{what}: assigned contiguous");
                let bytes: Vec<u8> = want.iter().flat_map(|b| b.to_le_bytes()).collect();
                // bf16 has no NumPy dtype.
                if dtype == DType::F16 {
                    let npy = io::to_npy_bytes(view).unwrap();
                    assert!(npy.ends_with(&bytes), "{what}: npy");
                }
                let st = io::to_safetensors_bytes(&[("t", view)]).unwrap();
                assert!(st.ends_with(&bytes), "{what}: safetensors");
            }
        }
    }
}
