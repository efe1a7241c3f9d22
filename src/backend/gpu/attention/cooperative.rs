//! Flash attention on cooperative matrices (tensor cores): the scores
//! `q kᵀ` and the products `p v` of each tile of keys as `F` x `F` x `F`
//! fragment products, the online softmax between them in f32 by the
//! lanes. With `F` the fragment side and `S` the device's subgroup size:
//! - A workgroup is four subgroups (`4 S` threads) and takes `4 F` query
//!   rows of one batch (a key head: the queries of the query heads it
//!   serves), `F` rows a subgroup. Each subgroup loads its rows of `q`
//!   as fragments once and keeps them in registers, and keeps its rows of
//!   the output as accumulator fragments.
//! - Per tile of `2 F` keys: all threads stage the keys in workgroup
//!   memory as f16 (rows padded by 8 halves); each subgroup multiplies its
//!   `q` fragments by them into its rows of scores and stores them; the
//!   lanes (`S / F` a row, merging by subgroup shuffles) mask, scale and
//!   bias the scores, update the row's maximum and sum, and write the
//!   weights `exp(score - max)` as f16, while all threads stage the values
//!   in the keys' place; where a row's maximum grew, the subgroups take
//!   their accumulators through workgroup memory to scale them; then each
//!   subgroup adds its weights times the values to its accumulators.
//! - Everything inside the loop over key tiles is unrolled: a thread's
//!   loop trips are the tiles (lavapipe counts every trip of every loop).
//!
//! Semantics are flash.wgsl's: scores, maxima and sums in f32; a row with
//! a NaN or +inf score is NaN, one that attends no key has weights of 0;
//! a non-finite value of
//! a key that no query of the workgroup reaches (causal) makes its column
//! NaN, as the composed product's zero weight would. The operands are
//! rounded to f16 on the way in (exact for f16; f32 only under
//! `MatmulPrecision::Fast`, whose range is f16's), and so are the weights
//! (as FlashAttention's).

use super::plan::Extents;
use super::{FlashParams, MaskKind, operands, walk};
use crate::backend::gpu::adapter_facts::AdapterFacts;
use crate::backend::gpu::command::Bound;
use crate::backend::gpu::context::GpuContext;
use crate::backend::gpu::kernel::grid::grid_of;
use crate::backend::gpu::kernel::loop_budget::ITERATIONS;
use crate::backend::gpu::kernel::prelude::fill_kernel;
use crate::backend::gpu::matmul_tile_choice::MatmulTile;
use crate::backend::gpu::record::{family_key, record_family};
use crate::dtype::KernelType;
use crate::error::{Error, Result};
use smallvec::SmallVec;
use std::fmt::Write;

const FLASH_COOP_WGSL: &str = shader!("attention/flash_coop.wgsl");

/// The finish's store of an output.
const STORE: &str = "store_out(u32(o0 + i32(col) * params.o_col), y);";

/// Subgroups a workgroup.
const SUBGROUPS: u32 = 4;

/// Halves each staged row of keys, values and weights is padded by.
const PAD: u32 = 8;

/// Floats each row of scores and of the accumulators' area is padded by.
const PAD_F: u32 = 4;

/// The widest head and value rows (elements) the kernel takes: a lane
/// holds `F` rows' share of the output's accumulators in registers.
const WIDEST: usize = 128;

/// The cooperative flash kernel's shape on a device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct CoopFlash {
    /// `F`: the device's products are `F` x `F` x `F` (8 or 16).
    pub fragment: u32,
    /// `S`: lanes a subgroup (`S` >= `F`, a power of two up to 64).
    pub lanes: u32,
    /// Fragments across a head row and a value row (zeros past the rows).
    pub head_frags: u32,
    pub value_frags: u32,
}

/// Everything that selects a distinct cooperative flash pipeline.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct CoopFlashKey {
    /// q's, k's, v's and the output's: f16, or f32 under
    /// `MatmulPrecision::Fast`.
    pub dtype: KernelType,
    pub mask: MaskKind,
    pub shape: CoopFlash,
    /// Every output off by one (`GpuOptions::sabotage_matmul` naming the
    /// cooperative tile: a test's way to show the self-check at work).
    pub sabotaged: bool,
}

