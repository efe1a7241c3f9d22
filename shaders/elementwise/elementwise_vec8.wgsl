// One elementwise kernel, eight 16-bit elements per thread, for programs
// whose operands are all f16 or bf16 and run forward from a multiple of 8:
// each thread reads the 16-byte entry holding eight elements of every input
// (a vec4 of words, two elements to a word, native f16 read through its
// bits), runs the program on its eight lanes in the compute types and
// writes one 16-byte entry of the destination, every result rounded once.
// 16-bit data so moves as many bytes per access as 32-bit data does in
// elementwise_vec4.wgsl. One thread owns each entry; the last entry of a
// length that is not a multiple of 8 keeps the lanes past the end as they
// were. Filled by elementwise/codegen.rs:
//   PRELUDE   as elementwise.wgsl, with no walk or access functions; its
//             bindings are the destination and inputs as arrays of
//             `vec4<u32>`
//   OUT_FNS   pack_out (eight results to one entry, rounded) and unpack_out
//             (one entry to its eight values)
//   VLOADS    `let uK = ...;`: operand K's entry for this thread
//   LANES     `let rL = program(...);` for the eight lanes L, each written
//             out (an array indexed in a loop may be kept in memory)
//   TAIL      `kept[L] = rL` for the lanes L before the end
{{PRELUDE}}
{{OUT_FNS}}

@compute @workgroup_size(WORKGROUP)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let q = linear_index(gid);
    let first = q * 8u;
    if (first >= params.numel) {
        return;
    }
{{VLOADS}}
{{LANES}}
    let o = q + operand_offset(0u) / 8u;
    if (first + 8u <= params.numel) {
        out_buf[o] = pack_out(array<f32, 8>(r0, r1, r2, r3, r4, r5, r6, r7));
    } else {
        var kept = unpack_out(out_buf[o]);
{{TAIL}}
        out_buf[o] = pack_out(kept);
    }
}
