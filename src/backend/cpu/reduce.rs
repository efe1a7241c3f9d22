//! CPU reductions: one output at a time, each walking its reduced elements
//! through the input's strides (no copy of a strided view). Sums, products,
//! maxima and minima run over the reduced sub-layout in memory order with
//! eight independent accumulators, so a contiguous run vectorises, and
//! combine blocks of them pairwise, so a float sum's error grows with the
//! log of its length; argmax and argmin walk row-major to report the first
//! index.

use super::storage::{CpuData, CpuStorage};
use super::strided::for_each_run;
use crate::backend::{Deviation, ReduceCall, TensorRef};
use crate::dtype::{Element, KernelType};
use crate::error::{Error, Result};
use crate::layout::{IterPlan, Layout};
use crate::op::ReduceOp;
use half::{bf16, f16};

/// The accumulator of a reduction: f32 for f16 and f32, f64 for f64,
/// wrapping i32/u32 for integers, u32 for u8 and bool.
pub(crate) trait Acc: Copy + PartialOrd {
    const ZERO: Self;
    const ONE: Self;
    /// Smallest value (the identity of a maximum).
    const LOWEST: Self;
    /// Largest value (the identity of a minimum).
    const HIGHEST: Self;
    fn add(self, o: Self) -> Self;
    fn mul(self, o: Self) -> Self;
    /// NaN-propagating maximum.
    fn max(self, o: Self) -> Self;
    /// NaN-propagating minimum.
    fn min(self, o: Self) -> Self;
    /// `self / count` for floats (a mean); integers are never divided.
    fn mean(self, count: usize) -> Self;
    #[allow(clippy::eq_op)]
    fn is_nan(self) -> bool {
        self != self
    }
}

macro_rules! float_acc {
    ($t:ty) => {
        impl Acc for $t {
            const ZERO: Self = 0.0;
            const ONE: Self = 1.0;
            const LOWEST: Self = <$t>::NEG_INFINITY;
            const HIGHEST: Self = <$t>::INFINITY;
            #[inline(always)]
            fn add(self, o: Self) -> Self {
                self + o
            }
            #[inline(always)]
            fn mul(self, o: Self) -> Self {
                self * o
            }
            #[inline(always)]
            fn max(self, o: Self) -> Self {
                if self.is_nan() || o.is_nan() {
                    <$t>::NAN
                } else if o > self {
                    o
                } else {
                    self
                }
            }
            #[inline(always)]
            fn min(self, o: Self) -> Self {
                if self.is_nan() || o.is_nan() {
                    <$t>::NAN
                } else if o < self {
                    o
                } else {
                    self
                }
            }
            #[inline(always)]
            fn mean(self, count: usize) -> Self {
                self / count as $t
            }
        }
    };
}
float_acc!(f32);
float_acc!(f64);

macro_rules! int_acc {
    ($t:ty) => {
        impl Acc for $t {
            const ZERO: Self = 0;
            const ONE: Self = 1;
            const LOWEST: Self = <$t>::MIN;
            const HIGHEST: Self = <$t>::MAX;
            #[inline(always)]
            fn add(self, o: Self) -> Self {
                self.wrapping_add(o)
            }
            #[inline(always)]
            fn mul(self, o: Self) -> Self {
                self.wrapping_mul(o)
            }
            #[inline(always)]
            fn max(self, o: Self) -> Self {
                Ord::max(self, o)
            }
            #[inline(always)]
            fn min(self, o: Self) -> Self {
                Ord::min(self, o)
            }
            #[inline(always)]
            fn mean(self, _count: usize) -> Self {
                self
            }
        }
    };
}
int_acc!(i32);
int_acc!(i64);
int_acc!(u32);

/// An element type with its accumulator.
pub(crate) trait Reducible: Element {
    type Acc: Acc;
    fn widen(self) -> Self::Acc;
    fn narrow(acc: Self::Acc) -> Self;
}

macro_rules! reducible {
    ($t:ty, $acc:ty, $widen:expr, $narrow:expr) => {
        impl Reducible for $t {
            type Acc = $acc;
            #[inline(always)]
            fn widen(self) -> $acc {
                $widen(self)
            }
            #[inline(always)]
            fn narrow(acc: $acc) -> Self {
                $narrow(acc)
            }
        }
    };
}
reducible!(f32, f32, |x| x, |a| a);
reducible!(f64, f64, |x| x, |a| a);
reducible!(f16, f32, f16::to_f32, f16::from_f32);
reducible!(bf16, f32, bf16::to_f32, bf16::from_f32);
reducible!(i32, i32, |x| x, |a| a);
reducible!(i64, i64, |x| x, |a| a);
reducible!(u32, u32, |x| x, |a| a);
reducible!(u8, u32, u32::from, |a: u32| a as u8);
reducible!(bool, u32, u32::from, |a: u32| a != 0);

