//! Split-k for a GPU's f32 products whose output is a few tiles deep in a
//! long k (a 64 x 64 result of 65,536-long rows, or a batch of a few small
//! matrices): one workgroup per output tile would leave a big GPU idle
//! while it walks k, each thread summing all of k in one chain. The
//! product runs as a batch of products over consecutive slices of k, read
//! in place through strided views of the operands (no copies), and the
//! slices' partial results are summed by a fixed reduction: the same bits
//! every run.

use crate::dtype::DType;
use crate::error::Result;
use crate::layout::Layout;
use crate::shape::{DimVec, MAX_RANK, Shape};
use crate::tensor::Tensor;

/// Output blocks a big GPU runs at once (132 multiprocessors on an H100):
/// the splits aim to fill this many.
const WAVE: usize = 128;

/// The output tile the splits count by.
const TILE: usize = 64;

/// Elements of k a slice takes at least.
const MIN_SLICE: usize = 512;

/// Slices of k at most.
const MAX_SPLITS: usize = 64;

/// Slices fewer than this are not worth a second dispatch.
const MIN_SPLITS: usize = 4;

/// Outputs a workgroup of the matrix-vector kernel takes (the GPU's
/// `matmul/gemv.rs`): 4 where A's rows are read along k (`A @ x` of a
/// row-major A), else 64.
const GEMV_ALONG_K: usize = 4;
const GEMV_ACROSS: usize = 64;

/// Workgroups an `m` x `n` product of operands of (row, column) strides
/// `a` and `b` launches unsplit: its 64 x 64 tiles, or for a
/// matrix-vector product (m or n 1) the matrix-vector kernel's groups of
/// outputs, as it orients A (`a`, or `b` seen transposed).
fn blocks(m: usize, n: usize, a: [isize; 2], b: [isize; 2]) -> usize {
    if m != 1 && n != 1 {
        return m.div_ceil(TILE) * n.div_ceil(TILE);
    }
    // A's (row, k) strides.
    let (row, along) = match n == 1 {
        true => (a[0], a[1]),
        false => (b[1], b[0]),
    };
    let per = match along.unsigned_abs() <= row.unsigned_abs() {
        true => GEMV_ALONG_K,
        false => GEMV_ACROSS,
    };
    m.max(n).div_ceil(per)
}

/// The slices of k for an `m` x `k` by `k` x `n` product that launches
/// `blocks` workgroups unsplit: 1 (no split) unless those are at most a
/// quarter of a wave and k is at least 8 times its longer side and at
/// least 4,096 (8 [`MIN_SLICE`]s); else the most that divide k evenly into
/// slices of at least [`MIN_SLICE`] (of a multiple of four elements where
/// k is, so that aligned operands keep their vec4 loads), up to filling a
/// wave, and at least [`MIN_SPLITS`].
fn splits(blocks: usize, m: usize, n: usize, k: usize) -> usize {
    if blocks == 0 || 4 * blocks > WAVE || k < 8 * m.max(n).max(MIN_SLICE) {
        return 1;
    }
    let most = (WAVE / blocks).min(k / MIN_SLICE).min(MAX_SPLITS);
    let aligned = |s: usize| !k.is_multiple_of(4) || (k / s).is_multiple_of(4);
    (MIN_SPLITS..=most)
        .rev()
        .find(|&s| k.is_multiple_of(s) && aligned(s))
        .unwrap_or(1)
}

