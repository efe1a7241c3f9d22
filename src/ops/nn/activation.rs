//! [`Activation`]: an activation named as a value, for a layer to apply
//! as it stores its outputs (`Conv::activation`) or for
//! [`Tensor::activate`].

use crate::error::Result;
use crate::op::UnaryOp;
use crate::tensor::Tensor;

/// An elementwise activation, as PyTorch's `torch.nn.functional` names
/// them; each is the op of the same name ([`Tensor::relu`],
/// [`Tensor::leaky_relu`] ...).
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum Activation {
    /// `max(x, 0)`.
    Relu,
    /// `min(max(x, 0), 6)`.
    Relu6,
    /// `x` where `x > 0`, else `x * slope`.
    LeakyRelu(f64),
    /// `1 / (1 + e^-x)`.
    Sigmoid,
    /// `tanh(x)`.
    Tanh,
    /// `min(max(x / 6 + 1/2, 0), 1)`.
    Hardsigmoid,
    /// `x * hardsigmoid(x)`.
    Hardswish,
    /// `x * sigmoid(x)`.
    Silu,
    /// `x Φ(x)` (the exact, erf form).
    Gelu,
    /// GELU's tanh approximation.
    GeluTanh,
}

impl Activation {
    /// The single elementwise op this is, where it is one (a kernel's
    /// epilogue evaluates it as the op's own kernel does).
    pub(crate) fn unary(self) -> Option<UnaryOp> {
        Some(match self {
            Activation::Relu => UnaryOp::Relu,
            Activation::Sigmoid => UnaryOp::Sigmoid,
            Activation::Tanh => UnaryOp::Tanh,
            Activation::Hardsigmoid => UnaryOp::Hardsigmoid,
            Activation::Hardswish => UnaryOp::Hardswish,
            Activation::Silu => UnaryOp::Silu,
            Activation::Gelu => UnaryOp::Gelu,
            Activation::GeluTanh => UnaryOp::GeluTanh,
            Activation::Relu6 | Activation::LeakyRelu(_) => return None,
        })
    }
}

impl Tensor {
    /// `act` of this tensor: the op of the same name.
    ///
    /// # Errors
    /// As that op: `Error::DType` naming it for a dtype it does not take.
    pub fn activate(&self, act: Activation) -> Result<Tensor> {
        match act {
            Activation::Relu => self.relu(),
            Activation::Relu6 => self.relu6(),
            Activation::LeakyRelu(slope) => self.leaky_relu(slope),
            Activation::Sigmoid => self.sigmoid(),
            Activation::Tanh => self.tanh(),
            Activation::Hardsigmoid => self.hardsigmoid(),
            Activation::Hardswish => self.hardswish(),
            Activation::Silu => self.silu(),
            Activation::Gelu => self.gelu(),
            Activation::GeluTanh => self.gelu_tanh(),
        }
    }
}
