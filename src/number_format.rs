//! Numbers as NumPy prints them (`numpy.array2string` with its defaults:
//! precision 8, `floatmode='maxprec'`, `sign='-'`, and the scalar `str`):
//! pure functions over plain values, no tensor types.
//!
//! NumPy 2.4's Dragon4 rules, per dtype:
//! - the *shortest* digits that read back to the same value in its own dtype
//!   (an f32 0.1 prints `0.1`, not the f64 expansion); where a cut-off (8
//!   digits after the point in an array) is shorter, the exact value rounded
//!   there;
//! - *more* digits than the shortest where a scientific column is wider: the
//!   value's own digits, exactly rounded (f32 9.99e-5 beside 1.2345679e8 is
//!   `9.9899997e-05`), never zeros;
//! - an array is scientific when a non-zero magnitude reaches
//!   10^min(8, digits of the dtype) (f16 1e3, f32 1e6, f64 1e8) or is below
//!   1e-4 (both bounds as values of the dtype), or the largest is over 1000
//!   times the smallest; a lone value when it is below 1e-4 or reaches 1e3,
//!   1e6 or 1e16 (f16, f32, f64; compared as f64).
//!
//! NumPy has no bf16; a bf16 value prints as an f32 one does (it has f32's
//! range, so f32's cut-offs), with the shortest digits that read back to
//! the same bf16 (`0.1` in bf16 prints `0.1`, not `0.10009766`).

use crate::dtype::{bf16_from_f64, f16_from_f64};

/// The float dtypes, for the shortest round-trip digits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FloatWidth {
    F16,
    BF16,
    F32,
    F64,
}

impl FloatWidth {
    /// `v` rounded to this dtype (NumPy compares an array's values with a
    /// Python float converted to the array's dtype).
    fn round(self, v: f64) -> f64 {
        match self {
            FloatWidth::F16 => f16_from_f64(v).to_f64(),
            FloatWidth::BF16 | FloatWidth::F32 => v as f32 as f64,
            FloatWidth::F64 => v,
        }
    }

    /// Where an array turns scientific: 10^min(8, `finfo(dtype).precision`).
    fn array_cutoff(self) -> f64 {
        match self {
            FloatWidth::F16 => 1e3,
            FloatWidth::BF16 | FloatWidth::F32 => 1e6,
            FloatWidth::F64 => 1e8,
        }
    }

    /// Where a lone value turns scientific.
    fn scalar_cutoff(self) -> f64 {
        match self {
            FloatWidth::F16 => 1e3,
            FloatWidth::BF16 | FloatWidth::F32 => 1e6,
            FloatWidth::F64 => 1e16,
        }
    }
}

/// The most digits printed after the point in an array (NumPy's
/// `precision`).
const PRECISION: usize = 8;

/// A finite value's decimal digits: sign, the digits (no leading zero unless
/// the value is zero) and the exponent of the first.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Decimal {
    negative: bool,
    digits: String,
    exp: i32,
}

impl Decimal {
    /// Digits after the point in positional notation.
    fn frac_len(&self) -> i32 {
        self.digits.len() as i32 - 1 - self.exp
    }
}

/// Splits Rust's `{:e}` form (`-1.2345e-7`) into a [`Decimal`]; `trim`
/// drops trailing zeros.
fn parse_sci(s: &str, trim: bool) -> Decimal {
    let (negative, s) = match s.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, s),
    };
    let (mantissa, exp) = s.split_once('e').unwrap_or((s, "0"));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let digits = if trim {
        digits.trim_end_matches('0')
    } else {
        &digits
    };
    let digits = if digits.is_empty() { "0" } else { digits };
    Decimal {
        negative,
        digits: digits.to_string(),
        exp: exp.parse().unwrap_or(0),
    }
}

