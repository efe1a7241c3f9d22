//! Matmul autotuning: the first product of each class (dtype, extents by
//! powers of two, operand layouts; see `MatmulClass`) on a device times
//! every register tile that fits it, on the product's own operands into a
//! scratch output, in rounds (each tile once a round: untimed, then twice
//! timed), and the device keeps the one of the fastest run for the class. The
//! clock is the GPU's where the device writes timestamps (`timer.rs`: the
//! pass's start to its end, the kernels alone), else the host's around a
//! submit and a wait for the queue, after the pending work has been
//! drained (the kernels plus launch costs, which a short kernel's time can
//! drown in). Every tile computes
//! the same product (each is tested against the CPU), so the winner
//! changes the speed, never the result's meaning.
//!
//! Native only: in a browser the queue cannot be waited on and the clock
//! is coarse (`GpuOptions::autotune` is off there).

use super::self_check::{self, Verdict, variant_of};
use super::tiling::SKINNY;
use super::{fits, record_with, subgroup};
use crate::backend::gpu::command::Bound;
use crate::backend::gpu::matmul_tile_choice::{MatmulClass, MatmulTile};
use crate::backend::gpu::storage::GpuStorage;
use crate::backend::{MatmulCall, Storage, TensorRef};
use crate::error::Result;
use crate::layout::Layout;
use std::sync::Arc;

/// Timed runs of each tile after one untimed (which compiles it and warms
/// the GPU up).
const RUNS: usize = 2;

/// The kernels autotuning chooses among (the skinny tiles for skinny
/// products only, the per-output kernel for small matrices, the subgroup
/// and cooperative kernels where they run as themselves, see
/// [`eligible`]).
const TILES: [MatmulTile; 8] = MatmulTile::FIXED;

/// True when `tile` is worth timing on an `m` x `n` output: a skinny tile
/// only where its short side covers the output's, the per-output kernel
/// only for matrices of at most 32 x 32, the subgroup kernel only where
/// the device has its `subgroup_lanes`, the cooperative one only where it
/// takes the dtype (elsewhere each is the medium tile).
fn eligible(
    tile: MatmulTile,
    m: usize,
    n: usize,
    [subgroup_lanes, cooperative]: [bool; 2],
) -> bool {
    match tile {
        MatmulTile::FewRows => m <= SKINNY,
        MatmulTile::FewColumns => n <= SKINNY,
        MatmulTile::PerOutput => m <= 2 * SKINNY && n <= 2 * SKINNY,
        MatmulTile::Subgroup => subgroup_lanes,
        MatmulTile::Cooperative => cooperative,
        _ => true,
    }
}

/// The tile for `call` (bound as `bound`, of extents `[m, n, k,
/// batches]`): its class's winner, timed now on its first product.
///
/// # Errors
/// GPU failures while timing; pool failures for the scratch output.
pub(super) fn tile(
    out: &GpuStorage,
    call: &MatmulCall,
    bound: &[Bound; 3],
    dims: [usize; 4],
) -> Result<MatmulTile> {
    let ctx = &out.ctx;
    let [m, n, ..] = dims;
    // Whether each operand's matrix runs along its columns (a's k, b's n).
    let along_columns = |t: &TensorRef| {
        let (rs, cs) = MatmulCall::matrix_strides(t);
        cs.unsigned_abs() <= rs.unsigned_abs()
    };
    let fast = [along_columns(&call.a), along_columns(&call.b)];
    let class = MatmulClass::of(call.out.dtype, dims, fast);
    if let Some(tile) = ctx.tuner.winner(&class) {
        return Ok(tile);
    }
    let busy = {
        let scheduler = ctx.scheduler();
        scheduler.is_capturing() || scheduler.is_profiling()
    };
    if busy {
        // Timing (and the self-check's probes) need submits, which a
        // captured step cannot have and which a profile should not show:
        // the tile by size, this once, and the class is tuned later.
        return Ok(MatmulTile::Auto);
    }
    let lanes = ctx.facts.subgroups_of(subgroup::TEAM);
    let dtype = call.out.dtype;
    let cooperative = ctx.facts.cooperative_for(dtype);
    let mut candidates = Vec::new();
    for tile in TILES {
        // Only kernels that passed the self-check are timed.
        if eligible(tile, m, n, [lanes, cooperative])
            && fits(out, tile, dims)
            && self_check::verdict(ctx, variant_of(out, tile, dims, dtype), dtype)?
                == Verdict::Right
        {
            candidates.push(tile);
        }
    }
    if candidates.len() < 2 {
        let tile = candidates.first().copied().unwrap_or(MatmulTile::Auto);
        ctx.tuner.remember(class, tile);
        return Ok(tile);
    }
    let tile = tune(out, call, bound, dims, &candidates)?;
    ctx.tuner.remember(class, tile);
    Ok(tile)
}