/// Runs `call`, whose output storage is `out`.
pub(crate) fn reduce(out: &CpuStorage, call: &ReduceCall) -> Result<()> {
    let input = call.input.storage.host("cpu reduce")?;
    if let Some((center, deviation)) = &call.center {
        return centered_sum(out, input, call, center, *deviation);
    }
    let data = input.read();
    let mut out_data = out.write();
    let kept = call.kept_layout();
    let reduced = call.reduced_layout();
    macro_rules! typed {
        ($T:ty, $variant:ident) => {{
            let CpuData::$variant(src) = &*data else {
                return Err(dtype_mismatch());
            };
            if call.op.is_arg() {
                let CpuData::I32(dst) = &mut *out_data else {
                    return Err(dtype_mismatch());
                };
                arg::<$T>(
                    call.op == ReduceOp::ArgMax,
                    src,
                    dst,
                    &kept.positions(),
                    &reduced,
                );
            } else {
                let CpuData::$variant(dst) = &mut *out_data else {
                    return Err(dtype_mismatch());
                };
                fold::<$T>(call.op, call.mean, src, dst, &kept, &reduced);
            }
        }};
    }
    match call.input.dtype {
        KernelType::F32 => typed!(f32, F32),
        KernelType::F16 => typed!(f16, F16),
        KernelType::BF16 => typed!(bf16, BF16),
        KernelType::F64 => typed!(f64, F64),
        KernelType::I32 => typed!(i32, I32),
        KernelType::I64 => typed!(i64, I64),
        KernelType::U32 => typed!(u32, U32),
        KernelType::U8 => typed!(u8, U8),
        KernelType::Bool => typed!(bool, Bool),
    }
    Ok(())
}

/// A sum of deviations (see `ReduceCall::center`): each output's
/// `x - center[o]` or their squares, in row-major order, summed as any f32
/// sum of a row is (eight lanes within blocks of [`BLOCK`], the blocks
/// pairwise), each made as it is added (a tensor of the squares of a
/// broadcast view would be its whole virtual size).
fn centered_sum(
    out: &CpuStorage,
    input: &CpuStorage,
    call: &ReduceCall,
    center: &TensorRef,
    deviation: Deviation,
) -> Result<()> {
    const LANES: usize = 8;
    let center = center.storage.host("cpu reduce")?;
    let (data, centers) = (input.read(), center.read());
    let (CpuData::F32(src), CpuData::F32(centers)) = (&*data, &*centers) else {
        return Err(dtype_mismatch());
    };
    let kept = call.kept_layout();
    let plan = row_major_plan(&call.reduced_layout());
    let mut out_data = out.write();
    let CpuData::F32(dst) = &mut *out_data else {
        return Err(dtype_mismatch());
    };
    let add = |a: f32, b: f32| a + b;
    for ((&base, &c), d) in kept
        .positions()
        .iter()
        .zip(centers.iter())
        .zip(dst.iter_mut())
    {
        let (mut lanes, mut in_block, mut tree) = ([0f32; LANES], 0, Tree::new(0.0));
        for_each_run::<1>(&plan, |[p], [s], len| {
            for i in 0..len as isize {
                let x = src[(base as isize + p + i * s) as usize] - c;
                lanes[in_block % LANES] += match deviation {
                    Deviation::Plain => x,
                    Deviation::Squared => x * x,
                };
                in_block += 1;
                if in_block == BLOCK {
                    tree.push(std::mem::replace(&mut lanes, [0.0; LANES]), add);
                    in_block = 0;
                }
            }
        });
        tree.push(lanes, add);
        *d = tree.total(0.0, add);
    }
    Ok(())
}

fn dtype_mismatch() -> Error {
    Error::internal("cpu reduce", "storage dtype differs from the call's")
}

/// Sum, product, maximum or minimum of each output's reduced elements.
fn fold<T: Reducible>(
    op: ReduceOp,
    mean: bool,
    src: &[T],
    dst: &mut [T],
    kept: &Layout,
    reduced: &Layout,
) {
    // Each arm monomorphises the loops for its function (no call through a
    // pointer per element, so contiguous runs vectorise).
    match op {
        ReduceOp::Prod => fold_with(src, dst, kept, reduced, mean, T::Acc::ONE, T::Acc::mul),
        ReduceOp::Max => fold_with(src, dst, kept, reduced, mean, T::Acc::LOWEST, T::Acc::max),
        ReduceOp::Min => fold_with(src, dst, kept, reduced, mean, T::Acc::HIGHEST, T::Acc::min),
        _ => fold_with(src, dst, kept, reduced, mean, T::Acc::ZERO, T::Acc::add),
    }
}

