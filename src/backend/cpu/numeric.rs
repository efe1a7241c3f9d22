//! Per-dtype arithmetic with the semantics documented on the op enums
//! (`op.rs`): wrapping integers, defined integer division by zero,
//! NaN-propagating maximum/minimum, f16 and bf16 computed in f32 and
//! rounded once.

use crate::dtype::{Element, bf16_from_f64, f16_from_f64};
use half::{bf16, f16};

/// sqrt(2 / pi), the GELU tanh-approximation constant.
const SQRT_2_OVER_PI: f64 = 0.797_884_560_802_865_4;

/// Arithmetic shared by every numeric dtype.
pub(crate) trait Num: Element + PartialOrd {
    fn add(self, o: Self) -> Self;
    fn sub(self, o: Self) -> Self;
    fn mul(self, o: Self) -> Self;
    fn div(self, o: Self) -> Self;
    fn rem(self, o: Self) -> Self;
    /// Division rounded toward negative infinity (NumPy's `floor_divide`).
    fn floor_div(self, o: Self) -> Self;
    fn pow(self, o: Self) -> Self;
    fn maximum(self, o: Self) -> Self;
    fn minimum(self, o: Self) -> Self;
    fn neg(self) -> Self;
    fn abs(self) -> Self;
    fn sign(self) -> Self;
    fn relu(self) -> Self;
    fn floor(self) -> Self;
    fn ceil(self) -> Self;
    fn round(self) -> Self;
}

/// Functions defined on float dtypes only.
pub(crate) trait Float: Num {
    fn exp(self) -> Self;
    fn ln(self) -> Self;
    fn sqrt(self) -> Self;
    fn rsqrt(self) -> Self;
    fn sin(self) -> Self;
    fn cos(self) -> Self;
    fn tanh(self) -> Self;
    fn sigmoid(self) -> Self;
    /// PyTorch's GELU: `x / 2 * (1 + erf(x / sqrt(2)))`, in its order.
    fn gelu(self) -> Self;
    fn gelu_tanh(self) -> Self;
    fn erf(self) -> Self;
    /// PyTorch's SiLU: `x / (1 + e^-x)`.
    fn silu(self) -> Self;
    fn hardsigmoid(self) -> Self;
    fn hardswish(self) -> Self;
    fn recip(self) -> Self;
    /// The angle of the point (`o`, `self`): `atan2(y = self, x = o)`.
    fn atan2(self, o: Self) -> Self;
    fn tan(self) -> Self;
    fn log1p(self) -> Self;
    fn expm1(self) -> Self;
    fn log2(self) -> Self;
    fn exp2(self) -> Self;
    fn lgamma(self) -> Self;
    fn digamma(self) -> Self;
    fn erfinv(self) -> Self;
    fn erfc(self) -> Self;
    fn i0(self) -> Self;
    fn asin(self) -> Self;
    fn acos(self) -> Self;
    fn atan(self) -> Self;
    fn sinh(self) -> Self;
    fn cosh(self) -> Self;
    fn asinh(self) -> Self;
    fn acosh(self) -> Self;
    fn atanh(self) -> Self;
    fn log10(self) -> Self;
}

/// `acosh x`: `ln(1 + t + sqrt(2t + t^2))` of `t = x - 1` (exact) below
/// 2, where the standard library's `ln(x + sqrt(x^2 - 1))` loses the
/// digits of a result near 0 (780 ulps of an f32 at 1.0000002).
fn acosh_f64(x: f64) -> f64 {
    if x.is_nan() || x < 1.0 {
        return f64::NAN;
    }
    if x < 2.0 {
        let t = x - 1.0;
        return (t + (2.0 * t + t * t).sqrt()).ln_1p();
    }
    x.acosh()
}

/// Trait methods computed in f64 by `f` and rounded once to `$t`.
macro_rules! via_f64 {
    ($t:ty: $($name:ident => $f:expr),* $(,)?) => {$(
        #[inline(always)]
        fn $name(self) -> Self {
            $f(f64::from(self)) as $t
        }
    )*};
}

