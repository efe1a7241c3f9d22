//! The cooperative attention kernel's self-check (as the matmul's:
//! `matmul/self_check.rs`): before a shape of the kernel (fragments across
//! a head and a value row) computes its first attention of a dtype and a
//! mask on a device, it computes a probe against an f64 reference, and a
//! kernel that answers wrong is dropped for the device (its attentions run
//! on the flash kernel instead). A driver's bug in cooperative matrices
//! becomes a slower attention, never a wrong one.
//!
//! The probe exercises what the kernel's loops and guards meet: head and
//! value rows ending inside a fragment, the value rows in two workgroups'
//! parts; two query heads a key head, their
//! rows running on across a workgroup's; query rows past one workgroup and
//! a last one partly filled; keys past a tile and a last tile partly
//! filled; two batches; causal without a mask (fewer queries than keys),
//! a boolean mask with a row that attends nothing, a float mask. Its
//! operands are small integers (exact in f16), and its scores stay within
//! a few units, so that every weight counts; it allows the weights' f16
//! rounding, far below what a misplaced fragment, row or key gives.

use super::cooperative::CoopFlash;
use super::{MaskKind, record};
use crate::backend::gpu::context::GpuContext;
use crate::backend::gpu::matmul::probe::read;
use crate::backend::gpu::storage::GpuStorage;
use crate::backend::{AttentionCall, Storage, StorageRef, TensorRef};
use crate::dtype::{Element, KernelType};
use crate::error::{Error, Result};
use crate::layout::Layout;
use half::f16;
use std::sync::Arc;

const OP: &str = "sdpa (self-check)";

/// Batches, query heads a key head (the key heads are one a batch).
const BATCHES: usize = 2;
const GROUPS: usize = 2;

/// The largest difference from the reference the probe allows: outputs
/// are within 3, and each weight's f16 rounding moves them by about
/// 3 · 2⁻¹¹.
const TOLERANCE: f64 = 1.0 / 64.0;

/// The probe's extents for a shape of the kernel.
#[derive(Debug, Clone, Copy)]
pub(super) struct Probe {
    /// Queries a head (past four fragments: a workgroup's rows and more
    /// in each of the two heads), keys (two tiles and part of a third).
    length: usize,
    source: usize,
    /// Ending half-way into the last fragment: of the head, and of the
    /// second of two workgroups' parts of a value row.
    head: usize,
    value: usize,
}

impl Probe {
    pub fn of(shape: CoopFlash) -> Probe {
        let f = shape.fragment as usize;
        Probe {
            length: 4 * f + 3,
            source: 5 * f + 3,
            head: shape.head_frags as usize * f - f / 2 + 1,
            value: 2 * shape.value_frags as usize * f - f / 2 + 3,
        }
    }

    /// Dimensions of q, k, v, the output and the mask.
    fn dims(self) -> [[usize; 4]; 5] {
        let Probe {
            length,
            source,
            head,
            value,
        } = self;
        [
            [BATCHES, GROUPS, length, head],
            [BATCHES, 1, source, head],
            [BATCHES, 1, source, value],
            [BATCHES, GROUPS, length, value],
            [BATCHES, GROUPS, length, source],
        ]
    }

    /// True when the probe's operands fit one storage binding.
    pub fn fits(self, ctx: &GpuContext, dtype: KernelType) -> bool {
        let largest = self.dims().map(|d| d.iter().product::<usize>());
        let largest = largest.into_iter().max().unwrap_or(0);
        (largest * dtype.dtype().size_in_bytes()) as u64 <= ctx.facts.max_storage_binding
    }

    fn q(b: usize, h: usize, i: usize, d: usize) -> i64 {
        ((b * 3 + h * 5 + i * 7 + d * 11) % 5) as i64 - 2
    }

    fn k(b: usize, j: usize, d: usize) -> i64 {
        ((b * 5 + j * 3 + d * 7 + (j * d) % 3) % 5) as i64 - 2
    }

    fn v(b: usize, j: usize, e: usize) -> i64 {
        ((b + j * 5 + e * 3) % 7) as i64 - 3
    }

