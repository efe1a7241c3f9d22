//! GPU products with a quantized weight, and its dequantization:
//! `quant/quant.wgsl`, the weight's GGUF blocks bound as words and decoded
//! in registers (`decode.rs`). A product of up to [`MAX_ROWS`] activation
//! rows (a decoding step's) runs a workgroup per weight row, its threads
//! taking the row's 32-element chunks in turn, each chunk decoded once for
//! every activation row, summed in f32; a product of more rows (a
//! prompt's) runs the matmul's register-tiled kernel on the weight decoded
//! into its tiles (`tiled.rs`), or its cooperative-matrix kernel where the
//! device has them and f32 products may round to f16
//! (`MatmulPrecision::Fast`); a dequantization a thread per chunk. One
//! dispatch each (the tiled ones per slice of k).

mod decode;
mod probe;
mod tiled;

use crate::backend::QuantCall;
use crate::backend::gpu::command::Bound;
use crate::backend::gpu::context::GpuContext;
use crate::backend::gpu::kernel::grid::grid_of;
use crate::backend::gpu::kernel::loop_budget;
use crate::backend::gpu::kernel::params_block::params_block;
use crate::backend::gpu::kernel::prelude::fill_kernel;
use crate::backend::gpu::matmul::CoopTiling;
use crate::backend::gpu::matmul::self_check::{Verdict, verdict_with};
use crate::backend::gpu::matmul::tiling::Tiling;
use crate::backend::gpu::matmul_tile_choice::MatmulVariant;
use crate::backend::gpu::record::record_family;
use crate::backend::gpu::storage::GpuStorage;
use crate::dtype::KernelType;
use crate::error::{Error, Result};
use crate::quant::{GgmlType, PRODUCT_TYPES};
use smallvec::smallvec;
use std::sync::Arc;

const QUANT_WGSL: &str = shader!("quant/quant.wgsl");

/// Threads of a workgroup.
const WG: u32 = 64;

/// Activation rows one decoding dispatch takes at most; more run the tiled
/// kernel.
pub(crate) const MAX_ROWS: usize = 8;

/// Activation rows one tiled dispatch takes at most: its grid's rows of
/// tiles (64 rows or more each) within WebGPU's 65,535 workgroups.
pub(crate) const TILED_ROWS: usize = 65_535 * 64;

params_block! {
    /// `Params` of quant.wgsl.
    pub(crate) struct QuantParams {
        /// Weight rows, elements per row, activation rows.
        n: u32,
        k: u32,
        m: u32,
        row_bytes: u32,
        /// Where the weight's first row starts (bytes), the activations
        /// and the output (elements).
        w_offset: u32,
        x_offset: u32,
        out_offset: u32,
        /// Elements between output rows.
        out_stride: u32,
        /// Workgroups per grid row.
        row_width: u32,
        /// Always 0 (see `keep` in decode.rs).
        zero: u32,
        pad0: u32,
        pad1: u32,
    }
}

/// Which of a type's kernels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum QuantKernel {
    /// The weight decoded into memory.
    Dequantize,
    /// A product of up to this many activation rows (a power of two up
    /// to [`MAX_ROWS`]), a workgroup per weight row.
    Product(u32),
    /// A product of any number of rows on this tile (`tiled.rs`).
    Tiled(Tiling),
    /// A product of any number of rows on cooperative matrices
    /// (`tiled.rs`, `matmul/cooperative.rs`).
    Cooperative(CoopTiling),
}

/// Everything that selects a distinct quant pipeline.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct QuantKey {
    pub ty: GgmlType,
    pub kernel: QuantKernel,
    /// Every value off by one, on purpose (`GpuOptions::sabotage_quant`).
    pub sabotaged: bool,
}

/// The family's pipelines: profiles name the cooperative kernel's
/// dispatches `quant cooperative` (tensor cores), the others `quant`.
impl crate::backend::gpu::record::FamilyKey for QuantKey {
    fn label(&self) -> &'static str {
        match self.kernel {
            QuantKernel::Cooperative(_) => "webtensor quant cooperative",
            _ => "webtensor quant",
        }
    }

    fn entry(&self) -> &'static str {
        match self.kernel {
            QuantKernel::Dequantize => "main_dequantize",
            QuantKernel::Product(_) => "main_product",
            QuantKernel::Tiled(_) | QuantKernel::Cooperative(_) => "main",
        }
    }

    fn source(&self) -> Result<String> {
        quant_source(self)
    }
}

