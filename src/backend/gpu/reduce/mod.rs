//! GPU reductions: the stages of a reduction planned and recorded as
//! kernel commands (`source.rs` writes each stage's WGSL).
//!
//! Short reductions run one thread per output, and so do reductions across
//! the fast axis (a column sum reads each row coalesced), four adjacent
//! outputs a thread where each row's four are one aligned 16-byte entry
//! (`columns_fit`), their partials split-major. Longer ones run a
//! subgroup per output where the adapter's subgroups have a known least
//! size and the outputs fill the device (rows mode: no workgroup memory, no
//! barrier), else a workgroup per output, which strides over the reduced
//! elements and combines across subgroup lanes or in workgroup memory.
//! Every thread keeps four loads in flight into four states (quads of four
//! elements where each output's elements are an aligned run). When there
//! are few outputs and many elements each (a full sum), each output is
//! split into partial results written to a scratch buffer, by a grid of
//! 256-thread workgroups sized to what the adapter keeps resident
//! (`AdapterFacts::resident_threads`), and a second stage combines them.
//! Accumulation is in f32 for f16 and f32, wrapping i32/u32 for integers. A
//! sum with centers (`ReduceCall::center`) sums squared deviations, a
//! variance's second pass.

mod source;

use source::{Dest, ReduceKey, ReduceParams, Source, acc_dtype};

use crate::backend::gpu::adapter_facts::AdapterFacts;
use crate::backend::gpu::command::Bound;
use crate::backend::gpu::kernel::grid::{grid, grid_of};
use crate::backend::gpu::kernel::loop_budget;
use crate::backend::gpu::kernel::params_block::{dims8, strides8};
use crate::backend::gpu::kernel::rows;
use crate::backend::gpu::record::record_family;
use crate::backend::gpu::storage::GpuStorage;
use crate::backend::{ReduceCall, Storage};
use crate::dtype::KernelType;
use crate::error::Result;
use crate::layout::Layout;
use smallvec::{SmallVec, smallvec};
use std::sync::Arc;

/// Reductions at most this long run one thread per output.
const THREAD_MODE_MAX: usize = 64;
/// Threads of a workgroup in group mode (a narrow one where each thread
/// would get fewer than `THREAD_SHARE` elements), as many as rows mode's.
const WIDE: u32 = rows::WIDTH;
const NARROW: u32 = 64;
/// Elements each thread of a wide workgroup takes at least: four quads in
/// flight, four turns.
const THREAD_SHARE: usize = 64;
/// Elements per workgroup a split aims for at least.
const SPLIT_CHUNK: usize = WIDE as usize * 16;
/// Threads a thread-mode split stage aims for in all.
const THREAD_TARGET: usize = 1 << 18;
/// Fewest elements a thread-mode split gives each thread.
const THREAD_CHUNK_MIN: usize = 16;

/// True when a group-mode stage may read `src` (bound as `src_bound`) in
/// quads: its reduced elements are one run of stride 1 and every output's
/// run starts at a multiple of four, in a binding of whole 16-byte
/// entries (so that the last entry is there to read).
fn quads_fit(kept: &Layout, reduced: &Layout, src_bound: &Bound) -> bool {
    reduced.rank() == 1
        && reduced.strides()[0] == 1
        && kept.positions_aligned(4)
        && src_bound.bytes().is_multiple_of(16)
}

/// True when a thread-mode stage may take four adjacent outputs a thread
/// (columns, read in quads): the kept axes' innermost run has stride 1 and
/// a length that is a multiple of four, every quad of outputs and every
/// reduced row's step lands on a multiple of four, and `src_bound` holds
/// whole 16-byte entries.
fn columns_fit(kept: &Layout, reduced: &Layout, src_bound: &Bound) -> bool {
    let (dims, strides) = (kept.dims(), kept.strides());
    let Some(last) = dims.len().checked_sub(1) else {
        return false;
    };
    let outer_aligned = dims[..last]
        .iter()
        .zip(&strides[..last])
        .all(|(&d, &s)| d <= 1 || s % 4 == 0);
    dims[last].is_multiple_of(4)
        && strides[last] == 1
        && outer_aligned
        && kept.offset().is_multiple_of(4)
        && reduced.positions_aligned(4)
        && src_bound.bytes().is_multiple_of(16)
}

