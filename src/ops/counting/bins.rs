//! `bincount` and `histogram`: elements counted into bins by one count
//! kernel (workgroup-private bins on a GPU), a histogram's bins found in it
//! by a search of NumPy's edges.

use crate::backend::{CountCall, count};
use crate::dtype::{DType, bf16_from_f64, f16_from_f64};
use crate::error::{Error, Result};
use crate::tensor::Tensor;

impl Tensor {
    /// How many times each value `0..len` occurs in this 1-D tensor of
    /// non-negative integers or bools (NumPy's `bincount`): `len` is one
    /// past the largest value, or `minlength` where that is longer. With
    /// `weights` (floats, of this tensor's shape), each bin sums its elements'
    /// weights (an f32 result) instead of counting them (i64). The length depends
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
    /// Weighted sums are f32. The CPU adds them in f64 (f64 weights as
    /// they are) and rounds once (NumPy's sums are f64); a GPU adds in f32
    /// in the order its atomics land, so its sums may round differently
    /// from run to run and from the CPU's (counts are exact).
    ///
    /// # Errors
    /// `Error::Shape` naming `bincount` for a tensor that is not 1-D or
    /// weights of another shape; `Error::DType` for a tensor that is not
    /// i32, i64, u32, u8 or bool, or weights that are not floats;
    /// `Error::Argument` for a negative value or a largest value past this
    /// target's sizes; `Error::TooLarge` (or `Error::OutOfMemory`) where
    /// the bins do not fit one of the device's buffers;
    /// `Error::DeviceMismatch` for weights on another device; readback
    /// errors.
    pub async fn bincount_async(
        &self,
        weights: Option<&Tensor>,
        minlength: usize,
    ) -> Result<Tensor> {
        let counts = self.bincount_parts(weights, minlength);
        crate::ops::as_op_async("bincount", counts).await
    }

    /// [`Tensor::bincount_async`], whose composed parts' errors name their own ops.
    async fn bincount_parts(&self, weights: Option<&Tensor>, minlength: usize) -> Result<Tensor> {
        const OP: &str = "bincount";
        check_bins(OP, self, weights)?;
        // NumPy counts bools as 0 and 1.
        let x = if self.dtype() == DType::Bool {
            self.to_dtype(DType::U8).map_err(|e| e.named(OP))?
        } else {
            self.clone()
        };
        let len = if x.numel() == 0 {
            minlength
        } else {
            let [low, high] = extremes::<i64>(&x, DType::I64)
                .await
                .map_err(|e| e.named(OP))?;
            if low < 0 {
                return Err(Error::argument(
                    OP,
                    format!("values must be non-negative, found {low}"),
                ));
            }
            let len = usize::try_from(high).ok().and_then(|h| h.checked_add(1));
            len.ok_or_else(|| {
                Error::argument(
                    OP,
                    format!("the largest value, {high}, is past this target's sizes"),
                )
            })?
            .max(minlength)
        };
        counted(OP, &x, None, weights, len)
    }

    /// The histogram of this tensor's values over `bins` equal bins of
    /// `range` (NumPy's `histogram(a, bins, range, weights, density)`):
    /// the counts (i64; with `weights`, their f32 sums; with `density`,
    /// f32 densities that integrate to 1 over the range, each count over
    /// its bin's width in the edges' dtype, f64 for integers, as NumPy's)
    /// and the `bins + 1`
    /// edges, computed as NumPy computes them (`linspace` in f64, rounded to
    /// this tensor's float dtype; f32 for integers, where NumPy returns
    /// them in f64; integers are binned against NumPy's f64 edges exactly,
    /// as NumPy bins them to 2^53). A value is in bin `i`
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
    /// `Error::Argument` naming `histogram` for 0 bins (or more than a
    /// tensor holds), a range whose ends are not finite or in order, data
    /// whose range (without a range given) is not finite, or more bins than
    /// the range has distinct edges in the dtype (NumPy's "too many bins");
    /// `Error::Shape` for weights of another shape; `Error::DType` for c64
    /// or weights that are not floats; `Error::DeviceMismatch` for weights
    /// on another device; readback errors.
    pub async fn histogram_async(
        &self,
        bins: usize,
        range: Option<(f64, f64)>,
        weights: Option<&Tensor>,
        density: bool,
    ) -> Result<(Tensor, Tensor)> {
        let parts = self.histogram_parts(bins, range, weights, density);
        crate::ops::as_op_async("histogram", parts).await
    }

