// One elementwise kernel, eight 16-bit elements per thread, for programs
// whose operands are all f16 or bf16 and run forward from a multiple of 8:
// each thread reads the 16-byte entry holding eight elements of every input
// (a vec4 of words, two elements to a word, native f16 read through its
// bits), runs the program on its eight lanes in the compute types and
// writes one 16-byte entry of the destination, every result rounded once.
// 16-bit data so moves as many bytes per access as 32-bit data does in
// elementwise_vec4.wgsl. One thread owns each entry; the last entry of a
// length that is not a multiple of 8 keeps the lanes past the end as they
// were, bit for bit. Filled by elementwise/codegen.rs:
//   PRELUDE   as elementwise.wgsl, with no walk or access functions; its
//             bindings are the destination and inputs as arrays of
//             `vec4<u32>`
//   OUT_FNS   pack_out (eight results to one entry, rounded) and merge_out
//             (an entry's first n lanes from another)
//   VLOADS    `var wK = ...;`: operand K's eight lanes for this thread
//   LANE      the program on lane l: `program(w1[l], ...)`
{{PRELUDE}}
{{OUT_FNS}}

@compute @workgroup_size(WORKGROUP)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let q = thread_index(gid);
    let first = q * 8u;
    if (first >= params.numel) {
        return;
    }
{{VLOADS}}
    // One program, looped over the lanes (a compiler unrolls it where that
    // pays; eight copies inline cost software adapters' compilers dearly).
    var r: array<f32, 8>;
    for (var l = 0u; l < 8u; l++) {
        r[l] = {{LANE}};
    }
    let o = q + operand_offset(0u) / 8u;
    if (first + 8u <= params.numel) {
        out_buf[o] = pack_out(r);
    } else {
        out_buf[o] = merge_out(out_buf[o], pack_out(r), params.numel - first);
    }
}
