//! Where each output of a resized axis reads and with what weights, by
//! PyTorch's CPU formulas, written once for the two precisions they run
//! in: `single` (f32: every dtype's, and nearest always, as PyTorch's
//! `nearest_idx`; the GPU kernel's, step for step) and `double` (f64
//! data's blending modes, as PyTorch works them out in its `opmath_t`).

/// The formulas in `$t`, as the module `$m`.
macro_rules! taps_in {
    ($m:ident, $t:ty) => {
        pub(crate) mod $m {
            use crate::ops::resize::Resize;

            /// Input positions per output position
            /// (`area_pixel_compute_scale`): `n / m`, `1 / scale` when a
            /// factor is given, `(n - 1) / (m - 1)` with corners aligned
            /// (which ignores the factor).
            pub(crate) fn source_ratio(n: usize, m: usize, scale: Option<f64>, mode: Resize) -> $t {
                match (mode, scale) {
                    (Resize::BilinearAlignCorners, _) if m > 1 => (n - 1) as $t / (m - 1) as $t,
                    (Resize::BilinearAlignCorners, _) => 0.0,
                    (_, Some(s)) => (1.0 / s) as $t,
                    (_, None) => n as $t / m as $t,
                }
            }

            /// Output `i`'s two input positions and the second one's weight
            /// (the nearest mode uses the first), as PyTorch's CPU kernels
            /// (`nearest_idx`, `compute_source_index_and_lambda`): an
            /// output as long as its input copies it, and, with
            /// `shortcuts` (PyTorch's fast nearest path: see
            /// `ops/resize.rs`'s `nearest_shortcuts`), a nearest output
            /// twice as long takes `i / 2`, whatever factor was given;
            /// without them a nearest output takes `floor(i * ratio)`
            /// always.
            pub(crate) fn source_taps(
                i: usize,
                n: usize,
                m: usize,
                ratio: $t,
                mode: Resize,
                shortcuts: bool,
            ) -> (usize, usize, $t) {
                let last = n - 1;
                let at = |k: usize| k.min(last);
                if n == m && (shortcuts || mode != Resize::Nearest) {
                    return (at(i), at(i), 0.0);
                }
                let source = match mode {
                    Resize::Nearest if shortcuts && m == 2 * n => return (at(i / 2), 0, 0.0),
                    Resize::Nearest => return (at(((i as $t) * ratio).floor() as usize), 0, 0.0),
                    // (The antialiased form takes windows instead: never here.)
                    Resize::Bilinear | Resize::BilinearAntialias => {
                        (ratio * (i as $t + 0.5) - 0.5).max(0.0)
                    }
                    Resize::BilinearAlignCorners => ratio * i as $t,
                };
                // C's `floorf`, as PyTorch's `guard_index_and_lambda`: f64
                // data's position is rounded to f32 first (3084.99988 is
                // 3085), and the weight, clamped, is 0 there.
                let lower = ((source as f32).floor() as usize).min(last);
                let weight = (source - lower as $t).clamp(0.0, 1.0);
                (at(lower), at(lower + 1), weight)
            }

            /// An antialiased axis's half window and its inverse scale:
            /// `scale` and `1 / scale` when downsampling, 1 and 1 otherwise.
            fn antialias_support(scale: $t) -> ($t, $t) {
                if scale >= 1.0 {
                    (scale, 1.0 / scale)
                } else {
                    (1.0, 1.0)
                }
            }

            /// The most input positions an antialiased output weighs along
            /// an axis of `scale` (PyTorch's `max_interp_size`): twice the
            /// half window rounded up, plus one.
            pub(crate) fn antialias_taps(scale: $t) -> usize {
                (antialias_support(scale).0.ceil() as usize)
                    .saturating_mul(2)
                    .saturating_add(1)
            }

            /// Output `i`'s window along an axis of `n` resized with `scale`
            /// input positions per output (PyTorch's
            /// `_compute_indices_min_size_weights_aa` with the bilinear
            /// filter, `align_corners=False`), step by step as the GPU
            /// kernel computes it in f32: the first input position, the
            /// window's length (at most [`antialias_taps`]) and the weight
            /// of each position from the first (normalised to sum to 1
            /// unless all are 0), which holds no memory: a window can be as
            /// long as its axis. The window is `scale` wide each side of the
            /// centre when downsampling, 1 when upsampling.
            pub(crate) fn antialias_weights(
                i: usize,
                n: usize,
                scale: $t,
            ) -> (usize, usize, impl Fn(usize) -> $t) {
                let (support, inverse) = antialias_support(scale);
                let max_taps = antialias_taps(scale);
                let center = scale * (i as $t + 0.5);
                // Truncated toward zero, as C++'s casts (and WGSL's) do.
                let first = ((center - support) + 0.5).max(0.0) as usize;
                let end = (((center + support) + 0.5) as usize).min(n);
                let count = end.saturating_sub(first).min(max_taps);
                // An empty window past the axis (the centre rounded to `n`)
                // starts at its last element, as the kernel reads it.
                let first = first.min(n.saturating_sub(1));
                let raw = move |j: usize| {
                    let x = (((first + j) as $t - center) + 0.5) * inverse;
                    let x = x.abs();
                    if x < 1.0 { 1.0 - x } else { 0.0 }
                };
                let total = (0..count).fold(0.0, |t: $t, j| t + raw(j));
                let weight = move |j: usize| if total == 0.0 { raw(j) } else { raw(j) / total };
                (first, count, weight)
            }
        }
    };
}

taps_in!(single, f32);
taps_in!(double, f64);

#[cfg(test)]
mod tests {
    use super::single::{antialias_weights, source_ratio};
    use crate::ops::resize::Resize;

    /// Upsampling an axis of 2^23 or more, the last output's centre rounds
    /// to `n` in f32 and its window holds nothing: its first position is
    /// still inside the axis (the kernel reads it, times 0).
    #[test]
    fn empty_windows_start_inside_the_axis() {
        for n in [(1 << 23) + 2, (1 << 23) + 3, 10_485_760, (1 << 24) - 2] {
            for m in [n + 1, n + 2, n + 7] {
                let ratio = source_ratio(n, m, None, Resize::BilinearAntialias);
                for i in [0, m / 2, m - 2, m - 1] {
                    let (first, count, _) = antialias_weights(i, n, ratio);
                    assert!(first < n, "n {n} m {m} output {i}: first {first}");
                    assert!(first + count <= n, "n {n} m {m} output {i}");
                }
            }
        }
    }
}
