//! Matmul autotuning: the first product of each class (dtype, extents by
//! powers of two, operand layouts; see `MatmulClass`) on a device times
//! every register tile that fits it, on the product's own operands into a
//! scratch output, in rounds (each tile once a round: one untimed round,
//! which compiles and warms up, then [`ROUNDS`] timed), each run
//! [`REPS`] dispatches back to back so that launch costs weigh little. The
//! size rule (what `MatmulTile::Auto` runs untuned, each product by its
//! own extents) stays unless another tile's median run is at least
//! [`MARGIN`] faster than the rule's tile for the product timed: a
//! timing's noise never trades a good default for a tile that merely drew
//! a lucky run.
//! The clock is the GPU's where the device writes timestamps (`timer.rs`:
//! the pass's start to its end, the kernels alone), else the host's around
//! a submit and a wait for the queue, after the pending work has been
//! drained. Every tile computes the same product (each is tested against
//! the CPU), so the winner changes the speed, never the result's meaning.
//! What each class chose is public (`DeviceInfo::tuned_matmuls`).
//!
//! Native only: in a browser the queue cannot be waited on and the clock
//! is coarse (`GpuOptions::autotune` is off there).

use super::self_check::{self, Verdict, variant_of};
use super::tiling::{SKINNY, Tiling, tile_of};
use super::{fits, record_with, subgroup};
use crate::backend::gpu::command::Bound;
use crate::backend::gpu::matmul_tile_choice::{MatmulClass, MatmulTile, Tuned};
use crate::backend::gpu::storage::GpuStorage;
use crate::backend::{MatmulCall, Storage, StorageRef, TensorRef};
use crate::error::Result;
use crate::layout::Layout;
use std::sync::Arc;

/// Timed runs of each tile after one untimed (which compiles it and warms
/// the GPU up); the median decides.
pub(crate) const ROUNDS: usize = 5;

/// Dispatches of the product back to back in each run.
pub(crate) const REPS: usize = 4;

/// How much faster than the size rule's tile another must run to replace
/// it: its median run at most this fraction of the size rule's.
const MARGIN: f64 = 0.9;

/// The kernels autotuning chooses among (the skinny tiles for skinny
/// products only, the per-output kernel for small matrices, the subgroup
/// and cooperative kernels where they run as themselves, see
/// [`eligible`]).
const TILES: [MatmulTile; 10] = MatmulTile::FIXED;

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
    let class = MatmulClass::of(call.a.dtype, dims, fast);
    if let Some(tile) = ctx.tuner.winner(&class) {
        return Ok(tile);
    }
    // Timing (and the self-check's probes) need submits, which a captured
    // step cannot have and which a profile should not show: the tile by
    // size, this once, and the class is tuned later. A capture another
    // thread begins meanwhile waits for the timing.
    let Some(_own) = crate::backend::gpu::own_work::OwnWork::enter(ctx) else {
        return Ok(MatmulTile::Auto);
    };
    let lanes = ctx.facts.subgroups_of(subgroup::TEAM);
    let dtype = call.a.dtype;
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
    // The untuned choice, which another tile must beat by the margin.
    let default = match super::untuned(&ctx.facts, dtype, m, n) {
        MatmulTile::Auto => size_rule(m, n, dims[3]),
        tile => tile,
    };
    let tuned = if candidates.len() < 2 {
        let tile = candidates.first().copied().unwrap_or(MatmulTile::Auto);
        Tuned::untimed(default, tile)
    } else {
        tune(out, call, bound, dims, &candidates, default)?
    };
    ctx.tuner.remember(class, tuned);
    Ok(tuned.runtime())
}

/// The tile `MatmulTile::Auto` runs untuned on an `m` x `n` output over
/// `batches` (see `record_with` and `Tiling::choose`).
fn size_rule(m: usize, n: usize, batches: usize) -> MatmulTile {
    if m <= SKINNY && n <= SKINNY {
        MatmulTile::PerOutput
    } else {
        tile_of(Tiling::choose(MatmulTile::Auto, m, n, batches))
    }
}

/// The middle of `runs` (the mean of the two middle ones for an even
/// count); infinite for none.
fn median(runs: &mut [f64]) -> f64 {
    runs.sort_by(f64::total_cmp);
    match runs.len() {
        0 => f64::INFINITY,
        len if len % 2 == 1 => runs[len / 2],
        len => (runs[len / 2 - 1] + runs[len / 2]) / 2.0,
    }
}

/// The tile to keep among `tiles` whose median runs are `medians`: the
/// fastest, unless `default` is among them and the fastest is not at least
/// [`MARGIN`] faster (then `default`); the first on a tie.
fn choose(tiles: &[MatmulTile], medians: &[f64], default: MatmulTile) -> Tuned {
    let mut best = 0;
    for (k, &t) in medians.iter().enumerate() {
        if t < medians[best] {
            best = k;
        }
    }
    let default_at = tiles.iter().position(|&t| t == default);
    // No tile timed at all (every run's timestamps ran backwards): the
    // size rule's.
    let keep = match default_at {
        Some(d) if medians[best] > MARGIN * medians[d] || medians[best] == f64::INFINITY => d,
        _ => best,
    };
    Tuned {
        default,
        winner: tiles[keep],
        seconds: Some(medians[keep]),
        default_seconds: default_at.map(|d| medians[d]),
    }
}

