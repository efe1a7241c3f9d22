//! CPU sorts: each line's (key, position) pairs sorted by Rust's unstable
//! pattern-defeating quicksort, where the key is the element mapped to a
//! u64 whose order is the order of [`SortCall`](crate::backend::SortCall)
//! (NaN after everything ascending, before everything descending, -0 equal
//! to +0): pairs are all distinct, so the result is the stable order.

use super::storage::{CpuStorage, with_cpu_data};
use crate::backend::{SortCall, lines};
use crate::dtype::Element;
use crate::error::{Error, Result};

/// Runs `call`, whose output storage is `out` (fresh i32).
pub(crate) fn sort(out: &CpuStorage, call: &SortCall) -> Result<()> {
    let input = call.input.storage.host("cpu sort")?;
    let data = input.read();
    let mut out_data = out.write();
    let dst: &mut [i32] = out_data
        .as_mut_slice()
        .ok_or_else(|| Error::internal("cpu sort", "output is not i32"))?;
    let (in_lines, in_step) = lines(&call.input);
    let (out_lines, out_step) = lines(&call.out);
    let n = call.length();
    let starts: Vec<(usize, usize)> = in_lines
        .positions()
        .into_iter()
        .zip(out_lines.positions())
        .collect();
    with_cpu_data!(&*data, src => {
        // One line's pairs (none without lines, however long they are).
        let length = if starts.is_empty() { 0 } else { n };
        let mut pairs: Vec<(u64, u32)> = super::alloc::try_with_capacity("sort", length)?;
        for &(a, b) in &starts {
            pairs.clear();
            pairs.extend((0..n).map(|i| {
                let key = src[(a as isize + i as isize * in_step) as usize].key();
                // Lines are at most i32::MAX long (the op layer checks).
                (if call.descending { !key } else { key }, i as u32)
            }));
            pairs.sort_unstable();
            for (k, &(_, i)) in pairs.iter().enumerate() {
                dst[(b as isize + k as isize * out_step) as usize] = i as i32;
            }
        }
    });
    Ok(())
}

/// An element's sort key: a u64 whose unsigned order is the ascending
/// order of the elements.
pub(crate) trait Keyed: Element {
    fn key(self) -> u64;
}

macro_rules! keyed_through_f64 {
    ($($t:ty),*) => {$(
        impl Keyed for $t {
            #[inline]
            fn key(self) -> u64 {
                sort_key(self.to_f64())
            }
        }
    )*};
}
// Exact in f64.
keyed_through_f64!(f32, half::f16, half::bf16, f64, i32, u32, u8, bool);

/// i64 past 2^53 is not exact in f64: its own bits, the sign flipped.
impl Keyed for i64 {
    #[inline]
    fn key(self) -> u64 {
        (self as u64) ^ (1 << 63)
    }
}

/// A u64 whose unsigned order is the ascending order of `v`: NaN after
/// every number, -0 equal to +0.
fn sort_key(v: f64) -> u64 {
    if v.is_nan() {
        return u64::MAX;
    }
    let bits = if v == 0.0 { 0 } else { v.to_bits() };
    if bits >> 63 == 1 {
        !bits
    } else {
        bits | 1 << 63
    }
}

#[cfg(test)]
mod tests {
    use super::sort_key;

    #[test]
    fn keys_order_as_numbers_with_nan_last() {
        let ordered = [
            f64::NEG_INFINITY,
            -1e300,
            -1.0,
            -1e-310,
            0.0,
            1e-310,
            2.0,
            f64::INFINITY,
            f64::NAN,
        ];
        for w in ordered.windows(2) {
            assert!(sort_key(w[0]) < sort_key(w[1]), "{} < {}", w[0], w[1]);
        }
        assert_eq!(sort_key(-0.0), sort_key(0.0));
        assert_eq!(sort_key(-f64::NAN), sort_key(f64::NAN));
    }
}
