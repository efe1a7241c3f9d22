//! The self-check's probes of a block type's kernels (see
//! `matmul/self_check.rs`): blocks whose scale is 1 or 1/2 by turns and
//! whose second one (a minimum's, where the type has it) is half that, so
//! that every value they decode to is a small multiple of 1/4 and a
//! kernel that swaps the two, drops one or reads another block's is
//! caught, starting at byte 3 of their buffer (a block's
//! f16 scale then straddles two words); products of [`PRODUCT_ROWS`]
//! integer activation rows (every decoding kernel's row count) and of
//! [`TILED`] (the tiled kernel, on each of its tiles, and the
//! cooperative one where products run on it), and a dequantization, each
//! compared with the host's decoders (bit for bit gguf-py's) for equality:
//! every sum is a multiple of 1/4 whose terms' magnitudes add up to less
//! than 2^22 (a test checks), exact in f32 in any order
//! (the cooperative kernel's against the decoded values rounded to f16,
//! as it rounds them). A row of blocks with subnormal scales (common in
//! k-quants: Q6_K's scale is a block's largest weight / 4096) is
//! dequantized too, and must decode exactly. They wait on the queue:
//! native only.

use crate::backend::gpu::context::GpuContext;
use crate::quant::GgmlType;

#[cfg(not(target_arch = "wasm32"))]
pub(super) use native::answers_right;

/// Weight rows of the decoding probes.
const ROWS: usize = 3;

/// Activation rows of the decoding kernels' product probes: one for each
/// kernel (`Product(m.next_power_of_two())`, m up to `MAX_ROWS`, 8).
const PRODUCT_ROWS: [usize; 4] = [1, 2, 3, 5];

/// Bytes stored before the probe's blocks.
const AT: usize = 3;

/// Blocks per row of a probe.
const BLOCKS: usize = 2;

/// Weight rows and activation rows of the tiled kernel's probes: past the
/// large tile's 128 columns and rows (the decoding probes take the first
/// [`ROWS`] weight rows).
#[cfg(not(target_arch = "wasm32"))]
const TILED: usize = 130;

/// Where `ty`'s blocks keep their f16 scales.
#[cfg(not(target_arch = "wasm32"))]
fn scale_bytes(ty: GgmlType) -> &'static [usize] {
    match ty {
        GgmlType::Q4_0 | GgmlType::Q5_0 | GgmlType::Q8_0 | GgmlType::IQ4_NL => &[0],
        GgmlType::Q4_1 | GgmlType::Q5_1 | GgmlType::Q4_K | GgmlType::Q5_K => &[0, 2],
        GgmlType::Q2_K => &[80, 82],
        GgmlType::Q3_K => &[108],
        _ => &[208],
    }
}

/// The probe's weight: [`AT`] bytes, then [`TILED`] rows of `BLOCKS`
/// blocks of `ty`, their quants a fixed pattern, block b's scales `scales(b)`.
#[cfg(not(target_arch = "wasm32"))]
fn blocks_of(ty: GgmlType, rows: usize, scales: impl Fn(usize) -> [u16; 2]) -> Vec<u8> {
    let width = ty.block_bytes() as usize;
    let mut bytes: Vec<u8> = (0..AT + rows * BLOCKS * width)
        .map(|i| ((i * 37 + 11) % 256) as u8)
        .collect();
    for (b, block) in bytes[AT..].chunks_exact_mut(width).enumerate() {
        for (&at, scale) in scale_bytes(ty).iter().zip(scales(b)) {
            block[at..at + 2].copy_from_slice(&scale.to_le_bytes());
        }
    }
    bytes
}

/// The products' and the dequantization's weight: [`TILED`] rows, block
/// b's scales 1 and 1/2 (b even) or 1/2 and 1/4.
#[cfg(not(target_arch = "wasm32"))]
fn blocks(ty: GgmlType) -> Vec<u8> {
    blocks_of(ty, TILED, |b| {
        let d = [1.0, 0.5][b % 2];
        [d, d / 2.0].map(|v| half::f16::from_f32(v).to_bits())
    })
}

/// A row whose blocks' scales are subnormal f16 (240 and 3 2^-24, and
/// neighbours), dequantized alone.
#[cfg(not(target_arch = "wasm32"))]
fn subnormal_blocks(ty: GgmlType) -> Vec<u8> {
    blocks_of(ty, 1, |b| [0x00f0 + b as u16, 0x0003 + b as u16])
}