family_key!(
    CoopFlashKey,
    "webtensor attention cooperative",
    coop_flash_source
);

impl CoopFlash {
    /// The kernel for an attention of `extents` in `dtype` on the device of
    /// `facts`: `None` where the device has no cooperative matrices for
    /// `dtype`, the rows are wider than [`WIDEST`], the workgroup memory
    /// is too small, the keys' tiles outrun the loop budget, or a batch
    /// has fewer query rows than a fragment (a decoding step's: the
    /// split kernel reads its keys with more workgroups).
    pub fn plan(facts: &AdapterFacts, extents: &Extents, dtype: KernelType) -> Option<Self> {
        let fragment = facts.cooperative.filter(|_| facts.cooperative_for(dtype))?;
        let lanes = facts.subgroup_min_size;
        let shape_ok = matches!(fragment, 8 | 16)
            && matches!(lanes, 8 | 16 | 32 | 64)
            && lanes >= fragment
            && lanes * 8 >= fragment * fragment;
        let f = fragment as usize;
        let fits = extents.head <= WIDEST
            && extents.value <= WIDEST
            && extents.length >= f
            && extents.source.div_ceil(2 * f) <= ITERATIONS;
        if !(shape_ok && fits && extents.head > 0 && extents.value > 0) {
            return None;
        }
        let shape = CoopFlash {
            fragment,
            lanes,
            head_frags: extents.head.div_ceil(f) as u32,
            value_frags: extents.value.div_ceil(f) as u32,
        };
        (shape.workgroup_bytes() <= facts.workgroup_bytes).then_some(shape)
    }

    /// Query rows a workgroup takes.
    pub fn rows(self) -> u32 {
        SUBGROUPS * self.fragment
    }

    /// Keys a tile.
    fn keys(self) -> u32 {
        2 * self.fragment
    }

    fn threads(self) -> u32 {
        SUBGROUPS * self.lanes
    }

    /// Halves a staged row of queries, keys or values.
    fn kv_pitch(self) -> u32 {
        self.head_frags.max(self.value_frags) * self.fragment + PAD
    }

    /// Bytes of workgroup memory the kernel declares.
    pub fn workgroup_bytes(self) -> u32 {
        let (f, rows, keys) = (self.fragment, self.rows(), self.keys());
        let kv = 2 * rows * self.kv_pitch();
        let scores = 4 * rows * (keys + PAD_F);
        let weights = 2 * rows * (keys + PAD);
        let out = 4 * 2 * SUBGROUPS * f * (f + PAD_F);
        let rows_state = 4 * 3 * rows;
        let poison = 4 * self.value_frags * f;
        kv + scores + weights + out + rows_state + poison + 8
    }

    /// Lanes a row of scores.
    fn row_lanes(self) -> u32 {
        self.lanes / self.fragment
    }

    /// Unrolled loads of `rows` rows of `quads` quads by the threads:
    /// `body(row, quad)` for each (WGSL using `r` and `q`), guarded where
    /// the threads do not divide the quads.
    fn staged(self, rows: u32, quads: u32, indent: &str, body: &str) -> String {
        let total = rows * quads;
        let mut w = String::new();
        for e in 0..total.div_ceil(self.threads()) {
            let at = e * self.threads();
            let guard = at + self.threads() > total;
            let _ = writeln!(w, "{indent}{{");
            let _ = writeln!(w, "{indent}    let x = t + {at}u;");
            let inner = if guard {
                let _ = writeln!(w, "{indent}    if (x < {total}u) {{");
                format!("{indent}        ")
            } else {
                format!("{indent}    ")
            };
            let _ = writeln!(w, "{inner}let r = x / {quads}u;");
            let _ = writeln!(w, "{inner}let q = x % {quads}u;");
            for line in body.lines() {
                let _ = writeln!(w, "{inner}{line}");
            }
            if guard {
                let _ = writeln!(w, "{indent}    }}");
            }
            let _ = writeln!(w, "{indent}}}");
        }
        w
    }

