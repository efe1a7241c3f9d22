//! Backends: where storage lives and where kernels run.
//!
//! `ops/` validates user input and computes output layouts, then hands a
//! [`Call`] to [`run`]; the backend of the destination's storage executes it.
//! Nothing in here re-checks user input.

pub(crate) mod cpu;
mod custom_spec;
pub(crate) mod gpu;
#[cfg(test)]
mod layering;

use crate::dtype::{Element, KernelType};
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::op::{ElementwiseOp, IndexOp, ReduceOp, ScanOp};
use crate::scalar::TypedScalar;
pub(crate) use custom_spec::{CustomSpec, CustomSpecs};
use std::sync::Arc;

/// The memory behind one or more tensors.
pub(crate) enum Storage {
    /// Host memory.
    Cpu(cpu::CpuStorage),
    /// A device buffer.
    Gpu(gpu::GpuStorage),
}

impl Storage {
    /// Fresh storage for `len` elements of `dtype` on the GPU of `gpu`, or else in host memory: zeros on the CPU,
    /// unspecified on a GPU (the caller writes it before anyone reads it).
    ///
    /// # Errors
    /// `Error::OutOfMemory` when the host refuses the allocation or the GPU's
    /// memory cap is reached; `Error::TooLarge` over the GPU's limits.
    pub fn alloc(
        gpu: Option<&Arc<gpu::GpuContext>>,
        op: &'static str,
        dtype: KernelType,
        len: usize,
    ) -> Result<Storage> {
        Ok(match gpu {
            None => Storage::Cpu(cpu::CpuStorage::new(cpu::CpuData::zeros(op, dtype, len)?)),
            Some(ctx) => Storage::Gpu(gpu::GpuStorage::uninit(ctx, op, dtype, len)?),
        })
    }

    /// Storage holding `data`: uploaded to the GPU of `gpu`, or kept in
    /// host memory.
    ///
    /// # Errors
    /// As [`Storage::alloc`] on a GPU.
    pub fn from_vec<T: Element>(
        gpu: Option<&Arc<gpu::GpuContext>>,
        op: &'static str,
        data: Vec<T>,
    ) -> Result<Storage> {
        Ok(match gpu {
            None => Storage::Cpu(cpu::CpuStorage::new(cpu::CpuData::from_vec(data))),
            Some(ctx) => Storage::Gpu(gpu::GpuStorage::upload(ctx, op, &data)?),
        })
    }

    /// Elements `start..start + n` as `T`, which must be the stored type,
    /// copied to the host (after the GPU's pending work, on a GPU).
    ///
    /// # Errors
    /// `Error::OutOfMemory` when the host refuses the copy; GPU readback
    /// failures and index faults (see `gpu/faults.rs`); `Error::Internal`
    /// when `T` or the range does not fit the storage.
    pub async fn read<T: Element>(
        &self,
        op: &'static str,
        start: usize,
        n: usize,
    ) -> Result<Vec<T>> {
        if n == 0 {
            return Ok(Vec::new());
        }
        match self {
            Storage::Cpu(s) => {
                let data = s.read();
                let slice = data
                    .as_slice::<T>()
                    .and_then(|v| v.get(start..start + n))
                    .ok_or_else(|| Error::internal(op, "cpu storage does not hold the view"))?;
                let copied = cpu::try_collect(op, n, slice.iter().copied());
                cpu::profile_mark();
                copied
            }
            Storage::Gpu(s) => {
                let bytes = s.read_bytes(start, n).await?;
                Ok(T::read_bytes(&bytes, n))
            }
        }
    }

    /// The largest storage binding in bytes of the GPU holding this
    /// storage; `None` in host memory, where nothing is bound. The one
    /// place ops learn of the limit (views larger than one binding are
    /// handled in `layout/windows.rs`, `ops/binding_parts.rs`,
    /// `gpu/command.rs`, `gpu/elementwise/windowed.rs` and
    /// `gpu/dispatch.rs`; see the GPU backend's module docs).
    pub fn binding_limit(&self) -> Option<u64> {
        match self {
            Storage::Cpu(_) => None,
            Storage::Gpu(s) => Some(s.binding_limit()),
        }
    }

