// Indexing that reads (take, index_select, gather), specialised by
// src/backend/gpu/indexing.rs, which fills the {{...}} slots:
//   HEADER    `enable f16;` when a native f16 buffer is bound
//   MATH      shaders/math.wgsl
//   BINDINGS  src (1), idx (2), out_buf (3), fault (4)
//   ACCESS    load_src, load_raw (index bits), store_out, ZERO, resolve,
//             report (shaders/indexing.wgsl)
//
// Output element o (row-major, a fresh tensor) reads the source at its
// position for o, moved `index` steps along the indexed axis; the source
// and the index are read through (strides, offset) over the output's
// coordinates, so views go in without a copy. An out-of-range index
// writes 0 and is reported in the fault record.
{{HEADER}}

struct Params {
    numel: u32,
    rank: u32,
    row_threads: u32,
    // Op, axis and signedness, for the fault record.
    code: u32,
    src_offset: u32,
    idx_offset: u32,
    axis_size: u32,
    axis_stride: i32,
    shape: array<vec4<u32>, 2>,
    src_strides: array<vec4<i32>, 2>,
    idx_strides: array<vec4<i32>, 2>,
}

@group(0) @binding(0) var<uniform> params: Params;

{{MATH}}
{{BINDINGS}}
{{ACCESS}}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let o = gid.x + gid.y * params.row_threads;
    if (o >= params.numel) {
        return;
    }
    var sp = i32(params.src_offset);
    var ip = i32(params.idx_offset);
    var rem = o;
    for (var d = i32(params.rank) - 1; d >= 0; d--) {
        let du = u32(d);
        let n = params.shape[du / 4u][du % 4u];
        let c = i32(rem % n);
        rem = rem / n;
        sp += c * params.src_strides[du / 4u][du % 4u];
        ip += c * params.idx_strides[du / 4u][du % 4u];
    }
    let raw = load_raw(u32(ip));
    let k = resolve(raw);
    if (k < 0) {
        report(raw);
        store_out(o, ZERO);
        return;
    }
    store_out(o, load_src(u32(sp + k * params.axis_stride)));
}
