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
//! place as fast as `a`. Where that axis has stride 1 and the layout is
//! aligned to four elements (`Loads`, chosen by the launcher per operand),
//! the operand is bound as vec4s and each thread loads four elements at
//! once, along the matrix's rows or columns, stored into the tile as one
//! vec4 (along the tile) or four elements (across it).

use crate::backend::gpu::matmul_tile_choice::MatmulTile;
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

/// How a kernel loads one operand's tile from global memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Loads {
    /// One element at a time, consecutive threads along whichever axis
    /// has the smaller stride (the launcher says which, at run time).
    Scalar,
    /// Four elements at a time along the matrix's columns (a's k, b's n),
    /// contiguous and aligned to four (the buffer bound as vec4s).
    VecCols,
    /// Four elements at a time along its rows (a's m, b's k).
    VecRows,
}

/// Where the tiled kernel's `b` operand comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum BSource {
    /// A matrix in memory, read by the kernel's own `b_at`.
    Matrix,
    /// The caller's `b_at(base, r, c)`, a scalar loader (a quantized
    /// weight decoded as it is read).
    Caller,
    /// A convolution's patches: the caller's `pixel_of(c)` (an output
    /// pixel's first input row and column), `tap_of(r)` (a patch row's
    /// channel and tap), `advance(tap, step)` and `b_tap(base, r, pixel,
    /// tap)`. Each thread's pixels are found once and its taps advanced by
    /// `BK` rows a step, so the loop divides nothing. With `VecCols` loads
    /// a thread takes four adjacent pixels of one patch row: one tap to
    /// advance and one vec4 store into the tile for four elements.
    Patches,
    /// A transposed convolution's phases: `b` as [`BSource::Patches`], and
    /// `a` read through its taps too, by the caller's `a_tap(base, row, r,
    /// tap)` (the weight of a phase's tap is not a fixed stride from the
    /// previous one). The product runs to the caller's `slice_end(z)` (a
    /// phase's k, which differs between a dispatch's workgroups), and its
    /// `batch_bases(z)` sets the phase that the other functions read.
    Phases,
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

pub(crate) const FEW_ROWS: Tiling = Tiling {
    bm: 16,
    bn: 64,
    bk: 16,
    tm: 4,
    tn: 4,
};
pub(crate) const FEW_COLUMNS: Tiling = Tiling {
    bm: 64,
    bn: 16,
    bk: 16,
    tm: 4,
    tn: 4,
};

/// Half the large tile's block, 8 x 4 outputs per thread: twice the
/// blocks of the large tile (a mid-size product's grid nearer one wave)
/// with twice the medium tile's work per thread.
pub(crate) const TALL: Tiling = Tiling {
    bm: 128,
    bn: 64,
    bk: 16,
    tm: 8,
    tn: 4,
};
pub(crate) const WIDE: Tiling = Tiling {
    bm: 64,
    bn: 128,
    bk: 16,
    tm: 4,
    tn: 8,
};

/// The fixed tile whose kernel `tiling` is.
pub(crate) fn tile_of(tiling: Tiling) -> MatmulTile {
    match tiling {
        LARGE => MatmulTile::Large,
        MEDIUM => MatmulTile::Medium,
        FEW_ROWS => MatmulTile::FewRows,
        FEW_COLUMNS => MatmulTile::FewColumns,
        TALL => MatmulTile::Tall,
        WIDE => MatmulTile::Wide,
        _ => MatmulTile::Small,
    }
}

/// Every tile, for tests and validation.
#[cfg(test)]
pub(crate) const ALL: [Tiling; 7] = [LARGE, MEDIUM, SMALL, FEW_ROWS, FEW_COLUMNS, TALL, WIDE];

