//! The elementwise op methods: unary, binary (tensor and scalar forms),
//! comparisons, `where_cond`, logical ops, each with an in-place form that
//! writes through views.

use super::Arg;
use crate::device::Device;
use crate::dtype::{DType, KernelType};
use crate::error::{Error, Result};
use crate::op::{BinaryOp, CompareOp, ElementwiseOp, UnaryOp};
use crate::promotion;
use crate::scalar::{Scalar, TypedScalar};
use crate::tensor::Tensor;

impl Tensor {
    fn unary(&self, op: UnaryOp) -> Result<Tensor> {
        if self.dtype().is_complex() {
            return self.complex_unary(op);
        }
        op.check(self.dtype())?;
        Tensor::launch_new(
            self,
            op.name(),
            ElementwiseOp::Unary(op),
            self.dtype(),
            &[Arg::Tensor(self)],
        )
    }

    fn unary_(&self, op: UnaryOp) -> Result<()> {
        if self.dtype().is_complex() {
            return self.complex_unary_(op);
        }
        op.check(self.dtype())?;
        self.launch_into_args(op.name(), ElementwiseOp::Unary(op), &[Arg::Tensor(self)])
    }

    fn binary(&self, op: BinaryOp, other: &Tensor) -> Result<Tensor> {
        let dtype = self.dtype();
        if dtype.is_complex() || other.dtype() != dtype {
            let common = tensors_dtype_on(op.name(), self, other)?;
            // Promoted operands go round again (the common case, one
            // dtype, takes no copy of either handle).
            return match common {
                DType::C64 => self.complex_binary(op, other),
                _ if dtype != common => self.to_dtype(common)?.binary(op, other),
                _ => self.binary(op, &other.to_dtype(common)?),
            };
        }
        let (name, op) = kernel_op(op, dtype)?;
        Tensor::launch_new(
            self,
            name,
            ElementwiseOp::Binary(op),
            dtype,
            &[Arg::Tensor(self), Arg::Tensor(other)],
        )
    }

    fn binary_(&self, op: BinaryOp, other: &Tensor) -> Result<()> {
        if self.dtype().is_complex() || other.dtype() != self.dtype() {
            let common = tensors_dtype_on(op.name(), self, other)?;
            self.check_stores(op.name(), common, || format!("a {} operand", other.dtype()))?;
            if self.dtype().is_complex() {
                return self.complex_binary_(op, other);
            }
            if common != self.dtype() {
                // PyTorch's rule: computed in the common dtype (f16 with
                // f32 in f32), then stored in this one; the operand must
                // broadcast to this shape before anything is computed.
                self.broadcast_arg(op.name(), other)?;
                return self
                    .assign(&self.binary(op, other)?)
                    .map_err(|e| e.named(op.name()));
            }
            return self.binary_(op, &other.to_dtype(self.dtype())?);
        }
        let (name, op) = kernel_op(op, self.dtype())?;
        self.launch_into_args(
            name,
            ElementwiseOp::Binary(op),
            &[Arg::Tensor(self), Arg::Tensor(other)],
        )
    }

    fn binary_scalar(&self, op: BinaryOp, s: Scalar) -> Result<Tensor> {
        let dtype = self.scalar_dtype(op.name(), &s)?;
        if dtype != self.dtype() {
            return self.to_dtype(dtype)?.binary_scalar(op, s);
        }
        if self.dtype().is_complex() {
            return self.complex_scalar(op, s);
        }
        let (name, kernel) = kernel_op(op, self.dtype())?;
        let s = TypedScalar::new(name, s, self.dtype())?;
        if let Some(wide) = self.wide_scalar(&s)? {
            return self.binary(op, &wide);
        }
        Tensor::launch_new(
            self,
            name,
            ElementwiseOp::Binary(kernel),
            self.dtype(),
            &[Arg::Tensor(self), Arg::Scalar(s)],
        )
    }

    fn binary_scalar_(&self, op: BinaryOp, s: Scalar) -> Result<()> {
        let dtype = self.scalar_dtype(op.name(), &s)?;
        self.check_stores(op.name(), dtype, || format!("the scalar {s}"))?;
        if self.dtype().is_complex() {
            return self.complex_scalar_(op, s);
        }
        let (name, kernel) = kernel_op(op, self.dtype())?;
        let s = TypedScalar::new(name, s, self.dtype())?;
        if let Some(wide) = self.wide_scalar(&s)? {
            return self.binary_(op, &wide);
        }
        self.launch_into_args(
            name,
            ElementwiseOp::Binary(kernel),
            &[Arg::Tensor(self), Arg::Scalar(s)],
        )
    }

