//! Living inside an application's GPU: a [`Device`] on the application's
//! own wgpu device and queue, tensors handed out as wgpu buffers
//! ([`GpuBuffer`]), and the application's buffers wrapped as tensors
//! without a copy. The only public API that names wgpu types; it lives in
//! the backend with the rest of wgpu.
//!
//! Ordering: webtensor records ops and submits them to the queue in
//! batches (at a readback, a sync, `Device::flush`, or when a batch fills).
//! Work on one queue runs in submission order, so:
//! - before the application submits work that reads a tensor's buffer, the
//!   ops writing it must be submitted: [`Tensor::gpu_buffer`] flushes, and
//!   so does `Device::flush()`;
//! - before the application writes a buffer that recorded ops still read
//!   (`queue.write_buffer` runs before the next submit), call
//!   `Device::flush()` so those ops go first.

use super::context::GpuContext;
use super::kernel::buffer::{array_type, storage_mode};
use super::kernel::pipeline::pop_now;
use super::storage::GpuStorage;
use crate::backend::Storage;
use crate::device::Device;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::shape::Shape;
use crate::tensor::Tensor;
use std::sync::Arc;

use super::context::GpuOptions;

impl Device {
    /// A device on a wgpu device and queue the application opened (its
    /// renderer's, say): webtensor records into that device and submits to
    /// that queue. Limits and features are read from the device; f16 is
    /// native when it was opened with `SHADER_F16`, packed otherwise.
    /// `info` (from `adapter.get_info()`) names it in `Device::info`. The
    /// application keeps its handler of uncaptured errors. See the
    /// module docs for the ordering rule.
    pub fn from_wgpu(
        info: &wgpu::AdapterInfo,
        device: wgpu::Device,
        queue: wgpu::Queue,
        options: GpuOptions,
    ) -> Device {
        Device::from_gpu_context(Arc::new(GpuContext::from_wgpu(
            info, device, queue, &options,
        )))
    }

    /// The wgpu device and queue of a GPU device (for an application that
    /// lets webtensor open the device and draws with it too); `None` on the
    /// CPU.
    pub fn wgpu(&self) -> Option<(wgpu::Device, wgpu::Queue)> {
        self.gpu_context()
            .map(|ctx| (ctx.device.clone(), ctx.queue.clone()))
    }
}

/// A tensor's device buffer, handed to the application by
/// [`Tensor::gpu_buffer`]. Element `[i, j, ...]` starts at byte
/// `byte_offset + (i * strides[0] + j * strides[1] + ...) * element_bytes`
/// (strides in elements, possibly negative or zero), little-endian: f16 in 2
/// bytes, u8 and bool in 1 (0 or 1), c64 as an f32 pair. The buffer stays
/// this tensor's (never reused by the pool) while this value lives.
#[derive(Clone)]
pub struct GpuBuffer {
    /// The buffer (usage STORAGE | COPY_SRC | COPY_DST).
    pub buffer: wgpu::Buffer,
    /// The byte position of the first element.
    pub byte_offset: u64,
    /// Bytes per element.
    pub element_bytes: u64,
    /// The elements' dtype.
    pub dtype: DType,
    /// The extents.
    pub shape: Vec<usize>,
    /// The strides, in elements.
    pub strides: Vec<isize>,
    /// How webtensor's own kernels declare the buffer in WGSL:
    /// `array<f32>`, `array<i32>`, `array<u32>` (also u8, bool and packed
    /// f16, several to a word), or `array<f16>`.
    pub wgsl_array: &'static str,
    /// Keeps the storage (and so the buffer) out of the pool.
    _storage: Arc<Storage>,
}

impl std::fmt::Debug for GpuBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuBuffer")
            .field("buffer_size", &self.buffer.size())
            .field("byte_offset", &self.byte_offset)
            .field("element_bytes", &self.element_bytes)
            .field("dtype", &self.dtype)
            .field("shape", &self.shape)
            .field("strides", &self.strides)
            .field("wgsl_array", &self.wgsl_array)
            .finish()
    }
}

/// How `dtype` sits in a device buffer: its storage dtype (f32 for c64) and
/// bytes per element.
fn layout_of(dtype: DType) -> (crate::dtype::KernelType, u64) {
    let (stored, per_element) = dtype.stored_as();
    (
        stored,
        (super::storage::element_bytes(stored) * per_element) as u64,
    )
}

/// The GPU storage of `t`, or `Error::Argument` naming `op`.
fn gpu_storage<'a>(op: &'static str, t: &'a Tensor) -> Result<&'a GpuStorage> {
    match &**t.storage() {
        Storage::Gpu(s) => Ok(s),
        Storage::Cpu(_) => Err(Error::argument(
            op,
            "the tensor is on the CPU; move it to a GPU device with to_device",
        )),
    }
}

