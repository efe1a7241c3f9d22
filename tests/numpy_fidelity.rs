//! NumPy's own answers where webtensor once differed from it silently
//! (issue 26), from tests/data/numpy_op_cases.txt (written by NumPy through
//! make_op_cases.py), on every device (f16 native and packed): `rollaxis`
//! for every axis and start, float `remainder` with the divisor's sign on a
//! zero (compared bit for bit), f64 values rounded once to f16 everywhere a
//! scalar enters, and scalar operands rounded to the tensor's dtype before
//! the GPU computes. Also integer `isclose` compared exactly.

mod common;

use common::devices;
use webtensor::{DType, Device, PadMode, Tensor, f16};

fn cases(kind: &str) -> impl Iterator<Item = Vec<&'static str>> {
    include_str!("data/numpy_op_cases.txt")
        .lines()
        .map(|l| l.split(' ').collect::<Vec<_>>())
        .filter(move |w| w[0] == kind)
}

fn hex(s: &str) -> u64 {
    u64::from_str_radix(s, 16).unwrap()
}

/// Elements with these bits in `dtype` (f32 or f16).
fn from_bits(bits: &[u64], dtype: &str, dev: &Device) -> Tensor {
    let n = [bits.len()];
    match dtype {
        "f32" => {
            let v: Vec<f32> = bits.iter().map(|&b| f32::from_bits(b as u32)).collect();
            Tensor::from_slice(&v, n, dev).unwrap()
        }
        _ => {
            let v: Vec<f16> = bits.iter().map(|&b| f16::from_bits(b as u16)).collect();
            Tensor::from_slice(&v, n, dev).unwrap()
        }
    }
}

/// The elements' bits, NaN read as one pattern (NumPy's NaN payloads are
/// not compared).
fn bits_of(t: &Tensor) -> Vec<u64> {
    match t.dtype() {
        DType::F32 => t
            .to_vec::<f32>()
            .unwrap()
            .iter()
            .map(|v| {
                if v.is_nan() {
                    0x7fc0_0000
                } else {
                    v.to_bits() as u64
                }
            })
            .collect(),
        _ => t
            .to_vec::<f16>()
            .unwrap()
            .iter()
            .map(|v| {
                if v.is_nan() {
                    0x7e00
                } else {
                    v.to_bits() as u64
                }
            })
            .collect(),
    }
}

fn canonical(bits: u64, dtype: &str) -> u64 {
    match dtype {
        "f32" if f32::from_bits(bits as u32).is_nan() => 0x7fc0_0000,
        "f16" if f16::from_bits(bits as u16).is_nan() => 0x7e00,
        _ => bits,
    }
}

#[test]
fn rollaxis_matches_numpy_for_every_axis_and_start() {
    // NumPy's dims for each case; the values through NumPy's definition
    // (the axis removed and inserted at start, less one past it) on every
    // device, so that wrong strides under right dims fail too.
    let mut n = 0;
    for dev in devices() {
        for c in cases("rollaxis") {
            let dims: Vec<usize> = c[1].split(',').map(|d| d.parse().unwrap()).collect();
            let (axis, start): (isize, isize) = (c[2].parse().unwrap(), c[3].parse().unwrap());
            let count: usize = dims.iter().product();
            let t = Tensor::arange(0.0f32, count as f32, 1.0, &dev)
                .unwrap()
                .reshape(dims.as_slice())
                .unwrap();
            let got = t.rollaxis(axis, start);
            let want = match c[4] {
                "error" => {
                    assert!(got.is_err(), "rollaxis({dims:?}, {axis}, {start}) is Ok");
                    continue;
                }
                want => want
                    .split(',')
                    .map(|d| d.parse().unwrap())
                    .collect::<Vec<usize>>(),
            };
            let got = got.unwrap_or_else(|e| panic!("rollaxis({dims:?}, {axis}, {start}): {e}"));
            let what = format!("rollaxis({dims:?}, {axis}, {start}) on {dev}");
            assert_eq!(got.dims(), want, "{what}");
            let rank = dims.len() as isize;
            let a = axis.rem_euclid(rank) as usize;
            let mut at = if start < 0 { start + rank } else { start } as usize;
            if a < at {
                at -= 1;
            }
            let mut perm: Vec<usize> = (0..dims.len()).filter(|&i| i != a).collect();
            perm.insert(at, a);
            // Element k of the result (row-major over its dims) is the
            // input's at the index whose axis perm[j] is the result's j.
            let values = got.contiguous().unwrap().to_vec::<f32>().unwrap();
            for (k, &v) in values.iter().enumerate() {
                let (mut rest, mut index) = (k, vec![0; dims.len()]);
                for j in (0..dims.len()).rev() {
                    index[perm[j]] = rest % want[j];
                    rest /= want[j];
                }
                let flat = index.iter().zip(&dims).fold(0, |f, (&i, &d)| f * d + i);
                assert_eq!(v, flat as f32, "{what}: element {k}");
            }
            n += 1;
        }
    }
    assert!(n >= 200);
}

