// Scalar helpers for the elementwise kernels. The semantics are those
// documented in src/op.rs and implemented for the CPU in
// src/backend/cpu/numeric.rs; f16 values are computed in f32.

const F32_NAN_BITS: u32 = 0x7fc00000u;
const F32_INF_BITS: u32 = 0x7f800000u;
const I32_MIN: i32 = -2147483647 - 1;

fn is_nan_f32(x: f32) -> bool {
    return (bitcast<u32>(x) & 0x7fffffffu) > F32_INF_BITS;
}

// The f32 with these bits. A call to a user function is never a constant
// expression, so NaN and infinity bits get through: browsers (Tint) reject a
// constant `bitcast<f32>` that evaluates to either.
fn f32_from_bits(bits: u32) -> f32 {
    return bitcast<f32>(bits);
}

fn nan_f32() -> f32 {
    return f32_from_bits(F32_NAN_BITS);
}

// Orders and picks f32 operands on their bits, as integers: Vulkan lets a
// driver ignore signed zeros and NaNs in float arithmetic unless told
// otherwise, and NVIDIA's compiles a select on a float comparison (even
// one between the operands' bits) to its max instruction, which takes +0
// over -0 (PyTorch keeps the first of two equal operands) and 0 over NaN
// (relu). The key orders non-NaN floats as their values, -0 equal to +0.
fn order_key_f32(u: u32) -> i32 {
    let m = i32(u & 0x7fffffffu);
    return select(m, -m, (u >> 31u) == 1u);
}

fn maximum_f32(a: f32, b: f32) -> f32 {
    if (is_nan_f32(a) || is_nan_f32(b)) { return nan_f32(); }
    let ua = bitcast<u32>(a);
    let ub = bitcast<u32>(b);
    return bitcast<f32>(select(ub, ua, order_key_f32(ua) >= order_key_f32(ub)));
}

fn minimum_f32(a: f32, b: f32) -> f32 {
    if (is_nan_f32(a) || is_nan_f32(b)) { return nan_f32(); }
    let ua = bitcast<u32>(a);
    let ub = bitcast<u32>(b);
    return bitcast<f32>(select(ub, ua, order_key_f32(ua) <= order_key_f32(ub)));
}

// NaN kept, -0 and +0 are +0 (NumPy's), else -1 or 1: decided on the bits
// (see order_key_f32).
fn sign_f32(a: f32) -> f32 {
    let magnitude = bitcast<u32>(a) & 0x7fffffffu;
    if (magnitude > F32_INF_BITS) {
        return a;
    }
    if (magnitude == 0u) {
        return 0.0;
    }
    return select(1.0, -1.0, (bitcast<u32>(a) & 0x80000000u) != 0u);
}

// 0 for a negative number (not -0, not NaN), decided on the bits (see
// order_key_f32).
fn relu_f32(a: f32) -> f32 {
    let u = bitcast<u32>(a);
    return bitcast<f32>(select(u, 0u, u > 0x80000000u && u <= 0xff800000u));
}

// tanh to a few ulp everywhere. WGSL's tanh is bounded only absolutely
// (2^-25 off at tanh(1e-6), 1.3% of the value), so below |a| = 0.5 it is
// expm1(2|a|) / (expm1(2|a|) + 2), whose error is relative; above, the
// built-in's absolute error is relatively small. tanh of |a| > 10 is +-1 in
// f32; clamping keeps exp-based lowerings finite.
fn tanh_f32(a: f32) -> f32 {
    if (is_nan_f32(a)) { return a; }
    let x = abs(a);
    if (x < 0.5) {
        let e = expm1_f32(2.0 * x);
        let t = e / (e + 2.0);
        return select(t, -t, sign_bit_f32(a));
    }
    return tanh(clamp(a, -10.0, 10.0));
}

// With an exp to about an ulp (the built-in may be 3 + 2|a| ulp off, so
// sigmoid(-30) would be 17 ulp off where exp is ex2 of a rounded a log2(e)).
// Divided exactly (div_f32, as the CPU divides): NVIDIA's `/` is a * (1 /
// b), 0 once 1 + e passes 2^126, where the CPU's quotient is subnormal.
fn sigmoid_f32(a: f32) -> f32 {
    return div_f32(1.0, 1.0 + exp_accurate_f32(-a));
}

// a (1 + tanh(u)) / 2 as a / (1 + e^(-2u)): no cancellation in 1 + tanh(u)
// for negative a (that form loses 1e-5 of the value at a = -3), and one
// exact division, so that a normal result (a = -10) does not pass through
// a subnormal sigmoid a flushing GPU makes 0. As the CPU's.
fn gelu_tanh_f32(a: f32) -> f32 {
    let u = 0.7978845608028654 * (a + 0.044715 * a * a * a);
    return div_f32(a, 1.0 + exp_accurate_f32(-2.0 * u));
}

