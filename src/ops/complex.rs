//! Complex tensors (c64): f32 storage holding (re, im) pairs.
//!
//! A c64 tensor's layout counts complex elements; its storage is f32 with
//! twice as many entries. Three f32 views of the same storage carry every
//! complex op to the f32 kernels, so complex tensors run on both devices,
//! read strided views in place and batch like everything else:
//! - the *pair view* appends an axis of 2 (strides doubled, offset doubled,
//!   inner stride 1), for data movement (copies, sums, adds);
//! - [`Tensor::real`] and [`Tensor::imag`] are that view at 0 and 1 along
//!   the new axis, for arithmetic (`(a+bi)(c+di) = (ac-bd) + (ad+bc)i`),
//!   and are public views (in `tensor/views.rs`): writing through them
//!   changes the complex tensor.

use super::Axes;
use crate::device::Device;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::op::{BinaryOp, UnaryOp};
use crate::scalar::Scalar;
use crate::shape::{DimVec, MAX_RANK, Shape};
use crate::tensor::Tensor;
use num_complex::Complex32;

impl Tensor {
    /// A c64 tensor of `shape` holding `values` in row-major order.
    ///
    /// ```
    /// use webtensor::{Complex32, Device, Tensor};
    /// let z = Tensor::from_complex(&[Complex32::new(1.0, 2.0), Complex32::new(3.0, -4.0)], [2], &Device::cpu())?;
    /// z.imag()?.mul_scalar_(-1.0)?; // conjugate in place through the f32 view
    /// assert_eq!(z.to_complex_vec()?, vec![Complex32::new(1.0, -2.0), Complex32::new(3.0, 4.0)]);
    /// assert_eq!(z.abs()?.to_vec::<f32>()?, vec![5.0f32.sqrt(), 5.0]);
    /// # Ok::<(), webtensor::Error>(())
    /// ```
    ///
    /// # Errors
    /// `Error::Shape` when the count does not match the shape; device errors.
    pub fn from_complex(
        values: &[Complex32],
        shape: impl Into<Shape>,
        device: &Device,
    ) -> Result<Tensor> {
        let shape = shape.into();
        if values.len() != shape.numel() {
            return Err(Error::shape(
                "from_complex",
                format!(
                    "{} complex values for a tensor of shape {shape}",
                    values.len()
                ),
            ));
        }
        let pairs: Vec<f32> = values.iter().flat_map(|c| [c.re, c.im]).collect();
        Tensor::from_interleaved(&pairs, shape, device).map_err(|e| e.named("from_complex"))
    }

    /// A c64 tensor of `shape` from interleaved `(re, im)` f32 pairs.
    ///
    /// # Errors
    /// `Error::Shape` unless `values` holds two f32 per element; device errors.
    pub fn from_interleaved(
        values: &[f32],
        shape: impl Into<Shape>,
        device: &Device,
    ) -> Result<Tensor> {
        let shape = shape.into();
        shape.check("from_interleaved")?;
        if Some(values.len()) != shape.numel().checked_mul(2) {
            return Err(Error::shape(
                "from_interleaved",
                format!(
                    "{} f32 values for a complex tensor of shape {shape} (needs two an element)",
                    values.len(),
                ),
            ));
        }
        let pairs = Tensor::from_slice(values, [shape.numel(), 2], device)?;
        pairs.complex_of_pairs().reshape(shape)
    }

    /// The c64 tensor `re + i·im` of two f32 tensors broadcast together.
    ///
    /// # Errors
    /// `Error::DType` unless both are f32; `Error::Shape` when they do not
    /// broadcast; `Error::DeviceMismatch`.
    pub fn complex(re: &Tensor, im: &Tensor) -> Result<Tensor> {
        const OP: &str = "complex";
        for t in [re, im] {
            if t.dtype() != DType::F32 {
                return Err(Error::dtype(
                    OP,
                    format!("parts must be f32, got {}", t.dtype()),
                ));
            }
        }
        super::check_devices(OP, re, &[super::Arg::Tensor(im)])?;
        let shape = crate::shape::broadcast_for(OP, re.shape(), im.shape())?;
        let out = Tensor::empty_dense(shape, DType::C64, re.device(), OP)?;
        out.real()?.assign(re)?;
        out.imag()?.assign(im)?;
        Ok(out)
    }

