//! The one error type of the crate.
//!
//! Every user mistake returns an [`Error`] whose message names the operation and
//! the offending values, e.g. `add: cannot broadcast shapes [2, 3] and [4]`.

use crate::dtype::DType;

/// Result alias used throughout webtensor.
pub type Result<T> = std::result::Result<T, Error>;

/// Everything that can go wrong in webtensor, grouped by kind.
///
/// Each variant carries the name of the operation (`op`) that failed so that a
/// message read in a log points at the call.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Shapes that had to agree did not (wrong element count, incompatible
    /// broadcast, wrong number of dimensions ...).
    #[error("{op}: {msg}")]
    Shape {
        /// The operation that failed.
        op: &'static str,
        /// What did not fit, with the shapes involved.
        msg: String,
    },
    /// An axis outside `-rank..rank`.
    #[error("{op}: axis {axis} is out of range for a tensor of rank {rank}")]
    Axis {
        /// The operation that failed.
        op: &'static str,
        /// The axis as given by the caller (may be negative).
        axis: isize,
        /// The rank of the tensor.
        rank: usize,
    },
    /// An index outside the extent of an axis.
    #[error("{op}: index {index} is out of range for axis {axis} of size {size}")]
    Index {
        /// The operation that failed.
        op: &'static str,
        /// The index as given by the caller (may be negative).
        index: isize,
        /// The axis that was indexed.
        axis: usize,
        /// The extent of that axis.
        size: usize,
    },
    /// Some other invalid argument (a zero step, a bad permutation ...).
    #[error("{op}: {msg}")]
    Argument {
        /// The operation that failed.
        op: &'static str,
        /// What was wrong with the argument.
        msg: String,
    },
    /// Operands of different dtypes, or a dtype the operation does not accept.
    #[error("{op}: {msg}")]
    DType {
        /// The operation that failed.
        op: &'static str,
        /// The dtypes involved.
        msg: String,
    },
    /// A matrix a linear-algebra op cannot work with as asked (NumPy's
    /// `LinAlgError`): singular for `linalg::solve` and `linalg::inv`, not
    /// positive definite for `linalg::cholesky`. The message names the
    /// matrix's index in the batch and the column that failed.
    #[error("{op}: {msg}")]
    LinAlg {
        /// The operation that failed.
        op: &'static str,
        /// Which matrix, and why.
        msg: String,
    },
    /// A dtype this device cannot hold (f64 on the GPU).
    #[error("{op}: dtype {dtype} is not supported on {device}")]
    UnsupportedDType {
        /// The operation that failed.
        op: &'static str,
        /// The dtype asked for.
        dtype: DType,
        /// The device that cannot hold it.
        device: String,
    },
    /// Operands on different devices.
    #[error("{op}: operands are on different devices ({lhs} and {rhs}); move one with to_device")]
    DeviceMismatch {
        /// The operation that failed.
        op: &'static str,
        /// The device of the first operand.
        lhs: String,
        /// The device of the other operand.
        rhs: String,
    },
    /// A write through a view in which several indices address one element
    /// (a broadcast, stride-0 view).
    #[error(
        "{op}: cannot write through a view whose elements overlap (shape {shape:?}, strides {strides:?})"
    )]
    OverlappingWrite {
        /// The operation that failed.
        op: &'static str,
        /// The shape of the destination view.
        shape: Vec<usize>,
        /// The strides of the destination view.
        strides: Vec<isize>,
    },
    /// A tensor or dispatch larger than a device limit.
    #[error("{op}: {what} of {requested} exceeds the device limit of {limit}")]
    TooLarge {
        /// The operation that failed.
        op: &'static str,
        /// What was too large (e.g. "storage binding bytes").
        what: &'static str,
        /// The size requested.
        requested: u64,
        /// The limit of the device.
        limit: u64,
    },
    /// An allocation failed: on a GPU, it would take the device's memory past
    /// the cap set with `Device::set_memory_cap` (or `WEBTENSOR_MEMORY_CAP`);
    /// on the CPU, the system allocator refused it (`cap` is `None`).
    #[error("{op}: allocating {requested} bytes {}", oom_reason(*in_use, *cap))]
    OutOfMemory {
        /// The operation that failed.
        op: &'static str,
        /// The bytes the allocation needed (on a GPU, its size bucket).
        requested: u64,
        /// Bytes held by live tensors and readbacks at the time (GPU; 0 on
        /// the CPU, which does not count them).
        in_use: u64,
        /// The GPU's cap, or `None` for a refusal of the host's allocator.
        cap: Option<u64>,
    },
    /// A broken invariant inside webtensor (a bug, never the caller's
    /// mistake): please report it with the message.
    #[error("{op}: internal error (a webtensor bug; please report it): {msg}")]
    Internal {
        /// Where the invariant broke.
        op: &'static str,
        /// What was found.
        msg: String,
    },
    /// No GPU adapter could be found or opened.
    #[error("{op}: no GPU adapter: {reason}")]
    NoAdapter {
        /// The operation that failed.
        op: &'static str,
        /// Why no adapter was usable.
        reason: String,
    },
    /// Reading or writing a file failed.
    #[error("{op}: {path}: {msg}")]
    Io {
        /// The operation that failed.
        op: &'static str,
        /// The file.
        path: String,
        /// What the operating system said.
        msg: String,
    },
    /// Data in a file format (.npy, .npz, safetensors) that is malformed or
    /// holds what webtensor cannot represent.
    #[error("{op}: {msg}")]
    Format {
        /// The operation that failed.
        op: &'static str,
        /// What was wrong, with the values read.
        msg: String,
    },
    /// The GPU device is lost (a driver reset, the browser taking the
    /// device back, `wgpu::Device::destroy`): every op, readback and
    /// interop call on it fails with this from then on, and the tensors it
    /// held are gone. `Device::is_lost` says so, `Device::on_lost` hears of
    /// it as it happens.
    #[error("{op}: the GPU device is lost ({reason}); the tensors it held are gone")]
    DeviceLost {
        /// The operation that failed.
        op: &'static str,
        /// Why, as wgpu reported it.
        reason: String,
    },
    /// The GPU reported a failure (out of memory, mapping failed, a
    /// validation error).
    #[error("{op}: GPU failure: {msg}")]
    Gpu {
        /// The operation that failed.
        op: &'static str,
        /// The message reported by the GPU layer.
        msg: String,
    },
}

