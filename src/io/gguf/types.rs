//! What a GGUF file's metadata holds (value types numbered as gguf-py's
//! `constants.py` numbers them; the tensors' element types are
//! `crate::quant::GgmlType`).

/// The type of a GGUF metadata value (an array's elements have one).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum GgufValueType {
    /// `u8`.
    U8,
    /// `i8`.
    I8,
    /// `u16`.
    U16,
    /// `i16`.
    I16,
    /// `u32`.
    U32,
    /// `i32`.
    I32,
    /// `f32`.
    F32,
    /// A byte, 0 or 1.
    Bool,
    /// UTF-8 text.
    String,
    /// An array of values of one type.
    Array,
    /// `u64`.
    U64,
    /// `i64`.
    I64,
    /// `f64`.
    F64,
}

impl GgufValueType {
    const ALL: [GgufValueType; 13] = [
        GgufValueType::U8,
        GgufValueType::I8,
        GgufValueType::U16,
        GgufValueType::I16,
        GgufValueType::U32,
        GgufValueType::I32,
        GgufValueType::F32,
        GgufValueType::Bool,
        GgufValueType::String,
        GgufValueType::Array,
        GgufValueType::U64,
        GgufValueType::I64,
        GgufValueType::F64,
    ];

    /// The type numbered `id` in a file.
    pub fn from_id(id: u32) -> Option<GgufValueType> {
        Self::ALL.get(usize::try_from(id).ok()?).copied()
    }

    /// The type's number in a file.
    pub fn id(self) -> u32 {
        Self::ALL.iter().position(|&t| t == self).unwrap_or(0) as u32
    }

    /// The bytes a value of this type takes at least (a string's or an
    /// array's length field).
    pub(crate) fn least_bytes(self) -> u64 {
        match self {
            GgufValueType::U8 | GgufValueType::I8 | GgufValueType::Bool => 1,
            GgufValueType::U16 | GgufValueType::I16 => 2,
            GgufValueType::U32 | GgufValueType::I32 | GgufValueType::F32 => 4,
            GgufValueType::U64 | GgufValueType::I64 | GgufValueType::F64 => 8,
            GgufValueType::String => 8,
            GgufValueType::Array => 12,
        }
    }
}

/// A GGUF metadata value.
#[derive(Debug, Clone, PartialEq)]
pub enum GgufValue {
    /// `u8`.
    U8(u8),
    /// `i8`.
    I8(i8),
    /// `u16`.
    U16(u16),
    /// `i16`.
    I16(i16),
    /// `u32`.
    U32(u32),
    /// `i32`.
    I32(i32),
    /// `f32`.
    F32(f32),
    /// A boolean.
    Bool(bool),
    /// UTF-8 text.
    String(String),
    /// Values of one type, `item` (kept for an empty array).
    Array {
        /// The elements' type.
        item: GgufValueType,
        /// The elements, each of type `item`.
        items: Vec<GgufValue>,
    },
    /// `u64`.
    U64(u64),
    /// `i64`.
    I64(i64),
    /// `f64`.
    F64(f64),
}

impl GgufValue {
    /// The value's type.
    pub fn value_type(&self) -> GgufValueType {
        match self {
            GgufValue::U8(_) => GgufValueType::U8,
            GgufValue::I8(_) => GgufValueType::I8,
            GgufValue::U16(_) => GgufValueType::U16,
            GgufValue::I16(_) => GgufValueType::I16,
            GgufValue::U32(_) => GgufValueType::U32,
            GgufValue::I32(_) => GgufValueType::I32,
            GgufValue::F32(_) => GgufValueType::F32,
            GgufValue::Bool(_) => GgufValueType::Bool,
            GgufValue::String(_) => GgufValueType::String,
            GgufValue::Array { .. } => GgufValueType::Array,
            GgufValue::U64(_) => GgufValueType::U64,
            GgufValue::I64(_) => GgufValueType::I64,
            GgufValue::F64(_) => GgufValueType::F64,
        }
    }

    /// The values its arrays hold, nested arrays' too.
    pub(crate) fn array_values(&self) -> u64 {
        match self {
            GgufValue::Array { items, .. } => {
                items.len() as u64 + items.iter().map(GgufValue::array_values).sum::<u64>()
            }
            _ => 0,
        }
    }

    /// The value as an unsigned integer, when it is a non-negative integer
    /// of any width.
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            GgufValue::U8(v) => Some(v.into()),
            GgufValue::U16(v) => Some(v.into()),
            GgufValue::U32(v) => Some(v.into()),
            GgufValue::U64(v) => Some(v),
            GgufValue::I8(v) => u64::try_from(v).ok(),
            GgufValue::I16(v) => u64::try_from(v).ok(),
            GgufValue::I32(v) => u64::try_from(v).ok(),
            GgufValue::I64(v) => u64::try_from(v).ok(),
            _ => None,
        }
    }

    /// The value as an `f64`, when it is a float or an integer.
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            GgufValue::F32(v) => Some(v.into()),
            GgufValue::F64(v) => Some(v),
            GgufValue::I8(v) => Some(v.into()),
            GgufValue::I16(v) => Some(v.into()),
            GgufValue::I32(v) => Some(v.into()),
            GgufValue::I64(v) => Some(v as f64),
            _ => self.as_u64().map(|v| v as f64),
        }
    }

    /// The text, when the value is a string.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            GgufValue::String(s) => Some(s),
            _ => None,
        }
    }

    /// The elements, when the value is an array.
    pub fn as_array(&self) -> Option<&[GgufValue]> {
        match self {
            GgufValue::Array { items, .. } => Some(items),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn value_type_numbers_round_trip() {
        for id in 0..64 {
            if let Some(v) = GgufValueType::from_id(id) {
                assert_eq!(v.id(), id);
            }
        }
        assert_eq!(GgufValueType::from_id(13), None);
    }
}
