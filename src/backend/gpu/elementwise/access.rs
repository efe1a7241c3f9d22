//! How an elementwise kernel walks its operands, chosen per dispatch from
//! the iteration plan: [`Access`], and the grid each access needs.

use super::codegen::{WORKGROUP, workgroup};
use super::params::MAX_OPERANDS;
use super::program::{Access, Operand, tileable};
use crate::dtype::KernelType;
use crate::layout::IterPlan;

/// The access for a program over `operands` iterating `plan`, and the plan
/// it walks (the tiled access moves the input's fastest axis next to the
/// destination's). `whole_vec4s`: every bound buffer's size is a multiple
/// of 16 bytes, so that a vec4 array reaches its last element. `run`:
/// elements a thread of the strided, row and contiguous accesses takes
/// (the device's).
pub(crate) fn choose_access(
    plan: IterPlan,
    operands: &[Operand],
    whole_vec4s: bool,
    run: u8,
) -> (Access, IterPlan) {
    if plan.is_contiguous() {
        // 16-bit operands only: eight elements in a 16-byte entry.
        let sixteen = |o: &Operand| matches!(o.dtype, KernelType::F16 | KernelType::BF16);
        let octets =
            whole_vec4s && plan.offsets.iter().all(|&o| o % 8 == 0) && operands.iter().all(sixteen);
        // Every storage mode but i64's holds four elements in one array
        // entry.
        let aligned = whole_vec4s
            && plan.offsets.iter().all(|&o| o % 4 == 0)
            && operands.iter().all(|o| o.dtype != KernelType::I64);
        let access = if octets {
            Access::Vec8
        } else if aligned {
            Access::Vec4
        } else {
            Access::Contiguous { run }
        };
        return (access, plan);
    }
    match tile_axis(&plan, operands) {
        Some(p) => (Access::Tiled, with_axis_before_last(plan, p)),
        None if plan.shape.last().is_some_and(|&n| n >= ROW_MIN) => {
            match span_steps(&plan, operands, whole_vec4s) {
                Some(steps) => (
                    Access::Spans {
                        quads: (run / 4).max(1),
                        steps,
                    },
                    plan,
                ),
                None => (Access::Rows { run }, plan),
            }
        }
        None => (Access::Strided { run }, plan),
    }
}

/// Each operand's step along the plan's last axis where [`Access::Spans`]
/// can walk `plan`: the destination's step 1, every input's 0 to
/// [`MAX_SPAN_STEP`], every row of every operand but those of step 0
/// starting at a multiple of 4 (its offset and its strides across rows
/// multiples of 4), bindings of whole 16-byte entries, no i64 operand,
/// and an input read from the destination's binding read at the
/// destination's own elements (a thread writes whole entries, which
/// another thread's reads of that binding must not see half done).
fn span_steps(
    plan: &IterPlan,
    operands: &[Operand],
    whole_vec4s: bool,
) -> Option<[u8; MAX_OPERANDS]> {
    let last = plan.shape.len().checked_sub(1)?;
    let rows_aligned = |k: usize| {
        plan.offsets[k].is_multiple_of(4) && plan.strides[k][..last].iter().all(|s| s % 4 == 0)
    };
    let fits = whole_vec4s
        && operands.len() <= MAX_OPERANDS
        && plan.strides[0][last] == 1
        && operands.iter().all(|o| o.dtype != KernelType::I64)
        && (0..operands.len()).all(|k| {
            let own = operands[k].binding == 1 && k > 0;
            let step = plan.strides[k][last];
            (0..=MAX_SPAN_STEP as isize).contains(&step)
                && (step == 0 || rows_aligned(k))
                && (!own
                    || (plan.strides[k] == plan.strides[0] && plan.offsets[k] == plan.offsets[0]))
        });
    fits.then(|| {
        let mut steps = [0; MAX_OPERANDS];
        for (k, step) in steps.iter_mut().enumerate().take(operands.len()) {
            *step = plan.strides[k][last] as u8;
        }
        steps
    })
}

/// The longest step along rows that [`Access::Spans`] reads as whole
/// entries (`::2` to `::4` slices; one entry in `step` holds an element).
pub(crate) const MAX_SPAN_STEP: u8 = 4;

