//! The op vocabulary: the elementwise, reduction, scan and indexing ops
//! both backends implement, and which dtypes each accepts. The semantics of
//! every op are written down here once; the CPU kernels and the WGSL
//! generator follow them. It sits below `ops/` (which checks arguments and
//! builds calls) and `backend/` (which runs them), and imports neither.

use crate::dtype::DType;
use crate::error::{Error, Result};

/// One-input elementwise operations.
///
/// Float-only: exp, log, sqrt, rsqrt, sin, cos, tan, tanh, sigmoid, gelu,
/// recip, log1p, expm1, log2, exp2, lgamma, digamma, erfinv, erfc, i0.
/// floor/ceil/round are the identity on integers; round is half-to-even
/// (NumPy's `round`). gelu is the exact erf form (gelu_tanh the tanh
/// approximation). relu and sign keep NaN.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum UnaryOp {
    Neg,
    Abs,
    Exp,
    Log,
    Sqrt,
    Rsqrt,
    Sin,
    Cos,
    Tanh,
    Sigmoid,
    Relu,
    /// PyTorch's GELU: `x / 2 * (1 + erf(x / sqrt(2)))`.
    Gelu,
    /// GELU's tanh approximation (PyTorch's `approximate='tanh'`).
    GeluTanh,
    /// The error function.
    Erf,
    /// `x / (1 + e^-x)`.
    Silu,
    /// `min(max(x + 3, 0), 6) / 6`.
    Hardsigmoid,
    /// `x * min(max(x + 3, 0), 6) / 6`.
    Hardswish,
    Floor,
    Ceil,
    Round,
    Sign,
    Recip,
    Square,
    /// Logical not, bool only.
    Not,
    Tan,
    /// `ln(1 + x)`, accurate for small `x`.
    Log1p,
    /// `e^x - 1`, accurate for small `x`.
    Expm1,
    Log2,
    Exp2,
    /// `ln |gamma(x)|` (SciPy's `gammaln`).
    Lgamma,
    /// The digamma function (SciPy's `psi`).
    Digamma,
    /// The inverse error function.
    Erfinv,
    /// `1 - erf(x)`.
    Erfc,
    /// The modified Bessel function of the first kind, order 0.
    I0,
    /// The inverse sine.
    Asin,
    /// The inverse cosine.
    Acos,
    /// The inverse tangent.
    Atan,
    /// The hyperbolic sine.
    Sinh,
    /// The hyperbolic cosine.
    Cosh,
    /// The inverse hyperbolic sine.
    Asinh,
    /// The inverse hyperbolic cosine.
    Acosh,
    /// The inverse hyperbolic tangent.
    Atanh,
    /// The base-10 logarithm.
    Log10,
    /// Bitwise not (`~x`), integers only (`logical_not` on bool).
    BitNot,
}

/// Two-input elementwise operations producing the inputs' dtype.
///
/// Integers wrap (Rust's `wrapping_*`). Integer division truncates toward zero
/// and `x / 0 == 0`; `floor_divide` rounds toward negative infinity (Python's
/// and NumPy's `//`: `a == floor_divide(a, b) * b + remainder(a, b)`) with
/// `x // 0 == 0` for integers and `a / b` for a float zero divisor; `remainder` takes the sign of the divisor (NumPy's and
/// PyTorch's `remainder`) and `x % 0 == 0`; `pow` with a negative integer
/// exponent is `0` except for bases 1 and -1. maximum/minimum propagate NaN.
/// The bitwise ops take integers (bool through [`BinaryOp::on_bool`]);
/// shifts by a negative amount or by the type's width or more give 0
/// (`>>` of a negative value -1), as NumPy's and PyTorch's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum BinaryOp {
    Add,
    Sub,
    Mul,
    Div,
    Pow,
    Maximum,
    Minimum,
    Remainder,
    FloorDiv,
    /// Logical and, bool only.
    And,
    /// Logical or, bool only.
    Or,
    /// Logical exclusive or, bool only.
    Xor,
    /// `atan2(self, other)`: the angle of the point (x = other, y = self),
    /// float only.
    Atan2,
    /// Bitwise and, integers only (`logical_and` on bool).
    BitAnd,
    /// Bitwise or, integers only (`logical_or` on bool).
    BitOr,
    /// Bitwise exclusive or, integers only (`logical_xor` on bool).
    BitXor,
    /// `self << other`, integers only.
    Shl,
    /// `self >> other` (arithmetic for signed types), integers only.
    Shr,
}

