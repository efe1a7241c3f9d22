//! Tensors as wgpu buffers and wgpu buffers as tensors; a [`Device`] on the
//! application's wgpu device (see the module docs of `interop` for the
//! ordering rule).

use crate::backend::Storage;
use crate::backend::gpu::{GpuContext, GpuOptions, interop};
use crate::device::Device;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::shape::Shape;
use crate::tensor::Tensor;
use std::sync::Arc;

impl Device {
    /// A device on a wgpu device and queue the application opened (its
    /// renderer's, say): webtensor records into that device and submits to
    /// that queue. Limits and features are read from the device; f16 is
    /// native when it was opened with `SHADER_F16`, packed otherwise.
    /// `info` (from `adapter.get_info()`) names it in `Device::info`. The
    /// application keeps its handler of uncaptured errors; the device's
    /// lost callback becomes webtensor's (wgpu keeps one a device): hear
    /// of a loss through [`Device::on_lost`]. So wrap a wgpu device once
    /// (share the handle, or clone it): a second wrap takes the callback,
    /// and the first handle then learns of a loss only from its failing
    /// calls (`Error::Gpu`, not `Error::DeviceLost`). See the module docs
    /// for the ordering rule.
    ///
    /// # Errors
    /// `Error::Argument` naming `Device::from_wgpu` for a `WEBTENSOR_*`
    /// setting of the environment set to a value it does not take, as
    /// [`Device::gpu_async`] (`WEBTENSOR_FUSION=2`, `WEBTENSOR_MEMORY_CAP=1GiB`),
    /// or for a device opened without compute shaders or storage buffers
    /// (a limit such as `max_storage_buffers_per_shader_stage` of 0, as
    /// WebGL2's downlevel limits have).
    pub fn from_wgpu(
        info: &wgpu::AdapterInfo,
        device: wgpu::Device,
        queue: wgpu::Queue,
        options: GpuOptions,
    ) -> Result<Device> {
        let ctx = GpuContext::from_wgpu("Device::from_wgpu", info, device, queue, &options)?;
        Ok(Device::from_gpu_context(Arc::new(ctx), options, false))
    }

    /// The wgpu device and queue of a GPU device (for an application that
    /// lets webtensor open the device and draws with it too); `None` on the
    /// CPU.
    pub fn wgpu(&self) -> Option<(wgpu::Device, wgpu::Queue)> {
        self.gpu_context().map(|ctx| ctx.wgpu_handles())
    }
}

/// A tensor's device buffer, handed to the application by
/// [`Tensor::gpu_buffer`]. Element `[i, j, ...]` starts at byte
/// `byte_offset + (i * strides[0] + j * strides[1] + ...) * element_bytes`
/// (strides in elements, possibly negative or zero), little-endian: f16 and
/// bf16 in 2 bytes, u8 and bool in 1 (0 or 1), i64 in 8 (the low word
/// first), c64 as an f32 pair. The buffer stays
/// this tensor's (never reused by the pool) while this value lives, and
/// once handed out it never goes back to the pool, even after the tensor
/// is dropped: the application may destroy it (after which the tensor's
/// own reads and writes fail, as the batch that meets it).
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
    /// `array<f32>`, `array<i32>`, `array<u32>` (also u8, bool, bf16 and
    /// packed f16, several to a word), `array<f16>`, or
    /// `array<vec2<u32>>` (i64, the low word first).
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

impl Tensor {
    /// This tensor's device buffer and where its elements are in it (any
    /// view: see [`GpuBuffer`] for the addressing), after submitting every
    /// recorded op, so that work the application submits next sees them.
    ///
    /// # Errors
    /// `Error::Argument` naming `gpu_buffer` for a CPU tensor; `Error::Gpu`
    /// when the submit fails.
    pub fn gpu_buffer(&self) -> Result<GpuBuffer> {
        // The application may write the buffer: a host copy kept for a
        // recovery goes stale.
        self.note_write();
        let storage = self.storage();
        let (buffer, wgsl_array) = interop::hand_out("gpu_buffer", &storage)?;
        let element_bytes = interop::stored_layout(self.dtype()).1;
        Ok(GpuBuffer {
            buffer,
            byte_offset: self.offset() as u64 * element_bytes,
            element_bytes,
            dtype: self.dtype(),
            shape: self.dims().to_vec(),
            strides: self.strides().to_vec(),
            wgsl_array,
            _storage: Arc::clone(&storage),
        })
    }

    /// [`Tensor::gpu_buffer`] of a row-major copy (this tensor itself when
    /// it is already contiguous), for consumers that need a dense layout.
    ///
    /// # Errors
    /// As [`Tensor::gpu_buffer`].
    pub fn contiguous_gpu_buffer(&self) -> Result<GpuBuffer> {
        interop::check_on_gpu("contiguous_gpu_buffer", &self.storage())?;
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
    /// another wgpu device or instance, a mapped buffer (natively; unmap
    /// it first), or one already wrapped as a dtype
    /// stored otherwise; `Error::Shape` when the elements do not fit the
    /// buffer (a tensor's own buffer: its elements, though the buffer may
    /// be larger); `Error::UnsupportedDType` for f64; `Error::TooLarge` past the
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
        interop::check_wrappable(OP, &ctx, buffer)?;
        let element_bytes = interop::stored_layout(dtype).1;
        if !byte_offset.is_multiple_of(element_bytes) {
            return Err(Error::argument(
                OP,
                format!(
                    "byte offset {byte_offset} is not a multiple of {element_bytes}, the size of a {dtype} element"
                ),
            ));
        }
        let size = buffer.size();
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
        let mut layout = Layout::contiguous(shape);
        if layout.numel() > 0 {
            layout = Layout::from_parts(
                layout.shape().clone(),
                layout.strides().into(),
                (byte_offset / element_bytes) as usize,
            );
        }
        let storage = interop::wrap(OP, &ctx, buffer, dtype)?;
        // A buffer handed out before is its tensor's storage again, which
        // may hold fewer elements than the buffer's (rounded up) size: a
        // shape past them read the pool's stale bytes.
        if let Storage::Gpu(s) = &*storage {
            let holds = s.len / dtype.stored_as().1;
            let first = (byte_offset / element_bytes) as usize;
            if first.saturating_add(layout.numel()) > holds {
                return Err(Error::shape(
                    OP,
                    format!(
                        "{} elements of {dtype} from byte {byte_offset} do not fit the {holds} of the tensor the buffer holds",
                        layout.numel()
                    ),
                ));
            }
        }
        Ok(Tensor::from_parts(storage, layout, dtype, device.clone()))
    }
}