// The error function to 2 ulp with an exact exp (tests/data/fit_erf.py
// fits the coefficients and measures them). Below |a| = 0.875,
// a + a q(a^2), whose leading term is exact; above, 1 - exp(r(|a|)) with r
// fitted to ln(erfc) on [0.875, 4]; from 4 on, erf is 1 in f32. NaN passes
// through the exp.
fn erf_f32(a: f32) -> f32 {
    let x = abs(a);
    if (x < 0.875) {
        let s = a * a;
        let q = 0.12837916612625122 + s * (-0.37612634897232056 + s * (0.11283732950687408
            + s * (-0.026861585676670074 + s * (0.005206751171499491
            + s * (-0.0008211148669943213 + s * 8.675597928231582e-05)))));
        return a + a * q;
    }
    let r = 0.00030464574228972197 + x * (-1.1301789283752441 + x * (-0.6319020986557007
        + x * (-0.11002834886312485 + x * (0.02640654146671295 + x * (-0.004761860240250826
        + x * (0.0005998086999170482 + x * (-4.699269629782066e-05 + x * (1.7703239336697152e-06
        + x * -7.465136953044293e-09))))))));
    let e = select(1.0 - exp(r), 1.0, x >= 4.0);
    return select(e, -e, sign_bit_f32(a));
}

// PyTorch's exact GELU, in its order: (a * 0.5) * (1 + erf(a / sqrt(2))).
fn gelu_f32(a: f32) -> f32 {
    return (a * 0.5) * (1.0 + erf_f32(a * 0.7071067811865476));
}

// PyTorch's SiLU: a / (1 + exp(-a)).
fn silu_f32(a: f32) -> f32 {
    return div_f32(a, 1.0 + exp_accurate_f32(-a));
}

// PyTorch's hardsigmoid, min(max(a + 3, 0), 6) / 6; NaN stays NaN.
fn hardsigmoid_f32(a: f32) -> f32 {
    return div_f32(minimum_f32(maximum_f32(a + 3.0, 0.0), 6.0), 6.0);
}

// PyTorch's hardswish, a * min(max(a + 3, 0), 6) / 6, the product rounded
// first; NaN stays NaN.
fn hardswish_f32(a: f32) -> f32 {
    return div_f32(a * minimum_f32(maximum_f32(a + 3.0, 0.0), 6.0), 6.0);
}

fn is_inf_f32(x: f32) -> bool {
    return (bitcast<u32>(x) & 0x7fffffffu) == F32_INF_BITS;
}

// A zero with the sign bit of `bits`. Built from bits at run time: a
// literal -0.0 has been compiled to +0.0 (SwiftShader in Chromium).
fn signed_zero_f32(bits: u32) -> f32 {
    return bitcast<f32>(bits & 0x80000000u);
}

// True for -0.0 and every other value with the sign bit set.
fn sign_bit_f32(x: f32) -> bool {
    return (bitcast<u32>(x) >> 31u) == 1u;
}

const F32_MIN_NORMAL: f32 = 1.17549435e-38;

// The significand of the finite, nonzero |x| whose bits are `u`, as an
// integer m with 2^23 <= m < 2^24, and its exponent: |x| = m * 2^(e - 23).
// Subnormals are normalised from their bits, so a GPU that flushes them
// in arithmetic still sees their value here.
struct SignificandF32 {
    m: u32,
    e: i32,
}

fn significand_f32(u: u32) -> SignificandF32 {
    let field = (u >> 23u) & 0xffu;
    let frac = u & 0x7fffffu;
    if (field == 0u) {
        let shift = countLeadingZeros(frac) - 8u;
        return SignificandF32(frac << shift, -126 - i32(shift));
    }
    return SignificandF32(frac | 0x800000u, i32(field) - 127);
}

