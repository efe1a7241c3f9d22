//! The tiled product with a quantized weight, for many activation rows (a
//! prompt's): the matmul family's register-tiled kernel
//! (`matmul/tiling.rs`), whose `b` tile is the weight's transpose decoded
//! element by element (`element` of decode.rs) as it is copied into
//! workgroup memory. Each step of k decodes a `bk` x `bn` piece of the
//! weight once for the block's `bm` rows; no f32 copy of the weight is
//! ever written to memory. One dispatch per slice of k (the loop budget).
//! The cooperative-matrix kernel (`matmul/cooperative.rs`) takes the same
//! `b_at` as its decoded `b`, under `MatmulPrecision::Fast` (its values
//! rounded to f16).

use super::{QuantKernel, QuantKey};
use crate::backend::QuantCall;
use crate::backend::gpu::command::Bound;
use crate::backend::gpu::context::GpuContext;
use crate::backend::gpu::kernel::loop_budget::slices;
use crate::backend::gpu::kernel::params_block::params_block;
use crate::backend::gpu::matmul::tiling::{BSource, LARGE, Loads, MEDIUM, Tiling};
use crate::backend::gpu::matmul::{CoopB, CoopTiling};
use crate::backend::gpu::matmul::{K_SLICE, PUT_WGSL};
use crate::backend::gpu::record::record_family;
use crate::backend::gpu::storage::GpuStorage;
use crate::dtype::KernelType;
use crate::error::{Error, Result};
use smallvec::smallvec;

params_block! {
    /// `Params` of a tiled quant kernel: the names the tiled kernel reads
    /// (as matmul.wgsl's), then the weight's.
    pub(crate) struct TiledParams {
        /// Activation rows, weight rows, and the end of this dispatch's
        /// slice of k.
        m: u32,
        n: u32,
        k: u32,
        k_start: u32,
        /// Always 0 (one batch).
        batch_start: u32,
        /// The activations' row and column strides (k and 1).
        a_rs: i32,
        a_cs: i32,
        /// 1: consecutive threads load along the activations' rows.
        a_k_fast: u32,
        /// 0: consecutive threads decode along a weight row.
        b_n_fast: u32,
        /// The output's row and column strides.
        c_rs: i32,
        c_cs: i32,
        /// 1 when the output already holds the product over k < k_start.
        accumulate: u32,
        /// Where the activations and the output start (elements), and
        /// the weight's first row (bytes).
        x_offset: u32,
        c_offset: u32,
        w_offset: u32,
        row_bytes: u32,
        /// Always 0 (see `keep` in decode.rs).
        zero: u32,
        pad0: u32,
        pad1: u32,
        pad2: u32,
    }
}

/// The tile of a product of `m` activation rows by `n` weight rows: the
/// large one where its blocks keep a big GPU busy (as the matmul's
/// choice), else the medium one.
pub(super) fn tiling_for(m: usize, n: usize) -> Tiling {
    let blocks = m.div_ceil(LARGE.bm as usize) * n.div_ceil(LARGE.bn as usize);
    if blocks >= 128 { LARGE } else { MEDIUM }
}

/// The kernel of a product of `m` activation rows by `n` weight rows on
/// `ctx`: on cooperative matrices where the device has them and the
/// activations were f16 (`half`) or f32 products may round their operands
/// to f16 (`MatmulPrecision::Fast`), else on [`tiling_for`]'s tile.
pub(super) fn kernel_for(ctx: &GpuContext, m: usize, n: usize, half: bool) -> QuantKernel {
    match cooperative(ctx, half) {
        Some(tiling) => QuantKernel::Cooperative(tiling),
        None => QuantKernel::Tiled(tiling_for(m, n)),
    }
}

/// The cooperative kernel of `ctx`'s products of f16 activations (`half`)
/// or f32 ones, where it runs them: the activations read a row along k,
/// the weight decoded along its rows.
pub(super) fn cooperative(ctx: &GpuContext, half: bool) -> Option<CoopTiling> {
    let scalar = [Loads::Scalar; 2];
    let dtype = if half {
        KernelType::F16
    } else {
        KernelType::F32
    };
    let tiling = CoopTiling::on_device(&ctx.facts, dtype, scalar, [false; 2])?;
    Some(tiling.with_b(CoopB::Decoded))
}

/// Every tile a tiled quant kernel runs on (each probed natively).
#[cfg(any(test, not(target_arch = "wasm32")))]
pub(super) const TILES: [Tiling; 2] = [LARGE, MEDIUM];

/// The register tile's `main` of a tiled quant kernel, reading the weight
/// through `b_at`.
pub(super) fn registers_main(tiling: Tiling) -> String {
    tiling.wgsl_loading([Loads::Scalar; 2], BSource::Caller)
}

