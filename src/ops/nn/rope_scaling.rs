//! How a model stretches its rotary frequencies past the context it was
//! trained on: the frequency scalings of Hugging Face's `rope_type`s
//! ("linear", "llama3") and ggml's per-frequency factors (the `rope_freqs`
//! tensor GGUF conversions of Llama 3.1 and later carry), as the
//! frequencies [`crate::Rope::scaled`] makes its tables from.

use crate::error::{Error, Result};

/// A scaling of a rotary embedding's frequencies (see
/// [`crate::Rope::scaled`]). Each makes the frequencies `1 /
/// theta^(2i / head_dim)` of [`crate::Rope::new`] first, in f32, then
/// scales them in f32 as its reference does.
///
/// ```
/// use webtensor::RopeScaling;
/// # fn main() -> webtensor::Result<()> {
/// // Llama 3.1's own settings (its config.json's `rope_scaling`).
/// let llama31 = RopeScaling::Llama3 {
///     factor: 8.0,
///     low_freq_factor: 1.0,
///     high_freq_factor: 4.0,
///     original_max_position: 8192,
/// };
/// let freqs = llama31.frequencies(128, 500_000.0)?;
/// assert_eq!(freqs[0], 1.0); // short wavelengths are kept
/// assert!((freqs[63] - RopeScaling::None.frequencies(128, 500_000.0)?[63] / 8.0).abs() < 1e-12);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum RopeScaling {
    /// The frequencies as they are.
    None,
    /// Hugging Face's "linear" (position interpolation; ggml's
    /// `rope.scaling.type` "linear"): every frequency divided by `factor`.
    Linear {
        /// How many times longer the context is than the trained one.
        factor: f64,
    },
    /// Hugging Face's "llama3" (`_compute_llama3_parameters`), with the
    /// names of a Llama 3.1 config's `rope_scaling`: frequencies whose
    /// wavelength `2 pi / f` is below `original_max_position /
    /// high_freq_factor` are kept, those above `original_max_position /
    /// low_freq_factor` divided by `factor`, and those between blended,
    /// `(1 - s) f / factor + s f` with `s = (original_max_position /
    /// wavelength - low_freq_factor) / (high_freq_factor -
    /// low_freq_factor)`.
    Llama3 {
        /// What the longest wavelengths are divided by (8 for Llama 3.1).
        factor: f64,
        /// The trained context over this is the longest wavelength kept
        /// blended (1 for Llama 3.1).
        low_freq_factor: f64,
        /// The trained context over this is the shortest wavelength
        /// blended (4 for Llama 3.1).
        high_freq_factor: f64,
        /// The context the model was trained on (8192 for Llama 3.1).
        original_max_position: usize,
    },
    /// Frequency `i` divided by `factors[i]` (`head_dim / 2` of them), as
    /// ggml divides by the `rope_freqs` tensor a GGUF file carries (its
    /// conversion of a "llama3" scaling: 1, `factor`, or the blend's
    /// divisor).
    Factors(Vec<f32>),
}

/// The widest head rotary tables take: 65,536 features (models' heads
/// have 64 to 256; a larger one is a malformed file's, whose tables would
/// be a huge allocation).
pub(crate) const MAX_HEAD_DIM: usize = 1 << 16;

impl RopeScaling {
    /// The `head_dim / 2` frequencies this scaling gives heads of
    /// `head_dim` features rotated with base `theta`, in f32 (the angle of
    /// pair `i` at position `p` is `p * frequencies[i]`).
    ///
    /// # Errors
    /// `Error::Argument` naming `RopeScaling::frequencies` for an odd or
    /// zero `head_dim` or one past 65,536, a `theta` that is not above 1 or past f32's range,
    /// a factor that is not a positive normal f32, a "llama3" scaling
    /// whose `high_freq_factor` is not above its `low_freq_factor` (by a
    /// normal f32) or whose `original_max_position` is 0, or `Factors`
    /// that are not `head_dim / 2` positive normal f32 values.
    pub fn frequencies(&self, head_dim: usize, theta: f64) -> Result<Vec<f32>> {
        const OP: &str = "RopeScaling::frequencies";
        if head_dim == 0 || !head_dim.is_multiple_of(2) || head_dim > MAX_HEAD_DIM {
            return Err(Error::argument(
                OP,
                format!("head_dim {head_dim} is not a positive even number up to {MAX_HEAD_DIM}"),
            ));
        }
        if !(theta > 1.0 && (theta as f32).is_finite()) {
            return Err(Error::argument(
                OP,
                format!("theta {theta} is not a number above 1 that f32 holds"),
            ));
        }
        // The factors are used in f32: each must be a normal f32 above 0
        // there too (a tiny f64 would round to 0 or a subnormal, and its
        // quotients overflow).
        let positive = |name: &str, v: f64| {
            let v32 = v as f32;
            if v32.is_finite() && v32 >= f32::MIN_POSITIVE {
                Ok(v32)
            } else {
                Err(Error::argument(
                    OP,
                    format!("{name} {v} is not a positive number that f32 holds"),
                ))
            }
        };
        let base = theta as f32;
        let plain = (0..head_dim / 2).map(|i| 1.0 / base.powf((2 * i) as f32 / head_dim as f32));
        match self {
            RopeScaling::None => Ok(plain.collect()),
            RopeScaling::Linear { factor } => {
                let factor = positive("factor", *factor)?;
                Ok(plain.map(|f| f / factor).collect())
            }
            RopeScaling::Llama3 {
                factor,
                low_freq_factor,
                high_freq_factor,
                original_max_position,
            } => {
                let factor = positive("factor", *factor)?;
                let low = positive("low_freq_factor", *low_freq_factor)?;
                positive("high_freq_factor", *high_freq_factor)?;
                if high_freq_factor <= low_freq_factor || *original_max_position == 0 {
                    return Err(Error::argument(
                        OP,
                        format!(
                            "a llama3 scaling needs high_freq_factor {high_freq_factor} above \
                             low_freq_factor {low_freq_factor} and original_max_position \
                             {original_max_position} above 0"
                        ),
                    ));
                }
                // As Hugging Face writes it in f32 tensors: its Python
                // scalars (2 pi, the wavelength bounds, the context and
                // the factors' difference, made in f64) rounded to f32,
                // `scalar / tensor` as the tensor's reciprocal times the
                // scalar.
                let old = *original_max_position as f64;
                let long = (old / low_freq_factor) as f32;
                let short = (old / high_freq_factor) as f32;
                let span = positive(
                    "high_freq_factor - low_freq_factor",
                    high_freq_factor - low_freq_factor,
                )?;
                let (two_pi, old) = (std::f64::consts::TAU as f32, old as f32);
                Ok(plain
                    .map(|f| {
                        let wavelength = (1.0 / f) * two_pi;
                        if wavelength > long {
                            f / factor
                        } else if wavelength < short {
                            f
                        } else {
                            let smooth = ((1.0 / wavelength) * old - low) / span;
                            (1.0 - smooth) * f / factor + smooth * f
                        }
                    })
                    .collect())
            }
            RopeScaling::Factors(factors) => {
                if factors.len() != head_dim / 2 {
                    return Err(Error::argument(
                        OP,
                        format!(
                            "{} factors for heads of {head_dim} features (one a pair: {})",
                            factors.len(),
                            head_dim / 2
                        ),
                    ));
                }
                factors
                    .iter()
                    .zip(plain)
                    .enumerate()
                    .map(|(i, (&d, f))| Ok(f / positive(&format!("factor {i},"), d as f64)?))
                    .collect()
            }
        }
    }
}
