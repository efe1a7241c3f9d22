//! Drawing the next token from a language model's logits, as Hugging
//! Face's `generate` draws it: the logits divided by a temperature, cut to
//! the `top_k` largest and to the smallest set of the largest whose
//! probability reaches `top_p`, renormalised, and one index drawn per row
//! from a uniform number. Composed of a sort, a softmax, a cumulative sum
//! and a count on the logits' device; nothing but the uniform numbers
//! crosses to it.

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ops::{Arg, SortOrder, check_devices};
use crate::tensor::Tensor;

/// How [`Tensor::sample`] draws: a temperature (0 is greedy: the largest
/// logit), and optionally `top_k` and `top_p` cuts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sampling {
    temperature: f64,
    top_k: Option<usize>,
    top_p: Option<f64>,
}

impl Sampling {
    /// Draws from `softmax(logits / temperature)`; a temperature of 0 takes
    /// the largest logit (the first, on ties).
    pub fn new(temperature: f64) -> Sampling {
        Sampling {
            temperature,
            top_k: None,
            top_p: None,
        }
    }

    /// The largest logit of each row, always.
    pub fn greedy() -> Sampling {
        Sampling::new(0.0)
    }

    /// Draws among the `k` largest logits only, and those equal to the
    /// `k`-th largest (Hugging Face's `top_k`, which keeps ties).
    pub fn top_k(mut self, k: usize) -> Sampling {
        self.top_k = Some(k);
        self
    }

    /// Draws among the smallest set of the largest logits whose
    /// probability reaches `p` (nucleus sampling, Hugging Face's `top_p`,
    /// `p` in `[0, 1]`; the largest is always kept, so `p = 0` is greedy).
    /// Logits tied at the cut are kept in index order, the earlier first
    /// (Hugging Face keeps the later ones: the kept mass is the same, the
    /// token ids may differ).
    pub fn top_p(mut self, p: f64) -> Sampling {
        self.top_p = Some(p);
        self
    }
}

impl Tensor {
    /// One token per row of these logits `(..., vocab)`: i32 indices of
    /// shape `(...)`, drawn as `sampling` says with uniform numbers from
    /// [`Tensor::rand`] seeded with `seed` (the same seed draws the same
    /// tokens on every device).
    ///
    /// ```
    /// use webtensor::{Device, Sampling, Tensor};
    /// # fn main() -> webtensor::Result<()> {
    /// let logits = Tensor::from_slice(&[0.0f32, 5.0, 1.0, 4.0], [1, 4], &Device::cpu())?;
    /// let greedy = logits.sample(&Sampling::greedy(), 0)?;
    /// assert_eq!(greedy.to_vec::<i32>()?, vec![1]);
    /// let top2 = logits.sample(&Sampling::new(1.0).top_k(2), 42)?;
    /// assert!([1, 3].contains(&top2.to_vec::<i32>()?[0]));
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// As [`Tensor::sample_with`].
    pub fn sample(&self, sampling: &Sampling, seed: u64) -> Result<Tensor> {
        const OP: &str = "sample";
        check_logits(OP, self)?;
        let rows = &self.dims()[..self.rank() - 1];
        let uniform =
            Tensor::rand(rows, DType::F32, seed, self.device()).map_err(|e| e.named(OP))?;
        self.sample_with(sampling, &uniform)
            .map_err(|e| e.named(OP))
    }

