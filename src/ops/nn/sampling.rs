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

    /// Draws among the `k` largest logits only (Hugging Face's `top_k`).
    pub fn top_k(mut self, k: usize) -> Sampling {
        self.top_k = Some(k);
        self
    }

    /// Draws among the smallest set of the largest logits whose
    /// probability reaches `p` (nucleus sampling, Hugging Face's `top_p`;
    /// the largest is always kept).
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
    /// it.
    ///
    /// # Errors
    /// `Error::Shape` naming `sample` for logits of no axis or an empty
    /// one, or uniform numbers of another shape than the rows;
    /// `Error::DType` for logits that are not a float or uniform numbers
    /// that are not f32; `Error::Argument` for a temperature that is
    /// negative or not finite, a `top_k` of 0 or a `top_p` outside `(0,
    /// 1]`; `Error::DeviceMismatch`.
    pub fn sample_with(&self, sampling: &Sampling, uniform: &Tensor) -> Result<Tensor> {
        const OP: &str = "sample";
        let _region = crate::profile_region::op(OP);
        check_logits(OP, self)?;
        check_devices(OP, self, &[Arg::Tensor(uniform)])?;
        let rows = &self.dims()[..self.rank() - 1];
        if uniform.dims() != rows || uniform.dtype() != DType::F32 {
            return Err(Error::shape(
                OP,
                format!(
                    "uniform numbers of shape {:?} and dtype {} for rows {rows:?}: give f32 of the rows' shape",
                    uniform.dims(),
                    uniform.dtype()
                ),
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
        if top_k == Some(0) || top_p.is_some_and(|p| !(p > 0.0 && p <= 1.0)) {
            return Err(Error::argument(
                OP,
                format!("top_k {top_k:?} must be at least 1 and top_p {top_p:?} in (0, 1]"),
            ));
        }
        if temperature == 0.0 {
            return self.argmax(-1);
        }
        let vocab = self.dims()[self.rank() - 1];
        let k = top_k.map_or(vocab, |k| k.min(vocab));
        let scaled = self.to_dtype(DType::F32)?.div_scalar(temperature)?;
        let order = scaled
            .argsort(-1, SortOrder::Descending)?
            .narrow(-1, 0, k)?;
        let mut probs = scaled.gather(&order, -1)?.softmax(-1)?;
        if let Some(p) = top_p {
            // Kept: a token whose larger ones' probability is still short
            // of p (the largest always).
            let before = probs.cumsum(-1)?.sub(&probs)?;
            probs = probs.masked_fill(&before.ge_scalar(p)?, 0.0)?;
        }
        let cumulative = probs.cumsum(-1)?;
        let total = cumulative.narrow(-1, k - 1, 1)?;
        let threshold = uniform.unsqueeze(-1)?.mul(&total)?;
        let passed = cumulative
            .le(&threshold)?
            .to_dtype(DType::I32)?
            .sum_keepdim(-1)?;
        let at = passed.minimum_scalar(k as i32 - 1)?;
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