/// Comparisons, producing bool. Any comparison with NaN is false except `ne`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum CompareOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl UnaryOp {
    /// Every unary op.
    #[cfg(test)]
    pub const ALL: [UnaryOp; 44] = [
        UnaryOp::Neg,
        UnaryOp::Abs,
        UnaryOp::Exp,
        UnaryOp::Log,
        UnaryOp::Sqrt,
        UnaryOp::Rsqrt,
        UnaryOp::Sin,
        UnaryOp::Cos,
        UnaryOp::Tanh,
        UnaryOp::Sigmoid,
        UnaryOp::Relu,
        UnaryOp::Gelu,
        UnaryOp::GeluTanh,
        UnaryOp::Erf,
        UnaryOp::Silu,
        UnaryOp::Hardsigmoid,
        UnaryOp::Hardswish,
        UnaryOp::Floor,
        UnaryOp::Ceil,
        UnaryOp::Round,
        UnaryOp::Sign,
        UnaryOp::Recip,
        UnaryOp::Square,
        UnaryOp::Not,
        UnaryOp::Tan,
        UnaryOp::Log1p,
        UnaryOp::Expm1,
        UnaryOp::Log2,
        UnaryOp::Exp2,
        UnaryOp::Lgamma,
        UnaryOp::Digamma,
        UnaryOp::Erfinv,
        UnaryOp::Erfc,
        UnaryOp::I0,
        UnaryOp::Asin,
        UnaryOp::Acos,
        UnaryOp::Atan,
        UnaryOp::Sinh,
        UnaryOp::Cosh,
        UnaryOp::Asinh,
        UnaryOp::Acosh,
        UnaryOp::Atanh,
        UnaryOp::Log10,
        UnaryOp::BitNot,
    ];

    pub fn name(self) -> &'static str {
        match self {
            UnaryOp::Neg => "neg",
            UnaryOp::Abs => "abs",
            UnaryOp::Exp => "exp",
            UnaryOp::Log => "log",
            UnaryOp::Sqrt => "sqrt",
            UnaryOp::Rsqrt => "rsqrt",
            UnaryOp::Sin => "sin",
            UnaryOp::Cos => "cos",
            UnaryOp::Tanh => "tanh",
            UnaryOp::Sigmoid => "sigmoid",
            UnaryOp::Relu => "relu",
            UnaryOp::Gelu => "gelu",
            UnaryOp::GeluTanh => "gelu_tanh",
            UnaryOp::Erf => "erf",
            UnaryOp::Silu => "silu",
            UnaryOp::Hardsigmoid => "hardsigmoid",
            UnaryOp::Hardswish => "hardswish",
            UnaryOp::Floor => "floor",
            UnaryOp::Ceil => "ceil",
            UnaryOp::Round => "round",
            UnaryOp::Sign => "sign",
            UnaryOp::Recip => "recip",
            UnaryOp::Square => "square",
            UnaryOp::Not => "logical_not",
            UnaryOp::Tan => "tan",
            UnaryOp::Log1p => "log1p",
            UnaryOp::Expm1 => "expm1",
            UnaryOp::Log2 => "log2",
            UnaryOp::Exp2 => "exp2",
            UnaryOp::Lgamma => "lgamma",
            UnaryOp::Digamma => "digamma",
            UnaryOp::Erfinv => "erfinv",
            UnaryOp::Erfc => "erfc",
            UnaryOp::I0 => "i0",
            UnaryOp::Asin => "asin",
            UnaryOp::Acos => "acos",
            UnaryOp::Atan => "atan",
            UnaryOp::Sinh => "sinh",
            UnaryOp::Cosh => "cosh",
            UnaryOp::Asinh => "asinh",
            UnaryOp::Acosh => "acosh",
            UnaryOp::Atanh => "atanh",
            UnaryOp::Log10 => "log10",
            UnaryOp::BitNot => "bitwise_not",
        }
    }

    /// Bitwise not on `dtype`: a logical not of bools.
    pub fn bit_not_of(dtype: DType) -> UnaryOp {
        if dtype == DType::Bool {
            UnaryOp::Not
        } else {
            UnaryOp::BitNot
        }
    }

    /// True for the ops defined only on float dtypes.
    pub fn is_float_only(self) -> bool {
        matches!(
            self,
            UnaryOp::Exp
                | UnaryOp::Log
                | UnaryOp::Sqrt
                | UnaryOp::Rsqrt
                | UnaryOp::Sin
                | UnaryOp::Cos
                | UnaryOp::Tanh
                | UnaryOp::Sigmoid
                | UnaryOp::Gelu
                | UnaryOp::GeluTanh
                | UnaryOp::Erf
                | UnaryOp::Silu
                | UnaryOp::Hardsigmoid
                | UnaryOp::Hardswish
                | UnaryOp::Recip
                | UnaryOp::Tan
                | UnaryOp::Log1p
                | UnaryOp::Expm1
                | UnaryOp::Log2
                | UnaryOp::Exp2
                | UnaryOp::Lgamma
                | UnaryOp::Digamma
                | UnaryOp::Erfinv
                | UnaryOp::Erfc
                | UnaryOp::I0
                | UnaryOp::Asin
                | UnaryOp::Acos
                | UnaryOp::Atan
                | UnaryOp::Sinh
                | UnaryOp::Cosh
                | UnaryOp::Asinh
                | UnaryOp::Acosh
                | UnaryOp::Atanh
                | UnaryOp::Log10
        )
    }

    /// Checks that the op applies to `dtype`.
    ///
    /// # Errors
    /// `Error::DType` naming the op and the dtype.
    pub fn check(self, dtype: DType) -> Result<()> {
        let ok = match self {
            UnaryOp::Not => dtype == DType::Bool,
            UnaryOp::BitNot => dtype.is_int(),
            op if op.is_float_only() => dtype.is_float(),
            _ => dtype.is_numeric(),
        };
        if ok {
            Ok(())
        } else {
            Err(unsupported(self.name(), dtype))
        }
    }
}