    /// True when storage elements `lo..=hi` can be bound at once: always in
    /// host memory; on a GPU when the buffer fits one binding or the
    /// aligned window over them does.
    pub fn window_fits(&self, lo: usize, hi: usize) -> bool {
        match self {
            Storage::Cpu(_) => true,
            Storage::Gpu(s) => s.window_fits(lo, hi),
        }
    }

    /// Number of elements the storage holds.
    pub fn len(&self) -> usize {
        match self {
            Storage::Cpu(s) => s.len(),
            Storage::Gpu(s) => s.len(),
        }
    }
}

/// A tensor as a kernel sees it: storage, layout (already broadcast to the
/// destination's shape) and dtype.
#[derive(Clone)]
pub(crate) struct TensorRef<'a> {
    pub storage: &'a Arc<Storage>,
    pub layout: Layout,
    pub dtype: KernelType,
}

/// One kernel input.
#[derive(Clone)]
pub(crate) enum Input<'a> {
    Tensor(TensorRef<'a>),
    Scalar(TypedScalar),
}

impl Input<'_> {
    pub fn dtype(&self) -> KernelType {
        match self {
            Input::Tensor(t) => t.dtype,
            Input::Scalar(s) => s.dtype,
        }
    }
}

/// One elementwise kernel launch. Inputs that share the destination's storage
/// either have the destination's layout or touch none of its elements (the op
/// layer copies any other overlapping input first).
pub(crate) struct Call<'a> {
    pub kernel: ElementwiseOp,
    pub out: TensorRef<'a>,
    pub inputs: &'a [Input<'a>],
}

/// Runs `call` on the backend that holds the destination.
///
/// # Errors
/// GPU failures (device lost, out of memory) and device limits.
pub(crate) fn run(call: &Call) -> Result<()> {
    check_bounds(&call.out)?;
    for input in call.inputs {
        if let Input::Tensor(t) = input {
            check_bounds(t)?;
        }
    }
    match &**call.out.storage {
        Storage::Cpu(s) => cpu::profiled(call.kernel.name(), || cpu::run(s, call)),
        Storage::Gpu(s) => gpu::record_elementwise(s, call),
    }
}

/// One reduction: each element of `out` (a fresh row-major tensor whose
/// shape is the first `kept` axes of `input`) reduces the elements of
/// `input` that share those leading indices. The op layer has permuted the
/// kept axes first and the reduced axes last; the input may be any view.
pub(crate) struct ReduceCall<'a> {
    pub op: ReduceOp,
    pub input: TensorRef<'a>,
    pub kept: usize,
    pub out: TensorRef<'a>,
    /// Divide each sum by the number of reduced elements (a mean).
    pub mean: bool,
    /// A sum of squared deviations: each element `x` of output `o` enters
    /// the sum as `(x - center[o])^2`, `center` holding one f32 per output
    /// in row-major order at offset 0 (a variance's second pass; `op` is
    /// `Sum` and the input and output are f32).
    pub center: Option<TensorRef<'a>>,
}

impl ReduceCall<'_> {
    /// The kept axes of the input (one output each, row-major), coalesced.
    pub fn kept_layout(&self) -> Layout {
        let l = &self.input.layout;
        Layout::from_parts(
            l.dims()[..self.kept].into(),
            l.strides()[..self.kept].into(),
            l.offset(),
        )
        .coalesced()
    }

    /// The reduced axes of the input at offset 0, coalesced (row-major
    /// order, so arg ops' indices are unchanged).
    pub fn reduced_layout(&self) -> Layout {
        let l = &self.input.layout;
        Layout::from_parts(
            l.dims()[self.kept..].into(),
            l.strides()[self.kept..].into(),
            0,
        )
        .coalesced()
    }
}

