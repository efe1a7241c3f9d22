//! Element types: the runtime [`DType`] tag and the compile-time [`Element`] trait.

use half::{bf16, f16};
use std::fmt;

/// The element type of a tensor, known at run time.
///
/// An op matches on the dtype once and then runs a loop or a pipeline
/// specialised for it; there is no per-element dispatch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DType {
    /// 32-bit IEEE float.
    F32,
    /// 16-bit IEEE float (`half::f16`). On the GPU it is native `f16` where the
    /// adapter has `SHADER_F16`, otherwise packed two to a `u32`; arithmetic
    /// runs in f32 and rounds once on store on every device.
    F16,
    /// bfloat16 (`half::bf16`): the top half of an f32, with f32's range and
    /// 8 significant bits. Stored two to a `u32` on the GPU on every
    /// adapter (WGSL has no bf16 type); arithmetic runs in f32 and rounds
    /// once on store (to nearest, ties to even) on every device.
    BF16,
    /// 64-bit IEEE float. CPU only: the GPU reports `UnsupportedDType`.
    F64,
    /// 32-bit signed integer (wrapping arithmetic).
    I32,
    /// 64-bit signed integer (wrapping arithmetic): NumPy's default integer
    /// and PyTorch's `long`, for indices and token ids. Every op on the
    /// CPU and the GPU. A GPU stores it as two u32 words on every adapter
    /// (`shaders/kernel/int64.wgsl` computes on them) and runs elementwise
    /// ops, copies, casts, indexing (i64 data and i64 indices), reductions
    /// and scans in kernels; it composes sorts (two stable passes over the
    /// words) and products (an m x k x n tensor of products, summed) from
    /// other kernels.
    I64,
    /// 32-bit unsigned integer (wrapping arithmetic).
    U32,
    /// 8-bit unsigned integer (wrapping arithmetic).
    U8,
    /// Boolean, one byte per element.
    Bool,
    /// Complex number of two f32 (`num_complex::Complex32`), stored
    /// interleaved (re, im) in f32 storage, so that [`Tensor::real`] and
    /// [`Tensor::imag`] are f32 views of it. Supports the ops listed on
    /// [`Tensor::real`]; others return `Error::DType`.
    ///
    /// [`Tensor::real`]: crate::Tensor::real
    /// [`Tensor::imag`]: crate::Tensor::imag
    C64,
}

impl DType {
    /// All dtypes, in declaration order.
    pub const ALL: [DType; 10] = [
        DType::F32,
        DType::F16,
        DType::BF16,
        DType::F64,
        DType::I32,
        DType::I64,
        DType::U32,
        DType::U8,
        DType::Bool,
        DType::C64,
    ];

    /// Bytes per element in host memory.
    pub fn size_in_bytes(self) -> usize {
        match self {
            DType::F64 | DType::I64 | DType::C64 => 8,
            DType::F32 | DType::I32 | DType::U32 => 4,
            DType::F16 | DType::BF16 => 2,
            DType::U8 | DType::Bool => 1,
        }
    }

    /// True for f16, bf16, f32 and f64.
    pub fn is_float(self) -> bool {
        matches!(self, DType::F16 | DType::BF16 | DType::F32 | DType::F64)
    }

    /// True for the 16-bit floats, f16 and bf16, which compute in f32.
    pub(crate) fn is_half(self) -> bool {
        matches!(self, DType::F16 | DType::BF16)
    }

    /// True for i32, i64, u32 and u8.
    pub fn is_int(self) -> bool {
        matches!(self, DType::I32 | DType::I64 | DType::U32 | DType::U8)
    }

    /// True for the real dtypes that arithmetic applies to (all but bool
    /// and c64, whose ops are listed on [`DType::C64`]).
    pub fn is_numeric(self) -> bool {
        !matches!(self, DType::Bool | DType::C64)
    }

