//! The bitwise ops and shifts of the integer types, as NumPy's and
//! PyTorch's: a shift by a negative amount or by the type's width or more
//! gives 0, and `>>` of a negative value by such an amount -1 (the sign
//! shifted all the way in); `>>` of a signed type is arithmetic.

/// Bitwise functions of an integer element type.
pub(crate) trait Bits: Copy {
    fn bit_and(self, o: Self) -> Self;
    fn bit_or(self, o: Self) -> Self;
    fn bit_xor(self, o: Self) -> Self;
    fn bit_not(self) -> Self;
    /// `self << o`, 0 where `o` is negative or `o >= BITS`.
    fn shl(self, o: Self) -> Self;
    /// `self >> o`, the sign filled in where `o` is negative or
    /// `o >= BITS`.
    fn shr(self, o: Self) -> Self;
}

macro_rules! int_bits {
    ($($t:ty),*) => {$(
        impl Bits for $t {
            #[inline(always)]
            fn bit_and(self, o: Self) -> Self {
                self & o
            }
            #[inline(always)]
            fn bit_or(self, o: Self) -> Self {
                self | o
            }
            #[inline(always)]
            fn bit_xor(self, o: Self) -> Self {
                self ^ o
            }
            #[inline(always)]
            fn bit_not(self) -> Self {
                !self
            }
            #[inline(always)]
            fn shl(self, o: Self) -> Self {
                // A negative amount reads as a huge unsigned one (NumPy
                // casts it so), past every width.
                match u32::try_from(o) {
                    Ok(n) if n < <$t>::BITS => self << n,
                    _ => 0,
                }
            }
            #[inline(always)]
            fn shr(self, o: Self) -> Self {
                match u32::try_from(o) {
                    Ok(n) if n < <$t>::BITS => self >> n,
                    // -1 or 0 for a signed type, 0 for an unsigned one.
                    _ => (self >> (<$t>::BITS - 1)) >> 1,
                }
            }
        }
    )*};
}
int_bits!(i32, i64, u32, u8);

#[cfg(test)]
mod tests {
    use super::Bits;

    #[test]
    fn shifts_past_the_width_or_negative_give_zero_or_the_sign() {
        assert_eq!(1i32.shl(31), i32::MIN);
        assert_eq!(1i32.shl(32), 0);
        assert_eq!(1i32.shl(-1), 0);
        assert_eq!((-8i32).shr(2), -2);
        assert_eq!((-8i32).shr(32), -1);
        assert_eq!((-8i32).shr(-3), -1);
        assert_eq!(8i32.shr(40), 0);
        assert_eq!(0x80u8.shr(7), 1);
        assert_eq!(0x80u8.shr(8), 0);
        assert_eq!(3u8.shl(7), 0x80);
        assert_eq!(1u32.shl(32), 0);
        assert_eq!(u32::MAX.shr(31), 1);
        assert_eq!(1i64.shl(63), i64::MIN);
        assert_eq!((-1i64).shr(64), -1);
        assert_eq!(5u8.bit_not(), 250);
    }
}
