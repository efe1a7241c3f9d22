//! The strided loop engine: walks an [`IterPlan`] run by run (a run is the
//! innermost axis), with a tight unit-stride loop when every operand is
//! contiguous along it; a large plan is cut into one part per thread of
//! the op's team, each walked the same way.
//!
//! Operands are raw pointers because an in-place op reads and writes the same
//! storage; the op layer guarantees that an input sharing the destination's
//! storage either has the destination's layout or touches none of its
//! elements, so no element is read after another iteration wrote it.

use crate::layout::IterPlan;
use crate::shape::MAX_RANK;

/// Elements a thread takes at the least: below twice this, an elementwise
/// loop runs on the calling thread (handing work to another thread costs a
/// few microseconds, about what 64K additions take).
pub(super) const PARALLEL_MIN: usize = 1 << 16;

/// A pointer that may cross threads: the parts a loop is cut into touch
/// disjoint destination elements (a destination never overlaps itself, and
/// an input sharing its storage reads only the elements its own part
/// writes, or none that anyone writes; see the module docs).
pub(super) struct Shared<T>(pub(super) *mut T);

impl<T> Clone for Shared<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Shared<T> {}

// SAFETY: see the type's docs; the loops write through it only at their
// own part's positions.
unsafe impl<T> Send for Shared<T> {}
unsafe impl<T> Sync for Shared<T> {}

impl<T> Shared<T> {
    pub(super) fn get(self) -> *mut T {
        self.0
    }
}

/// `plan` cut into `parts` plans over consecutive ranges of one axis,
/// each as long as the others or one longer: the outermost axis at least
/// four times `parts` long (each part then within a quarter of the
/// others' work, and writing its own stretch of the output's memory),
/// else the largest (the outermost of equals). Cutting an inner axis
/// where an outer one would do made both threads write every cache line:
/// a nearest resize of 24 channels by 8, whose channel axis was its
/// largest, ran slower on two threads than on one.
#[cfg(not(target_arch = "wasm32"))]
fn split(plan: &IterPlan, parts: usize) -> Vec<IterPlan> {
    let axes = 0..plan.shape.len();
    let axis = axes
        .clone()
        .find(|&d| plan.shape[d] >= 4 * parts)
        .or_else(|| axes.rev().max_by_key(|&d| plan.shape[d]))
        .unwrap_or(0);
    let n = plan.shape[axis];
    let parts = parts.clamp(1, n.max(1));
    (0..parts)
        .map(|k| {
            let (start, end) = (n * k / parts, n * (k + 1) / parts);
            let mut part = plan.clone();
            part.shape[axis] = end - start;
            for (offset, strides) in part.offsets.iter_mut().zip(&plan.strides) {
                *offset = (*offset as isize + start as isize * strides[axis]) as usize;
            }
            part
        })
        .collect()
}

/// Runs `body` over `plan`: cut into one part per thread of the op's team
/// when it is large enough (never on wasm, which has one thread), else
/// whole on this thread. Parts write disjoint elements, so each element's
/// result is the one-thread result.
fn in_parts(plan: &IterPlan, body: impl Fn(&IterPlan) + Sync) {
    #[cfg(not(target_arch = "wasm32"))]
    {
        // The op's thread count read only for a plan of two parts or more.
        let most = plan.shape.iter().product::<usize>() / PARALLEL_MIN;
        let threads = if most > 1 {
            super::threads::count().min(most)
        } else {
            1
        };
        if threads > 1 {
            let parts = split(plan, threads);
            super::threads::for_each_index(parts.len(), |k| body(&parts[k]));
            return;
        }
    }
    body(plan)
}

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
pub(crate) unsafe fn map0<O>(plan: &IterPlan, out: *mut O, f: impl Fn() -> O + Sync) {
    let out = Shared(out);
    in_parts(plan, |plan| {
        for_each_run::<1>(plan, |[po], [so], len| {
            for i in 0..len as isize {
                unsafe { out.get().offset(po + i * so).write(f()) };
            }
        })
    });
}

