//! The names a custom kernel's arguments may take: WGSL identifiers that
//! the generated code around the body can still rely on; and the body's
//! braces, which must stay inside its function.

use crate::backend::is_wgsl_line_break;
use crate::error::{Error, Result};

/// WGSL's keywords and reserved words (the WGSL specification's keyword
/// summary, as naga 30 lists it): no declaration may take them.
const WGSL_WORDS: &[&str] = &[
    "alias",
    "break",
    "case",
    "const",
    "const_assert",
    "continue",
    "continuing",
    "default",
    "diagnostic",
    "discard",
    "else",
    "enable",
    "false",
    "fn",
    "for",
    "if",
    "let",
    "loop",
    "override",
    "requires",
    "return",
    "struct",
    "switch",
    "true",
    "var",
    "while",
    "NULL",
    "Self",
    "abstract",
    "active",
    "alignas",
    "alignof",
    "as",
    "asm",
    "asm_fragment",
    "async",
    "attribute",
    "auto",
    "await",
    "become",
    "cast",
    "catch",
    "class",
    "co_await",
    "co_return",
    "co_yield",
    "coherent",
    "column_major",
    "common",
    "compile",
    "compile_fragment",
    "concept",
    "const_cast",
    "consteval",
    "constexpr",
    "constinit",
    "crate",
    "debugger",
    "decltype",
    "delete",
    "demote",
    "demote_to_helper",
    "do",
    "dynamic_cast",
    "enum",
    "explicit",
    "export",
    "extends",
    "extern",
    "external",
    "fallthrough",
    "filter",
    "final",
    "finally",
    "friend",
    "from",
    "fxgroup",
    "get",
    "goto",
    "groupshared",
    "highp",
    "impl",
    "implements",
    "import",
    "inline",
    "instanceof",
    "interface",
    "layout",
    "lowp",
    "macro",
    "macro_rules",
    "match",
    "mediump",
    "meta",
    "mod",
    "module",
    "move",
    "mut",
    "mutable",
    "namespace",
    "new",
    "nil",
    "noexcept",
    "noinline",
    "nointerpolation",
    "non_coherent",
    "noncoherent",
    "noperspective",
    "null",
    "nullptr",
    "of",
    "operator",
    "package",
    "packoffset",
    "partition",
    "pass",
    "patch",
    "pixelfragment",
    "precise",
    "precision",
    "premerge",
    "priv",
    "protected",
    "pub",
    "public",
    "readonly",
    "ref",
    "regardless",
    "register",
    "reinterpret_cast",
    "require",
    "resource",
    "restrict",
    "self",
    "set",
    "shared",
    "sizeof",
    "smooth",
    "snorm",
    "static",
    "static_assert",
    "static_cast",
    "std",
    "subroutine",
    "super",
    "target",
    "template",
    "this",
    "thread_local",
    "throw",
    "trait",
    "try",
    "type",
    "typedef",
    "typeid",
    "typename",
    "typeof",
    "union",
    "unless",
    "unorm",
    "unsafe",
    "unsized",
    "use",
    "using",
    "varying",
    "virtual",
    "volatile",
    "wgsl",
    "where",
    "with",
    "writeonly",
    "yield",
];

/// Predeclared types, address spaces and functions that the generated code
/// names around the body: an argument of that name would shadow them.
const GENERATED_USES: &[&str] = &[
    "array",
    "atomic",
    "bool",
    "f16",
    "f32",
    "i32",
    "u32",
    "mat2x2",
    "mat2x3",
    "mat2x4",
    "mat3x2",
    "mat3x3",
    "mat3x4",
    "mat4x2",
    "mat4x3",
    "mat4x4",
    "ptr",
    "sampler",
    "sampler_comparison",
    "texture_1d",
    "texture_2d",
    "texture_2d_array",
    "texture_3d",
    "texture_cube",
    "texture_cube_array",
    "texture_multisampled_2d",
    "texture_storage_1d",
    "texture_storage_2d",
    "texture_storage_2d_array",
    "texture_storage_3d",
    "texture_depth_2d",
    "texture_depth_2d_array",
    "texture_depth_cube",
    "texture_depth_cube_array",
    "texture_depth_multisampled_2d",
    "texture_external",
    "vec2",
    "vec3",
    "vec4",
    "vec2f",
    "vec3f",
    "vec4f",
    "vec2h",
    "vec3h",
    "vec4h",
    "vec2i",
    "vec3i",
    "vec4i",
    "vec2u",
    "vec3u",
    "vec4u",
    "mat2x2f",
    "mat3x3f",
    "mat4x4f",
    "mat2x2h",
    "mat3x3h",
    "mat4x4h",
    "function",
    "private",
    "workgroup",
    "uniform",
    "storage",
    "read",
    "write",
    "read_write",
    "bitcast",
];