/// True when the decoding probes' operands fit the device's storage
/// bindings (the tiled ones' larger operands must fit too for them to run,
/// [`tiled_fits`]).
pub(super) fn fits(ctx: &GpuContext, ty: GgmlType) -> bool {
    fit(ctx, ty, ROWS)
}

/// True when a probe's blocks of `rows` weight rows, and its activations
/// and outputs of as many rows (of the most [`PRODUCT_ROWS`] at the least),
/// fit the device's storage bindings.
fn fit(ctx: &GpuContext, ty: GgmlType, rows: usize) -> bool {
    let k = BLOCKS * ty.block_size() as usize;
    let row_bytes = (BLOCKS * ty.block_bytes() as usize) as u64;
    let activations = rows.max(PRODUCT_ROWS[PRODUCT_ROWS.len() - 1]);
    let largest = (AT as u64 + rows as u64 * row_bytes).max(4 * (activations * k.max(rows)) as u64);
    largest <= ctx.facts.max_storage_binding
}

/// True when the tiled probes' activations and outputs fit too (only
/// devices opened with test-sized bindings lack the room; their tiled
/// products run unprobed).
#[cfg(not(target_arch = "wasm32"))]
fn tiled_fits(ctx: &GpuContext, ty: GgmlType) -> bool {
    fit(ctx, ty, TILED)
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;
    use crate::quant::PRODUCT_TYPES;

    #[test]
    fn the_probes_sums_are_exact_in_f32_and_its_scales_differ() {
        for ty in PRODUCT_TYPES {
            let k = BLOCKS * ty.block_size() as usize;
            let w = crate::quant::dequantize("probe", ty, &blocks(ty)[AT..]).unwrap();
            // Every value a multiple of 1/4; the activations' largest
            // magnitude is 2, so each sum's terms add up below 2^22 (any
            // order of adding is exact: every partial sum is a multiple of
            // 1/4 below 2^22, 24 bits).
            assert!(w.iter().all(|v| (v * 4.0).fract() == 0.0), "{ty}");
            let largest = w
                .chunks_exact(k)
                .map(|row| row.iter().map(|v| 2.0 * f64::from(v.abs())).sum::<f64>())
                .fold(0.0, f64::max);
            assert!(largest < (1 << 22) as f64, "{ty}: {largest}");
            // A block's values are not its neighbour's scaled by 1: a
            // kernel reading another block's scale answers differently.
            let tiny = crate::quant::dequantize("probe", ty, &subnormal_blocks(ty)[AT..]).unwrap();
            assert!(tiny.iter().any(|&v| v != 0.0), "{ty}");
            let smallest_normal = half::f16::MIN_POSITIVE.to_f32();
            let scale = f32::from(half::f16::from_bits(0x00f0));
            assert!(scale > 0.0 && scale < smallest_normal, "{ty}");
        }
    }
}

#[cfg(not(target_arch = "wasm32"))]
mod native {
    use super::{AT, BLOCKS, PRODUCT_ROWS, ROWS, TILED, blocks, subnormal_blocks, tiled_fits};
    use crate::backend::gpu::context::GpuContext;
    use crate::backend::gpu::quant::{QuantKernel, record, tiled};
    use crate::backend::gpu::storage::GpuStorage;
    use crate::backend::{QuantCall, Storage, StorageRef, TensorRef};
    use crate::dtype::KernelType;
    use crate::error::{Error, Result};
    use crate::layout::Layout;
    use crate::quant::GgmlType;
    use crate::shape::Shape;
    use std::sync::Arc;

    const OP: &str = "qmatmul (self-check)";

