//! Every kernel this processor runs against an f64 product, over depths
//! across the unrolled steps and partial panels.

use super::*;

/// A small xorshift generator in [-1, 1).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> f32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 40) as f32 / (1u64 << 23) as f32 - 1.0
    }
}

#[test]
fn every_kernel_matches_an_f64_product() {
    let mut rng = Rng(0x5eed);
    for isa in Isa::available() {
        let (mr, nr) = (isa.mr(), isa.nr());
        for (m, k) in [
            (1, 0),
            (1, 1),
            (3, 2),
            (mr, 7),
            (mr + 1, 33),
            (2 * mr - 1, 128),
        ] {
            let a: Vec<f32> = (0..m * k).map(|_| rng.next()).collect();
            let b: Vec<f32> = (0..k * nr).map(|_| rng.next()).collect();
            let rows = Rows::packed(k, isa);
            let packed = pack_a("test", isa, (m, k), |r, p| a[r * k + p]).expect("packed");
            assert_eq!(packed.len(), m.div_ceil(mr) * mr * k);
            for q in 0..m.div_ceil(mr) {
                let panel = &packed[q * mr * k..(q + 1) * mr * k];
                let mut out = [f32::NAN; MAX_TILE];
                tile(panel, &b, 0, &rows, &mut out);
                for i in 0..mr {
                    for j in 0..nr {
                        let r = q * mr + i;
                        let want: f64 = if r < m {
                            (0..k)
                                .map(|p| a[r * k + p] as f64 * b[p * nr + j] as f64)
                                .sum()
                        } else {
                            0.0
                        };
                        let got = out[i * nr + j] as f64;
                        assert!(
                            (got - want).abs() <= 1e-5 * (k as f64).max(1.0),
                            "{isa:?} m {m} k {k}: ({r}, {j}) is {got}, not {want}"
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn the_best_kernel_is_available() {
    assert_eq!(Isa::available()[0], Isa::best());
    assert!(Isa::available().contains(&Isa::Portable));
    for isa in Isa::available() {
        assert!(isa.mr() * isa.nr() <= MAX_TILE);
    }
}

#[test]
#[should_panic(expected = "sgemm tile")]
fn short_panels_are_refused() {
    let isa = Isa::best();
    let mut out = [0.0; MAX_TILE];
    let rows = Rows::packed(2, isa);
    tile(
        &vec![0.0; isa.mr()],
        &vec![0.0; 2 * isa.nr()],
        0,
        &rows,
        &mut out,
    );
}

#[test]
#[should_panic(expected = "sgemm tile")]
fn rows_past_b_are_refused() {
    let isa = Isa::best();
    let mut out = [0.0; MAX_TILE];
    let rows = Rows::new(vec![0, 5], isa);
    // The second row ends at 5 + nr: one float short, at base 1.
    tile(
        &vec![0.0; 2 * isa.mr()],
        &vec![0.0; 5 + isa.nr()],
        1,
        &rows,
        &mut out,
    );
}

/// Rows anywhere in `B` (a convolution's taps read in place), in any
/// order, from any base: the product of those rows.
#[test]
fn every_kernel_reads_its_rows_where_they_are() {
    let mut rng = Rng(0xbead);
    for isa in Isa::available() {
        let (mr, nr) = (isa.mr(), isa.nr());
        let k = 11;
        let b: Vec<f32> = (0..600).map(|_| rng.next()).collect();
        let offsets: Vec<usize> = (0..k).map(|p| (p * 37 + 5) % 400).collect();
        let rows = Rows::new(offsets.clone(), isa);
        let a: Vec<f32> = (0..mr * k).map(|_| rng.next()).collect();
        let packed = pack_a("test", isa, (mr, k), |r, p| a[r * k + p]).expect("packed");
        for base in [0, 3, 600 - 400 - nr + 1] {
            let mut out = [f32::NAN; MAX_TILE];
            tile(&packed, &b, base, &rows, &mut out);
            for i in 0..mr {
                for j in 0..nr {
                    let want: f64 = (0..k)
                        .map(|p| a[i * k + p] as f64 * b[base + offsets[p] + j] as f64)
                        .sum();
                    let got = out[i * nr + j] as f64;
                    assert!(
                        (got - want).abs() <= 1e-5 * k as f64,
                        "{isa:?} base {base}: ({i}, {j}) is {got}, not {want}"
                    );
                }
            }
        }
    }
}

/// A tile stored from registers is the tile plus each row's bias, then
/// the activation (the f32 function's, NaN kept), bit for bit, in the
/// rows and columns asked for and nowhere else.
#[test]
fn a_stored_tile_is_the_tile_plus_its_bias_activated_where_asked() {
    use crate::backend::cpu::numeric::{Float, Num};
    let mut rng = Rng(0xfeed);
    type Scalar = fn(f32) -> f32;
    let acts: [(Option<Act>, Scalar); 4] = [
        (None, |v| v),
        (Some(Act::Relu), <f32 as Num>::relu),
        (Some(Act::Hardsigmoid), <f32 as Float>::hardsigmoid),
        (Some(Act::Hardswish), <f32 as Float>::hardswish),
    ];
    for isa in Isa::available() {
        let (mr, nr, k) = (isa.mr(), isa.nr(), 9);
        let a: Vec<f32> = (0..mr * k).map(|_| rng.next()).collect();
        let mut b: Vec<f32> = (0..k * nr).map(|_| rng.next()).collect();
        // A NaN column.
        b[3 * nr + 1] = f32::NAN;
        let rows = Rows::packed(k, isa);
        let mut want = [0.0; MAX_TILE];
        tile(&a, &b, 0, &rows, &mut want);
        for (act, f) in acts {
            for (n, columns) in [(mr, nr), (mr - 1, nr - 3), (1, 1), (2, nr / 2 + 1)] {
                let ldc = nr + 5;
                // Sums from about -12 to 12: below, inside and above the
                // hard functions' bends.
                let bias: Vec<f32> = (0..n).map(|i| (i as f32 - 3.5) * 2.5).collect();
                let mut dst = vec![f32::NAN; mr * ldc];
                // SAFETY: rows i < n of `dst` hold ldc >= columns floats.
                let stored = unsafe {
                    let to = (dst.as_mut_ptr(), ldc, columns);
                    tile_store(&a, &b, 0, &rows, to, (&bias, act))
                };
                if !stored {
                    #[cfg(target_arch = "x86_64")]
                    assert!(isa != Isa::Avx512, "AVX-512 stores its tiles");
                    continue;
                }
                for i in 0..mr {
                    for j in 0..ldc {
                        let got = dst[i * ldc + j];
                        if i < n && j < columns {
                            let sum = f(want[i * nr + j] + bias[i]);
                            assert!(
                                got.to_bits() == sum.to_bits() || got.is_nan() && sum.is_nan(),
                                "{isa:?} {act:?} ({i}, {j}): {got} is not {sum}"
                            );
                        } else {
                            assert!(got.is_nan(), "{isa:?} wrote ({i}, {j}) of {n} x {columns}");
                        }
                    }
                }
            }
        }
    }
}

/// A pixel tile of `P` rows and `16 V` columns on `isa` against an f64
/// product, its rows read at scattered bases, a shift and steps; and, on
/// AVX-512, the tile stored from registers (bias, relu, masked columns and
/// rows) against the same sums finished by hand.
fn pixel_tile_case<const P: usize, const V: usize>(isa: Isa, rng: &mut Rng) {
    for depth in [0usize, 1, 5, 37] {
        let a: Vec<f32> = (0..4096).map(|_| rng.next()).collect();
        let b: Vec<f32> = (0..depth.max(1) * CHANNELS).map(|_| rng.next()).collect();
        let steps = Steps::new((0..depth).map(|p| (p * 7) % 61).collect());
        let bases: [usize; P] = std::array::from_fn(|i| (i * 131 + 17) % 3000);
        let mut rows = PixelRows::new(&a, &bases, &steps);
        rows.shift = 3;
        let mut out = [[f32::NAN; CHANNELS]; P];
        pixel_tile::<P, V>(isa, &rows, &b, &mut out);
        for i in 0..P {
            for j in 0..16 * V {
                let want: f64 = (0..depth)
                    .map(|p| a[bases[i] + 3 + (p * 7) % 61] as f64 * b[p * CHANNELS + j] as f64)
                    .sum();
                let got = out[i][j] as f64;
                assert!(
                    (got - want).abs() <= 1e-5 * (depth as f64).max(1.0),
                    "{isa:?} {P}x{} depth {depth}: ({i}, {j}) is {got}, not {want}",
                    16 * V
                );
            }
        }
        let bias: [f32; CHANNELS] = std::array::from_fn(|_| rng.next());
        let (pixels, columns) = (P - 1, 16 * V - 3);
        let mut dst = vec![f32::NAN; P * 40];
        // SAFETY: rows i < pixels of `columns` floats 40 apart lie in dst.
        let stored = unsafe {
            pixel_tile_store::<P, V>(
                isa,
                &rows,
                &b,
                (dst.as_mut_ptr(), 40, pixels, columns),
                (&bias, Some(Act::Relu)),
            )
        };
        assert_eq!(stored, isa.mr() == 8 && isa.nr() == 32, "{isa:?} stores");
        if stored {
            for i in 0..P {
                for j in 0..40 {
                    let got = dst[i * 40 + j];
                    if i < pixels && j < columns {
                        let want = (out[i][j] + bias[j]).max(0.0);
                        assert_eq!(got.to_bits(), want.to_bits(), "{isa:?} stored ({i}, {j})");
                    } else {
                        assert!(got.is_nan(), "{isa:?} wrote ({i}, {j}) past the tile");
                    }
                }
            }
        }
    }
}

#[test]
fn every_pixel_tile_matches_an_f64_product() {
    let mut rng = Rng(0xfeed);
    for isa in Isa::available() {
        pixel_tile_case::<PIXELS, 2>(isa, &mut rng);
        pixel_tile_case::<NARROW_PIXELS, 1>(isa, &mut rng);
    }
}

#[test]
#[should_panic(expected = "sgemm pixel tile")]
fn pixel_tiles_reading_past_their_input_are_refused() {
    let a = vec![0.0; 64];
    let b = vec![0.0; 2 * CHANNELS];
    let steps = Steps::new(vec![0, 10]);
    let rows = PixelRows::new(&a, &[0, 0, 0, 0, 0, 0, 0, 54], &steps);
    let mut out = [[0.0; CHANNELS]; PIXELS];
    pixel_tile::<PIXELS, 2>(Isa::best(), &rows, &b, &mut out);
}

/// A run of `P`-pixel tiles against each of its tiles stored one at a time
/// (bit for bit: the same sums in the same order), for every activation
/// the kernels apply, with a shift, a pitch wider than a patch, masked
/// columns, and rows past the run's last left alone; with a residual,
/// each biased sum plus the residual, then the activation.
fn pixel_run_case<const P: usize, const V: usize>(isa: Isa, rng: &mut Rng) {
    const LDC: usize = 40;
    let a: Vec<f32> = (0..8192).map(|_| 4.0 * rng.next()).collect();
    for (depth, tiles, pitch) in [
        (0usize, 1usize, 3usize),
        (1, 2, 1),
        (16, 3, 17),
        (37, 2, 40),
    ] {
        let b: Vec<f32> = (0..depth.max(1) * CHANNELS).map(|_| rng.next()).collect();
        let steps = Steps::new((0..depth).map(|p| (p * 5) % 43).collect());
        let bias: [f32; CHANNELS] = std::array::from_fn(|_| rng.next());
        let columns = 16 * V - 1;
        let pixels = tiles * P;
        for act in [
            None,
            Some(Act::Relu),
            Some(Act::Hardsigmoid),
            Some(Act::Hardswish),
        ] {
            let mut run = PixelRun::new(&a, (9, pitch, pixels), &steps);
            run.shift = 2;
            let mut got = vec![f32::NAN; (pixels + 1) * LDC];
            // SAFETY: pixel r's `columns` floats lie at r LDC in `got`.
            let stored = unsafe {
                pixel_run_store::<P, V>(
                    isa,
                    &run,
                    &b,
                    (got.as_mut_ptr(), LDC, columns),
                    (&bias, act, None),
                )
            };
            assert_eq!(stored, isa.stores_pixel_runs(), "{isa:?} stores runs");
            if !stored {
                continue;
            }
            // With a residual: each biased sum plus it, then `act`.
            let residual: Vec<f32> = (0..pixels * LDC).map(|_| 4.0 * rng.next()).collect();
            let mut with = vec![f32::NAN; (pixels + 1) * LDC];
            let mut plain = vec![f32::NAN; (pixels + 1) * LDC];
            // SAFETY: as above; the residual's rows lie as the output's.
            unsafe {
                let r = Some(residual.as_ptr());
                let to = (with.as_mut_ptr(), LDC, columns);
                assert!(pixel_run_store::<P, V>(isa, &run, &b, to, (&bias, act, r)));
                let to = (plain.as_mut_ptr(), LDC, columns);
                assert!(pixel_run_store::<P, V>(
                    isa,
                    &run,
                    &b,
                    to,
                    (&bias, None, None)
                ));
            }
            // And a residual in the output itself: each value read before
            // its sum is stored over it.
            let mut inside = residual.clone();
            inside.resize((pixels + 1) * LDC, f32::NAN);
            // SAFETY: as above; the residual is the output.
            unsafe {
                let to = (inside.as_mut_ptr(), LDC, columns);
                let r = Some(inside.as_ptr());
                assert!(pixel_run_store::<P, V>(isa, &run, &b, to, (&bias, act, r)));
            }
            for (k, (w, p)) in with.iter().zip(&plain).enumerate() {
                let want = if p.is_nan() {
                    *p
                } else {
                    activated(act, p + residual[k])
                };
                assert_eq!(
                    w.to_bits(),
                    want.to_bits(),
                    "{isa:?} {act:?} residual at {k}"
                );
                // Past each pixel's columns the output keeps its values.
                let kept = if p.is_nan() {
                    residual.get(k).copied().unwrap_or(f32::NAN)
                } else {
                    want
                };
                assert_eq!(
                    inside[k].to_bits(),
                    kept.to_bits(),
                    "{isa:?} {act:?} residual in the output at {k}"
                );
            }
            let mut want = vec![f32::NAN; (pixels + 1) * LDC];
            for t in 0..tiles {
                let bases: [usize; P] = std::array::from_fn(|i| 9 + (t * P + i) * pitch);
                let mut rows = PixelRows::new(&a, &bases, &steps);
                rows.shift = 2;
                let to = (want[t * P * LDC..].as_mut_ptr(), LDC, P, columns);
                // SAFETY: the tile's rows lie in `want` as above.
                assert!(unsafe { pixel_tile_store::<P, V>(isa, &rows, &b, to, (&bias, act)) });
            }
            for (r, (g, w)) in got.chunks(LDC).zip(want.chunks(LDC)).enumerate() {
                for (j, (g, w)) in g.iter().zip(w).enumerate() {
                    assert_eq!(
                        g.to_bits(),
                        w.to_bits(),
                        "{isa:?} {P}x{} depth {depth} {act:?}: pixel {r} channel {j}",
                        16 * V
                    );
                }
            }
        }
    }
}

/// `act` of `x` as the f32 functions define it (`numeric.rs`).
fn activated(act: Option<Act>, x: f32) -> f32 {
    match act {
        None => x,
        Some(Act::Relu) => {
            if x < 0.0 {
                0.0
            } else {
                x
            }
        }
        Some(Act::Hardsigmoid) => (x + 3.0).clamp(0.0, 6.0) / 6.0,
        Some(Act::Hardswish) => x * (x + 3.0).clamp(0.0, 6.0) / 6.0,
    }
}

#[test]
fn pixel_runs_are_their_tiles_bit_for_bit() {
    let mut rng = Rng(0xabc);
    for isa in Isa::available() {
        pixel_run_case::<PIXELS, 2>(isa, &mut rng);
        pixel_run_case::<NARROW_PIXELS, 1>(isa, &mut rng);
    }
}

#[test]
#[should_panic(expected = "sgemm pixel run")]
fn pixel_runs_reading_past_their_input_are_refused() {
    let a = vec![0.0; 64];
    let b = vec![0.0; 2 * CHANNELS];
    let steps = Steps::new(vec![0, 10]);
    // The last pixel's patch starts at 7 x 8 = 56, its last step at 66
    // (a pitch of 7 would end at 59, inside).
    store_wide_run(&PixelRun::new(&a, (0, 8, PIXELS), &steps), &b);
}

#[test]
#[should_panic(expected = "sgemm pixel run")]
fn pixel_runs_of_a_part_tile_are_refused() {
    let a = vec![0.0; 64];
    let b = vec![0.0; CHANNELS];
    let steps = Steps::new(vec![0]);
    store_wide_run(&PixelRun::new(&a, (0, 1, PIXELS + 1), &steps), &b);
}

/// Stores `run`'s wide tiles of `b` into a buffer of its own, 32 floats a
/// pixel.
fn store_wide_run(run: &PixelRun<'_>, b: &[f32]) {
    let mut out = vec![0.0; (run.pixels() + PIXELS) * 32];
    // SAFETY: each pixel's 32 floats lie in `out`.
    unsafe {
        pixel_run_store::<PIXELS, 2>(
            Isa::best(),
            run,
            b,
            (out.as_mut_ptr(), 32, 32),
            (&[0.0; CHANNELS], None, None),
        );
    }
}

/// Runs of `P`-pair tiles against each pixel's f32 sum written out
/// (fused multiply-adds over the steps in order, plus the bias, the
/// residual, then the activation): whole tiles and a last one reaching
/// back, a pair without its second pixel, masked channels, a shift,
/// a residual apart and one in the output itself (added once where
/// the last tile reaches back); the floats between pixels left alone.
fn pair_run_case<const P: usize, const V: usize>(rng: &mut Rng) {
    const LDC: usize = 29;
    let a: Vec<f32> = (0..6000).map(|_| 4.0 * rng.next()).collect();
    for (depth, pairs, pitch) in [(1usize, P, 2usize), (13, P + 1, 6), (40, 2 * P + 3, 20)] {
        let width = 16 * V;
        let b: Vec<f32> = (0..depth * width).map(|_| rng.next()).collect();
        let steps = Steps::new((0..depth).map(|p| (p * 14) % 62).collect());
        let bias: [f32; CHANNELS] = std::array::from_fn(|_| rng.next());
        let columns = 8 * V - 1;
        let apart = pairs * LDC + 3;
        let len = apart + pairs * LDC;
        let residual: Vec<f32> = (0..len).map(|_| 4.0 * rng.next()).collect();
        let mut run = PairRun::new(&a, (5, pitch, pairs), &steps);
        run.shift = 4;
        for act in [
            None,
            Some(Act::Relu),
            Some(Act::Hardsigmoid),
            Some(Act::Hardswish),
        ] {
            for kind in 0..3 {
                let mut got = if kind == 2 {
                    residual.clone()
                } else {
                    vec![f32::NAN; len]
                };
                let to = PairOut {
                    dst: got.as_mut_ptr(),
                    ldc: LDC,
                    apart,
                    seconds: pairs - 1,
                    columns,
                };
                let r = match kind {
                    0 => None,
                    1 => Some(residual.as_ptr()),
                    _ => Some(to.dst.cast_const()),
                };
                // SAFETY: every pixel's `columns` floats lie in `got`,
                // and the residual's at the same offsets.
                let stored =
                    unsafe { pair_run_store::<P, V>(Isa::best(), &run, &b, to, (&bias, act, r)) };
                if !stored {
                    assert!(!Isa::best().stores_pair_runs());
                    return;
                }
                let mut want = if kind == 2 {
                    residual.clone()
                } else {
                    vec![f32::NAN; len]
                };
                for pair in 0..pairs {
                    for lane in 0..2 - usize::from(pair >= pairs - 1) {
                        let at = pair * LDC + lane * apart;
                        for j in 0..columns {
                            let mut sum = 0.0f32;
                            for (p, &s) in steps.offsets().iter().enumerate() {
                                let v = a[5 + pair * pitch + 4 + s + lane];
                                sum = v.mul_add(b[p * width + 2 * j + lane], sum);
                            }
                            let mut value = sum + bias[j];
                            if kind > 0 {
                                value += residual[at + j];
                            }
                            want[at + j] = activated(act, value);
                        }
                    }
                }
                for (k, (g, w)) in got.iter().zip(&want).enumerate() {
                    assert_eq!(
                        g.to_bits(),
                        w.to_bits(),
                        "{P} pairs x {V}, depth {depth}, {pairs} pairs, {act:?}, \
                         residual {kind}: float {k}"
                    );
                }
            }
        }
    }
}

#[test]
fn paired_runs_are_each_pixels_sums_bit_for_bit() {
    let mut rng = Rng(0x9a1f);
    pair_run_case::<8, 3>(&mut rng);
    pair_run_case::<16, 1>(&mut rng);
}

#[test]
#[should_panic(expected = "sgemm pair run")]
fn paired_runs_reading_past_their_input_are_refused() {
    let (a, b) = (vec![0.0; 64], vec![0.0; 2 * 48]);
    let steps = Steps::new(vec![0, 10]);
    // The last pair's patch at 7 x 8 = 56, its last step's second
    // float at 67.
    store_pair_run(&PairRun::new(&a, (0, 8, 8), &steps), &b);
}

#[test]
#[should_panic(expected = "sgemm pair run")]
fn paired_runs_shorter_than_a_tile_are_refused() {
    let (a, b) = (vec![0.0; 64], vec![0.0; 48]);
    let steps = Steps::new(vec![0]);
    store_pair_run(&PairRun::new(&a, (0, 2, 7), &steps), &b);
}

/// Stores `run`'s tiles of 8 pairs by 3 vectors of `b` into a buffer of
/// its own, 24 floats a pixel.
fn store_pair_run(run: &PairRun<'_>, b: &[f32]) {
    let mut out = vec![0.0; (2 * run.pairs() + 1) * 24];
    let to = PairOut {
        dst: out.as_mut_ptr(),
        ldc: 24,
        apart: run.pairs() * 24,
        seconds: run.pairs(),
        columns: 24,
    };
    // SAFETY: every pixel's 24 floats lie in `out`.
    unsafe { pair_run_store::<8, 3>(Isa::best(), run, b, to, (&[0.0; CHANNELS], None, None)) };
}
