//! Operator sugar: `+ - * / %` between tensors (owned or borrowed, on
//! either side) and scalars (of every Rust numeric type on the right; on
//! the left those of unsuffixed literals and the types no literal takes,
//! see `numeric_scalars`), the
//! `+= -= *= /= %=` forms as in-place ops through views, unary `-`, and
//! `& | ^ ! << >>` (and `&= |= ^= <<= >>=`) as the bitwise ops of integer
//! tensors, `& | ^ !` being the logical ops of bool tensors.
//!
//! Operators panic with the op's error message where the method form
//! returns `Err`; the panic points at the caller's line. Use the methods
//! (`add`, `mul_scalar`, `add_` ...) to handle errors.

use crate::error::Result;
use crate::op::BinaryOp;
use crate::scalar::Scalar;
use crate::tensor::Tensor;
use half::{bf16, f16};
use num_complex::Complex32;
use std::ops::{
    Add, AddAssign, BitAnd, BitAndAssign, BitOr, BitOrAssign, BitXor, BitXorAssign, Div, DivAssign,
    Mul, MulAssign, Neg, Not, Rem, RemAssign, Shl, ShlAssign, Shr, ShrAssign, Sub, SubAssign,
};

/// The tensor of an op, or a panic with its error at the caller's line.
#[track_caller]
fn done(result: Result<Tensor>) -> Tensor {
    match result {
        Ok(t) => t,
        Err(e) => panic!("{e}"),
    }
}

/// As [`done`] for in-place ops.
#[track_caller]
fn done_in_place(result: Result<()>) {
    if let Err(e) = result {
        panic!("{e}");
    }
}

/// `Trait` between two tensors, each owned or borrowed.
macro_rules! tensor_tensor {
    ($($Trait:ident, $fn:ident, $method:ident;)*) => {$(
        impl $Trait<&Tensor> for &Tensor {
            type Output = Tensor;
            #[doc = concat!("`Tensor::", stringify!($method), "`.\n\n# Panics\nWith the method's error on bad input.")]
            #[track_caller]
            fn $fn(self, rhs: &Tensor) -> Tensor {
                done(Tensor::$method(self, rhs))
            }
        }
        impl $Trait<Tensor> for &Tensor {
            type Output = Tensor;
            #[doc = concat!("`Tensor::", stringify!($method), "`.\n\n# Panics\nWith the method's error on bad input.")]
            #[track_caller]
            fn $fn(self, rhs: Tensor) -> Tensor {
                done(Tensor::$method(self, &rhs))
            }
        }
        impl $Trait<&Tensor> for Tensor {
            type Output = Tensor;
            #[doc = concat!("`Tensor::", stringify!($method), "`.\n\n# Panics\nWith the method's error on bad input.")]
            #[track_caller]
            fn $fn(self, rhs: &Tensor) -> Tensor {
                done(Tensor::$method(&self, rhs))
            }
        }
        impl $Trait<Tensor> for Tensor {
            type Output = Tensor;
            #[doc = concat!("`Tensor::", stringify!($method), "`.\n\n# Panics\nWith the method's error on bad input.")]
            #[track_caller]
            fn $fn(self, rhs: Tensor) -> Tensor {
                done(Tensor::$method(&self, &rhs))
            }
        }
    )*};
}

tensor_tensor! {
    Add, add, add;
    Sub, sub, sub;
    Mul, mul, mul;
    Div, div, div;
    Rem, rem, remainder;
    BitAnd, bitand, bitwise_and;
    BitOr, bitor, bitwise_or;
    BitXor, bitxor, bitwise_xor;
    Shl, shl, bitwise_left_shift;
    Shr, shr, bitwise_right_shift;
}

/// `Trait` between a tensor (owned or borrowed) and a scalar: any type
/// that converts into a [`Scalar`] on the right (one generic impl, so that
/// `(&x + 1).sum(..)` infers the literal), and each type listed on the left,
/// which runs `op` with the scalar as the first operand.
macro_rules! tensor_scalar {
    ($Trait:ident, $fn:ident, $scalar:ident, $op:ident; $($S:ty),*) => {
        impl<S: Into<Scalar>> $Trait<S> for &Tensor {
            type Output = Tensor;
            #[doc = concat!("`Tensor::", stringify!($scalar), "`.\n\n# Panics\nWith the method's error (a scalar the dtype cannot represent ...).")]
            #[track_caller]
            fn $fn(self, rhs: S) -> Tensor {
                done(self.$scalar(rhs))
            }
        }
        impl<S: Into<Scalar>> $Trait<S> for Tensor {
            type Output = Tensor;
            #[doc = concat!("`Tensor::", stringify!($scalar), "`.\n\n# Panics\nWith the method's error (a scalar the dtype cannot represent ...).")]
            #[track_caller]
            fn $fn(self, rhs: S) -> Tensor {
                done(self.$scalar(rhs))
            }
        }
        $(impl $Trait<&Tensor> for $S {
            type Output = Tensor;
            /// The scalar as the first operand, converted to the tensor's dtype.
            ///
            /// # Panics
            /// With the op's error (a scalar the dtype cannot represent ...).
            #[track_caller]
            fn $fn(self, rhs: &Tensor) -> Tensor {
                done(rhs.scalar_first(BinaryOp::$op, Scalar::from(self)))
            }
        }
        impl $Trait<Tensor> for $S {
            type Output = Tensor;
            /// The scalar as the first operand, converted to the tensor's dtype.
            ///
            /// # Panics
            /// With the op's error (a scalar the dtype cannot represent ...).
            #[track_caller]
            fn $fn(self, rhs: Tensor) -> Tensor {
                done(rhs.scalar_first(BinaryOp::$op, Scalar::from(self)))
            }
        })*
    };
}