    /// The f32 view of a c64 tensor with a trailing axis of (re, im). Its
    /// rank is one more than the tensor's, so ops on it need
    /// [`Tensor::pairs_fit`]; [`Tensor::row_major_pairs`] fits any rank.
    pub(crate) fn pairs(&self) -> Tensor {
        let mut dims: DimVec<usize> = self.dims().iter().copied().collect();
        // An axis of one element may have any stride (an STFT's single
        // frame keeps its hop, up to 2^62): it is 0 here, where doubling
        // it could overflow. The others span storage, far below that.
        let mut strides: DimVec<isize> = (self.strides().iter().zip(self.dims()))
            .map(|(&s, &d)| if d > 1 { 2 * s } else { 0 })
            .collect();
        dims.push(2);
        strides.push(1);
        let layout = Layout::from_parts(dims.into(), strides, 2 * self.offset());
        Tensor::from_parts(
            self.own_storage().clone(),
            layout,
            DType::F32,
            self.device().clone(),
        )
    }

    /// True when the pair views of c64 tensors of this rank stay within
    /// [`MAX_RANK`]; at the limit, ops go through the real and imaginary
    /// views (two f32 ops where the pair view takes one).
    pub(crate) fn pairs_fit(rank: usize) -> bool {
        rank < MAX_RANK
    }

    /// The `[numel, 2]` pair view of this c64 tensor's elements in row-major
    /// order (of the tensor itself when contiguous, else of a copy): what
    /// readback and device moves transfer, at any rank.
    ///
    /// # Errors
    /// Allocation and device errors of the copy.
    pub(crate) fn row_major_pairs(&self) -> Result<Tensor> {
        let flat = self.contiguous()?.reshape([self.numel()])?;
        Ok(flat.pairs())
    }

    /// The c64 tensor whose pair view is this f32 tensor, which the caller
    /// made with a trailing axis of 2 at stride 1 and even strides and offset
    /// (as every fresh row-major tensor of that shape has).
    pub(crate) fn complex_of_pairs(&self) -> Tensor {
        let r = self.rank() - 1;
        debug_assert!(self.dims()[r] == 2 && self.strides()[r] == 1);
        debug_assert!(self.offset().is_multiple_of(2));
        debug_assert!(self.strides()[..r].iter().all(|s| s % 2 == 0));
        let layout = Layout::from_parts(
            self.dims()[..r].into(),
            self.strides()[..r].iter().map(|s| s / 2).collect(),
            self.offset() / 2,
        );
        Tensor::from_parts(
            self.own_storage().clone(),
            layout,
            DType::C64,
            self.device().clone(),
        )
    }

