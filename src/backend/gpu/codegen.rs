//! WGSL generation for elementwise kernels: `shaders/elementwise.wgsl` with
//! its slots filled for one [`KernelKey`].
//!
//! Storage per dtype: f32, i32 and u32 are plain arrays; f16 is `array<f16>`
//! with SHADER_F16 and otherwise packed two to a `u32`; u8 and bool are packed
//! four to a `u32`. Packed destinations are written with atomic and/or on the
//! element's bits, so neighbouring elements written by other threads are safe
//! for any layout. Arithmetic runs in the compute type: f32 for f16, u32 for
//! u8 (masked on store, which gives wrapping).

use crate::dtype::DType;
use crate::ops::kinds::{BinaryOp, CompareOp, Kernel, UnaryOp};
use smallvec::SmallVec;
use std::fmt::Write;

pub(crate) const COMMON_WGSL: &str = include_str!("../../../shaders/common.wgsl");
pub(crate) const MATH_WGSL: &str = include_str!("../../../shaders/math.wgsl");
pub(crate) const ELEMENTWISE_WGSL: &str = include_str!("../../../shaders/elementwise.wgsl");

/// Threads per workgroup of every elementwise kernel.
pub(crate) const WORKGROUP_SIZE: u32 = 64;

/// Where a kernel input comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Source {
    /// Its own read-only binding.
    Binding,
    /// The destination's binding (the input shares the destination's storage).
    Out,
    /// The scalar in the parameter block.
    Scalar,
}

/// Everything that selects a distinct pipeline. Shapes and strides are
/// parameters, so a new shape never compiles a new pipeline.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct KernelKey {
    pub kernel: Kernel,
    pub out: DType,
    pub inputs: SmallVec<[(DType, Source); 3]>,
    pub native_f16: bool,
    pub contiguous: bool,
}

impl KernelKey {
    /// Number of read-only input bindings (bindings 2..).
    pub fn input_bindings(&self) -> usize {
        self.inputs
            .iter()
            .filter(|(_, s)| *s == Source::Binding)
            .count()
    }
}

/// How one dtype is stored in a buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Storage {
    /// One element per array entry of this WGSL type.
    Plain(&'static str),
    /// Native f16 array.
    F16,
    /// f16 packed two to a u32.
    PackedF16,
    /// u8 or bool packed four to a u32.
    Bytes,
}

fn storage(dtype: DType, native_f16: bool) -> Storage {
    match dtype {
        DType::F32 | DType::F64 => Storage::Plain("f32"),
        DType::I32 => Storage::Plain("i32"),
        DType::U32 => Storage::Plain("u32"),
        DType::F16 if native_f16 => Storage::F16,
        DType::F16 => Storage::PackedF16,
        DType::U8 | DType::Bool => Storage::Bytes,
    }
}

/// The WGSL type arithmetic on `dtype` runs in.
fn compute_type(dtype: DType) -> &'static str {
    match dtype {
        DType::F32 | DType::F16 | DType::F64 => "f32",
        DType::I32 => "i32",
        DType::U32 | DType::U8 => "u32",
        DType::Bool => "bool",
    }
}

fn array_type(s: Storage, atomic: bool) -> &'static str {
    match (s, atomic) {
        (Storage::Plain("f32"), _) => "array<f32>",
        (Storage::Plain("i32"), _) => "array<i32>",
        (Storage::Plain(_), _) => "array<u32>",
        (Storage::F16, _) => "array<f16>",
        (Storage::PackedF16 | Storage::Bytes, true) => "array<atomic<u32>>",
        (Storage::PackedF16 | Storage::Bytes, false) => "array<u32>",
    }
}

/// True when the destination must be written with atomics.
fn packed(s: Storage) -> bool {
    matches!(s, Storage::PackedF16 | Storage::Bytes)
}

/// A WGSL expression loading element `p` of buffer `buf` as the compute type.
fn load_expr(dtype: DType, s: Storage, buf: &str, atomic: bool) -> String {
    let word = |index: &str| {
        if atomic {
            format!("atomicLoad(&{buf}[{index}])")
        } else {
            format!("{buf}[{index}]")
        }
    };
    match s {
        Storage::Plain(_) => word("p"),
        Storage::F16 => format!("f32({buf}[p])"),
        Storage::PackedF16 => format!("unpack2x16float({})[p & 1u]", word("p >> 1u")),
        Storage::Bytes => {
            let byte = format!("(({} >> ((p & 3u) * 8u)) & 0xffu)", word("p >> 2u"));
            if dtype == DType::Bool {
                format!("({byte} != 0u)")
            } else {
                byte
            }
        }
    }
}

