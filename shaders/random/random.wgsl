// Draws of the counter-based generator (ops/random), step for step what
// backend/cpu/random.rs computes, specialised by gpu/random/, which fills
// the {{...}} slots:
//   PRELUDE   `enable f16;` where needed, `struct Params` bound at 0, and
//             kernel/math.wgsl
//   POLYNOMIALS  log_poly, sin_poly, cos_poly and ln 2 in two parts, from
//             cpu/random.rs's coefficients (as exact hexadecimal floats)
//   BINDINGS  out_buf (1): the destination as whole quads (four elements)
//   DRAW      fn draw(t: u32) -> the values of the dispatch's quad t
//   STORE     fn store_quad(q: u32, v): quad q of out_buf
//
// Thread t writes quad t: four elements, from Philox block t of the
// dispatch (two blocks for 64-bit integers). Floats are made with integer
// steps and f32 `+`, `-` and `*` only, each kept from fusing into a
// multiply-add, so every device rounds them alike.
{{PRELUDE}}
{{BINDINGS}}

// A value the compiler cannot see through (`params.zero` is always 0): a
// product kept from being fused into the add after it.
fn kept(x: f32) -> f32 {
    return bitcast<f32>(bitcast<u32>(x) ^ params.zero);
}

// v with its subnormal lanes flushed to zeros of their sign, in integer
// steps: WGSL lets a GPU flush them (or not), so every device does.
fn flushed4(v: vec4<f32>) -> vec4<f32> {
    let b = bitcast<vec4<u32>>(v);
    let tiny = (b & vec4<u32>(0x7f800000u)) == vec4<u32>(0u);
    return bitcast<vec4<f32>>(select(b, b & vec4<u32>(0x80000000u), tiny));
}

// Philox4x32-10 of counter c under key k (Random123's).
fn philox(counter: vec4<u32>, key: vec2<u32>) -> vec4<u32> {
    var c = counter;
    var k = key;
    for (var round = 0u; round < 10u; round++) {
        if (round > 0u) {
            k = k + vec2<u32>(0x9E3779B9u, 0xBB67AE85u);
        }
        let p0 = mul_wide_u32(0xD2511F53u, c.x);
        let p1 = mul_wide_u32(0xCD9E8D57u, c.z);
        c = vec4<u32>(p1.y ^ c.y ^ k.x, p1.x, p0.y ^ c.w ^ k.y, p0.x);
    }
    return c;
}

// Block b of the dispatch: block (block_lo, block_hi) + b of the stream.
fn words(b: u32) -> vec4<u32> {
    let lo = params.block_lo + b;
    let hi = params.block_hi + select(0u, 1u, lo < b);
    return philox(vec4<u32>(lo, hi, 0u, 0u), vec2<u32>(params.key0, params.key1));
}

{{POLYNOMIALS}}

// -2 ln u of u = (2k + 1) 2^-24, k the word's top 23 bits.
fn neg2_log(w: u32) -> f32 {
    let u = kept(f32((w >> 9u) * 2u + 1u) * (1.0 / 16777216.0));
    let b = bitcast<u32>(u);
    var e = i32(b >> 23u) - 127;
    var m = (b & 0x007fffffu) | 0x3f800000u;
    if (m > 0x3fb504f3u) {
        m = (b & 0x007fffffu) | 0x3f000000u;
        e += 1;
    }
    let f = bitcast<f32>(m) - 1.0;
    let s = f + kept(kept(f * f) * log_poly(f));
    let ef = f32(e);
    return ((s + kept(ef * LN2_LO)) + kept(ef * LN2_HI)) * -2.0;
}

// The square root of x > 0: three Newton steps on its reciprocal.
fn sqrt_steps(x: f32) -> f32 {
    var y = bitcast<f32>(0x5f3759dfu - (bitcast<u32>(x) >> 1u));
    let h = kept(x * 0.5);
    for (var i = 0u; i < 3u; i++) {
        y = kept(y * (1.5 - kept(h * kept(y * y))));
    }
    return kept(x * y);
}

// (cos, sin) of the turn (w >> 8) 2^-24.
fn turn(w: u32) -> vec2<f32> {
    let k = w >> 8u;
    let quadrant = k >> 22u;
    var j = k & 0x003fffffu;
    let mirrored = j > (1u << 21u);
    if (mirrored) {
        j = (1u << 22u) - j;
    }
    let x = kept(f32(j) * (1.0 / 16777216.0));
    let z = kept(x * x);
    var cs = vec2<f32>(1.0 + kept(z * cos_poly(z)), kept(x * sin_poly(z)));
    if (mirrored) {
        cs = cs.yx;
    }
    switch quadrant {
        case 0u: { return cs; }
        case 1u: { return vec2<f32>(-cs.y, cs.x); }
        case 2u: { return -cs; }
        default: { return vec2<f32>(cs.y, -cs.x); }
    }
}

// Two standard normals: the radius from the first word, the angle from the
// second.
fn normal_pair(radius: u32, angle: u32) -> vec2<f32> {
    let r = sqrt_steps(neg2_log(radius));
    let cs = turn(angle);
    return vec2<f32>(kept(r * cs.x), kept(r * cs.y));
}

// floor(x s / 2^64) of 64-bit x and s as (low, high) words, plus low.
fn scaled_int(x: vec2<u32>) -> vec2<u32> {
    let s = vec2<u32>(params.a, params.b);
    let p00 = mul_wide_u32(x.x, s.x);
    let p01 = mul_wide_u32(x.x, s.y);
    let p10 = mul_wide_u32(x.y, s.x);
    let p11 = mul_wide_u32(x.y, s.y);
    // The carries out of bits 32..63 of the product.
    let mid = p00.y + p01.x;
    var carry = select(0u, 1u, mid < p00.y);
    let mid2 = mid + p10.x;
    carry += select(0u, 1u, mid2 < mid);
    // The high 64 bits: p11 + p01.y + p10.y + carry.
    var lo = p11.x + p01.y;
    var hi = p11.y + select(0u, 1u, lo < p01.y);
    let lo2 = lo + p10.y;
    hi += select(0u, 1u, lo2 < lo);
    let lo3 = lo2 + carry;
    hi += select(0u, 1u, lo3 < lo2);
    // Plus low, wrapping.
    let sum = lo3 + params.c;
    return vec2<u32>(sum, hi + params.d + select(0u, 1u, sum < lo3));
}

// Round-to-nearest-even f16 bits of an f32, in integer steps (WGSL leaves
// the rounding of its conversions open), overflowing to infinity.
fn f16_rne(v: f32) -> u32 {
    let b = bitcast<u32>(v);
    let sign = (b >> 16u) & 0x8000u;
    let a = b & 0x7fffffffu;
    if (a > 0x7f800000u) { return sign | 0x7e00u; }
    if (a >= 0x477ff000u) { return sign | 0x7c00u; }
    if (a >= 0x38800000u) {
        return sign | ((a + 0xfffu + ((a >> 13u) & 1u) - 0x38000000u) >> 13u);
    }
    if (a < 0x33000000u) { return sign; }
    let shift = 126u - (a >> 23u);
    let m = (a & 0x007fffffu) | 0x00800000u;
    let q = m >> shift;
    let rest = m & ((1u << shift) - 1u);
    let half = 1u << (shift - 1u);
    let up = rest > half || (rest == half && (q & 1u) == 1u);
    return sign | (q + select(0u, 1u, up));
}

{{DRAW}}
{{STORE}}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let t = gid.x + gid.y * params.row_threads;
    if (t >= params.quads) {
        return;
    }
    store_quad(params.out_quad + t, draw(t));
}