    /// `s <op> self`: the scalar as the first operand (`2.0 / &x`), through a
    /// 0-d tensor of this dtype that broadcasts.
    pub(super) fn scalar_first(&self, op: BinaryOp, s: Scalar) -> Result<Tensor> {
        let dtype = self.scalar_dtype(op.name(), &s)?;
        if dtype != self.dtype() {
            return self.to_dtype(dtype)?.scalar_first(op, s);
        }
        if !self.dtype().is_complex() {
            // Checked here so that the error names the op, not `full`.
            TypedScalar::new(op.name(), s, self.dtype())?;
        }
        Tensor::full([], s, self.dtype(), self.device())?.binary(op, self)
    }

    fn compare(&self, op: CompareOp, other: &Tensor) -> Result<Tensor> {
        if other.dtype() != self.dtype() {
            let dtype = tensors_dtype_on(op.name(), self, other)?;
            if dtype.is_complex() {
                return Err(super::complex::not_for_complex(op.name()));
            }
            return match dtype == self.dtype() {
                true => self.compare(op, &other.to_dtype(dtype)?),
                false => self.to_dtype(dtype)?.compare(op, other),
            };
        }
        Tensor::launch_new(
            self,
            op.name(),
            ElementwiseOp::Compare(op),
            DType::Bool,
            &[Arg::Tensor(self), Arg::Tensor(other)],
        )
    }

    fn compare_scalar(&self, op: CompareOp, s: Scalar) -> Result<Tensor> {
        let dtype = self.scalar_dtype(op.name(), &s)?;
        if dtype.is_complex() {
            return Err(super::complex::not_for_complex(op.name()));
        }
        if dtype != self.dtype() {
            return self.to_dtype(dtype)?.compare_scalar(op, s);
        }
        let s = TypedScalar::new(op.name(), s, self.dtype())?;
        if let Some(wide) = self.wide_scalar(&s)? {
            return self.compare(op, &wide);
        }
        Tensor::launch_new(
            self,
            op.name(),
            ElementwiseOp::Compare(op),
            DType::Bool,
            &[Arg::Tensor(self), Arg::Scalar(s)],
        )
    }

    /// Elements of `x` where `cond` is true and of `y` elsewhere (NumPy's
    /// `where`), all three broadcast together. `cond` must be bool; `x` and
    /// `y` are promoted to their common dtype ([`Tensor::result_type`]).
    /// On a GPU an f16 NaN picked keeps its sign, not always its payload
    /// (elementwise kernels compute through f32; see the README's notes
    /// on subnormals and NaN).
    ///
    /// # Errors
    /// `Error::DType` for a non-bool condition, dtypes with no common
    /// one, or c64 operands (pick the `real` and `imag` parts apart);
    /// `Error::Shape` when the shapes do not broadcast; device mismatch.
    pub fn where_cond(cond: &Tensor, x: &Tensor, y: &Tensor) -> Result<Tensor> {
        const OP: &str = "where_cond";
        if cond.dtype() != DType::Bool {
            return Err(Error::dtype(
                OP,
                format!(
                    "the condition must be bool, got {} (compare it, e.g. `ne_scalar(0)`, or cast it with to_dtype)",
                    cond.dtype()
                ),
            ));
        }
        let dtype = tensors_dtype_on(OP, x, y)?;
        let (x, y) = (&x.to_dtype(dtype)?, &y.to_dtype(dtype)?);
        Tensor::launch_new(
            x,
            OP,
            ElementwiseOp::Where,
            x.dtype(),
            &[Arg::Tensor(cond), Arg::Tensor(x), Arg::Tensor(y)],
        )
    }

