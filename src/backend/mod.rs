//! Backends: where storage lives and where kernels run.
//!
//! `ops/` validates user input and computes output layouts, then hands a
//! [`Call`] (one of the structs of `calls.rs`) to [`run`] (or the family's
//! function here); the backend of the destination's storage executes it.
//! This file holds [`Storage`] and that dispatch. Nothing in here re-checks
//! user input.

mod attention;
mod calls;
mod count;
pub(crate) mod cpu;
mod custom_spec;
pub(crate) mod gpu;
pub(crate) mod kept;
#[cfg(test)]
mod layering;
mod linalg;
pub(crate) mod random;
pub(crate) mod recycle;
mod search;

use crate::dtype::{Element, KernelType};
use crate::error::{Error, Result};
use crate::op::ReduceOp;
use crate::quant::GgmlType;
pub(crate) use attention::{AttentionCall, attention};
pub(crate) use calls::{
    Call, ConvCall, ConvResidual, CustomCall, DepthwiseCall, Deviation, FftCall, FftRead, FftTwist,
    GatherCall, IndexedAxis, Input, Inputs, MAX_ANTIALIAS_TAPS, MAX_SOFTMAX_LINE, MatmulCall,
    NormCall, PoolCall, QuantCall, ReduceCall, ResizeCall, SCAN_PASS, Sampling, ScanCall,
    ScatterCall, SoftmaxCall, SortCall, StorageRef, TensorRef, lines,
};
pub(crate) use count::{CountCall, count};
pub(crate) use custom_spec::{CustomSpec, CustomSpecs};
pub(crate) use gpu::ConstKey;
pub(crate) use gpu::fft_chirp::{bluestein_kernel, chirp, chirp_len, pairs as chirp_pairs};
pub(crate) use gpu::{K_SLICE, QUANT_MAX_ROWS, QUANT_TILED_ROWS, WINDOW_TAPS, is_wgsl_line_break};
pub(crate) use linalg::{
    Factor, FactorCall, HouseholderCall, JACOBI_CONVERGED, JACOBI_ROTATED, JACOBI_SIGNIFICANT,
    JACOBI_UNFINISHED, JacobiCall, LINALG_BLOCK, Spectral, SpectralCall, TriangularCall, factor,
    householder, jacobi, spectral, triangular,
};
pub(crate) use random::{Draw, RandomCall, random};
pub(crate) use search::{SearchCall, search};
use std::sync::Arc;