    /// The elements of a c64 tensor in row-major order, blocking (native
    /// only; use [`Tensor::to_complex_vec_async`] on wasm).
    ///
    /// # Errors
    /// `Error::DType` for a real tensor; readback failures.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn to_complex_vec(&self) -> Result<Vec<Complex32>> {
        pollster::block_on(self.to_complex_vec_async())
    }

    /// [`Tensor::to_complex_vec`] for every target.
    ///
    /// # Errors
    /// As [`Tensor::to_complex_vec`].
    pub async fn to_complex_vec_async(&self) -> Result<Vec<Complex32>> {
        if !self.dtype().is_complex() {
            return Err(Error::dtype(
                "to_complex_vec",
                format!(
                    "tensor has dtype {}; use to_vec for real tensors",
                    self.dtype()
                ),
            ));
        }
        let pairs = self
            .row_major_pairs()
            .map_err(|e| e.named("to_complex_vec"))?;
        let flat = pairs
            .to_vec_async::<f32>()
            .await
            .map_err(|e| e.named("to_complex_vec"))?;
        Ok(flat
            .chunks_exact(2)
            .map(|p| Complex32::new(p[0], p[1]))
            .collect())
    }

    /// The complex conjugate (a copy); for a real tensor (bool too), a copy
    /// of it.
    ///
    /// # Errors
    /// Device errors.
    pub fn conj(&self) -> Result<Tensor> {
        let out = self.contiguous_copy()?;
        out.conj_()?;
        Ok(out)
    }

    /// Conjugates in place, through this view (negates the imaginary
    /// parts; nothing for a real tensor).
    ///
    /// # Errors
    /// `Error::OverlappingWrite` for a broadcast view.
    pub fn conj_(&self) -> Result<()> {
        if self.dtype().is_complex() {
            self.imag()?.neg_().map_err(|e| e.named("conj_"))?;
        }
        Ok(())
    }

    /// The argument (phase) of each element in `(-pi, pi]`: `atan2(im,
    /// re)`, f32 for c64. A real tensor's is 0 or pi by sign (NaN for NaN)
    /// in its float dtype, f32 for integers and bool (NumPy's, PyTorch's;
    /// -0.0's is pi, as NumPy's `atan2(0, -0.0)`, where PyTorch gives 0).
    ///
    /// # Errors
    /// Device errors.
    pub fn angle(&self) -> Result<Tensor> {
        if self.dtype().is_complex() {
            return self.imag()?.atan2(&self.real()?);
        }
        let x = match self.dtype().is_float() {
            true => self.clone(),
            false => self.to_dtype(DType::F32)?,
        };
        let zeros = Tensor::zeros(x.shape().clone(), x.dtype(), x.device())?;
        zeros.atan2(&x).map_err(|e| e.named("angle"))
    }

    /// `op` for c64 operands: `self` or `other` is c64, the other c64 or f32.
    pub(super) fn complex_binary(&self, op: BinaryOp, other: &Tensor) -> Result<Tensor> {
        let (a, b) = (self.as_complex()?, other.as_complex()?);
        super::check_devices(op.name(), &a, &[super::Arg::Tensor(&b)])?;
        let fit = Tensor::pairs_fit(a.rank().max(b.rank()));
        match op {
            BinaryOp::Add if fit => Ok(a.pairs().add(&b.pairs())?.complex_of_pairs()),
            BinaryOp::Sub if fit => Ok(a.pairs().sub(&b.pairs())?.complex_of_pairs()),
            BinaryOp::Add => {
                let re = a.real()?.add(&b.real()?)?;
                Tensor::complex(&re, &a.imag()?.add(&b.imag()?)?)
            }
            BinaryOp::Sub => {
                let re = a.real()?.sub(&b.real()?)?;
                Tensor::complex(&re, &a.imag()?.sub(&b.imag()?)?)
            }
            BinaryOp::Mul => {
                let (ar, ai, br, bi) = (a.real()?, a.imag()?, b.real()?, b.imag()?);
                let re = ar.mul(&br)?.sub(&ai.mul(&bi)?)?;
                let im = ar.mul(&bi)?.add(&ai.mul(&br)?)?;
                Tensor::complex(&re, &im)
            }
            BinaryOp::Div => super::complex_scaled::quotient(&a, &b),
            _ => Err(not_for_complex(op.name())),
        }
    }

    /// In-place `op` into this c64 view: the result, written through it.
    pub(super) fn complex_binary_(&self, op: BinaryOp, other: &Tensor) -> Result<()> {
        if !self.dtype().is_complex() {
            return Err(Error::dtype(
                op.name(),
                format!(
                    "cannot write a complex result into a {} tensor",
                    self.dtype()
                ),
            ));
        }
        self.layout().check_writable(op.name())?;
        // The operand must broadcast to this shape, as a real one must (a
        // result of a higher rank would lose its leading axes of one in
        // the assignment).
        self.broadcast_arg(op.name(), other)?;
        let result = self.complex_binary(op, other)?;
        self.assign(&result).map_err(|e| e.named(op.name()))
    }

    /// `op` with a real or complex scalar, for a c64 tensor.
    pub(super) fn complex_scalar(&self, op: BinaryOp, s: Scalar) -> Result<Tensor> {
        self.complex_binary(op, &complex_scalar_tensor(s, self.device())?)
    }

    /// In-place [`Tensor::complex_scalar`].
    pub(super) fn complex_scalar_(&self, op: BinaryOp, s: Scalar) -> Result<()> {
        self.complex_binary_(op, &complex_scalar_tensor(s, self.device())?)
    }

    /// `op` of a c64 tensor: neg, exp (c64) and abs (f32).
    pub(super) fn complex_unary(&self, op: UnaryOp) -> Result<Tensor> {
        let (re, im) = (self.real()?, self.imag()?);
        match op {
            UnaryOp::Neg if Tensor::pairs_fit(self.rank()) => {
                Ok(self.pairs().neg()?.complex_of_pairs())
            }
            UnaryOp::Neg => Tensor::complex(&re.neg()?, &im.neg()?),
            UnaryOp::Exp => complex_exp(&re, &im),
            UnaryOp::Abs => super::complex_scaled::hypot(&re, &im),
            _ => Err(not_for_complex(op.name())),
        }
    }

    /// In-place `op` (neg or exp) into this c64 view.
    pub(super) fn complex_unary_(&self, op: UnaryOp) -> Result<()> {
        if op == UnaryOp::Abs {
            return Err(Error::dtype(
                "abs_",
                "the magnitude of a c64 tensor is f32; use abs",
            ));
        }
        self.layout().check_writable(op.name())?;
        let result = self.complex_unary(op)?;
        self.assign(&result)
    }

    /// Sum (or mean) of a c64 tensor over `axes`: each part's sum (or
    /// mean), the mean's parts then combined as NumPy's division by the count.
    pub(super) fn complex_sum(&self, axes: Axes, keepdim: bool, mean: bool) -> Result<Tensor> {
        let op = if mean { "mean" } else { "sum" };
        // The pair axis is last: resolve the axes against the complex rank
        // (a 0-d tensor's axis 0 or -1 is none, as in every reduction).
        let mask = axes.mask(op, self.rank())?;
        let axes: Vec<isize> = (0..self.rank() as isize)
            .filter(|&k| mask[k as usize])
            .collect();
        let sum = |t: Tensor| {
            if mean {
                t.mean_axes(axes.clone().into(), keepdim)
            } else {
                t.sum_axes(axes.clone().into(), keepdim)
            }
        };
        let (re, im) = if Tensor::pairs_fit(self.rank()) {
            let pairs = sum(self.pairs())?.complex_of_pairs();
            if !mean {
                return Ok(pairs);
            }
            (pairs.real()?, pairs.imag()?)
        } else {
            (sum(self.real()?)?, sum(self.imag()?)?)
        };
        if !mean {
            return Tensor::complex(&re, &im);
        }
        // NumPy's and PyTorch's mean divide the complex sum by the count as
        // a complex number, `(re + im 0, im - re 0) / n`: an infinite or NaN
        // part makes the other NaN, and zeros keep those terms' signs.
        let zero = |t: &Tensor| t.mul_scalar(0.0);
        Tensor::complex(&re.add(&zero(&im)?)?, &im.sub(&zero(&re)?)?)
    }

    /// Matrix product of c64 operands (one may be f32): four real products
    /// of the strided real and imaginary views.
    pub(super) fn complex_matmul(&self, other: &Tensor) -> Result<Tensor> {
        if self.dtype() == DType::F64 || other.dtype() == DType::F64 {
            return Err(Error::dtype(
                "matmul",
                "cannot combine f64 with c64 (no complex128); cast to f32 first",
            ));
        }
        let (a, b) = (self.as_complex()?, other.as_complex()?);
        let (ar, ai, br, bi) = (a.real()?, a.imag()?, b.real()?, b.imag()?);
        let re = ar.matmul(&br)?.sub(&ai.matmul(&bi)?)?;
        let im = ar.matmul(&bi)?.add(&ai.matmul(&br)?)?;
        Tensor::complex(&re, &im)
    }

    /// Copies a c64 source into this c64 view (its pairs into ours), or an
    /// f32 source into the real parts with zero imaginary parts.
    pub(super) fn complex_assign(&self, src: &Tensor) -> Result<()> {
        const OP: &str = "assign";
        // Checked on the tensors as given: their pair views' shapes (an
        // axis of 2 more) are no shapes the caller wrote.
        if self.dtype().is_complex() {
            self.broadcast_arg(OP, src)?;
        }
        match (self.dtype(), src.dtype()) {
            (DType::C64, DType::C64) if Tensor::pairs_fit(self.rank().max(src.rank())) => {
                self.pairs().assign(&src.pairs())
            }
            // Real parts sit at even f32 positions and imaginary parts at odd
            // ones, so neither copy can disturb what the other reads.
            (DType::C64, DType::C64) => {
                self.real()?.assign(&src.real()?)?;
                self.imag()?.assign(&src.imag()?)
            }
            // A real source: its values (cast to f32) with zero imaginary
            // parts, as `to_dtype(DType::C64)` gives.
            (DType::C64, _) => {
                self.real()?.assign(src)?;
                self.imag()?.fill_(0.0)
            }
            (dst, _) => Err(Error::dtype(
                OP,
                format!("cannot assign c64 to {dst}; take .real() or .abs() first"),
            )),
        }
    }

    /// Fills a c64 view with a real or complex scalar.
    pub(super) fn complex_fill_(&self, value: Scalar) -> Result<()> {
        let c = complex_value(value);
        self.real()?.fill_(c.re)?;
        self.imag()?.fill_(c.im)
    }

    /// This tensor as c64: itself, or an f32 tensor promoted.
    fn as_complex(&self) -> Result<Tensor> {
        match self.dtype() {
            DType::C64 => Ok(self.clone()),
            DType::F32 => {
                let zeros = Tensor::zeros(self.shape().clone(), DType::F32, self.device())?;
                Tensor::complex(self, &zeros)
            }
            // Promoted (see `promotion.rs`): the real values as f32. An f64
            // one is 0-d beside a c64 tensor (two dimensioned ones have no
            // common dtype, there being no complex128), so c64 holds it.
            _ => self.to_dtype(DType::F32)?.as_complex(),
        }
    }
}

