//! How each dtype lives in a storage buffer, and the WGSL every kernel
//! family declares and accesses its buffers with.
//!
//! f32, i32 and u32 are plain arrays; f16 is `array<f16>` with SHADER_F16
//! and otherwise packed two to a `u32`; bf16 (which WGSL has no type for)
//! is packed two to a `u32` on every adapter; u8 and bool are packed four
//! to a `u32`. Packed destinations are written with atomic and/or on the
//! element's bits, so neighbouring elements written by other threads are
//! safe for any layout. Values are handled in the compute type
//! ([`ScalarType::of`]): f32 for f16, u32 for u8 (masked on store, which
//! gives wrapping).

use super::wgsl_type::ScalarType;
use crate::dtype::KernelType;

/// How one dtype is stored in a buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StorageMode {
    /// One element per array entry of this WGSL type.
    Plain(ScalarType),
    /// Native f16 array.
    F16,
    /// f16 packed two to a u32.
    PackedF16,
    /// bf16 packed two to a u32 (each the top half of an f32).
    PackedBF16,
    /// u8 or bool packed four to a u32.
    Bytes,
    /// i64 as two u32 words, one `vec2<u32>` entry each.
    Words64,
}

pub(crate) fn storage_mode(dtype: KernelType, native_f16: bool) -> StorageMode {
    match dtype {
        // f64 never reaches a kernel: GPU storage refuses it.
        KernelType::F32 | KernelType::F64 | KernelType::I32 | KernelType::U32 => {
            StorageMode::Plain(ScalarType::of(dtype))
        }
        KernelType::I64 => StorageMode::Words64,
        KernelType::F16 if native_f16 => StorageMode::F16,
        KernelType::F16 => StorageMode::PackedF16,
        KernelType::BF16 => StorageMode::PackedBF16,
        KernelType::U8 | KernelType::Bool => StorageMode::Bytes,
    }
}

pub(crate) fn array_type(s: StorageMode, atomic: bool) -> &'static str {
    match (s, atomic) {
        (StorageMode::Plain(ScalarType::F32), _) => "array<f32>",
        (StorageMode::Plain(ScalarType::I32), _) => "array<i32>",
        (StorageMode::Plain(_), _) => "array<u32>",
        (StorageMode::Words64, _) => "array<vec2<u32>>",
        (StorageMode::F16, _) => "array<f16>",
        (StorageMode::PackedF16 | StorageMode::PackedBF16 | StorageMode::Bytes, true) => {
            "array<atomic<u32>>"
        }
        (StorageMode::PackedF16 | StorageMode::PackedBF16 | StorageMode::Bytes, false) => {
            "array<u32>"
        }
    }
}

/// True when the destination must be written with atomics.
pub(crate) fn packed(s: StorageMode) -> bool {
    matches!(
        s,
        StorageMode::PackedF16 | StorageMode::PackedBF16 | StorageMode::Bytes
    )
}

/// A WGSL expression loading element `p` of buffer `buf` as the compute type.
pub(crate) fn load_expr(dtype: KernelType, s: StorageMode, buf: &str, atomic: bool) -> String {
    let word = |index: &str| {
        if atomic {
            format!("atomicLoad(&{buf}[{index}])")
        } else {
            format!("{buf}[{index}]")
        }
    };
    match s {
        StorageMode::Plain(_) | StorageMode::Words64 => word("p"),
        StorageMode::F16 => format!("f32({buf}[p])"),
        StorageMode::PackedF16 => format!("f16_pair({})[p & 1u]", word("p >> 1u")),
        StorageMode::PackedBF16 => format!("bf16_of_word({}, p & 1u)", word("p >> 1u")),
        StorageMode::Bytes => {
            let byte = format!("(({} >> ((p & 3u) * 8u)) & 0xffu)", word("p >> 2u"));
            if dtype == KernelType::Bool {
                format!("({byte} != 0u)")
            } else {
                byte
            }
        }
    }
}

pub(crate) fn store_fn(dtype: KernelType, s: StorageMode) -> String {
    store_fn_named("store_out", "out_buf", dtype, s)
}

