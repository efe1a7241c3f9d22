
// Special functions in f32 (tests/data/fit_special_functions.py fits their
// polynomials and measures each form, rounded as f32 rounds, against
// SciPy over its whole range).

// Horner's rule over c, lowest first.
fn poly_lgamma(t: f32) -> f32 {
    var c = array<f32, 17>(0.42278433, -0.10031751, 0.032966092, -0.012377846, 0.0049823327,
        -0.0021675564, 0.0010016281, -0.0001510135, -0.000016618604, -0.0006616233,
        0.00022683623, 0.0007034336, 0.0000063426637, -0.000469266, -0.00010562734,
        0.00012033582, 0.000049335882);
    var acc = c[16];
    for (var k = 15; k >= 0; k--) {
        acc = acc * t + c[k];
    }
    return acc;
}

// ln|gamma(x)| for x in [0.5, 3]: (x - 1)(x - 2) p(x - 2), whose zero
// factors are exact there; +0 at 1 and 2 (the product is -0 at 1).
fn lgamma_core_f32(x: f32) -> f32 {
    let v = ((x - 1.0) * (x - 2.0)) * poly_lgamma(x - 2.0);
    if (v == 0.0) { return 0.0; }
    return v;
}

// ln gamma(x) for x > 0.
fn lgamma_positive_f32(x: f32) -> f32 {
    if (x < 0.5) {
        return lgamma_core_f32(x + 1.0) - log_f32(x);
    }
    if (x <= 3.0) {
        return lgamma_core_f32(x);
    }
    if (x < 8.0) {
        var t = x;
        var product = 1.0;
        for (var k = 0; k < 5 && t > 3.0; k++) {
            t = t - 1.0;
            product = product * t;
        }
        return lgamma_core_f32(t) + log_f32(product);
    }
    // Stirling's series.
    let inv = div_f32(1.0, x);
    let inv2 = inv * inv;
    let s = inv * (0.083333336 + inv2 * (-0.0027777778 + inv2 * 0.0007936508));
    // (x - 1/2) ln x - x as (x - 1/2)(ln x - 1) - 1/2: no overflow before
    // the result does (x up to 4.08e36).
    return ((x - 0.5) * (log_f32(x) - 1.0) - 0.5) + (0.9189385 + s);
}

// x less its nearest integer (exact), in [-1/2, 1/2]: sin(pi x) and
// tan(pi x) are those of pi times it, up to sign.
fn pi_fraction_f32(x: f32) -> f32 {
    return x - round(x);
}

// (sin(pi d), cos(pi d)) for d in [-1/2, 1/2], without rounding pi d:
// polynomials in d / 2 turns on [0, 1/8] (the generator's SIN_S and
// COS_C in backend/random.rs; a test holds them alike), the other octant
// from the mirror 1/2 - |d| (exact).
fn sinpi_cospi_f32(d: f32) -> vec2<f32> {
    let a = abs(d);
    let mirrored = a > 0.25;
    var x = a * 0.5;
    if (mirrored) {
        x = (0.5 - a) * 0.5;
    }
    let z = x * x;
    let s = x * (6.2831855 + z * (-41.341663 + z * (81.59236 + z * -75.39394)));
    let c = 1.0 + z * (-19.739208 + z * (64.93937 + z * (-85.44877 + z * 59.421947)));
    var sc = vec2<f32>(s, c);
    if (mirrored) {
        sc = vec2<f32>(c, s);
    }
    if (d < 0.0) {
        sc.x = -sc.x;
    }
    return sc;
}

