//! The WGSL of one elementwise program: each node's expression in the
//! compute types (unary, binary, comparison and cast semantics matching
//! the CPU's), the `fn opN` of each applied node, and `fn program(...)`,
//! the program on one element.

use super::program::{KernelKey, Node};
use crate::backend::gpu::kernel::buffer::round_expr;
use crate::backend::gpu::kernel::wgsl_type::ScalarType;
use crate::dtype::KernelType;
use crate::op::{BinaryOp, CompareOp, ElementwiseOp, UnaryOp};
use std::fmt::Write;

/// Scalar slot `slot` as the compute type of `dtype`.
fn scalar_expr(dtype: KernelType, slot: u8) -> String {
    let bits = format!("scalar_bits({slot}u)");
    match dtype {
        KernelType::F32 | KernelType::F16 | KernelType::BF16 | KernelType::F64 => {
            format!("bitcast<f32>({bits})")
        }
        KernelType::I32 => format!("bitcast<i32>({bits})"),
        // The op layer passes only i64 scalars within i32 as slots (sign
        // extended here); others arrive as 0-d tensors.
        KernelType::I64 => format!("i64_from_i32(bitcast<i32>({bits}))"),
        KernelType::U32 | KernelType::U8 => bits,
        KernelType::Bool => format!("({bits} != 0u)"),
    }
}

fn unary_expr(op: UnaryOp, ct: ScalarType) -> String {
    use ScalarType::{I32, I64, U32};
    if ct == I64 {
        return match op {
            UnaryOp::Neg => "i64_neg(a)",
            UnaryOp::Abs => "i64_abs(a)",
            UnaryOp::Sign => "i64_sign(a)",
            UnaryOp::Relu => "i64_max(a, vec2<u32>(0u, 0u))",
            UnaryOp::Square => "i64_mul(a, a)",
            UnaryOp::BitNot => "~a",
            // Floor, ceil and round keep integers; the op layer lets no
            // float function through to an integer.
            _ => "a",
        }
        .to_string();
    }
    let float = ct == ScalarType::F32;
    let e = match op {
        UnaryOp::Neg if ct == U32 => "0u - a",
        UnaryOp::Neg => "-a",
        UnaryOp::Abs if ct == U32 => "a",
        UnaryOp::Abs if ct == I32 => "select(a, 0 - a, a < 0)",
        UnaryOp::Abs => "abs(a)",
        UnaryOp::Exp => "exp_accurate_f32(a)",
        UnaryOp::Log => "log_f32(a)",
        UnaryOp::Sqrt => "sqrt_f32(a)",
        UnaryOp::Rsqrt => "div_f32(1.0, sqrt_f32(a))",
        UnaryOp::Sin => "sin_f32(a)",
        UnaryOp::Cos => "cos_f32(a)",
        UnaryOp::Tanh => "tanh_f32(a)",
        UnaryOp::Sigmoid => "sigmoid_f32(a)",
        UnaryOp::Gelu => "gelu_f32(a)",
        UnaryOp::GeluTanh => "gelu_tanh_f32(a)",
        UnaryOp::Erf => "erf_f32(a)",
        UnaryOp::Lgamma => "lgamma_f32(a)",
        UnaryOp::Digamma => "digamma_f32(a)",
        UnaryOp::Erfinv => "erfinv_f32(a)",
        UnaryOp::Erfc => "erfc_f32(a)",
        UnaryOp::I0 => "i0_f32(a)",
        UnaryOp::Asin => "asin_f32(a)",
        UnaryOp::Acos => "acos_f32(a)",
        UnaryOp::Atan => "atan_f32(a)",
        UnaryOp::Sinh => "sinh_f32(a)",
        UnaryOp::Cosh => "cosh_f32(a)",
        UnaryOp::Asinh => "asinh_f32(a)",
        UnaryOp::Acosh => "acosh_f32(a)",
        UnaryOp::Atanh => "atanh_f32(a)",
        UnaryOp::Log10 => "log10_f32(a)",
        UnaryOp::Silu => "silu_f32(a)",
        UnaryOp::Hardsigmoid => "hardsigmoid_f32(a)",
        UnaryOp::Hardswish => "hardswish_f32(a)",
        UnaryOp::Recip => "div_f32(1.0, a)",
        UnaryOp::Tan => "tan_f32(a)",
        UnaryOp::Log1p => "log1p_f32(a)",
        UnaryOp::Expm1 => "expm1_f32(a)",
        UnaryOp::Log2 => "log2_f32(a)",
        UnaryOp::Exp2 => "exp2_f32(a)",
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
        // u8 computes in u32: the bits past its eight are cut where the
        // value is stored or rounded.
        UnaryOp::BitNot => "~a",
    };
    e.to_string()
}

