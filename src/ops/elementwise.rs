//! The elementwise op methods: unary, binary (tensor and scalar forms),
//! comparisons, `where_cond`, logical ops, each with an in-place form that
//! writes through views.

use super::{Arg, check_same_dtype};
use crate::dtype::DType;
use crate::error::Result;
use crate::op::{BinaryOp, CompareOp, ElementwiseOp, UnaryOp};
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
        if self.dtype().is_complex() || other.dtype().is_complex() {
            return self.complex_binary(op, other);
        }
        check_same_dtype(op.name(), self.dtype(), other.dtype())?;
        op.check(self.dtype())?;
        Tensor::launch_new(
            self,
            op.name(),
            ElementwiseOp::Binary(op),
            self.dtype(),
            &[Arg::Tensor(self), Arg::Tensor(other)],
        )
    }

    fn binary_(&self, op: BinaryOp, other: &Tensor) -> Result<()> {
        if self.dtype().is_complex() || other.dtype().is_complex() {
            return self.complex_binary_(op, other);
        }
        check_same_dtype(op.name(), self.dtype(), other.dtype())?;
        op.check(self.dtype())?;
        self.launch_into_args(
            op.name(),
            ElementwiseOp::Binary(op),
            &[Arg::Tensor(self), Arg::Tensor(other)],
        )
    }

    fn binary_scalar(&self, op: BinaryOp, s: Scalar) -> Result<Tensor> {
        if self.dtype().is_complex() {
            return self.complex_scalar(op, s);
        }
        op.check(self.dtype())?;
        let s = TypedScalar::new(op.name(), s, self.dtype())?;
        Tensor::launch_new(
            self,
            op.name(),
            ElementwiseOp::Binary(op),
            self.dtype(),
            &[Arg::Tensor(self), Arg::Scalar(s)],
        )
    }

    fn binary_scalar_(&self, op: BinaryOp, s: Scalar) -> Result<()> {
        if self.dtype().is_complex() {
            return self.complex_scalar_(op, s);
        }
        op.check(self.dtype())?;
        let s = TypedScalar::new(op.name(), s, self.dtype())?;
        self.launch_into_args(
            op.name(),
            ElementwiseOp::Binary(op),
            &[Arg::Tensor(self), Arg::Scalar(s)],
        )
    }

    /// `s <op> self`: the scalar as the first operand (`2.0 / &x`), through a
    /// 0-d tensor of this dtype that broadcasts.
    pub(super) fn scalar_first(&self, op: BinaryOp, s: Scalar) -> Result<Tensor> {
        if !self.dtype().is_complex() {
            // Checked here so that the error names the op, not `full`.
            TypedScalar::new(op.name(), s, self.dtype())?;
        }
        Tensor::full([], s, self.dtype(), self.device())?.binary(op, self)
    }

    fn compare(&self, op: CompareOp, other: &Tensor) -> Result<Tensor> {
        check_same_dtype(op.name(), self.dtype(), other.dtype())?;
        Tensor::launch_new(
            self,
            op.name(),
            ElementwiseOp::Compare(op),
            DType::Bool,
            &[Arg::Tensor(self), Arg::Tensor(other)],
        )
    }

    fn compare_scalar(&self, op: CompareOp, s: Scalar) -> Result<Tensor> {
        let s = TypedScalar::new(op.name(), s, self.dtype())?;
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
    /// `y` share a dtype.
    ///
    /// # Errors
    /// `Error::DType` for a non-bool condition or mismatched dtypes;
    /// `Error::Shape` when the shapes do not broadcast; device mismatch.
    pub fn where_cond(cond: &Tensor, x: &Tensor, y: &Tensor) -> Result<Tensor> {
        const OP: &str = "where_cond";
        check_same_dtype(OP, cond.dtype(), DType::Bool)?;
        check_same_dtype(OP, x.dtype(), y.dtype())?;
        Tensor::launch_new(
            x,
            OP,
            ElementwiseOp::Where,
            x.dtype(),
            &[Arg::Tensor(cond), Arg::Tensor(x), Arg::Tensor(y)],
        )
    }
}

impl Tensor {
    /// Each element limited to `[min, max]` (NumPy's `clip`, PyTorch's
    /// `clamp`): `minimum(maximum(x, min), max)`, so NaN stays NaN and
    /// `min > max` gives `max` everywhere, as in NumPy.
    ///
    /// # Errors
    /// `Error::DType` naming `clamp` for bool or c64 tensors and for bounds
    /// the dtype cannot represent.
    pub fn clamp(&self, min: impl Into<Scalar>, max: impl Into<Scalar>) -> Result<Tensor> {
        let (min, max) = self.clamp_bounds("clamp", min.into(), max.into())?;
        self.maximum_scalar(min)?.minimum_scalar(max)
    }

