// Register-tiled matrix product, specialised per dtype and tile by
// matmul/mod.rs, which fills the {{...}} slots:
//   PRELUDE   `enable f16;` where needed, `struct Params` (the launcher's
//             `params_block!`) bound at 0, and kernel/math.wgsl
//   BINDINGS  a (binding 1), b (binding 2), out_buf (binding 3)
//   ACCESS    load_a / load_b (element -> Acc), store_out and load_out
//   ACC       `alias Acc = f32;` (i32, u32), and `const ZERO: Acc`
//   WALK      batch_bases(z): where batch z starts in a, b and the output
//   PUT       put(base, r, c, v): an output stored (matmul/put.wgsl, which
//             the convolution's kernel shares)
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

{{PUT}}

{{KERNEL}}