    /// True for c64.
    pub fn is_complex(self) -> bool {
        self == DType::C64
    }

    /// The lower-case name used in messages and `Display` (`"f32"`, `"bool"` ...).
    pub fn name(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::F16 => "f16",
            DType::BF16 => "bf16",
            DType::F64 => "f64",
            DType::I32 => "i32",
            DType::I64 => "i64",
            DType::U32 => "u32",
            DType::U8 => "u8",
            DType::Bool => "bool",
            DType::C64 => "c64",
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A dtype as the backends store and compute it: every [`DType`] but c64.
/// A c64 tensor is stored as f32 pairs ([`DType::stored_as`]) and its ops
/// run on f32 views of them (`ops/complex.rs`), so no kernel, and no match
/// in a backend, ever sees c64.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum KernelType {
    F32,
    F16,
    BF16,
    F64,
    I32,
    I64,
    U32,
    U8,
    Bool,
}

impl KernelType {
    /// Every kernel type, in declaration order.
    pub const ALL: [KernelType; 9] = [
        KernelType::F32,
        KernelType::F16,
        KernelType::BF16,
        KernelType::F64,
        KernelType::I32,
        KernelType::I64,
        KernelType::U32,
        KernelType::U8,
        KernelType::Bool,
    ];

    /// `dtype` as a kernel type; `None` for c64.
    pub fn of(dtype: DType) -> Option<KernelType> {
        Some(match dtype {
            DType::F32 => KernelType::F32,
            DType::F16 => KernelType::F16,
            DType::BF16 => KernelType::BF16,
            DType::F64 => KernelType::F64,
            DType::I32 => KernelType::I32,
            DType::I64 => KernelType::I64,
            DType::U32 => KernelType::U32,
            DType::U8 => KernelType::U8,
            DType::Bool => KernelType::Bool,
            DType::C64 => return None,
        })
    }

    /// The public dtype of the same name.
    pub fn dtype(self) -> DType {
        match self {
            KernelType::F32 => DType::F32,
            KernelType::F16 => DType::F16,
            KernelType::BF16 => DType::BF16,
            KernelType::F64 => DType::F64,
            KernelType::I32 => DType::I32,
            KernelType::I64 => DType::I64,
            KernelType::U32 => DType::U32,
            KernelType::U8 => DType::U8,
            KernelType::Bool => DType::Bool,
        }
    }
}

impl fmt::Display for KernelType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.dtype().name())
    }
}

impl DType {
    /// How a tensor of this dtype is stored: the storage's element type
    /// and how many of them one element takes (c64: two f32, re and im).
    pub(crate) fn stored_as(self) -> (KernelType, usize) {
        match KernelType::of(self) {
            Some(k) => (k, 1),
            None => (KernelType::F32, 2),
        }
    }
}

mod sealed {
    // Users cannot name `Sealed`, so its crate-private type stays in the crate.
    #[allow(private_interfaces)]
    pub trait Sealed {
        /// The storage type of the element (never c64: no Rust element
        /// type is complex).
        const KERNEL_TYPE: super::KernelType;
    }
}

/// A Rust type that can be the element of a tensor: `f32`, `half::f16`,
/// `half::bf16`, `f64`, `i64`,
/// `i32`, `u32`, `u8` and `bool`. Sealed: the set is fixed by the kernels.
pub trait Element: sealed::Sealed + Copy + Send + Sync + PartialEq + fmt::Debug + 'static {
    /// The runtime tag of this type.
    const DTYPE: DType;

    /// Converts to f64 (exact for every element type but large u32/i32 in f16 ...).
    fn to_f64(self) -> f64;

    /// Converts from f64 with Rust `as` semantics (saturating, NaN to 0 for ints;
    /// non-zero is `true` for bool).
    fn from_f64(value: f64) -> Self;

    /// Converts from i64: exactly for i64, through [`Element::from_f64`]
    /// for the other types (a scalar checked against a dtype is read only
    /// as that dtype's type).
    #[doc(hidden)]
    fn from_i64(value: i64) -> Self {
        Self::from_f64(value as f64)
    }

    /// Appends the little-endian device representation of `values` to `out`.
    #[doc(hidden)]
    fn write_bytes(values: &[Self], out: &mut Vec<u8>);

    /// Decodes `count` values from their little-endian device representation.
    #[doc(hidden)]
    fn read_bytes(bytes: &[u8], count: usize) -> Vec<Self>;
}