fn fold_with<T: Reducible>(
    src: &[T],
    dst: &mut [T],
    kept: &Layout,
    reduced: &Layout,
    mean: bool,
    init: T::Acc,
    f: impl Fn(T::Acc, T::Acc) -> T::Acc + Copy,
) {
    let count = reduced.numel();
    let finish = |acc: T::Acc| T::narrow(if mean { acc.mean(count) } else { acc });
    if min_stride(kept) < min_stride(reduced) {
        // Neighbouring outputs are closer in memory than neighbouring
        // reduced elements (column sums of a row-major matrix): sweep the
        // input once, folding each reduced slice into all outputs.
        let mut acc = vec![init; dst.len()];
        fold_across(src, kept, reduced, &mut acc, init, f);
        for (d, a) in dst.iter_mut().zip(acc) {
            *d = finish(a);
        }
        return;
    }
    let plan = IterPlan::new(&[reduced]);
    for (d, base) in dst.iter_mut().zip(kept.positions()) {
        *d = finish(fold_one(src, base, &plan, init, f));
    }
}

/// The smallest |stride| of an axis with more than one element.
fn min_stride(layout: &Layout) -> usize {
    layout
        .dims()
        .iter()
        .zip(layout.strides())
        .filter(|&(&n, _)| n > 1)
        .map(|(_, s)| s.unsigned_abs())
        .min()
        .unwrap_or(usize::MAX)
}

/// Outputs [`fold_across`] holds in registers at a time where they are
/// side by side.
const ACROSS: usize = 64;

/// Slices [`fold_across`] folds into each output in order before the
/// block joins the pairwise tree: as many as one lane of [`fold_one`]
/// takes (a column of 1000 f32s summed in order over an offset of 3e7 was
/// 110 of its standard deviations off, its variance 1e-3).
const ACROSS_BLOCK: usize = BLOCK / 8;

/// `acc[o]` (`init` each) folded with every reduced element `x` of every
/// output `o`, walking the outputs innermost: each output's elements in
/// blocks of [`ACROSS_BLOCK`] slices, folded in order, the blocks combined
/// pairwise ([`Rows`]), as [`fold_one`] combines one output's (a float
/// column sum's error grows with the log of its length, as the GPU's does,
/// not with the length).
fn fold_across<T: Reducible>(
    src: &[T],
    kept: &Layout,
    reduced: &Layout,
    acc: &mut [T::Acc],
    init: T::Acc,
    f: impl Fn(T::Acc, T::Acc) -> T::Acc + Copy,
) {
    let out = Layout::contiguous(kept.shape().clone());
    let plan = IterPlan::new(&[&out, kept]);
    let reduced_plan = IterPlan::new(&[reduced]);
    let rank = plan.shape.len();
    if plan.shape[rank - 1] >= 16 && plan.strides.iter().all(|s| s[rank - 1] == 1) {
        // Each run of outputs has its inputs side by side in every slice
        // (a channels-last image's sums over its pixels): the run's
        // outputs in blocks held in registers through every slice, each
        // folded in the same order as below. Short runs stay below: a
        // sweep over the slices for each would read the input in many
        // strided passes rather than one.
        for_each_run::<2>(&plan, |[pa, pk], _, len| {
            for c0 in (0..len).step_by(ACROSS) {
                let (width, at) = (ACROSS.min(len - c0), pa as usize + c0);
                let mut block = [init; ACROSS];
                let (mut rows, mut in_block) = (Rows::new(), 0);
                for_each_run::<1>(&reduced_plan, |[q], [qs], qlen| {
                    for qi in 0..qlen as isize {
                        if in_block == ACROSS_BLOCK {
                            rows.push(&block[..width], f);
                            block = [init; ACROSS];
                            in_block = 0;
                        }
                        in_block += 1;
                        let start = (pk + q + qi * qs) as usize + c0;
                        let xs = &src[start..start + width];
                        // The same loop twice: over a whole block its
                        // length is known, and it unrolls into vectors.
                        if let Ok(xs) = <&[T; ACROSS]>::try_from(xs) {
                            for (a, &x) in block.iter_mut().zip(xs) {
                                *a = f(*a, x.widen());
                            }
                        } else {
                            for (a, &x) in block.iter_mut().zip(xs) {
                                *a = f(*a, x.widen());
                            }
                        }
                    }
                });
                rows.push(&block[..width], f);
                acc[at..at + width].copy_from_slice(&rows.total(f));
            }
        });
        return;
    }
    let (mut rows, mut in_block) = (Rows::new(), 0);
    for_each_run::<1>(&reduced_plan, |[q], [qs], qlen| {
        for qi in 0..qlen as isize {
            if in_block == ACROSS_BLOCK {
                rows.push(acc, f);
                acc.fill(init);
                in_block = 0;
            }
            in_block += 1;
            let shift = q + qi * qs;
            for_each_run::<2>(&plan, |[pa, pk], [sa, sk], len| {
                let start = pk + shift;
                if sa == 1 && sk == 1 {
                    let (pa, start) = (pa as usize, start as usize);
                    let dst = &mut acc[pa..pa + len];
                    for (a, &x) in dst.iter_mut().zip(&src[start..start + len]) {
                        *a = f(*a, x.widen());
                    }
                } else {
                    for i in 0..len as isize {
                        let a = &mut acc[(pa + i * sa) as usize];
                        *a = f(*a, src[(start + i * sk) as usize].widen());
                    }
                }
            });
        }
    });
    rows.push(acc, f);
    acc.copy_from_slice(&rows.total(f));
}

