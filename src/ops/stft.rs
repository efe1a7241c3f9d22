//! The short-time Fourier transform (PyTorch's `torch.stft`) and the Hann
//! window it is usually given. The frames are a view of the (padded)
//! signal, `hop` apart and overlapping, built here and never handed out
//! (a view whose elements overlap cannot be written through): windowed
//! frames are a fresh tensor, unwindowed ones go to the FFT as the view.

use super::PadMode;
use super::fft::{Fft, FftNorm};
use crate::device::Device;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::shape::{MAX_RANK, Shape};
use crate::tensor::Tensor;

/// The arguments of [`Tensor::stft`], PyTorch's defaults unless set.
///
/// ```
/// use webtensor::{Device, Stft, Tensor};
/// # fn main() -> webtensor::Result<()> {
/// let dev = Device::cpu();
/// let signal = Tensor::arange(0.0f32, 1000.0, 1.0, &dev)?.mul_scalar(0.3)?.sin()?;
/// let window = Tensor::hann_window(64, &dev)?;
/// let spec = signal.stft(&Stft::new(64).hop(16).window(&window))?;
/// assert_eq!(spec.dims(), [33, 63]); // n_fft / 2 + 1 frequencies, 1 + 1000 / 16 frames
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct Stft<'a> {
    n_fft: usize,
    hop: Option<usize>,
    window: Option<&'a Tensor>,
    center: bool,
    normalized: bool,
    onesided: Option<bool>,
}

impl<'a> Stft<'a> {
    /// Frames of `n_fft` samples, `n_fft / 4` apart, unwindowed (all ones),
    /// centred (the signal padded by `n_fft / 2` reflected samples on each
    /// side), unnormalised, one-sided for a real signal.
    pub fn new(n_fft: usize) -> Stft<'a> {
        Stft {
            n_fft,
            hop: None,
            window: None,
            center: true,
            normalized: false,
            onesided: None,
        }
    }

    /// Samples between the starts of consecutive frames (`hop_length`).
    pub fn hop(mut self, hop: usize) -> Stft<'a> {
        self.hop = Some(hop);
        self
    }

    /// The window each frame is multiplied by: a 1-D tensor (real or
    /// complex) of at most `n_fft` samples, centred in the frame (zeros
    /// around it). A complex window makes the transform two-sided by
    /// default, as a complex signal does (PyTorch's). Beside a complex
    /// signal or window, an f64 one computes in c64 (PyTorch's in c128).
    pub fn window(mut self, window: &'a Tensor) -> Stft<'a> {
        self.window = Some(window);
        self
    }

    /// Frame `t` centred on sample `t * hop` (the signal padded by
    /// reflection) when true, the default; starting there when false.
    pub fn center(mut self, center: bool) -> Stft<'a> {
        self.center = center;
        self
    }

    /// Each frame's transform scaled by `1 / sqrt(n_fft)` when true.
    pub fn normalized(mut self, normalized: bool) -> Stft<'a> {
        self.normalized = normalized;
        self
    }

    /// Only the `n_fft / 2 + 1` frequencies that a real signal does not
    /// mirror (the default for real signals; complex ones give all).
    pub fn onesided(mut self, onesided: bool) -> Stft<'a> {
        self.onesided = Some(onesided);
        self
    }
}

impl Tensor {
    /// The short-time Fourier transform of a signal along its last axis
    /// (PyTorch's `torch.stft` with `return_complex=True`): for a signal of
    /// shape `[.., length]`, a c64 tensor `[.., frequencies, frames]`, the
    /// transform of each frame of `n_fft` samples times the window.
    ///
    /// # Errors
    /// `Error::Argument` naming `stft` for `n_fft` or `hop` 0, a frame
    /// longer than the (padded) signal, centre padding as long as the
    /// signal, a window that is not 1-D of 1 to `n_fft` samples, one-sided
    /// output of a complex signal or window, or a signal of rank 7 or more
    /// (its frames' transform would pass rank 7); `Error::DeviceMismatch`
    /// for a window on another device; `Error::DType` for a bool signal or
    /// window. Each names `stft`.
    pub fn stft(&self, spec: &Stft) -> Result<Tensor> {
        super::as_op("stft", || self.stft_of(spec))
    }

