//! Quantiles over any axes, PyTorch's `torch.quantile` and
//! `torch.nanquantile` step by step: each line sorted (NaN last), a
//! position `q * (count - 1)` computed in f64 as PyTorch 2.15 does, the
//! elements around it taken and blended by its fraction with
//! `torch.lerp`'s formula. Every step is a device op, so lines never
//! leave the device.

use super::reduce::Axes;
use super::sort::SortOrder;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::tensor::Tensor;

/// Which value [`Tensor::quantile`] takes where a quantile falls between
/// two elements `a <= b` of a sorted line, at fraction `t` from `a` (the
/// modes of PyTorch's `interpolation` and NumPy's `method`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Interpolation {
    /// `a + t (b - a)` (PyTorch's and NumPy's default); computed as
    /// `torch.lerp`: `b - (b - a)(1 - t)` for `t >= 0.5`.
    Linear,
    /// `a`: at 0.5 the lower median, PyTorch's `torch.median`.
    Lower,
    /// `b`.
    Higher,
    /// The nearer of `a` and `b`, the even position at a tie (the
    /// position rounded half to even, as PyTorch's).
    Nearest,
    /// `(a + b) / 2`, computed as [`Interpolation::Linear`] at `t = 0.5`.
    Midpoint,
}

/// The probabilities of [`Tensor::quantile`]: one (`0.5`), which takes the
/// reduced axes away, or a list (`[0.25, 0.75]`, `&[..]`, `vec![..]`),
/// whose quantiles lie along a new leading axis, as PyTorch's 0-d and 1-D
/// `q`.
#[derive(Debug, Clone, PartialEq)]
pub enum Quantiles {
    /// One probability.
    One(f64),
    /// Several, along a leading axis of the result.
    List(Vec<f64>),
}

impl From<f64> for Quantiles {
    fn from(q: f64) -> Quantiles {
        Quantiles::One(q)
    }
}

impl From<&[f64]> for Quantiles {
    fn from(q: &[f64]) -> Quantiles {
        Quantiles::List(q.to_vec())
    }
}

impl<const N: usize> From<[f64; N]> for Quantiles {
    fn from(q: [f64; N]) -> Quantiles {
        Quantiles::List(q.to_vec())
    }
}

impl From<Vec<f64>> for Quantiles {
    fn from(q: Vec<f64>) -> Quantiles {
        Quantiles::List(q)
    }
}

/// One quantile computation: the op's name, whether NaN is skipped, and
/// whether the reduced axes stay with length 1.
#[derive(Clone, Copy)]
struct Plan {
    op: &'static str,
    skip_nan: bool,
    keepdim: bool,
    how: Interpolation,
}

impl Tensor {
    /// The `q` quantiles over `axes` (`..` for every element), PyTorch's
    /// `torch.quantile` (and NumPy's `quantile`, which takes `q`
    /// unrounded): each line sorted, the position `q (n - 1)` computed in
    /// f64 from `q` rounded to the line's dtype (f32 for all but f64), as
    /// PyTorch 2.15's, and the elements around it taken
    /// as `how` says, a blend weighing them by the position's fraction
    /// rounded to that dtype (within an ulp of PyTorch's, which fuses the
    /// blend's multiply and add). A line holding NaN gives NaN. Floats keep
    /// their dtype (f16 and bf16 computed in f32 and rounded once);
    /// integers give f32. `q` of one probability takes `axes` away; a list
    /// gives the quantiles along a new leading axis. `quantile(0.5, axis,
    /// Interpolation::Linear)` is NumPy's `median`; with
    /// `Interpolation::Lower`, PyTorch's.
    ///
    /// ```
    /// use webtensor::{Device, Interpolation, Tensor};
    /// # fn main() -> webtensor::Result<()> {
    /// let t = Tensor::from_slice(&[4.0f32, 1.0, 3.0, 2.0, 10.0, 20.0, 30.0, 40.0], [2, 4], &Device::cpu())?;
    /// let median = t.quantile(0.5, 1, Interpolation::Linear)?;
    /// assert_eq!(median.to_vec::<f32>()?, vec![2.5, 25.0]);
    /// let quartiles = t.quantile([0.25, 0.75], 1, Interpolation::Lower)?;
    /// assert_eq!(quartiles.dims(), &[2, 2]);
    /// assert_eq!(quartiles.to_vec::<f32>()?, vec![1.0, 10.0, 3.0, 30.0]);
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// `Error::Argument` naming `quantile` for a probability outside `[0,
    /// 1]` (or NaN), an empty list of them, or reduced axes of no
    /// elements; `Error::DType` for bool and c64; axis errors as
    /// [`Tensor::sum`]'s; [`Tensor::sort`]'s on a GPU.
    pub fn quantile(
        &self,
        q: impl Into<Quantiles>,
        axes: impl Into<Axes>,
        how: Interpolation,
    ) -> Result<Tensor> {
        self.quantiles(
            q.into(),
            axes.into(),
            Plan::new("quantile", false, false, how),
        )
    }