    /// `kv` rows from quads `v` (f32) of row `r`, quad `q`.
    fn stash_quad() -> &'static str {
        "let slot = r * KP + 4u * q;\n\
         kv[slot] = f16(v.x);\n\
         kv[slot + 1u] = f16(v.y);\n\
         kv[slot + 2u] = f16(v.z);\n\
         kv[slot + 3u] = f16(v.w);"
    }

    /// The kernel's constants, workgroup memory and `main`.
    fn wgsl(self) -> String {
        let f = self.fragment;
        let ty = format!("coop_mat{f}x{f}");
        let (hq, vq) = (self.head_frags * f / 4, self.value_frags * f / 4);
        let mut w = String::new();
        let _ = write!(
            w,
            "const F: u32 = {f}u;\n\
             const LANES: u32 = {lanes}u;\n\
             const BR: u32 = {rows}u;\n\
             const BC: u32 = {keys}u;\n\
             const LR: u32 = {lr}u;\n\
             const KP: u32 = {kp}u;\n\
             const SP: u32 = {sp}u;\n\
             const PP: u32 = {pp}u;\n\
             const OP: u32 = {op}u;\n\
             const VALUES: u32 = {values}u;\n\
             // The queries (once), then each tile's keys and values, f16\n\
             // rows; the subgroups' scores, f32, and weights, f16; two\n\
             // fragments a subgroup of accumulators on their way through.\n\
             var<workgroup> kv: array<f16, {kv}>;\n\
             var<workgroup> s_tile: array<f32, {s}>;\n\
             var<workgroup> p_tile: array<f16, {p}>;\n\
             var<workgroup> o_tile: array<f32, {o}>;\n\
             var<workgroup> alpha_tile: array<f32, BR>;\n\
             var<workgroup> row_l: array<f32, BR>;\n\
             var<workgroup> row_bad: array<u32, BR>;\n\
             var<workgroup> poison: array<atomic<u32>, VALUES>;\n\
             var<workgroup> rescale_any: atomic<u32>;\n\
             var<workgroup> rescale_now: u32;\n\n",
            lanes = self.lanes,
            rows = self.rows(),
            keys = self.keys(),
            lr = self.row_lanes(),
            kp = self.kv_pitch(),
            sp = self.keys() + PAD_F,
            pp = self.keys() + PAD,
            op = f + PAD_F,
            values = self.value_frags * f,
            kv = self.rows() * self.kv_pitch(),
            s = self.rows() * (self.keys() + PAD_F),
            p = self.rows() * (self.keys() + PAD),
            o = 2 * SUBGROUPS * f * (f + PAD_F),
        );
        let _ = write!(
            w,
            "@compute @workgroup_size({threads})\n\
             fn main(\n    \
             @builtin(workgroup_id) wid: vec3<u32>,\n    \
             @builtin(local_invocation_index) t: u32,\n    \
             @builtin(subgroup_id) sg_id: u32,\n    \
             @builtin(subgroup_invocation_id) lane_id: u32,\n\
             ) {{\n    \
             // Clamped: a driver whose subgroups are not LANES wide\n    \
             // answers wrong (the probe drops the kernel), not past the\n    \
             // workgroup arrays, which runtime checks do not guard.\n    \
             let sg = min(sg_id, {last}u);\n    \
             let lane = min(lane_id, LANES - 1u);\n    \
             // Uniform across the workgroup: every thread reaches every barrier.\n    \
             let w = wid.x + wid.y * params.row_width;\n    \
             if (w >= params.workgroups) {{\n        return;\n    }}\n    \
             let pair = params.pair_offset + w;\n    \
             let tile = pair % params.tiles;\n    \
             let starts = batch_starts(pair / params.tiles);\n    \
             let row0 = tile * BR;\n",
            threads = self.threads(),
            last = SUBGROUPS - 1,
        );
        // The queries, staged once and loaded as fragments.
        let q_body = "var v = vec4<f32>(0.0);\n\
             let at = row0 + r;\n\
             if (at < params.rows) {\n    \
             let head = starts[0] + i32(at / params.length) * params.q_group;\n    \
             v = quad_q(head, at % params.length, q);\n\
             }\n";
        w.push_str(&self.staged(
            self.rows(),
            hq,
            "    ",
            &format!("{q_body}{}", Self::stash_quad()),
        ));
        let _ = writeln!(
            w,
            "    for (var c = t; c < VALUES; c += {}u) {{\n        atomicStore(&poison[c], 0u);\n    }}",
            self.threads()
        );
        w.push_str("    workgroupBarrier();\n");
        for h in 0..self.head_frags {
            let _ = writeln!(
                w,
                "    let qf{h} = coopLoadT<{ty}<f16, A>>(&kv[sg * F * KP + {c}u], KP);",
                c = h * f
            );
        }
        for c in 0..self.value_frags {
            let _ = writeln!(w, "    var o{c} = {ty}<f32, C>();");
        }
        // The lanes' rows of scores, and the keys this workgroup visits.
        w.push_str(
            "    let srow = sg * F + lane / LR;\n    \
             let part = lane % LR;\n    \
             let at = row0 + srow;\n    \
             let live = at < params.rows;\n    \
             let i = at % params.length;\n    \
             let m0 = starts[3] + i32(at / params.length) * params.m_group;\n    \
             var m = minus_inf();\n    \
             var l = 0.0;\n    \
             var bad = false;\n    \
             var end = params.source;\n    \
             if (params.causal != 0u) {\n        \
             let last = min(row0 + BR, params.rows) - 1u;\n        \
             var latest = params.length - 1u;\n        \
             if (last / params.length == row0 / params.length) {\n            \
             latest = last % params.length;\n        \
             }\n        \
             end = min(end, latest + 1u);\n    \
             }\n    \
             for (var k0 = 0u; k0 < end; k0 += BC) {\n        \
             // The last tile's products are done with kv and p_tile.\n        \
             workgroupBarrier();\n",
        );
        let k_body = "var v = vec4<f32>(0.0);\n\
             if (k0 + r < params.source) {\n    \
             v = quad_k(starts[1], k0 + r, q);\n\
             }\n";
        w.push_str(&self.staged(
            self.keys(),
            hq,
            "        ",
            &format!("{k_body}{}", Self::stash_quad()),
        ));
        w.push_str(
            "        if (t == 0u) {\n            atomicStore(&rescale_any, 0u);\n        }\n        \
             workgroupBarrier();\n",
        );
        for j in 0..self.keys() / f {
            let _ = writeln!(w, "        var s{j} = {ty}<f32, C>();");
            for h in 0..self.head_frags {
                let _ = writeln!(
                    w,
                    "        s{j} = coopMultiplyAdd(qf{h}, coopLoad<{ty}<f16, B>>(&kv[{r}u * KP + {c}u], KP), s{j});",
                    r = j * f,
                    c = h * f
                );
            }
            let _ = writeln!(
                w,
                "        coopStoreT(s{j}, &s_tile[sg * F * SP + {c}u], SP);",
                c = j * f
            );
        }
        // The keys are read: the values take their place while the lanes
        // weigh the scores.
        w.push_str("        workgroupBarrier();\n");
        let v_body = "var v = vec4<f32>(0.0);\n\
             if (k0 + r < params.source) {\n    \
             v = quad_v(starts[2], k0 + r, q);\n\
             }\n";
        w.push_str(&self.staged(
            self.keys(),
            vq,
            "        ",
            &format!("{v_body}{}", Self::stash_quad()),
        ));
        w.push_str(&self.softmax());
        // Where a row's maximum grew, its accumulators scale by alpha.
        w.push_str(
            "        workgroupBarrier();\n        \
             if (t == 0u) {\n            rescale_now = atomicLoad(&rescale_any);\n        }\n        \
             if (workgroupUniformLoad(&rescale_now) != 0u) {\n",
        );
        for c in 0..self.value_frags {
            let slot = format!("{}u + sg * F * OP", (c % 2) * SUBGROUPS * f * (f + PAD_F));
            let _ = writeln!(w, "            coopStoreT(o{c}, &o_tile[{slot}], OP);");
            w.push_str("            workgroupBarrier();\n");
            for e in 0..f * f / self.lanes {
                let _ = writeln!(
                    w,
                    "            {{\n                \
                     let x = lane + {at}u;\n                \
                     let e = {slot} + (x / F) * OP + x % F;\n                \
                     o_tile[e] = o_tile[e] * alpha_tile[sg * F + x / F];\n            }}",
                    at = e * self.lanes
                );
            }
            w.push_str("            workgroupBarrier();\n");
            let _ = writeln!(
                w,
                "            o{c} = coopLoadT<{ty}<f32, C>>(&o_tile[{slot}], OP);"
            );
        }
        w.push_str("        }\n");
        for j in 0..self.keys() / f {
            let _ = writeln!(
                w,
                "        let p{j} = coopLoadT<{ty}<f16, A>>(&p_tile[sg * F * PP + {c}u], PP);",
                c = j * f
            );
        }
        for c in 0..self.value_frags {
            for j in 0..self.keys() / f {
                let _ = writeln!(
                    w,
                    "        o{c} = coopMultiplyAdd(p{j}, coopLoadT<{ty}<f16, B>>(&kv[{r}u * KP + {cc}u], KP), o{c});",
                    r = j * f,
                    cc = c * f
                );
            }
        }
        w.push_str("    }\n");
        w.push_str(&self.poison_scan(vq));
        w.push_str(&self.finish());
        w.push_str("}\n");
        w
    }

    /// The lanes' part of a tile: each lane scores keys `part + LR u` of
    /// its row, the row's lanes merge the maximum, the weights go out as
    /// f16, the lanes merge the sum, and the row's state moves on.
    fn softmax(self) -> String {
        let per_lane = self.keys() / self.row_lanes();
        let mut w = String::from("        var top = minus_inf();\n");
        for u in 0..per_lane {
            let _ = write!(
                w,
                "        var sc{u} = minus_inf();\n        \
                 {{\n            \
                 let col = part + {c}u;\n            \
                 let key = k0 + col;\n            \
                 let causal_ok = params.causal == 0u || key <= i;\n            \
                 if (live && key < params.source && causal_ok) {{\n                \
                 var score = s_tile[srow * SP + col] * params.scale + bias(m0, i, key);\n                \
                 if (!allowed(m0, i, key)) {{\n                    score += minus_inf();\n                }}\n                \
                 if (finite(score)) {{\n                    top = max(top, score);\n                \
                 }} else if (!(is_inf_f32(score) && sign_bit_f32(score))) {{\n                    bad = true;\n                \
                 }}\n                \
                 sc{u} = score;\n            \
                 }}\n        \
                 }}\n",
                c = u * self.row_lanes()
            );
        }
        let merges: Vec<u32> = (0..self.row_lanes().trailing_zeros())
            .map(|b| 1 << b)
            .collect();
        for x in &merges {
            let _ = writeln!(
                w,
                "        top = max(top, subgroupShuffleXor(top, {x}u));\n        \
                 bad = subgroupShuffleXor(u32(bad), {x}u) != 0u || bad;"
            );
        }
        w.push_str("        let m_new = max(m, top);\n        var sum = 0.0;\n");
        for u in 0..per_lane {
            let _ = writeln!(
                w,
                "        {{\n            \
                 var p = 0.0;\n            \
                 if (finite(sc{u})) {{\n                p = exp(sc{u} - m_new);\n            }}\n            \
                 p_tile[srow * PP + part + {c}u] = f16(p);\n            \
                 sum += p;\n        \
                 }}",
                c = u * self.row_lanes()
            );
        }
        for x in &merges {
            let _ = writeln!(w, "        sum += subgroupShuffleXor(sum, {x}u);");
        }
        w.push_str(
            "        // Nothing summed while the maximum is -inf.\n        \
             var alpha = 0.0;\n        \
             if (finite(m)) {\n            \
             alpha = exp(m - m_new);\n            \
             if (m_new > m) {\n                \
             atomicOr(&rescale_any, 1u);\n            \
             }\n        \
             }\n        \
             if (part == 0u) {\n            \
             alpha_tile[srow] = alpha;\n        \
             }\n        \
             l = l * alpha + sum;\n        \
             m = m_new;\n",
        );
        w
    }

    /// Keys past a causal workgroup's last query: not scored, but the
    /// composed form's product multiplies their values by a weight of 0,
    /// which makes a NaN or infinite value (as the product's f16 sees it)
    /// NaN. Each thread marks the columns its values poison.
    fn poison_scan(self, vq: u32) -> String {
        let body = "if (k0 + r < params.source) {\n    \
             let v = vec4<f32>(vec4<f16>(quad_v(starts[2], k0 + r, q)));\n    \
             if (!finite(v.x)) { atomicOr(&poison[4u * q], 1u); }\n    \
             if (!finite(v.y)) { atomicOr(&poison[4u * q + 1u], 1u); }\n    \
             if (!finite(v.z)) { atomicOr(&poison[4u * q + 2u], 1u); }\n    \
             if (!finite(v.w)) { atomicOr(&poison[4u * q + 3u], 1u); }\n\
             }";
        format!(
            "    let scanned = (end + BC - 1u) / BC * BC;\n    \
             for (var k0 = scanned; k0 < params.source; k0 += BC) {{\n{}    }}\n    \
             if (part == 0u) {{\n        \
             row_l[srow] = l;\n        \
             row_bad[srow] = u32(bad);\n    \
             }}\n",
            self.staged(self.keys(), vq, "        ", body)
        )
    }

    /// Each subgroup's accumulators out through workgroup memory, a
    /// fragment at a time: the quotient by the row's sum, the
    /// accumulator where the row attends no key (zeros, or NaN from values
    /// at weights of 0), or NaN.
    fn finish(self) -> String {
        let f = self.fragment;
        // The last rescale's loads from the accumulators' area are done
        // before its first store (the lanes of a subgroup race otherwise).
        let mut w = String::from("    workgroupBarrier();\n");
        for c in 0..self.value_frags {
            let slot = format!("{}u + sg * F * OP", (c % 2) * SUBGROUPS * f * (f + PAD_F));
            let _ = writeln!(
                w,
                "    coopStoreT(o{c}, &o_tile[{slot}], OP);\n    workgroupBarrier();"
            );
            for e in 0..f * f / self.lanes {
                let _ = writeln!(
                    w,
                    "    {{\n        \
                     let x = lane + {at}u;\n        \
                     let r = sg * F + x / F;\n        \
                     let col = {c0}u + x % F;\n        \
                     let row = row0 + r;\n        \
                     if (row < params.rows && col < params.value) {{\n            \
                     let o0 = starts[4] + i32(row / params.length) * params.o_group\n                \
                     + i32(row % params.length) * params.o_row;\n            \
                     let total = row_l[r];\n            \
                     var y = nan_f32();\n            \
                     if (row_bad[r] == 0u && atomicLoad(&poison[col]) == 0u) {{\n                \
                     y = o_tile[{slot} + (x / F) * OP + x % F];\n                \
                     if (total != 0.0) {{\n                    y = div_f32(y, total);\n                }}\n            \
                     }}\n            \
                     {STORE}\n        \
                     }}\n    \
                     }}",
                    at = e * self.lanes,
                    c0 = c * f
                );
            }
        }
        w
    }
}