/// Trait methods that are the float type's own method of the same or
/// another name.
macro_rules! std_methods {
    ($t:ty: $($name:ident => $std:ident($($arg:ident)?)),* $(,)?) => {$(
        #[inline(always)]
        fn $name(self $(, $arg: Self)?) -> Self {
            <$t>::$std(self $(, $arg)?)
        }
    )*};
}

macro_rules! float_num {
    ($t:ty) => {
        impl Num for $t {
            std_methods!($t: abs => abs(), floor => floor(), ceil => ceil(),
                round => round_ties_even());
            /// C's `pow`, whose `x^0` and `1^y` are 1 for every NaN: libm
            /// gives a signaling NaN's NaN there, NumPy (and a GPU) 1.
            #[inline(always)]
            fn pow(self, o: Self) -> Self {
                if o == 0.0 || self == 1.0 {
                    1.0
                } else {
                    self.powf(o)
                }
            }
            #[inline(always)]
            fn add(self, o: Self) -> Self {
                self + o
            }
            #[inline(always)]
            fn sub(self, o: Self) -> Self {
                self - o
            }
            #[inline(always)]
            fn mul(self, o: Self) -> Self {
                self * o
            }
            #[inline(always)]
            fn div(self, o: Self) -> Self {
                self / o
            }
            #[inline(always)]
            /// NumPy's `npy_divmod`: C's fmod moved to the divisor's sign;
            /// a zero remainder is a zero of the divisor's sign.
            fn rem(self, o: Self) -> Self {
                let r = self % o;
                if r == 0.0 {
                    (0.0 as $t).copysign(o)
                } else if (r < 0.0) != (o < 0.0) {
                    r + o
                } else {
                    r
                }
            }
            /// NumPy's `npy_divmod`: the exact remainder (C's fmod) taken
            /// off first, so the quotient rounds to the right integer.
            #[inline(always)]
            fn floor_div(self, o: Self) -> Self {
                if o == 0.0 {
                    return self / o;
                }
                let m = self % o;
                let mut div = (self - m) / o;
                if m != 0.0 && ((o < 0.0) != (m < 0.0)) {
                    div -= 1.0;
                }
                if div == 0.0 {
                    return (0.0 as $t).copysign(self / o);
                }
                let f = div.floor();
                if div - f > 0.5 { f + 1.0 } else { f }
            }
            #[inline(always)]
            fn maximum(self, o: Self) -> Self {
                if self.is_nan() || o.is_nan() {
                    Self::NAN
                } else if self >= o {
                    self
                } else {
                    o
                }
            }
            #[inline(always)]
            fn minimum(self, o: Self) -> Self {
                if self.is_nan() || o.is_nan() {
                    Self::NAN
                } else if self <= o {
                    self
                } else {
                    o
                }
            }
            #[inline(always)]
            fn neg(self) -> Self {
                -self
            }
            #[inline(always)]
            fn sign(self) -> Self {
                if self > 0.0 {
                    1.0
                } else if self < 0.0 {
                    -1.0
                } else if self == 0.0 {
                    // -0 too, as NumPy's.
                    0.0
                } else {
                    self
                }
            }
            #[inline(always)]
            fn relu(self) -> Self {
                if self < 0.0 { 0.0 } else { self }
            }
        }
        impl Float for $t {
            std_methods!($t: exp => exp(), ln => ln(), sqrt => sqrt(), sin => sin(),
                cos => cos(), tanh => tanh(), tan => tan(), log1p => ln_1p(),
                expm1 => exp_m1(), log2 => log2(), exp2 => exp2(), atan2 => atan2(o));
            // In f64 and rounded once (f32's own lose up to 1.4 ulps), and
            // acosh near 1 by its stable form.
            via_f64!($t: asin => f64::asin, acos => f64::acos, atan => f64::atan,
                sinh => f64::sinh, cosh => f64::cosh, asinh => f64::asinh, acosh => acosh_f64,
                atanh => f64::atanh, log10 => f64::log10);
            #[inline(always)]
            fn rsqrt(self) -> Self {
                1.0 / <$t>::sqrt(self)
            }
            #[inline(always)]
            fn sigmoid(self) -> Self {
                Logistic::sigmoid_of(self)
            }
            #[inline(always)]
            fn gelu(self) -> Self {
                (self * 0.5) * (1.0 + Float::erf(self * std::f64::consts::FRAC_1_SQRT_2 as $t))
            }
            #[inline(always)]
            fn erf(self) -> Self {
                ErfOf::erf_of(self)
            }
            #[inline(always)]
            fn lgamma(self) -> Self {
                ErfOf::lgamma_of(self)
            }
            #[inline(always)]
            fn digamma(self) -> Self {
                super::special::digamma(self as f64) as $t
            }
            #[inline(always)]
            fn erfinv(self) -> Self {
                super::special::erfinv(self as f64) as $t
            }
            #[inline(always)]
            fn erfc(self) -> Self {
                libm::erfc(self as f64) as $t
            }
            #[inline(always)]
            fn i0(self) -> Self {
                super::special::i0(self as f64) as $t
            }
            #[inline(always)]
            fn silu(self) -> Self {
                Logistic::silu_of(self)
            }
            #[inline(always)]
            fn hardsigmoid(self) -> Self {
                // `clamp` keeps a NaN, as the GPU's NaN-propagating
                // maximum and minimum do.
                (self + 3.0).clamp(0.0, 6.0) / 6.0
            }
            #[inline(always)]
            fn hardswish(self) -> Self {
                // The product rounded before the division, as PyTorch's.
                self * (self + 3.0).clamp(0.0, 6.0) / 6.0
            }
            #[inline(always)]
            fn gelu_tanh(self) -> Self {
                // x (1 + tanh(u)) / 2 as x sigmoid(2u): the same function
                // without 1 + tanh(u)'s cancellation for negative x
                // (PyTorch's form loses 1e-5 of the value at x = -3 in
                // f32, all of it by -10), in one division (a normal
                // result never passes through a subnormal sigmoid). As
                // the GPU's.
                let inner = SQRT_2_OVER_PI as $t * (self + 0.044715 * self * self * self);
                self / (1.0 + (-2.0 * inner).exp())
            }
            #[inline(always)]
            fn recip(self) -> Self {
                1.0 / self
            }
        }
    };
}
float_num!(f32);
float_num!(f64);