/// A product's entry point: a workgroup per weight row.
const PRODUCT: &str = "var<workgroup> partial: array<f32, PARTIALS>;

@compute @workgroup_size(64)
fn main_product(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_index) t: u32,
) {
    // Uniform across the workgroup: every thread reaches every barrier.
    let r = wid.x + wid.y * params.row_width;
    if (r >= params.n) {
        return;
    }
    let chunks = params.k / 32u;
    let row = params.w_offset + r * params.row_bytes;
    var acc: array<f32, M>;
    var v: array<f32, 32>;
    for (var c = t; c < chunks; c += WG) {
        chunk(row + (c / CHUNKS) * BLOCK_BYTES, c % CHUNKS, &v);
        for (var i = 0u; i < M; i++) {
            if (i < params.m) {
                let xo = params.x_offset + i * params.k + 32u * c;
                var s = 0.0;
                for (var l = 0u; l < 32u; l++) {
                    s += v[l] * x[xo + l];
                }
                acc[i] += s;
            }
        }
    }
    for (var i = 0u; i < M; i++) {
        partial[i * WG + t] = acc[i];
    }
    workgroupBarrier();
    for (var h = WG / 2u; h > 0u; h >>= 1u) {
        if (t < h) {
            for (var i = 0u; i < M; i++) {
                partial[i * WG + t] += partial[i * WG + t + h];
            }
        }
        workgroupBarrier();
    }
    if (t < M && t < params.m) {
        out[params.out_offset + t * params.out_stride + r] = partial[t * WG] + SABOTAGE;
    }
}";

/// A dequantization's entry point: a thread per chunk.
const DEQUANTIZE: &str = "@compute @workgroup_size(64)
fn main_dequantize(@builtin(global_invocation_id) gid: vec3<u32>) {
    let g = gid.x + gid.y * params.row_width * WG;
    let chunks = params.k / 32u;
    if (g >= params.n * chunks) {
        return;
    }
    let r = g / chunks;
    let c = g % chunks;
    var v: array<f32, 32>;
    chunk(params.w_offset + r * params.row_bytes + (c / CHUNKS) * BLOCK_BYTES, c % CHUNKS, &v);
    let o = params.out_offset + r * params.k + 32u * c;
    for (var l = 0u; l < 32u; l++) {
        out[o + l] = v[l] + SABOTAGE;
    }
}";

/// True when a GPU kernel decodes `t`.
pub(crate) fn has_kernel(t: GgmlType) -> bool {
    decode::block_and_chunk(t).is_some()
}

/// The WGSL source of the quant kernel for `key`.
///
/// # Errors
/// `Error::Internal` for a type without a kernel, or when the template's
/// slots and the generated parts disagree.
pub(crate) fn quant_source(key: &QuantKey) -> Result<String> {
    let (block, decode) = decode::block_and_chunk(key.ty)
        .ok_or_else(|| Error::internal("quant kernel", format!("no kernel for {}", key.ty)))?;
    let product_bindings = "@group(0) @binding(2) var<storage, read> x: array<f32>;\n\
                            @group(0) @binding(3) var<storage, read_write> out: array<f32>;";
    let sabotage = if key.sabotaged { "1.0" } else { "0.0" };
    let (bindings, entry, rows, params) = match key.kernel {
        QuantKernel::Dequantize => (
            "@group(0) @binding(2) var<storage, read_write> out: array<f32>;",
            DEQUANTIZE.replace("SABOTAGE", sabotage),
            1,
            QuantParams::wgsl(),
        ),
        QuantKernel::Product(rows) => (
            product_bindings,
            PRODUCT
                .replace("PARTIALS", &(WG * rows).to_string())
                .replace("SABOTAGE", sabotage),
            rows,
            QuantParams::wgsl(),
        ),
        QuantKernel::Tiled(tiling) => (
            product_bindings,
            tiled::entry(&tiled::registers_main(tiling), key.sabotaged),
            1,
            tiled::TiledParams::wgsl(),
        ),
        QuantKernel::Cooperative(tiling) => (
            product_bindings,
            tiled::entry(&tiling.wgsl(), key.sabotaged),
            1,
            tiled::TiledParams::wgsl(),
        ),
    };
    let cooperative = matches!(key.kernel, QuantKernel::Cooperative(_));
    let source = fill_kernel(
        "quant kernel",
        QUANT_WGSL,
        cooperative,
        &params,
        &[
            ("BINDINGS", bindings),
            ("BLOCK", &block),
            ("M", &rows.to_string()),
            ("DECODE", &decode),
            ("ENTRY", &entry),
        ],
    )?;
    // An `enable` comes before any declaration.
    Ok(match cooperative {
        true => format!("enable wgpu_cooperative_matrix;\n{source}"),
        false => source,
    })
}