/// The left-hand scalar types of the arithmetic operators: the types of
/// unsuffixed literals (`f64` for `2.0`, `i64` for `2`), so that `2.0 *
/// &x + 1.0` infers them with no suffix, and types no literal can take
/// (`f16`, `bf16`, `Complex32`, [`Scalar`]). A variable of another type goes on the
/// right (`&x * v`) or through `Scalar::from(v) * &x`. The scalar promotes
/// as on the right: `2.0 * &i32_tensor` is f32.
macro_rules! numeric_scalars {
    ($mac:ident!($($args:tt)*)) => {
        $mac!($($args)*; f64, i64, f16, bf16, Complex32, Scalar);
    };
}

numeric_scalars!(tensor_scalar!(Add, add, add_scalar, Add));
numeric_scalars!(tensor_scalar!(Sub, sub, sub_scalar, Sub));
numeric_scalars!(tensor_scalar!(Mul, mul, mul_scalar, Mul));
numeric_scalars!(tensor_scalar!(Div, div, div_scalar, Div));
numeric_scalars!(tensor_scalar!(Rem, rem, remainder_scalar, Remainder));
tensor_scalar!(BitAnd, bitand, bitwise_and_scalar, BitAnd; bool, i64);
tensor_scalar!(BitOr, bitor, bitwise_or_scalar, BitOr; bool, i64);
tensor_scalar!(BitXor, bitxor, bitwise_xor_scalar, BitXor; bool, i64);
tensor_scalar!(Shl, shl, bitwise_left_shift_scalar, Shl; i64);
tensor_scalar!(Shr, shr, bitwise_right_shift_scalar, Shr; i64);

/// `Trait` (`+=` ...) into a tensor, in place through its view, from a
/// tensor (owned or borrowed) or a scalar.
macro_rules! assign_ops {
    ($($Trait:ident, $fn:ident, $method:ident, $scalar:ident;)*) => {$(
        impl $Trait<&Tensor> for Tensor {
            #[doc = concat!("`Tensor::", stringify!($method), "`: in place, written through this view.\n\n# Panics\nWith the method's error on bad input.")]
            #[track_caller]
            fn $fn(&mut self, rhs: &Tensor) {
                done_in_place(self.$method(rhs));
            }
        }
        impl $Trait<Tensor> for Tensor {
            #[doc = concat!("`Tensor::", stringify!($method), "`: in place, written through this view.\n\n# Panics\nWith the method's error on bad input.")]
            #[track_caller]
            fn $fn(&mut self, rhs: Tensor) {
                done_in_place(self.$method(&rhs));
            }
        }
        impl<S: Into<Scalar>> $Trait<S> for Tensor {
            #[doc = concat!("`Tensor::", stringify!($scalar), "`: in place, written through this view.\n\n# Panics\nWith the method's error on bad input.")]
            #[track_caller]
            fn $fn(&mut self, rhs: S) {
                done_in_place(self.$scalar(rhs));
            }
        }
    )*};
}

assign_ops! {
    AddAssign, add_assign, add_, add_scalar_;
    SubAssign, sub_assign, sub_, sub_scalar_;
    MulAssign, mul_assign, mul_, mul_scalar_;
    DivAssign, div_assign, div_, div_scalar_;
    RemAssign, rem_assign, remainder_, remainder_scalar_;
    BitAndAssign, bitand_assign, bitwise_and_, bitwise_and_scalar_;
    BitOrAssign, bitor_assign, bitwise_or_, bitwise_or_scalar_;
    BitXorAssign, bitxor_assign, bitwise_xor_, bitwise_xor_scalar_;
    ShlAssign, shl_assign, bitwise_left_shift_, bitwise_left_shift_scalar_;
    ShrAssign, shr_assign, bitwise_right_shift_, bitwise_right_shift_scalar_;
}

impl Neg for &Tensor {
    type Output = Tensor;
    /// [`Tensor::neg`].
    ///
    /// # Panics
    /// With its error on bad input (bool tensors).
    #[track_caller]
    fn neg(self) -> Tensor {
        done(Tensor::neg(self))
    }
}

impl Neg for Tensor {
    type Output = Tensor;
    /// [`Tensor::neg`].
    ///
    /// # Panics
    /// With its error on bad input (bool tensors).
    #[track_caller]
    fn neg(self) -> Tensor {
        done(Tensor::neg(&self))
    }
}

impl Not for &Tensor {
    type Output = Tensor;
    /// [`Tensor::bitwise_not`]: `~x` of integers, a logical not of bools.
    ///
    /// # Panics
    /// With its error for float and complex dtypes.
    #[track_caller]
    fn not(self) -> Tensor {
        done(self.bitwise_not())
    }
}

impl Not for Tensor {
    type Output = Tensor;
    /// [`Tensor::bitwise_not`]: `~x` of integers, a logical not of bools.
    ///
    /// # Panics
    /// With its error for float and complex dtypes.
    #[track_caller]
    fn not(self) -> Tensor {
        done(self.bitwise_not())
    }
}