// a / b correctly rounded, as IEEE (and the CPU) divide: to nearest even,
// subnormal results kept. WGSL allows `/` an error of 2.5 ulp, and
// NVIDIA's is a * (1 / b): an ulp off for ordinary operands, and 0 or NaN
// once |b| > 2^126, where 1 / b is a flushed subnormal. Here the
// significands' quotient is estimated in f32 and made exact with integers:
// its remainder fits in 32 bits, so wrapping u32 products give it exactly.
fn div_f32(a: f32, b: f32) -> f32 {
    let ua = bitcast<u32>(a);
    let ub = bitcast<u32>(b);
    let sign = (ua ^ ub) & 0x80000000u;
    let xa = ua & 0x7fffffffu;
    let xb = ub & 0x7fffffffu;
    let inf = bitcast<f32>(sign | F32_INF_BITS);
    if (xa > F32_INF_BITS || xb > F32_INF_BITS) { return nan_f32(); }
    if (xa == F32_INF_BITS) { return select(inf, nan_f32(), xb == F32_INF_BITS); }
    if (xb == 0u) { return select(inf, nan_f32(), xa == 0u); }
    if (xa == 0u || xb == F32_INF_BITS) { return bitcast<f32>(sign); }
    let sa = significand_f32(xa);
    let sb = significand_f32(xb);
    // n / sb.m in [1, 2): the quotient's significand is
    // q = floor(n * 2^23 / sb.m), 2^23 <= q < 2^24, and r its remainder.
    let low = sa.m < sb.m;
    let n = select(sa.m, sa.m << 1u, low);
    let e = sa.e - sb.e - select(0, 1, low);
    var q = u32(clamp(f32(n) / f32(sb.m), 1.0, 1.9999999) * 8388608.0);
    var r = bitcast<i32>((n << 23u) - q * sb.m);
    let d = i32(sb.m);
    // q moves by the units r holds (the estimate is a few off), then by the
    // one unit that rounding f32(r) / d may have missed. No loops: a fused
    // kernel inlines every division, and loops made compiling it slow.
    let c = i32(floor(f32(r) / f32(d)));
    q = u32(i32(q) + c);
    r -= c * d;
    if (r < 0) {
        q -= 1u;
        r += d;
    } else if (r >= d) {
        q += 1u;
        r -= d;
    }
    let biased = e + 127;
    if (biased >= 255) { return inf; }
    if (biased >= 1) {
        // No ties: n * 2^24 / sb.m is never an odd integer. A carry out of
        // the significand moves into the exponent, up to infinity.
        let up = select(0u, 1u, 2 * r > d);
        return bitcast<f32>(sign | ((u32(biased) << 23u) + (q & 0x7fffffu) + up));
    }
    // Subnormal: q rounded at bit s, the exact remainder breaking ties.
    let s = u32(1 - biased);
    if (s > 25u) { return bitcast<f32>(sign); }
    let kept = q >> s;
    let rest = q & ((1u << s) - 1u);
    let half = 1u << (s - 1u);
    let up = rest > half || (rest == half && (r != 0 || (kept & 1u) == 1u));
    return bitcast<f32>(sign | (kept + select(0u, 1u, up)));
}

// log(1 + x) for x in [-1/2, 1]: 2 atanh(s), s = x / (2 + x) within 1/3,
// by its series to s^15 (the rest is below 2e-9 of it).
fn log1p_series_f32(x: f32) -> f32 {
    let s = x / (2.0 + x);
    let s2 = s * s;
    let p = 1.0 + s2 * (1.0 / 3.0 + s2 * (0.2 + s2 * (1.0 / 7.0 + s2 * (1.0 / 9.0
        + s2 * (1.0 / 11.0 + s2 * (1.0 / 13.0 + s2 * (1.0 / 15.0)))))));
    return 2.0 * s * p;
}

// log2 that is right for subnormal inputs too (some drivers read their
// exponent field as if they were normal): they are scaled up by 2^64 first.
// WGSL leaves log, log2 and sqrt of a negative number (and of NaN) open;
// some browsers' compilers return the logarithm of |x|. These say NaN.
// Between 1/2 and 2 both go through log1p's series of x - 1 (exact
// there): WGSL bounds the built-ins' error there only absolutely (2^-21),
// which near 1 is a large relative one (log(1.0001) 0.3% off).
fn log2_f32(x: f32) -> f32 {
    if (x < 0.0 || is_nan_f32(x)) { return nan_f32(); }
    // GLSL leaves the built-in's log of 0 open too. -inf from x's bits (a
    // constant infinity is a shader-creation error in browsers).
    if ((bitcast<u32>(x) & 0x7fffffffu) == 0u) { return bitcast<f32>(bitcast<u32>(x) | 0xff800000u); }
    if (x > 0.0 && x < F32_MIN_NORMAL) {
        return log2(x * 18446744073709551616.0) - 64.0;
    }
    if (x >= 0.5 && x <= 2.0) {
        return log1p_series_f32(x - 1.0) * 1.4426950408889634;
    }
    return log2(x);
}

fn log_f32(x: f32) -> f32 {
    if (x < 0.0 || is_nan_f32(x)) { return nan_f32(); }
    if ((bitcast<u32>(x) & 0x7fffffffu) == 0u) { return bitcast<f32>(bitcast<u32>(x) | 0xff800000u); }
    if (x > 0.0 && x < F32_MIN_NORMAL) {
        return log(x * 18446744073709551616.0) - 44.3614195558365;
    }
    if (x >= 0.5 && x <= 2.0) {
        return log1p_series_f32(x - 1.0);
    }
    return log(x);
}

