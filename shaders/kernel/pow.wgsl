// Powers of f32, as C's powf (NumPy's float32 power) to within an ulp.
// Integer exponents below 2^24 are taken by squaring with 64-bit
// significands, exact where the power is an f32; every other exponent as
// e^(b ln a) in float-float arithmetic (about 44 bits), rounded once.

// A positive number with a 64-bit significand: (high word, low word, k)
// is (hi 2^32 + lo) / 2^63 * 2^k, the top bit of hi set. The product of
// two, truncated to 64 bits (under 2^-63 relative below the exact one).
fn mul_wide64(a: vec3<u32>, b: vec3<u32>) -> vec3<u32> {
    // Each (low word, high word).
    let p00 = mul_wide_u32(a.y, b.y);
    let p01 = mul_wide_u32(a.y, b.x);
    let p10 = mul_wide_u32(a.x, b.y);
    let p11 = mul_wide_u32(a.x, b.x);
    // The 128-bit product's words w3 w2 w1 (w0 is dropped).
    let s1 = p00.y + p01.x;
    let w1 = s1 + p10.x;
    let c1 = select(0u, 1u, s1 < p00.y) + select(0u, 1u, w1 < s1);
    let s2 = p01.y + p10.y;
    let s3 = s2 + p11.x;
    let w2 = s3 + c1;
    let c2 = select(0u, 1u, s2 < p01.y) + select(0u, 1u, s3 < s2) + select(0u, 1u, w2 < s3);
    let w3 = p11.y + c2;
    let k = bitcast<i32>(a.z) + bitcast<i32>(b.z);
    if ((w3 & 0x80000000u) != 0u) {
        return vec3<u32>(w3, w2, bitcast<u32>(k + 1));
    }
    return vec3<u32>((w3 << 1u) | (w2 >> 31u), (w2 << 1u) | (w1 >> 31u), bitcast<u32>(k));
}

// A wide number (see mul_wide64) rounded to the nearest f32, ties to even,
// subnormals included.
fn wide_to_f32(w: vec3<u32>) -> f32 {
    let k = bitcast<i32>(w.z);
    if (k > 127) { return f32_from_bits(F32_INF_BITS); }
    if (k < -150) { return 0.0; }
    // [2^-150, 2^-149): the least subnormal, or 0 for the tie.
    if (k == -150) { return select(f32_from_bits(1u), 0.0, w.x == 0x80000000u && w.y == 0u); }
    // Bits below the kept ones: 8 of hi for a normal result, more below.
    let s = u32(max(-126 - k, 0));
    let q = w.x >> (8u + s);
    let rest = w.x & ((1u << (8u + s)) - 1u);
    let half = 1u << (7u + s);
    let up = rest > half || (rest == half && (w.y != 0u || (q & 1u) == 1u));
    let rounded = q + select(0u, 1u, up);
    // A carry out of the significand moves into the exponent, to infinity.
    if (s == 0u) { return f32_from_bits((u32(k + 126) << 23u) + rounded); }
    return f32_from_bits(rounded);
}

// x^n for a finite x > 0 and an integer 1 <= n < 2^24 as a wide number, by
// squaring: within n 2^-62 of the exact power (relative), so its rounding is
// exact where the power is an f32, and correct but within that of a tie.
fn pow_int_wide(x: f32, n: u32) -> vec3<u32> {
    let bits = bitcast<u32>(x) & 0x7fffffffu;
    var m = bits & 0x7fffffu;
    var e = i32(bits >> 23u) - 127;
    if (e == -127) {
        // Subnormal: its leading bit moved to bit 23.
        let lz = countLeadingZeros(m);
        m = m << (lz - 8u);
        e = -118 - i32(lz);
    } else {
        m = m | 0x800000u;
    }
    var base = vec3<u32>(m << 8u, 0u, bitcast<u32>(e));
    var acc = vec3<u32>(0x80000000u, 0u, 0u);
    var rest = n;
    // One trip per bit of n: at most 24.
    loop {
        if ((rest & 1u) == 1u) { acc = mul_wide64(acc, base); }
        rest = rest >> 1u;
        if (rest == 0u) { break; }
        base = mul_wide64(base, base);
    }
    return acc;
}