// ln|gamma(x)| (SciPy's gammaln, C's lgamma): +inf at 0 and the negative
// integers and at both infinities; the reflection formula below 0.
fn lgamma_f32(a: f32) -> f32 {
    if (is_nan_f32(a)) { return a; }
    if (is_inf_f32(a)) { return f32_from_bits(F32_INF_BITS); }
    if (a > 0.0) { return lgamma_positive_f32(a); }
    let d = abs(pi_fraction_f32(a));
    if (d == 0.0) { return f32_from_bits(F32_INF_BITS); }
    // ln(pi / |sin(pi x)|), the logarithms apart (pi / s overflows for a
    // subnormal x); below 2^-20 it is -ln d (to 2^-40 relative), which
    // keeps a subnormal d's digits (the polynomial halves d first).
    if (d < 9.536743e-7) { return -log_f32(d) - lgamma_positive_f32(1.0 - a); }
    let s = sinpi_cospi_f32(d).x;
    return (1.1447299 - log_f32(s)) - lgamma_positive_f32(1.0 - a);
}

fn poly_digamma(t: f32) -> f32 {
    var c = array<f32, 10>(0.9510559, -0.42362747, 0.24053839, -0.14839996, 0.095117375,
        -0.06203995, 0.039362032, -0.025872642, 0.023923859, -0.0162208);
    var acc = c[9];
    for (var k = 8; k >= 0; k--) {
        acc = acc * t + c[k];
    }
    return acc;
}

// digamma(x) for x in [1, 2]: (x - x0) r(x - 1.5), x0 its zero in two
// parts: x less the first is exact, and the second's product is taken
// apart (the difference of two constants would be folded into one).
fn digamma_core_f32(x: f32) -> f32 {
    let r = poly_digamma(x - 1.5);
    return (x - 1.4616321) * r - 0.00000001243815 * r;
}

// digamma(x) for x > 0.
fn digamma_positive_f32(x: f32) -> f32 {
    if (x < 1.0) {
        return digamma_core_f32(x + 1.0) - div_f32(1.0, x);
    }
    if (x <= 2.0) {
        return digamma_core_f32(x);
    }
    if (x < 10.0) {
        var t = x;
        var sum = 0.0;
        for (var k = 0; k < 8 && t > 2.0; k++) {
            t = t - 1.0;
            sum = sum + div_f32(1.0, t);
        }
        return digamma_core_f32(t) + sum;
    }
    let inv = div_f32(1.0, x);
    let inv2 = inv * inv;
    let s = inv2 * (-0.083333336 + inv2 * (0.008333334 + inv2 * -0.003968254));
    return (log_f32(x) - 0.5 * inv) + s;
}

// digamma (SciPy's psi): -inf at +0, +inf at -0, NaN at the negative
// integers and -inf; the reflection formula below 0.
fn digamma_f32(a: f32) -> f32 {
    if (is_nan_f32(a)) { return a; }
    if (a == 0.0) {
        if (sign_bit_f32(a)) { return f32_from_bits(F32_INF_BITS); }
        return -f32_from_bits(F32_INF_BITS);
    }
    if (is_inf_f32(a)) {
        if (a > 0.0) { return a; }
        return nan_f32();
    }
    if (a > 0.0) { return digamma_positive_f32(a); }
    let d = pi_fraction_f32(a);
    if (d == 0.0) { return nan_f32(); }
    // pi / tan(pi x), its period 1; below 2^-20, 1 / d (to 2^-40
    // relative), which keeps a subnormal d's digits.
    var cot: f32;
    if (abs(d) < 9.536743e-7) {
        cot = div_f32(1.0, d);
    } else {
        let sc = sinpi_cospi_f32(d);
        cot = div_f32(3.1415927 * sc.y, sc.x);
    }
    return digamma_positive_f32(1.0 - a) - cot;
}

