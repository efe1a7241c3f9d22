// One elementwise kernel, four elements per thread, for programs whose
// operands are all 32-bit plain values (f32, i32, u32) or native f16 (read
// as vec4<f16>, computed in f32) in one forward run starting at a multiple
// of 4: each thread reads one vec4 of every input,
// runs the program on its four lanes and writes one vec4. The last vec4 of
// a length that is not a multiple of 4 keeps the lanes past the end as
// they were (no other thread writes that vec4). Filled by
// elementwise/codegen.rs:
//   HEADER    as elementwise.wgsl
//   BINDINGS  the destination and inputs as arrays of vec4
//   OPS       fn opN(...) as elementwise.wgsl
//   PROGRAM   fn program(xK...) as elementwise.wgsl
//   VLOADS    `let wK = ...;`: operand K's vec4 for this thread
//   LANES     program on lane 0, 1, 2 and 3: `program(w1.x, ...), ...`
//   OUT       the destination's vec4 type (LANES round to f16 for f16)
{{HEADER}}
{{COMMON}}
{{MATH}}
{{BINDINGS}}
{{OPS}}
{{PROGRAM}}

@compute @workgroup_size(WORKGROUP)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let q = linear_index(gid);
    let first = q * 4u;
    if (first >= params.numel) {
        return;
    }
{{VLOADS}}
    let r = {{OUT}}({{LANES}});
    let o = q + operand_offset(0u) / 4u;
    if (first + 4u <= params.numel) {
        out_buf[o] = r;
    } else {
        var kept = out_buf[o];
        for (var l = 0u; l < params.numel - first; l++) {
            kept[l] = r[l];
        }
        out_buf[o] = kept;
    }
}
