//! The matmul self-check: before a kernel variant (a tile's kernel or the
//! matrix-vector kernel) computes its first product of a dtype on a
//! device, it computes small probe products whose answers are known
//! exactly, and a variant that answers wrong is dropped for that device
//! (`DeviceInfo::dropped_kernels`, `DeviceStats::kernels_dropped`): its
//! products go to another kernel. A driver bug or a kernel that is wrong
//! on one adapter becomes a slower product, never a wrong one.
//!
//! The probes are chosen so that a wrong kernel cannot pass by symmetry:
//! extents that are not multiples of the variant's tile and differ from
//! each other, k not a multiple of the tile's k step in one probe, operand
//! values with a · b ≠ b · a, two batches, and both operand layouts (rows
//! along k and, through transposed views, columns along k), which the
//! kernels load differently. The values are small integers, so every dtype
//! (f16 included) holds the products exactly and the check is equality.
//!
//! A probe submits and waits for its answer, so it runs natively and
//! outside captures and profiles. Inside those, a variant not yet probed
//! gives way to the per-output kernel (the reference: one thread per
//! output, the simplest loop); in a browser, where the queue cannot be
//! waited on, and on a device whose bindings are capped below the probes'
//! operands (a testing setting), kernels run unprobed.

use super::subgroup;
use super::tiling::{self, SKINNY, Tiling};
use crate::backend::gpu::context::GpuContext;
use crate::backend::gpu::matmul_tile_choice::{MatmulTile, MatmulVariant};
use crate::backend::gpu::storage::GpuStorage;
use crate::dtype::KernelType;
use crate::error::{Error, Result};
use std::sync::Arc;

/// What the self-check knows of a variant on this device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Its probe products were right.
    Right,
    /// One was wrong: the variant is not used on this device.
    Wrong,
    /// Not probed, and it cannot be now: a capture or a profile is open.
    #[cfg_attr(target_arch = "wasm32", allow(dead_code))]
    NotNow,
    /// Never probed on this device: a browser's (whose queue cannot be
    /// waited on), wgpu's noop backend (which runs no kernel), or one whose
    /// storage bindings are capped below the probes' operands
    /// (`GpuOptions::max_binding_bytes`, a testing setting). Its kernels
    /// run as chosen.
    Unchecked,
}

/// The kernel variant that `tile` runs for an `m` x `n` output over
/// `batches` of `dtype` on the device of `out` (`MatmulTile::Auto` picks by
/// size, the subgroup and cooperative tiles run the medium one where the
/// device or the dtype cannot run them).
pub(super) fn variant_of(
    out: &GpuStorage,
    tile: MatmulTile,
    [m, n, _, batches]: [usize; 4],
    dtype: KernelType,
) -> MatmulVariant {
    MatmulVariant::Tile(match tile {
        MatmulTile::PerOutput => MatmulTile::PerOutput,
        MatmulTile::Auto if m <= SKINNY && n <= SKINNY => MatmulTile::PerOutput,
        MatmulTile::Subgroup if out.ctx.facts.subgroups_of(subgroup::TEAM) => MatmulTile::Subgroup,
        MatmulTile::Cooperative if out.ctx.facts.cooperative_for(dtype) => MatmulTile::Cooperative,
        tile => tiling::tile_of(Tiling::choose(tile, m, n, batches)),
    })
}