    /// [`Tensor::stft`]'s body.
    fn stft_of(&self, spec: &Stft) -> Result<Tensor> {
        const OP: &str = "stft";
        let n = spec.n_fft;
        let hop = spec.hop.unwrap_or(n / 4);
        if n == 0 || hop == 0 {
            return Err(Error::argument(
                OP,
                format!("n_fft ({n}) and hop ({hop}) must be at least 1"),
            ));
        }
        if self.rank() == 0 {
            return Err(Error::argument(OP, "a 0-d tensor has no samples"));
        }
        // The frames' transform is complex: of rank at most MAX_RANK - 1
        // (its pairs take an axis).
        if self.rank() + 1 >= MAX_RANK {
            return Err(Error::argument(
                OP,
                format!(
                    "a signal of rank {} gives frames of rank {}; transforms take rank up to {}",
                    self.rank(),
                    self.rank() + 1,
                    MAX_RANK - 1
                ),
            ));
        }
        if self.dtype() == DType::Bool {
            return Err(Error::dtype(OP, "not defined for bool; cast first"));
        }
        let complex =
            self.dtype().is_complex() || spec.window.is_some_and(|w| w.dtype().is_complex());
        let onesided = spec.onesided.unwrap_or(!complex);
        if onesided && complex {
            return Err(Error::argument(
                OP,
                "a complex signal or window has no one-sided transform",
            ));
        }
        let length = self.dims()[self.rank() - 1];
        let signal = if spec.center {
            if n / 2 >= length {
                return Err(Error::argument(
                    OP,
                    format!(
                        "centre padding of {} reflected samples needs a longer signal than {length}",
                        n / 2
                    ),
                ));
            }
            self.pad(&[(n / 2, n / 2)], PadMode::Reflect)?
        } else {
            self.clone()
        };
        let padded = signal.dims()[signal.rank() - 1];
        if n > padded {
            return Err(Error::argument(
                OP,
                format!("a frame of {n} samples is longer than the signal's {padded}"),
            ));
        }
        let frames = framed(&signal, n, hop, 1 + (padded - n) / hop);
        let frames = match spec.window {
            Some(w) => {
                // A complex side computes in c64 (there is no c128), so an
                // f64 other side takes f32 first.
                let w = fitted_window(OP, w, n, self.device())?;
                let narrowed = |t: &Tensor| match t.dtype() {
                    DType::F64 if complex => t.to_dtype(DType::F32),
                    _ => Ok(t.clone()),
                };
                narrowed(&frames)?.mul(&narrowed(&w)?)?
            }
            None => frames,
        };
        let fft = Fft::along(-1).norm(if spec.normalized {
            FftNorm::Ortho
        } else {
            FftNorm::Backward
        });
        let out = if onesided {
            frames.rfft(fft)?
        } else {
            frames.fft(fft)?
        };
        // [.., frames, frequencies] to PyTorch's [.., frequencies, frames].
        out.transpose(-1, -2)
    }

    /// The periodic Hann window of `n` samples (PyTorch's `hann_window`,
    /// the one spectral analysis uses): `sin^2(pi k / n)` computed in f64
    /// and rounded once to f32, so within 3e-7 of PyTorch's, which forms
    /// `0.5 - 0.5 cos` in f32 (not bit for bit);
    /// `[1]` for `n = 1`, as
    /// PyTorch's.
    ///
    /// # Errors
    /// `Error::Shape` for `n` past [`MAX_ELEMENTS`](crate::MAX_ELEMENTS);
    /// `OutOfMemory` for a window the host cannot hold; device errors
    /// (`Error::TooLarge` past a GPU's buffers).
    pub fn hann_window(n: usize, device: &Device) -> Result<Tensor> {
        // The output's limits before its values are made.
        Shape::from([n]).check("hann_window")?;
        // PyTorch's window of one sample is [1] (the periodic formula's
        // sin^2(0) would make a frame of zeros).
        let value = |k: usize| {
            if n == 1 {
                return 1.0;
            }
            let s = (std::f64::consts::PI * k as f64 / n as f64).sin();
            (s * s) as f32
        };
        Tensor::from_fn("hann_window", n, value, device)
    }
}

/// The `[.., frames, n]` view of `signal`'s last axis: frame `t` starts at
/// sample `t * hop` (frames overlap where `hop < n`).
fn framed(signal: &Tensor, n: usize, hop: usize, frames: usize) -> Tensor {
    let l = signal.layout();
    let rank = l.rank();
    let step = l.strides()[rank - 1];
    let mut dims: Vec<usize> = l.dims()[..rank - 1].to_vec();
    dims.extend([frames, n]);
    let mut strides: Vec<isize> = l.strides()[..rank - 1].to_vec();
    // One frame never steps (a hop past isize would overflow).
    let frame_step = match frames {
        0 | 1 => 0,
        _ => step * hop as isize,
    };
    strides.extend([frame_step, step]);
    signal.with_layout(Layout::from_parts(dims.into(), strides.into(), l.offset()))
}

/// `window` checked and centred in `n` samples, as f32 (or c64).
fn fitted_window(op: &'static str, window: &Tensor, n: usize, device: &Device) -> Result<Tensor> {
    let w = window.dims().first().copied().unwrap_or(0);
    if window.rank() != 1 || w > n || w == 0 {
        return Err(Error::argument(
            op,
            format!(
                "the window must be 1-D with 1 to n_fft ({n}) samples, got shape {}",
                window.shape()
            ),
        ));
    }
    if window.device() != device {
        return Err(Error::DeviceMismatch {
            op,
            lhs: device.to_string(),
            rhs: window.device().to_string(),
        });
    }
    if window.dtype() == DType::Bool {
        return Err(Error::dtype(op, "the window is bool; give a float window"));
    }
    if w == n {
        return Ok(window.clone());
    }
    let left = (n - w) / 2;
    window.pad(&[(left, n - w - left)], PadMode::Constant(0.into()))
}
