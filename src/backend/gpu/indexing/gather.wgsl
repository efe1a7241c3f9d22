// Indexing that reads (take, index_select, gather), specialised by
// indexing/mod.rs, which fills the {{...}} slots:
//   HEADER    `enable f16;` when a native f16 buffer is bound
//   MATH      kernel/math.wgsl
//   BINDINGS  src (1), idx (2), out_buf (3), fault (4)
//   ACCESS    load_src, load_raw (index bits), store_out, ZERO, resolve,
//             report (indexing.wgsl)
//   WALK      positions(o): the source and index positions of output o
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
{{WALK}}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let o = gid.x + gid.y * params.row_threads;
    if (o >= params.numel) {
        return;
    }
    let pos = positions(o);
    let sp = pos[0];
    let raw = load_raw(u32(pos[1]));
    let k = resolve(raw);
    if (k < 0) {
        report(raw);
        store_out(o, ZERO);
        return;
    }
    store_out(o, load_src(u32(sp + k * params.axis_stride)));
}
