//! The self-check's probe products (see `self_check.rs`): their operands,
//! how they are recorded with a given variant, and their answers read back
//! and compared with the exact ones. They wait on the queue: native only.

use super::{Gemv, record_with};
use crate::backend::Storage;
use crate::backend::gpu::command::Bound;
use crate::backend::gpu::context::GpuContext;
use crate::backend::gpu::matmul_tile_choice::{MatmulTile, MatmulVariant};
use crate::backend::gpu::storage::GpuStorage;
use crate::backend::{MatmulCall, StorageRef, TensorRef};
use crate::dtype::{Element, KernelType};
use crate::error::{Error, Result};
use crate::layout::Layout;
use half::{bf16, f16};
use std::sync::Arc;

const OP: &str = "matmul (self-check)";

/// True when the probes of `variant` over `dtype` fit the device's storage
/// bindings (a testing setting can cap them far below any real device's).
pub(super) fn fits(ctx: &GpuContext, variant: MatmulVariant, dtype: KernelType) -> bool {
    let bytes = |n: usize| (n * dtype.dtype().size_in_bytes()) as u64;
    cases(variant).iter().all(|c| {
        let largest = c.batches * (c.m * c.k).max(c.k * c.n).max(c.m * c.n);
        bytes(largest) <= ctx.facts.max_storage_binding
    })
}

/// True when `variant` computes every probe product over `dtype`
/// exactly.
///
/// # Errors
/// Failures of the uploads, the dispatches or the readback.
pub(super) fn answers_right(
    ctx: &Arc<GpuContext>,
    variant: MatmulVariant,
    dtype: KernelType,
) -> Result<bool> {
    let signed = dtype != KernelType::U32;
    for case in cases(variant) {
        let Case {
            m,
            n,
            k,
            batches,
            transposed,
        } = case;
        let a = operand([batches, m, k], transposed, |z, i, p| {
            a_value(z, i, p, signed)
        })?;
        let b = operand([batches, k, n], transposed, |z, p, j| {
            b_value(z, p, j, signed)
        })?;
        let out = record(ctx, variant, dtype, case, [(&a.0, a.1), (&b.0, b.1)])?;
        let Storage::Gpu(out) = &*out else {
            return Err(Error::internal(OP, "the probe's output is not on the GPU"));
        };
        let got = pollster::block_on(read(out, dtype))?;
        let want = (0..batches * m * n).map(|o| {
            let (z, i, j) = (o / (m * n), o / n % m, o % n);
            let dot: i64 = (0..k)
                .map(|p| a_value(z, i, p, signed) * b_value(z, p, j, signed))
                .sum();
            dot as f64
        });
        if !got.iter().copied().eq(want) {
            return Ok(false);
        }
    }
    Ok(true)
}

/// A storage of `dtype` holding `values` (small integers, exact in
/// every dtype the matmul takes).
///
/// # Errors
/// As [`GpuStorage::upload`]; `Error::Internal` for a dtype the GPU
/// matmul does not take.
pub(crate) fn upload(
    ctx: &Arc<GpuContext>,
    dtype: KernelType,
    values: &[i64],
) -> Result<GpuStorage> {
    fn typed<T: Element>(ctx: &Arc<GpuContext>, values: &[i64]) -> Result<GpuStorage> {
        let values: Vec<T> = values.iter().map(|&v| T::from_f64(v as f64)).collect();
        GpuStorage::upload(ctx, OP, &values)
    }
    match dtype {
        KernelType::F32 => typed::<f32>(ctx, values),
        KernelType::F16 => typed::<f16>(ctx, values),
        KernelType::BF16 => typed::<bf16>(ctx, values),
        KernelType::I32 => typed::<i32>(ctx, values),
        KernelType::U32 => typed::<u32>(ctx, values),
        other => Err(Error::internal(OP, format!("no GPU matmul of {other}"))),
    }
}

/// The values of `out` as f64.
pub(crate) async fn read(out: &GpuStorage, dtype: KernelType) -> Result<Vec<f64>> {
    fn decode<T: Element>(bytes: &[u8], n: usize) -> Vec<f64> {
        T::read_bytes(bytes, n).into_iter().map(T::to_f64).collect()
    }
    let n = out.len();
    // The application's index faults stay for its own next readback.
    let bytes = out.read_own_bytes().await?;
    Ok(match dtype {
        KernelType::F16 => decode::<f16>(&bytes, n),
        KernelType::BF16 => decode::<bf16>(&bytes, n),
        KernelType::I32 => decode::<i32>(&bytes, n),
        KernelType::U32 => decode::<u32>(&bytes, n),
        _ => decode::<f32>(&bytes, n),
    })
}

/// One probe product: `m` x `k` by `k` x `n` over `batches`, its operands
/// stored transposed (k along rows) when `transposed`.
#[derive(Debug, Clone, Copy)]
struct Case {
    m: usize,
    n: usize,
    k: usize,
    batches: usize,
    transposed: bool,
}

