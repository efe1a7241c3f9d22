// Shared by gather.wgsl and scatter.wgsl (whose Params have `code` and
// `axis_size`): the fault record and the index check.

// count, code, raw index, axis extent; the first fault wins.
@group(0) @binding(4) var<storage, read_write> fault: array<atomic<u32>, 4>;

fn report(raw: u32) {
    if (atomicAdd(&fault[0], 1u) == 0u) {
        atomicStore(&fault[1], params.code);
        atomicStore(&fault[2], raw);
        atomicStore(&fault[3], params.axis_size);
    }
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