    /// The dtype an op on `a` and `b` computes in and returns (PyTorch's
    /// `torch.result_type`): the higher of their categories (bool <
    /// integers < floats < complex) and, within one, the wider dtype (i32
    /// with u32 is i64; c64 with f64 has no common dtype here). A 0-d
    /// tensor beside a dimensioned one counts as a scalar does: it widens
    /// the result only from a higher category (`i32[3] + i64 0-d` is
    /// i32, `f16[3] * f32 0-d` f16). Binary ops,
    /// comparisons, `where_cond`, `concat` and `stack` promote their
    /// operands so; an in-place op stores its result in its destination's
    /// dtype where that keeps the result's category (f32 into f16, not
    /// into i32); `matmul` takes one dtype, as PyTorch's does.
    ///
    /// ```
    /// use webtensor::{DType, Device, Tensor};
    /// let dev = Device::cpu();
    /// let i = Tensor::from_slice(&[1i32, 2, 3], [3], &dev)?;
    /// let h = Tensor::from_slice(&[0.5f32, 0.5, 0.5], [3], &dev)?.to_dtype(DType::F16)?;
    /// assert_eq!(Tensor::result_type(&i, &h)?, DType::F16);
    /// assert_eq!((&i + &h).to_dtype(DType::F32)?.to_vec::<f32>()?, vec![1.5, 2.5, 3.5]);
    /// assert_eq!((&i * 0.5).dtype(), DType::F32); // a float scalar lifts an integer tensor
    /// # Ok::<(), webtensor::Error>(())
    /// ```
    ///
    /// # Errors
    /// `Error::DType` naming `result_type` and both dtypes when there is no
    /// common dtype.
    pub fn result_type(a: &Tensor, b: &Tensor) -> Result<DType> {
        common_dtype(
            "result_type",
            (a.dtype(), a.rank() == 0),
            (b.dtype(), b.rank() == 0),
        )
    }

    /// The dtype this tensor computes in with the scalar `s` under `op`.
    fn scalar_dtype(&self, op: &'static str, s: &Scalar) -> Result<DType> {
        promotion::with_scalar(self.dtype(), s).ok_or_else(|| {
            Error::dtype(
                op,
                format!(
                    "no common dtype for {} and the scalar {s} (no complex128)",
                    self.dtype()
                ),
            )
        })
    }

    /// `Err` unless a result of `dtype` (the dtype with `what`) may be
    /// stored in this destination in place (PyTorch's rule: within its
    /// category, so an f32 result into f16 or bf16, an i32 one into u8, but
    /// never a float into an integer).
    fn check_stores(
        &self,
        op: &'static str,
        dtype: DType,
        what: impl FnOnce() -> String,
    ) -> Result<()> {
        if crate::promotion::same_kind(dtype, self.dtype()) {
            return Ok(());
        }
        Err(Error::dtype(
            op,
            format!(
                "in place, {} would make the {} destination {dtype}; \
                 use the out-of-place op or cast the destination",
                what(),
                self.dtype()
            ),
        ))
    }
}

/// The common dtype of operands of dtypes `a` and `b` under `op`, each
/// with whether it is a 0-d tensor (which beside a dimensioned one counts
/// as a scalar; see `promotion.rs`).
///
/// # Errors
/// `Error::DType` naming `op` and both dtypes when they have none.
fn common_dtype(
    op: &'static str,
    (a, a_0d): (DType, bool),
    (b, b_0d): (DType, bool),
) -> Result<DType> {
    promotion::of_tensors(a, a_0d, b, b_0d).ok_or_else(|| {
        Error::dtype(
            op,
            format!("operands of dtypes {a} and {b} have no common dtype; cast one with to_dtype"),
        )
    })
}

impl Tensor {
    /// An i64 scalar outside i32, which a kernel's 32-bit scalar slot cannot
    /// hold, as a 0-d tensor on this GPU to broadcast instead (`None`
    /// elsewhere: the slot sign-extends the others).
    ///
    /// # Errors
    /// Device errors of the upload.
    pub(crate) fn wide_scalar(&self, s: &TypedScalar) -> Result<Option<Tensor>> {
        if s.dtype != KernelType::I64 || !self.device().is_gpu() || i32::try_from(s.int).is_ok() {
            return Ok(None);
        }
        Tensor::from_vec(vec![s.int], [], self.device()).map(Some)
    }
}

/// The common dtype of tensors `a` and `b` under `op` (see
/// [`common_dtype`]) on `a`'s device.
///
/// # Errors
/// As [`common_dtype`], and `Error::UnsupportedDType` naming `op` where
/// the common dtype is one the device holds no tensor of (f64 on a GPU).
pub(super) fn tensors_dtype_on(op: &'static str, a: &Tensor, b: &Tensor) -> Result<DType> {
    let dtype = common_dtype(op, (a.dtype(), a.rank() == 0), (b.dtype(), b.rank() == 0))?;
    a.device().check_holds(op, dtype)?;
    Ok(dtype)
}

