// One elementwise kernel over rows whose every operand starts at a
// multiple of 4 (or repeats one element along the row), in whole 16-byte
// entries: a thread works out its row's positions once, then takes up to
// QUADS groups of four adjacent elements of the row (thread q of a row's n
// takes groups q, q + n ...). Each input's four elements lie in `step`
// entries (one for a step of 0 or 1), read whole and picked apart by
// span_opK (a step of 0: one entry, the element's lane picked at run
// time); the destination (step 1) is written as one entry. The last group
// of a row whose length is not a multiple of 4 keeps the destination's
// lanes past the row as they were, bit for bit (no element of another row
// lies in that entry), and reads only entries holding an element of the
// row, so every access is in bounds. Filled by
// elementwise/codegen.rs:
//   PRELUDE   as elementwise_vec4.wgsl, with strided_positions as its walk
//   OUT_FNS   pack_out and merge_out, as elementwise_vec4.wgsl's
//   SPANS     fn span_opK(at, left): operand K's four lanes from element
//             `at` on, `left` of them in the row
//   QUADS     groups of four a thread takes at most
//   VLOADS    `let wK = span_opK(...);` for each input
//   LANES     program on lane 0, 1, 2 and 3
//   OUT       the destination's vec4 of lanes in its compute type
{{PRELUDE}}
{{OUT_FNS}}
{{SPANS}}

const QUADS: u32 = {{QUADS}}u;

@compute @workgroup_size(WORKGROUP)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let last = params.rank - 1u;
    let inner = params.shape[last / 4u][last % 4u];
    let quads = (inner + 3u) / 4u;
    let runs = (quads + QUADS - 1u) / QUADS;
    let t = thread_index(gid);
    let q = t % runs;
    let i = (t / runs) * inner;
    if (i >= params.numel) {
        return;
    }
    let p = strided_positions(i);
    for (var c = q; c < quads; c += runs) {
        let first = c * 4u;
        let left = inner - first;
{{VLOADS}}
        let r = {{OUT}}({{LANES}});
        let o = (u32(p[0]) + first) / 4u;
        if (left >= 4u) {
            out_buf[o] = pack_out(r);
        } else {
            out_buf[o] = merge_out(out_buf[o], pack_out(r), left);
        }
    }
}