    /// [`Tensor::sample`] with the uniform numbers given: `uniform`, of
    /// shape `(...)`, in `[0, 1)`, one per row. The kept logits' cumulative
    /// probabilities in descending order are counted up to each row's
    /// number: the token is the first whose cumulative probability passes
    /// it (sums taken from the smallest, so that a long tail of tiny
    /// probabilities keeps its mass in f32). A row with a NaN logit, or no
    /// finite one, has no distribution: it gives the greedy draw's token
    /// (`argmax`'s: the first NaN, or the first logit), where PyTorch's
    /// `multinomial` raises; nothing is read back to check. Nor are the
    /// numbers checked: one below 0 draws the most probable kept token,
    /// one of 1 or more the least probable kept token, NaN the most
    /// probable.
    ///
    /// # Errors
    /// `Error::Shape` naming `sample` for logits of no axis or an empty
    /// one, or uniform numbers of another shape than the rows;
    /// `Error::DType` for logits that are not a float or uniform numbers
    /// that are not f32; `Error::Argument` for a temperature that is
    /// negative or not finite, a `top_k` of 0 or a `top_p` outside `[0,
    /// 1]`; `Error::DeviceMismatch`.
    pub fn sample_with(&self, sampling: &Sampling, uniform: &Tensor) -> Result<Tensor> {
        const OP: &str = "sample";
        let _region = crate::profile_region::op(OP);
        check_logits(OP, self)?;
        check_devices(OP, self, &[Arg::Tensor(uniform)])?;
        let rows = &self.dims()[..self.rank() - 1];
        if uniform.dims() != rows {
            return Err(Error::shape(
                OP,
                format!(
                    "uniform numbers of shape {:?} for rows {rows:?}: give one a row",
                    uniform.dims()
                ),
            ));
        }
        if uniform.dtype() != DType::F32 {
            return Err(Error::dtype(
                OP,
                format!("uniform numbers of {}: give f32", uniform.dtype()),
            ));
        }
        let Sampling {
            temperature,
            top_k,
            top_p,
        } = *sampling;
        if !(temperature.is_finite() && temperature >= 0.0) {
            return Err(Error::argument(
                OP,
                format!("temperature {temperature} is not a finite number >= 0"),
            ));
        }
        if top_k == Some(0) || top_p.is_some_and(|p| !(0.0..=1.0).contains(&p)) {
            return Err(Error::argument(
                OP,
                format!("top_k {top_k:?} must be at least 1 and top_p {top_p:?} in [0, 1]"),
            ));
        }
        if temperature == 0.0 {
            return self.argmax(-1);
        }
        // As the f32 it divides in, past whose range it is the nearest
        // f32 (one that rounded to 0 or inf made -inf / inf or 0 / 0 NaN,
        // which drew a -inf logit first).
        let temperature = temperature.clamp(f64::from(f32::from_bits(1)), f64::from(f32::MAX));
        let vocab = self.dims()[self.rank() - 1];
        // The row's largest finite logit is taken off before the
        // temperature divides (the same distribution): finite logits over a
        // tiny temperature overflowed to +inf, whose NaN softmax drew the
        // first of them. NaN and infinite logits stay as they are. f64
        // logits are shifted in f64 (f32 copies of 1e10 and 1e10 + 1 are
        // equal), the others in f32, where their differences are exact.
        let logits = if self.dtype() == DType::F64 {
            self.clone()
        } else {
            self.to_dtype(DType::F32)?
        };
        let odd = logits.isfinite()?.logical_not()?;
        let largest = logits
            .masked_fill(&odd, f64::NEG_INFINITY)?
            .max_keepdim(-1)?;
        let shift = largest.masked_fill(&largest.isfinite()?.logical_not()?, 0.0)?;
        let scaled = logits
            .sub(&shift)?
            .to_dtype(DType::F32)?
            .div_scalar(temperature)?;
        let order = scaled.argsort(-1, SortOrder::Descending)?;
        let mut sorted = scaled.gather(&order, -1)?;
        if let Some(k) = top_k.filter(|&k| k < vocab) {
            // Hugging Face's cut: below the k-th largest, ties with it kept.
            let kth = sorted.narrow(-1, k - 1, 1)?;
            sorted = sorted.masked_fill(&sorted.lt(&kth)?, f64::NEG_INFINITY)?;
        }
        let mut probs = sorted.softmax(-1)?;
        // Sums of each token's probability and the smaller ones', from the
        // smallest (as Hugging Face's top-p sums them): a long tail of tiny
        // probabilities keeps its mass where a running sum from the largest
        // would stop growing short of 1.
        let from_tail = |p: &Tensor| -> Result<Tensor> { p.flip(&[-1])?.cumsum(-1)?.flip(&[-1]) };
        if let Some(p) = top_p.filter(|&p| p < 1.0) {
            // Kept: a token whose larger ones' probability is still short
            // of p (the largest always): the sums from the smallest above
            // 1 - p of the total.
            // (1 - p is 1 in f32 for p below 2^-25: the largest is kept by
            // its position, not by its sum.)
            let tail = from_tail(&probs)?;
            let floor = tail.narrow(-1, 0, 1)?.mul_scalar(1.0 - p)?;
            let past_first = Tensor::arange(0, vocab as i64, 1, self.device())?.gt_scalar(0)?;
            probs = probs.masked_fill(&tail.le(&floor)?.logical_and(&past_first)?, 0.0)?;
        }
        // The token drawn by u is the first whose cumulative probability
        // passes u x total: the last whose sum with the smaller ones reaches
        // (1 - u) x total.
        let tail = from_tail(&probs)?;
        let total = tail.narrow(-1, 0, 1)?;
        // At least the least normal f32, so that a number of 1 or more
        // stops at the last kept token, not at the dropped ones (sums 0)
        // after it.
        let rest = uniform
            .unsqueeze(-1)?
            .mul_scalar(-1.0)?
            .add_scalar(1.0)?
            .mul(&total)?
            .maximum_scalar(f32::MIN_POSITIVE)?;
        let reached = tail.ge(&rest)?.to_dtype(DType::I32)?.sum_keepdim(-1)?;
        let at = reached.sub_scalar(1)?.maximum_scalar(0)?;
        order.gather(&at, -1)?.squeeze_axis(-1)
    }
}

/// `Error::Shape` or `Error::DType` naming `op` unless `logits` has a
/// non-empty last axis of a float dtype.
fn check_logits(op: &'static str, logits: &Tensor) -> Result<()> {
    super::check_float(op, logits.dtype())?;
    if logits.rank() == 0 || logits.dims()[logits.rank() - 1] == 0 {
        return Err(Error::shape(
            op,
            format!(
                "logits of shape {:?} have no vocabulary axis",
                logits.dims()
            ),
        ));
    }
    Ok(())
}