/// The common dtype of operands of dtypes `a` and `b` (of any rank but 0)
/// under `op` on `device`.
///
/// # Errors
/// As [`tensors_dtype_on`].
pub(super) fn result_dtype_on(
    op: &'static str,
    device: &Device,
    a: DType,
    b: DType,
) -> Result<DType> {
    let dtype = common_dtype(op, (a, false), (b, false))?;
    device.check_holds(op, dtype)?;
    Ok(dtype)
}

impl Tensor {
    /// Each element limited to `[min, max]` (NumPy's `clip`, PyTorch's
    /// `clamp`): `minimum(maximum(x, min), max)`, so NaN stays NaN and
    /// `min > max` gives `max` everywhere, as in NumPy. Computed in the
    /// dtype the tensor takes with its bounds, as PyTorch's: float bounds
    /// of an integer tensor give f32 (`[1, 5]` of i32 clamped to `0.5 ..
    /// 2.5` is `[1.0, 2.5]`).
    ///
    /// # Errors
    /// `Error::DType` naming `clamp` for bool or c64 tensors and for bounds
    /// that dtype cannot represent.
    pub fn clamp(&self, min: impl Into<Scalar>, max: impl Into<Scalar>) -> Result<Tensor> {
        super::as_op("clamp", || {
            let (min, max) = (min.into(), max.into());
            let with_min = self.scalar_dtype("clamp", &min)?;
            let dtype = promotion::with_scalar(with_min, &max).unwrap_or(with_min);
            let x = match dtype == self.dtype() || !self.dtype().is_numeric() {
                true => self.clone(),
                false => self.to_dtype(dtype)?,
            };
            let (min, max) = x.clamp_bounds("clamp", min, max)?;
            x.maximum_scalar(min)?.minimum_scalar(max)
        })
    }

    /// In-place [`Tensor::clamp`], written through this view.
    ///
    /// # Errors
    /// As [`Tensor::clamp`], and `Error::OverlappingWrite` for a broadcast view.
    pub fn clamp_(&self, min: impl Into<Scalar>, max: impl Into<Scalar>) -> Result<()> {
        let (min, max) = self.clamp_bounds("clamp_", min.into(), max.into())?;
        // Checked here so that the error names clamp_, not maximum.
        self.layout().check_writable("clamp_")?;
        super::as_op("clamp_", || {
            self.maximum_scalar_(min)?;
            self.minimum_scalar_(max)
        })
    }

    /// The bounds of a clamp, checked against this dtype under `op`'s name.
    fn clamp_bounds(&self, op: &'static str, min: Scalar, max: Scalar) -> Result<(Scalar, Scalar)> {
        if !self.dtype().is_numeric() {
            return Err(crate::error::Error::dtype(
                op,
                format!("not defined for dtype {}", self.dtype()),
            ));
        }
        TypedScalar::new(op, min, self.dtype())?;
        TypedScalar::new(op, max, self.dtype())?;
        Ok((min, max))
    }
}

macro_rules! unary_methods {
    ($($name:ident, $name_:ident, $op:ident, $doc:literal;)*) => {
        impl Tensor {$(
            #[doc = concat!($doc, "\n\n# Errors\n`Error::DType` when the dtype does not support it (see `DType`).")]
            pub fn $name(&self) -> Result<Tensor> {
                self.unary(UnaryOp::$op)
            }
            #[doc = concat!("In-place `", stringify!($name), "`, written through this view.\n\n# Errors\nAs `", stringify!($name), "`, and `Error::OverlappingWrite` for a broadcast view.")]
            pub fn $name_(&self) -> Result<()> {
                self.unary_(UnaryOp::$op)
            }
        )*}
    };
}