/// The shortest last axis walked in rows (shorter ones gain too little
/// from a run to pay for its loop).
const ROW_MIN: usize = 4;

impl Access {
    /// (threads or, for the tiled access, workgroups; threads per
    /// workgroup) of a dispatch over `plan`.
    pub fn grid(self, plan: &IterPlan) -> (usize, u32) {
        match self {
            Access::Vec4 => (plan.numel().div_ceil(4), WORKGROUP),
            Access::Vec8 => (plan.numel().div_ceil(8), WORKGROUP),
            Access::Tiled => (tile_count(plan), 1),
            Access::Strided { run } | Access::Contiguous { run } => (
                plan.numel().div_ceil(usize::from(run.max(1))),
                workgroup(self),
            ),
            Access::Rows { run } => {
                let inner = plan.shape.last().copied().unwrap_or(1).max(1);
                let per_row = inner.div_ceil(usize::from(run.max(1)));
                (plan.numel() / inner * per_row, workgroup(self))
            }
            Access::Spans { quads, .. } => {
                let inner = plan.shape.last().copied().unwrap_or(1).max(1);
                let per_row = inner.div_ceil(4).div_ceil(usize::from(quads.max(1)));
                (plan.numel() / inner * per_row, workgroup(self))
            }
        }
    }
}

/// Side of the tiles of [`Access::Tiled`] (`TILE` in elementwise_tile.wgsl).
const TILE: usize = 32;

/// The axis to tile with the plan's last one (the destination's fastest):
/// the input's fastest, when it is not the last and both fill a tile.
fn tile_axis(plan: &IterPlan, operands: &[Operand]) -> Option<usize> {
    let rank = plan.shape.len();
    if !tileable(operands) || rank < 2 || plan.shape[rank - 1] < TILE / 2 {
        return None;
    }
    let input = &plan.strides[1];
    let p = (0..rank - 1)
        .filter(|&d| plan.shape[d] >= TILE / 2)
        .min_by_key(|&d| input[d].unsigned_abs())?;
    (input[p].unsigned_abs() < input[rank - 1].unsigned_abs()).then_some(p)
}

/// `plan` with axis `p` moved just before the last (any axis order visits
/// the same elements).
fn with_axis_before_last(mut plan: IterPlan, p: usize) -> IterPlan {
    let to = plan.shape.len() - 2;
    let n = plan.shape.remove(p);
    plan.shape.insert(to, n);
    for s in plan.strides.iter_mut() {
        let v = s.remove(p);
        s.insert(to, v);
    }
    plan
}