/// A scalar as a complex number (a bool 0 or 1, as in any dtype).
fn complex_value(s: Scalar) -> Complex32 {
    match s {
        Scalar::Float(v) => Complex32::new(v as f32, 0.0),
        Scalar::Int(v) => Complex32::new(v as f32, 0.0),
        Scalar::UInt(v) => Complex32::new(v as f32, 0.0),
        Scalar::Complex(c) => c,
        Scalar::Bool(b) => Complex32::new(f32::from(u8::from(b)), 0.0),
    }
}

/// A 0-d c64 tensor holding scalar `s` on `device`.
fn complex_scalar_tensor(s: Scalar, device: &Device) -> Result<Tensor> {
    Tensor::from_complex(&[complex_value(s)], Shape::scalar(), device)
}

/// The error of an op that has no c64 form.
pub(crate) fn not_for_complex(op: &'static str) -> Error {
    Error::dtype(
        op,
        "not defined for dtype c64 (see Tensor::real for the complex ops)",
    )
}

/// `exp(re + i im)` as C99's `cexp` (NumPy's and PyTorch's):
/// `e^re (cos im + i sin im)`, with its special cases: a real argument
/// gives `(e^re, im)` (no `inf x 0` NaN, the zero's sign kept), `e^re`
/// of 0 with a non-finite `im` gives 0, `+inf` with a non-finite `im`
/// gives `(inf, NaN)`, and past where `e^re` overflows (re > 88) a finite result is
/// `(e^(re/2) cos im) e^(re/2)`.
fn complex_exp(re: &Tensor, im: &Tensor) -> Result<Tensor> {
    let dev = re.device();
    let scalar = |v: f64| Tensor::full([], v, DType::F32, dev);
    let (cos, sin, scale) = (im.cos()?, im.sin()?, re.exp()?);
    let half = re.mul_scalar(0.5)?.exp()?;
    let big = re.gt_scalar(88.0)?;
    let part = |trig: &Tensor, zero: &Tensor| -> Result<Tensor> {
        let direct = scale.mul(trig)?;
        let halves = half.mul(trig)?.mul(&half)?;
        let part = Tensor::where_cond(&big, &halves, &direct)?;
        // e^-inf times a NaN or an infinite im's cos and sin: a zero
        // (C99), +0 for the real part and for the imaginary part the sign
        // of im, as glibc's cexpf (NumPy's); a finite re's e^re that
        // underflows to 0 times them stays NaN.
        let vanished = re
            .eq_scalar(f64::NEG_INFINITY)?
            .logical_and(&im.isfinite()?.logical_not()?)?;
        Tensor::where_cond(&vanished, zero, &part)
    };
    let negative = im.lt_scalar(0.0)?;
    let signed_zero = Tensor::where_cond(&negative, &scalar(-0.0)?, &scalar(0.0)?)?;
    let (real, imag) = (part(&cos, &scalar(0.0)?)?, part(&sin, &signed_zero)?);
    let real_arg = im.eq_scalar(0.0)?;
    let real = Tensor::where_cond(&real_arg, &scale, &real)?;
    let imag = Tensor::where_cond(&real_arg, im, &imag)?;
    let wild = re
        .eq_scalar(f64::INFINITY)?
        .logical_and(&im.isfinite()?.logical_not()?)?;
    let real = Tensor::where_cond(&wild, &scalar(f64::INFINITY)?, &real)?;
    Tensor::complex(&real, &imag)
}
