//! Rows mode, shared by the reduction, softmax and normalisation
//! families: a subgroup per row (an output's reduced elements, a line), as
//! many rows a workgroup as the adapter's fewest lanes divide its threads
//! into, lanes striding over the row and combining by subgroup operations
//! (no workgroup memory, no barrier). Line kernels hold an aligned line's
//! quads in registers, so that it is read once.

use crate::backend::gpu::adapter_facts::AdapterFacts;
use crate::backend::gpu::command::Bound;
use crate::backend::gpu::kernel::buffer::{
    buffer_decl, load_fn, quad_lanes, quad_of, quad_type, storage_mode, store_out_fn,
};
use crate::backend::{TensorRef, lines};
use crate::dtype::KernelType;
use crate::error::Result;
use crate::layout::Layout;

/// Threads of a rows-mode workgroup.
pub(crate) const WIDTH: u32 = 256;

/// The most quads a lane of a line kernel holds in registers: lines of up
/// to 32 x the fewest lanes (1,024 where subgroups have 32 lanes).
const MAX_REGISTERS: usize = 8;

/// Rows a workgroup takes: `WIDTH` over the adapter's fewest lanes, where
/// its subgroups have a known least size (4 to `WIDTH` lanes); `None`
/// without subgroups.
pub(crate) fn rows_per_group(facts: &AdapterFacts) -> Option<u32> {
    let lanes = facts.subgroup_min_size;
    (facts.subgroups && (4..=WIDTH).contains(&lanes)).then(|| WIDTH / lanes)
}

/// Rows mode for lines of `length` whose every line is a run of whole
/// quads (`quads`): (rows a workgroup, quads a lane holds) where the line
/// fits the registers of the fewest lanes, rounded up to a power of two;
/// `None` otherwise.
pub(crate) fn line_rows(facts: &AdapterFacts, quads: bool, length: usize) -> Option<(u32, u32)> {
    let rows = rows_per_group(facts)?;
    let lanes = facts.subgroup_min_size as usize;
    (quads && length / 4 <= MAX_REGISTERS * lanes).then(|| {
        (
            rows,
            (length / 4).div_ceil(lanes).next_power_of_two() as u32,
        )
    })
}

/// Workgroups for `lines` lines: one each, or one per `rows` in rows mode
/// (`rows` > 0).
pub(crate) fn workgroups(lines: usize, rows: u32) -> usize {
    match rows {
        0 => lines,
        rows => lines.div_ceil(rows as usize),
    }
}

/// A line kernel's operands along their last axis: the source (binding 1)
/// and destination (2) bound, their lines (`lines`, the layouts of the
/// lines' starts) and steps within a line, and the mode that fits them:
/// `rows` and `registers` as [`line_rows`] gives them (0 and 0 for a
/// workgroup per line), `quads` as [`lines_in_quads`].
pub(crate) struct BoundLines {
    pub bindings: [Bound; 2],
    pub lines: [Layout; 2],
    pub steps: [isize; 2],
    pub count: usize,
    pub length: usize,
    pub quads: bool,
    pub rows: u32,
    pub registers: u32,
}

/// Binds `input` and `out` (written) for a line kernel of `op` and plans
/// its mode; `None` when there is nothing to compute (no lines, or empty
/// ones).
///
/// # Errors
/// As `Bound::view`: a view over more than one storage binding.
pub(crate) fn bind_lines(
    op: &'static str,
    facts: &AdapterFacts,
    input: &TensorRef,
    out: &TensorRef,
) -> Result<Option<BoundLines>> {
    bind(op, facts, input, out, false)
}

/// [`bind_lines`] for a kernel writing one value per line: `out` has the
/// lines' shape (its layout is the destination's lines, step 0), and the
/// mode fits the source alone.
///
/// # Errors
/// As [`bind_lines`].
pub(crate) fn bind_line_totals(
    op: &'static str,
    facts: &AdapterFacts,
    input: &TensorRef,
    out: &TensorRef,
) -> Result<Option<BoundLines>> {
    bind(op, facts, input, out, true)
}

fn bind(
    op: &'static str,
    facts: &AdapterFacts,
    input: &TensorRef,
    out: &TensorRef,
    totals: bool,
) -> Result<Option<BoundLines>> {
    let (input_bound, input) = Bound::view(op, input.clone(), false)?;
    let (out_bound, dest) = Bound::view(op, out.clone(), true)?;
    let (src_lines, src_step) = lines(&input);
    let (dst_lines, dst_step) = match totals {
        true => (dest.layout.clone(), 0),
        false => lines(&dest),
    };
    let count = src_lines.numel();
    let length = input.layout.dims().last().copied().unwrap_or(1);
    if count == 0 || length == 0 {
        return Ok(None);
    }
    let steps = [src_step, dst_step];
    let quads = if totals {
        src_step == 1
            && length.is_multiple_of(4)
            && src_lines.positions_aligned(4)
            && input_bound.bytes().is_multiple_of(16)
    } else {
        lines_in_quads(
            [&src_lines, &dst_lines],
            steps,
            length,
            [&input_bound, &out_bound],
        )
    };
    // A subgroup per line where every line is a run of whole quads that
    // fits the registers of the fewest lanes the adapter's subgroups have;
    // else a workgroup per line.
    let (rows, registers) = line_rows(facts, quads, length).unwrap_or((0, 0));
    Ok(Some(BoundLines {
        bindings: [input_bound, out_bound],
        lines: [src_lines, dst_lines],
        steps,
        count,
        length,
        quads,
        rows,
        registers,
    }))
}

