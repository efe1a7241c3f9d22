//! Scalars for `full`, `fill_` and the `*_scalar` ops.

use crate::dtype::{DType, Element, KernelType, bf16_from_f64, f16_from_f64};
use crate::error::{Error, Result};
use half::{bf16, f16};

/// A number or bool given by the caller, converted to a tensor's dtype when used.
///
/// The conversion is checked: a scalar that the dtype cannot represent exactly
/// (2.5 for an i32 tensor, -1 for u8, 300 for u8) is an error, not a silent
/// truncation. Float dtypes accept any number (rounded to nearest).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scalar {
    /// A floating point value.
    Float(f64),
    /// An integer value.
    Int(i64),
    /// An unsigned integer past `i64::MAX` (a `u64` or `usize`): no integer
    /// dtype holds it, so converting one to an integer dtype is an error
    /// (NumPy's `OverflowError`); a float dtype rounds it once.
    UInt(u64),
    /// A boolean.
    Bool(bool),
    /// A complex number, for c64 tensors.
    Complex(num_complex::Complex32),
}

impl From<num_complex::Complex32> for Scalar {
    fn from(v: num_complex::Complex32) -> Self {
        Scalar::Complex(v)
    }
}

macro_rules! scalar_from {
    ($($t:ty => $variant:ident as $as:ty),*) => {
        $(impl From<$t> for Scalar {
            fn from(v: $t) -> Self {
                Scalar::$variant(v as $as)
            }
        })*
    };
}
scalar_from!(f32 => Float as f64, f64 => Float as f64, i8 => Int as i64, i16 => Int as i64,
    i32 => Int as i64, i64 => Int as i64, isize => Int as i64, u8 => Int as i64, u16 => Int as i64,
    u32 => Int as i64);

/// Unsigned values past `i64::MAX` are [`Scalar::UInt`].
macro_rules! scalar_from_wide_unsigned {
    ($($t:ty),*) => {
        $(impl From<$t> for Scalar {
            fn from(v: $t) -> Self {
                match i64::try_from(v) {
                    Ok(i) => Scalar::Int(i),
                    Err(_) => Scalar::UInt(v as u64),
                }
            }
        })*
    };
}
scalar_from_wide_unsigned!(u64, usize);

impl From<bool> for Scalar {
    fn from(v: bool) -> Self {
        Scalar::Bool(v)
    }
}

impl From<f16> for Scalar {
    fn from(v: f16) -> Self {
        Scalar::Float(v.to_f64())
    }
}

impl From<bf16> for Scalar {
    fn from(v: bf16) -> Self {
        Scalar::Float(v.to_f64())
    }
}

impl std::fmt::Display for Scalar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Scalar::Float(v) => write!(f, "{v}"),
            Scalar::Int(v) => write!(f, "{v}"),
            Scalar::UInt(v) => write!(f, "{v}"),
            Scalar::Bool(v) => write!(f, "{v}"),
            Scalar::Complex(v) => write!(f, "{}", crate::number_format::format_complex(v.re, v.im)),
        }
    }
}

/// A scalar checked against one dtype: its value as f64 (exact for every
/// dtype but f16/bf16/f32 rounding) and the 32-bit pattern a kernel reads.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct TypedScalar {
    pub value: f64,
    /// The value exactly as an integer (f64 holds integers to 2^53 only):
    /// what an i64 destination takes.
    pub int: i64,
    pub dtype: KernelType,
}

impl TypedScalar {
    /// Checks that `scalar` is representable in `dtype`.
    pub fn new(op: &'static str, scalar: Scalar, dtype: DType) -> Result<Self> {
        let bad = || {
            Error::dtype(
                op,
                format!("scalar {scalar} cannot be represented in dtype {dtype}"),
            )
        };
        let int = match scalar {
            Scalar::Int(v) => v,
            // Refused by every integer dtype below.
            Scalar::UInt(v) => v as i64,
            Scalar::Float(v) => v as i64,
            Scalar::Bool(b) => b as i64,
            Scalar::Complex(_) => 0,
        };
        let value = match (scalar, dtype) {
            // c64 tensors take scalars through the complex ops (ops/complex.rs).
            (Scalar::Complex(_), _) | (_, DType::C64) => return Err(bad()),
            // A bool is 0 or 1 in any dtype (NumPy's and PyTorch's rule).
            (Scalar::Bool(b), _) => b as u8 as f64,
            (_, DType::Bool) => return Err(bad()),
            (Scalar::Float(v), d) if d.is_float() => v,
            // An integer rounds once to f32, and bf16 and f16 take that f32
            // (as PyTorch converts, and as the crate casts integers).
            (Scalar::Int(v), DType::F64) => v as f64,
            (Scalar::UInt(v), DType::F64) => v as f64,
            (Scalar::Int(v), d) if d.is_float() => half_of(v as f32, d),
            (Scalar::UInt(v), d) if d.is_float() => half_of(v as f32, d),
            (Scalar::UInt(_), _) => return Err(bad()),
            (Scalar::Float(v), d) => {
                if v.fract() != 0.0 || !int_in_range(v, d) {
                    return Err(bad());
                }
                v
            }
            (Scalar::Int(v), d) => {
                // Every i64 fits i64 (its f64 may round past the range).
                if d != DType::I64 && !int_in_range(v as f64, d) {
                    return Err(bad());
                }
                v as f64
            }
        };
        // A float scalar is rounded to the tensor's dtype before any use, as
        // NumPy converts it: the GPU computes f16 in f32, and must see the
        // f16 value (1.0001 is 1.0 in f16, 65519.99 is 65504), not the f32.
        let value = match dtype {
            DType::F32 => value as f32 as f64,
            DType::F16 => f16_from_f64(value).to_f64(),
            DType::BF16 => bf16_from_f64(value).to_f64(),
            _ => value,
        };
        // c64 was refused above.
        let dtype = KernelType::of(dtype).ok_or_else(bad)?;
        Ok(TypedScalar { value, int, dtype })
    }

