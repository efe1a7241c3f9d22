//! webtensor: a GPU-first tensor library on WebGPU.
#![warn(missing_docs)]

mod dtype;
mod error;
mod index;
mod layout;
mod scalar;
mod shape;

pub use dtype::{DType, Element};
pub use error::{Error, Result};
pub use index::{NewAxis, SliceItem};
pub use layout::Layout;
pub use scalar::Scalar;
pub use shape::{MAX_RANK, Shape, broadcast_shapes};
