//! CPU binary searches ([`SearchCall`]): each value's position in its row,
//! by the sort's order (NaN after every number, -0 equal to +0).

use super::sort::Keyed;
use super::storage::{CpuStorage, Reads, with_cpu_data};
use super::threads::for_each_piece_mut;
use crate::backend::SearchCall;
use crate::error::{Error, Result};

/// Runs `call`, whose output storage is `out` (fresh i64).
pub(crate) fn search(out: &CpuStorage, call: &SearchCall) -> Result<()> {
    const OP: &str = "searchsorted";
    let reads = Reads::lock(OP, &[Some(&call.sorted), Some(&call.values)])?;
    let (sorted, values) = (reads.of(OP, &call.sorted)?, reads.of(OP, &call.values)?);
    let mut dst = out.write();
    let from = call.out.layout.offset();
    let [rows, m] = two(&call.values)?;
    let dst = &mut dst
        .as_mut_slice::<i64>()
        .ok_or_else(|| Error::internal(OP, "the output is not i64"))?[from..from + rows * m];
    let (s, v) = (&call.sorted.layout, &call.values.layout);
    let [_, n] = two(&call.sorted)?;
    let (auto_direction, right) = (call.auto_direction, call.right);
    let at = |l: &crate::layout::Layout, r: usize, j: usize| {
        (l.offset() as isize + r as isize * l.strides()[0] + j as isize * l.strides()[1]) as usize
    };
    with_cpu_data!(sorted, s_data => {
        let v_data = values.as_slice_like(s_data)
            .ok_or_else(|| Error::internal(OP, "sorted rows and values differ in dtype"))?;
        // Pieces of the values, across rows, on the op's threads.
        const PIECE: usize = 4096;
        for_each_piece_mut(dst, PIECE, |(k, piece)| {
            let mut row = (usize::MAX, false);
            for (j, slot) in piece.iter_mut().enumerate() {
                let e = k * PIECE + j;
                let (r, c) = (e / m, e % m);
                let key_at = |k: usize| s_data[at(s, r, k)].key();
                if row.0 != r {
                    row = (r, auto_direction && n > 0 && key_at(n - 1) < key_at(0));
                }
                let reversed = row.1;
                let value = v_data[at(v, r, c)].key();
                let (mut lo, mut hi) = (0, n);
                while lo < hi {
                    let mid = lo + (hi - lo) / 2;
                    let key = key_at(if reversed { n - 1 - mid } else { mid });
                    let right_of = if right { key <= value } else { key < value };
                    if right_of {
                        lo = mid + 1;
                    } else {
                        hi = mid;
                    }
                }
                *slot = if reversed { n - lo } else { lo } as i64;
            }
        });
        Ok(())
    })
}

/// The two extents of a `[rows, len]` view.
fn two(t: &crate::backend::TensorRef) -> Result<[usize; 2]> {
    match t.layout.dims() {
        &[rows, len] => Ok([rows, len]),
        _ => Err(Error::internal(
            "searchsorted",
            "a search takes [rows, len] views",
        )),
    }
}