/// Records an attention on the cooperative kernel `shape`: `params` with
/// everything but the grid filled, `bindings` q, k, v, the output and the
/// mask where given; one dispatch, a workgroup per `4 F` query rows of a
/// batch.
///
/// # Errors
/// `TooLarge` for more workgroups than a dispatch holds or extents past
/// the kernel's 32 bits.
pub(super) fn record(
    ctx: &GpuContext,
    shape: CoopFlash,
    (dtype, mask): (KernelType, MaskKind),
    extents: &Extents,
    mut params: FlashParams,
    bindings: SmallVec<[Bound; 4]>,
) -> Result<bool> {
    let tiles = extents.length.div_ceil(shape.rows() as usize);
    let workgroups = extents.batches.saturating_mul(tiles);
    let big = |what: &'static str, n: usize| Error::TooLarge {
        op: "sdpa",
        what,
        requested: n as u64,
        limit: u32::MAX as u64,
    };
    let rows_wide = extents.batches.saturating_mul(extents.length);
    let elements = rows_wide.saturating_mul(extents.value.max(extents.head));
    if u32::try_from(workgroups).is_err() {
        return Err(big("workgroups", workgroups));
    }
    if u32::try_from(elements).is_err() {
        return Err(big("elements", elements));
    }
    let groups = grid_of(workgroups, 1, ctx.facts.max_workgroups_per_dim)?;
    params.tiles = tiles as u32;
    params.splits = 1;
    params.tiles_per_split = extents.source.div_ceil(shape.keys() as usize) as u32;
    params.workgroups = workgroups as u32;
    params.row_width = groups[0];
    params.pair_offset = 0;
    let key = CoopFlashKey {
        dtype,
        mask,
        shape,
        sabotaged: ctx.tuner.sabotaged() == Some(MatmulTile::Cooperative),
    };
    record_family(
        ctx,
        &key,
        params.bytes(),
        bindings,
        [groups[0], groups[1], 1],
    )?;
    Ok(true)
}

