//! The dispatch grid every kernel family shares: workgroups (of 64 threads
//! unless a family says otherwise) in two dimensions, within the device's
//! per-dimension limit.

use crate::error::{Error, Result};
use crate::layout::Layout;

/// Threads per workgroup of every 1-D kernel (elementwise, reduce, scan,
/// indexing).
pub(crate) const WORKGROUP_SIZE: u32 = 64;

/// A 2-D grid of 64-thread workgroups covering `numel` threads, within the
/// per-dimension limit.
///
/// # Errors
/// `Error::TooLarge` when even a square grid cannot cover `numel`.
pub(crate) fn grid(numel: usize, max_per_dim: u32) -> Result<[u32; 2]> {
    grid_of(numel, WORKGROUP_SIZE, max_per_dim)
}

/// A 2-D grid of `group`-thread workgroups covering `threads` threads,
/// within the per-dimension limit.
///
/// # Errors
/// `Error::TooLarge` when even a square grid cannot cover `threads`.
pub(crate) fn grid_of(threads: usize, group: u32, max_per_dim: u32) -> Result<[u32; 2]> {
    let groups = threads.div_ceil(group as usize);
    let x = groups.min(max_per_dim as usize).max(1);
    let y = groups.div_ceil(x);
    if y > max_per_dim as usize {
        return Err(Error::TooLarge {
            op: "dispatch",
            what: "workgroups",
            requested: groups as u64,
            limit: max_per_dim as u64 * max_per_dim as u64,
        });
    }
    Ok([x as u32, y as u32])
}

/// Outputs along a row each thread of an image kernel writes (pooling,
/// depthwise convolution): a row's outputs and its image's are found once
/// for all of them.
pub(crate) const ROW_OUTPUTS: usize = 4;

/// Most taps of a window an image kernel's thread loops over for each of
/// its [`ROW_OUTPUTS`] outputs, within the loop budget (lavapipe stops a
/// longer loop silently; see `loop_budget.rs`): the op layer composes
/// windows of more. The kernels run one loop over a window's taps (a loop
/// per row would add its height to the count).
pub(crate) const WINDOW_TAPS: usize = super::loop_budget::MAX_ITERATIONS / ROW_OUTPUTS;

/// (segment, threads) of an image kernel writing `out` (rows last, row
/// after row from its offset): each thread writes [`ROW_OUTPUTS`] outputs
/// of one row, `segment` apart (the row's width over them, rounded up), so
/// that neighbouring threads write neighbouring outputs.
///
/// # Errors
/// `Error::Internal` naming `op` for an output that is not contiguous
/// (the op layer gives these kernels fresh outputs).
pub(crate) fn row_segments(op: &'static str, out: &Layout) -> Result<(usize, usize)> {
    if !out.is_contiguous() {
        return Err(Error::internal(
            op,
            "an image kernel's output is not contiguous",
        ));
    }
    let (rows, width) = match out.dims().split_last() {
        Some((&w, lead)) => (lead.iter().product::<usize>(), w),
        None => (1, 1),
    };
    let segment = width.div_ceil(ROW_OUTPUTS).max(1);
    Ok((segment, rows * segment))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grid_goes_two_dimensional_past_the_limit() {
        assert_eq!(grid(64, 65535).unwrap(), [1, 1]);
        assert_eq!(grid(65535 * 64 + 1, 65535).unwrap(), [65535, 2]);
        assert!(grid(usize::MAX / 2, 65535).is_err());
    }

    #[test]
    fn row_segments_cover_each_row_once() {
        for width in 1..40 {
            let out = Layout::contiguous([3, 2, width]);
            let (segment, threads) = row_segments("test", &out).unwrap();
            assert_eq!(threads, 6 * segment);
            let mut seen = vec![0; width];
            for first in 0..segment {
                for p in 0..ROW_OUTPUTS {
                    if first + p * segment < width {
                        seen[first + p * segment] += 1;
                    }
                }
            }
            assert!(seen.iter().all(|&n| n == 1), "{width}: {seen:?}");
        }
        let out = Layout::contiguous([2, 3, 16, 16]);
        assert_eq!(row_segments("test", &out).unwrap(), (4, 384));
        assert!(row_segments("test", &out.transpose(2, 3).unwrap()).is_err());
    }
}