// x^b for a finite x > 0 and an integer 0 < |b| < 2^24: a positive power
// rounded once from its wide value; a negative one as the float-float
// reciprocal of that value's significand (its top 48 bits), scaled by
// 2^-k in integers and rounded once (ldexp into the subnormals gives 0 on
// a GPU that flushes them). A subnormal x to a power past 1 is 0 or
// infinite (past 2^-252 or 2^252): its exponent times b would pass i32.
fn pow_int_f32(x: f32, b: f32, z: u32) -> f32 {
    let n = u32(abs(b));
    if (n >= 2u && (bitcast<u32>(x) & 0x7f800000u) == 0u) {
        return select(f32_from_bits(F32_INF_BITS), 0.0, b > 0.0);
    }
    let w = pow_int_wide(x, n);
    if (b > 0.0) { return wide_to_f32(w); }
    let k = bitcast<i32>(w.z);
    if (k > 160) { return 0.0; }
    if (k < -160) { return f32_from_bits(F32_INF_BITS); }
    // The significand (hi 2^32 + lo) / 2^63 in [1, 2) as hi + lo: its top
    // 24 bits, then the next 24 (both exact in f32).
    let top = f32(w.x >> 8u) * 1.1920928955078125e-7;
    let next = f32(((w.x & 0xffu) << 16u) | (w.y >> 16u)) * 7.105427357601002e-15;
    let r = ff_div(1.0, ff_fast_sum(top, next, z), z);
    return wide_to_f32(ff_to_wide(r, -k));
}

// IEEE pow (C's powf), whose special cases WGSL's pow leaves open; `z` is
// a word that is always 0 (see `ff_keep`).
fn pow_f32(a: f32, b: f32, z: u32) -> f32 {
    // Zeros, signs and |b| < 1 are read from bits: a GPU that flushes
    // subnormals compares a subnormal equal to 0 (and would call it an
    // integer exponent, or the base 0).
    let b_bits = bitcast<u32>(b) & 0x7fffffffu;
    let x_bits = bitcast<u32>(a) & 0x7fffffffu;
    if (b_bits == 0u || a == 1.0) { return 1.0; }
    if (is_nan_f32(a) || is_nan_f32(b)) { return nan_f32(); }
    let x = bitcast<f32>(x_bits);
    let inf = f32_from_bits(F32_INF_BITS);
    // Infinite exponents: 1 for |a| = 1, else 0 or inf by |a| against 1.
    if (is_inf_f32(b)) {
        if (x == 1.0) { return 1.0; }
        return select(0.0, inf, (x > 1.0) == (b > 0.0));
    }
    let integer = b_bits >= 0x3f800000u && floor(b) == b;
    // Odd integers below 2^24; every float above is even.
    let odd = integer && abs(b) < 16777216.0 && (i32(abs(b)) & 1) == 1;
    var m: f32;
    if (x_bits == 0u) {
        m = select(0.0, inf, sign_bit_f32(b));
    } else if (is_inf_f32(x)) {
        m = select(inf, 0.0, sign_bit_f32(b));
    } else {
        if (sign_bit_f32(a) && !integer) { return nan_f32(); }
        if (integer && abs(b) < 16777216.0) {
            m = pow_int_f32(x, b, z);
        } else {
            m = pow_float_float(x, b, z);
        }
    }
    // A negative base (-0 and -inf too) keeps its sign for odd exponents.
    return select(m, -m, sign_bit_f32(a) && odd);
}


// Float-float numbers: vec2(hi, lo) stands for hi + lo, |lo| at most half
// an ulp of hi, about 48 significant bits. Their sums and products are
// made exact from f32 ops that each round once as written, which compilers
// do not promise (Mesa folds `(a + b) - a` to `b`, and any driver may fuse
// a product into the add after it). `ff_keep` hides a value from them: its
// bits xor `z`, a word that is always 0 (an elementwise kernel's
// `params.zero`) but that no compiler can know.
fn ff_keep(x: f32, z: u32) -> f32 {
    return bitcast<f32>(bitcast<u32>(x) ^ z);
}

