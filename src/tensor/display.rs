//! NumPy-like printing: `str(array)` for `Display`, with shortest
//! round-trip digits per dtype, aligned columns, lines wrapped at 75
//! characters and tensors over 1000 elements summarised with `...` (only
//! the shown elements are read back).

use super::Tensor;
use crate::dtype::{DType, Element};
use crate::number_format::{FloatFormat, FloatWidth, format_complex, format_scalar_float};
use std::fmt;

/// Elements shown at each end of a summarised axis (NumPy's `edgeitems`).
const EDGE: usize = 3;
/// Tensors over this many elements are summarised (NumPy's `threshold`).
const SUMMARY_THRESHOLD: usize = 1000;
/// Characters per line (NumPy's `linewidth`).
const LINE_WIDTH: usize = 75;

/// The elements now: a blocking readback on native; on wasm only what is
/// ready at once (CPU tensors), `None` for a GPU tensor.
fn read_now<T: Element>(t: &Tensor) -> Option<crate::Result<Vec<T>>> {
    #[cfg(not(target_arch = "wasm32"))]
    return Some(t.to_vec::<T>());
    // A GPU readback started here would be dropped half done: its flush
    // would take the fault record it then never reads.
    #[cfg(target_arch = "wasm32")]
    return match t.device().is_gpu() {
        true => None,
        false => futures::FutureExt::now_or_never(t.to_vec_async::<T>()),
    };
}

/// The elements as f64 (floats), read now.
fn read_f64<T: Element>(t: &Tensor) -> Option<crate::Result<Vec<f64>>> {
    read_now::<T>(t).map(|r| r.map(|v| v.into_iter().map(Element::to_f64).collect()))
}

/// Each shown element as text, all of one width; `scalar` for a 0-d tensor
/// (written as NumPy writes a lone value).
fn cells(t: &Tensor, scalar: bool) -> Option<crate::Result<Vec<String>>> {
    let floats = |width: FloatWidth, values: crate::Result<Vec<f64>>| {
        values.map(|v| {
            if scalar {
                return v.iter().map(|&x| format_scalar_float(x, width)).collect();
            }
            let f = FloatFormat::new(&v, width, false);
            v.iter().map(|&x| f.format(x)).collect()
        })
    };
    let ints = |values: crate::Result<Vec<String>>| {
        values.map(|v| {
            let width = v.iter().map(String::len).max().unwrap_or(0);
            v.iter().map(|s| format!("{s:>width$}")).collect()
        })
    };
    let text = |t: &Tensor| -> Option<crate::Result<Vec<String>>> {
        Some(match t.dtype() {
            DType::I32 => read_now::<i32>(t)?.map(|v| v.iter().map(i32::to_string).collect()),
            DType::I64 => read_now::<i64>(t)?.map(|v| v.iter().map(i64::to_string).collect()),
            DType::U32 => read_now::<u32>(t)?.map(|v| v.iter().map(u32::to_string).collect()),
            _ => read_now::<u8>(t)?.map(|v| v.iter().map(u8::to_string).collect()),
        })
    };
    Some(match t.dtype() {
        DType::F32 => floats(FloatWidth::F32, read_f64::<f32>(t)?),
        DType::F16 => floats(FloatWidth::F16, read_f64::<half::f16>(t)?),
        DType::BF16 => floats(FloatWidth::BF16, read_f64::<half::bf16>(t)?),
        DType::F64 => floats(FloatWidth::F64, read_f64::<f64>(t)?),
        DType::I32 | DType::I64 | DType::U32 | DType::U8 => ints(text(t)?),
        DType::Bool => read_now::<bool>(t)?.map(|v| {
            let word = |b: bool| match (b, scalar) {
                (true, true) => "True",
                (true, false) => " True",
                (false, _) => "False",
            };
            v.into_iter().map(|b| word(b).to_string()).collect()
        }),
        DType::C64 => {
            let pairs = match t.row_major_pairs() {
                Ok(p) => p,
                Err(e) => return Some(Err(e)),
            };
            read_now::<f32>(&pairs)?.map(|v| {
                if scalar {
                    return vec![format_complex(v[0], v[1])];
                }
                let re: Vec<f64> = v.iter().step_by(2).map(|&x| x as f64).collect();
                let im: Vec<f64> = v.iter().skip(1).step_by(2).map(|&x| x as f64).collect();
                let (fr, fi) = (
                    FloatFormat::new(&re, FloatWidth::F32, false),
                    FloatFormat::new(&im, FloatWidth::F32, true),
                );
                re.iter()
                    .zip(&im)
                    .map(|(&r, &i)| {
                        // The `j` goes before the imaginary part's padding.
                        let i = fi.format(i);
                        let end = i.trim_end().len();
                        format!("{}{}j{}", fr.format(r), &i[..end], &i[end..])
                    })
                    .collect()
            })
        }
    })
}