    /// Whether query `i` attends key `j` under `mask` (and causal where
    /// there is none), and what its score adds.
    fn allowed(self, mask: MaskKind, i: usize, j: usize) -> (bool, f64) {
        match mask {
            MaskKind::None => (j <= i, 0.0),
            MaskKind::Bool => (i != 5 && !(i * 3 + j * 5).is_multiple_of(7), 0.0),
            MaskKind::Float => (true, ((i + 2 * j) % 5) as f64 - 2.0),
        }
    }

    /// Scales the scores to a few units.
    fn scale(self) -> f64 {
        0.5 / (self.head as f64).sqrt()
    }

    /// The reference output, row-major `[batch, head, query, value]`.
    fn expected(self, mask: MaskKind) -> Vec<f64> {
        let mut out = Vec::with_capacity(BATCHES * GROUPS * self.length * self.value);
        for b in 0..BATCHES {
            for h in 0..GROUPS {
                for i in 0..self.length {
                    let mut weights = Vec::with_capacity(self.source);
                    for j in 0..self.source {
                        let (attends, bias) = self.allowed(mask, i, j);
                        let dot: i64 = (0..self.head)
                            .map(|d| Self::q(b, h, i, d) * Self::k(b, j, d))
                            .sum();
                        let score = dot as f64 * f64::from(self.scale() as f32) + bias;
                        weights.push(attends.then_some(score));
                    }
                    let top = weights.iter().flatten().fold(f64::MIN, |a, &s| a.max(s));
                    let w: Vec<f64> = weights
                        .iter()
                        .map(|s| s.map_or(0.0, |s| (s - top).exp()))
                        .collect();
                    let total: f64 = w.iter().sum();
                    for e in 0..self.value {
                        let sum: f64 = (0..self.source)
                            .map(|j| w[j] * Self::v(b, j, e) as f64)
                            .sum();
                        out.push(if total > 0.0 { sum / total } else { 0.0 });
                    }
                }
            }
        }
        out
    }

    /// True when `shape` computes the probe within [`TOLERANCE`].
    ///
    /// # Errors
    /// Failures of the uploads, the dispatch or the readback.
    pub fn answers_right(
        self,
        ctx: &Arc<GpuContext>,
        shape: CoopFlash,
        dtype: KernelType,
        mask: MaskKind,
    ) -> Result<bool> {
        let [qd, kd, vd, od, md] = self.dims();
        let filled = |dims: [usize; 4], value: &dyn Fn([usize; 4]) -> i64| {
            let mut values = Vec::with_capacity(dims.iter().product());
            for a in 0..dims[0] {
                for b in 0..dims[1] {
                    for c in 0..dims[2] {
                        for d in 0..dims[3] {
                            values.push(value([a, b, c, d]) as f64);
                        }
                    }
                }
            }
            upload(ctx, dtype, &values)
        };
        let q = filled(qd, &|[b, h, i, d]| Self::q(b, h, i, d))?;
        let k = filled(kd, &|[b, _, j, d]| Self::k(b, j, d))?;
        let v = filled(vd, &|[b, _, j, e]| Self::v(b, j, e))?;
        let out = Arc::new(Storage::Gpu(GpuStorage::uninit(
            ctx,
            OP,
            dtype,
            od.iter().product(),
        )?));
        // The mask, `[length, source]` broadcast over batches and heads.
        let (rows, cols) = (md[2], md[3]);
        let cells = (0..rows).flat_map(|i| (0..cols).map(move |j| (i, j)));
        let mask_storage = match mask {
            MaskKind::None => None,
            MaskKind::Bool => {
                let keep: Vec<bool> = cells.map(|(i, j)| self.allowed(mask, i, j).0).collect();
                Some(Arc::new(Storage::Gpu(GpuStorage::upload(ctx, OP, &keep)?)))
            }
            MaskKind::Float => {
                let bias: Vec<f64> = cells.map(|(i, j)| self.allowed(mask, i, j).1).collect();
                Some(upload(ctx, dtype, &bias)?)
            }
        };
        let tensor = |storage, dims: [usize; 4], dtype| TensorRef {
            storage: StorageRef::own(storage),
            layout: Layout::contiguous(dims.to_vec()),
            dtype,
        };
        let call = AttentionCall {
            q: tensor(&q, qd, dtype),
            k: tensor(&k, kd, dtype),
            v: tensor(&v, vd, dtype),
            mask: mask_storage.as_ref().map(|m| {
                let dtype = match mask {
                    MaskKind::Bool => KernelType::Bool,
                    _ => dtype,
                };
                let strides = [0, 0, cols as isize, 1].into_iter().collect();
                TensorRef {
                    storage: StorageRef::own(m),
                    layout: Layout::from_parts(md.to_vec().into(), strides, 0),
                    dtype,
                }
            }),
            out: tensor(&out, od, dtype),
            groups: GROUPS,
            causal: mask == MaskKind::None,
            scale: self.scale() as f32,
        };
        let Storage::Gpu(o) = &*out else {
            return Err(Error::internal(OP, "the probe's output is not on the GPU"));
        };
        if !record(o, &call, mask, Some(shape))? {
            return Err(Error::internal(OP, "the cooperative kernel took no probe"));
        }
        drop(call);
        let got = pollster::block_on(read(o, dtype))?;
        let want = self.expected(mask);
        Ok(got.len() == want.len()
            && got
                .iter()
                .zip(&want)
                .all(|(g, w)| (g - w).abs() <= TOLERANCE))
    }
}