impl Tensor {
    /// This tensor's device buffer and where its elements are in it (any
    /// view: see [`GpuBuffer`] for the addressing), after submitting every
    /// recorded op, so that work the application submits next sees them.
    ///
    /// # Errors
    /// `Error::Argument` naming `gpu_buffer` for a CPU tensor; `Error::Gpu`
    /// when the submit fails.
    pub fn gpu_buffer(&self) -> Result<GpuBuffer> {
        const OP: &str = "gpu_buffer";
        let s = gpu_storage(OP, self)?;
        s.ctx.flush()?;
        let (stored, element_bytes) = layout_of(self.dtype());
        let buffer = s.buffer(OP)?;
        // Wrapped back, it is this tensor's storage again.
        s.ctx.share(&buffer, self.storage());
        Ok(GpuBuffer {
            buffer,
            byte_offset: self.offset() as u64 * element_bytes,
            element_bytes,
            dtype: self.dtype(),
            shape: self.dims().to_vec(),
            strides: self.strides().to_vec(),
            wgsl_array: array_type(storage_mode(stored, s.ctx.facts.native_f16), false),
            _storage: self.storage().clone(),
        })
    }

    /// [`Tensor::gpu_buffer`] of a row-major copy (this tensor itself when
    /// it is already contiguous), for consumers that need a dense layout.
    ///
    /// # Errors
    /// As [`Tensor::gpu_buffer`].
    pub fn contiguous_gpu_buffer(&self) -> Result<GpuBuffer> {
        gpu_storage("contiguous_gpu_buffer", self)?;
        if self.is_contiguous() {
            return self.gpu_buffer();
        }
        self.contiguous()?.gpu_buffer()
    }

    /// The application's buffer as a contiguous tensor of `shape` and
    /// `dtype` whose first element is at `byte_offset`, without a copy: ops
    /// read it in place and in-place ops write into it (views too). The
    /// buffer needs usage `STORAGE | COPY_SRC` (and `COPY_DST` if the
    /// application writes it with `queue.write_buffer`) and must belong to
    /// `device`'s wgpu device (a buffer of another device from the same
    /// wgpu `Instance` is refused; wgpu tells a buffer of another instance
    /// only by an id that may be one of this instance's: such a buffer is
    /// refused where that id is a buffer of webtensor's, so keep one
    /// instance, as webtensor does for the devices it opens); webtensor
    /// never returns it to its pool. A buffer wrapped twice, or a tensor's
    /// own buffer from [`Tensor::gpu_buffer`] wrapped back, is the same
    /// storage as before (ops that read one and write the other copy first,
    /// as for any overlapping views). The elements are laid out as
    /// [`GpuBuffer`] describes. See the module docs for ordering with the
    /// application's own work.
    ///
    /// # Errors
    /// `Error::Argument` naming `from_gpu_buffer` for a CPU device, a
    /// buffer without the usages, of a size that is not a multiple of 4, an
    /// offset that is not a multiple of the element size, a buffer of
    /// another wgpu device or instance, or one already wrapped as a dtype
    /// stored otherwise; `Error::Shape` when the elements do not fit the
    /// buffer; `Error::UnsupportedDType` for f64; `Error::TooLarge` past the
    /// device's largest buffer.
    pub fn from_gpu_buffer(
        buffer: &wgpu::Buffer,
        dtype: DType,
        shape: impl Into<Shape>,
        byte_offset: u64,
        device: &Device,
    ) -> Result<Tensor> {
        const OP: &str = "from_gpu_buffer";
        let ctx = device.gpu_context().ok_or_else(|| {
            Error::argument(OP, "the device is the CPU; wrap buffers on a GPU device")
        })?;
        let shape = shape.into();
        shape.check(OP)?;
        if dtype == DType::F64 {
            return Err(Error::UnsupportedDType {
                op: OP,
                dtype,
                device: device.to_string(),
            });
        }
        let needs = wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC;
        if !buffer.usage().contains(needs) {
            return Err(Error::argument(
                OP,
                format!(
                    "the buffer's usage is {:?}; it needs STORAGE | COPY_SRC",
                    buffer.usage()
                ),
            ));
        }
        let size = buffer.size();
        if !size.is_multiple_of(4) {
            return Err(Error::argument(
                OP,
                format!("the buffer has {size} bytes, not a multiple of 4"),
            ));
        }
        let (stored, element_bytes) = layout_of(dtype);
        let per_element = dtype.stored_as().1;
        if !byte_offset.is_multiple_of(element_bytes) {
            return Err(Error::argument(
                OP,
                format!(
                    "byte offset {byte_offset} is not a multiple of {element_bytes}, the size of a {dtype} element"
                ),
            ));
        }
        let end = (shape.numel() as u64)
            .checked_mul(element_bytes)
            .and_then(|b| b.checked_add(byte_offset));
        if end.is_none_or(|e| e > size) {
            return Err(Error::shape(
                OP,
                format!(
                    "{} elements of {dtype} from byte {byte_offset} do not fit a buffer of {size} bytes",
                    shape.numel()
                ),
            ));
        }
        let limit = ctx.facts.max_tensor_bytes();
        if size > limit {
            return Err(Error::TooLarge {
                op: OP,
                what: "buffer bytes",
                requested: size,
                limit,
            });
        }
        let mut layout = Layout::contiguous(shape);
        if layout.numel() > 0 {
            layout = Layout::from_parts(
                layout.shape().clone(),
                layout.strides().into(),
                (byte_offset / element_bytes) as usize,
            );
        }
        // A buffer wrapped or handed out before is that storage again, so
        // the overlap rules see one storage however many handles wrap it.
        if let Some((known, storage)) = ctx.shared_storage(buffer) {
            check_same_device(OP, ctx, buffer)?;
            let Storage::Gpu(s) = &*storage else {
                return Err(Error::internal(
                    OP,
                    "a shared buffer's storage is not on the GPU",
                ));
            };
            if known.size() != size || known.usage() != buffer.usage() {
                return Err(foreign(OP));
            }
            if s.dtype != stored {
                return Err(Error::argument(
                    OP,
                    format!(
                        "the buffer already holds a tensor stored as {:?}; wrap it as a dtype stored alike, not {dtype}",
                        s.dtype
                    ),
                ));
            }
            return Ok(Tensor::from_parts(storage, layout, dtype, device.clone()));
        }
        // wgpu compares buffers by their id in the instance that made them;
        // one this device made and never handed out cannot be the
        // application's.
        if ctx.pool.made(buffer) {
            return Err(foreign(OP));
        }
        check_same_device(OP, ctx, buffer)?;
        let len = (size / element_bytes) as usize * per_element;
        let storage = Arc::new(Storage::Gpu(GpuStorage::lent(
            ctx,
            buffer.clone(),
            stored,
            len,
        )));
        ctx.share(buffer, &storage);
        Ok(Tensor::from_parts(storage, layout, dtype, device.clone()))
    }
}

