//! Property tests: every view op against a naive index reference.

use super::*;
use crate::index::SliceItem;
use proptest::prelude::*;

/// Row-major index tuples of `dims`.
pub(super) fn all_indices(dims: &[usize]) -> Vec<Vec<usize>> {
    let mut out = vec![vec![]];
    for &d in dims {
        out = out
            .into_iter()
            .flat_map(|prefix| {
                (0..d).map(move |i| {
                    let mut v = prefix.clone();
                    v.push(i);
                    v
                })
            })
            .collect();
    }
    out
}

/// Positions selected on one axis of extent `n`, written independently of the
/// library: filter every position against the clamped bounds.
fn reference_range(start: Option<isize>, end: Option<isize>, step: isize, n: usize) -> Vec<usize> {
    let n = n as isize;
    let norm = |v: isize, lo: isize, hi: isize| (if v < 0 { v + n } else { v }).clamp(lo, hi);
    if step > 0 {
        let s = start.map_or(0, |v| norm(v, 0, n));
        let e = end.map_or(n, |v| norm(v, 0, n));
        (0..n)
            .filter(|&i| i >= s && i < e && (i - s) % step == 0)
            .map(|i| i as usize)
            .collect()
    } else {
        let s = start.map_or(n - 1, |v| norm(v, -1, n - 1));
        let e = end.map_or(-1, |v| norm(v, -1, n - 1));
        (0..n)
            .rev()
            .filter(|&i| i <= s && i > e && (s - i) % (-step) == 0)
            .map(|i| i as usize)
            .collect()
    }
}

fn shape_strategy() -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(0usize..5, 1..5)
}

fn item_strategy() -> impl Strategy<Value = SliceItem> {
    prop_oneof![
        (-6isize..6).prop_map(SliceItem::Index),
        (
            prop::option::of(-7isize..7),
            prop::option::of(-7isize..7),
            prop_oneof![-3isize..0, 1isize..4]
        )
            .prop_map(|(start, end, step)| SliceItem::Range { start, end, step }),
        Just(SliceItem::NewAxis),
    ]
}

/// A layout reached from a contiguous one by a slice and a permutation, so
/// that it has gaps, negative strides and a non-zero offset.
fn strided_layout() -> impl Strategy<Value = Layout> {
    (shape_strategy(), any::<u64>()).prop_map(|(dims, seed)| {
        let base = Layout::contiguous(dims.clone());
        let items: Vec<SliceItem> = dims
            .iter()
            .enumerate()
            .map(|(k, _)| match (seed >> (3 * k)) & 3 {
                0 => SliceItem::Range {
                    start: None,
                    end: None,
                    step: -1,
                },
                1 => SliceItem::Range {
                    start: Some(1),
                    end: None,
                    step: 2,
                },
                _ => SliceItem::Range {
                    start: None,
                    end: None,
                    step: 1,
                },
            })
            .collect();
        let sliced = base.slice(&items).unwrap();
        let mut axes: Vec<isize> = (0..sliced.rank() as isize).collect();
        axes.rotate_left((seed as usize >> 20) % sliced.rank().max(1));
        sliced.permute(&axes).unwrap()
    })
}