unary_methods! {
    neg, neg_, Neg, "`-x` (wrapping for integers).";
    abs, abs_, Abs, "`|x|` (wrapping: `i32::MIN` stays `i32::MIN`).";
    exp, exp_, Exp, "`e^x` (float dtypes).";
    log, log_, Log, "Natural logarithm (float dtypes).";
    sqrt, sqrt_, Sqrt, "Square root (float dtypes).";
    rsqrt, rsqrt_, Rsqrt, "`1 / sqrt(x)` (float dtypes).";
    sin, sin_, Sin, "Sine (float dtypes).";
    cos, cos_, Cos, "Cosine (float dtypes).";
    tanh, tanh_, Tanh, "Hyperbolic tangent (float dtypes).";
    sigmoid, sigmoid_, Sigmoid, "`1 / (1 + e^-x)` (float dtypes).";
    relu, relu_, Relu, "`max(x, 0)`; NaN stays NaN.";
    gelu, gelu_, Gelu, "PyTorch's GELU: `x / 2 * (1 + erf(x / sqrt(2)))` (its default, exact form; float dtypes), in that order as PyTorch computes it: below about -3 the sum cancels, so a result is within an f32 ulp of 1 times `|x| / 2` rather than of itself, and is -0 from about -5.55 (as PyTorch's f32; the function is -1.4e-6 at -5).";
    gelu_tanh, gelu_tanh_, GeluTanh, "GELU's tanh approximation, `x / 2 * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3)))` (PyTorch's `gelu(x, approximate='tanh')`; float dtypes), computed as `x * sigmoid(2 u)`: equal in exact arithmetic, and nearer the function than PyTorch's f32 below about -3 (-2.3e-7 at -5, where PyTorch gives -3.0e-7; PyTorch's is -0 from about -8).";
    erf, erf_, Erf, "The error function, `2 / sqrt(pi)` times the integral of `e^(-t^2)` from 0 to `x` (float dtypes). In f32 on a GPU within 2 ulp where the adapter's exp is exact (past 0.875 it is `1 - exp(r)`), 2.1 on lavapipe (the worst of a sweep of 8 million values).";
    lgamma, lgamma_, Lgamma, "`ln |gamma(x)|` (SciPy's `gammaln`, PyTorch's `lgamma`; float dtypes): +inf at 0, the negative integers and both infinities (C's and PyTorch's; SciPy gives -inf at -inf). In f32, within 0.5 ulp on the CPU (f64's, rounded) and 4.4 ulp on lavapipe for `x > 0` (the worst of sweeps of 12 million values; tested to 5 on SciPy's; WGSL lets a driver's log be 3 ulp off, which it uses); below 0, where the reflection formula subtracts `lgamma(1 - x)` and the result passes through zeros, within 5.3 ulp (tested to 6) of the larger of the result and `|lgamma(1 - x)| + 1`; within 2^-20 of 0 or a negative integer, `-ln d - lgamma(1 - x)` for `d` that distance (a subnormal `x` keeps its digits).";
    digamma, digamma_, Digamma, "The digamma function, `gamma'(x) / gamma(x)` (SciPy's `psi`; float dtypes): -inf at +0, +inf at -0, NaN at the negative integers and -inf. In f32, within 0.5 ulp on the CPU (computed in f64, by a series about its zero near 1.4616) and 3.8 ulp on lavapipe for `x > 0` (the worst of a sweep of 4 million values; tested to 5 on SciPy's); below 0 (reflection, with `sin(pi x)` and `cos(pi x)` from polynomials in `x`; within 2^-20 of 0 or a negative integer, `1 / d` for `pi cot(pi x)`, `d` the signed distance), within 3.9 ulp (the worst of a sweep of 8 million values; tested to 5) of the larger of the result and `|ln(1 - x)| + |pi cot(pi x)|`.";
    erfc, erfc_, Erfc, "The complementary error function `1 - erf(x)`, relatively accurate where it is small (SciPy's `erfc`; float dtypes): 0 past 10.06 in f32, where it underflows. In f32, within 0.5 ulp on the CPU (libm's in f64, rounded); on a GPU an exp of its own, 4.9 ulp on lavapipe (the worst of sweeps of 12 million values, near 6.26; tested to 5 over its whole range).";
    i0, i0_, I0, "The modified Bessel function of the first kind, order 0 (NumPy's `i0`, SciPy's `i0`; float dtypes): +inf past about 91.9 in f32 and at both infinities (SciPy says NaN there). In f32, within 0.5 ulp on the CPU (computed in f64); on a GPU an exp of its own, 5.6 ulp on lavapipe (the worst of sweeps of 12 million values, near 28.2; tested to 5 on SciPy's values over its whole range).";
    erfinv, erfinv_, Erfinv, "The inverse error function (float dtypes): +-inf at +-1, NaN past them, -0 at -0 (PyTorch's; SciPy gives +0). In f32, within 0.5 ulp on the CPU (computed in f64) and 2.9 ulp on lavapipe (the worst of a sweep of 4 million values; tested to 4 over all of (-1, 1)).";
    silu, silu_, Silu, "PyTorch's SiLU (swish): `x / (1 + e^-x)` (float dtypes).";
    hardsigmoid, hardsigmoid_, Hardsigmoid, "PyTorch's `hardsigmoid`: `min(max(x + 3, 0), 6) / 6` (float dtypes); NaN stays NaN.";
    hardswish, hardswish_, Hardswish, "PyTorch's `hardswish`: `x * min(max(x + 3, 0), 6) / 6`, the product rounded before the division, as PyTorch's (float dtypes); NaN stays NaN.\n\n```\nuse webtensor::{Device, Tensor};\nlet x = Tensor::from_slice(&[-4.0f32, -1.5, 0.0, 3.0], [4], &Device::cpu())?;\nassert_eq!(x.hardswish()?.to_vec::<f32>()?, vec![0.0, -0.375, 0.0, 3.0]);\n# Ok::<(), webtensor::Error>(())\n```";
    floor, floor_, Floor, "Round down (the identity on integers).";
    ceil, ceil_, Ceil, "Round up (the identity on integers).";
    round, round_, Round, "Round half to even, as NumPy (the identity on integers).";
    sign, sign_, Sign, "-1, 0 or 1 by the sign of `x` (NaN is kept for floats, and -0 is +0, as NumPy's).";
    recip, recip_, Recip, "`1 / x` (float dtypes).";
    square, square_, Square, "`x * x` (wrapping for integers).";
    logical_not, logical_not_, Not, "Logical not (bool only).";
    tan, tan_, Tan, "Tangent (float dtypes).";
    log1p, log1p_, Log1p, "`ln(1 + x)`, accurate for small `x` (float dtypes).";
    expm1, expm1_, Expm1, "`e^x - 1`, accurate for small `x` (float dtypes).";
    log2, log2_, Log2, "Base-2 logarithm (float dtypes).";
    exp2, exp2_, Exp2, "`2^x` (float dtypes).";
    asin, asin_, Asin, "The inverse sine, in `[-pi/2, pi/2]` (NumPy's `arcsin`; float dtypes): NaN past +-1. In f32 within 0.5 ulp on the CPU (computed in f64) and 2.4 ulp on lavapipe (the worst over NumPy's values at some 4,000 points across its domain and past it; tested to 4), by the identities C libraries use on this library's accurate atan, exp, log and log1p.";
    acos, acos_, Acos, "The inverse cosine, in `[0, pi]` (NumPy's `arccos`; float dtypes): NaN past +-1. In f32 within 0.5 ulp on the CPU (computed in f64) and 3.1 ulp on lavapipe (the worst over NumPy's values at some 4,000 points across its domain and past it; tested to 4), by the identities C libraries use on this library's accurate atan, exp, log and log1p.";
    atan, atan_, Atan, "The inverse tangent, in `(-pi/2, pi/2)` (NumPy's `arctan`; float dtypes): +-pi/2 at +-inf. In f32 within 0.5 ulp on the CPU (computed in f64) and 2.3 ulp on lavapipe (the worst over NumPy's values at some 4,000 points across its domain and past it; tested to 4), by the identities C libraries use on this library's accurate atan, exp, log and log1p.";
    sinh, sinh_, Sinh, "The hyperbolic sine (float dtypes): inf past about 89.4 in f32. In f32 within 0.5 ulp on the CPU (computed in f64) and 1.9 ulp on lavapipe (the worst over NumPy's values at some 4,000 points across its domain and past it; tested to 4), by the identities C libraries use on this library's accurate atan, exp, log and log1p.";
    cosh, cosh_, Cosh, "The hyperbolic cosine (float dtypes): inf past about 89.4 in f32. In f32 within 0.5 ulp on the CPU (computed in f64) and 1.1 ulp on lavapipe (the worst over NumPy's values at some 4,000 points across its domain and past it; tested to 4), by the identities C libraries use on this library's accurate atan, exp, log and log1p.";
    asinh, asinh_, Asinh, "The inverse hyperbolic sine (NumPy's `arcsinh`; float dtypes). In f32 within 0.5 ulp on the CPU (computed in f64) and 2.7 ulp on lavapipe (the worst over NumPy's values at some 4,000 points across its domain and past it; tested to 4), by the identities C libraries use on this library's accurate atan, exp, log and log1p.";
    acosh, acosh_, Acosh, "The inverse hyperbolic cosine (NumPy's `arccosh`; float dtypes): NaN below 1. In f32 within 0.5 ulp on the CPU (computed in f64) and 2.4 ulp on lavapipe (the worst over NumPy's values at some 4,000 points across its domain and past it; tested to 4), by the identities C libraries use on this library's accurate atan, exp, log and log1p.";
    atanh, atanh_, Atanh, "The inverse hyperbolic tangent (NumPy's `arctanh`; float dtypes): +-inf at +-1, NaN past them. In f32 within 0.5 ulp on the CPU (computed in f64) and 2.2 ulp on lavapipe (the worst over NumPy's values at some 4,000 points across its domain and past it; tested to 4), by the identities C libraries use on this library's accurate atan, exp, log and log1p.";
    log10, log10_, Log10, "Base-10 logarithm (float dtypes). In f32 within 0.5 ulp on the CPU (computed in f64) and 2.8 ulp on lavapipe (the worst over NumPy's values at some 4,000 points across its domain and past it; tested to 4), by the identities C libraries use on this library's accurate atan, exp, log and log1p.";
}

