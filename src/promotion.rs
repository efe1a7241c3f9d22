//! Type promotion: the dtype an op on operands of different dtypes computes
//! in, by PyTorch's rules (`torch.result_type`), which suit a GPU library
//! better than NumPy's (a Rust scalar never widens a tensor within its
//! category, so `f16_tensor * 2.0` stays f16).
//!
//! Categories rank bool < integers < floats < complex. Two tensors compute
//! in the higher category's dtype and, within one category, in the wider
//! dtype:
//!
//! |      | bool | u8   | i32  | i64  | u32  | f16  | bf16 | f32  | f64  | c64  |
//! |------|------|------|------|------|------|------|------|------|------|------|
//! | bool | bool | u8   | i32  | i64  | u32  | f16  | bf16 | f32  | f64  | c64  |
//! | u8   | u8   | u8   | i32  | i64  | u32  | f16  | bf16 | f32  | f64  | c64  |
//! | i32  | i32  | i32  | i32  | i64  | i64  | f16  | bf16 | f32  | f64  | c64  |
//! | i64  | i64  | i64  | i64  | i64  | i64  | f16  | bf16 | f32  | f64  | c64  |
//! | u32  | u32  | u32  | i64  | i64  | u32  | f16  | bf16 | f32  | f64  | c64  |
//! | f16  | f16  | f16  | f16  | f16  | f16  | f16  | f32  | f32  | f64  | c64  |
//! | bf16 | bf16 | bf16 | bf16 | bf16 | bf16 | f32  | bf16 | f32  | f64  | c64  |
//! | f32  | f32  | f32  | f32  | f32  | f32  | f32  | f32  | f32  | f64  | c64  |
//! | f64  | f64  | f64  | f64  | f64  | f64  | f64  | f64  | f64  | f64  | –    |
//! | c64  | c64  | c64  | c64  | c64  | c64  | c64  | c64  | c64  | –    | c64  |
//!
//! – : no common dtype here (c64 with f64 needs a complex128: an
//! `Error::DType` asking for a cast).
//!
//! A dimensioned tensor with a 0-d one keeps its dtype unless the 0-d
//! tensor's category is higher, and then takes the two's common dtype
//! (`i32[3] + i64 0-d` is i32, `i32[3] + f64 0-d` f64); two 0-d tensors
//! promote as the table says.
//!
//! A tensor with a Rust scalar keeps its dtype unless the scalar's category
//! is higher: a float scalar takes bool and integer tensors to f32, an
//! integer scalar takes a bool tensor to i32, a complex scalar takes real
//! tensors to c64. The scalar must then fit the dtype (300 into u8 is an
//! error, not a wrap); a bool scalar is 0 or 1 in any dtype.

use crate::dtype::DType;
use crate::scalar::Scalar;

/// The rank of a dtype's category: bool 0, integers 1, floats 2,
/// complex 3.
fn category(d: DType) -> u8 {
    match d {
        DType::Bool => 0,
        DType::U8 | DType::I32 | DType::I64 | DType::U32 => 1,
        DType::F16 | DType::BF16 | DType::F32 | DType::F64 => 2,
        DType::C64 => 3,
    }
}

impl DType {
    /// The dtype that operands of dtypes `self` and `other` compute in
    /// (PyTorch's `promote_types`; the table is in the crate's README and
    /// on [`Tensor::result_type`](crate::Tensor::result_type)), or `None`
    /// for c64 with f64, which have none here.
    ///
    /// ```
    /// use webtensor::DType;
    /// assert_eq!(DType::I32.promote(DType::F16), Some(DType::F16));
    /// assert_eq!(DType::U8.promote(DType::I32), Some(DType::I32));
    /// assert_eq!(DType::F16.promote(DType::F32), Some(DType::F32));
    /// assert_eq!(DType::F16.promote(DType::BF16), Some(DType::F32));
    /// assert_eq!(DType::I32.promote(DType::U32), Some(DType::I64));
    /// assert_eq!(DType::C64.promote(DType::F64), None);
    /// ```
    pub fn promote(self, other: DType) -> Option<DType> {
        use DType::*;
        if self == other {
            return Some(self);
        }
        let (high, low) = if category(self) >= category(other) {
            (self, other)
        } else {
            (other, self)
        };
        if category(high) > category(low) {
            return match (high, low) {
                (C64, F64) => None,
                _ => Some(high),
            };
        }
        match (high, low) {
            (I32, U8) | (U8, I32) => Some(I32),
            (U32, U8) | (U8, U32) => Some(U32),
            // i64 holds every other integer; i32 with u32 needs it.
            (I64, _) | (_, I64) | (I32, U32) | (U32, I32) => Some(I64),
            (F64, _) | (_, F64) => Some(F64),
            // f16 and bf16 each hold values the other cannot.
            (F32 | BF16, F16) | (F16 | F32, BF16) | (F16 | BF16, F32) => Some(F32),
            _ => None,
        }
    }
}

/// The dtype an op on tensors of dtypes `a` and `b` computes in, where
/// `a_0d` and `b_0d` say which are 0-d (PyTorch's `result_type`): a 0-d
/// tensor beside a dimensioned one promotes like a scalar, so it widens
/// the result only from a higher category (`i32[3] + i64 0-d` is i32,
/// `f16[3] * f32 0-d` f16, `i32[3] + f64 0-d` f64).
pub(crate) fn of_tensors(a: DType, a_0d: bool, b: DType, b_0d: bool) -> Option<DType> {
    if a_0d == b_0d {
        return a.promote(b);
    }
    let (dim, zero) = if a_0d { (b, a) } else { (a, b) };
    if category(zero) <= category(dim) {
        return Some(dim);
    }
    dim.promote(zero)
}

