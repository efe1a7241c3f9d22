// Indexing that reads (take, index_select, gather), specialised by
// indexing/mod.rs, which fills the {{...}} slots:
//   PRELUDE   `enable f16;` where needed, `struct Params` (the launcher's
//             `params_block!`) bound at 0, and kernel/math.wgsl
//   BINDINGS  src (1), idx (2), out_buf (3), fault (4)
//   ACCESS    load_src, load_raw (index bits), store_out, ZERO, resolve,
//             report (indexing.wgsl)
//   WALK      positions(o): the source, index and output positions of
//             output element o
//
// Output element o (row-major over the output's shape) reads the source at
// its position for o, moved `index` steps along the indexed axis; the
// source, the index and the output are read and written through (strides,
// offset) over the output's coordinates, so views go in without a copy.
// An out-of-range index writes 0 and is reported in the fault record.
// A dispatch may take only positions first..first + count of the indexed
// axis (the source's offset is at `first`): it skips indices outside them,
// which another dispatch of the op takes (ops/binding_parts.rs, for a source
// larger than one storage binding).
{{PRELUDE}}
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
    let op = u32(pos[2]);
    let raw = load_raw(u32(pos[1]));
    let k = resolve(raw);
    if (k < 0) {
        report(raw);
        store_out(op, ZERO);
        return;
    }
    let j = k - i32(params.first);
    if (j < 0 || j >= i32(params.count)) {
        return;
    }
    store_out(op, load_src(u32(sp + j * params.axis_stride)));
}