/// Records `call` (whose output storage is `out`): a product of any
/// number of activation rows, or a dequantization; false (nothing
/// recorded) where the self-check dropped the type's kernels on this
/// device, for the op layer to decode the blocks on the host instead.
/// Natively, the first weight of a type placed on the device
/// ([`probe_quant`]) or else its first call probes its kernels
/// (`probe.rs`); inside a capture or a profile before that, and in a
/// browser, they run unprobed.
///
/// # Errors
/// `Error::Internal` for a type without a kernel or rows that are not
/// whole chunks of 32; `TooLarge` for a grid or offsets past the device's
/// limits; device errors and the probe's.
pub(crate) fn quant(out: &GpuStorage, call: &QuantCall) -> Result<bool> {
    if verdict(&out.ctx, call.ty)? == Verdict::Wrong {
        return Ok(false);
    }
    record(out, call, None)?;
    Ok(true)
}

/// Probes `ty`'s kernels on the device of `weight` (a quantized weight's
/// blocks) now, where its first product would: natively, outside a
/// capture or profile, once per type. A weight loaded before a capture
/// then has its kernels checked before the capture records them (inside
/// one, a kernel not yet probed runs unprobed).
///
/// # Errors
/// Device errors and the probe's.
pub(crate) fn probe_quant(weight: &GpuStorage, ty: GgmlType) -> Result<()> {
    match PRODUCT_TYPES.contains(&ty) {
        true => verdict(&weight.ctx, ty).map(drop),
        false => Ok(()),
    }
}

/// The self-check's verdict on `ty`'s kernels, probing them where they
/// are not yet probed and may be.
fn verdict(ctx: &Arc<GpuContext>, ty: GgmlType) -> Result<Verdict> {
    #[cfg(not(target_arch = "wasm32"))]
    let probe = || probe::answers_right(ctx, ty);
    #[cfg(target_arch = "wasm32")]
    let probe = || Ok(false);
    verdict_with(
        ctx,
        MatmulVariant::Quant(ty),
        KernelType::F32,
        || probe::fits(ctx, ty),
        probe,
    )
}

/// True when the decoding product's threads loop within the budget of
/// one invocation (`kernel/loop_budget.rs`) over rows of `k`: each takes
/// every `WG`-th chunk of 32, and a chunk costs its decoding (at most 64
/// iterations) and `m` sums of 32. Longer rows go to the tiled kernel,
/// which slices k over dispatches.
fn decoding_fits(m: usize, k: usize) -> bool {
    let per_chunk = 64 + 33 * m;
    k.div_ceil(32).div_ceil(WG as usize) * per_chunk <= loop_budget::MAX_ITERATIONS
}

