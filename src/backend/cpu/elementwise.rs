//! The CPU runner: locks the storages once, plans the iteration, matches the
//! op and dtype once, then runs a monomorphised strided loop.

use super::bits::Bits;
use super::exp_f32::{Logistic, map_run, picked};
use super::numeric::{Cast, Float, Num};
use super::storage::{CpuData, CpuStorage, Reads, with_cpu_data};
use super::strided::{map0, map1, map1_runs, map2, map3};
use crate::backend::{Call, Input, TensorRef};
use crate::dtype::{DType, KernelType, bf16_from_f32};
use crate::error::{Error, Result};
use crate::layout::{IterPlan, Layout};
use crate::op::{BinaryOp, CompareOp, ElementwiseOp, UnaryOp};
use crate::scalar::TypedScalar;
use half::{bf16, f16};
use smallvec::SmallVec;
use std::sync::Arc;

/// Binds `$T` to the Rust type of a numeric dtype and evaluates `$body`.
macro_rules! with_num_type {
    ($dtype:expr, $T:ident => $body:expr, bool => $other:expr) => {
        with_num_type!(@arms $dtype, $T, $body, $other;
            F32 f32, F16 f16, BF16 bf16, F64 f64, I32 i32, I64 i64, U32 u32, U8 u8)
    };
    (@arms $dtype:expr, $T:ident, $body:expr, $other:expr; $($kt:ident $rt:ty),*) => {
        match $dtype {
            $(KernelType::$kt => {
                type $T = $rt;
                $body
            })*
            KernelType::Bool => $other,
        }
    };
}

/// Binds `$T` to the Rust type of an integer dtype and evaluates `$body`;
/// `$other` (the other dtypes, as a `DType`) otherwise.
macro_rules! with_int_type {
    ($dtype:expr, $T:ident => $body:expr, $other:ident => $refuse:expr) => {
        match $dtype {
            KernelType::I32 => {
                type $T = i32;
                $body
            }
            KernelType::I64 => {
                type $T = i64;
                $body
            }
            KernelType::U32 => {
                type $T = u32;
                $body
            }
            KernelType::U8 => {
                type $T = u8;
                $body
            }
            $other => {
                let $other = $other.dtype();
                $refuse
            }
        }
    };
}

/// Binds `$T` to the Rust type of any dtype and evaluates `$body`.
macro_rules! with_any_type {
    ($dtype:expr, $T:ident => $body:expr) => {
        with_num_type!($dtype, $T => $body, bool => {
            type $T = bool;
            $body
        })
    };
}

fn base_ptr(data: &CpuData) -> *const u8 {
    with_cpu_data!(data, v => v.as_ptr().cast::<u8>())
}

/// Runs one elementwise call whose destination is `out`.
pub(crate) fn run(out: &CpuStorage, call: &Call) -> Result<()> {
    // Lock every distinct input storage once, in the order of their
    // addresses with the destination's; an input sharing the destination's
    // storage reads through the destination's pointer.
    let operands: SmallVec<[Option<&TensorRef>; 3]> = (call.inputs.iter())
        .map(|input| match input {
            Input::Tensor(t) => Some(t),
            Input::Scalar(_) => None,
        })
        .collect();
    let (reads, mut out_guard) = Reads::lock_writing("cpu kernel", out, &operands)?;
    let out_ptr: *mut u8 = with_cpu_data!(&mut *out_guard, v => v.as_mut_ptr().cast::<u8>());

    let mut layouts: SmallVec<[&Layout; 4]> = SmallVec::new();
    let mut ptrs: SmallVec<[*const u8; 3]> = SmallVec::new();
    // The scalar input and its position (`where` reads its true branch
    // from one).
    let mut scalar: Option<(usize, TypedScalar)> = None;
    layouts.push(&call.out.layout);
    for (k, input) in call.inputs.iter().enumerate() {
        match input {
            Input::Tensor(t) => {
                layouts.push(&t.layout);
                let ptr = if Arc::ptr_eq(&t.storage, &call.out.storage) {
                    out_ptr as *const u8
                } else {
                    base_ptr(reads.of("cpu kernel", t)?)
                };
                ptrs.push(ptr);
            }
            Input::Scalar(s) => scalar = Some((k, *s)),
        }
    }
    // Each element on its own: any order, the longest runs.
    let plan = IterPlan::new(&layouts).with_long_runs();
    let in_dtype = call.inputs.first().map(Input::dtype);
    // SAFETY: the op layer sized every storage for its layout and resolved
    // aliasing (see strided.rs); pointers are typed by the dtypes they hold.
    unsafe {
        dispatch(
            call.kernel,
            call.out.dtype,
            in_dtype,
            &plan,
            out_ptr,
            &ptrs,
            scalar,
        )
    }
}