// a + b exactly, as a float-float number (Knuth's two-sum).
fn ff_two_sum(a: f32, b: f32, z: u32) -> vec2<f32> {
    let s = ff_keep(a + b, z);
    let bv = ff_keep(s - a, z);
    let av = ff_keep(s - bv, z);
    return vec2<f32>(s, ff_keep(a - av, z) + ff_keep(b - bv, z));
}

// a + b exactly where |a| >= |b| or a = 0 (Dekker's fast two-sum).
fn ff_fast_sum(a: f32, b: f32, z: u32) -> vec2<f32> {
    let bk = ff_keep(b, z);
    let s = ff_keep(a + bk, z);
    return vec2<f32>(s, bk - ff_keep(s - a, z));
}

// a as hi + lo, halves of at most 12 significant bits whose products are
// exact (Veltkamp's split), for |a| far below 2^115.
fn ff_split(a: f32, z: u32) -> vec2<f32> {
    let c = ff_keep(4097.0 * a, z);
    let h = ff_keep(c - ff_keep(c - a, z), z);
    return vec2<f32>(h, ff_keep(a - h, z));
}

// a * b exactly (Dekker's product), away from overflow and underflow. The
// halves' products are exact, so fusing them into the adds changes nothing.
fn ff_two_prod(a: f32, b: f32, z: u32) -> vec2<f32> {
    let p = ff_keep(a * b, z);
    let x = ff_split(a, z);
    let y = ff_split(b, z);
    let e1 = ff_keep(x.x * y.x - p, z);
    let e2 = ff_keep(e1 + x.x * y.y, z);
    let e3 = ff_keep(e2 + x.y * y.x, z);
    return vec2<f32>(p, e3 + x.y * y.y);
}

fn ff_add(a: vec2<f32>, b: vec2<f32>, z: u32) -> vec2<f32> {
    let s = ff_two_sum(a.x, b.x, z);
    return ff_fast_sum(s.x, s.y + ff_keep(a.y + b.y, z), z);
}

fn ff_mul(a: vec2<f32>, b: vec2<f32>, z: u32) -> vec2<f32> {
    let p = ff_two_prod(a.x, b.x, z);
    return ff_fast_sum(p.x, p.y + (a.x * b.y + a.y * b.x), z);
}

fn ff_mul_f32(a: vec2<f32>, b: f32, z: u32) -> vec2<f32> {
    let p = ff_two_prod(a.x, b, z);
    return ff_fast_sum(p.x, p.y + a.y * b, z);
}

// a / b: a first quotient q in f32 (any few-ulp division will do), then
// the exact remainder a - q b divided again.
fn ff_div(a: f32, b: vec2<f32>, z: u32) -> vec2<f32> {
    let q = ff_keep(a / b.x, z);
    let r = ff_add(vec2<f32>(a, 0.0), -ff_mul_f32(b, q, z), z);
    return ff_fast_sum(q, r.x / b.x, z);
}

// ln 2 as a float-float number.
const FF_LN2: vec2<f32> = vec2<f32>(0.693147182464599609375, -1.9046542121259336e-9);