/// The shortest decimal that reads back to `v` in `width`.
fn shortest(v: f64, width: FloatWidth) -> Decimal {
    match width {
        FloatWidth::F64 => tie_to_even(parse_sci(&format!("{v:e}"), true), v, |x| x.to_bits()),
        FloatWidth::F32 => tie_to_even(parse_sci(&format!("{:e}", v as f32), true), v, |x| {
            u64::from((x as f32).to_bits())
        }),
        // f16 needs at most 5 significant digits, bf16 at most 4.
        FloatWidth::F16 => shortest_of(v, 5, |x| f16_from_f64(x).to_bits()),
        FloatWidth::BF16 => shortest_of(v, 4, |x| bf16_from_f64(x).to_bits()),
    }
}

/// `d`, the shortest digits of `v`, or its neighbour of the same length
/// where that reads back too (`bits` rounds to the width) and `v` lies
/// exactly halfway between them: then the even one, as NumPy's Dragon4
/// and Python's `repr` pick it (Rust's shortest form takes the upper:
/// f32 44601.5625 printed 44601.563, NumPy's 44601.562).
fn tie_to_even(d: Decimal, v: f64, bits: impl Fn(f64) -> u64) -> Decimal {
    let Ok(m) = d.digits.parse::<u64>() else {
        return d;
    };
    if m % 2 == 0 || v == 0.0 || !v.is_finite() {
        return d;
    }
    let len = d.digits.len();
    for other in [m - 1, m + 1] {
        let other_digits = other.to_string();
        if other_digits.len() != len {
            continue;
        }
        let scale = d.exp - len as i32 + 1;
        let reads_back = format!("{other}e{scale}")
            .parse::<f64>()
            .is_ok_and(|x| bits(if d.negative { -x } else { x }) == bits(v));
        if !reads_back {
            continue;
        }
        // Halfway: `v`'s exact digits are the lower one's, then 5 (an f64
        // has at most 767 significant digits, so 800 show them all).
        let lower = m.min(other).to_string();
        let exact = exact_sci(v.abs(), len + 800);
        let halfway = exact.exp == d.exp
            && exact
                .digits
                .strip_prefix(lower.as_str())
                .is_some_and(|rest| {
                    rest.strip_prefix('5')
                        .is_some_and(|zeros| zeros.bytes().all(|b| b == b'0'))
                });
        if halfway {
            return trimmed(Decimal {
                digits: other_digits,
                ..d
            });
        }
    }
    d
}

/// The shortest of `v` written with 1 to `most` significant digits that
/// reads back to the same value in a 16-bit format (`bits` rounds to it).
/// Of each length the nearest decimal is tried, then its neighbour on
/// `v`'s other side: at a power of two the values that read back reach
/// twice as far above as below, so the nearest may miss where the next
/// one up reads back (f16 0.015625: 0.01562, a tie rounded to even, does
/// not; 0.01563, NumPy's, does).
fn shortest_of(v: f64, most: usize, bits: impl Fn(f64) -> u16) -> Decimal {
    let target = bits(v);
    let reads_back = |x: f64| bits(x) == target;
    for p in 0..most {
        let s = format!("{:.p$e}", v.abs());
        let mut d = parse_sci(&s, false);
        d.negative = v.is_sign_negative();
        let written: f64 = s.parse().unwrap_or(f64::NAN);
        let signed = |x: f64| if d.negative { -x } else { x };
        if reads_back(signed(written)) {
            return trimmed(d);
        }
        let Ok(m) = d.digits.parse::<u64>() else {
            continue;
        };
        let other = if written < v.abs() {
            m + 1
        } else {
            m.saturating_sub(1)
        };
        let value = format!("{other}e{}", d.exp - p as i32).parse::<f64>();
        if other > 0 && value.is_ok_and(|x| reads_back(signed(x))) {
            let (from, to) = (d.digits.len() as i32, other.to_string().len() as i32);
            d.exp += to - from;
            d.digits = other.to_string();
            return trimmed(d);
        }
    }
    parse_sci(&format!("{v:.*e}", most - 1), true)
}

/// `d` without trailing zeros in its digits ("0" for none).
fn trimmed(mut d: Decimal) -> Decimal {
    let kept = d.digits.trim_end_matches('0').len().max(1);
    d.digits.truncate(kept);
    d
}

/// `v`'s own digits rounded to `frac` after the first (ties to even; every
/// float is exact in binary, so Rust's `{:.*e}` rounds the exact value).
fn exact_sci(v: f64, frac: usize) -> Decimal {
    parse_sci(&format!("{v:.frac$e}"), false)
}

