// One elementwise kernel over strided operands, along the last axis: a
// thread walks to its first element once, then takes up to RUN elements of
// its row (thread q of a row's n takes q, q + n, q + 2n ...), stepping each
// operand by its last-axis stride. Filled as elementwise.wgsl is, plus
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
    let t = thread_index(gid);
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