#[test]
fn float_remainder_matches_numpy_bit_for_bit() {
    for dev in devices() {
        for dtype in ["f32", "f16"] {
            let rows: Vec<_> = cases("remainder").filter(|c| c[1] == dtype).collect();
            assert!(
                rows.len() >= 1000,
                "{dtype}: {} remainder cases",
                rows.len()
            );
            let a: Vec<u64> = rows.iter().map(|c| hex(c[2])).collect();
            let b: Vec<u64> = rows.iter().map(|c| hex(c[3])).collect();
            let (ta, tb) = (from_bits(&a, dtype, &dev), from_bits(&b, dtype, &dev));
            let tensor = bits_of(&ta.remainder(&tb).unwrap());
            let mut wrong = Vec::new();
            for (k, c) in rows.iter().enumerate() {
                let want = canonical(hex(c[4]), dtype);
                if tensor[k] != want {
                    wrong.push(format!(
                        "{} % {}: {:x}, want {want:x}",
                        c[2], c[3], tensor[k]
                    ));
                }
                // The scalar form, for every tenth divisor.
                if k % 10 == 0 {
                    let divisor = from_bits(&[b[k]], dtype, &Device::cpu());
                    let s = divisor
                        .to_dtype(DType::F32)
                        .unwrap()
                        .to_vec::<f32>()
                        .unwrap()[0];
                    let one = from_bits(&[a[k]], dtype, &dev).remainder_scalar(s).unwrap();
                    let got = bits_of(&one)[0];
                    if got != want {
                        wrong.push(format!("{} % scalar {s}: {got:x}, want {want:x}", c[2]));
                    }
                }
            }
            assert!(wrong.is_empty(), "{dev} {dtype}:\n{}", wrong.join("\n"));
        }
    }
}

#[test]
fn f64_values_round_once_to_f16_everywhere_a_scalar_enters() {
    let rows: Vec<_> = cases("f16").collect();
    assert!(rows.len() >= 3800, "{} f16 cases", rows.len());
    let xs: Vec<f64> = rows.iter().map(|c| f64::from_bits(hex(c[1]))).collect();
    let want: Vec<f64> = rows.iter().map(|c| f64::from_bits(hex(c[2]))).collect();
    for dev in devices() {
        let mut wrong = Vec::new();
        for (k, &x) in xs.iter().enumerate() {
            let t = Tensor::full([1], x, DType::F16, &dev).unwrap();
            let got = t.to_vec::<f16>().unwrap()[0].to_f64();
            if got != want[k] && !(got.is_nan() && want[k].is_nan()) {
                wrong.push(format!("full({x:e}) = {got}, want {}", want[k]));
            }
        }
        assert!(wrong.is_empty(), "{dev}:\n{}", wrong.join("\n"));
        // The repros through each way a scalar enters.
        let h = |t: Tensor| t.to_vec::<f16>().unwrap()[0].to_f64();
        let zeros = Tensor::zeros([1], DType::F16, &dev).unwrap();
        assert_eq!(
            h(Tensor::full([1], 2049.0001, DType::F16, &dev).unwrap()),
            2050.0
        );
        assert_eq!(
            h(Tensor::linspace(-498.1250059734055, 0.0, 2, DType::F16, &dev).unwrap()),
            -498.25
        );
        assert_eq!(h(zeros.full_like(2049.0001).unwrap()), 2050.0);
        let filled = zeros.clone();
        filled.fill_(2049.0001).unwrap();
        assert_eq!(h(filled), 2050.0);
        let padded = zeros
            .pad(&[(1, 0)], PadMode::Constant(2049.0001.into()))
            .unwrap();
        assert_eq!(h(padded), 2050.0);
        let clamped = Tensor::full([1], 3000.0, DType::F16, &dev)
            .unwrap()
            .clamp(0.0, 2049.0001)
            .unwrap();
        assert_eq!(h(clamped), 2050.0);
    }
}