/// The probes of `variant`: extents past its tile (and past a multiple of
/// it), in both layouts.
fn cases(variant: MatmulVariant) -> Vec<Case> {
    let shapes: &[[usize; 2]] = match variant {
        MatmulVariant::Tile(MatmulTile::Large) => &[[131, 133]],
        MatmulVariant::Tile(MatmulTile::Medium | MatmulTile::Subgroup) => &[[67, 69]],
        // Past its 128 x 128 block (64 x 64 on 8 x 8 fragments), with odd
        // extents (element loads) and multiples of four (vec4 loads).
        MatmulVariant::Tile(MatmulTile::Cooperative) => &[[131, 133], [132, 136]],
        MatmulVariant::Tile(MatmulTile::Small) => &[[35, 37]],
        // Odd extents (element loads), and multiples of four (the vec4
        // loads: two of b a thread in the wide tile, a's down its column
        // in the tall one).
        MatmulVariant::Tile(MatmulTile::Tall) => &[[131, 69], [132, 136]],
        MatmulVariant::Tile(MatmulTile::Wide) => &[[69, 131], [132, 136]],
        MatmulVariant::Tile(MatmulTile::FewRows) => &[[5, 70]],
        MatmulVariant::Tile(MatmulTile::FewColumns) => &[[70, 5]],
        MatmulVariant::Tile(MatmulTile::PerOutput | MatmulTile::Auto) => &[[13, 11]],
        MatmulVariant::Gemv => &[[1, 70], [70, 1]],
        // The convolutions' and the quantized kernels have probes of their
        // own (conv/probe.rs, conv/probe_transposed.rs, quant/probe.rs,
        // attention/probe.rs).
        MatmulVariant::Conv(_)
        | MatmulVariant::ConvTransposed(_)
        | MatmulVariant::Quant(_)
        | MatmulVariant::Attention { .. } => &[],
    };
    shapes
        .iter()
        .flat_map(|&[m, n]| {
            [
                Case {
                    m,
                    n,
                    k: 40,
                    batches: 2,
                    transposed: false,
                },
                Case {
                    m,
                    n,
                    k: 37,
                    batches: 1,
                    transposed: true,
                },
            ]
        })
        .collect()
}

/// Element (batch `z`, row `i`, column `p`) of a probe's `a`, and
/// (`z`, `p`, `j`) of its `b`: small integers, negative too where the
/// dtype has them, with no symmetry between the operands.
fn a_value(z: usize, i: usize, p: usize, signed: bool) -> i64 {
    ((i * 7 + p * 3 + z) % 5) as i64 - if signed { 2 } else { 0 }
}

fn b_value(z: usize, p: usize, j: usize, signed: bool) -> i64 {
    ((p * 5 + j * 11 + 2 * z) % 7) as i64 - if signed { 3 } else { 0 }
}

/// A probe operand of extents `[batches, rows, cols]` with `value(z, r,
/// c)`, stored row-major, or, `transposed`, stored as `[batches, cols,
/// rows]` and viewed through swapped strides: (values in storage order,
/// the view's layout).
fn operand(
    [batches, rows, cols]: [usize; 3],
    transposed: bool,
    value: impl Fn(usize, usize, usize) -> i64,
) -> Result<(Vec<i64>, Layout)> {
    let mut values = Vec::with_capacity(batches * rows * cols);
    for z in 0..batches {
        match transposed {
            false => (0..rows).for_each(|r| values.extend((0..cols).map(|c| value(z, r, c)))),
            true => (0..cols).for_each(|c| values.extend((0..rows).map(|r| value(z, r, c)))),
        }
    }
    let layout = match transposed {
        false => Layout::contiguous(vec![batches, rows, cols]),
        true => Layout::contiguous(vec![batches, cols, rows]).transpose(1, 2)?,
    };
    Ok((values, layout))
}

/// Runs `variant` on `case` as a product of the device's: the same
/// launchers, on storages of the probe's own.
fn record(
    ctx: &Arc<GpuContext>,
    variant: MatmulVariant,
    dtype: KernelType,
    case: Case,
    operands: [(&[i64], Layout); 2],
) -> Result<Arc<Storage>> {
    let Case {
        m, n, k, batches, ..
    } = case;
    let [(a_values, a_layout), (b_values, b_layout)] = operands;
    let a = Arc::new(Storage::Gpu(upload(ctx, dtype, a_values)?));
    let b = Arc::new(Storage::Gpu(upload(ctx, dtype, b_values)?));
    let c = Arc::new(Storage::Gpu(GpuStorage::uninit(
        ctx,
        OP,
        dtype,
        batches * m * n,
    )?));
    let Storage::Gpu(out) = &*c else {
        return Err(Error::internal(OP, "the probe's output is not on the GPU"));
    };
    let refs = [(&a, a_layout), (&b, b_layout)].map(|(storage, layout)| TensorRef {
        storage: StorageRef::own(storage),
        layout,
        dtype,
    });
    let [a_ref, b_ref] = refs;
    let call = MatmulCall {
        a: a_ref,
        b: b_ref,
        out: TensorRef {
            storage: StorageRef::own(&c),
            layout: Layout::contiguous(vec![batches, m, n]),
            dtype,
        },
    };
    let bound = [
        Bound::new(OP, &call.a.storage, false)?,
        Bound::new(OP, &call.b.storage, false)?,
        Bound::new(OP, &call.out.storage, true)?,
    ];
    match variant {
        MatmulVariant::Tile(tile) => record_with(out, &call, bound, tile, [m, n, k, batches])?,
        MatmulVariant::Gemv => Gemv::of(&call, m, n).record(out, &call, bound, k, batches)?,
        MatmulVariant::Conv(_)
        | MatmulVariant::ConvTransposed(_)
        | MatmulVariant::Quant(_)
        | MatmulVariant::Attention { .. } => {
            return Err(Error::internal(
                OP,
                "the convolution, quant and attention kernels probe themselves",
            ));
        }
    }
    drop(call);
    Ok(c)
}