/// `a @ b` of f32 operands on a GPU (stacks of matrices broadcast to one
/// batch shape) by split-k, where [`splits`] gives more than one slice
/// for the product's blocks over all its matrices; `None` otherwise, and
/// for operands of the most axes a tensor has (the slices take one more).
///
/// # Errors
/// The product's and the sum's.
pub(super) fn product(a: &Tensor, b: &Tensor) -> Result<Option<Tensor>> {
    let r = a.rank();
    if !a.device().is_gpu() || a.dtype() != DType::F32 || !(2..MAX_RANK).contains(&r) {
        return Ok(None);
    }
    let (m, k, n) = (a.dims()[r - 2], a.dims()[r - 1], b.dims()[r - 1]);
    let (ar, ac) = (a.strides()[r - 2], a.strides()[r - 1]);
    let (br, bc) = (b.strides()[r - 2], b.strides()[r - 1]);
    let batches: usize = a.dims()[..r - 2].iter().product();
    let s = splits(batches * blocks(m, n, [ar, ac], [br, bc]), m, n, k);
    if s == 1 {
        return Ok(None);
    }
    let ks = k / s;
    let step = ks as isize;
    // Each operand's batch axes, then the slices of k, then its matrix.
    let sliced = |t: &Tensor, matrix: [usize; 2], slice_stride: isize| {
        let mut dims = DimVec::from_slice(&t.dims()[..r - 2]);
        dims.extend_from_slice(&[s, matrix[0], matrix[1]]);
        let mut strides = DimVec::from_slice(&t.strides()[..r - 2]);
        strides.extend_from_slice(&[slice_stride, t.strides()[r - 2], t.strides()[r - 1]]);
        t.with_layout(Layout::from_parts(
            Shape::from_dims(dims),
            strides,
            t.offset(),
        ))
    };
    let a_slices = sliced(a, [m, ks], step * ac);
    let b_slices = sliced(b, [ks, n], step * br);
    let mut dims = DimVec::from_slice(&a.dims()[..r - 2]);
    dims.extend_from_slice(&[s, m, n]);
    let shape = Shape::from_dims(dims);
    let partials = crate::tensor::alloc_beside(a, "matmul", DType::F32, shape.numel())?;
    let partials = Tensor::from_parts(
        partials,
        Layout::contiguous(shape),
        DType::F32,
        a.device().clone(),
    );
    // Unsplit: each slice's product is one of a batch.
    super::matmul::matmul_in_parts(&a_slices, &b_slices, &partials)?;
    Ok(Some(partials.sum(-3)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tiles(m: usize, n: usize) -> usize {
        m.div_ceil(TILE) * n.div_ceil(TILE)
    }

    #[test]
    fn only_a_few_tiles_over_a_long_k_split_into_even_slices() {
        // One tile over 65,536: 64 slices of 1,024.
        assert_eq!(splits(tiles(64, 64), 64, 64, 65_536), 64);
        // 16 tiles (256 x 256) over 16,384: a wave of 128 blocks, 8 slices.
        assert_eq!(splits(tiles(256, 256), 256, 256, 16_384), 8);
        // Enough tiles, or a short k: no split.
        assert_eq!(splits(tiles(1024, 1024), 1024, 1024, 65_536), 1);
        assert_eq!(splits(tiles(64, 64), 64, 64, 1024), 1);
        assert_eq!(splits(tiles(512, 8), 512, 8, 2048), 1);
        // Only even slices: 4,099 is prime.
        assert_eq!(splits(tiles(8, 8), 8, 8, 4099), 1);
        assert_eq!(splits(tiles(8, 8), 8, 8, 3 * 2048), 12);
        // Fewer than four slices: no split (a 2,048-long dot product).
        assert_eq!(splits(tiles(1, 1), 1, 1, 2048), 1);
        assert_eq!(splits(tiles(1, 1), 1, 1, 4096), 8);
        // 12,300: slices of 615 (20), 820 (15 of them) or 1,025 (12)?
        // 615 and 1,025 would lose the vec4 loads of an aligned operand.
        assert_eq!(splits(tiles(64, 64), 64, 64, 12_300), 15);
        // 4,100: 5 slices of 820, not 4 of 1,025.
        assert_eq!(splits(tiles(1, 1), 1, 1, 4100), 5);
        assert_eq!(splits(tiles(64, 64), 64, 64, 12_288), 24);
        // Matrix-vector products count the matrix-vector kernel's groups:
        // 2,048 rows read along k are 512 groups of 4 (no split), read
        // across k 32 groups of 64 (split); a dot product is one group.
        let k = 1 << 15;
        assert_eq!(blocks(2048, 1, [k as isize, 1], [1, 1]), 512);
        assert_eq!(splits(512, 2048, 1, k), 1);
        assert_eq!(blocks(2048, 1, [1, 2048], [1, 1]), 32);
        assert_eq!(splits(32, 2048, 1, k), 4);
        // x @ B: B read along k where its columns are contiguous.
        assert_eq!(blocks(1, 2048, [k as isize, 1], [1, k as isize]), 512);
        assert_eq!(blocks(1, 2048, [k as isize, 1], [2048, 1]), 32);
        assert_eq!(blocks(1, 1, [4096, 1], [1, 1]), 1);
        assert_eq!(blocks(100, 100, [1, 1], [1, 1]), 4);
        for (m, n, k) in [(1, 1, 4096), (100, 7, 10_000), (300, 300, 1 << 20)] {
            let s = splits(tiles(m, n), m, n, k);
            assert!(s <= MAX_SPLITS && k % s == 0 && (s == 1 || k / s >= MIN_SLICE));
            assert!(s == 1 || s >= MIN_SPLITS);
        }
    }
}