#[test]
fn scalar_operands_are_rounded_to_the_tensor_dtype_first() {
    type Op = fn(&Tensor, f64) -> webtensor::Result<Tensor>;
    let op = |name: &str| -> Op {
        match name {
            "add" => |t, s| t.add_scalar(s),
            "sub" => |t, s| t.sub_scalar(s),
            "mul" => |t, s| t.mul_scalar(s),
            "div" => |t, s| t.div_scalar(s),
            "maximum" => |t, s| t.maximum_scalar(s),
            _ => |t, s| t.minimum_scalar(s),
        }
    };
    assert!(cases("scalar").count() >= 600, "too few scalar cases");
    for dev in devices() {
        let mut wrong = Vec::new();
        for c in cases("scalar") {
            let (dtype, s) = (c[2], f64::from_bits(hex(c[4])));
            let t = from_bits(&[hex(c[3])], dtype, &dev);
            let got = bits_of(&op(c[1])(&t, s).unwrap())[0];
            let want = canonical(hex(c[5]), dtype);
            if got != want {
                wrong.push(format!(
                    "{} {dtype} {} with {s}: {got:x}, want {want:x}",
                    c[1], c[3]
                ));
            }
        }
        assert!(wrong.is_empty(), "{dev}:\n{}", wrong.join("\n"));
    }
}

#[test]
fn integer_isclose_compares_exactly() {
    for dev in devices() {
        let a = Tensor::from_slice(&[16777217i32, i32::MAX, i32::MIN, 5, -7], [5], &dev).unwrap();
        let b = Tensor::from_slice(&[16777216i32, i32::MIN, i32::MAX, 5, -6], [5], &dev).unwrap();
        let close = a
            .isclose(&b, 0.0, 0.0, false)
            .unwrap()
            .to_vec::<bool>()
            .unwrap();
        assert_eq!(close, [false, false, false, true, false], "{dev}");
        let close = a
            .isclose(&b, 0.0, 1.0, false)
            .unwrap()
            .to_vec::<bool>()
            .unwrap();
        assert_eq!(close, [true, false, false, true, true], "{dev}");
        // i32::MIN and i32::MAX are 2^32 - 1 apart: within 2^32.
        let far = a.isclose(&b, 0.0, 4294967296.0, false).unwrap();
        assert_eq!(far.to_vec::<bool>().unwrap(), [true; 5], "{dev}");
        let u = Tensor::from_slice(&[16777217u32, 0, 255], [3], &dev).unwrap();
        let v = Tensor::from_slice(&[16777216u32, u32::MAX, 255], [3], &dev).unwrap();
        let close = u
            .isclose(&v, 0.0, 0.0, false)
            .unwrap()
            .to_vec::<bool>()
            .unwrap();
        assert_eq!(close, [false, false, true], "{dev}");
    }
}

type Binary = fn(&Tensor, &Tensor) -> webtensor::Result<Tensor>;

/// `v` in `dtype` on `dev`.
fn floats(v: &[f32], dtype: DType, dev: &Device) -> Tensor {
    Tensor::from_slice(v, [v.len()], dev)
        .unwrap()
        .to_dtype(dtype)
        .unwrap()
}