proptest! {
    #[test]
    fn slice_matches_reference(dims in shape_strategy(), items in prop::collection::vec(item_strategy(), 0..4)) {
        /// What one item selects, computed without the library.
        enum Sel { New, At(usize), Many(Vec<usize>) }
        let result = Layout::contiguous(dims.clone()).slice(&items);
        let mut sels: Vec<Sel> = Vec::new();
        let mut axis = 0;
        for item in &items {
            if !matches!(item, SliceItem::NewAxis) && axis >= dims.len() {
                prop_assert!(result.is_err());
                return Ok(());
            }
            match *item {
                SliceItem::NewAxis => sels.push(Sel::New),
                SliceItem::Index(i) => {
                    let n = dims[axis] as isize;
                    let p = if i < 0 { i + n } else { i };
                    if p < 0 || p >= n {
                        prop_assert!(result.is_err());
                        return Ok(());
                    }
                    sels.push(Sel::At(p as usize));
                    axis += 1;
                }
                SliceItem::Range { start, end, step } => {
                    sels.push(Sel::Many(reference_range(start, end, step, dims[axis])));
                    axis += 1;
                }
            }
        }
        sels.extend(dims[axis..].iter().map(|&d| Sel::Many((0..d).collect())));
        let view = result.unwrap();
        let expected_dims: Vec<usize> = sels.iter().filter_map(|s| match s {
            Sel::New => Some(1),
            Sel::At(_) => None,
            Sel::Many(v) => Some(v.len()),
        }).collect();
        prop_assert_eq!(view.dims(), expected_dims.as_slice());
        // Expected positions: the cartesian product of the selections.
        let strides = Layout::contiguous(dims.clone()).strides().to_vec();
        let mut expected = vec![0usize];
        let mut k = 0;
        for sel in &sels {
            let stride = match sel { Sel::New => continue, _ => strides[k] as usize };
            expected = match sel {
                Sel::At(p) => expected.iter().map(|e| e + p * stride).collect(),
                Sel::Many(v) => expected.iter().flat_map(|e| v.iter().map(move |&i| e + i * stride)).collect(),
                Sel::New => unreachable!(),
            };
            k += 1;
        }
        if view.numel() == 0 { expected.clear(); }
        prop_assert_eq!(view.positions(), expected);
    }

    #[test]
    fn permute_and_flip_match_reference(layout in strided_layout(), seed in any::<u32>()) {
        let rank = layout.rank();
        let mut axes: Vec<isize> = (0..rank as isize).collect();
        axes.reverse();
        let permuted = layout.permute(&axes).unwrap();
        for idx in all_indices(permuted.dims()) {
            let orig: Vec<usize> = idx.iter().rev().copied().collect();
            prop_assert_eq!(permuted.position(&idx), layout.position(&orig));
        }
        let flip_axis = (seed as usize % rank.max(1)) as isize;
        let flipped = layout.flip(&[flip_axis]).unwrap();
        for idx in all_indices(flipped.dims()) {
            let mut orig = idx.clone();
            let a = flip_axis as usize;
            orig[a] = layout.dims()[a] - 1 - idx[a];
            prop_assert_eq!(flipped.position(&idx), layout.position(&orig));
        }
    }

    #[test]
    fn reshape_view_keeps_row_major_order(layout in strided_layout(), split in 1usize..4) {
        let n = layout.numel();
        // Every shape whose row-major order equals the layout's: a factorisation of n.
        let candidates: Vec<Vec<usize>> = vec![vec![n], vec![1, n, 1],
            if n % split == 0 { vec![split, n / split] } else { vec![n] },
            layout.dims().iter().rev().copied().collect()];
        for dims in candidates {
            if dims.iter().product::<usize>() != n { continue; }
            let shape = Shape::from(dims.clone());
            if let Some(view) = layout.reshaped(&shape) {
                prop_assert_eq!(view.dims(), dims.as_slice());
                prop_assert_eq!(view.positions(), layout.positions());
            }
        }
        // A dense layout always reshapes without a copy.
        let dense = Layout::contiguous(layout.dims().to_vec());
        prop_assert!(dense.reshaped(&Shape::from(vec![n])).is_some());
    }

    #[test]
    fn overlap_matches_a_brute_force_check(a in strided_layout(), b in strided_layout(), shift in 0usize..7) {
        let b = Layout::from_parts(b.shape().clone(), b.strides().into(), b.offset() + shift);
        let pa: std::collections::HashSet<usize> = a.positions().into_iter().collect();
        let shared = b.positions().iter().any(|p| pa.contains(p));
        // Never "disjoint" when they share; these small cases settle exactly.
        prop_assert_eq!(a.may_overlap(&b), shared, "{:?} vs {:?}", a, b);
        prop_assert_eq!(b.may_overlap(&a), shared);
    }

    #[test]
    fn iter_plan_visits_the_same_pairs(a in strided_layout(), seed in any::<u64>()) {
        // Pair the layout with a contiguous destination and with a broadcast input.
        let dest = dense_layout_like(a.shape(), &[&a]);
        let mut row: Vec<usize> = a.dims().to_vec();
        if let Some(first) = row.first_mut() { *first = 1; }
        let b = Layout::contiguous(row).broadcast_to(a.shape()).unwrap();
        let (lead, other) = if seed % 2 == 0 { (&dest, &a) } else { (&a, &dest) };
        let mut want: Vec<(usize, usize, usize)> = lead.positions().into_iter().zip(other.positions()).zip(b.positions()).map(|((x, y), z)| (x, y, z)).collect();
        want.sort_unstable();
        // Reordered for long runs too: the same pairs, in another order.
        let plain = IterPlan::new(&[lead, other, &b]);
        for plan in [plain.clone(), plain.with_long_runs()] {
            prop_assert_eq!(plan.numel(), a.numel());
            let walk = |k: usize| -> Vec<usize> {
                let l = Layout::from_parts(Shape::from(plan.shape.to_vec()), plan.strides[k].clone(), plan.offsets[k]);
                if a.numel() == 0 { vec![] } else { l.positions() }
            };
            let mut got: Vec<(usize, usize, usize)> = walk(0).into_iter().zip(walk(1)).zip(walk(2)).map(|((x, y), z)| (x, y, z)).collect();
            got.sort_unstable();
            prop_assert_eq!(&got, &want);
        }
    }
}