    /// True when `ty`'s product and dequantization kernels give the host's
    /// answers exactly.
    ///
    /// # Errors
    /// Failures of the uploads, the dispatches or the readback.
    pub(crate) fn answers_right(ctx: &Arc<GpuContext>, ty: GgmlType) -> Result<bool> {
        let (block, width) = (ty.block_size() as usize, ty.block_bytes() as usize);
        let k = BLOCKS * block;
        let bytes = blocks(ty);
        // The host's values of the blocks.
        let want_w = crate::quant::dequantize(OP, ty, &bytes[AT..])?;
        let upload = |bytes: &[u8]| -> Result<Arc<Storage>> {
            Ok(Arc::new(Storage::Gpu(GpuStorage::upload(ctx, OP, bytes)?)))
        };
        let w = upload(&bytes)?;
        // The first `rows` rows from byte AT: a byte offset that is not a
        // word's.
        let w_ref = |rows: usize| rows_of(&w, rows, BLOCKS * width);
        let dequantized = run(ctx, ty, &w_ref(ROWS), None, ROWS * k, None)?;
        if dequantized[..] != want_w[..ROWS * k] {
            return Ok(false);
        }
        let tiny = subnormal_blocks(ty);
        let want_tiny = crate::quant::dequantize(OP, ty, &tiny[AT..])?;
        let got_tiny = run(
            ctx,
            ty,
            &rows_of(&upload(&tiny)?, 1, BLOCKS * width),
            None,
            k,
            None,
        )?;
        if got_tiny != want_tiny {
            return Ok(false);
        }
        // Each tile, and the cooperative kernel where the device has one
        // (f16 products run on it, and f32 ones under Fast).
        let mut tiled: Vec<QuantKernel> = Vec::new();
        if tiled_fits(ctx, ty) {
            tiled.extend(tiled::TILES.map(QuantKernel::Tiled));
            tiled.extend(tiled::cooperative(ctx, true).map(QuantKernel::Cooperative));
        }
        let products = PRODUCT_ROWS
            .into_iter()
            .map(|m| (m, ROWS, None))
            .chain(tiled.into_iter().map(|t| (TILED, TILED, Some(t))));
        // The cooperative kernel rounds the decoded values to f16 (the
        // activations, small integers, are exact): its answers are those of
        // the rounded values, sums exact in f32 all the same.
        let rounded: Vec<f32> = want_w
            .iter()
            .map(|&v| half::f16::from_f32(v).to_f32())
            .collect();
        for (m, n, tiling) in products {
            let x: Vec<f32> = (0..m * k).map(|i| ((i * 7 + 3) % 5) as f32 - 2.0).collect();
            let got = run(ctx, ty, &w_ref(n), Some(&x), m * n, tiling)?;
            let values = match tiling {
                Some(QuantKernel::Cooperative(_)) => &rounded,
                _ => &want_w,
            };
            let want = (0..m * n).map(|o| {
                let (i, r) = (o / n, o % n);
                let dot: f64 = (0..k)
                    .map(|c| f64::from(x[i * k + c]) * f64::from(values[r * k + c]))
                    .sum();
                dot as f32
            });
            if !got.iter().copied().eq(want) {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// The first `rows` rows of `row_bytes` of the weight `w` from byte
    /// [`AT`]: a byte offset that is not a word's.
    fn rows_of(w: &Arc<Storage>, rows: usize, row_bytes: usize) -> TensorRef<'_> {
        TensorRef {
            storage: StorageRef::own(w),
            layout: Layout::from_parts(
                Shape::from([rows, row_bytes]),
                [row_bytes as isize, 1].as_slice().into(),
                AT,
            ),
            dtype: KernelType::U8,
        }
    }

    /// One probe call: `x`'s rows (`[m, k]`) by the weight (on the tiled
    /// kernel `tiling` when given), or the weight decoded, into a fresh f32
    /// storage of `len` values, read back.
    fn run(
        ctx: &Arc<GpuContext>,
        ty: GgmlType,
        w: &TensorRef,
        x: Option<&[f32]>,
        len: usize,
        tiling: Option<QuantKernel>,
    ) -> Result<Vec<f32>> {
        let k = BLOCKS * ty.block_size() as usize;
        let n = w.layout.dims()[0];
        let x = x
            .map(|v| GpuStorage::upload(ctx, OP, v).map(|s| Arc::new(Storage::Gpu(s))))
            .transpose()?;
        let m = x.as_ref().map_or(0, |_| len / n);
        let out = Arc::new(Storage::Gpu(GpuStorage::uninit(
            ctx,
            OP,
            KernelType::F32,
            len,
        )?));
        let Storage::Gpu(out_storage) = &*out else {
            return Err(Error::internal(OP, "the probe's output is not on the GPU"));
        };
        let f32_ref = |storage, dims: Vec<usize>| TensorRef {
            storage: StorageRef::own(storage),
            layout: Layout::contiguous(dims),
            dtype: KernelType::F32,
        };
        let call = QuantCall {
            ty,
            w: w.clone(),
            x: x.as_ref().map(|s| f32_ref(s, vec![m, k])),
            out: f32_ref(&out, if m > 0 { vec![m, n] } else { vec![n, k] }),
            n,
            k,
            m,
            out_stride: n,
            half: false,
        };
        record(out_storage, &call, tiling)?;
        let bytes = pollster::block_on(out_storage.read_own_bytes())?;
        Ok(bytes
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect())
    }
}