/// The name `op` reports in errors and the op its kernel computes on
/// `dtype` ([`BinaryOp::on_bool`]: `add` of bools is a logical or).
///
/// # Errors
/// `Error::DType` naming `op` where it does not apply to `dtype`.
fn kernel_op(op: BinaryOp, dtype: DType) -> Result<(&'static str, BinaryOp)> {
    let kernel = if dtype == DType::Bool {
        op.on_bool()
    } else {
        op
    };
    kernel
        .check(dtype)
        .map_err(|_| crate::op::unsupported(op.name(), dtype))?;
    Ok((op.name(), kernel))
}

macro_rules! binary_methods {
    ($($name:ident, $name_:ident, $scalar:ident, $scalar_:ident, $op:ident, $doc:literal;)*) => {
        impl Tensor {$(
            #[doc = concat!($doc, " Broadcasts as NumPy; operands of different dtypes meet in their common dtype ([`Tensor::result_type`]).\n\n# Errors\n`Error::Shape` when the shapes do not broadcast, `Error::DType` for dtypes the op does not take, `Error::DeviceMismatch`.")]
            pub fn $name(&self, other: &Tensor) -> Result<Tensor> {
                self.binary(BinaryOp::$op, other)
            }
            #[doc = concat!("In-place `", stringify!($name), "` into this view; `other` broadcasts to its shape.\n\n# Errors\nAs `", stringify!($name), "`, and `Error::OverlappingWrite` for a broadcast view.")]
            pub fn $name_(&self, other: &Tensor) -> Result<()> {
                self.binary_(BinaryOp::$op, other)
            }
            #[doc = concat!("`", stringify!($name), "` with a scalar second operand, converted to this dtype.\n\n# Errors\n`Error::DType` when the scalar is not representable in the dtype.")]
            pub fn $scalar(&self, s: impl Into<Scalar>) -> Result<Tensor> {
                self.binary_scalar(BinaryOp::$op, s.into())
            }
            #[doc = concat!("In-place `", stringify!($scalar), "` into this view.\n\n# Errors\nAs `", stringify!($scalar), "`, and `Error::OverlappingWrite` for a broadcast view.")]
            pub fn $scalar_(&self, s: impl Into<Scalar>) -> Result<()> {
                self.binary_scalar_(BinaryOp::$op, s.into())
            }
        )*}
    };
}