    /// Zero (`false`) of `dtype`.
    pub fn zero(dtype: KernelType) -> Self {
        TypedScalar {
            value: 0.0,
            int: 0,
            dtype,
        }
    }

    /// The value as an element of the matching Rust type.
    pub fn get<T: Element>(self) -> T {
        if self.dtype == KernelType::I64 {
            T::from_i64(self.int)
        } else {
            T::from_f64(self.value)
        }
    }

    /// The bit pattern a WGSL kernel reads from its parameters: f32 bits for
    /// float dtypes (f16 arithmetic runs in f32), the integer bits otherwise.
    pub fn bits(self) -> u32 {
        match self.dtype {
            KernelType::F32 | KernelType::F16 | KernelType::BF16 | KernelType::F64 => {
                (self.value as f32).to_bits()
            }
            KernelType::I32 => (self.value as i32) as u32,
            // The low word: a kernel sign-extends it, and the op layer
            // passes only i64 scalars within i32 as slots (wider ones go
            // in as 0-d tensors, `Tensor::wide_scalar`).
            KernelType::I64 => self.int as u32,
            KernelType::U32 | KernelType::U8 | KernelType::Bool => self.value as u32,
        }
    }
}

/// `v` rounded to the float dtype `d` (f32 as it is).
fn half_of(v: f32, d: DType) -> f64 {
    match d {
        DType::F16 => f16::from_f32(v).to_f64(),
        DType::BF16 => bf16::from_f32(v).to_f64(),
        _ => v as f64,
    }
}

fn int_in_range(v: f64, dtype: DType) -> bool {
    let (lo, hi) = match dtype {
        DType::I32 => (i32::MIN as f64, i32::MAX as f64),
        // -2^63 ..= 2^63 - 1024 (the last f64 below 2^63).
        DType::I64 => (i64::MIN as f64, 9_223_372_036_854_774_784.0),
        DType::U32 => (0.0, u32::MAX as f64),
        DType::U8 => (0.0, u8::MAX as f64),
        _ => return true,
    };
    v.is_finite() && v >= lo && v <= hi
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checks_representability() {
        assert!(TypedScalar::new("t", 2.5.into(), DType::I32).is_err());
        assert!(TypedScalar::new("t", (-1).into(), DType::U8).is_err());
        assert!(TypedScalar::new("t", 256.into(), DType::U8).is_err());
        let one = TypedScalar::new("t", true.into(), DType::U8).unwrap();
        assert_eq!((one.value, one.int), (1.0, 1));
        assert_eq!(
            TypedScalar::new("t", true.into(), DType::F32)
                .unwrap()
                .value,
            1.0
        );
        assert!(TypedScalar::new("t", 1.into(), DType::Bool).is_err());
        let s = TypedScalar::new("t", 3.0.into(), DType::I32).unwrap();
        assert_eq!(s.get::<i32>(), 3);
        let big = TypedScalar::new("t", (i64::MAX - 1).into(), DType::I64).unwrap();
        assert_eq!(big.get::<i64>(), i64::MAX - 1);
        assert!(TypedScalar::new("t", 9.3e18.into(), DType::I64).is_err());
        assert_eq!(
            TypedScalar::new("t", (-1).into(), DType::I32)
                .unwrap()
                .bits(),
            u32::MAX
        );
        // Rounded to the dtype once, for both devices.
        let h = |v: f64| TypedScalar::new("t", v.into(), DType::F16).unwrap();
        assert_eq!(h(1.0001).bits(), 1.0f32.to_bits());
        assert_eq!(h(2049.0001).bits(), 2050.0f32.to_bits());
        assert_eq!(h(65519.99).bits(), 65504.0f32.to_bits());
        assert_eq!(h(65520.0).bits(), f32::INFINITY.to_bits());
        assert_eq!(
            TypedScalar::new("t", 0.1.into(), DType::F32).unwrap().value,
            0.1f32 as f64
        );
        assert_eq!(
            TypedScalar::new("t", 1.5.into(), DType::F16)
                .unwrap()
                .bits(),
            1.5f32.to_bits()
        );
    }
}