/// `value` rounded once to a binary float format of `bits` significant bits
/// whose normal numbers start at 2^`min_exp`, to nearest with ties to even,
/// and to infinity from `overflow` on (the largest finite value plus half
/// its quantum). The result is a value of that format, as an f64; NaN and
/// the infinities pass through.
fn round_to_format(value: f64, bits: i32, min_exp: i32, overflow: f64) -> f64 {
    let a = value.abs();
    if !a.is_finite() {
        return value;
    }
    if a >= overflow {
        return f64::INFINITY.copysign(value);
    }
    // The quantum at `a`: 2^(e - bits + 1) in the binade 2^e, that of the
    // smallest normal below it. Scaling by it is exact, so one
    // round-to-even of the scaled value is the format's rounding.
    let e = if a >= f64::powi(2.0, min_exp) {
        ((a.to_bits() >> 52) & 0x7ff) as i32 - 1023
    } else {
        min_exp
    };
    let quantum = f64::powi(2.0, e - bits + 1);
    ((a / quantum).round_ties_even() * quantum).copysign(value)
}

/// `value` rounded once to the nearest f16 (ties to even), overflowing to
/// infinity from 65520 on, as NumPy's `np.float16(value)` does.
/// `half::f16::from_f64` goes through f32 where the CPU converts in hardware
/// (x86 with F16C), which rounds twice: 2049.0001 became 2048, not 2050.
pub(crate) fn f16_from_f64(value: f64) -> f16 {
    // An f16 value (or NaN, or an infinity): the conversion keeps it.
    f16::from_f64(round_to_format(value, 11, -14, 65520.0))
}

/// `value` rounded once to the nearest bf16 (ties to even), overflowing to
/// infinity from (2 - 2^-8) * 2^127 on. `half::bf16::from_f64` drops the
/// low 32 bits of the f64 first, which rounds a value just past a midpoint
/// down.
pub(crate) fn bf16_from_f64(value: f64) -> bf16 {
    let overflow = (2.0 - f64::powi(2.0, -8)) * f64::powi(2.0, 127);
    // A bf16 value (or NaN, or an infinity), so an f32 one: both
    // conversions keep it.
    bf16::from_f32(round_to_format(value, 8, -126, overflow) as f32)
}

/// `value` as bf16: rounded once (as [`bf16_from_f64`]), and a NaN keeps
/// its top half where that is a NaN (a signalling NaN stays signalling, as
/// a GPU's conversion keeps it), else is quieted.
pub(crate) fn bf16_from_f32(value: f32) -> bf16 {
    if !value.is_nan() {
        return bf16_from_f64(f64::from(value));
    }
    let top = (value.to_bits() >> 16) as u16;
    bf16::from_bits(if top & 0x7f != 0 { top } else { top | 0x40 })
}

