//! Whether two views of one storage share an element.
//!
//! Element sets of strided views can interleave without touching (`x[::2]`
//! and `x[1::2]`), so comparing spans is not enough. The exact question is a
//! bounded integer equation: `a.offset + Σ i·s = b.offset + Σ j·t` with
//! every index in range. It is solved by a depth-first search over the
//! strides, largest first, pruned by what the remaining terms can still
//! reach; past a work budget the answer is a conservative "may overlap".

use super::Layout;

/// Search steps before giving up and answering "may overlap".
const BUDGET: usize = 4096;

/// One stride with the range of coefficients it may take.
#[derive(Debug, Clone, Copy)]
struct Term {
    stride: i64,
    lo: i64,
    hi: i64,
}

impl Layout {
    /// True when the two layouts (over the same storage) may share an
    /// element: exact for every pair the search settles within its budget,
    /// and `true` for the rest.
    pub(crate) fn may_overlap(&self, other: &Layout) -> bool {
        let (Some((a0, a1)), Some((b0, b1))) = (self.span(), other.span()) else {
            return false;
        };
        if a1 < b0 || b1 < a0 {
            return false;
        }
        // Positions relative to each span's start, with positive strides:
        // a0 + Σ i·s = b0 + Σ j·t  <=>  Σ i·s - Σ j·t = b0 - a0.
        let mut terms: Vec<Term> = Vec::new();
        let mut add = |stride: isize, extent: usize, sign: i64| {
            let (stride, reach) = (stride.unsigned_abs() as i64, extent as i64 - 1);
            if stride == 0 || reach == 0 {
                return;
            }
            let (lo, hi) = if sign > 0 { (0, reach) } else { (-reach, 0) };
            match terms.iter_mut().find(|t| t.stride == stride) {
                Some(t) => {
                    t.lo += lo;
                    t.hi += hi;
                }
                None => terms.push(Term { stride, lo, hi }),
            }
        };
        for (&n, &s) in self.dims().iter().zip(self.strides()) {
            add(s, n, 1);
        }
        for (&n, &s) in other.dims().iter().zip(other.strides()) {
            add(s, n, -1);
        }
        terms.sort_by_key(|t| std::cmp::Reverse(t.stride));
        // reach[k] = (lowest, highest) sum the terms from k on can make.
        let mut reach = vec![(0i64, 0i64); terms.len() + 1];
        for k in (0..terms.len()).rev() {
            let t = terms[k];
            reach[k] = (
                reach[k + 1].0 + t.lo * t.stride,
                reach[k + 1].1 + t.hi * t.stride,
            );
        }
        let mut budget = BUDGET;
        solvable(&terms, &reach, 0, b0 as i64 - a0 as i64, &mut budget).unwrap_or(true)
    }
}

/// Whether `target` is a sum of `terms[k..]` with coefficients in range;
/// `None` when the budget runs out.
fn solvable(
    terms: &[Term],
    reach: &[(i64, i64)],
    k: usize,
    target: i64,
    budget: &mut usize,
) -> Option<bool> {
    if k == terms.len() {
        return Some(target == 0);
    }
    let t = terms[k];
    let (rest_lo, rest_hi) = reach[k + 1];
    // c·stride must leave a remainder the later terms can reach.
    let c_lo = t.lo.max(
        (target - rest_hi).div_euclid(t.stride)
            + i64::from((target - rest_hi).rem_euclid(t.stride) != 0),
    );
    let c_hi = t.hi.min((target - rest_lo).div_euclid(t.stride));
    for c in c_lo..=c_hi {
        *budget = budget.checked_sub(1)?;
        if solvable(terms, reach, k + 1, target - c * t.stride, budget)? {
            return Some(true);
        }
    }
    Some(false)
}