/// Outputs' totals over blocks of slices, combined as [`Tree`] combines
/// one output's blocks: a stack of partial totals, each over 2^level
/// blocks, merged like a binary counter.
struct Rows<A> {
    stack: Vec<(Vec<A>, u32)>,
    /// Vectors merged away, for the next blocks (no allocation a block).
    spare: Vec<Vec<A>>,
}

impl<A: Copy> Rows<A> {
    fn new() -> Self {
        Rows {
            stack: Vec::new(),
            spare: Vec::new(),
        }
    }

    /// Adds one block's totals.
    fn push(&mut self, block: &[A], f: impl Fn(A, A) -> A + Copy) {
        let mut v = self.spare.pop().unwrap_or_default();
        v.clear();
        v.extend_from_slice(block);
        let mut level = 0;
        while self.stack.last().is_some_and(|&(_, l)| l == level) {
            let Some((top, _)) = self.stack.pop() else {
                break;
            };
            for (a, &b) in v.iter_mut().zip(&top) {
                *a = f(b, *a);
            }
            self.spare.push(top);
            level += 1;
        }
        self.stack.push((v, level));
    }

    /// The totals over every block pushed (at least one).
    fn total(mut self, f: impl Fn(A, A) -> A + Copy) -> Vec<A> {
        let mut total = self.stack.pop().map(|(v, _)| v).unwrap_or_default();
        while let Some((v, _)) = self.stack.pop() {
            for (a, b) in total.iter_mut().zip(v) {
                *a = f(b, *a);
            }
        }
        total
    }
}

/// Elements one output folds into its eight lanes before their total joins
/// the pairwise tree ([`Tree`]): the lanes keep contiguous runs vectorised,
/// the blocks keep a float sum's error growing with the log of its length,
/// not with the length. Eight lanes of 16, as NumPy's pairwise summation's
/// leaves: with lanes of 128 (blocks of 1024) an f32 sum of 2^20 squares
/// of N(0, 1) deviations was 8.5 ulps off, NumPy's 0.5.
const BLOCK: usize = 128;

/// Folds `f` over the elements of `plan` starting at `base`: eight lanes
/// within a block of [`BLOCK`] elements, the blocks combined pairwise.
#[inline(always)]
fn fold_one<T: Reducible>(
    src: &[T],
    base: usize,
    plan: &IterPlan,
    init: T::Acc,
    f: impl Fn(T::Acc, T::Acc) -> T::Acc + Copy,
) -> T::Acc {
    const LANES: usize = 8;
    let mut lanes = [init; LANES];
    let mut in_block = 0;
    let mut tree = Tree::new(init);
    for_each_run::<1>(plan, |[p], [s], len| {
        let mut start = base as isize + p;
        let mut left = len;
        while left > 0 {
            let take = (BLOCK - in_block).min(left);
            if s == 1 {
                let run = &src[start as usize..start as usize + take];
                let mut chunks = run.chunks_exact(LANES);
                for chunk in &mut chunks {
                    for (lane, &x) in lanes.iter_mut().zip(chunk) {
                        *lane = f(*lane, x.widen());
                    }
                }
                for (lane, &x) in lanes.iter_mut().zip(chunks.remainder()) {
                    *lane = f(*lane, x.widen());
                }
            } else {
                for i in 0..take {
                    let x = src[(start + i as isize * s) as usize];
                    lanes[i % LANES] = f(lanes[i % LANES], x.widen());
                }
            }
            start += take as isize * s;
            left -= take;
            in_block += take;
            if in_block == BLOCK {
                tree.push(std::mem::replace(&mut lanes, [init; LANES]), f);
                in_block = 0;
            }
        }
    });
    tree.push(lanes, f);
    tree.total(init, f)
}