fn store_fn(dtype: DType, s: Storage) -> String {
    let ct = compute_type(dtype);
    let body = match s {
        Storage::Plain(_) => "out_buf[p] = v;".to_string(),
        Storage::F16 => "out_buf[p] = f16(unpack2x16float(f16_bits(v)).x);".to_string(),
        Storage::PackedF16 => "let shift = (p & 1u) * 16u;\n    \
             atomicAnd(&out_buf[p >> 1u], ~(0xffffu << shift));\n    \
             atomicOr(&out_buf[p >> 1u], f16_bits(v) << shift);"
            .to_string(),
        Storage::Bytes => {
            let bits = if dtype == DType::Bool {
                "select(0u, 1u, v)"
            } else {
                "(v & 0xffu)"
            };
            format!(
                "let shift = (p & 3u) * 8u;\n    \
                 atomicAnd(&out_buf[p >> 2u], ~(0xffu << shift));\n    \
                 atomicOr(&out_buf[p >> 2u], {bits} << shift);"
            )
        }
    };
    format!("fn store_out(p: u32, v: {ct}) {{\n    {body}\n}}\n")
}

fn scalar_expr(dtype: DType) -> &'static str {
    match dtype {
        DType::F32 | DType::F16 | DType::F64 => "bitcast<f32>(params.scalar)",
        DType::I32 => "bitcast<i32>(params.scalar)",
        DType::U32 | DType::U8 => "params.scalar",
        DType::Bool => "(params.scalar != 0u)",
    }
}

fn unary_expr(op: UnaryOp, ct: &str) -> String {
    let float = ct == "f32";
    let e = match op {
        UnaryOp::Neg if ct == "u32" => "0u - a",
        UnaryOp::Neg => "-a",
        UnaryOp::Abs if ct == "u32" => "a",
        UnaryOp::Abs if ct == "i32" => "select(a, 0 - a, a < 0)",
        UnaryOp::Abs => "abs(a)",
        UnaryOp::Exp => "exp(a)",
        UnaryOp::Log => "log(a)",
        UnaryOp::Sqrt => "sqrt(a)",
        UnaryOp::Rsqrt => "1.0 / sqrt(a)",
        UnaryOp::Sin => "sin(a)",
        UnaryOp::Cos => "cos(a)",
        UnaryOp::Tanh => "tanh_f32(a)",
        UnaryOp::Sigmoid => "sigmoid_f32(a)",
        UnaryOp::Gelu => "gelu_f32(a)",
        UnaryOp::Recip => "1.0 / a",
        UnaryOp::Relu if float => "relu_f32(a)",
        UnaryOp::Relu if ct == "i32" => "max(a, 0)",
        UnaryOp::Relu => "a",
        UnaryOp::Floor if float => "floor(a)",
        UnaryOp::Ceil if float => "ceil(a)",
        UnaryOp::Round if float => "round(a)",
        UnaryOp::Floor | UnaryOp::Ceil | UnaryOp::Round => "a",
        UnaryOp::Sign if float => "sign_f32(a)",
        UnaryOp::Sign if ct == "i32" => "sign_i32(a)",
        UnaryOp::Sign => "select(0u, 1u, a > 0u)",
        UnaryOp::Square => "a * a",
        UnaryOp::Not => "!a",
    };
    e.to_string()
}

fn binary_expr(op: BinaryOp, ct: &str) -> String {
    let e = match (op, ct) {
        (BinaryOp::Add, _) => "a + b",
        (BinaryOp::Sub, _) => "a - b",
        (BinaryOp::Mul, _) => "a * b",
        (BinaryOp::Div, "f32") => "a / b",
        (BinaryOp::Div, "i32") => "div_i32(a, b)",
        (BinaryOp::Div, _) => "div_u32(a, b)",
        (BinaryOp::Pow, "f32") => "pow_f32(a, b)",
        (BinaryOp::Pow, "i32") => "pow_i32(a, b)",
        (BinaryOp::Pow, _) => "pow_u32(a, b)",
        (BinaryOp::Maximum, "f32") => "maximum_f32(a, b)",
        (BinaryOp::Maximum, _) => "max(a, b)",
        (BinaryOp::Minimum, "f32") => "minimum_f32(a, b)",
        (BinaryOp::Minimum, _) => "min(a, b)",
        (BinaryOp::Remainder, "f32") => "rem_f32(a, b)",
        (BinaryOp::Remainder, "i32") => "rem_i32(a, b)",
        (BinaryOp::Remainder, _) => "rem_u32(a, b)",
        (BinaryOp::And, _) => "a && b",
        (BinaryOp::Or, _) => "a || b",
        (BinaryOp::Xor, _) => "a != b",
    };
    e.to_string()
}

