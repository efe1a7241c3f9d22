//! A branch-free f32 exponential for the logistic functions (`sigmoid`,
//! `silu`): straight-line arithmetic that the compiler turns into vector
//! instructions inside the elementwise loops, where the C library's
//! `expf` is one call per element (a network's final 640x640 sigmoid:
//! 0.59 ms, about six times onnxruntime's vectorised one).
//!
//! `e^x = 2^n e^r` with `n = round(x log2 e)` and `r = x - n ln 2` (ln 2
//! in two parts, so that `r` is exact to an ulp), `e^r` by Cephes' degree-7
//! polynomial on `|r| <= ln 2 / 2`, and `2^n` applied as two powers of two
//! so that results down to the subnormals and up to infinity come out as
//! f32 arithmetic rounds them. Within an ulp of the exact value over the
//! whole f32 range (tested against f64's `exp`); `sigmoid` and `silu`
//! within 3.

/// `log2(e)`.
const LOG2_E: f32 = std::f32::consts::LOG2_E;
/// `ln 2` in two parts: the high one has trailing zero bits, so that `n ln2_hi`
/// is exact for every `n` used.
const LN2_HI: f32 = 0.693_359_4;
const LN2_LO: f32 = -2.121_944_4e-4;
/// `1.5 2^23`: adding and subtracting it rounds an f32 below `2^22` in
/// magnitude to the nearest integer (ties to even), with no rounding
/// instruction the baseline x86-64 lacks.
const ROUNDER: f32 = 12_582_912.0;

/// `e^x`: `+inf` past 88.72, `0` below -103.97, NaN for NaN.
#[inline(always)]
pub(crate) fn exp(x: f32) -> f32 {
    // Past these, the result is infinite or zero whatever the polynomial
    // says; `clamp` keeps a NaN.
    let x = x.clamp(-104.0, 89.0);
    let t = x * LOG2_E + ROUNDER;
    let n = t - ROUNDER;
    let r = (x - n * LN2_HI) - n * LN2_LO;
    let p = 1.987_569_1e-4;
    let p = p * r + 1.398_2e-3;
    let p = p * r + 8.333_452e-3;
    let p = p * r + 4.166_579_6e-2;
    let p = p * r + 1.666_666_5e-1;
    let p = p * r + 0.5;
    let e = (p * r) * r + r + 1.0;
    // n in [-150, 128] as an integer: the low bits of `t`, whose exponent
    // is `ROUNDER`'s (no float-to-int conversion, which is scalar where
    // it saturates). For a NaN, `e` is NaN whatever the scale.
    let n = (t.to_bits() as i32).wrapping_sub(ROUNDER.to_bits() as i32);
    // 2^n as 2^a 2^b, each a normal f32.
    let a = n >> 1;
    let b = n.wrapping_sub(a);
    let pow2 = |k: i32| f32::from_bits((k.wrapping_add(127) as u32) << 23);
    e * pow2(a) * pow2(b)
}

/// The logistic function `1 / (1 + e^-x)`, as PyTorch's f32 `sigmoid`
/// computes it: 0 below -88.72 (where `e^-x` overflows), 1 far above 0.
#[inline(always)]
pub(crate) fn sigmoid(x: f32) -> f32 {
    1.0 / (1.0 + exp(-x))
}

/// `x / (1 + e^-x)` (`silu`, or swish).
#[inline(always)]
pub(crate) fn silu(x: f32) -> f32 {
    x / (1.0 + exp(-x))
}

/// `o[i] = f(a[i])` for `i < len`, in blocks of [`BLOCK`] the compiler
/// turns into vector instructions (the widest the host has, chosen at run
/// time on x86-64): the same IEEE operations in every lane, so each
/// result is the scalar `f`'s, bit for bit, on every machine.
///
/// # Safety
/// `a` must be readable and `o` writable for `len` elements; `o` may be `a`
/// (in place) but not overlap it otherwise.
pub(crate) unsafe fn map_run(o: *mut f32, a: *const f32, len: usize, f: Logistic) {
    // SAFETY: the caller's.
    unsafe { picked()(o, a, len, f) }
}