// atan of x >= 0 to a few ulp (Cephes' atanf): arguments past tan(3pi/8)
// are taken as pi/2 - atan(1/x), those past tan(pi/8) as
// pi/4 + atan((x - 1) / (x + 1)), then a minimax polynomial on
// [0, tan(pi/8)]. WGSL bounds its built-in atan only loosely, and the
// built-in atan2 has been seen 2e-5 off (relatively) near zero.
fn atan_abs_f32(x: f32) -> f32 {
    var base = 0.0;
    var t = x;
    if (x > 2.414213562373095) {
        base = 1.5707963267948966;
        t = -1.0 / x;
    } else if (x > 0.41421356237309503) {
        base = 0.7853981633974483;
        t = (x - 1.0) / (x + 1.0);
    }
    let z = t * t;
    return base + ((((8.05374449538e-2 * z - 1.38776856032e-1) * z + 1.99777106478e-1) * z
        - 3.33329491539e-1) * z * t + t);
}

// atan2 with IEEE's rules where WGSL leaves them open: NaN in, NaN out;
// atan2(+-0, +0) = +-0 and atan2(+-0, -0) = +-pi; the angle of |a| / |b|
// from atan_abs_f32, moved to b's half plane and a's sign.
fn atan2_f32(a: f32, b: f32) -> f32 {
    if (is_nan_f32(a) || is_nan_f32(b)) { return nan_f32(); }
    if (a == 0.0) {
        if (b > 0.0 || (b == 0.0 && !sign_bit_f32(b))) { return a; }
        return select(3.14159265358979, -3.14159265358979, sign_bit_f32(a));
    }
    var q: f32;
    if (is_inf_f32(a) && is_inf_f32(b)) {
        q = 0.7853981633974483;
    } else {
        q = atan_abs_f32(div_f32(abs(a), abs(b)));
    }
    if (sign_bit_f32(b)) { q = 3.141592653589793 - q; }
    return select(q, -q, sign_bit_f32(a));
}

// C's fmod, exactly, on the operands' bits (musl's method): |a|'s 24-bit
// significand reduced by |b|'s, one integer subtraction per binade between
// them (at most 277), never through a / b (whose rounding loses the
// remainder once the quotient is large), and never through float
// arithmetic a GPU may flush: a subnormal divisor or remainder is exact.
fn fmod_f32(a: f32, b: f32) -> f32 {
    let xa = bitcast<u32>(a) & 0x7fffffffu;
    let yb = bitcast<u32>(b) & 0x7fffffffu;
    let sign = bitcast<u32>(a) & 0x80000000u;
    if (yb == 0u || yb > 0x7f800000u || xa >= 0x7f800000u) { return nan_f32(); }
    // |a| < |b| (an infinite b too): a itself; |a| = |b|: a zero of a's sign.
    if (xa < yb) { return a; }
    if (xa == yb) { return bitcast<f32>(sign); }
    var x = significand_f32(xa);
    let y = significand_f32(yb);
    var mx = x.m;
    for (var i = 0; i < 300 && x.e > y.e; i++) {
        if (mx >= y.m) {
            mx -= y.m;
            if (mx == 0u) { return bitcast<f32>(sign); }
        }
        mx = mx << 1u;
        x.e -= 1;
    }
    if (mx >= y.m) {
        mx -= y.m;
        if (mx == 0u) { return bitcast<f32>(sign); }
    }
    // The remainder's leading bit back at bit 23, then its bits.
    let shift = countLeadingZeros(mx) - 8u;
    mx = mx << shift;
    let e = x.e - i32(shift) + 127;
    if (e > 0) { return bitcast<f32>(sign | (u32(e) << 23u) | (mx & 0x7fffffu)); }
    return bitcast<f32>(sign | (mx >> u32(1 - e)));
}

// NumPy's remainder: fmod, moved to the divisor's sign; a zero remainder
// is a zero of the divisor's sign.
fn rem_f32(a: f32, b: f32) -> f32 {
    let r = fmod_f32(a, b);
    if (r == 0.0) { return signed_zero_f32(bitcast<u32>(b)); }
    return select(r, r + b, (r < 0.0) != (b < 0.0));
}

fn div_i32(a: i32, b: i32) -> i32 {
    if (b == 0) { return 0; }
    if (b == -1) { return 0 - a; }
    return a / b;
}

fn rem_i32(a: i32, b: i32) -> i32 {
    if (b == 0 || b == -1) { return 0; }
    let r = a % b;
    return select(r, r + b, r != 0 && ((r < 0) != (b < 0)));
}

// Python's `//` on i32: the quotient rounded toward negative infinity.
fn floor_div_i32(a: i32, b: i32) -> i32 {
    if (b == 0) { return 0; }
    let q = div_i32(a, b);
    let r = a - q * b;
    return select(q, q - 1, r != 0 && ((r < 0) != (b < 0)));
}

// Shifts as NumPy's and PyTorch's: by a negative amount or by the width or
// more, `<<` gives 0 and `>>` the sign filled in (WGSL itself would take
// the amount modulo 32). u8 shifts in u32: its bits past 8 are cut later.
fn shl_i32(a: i32, b: i32) -> i32 {
    return select(0, a << (bitcast<u32>(b) & 31u), bitcast<u32>(b) < 32u);
}

