//! The Stockham passes of an FFT kernel as WGSL: each thread reads its
//! butterflies' inputs from workgroup memory into registers, the
//! workgroup waits, and each thread twiddles them, transforms them in
//! registers (straight-line code, constant roots) and writes the outputs
//! back to the one buffer, in the order that leaves the result in natural
//! order after the last pass.

use std::f64::consts::PI;
use std::fmt::Write;

/// The pass functions of a transform of `n` points with `radices`, run by
/// `lanes` threads per line, and the calls running them in order (each
/// followed by a barrier).
pub(super) fn passes(n: usize, radices: &[usize], lanes: usize) -> (String, String) {
    let (mut stages, mut run) = (String::new(), String::new());
    let mut span = 1;
    for (s, &r) in radices.iter().enumerate() {
        let _ = write!(
            stages,
            "// Pass {s}: radix {r} over sub-transforms of {span}.\n\
             fn pass{s}(base: u32, lane: u32) {{\n{}}}\n\n",
            pass(n, r, span, lanes)
        );
        let _ = writeln!(run, "    pass{s}(base, lane);\n    workgroupBarrier();");
        span *= r;
    }
    (stages, run)
}

/// The body of one pass: radix `r` butterflies over sub-transforms of
/// `span` points. Butterfly `j` (of `n / r`) reads element `j + i n / r`
/// of the line at `base`, twiddles input `i` by `w^(i k n / (span r))`
/// with `k = j % span`, and writes output `q` to element `(j / span) span
/// r + k + q span` (element `e` in slot `base + slot(e)`).
/// A thread takes butterflies `lane`, `lane + lanes`, ...; all its reads
/// come before the barrier, all its writes after.
fn pass(n: usize, r: usize, span: usize, lanes: usize) -> String {
    let butterflies = n / r;
    let rounds = butterflies.div_ceil(lanes);
    let guarded = !butterflies.is_multiple_of(lanes);
    let step = n / (span * r);
    let mut body = String::new();
    for c in 0..rounds {
        for i in 0..r {
            let _ = writeln!(body, "    var v{c}_{i}: vec2<f32>;");
        }
    }
    let each = |body: &mut String, c: usize, inner: &str| {
        let _ = writeln!(body, "    {{\n        let j = lane + {}u;", c * lanes);
        if guarded {
            let _ = writeln!(
                body,
                "        if (j < {butterflies}u) {{\n{inner}        }}"
            );
        } else {
            body.push_str(inner);
        }
        body.push_str("    }\n");
    };
    for c in 0..rounds {
        let mut reads = String::new();
        for i in 0..r {
            let _ = writeln!(
                reads,
                "        v{c}_{i} = buf[base + slot(j + {}u)];",
                i * butterflies
            );
        }
        each(&mut body, c, &reads);
    }
    body.push_str("    workgroupBarrier();\n");
    for c in 0..rounds {
        let mut inner = String::new();
        let inputs: Vec<String> = (0..r).map(|i| format!("v{c}_{i}")).collect();
        if span > 1 {
            let _ = writeln!(inner, "        let k = j % {span}u;");
            for (i, v) in inputs.iter().enumerate().skip(1) {
                let _ = writeln!(inner, "        {v} = cmul({v}, w({i}u * k * {step}u));");
            }
            let _ = writeln!(inner, "        let o = (j / {span}u) * {}u + k;", span * r);
        } else {
            let _ = writeln!(inner, "        let o = j * {r}u;");
        }
        let outputs = dft(&mut inner, &inputs);
        for (q, y) in outputs.iter().enumerate() {
            let _ = writeln!(inner, "        buf[base + slot(o + {}u)] = {y};", q * span);
        }
        each(&mut body, c, &inner);
    }
    body
}