// The inverse error function (Giles' form, fitted): y p(w - 2.5) with
// w = -ln(1 - y^2) below 5, else y q(sqrt(w) - 3); +-inf at +-1, NaN past.
fn erfinv_f32(y: f32) -> f32 {
    let a = abs(y);
    if (is_nan_f32(y) || a > 1.0) { return nan_f32(); }
    if (a == 1.0) {
        if (y < 0.0) { return -f32_from_bits(F32_INF_BITS); }
        return f32_from_bits(F32_INF_BITS);
    }
    // -ln(1 - y^2): WGSL's log is only 2^-21 absolute near 1, so below
    // 1/sqrt(2) (where 1 - y^2 >= 1/2) as -log1p(-y^2).
    var w: f32;
    if (a < 0.70710677) {
        w = -log1p_f32(-(a * a));
    } else {
        w = -log_f32((1.0 - a) * (1.0 + a));
    }
    if (w < 5.0) {
        var c = array<f32, 11>(1.5014094, 0.2466403, -0.0041773394, -0.0012527446, 0.00021828272,
            -0.000004961993, -0.0000034346644, 0.00000046591225, 0.000000018049063,
            -0.000000008774461, 0.00000000033463846);
        let t = w - 2.5;
        var acc = c[10];
        for (var k = 9; k >= 0; k--) {
            acc = acc * t + c[k];
        }
        return acc * y;
    }
    var c = array<f32, 11>(2.8329768, 1.0016752, 0.009445376, -0.0076426663, 0.0056869215,
        -0.0035678756, 0.0014780102, -0.00011806356, -0.00028203224, 0.0001590077,
        -0.00002691637);
    let t = sqrt_f32(w) - 3.0;
    var acc = c[10];
    for (var k = 9; k >= 0; k--) {
        acc = acc * t + c[k];
    }
    return acc * y;
}

// e^x to about an ulp at any magnitude (WGSL allows its built-in exp an
// error of 3 + 2|x| ulp): x = n ln 2 + r, ln 2 in two parts (Cody and
// Waite; the first's product with n is exact), e^r by its Taylor series
// to r^7 (|r| <= ln 2 / 2), scaled by 2^n.
fn exp_accurate_f32(x: f32) -> f32 {
    if (x > 88.72284) { return f32_from_bits(F32_INF_BITS); }
    if (x < -103.97208) { return 0.0; }
    let n = round(x * 1.442695);
    let r = (x - n * 0.693359375) - n * -0.00021219444;
    let p = 1.0 + r * (1.0 + r * (0.5 + r * (0.16666667 + r * (0.041666668 + r * (0.008333334
        + r * (0.0013888889 + r * 0.0001984127))))));
    // Two steps: HLSL's ldexp is p * exp2(n), infinite at n = 128.
    let k = i32(n);
    return ldexp(ldexp(p, k / 2), k - k / 2);
}

// 2^x to about an ulp (WGSL allows its built-in exp2 3 + 2|x| ulp, and
// NVIDIA's is an approximation that flushes): x = n + r with |r| <= 1/2
// (exact), 2^r by the Taylor series of e^(r ln 2) to r^7, scaled by 2^n;
// an integer x gives its power of two exactly.
fn exp2_f32(x: f32) -> f32 {
    if (is_nan_f32(x)) { return x; }
    if (x >= 128.0) { return f32_from_bits(F32_INF_BITS); }
    if (x <= -150.0) { return 0.0; }
    let n = round(x);
    let r = x - n;
    let p = 1.0 + r * (0.6931472 + r * (0.24022651 + r * (0.05550411 + r * (0.009618129
        + r * (0.0013333558 + r * (0.00015403531 + r * 0.000015252734))))));
    // Two steps: HLSL's ldexp is p * exp2(n), infinite at n = 128.
    let k = i32(n);
    return ldexp(ldexp(p, k / 2), k - k / 2);
}