/// The tile to record a product with in place of `tile` (over extents
/// `dims` and `dtype`): the fixed tile of the kernel `tile` runs when that
/// kernel is right on this device (or cannot be probed now, in a browser),
/// else the tile by size where that one is right, else the per-output
/// reference kernel (also inside a capture or profile before the probes).
///
/// # Errors
/// `Error::Gpu` naming `matmul` when the reference kernel is wrong too (no
/// kernel of this device computes the dtype's products right); failures of
/// the probes themselves.
pub(super) fn checked_tile(
    out: &GpuStorage,
    tile: MatmulTile,
    dims: [usize; 4],
    dtype: KernelType,
) -> Result<MatmulTile> {
    let variant = variant_of(out, tile, dims, dtype);
    let MatmulVariant::Tile(fixed) = variant else {
        return Err(Error::internal("matmul", "a tile ran the gemv kernel"));
    };
    match verdict(&out.ctx, variant, dtype)? {
        Verdict::Right | Verdict::Unchecked => return Ok(fixed),
        Verdict::NotNow | Verdict::Wrong => {}
    }
    // The tile by size where it is another and right (a dropped 128 x 128
    // or cooperative kernel gives way to a tile, not to one thread per
    // output).
    let by_size = variant_of(out, MatmulTile::Auto, dims, dtype);
    if let MatmulVariant::Tile(tile) = by_size
        && by_size != variant
        && matches!(
            verdict(&out.ctx, by_size, dtype)?,
            Verdict::Right | Verdict::Unchecked
        )
    {
        return Ok(tile);
    }
    let reference = MatmulVariant::Tile(MatmulTile::PerOutput);
    match verdict(&out.ctx, reference, dtype)? {
        Verdict::Right | Verdict::NotNow | Verdict::Unchecked => Ok(MatmulTile::PerOutput),
        Verdict::Wrong => Err(Error::gpu(
            "matmul",
            format!(
                "no matmul kernel computes {dtype} products right on this device \
                 (dropped: {})",
                out.ctx.tuner.checked().1.join(", ")
            ),
        )),
    }
}

/// The verdict on `variant` over `dtype`: known, or probed now.
///
/// # Errors
/// Failures of the probe's uploads, dispatches or readback.
pub(super) fn verdict(
    ctx: &Arc<GpuContext>,
    variant: MatmulVariant,
    dtype: KernelType,
) -> Result<Verdict> {
    #[cfg(not(target_arch = "wasm32"))]
    return verdict_with(
        ctx,
        variant,
        dtype,
        || super::probe::fits(ctx, variant, dtype),
        || super::probe::answers_right(ctx, variant, dtype),
    );
    // A browser probes nothing (its queue cannot be waited on).
    #[cfg(target_arch = "wasm32")]
    verdict_with(ctx, variant, dtype, || false, || Ok(false))
}

/// The verdict on `variant` over `dtype`: known, or found now by `probe`
/// (true when its answers are right) where `fits` says the probe's
/// operands fit this device's bindings. Kernels of other families built on
/// the matmul's tiles (the convolution's) are checked through it too.
///
/// # Errors
/// Failures of the probe, naming the op that probes `variant`.
#[cfg_attr(target_arch = "wasm32", allow(unused_variables))]
pub(crate) fn verdict_with(
    ctx: &Arc<GpuContext>,
    variant: MatmulVariant,
    dtype: KernelType,
    fits: impl FnOnce() -> bool,
    probe: impl FnOnce() -> Result<bool>,
) -> Result<Verdict> {
    let as_verdict = |right| match right {
        true => Verdict::Right,
        false => Verdict::Wrong,
    };
    if let Some(right) = ctx.tuner.verdict(variant, dtype) {
        return Ok(as_verdict(right));
    }
    #[cfg(target_arch = "wasm32")]
    return Ok(Verdict::Unchecked);
    #[cfg(not(target_arch = "wasm32"))]
    {
        // wgpu's noop backend runs no kernel (it measures the host's
        // cost): nothing there could answer a probe.
        if ctx.facts.backend == "Noop" || !fits() {
            return Ok(Verdict::Unchecked);
        }
        // A capture another thread begins meanwhile waits for the probe.
        let Some(_own) = crate::backend::gpu::own_work::OwnWork::enter(ctx) else {
            return Ok(Verdict::NotNow);
        };
        let right = probe().map_err(|e| e.named(variant.op()))?;
        ctx.tuner.set_verdict(variant, dtype, right);
        Ok(as_verdict(right))
    }
}