binary_methods! {
    add, add_, add_scalar, add_scalar_, Add, "`self + other` (wrapping for integers; a logical or of bools, as NumPy's and PyTorch's).";
    sub, sub_, sub_scalar, sub_scalar_, Sub, "`self - other` (wrapping for integers).";
    mul, mul_, mul_scalar, mul_scalar_, Mul, "`self * other` (wrapping for integers; a logical and of bools).";
    div, div_, div_scalar, div_scalar_, Div, "`self / other`; integers truncate toward zero and `x / 0 == 0`.";
    pow, pow_, pow_scalar, pow_scalar_, Pow, "`self ^ other`: for floats C's `powf` (NumPy's `power`; a GPU is within an ulp of it), for integers wrapping, a negative exponent giving 0 (except bases 1 and -1).";
    maximum, maximum_, maximum_scalar, maximum_scalar_, Maximum, "Elementwise maximum, propagating NaN (a logical or of bools); of two equal operands the first (`maximum(0, -0)` is 0, `maximum(-0, 0)` -0), as PyTorch's and NumPy's f16 loop (its f32 loop keeps the second).";
    minimum, minimum_, minimum_scalar, minimum_scalar_, Minimum, "Elementwise minimum, propagating NaN (a logical and of bools); of two equal operands the first, as [`Tensor::maximum`].";
    remainder, remainder_, remainder_scalar, remainder_scalar_, Remainder, "Remainder with the sign of the divisor (NumPy's `remainder`); `x % 0 == 0` for integers.";
    floor_divide, floor_divide_, floor_divide_scalar, floor_divide_scalar_, FloorDiv, "Division rounded toward negative infinity (NumPy's `floor_divide`, Python's `//`), so that `floor_divide(a, b) * b + remainder(a, b) == a`; `x // 0 == 0` for integers, `a / b` for a float zero divisor.";
    logical_and, logical_and_, logical_and_scalar, logical_and_scalar_, And, "Logical and (bool only).";
    logical_or, logical_or_, logical_or_scalar, logical_or_scalar_, Or, "Logical or (bool only).";
    logical_xor, logical_xor_, logical_xor_scalar, logical_xor_scalar_, Xor, "Logical exclusive or (bool only).";
    atan2, atan2_, atan2_scalar, atan2_scalar_, Atan2, "`atan2(self, other)`: the angle in `(-pi, pi]` of the point (x = `other`, y = `self`), as NumPy's `arctan2` (float dtypes).";
    bitwise_and, bitwise_and_, bitwise_and_scalar, bitwise_and_scalar_, BitAnd, "`self & other` bit by bit (integer dtypes; a logical and of bools), as NumPy's and PyTorch's `bitwise_and`.";
    bitwise_or, bitwise_or_, bitwise_or_scalar, bitwise_or_scalar_, BitOr, "`self | other` bit by bit (integer dtypes; a logical or of bools), as NumPy's and PyTorch's `bitwise_or`.";
    bitwise_xor, bitwise_xor_, bitwise_xor_scalar, bitwise_xor_scalar_, BitXor, "`self ^ other` bit by bit (integer dtypes; a logical exclusive or of bools), as NumPy's and PyTorch's `bitwise_xor`.";
    bitwise_left_shift, bitwise_left_shift_, bitwise_left_shift_scalar, bitwise_left_shift_scalar_, Shl, "`self << other` (integer dtypes; bits shifted past the type's width are lost), as PyTorch's `bitwise_left_shift` and NumPy's `left_shift`: a shift by a negative amount or by the width or more gives 0.";
    bitwise_right_shift, bitwise_right_shift_, bitwise_right_shift_scalar, bitwise_right_shift_scalar_, Shr, "`self >> other` (integer dtypes), arithmetic for the signed ones (the sign shifted in), as PyTorch's `bitwise_right_shift` and NumPy's `right_shift`: a shift by a negative amount or by the width or more gives 0, or -1 for a negative value.";
}