/// Runs a reduction on the backend that holds its output.
///
/// # Errors
/// GPU failures and device limits.
pub(crate) fn reduce(call: &ReduceCall) -> Result<()> {
    check_bounds(&call.input)?;
    check_bounds(&call.out)?;
    if let Some(center) = &call.center {
        check_bounds(center)?;
        let outputs = call.out.layout.numel();
        let plain = center.layout.numel() == outputs
            && center.layout.is_contiguous()
            && center.layout.offset() == 0;
        let f32s = [call.input.dtype, center.dtype, call.out.dtype] == [KernelType::F32; 3];
        if !(plain && f32s && call.op == ReduceOp::Sum && !call.mean) {
            return Err(Error::internal(
                "reduce",
                "a centered reduction takes one contiguous f32 center per output of an f32 sum",
            ));
        }
    }
    match &**call.out.storage {
        Storage::Cpu(s) => cpu::profiled("reduce", || cpu::reduce(s, call)),
        Storage::Gpu(s) => gpu::reduce(s, call),
    }
}

/// One (batched) matrix product `out = a @ b`: `a` is `[batch.., m, k]`,
/// `b` is `[batch.., k, n]` (batch axes already broadcast, possibly with
/// stride 0) and `out` a fresh row-major `[batch.., m, n]`. Operands may be
/// any view; kernels read them through their strides.
pub(crate) struct MatmulCall<'a> {
    pub a: TensorRef<'a>,
    pub b: TensorRef<'a>,
    pub out: TensorRef<'a>,
}

impl MatmulCall<'_> {
    /// (m, k, n).
    pub fn dims(&self) -> (usize, usize, usize) {
        let a = self.a.layout.dims();
        let b = self.b.layout.dims();
        let r = a.len();
        (a[r - 2], a[r - 1], b[r - 1])
    }

    /// The batch axes of `t` (all but the last two), at `t`'s offset.
    pub fn batch_layout(t: &TensorRef) -> Layout {
        let l = &t.layout;
        let r = l.rank() - 2;
        Layout::from_parts(l.dims()[..r].into(), l.strides()[..r].into(), l.offset())
    }

    /// (row stride, column stride) of the matrices of `t`.
    pub fn matrix_strides(t: &TensorRef) -> (isize, isize) {
        let s = t.layout.strides();
        (s[s.len() - 2], s[s.len() - 1])
    }
}

/// Runs a matrix product on the backend that holds its output.
///
/// # Errors
/// GPU failures and device limits.
pub(crate) fn matmul(call: &MatmulCall) -> Result<()> {
    check_bounds(&call.a)?;
    check_bounds(&call.b)?;
    check_bounds(&call.out)?;
    match &**call.out.storage {
        Storage::Cpu(s) => cpu::profiled("matmul", || cpu::matmul(s, call)),
        Storage::Gpu(s) => gpu::matmul(s, call),
    }
}

/// One scan: each line of `input` along its last axis (the op layer moved
/// the scanned axis there) becomes the running sums or products written
/// along the last axis of `out`, a fresh tensor viewed the same way.
pub(crate) struct ScanCall<'a> {
    pub op: ScanOp,
    pub input: TensorRef<'a>,
    pub out: TensorRef<'a>,
}

/// (lines, step) of `t` for kernels that walk lines along the last axis:
/// the layout of all axes but the last (at `t`'s offset), and the last
/// axis's stride.
pub(crate) fn lines(t: &TensorRef) -> (Layout, isize) {
    let l = &t.layout;
    let r = l.rank() - 1;
    (
        Layout::from_parts(l.dims()[..r].into(), l.strides()[..r].into(), l.offset()),
        l.strides()[r],
    )
}

impl ScanCall<'_> {
    /// Elements per line.
    pub fn length(&self) -> usize {
        self.input.layout.dims().last().copied().unwrap_or(1)
    }
}

/// Runs a scan on the backend that holds its output.
///
/// # Errors
/// GPU failures and device limits.
pub(crate) fn scan(call: &ScanCall) -> Result<()> {
    check_bounds(&call.input)?;
    check_bounds(&call.out)?;
    match &**call.out.storage {
        Storage::Cpu(s) => cpu::profiled("scan", || cpu::scan(s, call)),
        Storage::Gpu(s) => gpu::scan(s, call),
    }
}