    /// [`Tensor::quantile`] with the reduced axes kept, with length 1.
    ///
    /// # Errors
    /// As [`Tensor::quantile`].
    pub fn quantile_keepdim(
        &self,
        q: impl Into<Quantiles>,
        axes: impl Into<Axes>,
        how: Interpolation,
    ) -> Result<Tensor> {
        self.quantiles(
            q.into(),
            axes.into(),
            Plan::new("quantile", false, true, how),
        )
    }

    /// [`Tensor::quantile`] of the elements that are not NaN (PyTorch's
    /// `torch.nanquantile`, NumPy's `nanquantile`): each line's position is
    /// `q (k - 1)` for its `k` numbers; a line of NaN only gives NaN.
    ///
    /// # Errors
    /// As [`Tensor::quantile`], naming `nanquantile`.
    pub fn nanquantile(
        &self,
        q: impl Into<Quantiles>,
        axes: impl Into<Axes>,
        how: Interpolation,
    ) -> Result<Tensor> {
        self.quantiles(
            q.into(),
            axes.into(),
            Plan::new("nanquantile", true, false, how),
        )
    }

    /// [`Tensor::nanquantile`] with the reduced axes kept, with length 1.
    ///
    /// # Errors
    /// As [`Tensor::quantile`], naming `nanquantile`.
    pub fn nanquantile_keepdim(
        &self,
        q: impl Into<Quantiles>,
        axes: impl Into<Axes>,
        how: Interpolation,
    ) -> Result<Tensor> {
        self.quantiles(
            q.into(),
            axes.into(),
            Plan::new("nanquantile", true, true, how),
        )
    }

    fn quantiles(&self, q: Quantiles, axes: Axes, plan: Plan) -> Result<Tensor> {
        let op = plan.op;
        let dtype = self.dtype();
        if matches!(dtype, DType::Bool | DType::C64) {
            return Err(crate::op::unsupported(op, dtype));
        }
        let probabilities = match &q {
            Quantiles::One(p) => std::slice::from_ref(p),
            Quantiles::List(ps) => &ps[..],
        };
        if probabilities.is_empty() {
            return Err(Error::argument(op, "no probabilities were given"));
        }
        if let Some(p) = probabilities.iter().find(|p| !(0.0..=1.0).contains(*p)) {
            return Err(Error::argument(
                op,
                format!("probability {p} is outside [0, 1]"),
            ));
        }
        let rank = self.rank();
        let mask = axes.mask(op, rank)?;
        let dims = self.dims();
        let (kept, reduced): (Vec<usize>, Vec<usize>) = (0..rank).partition(|&a| !mask[a]);
        let n: usize = reduced.iter().map(|&a| dims[a]).product();
        if n == 0 {
            return Err(Error::argument(
                op,
                format!("the reduced axes of shape {dims:?} hold no elements"),
            ));
        }
        super::as_op(op, || {
            let compute = if dtype == DType::F64 {
                DType::F64
            } else {
                DType::F32
            };
            let perm: Vec<isize> = kept.iter().chain(&reduced).map(|&a| a as isize).collect();
            let mut line_dims: Vec<usize> = kept.iter().map(|&a| dims[a]).collect();
            line_dims.push(n);
            let sorted = self
                .to_dtype(compute)?
                .permute(&perm)?
                .reshape(line_dims)?
                .sort(-1, SortOrder::Ascending)?;
            let picked = pick(&sorted, probabilities, compute, plan)?;
            // [kept..., q] -> [q, kept...], then the reduced axes back as
            // ones, and the q axis away for one probability.
            let mut out_dims: Vec<usize> = vec![probabilities.len()];
            if plan.keepdim {
                out_dims.extend((0..rank).map(|a| if mask[a] { 1 } else { dims[a] }));
            } else {
                out_dims.extend(kept.iter().map(|&a| dims[a]));
            }
            if matches!(q, Quantiles::One(_)) {
                out_dims.remove(0);
            }
            picked
                .moveaxis(-1, 0)?
                .reshape(out_dims)?
                .to_dtype(match dtype {
                    DType::F16 | DType::BF16 | DType::F64 => dtype,
                    _ => DType::F32,
                })
        })
    }
}