/// Where fresh storage goes: host memory, whose ops run on a device's
/// threads, or a GPU.
#[derive(Clone, Copy)]
pub(crate) enum Place<'a> {
    Host(&'a cpu::Threads),
    Gpu(&'a Arc<gpu::GpuContext>),
}

/// The memory behind one or more tensors.
pub(crate) enum Storage {
    /// Host memory.
    Cpu(cpu::CpuStorage),
    /// A device buffer.
    Gpu(gpu::GpuStorage),
}

impl Storage {
    /// Fresh storage for `len` elements of `dtype` at `place` whose values
    /// are unspecified (a pooled buffer's, on either device): the caller
    /// writes every element before anyone reads one.
    ///
    /// # Errors
    /// `Error::OutOfMemory` when the host refuses the allocation or the GPU's
    /// memory cap is reached; `Error::TooLarge` over the GPU's limits.
    pub fn alloc(place: Place, op: &'static str, dtype: KernelType, len: usize) -> Result<Storage> {
        Ok(match place {
            Place::Host(threads) => Storage::Cpu(cpu::CpuStorage::new(
                cpu::CpuData::for_overwrite(op, dtype, len)?,
                threads.clone(),
            )),
            Place::Gpu(ctx) => Storage::Gpu(gpu::GpuStorage::uninit(ctx, op, dtype, len)?),
        })
    }

    /// As [`Storage::alloc`], but zeros in host memory (still unspecified
    /// on a GPU, where the caller fills it).
    ///
    /// # Errors
    /// As [`Storage::alloc`].
    pub fn alloc_host_zeros(
        place: Place,
        op: &'static str,
        dtype: KernelType,
        len: usize,
    ) -> Result<Storage> {
        Ok(match place {
            Place::Host(threads) => Storage::Cpu(cpu::CpuStorage::new(
                cpu::CpuData::zeros(op, dtype, len)?,
                threads.clone(),
            )),
            Place::Gpu(_) => Storage::alloc(place, op, dtype, len)?,
        })
    }

    /// Whether `len` elements of `dtype` fit one storage at `place`, asked
    /// before a host builds them (a GPU's largest buffer may be far below
    /// the host's memory).
    ///
    /// # Errors
    /// As [`Storage::alloc`] on a GPU, before allocating.
    pub fn check_fits(place: Place, op: &'static str, dtype: KernelType, len: usize) -> Result<()> {
        match place {
            Place::Gpu(ctx) => gpu::GpuStorage::check_fits(ctx, op, dtype, len),
            Place::Host(_) => Ok(()),
        }
    }

    /// Storage holding `data`: uploaded to the GPU at `place` (and kept
    /// there as a host copy for a recovery where the device keeps them,
    /// see `kept.rs`), or kept in host memory.
    ///
    /// # Errors
    /// As [`Storage::alloc`] on a GPU.
    pub fn from_vec<T: Element>(place: Place, op: &'static str, data: Vec<T>) -> Result<Storage> {
        Ok(match place {
            Place::Host(threads) => Storage::Cpu(cpu::CpuStorage::new(
                cpu::CpuData::from_vec(data),
                threads.clone(),
            )),
            Place::Gpu(ctx) => {
                let storage = gpu::GpuStorage::upload(ctx, op, &data)?;
                if ctx.host_copies() {
                    let kept = storage.keep(ctx);
                    kept.set_copy(cpu::CpuData::from_vec(data), Some(kept.writes()));
                }
                Storage::Gpu(storage)
            }
        })
    }

    /// The f32 table `make()` gives for `key`: on a GPU the one the device
    /// keeps, made and uploaded by the first call that asks for it (see
    /// `gpu/constants.rs`); on the CPU made anew. Nothing may write it.
    ///
    /// # Errors
    /// As [`Storage::from_vec`].
    pub fn constant(
        place: Place,
        op: &'static str,
        key: ConstKey,
        make: impl FnOnce() -> Vec<f32>,
    ) -> Result<Storage> {
        match place {
            Place::Gpu(ctx) => Ok(Storage::Gpu(gpu::GpuStorage::constant(ctx, op, key, make)?)),
            Place::Host(_) => Storage::from_vec(place, op, make()),
        }
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
        match self {
            Storage::Cpu(_) if n == 0 => Ok(Vec::new()),
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
            // Even an empty read: on a lost device it is `DeviceLost`, as
            // every readback (it submits nothing, so an index fault waits
            // for the next read that does).
            Storage::Gpu(s) => {
                let bytes = s.read_bytes(op, start, n).await?;
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

    /// True when the whole storage can be bound at once: always in host
    /// memory; on a GPU when the buffer fits one storage binding.
    pub fn fits_one_binding(&self) -> bool {
        match self {
            Storage::Cpu(_) => true,
            Storage::Gpu(s) => s.size() <= s.binding_limit(),
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

    /// Every element of a GPU storage as host data of its stored type (after
    /// the device's pending work); `None` for host storage.
    ///
    /// # Errors
    /// GPU readback failures (see [`Storage::read`]).
    pub async fn read_all(&self, op: &'static str) -> Result<Option<cpu::CpuData>> {
        let Storage::Gpu(s) = self else {
            return Ok(None);
        };
        let n = s.len();
        macro_rules! read {
            ($t:ty) => {
                cpu::CpuData::from_vec(self.read::<$t>(op, 0, n).await?)
            };
        }
        Ok(Some(match s.dtype {
            KernelType::F32 => read!(f32),
            KernelType::F16 => read!(half::f16),
            KernelType::BF16 => read!(half::bf16),
            KernelType::F64 => read!(f64),
            KernelType::I32 => read!(i32),
            KernelType::I64 => read!(i64),
            KernelType::U32 => read!(u32),
            KernelType::U8 => read!(u8),
            KernelType::Bool => read!(bool),
        }))
    }

    /// The host storage this is, for a CPU kernel of `op`.
    ///
    /// # Errors
    /// `Error::DeviceLost` naming `op` for a tensor of a lost GPU (one whose
    /// handle went on on the CPU after the loss, see `Device::recover`);
    /// `Error::Internal` for another GPU storage.
    pub fn host(&self, op: &'static str) -> Result<&cpu::CpuStorage> {
        match self {
            Storage::Cpu(s) => Ok(s),
            Storage::Gpu(s) => Err(s.elsewhere(op, "in host memory")),
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

/// `s`, a destination on a GPU, unless its device is lost: then it fails
/// as one, whatever its operands are (a recovery may have replaced their
/// device, and a kernel would meet them as strangers).
///
/// # Errors
/// `Error::DeviceLost` naming `op`.
#[inline]
fn live<'a>(op: &'static str, s: &'a gpu::GpuStorage) -> Result<&'a gpu::GpuStorage> {
    s.ctx.check_lost(op)?;
    Ok(s)
}

/// Runs `call` on the backend that holds the destination.
///
/// # Errors
/// GPU failures (device lost, out of memory) and device limits.
pub(crate) fn run(call: Call) -> Result<()> {
    check_bounds(&call.out)?;
    for input in &call.inputs {
        match input {
            Input::Tensor(t) => check_bounds(t)?,
            // A GPU kernel's scalar slot holds 32 bits; the op layer passes
            // wider i64 scalars as tensors (`Tensor::wide_scalar`).
            Input::Scalar(s)
                if s.dtype == KernelType::I64
                    && i32::try_from(s.int).is_err()
                    && matches!(**call.out.storage, Storage::Gpu(_)) =>
            {
                return Err(Error::internal(
                    call.kernel.name(),
                    format!("the i64 scalar {} reached a 32-bit slot", s.int),
                ));
            }
            Input::Scalar(_) => {}
        }
    }
    if let Storage::Cpu(s) = &**call.out.storage {
        return cpu::profiled(call.kernel.name(), s, || cpu::run(s, &call));
    }
    gpu::record_elementwise(call)
}

/// Runs a reduction on the backend that holds its output.
///
/// # Errors
/// GPU failures and device limits.
pub(crate) fn reduce(call: ReduceCall) -> Result<()> {
    check_bounds(&call.input)?;
    check_bounds(&call.out)?;
    if let Some((center, _)) = &call.center {
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
    let out = call.out.storage.clone();
    match &**out {
        Storage::Cpu(s) => cpu::profiled("reduce", s, || cpu::reduce(s, &call)),
        Storage::Gpu(s) => gpu::reduce(live("reduce", s)?, call),
    }
}

/// Runs a matrix product on the backend that holds its output.
///
/// # Errors
/// GPU failures and device limits.
pub(crate) fn matmul(call: MatmulCall) -> Result<()> {
    no_wide_kernel("matmul", &call.out.storage, call.a.dtype)?;
    check_bounds(&call.a)?;
    check_bounds(&call.b)?;
    check_bounds(&call.out)?;
    let out = call.out.storage.clone();
    match &**out {
        Storage::Cpu(s) => cpu::profiled("matmul", s, || cpu::matmul(s, &call)),
        Storage::Gpu(s) => gpu::matmul(live("matmul", s)?, call),
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
        Storage::Cpu(s) => cpu::profiled("scan", s, || cpu::scan(s, call)),
        Storage::Gpu(s) => gpu::scan(live("scan", s)?, call),
    }
}

/// Runs a sort on the backend that holds its output.
///
/// # Errors
/// GPU failures and device limits.
pub(crate) fn sort(call: &SortCall) -> Result<()> {
    no_wide_kernel("sort", &call.out.storage, call.input.dtype)?;
    check_bounds(&call.input)?;
    check_bounds(&call.out)?;
    match &**call.out.storage {
        Storage::Cpu(s) => cpu::profiled("sort", s, || cpu::sort(s, call)),
        Storage::Gpu(s) => gpu::sort(live("sort", s)?, call),
    }
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
        Storage::Gpu(s) => gpu::custom(live(call.op, s)?, call),
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
        Storage::Cpu(s) => cpu::profiled("softmax", s, || cpu::softmax(s, call)),
        Storage::Gpu(s) => gpu::softmax(live("softmax", s)?, call),
    }
}

/// Runs an FFT on the backend that holds its output.
///
/// # Errors
/// GPU failures and device limits.
pub(crate) fn fft(call: &FftCall) -> Result<()> {
    check_bounds(&call.input)?;
    check_bounds(&call.out)?;
    match &**call.out.storage {
        Storage::Cpu(s) => cpu::profiled("fft", s, || cpu::fft(s, call)),
        Storage::Gpu(s) => gpu::fft(live("fft", s)?, call),
    }
}

/// The longest line one FFT call takes on the device holding `storage`
/// (`None`: any length), and the largest prime factor its length may have.
pub(crate) fn fft_line_limit(storage: &Storage) -> Option<(usize, usize)> {
    match storage {
        Storage::Cpu(_) => None,
        Storage::Gpu(s) => Some(gpu::fft_line_limit(s)),
    }
}

/// Runs a convolution on the GPU's implicit-GEMM kernel or the CPU's
/// products over patches (`cpu/conv_gemm.rs`): false when the GPU's
/// kernel is not to run (dropped by its self-check, not yet probed inside
/// a capture or profile, or an image of more pixels than its grid holds
/// tiles), for the op layer to compose it instead.
///
/// # Errors
/// GPU failures and device limits; `Error::Internal` for operands that
/// are not the call's dtypes.
pub(crate) fn conv(call: &ConvCall) -> Result<bool> {
    check_bounds(&call.input)?;
    check_bounds(&call.weight)?;
    check_bounds(&call.out)?;
    let residual = call.residual.as_ref().and_then(ConvResidual::tensor);
    for t in [call.bias.as_ref(), residual].into_iter().flatten() {
        check_bounds(t)?;
    }
    match &**call.out.storage {
        Storage::Cpu(s) => cpu::profiled("conv2d", s, || cpu::conv(s, call).map(|()| true)),
        Storage::Gpu(s) => gpu::conv(live("conv", s)?, call),
    }
}

/// Runs a transposed convolution (the weight `[in, out / groups, kh, kw]`,
/// `pad` the zeros cropped before each axis): on the CPU in f32
/// (`cpu/conv_transpose.rs`) into its zeroed output, on a GPU on its
/// kernel (`gpu/conv/transposed.rs`), which writes every output: false
/// where the GPU's kernel is not to run (dropped by its self-check, not yet
/// probed inside a capture or profile, or a phase of more pixels than its
/// grid holds tiles), for the op layer to compose it.
///
/// # Errors
/// GPU failures and device limits; `Error::Internal` for operands that
/// are not the call's dtypes (f32 on the CPU).
pub(crate) fn conv_transpose(call: &ConvCall) -> Result<bool> {
    check_bounds(&call.input)?;
    check_bounds(&call.weight)?;
    check_bounds(&call.out)?;
    match &**call.out.storage {
        Storage::Cpu(s) => cpu::profiled("conv_transpose2d", s, || {
            cpu::conv_transpose(s, call).map(|()| true)
        }),
        Storage::Gpu(s) => gpu::conv_transpose(live("conv_transpose2d", s)?, call),
    }
}

/// Runs a depthwise convolution in one pass: the GPU's kernel, or the
/// CPU's (`cpu/conv.rs`).
///
/// # Errors
/// GPU failures and device limits; `Error::Internal` for operands that
/// are not the call's dtypes.
pub(crate) fn depthwise(call: &DepthwiseCall) -> Result<()> {
    check_bounds(&call.input)?;
    check_bounds(&call.weight)?;
    check_bounds(&call.out)?;
    if let Some(b) = &call.bias {
        check_bounds(b)?;
    }
    match &**call.out.storage {
        Storage::Cpu(s) => cpu::profiled("depthwise", s, || cpu::depthwise(s, call)),
        Storage::Gpu(s) => gpu::depthwise(live("depthwise", s)?, call),
    }
}

/// Runs a layer or RMS normalisation on the GPU's single-pass kernel.
///
/// # Errors
/// `Error::Internal` on the CPU (the op layer composes normalisations
/// there); GPU failures and device limits.
pub(crate) fn norm(call: &NormCall) -> Result<()> {
    for t in [
        Some(&call.input),
        call.weight.as_ref(),
        call.bias.as_ref(),
        Some(&call.out),
    ]
    .into_iter()
    .flatten()
    {
        check_bounds(t)?;
    }
    match &**call.out.storage {
        Storage::Cpu(_) => Err(Error::internal(
            "layer_norm",
            "a norm kernel call reached the CPU",
        )),
        Storage::Gpu(s) => gpu::norm(live("norm", s)?, call),
    }
}

/// Checks the quantized kernels of `ty` on the device of `blocks` (a
/// quantized weight's) now, where its first product would (on a GPU,
/// natively, outside a capture or profile); nothing on the CPU.
///
/// # Errors
/// `Error::DeviceLost` naming `op`; GPU failures and the probe's.
pub(crate) fn probe_quant(op: &'static str, blocks: &Storage, ty: GgmlType) -> Result<()> {
    match blocks {
        Storage::Cpu(_) => Ok(()),
        Storage::Gpu(s) => gpu::probe_quant(live(op, s)?, ty),
    }
}

/// Runs a product with a quantized weight, or its dequantization (see
/// [`QuantCall`]): the GPU's `quant` kernels, or the CPU's block decoders;
/// false (nothing done) where a GPU's self-check dropped the type's
/// kernels, for the op layer to decode the blocks on the host.
///
/// # Errors
/// GPU failures and device limits; `Error::Internal` for operands that
/// are not the call's dtypes.
pub(crate) fn quant(call: &QuantCall) -> Result<bool> {
    check_bounds(&call.w)?;
    check_bounds(&call.out)?;
    if let Some(x) = &call.x {
        check_bounds(x)?;
    }
    match &**call.out.storage {
        Storage::Cpu(s) => cpu::profiled("qmatmul", s, || cpu::quant(s, call)).map(|()| true),
        Storage::Gpu(s) => gpu::quant(live("qmatmul", s)?, call),
    }
}

/// Runs a pooling on the GPU's single-pass kernel.
///
/// # Errors
/// `Error::Internal` on the CPU (the op layer composes poolings there);
/// GPU failures and device limits.
pub(crate) fn pool(call: &PoolCall) -> Result<()> {
    check_bounds(&call.input)?;
    check_bounds(&call.out)?;
    match &**call.out.storage {
        Storage::Cpu(_) => Err(Error::internal(
            "pool",
            "a pooling kernel call reached the CPU",
        )),
        Storage::Gpu(s) => gpu::pool(live("pool", s)?, call),
    }
}

/// Runs a resize on the GPU's single-pass kernel.
///
/// # Errors
/// `Error::Internal` on the CPU (the op layer composes resizes there);
/// GPU failures and device limits.
pub(crate) fn resize(call: &ResizeCall) -> Result<()> {
    check_bounds(&call.input)?;
    check_bounds(&call.out)?;
    match &**call.out.storage {
        Storage::Cpu(_) => Err(Error::internal(
            "resize",
            "a resize kernel call reached the CPU",
        )),
        Storage::Gpu(s) => gpu::resize(live("resize", s)?, call),
    }
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
        Storage::Cpu(s) => cpu::profiled("gather", s, || cpu::gather(s, call)),
        Storage::Gpu(s) => gpu::gather(live("gather", s)?, call),
    }
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
        Storage::Cpu(s) => cpu::profiled("scatter", s, || cpu::scatter(s, call)),
        Storage::Gpu(s) => gpu::scatter(live("scatter", s)?, call),
    }
}

/// GPU products and sorts have no i64 kernel: the op layer composes them
/// (`Tensor::matmul`, `Tensor::order_of_words`), and this keeps a call that
/// reached one anyway from running on the 32-bit kernel.
///
/// # Errors
/// `Error::Internal` naming `op`.
fn no_wide_kernel(op: &'static str, storage: &Storage, dtype: KernelType) -> Result<()> {
    match storage {
        Storage::Gpu(_) if dtype == KernelType::I64 => Err(Error::internal(
            op,
            "an i64 call reached a 32-bit GPU kernel",
        )),
        _ => Ok(()),
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