// The complementary error function 1 - erf(x), relatively accurate where
// it is small: a polynomial below 1/2; above, e^(-x^2) times a fit of
// erfcx (in x about 1.5 to 2.5, in 1/x^2 past it), x^2 in two parts whose
// exponentials are taken apart (x's top 12 bits squared exactly); 0 past
// 10.06, where it underflows; 2 - erfc(-x) below 0.
fn erfc_f32(x: f32) -> f32 {
    if (is_nan_f32(x)) { return x; }
    let a = abs(x);
    var r: f32;
    if (a < 0.5) {
        var c = array<f32, 10>(1.0, -1.1283791, -0.00000010984777, 0.37612903, -0.000032680422,
            -0.11260687, -0.0009888107, 0.029442716, -0.003881091, -0.0024584169);
        var acc = c[9];
        for (var k = 8; k >= 0; k--) {
            acc = acc * a + c[k];
        }
        r = acc;
    } else if (a >= 10.06) {
        r = 0.0;
    } else {
        let high = bitcast<f32>(bitcast<u32>(a) & 0xfffff000u);
        let low = (a - high) * (a + high);
        var s: f32;
        if (a < 2.5) {
            var c = array<f32, 15>(0.32158542, -0.16362292, 0.07615104, -0.032930903, 0.013377341,
                -0.0051459786, 0.001886132, -0.00066182995, 0.0002233076, -0.000072903196,
                0.000022893382, -0.000006659803, 0.0000020093958, -0.00000079749867,
                0.0000002136615);
            let t = a - 1.5;
            var acc = c[14];
            for (var k = 13; k >= 0; k--) {
                acc = acc * t + c[k];
            }
            s = acc;
        } else {
            var c = array<f32, 10>(0.5439016, -0.22939105, 0.25925574, -0.44278446, 0.97039855,
                -2.5108595, 7.549014, -29.384861, 94.75974, 3.9273825);
            let inv = div_f32(1.0, a);
            let t = inv * inv - 0.08;
            var acc = c[9];
            for (var k = 8; k >= 0; k--) {
                acc = acc * t + c[k];
            }
            s = acc * inv;
        }
        r = (exp_accurate_f32(-(high * high)) * exp_accurate_f32(-low)) * s;
    }
    if (x < 0.0) { return 2.0 - r; }
    return r;
}

// The modified Bessel function of the first kind, order 0: its Taylor
// series (all terms positive) to |x| = 4; past it e^|x| / sqrt(|x|) times
// a fit in 1/|x|, e^|x| as a square of e^(|x|/2) so that it overflows only
// where I0 does; +inf at both infinities.
fn i0_f32(x: f32) -> f32 {
    let a = abs(x);
    if (is_nan_f32(x)) { return x; }
    if (a <= 4.0) {
        var c = array<f32, 14>(1.0, 0.25, 0.015625, 0.00043402778, 0.000006781684,
            0.00000006781684, 0.0000000004709503, 0.0000000000024028076,
            0.000000000000009385967, 0.000000000000000028969033,
            0.000000000000000000072422584, 0.00000000000000000000014963343,
            0.00000000000000000000000025978028, 0.00000000000000000000000000038429036);
        let t = a * a;
        var acc = c[13];
        for (var k = 12; k >= 0; k--) {
            acc = acc * t + c[k];
        }
        return acc;
    }
    if (is_inf_f32(a)) { return a; }
    var c = array<f32, 9>(0.40568635, 0.05879439, 0.047062807, 0.09591332, 0.3205842,
        0.07182537, -8.906325, -17.181078, 120.9738);
    let t = div_f32(1.0, a) - 0.125;
    var acc = c[8];
    for (var k = 7; k >= 0; k--) {
        acc = acc * t + c[k];
    }
    let half = exp_accurate_f32(0.5 * a);
    return half * div_f32(half * acc, sqrt_f32(a));
}

// The inverse trigonometric and the hyperbolic functions to a few ulp, by
// the identities C libraries use, on this library's accurate atan, exp,
// expm1, log and log1p (WGSL bounds its built-ins only by the identities
// they inherit, which lose their digits near the ends of their domains).

// asin x = atan2(x, sqrt((1 - x)(1 + x))): 1 - x is exact near 1.
fn asin_f32(x: f32) -> f32 {
    if (is_nan_f32(x) || abs(x) > 1.0) { return nan_f32(); }
    return atan2_f32(x, sqrt_f32((1.0 - x) * (1.0 + x)));
}

// acos x = atan2(sqrt((1 - x)(1 + x)), x): pi at -1, +0 at 1.
fn acos_f32(x: f32) -> f32 {
    if (is_nan_f32(x) || abs(x) > 1.0) { return nan_f32(); }
    return atan2_f32(sqrt_f32((1.0 - x) * (1.0 + x)), x);
}