/// A buffer that has the identity of one of webtensor's own: wgpu tells a
/// buffer only by its id within its instance, so it is another instance's.
fn foreign(op: &'static str) -> Error {
    Error::argument(
        op,
        "the buffer has the identity of a buffer of webtensor's own that no live tensor handed out: a buffer of another wgpu::Instance (which wgpu tells only by an id that may be one of this instance's: keep one instance), or one kept after its tensor was dropped",
    )
}

/// `Error::Argument` naming `op` when `buffer` belongs to another wgpu
/// device than `ctx`'s: binding it in a bind group of this device is a
/// validation error, caught in an error scope. (In a browser the scope's
/// answer comes later; there a mismatch surfaces as a WebGPU error.)
fn check_same_device(op: &'static str, ctx: &GpuContext, buffer: &wgpu::Buffer) -> Result<()> {
    // A buffer of another instance whose id names a slot of this one that
    // holds another buffer makes wgpu-core panic ("Cannot get BufferId");
    // natively that is caught here and refused (nothing is written before
    // the lookup fails).
    #[cfg(not(target_arch = "wasm32"))]
    {
        let probe = std::panic::AssertUnwindSafe(|| probe_binding(op, ctx, buffer));
        std::panic::catch_unwind(probe).unwrap_or_else(|_| Err(foreign(op)))
    }
    #[cfg(target_arch = "wasm32")]
    probe_binding(op, ctx, buffer)
}

/// Binds `buffer` in a bind group of `ctx`'s device inside an error scope.
fn probe_binding(op: &'static str, ctx: &GpuContext, buffer: &wgpu::Buffer) -> Result<()> {
    let device = &ctx.device;
    let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
    let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
        label: Some("webtensor buffer check"),
        entries: &[wgpu::BindGroupLayoutEntry {
            binding: 0,
            visibility: wgpu::ShaderStages::COMPUTE,
            ty: wgpu::BindingType::Buffer {
                ty: wgpu::BufferBindingType::Storage { read_only: true },
                has_dynamic_offset: false,
                min_binding_size: None,
            },
            count: None,
        }],
    });
    let _group = device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: Some("webtensor buffer check"),
        layout: &layout,
        // Its first binding's worth: a buffer may be larger than a binding.
        entries: &[wgpu::BindGroupEntry {
            binding: 0,
            resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                buffer,
                offset: 0,
                size: wgpu::BufferSize::new(buffer.size().min(ctx.facts.max_storage_binding)),
            }),
        }],
    });
    match pop_now(scope) {
        Some(e) => Err(Error::argument(
            op,
            format!(
                "the buffer cannot be bound on this device ({}): {e}",
                ctx.facts.name
            ),
        )),
        None => Ok(()),
    }
}
