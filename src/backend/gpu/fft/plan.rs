//! What an FFT kernel is built from, as pure functions of the length: the
//! radices of its passes, how many lines a workgroup holds and how many
//! threads each gets, and its twiddle table (computed in f64).

/// The largest radix a pass takes; lengths with a larger prime factor are
/// composed by the op layer (Bluestein's algorithm).
pub(crate) const MAX_RADIX: usize = 13;

/// The longest line one kernel transforms, whatever the workgroup memory.
const MAX_LINE: usize = 4096;

/// Lines up to this long share a workgroup (several per workgroup).
const SHARED_GROUP: usize = 512;

/// Threads in a workgroup (WebGPU's guaranteed 256 at most).
const THREADS: usize = 256;

/// The longest line a device with `workgroup_bytes` of workgroup memory
/// transforms in one kernel: two buffers of complex f32 per line.
pub(crate) fn max_line(workgroup_bytes: u32) -> usize {
    (workgroup_bytes as usize / 16).min(MAX_LINE)
}

/// The radices of the passes of a transform of length `n`: fours, then a
/// two, then the odd primes up to [`MAX_RADIX`]; `None` for a length with a
/// larger prime factor. Empty for `n` 1.
pub(crate) fn radices(n: usize) -> Option<Vec<usize>> {
    let mut rest = n.max(1);
    let mut out = Vec::new();
    while rest.is_multiple_of(4) {
        out.push(4);
        rest /= 4;
    }
    for p in [2, 3, 5, 7, 11, 13] {
        while rest.is_multiple_of(p) {
            out.push(p);
            rest /= p;
        }
    }
    (rest == 1).then_some(out)
}

/// (lines per workgroup, threads per line) for lines of `n`.
pub(crate) fn group_shape(n: usize) -> (usize, usize) {
    let lines = (SHARED_GROUP / n.max(1)).clamp(1, 64);
    let lanes = (THREADS / lines).min(n.div_ceil(2)).max(1);
    (lines, lanes)
}

/// Where the parts of a twiddle table start, in complex entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TableParts {
    /// `total`'s roots at multiples of `split` (`w^(a split)`), from here.
    pub coarse_at: usize,
    /// `total`'s first `split` roots (`w^b`), from here.
    pub fine_at: usize,
    pub split: usize,
}

/// The twiddle table of a kernel of length `n` as f32 pairs: `exp(-2 pi i
/// m / n)` for `m` in `0..n`, then, for a four-step twist over `total`,
/// its roots in two parts where [`table_parts`] says (`w^m = coarse[m /
/// split] * fine[m % split]`, so the table stays about `2 sqrt(total)`
/// long).
pub(crate) fn twiddle_table(n: usize, total: Option<usize>) -> Vec<f32> {
    let root = |m: usize, of: usize| {
        // m < of: the angle is exact up to f64's rounding of 2 pi m / of.
        let angle = -2.0 * std::f64::consts::PI * (m as f64) / (of as f64);
        let (s, c) = angle.sin_cos();
        [c as f32, s as f32]
    };
    let mut table: Vec<f32> = (0..n).flat_map(|m| root(m, n)).collect();
    if let Some(total) = total {
        let parts = table_parts(n, total);
        let coarse = parts.fine_at - parts.coarse_at;
        let split = parts.split;
        table.extend((0..coarse).flat_map(|a| root(a * split % total, total)));
        table.extend((0..split).flat_map(|b| root(b, total)));
    }
    table
}

/// Where [`twiddle_table`]'s parts for a four-step twist over `total`
/// start in the table of a kernel of length `n`.
pub(crate) fn table_parts(n: usize, total: usize) -> TableParts {
    let split = (total as f64).sqrt().ceil() as usize;
    TableParts {
        coarse_at: n,
        fine_at: n + total.div_ceil(split),
        split,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn radices_multiply_to_the_length_and_stop_at_large_primes() {
        for n in 1..=2048 {
            match radices(n) {
                Some(r) => {
                    assert_eq!(r.iter().product::<usize>(), n);
                    assert!(r.iter().all(|&p| p <= MAX_RADIX));
                }
                None => {
                    let mut m = n;
                    for p in [2, 3, 5, 7, 11, 13] {
                        while m % p == 0 {
                            m /= p;
                        }
                    }
                    assert!(m > 1, "{n}");
                }
            }
        }
        assert_eq!(radices(8), Some(vec![4, 2]));
        assert_eq!(radices(17), None);
    }

    #[test]
    fn a_group_fits_the_threads_and_memory_of_the_smallest_device() {
        for n in 1..=MAX_LINE {
            let (lines, lanes) = group_shape(n);
            assert!(lines * lanes <= THREADS, "{n}");
            assert!(lines == 1 || lines * n <= SHARED_GROUP, "{n}");
        }
        assert_eq!(max_line(16384), 1024);
        assert_eq!(max_line(49152), 3072);
    }

    #[test]
    fn split_twiddles_multiply_to_the_root() {
        let (n, total) = (8, 1000);
        let table = twiddle_table(n, Some(total));
        let p = table_parts(n, total);
        let at = |i: usize| (table[2 * i] as f64, table[2 * i + 1] as f64);
        for m in [0, 1, 31, 32, 999] {
            let (a, b) = (at(p.coarse_at + m / p.split), at(p.fine_at + m % p.split));
            let (re, im) = (a.0 * b.0 - a.1 * b.1, a.0 * b.1 + a.1 * b.0);
            let angle = -2.0 * std::f64::consts::PI * m as f64 / total as f64;
            assert!((re - angle.cos()).abs() < 1e-6 && (im - angle.sin()).abs() < 1e-6);
        }
        assert_eq!(table.len(), 2 * (p.fine_at + p.split));
    }
}
