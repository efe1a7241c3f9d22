//! The subgroup matmul kernel: a 64 x 64 output block per workgroup of
//! 128 threads, in sixteen teams of eight subgroup lanes, each team an
//! 8 x 32 part of the block and each lane an 8 x 4 part of that (eight
//! vec4 accumulators).
//!
//! Only `b` goes through workgroup memory (a `BK` x 64 tile per step, read
//! as vec4s, as in `tiling.rs`, whose loaders it shares). `a` never does:
//! per step each lane loads eight of its team's 8 x `BK` elements of `a`
//! straight into registers, and the team passes them among its lanes by
//! `subgroupShuffle`, so no workgroup store, barrier or bank is spent on
//! them. Where a's k axis has the smaller stride, lane `l` holds column
//! `l` of the team's rows (consecutive lanes read consecutive k); where
//! its row axis has (`a.t()` read in place), row `l` (consecutive lanes
//! read consecutive rows). Both steps are written out, the launcher's
//! `a_k_fast` choosing between them uniformly.
//!
//! A team is eight consecutive lanes of one subgroup, numbered from the
//! subgroup builtins (never from the local index, whose order a driver
//! need not keep in its subgroups), so it needs subgroups of at least
//! eight lanes, all full: any power of two from 8 to 128 divides the 128
//! threads. The launcher uses it only where the adapter's smallest
//! subgroup has eight lanes (`AdapterFacts::subgroups_of`).

use super::tiling::{Loads, OperandLoads, Tiling};
use std::fmt::Write;

/// Lanes per team.
pub(crate) const TEAM: u32 = 8;

/// The block, and the tile of `b` in workgroup memory (`tm` x `tn` is
/// one lane's part of the output).
pub(crate) const TILING: Tiling = Tiling {
    bm: 64,
    bn: 64,
    bk: 8,
    tm: 8,
    tn: 4,
};

const THREADS: u32 = 128;

/// The WGSL of the kernel, loading `b` as `b_loads` says (`a` by scalar
/// loads, bound as elements). Expects what `Tiling::wgsl` expects.
pub(crate) fn wgsl(b_loads: Loads) -> String {
    let Tiling { bm, bn, bk, .. } = TILING;
    let a = OperandLoads::a(TILING, Loads::Scalar);
    let b = OperandLoads::b(TILING, b_loads);
    let mut w = String::new();
    let _ = write!(
        w,
        "const BM: u32 = {bm}u;\nconst BN: u32 = {bn}u;\nconst BK: u32 = {bk}u;\n\
         // vec4s per k row of b's tile: one more than the row, against bank conflicts.\n\
         const PITCH_B: u32 = {pitch}u;\n\
         var<workgroup> tile_b: array<vec4<Acc>, {size}>;\n\n",
        pitch = bn / 4 + 1,
        size = bk * (bn / 4 + 1),
    );
    w.push_str(&a.loader());
    w.push_str(&b.loader());
    let _ = write!(
        w,
        "@compute @workgroup_size({THREADS})\n\
         fn main(\n    \
             @builtin(workgroup_id) wid: vec3<u32>,\n    \
             @builtin(local_invocation_index) t: u32,\n    \
             @builtin(subgroup_size) sg_size: u32,\n    \
             @builtin(subgroup_invocation_id) sg_lane: u32,\n    \
             @builtin(subgroup_id) sg_id: u32,\n\
         ) {{\n    \
             let bases = batch_bases(wid.z + params.batch_start);\n    \
             let row0 = wid.y * BM;\n    \
             let col0 = wid.x * BN;\n    \
             let a_fast = params.a_k_fast != 0u;\n    \
             let b_fast = params.b_n_fast != 0u;\n    \
             // The team: eight lanes of one subgroup, from lane `first`.\n    \
             let lane = sg_lane % {TEAM}u;\n    \
             let first = sg_lane - lane;\n    \
             let team = sg_id * (sg_size / {TEAM}u) + sg_lane / {TEAM}u;\n    \
             // The team's first row; the lane's vec4 of columns in the block.\n    \
             let rows = row0 + (team / 2u) * {TEAM}u;\n    \
             let quad = (team % 2u) * {TEAM}u + lane;\n"
    );
    // Register j of a lane: a[rows + j][k + lane] along k, else
    // a[rows + lane][k + j].
    let a_at = |j: u32, k: &str| {
        format!(
            "a_at(bases[0], rows + select(lane, {j}u, a_fast), {k} + select({j}u, lane, a_fast))"
        )
    };
    for j in 0..TEAM {
        let _ = writeln!(w, "    var pa{j} = {};", a_at(j, "params.k_start"));
    }
    w.push_str(&b.first_loads(THREADS));
    for r in 0..TEAM {
        let _ = writeln!(w, "    var acc{r} = vec4<Acc>(ZERO);");
    }
    w.push_str("    for (var k0 = params.k_start; k0 < params.k; k0 += BK) {\n");
    w.push_str(&b.stores(THREADS));
    w.push_str("        workgroupBarrier();\n        let k1 = k0 + BK;\n");
    for j in 0..TEAM {
        let _ = writeln!(w, "        let ca{j} = pa{j};");
    }
    for j in 0..TEAM {
        let _ = writeln!(w, "        pa{j} = {};", a_at(j, "k1"));
    }
    w.push_str(&b.next_loads(THREADS));
    for kk in 0..bk {
        let _ = writeln!(
            w,
            "        let b{kk} = tile_b[{}u + quad];",
            kk * (bn / 4 + 1)
        );
    }
    // a[rows + r][k0 + kk] is register r of lane kk along k, register kk
    // of lane r across.
    for (cond, fast) in [("if (a_fast) {", true), ("} else {", false)] {
        let _ = writeln!(w, "        {cond}");
        for kk in 0..bk {
            for r in 0..TEAM {
                let (reg, from) = if fast { (r, kk) } else { (kk, r) };
                let _ = writeln!(
                    w,
                    "            acc{r} += subgroupShuffle(ca{reg}, first + {from}u) * b{kk};"
                );
            }
        }
    }
    w.push_str("        }\n        workgroupBarrier();\n    }\n");
    for r in 0..TEAM {
        for (lane, name) in ["x", "y", "z", "w"].iter().enumerate() {
            let _ = writeln!(
                w,
                "    put(bases[2], rows + {r}u, col0 + quad * 4u + {lane}u, acc{r}.{name});"
            );
        }
    }
    w.push_str("}\n");
    w
}

#[cfg(test)]
mod tests {
    use super::super::tiling::MEDIUM;
    use super::*;

    #[test]
    fn the_teams_cover_the_block() {
        let Tiling { bm, bn, bk, tm, tn } = TILING;
        // Sixteen teams: eight down the block, two across.
        assert_eq!(THREADS / TEAM, (bm / tm) * (bn / (tn * TEAM)));
        assert_eq!(bm / tm, 8);
        // One register of a per lane per k of a step.
        assert_eq!(bk, TEAM);
        // b's tile: whole loads per thread, scalar or vec4.
        assert_eq!(bk * bn % (4 * THREADS), 0);
        assert_eq!(TILING.threads_xy().0 * TILING.threads_xy().1, THREADS);
        // Its plain form (and its grid) is the medium tile's.
        assert_eq!((bm, bn), (MEDIUM.bm, MEDIUM.bn));
    }
}
