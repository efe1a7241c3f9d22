//! Tensor cores from WGSL: a matmul kernel on cooperative matrices
//! (`enable wgpu_cooperative_matrix;`, wgpu's
//! `EXPERIMENTAL_COOPERATIVE_MATRIX`), for devices that list square
//! products of f16 `a` and `b` accumulating in f32: 16 x 16 x 16 (NVIDIA's
//! tensor cores) or 8 x 8 x 8 (Mesa's lavapipe since 25.x).
//!
//! The structure is that of llama.cpp's Vulkan "coopmat1" GEMM. With `F`
//! the fragment side and `S` the device's subgroup size:
//! - A workgroup is four subgroups (`4 S` threads) and owns a block of
//!   `8 F` x `8 F` outputs (128 x 128 on 16 x 16 fragments). Each subgroup
//!   owns a quarter, `4 x 4` fragments, so every fragment of `a` or `b` it
//!   loads feeds four products.
//! - The k axis goes in steps of `2 F`. Each step, all threads stage the
//!   block's `8 F` x `2 F` part of `a` and `2 F` x `8 F` part of `b` in
//!   workgroup memory as f16, rows padded by 8 halves (16 bytes) against
//!   bank conflicts.
//! - The next step's values are read from global memory into registers
//!   while the subgroups multiply the present step's fragments (one pair
//!   of barriers a step, no second buffer).
//! - Each thread's staging positions are worked out once: per load only
//!   a constant offset and the step's k change, no division. Threads walk
//!   the operand's axis of smaller stride, so neighbours read neighbours
//!   (the key's `rows_fast` says which), four elements a load where that
//!   axis is contiguous and aligned (`loads`, as the tiled kernels decide:
//!   16 bytes of f32, 8 of f16).
//! - Operands are read through their own strides (transposed, stepped and
//!   broadcast views go in without a copy); zeros stand past the edges, so
//!   any extents work.
//! - At the end each subgroup stores one row of its fragments at a time
//!   in a small workgroup area (`coopStoreT`), and its lanes write it out
//!   through the output's strides with matmul.wgsl's `put`, consecutive
//!   lanes on consecutive columns. `put` also skips what lies past the
//!   edges and adds to what earlier k slices left.
//!
//! `b` may also be a quantized weight decoded element by element as it is
//! staged (`CoopB::Decoded`, for `quant/tiled.rs`), a convolution's
//! patches (`CoopB::Patches`, for `conv/kernel.rs`), or a transposed
//! convolution's phases, whose `a` is read through its taps too
//! (`CoopB::Phases`, for `conv/transposed.rs`).
//!
//! The operands' values are rounded to f16 on the way in: f16 operands
//! are exact, f32 ones are computed this way only under
//! `MatmulPrecision::Fast` (as PyTorch's TF32 switch, but with f16's
//! range: past ±65,504 an operand is infinite), never by default.
//!
//! Subgroups are told apart by the `subgroup_id` builtin, so the kernel
//! needs subgroups of one fixed size (`S`, from 8 to 64, at least 32 on
//! 16 x 16 fragments so that a lane's accumulators stay in registers) that the
//! workgroup's `4 S` threads fill. wgpu does not check a shader's
//! fragment shape against what the driver lists (the device checks the
//! list before choosing this kernel, see `opening.rs`), and drivers have
//! shipped wrong results: the self-check (`self_check.rs`) probes the
//! kernel before its first product on a device.

use super::tiling::Loads;
use crate::backend::gpu::adapter_facts::AdapterFacts;
use crate::dtype::KernelType;
use std::fmt::Write;

/// Subgroups per workgroup, as 2 x 2 quarters of the block.
const SUBGROUPS: u32 = 4;

/// Fragments per side of a subgroup's quarter.
const FRAGMENTS: u32 = 4;

/// Halves each staged row of `a` and `b` is padded by (16 bytes: rows
/// stay aligned for `coopLoadT`, and a row's banks shift).
const PAD: u32 = 8;

/// Floats each row of the outputs' area is padded by (16 bytes, as `PAD`).
const PAD_C: u32 = 4;