macro_rules! pod_element {
    ($t:ty, $dtype:ident, $to:expr, $from:expr $(, $from_int:expr)?) => {
        // Users cannot name `Sealed`, so its crate-private type stays in the crate.
        #[allow(private_interfaces)]
        impl sealed::Sealed for $t {
            const KERNEL_TYPE: KernelType = KernelType::$dtype;
        }
        impl Element for $t {
            const DTYPE: DType = DType::$dtype;
            fn to_f64(self) -> f64 {
                $to(self)
            }
            fn from_f64(value: f64) -> Self {
                $from(value)
            }
            $(
                fn from_i64(value: i64) -> Self {
                    $from_int(value)
                }
            )?
            fn write_bytes(values: &[Self], out: &mut Vec<u8>) {
                out.extend_from_slice(bytemuck::cast_slice(values));
            }
            fn read_bytes(bytes: &[u8], count: usize) -> Vec<Self> {
                // One copy of the bytes into an aligned vector (element by
                // element reads cost ~20x more unoptimised); the bytes are
                // cut first, so a count past them allocates nothing.
                let bytes = &bytes[..count * std::mem::size_of::<$t>()];
                let mut out = vec![<$t as bytemuck::Zeroable>::zeroed(); count];
                bytemuck::cast_slice_mut::<$t, u8>(&mut out).copy_from_slice(bytes);
                out
            }
        }
    };
}

pod_element!(f32, F32, |x: f32| x as f64, |v: f64| v as f32);
pod_element!(f64, F64, |x: f64| x, |v: f64| v);
pod_element!(f16, F16, |x: f16| x.to_f64(), f16_from_f64);
pod_element!(bf16, BF16, |x: bf16| x.to_f64(), bf16_from_f64);
pod_element!(i32, I32, |x: i32| x as f64, |v: f64| v as i32);
pod_element!(i64, I64, |x: i64| x as f64, |v: f64| v as i64, |v: i64| v);
pod_element!(u32, U32, |x: u32| x as f64, |v: f64| v as u32);
pod_element!(u8, U8, |x: u8| x as f64, |v: f64| v as u8);

