// Shared by gather.wgsl and scatter.wgsl (whose Params have `code` and
// `axis_size`): the fault record and the index check.

// count, code, raw index (low word), axis extent, raw index (high word),
// padding; the first fault wins.
@group(0) @binding(4) var<storage, read_write> fault: array<atomic<u32>, 8>;

fn report(raw: vec2<u32>) {
    if (atomicAdd(&fault[0], 1u) == 0u) {
        atomicStore(&fault[1], params.code);
        atomicStore(&fault[2], raw.x);
        atomicStore(&fault[3], params.axis_size);
        atomicStore(&fault[4], raw.y);
    }
}

// An i64 index (low word, high word): one within i32 resolves as a signed
// one; any other is out of range (no axis is that long).
fn resolve_wide(raw: vec2<u32>) -> i32 {
    let fits = select(raw.y == 0xffffffffu, raw.y == 0u, raw.x < 0x80000000u);
    if (!fits) {
        return -1;
    }
    return resolve_signed(raw.x);
}

// A signed index in -size..size (negative counts from the end), or -1.
fn resolve_signed(raw: u32) -> i32 {
    let size = i32(params.axis_size);
    var k = bitcast<i32>(raw);
    if (k < 0) {
        k += size;
    }
    if (k < 0 || k >= size) {
        return -1;
    }
    return k;
}

// An unsigned index in 0..size, or -1.
fn resolve_unsigned(raw: u32) -> i32 {
    if (raw >= params.axis_size) {
        return -1;
    }
    return i32(raw);
}