/// Appends straight-line WGSL computing the DFT of the values named
/// `inputs` (`y_q = sum_i x_i w^(i q)`, `w = exp(-+2 pi i / r)`, the sign
/// by `CONJ`) and returns the names or expressions of its outputs: radix-2
/// decimation in time for a power of two, the direct sum otherwise.
pub(super) fn dft(code: &mut String, inputs: &[String]) -> Vec<String> {
    let r = inputs.len();
    if r.is_power_of_two() {
        dft_pow2(code, "t", inputs)
    } else {
        (0..r)
            .map(|q| {
                let terms: Vec<String> = (0..r)
                    .map(|i| rotated(&inputs[i], (i * q) % r, r))
                    .collect();
                let name = format!("y{q}");
                let _ = writeln!(code, "        let {name} = {};", terms.join(" + "));
                name
            })
            .collect()
    }
}

/// The DFT of a power-of-two count of values: the transforms of the even
/// and odd ones, then `y_q = e_q + w^q o_q` and `y_{q + r/2} = e_q - w^q
/// o_q`. Names start with `tag`, unique within one butterfly.
fn dft_pow2(code: &mut String, tag: &str, inputs: &[String]) -> Vec<String> {
    let r = inputs.len();
    if r == 1 {
        return inputs.to_vec();
    }
    let evens: Vec<String> = inputs.iter().step_by(2).cloned().collect();
    let odds: Vec<String> = inputs.iter().skip(1).step_by(2).cloned().collect();
    let e = dft_pow2(code, &format!("{tag}e"), &evens);
    let o = dft_pow2(code, &format!("{tag}o"), &odds);
    let half = r / 2;
    let mut out = vec![String::new(); r];
    for q in 0..half {
        let t = format!("{tag}w{q}");
        let _ = writeln!(code, "        let {t} = {};", rotated(&o[q], q, r));
        let (lo, hi) = (format!("{tag}_{q}"), format!("{tag}_{}", q + half));
        let _ = writeln!(code, "        let {lo} = {} + {t};", e[q]);
        let _ = writeln!(code, "        let {hi} = {} - {t};", e[q]);
        out[q] = lo;
        out[q + half] = hi;
    }
    out
}

/// `x` times `w^m`, `w = exp(-+2 pi i / r)`: exact for the quarter turns,
/// else a product by the root's f64 value rounded to f32.
fn rotated(x: &str, m: usize, r: usize) -> String {
    let m = m % r;
    if m == 0 {
        return x.to_string();
    }
    if 2 * m == r {
        return format!("(-{x})");
    }
    if 4 * m == r {
        // Times -i (forward) or i (inverse).
        return format!("(CONJ * vec2<f32>({x}.y, -{x}.x))");
    }
    if 4 * m == 3 * r {
        return format!("(CONJ * vec2<f32>(-{x}.y, {x}.x))");
    }
    let angle = -2.0 * PI * m as f64 / r as f64;
    let (s, c) = angle.sin_cos();
    format!(
        "cmul({x}, vec2<f32>({}, CONJ * {}))",
        literal(c as f32),
        literal(s as f32)
    )
}