/// `out[i] = f(a[i])`.
///
/// # Safety
/// As [`map0`], for every operand; `a` may alias `out` only as described in
/// the module docs.
pub(crate) unsafe fn map1<A: Copy, O: Copy>(
    plan: &IterPlan,
    out: *mut O,
    a: *const A,
    f: impl Fn(A) -> O + Sync,
) {
    let (out, a) = (Shared(out), Shared(a.cast_mut()));
    // A short axis of unit output stride (a nearest upsampling's repeats,
    // a pixel shuffle's interleave): one pass writing consecutive
    // elements, a repeated value computed once, where strided runs wrote
    // every rep-th.
    if let Some((runs, rep, t)) = plan.interleaved() {
        in_parts(&runs, |plan| {
            // The runs' output stride is `rep` (`IterPlan::interleaved`).
            for_each_run::<2>(plan, |[po, pa], [_, sa], len| unsafe {
                let (o, a) = (out.get().offset(po), a.get().offset(pa));
                match (rep, t) {
                    (2, 0) => repeat::<2, _, _>(o, a, sa, len, &f),
                    (4, 0) => repeat::<4, _, _>(o, a, sa, len, &f),
                    (8, 0) => repeat::<8, _, _>(o, a, sa, len, &f),
                    (2, _) => interleave::<2, _, _>(o, (a, sa, t), len, &f),
                    (3, _) => interleave::<3, _, _>(o, (a, sa, t), len, &f),
                    (4, _) => interleave::<4, _, _>(o, (a, sa, t), len, &f),
                    _ => {
                        for i in 0..len {
                            for k in 0..rep {
                                let at = i as isize * sa + k as isize * t;
                                o.add(i * rep + k).write(f(a.offset(at).read()));
                            }
                        }
                    }
                }
            })
        });
        return;
    }
    in_parts(plan, |plan| {
        for_each_run::<2>(plan, |[po, pa], [so, sa], len| unsafe {
            let (o, a) = (out.get().offset(po), a.get().offset(pa));
            if so == 1 && sa == 1 {
                for i in 0..len {
                    o.add(i).write(f(a.add(i).read()));
                }
            } else {
                for i in 0..len as isize {
                    o.offset(i * so).write(f(a.offset(i * sa).read()));
                }
            }
        })
    });
}

/// [`map1`] with `run(o, a, len)` for each run both operands walk with
/// unit stride (a vectorised loop of `f`), `f` element by element for
/// the others.
///
/// # Safety
/// As [`map1`]; `run` must write `f` of each of its `len` inputs.
pub(crate) unsafe fn map1_runs<A: Copy + Send, O: Copy + Send>(
    plan: &IterPlan,
    out: *mut O,
    a: *const A,
    f: impl Fn(A) -> O + Sync,
    run: impl Fn(*mut O, *const A, usize) + Sync,
) {
    if plan.interleaved().is_some() {
        // SAFETY: the caller's.
        return unsafe { map1(plan, out, a, f) };
    }
    let (out, a) = (Shared(out), Shared(a.cast_mut()));
    in_parts(plan, |plan| {
        for_each_run::<2>(plan, |[po, pa], [so, sa], len| unsafe {
            let (o, a) = (out.get().offset(po), a.get().offset(pa));
            if so == 1 && sa == 1 {
                run(o, a, len);
            } else {
                for i in 0..len as isize {
                    o.offset(i * so).write(f(a.offset(i * sa).read()));
                }
            }
        })
    });
}

/// `o[i R + k] = f(a[i sa])` for `i < len`, `k < R`.
///
/// # Safety
/// As [`map1`], for those positions.
#[inline(always)]
unsafe fn repeat<const R: usize, A: Copy, O: Copy>(
    o: *mut O,
    a: *const A,
    sa: isize,
    len: usize,
    f: impl Fn(A) -> O,
) {
    // SAFETY: the caller's.
    let put = |i: usize, v: O| unsafe {
        for k in 0..R {
            o.add(i * R + k).write(v);
        }
    };
    if sa == 1 {
        for i in 0..len {
            // SAFETY: the caller's.
            put(i, f(unsafe { a.add(i).read() }));
        }
    } else {
        for i in 0..len {
            // SAFETY: the caller's.
            put(i, f(unsafe { a.offset(i as isize * sa).read() }));
        }
    }
}