/// # Safety
/// See [`run`].
unsafe fn dispatch(
    kernel: ElementwiseOp,
    out_dtype: KernelType,
    in_dtype: Option<KernelType>,
    plan: &IterPlan,
    out: *mut u8,
    ins: &[*const u8],
    scalar_input: Option<(usize, TypedScalar)>,
) -> Result<()> {
    let scalar = scalar_input.map(|(_, s)| s);
    let missing = || Error::internal("cpu kernel", "missing operand");
    let in_dtype = in_dtype.unwrap_or(out_dtype);
    unsafe {
        match kernel {
            ElementwiseOp::Fill => {
                let s = scalar.ok_or_else(missing)?;
                with_any_type!(out_dtype, T => map0(plan, out as *mut T, || s.get::<T>()));
            }
            // A cast to the same dtype is a copy: every bit moves (a
            // conversion through a wider float would quiet a signalling
            // NaN of f16 or bf16).
            ElementwiseOp::Cast if in_dtype == out_dtype => {
                let a = *ins.first().ok_or_else(missing)?;
                with_any_type!(out_dtype, T => map1(plan, out as *mut T, a as *const T, |x: T| x));
            }
            // f32 to bf16 from the f32's bits, and bf16 to f32 as its bits
            // widened, as a GPU converts them (through f64, a signalling NaN
            // would be quieted).
            ElementwiseOp::Cast if (in_dtype, out_dtype) == (KernelType::F32, KernelType::BF16) => {
                let a = *ins.first().ok_or_else(missing)?;
                map1(plan, out as *mut bf16, a as *const f32, bf16_from_f32);
            }
            ElementwiseOp::Cast if (in_dtype, out_dtype) == (KernelType::BF16, KernelType::F32) => {
                let a = *ins.first().ok_or_else(missing)?;
                map1(plan, out as *mut f32, a as *const bf16, |x: bf16| {
                    f32::from_bits(u32::from(x.to_bits()) << 16)
                });
            }
            ElementwiseOp::Cast => {
                let a = *ins.first().ok_or_else(missing)?;
                with_any_type!(in_dtype, A => with_any_type!(out_dtype, O =>
                    map1(plan, out as *mut O, a as *const A, |x: A| O::from_wide(x.to_wide()))));
            }
            ElementwiseOp::Unary(UnaryOp::BitNot) => {
                let a = *ins.first().ok_or_else(missing)?;
                with_int_type!(out_dtype, T => map1(plan, out as *mut T, a as *const T, T::bit_not),
                    other => UnaryOp::BitNot.check(other)?);
            }
            ElementwiseOp::Unary(op) => {
                let a = *ins.first().ok_or_else(missing)?;
                match out_dtype {
                    KernelType::F32 => unary_float::<f32>(op, plan, out, a),
                    KernelType::F16 => unary_float::<f16>(op, plan, out, a),
                    KernelType::BF16 => unary_float::<bf16>(op, plan, out, a),
                    KernelType::F64 => unary_float::<f64>(op, plan, out, a),
                    KernelType::I32 => unary_num::<i32>(op, plan, out, a),
                    KernelType::I64 => unary_num::<i64>(op, plan, out, a),
                    KernelType::U32 => unary_num::<u32>(op, plan, out, a),
                    KernelType::U8 => unary_num::<u8>(op, plan, out, a),
                    KernelType::Bool => unary_bool(op, plan, out, a),
                }?;
            }
            ElementwiseOp::Binary(op) => {
                let a = *ins.first().ok_or_else(missing)?;
                let b = Operand::new(ins.get(1).copied(), scalar).ok_or_else(missing)?;
                if op.is_bitwise() {
                    with_int_type!(out_dtype, T => binary_bits::<T>(op, plan, out, a, b),
                        other => op.check(other)?);
                } else if op.is_float_only() {
                    match out_dtype {
                        KernelType::F16 => binary_float::<f16>(op, plan, out, a, b),
                        KernelType::BF16 => binary_float::<bf16>(op, plan, out, a, b),
                        KernelType::F64 => binary_float::<f64>(op, plan, out, a, b),
                        _ => binary_float::<f32>(op, plan, out, a, b),
                    }?;
                } else {
                    with_num_type!(out_dtype, T => binary_num::<T>(op, plan, out, a, b),
                        bool => binary_bool(op, plan, out, a, b))?;
                }
            }
            ElementwiseOp::Compare(op) => {
                let a = *ins.first().ok_or_else(missing)?;
                let b = Operand::new(ins.get(1).copied(), scalar).ok_or_else(missing)?;
                with_any_type!(in_dtype, T => compare::<T>(op, plan, out as *mut bool, a, b));
            }
            ElementwiseOp::Where => match (ins, scalar_input) {
                ([c, a, b], None) => {
                    with_any_type!(out_dtype, T => map3(plan, out as *mut T, *c as *const bool,
                        *a as *const T, *b as *const T, |c, a, b| if c { a } else { b }));
                }
                // The true branch is a scalar (`masked_fill`).
                ([c, b], Some((1, s))) => with_any_type!(out_dtype, T => {
                    let v = s.get::<T>();
                    map2(plan, out as *mut T, *c as *const bool, *b as *const T,
                        |c, b| if c { v } else { b });
                }),
                _ => return Err(missing()),
            },
        }
    }
    Ok(())
}