impl ErfOf for f32 {
    fn erf_of(self) -> f32 {
        libm::erff(self)
    }
    // musl's lgammaf is 2.2 ulp off at 14.78: f64's, rounded once.
    fn lgamma_of(self) -> f32 {
        libm::lgamma(f64::from(self)) as f32
    }
}

impl ErfOf for f64 {
    fn erf_of(self) -> f64 {
        libm::erf(self)
    }
    fn lgamma_of(self) -> f64 {
        libm::lgamma(self)
    }
}

impl Logistic for f32 {
    #[inline(always)]
    fn sigmoid_of(self) -> f32 {
        super::exp_f32::sigmoid(self)
    }
    #[inline(always)]
    fn silu_of(self) -> f32 {
        super::exp_f32::silu(self)
    }
}

impl Logistic for f64 {
    #[inline(always)]
    fn sigmoid_of(self) -> f64 {
        1.0 / (1.0 + (-self).exp())
    }
    #[inline(always)]
    fn silu_of(self) -> f64 {
        self / (1.0 + (-self).exp())
    }
}

/// `1 / (1 + e^-x)` and `x / (1 + e^-x)`: an f32's from a branch-free
/// exponential its loops vectorise (`exp_f32.rs`), an f64's from the
/// standard library's.
trait Logistic {
    fn sigmoid_of(self) -> Self;
    fn silu_of(self) -> Self;
}

/// The error function and `ln |gamma|` of an f32 or f64, from `libm`
/// (musl's, within an ulp): the standard library has neither.
trait ErfOf {
    fn erf_of(self) -> Self;
    fn lgamma_of(self) -> Self;
}