fn shr_i32(a: i32, b: i32) -> i32 {
    return a >> min(bitcast<u32>(b), 31u);
}

fn shl_u32(a: u32, b: u32) -> u32 {
    return select(0u, a << (b & 31u), b < 32u);
}

fn shr_u32(a: u32, b: u32) -> u32 {
    return select(0u, a >> (b & 31u), b < 32u);
}

fn div_u32(a: u32, b: u32) -> u32 {
    if (b == 0u) { return 0u; }
    return a / b;
}

fn rem_u32(a: u32, b: u32) -> u32 {
    if (b == 0u) { return 0u; }
    return a % b;
}

fn pow_u32(a: u32, b: u32) -> u32 {
    var base = a;
    var e = b;
    var r = 1u;
    while (e != 0u) {
        if ((e & 1u) != 0u) { r = r * base; }
        base = base * base;
        e = e >> 1u;
    }
    return r;
}

fn pow_i32(a: i32, b: i32) -> i32 {
    if (b < 0) {
        if (a == 1) { return 1; }
        if (a == -1) { return select(1, -1, (b & 1) != 0); }
        return 0;
    }
    return bitcast<i32>(pow_u32(bitcast<u32>(a), u32(b)));
}

fn sign_i32(a: i32) -> i32 {
    return select(select(0, -1, a < 0), 1, a > 0);
}

fn f32_to_i32(x: f32) -> i32 {
    if (is_nan_f32(x)) { return 0; }
    if (x >= 2147483648.0) { return 2147483647; }
    if (x <= -2147483648.0) { return I32_MIN; }
    return i32(x);
}

fn f32_to_u32(x: f32) -> u32 {
    if (is_nan_f32(x) || x <= 0.0) { return 0u; }
    if (x >= 4294967296.0) { return 4294967295u; }
    return u32(x);
}

fn f32_to_u8(x: f32) -> u32 {
    if (is_nan_f32(x) || x <= 0.0) { return 0u; }
    if (x >= 255.0) { return 255u; }
    return u32(x);
}

// Rust's `u32 as f32`: rounded once to nearest, ties to even, on the
// integer (WGSL leaves the rounding of an inexact integer conversion open).
fn u32_to_f32(x: u32) -> f32 {
    if (x < 0x1000000u) { return f32(x); }
    // The top bit to bit 31; keep 24 bits, rounding on the 8 below.
    let s = countLeadingZeros(x);
    let word = x << s;
    var mantissa = word >> 8u;
    let rest = word & 0xffu;
    if (rest > 0x80u || (rest == 0x80u && (mantissa & 1u) == 1u)) { mantissa = mantissa + 1u; }
    return ldexp(f32(mantissa), 8 - i32(s));
}

// Rust's `i32 as f32`: `u32_to_f32` of the magnitude (i32::MIN's is 2^31).
fn i32_to_f32(x: i32) -> f32 {
    let m = select(bitcast<u32>(x), 0u - bitcast<u32>(x), x < 0);
    let r = u32_to_f32(m);
    return select(r, -r, x < 0);
}

// Non-zero by bits: a GPU that flushes subnormals compares them equal to
// zero (NumPy's and PyTorch's `bool` of 1e-40 is true).
fn f32_to_bool(x: f32) -> bool {
    return (bitcast<u32>(x) & 0x7fffffffu) != 0u;
}

// Round-to-nearest-even f16 bits of an f32, overflowing to infinity, a NaN
// kept as a quiet NaN of its sign and its payload's top bits (as the CPU's
// conversion and F16C do; a native f16 store's `f16()` conversion of it
// then gives the adapter's NaN), subnormals exact: worked out on the bits
// (pack2x16float's rounding, range and subnormals are the adapter's, and
// WGSL lets it flush them).
fn f16_bits(v: f32) -> u32 {
    let b = bitcast<u32>(v);
    let sign = (b >> 16u) & 0x8000u;
    let a = b & 0x7fffffffu;
    if (a > 0x7f800000u) { return sign | 0x7e00u | ((a >> 13u) & 0x3ffu); }
    // 65520 and up round to infinity.
    if (a >= 0x477ff000u) { return sign | 0x7c00u; }
    // Below 2^-14, a subnormal: m 2^-24 with m = |v| 2^24 (exact) rounded
    // half to even (WGSL's round).
    if (a < 0x38800000u) { return sign | u32(round(ldexp(bitcast<f32>(a), 24))); }
    // A normal: the exponent rebiased, the mantissa rounded at bit 13.
    return sign | ((a - 0x38000000u + 0xfffu + ((a >> 13u) & 1u)) >> 13u);
}

