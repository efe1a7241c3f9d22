// One elementwise kernel: a program of one or more fused ops, specialised
// per (program, dtypes, storage modes, access) by elementwise/codegen.rs,
// which fills the {{...}} slots:
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
//   RUN       elements a thread takes at most (the device's; see
//             AdapterFacts): thread t of n takes t, t + n, t + 2n ...
//   POSITIONS strided_positions or contiguous_positions
//   NEXT      the positions of the thread's next element: the walk again
//             (strided), or each operand's position advanced (contiguous)
//   LOADS     program's arguments: load_opK at operand K's position
{{PRELUDE}}

const RUN: u32 = {{RUN}}u;

@compute @workgroup_size(WORKGROUP)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let threads = (params.numel + RUN - 1u) / RUN;
    let t = thread_index(gid);
    // The grid's spare threads would repeat other threads' elements (an
    // in-place op would then apply twice).
    if (t >= threads) {
        return;
    }
    var p = {{POSITIONS}}(t);
    for (var i = t; i < params.numel; i += threads) {
        store_out(u32(p[0]), program({{LOADS}}));
{{NEXT}}
    }
}