/// The names the body reads besides its arguments.
const BODY_NAMES: &[&str] = &["index", "out_coord", "out_dim"];

/// Checks that `name` can name an argument of kernel `kernel`.
///
/// # Errors
/// `Error::Argument` naming `CustomKernel::new` for a name that is not a
/// WGSL identifier, is a keyword, reserved word or type, is one of the
/// body's own names, or starts with `__` or `wt_` (webtensor's).
pub(super) fn check_name(kernel: &str, name: &str) -> Result<()> {
    let mut chars = name.chars();
    let ident = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    let taken = name == "_"
        || name.starts_with("__")
        || name.starts_with("wt_")
        || WGSL_WORDS.contains(&name)
        || GENERATED_USES.contains(&name)
        || BODY_NAMES.contains(&name);
    if !ident || taken {
        return Err(Error::argument(
            "CustomKernel::new",
            format!(
                "kernel {kernel:?}: {name:?} is not a name a kernel argument can take (a WGSL identifier that is not a keyword, reserved word or type, `index`, `out_coord`, `out_dim`, or a name starting with `wt_`)"
            ),
        ));
    }
    Ok(())
}

/// Checks that the braces of kernel `kernel`'s `body` pair up outside its
/// comments (`//` to the line's end, `/* */` nested; WGSL has no string
/// literals): a body that closed its function could declare functions of
/// its own, outside the shadowing of webtensor's buffers. A line ends at
/// any of WGSL's line breaks (`\r`, form feed, U+2028 ...), as naga ends
/// a comment: past a `\r` taken for part of a comment, a body's code
/// went unchecked.
///
/// # Errors
/// `Error::Argument` naming `op` for a `}` that closes nothing the body
/// opened, or a `{` it leaves open.
pub(super) fn check_braces(op: &'static str, kernel: &str, body: &str) -> Result<()> {
    let (mut depth, mut comments) = (0usize, 0usize);
    let mut chars = body.chars().peekable();
    while let Some(c) = chars.next() {
        let next = chars.peek().copied();
        match (c, next) {
            ('/', Some('/')) if comments == 0 => {
                chars.find(|&c| is_wgsl_line_break(c));
            }
            ('/', Some('*')) => {
                chars.next();
                comments += 1;
            }
            ('*', Some('/')) if comments > 0 => {
                chars.next();
                comments -= 1;
            }
            _ if comments > 0 => {}
            ('{', _) => depth += 1,
            ('}', _) if depth == 0 => {
                return Err(Error::argument(
                    op,
                    format!("kernel {kernel:?}: a `}}` in the body closes its function"),
                ));
            }
            ('}', _) => depth -= 1,
            _ => {}
        }
    }
    if depth > 0 {
        return Err(Error::argument(
            op,
            format!("kernel {kernel:?}: the body leaves {depth} `{{` open"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserved_and_generated_names_are_refused() {
        for bad in [
            "_", "self", "type", "mod", "f32", "vec4", "index", "out_dim", "wt_x", "__x", "1x",
            "a-b", "", "bitcast",
        ] {
            assert!(check_name("k", bad).is_err(), "{bad}");
        }
        for good in [
            "x",
            "out",
            "current_index",
            "params",
            "x_buf",
            "main",
            "_x",
            "sin",
        ] {
            assert!(check_name("k", good).is_ok(), "{good}");
        }
    }
}