/// The cooperative kernel of a device and a product's layouts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct CoopTiling {
    /// `F`: the device's products are `F` x `F` x `F` (8 or 16).
    pub fragment: u32,
    /// `S`: lanes per subgroup (8 to 64, a power of two; 32 or more on
    /// 16 x 16 fragments).
    pub lanes: u32,
    /// How each operand (`a`, `b`) is read: four elements a load along
    /// the axis of stride 1 where it is aligned (the buffer bound as
    /// vec4s), else one.
    pub loads: [Loads; 2],
    /// Threads stage each operand down its rows (a's m, b's k) fastest,
    /// else along its columns (a's k, b's n): the axis of smaller stride,
    /// the one of the vec4 loads where they are.
    pub rows_fast: [bool; 2],
    /// Where `b` comes from.
    pub b: CoopB,
}

/// Where the cooperative kernel's `b` comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum CoopB {
    /// A matrix read through its strides (`load_b`).
    Matrix,
    /// The caller's `b_at(base, r, c)`: element (k = r, n = c), zero
    /// outside (a quantized weight decoded as it is staged:
    /// `quant/tiled.rs`).
    Decoded,
    /// A convolution's patches (`conv/conv.wgsl`): the caller's
    /// `pixel_of(c)`, `tap_of(r)`, `advance(tap, step)` and `b_tap(base,
    /// r, pixel, tap)`. Each thread finds its pixels and first taps once
    /// and advances its taps by the k step: no division in the loop.
    Patches,
    /// A transposed convolution's phases (`conv/conv_transpose.wgsl`):
    /// `b` as `Patches`, and `a` (the weight) through the caller's
    /// `a_tap(base, row, r, tap)`, its taps advanced as `b`'s are; the
    /// workgroup's k ends at `slice_end(z)`, its phase's.
    Phases,
}

/// A thread's distinct row and column offsets, and each load's pair of
/// indices into them.
type OffsetGrid = (Vec<u32>, Vec<u32>, Vec<(usize, usize)>);

/// Where one operand's values come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    /// Read through its strides.
    Matrix,
    /// `b_at(base, r, c)`.
    Decoded,
    /// Through taps advanced by the k step (`a_tap` or `b_tap`).
    Taps,
}

/// One operand's part of a step: `rows` x `cols` staged with `pitch`
/// halves a row, its threads walking rows fastest when `rows_fast`,
/// `width` elements (1 or 4) a load.
struct Staging {
    name: &'static str,
    rows: u32,
    cols: u32,
    pitch: u32,
    rows_fast: bool,
    width: u32,
}

impl Staging {
    /// Loads per thread-sized row of the walk: the walked extent in loads.
    fn walked(&self) -> u32 {
        (if self.rows_fast { self.rows } else { self.cols }) / self.width
    }
}

impl CoopTiling {
    /// The kernel for a device with `fragment` x `fragment` products and
    /// subgroups of `lanes`, reading the operands as `loads` say and
    /// staging them along their axes of smaller stride where
    /// `smaller_stride_rows` (the vec4 loads' axis where they are). `None`
    /// for a shape or subgroup size it does not take.
    pub fn new(
        fragment: u32,
        lanes: u32,
        loads: [Loads; 2],
        smaller_stride_rows: [bool; 2],
    ) -> Option<Self> {
        let rows_fast = [0, 1].map(|i| match loads[i] {
            Loads::VecRows => true,
            Loads::VecCols => false,
            Loads::Scalar => smaller_stride_rows[i],
        });
        // A lane holds 16 accumulator fragments' share: F^2 / S floats
        // each, at most 8 (a subgroup of 8 lanes on 16 x 16 fragments would
        // hold 512 registers of them).
        let shape = matches!(fragment, 8 | 16) && matches!(lanes, 8 | 16 | 32 | 64);
        (shape && lanes * 8 >= fragment * fragment).then_some(CoopTiling {
            fragment,
            lanes,
            loads,
            rows_fast,
            b: CoopB::Matrix,
        })
    }

    /// The kernel `facts`' device runs products of `dtype` on (as
    /// [`CoopTiling::new`]), or `None` where it runs none.
    pub fn on_device(
        facts: &AdapterFacts,
        dtype: KernelType,
        loads: [Loads; 2],
        smaller_stride_rows: [bool; 2],
    ) -> Option<Self> {
        let fragment = facts.cooperative.filter(|_| facts.cooperative_for(dtype))?;
        Self::new(
            fragment,
            facts.subgroup_min_size,
            loads,
            smaller_stride_rows,
        )
    }

