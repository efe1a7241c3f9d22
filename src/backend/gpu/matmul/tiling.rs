//! The register-tiled matmul kernels: the tile shapes, the choice among
//! them, and the generated WGSL of their main loop.
//!
//! A workgroup computes a `bm` x `bn` block of one batch's output; each of
//! its threads holds a `tm` x `tn` sub-block in registers (`tn / 4` vec4
//! accumulators per row), so each value read from workgroup memory feeds
//! `tm` or `tn` multiply-adds. Per step of `bk` along k, the threads copy a
//! `bm` x `bk` tile of `a` and a `bk` x `bn` tile of `b` into workgroup
//! memory (k-major, rows padded by one vec4 so the transposing stores do
//! not collide in one bank), then read their fragments as vec4s. The next
//! step's tile is loaded into registers while the current one is
//! multiplied (prefetch). A thread's rows (and columns) come in groups of
//! four spaced `bm / (tm / 4)` apart, so a warp reads consecutive vec4s.
//!
//! Everything that repeats per thread (loads, fragments, products,
//! stores) is unrolled here, at generation time, into straight-line WGSL
//! on named variables: no private array is indexed at run time, so drivers
//! keep the accumulators in registers.
//!
//! Global loads are coalesced for either memory order of each operand:
//! the launcher says which axis has the smaller stride (`a_k_fast`,
//! `b_n_fast`) and consecutive threads walk along it, so `a.t()` is read in
//! place as fast as `a`.

use crate::backend::gpu::tuning::MatmulTile;
use std::fmt::Write;

/// One kernel's tile shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Tiling {
    /// Output rows and columns per workgroup.
    pub bm: u32,
    pub bn: u32,
    /// k per step (one tile of each operand in workgroup memory).
    pub bk: u32,
    /// Output rows and columns per thread (multiples of 4).
    pub tm: u32,
    pub tn: u32,
}

pub(crate) const LARGE: Tiling = Tiling {
    bm: 128,
    bn: 128,
    bk: 8,
    tm: 8,
    tn: 8,
};
pub(crate) const MEDIUM: Tiling = Tiling {
    bm: 64,
    bn: 64,
    bk: 16,
    tm: 4,
    tn: 4,
};
pub(crate) const SMALL: Tiling = Tiling {
    bm: 32,
    bn: 32,
    bk: 16,
    tm: 4,
    tn: 4,
};

/// Output blocks a large GPU needs to keep every multiprocessor busy (an
/// H100 has 132): below this, a smaller tile's extra blocks win over a
/// larger tile's better reuse.
const BUSY_BLOCKS: usize = 128;

impl Tiling {
    /// The tile for an `m` x `n` output over `batches` batches.
    pub fn choose(choice: MatmulTile, m: usize, n: usize, batches: usize) -> Tiling {
        let blocks = |t: &Tiling| {
            m.div_ceil(t.bm as usize)
                .saturating_mul(n.div_ceil(t.bn as usize))
                .saturating_mul(batches)
        };
        match choice {
            MatmulTile::Large => LARGE,
            MatmulTile::Medium => MEDIUM,
            MatmulTile::Small => SMALL,
            MatmulTile::Auto if blocks(&LARGE) >= BUSY_BLOCKS => LARGE,
            MatmulTile::Auto if blocks(&MEDIUM) >= BUSY_BLOCKS / 2 => MEDIUM,
            MatmulTile::Auto => SMALL,
        }
    }

    /// Threads per workgroup along x (columns) and y (rows).
    pub fn threads_xy(&self) -> (u32, u32) {
        (self.bn / self.tn, self.bm / self.tm)
    }

    fn threads(&self) -> u32 {
        let (x, y) = self.threads_xy();
        x * y
    }