/// An index as [`Error::Index`] holds it: saturated where `isize` is 32
/// bits (wasm32), on either device.
pub(crate) fn index_value(raw: i64) -> isize {
    isize::try_from(raw).unwrap_or(if raw < 0 { isize::MIN } else { isize::MAX })
}

/// Why an allocation failed, for [`Error::OutOfMemory`]'s message.
fn oom_reason(in_use: u64, cap: Option<u64>) -> String {
    match cap {
        Some(cap) => format!(
            "would exceed the memory cap of {cap} bytes ({in_use} bytes held by live tensors)"
        ),
        None => "failed: the host's allocator refused it".into(),
    }
}

impl Error {
    /// This error as the op the caller called reports it: `name` in place
    /// of the op that failed inside it (a composed op's parts fail under
    /// their own names: softmax's under `sub`). An `Index` error keeps the
    /// op whose index was out of range: a GPU reports it at a later
    /// readback (`faults.rs`), which may be inside another op, and the CPU
    /// names the same op.
    pub(crate) fn named(mut self, name: &'static str) -> Self {
        match &mut self {
            Error::Index { .. } => {}
            Error::Shape { op, .. }
            | Error::Axis { op, .. }
            | Error::Argument { op, .. }
            | Error::DType { op, .. }
            | Error::LinAlg { op, .. }
            | Error::UnsupportedDType { op, .. }
            | Error::DeviceMismatch { op, .. }
            | Error::OverlappingWrite { op, .. }
            | Error::TooLarge { op, .. }
            | Error::OutOfMemory { op, .. }
            | Error::Internal { op, .. }
            | Error::NoAdapter { op, .. }
            | Error::Io { op, .. }
            | Error::Format { op, .. }
            | Error::DeviceLost { op, .. }
            | Error::Gpu { op, .. } => *op = name,
        }
        self
    }

