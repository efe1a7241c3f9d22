//! The per-dispatch parameter block, byte for byte the `Params` struct of
//! `shaders/common.wgsl` for a kernel with `OPERANDS` operands and
//! `SCALAR_VECS` vec4s of scalar slots:
//!
//! | bytes | field |
//! |---|---|
//! | 16 | numel, rank, row_threads, zero (always 0: see `opaque_f32`) |
//! | 32 | shape (8 x u32) |
//! | 16 * ceil(OPERANDS / 4) | offsets (u32 per operand) |
//! | 32 * OPERANDS | strides (8 x i32 per operand) |
//! | 16 * SCALAR_VECS | scalar bits (u32 per slot) |

use crate::layout::IterPlan;
use crate::shape::MAX_RANK;

/// Most operands of one kernel: the destination and up to seven inputs.
pub(crate) const MAX_OPERANDS: usize = 8;

/// Most scalar slots of one kernel.
pub(crate) const MAX_SCALARS: usize = 16;

/// vec4s holding the offsets of `operands` operands.
pub(crate) fn offset_vecs(operands: usize) -> usize {
    operands.div_ceil(4)
}

/// vec4s holding `scalars` scalar slots (at least one: WGSL has no empty arrays).
pub(crate) fn scalar_vecs(scalars: usize) -> usize {
    scalars.div_ceil(4).max(1)
}

/// Size in bytes of the block for this many operands and scalar slots.
pub(crate) fn params_size(operands: usize, scalars: usize) -> u64 {
    (16 + 4 * MAX_RANK
        + 16 * offset_vecs(operands)
        + 4 * MAX_RANK * operands
        + 16 * scalar_vecs(scalars)) as u64
}

/// Appends `words` to a parameter block, as the uniform buffer holds them.
fn push_words(out: &mut Vec<u8>, words: impl IntoIterator<Item = u32>) {
    for w in words {
        out.extend_from_slice(&w.to_ne_bytes());
    }
}

/// Each field of the block (name as in common.wgsl, byte offset), for the
/// test that compares them with naga's layout of `Params`.
#[cfg(test)]
pub(crate) fn field_offsets(operands: usize) -> [(&'static str, usize); 8] {
    let offsets = 16 + 4 * MAX_RANK;
    let strides = offsets + 16 * offset_vecs(operands);
    let scalar_bits = strides + 4 * MAX_RANK * operands;
    [
        ("numel", 0),
        ("rank", 4),
        ("row_threads", 8),
        ("zero", 12),
        ("shape", 16),
        ("offsets", offsets),
        ("strides", strides),
        ("scalars", scalar_bits),
    ]
}

/// Appends extents as `array<vec4<u32>, 2>` (MAX_RANK entries, zero-padded).
fn push_dims(out: &mut Vec<u8>, dims: &[usize]) {
    push_words(
        out,
        (0..MAX_RANK).map(|d| dims.get(d).map_or(0, |&n| n as u32)),
    );
}

/// Appends strides as `array<vec4<i32>, 2>` (MAX_RANK entries, zero-padded).
fn push_strides(out: &mut Vec<u8>, strides: &[isize]) {
    push_words(
        out,
        (0..MAX_RANK).map(|d| strides.get(d).map_or(0, |&s| s as i32 as u32)),
    );
}

/// The `zero` word of every block: `opaque_f32` xors with it.
const ZERO: u32 = 0;

/// Appends the parameter block of one dispatch over `plan` (one stride
/// vector and offset per operand) to `out`.
pub(crate) fn write_params(out: &mut Vec<u8>, plan: &IterPlan, row_threads: u32, scalars: &[u32]) {
    let operands = plan.offsets.len();
    let start = out.len();
    push_words(
        out,
        [
            plan.numel() as u32,
            plan.shape.len() as u32,
            row_threads,
            ZERO,
        ],
    );
    push_dims(out, &plan.shape);
    push_words(
        out,
        (0..4 * offset_vecs(operands)).map(|k| plan.offsets.get(k).map_or(0, |&o| o as u32)),
    );
    for strides in &plan.strides {
        push_strides(out, strides);
    }
    push_words(
        out,
        (0..4 * scalar_vecs(scalars.len())).map(|k| scalars.get(k).copied().unwrap_or(0)),
    );
    debug_assert_eq!(
        (out.len() - start) as u64,
        params_size(operands, scalars.len())
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::Layout;

    #[test]
    fn block_size_matches_the_layout_table() {
        assert_eq!(params_size(4, 1), 16 + 32 + 16 + 128 + 16);
        assert_eq!(params_size(5, 5), 16 + 32 + 32 + 160 + 32);
        let a = Layout::contiguous([2, 3]);
        let plan = IterPlan::new(&[&a, &a]);
        let mut out = vec![1u8; 3];
        write_params(&mut out, &plan, 64, &[7]);
        assert_eq!(out.len() as u64 - 3, params_size(2, 1));
    }
}