/// True when every source and destination line is a run of stride 1 from a
/// multiple of four, of a length that is a multiple of four, in bindings
/// of whole 16-byte entries: a thread may read and write them four at a
/// time as array entries.
pub(crate) fn lines_in_quads(
    [src_lines, dst_lines]: [&Layout; 2],
    steps: [isize; 2],
    length: usize,
    [src, dst]: [&Bound; 2],
) -> bool {
    steps == [1, 1]
        && length.is_multiple_of(4)
        && src_lines.positions_aligned(4)
        && dst_lines.positions_aligned(4)
        && src.bytes().is_multiple_of(16)
        && dst.bytes().is_multiple_of(16)
}

/// The source (binding 1) and `out_buf` (2) as arrays of four-element
/// entries of `dtype`, with `load_quad(q) -> vec4<f32>` and
/// `store_quad(q, y)` (each value rounded once into the dtype).
pub(crate) fn quad_bindings(dtype: KernelType, native_f16: bool) -> (String, String) {
    let mode = storage_mode(dtype, native_f16);
    let quad = quad_type(mode);
    (
        format!(
            "@group(0) @binding(1) var<storage, read> src: array<{quad}>;\n\
             @group(0) @binding(2) var<storage, read_write> out_buf: array<{quad}>;\n"
        ),
        format!(
            "fn load_quad(q: u32) -> vec4<f32> {{\n    let e = src[q];\n    return vec4<f32>({});\n}}\n\
             fn store_quad(q: u32, y: vec4<f32>) {{\n    out_buf[q] = {};\n}}\n",
            quad_lanes(dtype, mode, "e"),
            quad_of(dtype, mode, "y"),
        ),
    )
}

/// The source (binding 1) alone, as [`quad_bindings`] (`quads`) or
/// [`element_bindings`] bind it, and `out_buf` (2) an array of f32: for a
/// kernel writing one f32 per line.
pub(crate) fn source_bindings(
    dtype: KernelType,
    native_f16: bool,
    quads: bool,
) -> (String, String) {
    let out = "@group(0) @binding(2) var<storage, read_write> out_buf: array<f32>;\n";
    if quads {
        let mode = storage_mode(dtype, native_f16);
        return (
            format!(
                "@group(0) @binding(1) var<storage, read> src: array<{}>;\n{out}",
                quad_type(mode)
            ),
            format!(
                "fn load_quad(q: u32) -> vec4<f32> {{\n    let e = src[q];\n    return vec4<f32>({});\n}}\n",
                quad_lanes(dtype, mode, "e")
            ),
        );
    }
    (
        buffer_decl(1, "src", dtype, native_f16, false) + out,
        load_fn("load_src", "src", dtype, native_f16),
    )
}

/// The same bindings one element an entry (for lines walked through their
/// steps): `load_src(p) -> f32` and `store_out(p, v)`.
pub(crate) fn element_bindings(dtype: KernelType, native_f16: bool) -> (String, String) {
    (
        [
            buffer_decl(1, "src", dtype, native_f16, false),
            buffer_decl(2, "out_buf", dtype, native_f16, true),
        ]
        .concat(),
        [
            load_fn("load_src", "src", dtype, native_f16),
            store_out_fn(dtype, native_f16),
        ]
        .concat(),
    )
}

/// The rows-mode entry point `main_rows`: the workgroup's `rows` rows taken
/// by its subgroups in turn (several each should the subgroups be wider than
/// the fewest lanes), row `r` (global) running `body` where `r < limit`,
/// after `setup`. The builtins `sg_size` and `sg_lane` and the constants
/// `ROWS_WIDTH`, `ROWS` and (for line kernels) `REGISTERS` are in scope.
/// Every branch is uniform across a subgroup: the row depends on the
/// workgroup and the subgroup only.
pub(crate) fn entry(rows: u32, registers: u32, limit: &str, setup: &str, body: &str) -> String {
    format!(
        "const ROWS_WIDTH: u32 = {WIDTH}u;
const ROWS: u32 = {rows}u;
const REGISTERS: u32 = {registers}u;

@compute @workgroup_size(ROWS_WIDTH)
fn main_rows(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(subgroup_size) sg_size: u32,
    @builtin(subgroup_invocation_id) sg_lane: u32,
    @builtin(subgroup_id) sg_id: u32,
    @builtin(num_subgroups) sg_count: u32,
) {{
    let w = wid.x + wid.y * params.row_width;
{setup}
    for (var k = sg_id; k < ROWS; k += sg_count) {{
        let r = w * ROWS + k;
        if (r < {limit}) {{
{body}
        }}
    }}
}}
",
        registers = registers.max(1)
    )
}