// ln x for a finite x > 0 (subnormals read from their bits), to about
// 2^-36 relative. x = f 2^e with f in [2/3, 4/3), so that e ln 2 + ln f
// never cancels; ln f = 2 atanh(s) = 2 (s + s^3/3 + s^5/5 + ...) with
// s = (f - 1) / (f + 1), |s| <= 1/5: float-float up to s^3, the rest in f32.
fn ff_ln(x: f32, z: u32) -> vec2<f32> {
    let sig = significand_f32(bitcast<u32>(x));
    // f >= 4/3 is halved: its significand's field read with exponent -1.
    let high = sig.m >= 0xaaaaabu;
    let f = bitcast<f32>(select(0x3f800000u, 0x3f000000u, high) | (sig.m & 0x7fffffu));
    let e = f32(sig.e + select(0, 1, high));
    // f - 1 is exact (f lies within a factor 2 of 1).
    let s = ff_div(ff_keep(f - 1.0, z), ff_two_sum(f, 1.0, z), z);
    let s2 = ff_mul(s, s, z);
    let h = s2.x;
    let t = 0.4 + h * (0.2857142857 + h * (0.2222222222 + h * (0.1818181818
        + h * (0.1538461538 + h * 0.1333333333))));
    let c = ff_add(vec2<f32>(0.666666686534881591796875, -1.9868215517249155e-8),
        vec2<f32>(ff_keep(h * t, z), 0.0), z);
    let ln_f = ff_add(2.0 * s, ff_mul(ff_mul(s2, s, z), c, z), z);
    return ff_add(ff_mul_f32(FF_LN2, e, z), ln_f, z);
}

// The float-float 2^q t (t > 0 normal, q an integer) as a wide number
// (see `mul_wide64`), so that it rounds once, subnormals included.
fn ff_to_wide(t: vec2<f32>, q: i32) -> vec3<u32> {
    let h = significand_f32(bitcast<u32>(t.x));
    var hi = h.m << 8u;
    var lo = 0u;
    var k = h.e + q;
    let lo_bits = bitcast<u32>(t.y) & 0x7fffffffu;
    if (lo_bits != 0u) {
        // t.y's significand in units of the wide's last bit, 2^(h.e - 63):
        // shifted up by at most 16 (|t.y| <= 2^(h.e - 24)); bits below
        // 2^-63 relative go.
        let l = significand_f32(lo_bits);
        let up = l.e - h.e + 40;
        var add_lo = 0u;
        var add_hi = 0u;
        if (up >= 0) {
            add_lo = l.m << u32(up);
            add_hi = select(0u, l.m >> (32u - u32(up)), up > 0);
        } else if (up > -32) {
            add_lo = l.m >> u32(-up);
        }
        if (t.y > 0.0) {
            lo = add_lo;
            hi += add_hi;
        } else {
            lo = 0u - add_lo;
            hi -= add_hi + select(0u, 1u, add_lo != 0u);
            if ((hi & 0x80000000u) == 0u) {
                hi = (hi << 1u) | (lo >> 31u);
                lo = lo << 1u;
                k -= 1;
            }
        }
    }
    return vec3<u32>(hi, lo, bitcast<u32>(k));
}

// x^b for a finite x > 0 and a finite b: e^y with y = b ln x in
// float-float, y = q ln 2 + r with |r| <= ln 2 / 2, and
// e^r = 1 + r + r^2/2 + r^3 (1/6 + r/24 + ... + r^5/40320), r^3's factor
// in f32. Within about 0.52 ulp of the exact power before its rounding.
fn pow_float_float(x: f32, b: f32, z: u32) -> f32 {
    // ln 1 = 0: the product below would split a huge b into infinities.
    if (x == 1.0) { return 1.0; }
    let l = ff_ln(x, z);
    // Far past overflow and underflow (|y| > 89 and > 104), decided early:
    // the exact product below needs |b| far from 2^115.
    let y0 = b * l.x;
    if (y0 > 100.0) { return f32_from_bits(F32_INF_BITS); }
    if (y0 < -120.0) { return 0.0; }
    let y = ff_mul_f32(l, b, z);
    let q = round(y.x * 1.4426950408889634);
    let r = ff_add(y, -ff_mul_f32(FF_LN2, q, z), z);
    let r2 = ff_mul(r, r, z);
    let g = r.x;
    let v = 0.1666666667 + g * (0.04166666667 + g * (0.008333333333
        + g * (0.001388888889 + g * (0.0001984126984 + g * 0.0000248015873))));
    let r3 = ff_mul(r2, r, z);
    let tail = ff_add(0.5 * r2, vec2<f32>(ff_keep(r3.x * v, z), 0.0), z);
    let t = ff_add(vec2<f32>(1.0, 0.0), ff_add(r, tail, z), z);
    return wide_to_f32(ff_to_wide(t, i32(q)));
}