/// `o[i R + k] = f(a[i sa + k t])` for `i < len`, `k < R`.
///
/// # Safety
/// As [`map1`], for those positions.
#[inline(always)]
unsafe fn interleave<const R: usize, A: Copy, O: Copy>(
    o: *mut O,
    (a, sa, t): (*const A, isize, isize),
    len: usize,
    f: impl Fn(A) -> O,
) {
    // SAFETY: the caller's.
    let put = |i: usize, from: *const A| unsafe {
        for k in 0..R {
            o.add(i * R + k)
                .write(f(from.offset(k as isize * t).read()));
        }
    };
    if sa == 1 {
        for i in 0..len {
            // SAFETY: the caller's.
            put(i, unsafe { a.add(i) });
        }
    } else {
        for i in 0..len {
            // SAFETY: the caller's.
            put(i, unsafe { a.offset(i as isize * sa) });
        }
    }
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
    f: impl Fn(A, B) -> O + Sync,
) {
    let (out, a, b) = (Shared(out), Shared(a.cast_mut()), Shared(b.cast_mut()));
    in_parts(plan, |plan| {
        for_each_run::<3>(plan, |[po, pa, pb], [so, sa, sb], len| unsafe {
            let (o, a, b) = (out.get().offset(po), a.get().offset(pa), b.get().offset(pb));
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
        })
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
    f: impl Fn(A, B, C) -> O + Sync,
) {
    let (out, a) = (Shared(out), Shared(a.cast_mut()));
    let (b, c) = (Shared(b.cast_mut()), Shared(c.cast_mut()));
    in_parts(plan, |plan| {
        for_each_run::<4>(plan, |[po, pa, pb, pc], [so, sa, sb, sc], len| {
            for i in 0..len as isize {
                unsafe {
                    out.get().offset(po + i * so).write(f(
                        a.get().offset(pa + i * sa).read(),
                        b.get().offset(pb + i * sb).read(),
                        c.get().offset(pc + i * sc).read(),
                    ))
                };
            }
        })
    });
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;

    /// A plan of one operand over `shape`, dense in that order.
    fn dense(shape: &[usize]) -> IterPlan {
        let mut strides = vec![0isize; shape.len()];
        let mut step = 1;
        for (s, &n) in strides.iter_mut().zip(shape).rev() {
            *s = step;
            step *= n as isize;
        }
        IterPlan {
            shape: shape.iter().copied().collect(),
            strides: [strides.into_iter().collect()].into_iter().collect(),
            offsets: [3].into_iter().collect(),
        }
    }

    /// The axis `parts` cut, checking the parts tile it.
    fn cut(shape: &[usize], parts: usize) -> usize {
        let plan = dense(shape);
        let pieces = split(&plan, parts);
        let axis = (0..shape.len())
            .find(|&d| pieces[0].shape[d] != shape[d])
            .expect("an axis cut");
        let mut next = 0;
        for p in &pieces {
            assert_eq!(
                p.offsets[0] as isize,
                3 + next as isize * plan.strides[0][axis]
            );
            next += p.shape[axis];
        }
        assert_eq!(next, shape[axis]);
        axis
    }

    #[test]
    fn parts_cut_the_outermost_axis_long_enough() {
        // A nearest resize of 24 channels by 8: [h, fh, w, fw, c].
        assert_eq!(cut(&[20, 8, 20, 8, 24], 2), 0);
        assert_eq!(cut(&[4, 8, 20, 8, 24], 2), 1);
        assert_eq!(cut(&[3, 1000], 2), 1);
        // None four times the parts: the largest, the outermost of equals.
        assert_eq!(cut(&[2, 5, 7], 2), 2);
        assert_eq!(cut(&[7, 5, 7], 2), 0);
    }
}