fn atan_f32(x: f32) -> f32 {
    if (is_nan_f32(x)) { return x; }
    let q = atan_abs_f32(abs(x));
    return select(q, -q, sign_bit_f32(x));
}

// e^a / 2 for a past 88, where e^a overflows before the result does.
fn half_exp_large_f32(a: f32) -> f32 {
    let h = exp_accurate_f32(0.5 * a);
    return (0.5 * h) * h;
}

// sinh: (E + E / (E + 1)) / 2 of E = e^|x| - 1 below 1 (no cancellation),
// (e^|x| - e^-|x|) / 2 below 88, e^|x| / 2 past it; x's sign.
fn sinh_f32(x: f32) -> f32 {
    let a = abs(x);
    var r: f32;
    if (a < 1.0) {
        let e = expm1_f32(a);
        r = 0.5 * (e + div_f32(e, e + 1.0));
    } else if (a < 88.0) {
        let e = exp_accurate_f32(a);
        r = 0.5 * (e - div_f32(1.0, e));
    } else {
        r = half_exp_large_f32(a);
    }
    return select(r, -r, sign_bit_f32(x));
}

fn cosh_f32(x: f32) -> f32 {
    let a = abs(x);
    if (a < 88.0) {
        let e = exp_accurate_f32(a);
        return 0.5 * (e + div_f32(1.0, e));
    }
    return half_exp_large_f32(a);
}

// asinh: ln|x| + ln 2 past 2^28, ln(2|x| + 1 / (sqrt(x^2 + 1) + |x|))
// past 2, ln1p(|x| + x^2 / (1 + sqrt(1 + x^2))) below; x's sign.
fn asinh_f32(x: f32) -> f32 {
    let a = abs(x);
    var r: f32;
    if (a > 268435456.0) {
        r = log_f32(a) + 0.6931471805599453;
    } else if (a > 2.0) {
        r = log_f32(2.0 * a + div_f32(1.0, sqrt_f32(a * a + 1.0) + a));
    } else {
        r = log1p_f32(a + div_f32(a * a, 1.0 + sqrt_f32(1.0 + a * a)));
    }
    return select(r, -r, sign_bit_f32(x));
}

// acosh: NaN below 1; ln x + ln 2 past 2^28, ln(2x - 1 / (x + sqrt(x^2 -
// 1))) past 2, ln1p(t + sqrt(2t + t^2)) of t = x - 1 (exact) below.
fn acosh_f32(x: f32) -> f32 {
    if (is_nan_f32(x) || x < 1.0) { return nan_f32(); }
    if (x > 268435456.0) {
        return log_f32(x) + 0.6931471805599453;
    }
    if (x > 2.0) {
        return log_f32(2.0 * x - div_f32(1.0, x + sqrt_f32(x * x - 1.0)));
    }
    let t = x - 1.0;
    return log1p_f32(t + sqrt_f32(2.0 * t + t * t));
}

// atanh: ln1p(2|x| + 2x^2 / (1 - |x|)) / 2 below 1/2, ln1p(2|x| / (1 -
// |x|)) / 2 to 1 (inf there); NaN past 1; x's sign.
fn atanh_f32(x: f32) -> f32 {
    let a = abs(x);
    if (is_nan_f32(x) || a > 1.0) { return nan_f32(); }
    var r: f32;
    if (a < 0.5) {
        r = 0.5 * log1p_f32(2.0 * a + div_f32(2.0 * a * a, 1.0 - a));
    } else {
        r = 0.5 * log1p_f32(div_f32(2.0 * a, 1.0 - a));
    }
    return select(r, -r, sign_bit_f32(x));
}

// log10 x = ln x * log10(e): the accurate ln, one rounding more.
fn log10_f32(x: f32) -> f32 {
    return log_f32(x) * 0.4342944819032518;
}