/// Fails naming the first 20 of the elements `wrong` on `dev`.
fn assert_none_wrong(dev: &Device, mut wrong: Vec<String>) {
    let n = wrong.len();
    wrong.truncate(20);
    assert!(n == 0, "{dev}: {n} wrong\n{}", wrong.join("\n"));
}

/// Operand pairs for division: random bit patterns over every exponent
/// (subnormals and infinities among them), and the cases a GPU's `a * (1 /
/// b)` gets wrong: divisors past 2^126 (whose reciprocal is subnormal),
/// quotients that round to the last bit, and results that overflow or
/// fall into the subnormals.
fn division_operands() -> (Vec<f32>, Vec<f32>) {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state as u32
    };
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for _ in 0..6000 {
        let (x, y) = (f32::from_bits(next()), f32::from_bits(next()));
        // Half the pairs with exponents near each other: quotients in the
        // normal range, where rounding is decided.
        let y = if a.len() % 2 == 0 {
            f32::from_bits((y.to_bits() & 0x807f_ffff) | (x.to_bits() & 0x7f80_0000) ^ 0x0080_0000)
        } else {
            y
        };
        a.push(x);
        b.push(y);
    }
    let edges = [
        (3.0e38, 3.0e38),
        (-3.0e38, 3.0e38),
        (f32::INFINITY, 3.0e38),
        (1.0, 1.0e38),
        (1.0, f32::MAX),
        (f32::MAX, 0.5),
        (f32::MAX, f32::MAX),
        (1.0e-30, 1.0e10),
        (1.0e-38, 3.0),
        (1.0e-40, 7.0),
        (1.0e-45, 2.0),
        (3.0e-45, 2.0),
        (1.0e-45, 1.5),
        (1.1754942e-38, 0.99999994),
        (1.0, 3.0),
        (2.0, 3.0),
        (-0.6, 3.0000002),
        (65504.0, 1.0e-8),
        (1.0, 1.0e-40),
        (1.0e-40, 1.0e-40),
        (0.0, -0.0),
        (-0.0, 5.0),
        (5.0, -0.0),
        (f32::INFINITY, 0.0),
        (f32::INFINITY, f32::NEG_INFINITY),
        (7.0, f32::NEG_INFINITY),
        (f32::NAN, 1.0),
        (16777215.0, 16777216.0),
        (16777216.0, 16777215.0),
    ];
    for (x, y) in edges {
        a.push(x);
        b.push(y);
    }
    (a, b)
}

/// NumPy (IEEE) divides to the nearest f32. WGSL allows `/` 2.5 ulp, and
/// NVIDIA's Vulkan driver computes `a * (1 / b)`: an ulp off for ordinary
/// operands and 0 or NaN once |b| > 2^126. webtensor's kernels divide
/// exactly on every adapter, subnormal operands and results included;
/// `reciprocal` and the quotient inside `atan2` with them.
#[test]
fn division_is_correctly_rounded_bit_for_bit() {
    let cpu = Device::cpu();
    let (a, b) = division_operands();
    let ones = vec![1.0f32; b.len()];
    for dev in devices() {
        let mut wrong = Vec::new();
        for dtype in [DType::F32, DType::F16] {
            let ops: [(&str, Binary); 3] = [
                ("div", Tensor::div),
                ("recip", |_, y| y.recip()),
                ("div through a view", |x, y| {
                    x.flip(&[0])?.div(&y.flip(&[0])?)?.flip(&[0])
                }),
            ];
            for (name, op) in ops {
                let (x, y) = if name == "recip" {
                    (&ones, &b)
                } else {
                    (&a, &b)
                };
                let on = |d: &Device| op(&floats(x, dtype, d), &floats(y, dtype, d)).unwrap();
                let (want, got) = (bits_of(&on(&cpu)), bits_of(&on(&dev)));
                for k in 0..want.len() {
                    if got[k] != want[k] {
                        wrong.push(format!(
                            "{dtype} {name}({:e}, {:e}): {:x}, want {:x}",
                            x[k], y[k], got[k], want[k]
                        ));
                    }
                }
            }
        }
        assert_none_wrong(&dev, wrong);
    }
}

