//! NumPy-like printing.

use super::Tensor;
use crate::dtype::{DType, Element};
use crate::number_format::{format_complex, format_float};
use std::fmt;

/// Elements shown at each end of an axis of a large tensor.
const EDGE: usize = 3;
/// Tensors above this many elements are summarised with `...`.
const SUMMARY_THRESHOLD: usize = 1000;

/// The elements now: a blocking readback on native; on wasm only what is
/// ready at once (CPU tensors), `None` for a GPU tensor.
fn read_now<T: Element>(t: &Tensor) -> Option<crate::Result<Vec<T>>> {
    #[cfg(not(target_arch = "wasm32"))]
    return Some(t.to_vec::<T>());
    #[cfg(target_arch = "wasm32")]
    return futures::FutureExt::now_or_never(t.to_vec_async::<T>());
}

fn formatted<T: Element>(t: &Tensor, float: bool) -> Option<crate::Result<Vec<String>>> {
    let values = match read_now::<T>(t)? {
        Ok(v) => v,
        Err(e) => return Some(Err(e)),
    };
    Some(Ok(values
        .into_iter()
        .map(|v| {
            if T::DTYPE == DType::Bool {
                if v.to_f64() != 0.0 {
                    "True".into()
                } else {
                    "False".into()
                }
            } else if float {
                format_float(v.to_f64())
            } else {
                format!("{v:?}")
            }
        })
        .collect()))
}

/// Writes `cells` (row-major over `dims`) with NumPy's bracket layout.
fn write_nested(
    f: &mut fmt::Formatter<'_>,
    cells: &[String],
    dims: &[usize],
    width: usize,
    depth: usize,
) -> fmt::Result {
    if dims.is_empty() {
        return write!(f, "{:>width$}", cells[0]);
    }
    let n = dims[0];
    let inner: usize = dims[1..].iter().product();
    let summarise =
        !cells.is_empty() && n > 2 * EDGE && dims.iter().product::<usize>() > SUMMARY_THRESHOLD;
    write!(f, "[")?;
    let indices: Vec<Option<usize>> = if summarise {
        (0..EDGE)
            .map(Some)
            .chain([None])
            .chain((n - EDGE..n).map(Some))
            .collect()
    } else {
        (0..n).map(Some).collect()
    };
    for (k, idx) in indices.iter().enumerate() {
        if k > 0 {
            if dims.len() == 1 {
                write!(f, " ")?;
            } else {
                write!(
                    f,
                    "{}{:indent$}",
                    "\n".repeat(dims.len() - 1),
                    "",
                    indent = depth + 1
                )?;
            }
        }
        match idx {
            Some(i) => write_nested(
                f,
                &cells[i * inner..(i + 1) * inner],
                &dims[1..],
                width,
                depth + 1,
            )?,
            None => write!(f, "...")?,
        }
    }
    write!(f, "]")
}

impl fmt::Display for Tensor {
    /// Prints the elements like NumPy (`[[1. 2.]\n [3. 4.]]`), reading them
    /// back from the device (blocking). On wasm a GPU tensor prints only its
    /// metadata; read it with `to_vec_async`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let cells = match self.dtype() {
            DType::F32 => formatted::<f32>(self, true),
            DType::F16 => formatted::<half::f16>(self, true),
            DType::F64 => formatted::<f64>(self, true),
            DType::I32 => formatted::<i32>(self, false),
            DType::U32 => formatted::<u32>(self, false),
            DType::U8 => formatted::<u8>(self, false),
            DType::Bool => formatted::<bool>(self, false),
            DType::C64 => match self.row_major_pairs() {
                Ok(pairs) => read_now::<f32>(&pairs).map(|r| {
                    r.map(|v| {
                        v.chunks_exact(2)
                            .map(|p| format_complex(p[0], p[1]))
                            .collect()
                    })
                }),
                Err(e) => Some(Err(e)),
            },
        };
        let cells = match cells {
            Some(Ok(c)) => c,
            Some(Err(e)) => return write!(f, "<tensor {} {}: {e}>", self.shape(), self.dtype()),
            None => {
                return write!(
                    f,
                    "<tensor {} {} on {}>",
                    self.shape(),
                    self.dtype(),
                    self.device()
                );
            }
        };
        if cells.is_empty() {
            return write!(f, "[]");
        }
        let width = cells.iter().map(String::len).max().unwrap_or(0);
        write_nested(f, &cells, self.dims(), width, 0)
    }
}

impl fmt::Debug for Tensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Tensor(shape={}, strides={:?}, offset={}, dtype={}, device={})",
            self.shape(),
            self.strides(),
            self.offset(),
            self.dtype(),
            self.device()
        )
    }
}