/// f16 and bf16 arithmetic: widen to f32, compute, round once (as the GPU
/// does).
macro_rules! via_f32 {
    ($t:ty: $($name:ident($($arg:ident),*)),*) => {$(
        #[inline(always)]
        fn $name(self $(, $arg: Self)*) -> Self {
            <$t>::from_f32(<f32 as Num>::$name(self.to_f32() $(, $arg.to_f32())*))
        }
    )*};
}
macro_rules! via_f32_float {
    ($t:ty: $($name:ident),*) => {$(
        #[inline(always)]
        fn $name(self) -> Self {
            <$t>::from_f32(<f32 as Float>::$name(self.to_f32()))
        }
    )*};
}
macro_rules! half_float {
    ($t:ty) => {
        impl Num for $t {
            via_f32!($t:
                add(o),
                sub(o),
                mul(o),
                div(o),
                rem(o),
                floor_div(o),
                pow(o),
                maximum(o),
                minimum(o),
                neg(),
                abs(),
                sign(),
                relu(),
                floor(),
                ceil(),
                round()
            );
        }
        impl Float for $t {
            via_f32_float!($t:
                exp, ln, sqrt, rsqrt, sin, cos, tanh, sigmoid, gelu, gelu_tanh, erf, silu, hardsigmoid,
                hardswish, recip,
                tan, log1p, expm1, log2, exp2, lgamma, digamma, erfinv, erfc, i0,
                asin, acos, atan, sinh, cosh, asinh, acosh, atanh, log10
            );
            #[inline(always)]
            fn atan2(self, o: Self) -> Self {
                <$t>::from_f32(self.to_f32().atan2(o.to_f32()))
            }
        }
        impl Half for $t {
            #[inline(always)]
            fn widen(self) -> f32 {
                self.to_f32()
            }
            #[inline(always)]
            fn narrow(v: f32) -> Self {
                <$t>::from_f32(v)
            }
        }
    };
}
half_float!(f16);
half_float!(bf16);

/// The 16-bit floats, which compute in f32 and round once on store.
pub(crate) trait Half: Copy {
    fn widen(self) -> f32;
    fn narrow(v: f32) -> Self;
}

/// The floats a kernel computes in f32 (f32 itself, f16, bf16): read
/// widened, stored rounded once.
pub(crate) trait Widen: Copy + Send + Sync {
    fn to_f32(self) -> f32;
    fn from_f32(v: f32) -> Self;
    /// Whether the type is f32 itself.
    const IS_F32: bool = false;
    /// The values as f32 where they are f32 (read in place).
    fn as_f32s(_values: &[Self]) -> Option<&[f32]> {
        None
    }
    /// The values as f32 to write where they are f32.
    fn as_f32s_mut(_values: &mut [Self]) -> Option<&mut [f32]> {
        None
    }
}

impl Widen for f32 {
    fn to_f32(self) -> f32 {
        self
    }
    fn from_f32(v: f32) -> Self {
        v
    }
    const IS_F32: bool = true;
    fn as_f32s(values: &[f32]) -> Option<&[f32]> {
        Some(values)
    }
    fn as_f32s_mut(values: &mut [f32]) -> Option<&mut [f32]> {
        Some(values)
    }
}

macro_rules! half_widen {
    ($($t:ty),*) => {$(
        impl Widen for $t {
            fn to_f32(self) -> f32 {
                Half::widen(self)
            }
            fn from_f32(v: f32) -> Self {
                <$t as Half>::narrow(v)
            }
        }
    )*};
}
half_widen!(f16, bf16);