/// One stage to record: its key, bindings and shape.
struct Stage {
    key: ReduceKey,
    bindings: SmallVec<[Bound; 4]>,
    outputs: usize,
    /// Elements (or partials) each output combines.
    extent: usize,
    /// Partial results this stage writes per output.
    splits: usize,
    /// Partial results per output in a partials source.
    src_splits: usize,
}

/// Records `call` (whose output storage is `out`) as one or two stages.
///
/// # Errors
/// `Error::Gpu` when the input is not on this GPU; pool failures for the
/// scratch buffers; `TooLarge` for a grid over the device's limit.
pub(crate) fn reduce(out: &GpuStorage, call: ReduceCall) -> Result<()> {
    let ctx = &out.ctx;
    // A view of a tensor larger than one binding binds just its window.
    let (src, input) = Bound::view("reduce", call.input, false)?;
    let call = &ReduceCall { input, ..call };
    let kept = call.kept_layout();
    let reduced = call.reduced_layout();
    let outputs = kept.numel();
    let extent = reduced.numel();
    if outputs == 0 {
        return Ok(());
    }
    // i64's two-word elements are read one at a time.
    let wide = call.input.dtype == KernelType::I64;
    let quads = !wide && quads_fit(&kept, &reduced, &src);
    // Across the fast axis, one thread per output (or four, `columns`)
    // and split reads coalesced; otherwise one workgroup per output (and
    // split) does.
    let across = outputs >= 64 && extent > THREAD_MODE_MAX && fast_axis_kept(&kept, &reduced);
    // Thread mode takes four adjacent outputs a thread where their rows are
    // aligned quads; a variance's centers are per output, one a thread.
    let columns = (across || extent <= THREAD_MODE_MAX)
        && !wide
        && call.center.is_none()
        && columns_fit(&kept, &reduced, &src);
    let key = |source, dest, shape: Shape, split_major| ReduceKey {
        op: call.op,
        dtype: call.input.dtype,
        out: call.out.dtype,
        source,
        dest,
        mean: call.mean,
        group: shape != Shape::Thread,
        width: match shape {
            Shape::Group(width) => width,
            _ => WIDE,
        },
        rows: match shape {
            Shape::Rows(rows) => rows,
            _ => 0,
        },
        subgroups: shape != Shape::Thread && ctx.facts.subgroups,
        native_f16: ctx.facts.native_f16,
        quads: source == Source::Tensor
            && if shape == Shape::Thread {
                columns
            } else {
                quads
            },
        centered: match &call.center {
            Some((_, deviation)) if source == Source::Tensor => Some(*deviation),
            _ => None,
        },
        split_major,
    };
    // The tensor source's bindings: the source, and its centers.
    let mut sources: SmallVec<[Bound; 4]> = smallvec![src];
    if let Some((center, _)) = &call.center {
        sources.push(Bound::new("reduce", &center.storage, false)?);
    }
    let dst = Bound::new("reduce", &call.out.storage, true)?;
    let resident = ctx.facts.resident_threads;
    let splits = if across {
        // Four outputs a thread take four times the rows, so that the
        // partials stay as few.
        let (threads, rows) = match columns {
            true => (outputs / 4, 4 * THREAD_CHUNK_MIN),
            false => (outputs, THREAD_CHUNK_MIN),
        };
        thread_split_count(threads, extent, rows)
    } else {
        split_count(outputs, extent, resident)
    };
    if splits == 1 {
        let shape = if extent <= THREAD_MODE_MAX || across {
            Shape::Thread
        } else {
            rows_or_group(&ctx.facts, outputs, extent)
        };
        // Pushed (a chained collect cost ~350 instructions an op).
        let mut bindings = sources;
        bindings.push(dst);
        let stage = Stage {
            key: key(Source::Tensor, Dest::Output, shape, false),
            bindings,
            outputs,
            extent,
            splits: 1,
            src_splits: 1,
        };
        return record(out, stage, &kept, &reduced, extent);
    }
    // Two stages through scratch partials, dropped once recorded: the pool
    // hands their buffers out again only in stream order.
    let scratch = |dtype| -> Result<Arc<Storage>> {
        Ok(Arc::new(Storage::Gpu(GpuStorage::uninit(
            ctx,
            "reduce",
            dtype,
            outputs * splits,
        )?)))
    };
    let mut partials = vec![scratch(acc_dtype(call.input.dtype))?];
    if call.op.is_arg() {
        partials.push(scratch(KernelType::I32)?);
    }
    let part_bound = |writes| -> Result<SmallVec<[Bound; 4]>> {
        partials
            .iter()
            .map(|p| Bound::new("reduce", p, writes))
            .collect()
    };
    let mut first = sources;
    first.extend(part_bound(true)?);
    let first_shape = if across {
        Shape::Thread
    } else {
        Shape::Group(width_for(extent.div_ceil(splits)))
    };
    let stage = Stage {
        key: key(Source::Tensor, Dest::Partials, first_shape, across),
        bindings: first,
        outputs,
        extent,
        splits,
        src_splits: 1,
    };
    record(out, stage, &kept, &reduced, extent)?;
    let mut second = part_bound(false)?;
    second.push(dst);
    let second_shape = if splits > THREAD_MODE_MAX {
        Shape::Group(width_for(splits))
    } else {
        Shape::Thread
    };
    let stage = Stage {
        key: key(Source::Partials, Dest::Output, second_shape, across),
        bindings: second,
        outputs,
        extent: splits,
        splits: 1,
        src_splits: splits,
    };
    record(out, stage, &kept, &reduced, extent)
}