/// Block totals combined as a balanced binary tree, streaming: a stack of
/// partial totals, each over 2^level blocks (the levels of the set bits
/// of the count of blocks), merged like a binary counter.
struct Tree<A> {
    stack: [A; 64],
    len: usize,
    blocks: u64,
}

impl<A: Copy> Tree<A> {
    fn new(init: A) -> Self {
        Tree {
            stack: [init; 64],
            len: 0,
            blocks: 0,
        }
    }

    /// Adds one block, given as its lanes.
    #[inline(always)]
    fn push<const L: usize>(&mut self, lanes: [A; L], f: impl Fn(A, A) -> A + Copy) {
        let mut v = halves(lanes, f);
        // A total of as many blocks as this one's for each trailing one.
        let mut carry = self.blocks;
        while carry & 1 == 1 {
            self.len -= 1;
            v = f(self.stack[self.len], v);
            carry >>= 1;
        }
        self.stack[self.len] = v;
        self.len += 1;
        self.blocks += 1;
    }

    /// The total of every block pushed.
    fn total(&self, init: A, f: impl Fn(A, A) -> A + Copy) -> A {
        self.stack[..self.len]
            .iter()
            .rev()
            .fold(None, |acc, &v| Some(acc.map_or(v, |a| f(v, a))))
            .unwrap_or(init)
    }
}

/// `lanes` (at least one) combined as a balanced binary tree: the upper
/// half folded into the lower until one is left (the loops unroll for a
/// block's lanes).
#[inline(always)]
fn halves<A: Copy, const L: usize>(mut lanes: [A; L], f: impl Fn(A, A) -> A + Copy) -> A {
    let mut n = L;
    while n > 1 {
        let h = n / 2;
        for i in 0..h {
            lanes[i] = f(lanes[i], lanes[n - h + i]);
        }
        n -= h;
    }
    lanes[0]
}

/// The plan walking `layout` in row-major order (no reordering), so that
/// a running count is the row-major index.
fn row_major_plan(layout: &Layout) -> IterPlan {
    if layout.rank() == 0 {
        return IterPlan {
            shape: smallvec::smallvec![1],
            strides: smallvec::smallvec![smallvec::smallvec![0]],
            offsets: smallvec::smallvec![layout.offset()],
        };
    }
    IterPlan {
        shape: layout.dims().into(),
        strides: smallvec::smallvec![layout.strides().into()],
        offsets: smallvec::smallvec![layout.offset()],
    }
}

/// Index of the first maximum (or minimum) of each output's reduced
/// elements; a NaN wins over every number.
fn arg<T: Reducible>(max: bool, src: &[T], dst: &mut [i32], bases: &[usize], reduced: &Layout) {
    let plan = row_major_plan(reduced);
    for (o, &base) in bases.iter().enumerate() {
        let mut best: Option<(T::Acc, i32)> = None;
        let mut index = 0i32;
        for_each_run::<1>(&plan, |[p], [s], len| {
            for i in 0..len {
                let x = src[(base as isize + p + i as isize * s) as usize].widen();
                let better = match best {
                    None => true,
                    Some((b, _)) if b.is_nan() => false,
                    Some(_) if x.is_nan() => true,
                    Some((b, _)) => {
                        if max {
                            x > b
                        } else {
                            x < b
                        }
                    }
                };
                if better {
                    best = Some((x, index));
                }
                index += 1;
            }
        });
        dst[o] = best.map_or(0, |(_, i)| i);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accumulators_follow_numpy() {
        assert!(Acc::max(1.0f32, f32::NAN).is_nan());
        assert!(Acc::min(f32::NAN, 1.0f32).is_nan());
        assert_eq!(Acc::add(i32::MAX, 1), i32::MIN);
        assert_eq!(<u8 as Reducible>::narrow(300), 44);
        assert!(<bool as Reducible>::narrow(2));
    }

    #[test]
    fn lanes_cover_runs_of_every_length() {
        for n in [0usize, 1, 7, 8, 9, 17, 64] {
            let src: Vec<f32> = (0..n).map(|i| i as f32).collect();
            let layout = Layout::contiguous([n]);
            let plan = IterPlan::new(&[&layout]);
            let sum = fold_one(&src, 0, &plan, 0.0, Acc::add);
            assert_eq!(sum, (n * n.saturating_sub(1) / 2) as f32);
        }
    }
}
