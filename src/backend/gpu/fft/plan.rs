//! What an FFT kernel is built from, as pure functions of the length and
//! the device's workgroup memory: the radices of its passes, how many lines
//! a workgroup holds, how many threads each gets and in what order they
//! read and write, and its twiddle table (computed in f64).

use crate::layout::Layout;

/// The largest radix a pass takes; lengths with a larger prime factor are
/// composed by the op layer (Bluestein's algorithm).
pub(crate) const MAX_RADIX: usize = 13;

/// The longest line one kernel transforms, whatever the workgroup memory.
const MAX_LINE: usize = 4096;

/// Elements a workgroup holds when its lines are read along themselves
/// (several short lines per workgroup).
const ALONG_ELEMENTS: usize = 1024;

/// Lines a workgroup holds at most.
const MAX_LINES: usize = 64;

/// Threads in a workgroup (WebGPU's guaranteed 256 at most).
const THREADS: usize = 256;

/// The longest line a device with `workgroup_bytes` of workgroup memory
/// transforms in one kernel: one buffer of complex f32 per line.
pub(crate) fn max_line(workgroup_bytes: u32) -> usize {
    (workgroup_bytes as usize / 8).min(MAX_LINE)
}

/// The radices of the passes of a transform of length `n`: its factor of
/// two in as few passes as radices up to 16 allow, split as evenly as they
/// go (1024 is 16 x 8 x 8), then the odd primes up to [`MAX_RADIX`];
/// `None` for a length with a larger prime factor. Empty for `n` 1.
pub(crate) fn radices(n: usize) -> Option<Vec<usize>> {
    let mut rest = n.max(1);
    let twos = rest.trailing_zeros() as usize;
    rest >>= twos;
    let passes = twos.div_ceil(4);
    let mut out: Vec<usize> = (0..passes)
        .map(|p| 1 << (twos / passes + usize::from(p < twos % passes)))
        .collect();
    for p in [3, 5, 7, 11, 13] {
        while rest.is_multiple_of(p) {
            out.push(p);
            rest /= p;
        }
    }
    (rest == 1).then_some(out)
}

/// How a workgroup holds its lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct GroupShape {
    /// Lines per workgroup.
    pub lines: usize,
    /// Threads per line.
    pub lanes: usize,
    /// A line's element `i` sits in slot `i + i / 16` of its part of
    /// workgroup memory, where that fits: a pass of radix 16 writes
    /// elements 16 apart from neighbouring threads, which would all fall
    /// in one memory bank.
    pub skew: bool,
    /// Complex slots from one line's start in workgroup memory to the
    /// next's: the line's slots, or one more (lines read or written
    /// across, so that a line's element sits in another bank than its
    /// neighbour's).
    pub pitch: usize,
    /// Lines are read or written across (asked for, and more than one line
    /// fits, else the shape is that of lines read along); their starts are
    /// then kept in workgroup memory.
    pub across: bool,
}

/// The shape of a workgroup transforming lines of `n` (the passes'
/// length) with `radices`, on a device with `workgroup_bytes`. `across`:
/// the lines are read or written across (thread `i` handles element
/// `i / lines` of line `i % lines`, so adjacent lines' elements are read
/// together), which asks for as many lines per workgroup as memory and
/// threads allow, even long ones. Each thread holds as many values as the
/// largest radix, or more where a line has more of them than the threads.
pub(crate) fn group_shape(
    n: usize,
    radices: &[usize],
    across: bool,
    workgroup_bytes: u32,
) -> GroupShape {
    let n = n.max(1);
    let room = workgroup_bytes as usize;
    let skew = 8 * (n + n / 16) <= room;
    let slots = if skew { n + n / 16 } else { n };
    let largest = radices.iter().copied().max().unwrap_or(1);
    let lanes = (n / largest).max(1);
    // 8 bytes a slot, and (across) each line's two starts (8 bytes); at
    // least two lines' threads in a workgroup.
    let fits = room / (8 * slots + 8);
    let across_lanes = lanes.min(THREADS / 2);
    let lines = prev_power_of_two(fits.min(MAX_LINES).min(THREADS / across_lanes));
    if across && lines > 1 {
        let padded = lines * (8 * (slots + 1) + 8) <= room;
        return GroupShape {
            lines,
            lanes: across_lanes,
            skew,
            pitch: if padded { slots + 1 } else { slots },
            across: true,
        };
    }
    let fits = room / (8 * slots);
    let lines = prev_power_of_two((ALONG_ELEMENTS / n).min(MAX_LINES).min(fits));
    GroupShape {
        lines,
        lanes: lanes.min(THREADS / lines),
        skew,
        pitch: slots,
        across: false,
    }
}

/// The largest power of two at most `v` (1 for 0).
fn prev_power_of_two(v: usize) -> usize {
    if v <= 1 {
        1
    } else {
        1 << (usize::BITS - 1 - v.leading_zeros())
    }
}

