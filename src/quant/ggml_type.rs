//! ggml's element types: each one's number in a file, its name, and its
//! block (elements a block holds, bytes a block takes), as llama.cpp's
//! `ggml.h` and gguf-py's `constants.py` give them.

/// Declares [`GgmlType`]: each variant's number in the file, its name as
/// gguf-py prints it, and its block (elements a block holds, bytes a block
/// takes).
macro_rules! ggml_types {
    ($($variant:ident = $id:literal, $name:literal, $block:literal, $bytes:literal;)*) => {
        /// The element type of a GGUF tensor: a plain type (`F32`, `F16`,
        /// `BF16`, `F64`, `I8` to `I64`) or a quantized one, stored in
        /// blocks of `block_size` elements taking `block_bytes` bytes.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[allow(non_camel_case_types)]
        #[non_exhaustive]
        pub enum GgmlType {
            $(
                #[doc = concat!("`", $name, "`: blocks of ", $block, " element(s) in ", $bytes, " byte(s).")]
                $variant,
            )*
        }

        impl GgmlType {
            /// The type numbered `id` in a file, if ggml has one.
            pub fn from_id(id: u32) -> Option<GgmlType> {
                match id {
                    $($id => Some(GgmlType::$variant),)*
                    _ => None,
                }
            }

            /// The type's number in a file.
            pub fn id(self) -> u32 {
                match self {
                    $(GgmlType::$variant => $id,)*
                }
            }

            /// The type's name, as gguf-py prints it (`"Q4_K"`).
            pub fn name(self) -> &'static str {
                match self {
                    $(GgmlType::$variant => $name,)*
                }
            }

            /// Elements one block holds (1 for a plain type).
            pub fn block_size(self) -> u64 {
                match self {
                    $(GgmlType::$variant => $block,)*
                }
            }

            /// Bytes one block takes.
            pub fn block_bytes(self) -> u64 {
                match self {
                    $(GgmlType::$variant => $bytes,)*
                }
            }
        }
    };
}

ggml_types! {
    F32 = 0, "F32", 1, 4;
    F16 = 1, "F16", 1, 2;
    Q4_0 = 2, "Q4_0", 32, 18;
    Q4_1 = 3, "Q4_1", 32, 20;
    Q5_0 = 6, "Q5_0", 32, 22;
    Q5_1 = 7, "Q5_1", 32, 24;
    Q8_0 = 8, "Q8_0", 32, 34;
    // ggml's block_q8_1 is two halves and 32 bytes (its static_assert);
    // gguf-py's table says 40.
    Q8_1 = 9, "Q8_1", 32, 36;
    Q2_K = 10, "Q2_K", 256, 84;
    Q3_K = 11, "Q3_K", 256, 110;
    Q4_K = 12, "Q4_K", 256, 144;
    Q5_K = 13, "Q5_K", 256, 176;
    Q6_K = 14, "Q6_K", 256, 210;
    Q8_K = 15, "Q8_K", 256, 292;
    IQ2_XXS = 16, "IQ2_XXS", 256, 66;
    IQ2_XS = 17, "IQ2_XS", 256, 74;
    IQ3_XXS = 18, "IQ3_XXS", 256, 98;
    IQ1_S = 19, "IQ1_S", 256, 50;
    IQ4_NL = 20, "IQ4_NL", 32, 18;
    IQ3_S = 21, "IQ3_S", 256, 110;
    IQ2_S = 22, "IQ2_S", 256, 82;
    IQ4_XS = 23, "IQ4_XS", 256, 136;
    I8 = 24, "I8", 1, 1;
    I16 = 25, "I16", 1, 2;
    I32 = 26, "I32", 1, 4;
    I64 = 27, "I64", 1, 8;
    F64 = 28, "F64", 1, 8;
    IQ1_M = 29, "IQ1_M", 256, 56;
    BF16 = 30, "BF16", 1, 2;
    TQ1_0 = 34, "TQ1_0", 256, 54;
    TQ2_0 = 35, "TQ2_0", 256, 66;
    MXFP4 = 39, "MXFP4", 32, 17;
    NVFP4 = 40, "NVFP4", 64, 36;
    Q1_0 = 41, "Q1_0", 128, 18;
}

impl GgmlType {
    /// True for a type stored in blocks of several elements.
    pub fn is_quantized(self) -> bool {
        self.block_size() > 1
    }

    /// Bytes `count` elements take (`None` when `count` is not a whole
    /// number of blocks or the bytes overflow).
    pub fn bytes_for(self, count: u64) -> Option<u64> {
        if !count.is_multiple_of(self.block_size()) {
            return None;
        }
        (count / self.block_size()).checked_mul(self.block_bytes())
    }
}

impl std::fmt::Display for GgmlType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_numbers_round_trip() {
        for id in 0..64 {
            if let Some(t) = GgmlType::from_id(id) {
                assert_eq!(t.id(), id);
                assert!(t.block_bytes() > 0 && t.block_size() > 0, "{t}");
            }
        }
        assert_eq!(GgmlType::from_id(4), None, "Q4_2 was removed");
        assert_eq!(GgmlType::Q4_K.bytes_for(512), Some(288));
        assert_eq!(GgmlType::Q4_K.bytes_for(100), None);
        assert_eq!(GgmlType::F32.bytes_for(u64::MAX), None);
        assert!(!GgmlType::BF16.is_quantized() && GgmlType::Q8_0.is_quantized());
    }
}