/// Times each of `tiles` on `call`'s operands into a scratch output; the
/// fastest (the first on a tie).
fn tune(
    out: &GpuStorage,
    call: &MatmulCall,
    bound: &[Bound; 3],
    dims: [usize; 4],
    tiles: &[MatmulTile],
) -> Result<MatmulTile> {
    const OP: &str = "matmul (autotuning)";
    let ctx = &out.ctx;
    let shape = call.out.layout.shape().clone();
    let scratch = Arc::new(Storage::Gpu(GpuStorage::uninit(
        ctx,
        OP,
        call.out.dtype,
        shape.numel(),
    )?));
    let trial = MatmulCall {
        a: call.a.clone(),
        b: call.b.clone(),
        out: TensorRef {
            storage: &scratch,
            layout: Layout::contiguous(shape),
            dtype: call.out.dtype,
        },
    };
    let trial_bound = [
        bound[0].clone(),
        bound[1].clone(),
        Bound::new(OP, &scratch, true)?,
    ];
    // The operands' pending work first, so that no run pays for it.
    ctx.flush()?;
    ctx.wait_idle(OP)?;
    let timer = clock::Timer::new(ctx);
    // In rounds, every tile once a round: a GPU whose clock is still
    // ramping up after the idle wait (or is slowed by other work) weighs on
    // all tiles alike, not on the first one timed.
    let mut fastest = vec![f64::INFINITY; tiles.len()];
    for round in 0..=RUNS {
        for (k, &tile) in tiles.iter().enumerate() {
            let seconds = if let Some(timer) = &timer {
                record_with(out, &trial, trial_bound.clone(), tile, dims)?;
                clock::gpu_seconds(timer, ctx, OP)?
            } else {
                let t0 = clock::now();
                record_with(out, &trial, trial_bound.clone(), tile, dims)?;
                ctx.flush()?;
                ctx.wait_idle(OP)?;
                clock::seconds_since(t0)
            };
            ctx.tuner.count_run();
            if round > 0 {
                ctx.tuner.add_time(seconds);
                fastest[k] = fastest[k].min(seconds);
            }
        }
    }
    let mut best = (f64::INFINITY, tiles[0]);
    for (&seconds, &tile) in fastest.iter().zip(tiles) {
        if seconds < best.0 {
            best = (seconds, tile);
        }
    }
    ctx.check_device_error(OP)?;
    Ok(best.1)
}

/// The host's clock and GPU timestamps (`std::time::Instant` panics in a
/// browser, where autotuning is off).
#[cfg(not(target_arch = "wasm32"))]
mod clock {
    use crate::backend::gpu::context::GpuContext;
    pub(super) use crate::backend::gpu::timer::PassTimer as Timer;
    use crate::error::Result;

    pub type Stamp = std::time::Instant;

    pub fn now() -> Stamp {
        std::time::Instant::now()
    }

    pub fn seconds_since(t0: Stamp) -> f64 {
        t0.elapsed().as_secs_f64()
    }

    /// The GPU time of flushing what is pending (see `PassTimer`).
    pub fn gpu_seconds(timer: &Timer, ctx: &GpuContext, op: &'static str) -> Result<f64> {
        pollster::block_on(timer.time_flush(ctx, op))
    }
}

/// No clock in a browser: autotuning never runs there, and timestamps
/// could not be waited for.
#[cfg(target_arch = "wasm32")]
mod clock {
    use crate::backend::gpu::context::GpuContext;
    use crate::error::Result;

    #[derive(Clone, Copy)]
    pub struct Stamp;

    /// No GPU timer in a browser.
    pub enum Timer {}

    impl Timer {
        pub fn new(_: &GpuContext) -> Option<Timer> {
            None
        }
    }

    pub fn now() -> Stamp {
        Stamp
    }

    pub fn seconds_since(_: Stamp) -> f64 {
        0.0
    }

    pub fn gpu_seconds(timer: &Timer, _: &GpuContext, _: &'static str) -> Result<f64> {
        match *timer {}
    }
}