    /// In-place [`Tensor::clamp`], written through this view.
    ///
    /// # Errors
    /// As [`Tensor::clamp`], and `Error::OverlappingWrite` for a broadcast view.
    pub fn clamp_(&self, min: impl Into<Scalar>, max: impl Into<Scalar>) -> Result<()> {
        let (min, max) = self.clamp_bounds("clamp_", min.into(), max.into())?;
        // Checked here so that the error names clamp_, not maximum.
        self.layout().check_writable("clamp_")?;
        self.maximum_scalar_(min)?;
        self.minimum_scalar_(max)
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
    gelu, gelu_, Gelu, "GELU, tanh approximation (PyTorch's `approximate='tanh'`; float dtypes).";
    floor, floor_, Floor, "Round down (the identity on integers).";
    ceil, ceil_, Ceil, "Round up (the identity on integers).";
    round, round_, Round, "Round half to even, as NumPy (the identity on integers).";
    sign, sign_, Sign, "-1, 0 or 1 by the sign of `x` (0 and NaN are kept for floats).";
    recip, recip_, Recip, "`1 / x` (float dtypes).";
    square, square_, Square, "`x * x` (wrapping for integers).";
    logical_not, logical_not_, Not, "Logical not (bool only).";
    tan, tan_, Tan, "Tangent (float dtypes).";
    log1p, log1p_, Log1p, "`ln(1 + x)`, accurate for small `x` (float dtypes).";
    expm1, expm1_, Expm1, "`e^x - 1`, accurate for small `x` (float dtypes).";
    log2, log2_, Log2, "Base-2 logarithm (float dtypes).";
    exp2, exp2_, Exp2, "`2^x` (float dtypes).";
}

macro_rules! binary_methods {
    ($($name:ident, $name_:ident, $scalar:ident, $scalar_:ident, $op:ident, $doc:literal;)*) => {
        impl Tensor {$(
            #[doc = concat!($doc, " Broadcasts as NumPy.\n\n# Errors\n`Error::Shape` when the shapes do not broadcast, `Error::DType` for different or unsupported dtypes, `Error::DeviceMismatch`.")]
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
    add, add_, add_scalar, add_scalar_, Add, "`self + other` (wrapping for integers).";
    sub, sub_, sub_scalar, sub_scalar_, Sub, "`self - other` (wrapping for integers).";
    mul, mul_, mul_scalar, mul_scalar_, Mul, "`self * other` (wrapping for integers).";
    div, div_, div_scalar, div_scalar_, Div, "`self / other`; integers truncate toward zero and `x / 0 == 0`.";
    pow, pow_, pow_scalar, pow_scalar_, Pow, "`self ^ other`; for integers a negative exponent gives 0 (except bases 1 and -1).";
    maximum, maximum_, maximum_scalar, maximum_scalar_, Maximum, "Elementwise maximum, propagating NaN.";
    minimum, minimum_, minimum_scalar, minimum_scalar_, Minimum, "Elementwise minimum, propagating NaN.";
    remainder, remainder_, remainder_scalar, remainder_scalar_, Remainder, "Remainder with the sign of the divisor (NumPy's `remainder`); `x % 0 == 0` for integers.";
    floor_divide, floor_divide_, floor_divide_scalar, floor_divide_scalar_, FloorDiv, "Division rounded toward negative infinity (NumPy's `floor_divide`, Python's `//`), so that `floor_divide(a, b) * b + remainder(a, b) == a`; `x // 0 == 0` for integers, `a / b` for a float zero divisor.";
    logical_and, logical_and_, logical_and_scalar, logical_and_scalar_, And, "Logical and (bool only).";
    logical_or, logical_or_, logical_or_scalar, logical_or_scalar_, Or, "Logical or (bool only).";
    logical_xor, logical_xor_, logical_xor_scalar, logical_xor_scalar_, Xor, "Logical exclusive or (bool only).";
    atan2, atan2_, atan2_scalar, atan2_scalar_, Atan2, "`atan2(self, other)`: the angle in `(-pi, pi]` of the point (x = `other`, y = `self`), as NumPy's `arctan2` (float dtypes).";
}

macro_rules! compare_methods {
    ($($name:ident, $scalar:ident, $op:ident, $doc:literal;)*) => {
        impl Tensor {$(
            #[doc = concat!("`self ", $doc, " other` as a bool tensor; broadcasts as NumPy. Comparisons with NaN are false (`ne`: true).\n\n# Errors\n`Error::Shape`, `Error::DType` for different dtypes, `Error::DeviceMismatch`.")]
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