// The f32 of f16 bits (the low 16 of `h`), exactly: subnormals too
// (unpack2x16float may flush them to zero, and WGSL lets it).
fn f16_value(h: u32) -> f32 {
    let sign = (h & 0x8000u) << 16u;
    let e = (h >> 10u) & 0x1fu;
    let m = h & 0x3ffu;
    if (e == 0u) {
        // Zero or subnormal: m 2^-24, a normal f32 (or zero).
        return bitcast<f32>(sign | bitcast<u32>(ldexp(f32(m), -24)));
    }
    // Infinity and NaN keep every exponent bit.
    let exponent = select(e + 112u, 255u, e == 31u);
    return bitcast<f32>(sign | (exponent << 23u) | (m << 13u));
}

// The bits of lanes `first ..` of a word of `bits`-bit lanes that come
// before lane `n` (a partial last entry's lanes; the others keep theirs).
fn lane_mask(n: u32, first: u32, bits: u32) -> u32 {
    let lanes = min(n - min(n, first), 32u / bits);
    return select((1u << (lanes * bits)) - 1u, 0xffffffffu, lanes * bits == 32u);
}

// The two f16 of a word as f32s, exactly: unpack2x16float's (one
// instruction) unless a half is subnormal, which it may flush.
fn f16_pair(word: u32) -> vec2<f32> {
    let low = (word & 0x7c00u) == 0u && (word & 0x3ffu) != 0u;
    let high = (word & 0x7c000000u) == 0u && (word & 0x3ff0000u) != 0u;
    if (!(low || high)) {
        return unpack2x16float(word);
    }
    return vec2<f32>(f16_value(word), f16_value(word >> 16u));
}

// Round-to-nearest-even bf16 bits (the top half) of an f32, overflowing to
// infinity; a NaN keeps its top half where that is a NaN (so a bf16 NaN,
// signalling or not, moves through f32 unchanged), else it is quieted.
fn bf16_bits(v: f32) -> u32 {
    let b = bitcast<u32>(v);
    if ((b & 0x7fffffffu) > 0x7f800000u) {
        let top = b >> 16u;
        return select(top | 0x40u, top, (top & 0x7fu) != 0u);
    }
    return (b + 0x7fffu + ((b >> 16u) & 1u)) >> 16u;
}

// The f32 of bf16 bits.
fn bf16_value(bits: u32) -> f32 {
    return bitcast<f32>(bits << 16u);
}

// Half `odd` (0 low, 1 high) of a word of two bf16, as an f32.
fn bf16_of_word(word: u32, odd: u32) -> f32 {
    return bitcast<f32>(select(word << 16u, word & 0xffff0000u, odd == 1u));
}

// NumPy's floor_divide (npy_divmod): the exact remainder taken off first so
// that the quotient rounds to the right integer. A zero divisor gives
// a / b. A subnormal divisor's operands are both scaled by 2^24 from their
// bits first (a GPU may flush subnormals in arithmetic): that changes no
// step's rounding, as both are multiples of 2^-149, so the remainder, the
// difference and the quotient come out as IEEE arithmetic gives them
// unscaled. Signs and zeros are read from bits for the same reason.
fn floor_div_f32(a: f32, b: f32) -> f32 {
    let ub = bitcast<u32>(b) & 0x7fffffffu;
    if (ub == 0u) { return div_f32(a, b); }
    var x = a;
    var y = b;
    if (ub < 0x800000u) {
        x = scaled_2_24_f32(a);
        y = scaled_2_24_f32(b);
        // |a| past 2^104: |a / b| is past 2^230, infinite either way.
        if (is_inf_f32(x) && !is_inf_f32(a)) { return div_f32(a, b); }
    }
    let m = fmod_f32(x, y);
    var div = div_f32(x - m, y);
    if ((bitcast<u32>(m) & 0x7fffffffu) != 0u && sign_bit_f32(y) != sign_bit_f32(m)) {
        div = div - 1.0;
    }
    if (div == 0.0) { return signed_zero_f32(bitcast<u32>(a) ^ bitcast<u32>(b)); }
    let f = floor(div);
    return select(f, f + 1.0, div - f > 0.5);
}

// x * 2^24 from its bits: exact for a subnormal x too (which float
// arithmetic may flush), infinite past f32's range; zeros, infinities and
// NaN as they are.
fn scaled_2_24_f32(x: f32) -> f32 {
    let u = bitcast<u32>(x);
    let sign = u & 0x80000000u;
    let mag = u & 0x7fffffffu;
    if (mag == 0u || mag >= F32_INF_BITS) { return x; }
    let s = significand_f32(mag);
    let e = s.e + 24 + 127;
    if (e >= 255) { return bitcast<f32>(sign | F32_INF_BITS); }
    return bitcast<f32>(sign | (u32(e) << 23u) | (s.m & 0x7fffffu));
}