/// [`store_fn`] as `fn {name}` into the buffer `buf`.
pub(crate) fn store_fn_named(name: &str, buf: &str, dtype: KernelType, s: StorageMode) -> String {
    let ct = ScalarType::of(dtype);
    let body = match s {
        StorageMode::Plain(_) | StorageMode::Words64 => format!("{buf}[p] = v;"),
        StorageMode::F16 => format!("{buf}[p] = f16({});", round_expr(KernelType::F16, "v")),
        StorageMode::PackedF16 => format!(
            "let shift = (p & 1u) * 16u;\n    \
             atomicAnd(&{buf}[p >> 1u], ~(0xffffu << shift));\n    \
             atomicOr(&{buf}[p >> 1u], f16_bits(v) << shift);"
        ),
        StorageMode::PackedBF16 => format!(
            "let shift = (p & 1u) * 16u;\n    \
             atomicAnd(&{buf}[p >> 1u], ~(0xffffu << shift));\n    \
             atomicOr(&{buf}[p >> 1u], bf16_bits(v) << shift);"
        ),
        StorageMode::Bytes => {
            let bits = if dtype == KernelType::Bool {
                "select(0u, 1u, v)"
            } else {
                "(v & 0xffu)"
            };
            format!(
                "let shift = (p & 3u) * 8u;\n    \
                 atomicAnd(&{buf}[p >> 2u], ~(0xffu << shift));\n    \
                 atomicOr(&{buf}[p >> 2u], {bits} << shift);"
            )
        }
    };
    format!("fn {name}(p: u32, v: {ct}) {{\n    {body}\n}}\n")
}

/// `v` (a compute-type value) rounded as storing it as `dtype` would.
pub(crate) fn round_expr(dtype: KernelType, v: &str) -> String {
    match dtype {
        KernelType::F16 => format!("f16_pair(f16_bits({v})).x"),
        KernelType::BF16 => format!("bf16_value(bf16_bits({v}))"),
        KernelType::U8 => format!("({v} & 0xffu)"),
        _ => v.to_string(),
    }
}

/// A storage buffer declaration `name` at `binding` holding `dtype`; a
/// written packed buffer (f16 without SHADER_F16, u8, bool) is atomic.
pub(crate) fn buffer_decl(
    binding: u32,
    name: &str,
    dtype: KernelType,
    native_f16: bool,
    writes: bool,
) -> String {
    let s = storage_mode(dtype, native_f16);
    let access = if writes { "read_write" } else { "read" };
    format!(
        "@group(0) @binding({binding}) var<storage, {access}> {name}: {};\n",
        array_type(s, writes && packed(s))
    )
}

/// `fn {name}(p: u32) -> compute type`: element `p` of the read-only buffer
/// `buf` holding `dtype`.
pub(crate) fn load_fn(name: &str, buf: &str, dtype: KernelType, native_f16: bool) -> String {
    let expr = load_expr(dtype, storage_mode(dtype, native_f16), buf, false);
    format!(
        "fn {name}(p: u32) -> {} {{\n    return {expr};\n}}\n",
        ScalarType::of(dtype)
    )
}

/// The bindings and access functions of a kernel reading `inputs` (each
/// at bindings 1, 2 .. and read by `load_{name}`) and writing `out_buf`
/// after them (`store_out`), every one holding `dtype`.
pub(crate) fn io_parts(inputs: &[&str], dtype: KernelType, native_f16: bool) -> [String; 2] {
    let out = inputs.len() as u32 + 1;
    let mut bindings = buffer_decl(out, "out_buf", dtype, native_f16, true);
    let mut access = store_out_fn(dtype, native_f16);
    for (k, name) in inputs.iter().enumerate() {
        bindings.push_str(&buffer_decl(k as u32 + 1, name, dtype, native_f16, false));
        access.push_str(&load_fn(&format!("load_{name}"), name, dtype, native_f16));
    }
    [bindings, access]
}

/// `fn store_out(p: u32, v: compute type)` into `out_buf` holding `dtype`
/// (declared by [`buffer_decl`] as writable), safe for neighbouring
/// elements written by other threads.
pub(crate) fn store_out_fn(dtype: KernelType, native_f16: bool) -> String {
    store_fn(dtype, storage_mode(dtype, native_f16))
}

/// `fn load_out(p: u32) -> compute type`: element `p` of the writable
/// `out_buf` holding `dtype` (atomic words when packed), for kernels that
/// read what they update.
pub(crate) fn load_out_fn(dtype: KernelType, native_f16: bool) -> String {
    let s = storage_mode(dtype, native_f16);
    format!(
        "fn load_out(p: u32) -> {} {{\n    return {};\n}}\n",
        ScalarType::of(dtype),
        load_expr(dtype, s, "out_buf", packed(s))
    )
}

/// True when elements in this mode can be read and written four at a time
/// as one vec4 (plain 32-bit values and native f16; not the packed modes,
/// whose words hold two or four elements).
pub(crate) fn vec4_access(s: StorageMode) -> bool {
    matches!(s, StorageMode::Plain(_) | StorageMode::F16)
}