impl BinaryOp {
    /// Every binary op.
    #[cfg(test)]
    pub const ALL: [BinaryOp; 18] = [
        BinaryOp::Add,
        BinaryOp::Sub,
        BinaryOp::Mul,
        BinaryOp::Div,
        BinaryOp::Pow,
        BinaryOp::Maximum,
        BinaryOp::Minimum,
        BinaryOp::Remainder,
        BinaryOp::FloorDiv,
        BinaryOp::And,
        BinaryOp::Or,
        BinaryOp::Xor,
        BinaryOp::Atan2,
        BinaryOp::BitAnd,
        BinaryOp::BitOr,
        BinaryOp::BitXor,
        BinaryOp::Shl,
        BinaryOp::Shr,
    ];

    pub fn name(self) -> &'static str {
        match self {
            BinaryOp::Add => "add",
            BinaryOp::Sub => "sub",
            BinaryOp::Mul => "mul",
            BinaryOp::Div => "div",
            BinaryOp::Pow => "pow",
            BinaryOp::Maximum => "maximum",
            BinaryOp::Minimum => "minimum",
            BinaryOp::Remainder => "remainder",
            BinaryOp::FloorDiv => "floor_divide",
            BinaryOp::And => "logical_and",
            BinaryOp::Or => "logical_or",
            BinaryOp::Xor => "logical_xor",
            BinaryOp::Atan2 => "atan2",
            BinaryOp::BitAnd => "bitwise_and",
            BinaryOp::BitOr => "bitwise_or",
            BinaryOp::BitXor => "bitwise_xor",
            BinaryOp::Shl => "bitwise_left_shift",
            BinaryOp::Shr => "bitwise_right_shift",
        }
    }

    /// The op computed on bool operands: `add` and `maximum` are a logical
    /// or, `mul` and `minimum` a logical and, as NumPy's and PyTorch's
    /// (the rest are themselves: `sub`, `div` and the like stay refused);
    /// the bitwise ops are the logical ones.
    pub fn on_bool(self) -> BinaryOp {
        match self {
            BinaryOp::Add | BinaryOp::Maximum | BinaryOp::BitOr => BinaryOp::Or,
            BinaryOp::Mul | BinaryOp::Minimum | BinaryOp::BitAnd => BinaryOp::And,
            BinaryOp::BitXor => BinaryOp::Xor,
            op => op,
        }
    }

    /// True for the ops defined only on bool.
    pub fn is_logical(self) -> bool {
        matches!(self, BinaryOp::And | BinaryOp::Or | BinaryOp::Xor)
    }

    /// True for the ops defined only on float dtypes.
    pub fn is_float_only(self) -> bool {
        self == BinaryOp::Atan2
    }

    /// True for the ops defined only on integer dtypes (the bitwise ops
    /// and shifts; bool takes the first three as logical ops).
    pub fn is_bitwise(self) -> bool {
        matches!(
            self,
            BinaryOp::BitAnd | BinaryOp::BitOr | BinaryOp::BitXor | BinaryOp::Shl | BinaryOp::Shr
        )
    }

    /// Checks that the op applies to `dtype`.
    ///
    /// # Errors
    /// `Error::DType` naming the op and the dtype.
    pub fn check(self, dtype: DType) -> Result<()> {
        let ok = if self.is_float_only() {
            dtype.is_float()
        } else if self.is_bitwise() {
            dtype.is_int()
        } else {
            self.is_logical() == (dtype == DType::Bool)
        };
        if ok {
            Ok(())
        } else {
            Err(unsupported(self.name(), dtype))
        }
    }
}