// ln(1 + x), accurate for small x. WGSL's log only promises an absolute
// error of 2^-21 near 1, so for 1 + x in [0.5, 2] it is not used: there
// ln(1 + x) = 2 atanh(s) with s = x / (2 + x), |s| <= 1/3, by its series
// (the terms past s^15 are below f32's precision).
fn log1p_f32(x: f32) -> f32 {
    if (x >= -0.5 && x <= 1.0) {
        return log1p_series_f32(x);
    }
    if (is_inf_f32(x) && x > 0.0) { return x; }
    return log_f32(1.0 + x);
}

// e^x - 1, accurate for small x: its Taylor series for |x| < 0.5 (terms to
// x^11; the rest is below 1e-12), exp(x) - 1 elsewhere (exp to about an
// ulp: exp_accurate_f32), where the result is at least 0.39 in magnitude
// and exp's relative error carries over.
fn expm1_f32(x: f32) -> f32 {
    if (abs(x) < 0.5) {
        let p = 1.0 + x * (1.0 / 2.0 + x * (1.0 / 6.0 + x * (1.0 / 24.0 + x * (1.0 / 120.0
            + x * (1.0 / 720.0 + x * (1.0 / 5040.0 + x * (1.0 / 40320.0
            + x * (1.0 / 362880.0 + x * (1.0 / 3628800.0 + x * (1.0 / 39916800.0))))))))));
        return x * p;
    }
    return exp_accurate_f32(x) - 1.0;
}

// The low and high words of the 64-bit product a * b.
fn mul_wide_u32(a: u32, b: u32) -> vec2<u32> {
    let a0 = a & 0xffffu;
    let a1 = a >> 16u;
    let b0 = b & 0xffffu;
    let b1 = b >> 16u;
    let p00 = a0 * b0;
    let p01 = a0 * b1;
    let p10 = a1 * b0;
    let mid = (p00 >> 16u) + (p01 & 0xffffu) + (p10 & 0xffffu);
    let lo = (p00 & 0xffffu) | (mid << 16u);
    let hi = a1 * b1 + (p01 >> 16u) + (p10 >> 16u) + (mid >> 16u);
    return vec2<u32>(lo, hi);
}

// x = q * pi/2 + r with |r| <= pi/4 (q taken mod 4).
struct HalfPiTurns {
    q: u32,
    r: f32,
}

// Argument reduction for sin, cos and tan, to about an ulp at any
// magnitude (WGSL bounds its built-ins only on [-pi, pi]; sin(3e38) came
// back -1). Up to 8192, Cody and Waite: j * pi/2 taken off in four parts
// whose first three products with j are exact (8, 11 and 11 bits). Beyond, Payne and Hanek: the
// 24-bit significand times 192 bits of 2/pi in integer arithmetic, from
// which the 64 bits around the binary point give the quadrant and the
// fraction (the error of the cut 2/pi is below 2^-64 for every f32).
fn reduce_half_pi(x: f32) -> HalfPiTurns {
    let ax = abs(x);
    var q: u32;
    var r: f32;
    if (ax <= 8192.0) {
        let j = round(ax * 0.6366197723675814);
        r = (((ax - j * 1.5703125) - j * 4.837512969970703125e-4) - j * 7.549533620476723e-8)
            - j * 2.5633440682570896e-12;
        q = u32(j);
    } else {
        let bits = bitcast<u32>(ax);
        let e = i32((bits >> 23u) & 0xffu) - 127;
        // ax = m * 2^(e - 31); 2/pi = t * 2^-192; ax * 2/pi = (m * t) * 2^(e - 223).
        let m = (bits << 8u) | 0x80000000u;
        // 2/pi's first 192 bits, least significant word first.
        var words = array<u32, 6>(0x3c439041u, 0xdb629599u, 0xf534ddc0u, 0xfc2757d1u,
            0x4e441529u, 0xa2f9836eu);
        var prod: array<u32, 7>;
        var carry = 0u;
        for (var k = 0u; k < 6u; k++) {
            let p = mul_wide_u32(m, words[k]);
            prod[k] = p.x + carry;
            carry = p.y + select(0u, 1u, prod[k] < p.x);
        }
        prod[6] = carry;
        // Bits 161 - e to 224 - e: two integer bits, then 62 of fraction.
        let low = u32(161 - e);
        let word = low >> 5u;
        let shift = low & 31u;
        var lo = prod[word];
        var hi = prod[word + 1u];
        if (shift != 0u) {
            lo = (lo >> shift) | (hi << (32u - shift));
            hi = (hi >> shift) | (prod[word + 2u] << (32u - shift));
        }
        q = hi >> 30u;
        var fh = (hi << 2u) | (lo >> 30u);
        var fl = lo << 2u;
        // A fraction of a half or more is the next quadrant less the rest.
        let up = (fh >> 31u) == 1u;
        if (up) {
            q = q + 1u;
            fl = 0u - fl;
            fh = select(~fh, ~fh + 1u, fl == 0u);
        }
        var scale = -32;
        if (fh == 0u) {
            fh = fl;
            fl = 0u;
            scale = -64;
        }
        let lead = countLeadingZeros(fh);
        if (lead != 0u && lead < 32u) {
            fh = (fh << lead) | (fl >> (32u - lead));
        }
        r = ldexp(f32(fh), scale - i32(lead)) * 1.5707963267948966;
        if (up) { r = -r; }
    }
    if (sign_bit_f32(x)) {
        q = 0u - q;
        r = -r;
    }
    return HalfPiTurns(q & 3u, r);
}