/// True when a result of dtype `from` may be stored into a destination of
/// dtype `to` in place (PyTorch's `can_cast`): within one category, or
/// from a lower one (so never a float into an integer, nor anything but
/// bool into bool).
pub(crate) fn same_kind(from: DType, to: DType) -> bool {
    category(from) <= category(to)
}

/// The dtype a tensor of `dtype` computes in with `scalar` (see the module
/// doc), or `None` for a complex scalar with an f64 tensor.
pub(crate) fn with_scalar(dtype: DType, scalar: &Scalar) -> Option<DType> {
    let scalar_category = match scalar {
        Scalar::Bool(_) => 0,
        Scalar::Int(_) | Scalar::UInt(_) => 1,
        Scalar::Float(_) => 2,
        Scalar::Complex(_) => 3,
    };
    if scalar_category <= category(dtype) {
        return Some(dtype);
    }
    match scalar_category {
        1 => Some(DType::I32),
        2 => Some(DType::F32),
        _ if dtype == DType::F64 => None,
        _ => Some(DType::C64),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The module doc's table, as it is written there.
    #[test]
    fn the_table_is_symmetric_and_as_documented() {
        let table = "
            bool | bool | u8 | i32 | i64 | u32 | f16 | bf16 | f32 | f64 | c64
            u8 | u8 | u8 | i32 | i64 | u32 | f16 | bf16 | f32 | f64 | c64
            i32 | i32 | i32 | i32 | i64 | i64 | f16 | bf16 | f32 | f64 | c64
            i64 | i64 | i64 | i64 | i64 | i64 | f16 | bf16 | f32 | f64 | c64
            u32 | u32 | u32 | i64 | i64 | u32 | f16 | bf16 | f32 | f64 | c64
            f16 | f16 | f16 | f16 | f16 | f16 | f16 | f32 | f32 | f64 | c64
            bf16 | bf16 | bf16 | bf16 | bf16 | bf16 | f32 | bf16 | f32 | f64 | c64
            f32 | f32 | f32 | f32 | f32 | f32 | f32 | f32 | f32 | f64 | c64
            f64 | f64 | f64 | f64 | f64 | f64 | f64 | f64 | f64 | f64 | –
            c64 | c64 | c64 | c64 | c64 | c64 | c64 | c64 | c64 | – | c64";
        let dtype = |name: &str| DType::ALL.into_iter().find(|d| d.name() == name);
        let rows: Vec<Vec<&str>> = table
            .trim()
            .lines()
            .map(|l| l.split('|').map(str::trim).collect())
            .collect();
        let columns: Vec<DType> = rows.iter().map(|r| dtype(r[0]).unwrap()).collect();
        for row in &rows {
            let a = dtype(row[0]).unwrap();
            for (b, cell) in columns.iter().zip(&row[1..]) {
                assert_eq!(a.promote(*b), dtype(cell), "{a} with {b}");
                assert_eq!(a.promote(*b), b.promote(a), "{a} with {b}");
            }
        }
    }

    #[test]
    fn zero_d_tensors_widen_only_across_categories() {
        use DType::*;
        let cases = [
            (I32, I64, Some(I32)),
            (F16, F32, Some(F16)),
            (U8, I32, Some(U8)),
            (I32, F64, Some(F64)),
            (I32, F16, Some(F16)),
            (Bool, I64, Some(I64)),
            (Bool, Bool, Some(Bool)),
            (F32, C64, Some(C64)),
            (F64, C64, None),
            (C64, F64, Some(C64)),
            (BF16, F16, Some(BF16)),
        ];
        for (dim, zero, want) in cases {
            assert_eq!(
                of_tensors(dim, false, zero, true),
                want,
                "{dim} with 0-d {zero}"
            );
            assert_eq!(
                of_tensors(zero, true, dim, false),
                want,
                "0-d {zero} with {dim}"
            );
        }
        assert_eq!(of_tensors(I32, true, I64, true), Some(I64));
        assert_eq!(of_tensors(F16, false, F32, false), Some(F32));
    }

    #[test]
    fn scalars_widen_only_across_categories() {
        use DType::*;
        let cases = [
            (I32, Scalar::Float(0.5), Some(F32)),
            (U8, Scalar::Int(300), Some(U8)),
            (Bool, Scalar::Int(1), Some(I32)),
            (Bool, Scalar::Bool(true), Some(Bool)),
            (F16, Scalar::Float(2.0), Some(F16)),
            (F16, Scalar::Int(2), Some(F16)),
            (BF16, Scalar::Float(0.1), Some(BF16)),
            (
                F32,
                Scalar::Complex(num_complex::Complex32::new(0.0, 1.0)),
                Some(C64),
            ),
            (
                F64,
                Scalar::Complex(num_complex::Complex32::new(0.0, 1.0)),
                None,
            ),
            (C64, Scalar::Float(2.0), Some(C64)),
        ];
        for (dtype, scalar, want) in cases {
            assert_eq!(with_scalar(dtype, &scalar), want, "{dtype} with {scalar}");
        }
    }
}