/// The array entry holding four consecutive elements (the first at a
/// multiple of four) in mode `s`, so that one thread reads or writes them
/// whole: `vec4` of plain values or native f16, two words of packed f16,
/// one word of u8 or bool. A thread owning a whole entry writes it without
/// atomics.
pub(crate) fn quad_type(s: StorageMode) -> String {
    match s {
        StorageMode::Plain(t) => format!("vec4<{t}>"),
        StorageMode::F16 => "vec4<f16>".to_string(),
        StorageMode::PackedF16 | StorageMode::PackedBF16 => "vec2<u32>".to_string(),
        // Never chosen (see `vec4_access`): two entries hold four.
        StorageMode::Words64 => "vec2<u32>".to_string(),
        StorageMode::Bytes => "u32".to_string(),
    }
}

/// A WGSL expression turning the entry `q` (of [`quad_type`]) of `dtype`
/// into a vec4 of the compute type (`q` is read more than once: pass a
/// name).
pub(crate) fn quad_lanes(dtype: KernelType, s: StorageMode, q: &str) -> String {
    let bytes = format!("((vec4<u32>({q}) >> vec4<u32>(0u, 8u, 16u, 24u)) & vec4<u32>(0xffu))");
    match s {
        StorageMode::Plain(_) | StorageMode::Words64 => q.to_string(),
        StorageMode::F16 => format!("vec4<f32>({q})"),
        StorageMode::PackedF16 => format!("vec4<f32>(f16_pair({q}.x), f16_pair({q}.y))"),
        StorageMode::PackedBF16 => format!(
            "vec4<f32>(bf16_of_word({q}.x, 0u), bf16_of_word({q}.x, 1u), bf16_of_word({q}.y, 0u), bf16_of_word({q}.y, 1u))"
        ),
        StorageMode::Bytes if dtype == KernelType::Bool => format!("({bytes} != vec4<u32>(0u))"),
        StorageMode::Bytes => bytes,
    }
}

/// A WGSL expression storing the compute-type vec4 `v` of `dtype` as one
/// entry of [`quad_type`], rounded (f16) or wrapped (u8) as a store of
/// each element would (`v` is read more than once: pass a name).
pub(crate) fn quad_of(dtype: KernelType, s: StorageMode, v: &str) -> String {
    let lanes = ["x", "y", "z", "w"];
    match s {
        StorageMode::Plain(_) | StorageMode::Words64 => v.to_string(),
        StorageMode::F16 => {
            let rounded: Vec<String> = lanes
                .iter()
                .map(|l| format!("f16({})", round_expr(dtype, &format!("{v}.{l}"))))
                .collect();
            format!("vec4<f16>({})", rounded.join(", "))
        }
        StorageMode::PackedF16 | StorageMode::PackedBF16 => {
            let f = ["f16_bits", "bf16_bits"][usize::from(s == StorageMode::PackedBF16)];
            format!("vec2<u32>({f}({v}.x) | ({f}({v}.y) << 16u), {f}({v}.z) | ({f}({v}.w) << 16u))")
        }
        StorageMode::Bytes => lanes
            .iter()
            .enumerate()
            .map(|(l, lane)| {
                let byte = if dtype == KernelType::Bool {
                    format!("select(0u, 1u, {v}.{lane})")
                } else {
                    format!("({v}.{lane} & 0xffu)")
                };
                format!("({byte} << {}u)", 8 * l)
            })
            .collect::<Vec<_>>()
            .join(" | "),
    }
}

/// True when a buffer of `dtype` needs `enable f16;`.
pub(crate) fn needs_f16(dtype: KernelType, native_f16: bool) -> bool {
    storage_mode(dtype, native_f16) == StorageMode::F16
}

/// Bytes one element occupies in a device buffer.
pub(crate) fn element_bytes(dtype: KernelType) -> usize {
    match dtype {
        KernelType::F16 | KernelType::BF16 => 2,
        KernelType::U8 | KernelType::Bool => 1,
        KernelType::I64 => 8,
        _ => 4,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use crate::dtype::KernelType;

    /// Every dtype a GPU kernel stores.
    pub(crate) const GPU_DTYPES: [KernelType; 7] = [
        KernelType::F32,
        KernelType::F16,
        KernelType::BF16,
        KernelType::I32,
        KernelType::U32,
        KernelType::U8,
        KernelType::Bool,
    ];
}