/// Rows (or columns) up to which a product counts as skinny: the skinny
/// tiles pad it to 16, a square tile to 32 or more.
pub(crate) const SKINNY: usize = 16;

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
            // The subgroup and cooperative kernels' block, and its plain
            // form.
            MatmulTile::Medium | MatmulTile::Subgroup | MatmulTile::Cooperative => MEDIUM,
            // The per-output kernel has no tile (the launcher never asks).
            MatmulTile::Small | MatmulTile::PerOutput => SMALL,
            MatmulTile::FewRows => FEW_ROWS,
            MatmulTile::FewColumns => FEW_COLUMNS,
            MatmulTile::Tall => TALL,
            MatmulTile::Wide => WIDE,
            // Skinny products: the block of the short side, when the long
            // one is at least four blocks long.
            MatmulTile::Auto if m <= SKINNY && n >= 4 * FEW_ROWS.bn as usize => FEW_ROWS,
            MatmulTile::Auto if n <= SKINNY && m >= 4 * FEW_COLUMNS.bm as usize => FEW_COLUMNS,
            // The large tile's work where a side would fill half its block
            // or less (a convolution's 64 output channels): the oblong tile
            // of that side's 64, or the medium one where both are that
            // short (a batch of small products).
            MatmulTile::Auto if blocks(&LARGE) >= BUSY_BLOCKS && m <= 64 && n <= 64 => MEDIUM,
            MatmulTile::Auto if blocks(&LARGE) >= BUSY_BLOCKS && m <= 64 => WIDE,
            MatmulTile::Auto if blocks(&LARGE) >= BUSY_BLOCKS && n <= 64 => TALL,
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

    /// The WGSL of the kernel loading `a` and `b` as `loads` says:
    /// constants, workgroup tiles, the loaders and `main`. Expects
    /// `Params`, `Acc`, `ZERO`, `batch_bases`, `load_out`, `store_out` and,
    /// for each operand, `load_a` / `load_b` (scalar loads) or the
    /// operand's buffer bound as vec4s (vec loads) declared.
    pub fn wgsl(&self, loads: [Loads; 2]) -> String {
        self.wgsl_loading(loads, BSource::Matrix)
    }

    /// [`Tiling::wgsl`], with `b` read as `source` says: by its own `b_at`
    /// (a matrix), or by the caller's functions, for an operand computed
    /// from another tensor (a quantized weight, a convolution's implicit
    /// im2col matrix).
    pub fn wgsl_loading(&self, loads: [Loads; 2], source: BSource) -> String {
        let Tiling { bm, bn, bk, tm, tn } = *self;
        let (tx, ty) = self.threads_xy();
        let threads = self.threads();
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
        // A loader of the caller's reads one element at a time; patches
        // also four adjacent pixels of one patch row.
        let patches = matches!(source, BSource::Patches | BSource::Phases);
        assert!(
            source == BSource::Matrix
                || loads[1] == Loads::Scalar
                || patches && loads[1] == Loads::VecCols
        );
        let phases = source == BSource::Phases;
        assert!(!phases || loads[0] == Loads::Scalar);
        let a = OperandLoads {
            source: if phases { source } else { BSource::Matrix },
            ..OperandLoads::a(*self, loads[0])
        };
        let b = OperandLoads {
            source,
            ..OperandLoads::b(*self, loads[1])
        };
        if !phases {
            w.push_str(&a.loader());
        }
        if source == BSource::Matrix {
            w.push_str(&b.loader());
        }
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
        // A patch row's tap advances by this each step; a phase's product
        // ends at its own k.
        if patches {
            w.push_str("    let b_step = tap_of(BK);\n");
        }
        let k_end = if phases {
            w.push_str("    let k_end = slice_end(wid.z + params.batch_start);\n");
            "k_end"
        } else {
            "params.k"
        };
        // Each thread's share of the tile copies, first loaded before the loop.
        w.push_str(&a.first_loads(threads));
        w.push_str(&b.first_loads(threads));
        for i in 0..tm {
            for g in 0..groups_b {
                let _ = writeln!(w, "    var acc{i}_{g} = vec4<Acc>(ZERO);");
            }
        }
        let _ = writeln!(
            w,
            "    for (var k0 = params.k_start; k0 < {k_end}; k0 += BK) {{"
        );
        w.push_str(&a.stores(threads));
        w.push_str(&b.stores(threads));
        w.push_str("        workgroupBarrier();\n        let k1 = k0 + BK;\n");
        w.push_str(&a.next_loads(threads));
        w.push_str(&b.next_loads(threads));
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

/// The WGSL that copies one operand's tile from global memory into
/// workgroup memory: each thread loads its share of the next tile into
/// registers (`pa{e}` / `pb{e}`, scalars or vec4s) and stores it into the
/// k-major tile (`tile_a[kk][row]`, `tile_b[kk][column]`). The code it
/// writes reads `t` (the thread's number in the workgroup), `bases`,
/// `row0` and `col0` (the block's first row and column), `a_fast` or
/// `b_fast`, and the tile's pitch constant.
#[derive(Debug, Clone, Copy)]
pub(crate) struct OperandLoads {
    /// "a" or "b".
    name: &'static str,
    loads: Loads,
    /// The tile's extent along its matrix's rows and columns (bm x bk for
    /// a, bk x bn for b), and the tile's pitch in vec4s.
    rows: u32,
    cols: u32,
    pitch: &'static str,
    /// Where the operand comes from (a: a matrix, or a transposed
    /// convolution's weight read through its taps).
    source: BSource,
}

impl OperandLoads {
    pub fn a(t: Tiling, loads: Loads) -> OperandLoads {
        OperandLoads {
            name: "a",
            loads,
            rows: t.bm,
            cols: t.bk,
            pitch: "PITCH_A",
            source: BSource::Matrix,
        }
    }

    pub fn b(t: Tiling, loads: Loads) -> OperandLoads {
        OperandLoads {
            name: "b",
            loads,
            rows: t.bk,
            cols: t.bn,
            pitch: "PITCH_B",
            source: BSource::Matrix,
        }
    }

    /// Loads per thread per tile (of one element or one vec4).
    fn per_thread(&self, threads: u32) -> u32 {
        let elements = self.rows * self.cols / threads;
        if self.loads == Loads::Scalar {
            elements
        } else {
            elements / 4
        }
    }

    /// The loader: `{name}_at(base, row, col)`, one element or four along
    /// the vec4 axis starting there, ZERO outside this slice (a vec4 is
    /// all in or all out: the launcher checks the extent along it is a
    /// multiple of four).
    pub fn loader(&self) -> String {
        let n = self.name;
        // Row and column bounds, and the strides, of a's (m, k) or b's (k, n).
        let (rows, cols) = if n == "a" {
            ("params.m", "params.k")
        } else {
            ("params.k", "params.n")
        };
        let (rs, cs) = (format!("params.{n}_rs"), format!("params.{n}_cs"));
        let (ret, load, offset) = match self.loads {
            Loads::Scalar => (
                "Acc",
                format!("load_{n}(p)"),
                format!("i32(r) * {rs} + i32(c) * {cs}"),
            ),
            Loads::VecCols => (
                "vec4<Acc>",
                format!("vec4<Acc>({n}[p / 4u])"),
                format!("i32(r) * {rs} + i32(c)"),
            ),
            Loads::VecRows => (
                "vec4<Acc>",
                format!("vec4<Acc>({n}[p / 4u])"),
                format!("i32(r) + i32(c) * {cs}"),
            ),
        };
        let zero = if self.loads == Loads::Scalar {
            "ZERO".to_string()
        } else {
            "vec4<Acc>(ZERO)".to_string()
        };
        format!(
            "// {n}'s matrix at `base` from (r, c) ({what}), or zero outside this slice.\n\
             fn {n}_at(base: i32, r: u32, c: u32) -> {ret} {{\n    \
                 if (r < {rows} && c < {cols}) {{\n        \
                     let p = u32(base + {offset});\n        \
                     return {load};\n    \
                 }}\n    \
                 return {zero};\n\
             }}\n\n",
            what = match self.loads {
                Loads::Scalar => "one element",
                Loads::VecCols => "four along the row",
                Loads::VecRows => "four down the column",
            }
        )
    }

    /// The thread's (row, column) in the tile of load `e`, declared, and
    /// its first load.
    pub fn first_loads(&self, threads: u32) -> String {
        let (n, rows, cols) = (self.name, self.rows, self.cols);
        let mut w = String::new();
        for e in 0..self.per_thread(threads) {
            let i = format!("i{n}{e}");
            let (r, c) = (format!("{n}r{e}"), format!("{n}c{e}"));
            // Consecutive threads along the axis the loads run along.
            let (rv, cv) = match self.loads {
                Loads::Scalar if n == "a" => (
                    format!("select({i} % {rows}u, {i} / {cols}u, a_fast)"),
                    format!("select({i} / {rows}u, {i} % {cols}u, a_fast)"),
                ),
                Loads::Scalar => (
                    format!("select({i} % {rows}u, {i} / {cols}u, b_fast)"),
                    format!("select({i} / {rows}u, {i} % {cols}u, b_fast)"),
                ),
                Loads::VecCols => (
                    format!("{i} / {}u", cols / 4),
                    format!("({i} % {}u) * 4u", cols / 4),
                ),
                Loads::VecRows => (
                    format!("({i} % {}u) * 4u", rows / 4),
                    format!("{i} / {}u", rows / 4),
                ),
            };
            let _ = write!(
                w,
                "    let {i} = t + {}u;\n    let {r} = {rv};\n    let {c} = {cv};\n",
                e * threads
            );
            if let Some(tap) = self.tap(e) {
                // b's pixels: four adjacent ones (one patch row's, sharing
                // its tap) in vec loads.
                if n == "b" && self.loads == Loads::VecCols {
                    for q in 0..4 {
                        let _ = writeln!(w, "    let px{e}_{q} = pixel_of(col0 + bc{e} + {q}u);");
                    }
                } else if n == "b" {
                    let _ = writeln!(w, "    let px{e} = pixel_of(col0 + bc{e});");
                }
                // The patch row of a's column or b's row.
                let r = if n == "a" { &c } else { &r };
                let _ = writeln!(w, "    var {tap} = tap_of(params.k_start + {r});");
            }
            let _ = writeln!(w, "    var p{n}{e} = {};", self.at(e, "params.k_start"));
        }
        w
    }

    /// The variable tracking the patch row of load `e` as its tap, where
    /// the operand is read through taps: `tp{e}` for b, `ta{e}` for a.
    fn tap(&self, e: u32) -> Option<String> {
        match (self.name, self.source) {
            ("a", BSource::Phases) => Some(format!("ta{e}")),
            ("b", BSource::Patches | BSource::Phases) => Some(format!("tp{e}")),
            _ => None,
        }
    }

    /// The call loading load `e` of the tile whose k starts at `k`.
    fn at(&self, e: u32, k: &str) -> String {
        match (self.name, self.tap(e)) {
            ("a", Some(tap)) => format!("a_tap(bases[0], row0 + ar{e}, {k} + ac{e}, {tap})"),
            ("a", None) => format!("a_at(bases[0], row0 + ar{e}, {k} + ac{e})"),
            (_, Some(tap)) if self.loads == Loads::VecCols => {
                let lanes: Vec<String> = (0..4)
                    .map(|q| format!("b_tap(bases[1], {k} + br{e}, px{e}_{q}, {tap})"))
                    .collect();
                format!("vec4<Acc>({})", lanes.join(", "))
            }
            (_, Some(tap)) => format!("b_tap(bases[1], {k} + br{e}, px{e}, {tap})"),
            (_, None) => format!("b_at(bases[1], {k} + br{e}, col0 + bc{e})"),
        }
    }

    /// The loads of the next tile (k from `k1`).
    pub fn next_loads(&self, threads: u32) -> String {
        let advance = |e| match self.tap(e) {
            Some(tap) => format!("        {tap} = advance({tap}, b_step);\n"),
            None => String::new(),
        };
        (0..self.per_thread(threads))
            .map(|e| {
                let load = format!("        p{}{e} = {};\n", self.name, self.at(e, "k1"));
                advance(e) + &load
            })
            .collect()
    }

    /// The stores of the loaded values into the k-major tile.
    pub fn stores(&self, threads: u32) -> String {
        let (n, pitch) = (self.name, self.pitch);
        let mut w = String::new();
        for e in 0..self.per_thread(threads) {
            // a's tile runs along its rows (m), b's along its columns (n);
            // k picks the tile's row.
            let (k, x) = if n == "a" {
                (format!("ac{e}"), format!("ar{e}"))
            } else {
                (format!("br{e}"), format!("bc{e}"))
            };
            let tile = format!("tile_{n}");
            let v = format!("p{n}{e}");
            // Whether the vec4 runs along the tile's vec4s (one store) or
            // along k (four).
            let along_tile = match self.loads {
                Loads::Scalar => None,
                Loads::VecRows => Some(n == "a"),
                Loads::VecCols => Some(n == "b"),
            };
            match along_tile {
                None => {
                    let _ = writeln!(
                        w,
                        "        {tile}[{k} * {pitch} + {x} / 4u][{x} % 4u] = {v};"
                    );
                }
                Some(true) => {
                    let _ = writeln!(w, "        {tile}[{k} * {pitch} + {x} / 4u] = {v};");
                }
                Some(false) => {
                    for (lane, name) in ["x", "y", "z", "w"].iter().enumerate() {
                        let _ = writeln!(
                            w,
                            "        {tile}[({k} + {lane}u) * {pitch} + {x} / 4u][{x} % 4u] = {v}.{name};"
                        );
                    }
                }
            }
        }
        w
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tile_divides_its_work_evenly() {
        for t in ALL {
            let threads = t.threads();
            assert_eq!(t.tm % 4, 0);
            assert_eq!(t.tn % 4, 0);
            assert_eq!(t.bm % t.tm, 0);
            assert_eq!(t.bn % t.tn, 0);
            assert_eq!(t.bm * t.bk % threads, 0, "{t:?}");
            assert_eq!(t.bk * t.bn % threads, 0, "{t:?}");
            assert!(threads <= 256, "{t:?}");
            // Whole vec4s per thread for vec loads of either operand.
            assert_eq!(t.bm * t.bk / threads % 4, 0, "{t:?}");
            assert_eq!(t.bk * t.bn / threads % 4, 0, "{t:?}");
            assert_eq!(t.bk % 4, 0, "{t:?}");
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
        assert_eq!(auto(8, 4096, 1), FEW_ROWS);
        assert_eq!(auto(16, 256, 1), FEW_ROWS);
        assert_eq!(auto(16, 128, 1), SMALL);
        assert_eq!(auto(4096, 3, 1), FEW_COLUMNS);
        assert_eq!(auto(17, 4096, 1), MEDIUM);
        // A side of 64 or less where the large tile would run: half its
        // block idle, the oblong tile instead (a convolution of 64 output
        // channels over 32 images of 56 x 56).
        assert_eq!(auto(64, 3136, 32), WIDE);
        assert_eq!(auto(64, 4096, 8), WIDE);
        assert_eq!(auto(3136, 49, 32), TALL);
        assert_eq!(auto(130, 49, 64), TALL);
        assert_eq!(auto(65, 3136, 32), LARGE);
        assert_eq!(auto(64, 64, 128), MEDIUM);
        assert_eq!(auto(64, 8, 200), MEDIUM);
        assert_eq!(
            MatmulTile::parse("few-columns"),
            Some(MatmulTile::FewColumns)
        );
        assert_eq!(Tiling::choose(MatmulTile::Medium, 1, 1, 1), MEDIUM);
        assert_eq!(MatmulTile::parse(" Large "), Some(MatmulTile::Large));
        assert_eq!(MatmulTile::parse("tall"), Some(MatmulTile::Tall));
        assert_eq!(MatmulTile::parse("wide"), Some(MatmulTile::Wide));
        assert_eq!(Tiling::choose(MatmulTile::Tall, 1, 1, 1), TALL);
        assert_eq!(tile_of(WIDE), MatmulTile::Wide);
        assert_eq!(MatmulTile::parse("huge"), None);
    }
}