/// A tiled kernel's entry: its accessors, the store, the weight's
/// element loader and `main` (the register tile's or the cooperative
/// kernel's; when `sabotaged`, each dispatch's store adds one to every
/// output: wrong by the number of slices of k).
pub(super) fn entry(main: &str, sabotaged: bool) -> String {
    let put = match sabotaged {
        true => PUT_WGSL.replace("store_out(p, x);", "store_out(p, x + 1.0);"),
        false => PUT_WGSL.to_string(),
    };
    format!(
        "alias Acc = f32;
const ZERO: Acc = 0.0;

fn load_a(p: u32) -> f32 {{
    return x[p];
}}

fn load_out(p: u32) -> f32 {{
    return out[p];
}}

fn store_out(p: u32, v: f32) {{
    out[p] = v;
}}

// Where the activations, the weight (unused: b_at reads it) and the
// output start.
fn batch_bases(z: u32) -> array<i32, 3> {{
    return array<i32, 3>(i32(params.x_offset), 0, i32(params.c_offset));
}}

{put}
// Element (r, c) of the weight's transpose: element r of weight row c,
// decoded; zero outside this slice of k.
fn b_at(base: i32, r: u32, c: u32) -> f32 {{
    if (r < params.k && c < params.n) {{
        let block = r / (CHUNKS * 32u);
        let at = params.w_offset + c * params.row_bytes + block * BLOCK_BYTES;
        return element(at, r % (CHUNKS * 32u));
    }}
    return ZERO;
}}

{main}"
    )
}

/// Records `call` (more than a decoding kernel's rows) on `kernel` (`Tiled`
/// or `Cooperative`), whose output storage is `out`.
///
/// # Errors
/// `TooLarge` for more output tiles per axis than the device has
/// workgroups per dimension, or offsets past 32 bits; device errors.
pub(super) fn record(
    out: &GpuStorage,
    call: &QuantCall,
    kernel: QuantKernel,
    sabotaged: bool,
) -> Result<()> {
    let [bm, bn] = match kernel {
        QuantKernel::Tiled(tiling) => [tiling.bm, tiling.bn],
        QuantKernel::Cooperative(tiling) => [tiling.block(); 2],
        QuantKernel::Dequantize | QuantKernel::Product(_) => {
            return Err(Error::internal(
                "qmatmul",
                "a decoding kernel as a tiled one",
            ));
        }
    };
    const OP: &str = "qmatmul";
    let ctx = &out.ctx;
    let Some(x) = &call.x else {
        return Err(Error::internal(OP, "a tiled product without activations"));
    };
    let (w_bound, w) = Bound::view(OP, call.w.clone(), false)?;
    let (x_bound, x) = Bound::view(OP, x.clone(), false)?;
    let (out_bound, dest) = Bound::view(OP, call.out.clone(), true)?;
    let max = ctx.facts.max_workgroups_per_dim as usize;
    let grid = [call.n.div_ceil(bn as usize), call.m.div_ceil(bm as usize)];
    if grid.iter().any(|&t| t > max) {
        return Err(Error::TooLarge {
            op: OP,
            what: "output tiles per axis",
            requested: grid[0].max(grid[1]) as u64,
            limit: max as u64,
        });
    }
    let row_bytes = call.row_bytes();
    let within = |what, v: usize, limit: u64| match v as u64 <= limit {
        true => Ok(()),
        false => Err(Error::TooLarge {
            op: OP,
            what,
            requested: v as u64,
            limit,
        }),
    };
    // The last byte of the weight and the last element of each side must
    // be addressable as the kernel computes them (u32 bytes, i32 bases).
    let (word, base) = (u64::from(u32::MAX), i32::MAX as u64);
    within("weight bytes", w.layout.offset() + call.n * row_bytes, word)?;
    within(
        "activation elements",
        x.layout.offset() + call.m * call.k,
        base,
    )?;
    let out_end = dest.layout.offset() + call.m * call.out_stride;
    within("output elements", out_end, base)?;
    let block = TiledParams {
        m: call.m as u32,
        n: call.n as u32,
        a_rs: call.k as i32,
        a_cs: 1,
        a_k_fast: 1,
        b_n_fast: 0,
        c_rs: call.out_stride as i32,
        c_cs: 1,
        x_offset: x.layout.offset() as u32,
        c_offset: dest.layout.offset() as u32,
        w_offset: w.layout.offset() as u32,
        row_bytes: row_bytes as u32,
        ..bytemuck::Zeroable::zeroed()
    };
    let key = QuantKey {
        ty: call.ty,
        kernel,
        sabotaged,
    };
    for k_range in slices(call.k, K_SLICE) {
        let params = TiledParams {
            k: k_range.end as u32,
            k_start: k_range.start as u32,
            accumulate: u32::from(k_range.start > 0),
            ..block
        };
        let bindings = smallvec![w_bound.clone(), x_bound.clone(), out_bound.clone()];
        let groups = [grid[0] as u32, grid[1] as u32, 1];
        record_family(ctx, &key, params.bytes(), bindings, groups)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_large_tile_only_where_its_blocks_fill_a_big_gpu() {
        assert_eq!(tiling_for(2048, 4096), LARGE);
        assert_eq!(tiling_for(128, 16384), LARGE);
        assert_eq!(tiling_for(128, 4096), MEDIUM);
        assert_eq!(tiling_for(33, 7), MEDIUM);
        // A slice of k starts on a step of either tile.
        for t in TILES {
            assert_eq!(K_SLICE % t.bk as usize, 0, "{t:?}");
        }
    }
}