/// NumPy's `sqrt` is correctly rounded too, where WGSL allows its `sqrt`
/// the error of `1 / inverseSqrt` (several ulp): webtensor's is exact on
/// every adapter, subnormals included, and `rsqrt` is `1 / sqrt` rounded
/// twice, as on the CPU.
#[test]
fn sqrt_is_correctly_rounded_bit_for_bit() {
    let cpu = Device::cpu();
    let (mut x, _) = division_operands();
    x.extend([
        0.0,
        -0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::MAX,
        f32::MIN_POSITIVE,
        1e-45,
        2.0,
        0.5,
        16777215.0,
        16777217.0,
        1.9999999,
        2.2e-44,
    ]);
    for dev in devices() {
        let mut wrong = Vec::new();
        for dtype in [DType::F32, DType::F16] {
            type Unary = fn(&Tensor) -> webtensor::Result<Tensor>;
            let ops: [(&str, Unary); 2] = [("sqrt", Tensor::sqrt), ("rsqrt", Tensor::rsqrt)];
            for (name, op) in ops {
                let on = |d: &Device| op(&floats(&x, dtype, d)).unwrap();
                let (want, got) = (bits_of(&on(&cpu)), bits_of(&on(&dev)));
                for k in 0..want.len() {
                    if got[k] != want[k] {
                        wrong.push(format!(
                            "{dtype} {name}({:e}): {:x}, want {:x}",
                            x[k], got[k], want[k]
                        ));
                    }
                }
            }
        }
        assert_none_wrong(&dev, wrong);
    }
}

/// `maximum` and `minimum` keep the first of two equal operands (so the
/// sign of a zero), as PyTorch's and NumPy's f16 loop (NumPy 2.4's f32
/// loop keeps the second), and `relu` keeps NaN and -0: decided on the
/// bits, where a driver may otherwise compile a float select to its
/// max instruction (NVIDIA's takes +0 over -0, and 0 over NaN).
#[test]
fn maximum_minimum_and_relu_keep_signed_zeros_and_nan() {
    let cpu = Device::cpu();
    let a = [-0.0f32, 0.0, -0.0, 0.0, f32::NAN, -1.0, 2.0];
    let b = [0.0f32, -0.0, -0.0, 0.0, 1.0, f32::NAN, 2.0];
    for dev in devices() {
        for dtype in [DType::F32, DType::F16] {
            let ops: [(&str, Binary); 4] = [
                ("maximum", Tensor::maximum),
                ("minimum", Tensor::minimum),
                ("relu", |x, _| x.relu()),
                ("relu of b", |_, y| y.relu()),
            ];
            for (name, op) in ops {
                let on = |d: &Device| op(&floats(&a, dtype, d), &floats(&b, dtype, d)).unwrap();
                let (want, got) = (bits_of(&on(&cpu)), bits_of(&on(&dev)));
                assert_eq!(got, want, "{dev} {dtype} {name}");
            }
        }
    }
}

/// Units in the last place between two finite f32 of one sign (or 0 and
/// a subnormal), NaN to NaN being 0.
fn ulps(a: f32, b: f32) -> u64 {
    if a.is_nan() && b.is_nan() {
        return 0;
    }
    if a.is_nan() || b.is_nan() || a.is_sign_negative() != b.is_sign_negative() {
        return if a == b { 0 } else { u64::MAX };
    }
    (a.to_bits() as i64 - b.to_bits() as i64).unsigned_abs()
}

