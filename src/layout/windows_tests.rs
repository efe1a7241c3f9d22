//! Tests of the binding windows: every element of the op lands in exactly
//! one block, through positions inside its binding's window, and every
//! window fits the limit.

use super::Layout;
use super::tests::all_indices;
use super::windows::{WindowOperand, split_into_windows};
use proptest::prelude::*;

/// Splits and checks: the (position per operand) tuples over all blocks,
/// mapped back through the windows, are the op's own, each once; windows
/// are aligned and fit. Returns the number of blocks.
fn check(operands: &[WindowOperand<'_>], limit: u64, align: u64) -> usize {
    let blocks = split_into_windows(operands, limit, align);
    let dims = operands[0].layout.dims();
    let mut want: Vec<Vec<usize>> = all_indices(dims)
        .iter()
        .map(|i| operands.iter().map(|o| o.layout.position(i)).collect())
        .collect();
    let mut got: Vec<Vec<usize>> = Vec::new();
    for b in &blocks {
        for w in b.windows.iter().flatten() {
            assert!(w.size <= limit, "{w:?} over {limit}");
            assert_eq!(w.offset % align, 0, "{w:?}");
            assert_eq!(w.size % 4, 0, "{w:?}");
        }
        for i in all_indices(b.layouts[0].dims()) {
            got.push(
                operands
                    .iter()
                    .zip(&b.layouts)
                    .map(|(o, l)| {
                        let w = b.windows[o.binding].unwrap();
                        let p = l.position(&i);
                        let byte = p as u64 * o.element_bytes;
                        assert!(byte + o.element_bytes <= w.size, "{p} outside {w:?}");
                        p + (w.offset / o.element_bytes) as usize
                    })
                    .collect(),
            );
        }
    }
    want.sort();
    got.sort();
    assert_eq!(got, want);
    blocks.len()
}

fn layout(dims: &[usize], strides: &[isize], offset: usize) -> Layout {
    Layout::from_parts(dims.to_vec().into(), strides.into(), offset)
}

#[test]
fn operands_that_fit_make_one_block() {
    let a = Layout::contiguous([10, 10]);
    let ops = [WindowOperand {
        layout: &a,
        binding: 0,
        element_bytes: 4,
    }];
    assert_eq!(check(&ops, 400, 16), 1);
}

#[test]
fn a_transposed_add_over_a_large_square_splits_into_few_blocks() {
    // [7240, 7240] f32 (200 MiB) and its transpose, 128 MiB windows.
    let n = 7240;
    let out = Layout::contiguous([n, n]);
    let a = Layout::contiguous([n, n]);
    let t = layout(&[n, n], &[1, n as isize], 0);
    let ops = [
        WindowOperand {
            layout: &out,
            binding: 0,
            element_bytes: 4,
        },
        WindowOperand {
            layout: &a,
            binding: 1,
            element_bytes: 4,
        },
        WindowOperand {
            layout: &t,
            binding: 2,
            element_bytes: 4,
        },
    ];
    let blocks = split_into_windows(&ops, 128 << 20, 256);
    assert_eq!(blocks.len(), 4);
}

#[test]
fn a_long_stepped_view_splits_along_its_steps() {
    // 600 elements a MiB apart in a 600 MiB u8 buffer.
    let v = layout(&[600], &[1 << 20], 0);
    let ops = [
        WindowOperand {
            layout: &v,
            binding: 0,
            element_bytes: 1,
        },
        WindowOperand {
            layout: &v,
            binding: 0,
            element_bytes: 1,
        },
    ];
    let blocks = split_into_windows(&ops, 128 << 20, 256);
    assert!(blocks.len() <= 8, "{} blocks", blocks.len());
    assert_eq!(
        blocks.iter().map(|b| b.layouts[0].numel()).sum::<usize>(),
        600
    );
}

proptest! {
    /// Random strides (negative and zero too) and offsets, three operands
    /// on bindings of their own, tiny limits: every element once, in its
    /// window.
    #[test]
    fn blocks_cover_every_element_once_inside_windows(
        dims in prop::collection::vec(1usize..9, 1..4),
        strides in prop::collection::vec(prop::collection::vec(-30isize..30, 3), 3),
        extra in prop::collection::vec(0usize..30, 3),
        eb in prop::sample::select(vec![1u64, 2, 4]),
        limit in prop::sample::select(vec![48u64, 64, 128, 1024]),
    ) {
        let rank = dims.len();
        let layouts: Vec<Layout> = (0..3)
            .map(|k| {
                let s: Vec<isize> = strides[k][..rank].to_vec();
                // An offset that keeps every position non-negative.
                let low: isize = dims
                    .iter()
                    .zip(&s)
                    .map(|(&d, &st)| (d as isize - 1) * st.min(0))
                    .sum();
                layout(&dims, &s, (-low) as usize + extra[k])
            })
            .collect();
        let ops: Vec<WindowOperand<'_>> = layouts
            .iter()
            .enumerate()
            .map(|(k, l)| WindowOperand { layout: l, binding: k, element_bytes: eb })
            .collect();
        check(&ops, limit, 16);
    }

    /// A destination and a read of its own buffer (as an in-place op
    /// makes) share a window, close together as the scheduler requires
    /// (at most half a binding apart).
    #[test]
    fn a_destination_and_its_self_read_share_windows(
        dims in prop::collection::vec(1usize..9, 1..4),
        strides in prop::collection::vec(-30isize..30, 3),
        flip in any::<bool>(),
        shift in 0usize..8,
        eb in prop::sample::select(vec![1u64, 2, 4]),
    ) {
        let rank = dims.len();
        let s: Vec<isize> = strides[..rank].to_vec();
        let low: isize = dims.iter().zip(&s).map(|(&d, &st)| (d as isize - 1) * st.min(0)).sum();
        let out = layout(&dims, &s, (-low) as usize + 8);
        // The read: the same elements shifted, or walked backwards.
        let read = if flip {
            let mut r = out.clone();
            for a in 0..rank {
                r = r.flip(&[a as isize]).unwrap();
            }
            r
        } else {
            layout(&dims, &s, out.offset() - 8 + shift)
        };
        let limit = 128u64;
        // A flipped read is as far from the write as the span is wide.
        prop_assume!(!flip || out.span().is_none_or(|(lo, hi)| ((hi - lo) as u64 * eb) <= limit / 2));
        let ops = [
            WindowOperand { layout: &out, binding: 0, element_bytes: eb },
            WindowOperand { layout: &read, binding: 0, element_bytes: eb },
        ];
        check(&ops, limit, 16);
    }
}