/// One sort: the lines of `input` along its last axis (the op layer moved
/// the sorted axis there) are sorted stably, ascending with NaN last (or,
/// with `descending`, descending with NaN first), and the position along
/// the line of each element in sorted order is written along the last axis
/// of `out`, a fresh i32 tensor viewed the same way. Equal elements (and
/// -0 and +0) keep their order.
pub(crate) struct SortCall<'a> {
    pub input: TensorRef<'a>,
    pub out: TensorRef<'a>,
    pub descending: bool,
}

impl SortCall<'_> {
    /// Elements per line.
    pub fn length(&self) -> usize {
        self.input.layout.dims().last().copied().unwrap_or(1)
    }
}

/// Runs a sort on the backend that holds its output.
///
/// # Errors
/// GPU failures and device limits.
pub(crate) fn sort(call: &SortCall) -> Result<()> {
    check_bounds(&call.input)?;
    check_bounds(&call.out)?;
    match &**call.out.storage {
        Storage::Cpu(s) => cpu::profiled("sort", || cpu::sort(s, call)),
        Storage::Gpu(s) => gpu::sort(s, call),
    }
}

/// One run of a user's WGSL kernel (GPU only; the op layer refuses the
/// CPU): each input read through its layout broadcast to `out` (for the
/// element at hand) and through its own layout (for `NAME_at`).
pub(crate) struct CustomCall<'a> {
    pub op: &'static str,
    pub spec: &'a CustomSpec,
    pub inputs: Vec<(TensorRef<'a>, Layout)>,
    pub scalars: Vec<TypedScalar>,
    pub out: TensorRef<'a>,
}

/// Runs a custom kernel on the GPU that holds its output.
///
/// # Errors
/// GPU failures, device limits and WGSL that does not compile.
pub(crate) fn custom(call: &CustomCall) -> Result<()> {
    for (input, _) in &call.inputs {
        check_bounds(input)?;
    }
    check_bounds(&call.out)?;
    match &**call.out.storage {
        Storage::Cpu(_) => Err(Error::internal(call.op, "a custom kernel reached the CPU")),
        Storage::Gpu(s) => gpu::custom(s, call),
    }
}

/// The longest line a [`SoftmaxCall`] takes, on every device (the GPU
/// walks a line with one workgroup, and lavapipe's loop limit bounds that
/// walk); ops compose longer softmaxes from reductions.
pub(crate) const MAX_SOFTMAX_LINE: usize = 1 << 20;

/// One softmax: each line of `input` along its last axis (the op layer
/// moved the softmax axis there) becomes `exp(x - max) / sum(exp(x - max))`
/// (or, with `log`, `(x - max) - log(sum(exp(x - max)))`) along the last
/// axis of `out`, a fresh float tensor of the input's dtype viewed the same
/// way.
pub(crate) struct SoftmaxCall<'a> {
    pub log: bool,
    pub input: TensorRef<'a>,
    pub out: TensorRef<'a>,
}

impl SoftmaxCall<'_> {
    /// Elements per line.
    pub fn length(&self) -> usize {
        self.input.layout.dims().last().copied().unwrap_or(1)
    }
}

/// Runs a softmax on the backend that holds its output.
///
/// # Errors
/// GPU failures and device limits.
pub(crate) fn softmax(call: &SoftmaxCall) -> Result<()> {
    check_bounds(&call.input)?;
    check_bounds(&call.out)?;
    match &**call.out.storage {
        Storage::Cpu(s) => cpu::profiled("softmax", || cpu::softmax(s, call)),
        Storage::Gpu(s) => gpu::softmax(s, call),
    }
}

/// The axis an index tensor addresses: which one (for error reports), its
/// extent and its stride in the indexed tensor, and the positions along it
/// that one call touches.
#[derive(Debug, Clone, Copy)]
pub(crate) struct IndexedAxis {
    pub axis: usize,
    pub size: usize,
    pub stride: isize,
    /// The call touches positions `first..first + count` along the axis,
    /// and the indexed layout (`src` of a gather, `out` of a scatter) is
    /// at position `first`: indices that resolve outside are skipped
    /// without a fault. All of the axis (`first` 0, `count` `size`) but in
    /// the parts of a GPU op over a view larger than one storage binding
    /// (`ops/binding_parts.rs`); the CPU takes only the whole axis.
    pub first: usize,
    pub count: usize,
}

