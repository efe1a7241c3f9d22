// One elementwise kernel, one element per thread: a program of one or more
// fused ops, specialised per (program, dtypes, storage modes, contiguity)
// by elementwise/codegen.rs, which fills the {{...}} slots:
//   PRELUDE   what every elementwise kernel declares first, in this order:
//     header    `enable f16;` when a native f16 buffer is bound, and the
//               OPERANDS / OFFSET_VECS / SCALAR_VECS / WORKGROUP constants
//     common    common.wgsl: the parameter block and its accessors
//     walk      strided_positions (kernel/strided.rs) for strided kernels
//     math      the math functions (kernel/prelude.rs)
//     bindings  the destination (binding 1) and input buffers (2..)
//     access    load_opK / store_out functions for each operand's storage
//     ops       fn opN(...) computing one program node in the compute types
//     program   fn program(xK...): the program on one element's inputs
//   POSITIONS strided_positions or contiguous_positions
//   LOADS     program's arguments: load_opK at operand K's position
{{PRELUDE}}

@compute @workgroup_size(WORKGROUP)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = linear_index(gid);
    if (i >= params.numel) {
        return;
    }
    let p = {{POSITIONS}}(i);
    store_out(u32(p[0]), program({{LOADS}}));
}
