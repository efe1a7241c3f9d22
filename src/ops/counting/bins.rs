//! `bincount` and `histogram`: elements counted into bins by one count
//! kernel (workgroup-private bins on a GPU), histogram bins found by the
//! search kernel against NumPy's edges.

use super::search::search_rows;
use crate::backend::{CountCall, count};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::tensor::Tensor;

impl Tensor {
    /// How many times each value `0..len` occurs in this 1-D tensor of
    /// non-negative integers (NumPy's `bincount`): `len` is one past the
    /// largest value, or `minlength` where that is longer. With `weights`
    /// (floats, of this tensor's length), each bin sums its elements'
    /// weights (in f32) instead of counting them (i64). The length depends
    /// on the values, so this reads the largest and the smallest back,
    /// blocking (native only; see [`Tensor::bincount_async`]).
    ///
    /// # Errors
    /// As [`Tensor::bincount_async`].
    #[cfg(not(target_arch = "wasm32"))]
    pub fn bincount(&self, weights: Option<&Tensor>, minlength: usize) -> Result<Tensor> {
        pollster::block_on(self.bincount_async(weights, minlength))
    }

    /// [`Tensor::bincount`] on every target.
    ///
    /// On a GPU, weighted sums add in the order the device's atomics land,
    /// so they may round differently from run to run and from the CPU's
    /// sums in index order (counts are exact).
    ///
    /// # Errors
    /// `Error::Shape` naming `bincount` for a tensor that is not 1-D or
    /// weights of another shape; `Error::DType` for a tensor that is not
    /// i32, i64, u32 or u8, or weights that are not floats; `Error::Argument`
    /// for a negative value; readback errors.
    pub async fn bincount_async(
        &self,
        weights: Option<&Tensor>,
        minlength: usize,
    ) -> Result<Tensor> {
        const OP: &str = "bincount";
        check_bins(OP, self, weights)?;
        let len = if self.numel() == 0 {
            minlength
        } else {
            let ends = Tensor::stack(
                &[
                    &self.min(..)?.to_dtype(DType::I64)?,
                    &self.max(..)?.to_dtype(DType::I64)?,
                ],
                0,
            )?;
            let ends: Vec<i64> = ends.to_vec_async().await?;
            if ends[0] < 0 {
                return Err(Error::argument(
                    OP,
                    format!("values must be non-negative, found {}", ends[0]),
                ));
            }
            (ends[1] as usize + 1).max(minlength)
        };
        crate::ops::as_op(OP, || counted(OP, self, weights, len))
    }

    /// The histogram of this tensor's values over `bins` equal bins of
    /// `range` (NumPy's `histogram(a, bins, range, weights, density)`):
    /// the counts (i64; with `weights`, their f32 sums; with `density`,
    /// f32 densities that integrate to 1 over the range) and the `bins + 1`
    /// edges, computed as NumPy computes them (`linspace` in f64, rounded to
    /// this tensor's float dtype; f32 for integers, which are binned in f32,
    /// exact to 2^24, where NumPy uses f64). A value is in bin `i`
    /// when `edges[i] <= x < edges[i + 1]`, the last bin closed; values
    /// outside the range and NaN are left out. Without `range`, it is the
    /// data's smallest and largest value, read back blocking (native only;
    /// see [`Tensor::histogram_async`]); with it, nothing is read back.
    ///
    /// # Errors
    /// As [`Tensor::histogram_async`].
    #[cfg(not(target_arch = "wasm32"))]
    pub fn histogram(
        &self,
        bins: usize,
        range: Option<(f64, f64)>,
        weights: Option<&Tensor>,
        density: bool,
    ) -> Result<(Tensor, Tensor)> {
        pollster::block_on(self.histogram_async(bins, range, weights, density))
    }

    /// [`Tensor::histogram`] on every target.
    ///
    /// # Errors
    /// `Error::Argument` naming `histogram` for 0 bins, a range whose ends
    /// are not finite or in order, or (without a range) data whose range is
    /// not finite; `Error::Shape` for weights of another shape;
    /// `Error::DType` for c64, bool or weights that are not floats;
    /// readback errors.
    pub async fn histogram_async(
        &self,
        bins: usize,
        range: Option<(f64, f64)>,
        weights: Option<&Tensor>,
        density: bool,
    ) -> Result<(Tensor, Tensor)> {
        const OP: &str = "histogram";
        if bins == 0 {
            return Err(Error::argument(OP, "bins must be at least 1"));
        }
        if self.dtype().is_complex() || self.dtype() == DType::Bool {
            return Err(Error::dtype(
                OP,
                format!("not defined for {}", self.dtype()),
            ));
        }
        if let Some(w) = weights {
            check_weights(OP, self.numel(), w)?;
        }
        let (first, last) = match range {
            Some(r) => r,
            None if self.numel() == 0 => (0.0, 1.0),
            None => {
                let ends = Tensor::stack(&[&self.min(..)?, &self.max(..)?], 0)?;
                let ends: Vec<f64> = match self.dtype() {
                    DType::F64 => ends.to_vec_async().await?,
                    d if d.is_float() => {
                        let v: Vec<f32> = ends.to_dtype(DType::F32)?.to_vec_async().await?;
                        v.into_iter().map(f64::from).collect()
                    }
                    _ => {
                        let v: Vec<i64> = ends.to_dtype(DType::I64)?.to_vec_async().await?;
                        v.into_iter().map(|e| e as f64).collect()
                    }
                };
                (ends[0], ends[1])
            }
        };
        if !(first.is_finite() && last.is_finite() && first <= last) {
            return Err(Error::argument(
                OP,
                format!("range [{first}, {last}] must be finite and in order"),
            ));
        }
        // NumPy computes the edges of a range it found in the data's own
        // float dtype (its ends are the data's scalars), of a given range
        // (or integers') in f64.
        let round = match self.dtype() {
            DType::F32 if range.is_none() => |v: f64| f64::from(v as f32),
            DType::F16 if range.is_none() => |v: f64| half::f16::from_f64(v).to_f64(),
            DType::BF16 if range.is_none() => |v: f64| half::bf16::from_f64(v).to_f64(),
            _ => |v: f64| v,
        };
        // NumPy widens an empty range by a half on each side.
        let (first, last) = if first == last {
            (round(first - 0.5), round(last + 0.5))
        } else {
            (first, last)
        };
        let edges = edges(first, last, bins, round);
        crate::ops::as_op(OP, || histogram_of(self, &edges, weights, density))
    }
}