impl Tensor {
    /// `~x` bit by bit (integer dtypes; a logical not of bools), as NumPy's
    /// `invert` and PyTorch's `bitwise_not`.
    ///
    /// # Errors
    /// `Error::DType` for float and complex dtypes.
    pub fn bitwise_not(&self) -> Result<Tensor> {
        self.unary(UnaryOp::bit_not_of(self.dtype()))
    }

    /// In-place [`Tensor::bitwise_not`], written through this view.
    ///
    /// # Errors
    /// As `bitwise_not`, and `Error::OverlappingWrite` for a broadcast view.
    pub fn bitwise_not_(&self) -> Result<()> {
        self.unary_(UnaryOp::bit_not_of(self.dtype()))
    }
}

macro_rules! compare_methods {
    ($($name:ident, $scalar:ident, $op:ident, $doc:literal;)*) => {
        impl Tensor {$(
            #[doc = concat!("`self ", $doc, " other` as a bool tensor; broadcasts as NumPy, operands of different dtypes compared in their common dtype ([`Tensor::result_type`]). Comparisons with NaN are false (`ne`: true).\n\n# Errors\n`Error::Shape`, `Error::DType` for dtypes the op does not take (c64), `Error::DeviceMismatch`.")]
            pub fn $name(&self, other: &Tensor) -> Result<Tensor> {
                self.compare(CompareOp::$op, other)
            }
            #[doc = concat!("`self ", $doc, " s` as a bool tensor.\n\n# Errors\n`Error::DType` when the scalar is not representable in the dtype.")]
            pub fn $scalar(&self, s: impl Into<Scalar>) -> Result<Tensor> {
                self.compare_scalar(CompareOp::$op, s.into())
            }
        )*}
    };
}

compare_methods! {
    eq, eq_scalar, Eq, "==";
    ne, ne_scalar, Ne, "!=";
    lt, lt_scalar, Lt, "<";
    le, le_scalar, Le, "<=";
    gt, gt_scalar, Gt, ">";
    ge, ge_scalar, Ge, ">=";
}