/// A loop of [`map_run`] for one instruction set, with its safety
/// contract.
pub(crate) type RunFn = unsafe fn(*mut f32, *const f32, usize, Logistic);

/// [`map_run`]'s loop for the widest instruction set the host has: picked
/// once for an op's many runs.
pub(crate) fn picked() -> RunFn {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::is_x86_feature_detected as has;
        if has!("avx512f") {
            return run_avx512;
        }
        if has!("avx2") && has!("fma") {
            return run_avx2;
        }
    }
    run
}

/// Elements a block of [`run`] holds: one AVX-512 vector.
const BLOCK: usize = 16;

/// Which logistic function [`map_run`] applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Logistic {
    Sigmoid,
    Silu,
}

impl Logistic {
    /// The function at `x`.
    #[inline(always)]
    pub(crate) fn of(self, x: f32) -> f32 {
        match self {
            Logistic::Sigmoid => sigmoid(x),
            Logistic::Silu => silu(x),
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn run_avx512(o: *mut f32, a: *const f32, len: usize, f: Logistic) {
    // SAFETY: the caller's.
    unsafe { run(o, a, len, f) }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn run_avx2(o: *mut f32, a: *const f32, len: usize, f: Logistic) {
    // SAFETY: the caller's.
    unsafe { run(o, a, len, f) }
}

/// [`map_run`]'s loop, inlined into each feature's function.
#[inline(always)]
unsafe fn run(o: *mut f32, a: *const f32, len: usize, f: Logistic) {
    let apply = |x: f32| f.of(x);
    let mut i = 0;
    while i + BLOCK <= len {
        // Read whole, then written whole: `o` may be `a`.
        // SAFETY: `i + BLOCK <= len`.
        let x: [f32; BLOCK] = unsafe { a.add(i).cast::<[f32; BLOCK]>().read_unaligned() };
        let mut y = [0.0f32; BLOCK];
        for (y, &x) in y.iter_mut().zip(&x) {
            *y = apply(x);
        }
        // SAFETY: as above.
        unsafe { o.add(i).cast::<[f32; BLOCK]>().write_unaligned(y) };
        i += BLOCK;
    }
    for k in i..len {
        // SAFETY: `k < len`.
        unsafe { o.add(k).write(apply(a.add(k).read())) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The distance from `got` to `want` in ulps of `want` rounded to f32
    /// (`2^(e - 23)` for its exponent `e`, the subnormals' spacing below
    /// the normals): 0 for the nearest f32.
    fn ulps(got: f32, want: f64) -> f64 {
        let rounded = want as f32;
        if got == rounded || (got.is_nan() && want.is_nan()) {
            return 0.0;
        }
        let power = f32::from_bits(rounded.abs().to_bits() & 0x7f80_0000);
        let ulp = f64::from(power.max(f32::MIN_POSITIVE)) * f64::from(f32::EPSILON);
        (got as f64 - want).abs() / ulp
    }

    /// The edges of the ranges: zeros, overflow and underflow, the
    /// reduction's interval, the extremes.
    const EDGES: [f32; 18] = [
        0.0,
        -0.0,
        1e-30,
        -1e-30,
        88.72,
        88.73,
        89.0,
        -87.33,
        -88.72,
        -103.9,
        -104.0,
        -150.0,
        0.346_573_6,
        -0.346_573_6,
        f32::MAX,
        f32::MIN,
        f32::INFINITY,
        f32::NEG_INFINITY,
    ];

    /// Every 1021st f32 bit pattern (all signs, exponents and some of every
    /// mantissa run), then the edges.
    fn sweep() -> impl Iterator<Item = f32> {
        (0..u32::MAX / 1021)
            .map(|k| f32::from_bits(k * 1021))
            .filter(|x| !x.is_nan())
            .chain(EDGES)
    }

    #[test]
    fn the_vector_runs_are_the_scalar_functions_bit_for_bit_in_place_or_not() {
        // About 650 values over every sign and exponent, then the edges.
        let xs: Vec<f32> = sweep().step_by(6500).chain(EDGES).collect();
        assert!(xs.len() > 16 * 40 + 7);
        assert!(xs.iter().any(|&x| x < -90.0) && xs.iter().any(|&x| x > 90.0));
        for which in [Logistic::Sigmoid, Logistic::Silu] {
            let f = match which {
                Logistic::Sigmoid => sigmoid,
                Logistic::Silu => silu,
            };
            for len in (0..40).chain([16 * 40 + 7]) {
                let want: Vec<u32> = xs[..len].iter().map(|&x| f(x).to_bits()).collect();
                // Each instruction set's loop the host has, and the one
                // `map_run` picks.
                type Run = unsafe fn(*mut f32, *const f32, usize, Logistic);
                let mut runs: Vec<(&str, Run)> = vec![("portable", run), ("picked", map_run)];
                #[cfg(target_arch = "x86_64")]
                {
                    use std::arch::is_x86_feature_detected as has;
                    if has!("avx2") && has!("fma") {
                        runs.push(("avx2", run_avx2));
                    }
                    if has!("avx512f") {
                        runs.push(("avx512", run_avx512));
                    }
                }
                for (isa, run) in runs {
                    let mut out = vec![0.0f32; len];
                    // SAFETY: both hold `len` elements; the features were
                    // detected.
                    unsafe { run(out.as_mut_ptr(), xs.as_ptr(), len, which) };
                    let got: Vec<u32> = out.iter().map(|v| v.to_bits()).collect();
                    assert_eq!(got, want, "{which:?} over {len} ({isa})");
                }
                let mut inout = xs[..len].to_vec();
                let p = inout.as_mut_ptr();
                // SAFETY: in place over `len` elements.
                unsafe { map_run(p, p, len, which) };
                let got: Vec<u32> = inout.iter().map(|v| v.to_bits()).collect();
                assert_eq!(got, want, "{which:?} in place over {len}");
            }
        }
    }

    #[test]
    fn exp_is_within_an_ulp_of_the_exact_value_over_the_whole_range() {
        let mut worst = (0.0, 0.0f32);
        for x in sweep() {
            let want = (x as f64).exp();
            let got = exp(x);
            let err = ulps(got, want);
            if err > worst.0 {
                worst = (err, x);
            }
            // Overflow and underflow where f32 arithmetic has them.
            if want > f32::MAX as f64 * (1.0 + f32::EPSILON as f64 / 2.0) {
                assert_eq!(got, f32::INFINITY, "exp({x})");
            }
        }
        assert!(worst.0 <= 1.0, "exp({}) is {} ulp off", worst.1, worst.0);
        assert!(exp(f32::NAN).is_nan());
        assert_eq!(
            (exp(f32::NEG_INFINITY), exp(-0.0), exp(0.0)),
            (0.0, 1.0, 1.0)
        );
    }

    #[test]
    fn sigmoid_and_silu_are_within_three_ulp_of_their_definitions() {
        for x in sweep() {
            let d = x as f64;
            // In f32 as PyTorch computes it: e^-x overflows to infinity
            // below -88.72, and the result is 0 there.
            let e = (-d).exp();
            let e = if e as f32 == f32::INFINITY {
                f64::INFINITY
            } else {
                e
            };
            let (s, si) = (1.0 / (1.0 + e), d / (1.0 + e));
            assert!(
                ulps(sigmoid(x), s) <= 3.0,
                "sigmoid({x}) = {}, not {s}",
                sigmoid(x)
            );
            let si = if si.is_nan() { 0.0 * d } else { si };
            assert!(
                ulps(silu(x), si) <= 3.0,
                "silu({x}) = {}, not {si}",
                silu(x)
            );
        }
        assert!(sigmoid(f32::NAN).is_nan() && silu(f32::NAN).is_nan());
        assert_eq!(
            (sigmoid(f32::INFINITY), sigmoid(f32::NEG_INFINITY)),
            (1.0, 0.0)
        );
        assert_eq!(sigmoid(-88.8), 0.0);
        assert!(sigmoid(-88.0) > 0.0);
    }
}