/// The second operand of a binary op or comparison.
#[derive(Clone, Copy)]
enum Operand {
    Tensor(*const u8),
    Scalar(TypedScalar),
}

impl Operand {
    fn new(ptr: Option<*const u8>, scalar: Option<TypedScalar>) -> Option<Operand> {
        ptr.map(Operand::Tensor).or(scalar.map(Operand::Scalar))
    }
}

/// Applies `f` elementwise with the second operand from a tensor or a scalar.
macro_rules! apply2 {
    ($plan:expr, $out:expr, $a:expr, $b:expr, $T:ty, $f:expr) => {
        match $b {
            Operand::Tensor(b) => map2($plan, $out, $a as *const $T, b as *const $T, $f),
            Operand::Scalar(s) => {
                let s = s.get::<$T>();
                let f = $f;
                map1($plan, $out, $a as *const $T, move |x| f(x, s))
            }
        }
    };
}

unsafe fn unary_num<T: Num>(
    op: UnaryOp,
    plan: &IterPlan,
    out: *mut u8,
    a: *const u8,
) -> Result<()> {
    let (o, a) = (out as *mut T, a as *const T);
    unsafe {
        match op {
            UnaryOp::Neg => map1(plan, o, a, T::neg),
            UnaryOp::Abs => map1(plan, o, a, T::abs),
            UnaryOp::Relu => map1(plan, o, a, T::relu),
            UnaryOp::Floor => map1(plan, o, a, T::floor),
            UnaryOp::Ceil => map1(plan, o, a, T::ceil),
            UnaryOp::Round => map1(plan, o, a, T::round),
            UnaryOp::Sign => map1(plan, o, a, T::sign),
            UnaryOp::Square => map1(plan, o, a, |x: T| x.mul(x)),
            _ => return op.check(T::DTYPE),
        }
    }
    Ok(())
}