/// The value written out with the shortest digits, at most `cutoff` after
/// the point where one is given (re-rounded from the exact value when it
/// needs more), trailing zeros dropped: `(sign + integer part, fraction)`.
fn positional(v: f64, width: FloatWidth, cutoff: Option<usize>) -> (String, String) {
    let d = shortest(v, width);
    let sign = if d.negative { "-" } else { "" };
    if let Some(cut) = cutoff.filter(|&c| d.frac_len() > c as i32) {
        let s = format!("{:.*}", cut, v.abs());
        let (int, frac) = s.split_once('.').unwrap_or((&s, ""));
        return (
            format!("{sign}{int}"),
            frac.trim_end_matches('0').to_string(),
        );
    }
    let (int, frac) = if d.exp >= 0 {
        let split = (d.exp as usize + 1).min(d.digits.len());
        // Fewer digits than the integer part: a whole number past the
        // dtype's spacing of 1, written with its own digits as NumPy's
        // positional Dragon4 writes it (f16 1032 is `1032.`), never padded
        // with zeros (bf16 1032 read `1030.`).
        let int = match split < d.exp as usize + 1 {
            true => format!("{:.0}", v.abs()),
            false => d.digits[..split].to_string(),
        };
        (int, d.digits[split..].to_string())
    } else {
        let zeros = "0".repeat((-d.exp - 1) as usize);
        ("0".to_string(), format!("{zeros}{}", d.digits))
    };
    let frac = if d.digits == "0" { String::new() } else { frac };
    (format!("{sign}{int}"), frac)
}

/// The value in scientific notation with the shortest digits, at most
/// [`PRECISION`] after the point (exactly rounded where it needs more):
/// `(sign + leading digit, fraction, exponent)`. Zero is `0`.
fn scientific(v: f64, width: FloatWidth) -> (String, String, i32) {
    let mut d = shortest(v, width);
    if d.digits.len() > PRECISION + 1 {
        d = parse_sci(&format!("{:.*e}", PRECISION, v), true);
    }
    split_sci(&d)
}

/// A [`Decimal`] as `(sign + leading digit, fraction, exponent)`.
fn split_sci(d: &Decimal) -> (String, String, i32) {
    let sign = if d.negative { "-" } else { "" };
    (
        format!("{sign}{}", &d.digits[..1]),
        d.digits[1..].to_string(),
        d.exp,
    )
}

/// The exponent as NumPy writes it: a sign and at least `digits` digits.
fn exponent(exp: i32, digits: usize) -> String {
    let sign = if exp < 0 { '-' } else { '+' };
    format!("{sign}{:0digits$}", exp.unsigned_abs())
}

/// How every element of one tensor is written so that the column lines up
/// (NumPy's `FloatingFormat`).
#[derive(Debug, Clone)]
pub(crate) struct FloatFormat {
    width: FloatWidth,
    scientific: bool,
    /// Characters before the point (sign included).
    pad_left: usize,
    /// Characters after the point (in scientific notation: the fraction,
    /// `e`, the exponent's sign and digits).
    pad_right: usize,
    /// Scientific notation: fraction digits and exponent digits.
    precision: usize,
    exp_digits: usize,
    /// A `+` before non-negative values (the imaginary parts of complex).
    plus: bool,
}