/// Workgroups of the tiled kernel: a tile per 32 x 32 block of the last
/// two axes, per batch.
fn tile_count(plan: &IterPlan) -> usize {
    let rank = plan.shape.len();
    let (n_p, n_q) = (plan.shape[rank - 2], plan.shape[rank - 1]);
    let batches = plan.numel() / (n_p * n_q);
    batches * n_p.div_ceil(TILE) * n_q.div_ceil(TILE)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::KernelType;
    use crate::layout::Layout;
    use crate::shape::Shape;

    fn operands(n: usize, dtype: KernelType) -> Vec<Operand> {
        (0..n)
            .map(|k| Operand {
                dtype,
                binding: k as u8 + 1,
            })
            .collect()
    }

    #[test]
    fn each_plan_gets_the_access_it_allows() {
        let f32s = operands(2, KernelType::F32);
        let out = Layout::contiguous([3, 64, 48]);
        let plan = |input: &Layout| IterPlan::new(&[&out, input]);
        // Dense and aligned: vec4; at an odd offset: contiguous, in runs.
        assert_eq!(choose_access(plan(&out), &f32s, true, 4).0, Access::Vec4);
        let shifted = Layout::from_parts(out.dims().into(), out.strides().into(), 1);
        assert_eq!(
            choose_access(plan(&shifted), &f32s, true, 4).0,
            Access::Contiguous { run: 4 }
        );
        // f16 (native or packed) and bf16 take eight elements per thread
        // (one 16-byte entry), four from a multiple of four; u8 and bool
        // four (packed in a word).
        for dtype in [KernelType::F16, KernelType::BF16] {
            let ops = operands(2, dtype);
            let (access, _) = choose_access(plan(&out), &ops, true, 4);
            assert_eq!(access, Access::Vec8, "{dtype:?}");
            let off4 = Layout::from_parts(out.dims().into(), out.strides().into(), 4);
            let (access, _) = choose_access(plan(&off4), &ops, true, 4);
            assert_eq!(access, Access::Vec4, "{dtype:?} at 4");
        }
        // Mixed with a 32-bit operand: four.
        let mixed = [operands(1, KernelType::F16), operands(1, KernelType::F32)].concat();
        assert_eq!(choose_access(plan(&out), &mixed, true, 4).0, Access::Vec4);
        for dtype in [KernelType::U8, KernelType::Bool] {
            let ops = operands(2, dtype);
            let (access, _) = choose_access(plan(&out), &ops, true, 4);
            assert_eq!(access, Access::Vec4, "{dtype:?}");
        }
        // A buffer that is not whole vec4s.
        assert_eq!(
            choose_access(plan(&out), &f32s, false, 4).0,
            Access::Contiguous { run: 4 }
        );
        // A transposed input: tiles, its fastest axis just before the last.
        let transposed = Layout::contiguous([3, 48, 64]).permute(&[0, 2, 1]).unwrap();
        let (access, tiled) = choose_access(plan(&transposed), &f32s, true, 4);
        assert_eq!(access, Access::Tiled);
        assert_eq!(&tiled.shape[..], &[3, 64, 48]);
        assert_eq!(&tiled.strides[1][..], &[3072, 1, 64]);
        assert_eq!(access.grid(&tiled), (3 * 2 * 2, 1));
        // Two inputs, a bool result, or axes too short to fill a tile:
        // strided, in runs along the last axis where it has four elements.
        let three = operands(3, KernelType::F32);
        let p3 = IterPlan::new(&[&out, &transposed, &transposed]);
        let (access, rows) = choose_access(p3, &three, true, 4);
        assert_eq!(access, Access::Rows { run: 4 });
        assert_eq!(access.grid(&rows), (3 * 64 * 12, WORKGROUP));
        let mut to_bool = f32s.clone();
        to_bool[0].dtype = KernelType::Bool;
        assert_eq!(
            choose_access(plan(&transposed), &to_bool, true, 4).0,
            Access::Rows { run: 4 }
        );
        let thin = Layout::contiguous([8, 64]).permute(&[1, 0]).unwrap();
        let thin_out = Layout::contiguous([64, 8]);
        let p = IterPlan::new(&[&thin_out, &thin]);
        assert_eq!(choose_access(p, &f32s, true, 4).0, Access::Rows { run: 4 });
        let narrow = Layout::contiguous([3, 64]).permute(&[1, 0]).unwrap();
        let narrow_out = Layout::contiguous([64, 3]);
        let p = IterPlan::new(&[&narrow_out, &narrow]);
        assert_eq!(
            choose_access(p, &f32s, true, 4).0,
            Access::Strided { run: 4 }
        );
        // A run of 4 over 7 elements: two threads per row.
        let odd = Layout::contiguous([5, 7]).permute(&[1, 0]).unwrap();
        let p = IterPlan::new(&[&Layout::contiguous([7, 5]), &odd]);
        let (access, plan) = choose_access(p, &three[..2], true, 4);
        assert_eq!(
            (access, plan.shape.last().copied()),
            (Access::Rows { run: 4 }, Some(5))
        );
        assert_eq!(access.grid(&plan), (7 * 2, WORKGROUP));
        // Runs of 16, longer than a GPU's (workgroups of 64): one thread per
        // row of 5, and three for a row of 48.
        let p = IterPlan::new(&[&Layout::contiguous([7, 5]), &odd]);
        let (access, plan) = choose_access(p, &three[..2], true, 16);
        assert_eq!(access.grid(&plan), (7, 64));
        let p3 = IterPlan::new(&[&out, &transposed, &transposed]);
        let (access, rows) = choose_access(p3, &three, true, 16);
        assert_eq!(access.grid(&rows), (3 * 64 * 3, 64));
    }

    #[test]
    fn aligned_rows_at_small_steps_walk_whole_entries() {
        let f32s = operands(2, KernelType::F32);
        let wide = Layout::contiguous([6, 64, 48]);
        // `n` elements of each row of `l` from `from`, `step` apart.
        let cut = |l: &Layout, from: usize, n: usize, step: isize| {
            let s = l.strides();
            Layout::from_parts(
                [l.dims()[0], l.dims()[1], n].as_slice().into(),
                [s[0], s[1], step].as_slice().into(),
                from,
            )
        };
        let spans =
            |plan: IterPlan, ops: &[Operand], run: u8| match choose_access(plan, ops, true, run) {
                (Access::Spans { quads, steps }, plan) => Some((quads, steps, plan)),
                _ => None,
            };
        // `x[:, ::k] + 1` for k = 2 to 4 (rows of 48 / k), an interior
        // view (`x[:, :24]`, step 1) and a broadcast row (step 0), from
        // rows that start at multiples of 4.
        for k in 1..=4 {
            let view = if k == 1 {
                cut(&wide, 0, 24, 1)
            } else {
                cut(&wide, 0, 48 / k, k as isize)
            };
            let out = Layout::contiguous(view.dims());
            let (quads, steps, plan) =
                spans(IterPlan::new(&[&out, &view]), &f32s, 4).unwrap_or_else(|| panic!("::{k}"));
            assert_eq!((quads, &steps[..2]), (1, &[1, k as u8][..]), "::{k}");
            // A thread per group of four, rows of 48 / k.
            let rows = 6 * 64;
            assert_eq!(
                Access::Spans { quads, steps }.grid(&plan),
                (rows * (view.dims()[2]).div_ceil(4), WORKGROUP)
            );
        }
        let row = Layout::contiguous([48])
            .broadcast_to(&Shape::from([6, 64, 48]))
            .unwrap();
        let col = Layout::contiguous([6, 64, 1])
            .broadcast_to(&Shape::from([6, 64, 48]))
            .unwrap();
        let three = operands(3, KernelType::F32);
        let plan = IterPlan::new(&[&wide, &row, &col]);
        let (quads, steps, plan) = spans(plan, &three, 16).unwrap();
        assert_eq!((quads, &steps[..3]), (4, &[1, 1, 0][..]));
        assert_eq!(Access::Spans { quads, steps }.grid(&plan), (6 * 64 * 3, 64));
        // Not where a row starts off a multiple of 4, steps past 4 or
        // backwards, the destination steps, an operand is i64, the
        // buffers are not whole entries, or an input read from the
        // destination's binding is not the destination's own elements.
        let rows_of =
            |plan: IterPlan, ops: &[Operand], whole: bool| choose_access(plan, ops, whole, 4).0;
        let step2 = cut(&wide, 0, 24, 2);
        let out2 = Layout::contiguous(step2.dims());
        let off = cut(&wide, 1, 23, 2);
        let step5 = cut(&wide, 0, 9, 5);
        let back = cut(&wide, 46, 24, -2);
        let odd_rows = cut(&Layout::contiguous([6, 64, 50]), 0, 24, 2);
        let refused = [
            (IterPlan::new(&[&out2, &off]), f32s.clone(), true),
            (
                IterPlan::new(&[&Layout::contiguous(step5.dims()), &step5]),
                f32s.clone(),
                true,
            ),
            (IterPlan::new(&[&out2, &back]), f32s.clone(), true),
            (IterPlan::new(&[&step2, &out2]), f32s.clone(), true),
            (IterPlan::new(&[&out2, &odd_rows]), f32s.clone(), true),
            (
                IterPlan::new(&[&out2, &step2]),
                operands(2, KernelType::I64),
                true,
            ),
            (IterPlan::new(&[&out2, &step2]), f32s.clone(), false),
        ];
        for (k, (plan, ops, whole)) in refused.into_iter().enumerate() {
            assert_eq!(
                rows_of(plan, &ops, whole),
                Access::Rows { run: 4 },
                "case {k}"
            );
        }
        let mut own = f32s.clone();
        own[1].binding = 1;
        let interior = cut(&wide, 0, 24, 1);
        assert!(spans(IterPlan::new(&[&interior, &interior]), &own, 4).is_some());
        let shifted = cut(&wide, 4, 24, 1);
        assert_eq!(
            rows_of(IterPlan::new(&[&interior, &shifted]), &own, true),
            Access::Rows { run: 4 }
        );
    }
}