impl IndexedAxis {
    /// All of axis `axis`, of extent `size` and stride `stride`.
    pub fn whole(axis: usize, size: usize, stride: isize) -> IndexedAxis {
        IndexedAxis {
            axis,
            size,
            stride,
            first: 0,
            count: size,
        }
    }

    /// True when the call touches all of the axis.
    pub fn is_whole(&self) -> bool {
        self.first == 0 && self.count == self.size
    }

    /// The position along the axis that `raw` (an i32 or u32 index)
    /// names: `-size..size` for signed indices (negative ones count from
    /// the end, as NumPy), `0..size` for unsigned; `None` outside.
    pub fn resolve(&self, raw: i64) -> Option<usize> {
        let size = self.size as i64;
        let k = if raw < 0 { raw + size } else { raw };
        (0..size).contains(&k).then_some(k as usize)
    }
}

/// Indexing that reads (take, index_select, gather): output element `o`
/// is the element of the source at `src`'s position for `o` plus
/// `target.stride` times the index at `index`'s position for `o`. Both are
/// layouts over the output's coordinates (stride 0 where they do not vary).
pub(crate) struct GatherCall<'a> {
    pub op: IndexOp,
    pub src: TensorRef<'a>,
    pub index: TensorRef<'a>,
    /// A fresh row-major tensor.
    pub out: TensorRef<'a>,
    pub target: IndexedAxis,
}

/// Runs a gather on the backend that holds its output.
///
/// # Errors
/// `Error::Index` on the CPU for an out-of-range index; GPU failures and
/// device limits (the GPU reports out-of-range indices at the next readback).
pub(crate) fn gather(call: &GatherCall) -> Result<()> {
    check_bounds(&call.src)?;
    check_bounds(&call.index)?;
    check_bounds(&call.out)?;
    match &**call.out.storage {
        Storage::Cpu(s) => cpu::profiled("gather", || cpu::gather(s, call)),
        Storage::Gpu(s) => gpu::gather(s, call),
    }
}

/// Indexing that writes (scatter, scatter_add) in place: along each line
/// (the index's last axis, to which the op layer moved the scatter axis)
/// element `i` of `src` goes to the destination at `out`'s position for
/// the line plus `target.stride` times the index. `out` is a layout over
/// the index's coordinates with stride 0 along the line; `src` and `index`
/// have the index's shape. Lines write distinct elements; within a line the
/// writes happen in order.
pub(crate) struct ScatterCall<'a> {
    pub op: IndexOp,
    pub out: TensorRef<'a>,
    pub src: TensorRef<'a>,
    pub index: TensorRef<'a>,
    pub target: IndexedAxis,
}

/// Runs a scatter on the backend that holds its destination.
///
/// # Errors
/// `Error::Index` on the CPU for an out-of-range index (nothing is written
/// then); GPU failures and device limits (the GPU skips out-of-range
/// writes and reports them at the next readback).
pub(crate) fn scatter(call: &ScatterCall) -> Result<()> {
    check_bounds(&call.src)?;
    check_bounds(&call.index)?;
    check_bounds(&call.out)?;
    match &**call.out.storage {
        Storage::Cpu(s) => cpu::profiled("scatter", || cpu::scatter(s, call)),
        Storage::Gpu(s) => gpu::scatter(s, call),
    }
}

/// Every element a kernel touches must lie inside its storage: the op layer
/// guarantees it, and this check keeps a bug there from becoming an
/// out-of-bounds access in the CPU loops.
fn check_bounds(t: &TensorRef) -> Result<()> {
    match t.layout.span() {
        Some((_, last)) if last >= t.storage.len() => Err(Error::internal(
            "kernel",
            format!(
                "view {:?} reaches element {last} of a storage of {}",
                t.layout,
                t.storage.len()
            ),
        )),
        _ => Ok(()),
    }
}