unsafe fn unary_float<T: Float>(
    op: UnaryOp,
    plan: &IterPlan,
    out: *mut u8,
    a: *const u8,
) -> Result<()> {
    let (o, a_t) = (out as *mut T, a as *const T);
    if T::KERNEL_TYPE == KernelType::F32 {
        let logistic = match op {
            UnaryOp::Sigmoid => Some(Logistic::Sigmoid),
            UnaryOp::Silu => Some(Logistic::Silu),
            _ => None,
        };
        if let Some(which) = logistic {
            let (o, a) = (out as *mut f32, a as *const f32);
            let f = move |x: f32| which.of(x);
            let run = picked();
            // SAFETY: the caller's; `run` writes `f` of each input.
            unsafe { map1_runs(plan, o, a, f, move |o, a, n| run(o, a, n, which)) };
            return Ok(());
        }
    }
    unsafe {
        match op {
            UnaryOp::Exp => map1(plan, o, a_t, T::exp),
            UnaryOp::Log => map1(plan, o, a_t, T::ln),
            UnaryOp::Sqrt => map1(plan, o, a_t, T::sqrt),
            UnaryOp::Rsqrt => map1(plan, o, a_t, T::rsqrt),
            UnaryOp::Sin => map1(plan, o, a_t, T::sin),
            UnaryOp::Cos => map1(plan, o, a_t, T::cos),
            UnaryOp::Tanh => map1(plan, o, a_t, T::tanh),
            UnaryOp::Sigmoid => map1(plan, o, a_t, T::sigmoid),
            UnaryOp::Gelu => map1(plan, o, a_t, T::gelu),
            UnaryOp::GeluTanh => map1(plan, o, a_t, T::gelu_tanh),
            UnaryOp::Erf => map1(plan, o, a_t, T::erf),
            UnaryOp::Silu => map1(plan, o, a_t, T::silu),
            UnaryOp::Hardsigmoid => map1(plan, o, a_t, T::hardsigmoid),
            UnaryOp::Hardswish => map1(plan, o, a_t, T::hardswish),
            UnaryOp::Recip => map1(plan, o, a_t, T::recip),
            UnaryOp::Tan => map1(plan, o, a_t, T::tan),
            UnaryOp::Log1p => map1(plan, o, a_t, T::log1p),
            UnaryOp::Expm1 => map1(plan, o, a_t, T::expm1),
            UnaryOp::Log2 => map1(plan, o, a_t, T::log2),
            UnaryOp::Exp2 => map1(plan, o, a_t, T::exp2),
            UnaryOp::Lgamma => map1(plan, o, a_t, T::lgamma),
            UnaryOp::Digamma => map1(plan, o, a_t, T::digamma),
            UnaryOp::Erfinv => map1(plan, o, a_t, T::erfinv),
            UnaryOp::Erfc => map1(plan, o, a_t, T::erfc),
            UnaryOp::I0 => map1(plan, o, a_t, T::i0),
            UnaryOp::Asin => map1(plan, o, a_t, T::asin),
            UnaryOp::Acos => map1(plan, o, a_t, T::acos),
            UnaryOp::Atan => map1(plan, o, a_t, T::atan),
            UnaryOp::Sinh => map1(plan, o, a_t, T::sinh),
            UnaryOp::Cosh => map1(plan, o, a_t, T::cosh),
            UnaryOp::Asinh => map1(plan, o, a_t, T::asinh),
            UnaryOp::Acosh => map1(plan, o, a_t, T::acosh),
            UnaryOp::Atanh => map1(plan, o, a_t, T::atanh),
            UnaryOp::Log10 => map1(plan, o, a_t, T::log10),
            _ => return unary_num::<T>(op, plan, out, a),
        }
    }
    Ok(())
}

/// The f32 loop of a one-op activation a kernel applies as it stores its
/// sums (a row in place): the op's own f32 function, so that the result is
/// the op's on the f32 sums, bit for bit.
///
/// # Errors
/// `Error::Internal` for an op that is no activation.
pub(crate) fn activation_rows(op: Option<UnaryOp>) -> Result<fn(&mut [f32])> {
    macro_rules! rows {
        ($f:expr) => {
            |row: &mut [f32]| {
                for v in row {
                    *v = $f(*v);
                }
            }
        };
    }
    Ok(match op {
        None => |_: &mut [f32]| {},
        Some(UnaryOp::Relu) => rows!(<f32 as Num>::relu),
        // SAFETY (both): in place over the row.
        Some(UnaryOp::Sigmoid) => |row: &mut [f32]| unsafe {
            let p = row.as_mut_ptr();
            map_run(p, p, row.len(), Logistic::Sigmoid)
        },
        Some(UnaryOp::Tanh) => rows!(<f32 as Float>::tanh),
        Some(UnaryOp::Hardsigmoid) => rows!(<f32 as Float>::hardsigmoid),
        Some(UnaryOp::Hardswish) => rows!(<f32 as Float>::hardswish),
        Some(UnaryOp::Silu) => |row: &mut [f32]| unsafe {
            let p = row.as_mut_ptr();
            map_run(p, p, row.len(), Logistic::Silu)
        },
        Some(UnaryOp::Gelu) => rows!(<f32 as Float>::gelu),
        Some(UnaryOp::GeluTanh) => rows!(<f32 as Float>::gelu_tanh),
        Some(other) => {
            return Err(Error::internal(
                "conv2d",
                format!("{other:?} is not an activation a kernel applies"),
            ));
        }
    })
}

