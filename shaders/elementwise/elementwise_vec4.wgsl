// One elementwise kernel, four elements per thread, for programs whose
// operands all run forward from a multiple of 4: each thread reads the
// array entry holding four elements of every input (a vec4 of 32-bit
// values or native f16, two words of packed f16, one word of u8 or bool),
// runs the program on its four lanes in the compute types and writes one
// entry of the destination. One thread owns each entry, so packed
// destinations need no atomics. The last entry of a length that is not a
// multiple of 4 keeps the lanes past the end as they were, bit for bit (no
// other thread writes that entry). Filled by elementwise/codegen.rs:
//   PRELUDE   as elementwise.wgsl, with no walk or access functions; its
//             bindings are the destination and inputs as arrays of
//             four-element entries
//   OUT_FNS   pack_out (the destination's lanes to one entry, rounded or
//             wrapped) and merge_out (an entry's first n lanes from another)
//   VLOADS    `let wK = ...;`: operand K's four lanes for this thread
//   LANES     program on lane 0, 1, 2 and 3: `program(w1.x, ...), ...`
//   OUT       the destination's vec4 of lanes in its compute type
{{PRELUDE}}
{{OUT_FNS}}

@compute @workgroup_size(WORKGROUP)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let q = thread_index(gid);
    let first = q * 4u;
    if (first >= params.numel) {
        return;
    }
{{VLOADS}}
    let r = {{OUT}}({{LANES}});
    let o = q + operand_offset(0u) / 4u;
    if (first + 4u <= params.numel) {
        out_buf[o] = pack_out(r);
    } else {
        out_buf[o] = merge_out(out_buf[o], pack_out(r), params.numel - first);
    }
}