/// Records `call` on the type's kernels, probed or not: more than
/// [`MAX_ROWS`] rows on a tiled kernel (`Tiled` or `Cooperative`), `tiled`
/// when given (the probe's) or the one [`tiled::kernel_for`] chooses.
///
/// # Errors
/// As [`quant`].
fn record(out: &GpuStorage, call: &QuantCall, tiled: Option<QuantKernel>) -> Result<()> {
    const OP: &str = "qmatmul";
    let ctx = &out.ctx;
    if !has_kernel(call.ty) || !call.k.is_multiple_of(32) {
        return Err(Error::internal(
            OP,
            format!(
                "{} with {} rows of {} reached the kernel",
                call.ty, call.m, call.k
            ),
        ));
    }
    if call.n == 0 || call.k == 0 || (call.x.is_some() && call.m == 0) {
        return Ok(());
    }
    let sabotaged = ctx.tuner.sabotaged_quant() == Some(call.ty);
    if call.x.is_some() && (call.m > MAX_ROWS || !decoding_fits(call.m, call.k)) {
        let kernel = tiled.unwrap_or_else(|| tiled::kernel_for(ctx, call.m, call.n, call.half));
        return tiled::record(out, call, kernel, sabotaged);
    }
    let (w_bound, w) = Bound::view(OP, call.w.clone(), false)?;
    let (out_bound, out_ref) = Bound::view(OP, call.out.clone(), true)?;
    let row_bytes = call.row_bytes();
    let big = |what: &'static str, v: usize| Error::TooLarge {
        op: OP,
        what,
        requested: v as u64,
        limit: u32::MAX as u64,
    };
    let u32_of = |what, v: usize| u32::try_from(v).map_err(|_| big(what, v));
    let (threads, kernel) = match &call.x {
        Some(_) => (
            call.n * WG as usize,
            QuantKernel::Product(call.m.next_power_of_two() as u32),
        ),
        None => (call.n * (call.k / 32), QuantKernel::Dequantize),
    };
    let [x, y] = grid_of(threads, WG, ctx.facts.max_workgroups_per_dim)?;
    let mut params = QuantParams {
        n: u32_of("weight rows", call.n)?,
        k: u32_of("elements per row", call.k)?,
        m: call.m as u32,
        row_bytes: u32_of("bytes per row", row_bytes)?,
        w_offset: u32_of("weight offset", w.layout.offset())?,
        x_offset: 0,
        out_offset: u32_of("output offset", out_ref.layout.offset())?,
        out_stride: u32_of("output stride", call.out_stride)?,
        row_width: x,
        ..bytemuck::Zeroable::zeroed()
    };
    // The last element each side reads must be addressable in 32 bits.
    u32_of("weight bytes", w.layout.offset() + call.n * row_bytes)?;
    let key = QuantKey {
        ty: call.ty,
        kernel,
        sabotaged,
    };
    let bindings = match &call.x {
        Some(x_ref) => {
            let (x_bound, x_ref) = Bound::view(OP, x_ref.clone(), false)?;
            params.x_offset = u32_of("activation offset", x_ref.layout.offset())?;
            smallvec![w_bound, x_bound, out_bound]
        }
        None => smallvec![w_bound, out_bound],
    };
    record_family(ctx, &key, params.bytes(), bindings, [x, y, 1])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::gpu::kernel::params_block::tests::assert_layout;
    use crate::backend::gpu::kernel::prelude::tests::validate;
    use crate::backend::gpu::matmul::CoopB;
    use crate::backend::gpu::matmul::tiling::Loads;
    use crate::quant::PRODUCT_TYPES;

    #[test]
    fn the_decoding_product_takes_rows_its_threads_loop_over_within_budget() {
        // 8 rows: 2,048 elements a thread's chunk stride, 328 iterations
        // a chunk; 174 chunks a thread fit, 175 do not.
        assert!(decoding_fits(8, 174 * 2048));
        assert!(!decoding_fits(8, 175 * 2048));
        // One row: 97 a chunk, 591 chunks.
        assert!(decoding_fits(1, 591 * 2048));
        assert!(!decoding_fits(1, 592 * 2048));
        // A real model's longest rows (Llama 3 70B's down projection).
        assert!(decoding_fits(MAX_ROWS, 28_672));
    }

    #[test]
    fn every_quant_kernel_is_valid_wgsl_and_matches_its_params() {
        let kernels = [1, 2, 4, 8]
            .map(QuantKernel::Product)
            .into_iter()
            .chain(tiled::TILES.map(QuantKernel::Tiled))
            .chain([QuantKernel::Dequantize])
            .chain([8, 16].into_iter().flat_map(|fragment| {
                [8, 32].into_iter().filter_map(move |lanes| {
                    let tiling = CoopTiling::new(fragment, lanes, [Loads::Scalar; 2], [false; 2]);
                    Some(QuantKernel::Cooperative(tiling?.with_b(CoopB::Decoded)))
                })
            }));
        for ty in PRODUCT_TYPES {
            for (i, kernel) in kernels.clone().enumerate() {
                let key = QuantKey {
                    ty,
                    kernel,
                    sabotaged: i % 2 == 1,
                };
                let source = quant_source(&key).unwrap();
                validate(&source, &format!("{key:?}"));
                match kernel {
                    QuantKernel::Tiled(_) | QuantKernel::Cooperative(_) => {
                        let (fields, size) = (tiled::TiledParams::FIELDS, tiled::TiledParams::SIZE);
                        assert_layout(&source, fields, size, "tiled quant");
                        // The sabotage reaches the store.
                        assert_eq!(
                            source.contains("store_out(p, x + 1.0);"),
                            key.sabotaged,
                            "{key:?}"
                        );
                    }
                    _ => assert_layout(&source, QuantParams::FIELDS, QuantParams::SIZE, "quant"),
                }
            }
        }
        assert!(
            quant_source(&QuantKey {
                ty: GgmlType::IQ2_XXS,
                kernel: QuantKernel::Product(1),
                sabotaged: false,
            })
            .is_err()
        );
    }
}