/// The WGSL source of the cooperative flash kernel for `key`.
///
/// # Errors
/// `Error::Internal` when the template's slots and the generated parts
/// disagree.
pub(crate) fn coop_flash_source(key: &CoopFlashKey) -> Result<String> {
    let (bindings, access) = operands(key.dtype, true, key.mask, false);
    let walk = walk();
    let main = key.shape.wgsl();
    let slots = [
        ("BINDINGS", bindings.as_str()),
        ("ACCESS", access.as_str()),
        ("WALK", walk.as_str()),
        ("MAIN", main.as_str()),
    ];
    let source = fill_kernel(
        "cooperative attention kernel",
        FLASH_COOP_WGSL,
        true,
        &FlashParams::wgsl(),
        &slots,
    )?;
    let source = match key.sabotaged {
        true => source.replace(
            STORE,
            "store_out(u32(o0 + i32(col) * params.o_col), y + 1.0);",
        ),
        false => source,
    };
    Ok(format!("enable wgpu_cooperative_matrix;\n{source}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::gpu::kernel::params_block::tests::assert_layout;
    #[cfg(not(target_arch = "wasm32"))]
    use crate::backend::gpu::kernel::prelude::tests::translate_to_spirv;
    use crate::backend::gpu::kernel::prelude::tests::validate;

    /// Every shape a device may run: both fragment sides, the subgroup
    /// sizes, narrow and wide rows.
    fn shapes() -> Vec<CoopFlash> {
        let mut all = Vec::new();
        for (fragment, lanes) in [(8, 8), (8, 32), (16, 32), (16, 64)] {
            for (head_frags, value_frags) in [(1, 1), (2, 3), (128 / fragment, 128 / fragment)] {
                all.push(CoopFlash {
                    fragment,
                    lanes,
                    head_frags,
                    value_frags,
                });
            }
        }
        all
    }

    #[test]
    fn every_cooperative_attention_kernel_is_valid_wgsl_and_translates_to_spirv() {
        for (i, shape) in shapes().into_iter().enumerate() {
            let mask = [MaskKind::None, MaskKind::Bool, MaskKind::Float][i % 3];
            for dtype in [KernelType::F16, KernelType::F32] {
                let key = CoopFlashKey {
                    dtype,
                    mask,
                    shape,
                    sabotaged: false,
                };
                let source = coop_flash_source(&key).unwrap();
                validate(&source, &format!("{key:?}"));
                assert_layout(&source, FlashParams::FIELDS, FlashParams::SIZE, "flash");
                // The subgroup and lane index workgroup arrays: both are
                // clamped before any use.
                for (id, clamp) in [
                    ("sg_id", "let sg = min(sg_id, 3u);"),
                    ("lane_id", "let lane = min(lane_id, LANES - 1u);"),
                ] {
                    assert_eq!(source.matches(id).count(), 2, "{key:?}: {id}");
                    assert!(source.contains(clamp), "{key:?}: {clamp}");
                }
                #[cfg(not(target_arch = "wasm32"))]
                translate_to_spirv(&source, &format!("{key:?}"));
            }
        }
    }

    #[test]
    fn the_widest_rows_fit_a_big_gpu_and_lavapipe() {
        // An NVIDIA GPU: 16 x 16 fragments, 32 lanes, 48 KiB.
        let wide = CoopFlash {
            fragment: 16,
            lanes: 32,
            head_frags: 8,
            value_frags: 8,
        };
        assert!(
            wide.workgroup_bytes() <= 48 << 10,
            "{}",
            wide.workgroup_bytes()
        );
        // Lavapipe: 8 x 8 fragments, 8 lanes, 32 KiB.
        let lvp = CoopFlash {
            fragment: 8,
            lanes: 8,
            head_frags: 16,
            value_frags: 16,
        };
        assert!(
            lvp.workgroup_bytes() <= 32 << 10,
            "{}",
            lvp.workgroup_bytes()
        );
    }
}