/// An f32 as a WGSL literal that parses back to the same value.
fn literal(v: f32) -> String {
    let s = format!("{v:?}");
    if s.contains('.') || s.contains('e') {
        s
    } else {
        format!("{s}.0")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs the straight-line code of [`dft`] on `x` by reading back the
    /// expressions it wrote: a tiny evaluator for the forms it emits.
    fn evaluate(x: &[(f64, f64)], conj: f64) -> Vec<(f64, f64)> {
        let names: Vec<String> = (0..x.len()).map(|i| format!("x{i}")).collect();
        let mut code = String::new();
        let outputs = dft(&mut code, &names);
        let mut vars: std::collections::HashMap<String, (f64, f64)> =
            names.iter().cloned().zip(x.iter().copied()).collect();
        let value = |e: &str, vars: &std::collections::HashMap<String, (f64, f64)>| -> (f64, f64) {
            eval(e.trim(), vars, conj)
        };
        for line in code.lines() {
            let line = line.trim().trim_start_matches("let ").trim_end_matches(';');
            let (name, expr) = line.split_once(" = ").unwrap();
            let v = value(expr, &vars);
            vars.insert(name.to_string(), v);
        }
        outputs.iter().map(|o| value(o, &vars)).collect()
    }

    fn eval(
        e: &str,
        vars: &std::collections::HashMap<String, (f64, f64)>,
        conj: f64,
    ) -> (f64, f64) {
        // Sums and differences of terms, each a name, (-name), a quarter
        // turn or a cmul by a constant root.
        let mut total = (0.0, 0.0);
        let mut sign = 1.0;
        let mut depth = 0;
        let mut start = 0;
        let bytes: Vec<char> = e.chars().collect();
        let mut terms = Vec::new();
        for (i, &ch) in bytes.iter().enumerate() {
            match ch {
                '(' => depth += 1,
                ')' => depth -= 1,
                '+' | '-' if depth == 0 && i > 0 && bytes[i - 1] == ' ' => {
                    terms.push((sign, e[start..i].trim().to_string()));
                    sign = if ch == '+' { 1.0 } else { -1.0 };
                    start = i + 1;
                }
                _ => {}
            }
        }
        terms.push((sign, e[start..].trim().to_string()));
        for (sign, t) in terms {
            let v = term(&t, vars, conj);
            total = (total.0 + sign * v.0, total.1 + sign * v.1);
        }
        total
    }

    fn term(
        t: &str,
        vars: &std::collections::HashMap<String, (f64, f64)>,
        conj: f64,
    ) -> (f64, f64) {
        if let Some(v) = vars.get(t) {
            return *v;
        }
        if let Some(inner) = t.strip_prefix("(-").and_then(|s| s.strip_suffix(')')) {
            let v = vars[inner];
            return (-v.0, -v.1);
        }
        if let Some(inner) = t.strip_prefix("(CONJ * vec2<f32>(") {
            let name = inner.split('.').next().unwrap().trim_start_matches('-');
            let v = vars[name];
            return if inner.starts_with('-') {
                (-conj * v.1, conj * v.0)
            } else {
                (conj * v.1, -conj * v.0)
            };
        }
        let inner = t.strip_prefix("cmul(").unwrap().strip_suffix("))").unwrap();
        let (name, root) = inner.split_once(", vec2<f32>(").unwrap();
        let (c, s) = root.split_once(", CONJ * ").unwrap();
        let (c, s): (f64, f64) = (c.parse().unwrap(), conj * s.parse::<f64>().unwrap());
        let v = vars[name];
        (v.0 * c - v.1 * s, v.0 * s + v.1 * c)
    }

    #[test]
    fn the_straight_line_butterflies_are_dfts() {
        for r in [2, 3, 4, 5, 7, 8, 11, 13, 16] {
            let x: Vec<(f64, f64)> = (0..r)
                .map(|i| ((i as f64 * 0.7).sin() + 0.1, (i as f64 * 1.3).cos()))
                .collect();
            for (conj, sign) in [(1.0, -1.0), (-1.0, 1.0)] {
                let got = evaluate(&x, conj);
                for (q, y) in got.iter().enumerate() {
                    let mut want = (0.0, 0.0);
                    for (i, v) in x.iter().enumerate() {
                        let a = sign * 2.0 * PI * (i * q) as f64 / r as f64;
                        want.0 += v.0 * a.cos() - v.1 * a.sin();
                        want.1 += v.0 * a.sin() + v.1 * a.cos();
                    }
                    let err = ((y.0 - want.0).powi(2) + (y.1 - want.1).powi(2)).sqrt();
                    assert!(
                        err < 1e-6,
                        "radix {r} conj {conj} output {q}: {y:?} {want:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn literals_read_back_exactly() {
        for v in [0.0f32, 1.0, -0.5, std::f32::consts::FRAC_1_SQRT_2, 1e-8] {
            assert_eq!(literal(v).parse::<f32>().unwrap(), v);
        }
    }
}