/// `values` on the device as `dtype` (f16, or f32).
///
/// # Errors
/// Failures of the upload.
fn upload(ctx: &Arc<GpuContext>, dtype: KernelType, values: &[f64]) -> Result<Arc<Storage>> {
    fn typed<T: Element>(ctx: &Arc<GpuContext>, values: &[f64]) -> Result<GpuStorage> {
        let values: Vec<T> = values.iter().map(|&v| T::from_f64(v)).collect();
        GpuStorage::upload(ctx, OP, &values)
    }
    let storage = match dtype {
        KernelType::F16 => typed::<f16>(ctx, values)?,
        _ => typed::<f32>(ctx, values)?,
    };
    Ok(Arc::new(Storage::Gpu(storage)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The probe's extents cross every boundary of each shape: rows
    /// ending inside a fragment, keys past two tiles, rows past a
    /// workgroup in each head; and a row that attends nothing under the
    /// boolean mask, while the other rows' scores stay within a few units.
    #[test]
    fn the_probe_crosses_the_kernels_boundaries() {
        for (fragment, lanes) in [(8, 8), (16, 32)] {
            for frags in 1..=256 / fragment {
                let shape = CoopFlash {
                    fragment,
                    lanes,
                    head_frags: frags,
                    value_frags: (frags % 3) + 1,
                    q_frags: frags.div_ceil(2),
                };
                let p = Probe::of(shape);
                let f = fragment as usize;
                assert_eq!(p.head.div_ceil(f), frags as usize);
                assert_eq!(p.value.div_ceil(f), 2 * shape.value_frags as usize);
                assert_eq!(shape.parts(p.value), 2);
                assert!(!p.head.is_multiple_of(f) && !p.value.is_multiple_of(f));
                assert!(p.source > 4 * f && !p.source.is_multiple_of(2 * f));
                assert!(p.length > shape.rows() as usize);
                let want = p.expected(MaskKind::Bool);
                let row = |b: usize, h: usize, i: usize| {
                    let at = ((b * GROUPS + h) * p.length + i) * p.value;
                    &want[at..at + p.value]
                };
                assert!(row(1, 1, 5).iter().all(|&y| y == 0.0));
                assert!(row(1, 1, 6).iter().any(|&y| y != 0.0));
                let spread = (0..p.length)
                    .flat_map(|i| (0..p.source).map(move |j| (i, j)))
                    .map(|(i, j)| {
                        let dot: i64 = (0..p.head)
                            .map(|d| Probe::q(0, 1, i, d) * Probe::k(0, j, d))
                            .sum();
                        (dot as f64 * p.scale()).abs()
                    })
                    .fold(0.0, f64::max);
                assert!((1.0..12.0).contains(&spread), "{shape:?}: {spread}");
            }
        }
    }
}