#[test]
fn integer_powers_are_exact_where_the_power_is_an_f32() {
    // NumPy's float32 power is C's powf, which the CPU device calls. A GPU
    // computes integer exponents with 64-bit significands: exact where the
    // power is an f32, within an ulp of powf elsewhere (powf itself is
    // within 0.82 ulp of the exact power).
    let cpu = Device::cpu();
    let exact: [(f32, f32); 11] = [
        (3.0, 7.0),
        (-7.0, 7.0),
        (2.0, -3.0),
        (1.5, 3.0),
        (10.0, 7.0),
        (0.5, 20.0),
        (-2.0, 127.0),
        (2.0, -149.0),
        (1e10, 2.0),
        (-0.75, 5.0),
        (1e-20, 1.0),
    ];
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let (mut a, mut b): (Vec<f32>, Vec<f32>) = exact.iter().copied().unzip();
    // The repros (55, 9, 2 and 32 ulp from powf before), a tie
    // (4097^2 = 2^24 + 8193 lies halfway: rounded to even here, away by
    // powf), a negative power a GPU rounded twice (an ulp off), subnormal
    // bases to powers whose exponent sum passed i32 on a GPU (inf for 0,
    // 0 for inf), then random bases over a wide range with integer
    // exponents from -60 to 60, and large ones.
    a.extend([1e10, -7.0, 3.0, 1.5, 4097.0, 1.0000001, 0.99999994]);
    b.extend([3.0, 7.0, 7.0, 41.0, 2.0, 8_388_607.0, 16_000_000.0]);
    a.extend([1.414_536_8, 1e-45, 1e-45, 1e-40, -1e-40]);
    b.extend([-2.0, 15_000_001.0, -15_000_001.0, 2.0, -3.0]);
    for _ in 0..3000 {
        let r = next();
        let mantissa = 1.0 + (r >> 40) as f32 / (1u64 << 24) as f32;
        let e = ((r >> 8) % 40) as i32 - 20;
        let sign = if r & 1 == 1 { -1.0 } else { 1.0 };
        a.push(sign * mantissa * 2f32.powi(e));
        b.push(((r >> 16) % 121) as f32 - 60.0);
    }
    for dev in devices() {
        let (want, got) = (
            floats(&a, DType::F32, &cpu)
                .pow(&floats(&b, DType::F32, &cpu))
                .unwrap(),
            floats(&a, DType::F32, &dev)
                .pow(&floats(&b, DType::F32, &dev))
                .unwrap(),
        );
        let (want, got) = (want.to_vec::<f32>().unwrap(), got.to_vec::<f32>().unwrap());
        let mut wrong = Vec::new();
        for k in 0..a.len() {
            let allowed = if k < exact.len() { 0 } else { 1 };
            if ulps(got[k], want[k]) > allowed {
                wrong.push(format!(
                    "{:e}^{}: {:e}, powf {:e}",
                    a[k], b[k], got[k], want[k]
                ));
            }
            // A GPU rounds an integer power once from 64-bit significands
            // (a negative one's reciprocal to 48 bits): the nearest f32 to
            // the power (f64's, exact to 2^-46 for |b| <= 60), but where
            // that is within 2^-40 of a tie.
            if dev.is_gpu() && b[k].abs() <= 60.0 {
                let exact = (a[k] as f64).powi(b[k] as i32);
                let nearest = exact as f32;
                let other = if (nearest as f64) < exact {
                    nearest.next_up()
                } else {
                    nearest.next_down()
                };
                let tie = (nearest as f64 + other as f64) / 2.0;
                let near_tie = ((exact - tie) / exact).abs() < 2f64.powi(-40);
                if !near_tie && got[k].to_bits() != nearest.to_bits() {
                    wrong.push(format!(
                        "{:e}^{}: {:e}, nearest {:e}",
                        a[k], b[k], got[k], nearest
                    ));
                }
            }
        }
        assert_none_wrong(&dev, wrong);
    }
}