    /// This kernel with `b` from `source`, read one element at a time:
    /// a decoded weight down its rows (k, a weight row's consecutive
    /// elements), a convolution's patches along its columns (output
    /// pixels, neighbouring pixels' inputs).
    pub fn with_b(self, source: CoopB) -> Self {
        let rows_fast = match source {
            CoopB::Matrix => self.rows_fast[1],
            CoopB::Decoded => true,
            CoopB::Patches | CoopB::Phases => false,
        };
        // A tap-read weight is staged down its output channels: the k
        // offsets of a thread's loads then step evenly, as b's rows do.
        let a = match source {
            CoopB::Phases => (Loads::Scalar, true),
            _ => (self.loads[0], self.rows_fast[0]),
        };
        CoopTiling {
            loads: [a.0, Loads::Scalar],
            rows_fast: [a.1, rows_fast],
            b: source,
            ..self
        }
    }

    /// Outputs per side of a workgroup's block.
    pub fn block(self) -> u32 {
        2 * FRAGMENTS * self.fragment
    }

    /// The k step.
    fn bk(self) -> u32 {
        2 * self.fragment
    }

    /// Threads per workgroup.
    fn threads(self) -> u32 {
        SUBGROUPS * self.lanes
    }

    /// Outputs per side of a subgroup's quarter.
    fn quarter(self) -> u32 {
        FRAGMENTS * self.fragment
    }

    /// Bytes of workgroup memory the kernel declares.
    pub fn workgroup_bytes(self) -> u32 {
        let (block, bk) = (self.block(), self.bk());
        let staged = block * (bk + PAD) + bk * (block + PAD);
        2 * staged + 4 * self.outputs_area()
    }

    /// Floats of the area the subgroups' fragments go out through: a row
    /// of fragments each, rows padded.
    fn outputs_area(self) -> u32 {
        SUBGROUPS * self.fragment * (self.quarter() + PAD_C)
    }

    /// The staging of `a` (block rows by k) and `b` (k by block columns).
    fn stagings(self) -> [Staging; 2] {
        let (block, bk) = (self.block(), self.bk());
        let width = |i: usize| if self.loads[i] == Loads::Scalar { 1 } else { 4 };
        [
            Staging {
                name: "a",
                rows: block,
                cols: bk,
                pitch: bk + PAD,
                rows_fast: self.rows_fast[0],
                width: width(0),
            },
            Staging {
                name: "b",
                rows: bk,
                cols: block,
                pitch: block + PAD,
                rows_fast: self.rows_fast[1],
                width: width(1),
            },
        ]
    }

