//! Operator sugar: `&a + &b`, `&a * 2.0`, `-&a`.
//!
//! These panic with the op's error message where the method form returns
//! `Err`; use the methods (`add`, `mul_scalar` ...) to handle errors.

use crate::tensor::Tensor;
use std::ops::{Add, Div, Mul, Neg, Sub};

macro_rules! tensor_operator {
    ($($trait:ident, $fn:ident, $method:ident, $scalar:ident;)*) => {$(
        impl $trait<&Tensor> for &Tensor {
            type Output = Tensor;
            /// # Panics
            /// With the error of the method form on bad input.
            fn $fn(self, rhs: &Tensor) -> Tensor {
                match self.$method(rhs) {
                    Ok(t) => t,
                    Err(e) => panic!("{e}"),
                }
            }
        }
        impl $trait<f32> for &Tensor {
            type Output = Tensor;
            /// # Panics
            /// With the error of the method form on bad input.
            fn $fn(self, rhs: f32) -> Tensor {
                match self.$scalar(rhs) {
                    Ok(t) => t,
                    Err(e) => panic!("{e}"),
                }
            }
        }
    )*};
}

tensor_operator! {
    Add, add, add, add_scalar;
    Sub, sub, sub, sub_scalar;
    Mul, mul, mul, mul_scalar;
    Div, div, div, div_scalar;
}

impl Neg for &Tensor {
    type Output = Tensor;
    /// # Panics
    /// With the error of [`Tensor::neg`] on bad input (bool tensors).
    fn neg(self) -> Tensor {
        match Tensor::neg(self) {
            Ok(t) => t,
            Err(e) => panic!("{e}"),
        }
    }
}