    /// The WGSL of the kernel: constants, workgroup tiles, the element
    /// loaders and `main`. Expects `Params`, `Acc`, `ZERO`, `load_a`,
    /// `load_b`, `load_out`, `store_out` and `batch_bases` declared.
    pub fn wgsl(&self) -> String {
        let Tiling { bm, bn, bk, tm, tn } = *self;
        let (tx, ty) = self.threads_xy();
        let threads = self.threads();
        let (loads_a, loads_b) = (bm * bk / threads, bk * bn / threads);
        let (groups_a, groups_b) = (tm / 4, tn / 4);
        let mut w = String::new();
        let _ = write!(
            w,
            "const BM: u32 = {bm}u;\nconst BN: u32 = {bn}u;\nconst BK: u32 = {bk}u;\n\
             const THREADS: u32 = {threads}u;\n\
             // vec4s per k row of each tile: one more than the row, against bank conflicts.\n\
             const PITCH_A: u32 = {}u;\nconst PITCH_B: u32 = {}u;\n\
             var<workgroup> tile_a: array<vec4<Acc>, {}>;\n\
             var<workgroup> tile_b: array<vec4<Acc>, {}>;\n\n",
            bm / 4 + 1,
            bn / 4 + 1,
            bk * (bm / 4 + 1),
            bk * (bn / 4 + 1),
        );
        w.push_str(
            "// Element (r, kk) of a's matrix at `base`, or ZERO outside this slice.\n\
             fn a_at(base: i32, r: u32, kk: u32) -> Acc {\n    \
                 if (r < params.m && kk < params.k) {\n        \
                     return load_a(u32(base + i32(r) * params.a_rs + i32(kk) * params.a_cs));\n    \
                 }\n    \
                 return ZERO;\n\
             }\n\n\
             // Element (kk, c) of b's matrix at `base`, or ZERO outside this slice.\n\
             fn b_at(base: i32, kk: u32, c: u32) -> Acc {\n    \
                 if (kk < params.k && c < params.n) {\n        \
                     return load_b(u32(base + i32(kk) * params.b_rs + i32(c) * params.b_cs));\n    \
                 }\n    \
                 return ZERO;\n\
             }\n\n",
        );
        let _ = write!(
            w,
            "@compute @workgroup_size({tx}, {ty})\n\
             fn main(\n    \
                 @builtin(workgroup_id) wid: vec3<u32>,\n    \
                 @builtin(local_invocation_id) lid: vec3<u32>,\n\
             ) {{\n    \
                 let bases = batch_bases(wid.z + params.batch_start);\n    \
                 let row0 = wid.y * BM;\n    \
                 let col0 = wid.x * BN;\n    \
                 let t = lid.y * {tx}u + lid.x;\n    \
                 let a_fast = params.a_k_fast != 0u;\n    \
                 let b_fast = params.b_n_fast != 0u;\n"
        );
        // Each thread's share of the tile copies: (row, k) of a, (k, column) of b.
        for e in 0..loads_a {
            let _ = write!(
                w,
                "    let ia{e} = t + {}u;\n    \
                 let ar{e} = select(ia{e} % BM, ia{e} / BK, a_fast);\n    \
                 let ak{e} = select(ia{e} / BM, ia{e} % BK, a_fast);\n    \
                 var pa{e} = a_at(bases[0], row0 + ar{e}, params.k_start + ak{e});\n",
                e * threads
            );
        }
        for e in 0..loads_b {
            let _ = write!(
                w,
                "    let ib{e} = t + {}u;\n    \
                 let bc{e} = select(ib{e} / BK, ib{e} % BN, b_fast);\n    \
                 let bk{e} = select(ib{e} % BK, ib{e} / BN, b_fast);\n    \
                 var pb{e} = b_at(bases[1], params.k_start + bk{e}, col0 + bc{e});\n",
                e * threads
            );
        }
        for i in 0..tm {
            for g in 0..groups_b {
                let _ = writeln!(w, "    var acc{i}_{g} = vec4<Acc>(ZERO);");
            }
        }
        w.push_str("    for (var k0 = params.k_start; k0 < params.k; k0 += BK) {\n");
        for e in 0..loads_a {
            let _ = writeln!(
                w,
                "        tile_a[ak{e} * PITCH_A + ar{e} / 4u][ar{e} % 4u] = pa{e};"
            );
        }
        for e in 0..loads_b {
            let _ = writeln!(
                w,
                "        tile_b[bk{e} * PITCH_B + bc{e} / 4u][bc{e} % 4u] = pb{e};"
            );
        }
        w.push_str("        workgroupBarrier();\n        let k1 = k0 + BK;\n");
        for e in 0..loads_a {
            let _ = writeln!(
                w,
                "        pa{e} = a_at(bases[0], row0 + ar{e}, k1 + ak{e});"
            );
        }
        for e in 0..loads_b {
            let _ = writeln!(
                w,
                "        pb{e} = b_at(bases[1], k1 + bk{e}, col0 + bc{e});"
            );
        }
        for kk in 0..bk {
            for g in 0..groups_a {
                let _ = writeln!(
                    w,
                    "        let a{kk}_{g} = tile_a[{}u + lid.y];",
                    kk * (bm / 4 + 1) + g * (bm / groups_a / 4)
                );
            }
            for g in 0..groups_b {
                let _ = writeln!(
                    w,
                    "        let b{kk}_{g} = tile_b[{}u + lid.x];",
                    kk * (bn / 4 + 1) + g * (bn / groups_b / 4)
                );
            }
            for i in 0..tm {
                let lane = ["x", "y", "z", "w"][(i % 4) as usize];
                for g in 0..groups_b {
                    let _ = writeln!(
                        w,
                        "        acc{i}_{g} += a{kk}_{}.{lane} * b{kk}_{g};",
                        i / 4
                    );
                }
            }
        }
        w.push_str("        workgroupBarrier();\n    }\n");
        for i in 0..tm {
            let _ = writeln!(
                w,
                "    let r{i} = row0 + {}u + lid.y * 4u;",
                (i / 4) * (bm / groups_a) + i % 4
            );
        }
        for g in 0..groups_b {
            for lane in 0..4 {
                let _ = writeln!(
                    w,
                    "    let c{g}_{lane} = col0 + {}u + lid.x * 4u;",
                    g * (bn / groups_b) + lane
                );
            }
        }
        for i in 0..tm {
            for g in 0..groups_b {
                for (lane, name) in ["x", "y", "z", "w"].iter().enumerate() {
                    let _ = writeln!(
                        w,
                        "    put(bases[2], r{i}, c{g}_{lane}, acc{i}_{g}.{name});"
                    );
                }
            }
        }
        w.push_str("}\n");
        w
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tile_divides_its_work_evenly() {
        for t in [LARGE, MEDIUM, SMALL] {
            let threads = t.threads();
            assert_eq!(t.tm % 4, 0);
            assert_eq!(t.tn % 4, 0);
            assert_eq!(t.bm % t.tm, 0);
            assert_eq!(t.bn % t.tn, 0);
            assert_eq!(t.bm * t.bk % threads, 0, "{t:?}");
            assert_eq!(t.bk * t.bn % threads, 0, "{t:?}");
            assert!(threads <= 256, "{t:?}");
            // Both tiles fit WebGPU's default 16 KiB of workgroup memory.
            assert!(t.bk * (t.bm / 4 + t.bn / 4 + 2) * 16 <= 16384, "{t:?}");
        }
    }

    #[test]
    fn auto_takes_the_largest_tile_that_keeps_a_big_gpu_busy() {
        let auto = |m, n, b| Tiling::choose(MatmulTile::Auto, m, n, b);
        assert_eq!(auto(4096, 4096, 1), LARGE);
        assert_eq!(auto(2048, 2048, 1), LARGE);
        assert_eq!(auto(1024, 1024, 1), MEDIUM);
        assert_eq!(auto(256, 256, 1), SMALL);
        assert_eq!(auto(256, 256, 64), LARGE);
        assert_eq!(auto(1, 1, 1), SMALL);
        assert_eq!(Tiling::choose(MatmulTile::Medium, 1, 1, 1), MEDIUM);
        assert_eq!(MatmulTile::parse(" Large "), Some(MatmulTile::Large));
        assert_eq!(MatmulTile::parse("huge"), None);
    }
}
