// One elementwise kernel over strided operands, RUN elements per thread
// along the last axis: a thread finds the positions of its first element
// with the strided walk, then steps each operand by its last-axis stride,
// so the walk's divisions are paid once per RUN elements. Filled by
// elementwise/codegen.rs as elementwise.wgsl is, plus
//   STEP      the step of every operand's position along the last axis
{{PRELUDE}}

// Elements a thread takes along the last axis (elementwise/access.rs has
// the same number).
const RUN: u32 = 4u;

@compute @workgroup_size(WORKGROUP)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let last = params.rank - 1u;
    let inner = params.shape[last / 4u][last % 4u];
    let runs = (inner + RUN - 1u) / RUN;
    let t = linear_index(gid);
    let first = (t % runs) * RUN;
    let i = (t / runs) * inner + first;
    if (i >= params.numel) {
        return;
    }
    var p = strided_positions(i);
    let count = min(RUN, inner - first);
    for (var j = 0u; j < count; j++) {
        store_out(u32(p[0]), program({{LOADS}}));
{{STEP}}
    }
}