impl FloatFormat {
    /// The format for `values` of dtype `width`: scientific when a finite
    /// non-zero magnitude reaches the dtype's cut-off (f16 1e3, f32 1e6, f64
    /// 1e8) or is below 1e-4 (both as values of the dtype), or the largest
    /// is over 1000 times the smallest (the ratio taken in the dtype, as
    /// NumPy does); positional otherwise.
    pub fn new(values: &[f64], width: FloatWidth, plus: bool) -> FloatFormat {
        let finite: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
        let magnitudes = finite.iter().map(|v| v.abs()).filter(|&v| v != 0.0);
        let (min, max) = magnitudes.fold((f64::INFINITY, 0.0f64), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        });
        // NumPy takes the ratio in the dtype itself.
        let ratio = match width {
            FloatWidth::F64 => max / min,
            FloatWidth::BF16 | FloatWidth::F32 => (max as f32 / min as f32) as f64,
            FloatWidth::F16 => half::f16::from_f32(max as f32 / min as f32).to_f64(),
        };
        let scientific =
            max > 0.0 && (max >= width.array_cutoff() || min < width.round(1e-4) || ratio > 1000.0);
        let sign_len = |s: &str| usize::from(plus && !s.starts_with('-'));
        let mut f = FloatFormat {
            width,
            scientific,
            pad_left: 0,
            pad_right: 0,
            precision: 0,
            exp_digits: 0,
            plus,
        };
        if !finite.is_empty() {
            if scientific {
                let parts: Vec<_> = finite.iter().map(|&v| scientific_parts(v, width)).collect();
                f.exp_digits = parts
                    .iter()
                    .map(|(_, _, e)| exponent(*e, 2).len() - 1)
                    .max()
                    .unwrap_or(2);
                f.precision = parts.iter().map(|(_, fr, _)| fr.len()).max().unwrap_or(0);
                f.pad_left = parts
                    .iter()
                    .map(|(i, _, _)| i.len() + sign_len(i))
                    .max()
                    .unwrap_or(1);
                f.pad_right = f.exp_digits + 2 + f.precision;
            } else {
                let parts: Vec<_> = finite
                    .iter()
                    .map(|&v| positional(v, width, Some(PRECISION)))
                    .collect();
                f.pad_left = parts
                    .iter()
                    .map(|(i, _)| i.len() + sign_len(i))
                    .max()
                    .unwrap_or(1);
                f.pad_right = parts.iter().map(|(_, fr)| fr.len()).max().unwrap_or(0);
            }
        }
        if finite.len() != values.len() {
            let neg_inf = values.contains(&f64::NEG_INFINITY);
            let plus_len = usize::from(plus);
            let nan_len = 3 + plus_len;
            let inf_len = 3 + if neg_inf { 1 } else { plus_len };
            let offset = f.pad_right + 1;
            f.pad_left = f
                .pad_left
                .max(nan_len.saturating_sub(offset))
                .max(inf_len.saturating_sub(offset));
        }
        f
    }

    /// One element, padded to the common width.
    pub fn format(&self, v: f64) -> String {
        let total = self.pad_left + self.pad_right + 1;
        let plus = if self.plus { "+" } else { "" };
        if v.is_nan() {
            return format!("{:>total$}", format!("{plus}nan"));
        }
        if v.is_infinite() {
            let s = if v < 0.0 {
                "-inf".to_string()
            } else {
                format!("{plus}inf")
            };
            return format!("{s:>total$}");
        }
        let with_plus = |int: String| {
            if self.plus && !int.starts_with('-') {
                format!("+{int}")
            } else {
                int
            }
        };
        if self.scientific {
            // The shortest digits where they fill the column (a power of
            // two's shortest may round where its exact digits tie: f16
            // 2^-6 is `1.563e-02`, its exact 1.5625 rounds to 1.562);
            // where the column is wider, the value's own digits, exactly
            // rounded at its width (NumPy's Dragon4 with `min_digits`).
            let shortest = scientific_parts(v, self.width);
            let (int, frac, exp) = if v == 0.0 || shortest.1.len() >= self.precision {
                shortest
            } else {
                split_sci(&exact_sci(v, self.precision))
            };
            format!(
                "{:>pl$}.{frac:0<pr$}e{}",
                with_plus(int),
                exponent(exp, self.exp_digits),
                pl = self.pad_left,
                pr = self.precision,
            )
        } else {
            let (int, frac) = positional(v, self.width, Some(PRECISION));
            format!(
                "{:>pl$}.{frac:<pr$}",
                with_plus(int),
                pl = self.pad_left,
                pr = self.pad_right,
            )
        }
    }
}

/// [`scientific`], with a mantissa of zero written as `0`.
fn scientific_parts(v: f64, width: FloatWidth) -> (String, String, i32) {
    if v == 0.0 {
        let sign = if v.is_sign_negative() { "-" } else { "" };
        return (format!("{sign}0"), String::new(), 0);
    }
    scientific(v, width)
}