    /// [`Tensor::histogram_async`], whose composed parts' errors name their own ops.
    async fn histogram_parts(
        &self,
        bins: usize,
        range: Option<(f64, f64)>,
        weights: Option<&Tensor>,
        density: bool,
    ) -> Result<(Tensor, Tensor)> {
        const OP: &str = "histogram";
        if bins == 0 || bins >= crate::shape::MAX_ELEMENTS {
            return Err(Error::argument(
                OP,
                format!("bins = {bins}: at least 1, and fewer than a tensor holds"),
            ));
        }
        if self.dtype().is_complex() {
            return Err(Error::dtype(OP, "not defined for c64"));
        }
        if let Some(w) = weights {
            check_weights(OP, self, w)?;
        }
        // NumPy bins bools as 0 and 1 (u8).
        let x = if self.dtype() == DType::Bool {
            self.to_dtype(DType::U8).map_err(|e| e.named(OP))?
        } else {
            self.clone()
        };
        let (first, last) = match range {
            Some(r) => r,
            None if x.numel() == 0 => (0.0, 1.0),
            None => {
                let ends = match x.dtype() {
                    DType::F64 => extremes::<f64>(&x, DType::F64).await,
                    d if d.is_float() => extremes::<f32>(&x, DType::F32)
                        .await
                        .map(|e| e.map(f64::from)),
                    _ => extremes::<i64>(&x, DType::I64)
                        .await
                        .map(|e| e.map(|v| v as f64)),
                };
                let [low, high] = ends.map_err(|e| e.named(OP))?;
                (low, high)
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
        // (or integers') in f64; they are then the data's float dtype (f32
        // for integers here, f64 in NumPy).
        // Empty data's range, 0 to 1, is Python floats: f64.
        let found = range.is_none() && x.numel() > 0;
        let round = match x.dtype() {
            DType::F32 if found => |v: f64| f64::from(v as f32),
            DType::F16 if found => |v: f64| f16_from_f64(v).to_f64(),
            DType::BF16 if found => |v: f64| bf16_from_f64(v).to_f64(),
            _ => |v: f64| v,
        };
        // Integers' edges stay f64 here: they are binned against them
        // (`histogram_of`), and returned rounded to f32.
        let stored = match x.dtype() {
            DType::F32 => |v: f64| f64::from(v as f32),
            DType::F16 => |v: f64| f16_from_f64(v).to_f64(),
            DType::BF16 => |v: f64| bf16_from_f64(v).to_f64(),
            _ => |v: f64| v,
        };
        // NumPy widens an empty range by a half on each side.
        let (first, last) = if first == last {
            (round(first - 0.5), round(last + 0.5))
        } else {
            (first, last)
        };
        let edges: Vec<f64> = crate::backend::cpu::try_collect(
            OP,
            bins + 1,
            edges(first, last, bins, round).map(stored),
        )?;
        // NumPy's check: edges that are not increasing (or not finite) in
        // the dtype cannot bin the data.
        if let Some(i) = (0..bins).find(|&i| !(edges[i] < edges[i + 1] && edges[i + 1].is_finite()))
        {
            return Err(Error::argument(
                OP,
                format!(
                    "too many bins for the range [{first}, {last}] in {}: edges {i} and {} are {} and {}",
                    x.dtype(),
                    i + 1,
                    edges[i],
                    edges[i + 1]
                ),
            ));
        }
        histogram_of(&x, &edges, weights, density)
    }
}

/// The smallest and largest element of `x`, read back as `T` (`x`'s
/// values in `dtype`).
async fn extremes<T: crate::dtype::Element>(x: &Tensor, dtype: DType) -> Result<[T; 2]> {
    let ends = Tensor::stack(&[&x.min(..)?, &x.max(..)?], 0)?.to_dtype(dtype)?;
    let ends: Vec<T> = ends.to_vec_async().await?;
    Ok([ends[0], ends[1]])
}

/// NumPy's `linspace(first, last, bins + 1)` with every step rounded by
/// `round` (to the dtype it computes in): `i * step + first`, the last
/// edge `last` itself.
fn edges(first: f64, last: f64, bins: usize, round: fn(f64) -> f64) -> impl Iterator<Item = f64> {
    let step = round(round(last - first) / bins as f64);
    (0..=bins).map(move |i| {
        if i == bins {
            last
        } else {
            round(round(i as f64 * step) + first)
        }
    })
}

/// The histogram over `edges` (increasing f64 values exact in the data's
/// float dtype, or f32's for integers).
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
    let values = edges;
    let edges = edges_tensor(values, dtype, shape, dev)?;
    let hist = match x.dtype().is_float() || values.iter().all(|e| e.abs() < F32_EXACT) {
        true => binned(x, values, &edges, weights)?,
        false => integer_bins(x, values, weights)?,
    };
    if !density {
        return Ok((hist, edges));
    }
    // NumPy: hist / diff(edges) / hist.sum(), the differences in the
    // edges' dtype: the data's float dtype, or f64 for integers (whose
    // f32 edges past 2^24 round together: a width of 0 gave inf and NaN).
    let widths = if x.dtype().is_float() {
        edges
            .narrow(0, 1, bins)?
            .sub(&edges.narrow(0, 0, bins)?)?
            .to_dtype(DType::F32)?
    } else {
        let widths = values.windows(2).map(|e| (e[1] - e[0]) as f32).collect();
        Tensor::from_vec(widths, [bins], dev)?
    };
    let hist = hist.to_dtype(DType::F32)?;
    let total = hist.sum(..)?;
    Ok((hist.div(&widths)?.div(&total)?, edges))
}

/// Integers up to this are exact in f32.
const F32_EXACT: f64 = (1u32 << 24) as f64;

/// `x`'s histogram (counts, or weights' sums) over `edges` (`values`, in
/// f64, as a tensor of `x`'s float dtype, f32 for integers) by the count
/// kernel's search of them, for floats and for integers within 2^24 (f32
/// holds them and every edge between exactly).
fn binned(x: &Tensor, values: &[f64], edges: &Tensor, weights: Option<&Tensor>) -> Result<Tensor> {
    let bins = values.len() - 1;
    let flat = x.reshape([x.numel()])?.to_dtype(edges.dtype())?;
    // Bin i where edges[i] <= x < edges[i + 1], the last closed, found in
    // the count kernel by a search of the edges. Integers compare with
    // NumPy's f64 edges: an integer exact in f32 is at least an edge when
    // it is at least the smallest f32 at or above it, and at most the
    // last when at most the largest f32 at or below it (the nearest f32
    // would put 7 at or above NumPy's 7.000000000000001).
    let search = match x.dtype().is_float() {
        true => edges.clone(),
        false => {
            let bound = |(i, &e): (usize, &f64)| {
                let f = e as f32;
                match i == bins {
                    true if f64::from(f) > e => f.next_down(),
                    false if f64::from(f) < e => f.next_up(),
                    _ => f,
                }
            };
            let bounds = crate::backend::cpu::try_collect(
                "histogram",
                bins + 1,
                values.iter().enumerate().map(bound),
            )?;
            Tensor::from_vec(bounds, [bins + 1], x.device())?
        }
    };
    counted("histogram", &flat, Some(&search), weights, bins)
}

/// `x`'s histogram over `edges` for integers past 2^24 (f32 rounds them,
/// so a data's own largest value fell outside the last bin): exactly as
/// NumPy's f64 comparisons bin them (to 2^53, where f64 holds every
/// integer). An integer is at least an edge when it is at least the
/// edge's ceiling, and at most the last edge when below its floor plus
/// one, so each value's bin is the count of those integer thresholds at
/// or below it, less one (one search, then a count of the bins found).
/// A last edge past i64's range has no threshold: every value is below it.
fn integer_bins(x: &Tensor, edges: &[f64], weights: Option<&Tensor>) -> Result<Tensor> {
    const OP: &str = "histogram";
    let bins = edges.len() - 1;
    let last = edges[bins].floor();
    // `as` saturates: an edge below i64's range is below every value.
    let top = (last < i64::MAX as f64).then(|| last as i64 + 1);
    let ceilings = edges[..bins].iter().map(|e| e.ceil() as i64);
    let thresholds = crate::backend::cpu::try_collect(OP, bins + 1, ceilings.chain(top))?;
    let len = thresholds.len();
    let thresholds = Tensor::from_vec(thresholds, [len], x.device())?;
    let found = thresholds.searchsorted(&x.reshape([x.numel()])?, super::Side::Right)?;
    // A value below the first threshold is bin -1, past the last `bins`:
    // neither is counted.
    counted(OP, &found.sub_scalar(1)?, None, weights, bins)
}

/// `edges` as a tensor of `dtype` (the data's float dtype, f32 for
/// integers), each rounded to the nearest.
fn edges_tensor(
    edges: &[f64],
    dtype: DType,
    shape: [usize; 1],
    dev: &crate::Device,
) -> Result<Tensor> {
    Ok(match dtype {
        DType::F64 => Tensor::from_vec(edges.to_vec(), shape, dev)?,
        DType::F16 => {
            Tensor::from_vec(edges.iter().map(|&e| f16_from_f64(e)).collect(), shape, dev)?
        }
        DType::BF16 => Tensor::from_vec(
            edges.iter().map(|&e| bf16_from_f64(e)).collect(),
            shape,
            dev,
        )?,
        _ => Tensor::from_vec(edges.iter().map(|&e| e as f32).collect(), shape, dev)?,
    })
}

/// Refuses a tensor `bincount` does not count, and weights that do not fit.
fn check_bins(op: &'static str, x: &Tensor, weights: Option<&Tensor>) -> Result<()> {
    if x.rank() != 1 {
        return Err(Error::shape(
            op,
            format!("needs a 1-D tensor, got shape {}", x.shape()),
        ));
    }
    if !matches!(
        x.dtype(),
        DType::I32 | DType::I64 | DType::U32 | DType::U8 | DType::Bool
    ) {
        return Err(Error::dtype(
            op,
            format!("needs i32, i64, u32, u8 or bool values, got {}", x.dtype()),
        ));
    }
    match weights {
        Some(w) => check_weights(op, x, w),
        None => Ok(()),
    }
}

/// Refuses weights that are not floats or not of `x`'s shape.
fn check_weights(op: &'static str, x: &Tensor, w: &Tensor) -> Result<()> {
    if !w.dtype().is_float() {
        return Err(Error::dtype(
            op,
            format!("weights must be floats, got {}", w.dtype()),
        ));
    }
    if w.shape() != x.shape() {
        return Err(Error::shape(
            op,
            format!(
                "weights {} must have the shape of the data, {}",
                w.shape(),
                x.shape()
            ),
        ));
    }
    Ok(())
}

/// `index` (integers, any shape; with `edges`, values of their dtype
/// binned between them) counted into `len` bins, or its `weights` (in f32;
/// f64 ones, the CPU's, as they are) summed into them.
fn counted(
    op: &'static str,
    index: &Tensor,
    edges: Option<&Tensor>,
    weights: Option<&Tensor>,
    len: usize,
) -> Result<Tensor> {
    let n = index.numel();
    let index = index.reshape([n])?.contiguous()?;
    let weights = match weights {
        Some(w) => {
            crate::ops::check_devices(op, &index, &[crate::ops::Arg::Tensor(w)])?;
            // f64 weights (the CPU's) are summed as they are.
            let dtype = match w.dtype() {
                DType::F64 => DType::F64,
                _ => DType::F32,
            };
            Some(w.reshape([n])?.to_dtype(dtype)?.contiguous()?)
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
    count_into(&index, edges, weights.as_ref(), &out)?;
    Ok(out)
}

/// Adds the count of `index` (see [`CountCall`]; contiguous and 1-D, as
/// are `edges`, `weights` and `out`) into `out`: one kernel where every
/// operand fits one storage binding, else in parts that fit (see
/// `ops/binding_parts.rs`). The data is cut alike in `index` and
/// `weights`, each part adding into the same bins; bins are cut into
/// ranges, each counting the values that fall in it (integers shifted to
/// the range's start; a histogram range's edges with one edge more, as
/// the kernel closes the last bin it is given, into a temporary bin past
/// the range).
fn count_into(
    index: &Tensor,
    edges: Option<&Tensor>,
    weights: Option<&Tensor>,
    out: &Tensor,
) -> Result<()> {
    let data_cut = index.binding_cut();
    if let Some(cut) = data_cut.or_else(|| weights.and_then(Tensor::binding_cut)) {
        let parts = index.cut_parts(cut)?;
        let weights = weights.map(|w| w.cut_parts(cut)).transpose()?;
        for (k, part) in parts.iter().enumerate() {
            count_into(part, edges, weights.as_ref().map(|w| &w[k]), out)?;
        }
        return Ok(());
    }
    let bins_cut = out.binding_cut();
    let Some(cut) = bins_cut.or_else(|| edges.and_then(Tensor::binding_cut)) else {
        return count(&CountCall {
            index: index.kernel_ref(index.layout().clone())?,
            edges: match edges {
                Some(e) => Some(e.kernel_ref(e.layout().clone())?),
                None => None,
            },
            weights: match weights {
                Some(w) => Some(w.kernel_ref(w.layout().clone())?),
                None => None,
            },
            out: out.kernel_out(out.layout().clone())?,
        });
    };
    let len = out.numel();
    let step = len.div_ceil(cut.parts.max(2));
    for start in (0..len).step_by(step) {
        let bins = step.min(len - start);
        let range = out.narrow(0, start, bins)?;
        match edges {
            None => {
                let shifted = index.to_dtype(DType::I64)?.sub_scalar(start as i64)?;
                count_into(&shifted, None, weights, &range)?;
            }
            Some(e) if start + bins == len => {
                count_into(index, Some(&e.narrow(0, start, bins + 1)?), weights, &range)?;
            }
            Some(e) => {
                let wider = Tensor::zeros([bins + 1], out.dtype(), out.device())?;
                count_into(index, Some(&e.narrow(0, start, bins + 2)?), weights, &wider)?;
                range.add_(&wider.narrow(0, 0, bins)?)?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A GPU bin's count carries into its i64 high word: a count past one
    /// binding adds its parts into the same bins, and a bin past 2^32
    /// wrapped its low word. Bins that start near 2^32 stand in for the
    /// 2^32 elements no test holds; the workgroups' shared bins (3 bins)
    /// and the per-element adds (past 2048 bins) both carry.
    #[test]
    fn gpu_counts_carry_past_2_pow_32() {
        let dev = match crate::Device::gpu() {
            Ok(dev) => dev,
            Err(e) => {
                let required = std::env::var("WEBTENSOR_REQUIRE_GPU").is_ok_and(|v| v == "1");
                assert!(!required, "WEBTENSOR_REQUIRE_GPU=1 and no GPU: {e}");
                return;
            }
        };
        for len in [3usize, 2049] {
            let mut start = vec![0i64; len];
            start[0] = (1 << 32) - 2;
            start[1] = 5;
            start[2] = (1 << 33) - 1;
            let out = Tensor::from_vec(start.clone(), [len], &dev).unwrap();
            let index = Tensor::from_vec(vec![0i32, 0, 0, 2, 1], [5], &dev).unwrap();
            count_into(&index, None, None, &out).unwrap();
            let mut want = start;
            want[0] += 3;
            want[1] += 1;
            want[2] += 1;
            assert_eq!(out.to_vec::<i64>().unwrap(), want, "{len} bins");
        }
    }
}