/// The histogram once its range is known.
/// NumPy's `linspace(first, last, bins + 1)` with every step rounded by
/// `round` (to the dtype it computes in): `i * step + first`, the last
/// edge `last` itself.
fn edges(first: f64, last: f64, bins: usize, round: fn(f64) -> f64) -> Vec<f64> {
    let step = round(round(last - first) / bins as f64);
    (0..=bins)
        .map(|i| {
            if i == bins {
                last
            } else {
                round(round(i as f64 * step) + first)
            }
        })
        .collect()
}

/// The histogram over `edges` (f64 values exact in the data's float dtype,
/// or f32's for integers).
fn histogram_of(
    x: &Tensor,
    edges: &[f64],
    weights: Option<&Tensor>,
    density: bool,
) -> Result<(Tensor, Tensor)> {
    let dtype = if x.dtype().is_float() {
        x.dtype()
    } else {
        DType::F32
    };
    let bins = edges.len() - 1;
    let (dev, shape) = (x.device(), [bins + 1]);
    let edges = match dtype {
        DType::F64 => Tensor::from_vec(edges.to_vec(), shape, dev)?,
        DType::F16 => Tensor::from_vec(
            edges.iter().map(|&e| half::f16::from_f64(e)).collect(),
            shape,
            dev,
        )?,
        DType::BF16 => Tensor::from_vec(
            edges.iter().map(|&e| half::bf16::from_f64(e)).collect(),
            shape,
            dev,
        )?,
        _ => Tensor::from_vec(edges.iter().map(|&e| e as f32).collect(), shape, dev)?,
    };
    let flat = x.reshape([x.numel()])?.to_dtype(dtype)?;
    // Bin i where edges[i] <= x < edges[i + 1]: one less than the count of
    // edges at or below x; the last edge closes the last bin, and what
    // falls outside (or is NaN) gets bin -1 or one past the end, which the
    // count skips.
    let after = search_rows(&edges, &flat, true, false)?;
    let closing = flat.eq(&edges.narrow(0, bins, 1)?)?.to_dtype(DType::I64)?;
    let index = after.sub(&closing)?.sub_scalar(1)?;
    let hist = counted("histogram", &index, weights, bins)?;
    if !density {
        return Ok((hist, edges));
    }
    // NumPy: hist / diff(edges) / hist.sum().
    let widths = edges
        .narrow(0, 1, bins)?
        .sub(&edges.narrow(0, 0, bins)?)?
        .to_dtype(DType::F32)?;
    let hist = hist.to_dtype(DType::F32)?;
    let total = hist.sum(..)?;
    Ok((hist.div(&widths)?.div(&total)?, edges))
}

/// Refuses a tensor `bincount` does not count, and weights that do not fit.
fn check_bins(op: &'static str, x: &Tensor, weights: Option<&Tensor>) -> Result<()> {
    if x.rank() != 1 {
        return Err(Error::shape(
            op,
            format!("needs a 1-D tensor, got shape {}", x.shape()),
        ));
    }
    if !matches!(x.dtype(), DType::I32 | DType::I64 | DType::U32 | DType::U8) {
        return Err(Error::dtype(
            op,
            format!("needs i32, i64, u32 or u8 values, got {}", x.dtype()),
        ));
    }
    match weights {
        Some(w) => check_weights(op, x.numel(), w),
        None => Ok(()),
    }
}

/// Refuses weights that are not floats or not one per element.
fn check_weights(op: &'static str, n: usize, w: &Tensor) -> Result<()> {
    if !w.dtype().is_float() {
        return Err(Error::dtype(
            op,
            format!("weights must be floats, got {}", w.dtype()),
        ));
    }
    if w.numel() != n {
        return Err(Error::shape(
            op,
            format!(
                "weights {} must have one value per element ({n})",
                w.shape()
            ),
        ));
    }
    Ok(())
}

/// `index` (integers, any shape) counted into `len` bins, or its
/// `weights` (in f32) summed into them.
fn counted(
    op: &'static str,
    index: &Tensor,
    weights: Option<&Tensor>,
    len: usize,
) -> Result<Tensor> {
    let n = index.numel();
    let index = index.reshape([n])?.contiguous()?;
    let weights = match weights {
        Some(w) => {
            crate::ops::check_devices(op, &index, &[crate::ops::Arg::Tensor(w)])?;
            Some(w.reshape([n])?.to_dtype(DType::F32)?.contiguous()?)
        }
        None => None,
    };
    let dtype = if weights.is_some() {
        DType::F32
    } else {
        DType::I64
    };
    let out = Tensor::zeros([len], dtype, index.device())?;
    if n == 0 || len == 0 {
        return Ok(out);
    }
    count(&CountCall {
        index: index.kernel_ref(index.layout().clone())?,
        weights: match &weights {
            Some(w) => Some(w.kernel_ref(w.layout().clone())?),
            None => None,
        },
        out: out.kernel_out(out.layout().clone())?,
    })?;
    Ok(out)
}