macro_rules! int_num {
    ($t:ty, $signed:expr) => {
        impl Num for $t {
            #[inline(always)]
            fn add(self, o: Self) -> Self {
                self.wrapping_add(o)
            }
            #[inline(always)]
            fn sub(self, o: Self) -> Self {
                self.wrapping_sub(o)
            }
            #[inline(always)]
            fn mul(self, o: Self) -> Self {
                self.wrapping_mul(o)
            }
            #[inline(always)]
            fn div(self, o: Self) -> Self {
                if o == 0 { 0 } else { self.wrapping_div(o) }
            }
            #[inline(always)]
            fn rem(self, o: Self) -> Self {
                if o == 0 {
                    return 0;
                }
                let r = self.wrapping_rem(o);
                #[allow(unused_comparisons)]
                let flip = r != 0 && ((r < 0) != (o < 0));
                if flip { r.wrapping_add(o) } else { r }
            }
            #[inline(always)]
            fn floor_div(self, o: Self) -> Self {
                if o == 0 {
                    return 0;
                }
                let (q, r) = (self.wrapping_div(o), self.wrapping_rem(o));
                #[allow(unused_comparisons)]
                let down = r != 0 && ((r < 0) != (o < 0));
                if down { q.wrapping_sub(1) } else { q }
            }
            #[inline(always)]
            fn pow(self, o: Self) -> Self {
                #[allow(unused_comparisons)]
                if o < 0 {
                    // Only 1 and -1 have integer reciprocals.
                    return match self as i64 {
                        1 => self,
                        -1 => {
                            if (o as i64) % 2 == 0 {
                                1
                            } else {
                                self
                            }
                        }
                        _ => 0,
                    };
                }
                // Square and multiply over the whole exponent (an i64
                // one may pass u32).
                let (mut base, mut e, mut acc) = (self, o as u64, 1 as $t);
                while e > 0 {
                    if e & 1 == 1 {
                        acc = acc.wrapping_mul(base);
                    }
                    base = base.wrapping_mul(base);
                    e >>= 1;
                }
                acc
            }
            #[inline(always)]
            fn maximum(self, o: Self) -> Self {
                Ord::max(self, o)
            }
            #[inline(always)]
            fn minimum(self, o: Self) -> Self {
                Ord::min(self, o)
            }
            #[inline(always)]
            fn neg(self) -> Self {
                (0 as $t).wrapping_sub(self)
            }
            #[inline(always)]
            #[allow(unused_comparisons)]
            fn abs(self) -> Self {
                if self < 0 { self.neg() } else { self }
            }
            #[inline(always)]
            #[allow(unused_comparisons)]
            fn sign(self) -> Self {
                if self > 0 {
                    1
                } else if self < 0 {
                    (0 as $t).wrapping_sub(1)
                } else {
                    0
                }
            }
            #[inline(always)]
            #[allow(unused_comparisons)]
            fn relu(self) -> Self {
                if self < 0 { 0 } else { self }
            }
            #[inline(always)]
            fn floor(self) -> Self {
                self
            }
            #[inline(always)]
            fn ceil(self) -> Self {
                self
            }
            #[inline(always)]
            fn round(self) -> Self {
                self
            }
        }
    };
}
int_num!(i32, true);
int_num!(i64, true);
int_num!(u32, false);
int_num!(u8, false);

/// A value in the widest form of its kind, to express Rust's `as` casts
/// between any two element types in one step.
#[derive(Clone, Copy)]
pub(crate) enum Wide {
    Float(f64),
    Int(i64),
}

/// Rust `as` casts between element types (bool: 0/1 from, `!= 0` to).
pub(crate) trait Cast: Element {
    fn to_wide(self) -> Wide;
    fn from_wide(w: Wide) -> Self;
}

macro_rules! cast_impl {
    ($($t:ty => $wide:ident($as:ty)),*) => {$(
        impl Cast for $t {
            #[inline(always)]
            fn to_wide(self) -> Wide {
                Wide::$wide(self as $as)
            }
            #[inline(always)]
            fn from_wide(w: Wide) -> Self {
                match w {
                    Wide::Float(v) => v as $t,
                    Wide::Int(v) => v as $t,
                }
            }
        }
    )*};
}
cast_impl!(f32 => Float(f64), f64 => Float(f64), i32 => Int(i64), i64 => Int(i64),
    u32 => Int(i64), u8 => Int(i64));