#[test]
fn other_powers_are_within_an_ulp_of_powf() {
    // Exponents that are not integers below 2^24: e^(b ln a) in float-float
    // on a GPU, rounded once (within 0.52 ulp of the exact power), powf
    // within 0.82: so at most an ulp apart. Before, exp2(b log2 a) in f32
    // was tens of ulp off wherever |b log2 a| is large.
    let cpu = Device::cpu();
    let mut state = 0x6a09_e667_f3bc_c908u64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let unit = |r: u64| (r >> 40) as f32 / (1u64 << 24) as f32;
    // Known values, a base next to 1 with huge exponents (relative
    // precision of ln a matters most there), integers past 2^24, subnormal
    // bases, and results at the edges of the range.
    let (mut a, mut b): (Vec<f32>, Vec<f32>) = [
        (2.0, 0.5),
        (4.0, 0.5),
        (0.25, 1.5),
        (8.0, 1.0 / 3.0),
        (1e10, 0.1),
        (10.0, 38.5),
        (10.0, -45.5),
        (10.0, -44.9),
        (1.0000001, 5e8),
        (1.0000001, 1e9),
        (0.99999994, -1.5e9),
        (1.0000001, -7e8),
        (0.99999994, 16_777_218.0),
        (-0.99999994, 1e9),
        (1.0000001, 3.0e38),
        (1e-45, 0.5),
        (3e-39, 0.25),
        (1e-40, 1.0 / 3.0),
        (2.0, 127.99999),
        (2.0, -149.5),
        (2.0, -148.5),
        (3.4e38, 0.999_999_9),
        (3.4e38, -1.01),
        // Subnormal exponents: zeros, signs and non-integers read right
        // where a GPU flushes them (IEEE: inf, NaN, 0, inf, 1).
        (0.0, -1e-45),
        (-2.0, 1e-45),
        (f32::INFINITY, -1e-45),
        (-0.0, -1e-45),
        (5.0, 1e-45),
        // -1 to even integers past 2^24 (the general path): 1.
        (-1.0, 3e38),
        (-1.0, -16_777_218.0),
    ]
    .into_iter()
    .unzip();
    for _ in 0..4000 {
        let r = next();
        let e = ((r >> 8) % 80) as i32 - 40;
        a.push((1.0 + unit(next())) * 2f32.powi(e));
        // A fraction (or an integer past 2^24) in each of a few ranges.
        let b_k = match r % 4 {
            0 => (unit(next()) - 0.5) * 8.0,
            1 => (unit(next()) - 0.5) * 200.0,
            2 => (unit(next()) - 0.5) * 4.0 * (1 << 26) as f32,
            _ => 1.0 / (unit(next()) * 16.0 - 8.0),
        };
        b.push(b_k);
    }
    // Bases within a few ulp of 1 with exponents up to the edge of the range,
    // and results within a factor of 2 of overflow and of the subnormals.
    for _ in 0..1000 {
        let r = next();
        let k = ((r >> 8) % 16) as f32 - 8.0;
        let base = 1.0 + k * f32::EPSILON;
        a.push(base);
        b.push((unit(next()) - 0.5) * 170.0 / base.ln());
        let base = 1.5 + unit(next()) * 100.0;
        let edge = if r & 1 == 0 {
            128.0
        } else {
            -126.0 - 24.0 * unit(next())
        };
        a.push(base);
        b.push((edge + unit(next()) - 0.5) / base.log2());
    }
    for dev in devices() {
        let (want, got) = (
            floats(&a, DType::F32, &cpu)
                .pow(&floats(&b, DType::F32, &cpu))
                .unwrap(),
            floats(&a, DType::F32, &dev)
                .pow(&floats(&b, DType::F32, &dev))
                .unwrap(),
        );
        let (want, got) = (want.to_vec::<f32>().unwrap(), got.to_vec::<f32>().unwrap());
        let mut wrong = Vec::new();
        for k in 0..a.len() {
            assert_eq!(
                want[k].to_bits(),
                a[k].powf(b[k]).to_bits(),
                "the CPU is powf"
            );
            if ulps(got[k], want[k]) > 1 {
                wrong.push(format!(
                    "{:e}^{:e}: {:e}, powf {:e}",
                    a[k], b[k], got[k], want[k]
                ));
            }
        }
        assert_none_wrong(&dev, wrong);
    }
}
