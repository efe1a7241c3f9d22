// One elementwise kernel, specialised per (op, dtypes, storage modes,
// contiguity) by src/backend/gpu/codegen.rs, which fills the {{...}} slots:
//   ENABLE    `enable f16;` when a native f16 buffer is bound
//   BINDINGS  the destination (binding 1) and input buffers (2..)
//   ACCESS    load_inK / store_out functions for each operand's storage mode
//   OP        fn op(...) computing one element in the compute types
//   POSITIONS strided_positions or contiguous_positions
//   CALL      the op call with its loaded arguments
{{ENABLE}}
{{COMMON}}
{{MATH}}
{{BINDINGS}}
{{ACCESS}}
{{OP}}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = linear_index(gid);
    if (i >= params.numel) {
        return;
    }
    let p = {{POSITIONS}}(i);
    store_out(p.x, {{CALL}});
}