unsafe fn unary_bool(op: UnaryOp, plan: &IterPlan, out: *mut u8, a: *const u8) -> Result<()> {
    op.check(DType::Bool)?;
    unsafe { map1(plan, out as *mut bool, a as *const bool, |x: bool| !x) };
    Ok(())
}

unsafe fn binary_num<T: Num>(
    op: BinaryOp,
    plan: &IterPlan,
    out: *mut u8,
    a: *const u8,
    b: Operand,
) -> Result<()> {
    let o = out as *mut T;
    unsafe {
        match op {
            BinaryOp::Add => apply2!(plan, o, a, b, T, T::add),
            BinaryOp::Sub => apply2!(plan, o, a, b, T, T::sub),
            BinaryOp::Mul => apply2!(plan, o, a, b, T, T::mul),
            BinaryOp::Div => apply2!(plan, o, a, b, T, T::div),
            BinaryOp::Pow => apply2!(plan, o, a, b, T, T::pow),
            BinaryOp::Maximum => apply2!(plan, o, a, b, T, T::maximum),
            BinaryOp::Minimum => apply2!(plan, o, a, b, T, T::minimum),
            BinaryOp::Remainder => apply2!(plan, o, a, b, T, T::rem),
            BinaryOp::FloorDiv => apply2!(plan, o, a, b, T, T::floor_div),
            // Ops of other loops: refused for this dtype, or a call
            // that reached the wrong loop.
            _ => {
                op.check(T::DTYPE)?;
                return Err(Error::internal(op.name(), format!("no {} loop", T::DTYPE)));
            }
        }
    }
    Ok(())
}

/// The bitwise ops and shifts of an integer dtype.
///
/// # Safety
/// As [`run`].
unsafe fn binary_bits<T: Bits + crate::dtype::Element>(
    op: BinaryOp,
    plan: &IterPlan,
    out: *mut u8,
    a: *const u8,
    b: Operand,
) {
    let o = out as *mut T;
    unsafe {
        match op {
            BinaryOp::BitAnd => apply2!(plan, o, a, b, T, T::bit_and),
            BinaryOp::BitOr => apply2!(plan, o, a, b, T, T::bit_or),
            BinaryOp::BitXor => apply2!(plan, o, a, b, T, T::bit_xor),
            BinaryOp::Shl => apply2!(plan, o, a, b, T, T::shl),
            _ => apply2!(plan, o, a, b, T, T::shr),
        }
    }
}

/// The float-only binary ops (atan2).
///
/// # Safety
/// As [`run`].
unsafe fn binary_float<T: Float>(
    op: BinaryOp,
    plan: &IterPlan,
    out: *mut u8,
    a: *const u8,
    b: Operand,
) -> Result<()> {
    let o = out as *mut T;
    match op {
        BinaryOp::Atan2 => unsafe { apply2!(plan, o, a, b, T, T::atan2) },
        _ => return op.check(DType::Bool),
    }
    Ok(())
}

unsafe fn binary_bool(
    op: BinaryOp,
    plan: &IterPlan,
    out: *mut u8,
    a: *const u8,
    b: Operand,
) -> Result<()> {
    let o = out as *mut bool;
    unsafe {
        match op {
            BinaryOp::And => apply2!(plan, o, a, b, bool, |x: bool, y: bool| x & y),
            BinaryOp::Or => apply2!(plan, o, a, b, bool, |x: bool, y: bool| x | y),
            BinaryOp::Xor => apply2!(plan, o, a, b, bool, |x: bool, y: bool| x ^ y),
            _ => return op.check(DType::Bool),
        }
    }
    Ok(())
}

unsafe fn compare<T: PartialOrd + crate::dtype::Element>(
    op: CompareOp,
    plan: &IterPlan,
    o: *mut bool,
    a: *const u8,
    b: Operand,
) {
    unsafe {
        match op {
            CompareOp::Eq => apply2!(plan, o, a, b, T, |x: T, y: T| x == y),
            CompareOp::Ne => apply2!(plan, o, a, b, T, |x: T, y: T| x != y),
            CompareOp::Lt => apply2!(plan, o, a, b, T, |x: T, y: T| x < y),
            CompareOp::Le => apply2!(plan, o, a, b, T, |x: T, y: T| x <= y),
            CompareOp::Gt => apply2!(plan, o, a, b, T, |x: T, y: T| x > y),
            CompareOp::Ge => apply2!(plan, o, a, b, T, |x: T, y: T| x >= y),
        }
    }
}
