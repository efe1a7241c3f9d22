//! A channels-last convolution's copies of the input rows a band of
//! outputs reads: zero-padded, widened to f32, each pixel's channels side
//! by side ([`copy_rows`]), or each channel's value of two pixels side by
//! side ([`copy_pairs`], for the paired kernels of `sgemm/pairs.rs`).

use super::numeric::Widen;

/// The image a band copy reads: `x` from `offset`, `dims` `[c, h, w]`,
/// `strides` `[n, c, h, w]`, padded by `pad` rows and columns before.
pub(super) struct Input<'a, T> {
    pub(super) x: &'a [T],
    pub(super) dims: [usize; 3],
    pub(super) strides: [isize; 4],
    pub(super) offset: usize,
    pub(super) pad: [usize; 2],
}

impl<T: Widen> Input<'_, T> {
    /// Where padded column `q` of row `y` (of `image`) starts in `x`: none
    /// where `y` or `q` lies in the padding.
    fn start(&self, (image, y): (usize, isize), q: usize) -> Option<isize> {
        let ([_, h, wd], [sn, _, sh, sw]) = (self.dims, self.strides);
        let column = q as isize - self.pad[1] as isize;
        ((0..h as isize).contains(&y) && (0..wd as isize).contains(&column))
            .then(|| self.offset as isize + image as isize * sn + y * sh + column * sw)
    }

    /// Padded column `q`'s channels of row `y` (of `image`) where they lie
    /// side by side inside the input.
    fn run(&self, row: (usize, isize), q: usize) -> Option<&[T]> {
        let at = self.start(row, q).filter(|_| self.strides[1] == 1)? as usize;
        Some(&self.x[at..at + self.dims[0]])
    }

    /// Writes padded column `q`'s channels of row `y` (of `image`) to
    /// `dst[ch lanes]`, zeros where `y` or `q` lies in the padding.
    fn pixel(&self, dst: &mut [f32], lanes: usize, row: (usize, isize), q: usize) {
        let Some(at) = self.start(row, q) else {
            dst.iter_mut().step_by(lanes).for_each(|v| *v = 0.0);
            return;
        };
        if let Some(from) = self.run(row, q) {
            for (slot, v) in dst.iter_mut().step_by(lanes).zip(from) {
                *slot = v.to_f32();
            }
        } else {
            for (ch, slot) in dst.iter_mut().step_by(lanes).enumerate() {
                *slot = self.x[(at + ch as isize * self.strides[1]) as usize].to_f32();
            }
        }
    }
}

/// Copies padded input rows `top..top + rows` of `image` into `copy`,
/// `[r][q][c]`: row `r` is input row `top + r - pad0`, column `q` input
/// column `q - pad1` (`wq` of them), each pixel's `c` channels side by
/// side, widened to f32, zeros outside the input. Every element written.
pub(super) fn copy_rows<T: Widen>(
    input: &Input<'_, T>,
    copy: &mut [f32],
    image: usize,
    top: usize,
    wq: usize,
) {
    let ([c, h, wd], [pad0, pad1]) = (input.dims, input.pad);
    let [sn, sc, sh, sw] = input.strides;
    // Columns q inside the input: pad1 <= q < pad1 + wd.
    let (lo, hi) = (pad1.min(wq), (pad1 + wd).min(wq));
    for (r, dst) in copy.chunks_mut(wq * c).enumerate() {
        let y = (top + r) as isize - pad0 as isize;
        if !(0..h as isize).contains(&y) || lo == hi {
            dst.fill(0.0);
            continue;
        }
        dst[..lo * c].fill(0.0);
        dst[hi * c..].fill(0.0);
        if sc == 1 && sw == c as isize {
            // Dense pixels: the row's inside is one run.
            let first = input.offset as isize + image as isize * sn + y * sh;
            let at = (first + (lo as isize - pad1 as isize) * sw) as usize;
            let len = (hi - lo) * c;
            for (slot, v) in dst[lo * c..hi * c].iter_mut().zip(&input.x[at..at + len]) {
                *slot = v.to_f32();
            }
            continue;
        }
        for (q, pixel) in dst[lo * c..hi * c].chunks_mut(c).enumerate() {
            input.pixel(pixel, 1, (image, y), q + lo);
        }
    }
}

/// Copies padded input rows `top..top + rows` of `image` into `copy` in
/// pairs, `[r][q][c][2]`: `[r][q][ch][0]` is [`copy_rows`]' `[r][q][ch]`
/// and `[r][q][ch][1]` its `[r][q + half][ch]` (`half` padded columns on:
/// the second pixel's; zero past the input's last column, which only a
/// pixel past the output's last reads), `wq` pair columns a row. Every
/// element written.
pub(super) fn copy_pairs<T: Widen>(
    input: &Input<'_, T>,
    copy: &mut [f32],
    image: usize,
    top: usize,
    (wq, half): (usize, usize),
) {
    let [c, h, _] = input.dims;
    for (r, dst) in copy.chunks_mut(wq * 2 * c).enumerate() {
        let y = (top + r) as isize - input.pad[0] as isize;
        if !(0..h as isize).contains(&y) {
            dst.fill(0.0);
            continue;
        }
        for (q, pair) in dst.chunks_exact_mut(2 * c).enumerate() {
            match (input.run((image, y), q), input.run((image, y), q + half)) {
                (Some(a), Some(b)) => {
                    for ((two, u), v) in pair.chunks_exact_mut(2).zip(a).zip(b) {
                        two[0] = u.to_f32();
                        two[1] = v.to_f32();
                    }
                }
                _ => {
                    input.pixel(pair, 2, (image, y), q);
                    input.pixel(&mut pair[1..], 2, (image, y), q + half);
                }
            }
        }
    }
}
