//! WGSL generation for elementwise kernels: `shaders/elementwise.wgsl` with
//! its slots filled for one [`KernelKey`] (a program of one or more fused
//! ops).
//!
//! Storage per dtype: f32, i32 and u32 are plain arrays; f16 is `array<f16>`
//! with SHADER_F16 and otherwise packed two to a `u32`; u8 and bool are packed
//! four to a `u32`. Packed destinations are written with atomic and/or on the
//! element's bits, so neighbouring elements written by other threads are safe
//! for any layout. Arithmetic runs in the compute type: f32 for f16, u32 for
//! u8 (masked on store, which gives wrapping).

use super::params::{offset_vecs, params_size, scalar_vecs};
use super::pipeline::{Pipeline, PipelineCache, PipelineSpec};
use super::program::{KernelKey, Node};
use super::template::fill;
use super::wgsl_type::ScalarType;
use crate::dtype::DType;
use crate::error::Result;
use crate::ops::kinds::{BinaryOp, CompareOp, Kernel, UnaryOp};
use std::fmt::Write;
use std::sync::Arc;

pub(crate) const COMMON_WGSL: &str = include_str!("../../../shaders/common.wgsl");
pub(crate) const MATH_WGSL: &str = include_str!("../../../shaders/math.wgsl");
pub(crate) const ELEMENTWISE_WGSL: &str = include_str!("../../../shaders/elementwise.wgsl");

/// How one dtype is stored in a buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Storage {
    /// One element per array entry of this WGSL type.
    Plain(ScalarType),
    /// Native f16 array.
    F16,
    /// f16 packed two to a u32.
    PackedF16,
    /// u8 or bool packed four to a u32.
    Bytes,
}

fn storage(dtype: DType, native_f16: bool) -> Storage {
    match dtype {
        DType::F32 | DType::F64 | DType::C64 | DType::I32 | DType::U32 => {
            Storage::Plain(ScalarType::of(dtype))
        }
        DType::F16 if native_f16 => Storage::F16,
        DType::F16 => Storage::PackedF16,
        DType::U8 | DType::Bool => Storage::Bytes,
    }
}