#[allow(private_interfaces)]
impl sealed::Sealed for bool {
    const KERNEL_TYPE: KernelType = KernelType::Bool;
}
impl Element for bool {
    const DTYPE: DType = DType::Bool;
    fn to_f64(self) -> f64 {
        if self { 1.0 } else { 0.0 }
    }
    fn from_f64(value: f64) -> Self {
        value != 0.0
    }
    fn write_bytes(values: &[Self], out: &mut Vec<u8>) {
        out.extend(values.iter().map(|&b| b as u8));
    }
    fn read_bytes(bytes: &[u8], count: usize) -> Vec<Self> {
        bytes[..count].iter().map(|&b| b != 0).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every f16 and every midpoint between neighbours (and a hair either
    /// side of it), against the exact rule: the nearer f16, ties to the one
    /// with an even last bit, 65520 and up to infinity.
    #[test]
    fn f64_to_f16_rounds_once() {
        assert_eq!(f16_from_f64(2049.0001).to_f64(), 2050.0);
        assert_eq!(f16_from_f64(-498.1250059734055).to_f64(), -498.25);
        assert_eq!(f16_from_f64(65519.99).to_f64(), 65504.0);
        assert_eq!(f16_from_f64(65520.0), f16::INFINITY);
        assert_eq!(f16_from_f64(-1e300), f16::NEG_INFINITY);
        assert!(f16_from_f64(f64::NAN).is_nan());
        assert!(f16_from_f64(-0.0).is_sign_negative());
        assert_eq!(f16_from_f64(f64::powi(2.0, -25)).to_f64(), 0.0);
        assert_eq!(
            f16_from_f64(f64::powi(2.0, -25) * 1.0000001).to_f64(),
            f64::powi(2.0, -24)
        );
        for bits in 0u16..0x7bff {
            let lo = f16::from_bits(bits);
            let hi = f16::from_bits(bits + 1);
            let mid = (lo.to_f64() + hi.to_f64()) / 2.0;
            let even = if bits % 2 == 0 { lo } else { hi };
            assert_eq!(f16_from_f64(lo.to_f64()), lo);
            assert_eq!(f16_from_f64(mid), even, "midpoint {mid}");
            assert_eq!(f16_from_f64(-mid), -even, "midpoint -{mid}");
            let nudge = (hi.to_f64() - lo.to_f64()) * 1e-9;
            assert_eq!(f16_from_f64(mid - nudge), lo, "below {mid}");
            assert_eq!(f16_from_f64(mid + nudge), hi, "above {mid}");
        }
    }

    /// The same exact rule for bf16, over every finite bf16 (largest
    /// finite (2 - 2^-7) * 2^127, infinity from (2 - 2^-8) * 2^127 on).
    #[test]
    fn f64_to_bf16_rounds_once() {
        // 1 + 2^-8 + 2^-40 is just past the midpoint of 1 and 1 + 2^-7:
        // dropping the low f64 word (as `bf16::from_f64` does) loses that.
        let past_midpoint = 1.0 + f64::powi(2.0, -8) + f64::powi(2.0, -40);
        assert_eq!(bf16_from_f64(past_midpoint).to_f64(), 1.0078125);
        let max = (2.0 - f64::powi(2.0, -7)) * f64::powi(2.0, 127);
        let overflow = (2.0 - f64::powi(2.0, -8)) * f64::powi(2.0, 127);
        assert_eq!(bf16_from_f64(max).to_f64(), max);
        assert_eq!(bf16_from_f64(overflow * 0.999_999_999), bf16::MAX);
        assert_eq!(bf16_from_f64(overflow), bf16::INFINITY);
        assert_eq!(bf16_from_f64(-1e300), bf16::NEG_INFINITY);
        assert!(bf16_from_f64(f64::NAN).is_nan());
        assert!(bf16_from_f64(-0.0).is_sign_negative());
        assert_eq!(bf16_from_f64(f64::powi(2.0, -134)).to_f64(), 0.0);
        for bits in 0u16..0x7f7f {
            let lo = bf16::from_bits(bits);
            let hi = bf16::from_bits(bits + 1);
            let mid = (lo.to_f64() + hi.to_f64()) / 2.0;
            let even = if bits % 2 == 0 { lo } else { hi };
            assert_eq!(bf16_from_f64(lo.to_f64()), lo);
            assert_eq!(bf16_from_f64(mid), even, "midpoint {mid}");
            assert_eq!(bf16_from_f64(-mid), -even, "midpoint -{mid}");
            let nudge = (hi.to_f64() - lo.to_f64()) * 1e-9;
            assert_eq!(bf16_from_f64(mid - nudge), lo, "below {mid}");
            assert_eq!(bf16_from_f64(mid + nudge), hi, "above {mid}");
            // f32 to bf16 (how every op rounds its f32 result) is the
            // same rule.
            assert_eq!(bf16::from_f32(mid as f32), even, "f32 midpoint {mid}");
        }
    }

    #[test]
    fn bytes_round_trip_for_every_element_type() {
        fn round_trip<T: Element>(values: &[T]) {
            let mut bytes = Vec::new();
            T::write_bytes(values, &mut bytes);
            assert_eq!(bytes.len(), values.len() * T::DTYPE.size_in_bytes());
            assert_eq!(T::read_bytes(&bytes, values.len()), values);
        }
        round_trip(&[1.5f32, -2.0]);
        round_trip(&[1.5f64, -2.0]);
        round_trip(&[f16::from_f32(1.5), f16::from_f32(-2.0)]);
        round_trip(&[bf16::from_f32(1.5), bf16::from_f32(-2.0)]);
        round_trip(&[i32::MIN, 7]);
        round_trip(&[i64::MIN, 7, i64::MAX]);
        round_trip(&[u32::MAX, 7]);
        round_trip(&[255u8, 7]);
        round_trip(&[true, false, true]);
    }

    #[test]
    fn from_f64_follows_rust_as_semantics() {
        assert_eq!(i32::from_f64(f64::NAN), 0);
        assert_eq!(u8::from_f64(300.0), 255);
        assert_eq!(u32::from_f64(-1.0), 0);
        assert!(bool::from_f64(0.5));
    }
}
