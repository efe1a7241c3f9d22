// Register-tiled matrix product, specialised per dtype and tile by
// matmul/mod.rs, which fills the {{...}} slots:
//   PRELUDE   `enable f16;` where needed, `struct Params` (the launcher's
//             `params_block!`) bound at 0, and kernel/math.wgsl
//   BINDINGS  a (binding 1), b (binding 2), out_buf (binding 3)
//   ACCESS    load_a / load_b (element -> Acc), store_out and load_out
//   ACC       `alias Acc = f32;` (i32, u32), and `const ZERO: Acc`
//   WALK      batch_bases(z): where batch z starts in a, b and the output
//   KERNEL    the tile's constants, workgroup tiles and `main`
//             (matmul/tiling.rs says how it computes)
//
// A dispatch covers k in [k_start, k), adding what the output holds when
// `accumulate` is set (the launcher cuts a long k into slices, one
// dispatch each: kernel/loop_budget.rs says why). Operands are read
// through their row, column and batch strides, so transposed and broadcast
// views need no copy; edges are padded with zeros, so any size works.
{{PRELUDE}}
{{BINDINGS}}
{{ACCESS}}
{{ACC}}
{{WALK}}

// Element `v` of the output at (r, c) of the matrix at `base`, added to
// what is there when accumulating; nothing outside the output.
fn put(base: i32, r: u32, c: u32, v: Acc) {
    if (r < params.m && c < params.n) {
        let p = u32(base + i32(r) * params.c_rs + i32(c) * params.c_cs);
        var x = v;
        if (params.accumulate != 0u) {
            x += load_out(p);
        }
        store_out(p, x);
    }
}

{{KERNEL}}