fn compare_expr(op: CompareOp, ct: &str) -> String {
    let e = match op {
        CompareOp::Eq => "a == b",
        CompareOp::Ne => "a != b",
        CompareOp::Lt => "a < b",
        CompareOp::Le => "a <= b",
        CompareOp::Gt => "a > b",
        CompareOp::Ge => "a >= b",
    };
    if ct == "bool" {
        // WGSL orders no bools; compare them as 0/1 like the CPU does.
        return e.replace('a', "u32(a)").replace('b', "u32(b)");
    }
    if ct != "f32" {
        return e.to_string();
    }
    // Drivers may lower float comparisons as ordered or unordered; spell
    // out IEEE: every comparison with NaN is false except `!=`.
    let nan = "is_nan_f32(a) || is_nan_f32(b)";
    match op {
        CompareOp::Ne => format!("({e}) || {nan}"),
        _ => format!("({e}) && !({nan})"),
    }
}

/// Rust `as` semantics from `from` to `to`, on the compute types.
fn cast_expr(from: DType, to: DType) -> String {
    use DType::*;
    let e = match (from, to) {
        _ if compute_type(from) == compute_type(to) => "a",
        (F32 | F16 | F64, I32) => "f32_to_i32(a)",
        (F32 | F16 | F64, U32) => "f32_to_u32(a)",
        (F32 | F16 | F64, U8) => "f32_to_u8(a)",
        (F32 | F16 | F64, Bool) => "f32_to_bool(a)",
        (I32 | U32 | U8, F32 | F16 | F64) => "f32(a)",
        (I32, U32 | U8) => "bitcast<u32>(a)",
        (U32 | U8, I32) => "bitcast<i32>(a)",
        (I32, Bool) => "a != 0",
        (U32 | U8, Bool) => "a != 0u",
        (Bool, F32 | F16 | F64) => "select(0.0, 1.0, a)",
        (Bool, I32) => "select(0, 1, a)",
        (Bool, U32 | U8) => "select(0u, 1u, a)",
        _ => "a",
    };
    e.to_string()
}

fn op_fn(key: &KernelKey) -> String {
    let out_ct = compute_type(key.out);
    let in_ct = |k: usize| compute_type(key.inputs[k].0);
    let names = ["a", "b", "c"];
    let args: Vec<String> = (0..key.inputs.len())
        .map(|k| {
            let name = if key.kernel == Kernel::Where {
                ["c", "a", "b"][k]
            } else {
                names[k]
            };
            format!("{name}: {}", in_ct(k))
        })
        .collect();
    let body = match key.kernel {
        Kernel::Fill => scalar_expr(key.out).to_string(),
        Kernel::Cast => cast_expr(key.inputs[0].0, key.out),
        Kernel::Unary(op) => unary_expr(op, out_ct),
        Kernel::Binary(op) => binary_expr(op, out_ct),
        Kernel::Compare(op) => compare_expr(op, in_ct(0)),
        Kernel::Where => "select(b, a, c)".to_string(),
    };
    format!(
        "fn op({}) -> {out_ct} {{\n    return {body};\n}}\n",
        args.join(", ")
    )
}