/// True when the kept axes hold the input's smallest stride: neighbouring
/// outputs are neighbours in memory, so threads on consecutive outputs
/// read consecutive elements.
fn fast_axis_kept(kept: &Layout, reduced: &Layout) -> bool {
    let smallest = |l: &Layout| {
        l.dims()
            .iter()
            .zip(l.strides())
            .filter(|(n, _)| **n > 1)
            .map(|(_, s)| s.unsigned_abs())
            .min()
    };
    match (smallest(kept), smallest(reduced)) {
        (Some(k), Some(r)) => k < r,
        _ => false,
    }
}

/// How a stage's threads take its outputs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// A thread per output (and split).
    Thread,
    /// A workgroup of this many threads per output (and split).
    Group(u32),
    /// A subgroup per output, this many outputs per workgroup of `WIDE`.
    Rows(u32),
}

/// The shape of an unsplit stage over `outputs` outputs of `extent`
/// elements each: a subgroup per output where the adapter's subgroups
/// have a known least size, the outputs are enough to fill the device
/// with subgroups, and each lane's share stays inside the loop budget;
/// a workgroup per output otherwise.
fn rows_or_group(facts: &AdapterFacts, outputs: usize, extent: usize) -> Shape {
    let lanes = facts.subgroup_min_size as usize;
    match rows::rows_per_group(facts) {
        Some(rows)
            if outputs * lanes >= facts.resident_threads / 2
                && extent.div_ceil(lanes) <= loop_budget::ITERATIONS =>
        {
            Shape::Rows(rows)
        }
        _ => Shape::Group(width_for(extent)),
    }
}

/// The workgroup width for a split of `chunk` elements: wide where every
/// thread gets its share.
fn width_for(chunk: usize) -> u32 {
    if chunk >= WIDE as usize * THREAD_SHARE {
        WIDE
    } else {
        NARROW
    }
}

/// Splits per output in thread mode, `threads` threads a split: enough
/// threads for the device, each taking at least `rows` of its outputs'
/// elements and at most the loop budget.
fn thread_split_count(threads: usize, extent: usize, rows: usize) -> usize {
    let at_least = extent.div_ceil(loop_budget::ITERATIONS).max(1);
    (THREAD_TARGET / threads.max(1))
        .min(extent.div_ceil(rows))
        .max(at_least)
}

/// How many partial results each output is split into: enough wide
/// workgroups to fill the device (`resident` threads), each with at least
/// `SPLIT_CHUNK` elements, and never so few that one thread's share (a
/// 64th of a split, in the narrowest workgroup) passes the loop budget.
fn split_count(outputs: usize, extent: usize, resident: usize) -> usize {
    let at_least = extent
        .div_ceil(NARROW as usize * loop_budget::ITERATIONS)
        .max(1);
    let target = (resident / WIDE as usize).max(1);
    if outputs >= target || extent <= 2 * SPLIT_CHUNK {
        return at_least;
    }
    extent
        .div_ceil(SPLIT_CHUNK)
        .min(target / outputs)
        .max(at_least)
}

