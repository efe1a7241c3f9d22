//! Numbers as NumPy prints them, for tensor and scalar `Display` (pure
//! functions, no tensor types).

/// A float as NumPy prints it: `1.`, `0.5`, `nan`, `-inf`.
pub(crate) fn format_float(v: f64) -> String {
    if v.is_finite() && v.fract() == 0.0 && v.abs() < 1e16 {
        format!("{v:.0}.")
    } else if v.is_nan() {
        "nan".into()
    } else if v.is_infinite() {
        if v > 0.0 { "inf".into() } else { "-inf".into() }
    } else {
        format!("{v}")
    }
}

/// A complex number as NumPy prints it: `1.+2.j`, `0.5-0.25j`.
pub(crate) fn format_complex(re: f32, im: f32) -> String {
    let sign = if im.is_sign_negative() && !im.is_nan() {
        '-'
    } else {
        '+'
    };
    format!(
        "{}{sign}{}j",
        format_float(re as f64),
        format_float(im.abs() as f64)
    )
}
