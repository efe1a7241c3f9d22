// 64-bit two's complement integers (i64) as vec2<u32>(low word, high word),
// the way they lie in storage: WGSL has no 64-bit integer on the web.
// Arithmetic wraps at 2^64 as Rust's wrapping ops do; conversions follow
// Rust's `as`. Included, after math.wgsl, by kernels that compute on i64.

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

// (math.wgsl's `mul_wide_u32` gives the low words' full product.)
fn i64_mul(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    let p = mul_wide_u32(a.x, b.x);
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

// `a << b` and `a >> b` (arithmetic), as shl_i32 and shr_i32 past the
// width: an amount outside 0..64 gives 0, or the sign filled in.
fn i64_shl(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    if (b.y != 0u || b.x >= 64u) { return vec2<u32>(0u, 0u); }
    let n = b.x;
    if (n >= 32u) { return vec2<u32>(0u, a.x << (n - 32u)); }
    if (n == 0u) { return a; }
    return vec2<u32>(a.x << n, (a.y << n) | (a.x >> (32u - n)));
}

fn i64_shr(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    let n = select(63u, b.x, b.y == 0u && b.x < 64u);
    let fill = bitcast<u32>(bitcast<i32>(a.y) >> 31u);
    if (n >= 32u) { return vec2<u32>(bitcast<u32>(bitcast<i32>(a.y) >> (n - 32u)), fill); }
    if (n == 0u) { return a; }
    return vec2<u32>((a.x >> n) | (a.y << (32u - n)), bitcast<u32>(bitcast<i32>(a.y) >> n));
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

fn u64_lt(a: vec2<u32>, b: vec2<u32>) -> bool {
    return a.y < b.y || (a.y == b.y && a.x < b.x);
}

// Unsigned 64-bit division of n by d (d not 0, at most 2^63, as i64
// magnitudes are): the quotient and the remainder, one bit at a time.
fn u64_divmod(n: vec2<u32>, d: vec2<u32>) -> array<vec2<u32>, 2> {
    var q = vec2<u32>(0u, 0u);
    var r = vec2<u32>(0u, 0u);
    for (var k = 0u; k < 64u; k++) {
        let i = 63u - k;
        let bit = select((n.x >> i) & 1u, (n.y >> (i - 32u)) & 1u, i >= 32u);
        // r < d <= 2^63 before the shift, so it stays within 64 bits.
        r = vec2<u32>((r.x << 1u) | bit, (r.y << 1u) | (r.x >> 31u));
        if (!u64_lt(r, d)) {
            r = i64_sub(r, d);
            if (i >= 32u) { q.y = q.y | (1u << (i - 32u)); } else { q.x = q.x | (1u << i); }
        }
    }
    return array<vec2<u32>, 2>(q, r);
}

// Rust's wrapping_div and wrapping_rem together (toward zero; i64::MIN / -1
// is i64::MIN); a zero divisor gives 0 and 0, as the CPU's do.
fn i64_divmod(a: vec2<u32>, b: vec2<u32>) -> array<vec2<u32>, 2> {
    if ((b.x | b.y) == 0u) { return array<vec2<u32>, 2>(vec2<u32>(0u, 0u), vec2<u32>(0u, 0u)); }
    let qr = u64_divmod(i64_abs(a), i64_abs(b));
    let q = select(qr[0], i64_neg(qr[0]), i64_is_neg(a) != i64_is_neg(b));
    let r = select(qr[1], i64_neg(qr[1]), i64_is_neg(a));
    return array<vec2<u32>, 2>(q, r);
}

fn i64_div(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    return i64_divmod(a, b)[0];
}

// NumPy's remainder: the sign of the divisor.
fn i64_rem(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    let r = i64_divmod(a, b)[1];
    let flip = (r.x | r.y) != 0u && i64_is_neg(r) != i64_is_neg(b);
    return select(r, i64_add(r, b), flip);
}

// Python's `//`: the quotient rounded toward negative infinity.
fn i64_floor_div(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    let qr = i64_divmod(a, b);
    let down = (qr[1].x | qr[1].y) != 0u && i64_is_neg(qr[1]) != i64_is_neg(b);
    return select(qr[0], i64_sub(qr[0], vec2<u32>(1u, 0u)), down);
}

// Wrapping a^b; a negative b leaves 1, -1 (by b's parity) or 0.
fn i64_pow(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    if (i64_is_neg(b)) {
        if (a.x == 1u && a.y == 0u) { return a; }
        if (a.x == 0xffffffffu && a.y == 0xffffffffu) {
            return select(vec2<u32>(1u, 0u), a, (b.x & 1u) == 1u);
        }
        return vec2<u32>(0u, 0u);
    }
    var acc = vec2<u32>(1u, 0u);
    var base = a;
    var e = b;
    for (var k = 0u; k < 64u && (e.x | e.y) != 0u; k++) {
        if ((e.x & 1u) == 1u) { acc = i64_mul(acc, base); }
        base = i64_mul(base, base);
        e = vec2<u32>((e.x >> 1u) | (e.y << 31u), e.y >> 1u);
    }
    return acc;
}