fn record(
    out: &GpuStorage,
    stage: Stage,
    kept: &Layout,
    reduced: &Layout,
    count: usize,
) -> Result<()> {
    let ctx = &out.ctx;
    let max = ctx.facts.max_workgroups_per_dim;
    let (groups, row_width) = if stage.key.rows > 0 {
        let groups = grid_of(rows::workgroups(stage.outputs, stage.key.rows), 1, max)?;
        (groups, groups[0])
    } else if stage.key.group {
        let groups = grid_of(stage.outputs * stage.splits, 1, max)?;
        (groups, groups[0])
    } else {
        // Columns: a thread per four outputs.
        let per_thread = if stage.key.quads { 4 } else { 1 };
        let groups = grid(stage.outputs / per_thread * stage.splits, max)?;
        (groups, groups[0] * 64)
    };
    // A split of a run read in quads starts at a multiple of four.
    let chunk = stage.extent.div_ceil(stage.splits).max(1);
    let chunk = if stage.key.quads && stage.key.group {
        chunk.next_multiple_of(4)
    } else {
        chunk
    };
    let params = ReduceParams {
        outputs: stage.outputs as u32,
        extent: stage.extent as u32,
        splits: stage.splits as u32,
        chunk: chunk as u32,
        kept_rank: kept.rank() as u32,
        red_rank: reduced.rank() as u32,
        row_width,
        offset: kept.offset() as u32,
        count: count as u32,
        src_splits: stage.src_splits as u32,
        pad1: 0,
        pad2: 0,
        kept_shape: dims8(kept.dims()),
        kept_strides: strides8(kept.strides()),
        red_shape: dims8(reduced.dims()),
        red_strides: strides8(reduced.strides()),
    };
    record_family(
        ctx,
        &stage.key,
        params.bytes(),
        stage.bindings,
        [groups[0], groups[1], 1],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_reductions_over_few_outputs_split() {
        // A discrete GPU's 2^18 resident threads: 1,024 wide workgroups.
        let gpu = 1 << 18;
        assert_eq!(split_count(1, 100, gpu), 1);
        assert_eq!(split_count(1, 1 << 24, gpu), 1024);
        assert_eq!(split_count(4096, 1 << 16, gpu), 1);
        assert_eq!(split_count(8, 1 << 20, gpu), 128);
        // Each split of a full sum of 2^24 gives a wide workgroup's threads
        // their share.
        assert_eq!(width_for((1 << 24) / 1024), WIDE);
        assert_eq!(width_for(1000), NARROW);
        // A software adapter of 2 cores: 8 wide workgroups, unless the loop
        // budget asks for more.
        assert_eq!(split_count(1, 1 << 20, 2 * 4 * 256), 8);
        // Many outputs of very long reductions still split for the loop
        // budget: 64 threads of a split take 64 x ITERATIONS elements.
        let budget = 64 * loop_budget::ITERATIONS;
        assert_eq!(split_count(4096, budget, gpu), 1);
        assert_eq!(split_count(4096, budget + 1, gpu), 2);
        assert_eq!(split_count(4096, 1 << 24, gpu), (1 << 24) / budget);
    }

    #[test]
    fn reductions_across_the_fast_axis_split_by_threads() {
        // A column sum of a row-major 4096 x 4096 matrix.
        let kept = Layout::from_parts([4096].into(), smallvec![1], 0);
        let reduced = Layout::from_parts([4096].into(), smallvec![4096], 0);
        assert!(fast_axis_kept(&kept, &reduced));
        assert!(!fast_axis_kept(&reduced, &kept));
        assert_eq!(thread_split_count(4096, 4096, 16), 64);
        assert_eq!(thread_split_count(1 << 20, 100, 16), 1);
        assert_eq!(thread_split_count(4096, 20, 16), 2);
        // Four columns a thread: 1024 threads a split, 64 rows each, as
        // many partials as one column a thread wrote.
        assert_eq!(thread_split_count(1024, 4096, 64), 64);
        // Each thread stays inside the loop budget.
        let long: usize = 1 << 24;
        assert!(long.div_ceil(thread_split_count(64, long, 16)) <= loop_budget::ITERATIONS);
        assert!(long.div_ceil(thread_split_count(16, long, 64)) <= loop_budget::ITERATIONS);
    }
}
