//! Special functions the standard library and `libm` lack, in f64 (the
//! CPU's f32 rounds their f64 value once): `digamma`, `erfinv` and `i0`.
//! `lgamma` and `erfc` are `libm`'s (musl's).

/// `c_k = (-1)^(k+1) zeta(k + 1, x0)`: digamma's Taylor series about its
/// positive zero x0 (tests/data/fit_special_functions.py prints them).
const DIGAMMA_ROOT_SERIES: [f64; 24] = [
    0.967_672_245_447_621_4,
    -0.442_763_168_983_592_14,
    0.258_499_760_955_651_2,
    -0.163_942_705_442_406_58,
    0.107_824_050_691_262_39,
    -0.072_199_561_256_454_76,
    0.048_804_288_164_143_145,
    -0.033_161_126_474_847_376,
    0.022_597_648_232_218_125,
    -0.015_424_765_904_948_968,
    0.010_538_791_616_612_182,
    -0.007_204_534_386_356_875,
    0.004_926_781_395_729_858,
    -0.003_369_801_655_439_331_7,
    0.002_305_126_326_734_93,
    -0.001_576_936_771_430_198_7,
    0.001_078_825_201_916_297_5,
    -0.000_738_070_938_996_006,
    0.000_504_953_265_834_602_6,
    -0.000_345_468_025_106_308_2,
    0.000_236_356_015_640_270_86,
    -0.000_161_706_220_919_748_25,
    0.000_110_633_727_687_474_29,
    -7.569_179_582_195_077e-5,
];
/// digamma's positive zero, in two parts.
const DIGAMMA_ROOT: (f64, f64) = (1.461_632_144_968_362_2, 9.549_995_429_965_697e-17);

/// The digamma function (SciPy's `psi`): -inf at +0, +inf at -0, NaN at
/// the negative integers and -inf.
pub(crate) fn digamma(x: f64) -> f64 {
    if x.is_nan() || x == f64::INFINITY {
        return x;
    }
    if x == 0.0 {
        return if x.is_sign_negative() {
            f64::INFINITY
        } else {
            f64::NEG_INFINITY
        };
    }
    if x < 0.0 {
        let d = x - x.round();
        if d == 0.0 || x == f64::NEG_INFINITY {
            return f64::NAN;
        }
        let t = std::f64::consts::PI * d;
        return digamma(1.0 - x) - std::f64::consts::PI * t.cos() / t.sin();
    }
    let h = (x - DIGAMMA_ROOT.0) - DIGAMMA_ROOT.1;
    if h.abs() < 0.25 {
        // About the zero, where the recurrence would cancel.
        let series = DIGAMMA_ROOT_SERIES
            .iter()
            .rev()
            .fold(0.0, |acc, &c| acc * h + c);
        return h * series;
    }
    // Up to 10 by the recurrence, then the asymptotic series.
    let (mut x, mut shift) = (x, 0.0);
    while x < 10.0 {
        shift -= 1.0 / x;
        x += 1.0;
    }
    let inv2 = 1.0 / (x * x);
    // B_2k / (2k): 1/12, 1/120, 1/252, 1/240, 1/132, 691/32760, 1/12.
    let tail = [
        1.0 / 12.0,
        -1.0 / 120.0,
        1.0 / 252.0,
        -1.0 / 240.0,
        1.0 / 132.0,
        -691.0 / 32760.0,
        1.0 / 12.0,
    ]
    .iter()
    .rev()
    .fold(0.0, |acc, &c| acc * inv2 + c)
        * inv2;
    (x.ln() - 0.5 / x - tail) + shift
}

