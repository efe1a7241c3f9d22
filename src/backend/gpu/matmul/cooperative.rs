//! Tensor cores from WGSL: a matmul kernel on cooperative matrices
//! (`enable wgpu_cooperative_matrix;`, wgpu's
//! `EXPERIMENTAL_COOPERATIVE_MATRIX`), for devices that list 16 x 16 x 16
//! products of f16 `a` and `b` accumulating in f32.
//!
//! A workgroup is one subgroup of 32 lanes and owns a block of `tiles` x
//! `tiles` fragments of 16 x 16 outputs. For each step of 16 along k, its
//! lanes stage the block's rows of `a` and columns of `b` in workgroup
//! memory as f16 (read through the operands' own strides, so transposed,
//! stepped and broadcast views go in without a copy, and zeros past the
//! edges, so any extents work), each fragment of `a` and `b` is loaded
//! from there row-major (`coopLoadT`), and every output fragment takes
//! `coopMultiplyAdd`. At the end the fragments go to workgroup memory
//! (`coopStoreT`) and the lanes write the block through the output's
//! strides with matmul.wgsl's `put`, which also skips what lies past the
//! edges and adds to what earlier k slices left.
//!
//! The operands' values are rounded to f16 on the way in: f16 operands
//! are exact, f32 ones are computed this way only under
//! `MatmulPrecision::Fast` (as PyTorch's TF32 switch), never by default.
//!
//! Kernels: one subgroup per workgroup needs subgroups of at most 32 lanes
//! (a larger subgroup would run the cooperative operations with lanes
//! missing), so devices whose subgroups may be wider do not run it. wgpu
//! does not check a shader's fragment shape against what the driver lists
//! (the device checks the list before choosing this kernel), and drivers
//! have shipped wrong results: the self-check (`self_check.rs`) probes the
//! kernel before its first product on a device.

use std::fmt::Write;

/// Fragment side: the kernel computes 16 x 16 x 16 products.
pub(crate) const FRAGMENT: u32 = 16;

/// Lanes per workgroup: one subgroup (see the module doc).
pub(crate) const LANES: u32 = 32;

/// A block of `tiles` x `tiles` fragments per workgroup.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct CoopTiling {
    pub tiles: u32,
}

/// 64 x 64 outputs per workgroup (4 x 4 fragments).
pub(crate) const COOP_LARGE: CoopTiling = CoopTiling { tiles: 4 };

impl CoopTiling {
    /// Outputs per side of a workgroup's block.
    pub fn block(self) -> u32 {
        FRAGMENT * self.tiles
    }

    /// The kernel's constants, workgroup arrays and `main` (the `KERNEL`
    /// slot of matmul.wgsl). Expects `Params`, `Acc`, `ZERO`,
    /// `batch_bases`, `load_a`, `load_b` and `put` declared.
    pub fn wgsl(self) -> String {
        let t = self.tiles;
        let b = self.block();
        let mut w = String::new();
        let _ = write!(
            w,
            "const BLOCK: u32 = {b}u;\n\
             const BK: u32 = {FRAGMENT}u;\n\
             const LANES: u32 = {LANES}u;\n\
             // The block's rows of a (BLOCK x BK) and columns of b (BK x\n\
             // BLOCK), row-major, and its outputs (BLOCK x BLOCK).\n\
             var<workgroup> tile_a: array<f16, {}>;\n\
             var<workgroup> tile_b: array<f16, {}>;\n\
             var<workgroup> tile_c: array<f32, {}>;\n\n\
             @compute @workgroup_size({LANES})\n\
             fn main(\n    \
             @builtin(workgroup_id) wid: vec3<u32>,\n    \
             @builtin(local_invocation_index) lane: u32,\n\
             ) {{\n    \
             let row0 = wid.y * BLOCK;\n    \
             let col0 = wid.x * BLOCK;\n    \
             let bases = batch_bases(wid.z + params.batch_start);\n",
            b * FRAGMENT,
            FRAGMENT * b,
            b * b,
        );
        for i in 0..t {
            for j in 0..t {
                let _ = writeln!(w, "    var c{i}_{j} = coop_mat16x16<f32, C>();");
            }
        }
        w.push_str("    for (var k0 = params.k_start; k0 < params.k; k0 += BK) {\n");
        w.push_str(&stage(
            "a",
            ["BLOCK", "BK"],
            ["row0", "k0"],
            ["params.m", "params.k"],
        ));
        w.push_str(&stage(
            "b",
            ["BK", "BLOCK"],
            ["k0", "col0"],
            ["params.k", "params.n"],
        ));
        w.push_str("        workgroupBarrier();\n");
        for i in 0..t {
            let _ = writeln!(
                w,
                "        let a{i} = coopLoadT<coop_mat16x16<f16, A>>(&tile_a[{}u], BK);",
                i * FRAGMENT * FRAGMENT
            );
        }
        for j in 0..t {
            let _ = writeln!(
                w,
                "        let b{j} = coopLoadT<coop_mat16x16<f16, B>>(&tile_b[{}u], BLOCK);",
                j * FRAGMENT
            );
        }
        for i in 0..t {
            for j in 0..t {
                let _ = writeln!(
                    w,
                    "        c{i}_{j} = coopMultiplyAdd(a{i}, b{j}, c{i}_{j});"
                );
            }
        }
        w.push_str("        workgroupBarrier();\n    }\n");
        for i in 0..t {
            for j in 0..t {
                let _ = writeln!(
                    w,
                    "    coopStoreT(c{i}_{j}, &tile_c[{}u], BLOCK);",
                    i * FRAGMENT * b + j * FRAGMENT
                );
            }
        }
        w.push_str(
            "    workgroupBarrier();
    for (var e = lane; e < BLOCK * BLOCK; e += LANES) {
        put(bases[2], row0 + e / BLOCK, col0 + e % BLOCK, Acc(tile_c[e]));
    }
}
",
        );
        w
    }
}

/// The loop in which the lanes copy the block's part of operand `name` (of
/// `extents` rows and columns, from `starts`) into `tile_{name}` as f16,
/// zeros past the operand's `ends`.
fn stage(name: &str, extents: [&str; 2], starts: [&str; 2], ends: [&str; 2]) -> String {
    let ([rows, cols], [r0, c0], [r_end, c_end]) = (extents, starts, ends);
    format!(
        "        for (var e = lane; e < {rows} * {cols}; e += LANES) {{
            let r = {r0} + e / {cols};
            let c = {c0} + e % {cols};
            var v = ZERO;
            if (r < {r_end} && c < {c_end}) {{
                v = load_{name}(u32(bases[{b}] + i32(r) * params.{name}_rs + i32(c) * params.{name}_cs));
            }}
            tile_{name}[e] = f16(v);
        }}
",
        b = if name == "a" { 0 } else { 1 },
    )
}
