//! A draw of the counter-based generator (`ops/random`) into a fresh
//! tensor, on the backend that holds it: `cpu/random.rs` and
//! `gpu/random/` compute the same bits.

use super::{Storage, TensorRef, check_bounds, cpu, gpu, live};
use crate::error::{Error, Result};

/// `ln(1 + f) = f + f^2 p(f)` on `[sqrt(1/2) - 1, sqrt(2) - 1]`.
pub(crate) const LOG_P: [f32; 9] = [
    -0.499_999_97,
    0.333_333_25,
    -0.250_007_78,
    0.200_016_33,
    -0.166_271_12,
    0.141_962_3,
    -0.131_139_23,
    0.127_766_58,
    -0.077_775_11,
];
/// `sin(2 pi x) = x s(x^2)` on `[0, 1/8]`.
pub(crate) const SIN_S: [f32; 4] = [6.283_185_5, -41.341_663, 81.592_36, -75.393_94];
/// `cos(2 pi x) = 1 + z c(z)`, `z = x^2`, on `[0, 1/8]`.
pub(crate) const COS_C: [f32; 4] = [-19.739_208, 64.939_37, -85.448_77, 59.421_947];
/// ln 2 in two parts, the first with few enough bits that its product with
/// an exponent is exact.
pub(crate) const LN2_HI: f32 = 0.693_145_75;
pub(crate) const LN2_LO: f32 = 1.428_606_8e-6;

/// Bits of uniform resolution of each float dtype: f32's 24, f16's 11,
/// bf16's 8 (the values `k 2^-bits` all exact, and below 1).
pub(crate) fn uniform_bits(dtype: crate::dtype::KernelType) -> u32 {
    match dtype {
        crate::dtype::KernelType::F16 => 11,
        crate::dtype::KernelType::BF16 => 8,
        _ => 24,
    }
}

/// The least value of the compute type (f32, or f64 for f64) that `dtype`
/// rounds (to nearest, ties to even) to `high` or above, `high` being one
/// of its values: a uniform sample there would be `high`, outside
/// `[low, high)`, and is `low` instead, as PyTorch's kernels make it.
pub(crate) fn uniform_top(high: f64, dtype: crate::dtype::DType) -> f64 {
    use crate::dtype::DType;
    // The half's bits of `high`, and its value from bits.
    let (bits, value): (u16, fn(u16) -> f64) = match dtype {
        DType::F16 => (half::f16::from_f64(high).to_bits(), |b| {
            half::f16::from_bits(b).to_f64()
        }),
        DType::BF16 => (half::bf16::from_f64(high).to_bits(), |b| {
            half::bf16::from_bits(b).to_f64()
        }),
        _ => return high,
    };
    // The next half down: from +0 the smallest negative subnormal, else one
    // step of the magnitude (up for negatives).
    let below = match bits {
        0 | 0x8000 => 0x8001,
        b if b & 0x8000 == 0 => b - 1,
        b => b + 1,
    };
    // Halfway between them is exact in f32; a tie goes to the even one.
    let half_way = ((value(bits) + value(below)) / 2.0) as f32;
    if bits & 1 == 0 {
        f64::from(half_way)
    } else {
        let up = if half_way > 0.0 { 1 } else { -1i32 };
        f64::from(f32::from_bits(half_way.to_bits().wrapping_add_signed(up)))
    }
}

/// `x`, or a zero of its sign where it is subnormal: WGSL lets a GPU flush
/// subnormal operands and results, so every device flushes the ones a
/// draw's last steps could make (the normals' inner steps never make any).
pub(crate) fn flushed(x: f32) -> f32 {
    let b = x.to_bits();
    if b & 0x7f80_0000 == 0 {
        f32::from_bits(b & 0x8000_0000)
    } else {
        x
    }
}

/// A draw's parameter in f32, flushed as [`flushed`] flushes.
pub(crate) fn f32_param(v: f64) -> f32 {
    flushed(v as f32)
}

/// What each element of a draw is, from its words (see `cpu/random.rs`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Draw {
    /// The element's word itself (u32).
    Bits,
    /// `low + span * u`, `u` uniform in `[0, 1)` at the dtype's resolution
    /// (f32 arithmetic below f64), or `low` where that is `top` or more:
    /// where it would round to `high` in the dtype (see [`uniform_top`]).
    Uniform { low: f64, span: f64, top: f64 },
    /// `mean + std * z`, `z` a standard normal (Box-Muller).
    Normal { mean: f64, std: f64 },
    /// `low + floor(x span / 2^64)` of the element's two words as a 64-bit
    /// `x`, wrapped to the dtype.
    Int { low: i64, span: u64 },
    /// 1 where the element's word is below `threshold` (of 2^32), else 0.
    Bernoulli { threshold: u64 },
}

impl Draw {
    /// Words each element of `dtype` takes: 2 for 64-bit integers and f64
    /// floats, else 1.
    pub fn words(&self, dtype: crate::dtype::KernelType) -> u64 {
        match self {
            Draw::Int { .. } => 2,
            Draw::Uniform { .. } | Draw::Normal { .. }
                if dtype == crate::dtype::KernelType::F64 =>
            {
                2
            }
            _ => 1,
        }
    }
}

/// One draw: elements `first..` of a call whose stream starts at block
/// `block` of `key`, written into `out`, a contiguous view whose storage
/// holds whole quads from its first element (`first` and its offset are
/// multiples of 4 and its storage reaches the end of its last quad).
pub(crate) struct RandomCall<'a> {
    pub key: [u32; 2],
    pub block: u64,
    pub first: u64,
    pub draw: Draw,
    pub out: TensorRef<'a>,
}

/// Runs a draw on the backend that holds its output.
///
/// # Errors
/// GPU failures and device limits.
pub(crate) fn random(call: &RandomCall) -> Result<()> {
    check_bounds(&call.out)?;
    // The kernels write whole quads (the GPU's unchecked): the storage
    // must reach the end of the last one.
    let quads_end = call.out.layout.offset() + call.out.layout.numel().div_ceil(4) * 4;
    if quads_end > call.out.storage.len() {
        return Err(Error::internal(
            "random",
            format!(
                "a draw's quads end at element {quads_end} of a storage of {}",
                call.out.storage.len()
            ),
        ));
    }
    match &**call.out.storage {
        Storage::Cpu(s) => cpu::profiled("random", s, || cpu::random(s, call)),
        Storage::Gpu(s) => gpu::random(live("random", s)?, call),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::StorageRef;
    use crate::backend::cpu::{CpuData, CpuStorage, Threads};
    use crate::dtype::KernelType;
    use crate::layout::Layout;
    use std::sync::Arc;

    #[test]
    fn a_draw_whose_last_quad_leaves_its_storage_is_refused() {
        let threads = Threads::new("test", 1).unwrap();
        let storage = CpuStorage::new(CpuData::from_vec(vec![0f32; 5]), threads);
        let storage = Arc::new(Storage::Cpu(storage));
        let call = |len: usize| RandomCall {
            key: [1, 2],
            block: 0,
            first: 0,
            draw: Draw::Bits,
            out: TensorRef {
                storage: StorageRef::own(&storage),
                layout: Layout::contiguous(vec![len]),
                dtype: KernelType::F32,
            },
        };
        // Four elements are a whole quad; five end past the storage's
        // five in their second one.
        assert!(random(&call(4)).is_ok());
        let err = random(&call(5)).unwrap_err().to_string();
        assert!(err.contains("random") && err.contains("element 8"), "{err}");
    }
}