#[test]
fn a_short_innermost_axis_gives_way_to_a_long_one() {
    // A transposed shuffle: out [160, 2] contiguous from in [2, 160]^T.
    let out = Layout::contiguous([3, 160, 2]);
    let a = Layout::contiguous([3, 2, 160]).permute(&[0, 2, 1]).unwrap();
    let plan = IterPlan::new(&[&out, &a]);
    assert_eq!(plan.shape.as_slice(), &[3, 160, 2]);
    let long = plan.with_long_runs();
    assert_eq!(long.shape.as_slice(), &[3, 2, 160]);
    assert_eq!(long.strides[0].as_slice(), &[320, 1, 2]);
    assert_eq!(long.strides[1].as_slice(), &[320, 160, 1]);
    // A nearest upsampling's broadcast: the rows' axis goes innermost,
    // not the longer channels' (whose strides are large).
    let x = Layout::contiguous([96, 80, 1, 80, 1]);
    let spread = x
        .broadcast_to(&Shape::from(vec![96, 80, 2, 80, 2]))
        .unwrap();
    let out = Layout::contiguous([96, 80, 2, 80, 2]);
    let long = IterPlan::new(&[&out, &spread]).with_long_runs();
    assert_eq!(long.shape.as_slice(), &[96 * 80, 2, 2, 80]);
    assert_eq!(long.strides[1].as_slice(), &[80, 0, 0, 1]);
    // Short axes alone: the longest goes innermost (here the two outer
    // axes merged into one of 15).
    let out = Layout::contiguous([3, 5, 2]);
    let a = Layout::contiguous([2, 3, 5]).permute(&[1, 2, 0]).unwrap();
    let long = IterPlan::new(&[&out, &a]).with_long_runs();
    assert_eq!(long.shape.as_slice(), &[2, 15]);
    assert_eq!(long.strides[1].as_slice(), &[15, 1]);
    // Runs of 16 or more stay.
    let out = Layout::contiguous([40, 16]);
    let a = Layout::contiguous([16, 40]).reversed_axes();
    let plan = IterPlan::new(&[&out, &a]).with_long_runs();
    assert_eq!(plan.shape.as_slice(), &[40, 16]);
}