fn binary_expr(op: BinaryOp, ct: ScalarType) -> String {
    use ScalarType::{F32, I32, I64};
    if ct == I64 {
        return match op {
            BinaryOp::Add => "i64_add(a, b)",
            BinaryOp::Sub => "i64_sub(a, b)",
            BinaryOp::Mul => "i64_mul(a, b)",
            BinaryOp::Maximum => "i64_max(a, b)",
            BinaryOp::Minimum => "i64_min(a, b)",
            BinaryOp::Div => "i64_div(a, b)",
            BinaryOp::Remainder => "i64_rem(a, b)",
            BinaryOp::FloorDiv => "i64_floor_div(a, b)",
            BinaryOp::Pow => "i64_pow(a, b)",
            BinaryOp::BitAnd => "a & b",
            BinaryOp::BitOr => "a | b",
            BinaryOp::BitXor => "a ^ b",
            BinaryOp::Shl => "i64_shl(a, b)",
            BinaryOp::Shr => "i64_shr(a, b)",
            // Logical ops and atan2 take no integers (the op layer refuses
            // them).
            _ => "a",
        }
        .to_string();
    }
    let e = match (op, ct) {
        (BinaryOp::Add, _) => "a + b",
        (BinaryOp::Sub, _) => "a - b",
        (BinaryOp::Mul, _) => "a * b",
        (BinaryOp::Div, F32) => "div_f32(a, b)",
        (BinaryOp::Div, I32) => "div_i32(a, b)",
        (BinaryOp::Div, _) => "div_u32(a, b)",
        (BinaryOp::Pow, F32) => "pow_f32(a, b, params.zero)",
        (BinaryOp::Pow, I32) => "pow_i32(a, b)",
        (BinaryOp::Pow, _) => "pow_u32(a, b)",
        (BinaryOp::Maximum, F32) => "maximum_f32(a, b)",
        (BinaryOp::Maximum, _) => "max(a, b)",
        (BinaryOp::Minimum, F32) => "minimum_f32(a, b)",
        (BinaryOp::Minimum, _) => "min(a, b)",
        (BinaryOp::Remainder, F32) => "rem_f32(a, b)",
        (BinaryOp::Remainder, I32) => "rem_i32(a, b)",
        (BinaryOp::Remainder, _) => "rem_u32(a, b)",
        (BinaryOp::FloorDiv, F32) => "floor_div_f32(a, b)",
        (BinaryOp::FloorDiv, I32) => "floor_div_i32(a, b)",
        (BinaryOp::FloorDiv, _) => "div_u32(a, b)",
        (BinaryOp::And, _) => "a && b",
        (BinaryOp::Or, _) => "a || b",
        (BinaryOp::Xor, _) => "a != b",
        (BinaryOp::Atan2, _) => "atan2_f32(a, b)",
        (BinaryOp::BitAnd, _) => "a & b",
        (BinaryOp::BitOr, _) => "a | b",
        (BinaryOp::BitXor, _) => "a ^ b",
        (BinaryOp::Shl, I32) => "shl_i32(a, b)",
        (BinaryOp::Shl, _) => "shl_u32(a, b)",
        (BinaryOp::Shr, I32) => "shr_i32(a, b)",
        (BinaryOp::Shr, _) => "shr_u32(a, b)",
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
    if ct == ScalarType::I64 {
        return match op {
            CompareOp::Eq => "i64_eq(a, b)",
            CompareOp::Ne => "!i64_eq(a, b)",
            CompareOp::Lt => "i64_lt(a, b)",
            CompareOp::Le => "!i64_lt(b, a)",
            CompareOp::Gt => "i64_lt(b, a)",
            CompareOp::Ge => "!i64_lt(a, b)",
        }
        .to_string();
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
fn cast_expr(from: KernelType, to: KernelType) -> String {
    use KernelType::*;
    let e = match (from, to) {
        _ if ScalarType::of(from) == ScalarType::of(to) => "a",
        (F32 | F16 | BF16 | F64, I64) => "i64_from_f32(a)",
        (I32, I64) => "i64_from_i32(a)",
        (U32 | U8, I64) => "vec2<u32>(a, 0u)",
        (Bool, I64) => "vec2<u32>(select(0u, 1u, a), 0u)",
        (I64, F32 | F16 | BF16 | F64) => "i64_to_f32(a)",
        (I64, I32) => "bitcast<i32>(a.x)",
        (I64, U32 | U8) => "a.x",
        (I64, Bool) => "(a.x | a.y) != 0u",
        (F32 | F16 | BF16 | F64, I32) => "f32_to_i32(a)",
        (F32 | F16 | BF16 | F64, U32) => "f32_to_u32(a)",
        (F32 | F16 | BF16 | F64, U8) => "f32_to_u8(a)",
        (F32 | F16 | BF16 | F64, Bool) => "f32_to_bool(a)",
        (I32, F32 | F16 | BF16 | F64) => "i32_to_f32(a)",
        (U32, F32 | F16 | BF16 | F64) => "u32_to_f32(a)",
        (U8, F32 | F16 | BF16 | F64) => "f32(a)",
        (I32, U32 | U8) => "bitcast<u32>(a)",
        (U32 | U8, I32) => "bitcast<i32>(a)",
        (I32, Bool) => "a != 0",
        (U32 | U8, Bool) => "a != 0u",
        (Bool, F32 | F16 | BF16 | F64) => "select(0.0, 1.0, a)",
        (Bool, I32) => "select(0, 1, a)",
        (Bool, U32 | U8) => "select(0u, 1u, a)",
        _ => "a",
    };
    e.to_string()
}

/// `fn op{n}(...)` computing `kernel` from arguments of `inputs` dtypes into
/// a value of `out`.
fn op_fn(n: usize, kernel: ElementwiseOp, out: KernelType, inputs: &[KernelType]) -> String {
    let out_ct = ScalarType::of(out);
    let names: &[&str] = if kernel == ElementwiseOp::Where {
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
        ElementwiseOp::Fill => "a".to_string(),
        ElementwiseOp::Cast => cast_expr(inputs[0], out),
        ElementwiseOp::Unary(op) => unary_expr(op, out_ct),
        ElementwiseOp::Binary(op) => binary_expr(op, out_ct),
        ElementwiseOp::Compare(op) => compare_expr(op, ScalarType::of(inputs[0])),
        // Floats picked on their bits: a select on a float comparison the
        // same kernel made (`where(a > b, a, b)` fused) may compile to a max,
        // which takes +0 over -0 (see math.wgsl's `order_key_f32`).
        ElementwiseOp::Where if out_ct == ScalarType::F32 => {
            "bitcast<f32>(select(bitcast<u32>(b), bitcast<u32>(a), c))".to_string()
        }
        ElementwiseOp::Where => "select(b, a, c)".to_string(),
    };
    format!(
        "fn op{n}({}) -> {out_ct} {{\n    return {body};\n}}\n",
        args.join(", ")
    )
}

/// The `fn opN` of every applied node, and `fn program(x1, x2, ...)`: the
/// program on one element, operand K's value in `xK`, returning the value
/// stored into the destination.
pub(crate) fn program_fn(key: &KernelKey) -> (String, String) {
    let mut ops = String::new();
    let mut body = String::new();
    for (n, node) in key.nodes.iter().enumerate() {
        let value = match node {
            Node::Load(k) => format!("x{k}"),
            Node::Scalar { slot, dtype } => scalar_expr(*dtype, *slot),
            Node::Round { arg, dtype } => round_expr(*dtype, &format!("v{arg}")),
            Node::Apply {
                kernel,
                dtype,
                args,
            } => {
                let inputs: Vec<KernelType> =
                    args.iter().map(|&a| key.node_dtype(a as usize)).collect();
                ops.push_str(&op_fn(n, *kernel, *dtype, &inputs));
                let float = ScalarType::of(*dtype) == ScalarType::F32;
                let args: Vec<String> = args
                    .iter()
                    .enumerate()
                    .map(|(i, a)| {
                        // An operand that comes twice (`x - x`) comes the
                        // second time as another value, so that no compiler
                        // folds `a - a` to 0 (inf - inf is NaN).
                        let again = args[..i].contains(a)
                            && ScalarType::of(inputs[i]) == ScalarType::F32
                            && *kernel != ElementwiseOp::Where;
                        if again {
                            let tag = key.nodes.len() + 3 * n + i;
                            format!("opaque_f32(v{a}, {tag}u)")
                        } else {
                            format!("v{a}")
                        }
                    })
                    .collect();
                let call = format!("op{n}({})", args.join(", "));
                // Each op's f32 result is rounded once, as the CPU's, and
                // not folded with the next op's (see `opaque_f32`).
                if float && n + 1 < key.nodes.len() {
                    format!("opaque_f32({call}, {}u)", n + 1)
                } else {
                    call
                }
            }
        };
        let _ = writeln!(body, "    let v{n} = {value};");
    }
    let params: Vec<String> = key
        .operands
        .iter()
        .enumerate()
        .skip(1)
        .map(|(k, o)| format!("x{k}: {}", ScalarType::of(o.dtype)))
        .collect();
    let program = format!(
        "fn program({}) -> {} {{\n{body}    return v{};\n}}\n",
        params.join(", "),
        ScalarType::of(key.out()),
        key.nodes.len() - 1
    );
    (ops, program)
}