impl Plan {
    fn new(op: &'static str, skip_nan: bool, keepdim: bool, how: Interpolation) -> Plan {
        Plan {
            op,
            skip_nan,
            keepdim,
            how,
        }
    }
}

/// The quantiles `[lines..., q]` of the sorted lines.
fn pick(sorted: &Tensor, qs: &[f64], compute: DType, plan: Plan) -> Result<Tensor> {
    if plan.skip_nan {
        return pick_numbers(sorted, qs, compute, plan.how);
    }
    let n = *sorted.dims().last().unwrap_or(&1);
    let per_q = qs
        .iter()
        .map(|&q| {
            // The position in f64, of q rounded to the line's dtype (exact:
            // a 24-bit q times a count below 2^29).
            let rank = if compute == DType::F64 {
                q
            } else {
                f64::from(q as f32)
            } * (n - 1) as f64;
            let (lo, hi) = (rank.floor(), rank.ceil());
            let at = |k: f64| sorted.narrow(-1, k as usize, 1);
            match plan.how {
                Interpolation::Lower => at(lo),
                Interpolation::Higher => at(hi),
                Interpolation::Nearest => at(rank.round_ties_even()),
                Interpolation::Linear | Interpolation::Midpoint => {
                    let t = if plan.how == Interpolation::Midpoint {
                        0.5
                    } else {
                        rank - lo
                    };
                    // The weight in the line's dtype, as PyTorch's.
                    let t = if compute == DType::F64 {
                        t
                    } else {
                        f64::from(t as f32)
                    };
                    let (below, above) = (at(lo)?, at(hi)?);
                    let diff = above.sub(&below)?;
                    if t < 0.5 {
                        below.add(&diff.mul_scalar(t)?)
                    } else {
                        above.sub(&diff.mul_scalar(1.0 - t)?)
                    }
                }
            }
        })
        .collect::<Result<Vec<Tensor>>>()?;
    let picked = Tensor::concat(&per_q.iter().collect::<Vec<_>>(), -1)?;
    // A line holding NaN (which sorts last) gives NaN, as PyTorch's
    // position at the last element does.
    picked.masked_fill(&sorted.narrow(-1, n - 1, 1)?.isnan()?, f64::NAN)
}

/// `nanquantile`'s picks: each line's positions from its own count of
/// numbers (NaN sorts last), gathered.
fn pick_numbers(sorted: &Tensor, qs: &[f64], compute: DType, how: Interpolation) -> Result<Tensor> {
    // k - 1 for the line's k numbers, 0 for none.
    let m = sorted
        .isnan()?
        .bitwise_not()?
        .sum_keepdim(-1)?
        .to_dtype(DType::I64)?
        .sub_scalar(1)?
        .maximum_scalar(0)?;
    let (mut below, mut above, mut weight) = (Vec::new(), Vec::new(), Vec::new());
    for &q in qs {
        let taps = if compute == DType::F64 {
            Taps::of_f64_ranks(&m.to_dtype(DType::F64)?.mul_scalar(q)?, how)?
        } else {
            Taps::exact(&m, q as f32, how)?
        };
        below.push(taps.below);
        if let Some((a, w)) = taps.blend {
            above.push(a);
            weight.push(w);
        }
    }
    let cat = |v: Vec<Tensor>| Tensor::concat(&v.iter().collect::<Vec<_>>(), -1);
    let below = sorted.gather(&cat(below)?, -1)?;
    if !blends(how) {
        return Ok(below);
    }
    let above = sorted.gather(&cat(above)?, -1)?;
    let t = cat(weight)?.to_dtype(compute)?;
    let diff = above.sub(&below)?;
    let from_below = below.add(&t.mul(&diff)?)?;
    let from_above = above.sub(&diff.mul(&t.neg()?.add_scalar(1.0)?)?)?;
    Tensor::where_cond(&t.lt_scalar(0.5)?, &from_below, &from_above)
}