#[test]
fn a_short_unit_stride_axis_folds_into_its_runs() {
    // A nearest upsampling by 2 x 3: each element three times in a row,
    // each row twice.
    let x = Layout::contiguous([4, 5, 1, 6, 1]);
    let spread = x.broadcast_to(&Shape::from(vec![4, 5, 2, 6, 3])).unwrap();
    let out = Layout::contiguous([4, 5, 2, 6, 3]);
    let plan = IterPlan::new(&[&out, &spread]).with_long_runs();
    let (runs, rep, t) = plan.interleaved().expect("repeats");
    assert_eq!((rep, t), (3, 0));
    // The columns' axis innermost, each of its elements a run of 3.
    assert_eq!(runs.shape.last(), Some(&6));
    assert_eq!(runs.strides[0].last(), Some(&3));
    assert_eq!(runs.strides[1].last(), Some(&1));
    // Every output element is one of a run's repeats, once.
    let mut seen = vec![0; 4 * 5 * 2 * 6 * 3];
    for e in 0..runs.numel() {
        let (mut rest, mut po, mut pa) = (e, 0, 0);
        for d in (0..runs.shape.len()).rev() {
            let i = (rest % runs.shape[d]) as isize;
            rest /= runs.shape[d];
            po += i * runs.strides[0][d];
            pa += i * runs.strides[1][d];
        }
        for k in 0..rep as isize {
            let at = (po + k) as usize;
            seen[at] += 1;
            // Output (n, y, _, x, _) of 4 x 5 x 2 x 6 x 3 reads input
            // (n, y, x) of 4 x 5 x 6.
            let (ny, x) = (at / 36, at % 18 / 3);
            assert_eq!(pa, (ny * 6 + x) as isize, "output {at}");
        }
    }
    assert!(seen.iter().all(|&c| c == 1));
    // A pixel shuffle: out [c, h, 2, w, 2] from in [c, 2, 2, h, w].
    let a = Layout::contiguous([3, 2, 2, 5, 7])
        .permute(&[0, 3, 1, 4, 2])
        .unwrap();
    let out = Layout::contiguous([3, 5, 2, 7, 2]);
    let plan = IterPlan::new(&[&out, &a]).with_long_runs();
    let (runs, rep, t) = plan.interleaved().unwrap();
    assert_eq!((rep, t), (2, 35));
    assert_eq!(runs.shape.last(), Some(&7));
    assert_eq!(runs.strides[0].last(), Some(&2));
    assert_eq!(runs.strides[1].last(), Some(&1));
    // An axis of unit output stride 16 or more long, or none: no folding
    // (a dense copy's axes merge into one long run).
    let wide = x.broadcast_to(&Shape::from(vec![4, 5, 2, 6, 16])).unwrap();
    let out = Layout::contiguous([4, 5, 2, 6, 16]);
    assert!(IterPlan::new(&[&out, &wide]).interleaved().is_none());
    let a = Layout::contiguous([4, 5, 2, 6, 3]);
    let out = Layout::contiguous([4, 5, 2, 6, 3]);
    assert!(IterPlan::new(&[&out, &a]).interleaved().is_none());
}

#[test]
fn transposed_dense_operands_plan_to_one_run() {
    let a = Layout::contiguous([3, 4]).reversed_axes();
    let out = dense_layout_like(a.shape(), &[&a]);
    assert_eq!(out.strides(), &[1, 4]);
    let plan = IterPlan::new(&[&out, &a]);
    assert!(plan.is_contiguous());
    assert_eq!(plan.numel(), 12);
    // The first full-shape input decides: a row-major one keeps row-major.
    let c = Layout::contiguous([4, 3]);
    assert_eq!(dense_layout_like(c.shape(), &[&c, &a]).strides(), &[3, 1]);
    assert_eq!(dense_layout_like(c.shape(), &[&a, &c]).strides(), &[1, 4]);
}

