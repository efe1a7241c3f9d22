// One elementwise kernel over strided operands, walked along the last
// axis: a thread finds the positions of its first element with the strided
// walk, then takes up to RUN elements of its row, stepping each operand by
// its last-axis stride, so the walk's divisions are paid once per run. A
// row's threads interleave (thread q of n takes elements q, q + n,
// q + 2n ...), so neighbouring threads touch neighbouring elements. Filled
// by elementwise/codegen.rs as elementwise.wgsl is, plus
//   RUN       elements a thread takes (the device's; see AdapterFacts)
//   STRIDES   each operand's step between a thread's elements
//   STEP      the steps taken after each element
{{PRELUDE}}

const RUN: u32 = {{RUN}}u;

@compute @workgroup_size(WORKGROUP)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let last = params.rank - 1u;
    let lv = last / 4u;
    let lc = last % 4u;
    let inner = params.shape[lv][lc];
    let runs = (inner + RUN - 1u) / RUN;
    let t = linear_index(gid);
    let q = t % runs;
    let i = (t / runs) * inner + q;
    if (i >= params.numel) {
        return;
    }
    var p = strided_positions(i);
    let jump = i32(runs);
{{STRIDES}}
    for (var c = q; c < inner; c += runs) {
        store_out(u32(p[0]), program({{LOADS}}));
{{STEP}}
    }
}