    pub(crate) fn shape(op: &'static str, msg: impl Into<String>) -> Self {
        Error::Shape {
            op,
            msg: msg.into(),
        }
    }

    pub(crate) fn argument(op: &'static str, msg: impl Into<String>) -> Self {
        Error::Argument {
            op,
            msg: msg.into(),
        }
    }

    pub(crate) fn dtype(op: &'static str, msg: impl Into<String>) -> Self {
        Error::DType {
            op,
            msg: msg.into(),
        }
    }

    pub(crate) fn internal(op: &'static str, msg: impl Into<String>) -> Self {
        Error::Internal {
            op,
            msg: msg.into(),
        }
    }

    pub(crate) fn format(op: &'static str, msg: impl Into<String>) -> Self {
        Error::Format {
            op,
            msg: msg.into(),
        }
    }

    /// An error of one tensor of a file of several, saying which (see
    /// [`Error::about`]).
    pub(crate) fn in_tensor(self, name: &str) -> Error {
        self.about(&format!("tensor {name:?}"))
    }

    /// This error with `what` (a file, a tensor of one) before its
    /// message: a format, shape, argument or dtype error. A dtype the
    /// device cannot hold becomes an `Error::DType` (its own variant has
    /// no room for `what`, see [`Error::into_unloadable`]). Device errors
    /// stay as they are.
    pub(crate) fn about(self, what: &str) -> Error {
        match self {
            Error::Format { op, msg } => Error::Format {
                op,
                msg: format!("{what}: {msg}"),
            },
            Error::Shape { op, msg } => Error::Shape {
                op,
                msg: format!("{what}: {msg}"),
            },
            Error::Argument { op, msg } => Error::Argument {
                op,
                msg: format!("{what}: {msg}"),
            },
            Error::DType { op, msg } => Error::DType {
                op,
                msg: format!("{what}: {msg}"),
            },
            e @ Error::UnsupportedDType { .. } => e.into_unloadable().about(what),
            other => other,
        }
    }

    /// A dtype the device cannot hold as a loader reports it: an
    /// `Error::DType` saying how to load the data.
    pub(crate) fn into_unloadable(self) -> Error {
        match self {
            Error::UnsupportedDType { op, dtype, device } => Error::DType {
                op,
                msg: format!(
                    "dtype {dtype} is not supported on {device}; load it onto the CPU and \
                     cast it (to_dtype) before moving it"
                ),
            },
            other => other,
        }
    }

    pub(crate) fn gpu(op: &'static str, msg: impl Into<String>) -> Self {
        Error::Gpu {
            op,
            msg: msg.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_op_and_the_values() {
        let internal = Error::internal("cpu reduce", "storage dtype differs from the call's");
        assert_eq!(
            internal.to_string(),
            "cpu reduce: internal error (a webtensor bug; please report it): \
             storage dtype differs from the call's"
        );
        let capped = Error::OutOfMemory {
            op: "zeros",
            requested: 64,
            in_use: 32,
            cap: Some(80),
        };
        assert_eq!(
            capped.to_string(),
            "zeros: allocating 64 bytes would exceed the memory cap of 80 bytes \
             (32 bytes held by live tensors)"
        );
        let refused = Error::OutOfMemory {
            op: "zeros",
            requested: 64,
            in_use: 0,
            cap: None,
        };
        assert_eq!(
            refused.to_string(),
            "zeros: allocating 64 bytes failed: the host's allocator refused it"
        );
    }
}
