// 64-bit two's complement integers (i64) as vec2<u32>(low word, high word),
// the way they lie in storage: WGSL has no 64-bit integer on the web.
// Arithmetic wraps at 2^64 as Rust's wrapping ops do; conversions follow
// Rust's `as`. Included by kernels that compute on i64.

fn i64_add(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    let lo = a.x + b.x;
    return vec2<u32>(lo, a.y + b.y + select(0u, 1u, lo < a.x));
}

fn i64_neg(a: vec2<u32>) -> vec2<u32> {
    return i64_add(~a, vec2<u32>(1u, 0u));
}

fn i64_sub(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    return i64_add(a, i64_neg(b));
}

// The full 64-bit product of two u32, from 16-bit halves.
fn u32_mul_wide(a: u32, b: u32) -> vec2<u32> {
    let a0 = a & 0xffffu;
    let a1 = a >> 16u;
    let b0 = b & 0xffffu;
    let b1 = b >> 16u;
    let p00 = a0 * b0;
    let p01 = a0 * b1;
    let p10 = a1 * b0;
    let mid = (p00 >> 16u) + (p01 & 0xffffu) + (p10 & 0xffffu);
    let lo = (p00 & 0xffffu) | (mid << 16u);
    return vec2<u32>(lo, a1 * b1 + (p01 >> 16u) + (p10 >> 16u) + (mid >> 16u));
}

fn i64_mul(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    let p = u32_mul_wide(a.x, b.x);
    return vec2<u32>(p.x, p.y + a.x * b.y + a.y * b.x);
}

fn i64_is_neg(a: vec2<u32>) -> bool {
    return (a.y & 0x80000000u) != 0u;
}

fn i64_eq(a: vec2<u32>, b: vec2<u32>) -> bool {
    return a.x == b.x && a.y == b.y;
}

fn i64_lt(a: vec2<u32>, b: vec2<u32>) -> bool {
    let ah = bitcast<i32>(a.y);
    let bh = bitcast<i32>(b.y);
    return ah < bh || (ah == bh && a.x < b.x);
}

fn i64_max(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    return select(a, b, i64_lt(a, b));
}

fn i64_min(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    return select(a, b, i64_lt(b, a));
}

fn i64_abs(a: vec2<u32>) -> vec2<u32> {
    return select(a, i64_neg(a), i64_is_neg(a));
}

fn i64_sign(a: vec2<u32>) -> vec2<u32> {
    if (i64_is_neg(a)) { return vec2<u32>(0xffffffffu, 0xffffffffu); }
    return vec2<u32>(select(0u, 1u, (a.x | a.y) != 0u), 0u);
}

fn i64_from_i32(a: i32) -> vec2<u32> {
    return vec2<u32>(bitcast<u32>(a), select(0u, 0xffffffffu, a < 0));
}

// Rust's `f32 as i64`: toward zero, saturating, NaN to 0.
fn i64_from_f32(v: f32) -> vec2<u32> {
    if (is_nan_f32(v)) { return vec2<u32>(0u, 0u); }
    let two_63 = bitcast<f32>(0x5f000000u);
    if (v >= two_63) { return vec2<u32>(0xffffffffu, 0x7fffffffu); }
    if (v <= -two_63) { return vec2<u32>(0u, 0x80000000u); }
    // Both parts are exact: |t| < 2^63 has at most 24 significant bits.
    let t = trunc(abs(v));
    let hi = floor(t / 4294967296.0);
    let m = vec2<u32>(u32(t - hi * 4294967296.0), u32(hi));
    return select(m, i64_neg(m), v < 0.0);
}

// Rust's `i64 as f32`: rounded once to nearest, ties to even (done here on
// the integer, since WGSL leaves the rounding of integer conversions open).
fn i64_to_f32(a: vec2<u32>) -> f32 {
    let neg = i64_is_neg(a);
    // The magnitude as an unsigned 64-bit value (i64::MIN's is 2^63).
    let m = select(a, i64_neg(a), neg);
    if ((m.x | m.y) == 0u) { return 0.0; }
    // The top 32 significant bits, with whether any bit below them is set.
    var word = m.x;
    var shift = 0;
    var below = false;
    if (m.y != 0u) {
        let s = countLeadingZeros(m.y);
        word = m.y << s;
        if (s != 0u) { word = word | (m.x >> (32u - s)); }
        // m.x's bits past the word: its low 32 - s (all of it when s is 0).
        below = select(m.x != 0u, (m.x << s) != 0u, s != 0u);
        shift = 32 - i32(s);
    } else {
        let s = countLeadingZeros(m.x);
        word = m.x << s;
        shift = -i32(s);
    }
    // Keep 24 bits, rounding on the 8 below and the sticky rest.
    var mantissa = word >> 8u;
    let rest = word & 0xffu;
    let tie_or_more = rest > 0x80u || (rest == 0x80u && (below || (mantissa & 1u) == 1u));
    if (tie_or_more) { mantissa = mantissa + 1u; }
    let r = ldexp(f32(mantissa), shift + 8);
    return select(r, -r, neg);
}