/// The complete WGSL source of the kernel selected by `key`.
pub(crate) fn elementwise_source(key: &KernelKey) -> String {
    let out_storage = storage(key.out, key.native_f16);
    let out_atomic = packed(out_storage);
    let mut uses_f16 = out_storage == Storage::F16;
    let mut bindings = format!(
        "@group(0) @binding(1) var<storage, read_write> out_buf: {};\n",
        array_type(out_storage, out_atomic)
    );
    let mut access = store_fn(key.out, out_storage);
    let mut call_args = Vec::new();
    let mut binding = 2;
    for (k, &(dtype, source)) in key.inputs.iter().enumerate() {
        let s = storage(dtype, key.native_f16);
        let expr = match source {
            Source::Scalar => scalar_expr(dtype).to_string(),
            Source::Out => load_expr(dtype, s, "out_buf", out_atomic),
            Source::Binding => {
                uses_f16 |= s == Storage::F16;
                let _ = writeln!(
                    bindings,
                    "@group(0) @binding({binding}) var<storage, read> in{k}_buf: {};",
                    array_type(s, false)
                );
                binding += 1;
                load_expr(dtype, s, &format!("in{k}_buf"), false)
            }
        };
        let _ = write!(
            access,
            "fn load_in{k}(p: u32) -> {} {{\n    return {expr};\n}}\n",
            compute_type(dtype)
        );
        let position = ["p.y", "p.z", "p.w"][k];
        call_args.push(format!("load_in{k}({position})"));
    }
    ELEMENTWISE_WGSL
        .replace("{{ENABLE}}", if uses_f16 { "enable f16;" } else { "" })
        .replace("{{COMMON}}", COMMON_WGSL)
        .replace("{{MATH}}", MATH_WGSL)
        .replace("{{BINDINGS}}", &bindings)
        .replace("{{ACCESS}}", &access)
        .replace("{{OP}}", &op_fn(key))
        .replace(
            "{{POSITIONS}}",
            if key.contiguous {
                "contiguous_positions"
            } else {
                "strided_positions"
            },
        )
        .replace("{{CALL}}", &format!("op({})", call_args.join(", ")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::kinds::{BinaryOp, CompareOp, UnaryOp};
    use smallvec::smallvec;

    fn validate(source: &str, what: &str) {
        let module = naga::front::wgsl::parse_str(source)
            .unwrap_or_else(|e| panic!("{what}: {}", e.emit_to_string(source)));
        naga::valid::Validator::new(
            naga::valid::ValidationFlags::all(),
            naga::valid::Capabilities::all(),
        )
        .validate(&module)
        .unwrap_or_else(|e| panic!("{what}: {e:?}"));
    }

    #[test]
    fn standalone_shader_files_validate() {
        validate(COMMON_WGSL, "common.wgsl");
        validate(&format!("{COMMON_WGSL}\n{MATH_WGSL}"), "math.wgsl");
    }

    /// Every kernel the library can generate, for every dtype, storage mode
    /// and contiguity, parses and validates with naga.
    #[test]
    fn every_generated_kernel_validates() {
        let gpu_dtypes = [
            DType::F32,
            DType::F16,
            DType::I32,
            DType::U32,
            DType::U8,
            DType::Bool,
        ];
        let mut keys = Vec::new();
        for native_f16 in [true, false] {
            for contiguous in [true, false] {
                let key = |kernel, out, inputs| KernelKey {
                    kernel,
                    out,
                    inputs,
                    native_f16,
                    contiguous,
                };
                for &d in &gpu_dtypes {
                    keys.push(key(Kernel::Fill, d, smallvec![]));
                    keys.push(key(
                        Kernel::Where,
                        d,
                        smallvec![
                            (DType::Bool, Source::Binding),
                            (d, Source::Out),
                            (d, Source::Binding)
                        ],
                    ));
                    for &from in &gpu_dtypes {
                        keys.push(key(Kernel::Cast, d, smallvec![(from, Source::Binding)]));
                    }
                    for op in [
                        UnaryOp::Neg,
                        UnaryOp::Abs,
                        UnaryOp::Exp,
                        UnaryOp::Log,
                        UnaryOp::Sqrt,
                        UnaryOp::Rsqrt,
                        UnaryOp::Sin,
                        UnaryOp::Cos,
                        UnaryOp::Tanh,
                        UnaryOp::Sigmoid,
                        UnaryOp::Relu,
                        UnaryOp::Gelu,
                        UnaryOp::Floor,
                        UnaryOp::Ceil,
                        UnaryOp::Round,
                        UnaryOp::Sign,
                        UnaryOp::Recip,
                        UnaryOp::Square,
                        UnaryOp::Not,
                    ] {
                        if op.check(d).is_ok() {
                            keys.push(key(Kernel::Unary(op), d, smallvec![(d, Source::Out)]));
                        }
                    }
                    for op in [
                        BinaryOp::Add,
                        BinaryOp::Sub,
                        BinaryOp::Mul,
                        BinaryOp::Div,
                        BinaryOp::Pow,
                        BinaryOp::Maximum,
                        BinaryOp::Minimum,
                        BinaryOp::Remainder,
                        BinaryOp::And,
                        BinaryOp::Or,
                        BinaryOp::Xor,
                    ] {
                        if op.check(d).is_ok() {
                            keys.push(key(
                                Kernel::Binary(op),
                                d,
                                smallvec![(d, Source::Binding), (d, Source::Scalar)],
                            ));
                        }
                    }
                    for op in [
                        CompareOp::Eq,
                        CompareOp::Ne,
                        CompareOp::Lt,
                        CompareOp::Le,
                        CompareOp::Gt,
                        CompareOp::Ge,
                    ] {
                        keys.push(key(
                            Kernel::Compare(op),
                            DType::Bool,
                            smallvec![(d, Source::Binding), (d, Source::Binding)],
                        ));
                    }
                }
            }
        }
        for key in &keys {
            validate(&elementwise_source(key), &format!("{key:?}"));
        }
        assert!(keys.len() > 500, "{} kernels", keys.len());
    }
}