impl CompareOp {
    /// Every comparison.
    #[cfg(test)]
    pub const ALL: [CompareOp; 6] = [
        CompareOp::Eq,
        CompareOp::Ne,
        CompareOp::Lt,
        CompareOp::Le,
        CompareOp::Gt,
        CompareOp::Ge,
    ];

    pub fn name(self) -> &'static str {
        match self {
            CompareOp::Eq => "eq",
            CompareOp::Ne => "ne",
            CompareOp::Lt => "lt",
            CompareOp::Le => "le",
            CompareOp::Gt => "gt",
            CompareOp::Ge => "ge",
        }
    }
}

pub(crate) fn unsupported(op: &'static str, dtype: DType) -> Error {
    Error::dtype(op, format!("not defined for dtype {dtype}"))
}

/// What an elementwise kernel computes. Inputs and output dtypes travel with
/// the operands; this names the function applied per element.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum ElementwiseOp {
    /// `out = f(in0)`.
    Unary(UnaryOp),
    /// `out = f(in0, in1)` (in1 may be a scalar).
    Binary(BinaryOp),
    /// `out = in0 <op> in1` as bool.
    Compare(CompareOp),
    /// `out = if in0 { in1 } else { in2 }`.
    Where,
    /// `out = in0 as out dtype` (a plain copy when the dtypes agree).
    Cast,
    /// `out = scalar`.
    Fill,
}

impl ElementwiseOp {
    /// The function's name (`add`, `exp`, `where`, `cast` ...).
    pub fn name(self) -> &'static str {
        match self {
            ElementwiseOp::Unary(op) => op.name(),
            ElementwiseOp::Binary(op) => op.name(),
            ElementwiseOp::Compare(op) => op.name(),
            ElementwiseOp::Where => "where",
            ElementwiseOp::Cast => "cast",
            ElementwiseOp::Fill => "fill",
        }
    }
}

/// What a reduction computes over the reduced elements of each output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum ReduceOp {
    /// Sum (wrapping for integers); with `mean`, divided by the count.
    Sum,
    Prod,
    /// NaN-propagating maximum.
    Max,
    /// NaN-propagating minimum.
    Min,
    /// Row-major index (i32) of the first maximum; NaN counts as largest.
    ArgMax,
    /// Row-major index (i32) of the first minimum; NaN counts as smallest.
    ArgMin,
}

impl ReduceOp {
    /// True for the ops that give an index instead of a value.
    pub fn is_arg(self) -> bool {
        matches!(self, ReduceOp::ArgMax | ReduceOp::ArgMin)
    }
}

/// What a scan (cumulative op) computes along its axis: element `i` of a
/// line is the combination of elements `0..=i`, accumulated as a
/// reduction of the dtype is (f32 for f16, wrapping integers).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum ScanOp {
    Sum,
    Prod,
}

/// The indexing ops that read or write through an index tensor. Their
/// discriminant identifies the op in the GPU's out-of-range report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum IndexOp {
    Take,
    IndexSelect,
    Gather,
    /// Writes `src` at the indexed positions; the last write along a line wins.
    Scatter,
    /// Adds `src` at the indexed positions (wrapping for integers).
    ScatterAdd,
}

impl IndexOp {
    /// Every indexing op, in discriminant order.
    pub const ALL: [IndexOp; 5] = [
        IndexOp::Take,
        IndexOp::IndexSelect,
        IndexOp::Gather,
        IndexOp::Scatter,
        IndexOp::ScatterAdd,
    ];

    pub fn name(self) -> &'static str {
        match self {
            IndexOp::Take => "take",
            IndexOp::IndexSelect => "index_select",
            IndexOp::Gather => "gather",
            IndexOp::Scatter => "scatter",
            IndexOp::ScatterAdd => "scatter_add",
        }
    }
}
