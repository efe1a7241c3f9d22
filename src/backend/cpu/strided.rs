//! The strided loop engine: walks an [`IterPlan`] run by run (a run is the
//! innermost axis), with a tight unit-stride loop when every operand is
//! contiguous along it.
//!
//! Operands are raw pointers because an in-place op reads and writes the same
//! storage; the op layer guarantees that an input sharing the destination's
//! storage either has the destination's layout or touches none of its
//! elements, so no element is read after another iteration wrote it.

use crate::layout::IterPlan;
use crate::shape::MAX_RANK;

/// Calls `f(positions, inner_strides, len)` for each innermost run, with the
/// storage position of the run's first element for each of the `N` operands.
#[inline(always)]
pub(crate) fn for_each_run<const N: usize>(
    plan: &IterPlan,
    mut f: impl FnMut([isize; N], [isize; N], usize),
) {
    let rank = plan.shape.len();
    let inner = plan.shape[rank - 1];
    if inner == 0 {
        return;
    }
    let inner_strides: [isize; N] = std::array::from_fn(|k| plan.strides[k][rank - 1]);
    let outer: usize = plan.shape[..rank - 1].iter().product();
    let mut index = [0usize; MAX_RANK];
    let mut pos: [isize; N] = std::array::from_fn(|k| plan.offsets[k] as isize);
    for _ in 0..outer {
        f(pos, inner_strides, inner);
        for d in (0..rank - 1).rev() {
            index[d] += 1;
            for (p, s) in pos.iter_mut().zip(plan.strides.iter()) {
                *p += s[d];
            }
            if index[d] < plan.shape[d] {
                break;
            }
            for (p, s) in pos.iter_mut().zip(plan.strides.iter()) {
                *p -= s[d] * plan.shape[d] as isize;
            }
            index[d] = 0;
        }
    }
}

/// `out[i] = f()` over the plan's single operand.
///
/// # Safety
/// Every position of the plan must lie inside the allocation behind `out`.
pub(crate) unsafe fn map0<O>(plan: &IterPlan, out: *mut O, f: impl Fn() -> O) {
    for_each_run::<1>(plan, |[po], [so], len| {
        for i in 0..len as isize {
            unsafe { out.offset(po + i * so).write(f()) };
        }
    });
}

/// `out[i] = f(a[i])`.
///
/// # Safety
/// As [`map0`], for every operand; `a` may alias `out` only as described in
/// the module docs.
pub(crate) unsafe fn map1<A: Copy, O>(
    plan: &IterPlan,
    out: *mut O,
    a: *const A,
    f: impl Fn(A) -> O,
) {
    for_each_run::<2>(plan, |[po, pa], [so, sa], len| unsafe {
        let (o, a) = (out.offset(po), a.offset(pa));
        if so == 1 && sa == 1 {
            for i in 0..len {
                o.add(i).write(f(a.add(i).read()));
            }
        } else {
            for i in 0..len as isize {
                o.offset(i * so).write(f(a.offset(i * sa).read()));
            }
        }
    });
}

/// `out[i] = f(a[i], b[i])`.
///
/// # Safety
/// As [`map1`].
pub(crate) unsafe fn map2<A: Copy, B: Copy, O>(
    plan: &IterPlan,
    out: *mut O,
    a: *const A,
    b: *const B,
    f: impl Fn(A, B) -> O,
) {
    for_each_run::<3>(plan, |[po, pa, pb], [so, sa, sb], len| unsafe {
        let (o, a, b) = (out.offset(po), a.offset(pa), b.offset(pb));
        if so == 1 && sa == 1 && sb == 1 {
            for i in 0..len {
                o.add(i).write(f(a.add(i).read(), b.add(i).read()));
            }
        } else if so == 1 && sa == 1 && sb == 0 {
            let bv = b.read();
            for i in 0..len {
                o.add(i).write(f(a.add(i).read(), bv));
            }
        } else {
            for i in 0..len as isize {
                o.offset(i * so)
                    .write(f(a.offset(i * sa).read(), b.offset(i * sb).read()));
            }
        }
    });
}

/// `out[i] = f(a[i], b[i], c[i])`.
///
/// # Safety
/// As [`map1`].
pub(crate) unsafe fn map3<A: Copy, B: Copy, C: Copy, O>(
    plan: &IterPlan,
    out: *mut O,
    a: *const A,
    b: *const B,
    c: *const C,
    f: impl Fn(A, B, C) -> O,
) {
    for_each_run::<4>(plan, |[po, pa, pb, pc], [so, sa, sb, sc], len| {
        for i in 0..len as isize {
            unsafe {
                out.offset(po + i * so).write(f(
                    a.offset(pa + i * sa).read(),
                    b.offset(pb + i * sb).read(),
                    c.offset(pc + i * sc).read(),
                ))
            };
        }
    });
}
