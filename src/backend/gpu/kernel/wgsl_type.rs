//! The WGSL scalar types kernels compute in, with the literals generated
//! code needs, so that no launcher matches on type names.

use crate::dtype::KernelType;
use std::fmt;

/// The WGSL scalar type arithmetic on a dtype runs in: f16 computes in f32,
/// u8 in u32 (storage may be narrower; see codegen's storage modes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum ScalarType {
    F32,
    I32,
    /// i64 as `vec2<u32>` (low word, high word), with `int64.wgsl`'s
    /// functions for its arithmetic.
    I64,
    U32,
    Bool,
}

impl ScalarType {
    /// The type `dtype` computes in.
    pub fn of(dtype: KernelType) -> ScalarType {
        match dtype {
            KernelType::F32 | KernelType::F16 | KernelType::BF16 | KernelType::F64 => {
                ScalarType::F32
            }
            KernelType::I32 => ScalarType::I32,
            KernelType::I64 => ScalarType::I64,
            KernelType::U32 | KernelType::U8 => ScalarType::U32,
            KernelType::Bool => ScalarType::Bool,
        }
    }

    /// The WGSL name.
    pub fn name(self) -> &'static str {
        match self {
            ScalarType::F32 => "f32",
            ScalarType::I32 => "i32",
            ScalarType::I64 => "vec2<u32>",
            ScalarType::U32 => "u32",
            ScalarType::Bool => "bool",
        }
    }

    /// The literal 0 (`false`).
    pub fn zero(self) -> &'static str {
        match self {
            ScalarType::F32 => "0.0",
            ScalarType::I32 => "0",
            ScalarType::I64 => "vec2<u32>(0u, 0u)",
            ScalarType::U32 => "0u",
            ScalarType::Bool => "false",
        }
    }

    /// The literal 1 (`true`).
    pub fn one(self) -> &'static str {
        match self {
            ScalarType::F32 => "1.0",
            ScalarType::I32 => "1",
            ScalarType::I64 => "vec2<u32>(1u, 0u)",
            ScalarType::U32 => "1u",
            ScalarType::Bool => "true",
        }
    }

    /// The smallest value (the identity of a maximum): -inf for f32,
    /// through math.wgsl's `f32_from_bits` (browsers reject a constant
    /// bitcast to an infinity).
    pub fn lowest(self) -> &'static str {
        match self {
            ScalarType::F32 => "f32_from_bits(0xff800000u)",
            ScalarType::I32 => "I32_MIN",
            ScalarType::I64 => "vec2<u32>(0u, 0x80000000u)",
            ScalarType::U32 => "0u",
            ScalarType::Bool => "false",
        }
    }

    /// The largest value (the identity of a minimum): +inf for f32.
    pub fn highest(self) -> &'static str {
        match self {
            ScalarType::F32 => "f32_from_bits(F32_INF_BITS)",
            ScalarType::I32 => "2147483647",
            ScalarType::I64 => "vec2<u32>(0xffffffffu, 0x7fffffffu)",
            ScalarType::U32 => "0xffffffffu",
            ScalarType::Bool => "true",
        }
    }
}

impl fmt::Display for ScalarType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn narrow_and_half_dtypes_compute_wide() {
        assert_eq!(ScalarType::of(KernelType::F16), ScalarType::F32);
        assert_eq!(ScalarType::of(KernelType::U8), ScalarType::U32);
        assert_eq!(format!("{}", ScalarType::of(KernelType::Bool)), "bool");
        assert_eq!(ScalarType::I32.lowest(), "I32_MIN");
    }
}
