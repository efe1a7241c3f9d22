//! # webtensor
//!
//! A GPU-first tensor library on WebGPU (wgpu) with a CPU fallback that runs
//! every op with the same semantics.
//!
//! - A [`Tensor`] is a cheap handle: shared storage + [`Layout`] (shape,
//!   signed strides, offset) + [`DType`] + [`Device`].
//! - Views ([`s!`] slicing with steps and negative steps, `permute`,
//!   `transpose`, `broadcast_to`, `flip`, `squeeze`, reshape-as-view) never
//!   copy; GPU kernels read every operand through strides and offsets.
//! - In-place ops (`add_`, `fill_`, `assign` ...) write through views.
//! - GPU work is recorded and submitted in batches; readback flushes.
//! - In the browser (wasm32 on WebGPU) only the async forms exist
//!   (`Device::gpu_async`, `Tensor::to_vec_async` ...); without WebGPU the
//!   default device is the CPU, which runs every op.
//!
//! ```
//! use webtensor::{s, DType, Device, Tensor};
//! # fn main() -> webtensor::Result<()> {
//! let dev = Device::cpu(); // or Device::gpu()? / Device::default_device()?
//! let a = Tensor::arange(0.0f32, 6.0, 1.0, &dev)?.reshape([2, 3])?;
//! let b = Tensor::ones([3], DType::F32, &dev)?;
//! let c = a.add(&b)?.mul_scalar(2.0)?;                 // broadcasting
//! assert_eq!(c.to_vec::<f32>()?, vec![2.0, 4.0, 6.0, 8.0, 10.0, 12.0]);
//!
//! // Views share storage; in-place ops write through them.
//! a.slice(s![.., ..;2])?.fill_(-1.0)?;
//! assert_eq!(a.to_vec::<f32>()?, vec![-1.0, 1.0, -1.0, -1.0, 4.0, -1.0]);
//! # Ok(())
//! # }
//! ```
//!
//! ## The ops by family
//!
//! Ops return [`Result`] (most are methods, `linalg`'s are functions; a
//! few views that cannot fail, such as [`Tensor::t`], return the tensor)
//! and run on both devices with the same results, but for f64 (the CPU
//! only) and an index out of range, which a GPU reports at the next
//! readback (the README's "A short tour" goes through them family by
//! family).
//!
//! - Creation: [`Tensor::from_slice`], [`Tensor::zeros`], [`Tensor::full`],
//!   [`Tensor::arange`], [`Tensor::linspace`], [`Tensor::eye`],
//!   [`Tensor::rand`], [`Tensor::zeros_like`] ...
//! - Views (no copy): [`Tensor::slice`] with [`s!`], [`Tensor::reshape`]
//!   (one extent may be `-1`; see [`ShapeSpec`]; a copy where the strides
//!   allow no view), [`Tensor::permute`],
//!   [`Tensor::t`], [`Tensor::broadcast_to`], [`Tensor::diagonal`],
//!   [`Tensor::narrow`] ...
//! - Elementwise: `exp log tan sqrt ...`, `add mul floor_divide pow ...`
//!   (and `_scalar` / in-place `_` forms), comparisons, [`Tensor::clamp`],
//!   [`Tensor::isnan`], [`Tensor::isclose`], [`Tensor::where_cond`]; with
//!   operators `+ - * / %` (tensors and scalars on the right; `f64`,
//!   `i64`, `f16`, `bf16`, `Complex32` and `Scalar` on the left), `+=`
//!   and friends in place, `-x`, and `& | ^ !` for bool.
//! - Reductions and norms: [`Tensor::sum`], [`Tensor::mean`],
//!   [`Tensor::var`], [`Tensor::argmax`], [`Tensor::norm`] ... over [`Axes`].
//! - Along an axis: [`Tensor::cumsum`], [`Tensor::softmax`],
//!   [`Tensor::sort`], [`Tensor::argsort`], [`Tensor::topk`],
//!   [`Tensor::roll`].
//! - Products and matrices: [`Tensor::matmul`], [`Tensor::dot`],
//!   [`Tensor::triu`], [`Tensor::diag`]; linear algebra in [`linalg`]
//!   (`solve`, `cholesky`, `lu`, `qr`, `svd`, `eigh`, `lstsq` ...).
//! - Joins, padding and indexing: [`Tensor::concat`], [`Tensor::stack`],
//!   [`Tensor::pad`] ([`PadMode`]), [`Tensor::take`], [`Tensor::gather`],
//!   [`Tensor::scatter`], [`Tensor::masked_fill`].
//! - Complex: [`Tensor::complex`], [`Tensor::real`], [`Tensor::imag`].
//! - Files: [`io`] (`.npy`, `.npz`, safetensors, GGUF). Interop:
//!   [`Tensor::from_ndarray`] and [`Tensor::to_ndarray`]; on a GPU,
//!   [`Device::from_wgpu`], [`Tensor::gpu_buffer`],
//!   [`Tensor::from_gpu_buffer`], [`Tensor::write_to_texture`].
//! - Profiles: [`Device::profile`] ([`Profile`]).
//! - Coming from NumPy or PyTorch: [`doc::webtensor_for_numpy_users`], the
//!   everyday calls side by side.
//! - Captured steps, run again without recording: [`Device::capture`],
//!   [`Graph::run`].
//! - Reading back: [`Tensor::to_vec`], [`Tensor::item`], the `_async`
//!   forms; `Display` prints as NumPy does.
#![warn(missing_docs)]
// In the browser wgpu's handles are neither Send nor Sync (one thread, the
// page's); the same Arc-based code serves both targets.
#![cfg_attr(target_arch = "wasm32", allow(clippy::arc_with_non_send_sync))]