/// A lone float as NumPy prints a 0-d array or a scalar (its `str`): the
/// shortest digits, positional from 1e-4 up to the dtype's cut-off (1e3,
/// 1e6, 1e16 for f16, f32, f64) and scientific elsewhere: `3.0`, `0.1`,
/// `1e-04`, `2e+06`, `nan`, `-inf`.
pub(crate) fn format_scalar_float(v: f64, width: FloatWidth) -> String {
    if v.is_nan() {
        return "nan".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "inf" } else { "-inf" }.into();
    }
    let a = v.abs();
    if v != 0.0 && (a < 1e-4 || a >= width.scalar_cutoff()) {
        let d = shortest(v, width);
        let sign = if d.negative { "-" } else { "" };
        let frac = if d.digits.len() > 1 {
            format!(".{}", &d.digits[1..])
        } else {
            String::new()
        };
        return format!("{sign}{}{frac}e{}", &d.digits[..1], exponent(d.exp, 2));
    }
    let (int, frac) = positional(v, width, None);
    let frac = if frac.is_empty() {
        "0".to_string()
    } else {
        frac
    };
    format!("{int}.{frac}")
}

/// A complex number as NumPy prints a lone one: `(1+2j)`, `(0.5-0.25j)`,
/// and of a real part of +0 the imaginary part alone (`2j`, `-0j`).
pub(crate) fn format_complex(re: f32, im: f32) -> String {
    let part = |v: f32| -> String {
        let s = format_scalar_float(v as f64, FloatWidth::F32);
        s.strip_suffix(".0").map_or(s.clone(), str::to_string)
    };
    if re == 0.0 && re.is_sign_positive() {
        return format!("{}j", part(im));
    }
    let sign = if im.is_sign_negative() && !im.is_nan() {
        '-'
    } else {
        '+'
    };
    format!("({}{sign}{}j)", part(re), part(im.abs()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each value of `values` as a column of one tensor.
    fn column(values: &[f64], width: FloatWidth) -> Vec<String> {
        let f = FloatFormat::new(values, width, false);
        values.iter().map(|&v| f.format(v)).collect()
    }

    // The expected strings are NumPy 2.4's `str` of the same arrays.
    #[test]
    fn positional_columns_align_the_point() {
        assert_eq!(
            column(&[1.5, 2.0, 3.25, -10.0], FloatWidth::F64),
            ["  1.5 ", "  2.  ", "  3.25", "-10.  "]
        );
        assert_eq!(
            column(
                &[0.1f32 as f64, (1.0f32 / 3.0) as f64, 100.0],
                FloatWidth::F32
            ),
            ["  0.1       ", "  0.33333334", "100.        "]
        );
        let h = |v: f32| half::f16::from_f32(v).to_f64();
        assert_eq!(
            column(&[h(0.1), h(1.0 / 3.0), 100.0], FloatWidth::F16),
            ["  0.1   ", "  0.3333", "100.    "]
        );
        assert_eq!(column(&[0.0, -0.0], FloatWidth::F64), [" 0.", "-0."]);
        assert_eq!(column(&[0.00012345678], FloatWidth::F64), ["0.00012346"]);
        assert_eq!(
            column(&[f64::NAN, 1.5, f64::NEG_INFINITY], FloatWidth::F32),
            [" nan", " 1.5", "-inf"]
        );
        assert_eq!(
            column(&[f64::NAN, 1.0, f64::NEG_INFINITY], FloatWidth::F32),
            [" nan", "  1.", "-inf"]
        );
    }

    #[test]
    fn scientific_columns_pad_mantissa_and_exponent() {
        assert_eq!(
            column(&[1.5e-5f32 as f64, 1.0], FloatWidth::F32),
            ["1.5e-05", "1.0e+00"]
        );
        assert_eq!(column(&[1e-5, 1.0], FloatWidth::F64), ["1.e-05", "1.e+00"]);
        assert_eq!(
            column(&[1e-5, 3.3e-5, 1e10], FloatWidth::F64),
            ["1.0e-05", "3.3e-05", "1.0e+10"]
        );
        assert_eq!(
            column(&[123456789.0f32 as f64], FloatWidth::F32),
            ["1.2345679e+08"]
        );
        assert_eq!(column(&[1e16], FloatWidth::F64), ["1.e+16"]);
        assert_eq!(
            column(&[0.0, 1.0, 1997.0], FloatWidth::F64),
            ["0.000e+00", "1.000e+00", "1.997e+03"]
        );
    }

    // Issue 26's repros: digits past the shortest are the value's own; the
    // cut-offs follow the dtype; a lone value's 1e-4 bound is on the value.
    #[test]
    fn wider_columns_and_cutoffs_follow_numpy() {
        let f = |v: f32| v as f64;
        assert_eq!(
            column(&[f(9.99e-5), f(1.2345679e8)], FloatWidth::F32),
            ["9.9899997e-05", "1.2345679e+08"]
        );
        assert_eq!(
            column(&[f(1e-45), 1.5], FloatWidth::F32),
            ["1.4e-45", "1.5e+00"]
        );
        assert_eq!(column(&[2e6, 3e6], FloatWidth::F32), ["2.e+06", "3.e+06"]);
        assert_eq!(
            column(&[1000.0, 2000.0], FloatWidth::F16),
            ["1.e+03", "2.e+03"]
        );
        assert_eq!(column(&[f(1e-4)], FloatWidth::F32), ["0.0001"]);
        assert_eq!(format_scalar_float(2e6, FloatWidth::F32), "2e+06");
        assert_eq!(format_scalar_float(f(1e-4), FloatWidth::F32), "1e-04");
        assert_eq!(
            format_scalar_float(f(-0.0011211223), FloatWidth::F32),
            "-0.0011211223"
        );
        assert_eq!(
            format_scalar_float(1e15, FloatWidth::F64),
            "1000000000000000.0"
        );
        assert_eq!(format_scalar_float(999.0, FloatWidth::F16), "999.0");
    }

    // np.format_float_positional(np.float16(1032), unique=True) is
    // '1032.': a whole number's own digits, though `1.03e3` reads back.
    // bf16 reaches such numbers below its (f32's) cut-offs.
    #[test]
    fn whole_numbers_past_the_spacing_keep_their_digits() {
        assert_eq!(
            column(&[1024.0, 1032.0, 1040.0], FloatWidth::BF16),
            ["1024.", "1032.", "1040."]
        );
        assert_eq!(format_scalar_float(123392.0, FloatWidth::BF16), "123392.0");
        assert_eq!(column(&[258.0, 1.5], FloatWidth::BF16), ["258. ", "  1.5"]);
    }

    // bf16 has no NumPy reference: its column keeps the shortest digits
    // that read back as the same bf16, as f16's and f32's do. 2^64's exact
    // 1.8446744e19 rounds to 1.84e19 at the column's width, which reads
    // back as a different bf16 (the spacing below a power of two halves).
    #[test]
    fn a_power_of_two_keeps_its_shortest_digits_in_a_bf16_column() {
        let p = 2f64.powi(64);
        assert_eq!(
            column(&[p, 1.0], FloatWidth::BF16),
            ["1.85e+19", "1.00e+00"]
        );
        assert_eq!(bf16_from_f64(1.85e19).to_f64(), p);
        assert_ne!(bf16_from_f64(1.84e19).to_f64(), p);
    }

    #[test]
    fn lone_values_read_as_python_repr() {
        assert_eq!(format_scalar_float(3.5, FloatWidth::F32), "3.5");
        assert_eq!(format_scalar_float(3.0, FloatWidth::F32), "3.0");
        assert_eq!(format_scalar_float(0.1f32 as f64, FloatWidth::F32), "0.1");
        assert_eq!(format_scalar_float(1e-5, FloatWidth::F64), "1e-05");
        assert_eq!(format_scalar_float(1e16, FloatWidth::F64), "1e+16");
        assert_eq!(format_scalar_float(-2.5e-7, FloatWidth::F64), "-2.5e-07");
        assert_eq!(format_complex(1.0, -2.5), "(1-2.5j)");
    }
}
