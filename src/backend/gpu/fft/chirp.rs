//! Bluestein's algorithm's tables, computed on the host in f64: a
//! transform of `n` is `y[k] = c[k] sum_j (x[j] c[j]) conj(c[k - j])` with
//! the chirp `c[j] = exp(-+ i pi j^2 / n)` (`jk = (j^2 + k^2 - (k - j)^2) /
//! 2`), a circular convolution over `m`, the power of two at least `2n - 1`,
//! done by transforms of `m` points. The op layer composes it from kernel
//! calls where `m` is longer than one kernel's line; the kernel runs it
//! whole where `m` fits (`FftKey::chirp`).

use super::plan::twiddle_table;
use num_complex::Complex;

/// The convolution's length for a transform of `n`: the power of two at
/// least `2n - 1`.
pub(crate) fn chirp_len(n: usize) -> usize {
    (2 * n).saturating_sub(1).max(1).next_power_of_two()
}

/// Bluestein's chirp for a transform of `n`: `exp(-+ i pi j^2 / n)`
/// (`+` for the inverse), with `j^2` reduced mod `2n` first.
pub(crate) fn chirp(n: usize, inverse: bool) -> Vec<Complex<f64>> {
    let sign = if inverse { 1.0 } else { -1.0 };
    (0..n)
        .map(|j| {
            let j2 = (j as u128 * j as u128 % (2 * n as u128)) as f64;
            Complex::from_polar(1.0, sign * std::f64::consts::PI * j2 / n as f64)
        })
        .collect()
}

/// The kernel of Bluestein's convolution for a transform of `n`, as f32
/// pairs: `conj(chirp)` at `j` and `m - j`, transformed in f64, with the
/// inverse transform's `1/m` folded in.
pub(crate) fn bluestein_kernel(n: usize, inverse: bool) -> Vec<f32> {
    let m = chirp_len(n);
    let mut kernel = vec![Complex::new(0.0, 0.0); m];
    for (j, c) in chirp(n, inverse).iter().enumerate() {
        kernel[j] = c.conj();
        if j > 0 {
            kernel[m - j] = c.conj();
        }
    }
    rustfft::FftPlanner::<f64>::new()
        .plan_fft_forward(m)
        .process(&mut kernel);
    pairs(&kernel.iter().map(|c| c / m as f64).collect::<Vec<_>>())
}

/// Complex values as interleaved f32 pairs.
pub(crate) fn pairs(v: &[Complex<f64>]) -> Vec<f32> {
    v.iter().flat_map(|c| [c.re as f32, c.im as f32]).collect()
}

/// The table of a kernel running Bluestein's algorithm for a transform of
/// `n` whole: the twiddles of its passes of `m`, then the chirp (`n`
/// entries), then the convolution's kernel (`m` entries), where
/// [`table_starts`] says.
pub(crate) fn bluestein_table(n: usize, inverse: bool) -> Vec<f32> {
    let m = chirp_len(n);
    let mut table = twiddle_table(m, None);
    table.extend(pairs(&chirp(n, inverse)));
    table.extend(bluestein_kernel(n, inverse));
    table
}

/// Where [`bluestein_table`]'s chirp and kernel start (in entries).
pub(crate) fn table_starts(n: usize) -> (usize, usize) {
    let m = chirp_len(n);
    (m, m + n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_holds_its_parts_where_it_says() {
        for n in [1, 17, 19, 1000, 2047] {
            let m = chirp_len(n);
            assert!(m >= 2 * n - 1 && m.is_power_of_two() && m < 4 * n, "{n}");
            let table = bluestein_table(n, n % 2 == 0);
            assert_eq!(table.len(), 2 * (2 * m + n));
            let (chirp_at, kernel_at) = table_starts(n);
            // The chirp's first entry is 1; the kernel's transform's first
            // is the sum of conj(chirp) over the circle, over m.
            assert_eq!(&table[2 * chirp_at..2 * chirp_at + 2], &[1.0, 0.0]);
            let c = chirp(n, n % 2 == 0);
            let sum: Complex<f64> =
                c.iter().map(|c| c.conj()).sum::<Complex<f64>>() * 2.0 - Complex::new(1.0, 0.0);
            let first = Complex::new(table[2 * kernel_at] as f64, table[2 * kernel_at + 1] as f64);
            assert!((first - sum / m as f64).norm() < 1e-6, "{n}: {first} {sum}");
        }
    }
}