    /// The kernel's constants, workgroup arrays and `main` (the `KERNEL`
    /// slot of matmul.wgsl). Expects `Params`, `Acc`, `ZERO`,
    /// `batch_bases`, `load_a`, `load_b` and `put` declared.
    pub fn wgsl(self) -> String {
        let f = self.fragment;
        let ty = format!("coop_mat{f}x{f}");
        let stagings = self.stagings();
        let mut w = String::new();
        let _ = write!(
            w,
            "const BLOCK: u32 = {block}u;\n\
             const BK: u32 = {bk}u;\n\
             const QUARTER: u32 = {quarter}u;\n\
             const LANES: u32 = {lanes}u;\n\
             const PITCH_A: u32 = {pa}u;\n\
             const PITCH_B: u32 = {pb}u;\n\
             const PITCH_C: u32 = {pc}u;\n\
             // The step's rows of a (BLOCK x BK) and of b (BK x BLOCK),\n\
             // row-major with padded rows, and a row of each subgroup's\n\
             // fragments on their way out.\n\
             var<workgroup> tile_a: array<f16, {size_a}>;\n\
             var<workgroup> tile_b: array<f16, {size_b}>;\n\
             var<workgroup> tile_c: array<f32, {size_c}>;\n\n\
             @compute @workgroup_size({threads})\n\
             fn main(\n    \
             @builtin(workgroup_id) wid: vec3<u32>,\n    \
             @builtin(local_invocation_index) t: u32,\n    \
             @builtin(subgroup_id) sg_id: u32,\n    \
             @builtin(subgroup_invocation_id) lane: u32,\n\
             ) {{\n    \
             // Clamped: a driver whose subgroups are narrower than LANES\n    \
             // answers wrong (the probe drops the kernel), not past the\n    \
             // workgroup arrays, which runtime checks do not guard.\n    \
             let sg = min(sg_id, {last}u);\n    \
             let row0 = wid.y * BLOCK;\n    \
             let col0 = wid.x * BLOCK;\n    \
             let bases = batch_bases(wid.z + params.batch_start);\n    \
             // This subgroup's quarter of the block.\n    \
             let qr = (sg / 2u) * QUARTER;\n    \
             let qc = (sg % 2u) * QUARTER;\n    \
             let k_end = {k_end};\n",
            block = self.block(),
            bk = self.bk(),
            quarter = self.quarter(),
            lanes = self.lanes,
            pa = stagings[0].pitch,
            pb = stagings[1].pitch,
            pc = self.quarter() + PAD_C,
            size_a = stagings[0].rows * stagings[0].pitch,
            size_b = stagings[1].rows * stagings[1].pitch,
            size_c = self.outputs_area(),
            threads = self.threads(),
            last = SUBGROUPS - 1,
            k_end = match self.b {
                CoopB::Phases => "slice_end(wid.z + params.batch_start)",
                _ => "params.k",
            },
        );
        for s in &stagings {
            w.push_str(&self.thread_start(s));
        }
        for i in 0..FRAGMENTS {
            for j in 0..FRAGMENTS {
                let _ = writeln!(w, "    var c{i}_{j} = {ty}<f32, C>();");
            }
        }
        // The first step's values, then per step: stage, fetch the next,
        // multiply.
        for s in &stagings {
            w.push_str(&self.fetch(s, "params.k_start", "    ", true));
        }
        w.push_str(
            "    for (var k0 = params.k_start; k0 < k_end; k0 += BK) {\n        \
             workgroupBarrier();\n",
        );
        for s in &stagings {
            w.push_str(&self.stash(s));
        }
        // The next step's values load while this one's products run.
        w.push_str("        workgroupBarrier();\n        if (k0 + BK < k_end) {\n");
        for s in &stagings {
            w.push_str(&self.fetch(s, "k0 + BK", "            ", false));
        }
        w.push_str("        }\n");
        for kk in (0..self.bk()).step_by(f as usize) {
            w.push_str("        {\n");
            for i in 0..FRAGMENTS {
                let _ = writeln!(
                    w,
                    "        let fa{i} = coopLoadT<{ty}<f16, A>>(&tile_a[(qr + {r}u) * PITCH_A + {kk}u], PITCH_A);",
                    r = i * f,
                );
            }
            for j in 0..FRAGMENTS {
                let _ = writeln!(
                    w,
                    "        let fb{j} = coopLoadT<{ty}<f16, B>>(&tile_b[{kk}u * PITCH_B + qc + {c}u], PITCH_B);",
                    c = j * f,
                );
            }
            for i in 0..FRAGMENTS {
                for j in 0..FRAGMENTS {
                    let _ = writeln!(
                        w,
                        "        c{i}_{j} = coopMultiplyAdd(fa{i}, fb{j}, c{i}_{j});"
                    );
                }
            }
            w.push_str("        }\n");
        }
        w.push_str("    }\n    let out_at = sg * ");
        let _ = writeln!(w, "{}u;", f * (self.quarter() + PAD_C));
        for i in 0..FRAGMENTS {
            for j in 0..FRAGMENTS {
                let _ = writeln!(
                    w,
                    "    coopStoreT(c{i}_{j}, &tile_c[out_at + {c}u], PITCH_C);",
                    c = j * f,
                );
            }
            let _ = write!(
                w,
                "    workgroupBarrier();\n    \
                 for (var e = lane; e < {n}u; e += LANES) {{\n        \
                 let r = e / QUARTER;\n        \
                 let c = e % QUARTER;\n        \
                 put(bases[2], row0 + qr + {r}u + r, col0 + qc + c, Acc(tile_c[out_at + r * PITCH_C + c]));\n    \
                 }}\n    \
                 workgroupBarrier();\n",
                n = f * self.quarter(),
                r = i * f,
            );
        }
        w.push_str("}\n");
        w
    }

    /// Where operand `s` comes from.
    fn source(self, s: &Staging) -> Source {
        match (s.name, self.b) {
            ("a", CoopB::Phases) | ("b", CoopB::Patches | CoopB::Phases) => Source::Taps,
            ("b", CoopB::Decoded) => Source::Decoded,
            _ => Source::Matrix,
        }
    }

    /// The distinct row and column offsets of a thread's loads of `s`
    /// from its first element, and each load's pair of indices into them.
    fn offset_grid(self, s: &Staging) -> OffsetGrid {
        let (mut rows, mut cols) = (Vec::new(), Vec::new());
        let mut at = Vec::new();
        for e in 0..self.loads_per_thread(s) {
            let (dr, dc) = self.offset_of(s, e);
            let index = |list: &mut Vec<u32>, v: u32| match list.iter().position(|&x| x == v) {
                Some(i) => i,
                None => {
                    list.push(v);
                    list.len() - 1
                }
            };
            at.push((index(&mut rows, dr), index(&mut cols, dc)));
        }
        (rows, cols, at)
    }