/// The 16-bit floats from the wide form: a float rounded once from f64;
/// an integer rounded once (f16) or, for bf16, through f32, as the GPU
/// (which has no wider float) and PyTorch convert it, which past 2^24 can
/// round twice.
macro_rules! half_cast {
    ($($t:ty => $from_float:expr, $from_int:expr);*) => {$(
        impl Cast for $t {
            #[inline(always)]
            fn to_wide(self) -> Wide {
                Wide::Float(self.to_f64())
            }
            #[inline(always)]
            fn from_wide(w: Wide) -> Self {
                match w {
                    Wide::Float(v) => $from_float(v),
                    Wide::Int(v) => $from_int(v),
                }
            }
        }
    )*};
}
half_cast!(
    f16 => f16_from_f64, |v: i64| f16_from_f64(v as f64);
    bf16 => bf16_from_f64, |v: i64| bf16::from_f32(v as f32)
);

impl Cast for bool {
    #[inline(always)]
    fn to_wide(self) -> Wide {
        Wide::Int(self as i64)
    }
    #[inline(always)]
    fn from_wide(w: Wide) -> Self {
        match w {
            Wide::Float(v) => v != 0.0,
            Wide::Int(v) => v != 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_semantics_are_defined() {
        assert_eq!(Num::div(7i32, 0), 0);
        assert_eq!(Num::div(i32::MIN, -1), i32::MIN);
        assert_eq!(Num::rem(-7i32, 3), 2);
        assert_eq!(Num::rem(7i32, -3), -2);
        assert_eq!(Num::rem(7u8, 0), 0);
        assert_eq!(Num::pow(2i32, -1), 0);
        assert_eq!(Num::pow(-1i32, -3), -1);
        assert_eq!(Num::add(250u8, 10), 4);
        assert_eq!(Num::neg(1u32), u32::MAX);
        assert_eq!(Num::sign(0u8), 0);
        assert_eq!(Num::floor_div(-7i32, 2), -4);
        assert_eq!(Num::floor_div(7i32, -2), -4);
        assert_eq!(Num::floor_div(-8i32, 2), -4);
        assert_eq!(Num::floor_div(7u8, 0), 0);
        assert_eq!(Num::floor_div(i32::MIN, -1), i32::MIN);
        assert_eq!(
            Num::pow(3i64, 1 << 33),
            3i64.wrapping_pow(1 << 31).wrapping_pow(4)
        );
        assert_eq!(Num::pow(2i64, 64), 0);
        assert_eq!(Num::add(i64::MAX, 1), i64::MIN);
    }

    #[test]
    fn float_semantics_follow_numpy() {
        assert_eq!(Num::rem(-7.0f32, 3.0), 2.0);
        assert!(Num::maximum(f32::NAN, 1.0).is_nan());
        assert_eq!(Num::round(2.5f32), 2.0);
        assert_eq!(Num::floor_div(-7.0f32, 2.0), -4.0);
        assert_eq!(Num::floor_div(1.0f32, 0.1), 9.0); // NumPy: 1 // 0.1 == 9
        assert_eq!(Num::floor_div(-1.0f32, f32::INFINITY), -1.0);
        assert!(Num::floor_div(0.0f32, -3.0).is_sign_negative());
        assert_eq!(Num::floor_div(1.0f32, -0.0), f32::NEG_INFINITY);
        assert_eq!(Num::pow(-2.0f32, 3.0), -8.0);
        assert_eq!(
            <f16 as Num>::add(f16::from_f32(1.0), f16::from_f32(2.0)).to_f32(),
            3.0
        );
    }

    #[test]
    fn casts_follow_rust_as() {
        assert_eq!(u32::from_wide((-1i32).to_wide()), u32::MAX);
        assert_eq!(u8::from_wide(300i32.to_wide()), 44);
        assert_eq!(i32::from_wide(f32::NAN.to_wide()), 0);
        assert_eq!(u8::from_wide((-3.5f32).to_wide()), 0);
        assert!(bool::from_wide(0.5f32.to_wide()));
        assert_eq!(f32::from_wide(true.to_wide()), 1.0);
    }
}
