//! The WGSL of the cooperative flash kernel (`cooperative.rs`): its
//! constants, workgroup memory and `main`, every loop inside the loop over
//! key tiles unrolled.

use super::cooperative::{CoopFlash, PAD, PAD_F, STORE, SUBGROUPS};
use std::fmt::Write;

impl CoopFlash {
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

    /// `kv` rows of `pitch` halves from quads `v` (f32) of row `r`, quad
    /// `q`.
    fn stash_quad(pitch: &str) -> String {
        format!(
            "let slot = r * {pitch} + 4u * q;\n\
             kv[slot] = f16(v.x);\n\
             kv[slot + 1u] = f16(v.y);\n\
             kv[slot + 2u] = f16(v.z);\n\
             kv[slot + 3u] = f16(v.w);"
        )
    }

    /// The kernel's constants, workgroup memory and `main`.
    pub(super) fn wgsl(self) -> String {
        let f = self.fragment;
        let ty = format!("coop_mat{f}x{f}");
        let vq = self.value_frags * f / 4;
        let mut w = String::new();
        let _ = write!(
            w,
            "const F: u32 = {f}u;\n\
             const LANES: u32 = {lanes}u;\n\
             const BR: u32 = {rows}u;\n\
             const BC: u32 = {keys}u;\n\
             const LR: u32 = {lr}u;\n\
             const KP: u32 = {kp}u;\n\
             const QP: u32 = {qp}u;\n\
             const SP: u32 = {sp}u;\n\
             const PP: u32 = {pp}u;\n\
             const OP: u32 = {op}u;\n\
             const VALUES: u32 = {values}u;\n\
             // The queries (once, a chunk of the head at a time), then\n\
             // each tile's keys and values, f16 rows; the subgroups'\n\
             // scores, f32, and weights, f16; two fragments a subgroup of\n\
             // accumulators on their way through.\n\
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
            qp = self.q_pitch(),
            sp = self.keys() + PAD_F,
            pp = self.keys() + PAD,
            op = f + PAD_F,
            values = self.value_frags * f,
            kv = self.kv_halves(),
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
             let row0 = tile * BR;\n    \
             // The workgroup's part of the value rows.\n    \
             let vbase = wid.z * VALUES;\n",
            threads = self.threads(),
            last = SUBGROUPS - 1,
        );
        let _ = writeln!(
            w,
            "    for (var c = t; c < VALUES; c += {}u) {{\n        atomicStore(&poison[c], 0u);\n    }}",
            self.threads()
        );
        // The queries, staged a chunk at a time and loaded as fragments.
        for first in (0..self.head_frags).step_by(self.q_frags as usize) {
            let frags = self.q_frags.min(self.head_frags - first);
            if first > 0 {
                // The last chunk's fragments are loaded.
                w.push_str("    workgroupBarrier();\n");
            }
            let q_body = format!(
                "var v = vec4<f32>(0.0);\n\
                 let at = row0 + r;\n\
                 if (at < params.rows) {{\n    \
                 let head = starts[0] + i32(at / params.length) * params.q_group;\n    \
                 v = quad_q(head, at % params.length, {q0}u + q);\n\
                 }}\n{}",
                Self::stash_quad("QP"),
                q0 = first * f / 4
            );
            w.push_str(&self.staged(self.rows(), frags * f / 4, "    ", &q_body));
            w.push_str("    workgroupBarrier();\n");
            for h in first..first + frags {
                let _ = writeln!(
                    w,
                    "    let qf{h} = coopLoadT<{ty}<f16, A>>(&kv[sg * F * QP + {c}u], QP);",
                    c = (h - first) * f
                );
            }
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
            self.head_frags * f / 4,
            "        ",
            &format!("{k_body}{}", Self::stash_quad("KP")),
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
             v = quad_v(starts[2], k0 + r, vbase / 4u + q);\n\
             }\n";
        w.push_str(&self.staged(
            self.keys(),
            vq,
            "        ",
            &format!("{v_body}{}", Self::stash_quad("KP")),
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
             let v = vec4<f32>(vec4<f16>(quad_v(starts[2], k0 + r, vbase / 4u + q)));\n    \
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
                     let c = {c0}u + x % F;\n        \
                     let col = vbase + c;\n        \
                     let row = row0 + r;\n        \
                     if (row < params.rows && col < params.value) {{\n            \
                     let o0 = starts[4] + i32(row / params.length) * params.o_group\n                \
                     + i32(row % params.length) * params.o_row;\n            \
                     let total = row_l[r];\n            \
                     var y = nan_f32();\n            \
                     if (row_bad[r] == 0u && atomicLoad(&poison[c]) == 0u) {{\n                \
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