    /// As [`CoopTiling::offset_grid`] along a tap-read operand's k (`b`'s
    /// rows, `a`'s columns) and its other axis: (k offsets, other
    /// offsets, each load's pair of indices into them), and the step
    /// between the k offsets (the loads take `k`, `k + step`, ... in
    /// order, each for one or more consecutive loads).
    fn tap_grid(self, s: &Staging) -> (OffsetGrid, u32) {
        let (rows, cols, at) = self.offset_grid(s);
        let (ks, others, at) = match s.name {
            "b" => (rows, cols, at),
            _ => (cols, rows, at.into_iter().map(|(i, j)| (j, i)).collect()),
        };
        let step = ks.get(1).copied().unwrap_or(1);
        debug_assert!(ks.iter().enumerate().all(|(i, &r)| r == i as u32 * step));
        ((ks, others, at), step)
    }

    /// The names of a tap-read operand's k step, its step between a
    /// thread's k offsets, its first load's tap and the tap of the load
    /// at hand.
    fn tap_names(s: &Staging) -> [&'static str; 4] {
        match s.name {
            "b" => ["b_step", "b_row_step", "btp", "bt"],
            _ => ["a_step", "a_col_step", "atp", "ta"],
        }
    }

    /// A tap-read operand's start: the tap of the thread's first k, and
    /// the taps' advances per k step and from one of its k offsets to the
    /// next; for `b`, each of the thread's pixels (`bpx{j}`). Two taps
    /// are live, whatever the loads (a tap per load would take 32
    /// registers' triples on 16 x 16 fragments).
    fn tap_start(self, s: &Staging) -> String {
        let ((_, others, _), step) = self.tap_grid(s);
        let [k_step, next, first, tap] = Self::tap_names(s);
        let k = if s.name == "b" { "b_r" } else { "a_c" };
        let mut w = format!(
            "    let {k_step} = tap_of(BK);\n    \
             let {next} = tap_of({step}u);\n    \
             var {first} = tap_of(params.k_start + {k});\n    \
             var {tap} = {first};\n"
        );
        if s.name == "b" {
            for (j, dc) in others.iter().enumerate() {
                let _ = writeln!(w, "    let bpx{j} = pixel_of(col0 + b_c + {dc}u);");
            }
        }
        w
    }

    /// Reads the thread's elements of tap-read `s` at the step starting
    /// at `k`, after the prologue's (`declare`) advancing its first tap
    /// one step, and its tap from k offset to k offset through the loads.
    fn fetch_taps(self, s: &Staging, k: &str, indent: &str, declare: bool) -> String {
        let ((ks, others, at), _) = self.tap_grid(s);
        let [k_step, next, first, tap] = Self::tap_names(s);
        let mut w = String::new();
        if !declare {
            let _ = writeln!(w, "{indent}{first} = advance({first}, {k_step});");
        }
        let _ = writeln!(w, "{indent}{tap} = {first};");
        let mut row = 0;
        for (e, &(i, j)) in at.iter().enumerate() {
            if i != row {
                debug_assert_eq!(i, row + 1);
                let _ = writeln!(w, "{indent}{tap} = advance({tap}, {next});");
                row = i;
            }
            let value = match s.name {
                "b" => format!("b_tap(bases[1], {k} + b_r + {}u, bpx{j}, bt)", ks[i]),
                _ => format!(
                    "a_tap(bases[0], row0 + a_r + {}u, {k} + a_c + {}u, ta)",
                    others[j], ks[i]
                ),
            };
            let _ = writeln!(
                w,
                "{indent}{decl}r{name}{e} = f16({value});",
                decl = if declare { "var " } else { "" },
                name = s.name,
            );
        }
        w
    }

    /// Loads of operand `s` a thread makes per step.
    fn loads_per_thread(self, s: &Staging) -> u32 {
        self.block() * self.bk() / (self.threads() * s.width)
    }

    /// Load `e` of a thread's share of `s`: its (row, column) offset from
    /// the thread's first. With `e`'s position `t + e T` in the order the
    /// threads walk (in loads), and `T` and the walked extent powers of
    /// two (one divides the other), the thread's own part and `e`'s part
    /// add without carries.
    fn offset_of(self, s: &Staging, e: u32) -> (u32, u32) {
        let along = e * self.threads();
        let (fast, slow) = ((along % s.walked()) * s.width, along / s.walked());
        if s.rows_fast {
            (fast, slow)
        } else {
            (slow, fast)
        }
    }

