//! How much looping one shader invocation may do.
//!
//! Mesa's llvmpipe (lavapipe, a named target) ends every loop of an
//! invocation once the loops of its function have run 65,535 iterations in
//! all (`LP_MAX_TGSI_LOOP_ITERATIONS`, one counter shared by every loop,
//! nested ones included). Past that count a kernel silently stops: a line
//! longer than that is left partly unwritten. So no kernel lets one
//! invocation loop in proportion to its input: launchers cut long loops into
//! slices, one dispatch each, which run in order (a dispatch sees every
//! write of the dispatches recorded before it). Real GPUs have no such
//! counter; the extra dispatches appear only for lines or `k` far longer
//! than a slice, where they cost a few microseconds against the work.

use std::ops::Range;

/// Iterations one invocation's data-dependent loops may run in one
/// dispatch, with a wide margin below llvmpipe's 65,535 for the loops a
/// kernel runs per iteration (index math, tree steps) and for compilers that
/// unroll less.
pub(crate) const ITERATIONS: usize = 8192;

/// The most iterations a launcher lets one invocation loop where its work
/// cannot be cut further (one column of a factorization's panel, one
/// pair of a Jacobi step): below llvmpipe's 65,535 with a margin for the
/// loops' own bookkeeping. Past it a launcher returns `Error::TooLarge`.
pub(crate) const MAX_ITERATIONS: usize = 57_344;

/// `0..len` cut into consecutive slices of at most `slice` (one empty slice
/// for an empty range, so a caller still records once).
pub(crate) fn slices(len: usize, slice: usize) -> impl Iterator<Item = Range<usize>> {
    let slice = slice.max(1);
    let count = len.div_ceil(slice).max(1);
    (0..count).map(move |s| s * slice..((s + 1) * slice).min(len))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_cover_the_range_in_order() {
        let s: Vec<_> = slices(10, 4).collect();
        assert_eq!(s, [0..4, 4..8, 8..10]);
        assert_eq!(slices(8, 4).count(), 2);
        let empty: Vec<_> = slices(0, 4).collect();
        assert_eq!(empty.len(), 1);
        assert!(empty[0].is_empty());
        assert_eq!(slices(3, 0).count(), 3);
    }
}