/// True when lines whose first elements `lines` walks, `step` apart along
/// each, are better read across than along: their elements are further
/// apart than `unit` (one value) and the lines next to each other in the
/// walk are nearer than that (the columns of a row-major matrix).
pub(crate) fn reads_across(lines: &Layout, step: isize, unit: isize) -> bool {
    let gap = (lines.dims().iter().zip(lines.strides()).rev())
        .find(|(d, _)| **d > 1)
        .map(|(_, s)| s.unsigned_abs());
    step.unsigned_abs() > unit.unsigned_abs() && gap.is_some_and(|g| g < step.unsigned_abs())
}

/// True when every position the walk over `lines` with `step` reaches is
/// even: the pair view of a c64 tensor, whose pairs a kernel may then read
/// as `vec2<f32>`.
pub(crate) fn even_positions(lines: &Layout, step: isize) -> bool {
    let even = |s: isize| s % 2 == 0;
    lines.offset().is_multiple_of(2)
        && even(step)
        && (lines.dims().iter().zip(lines.strides())).all(|(&d, &s)| d <= 1 || even(s))
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
                    assert!(
                        r.iter()
                            .all(|&p| p <= 16 && (p.is_power_of_two() || p <= MAX_RADIX))
                    );
                    // Powers of two first, in as few passes as radix 16 allows.
                    let twos: Vec<_> = r.iter().take_while(|p| p.is_power_of_two()).collect();
                    assert_eq!(twos.len(), (n.trailing_zeros() as usize).div_ceil(4), "{n}");
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
        assert_eq!(radices(1), Some(vec![]));
        assert_eq!(radices(8), Some(vec![8]));
        assert_eq!(radices(32), Some(vec![8, 4]));
        assert_eq!(radices(512), Some(vec![8, 8, 8]));
        assert_eq!(radices(1024), Some(vec![16, 8, 8]));
        assert_eq!(radices(4096), Some(vec![16, 16, 16]));
        assert_eq!(radices(2 * 3 * 3 * 13), Some(vec![2, 3, 3, 13]));
        assert_eq!(radices(17), None);
    }

    #[test]
    fn a_group_fits_the_threads_and_memory_of_every_device() {
        // wgpu's downlevel limits, WebGPU's, lavapipe's, NVIDIA's, and more.
        for bytes in [16352, 16384, 32768, 49152, 65536] {
            for n in 1..=max_line(bytes) {
                let Some(r) = radices(n) else { continue };
                for across in [false, true] {
                    let g = group_shape(n, &r, across, bytes);
                    let what = format!("{n} {across} {bytes}: {g:?}");
                    assert!(g.lines * g.lanes <= THREADS, "{what}");
                    assert!(g.lines.is_power_of_two() && g.lines <= MAX_LINES, "{what}");
                    let starts = if g.across { 8 * g.lines } else { 0 };
                    assert!(8 * g.lines * g.pitch + starts <= bytes as usize, "{what}");
                    // Every slot of a line lies before the next line's.
                    let slots = if g.skew { n + n / 16 } else { n };
                    let last = if g.skew { n - 1 + (n - 1) / 16 } else { n - 1 };
                    assert!(last < slots, "{what}");
                    assert!(
                        g.pitch == slots || (g.across && g.pitch == slots + 1),
                        "{what}"
                    );
                    assert!(!g.across || (across && g.lines > 1), "{what}");
                    // Lines not read across after all take the shape
                    // (and so the pipeline) of lines read along.
                    if across && !g.across {
                        assert_eq!(g, group_shape(n, &r, false, bytes), "{what}");
                    }
                    // Every lane has a butterfly in the pass of the
                    // largest radix.
                    let largest = r.iter().copied().max().unwrap_or(1);
                    assert!(g.lanes <= (n / largest).max(1), "{what}");
                }
            }
        }
        assert_eq!(max_line(16384), 2048);
        assert_eq!(max_line(32768), 4096);
        assert_eq!(max_line(65536), 4096);
        // 2^20's four-step halves: four lines of 1024 across, 64 threads
        // each, skewed and padded (two on lavapipe's 32 KiB).
        let r = radices(1024).unwrap();
        let g = group_shape(1024, &r, true, 49152);
        assert_eq!(
            (g.lines, g.lanes, g.pitch, g.skew, g.across),
            (4, 64, 1089, true, true)
        );
        let g = group_shape(1024, &r, true, 32768);
        assert_eq!((g.lines, g.lanes, g.pitch), (2, 64, 1089));
        assert_eq!(group_shape(1024, &r, false, 32768).lines, 1);
        // A line of 4096 fills 32 KiB unskewed; 48 KiB skew it.
        let r = radices(4096).unwrap();
        assert!(!group_shape(4096, &r, false, 32768).skew);
        assert!(group_shape(4096, &r, false, 49152).skew);
        // 486 = 2 x 3^5 has 162 butterflies of 3: read across, two lines
        // of 128 threads.
        let r = radices(486).unwrap();
        let g = group_shape(486, &r, true, 32768);
        assert_eq!((g.lines, g.lanes, g.across), (2, 128, true));
        // Short lines: 64 a workgroup either way (at least 64 threads).
        assert_eq!(group_shape(8, &[8], false, 16384).lines, 64);
        assert_eq!(group_shape(16, &[16], true, 16384).lines, 64);
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