/// Times each of `tiles` on `call`'s operands into a scratch output and
/// chooses as [`choose`] says, `default` being the size rule's tile.
fn tune(
    out: &GpuStorage,
    call: &MatmulCall,
    bound: &[Bound; 3],
    dims: [usize; 4],
    tiles: &[MatmulTile],
    default: MatmulTile,
) -> Result<Tuned> {
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
            storage: StorageRef::own(&scratch),
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
    // (The runs wait for their timed flush, whatever the threshold: see
    // `enter_own_work`.)
    let reps = |tile| -> Result<()> {
        for _ in 0..REPS {
            record_with(out, &trial, trial_bound.clone(), tile, dims)?;
        }
        Ok(())
    };
    // In rounds, every tile once a round: a GPU whose clock is still
    // ramping up after the idle wait (or is slowed by other work) weighs on
    // all tiles alike, not on the first one timed.
    let mut runs = vec![Vec::with_capacity(ROUNDS); tiles.len()];
    for round in 0..=ROUNDS {
        for (k, &tile) in tiles.iter().enumerate() {
            let seconds = if let Some(timer) = &timer {
                reps(tile)?;
                clock::gpu_seconds(timer, ctx, OP)?
            } else {
                let t0 = clock::now();
                reps(tile)?;
                ctx.flush()?;
                ctx.wait_idle(OP)?;
                Some(clock::seconds_since(t0))
            };
            ctx.tuner.count_run();
            // A run whose timestamps ran backwards counts for nothing.
            if let (true, Some(seconds)) = (round > 0, seconds) {
                ctx.tuner.add_time(seconds);
                runs[k].push(seconds / REPS as f64);
            }
        }
    }
    let medians: Vec<f64> = runs.iter_mut().map(|r| median(r)).collect();
    ctx.check_device_error(OP)?;
    Ok(choose(tiles, &medians, default))
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

    /// The GPU time of flushing what is pending (see `PassTimer`), unless
    /// its timestamps ran backwards.
    pub fn gpu_seconds(timer: &Timer, ctx: &GpuContext, op: &'static str) -> Result<Option<f64>> {
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

    pub fn gpu_seconds(timer: &Timer, _: &GpuContext, _: &'static str) -> Result<Option<f64>> {
        match *timer {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_is_the_middle_run() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 3.0, 2.0]), 2.5);
        assert_eq!(median(&mut [7.0]), 7.0);
        assert_eq!(median(&mut []), f64::INFINITY);
        // One wild run moves a median not at all, a minimum all the way.
        assert_eq!(median(&mut [5.0, 5.1, 0.1, 5.2, 4.9]), 5.0);
    }

    #[test]
    fn the_size_rules_tile_stays_unless_another_is_ten_percent_faster() {
        use MatmulTile::{Large, Medium, Small};
        let tiles = [Large, Medium, Small];
        // Medium 5% faster than the size rule's large: large stays.
        let t = choose(&tiles, &[1.0, 0.95, 2.0], Large);
        assert_eq!(
            (t.winner, t.seconds, t.default_seconds),
            (Large, Some(1.0), Some(1.0))
        );
        // The class's products then run the size rule, each its own tile.
        assert_eq!(t.runtime(), MatmulTile::Auto);
        // 20% faster: medium wins, and both times are kept.
        let t = choose(&tiles, &[1.0, 0.8, 2.0], Large);
        assert_eq!(
            (t.winner, t.seconds, t.default_seconds),
            (Medium, Some(0.8), Some(1.0))
        );
        assert_eq!(t.runtime(), Medium);
        // Exactly 10% faster is enough; a hair less is not.
        assert_eq!(choose(&tiles, &[1.0, 0.9, 2.0], Large).winner, Medium);
        assert_eq!(choose(&tiles, &[1.0, 0.9001, 2.0], Large).winner, Large);
        // The size rule's tile not timed (dropped): the fastest, first on a tie.
        let t = choose(&tiles, &[1.0, 0.99, 0.99], MatmulTile::FewRows);
        assert_eq!((t.winner, t.default_seconds), (Medium, None));
        // No tile timed (every run's timestamps ran backwards): the size
        // rule's stays; a tile never timed is never chosen.
        let never = f64::INFINITY;
        assert_eq!(choose(&tiles, &[never; 3], Medium).winner, Medium);
        assert_eq!(choose(&tiles, &[never, 2.0, never], Large).winner, Medium);
    }

    #[test]
    fn the_size_rule_is_what_auto_runs() {
        assert_eq!(size_rule(16, 16, 1), MatmulTile::PerOutput);
        assert_eq!(size_rule(8, 4096, 1), MatmulTile::FewRows);
        assert_eq!(size_rule(4096, 4096, 1), MatmulTile::Large);
        assert_eq!(size_rule(100, 100, 1), MatmulTile::Small);
    }
}