/// True for the interpolations that blend two elements.
fn blends(how: Interpolation) -> bool {
    matches!(how, Interpolation::Linear | Interpolation::Midpoint)
}

/// Where one probability falls in each line: the i64 position of the
/// element taken, and for the blending interpolations the position of the
/// one above it and its weight.
struct Taps {
    below: Tensor,
    blend: Option<(Tensor, Tensor)>,
}

impl Taps {
    /// From positions computed in f64 (PyTorch's for f64 lines).
    fn of_f64_ranks(rank: &Tensor, how: Interpolation) -> Result<Taps> {
        let floor = rank.floor()?;
        let below = match how {
            Interpolation::Higher => rank.ceil()?,
            Interpolation::Nearest => rank.round()?,
            _ => floor.clone(),
        };
        let blend = match how {
            Interpolation::Midpoint => Some(floor.full_like(0.5)?),
            Interpolation::Linear => Some(rank.sub(&floor)?),
            _ => None,
        };
        Ok(Taps {
            below: below.to_dtype(DType::I64)?,
            blend: match blend {
                Some(w) => Some((rank.ceil()?.to_dtype(DType::I64)?, w)),
                None => None,
            },
        })
    }

    /// The positions `q m` for the i64 counts `m` exactly as PyTorch 2.15
    /// computes them, in f64 (where every such product is exact) from `q`
    /// rounded to f32, with integer ops that every device has: `q = M
    /// 2^-s` for an integer `M` below 2^24, so `q m` is `M m` (below 2^53)
    /// over 2^s, its floor a shift and its fraction the bits shifted out
    /// (the weight is that fraction rounded to f32, as PyTorch rounds
    /// its f64 weight to the line's dtype).
    fn exact(m: &Tensor, q: f32, how: Interpolation) -> Result<Taps> {
        // q in [0, 1]: a normal q is (2^23 + fraction) 2^(e - 150); -0 is
        // 0 (its sign bit would read as an exponent).
        let bits = q.abs().to_bits();
        let (exponent, fraction) = ((bits >> 23) as i64, i64::from(bits & 0x7f_ffff));
        let (mantissa, shift) = match exponent {
            0 => (fraction, 149),
            e => (fraction | 1 << 23, 150 - e),
        };
        let product = m.mul_scalar(mantissa)?;
        let floor = product.bitwise_right_shift_scalar(shift)?;
        let rest = if shift >= 63 {
            product.clone()
        } else {
            product.bitwise_and_scalar((1i64 << shift) - 1)?
        };
        let inexact = rest.ne_scalar(0)?.to_dtype(DType::I64)?;
        let above = floor.add(&inexact)?;
        let below = match how {
            Interpolation::Higher => above.clone(),
            // Half to even: up past the half, or at it from an odd floor.
            Interpolation::Nearest if shift <= 63 => {
                let half = 1i64 << (shift - 1);
                let odd = floor.bitwise_and_scalar(1)?.eq_scalar(1)?;
                let at_half = rest.eq_scalar(half)?.logical_and(&odd)?;
                let up = rest.gt_scalar(half)?.logical_or(&at_half)?;
                floor.add(&up.to_dtype(DType::I64)?)?
            }
            _ => floor.clone(),
        };
        let weight = match how {
            Interpolation::Midpoint => Some(Tensor::full(m.dims(), 0.5, DType::F32, m.device())?),
            // 2^-s in two exact steps (s reaches 149, past f32's normal
            // range for one factor).
            Interpolation::Linear => Some(
                rest.to_dtype(DType::F32)?
                    .mul_scalar(2f32.powi(-64))?
                    .mul_scalar(2f32.powi(64 - shift as i32))?,
            ),
            _ => None,
        };
        Ok(Taps {
            below,
            blend: weight.map(|w| (above, w)),
        })
    }
}