#[test]
fn span_and_overlap() {
    let l = Layout::contiguous([4, 5]);
    let row = l.slice(&[SliceItem::Index(1)]).unwrap();
    assert_eq!(row.span(), Some((5, 9)));
    let col = l
        .slice(&[SliceItem::from(..), SliceItem::Index(0)])
        .unwrap();
    assert!(row.may_overlap(&col));
    // Interleaved rows and columns share nothing.
    let even = l
        .slice(&[SliceItem::Range {
            start: None,
            end: None,
            step: 2,
        }])
        .unwrap();
    let odd = l
        .slice(&[SliceItem::Range {
            start: Some(1),
            end: None,
            step: 2,
        }])
        .unwrap();
    assert!(!even.may_overlap(&odd));
    let t = l.reversed_axes();
    let even_cols = t
        .slice(&[SliceItem::Range {
            start: None,
            end: None,
            step: 2,
        }])
        .unwrap();
    assert!(
        !even_cols.may_overlap(
            &t.slice(&[SliceItem::Range {
                start: Some(1),
                end: None,
                step: 2
            }])
            .unwrap()
        )
    );
    assert!(even_cols.may_overlap(&even));
    let flipped = l.flip(&[0, 1]).unwrap();
    assert_eq!(flipped.span(), Some((0, 19)));
    assert!(
        l.broadcast_to(&Shape::from([2, 4, 5]))
            .unwrap()
            .has_self_overlap()
    );
}

proptest! {
    #[test]
    fn coalescing_keeps_row_major_positions(l in strided_layout()) {
        let c = l.coalesced();
        prop_assert_eq!(c.positions(), l.positions());
        prop_assert!(c.rank() <= l.rank().max(1));
    }
}

proptest! {
    #[test]
    fn diagonal_picks_row_plus_offset_equals_column(
        l in strided_layout(),
        offset in -5isize..6,
    ) {
        prop_assume!(l.rank() >= 2);
        let d = l.diagonal("t", offset).unwrap();
        let r = l.rank();
        // Reference: every index whose column minus row is `offset`, batch
        // by batch, in row order.
        let mut want = Vec::new();
        for idx in all_indices(l.dims()) {
            if idx[r - 1] as isize - idx[r - 2] as isize == offset {
                want.push(l.position(&idx));
            }
        }
        prop_assert_eq!(d.positions(), want);
    }
}

proptest! {
    /// A layout cut anywhere addresses every element as the leading part's
    /// position plus the trailing part's; the last axis split off gives the
    /// same lines and the step along them.
    #[test]
    fn a_split_layout_adds_up_to_the_whole(l in strided_layout(), at in 0usize..6) {
        let at = at.min(l.rank());
        let (lead, trail) = (l.leading(at), l.trailing(at));
        prop_assert_eq!(lead.rank() + trail.rank(), l.rank());
        prop_assert_eq!(trail.offset(), 0);
        for idx in all_indices(l.dims()) {
            let (i, j) = idx.split_at(at);
            // Relative to a start: below zero along negative strides.
            let rel: isize = j.iter().zip(trail.strides()).map(|(&j, &s)| j as isize * s).sum();
            prop_assert_eq!(lead.position(i) as isize + rel, l.position(&idx) as isize);
        }
        prop_assume!(l.rank() >= 1);
        let (lines, step) = l.split_last();
        let n = l.dims()[l.rank() - 1];
        let mut want = Vec::new();
        for start in lines.positions() {
            want.extend((0..n).map(|k| (start as isize + k as isize * step) as usize));
        }
        prop_assert_eq!(want, l.positions());
    }
}

#[test]
fn diagonal_needs_two_axes() {
    let e = Layout::contiguous([4]).diagonal("diagonal", 0).unwrap_err();
    assert!(e.to_string().contains("diagonal"), "{e}");
}

proptest! {
    /// `positions_aligned(n)` says whether every position `positions()`
    /// lists is a multiple of `n`.
    #[test]
    fn aligned_positions_match_the_positions(layout in strided_layout(), n in 1usize..6) {
        let all = layout.positions().iter().all(|&p| p % n == 0);
        if layout.positions_aligned(n) {
            prop_assert!(all);
        } else if layout.numel() > 0 {
            // Unaligned: some position is off, unless only one element
            // would reveal it (an axis of extent 1 or an empty layout).
            prop_assert!(!all);
        }
    }
}