/// The inverse error function: ±inf at ±1, NaN past them. A first guess
/// within about 1e-7 (Giles' form), then Newton's steps on `erf` (on
/// `erfc` past 1/2, whose `1 - y` is exact there).
pub(crate) fn erfinv(y: f64) -> f64 {
    let a = y.abs();
    if y.is_nan() || a > 1.0 {
        return f64::NAN;
    }
    if a == 1.0 {
        return f64::INFINITY.copysign(y);
    }
    if a == 0.0 {
        return y;
    }
    let w = -((1.0 - a) * (1.0 + a)).ln();
    let mut x = if w >= 16.0 {
        // Past the fit (1 - y below 2^-24): erfc(x) ~ e^(-x^2) / (x sqrt(pi))
        // solved by iteration.
        let q = 1.0 - a;
        let mut x = (-q.ln()).sqrt();
        for _ in 0..4 {
            x = (-(q * x * std::f64::consts::PI.sqrt()).ln()).sqrt();
        }
        x
    } else if w < 5.0 {
        let c = [
            1.501_409_4,
            0.246_640_3,
            -0.004_177_339_4,
            -0.001_252_744_6,
            0.000_218_282_72,
            -0.000_004_961_993,
            -0.000_003_434_664_4,
            0.000_000_465_912_25,
            0.000_000_018_049_063,
            -0.000_000_008_774_461,
            0.000_000_000_334_638_46,
        ];
        c.iter().rev().fold(0.0, |acc, &k| acc * (w - 2.5) + k) * a
    } else {
        let c = [
            2.832_976_8,
            1.001_675_2,
            0.009_445_376,
            -0.007_642_666_3,
            0.005_686_921_5,
            -0.003_567_875_6,
            0.001_478_010_2,
            -0.000_118_063_56,
            -0.000_282_032_24,
            0.000_159_007_7,
            -0.000_026_916_37,
        ];
        c.iter()
            .rev()
            .fold(0.0, |acc, &k| acc * (w.sqrt() - 3.0) + k)
            * a
    };
    // d erf / dx = 2 / sqrt(pi) e^(-x^2).
    let slope = |x: f64| std::f64::consts::FRAC_2_SQRT_PI * (-x * x).exp();
    for _ in 0..3 {
        let miss = if a <= 0.5 {
            libm::erf(x) - a
        } else {
            (1.0 - a) - libm::erfc(x)
        };
        let s = slope(x);
        if s == 0.0 {
            break;
        }
        x -= miss / s;
    }
    x.copysign(y)
}

/// The modified Bessel function of the first kind, order 0: its Taylor
/// series `sum (x^2 / 4)^k / (k!)^2` (all terms positive) to |x| = 30, its
/// asymptotic series `e^x / sqrt(2 pi x) sum ((2k - 1)!!)^2 / (k! (8x)^k)`
/// past it, `e^x` as the square of `e^(x / 2)` so that it overflows only
/// where I0 does.
pub(crate) fn i0(x: f64) -> f64 {
    let a = x.abs();
    if a.is_nan() || a.is_infinite() {
        return a;
    }
    if a <= 30.0 {
        let q = a * a / 4.0;
        let (mut term, mut sum, mut k) = (1.0f64, 1.0f64, 0.0f64);
        while term > sum * 1e-18 {
            k += 1.0;
            term *= q / (k * k);
            sum += term;
        }
        return sum;
    }
    let (mut term, mut sum, mut k) = (1.0f64, 1.0f64, 0.0f64);
    while term > sum * 1e-18 && k < 40.0 {
        k += 1.0;
        term *= (2.0 * k - 1.0) * (2.0 * k - 1.0) / (k * 8.0 * a);
        sum += term;
    }
    let half = (a / 2.0).exp();
    half * (half * sum / (2.0 * std::f64::consts::PI * a).sqrt())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digamma_and_erfinv_meet_known_values() {
        // digamma(1) = -gamma, digamma(1/2) = -gamma - 2 ln 2.
        let gamma = 0.577_215_664_901_532_9;
        assert!((digamma(1.0) + gamma).abs() < 1e-15);
        assert!((digamma(0.5) + gamma + 2.0 * std::f64::consts::LN_2).abs() < 1e-15);
        assert!(digamma(DIGAMMA_ROOT.0).abs() < 1e-16);
        assert_eq!(digamma(0.0), f64::NEG_INFINITY);
        assert!(digamma(-3.0).is_nan());
        for y in [-0.999_999, -0.3, 1e-300, 0.2, 0.7, 0.999_999_999_9] {
            assert!(
                (libm::erf(erfinv(y)) - y).abs() <= 2.0 * f64::EPSILON,
                "{y}"
            );
        }
        // Past the fit: the largest f64 below 1.
        let x = erfinv(1.0 - f64::EPSILON / 2.0);
        assert!((libm::erfc(x) / (f64::EPSILON / 2.0) - 1.0).abs() < 1e-13);
        assert_eq!(erfinv(1.0), f64::INFINITY);
    }
}