fn array_type(s: Storage, atomic: bool) -> &'static str {
    match (s, atomic) {
        (Storage::Plain(ScalarType::F32), _) => "array<f32>",
        (Storage::Plain(ScalarType::I32), _) => "array<i32>",
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
    let ct = ScalarType::of(dtype);
    let body = match s {
        Storage::Plain(_) => "out_buf[p] = v;".to_string(),
        Storage::F16 => format!("out_buf[p] = f16({});", round_expr(DType::F16, "v")),
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

/// Scalar slot `slot` as the compute type of `dtype`.
fn scalar_expr(dtype: DType, slot: u8) -> String {
    let bits = format!("scalar_bits({slot}u)");
    match dtype {
        DType::F32 | DType::F16 | DType::F64 | DType::C64 => format!("bitcast<f32>({bits})"),
        DType::I32 => format!("bitcast<i32>({bits})"),
        DType::U32 | DType::U8 => bits,
        DType::Bool => format!("({bits} != 0u)"),
    }
}

/// `v` (a compute-type value) rounded as storing it as `dtype` would.
fn round_expr(dtype: DType, v: &str) -> String {
    match dtype {
        DType::F16 => format!("unpack2x16float(f16_bits({v})).x"),
        DType::U8 => format!("({v} & 0xffu)"),
        _ => v.to_string(),
    }
}

fn unary_expr(op: UnaryOp, ct: ScalarType) -> String {
    use ScalarType::{I32, U32};
    let float = ct == ScalarType::F32;
    let e = match op {
        UnaryOp::Neg if ct == U32 => "0u - a",
        UnaryOp::Neg => "-a",
        UnaryOp::Abs if ct == U32 => "a",
        UnaryOp::Abs if ct == I32 => "select(a, 0 - a, a < 0)",
        UnaryOp::Abs => "abs(a)",
        UnaryOp::Exp => "exp(a)",
        UnaryOp::Log => "log_f32(a)",
        UnaryOp::Sqrt => "sqrt(a)",
        UnaryOp::Rsqrt => "1.0 / sqrt(a)",
        UnaryOp::Sin => "sin(a)",
        UnaryOp::Cos => "cos(a)",
        UnaryOp::Tanh => "tanh_f32(a)",
        UnaryOp::Sigmoid => "sigmoid_f32(a)",
        UnaryOp::Gelu => "gelu_f32(a)",
        UnaryOp::Recip => "1.0 / a",
        UnaryOp::Relu if float => "relu_f32(a)",
        UnaryOp::Relu if ct == I32 => "max(a, 0)",
        UnaryOp::Relu => "a",
        UnaryOp::Floor if float => "floor(a)",
        UnaryOp::Ceil if float => "ceil(a)",
        UnaryOp::Round if float => "round(a)",
        UnaryOp::Floor | UnaryOp::Ceil | UnaryOp::Round => "a",
        UnaryOp::Sign if float => "sign_f32(a)",
        UnaryOp::Sign if ct == I32 => "sign_i32(a)",
        UnaryOp::Sign => "select(0u, 1u, a > 0u)",
        UnaryOp::Square => "a * a",
        UnaryOp::Not => "!a",
    };
    e.to_string()
}

fn binary_expr(op: BinaryOp, ct: ScalarType) -> String {
    use ScalarType::{F32, I32};
    let e = match (op, ct) {
        (BinaryOp::Add, _) => "a + b",
        (BinaryOp::Sub, _) => "a - b",
        (BinaryOp::Mul, _) => "a * b",
        (BinaryOp::Div, F32) => "a / b",
        (BinaryOp::Div, I32) => "div_i32(a, b)",
        (BinaryOp::Div, _) => "div_u32(a, b)",
        (BinaryOp::Pow, F32) => "pow_f32(a, b)",
        (BinaryOp::Pow, I32) => "pow_i32(a, b)",
        (BinaryOp::Pow, _) => "pow_u32(a, b)",
        (BinaryOp::Maximum, F32) => "maximum_f32(a, b)",
        (BinaryOp::Maximum, _) => "max(a, b)",
        (BinaryOp::Minimum, F32) => "minimum_f32(a, b)",
        (BinaryOp::Minimum, _) => "min(a, b)",
        (BinaryOp::Remainder, F32) => "rem_f32(a, b)",
        (BinaryOp::Remainder, I32) => "rem_i32(a, b)",
        (BinaryOp::Remainder, _) => "rem_u32(a, b)",
        (BinaryOp::And, _) => "a && b",
        (BinaryOp::Or, _) => "a || b",
        (BinaryOp::Xor, _) => "a != b",
        (BinaryOp::Atan2, _) => "atan2_f32(a, b)",
    };
    e.to_string()
}

fn compare_expr(op: CompareOp, ct: ScalarType) -> String {
    let symbol = match op {
        CompareOp::Eq => "==",
        CompareOp::Ne => "!=",
        CompareOp::Lt => "<",
        CompareOp::Le => "<=",
        CompareOp::Gt => ">",
        CompareOp::Ge => ">=",
    };
    if ct == ScalarType::Bool {
        // WGSL orders no bools; compare them as 0/1 like the CPU does.
        return format!("u32(a) {symbol} u32(b)");
    }
    let e = format!("a {symbol} b");
    if ct != ScalarType::F32 {
        return e;
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
        _ if ScalarType::of(from) == ScalarType::of(to) => "a",
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

/// `fn op{n}(...)` computing `kernel` from arguments of `inputs` dtypes into
/// a value of `out`.
fn op_fn(n: usize, kernel: Kernel, out: DType, inputs: &[DType]) -> String {
    let out_ct = ScalarType::of(out);
    let names: &[&str] = if kernel == Kernel::Where {
        &["c", "a", "b"]
    } else {
        &["a", "b", "c"]
    };
    let args: Vec<String> = inputs
        .iter()
        .zip(names)
        .map(|(&d, name)| format!("{name}: {}", ScalarType::of(d)))
        .collect();
    let body = match kernel {
        Kernel::Fill => "a".to_string(),
        Kernel::Cast => cast_expr(inputs[0], out),
        Kernel::Unary(op) => unary_expr(op, out_ct),
        Kernel::Binary(op) => binary_expr(op, out_ct),
        Kernel::Compare(op) => compare_expr(op, ScalarType::of(inputs[0])),
        Kernel::Where => "select(b, a, c)".to_string(),
    };
    format!(
        "fn op{n}({}) -> {out_ct} {{\n    return {body};\n}}\n",
        args.join(", ")
    )
}

/// A storage buffer declaration `name` at `binding` holding `dtype`; a
/// written packed buffer (f16 without SHADER_F16, u8, bool) is atomic.
pub(crate) fn buffer_decl(
    binding: u32,
    name: &str,
    dtype: DType,
    native_f16: bool,
    writes: bool,
) -> String {
    let s = storage(dtype, native_f16);
    let access = if writes { "read_write" } else { "read" };
    format!(
        "@group(0) @binding({binding}) var<storage, {access}> {name}: {};\n",
        array_type(s, writes && packed(s))
    )
}

/// `fn {name}(p: u32) -> compute type`: element `p` of the read-only buffer
/// `buf` holding `dtype`.
pub(crate) fn load_fn(name: &str, buf: &str, dtype: DType, native_f16: bool) -> String {
    let expr = load_expr(dtype, storage(dtype, native_f16), buf, false);
    format!(
        "fn {name}(p: u32) -> {} {{\n    return {expr};\n}}\n",
        ScalarType::of(dtype)
    )
}

/// `fn store_out(p: u32, v: compute type)` into `out_buf` holding `dtype`
/// (declared by [`buffer_decl`] as writable), safe for neighbouring
/// elements written by other threads.
pub(crate) fn store_out_fn(dtype: DType, native_f16: bool) -> String {
    store_fn(dtype, storage(dtype, native_f16))
}

/// `fn load_out(p: u32) -> compute type`: element `p` of the writable
/// `out_buf` holding `dtype` (atomic words when packed), for kernels that
/// read what they update.
pub(crate) fn load_out_fn(dtype: DType, native_f16: bool) -> String {
    let s = storage(dtype, native_f16);
    format!(
        "fn load_out(p: u32) -> {} {{\n    return {};\n}}\n",
        ScalarType::of(dtype),
        load_expr(dtype, s, "out_buf", packed(s))
    )
}

/// The slots every kernel family's shader has: `{{HEADER}}` (`enable f16;`
/// when `uses_f16`) and `{{MATH}}` (math.wgsl).
pub(crate) fn prelude(uses_f16: bool) -> [(&'static str, &'static str); 2] {
    [
        ("HEADER", if uses_f16 { "enable f16;" } else { "" }),
        ("MATH", MATH_WGSL),
    ]
}

/// True when a buffer of `dtype` needs `enable f16;`.
pub(crate) fn needs_f16(dtype: DType, native_f16: bool) -> bool {
    storage(dtype, native_f16) == Storage::F16
}

/// The complete WGSL source of the kernel selected by `key`.
///
/// # Errors
/// `Error::Internal` when the template's slots and the generated parts
/// disagree.
pub(crate) fn elementwise_source(key: &KernelKey) -> Result<String> {
    let out_storage = storage(key.out(), key.native_f16);
    let out_atomic = packed(out_storage);
    let mut uses_f16 = out_storage == Storage::F16;
    let mut bindings = format!(
        "@group(0) @binding(1) var<storage, read_write> out_buf: {};\n",
        array_type(out_storage, out_atomic)
    );
    for (k, &dtype) in key.inputs.iter().enumerate() {
        let s = storage(dtype, key.native_f16);
        uses_f16 |= s == Storage::F16;
        let _ = writeln!(
            bindings,
            "@group(0) @binding({}) var<storage, read> in{k}_buf: {};",
            k + 2,
            array_type(s, false)
        );
    }
    let mut access = store_fn(key.out(), out_storage);
    for (k, operand) in key.operands.iter().enumerate().skip(1) {
        let s = storage(operand.dtype, key.native_f16);
        let expr = if operand.binding == 1 {
            load_expr(operand.dtype, s, "out_buf", out_atomic)
        } else {
            let buf = format!("in{}_buf", operand.binding - 2);
            load_expr(operand.dtype, s, &buf, false)
        };
        let _ = write!(
            access,
            "fn load_op{k}(p: u32) -> {} {{\n    return {expr};\n}}\n",
            ScalarType::of(operand.dtype)
        );
    }
    let mut ops = String::new();
    let mut body = String::new();
    for (n, node) in key.nodes.iter().enumerate() {
        let value = match node {
            Node::Load(k) => format!("load_op{k}(p[{k}])"),
            Node::Scalar { slot, dtype } => scalar_expr(*dtype, *slot),
            Node::Round { arg, dtype } => round_expr(*dtype, &format!("v{arg}")),
            Node::Apply {
                kernel,
                dtype,
                args,
            } => {
                let inputs: Vec<DType> = args.iter().map(|&a| key.node_dtype(a as usize)).collect();
                ops.push_str(&op_fn(n, *kernel, *dtype, &inputs));
                let args: Vec<String> = args.iter().map(|a| format!("v{a}")).collect();
                format!("op{n}({})", args.join(", "))
            }
        };
        let _ = writeln!(body, "    let v{n} = {value};");
    }
    let header = format!(
        "{}\nconst OPERANDS: u32 = {}u;\nconst OFFSET_VECS: u32 = {}u;\nconst SCALAR_VECS: u32 = {}u;",
        if uses_f16 { "enable f16;" } else { "" },
        key.operands.len(),
        offset_vecs(key.operands.len()),
        scalar_vecs(key.scalars as usize),
    );
    let positions = if key.contiguous {
        "contiguous_positions"
    } else {
        "strided_positions"
    };
    fill(
        "elementwise kernel",
        ELEMENTWISE_WGSL,
        &[
            ("HEADER", &header),
            ("COMMON", COMMON_WGSL),
            ("MATH", MATH_WGSL),
            ("BINDINGS", &bindings),
            ("ACCESS", &access),
            ("OPS", &ops),
            ("POSITIONS", positions),
            ("BODY", body.trim_end()),
            ("RESULT", &format!("v{}", key.nodes.len() - 1)),
        ],
    )
}

/// The elementwise pipeline for `key`, from `cache` or built into it.
///
/// # Errors
/// As [`PipelineCache::get`]; [`elementwise_source`]'s errors.
pub(crate) fn elementwise_pipeline(
    cache: &PipelineCache,
    device: &wgpu::Device,
    key: &KernelKey,
) -> Result<Arc<Pipeline>> {
    cache.get(device, key, || {
        Ok(PipelineSpec {
            label: "webtensor elementwise",
            source: elementwise_source(key)?,
            entry: "main",
            params_size: params_size(key.operands.len(), key.scalars as usize),
            read_only: std::iter::once(false)
                .chain(key.inputs.iter().map(|_| true))
                .collect(),
        })
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::backend::gpu::program::Operand;
    use crate::ops::kinds::{BinaryOp, CompareOp, UnaryOp};
    use smallvec::{SmallVec, smallvec};

    pub(crate) fn validate(source: &str, what: &str) {
        let module = naga::front::wgsl::parse_str(source)
            .unwrap_or_else(|e| panic!("{what}: {}", e.emit_to_string(source)));
        naga::valid::Validator::new(
            naga::valid::ValidationFlags::all(),
            naga::valid::Capabilities::all(),
        )
        .validate(&module)
        .unwrap_or_else(|e| panic!("{what}: {e:?}\n{source}"));
    }

    /// Where a test kernel's input comes from.
    #[derive(Clone, Copy)]
    enum Src {
        Binding,
        Out,
        Scalar,
    }

    /// The key of one op reading `inputs`, as the scheduler builds it.
    fn single(
        kernel: Kernel,
        out: DType,
        inputs: &[(DType, Src)],
        native_f16: bool,
        contiguous: bool,
    ) -> KernelKey {
        let mut key = KernelKey {
            nodes: SmallVec::new(),
            operands: smallvec![Operand {
                dtype: out,
                binding: 1
            }],
            inputs: SmallVec::new(),
            scalars: 0,
            native_f16,
            contiguous,
        };
        let mut args = SmallVec::new();
        for &(dtype, src) in inputs {
            args.push(key.nodes.len() as u8);
            let node = match src {
                Src::Scalar => {
                    key.scalars += 1;
                    Node::Scalar {
                        slot: key.scalars - 1,
                        dtype,
                    }
                }
                Src::Out | Src::Binding => {
                    let binding = if matches!(src, Src::Out) {
                        1
                    } else {
                        key.inputs.push(dtype);
                        key.inputs.len() as u8 + 1
                    };
                    key.operands.push(Operand { dtype, binding });
                    Node::Load(key.operands.len() as u8 - 1)
                }
            };
            key.nodes.push(node);
        }
        key.nodes.push(Node::Apply {
            kernel,
            dtype: out,
            args,
        });
        key
    }

    /// Every dtype a GPU kernel stores.
    pub(crate) const GPU_DTYPES: [DType; 6] = [
        DType::F32,
        DType::F16,
        DType::I32,
        DType::U32,
        DType::U8,
        DType::Bool,
    ];

    #[test]
    fn the_elementwise_block_matches_the_wgsl_struct() {
        use crate::backend::gpu::params::{field_offsets, params_size};
        use crate::backend::gpu::params_block::tests::assert_layout;
        for (operands, scalars) in [(1, 0), (4, 1), (5, 5), (8, 8)] {
            let source = format!(
                "const OPERANDS: u32 = {operands}u;\nconst OFFSET_VECS: u32 = {}u;\n\
                 const SCALAR_VECS: u32 = {}u;\n{COMMON_WGSL}",
                offset_vecs(operands),
                scalar_vecs(scalars)
            );
            assert_layout(
                &source,
                &field_offsets(operands),
                params_size(operands, scalars),
                &format!("elementwise, {operands} operands, {scalars} scalars"),
            );
        }
    }

    #[test]
    fn standalone_shader_files_validate() {
        let consts = "const OPERANDS: u32 = 4u;\nconst OFFSET_VECS: u32 = 1u;\nconst SCALAR_VECS: u32 = 1u;\n";
        validate(&format!("{consts}{COMMON_WGSL}"), "common.wgsl");
        validate(&format!("{consts}{COMMON_WGSL}\n{MATH_WGSL}"), "math.wgsl");
    }

    /// Every single-op kernel the library can generate, for every dtype,
    /// storage mode and contiguity, parses and validates with naga.
    #[test]
    fn every_generated_kernel_validates() {
        let mut keys = Vec::new();
        for native_f16 in [true, false] {
            for contiguous in [true, false] {
                let key = |kernel, out, inputs: &[(DType, Src)]| {
                    single(kernel, out, inputs, native_f16, contiguous)
                };
                for &d in &GPU_DTYPES {
                    keys.push(key(Kernel::Fill, d, &[(d, Src::Scalar)]));
                    keys.push(key(
                        Kernel::Where,
                        d,
                        &[
                            (DType::Bool, Src::Binding),
                            (d, Src::Out),
                            (d, Src::Binding),
                        ],
                    ));
                    for &from in &GPU_DTYPES {
                        keys.push(key(Kernel::Cast, d, &[(from, Src::Binding)]));
                    }
                    for op in UnaryOp::ALL {
                        if op.check(d).is_ok() {
                            keys.push(key(Kernel::Unary(op), d, &[(d, Src::Out)]));
                        }
                    }
                    for op in BinaryOp::ALL {
                        if op.check(d).is_ok() {
                            keys.push(key(
                                Kernel::Binary(op),
                                d,
                                &[(d, Src::Binding), (d, Src::Scalar)],
                            ));
                        }
                    }
                    for op in CompareOp::ALL {
                        keys.push(key(
                            Kernel::Compare(op),
                            DType::Bool,
                            &[(d, Src::Binding), (d, Src::Binding)],
                        ));
                    }
                }
            }
        }
        for key in &keys {
            validate(&elementwise_source(key).unwrap(), &format!("{key:?}"));
        }
        assert!(keys.len() > 500, "{} kernels", keys.len());
    }

    /// A fused program: ((a * 2 + b).exp() - c).relu() with rounding of the
    /// intermediates, in every float storage mode, validates; and so does a
    /// program with the most operands and scalar slots.
    #[test]
    fn fused_programs_validate() {
        for (dtype, native_f16) in [(DType::F32, true), (DType::F16, true), (DType::F16, false)] {
            let operand = |binding| Operand { dtype, binding };
            let apply = |op, args: &[u8]| Node::Apply {
                kernel: Kernel::Binary(op),
                dtype,
                args: args.iter().copied().collect(),
            };
            let key = KernelKey {
                nodes: smallvec![
                    Node::Load(1),
                    Node::Scalar { slot: 0, dtype },
                    apply(BinaryOp::Mul, &[0, 1]),
                    Node::Round { arg: 2, dtype },
                    Node::Load(2),
                    apply(BinaryOp::Add, &[3, 4]),
                    Node::Round { arg: 5, dtype },
                    Node::Apply {
                        kernel: Kernel::Unary(UnaryOp::Exp),
                        dtype,
                        args: smallvec![6]
                    },
                    Node::Load(3),
                    apply(BinaryOp::Sub, &[7, 8]),
                    Node::Apply {
                        kernel: Kernel::Unary(UnaryOp::Relu),
                        dtype,
                        args: smallvec![9]
                    },
                ],
                operands: smallvec![operand(1), operand(2), operand(3), operand(4)],
                inputs: smallvec![dtype, dtype, dtype],
                scalars: 1,
                native_f16,
                contiguous: false,
            };
            validate(&elementwise_source(&key).unwrap(), &format!("{key:?}"));
        }
        let mut wide = single(
            Kernel::Binary(BinaryOp::Add),
            DType::U8,
            &[(DType::U8, Src::Binding), (DType::U8, Src::Scalar)],
            false,
            true,
        );
        let add = |args: [u8; 2]| Node::Apply {
            kernel: Kernel::Binary(BinaryOp::Add),
            dtype: DType::U8,
            args: args.into_iter().collect(),
        };
        for k in 0..6u8 {
            let prev = wide.nodes.len() as u8 - 1;
            wide.inputs.push(DType::U8);
            wide.operands.push(Operand {
                dtype: DType::U8,
                binding: 3 + k,
            });
            wide.nodes.push(Node::Load(2 + k));
            wide.nodes.push(Node::Scalar {
                slot: 1 + k,
                dtype: DType::U8,
            });
            wide.nodes.push(add([prev + 1, prev + 2]));
            wide.nodes.push(Node::Round {
                arg: prev + 3,
                dtype: DType::U8,
            });
            wide.nodes.push(add([prev, prev + 4]));
        }
        assert_eq!(wide.operands.len(), 8);
        validate(
            &elementwise_source(&wide).unwrap(),
            "eight operands, seven scalars",
        );
    }
}
