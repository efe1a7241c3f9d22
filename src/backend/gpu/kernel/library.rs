//! math.wgsl trimmed to what a kernel uses. Every kernel embeds the whole
//! library (see `prelude`), and parsing is most of a kernel's first
//! compile: a fused program compiles once per distinct program, so the
//! items it never names are dropped before its shader module is made.

use super::prelude::MATH_WGSL;
use std::collections::HashMap;
use std::ops::Range;
use std::sync::OnceLock;

/// A library of top-level `fn`s, `const`s and `struct`s (each with the
/// comment lines right above it), and the items each one names.
struct Library {
    text: &'static str,
    spans: Vec<Range<usize>>,
    uses: Vec<Vec<usize>>,
    index: HashMap<&'static str, usize>,
}

/// `source` with its copy of math.wgsl cut to the items the rest of the
/// source names, directly or through other items (in library order);
/// `source` as it is when it holds no copy.
pub(crate) fn with_used_math(source: &str) -> String {
    let Some(start) = source.find(MATH_WGSL) else {
        return source.to_string();
    };
    let (before, after) = (&source[..start], &source[start + MATH_WGSL.len()..]);
    [before, &math().subset(&[before, after]), after].concat()
}

fn math() -> &'static Library {
    static MATH: OnceLock<Library> = OnceLock::new();
    MATH.get_or_init(|| Library::new(MATH_WGSL))
}

impl Library {
    fn new(text: &'static str) -> Library {
        let (mut starts, mut names) = (Vec::new(), Vec::new());
        let (mut at, mut comment_from) = (0, None);
        for line in text.split_inclusive('\n') {
            match ["fn ", "const ", "struct "]
                .iter()
                .find_map(|k| line.strip_prefix(k))
            {
                Some(rest) => {
                    starts.push(comment_from.take().unwrap_or(at));
                    names.push(identifiers(rest).next().unwrap_or_default());
                }
                None if line.starts_with("//") => {
                    comment_from.get_or_insert(at);
                }
                None => comment_from = None,
            }
            at += line.len();
        }
        let index: HashMap<&'static str, usize> =
            names.iter().enumerate().map(|(k, &n)| (n, k)).collect();
        let spans: Vec<Range<usize>> = (0..starts.len())
            .map(|k| starts[k]..starts.get(k + 1).copied().unwrap_or(text.len()))
            .collect();
        let uses = spans
            .iter()
            .enumerate()
            .map(|(k, span)| {
                let mut uses: Vec<usize> = identifiers(&text[span.clone()])
                    .filter_map(|id| index.get(id).copied())
                    .filter(|&u| u != k)
                    .collect();
                uses.sort_unstable();
                uses.dedup();
                uses
            })
            .collect();
        Library {
            text,
            spans,
            uses,
            index,
        }
    }

    /// The items `roots` name, and the items those name, in library order.
    fn subset(&self, roots: &[&str]) -> String {
        let mut used = vec![false; self.spans.len()];
        let mut todo: Vec<usize> = roots
            .iter()
            .flat_map(|r| identifiers(r))
            .filter_map(|id| self.index.get(id).copied())
            .collect();
        while let Some(k) = todo.pop() {
            if !std::mem::replace(&mut used[k], true) {
                todo.extend(&self.uses[k]);
            }
        }
        (0..self.spans.len())
            .filter(|&k| used[k])
            .map(|k| &self.text[self.spans[k].clone()])
            .collect()
    }
}

/// The identifiers in `text`, in order (keywords and numbers' suffixes
/// included; the caller looks them up).
fn identifiers(text: &str) -> impl Iterator<Item = &str> {
    let bytes = text.as_bytes();
    let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let mut at = 0;
    std::iter::from_fn(move || {
        while at < bytes.len() && !(bytes[at].is_ascii_alphabetic() || bytes[at] == b'_') {
            // Skip a number whole, so `1e5` names no `e5`.
            if bytes[at].is_ascii_digit() {
                while at < bytes.len() && word(bytes[at]) {
                    at += 1;
                }
            } else {
                at += 1;
            }
        }
        let start = at;
        while at < bytes.len() && word(bytes[at]) {
            at += 1;
        }
        (start < at).then(|| &text[start..at])
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::gpu::kernel::prelude::tests::validate;

    /// Every item of math.wgsl, named alone, comes with all it needs: the
    /// trimmed library validates, and holds less than the whole.
    #[test]
    fn each_item_comes_with_what_it_names() {
        let math = math();
        assert!(math.spans.len() > 40, "{}", math.spans.len());
        for name in math.index.keys() {
            let kept = math.subset(&[name]);
            assert!(kept.len() < MATH_WGSL.len(), "{name}");
            validate(&kept, name);
        }
        // The library's items, all named, are the library (bar its header).
        let all: Vec<&str> = math.index.keys().copied().collect();
        assert!(MATH_WGSL.ends_with(&math.subset(&all)));
    }

    #[test]
    fn a_kernel_keeps_only_what_it_calls() {
        let kernel =
            format!("{MATH_WGSL}\nfn k(a: f32, b: f32) -> f32 {{ return pow_f32(a, b, 0u); }}");
        let trimmed = with_used_math(&kernel);
        validate(&trimmed, "pow_f32 kernel");
        assert!(trimmed.contains("fn pow_f32(") && !trimmed.contains("fn gelu_f32("));
        assert!(trimmed.len() < kernel.len() / 2);
        // Identifiers in numbers are not names: `1e5` is no `e5`.
        assert_eq!(
            identifiers("a1 + 1e5 * b_2").collect::<Vec<_>>(),
            ["a1", "b_2"]
        );
        assert_eq!(with_used_math("fn f() {}"), "fn f() {}");
    }
}