// sin and cos on [-pi/4, pi/4] (Cephes' sinf and cosf polynomials).
fn sin_kernel_f32(r: f32) -> f32 {
    let z = r * r;
    return ((-1.9515295891e-4 * z + 8.3321608736e-3) * z - 1.6666654611e-1) * z * r + r;
}

fn cos_kernel_f32(r: f32) -> f32 {
    let z = r * r;
    return ((2.443315711809948e-5 * z - 1.388731625493765e-3) * z + 4.166664568298827e-2) * z * z
        - 0.5 * z + 1.0;
}

fn sin_f32(x: f32) -> f32 {
    if (is_nan_f32(x) || is_inf_f32(x)) { return nan_f32(); }
    if (x == 0.0) { return x; }
    let t = reduce_half_pi(x);
    let s = select(sin_kernel_f32(t.r), cos_kernel_f32(t.r), (t.q & 1u) == 1u);
    return select(s, -s, (t.q & 2u) != 0u);
}

fn cos_f32(x: f32) -> f32 {
    if (is_nan_f32(x) || is_inf_f32(x)) { return nan_f32(); }
    let t = reduce_half_pi(x);
    let c = select(cos_kernel_f32(t.r), sin_kernel_f32(t.r), (t.q & 1u) == 1u);
    return select(c, -c, ((t.q + 1u) & 2u) != 0u);
}

// tan to a few ulp at any magnitude: WGSL's tan is only as good as
// sin / cos, whose error bound is absolute (2^-11 on [-pi, pi]), and
// browsers' compilers use that freedom. The argument is reduced by
// multiples of pi/2, then Cephes' tanf polynomial on [-pi/4, pi/4]; odd
// quadrants take -1/tan.
fn tan_f32(a: f32) -> f32 {
    if (is_nan_f32(a) || is_inf_f32(a)) { return nan_f32(); }
    if (a == 0.0) { return a; }
    let turns = reduce_half_pi(a);
    let z = turns.r;
    let zz = z * z;
    // The polynomial for every z: for small z it is z to the last bit, and
    // skipping it (Cephes skips it only below |x| = 1e-4, not for small
    // reduced z) left z^3 / 3 out, ~280 ulp.
    var t = (((((9.38540185543e-3 * zz + 3.11992232697e-3) * zz + 2.44301354525e-2) * zz
        + 5.34112807005e-2) * zz + 1.33387994085e-1) * zz + 3.33331568548e-1) * zz * z + z;
    if ((turns.q & 1u) == 1u) { t = -1.0 / t; }
    return t;
}

// sqrt correctly rounded (WGSL allows its sqrt the error of
// 1 / inverseSqrt, several ulp), subnormals included, NaN for a negative
// number: as div_f32, an f32 estimate of the significand's root made exact
// with integers. x = n * 2^(2h - 46) with 2^46 <= n < 2^48, so the root's
// significand is s = floor(sqrt(n)) and r = n - s^2 fits 32 bits.
fn sqrt_f32(x: f32) -> f32 {
    let u = bitcast<u32>(x);
    if (is_nan_f32(x) || u > 0x80000000u) { return nan_f32(); }
    if ((u & 0x7fffffffu) == 0u || u == F32_INF_BITS) { return x; }
    let sx = significand_f32(u);
    let odd = u32(sx.e) & 1u;
    let h = (sx.e - i32(odd)) / 2;
    var s = u32(sqrt(f32(sx.m) * f32(2u << odd)) * 2048.0);
    s = clamp(s, 0x800000u, 0xffffffu);
    var r = bitcast<i32>((sx.m << (23u + odd)) - s * s);
    // s moves by c = r / 2s units (n - (s + c)^2 = r - 2sc - c^2), then by
    // the one unit rounding may have missed; no loops (see div_f32).
    let c = i32(floor(f32(r) / f32(2u * s)));
    r -= (2 * i32(s) + c) * c;
    s = u32(i32(s) + c);
    if (r < 0) {
        r += 2 * i32(s) - 1;
        s -= 1u;
    } else if (r > 2 * i32(s)) {
        r -= 2 * i32(s) + 1;
        s += 1u;
    }
    // No ties: n is never (s + 1/2)^2. A carry moves into the exponent.
    let up = select(0u, 1u, r > i32(s));
    return bitcast<f32>((u32(h + 127) << 23u) + (s & 0x7fffffu) + up);
}