mod backend;
mod clock;
mod device;
pub mod doc;
mod dtype;
mod error;
mod graph;
mod grid;
mod index;
mod interop;
pub mod io;
mod layout;
mod number_format;
mod op;
mod ops;
mod profile;
mod profile_region;
mod profiling;
mod promotion;
mod quant;
mod scalar;
mod shape;
mod shape_spec;
mod tensor;

pub use backend::gpu::{GpuOptions, MatmulPrecision, MatmulTile, TunedMatmul};
pub use device::{Device, DeviceInfo, DeviceKind, DeviceStats, Persist, WeakDevice};
pub use dtype::{DType, Element};
pub use error::{Error, Result};
pub use graph::Graph;
pub use grid::{Grid1, Grid2, Grid3, Grid4, Point};
pub use half::{bf16, f16};
#[doc(hidden)]
pub use index::Stepped;
pub use index::{NewAxis, SliceItem};
pub use interop::{ColorMap, GpuBuffer};
pub use layout::Layout;
pub use num_complex::Complex32;
pub use ops::linalg;
pub use ops::{
    Activation, Attention, Axes, Conv, ConvPadding, CustomKernel, Fft, FftNorm, Generator,
    Interpolation, PadMode, Pair, Pool, QTensor, Quantiles, Resize, Rope, RopeScaling, RopeStyle,
    Sampling, Side, SortOrder, Stft, TopK, Unique,
};
pub use profile::{Profile, ProfiledKernel, ProfiledOp, ProfiledRegion, ProfiledSubmit};
pub use quant::GgmlType;
pub use scalar::Scalar;
pub use shape::{MAX_ELEMENTS, MAX_RANK, Shape, broadcast_shapes};
pub use shape_spec::ShapeSpec;
pub use tensor::Tensor;
/// The wgpu crate webtensor runs on, for [`Device::from_wgpu`],
/// [`Tensor::from_gpu_buffer`] and [`GpuBuffer`].
pub use wgpu;

/// The README's examples, compiled and run as doctests so they stay true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
