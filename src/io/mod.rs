//! Files: NumPy's `.npy` and `.npz`, safetensors and GGUF (conversions to
//! and from `ndarray` arrays live with the rest of the interop, in
//! `src/interop/`).
//!
//! Every format has a bytes form (any target; writing reads the tensor
//! back, so it is `async` with a blocking native form) and a file form
//! (native only). Views of any layout are written in row-major order;
//! `.npy` files in Fortran order load as transposed views without a copy.
//! int64 arrays load as i64; integer arrays of widths
//! webtensor does not hold (int8, int16, uint16, uint64) load as i32 or u32
//! when every value fits; bf16 safetensors load as bf16 (NumPy has no bf16
//! dtype, so `.npy` refuses bf16 tensors); anything else a file holds that
//! no dtype here can represent is an `Error::Format` naming the file's
//! dtype. Loading a whole archive or file is all or nothing; [`Npz`] and
//! [`Safetensors`] read one tensor at a time, by name.
//!
//! ```
//! use webtensor::{Device, Tensor, io};
//! # fn main() -> webtensor::Result<()> {
//! let dev = Device::cpu();
//! let t = Tensor::arange(0.0f32, 6.0, 1.0, &dev)?.reshape([2, 3])?;
//! let bytes = io::to_npy_bytes(&t.t())?;        // a view, written in C order
//! let back = io::from_npy_bytes(&bytes, &dev)?;
//! assert_eq!(back.dims(), &[3, 2]);
//! assert_eq!(back.to_vec::<f32>()?, vec![0.0, 3.0, 1.0, 4.0, 2.0, 5.0]);
//! # Ok(())
//! # }
//! ```

#[cfg(not(target_arch = "wasm32"))]
mod files;
mod gguf;
mod host_bytes;
mod npy;
mod npz;
mod safetensors;
mod safetensors_header;
mod zip;

pub use gguf::{GgmlType, Gguf, GgufTensorInfo, GgufValue, GgufValueType, GgufWriter};
pub use npy::{from_npy_bytes, to_npy_bytes_async};
#[cfg(not(target_arch = "wasm32"))]
pub use npy::{load_npy, save_npy, to_npy_bytes};
pub use npz::{Npz, from_npz_bytes, to_npz_bytes_async};
#[cfg(not(target_arch = "wasm32"))]
pub use npz::{load_npz, save_npz, to_npz_bytes};
pub use safetensors::{Safetensors, from_safetensors_bytes, to_safetensors_bytes_async};
#[cfg(not(target_arch = "wasm32"))]
pub use safetensors::{load_safetensors, save_safetensors, to_safetensors_bytes};