    /// `{name}_r`, `{name}_c`: the thread's first element of `s` in the
    /// step; `{name}_at`: where it lies in the operand at k = 0;
    /// `{name}_slot`: where it goes in the tile.
    fn thread_start(self, s: &Staging) -> String {
        let name = s.name;
        let (fast, slow) = if s.rows_fast { ("r", "c") } else { ("c", "r") };
        let (row, col) = match name {
            "a" => (format!("row0 + {name}_r"), format!("{name}_c")),
            _ => (format!("{name}_r"), format!("col0 + {name}_c")),
        };
        let base = if name == "a" { 0 } else { 1 };
        let at = match self.source(s) {
            Source::Decoded => String::new(),
            Source::Taps => self.tap_start(s),
            Source::Matrix => format!(
                "    let {name}_at = bases[{base}] + i32({row}) * params.{name}_rs + i32({col}) * params.{name}_cs;\n"
            ),
        };
        format!(
            "    let {name}_{fast} = (t % {walked}u) * {width}u;\n    \
             let {name}_{slow} = t / {walked}u;\n\
             {at}    \
             let {name}_slot = {name}_r * {pitch}u + {name}_c;\n",
            walked = s.walked(),
            width = s.width,
            pitch = s.pitch,
        )
    }

    /// Reads the thread's elements of `s` at the step starting at `k`
    /// into its registers `r{name}{e}` (declared here when `declare`),
    /// zeros past the operand's edges. A vec4 load is all in or all out:
    /// its axis's extent, start and strides are multiples of four.
    fn fetch(self, s: &Staging, k: &str, indent: &str, declare: bool) -> String {
        let name = s.name;
        let mut w = String::new();
        let (k_of, other, k_stride, other_end) = match name {
            "a" => ("a_c", "row0 + a_r", "params.a_cs", "params.m"),
            _ => ("b_r", "col0 + b_c", "params.b_rs", "params.n"),
        };
        let (ty, load) = match s.width {
            1 => ("f16", format!("load_{name}(p)")),
            _ => ("vec4<f16>", format!("{name}[p / 4u]")),
        };
        if self.source(s) == Source::Taps {
            return self.fetch_taps(s, k, indent, declare);
        }
        if self.source(s) == Source::Decoded {
            for e in 0..self.loads_per_thread(s) {
                let (dr, dc) = self.offset_of(s, e);
                let _ = writeln!(
                    w,
                    "{indent}{decl}r{name}{e} = f16(b_at(0, {k} + b_r + {dr}u, col0 + b_c + {dc}u));",
                    decl = if declare { "var " } else { "" },
                );
            }
            return w;
        }
        let _ = writeln!(
            w,
            "{indent}let {name}_k = {name}_at + i32({k}) * {k_stride};"
        );
        for e in 0..self.loads_per_thread(s) {
            let (dr, dc) = self.offset_of(s, e);
            let (dk, d_other) = if name == "a" { (dc, dr) } else { (dr, dc) };
            let _ = writeln!(
                w,
                "{indent}{decl}r{name}{e} = {ty}(0.0);\n\
                 {indent}if ({k} + {k_of} + {dk}u < params.k && {other} + {d_other}u < {other_end}) {{\n\
                 {indent}    let p = u32({name}_k + {dr} * params.{name}_rs + {dc} * params.{name}_cs);\n\
                 {indent}    r{name}{e} = {ty}({load});\n\
                 {indent}}}",
                decl = if declare { "var " } else { "" },
            );
        }
        w
    }

    /// Stores the thread's registers of `s` into its tile.
    fn stash(self, s: &Staging) -> String {
        let mut w = String::new();
        let step = if s.rows_fast { s.pitch } else { 1 };
        for e in 0..self.loads_per_thread(s) {
            let (dr, dc) = self.offset_of(s, e);
            let d = dr * s.pitch + dc;
            for j in 0..s.width {
                let value = match s.width {
                    1 => format!("r{}{e}", s.name),
                    _ => format!("r{}{e}[{j}]", s.name),
                };
                let _ = writeln!(
                    w,
                    "        tile_{name}[{name}_slot + {at}u] = {value};",
                    name = s.name,
                    at = d + j * step,
                );
            }
        }
        w
    }
}