/// The tensor cut down to the elements a summary shows: each axis longer
/// than `2 * EDGE` keeps its first and last `EDGE` (NumPy summarises only
/// tensors over the threshold). Also which axes were cut.
fn shown(t: &Tensor) -> crate::Result<(Tensor, Vec<bool>)> {
    let mut cut = vec![false; t.rank()];
    if t.numel() <= SUMMARY_THRESHOLD {
        return Ok((t.clone(), cut));
    }
    let mut small = t.clone();
    for (axis, c) in cut.iter_mut().enumerate() {
        let n = small.dims()[axis];
        if n > 2 * EDGE {
            let a = axis as isize;
            small = Tensor::concat(
                &[
                    &small.narrow(a, 0, EDGE)?,
                    &small.narrow(a, n - EDGE, EDGE)?,
                ],
                a,
            )?;
            *c = true;
        }
    }
    Ok((small, cut))
}

/// NumPy's `_formatArray`: `cells` row-major over `dims`, each axis that
/// `cut` marks shown as its first and last `EDGE` around `...`.
struct Layout<'a> {
    cells: &'a [String],
    dims: &'a [usize],
    cut: &'a [bool],
}

impl Layout<'_> {
    fn write(&self, out: &mut String, offset: usize, axis: usize, indent: &str, width: usize) {
        let rank = self.dims.len();
        if axis == rank {
            out.push_str(&self.cells[offset]);
            return;
        }
        let n = self.dims[axis];
        let inner: usize = self.dims[axis + 1..].iter().product();
        let summary = self.cut[axis];
        let next_indent = format!("{indent} ");
        let next_width = width - 1;
        let items: Vec<Option<usize>> = if summary {
            (0..EDGE)
                .map(Some)
                .chain([None])
                .chain((n - EDGE..n).map(Some))
                .collect()
        } else {
            (0..n).map(Some).collect()
        };
        let nested = |k: usize| {
            let mut s = String::new();
            self.write(
                &mut s,
                offset + k * inner,
                axis + 1,
                &next_indent,
                next_width,
            );
            s
        };
        let mut s = String::new();
        if axis + 1 == rank {
            // The last axis: elements on lines of at most `width`.
            let elem_width = width - 1;
            let mut line = indent.to_string();
            for (k, item) in items.iter().enumerate() {
                let word = item.map_or_else(|| "...".to_string(), nested);
                let last = k + 1 == items.len();
                if line.len() + word.len() > elem_width && line.len() > indent.len() {
                    s.push_str(line.trim_end());
                    s.push('\n');
                    line = indent.to_string();
                }
                line.push_str(&word);
                if !last {
                    line.push(' ');
                }
            }
            s.push_str(&line);
        } else {
            let sep = "\n".repeat(rank - axis - 1);
            for (k, item) in items.iter().enumerate() {
                s.push_str(indent);
                s.push_str(&item.map_or_else(|| "...".to_string(), nested));
                if k + 1 < items.len() {
                    s.push_str(&sep);
                }
            }
        }
        out.push('[');
        out.push_str(&s[indent.len()..]);
        out.push(']');
    }
}

impl Tensor {
    /// The text of [`Display`](fmt::Display), or `None` where the elements
    /// cannot be read now (a GPU tensor on wasm).
    fn numpy_text(&self) -> Option<crate::Result<String>> {
        let (small, cut) = match shown(self) {
            Ok(s) => s,
            Err(e) => return Some(Err(e)),
        };
        let cells = match cells(&small, self.rank() == 0)? {
            Ok(c) => c,
            Err(e) => return Some(Err(e)),
        };
        if self.rank() == 0 {
            return Some(Ok(cells.into_iter().next().unwrap_or_default()));
        }
        if self.numel() == 0 {
            return Some(Ok("[]".into()));
        }
        let mut out = String::new();
        let layout = Layout {
            cells: &cells,
            dims: small.dims(),
            cut: &cut,
        };
        layout.write(&mut out, 0, 0, " ", LINE_WIDTH);
        Some(Ok(out))
    }
}

impl fmt::Display for Tensor {
    /// Prints the elements as NumPy's `str` does (`[[1.  2.5]\n [3.  4. ]]`),
    /// reading back the elements shown (blocking). On wasm a GPU tensor
    /// prints only its metadata; read it with `to_vec_async`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.numpy_text() {
            Some(Ok(s)) => f.write_str(&s),
            Some(Err(e)) => write!(f, "<tensor {} {}: {e}>", self.shape(), self.dtype()),
            None => write!(
                f,
                "<tensor {} {} on {}>",
                self.shape(),
                self.dtype(),
                self.device()
            ),
        }
    }
}

impl fmt::Debug for Tensor {
    /// The elements as `Display` prints them, then the shape, dtype and
    /// device, and the strides and offset of a view that is not plainly
    /// contiguous: `tensor([1. 2.], shape=[2], dtype=f32, device=cpu)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Continuation lines under the first's elements; blank ones blank.
        let text = self.to_string();
        let values = text
            .lines()
            .enumerate()
            .map(|(i, line)| match (i, line.is_empty()) {
                (0, _) | (_, true) => line.to_string(),
                _ => format!("       {line}"),
            })
            .collect::<Vec<_>>()
            .join("\n");
        write!(
            f,
            "tensor({values}, shape={}, dtype={}, device={}",
            self.shape(),
            self.dtype(),
            self.device()
        )?;
        if !self.is_contiguous() || self.offset() != 0 {
            write!(
                f,
                ", strides={:?}, offset={}",
                self.strides(),
                self.offset()
            )?;
        }
        write!(f, ")")
    }
}
