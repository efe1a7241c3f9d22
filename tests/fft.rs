//! FFTs on every device: against what numpy.fft computed
//! (tests/data/numpy_fft_cases.npz, written by make_fft_cases.py), and
//! against a direct double-precision DFT on views of every layout, f16
//! inputs, empty and long axes, and bad input.

mod common;

use common::{devices, noise};
use webtensor::{Complex32, DType, Device, Error, Fft, FftNorm, Stft, Tensor, s};

/// The cases NumPy computed, by name, on the CPU.
fn numpy_cases() -> Vec<(String, Tensor)> {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/numpy_fft_cases.npz");
    webtensor::io::load_npz(path, &Device::cpu()).unwrap()
}

/// Values of a tensor as complex numbers (real tensors with zero imaginary parts).
fn complex_values(t: &Tensor) -> Vec<Complex32> {
    if t.dtype() == DType::C64 {
        t.to_complex_vec().unwrap()
    } else {
        common::read_f32(t)
            .into_iter()
            .map(|v| Complex32::new(v, 0.0))
            .collect()
    }
}

/// Asserts `got` equals `want` within an FFT's f32 error: the largest
/// difference at most `1e-5 log2(n)` of the largest magnitude.
fn assert_spectrum(got: &Tensor, want: &Tensor, n: usize, what: &str) {
    assert_eq!(got.dims(), want.dims(), "{what}: shape");
    assert_eq!(got.dtype(), want.dtype(), "{what}: dtype");
    let (g, w) = (complex_values(got), complex_values(want));
    assert_eq!(g.len(), w.len(), "{what}: length");
    let scale = w.iter().map(|c| c.norm()).fold(1e-30f32, f32::max);
    // A NaN difference is the worst (f32::max would skip it).
    let worst = g
        .iter()
        .zip(&w)
        .map(|(a, b)| (a - b).norm())
        .fold(
            0.0f32,
            |m, d| if d.is_nan() { f32::INFINITY } else { m.max(d) },
        );
    let tol = 1e-5 * (n.max(2) as f32).log2();
    assert!(
        worst <= tol * scale,
        "{what}: error {worst} over {scale} (tolerance {tol})"
    );
}

/// The transform NumPy's case `name` ran, on `x`.
fn run_case(name: &str, x: &Tensor) -> webtensor::Result<Tensor> {
    match name {
        "fft_rows" | "fft_prime" | "fft_prime_97" | "fft_long_smooth" | "fft_long_prime" => {
            x.fft(-1)
        }
        "ifft_ortho" => x.ifft(Fft::along(-1).norm(FftNorm::Ortho)),
        "ifft_forward" => x.ifft(Fft::along(-1).norm(FftNorm::Forward)),
        "ifft_long_pow2" => x.ifft(-1),
        "fft_pad_axis0" => x.fft(Fft::along(0).size(10)),
        "fft_crop" => x.fft(Fft::along(-1).size(4)),
        "rfft_even" | "rfft_odd" | "rfft_long_mixed" => x.rfft(-1),
        "rfft_crop_ortho" => x.rfft(Fft::along(-1).size(16).norm(FftNorm::Ortho)),
        "irfft_default" | "irfft_long" => x.irfft(-1),
        "irfft_odd" => x.irfft(Fft::along(-1).size(17)),
        "irfft_pad_forward" => x.irfft(Fft::along(-1).size(14).norm(FftNorm::Forward)),
        "fft2" => x.fft(Fft::over([-2, -1])),
        "ifft2" => x.ifft(Fft::over([-2, -1])),
        "rfft2" => x.rfft(Fft::over([-2, -1])),
        "irfft2" => x.irfft(Fft::over([-2, -1])),
        "fftn_all" => x.fft(Fft::over(..)),
        "rfftn_axes" => x.rfft(Fft::over([0, 2])),
        "ifft_real_backward" | "ifft_real_ortho" | "ifft_real_forward" => {
            let norm = match name {
                "ifft_real_ortho" => FftNorm::Ortho,
                "ifft_real_forward" => FftNorm::Forward,
                _ => FftNorm::Backward,
            };
            x.ifft(Fft::along(-1).norm(norm))
        }
        "ifft_real_axis0" => x.ifft(0),
        "ifft2_real" => x.ifft(Fft::over([-2, -1])),
        "ifftn_real_all" => x.ifft(Fft::over(..).norm(FftNorm::Ortho)),
        "ifftn_real_axes" => x.ifft(Fft::over([0, 2])),
        "ifft_real_pad" => x.ifft(Fft::along(-1).size(12)),
        "irfftn_repeated" => x.irfft(Fft::over([0, 0, 1]).sizes(&[3, 5, 6])),
        "rfftn_repeated" => x.rfft(Fft::over([0, 0, 1]).sizes(&[3, 5, 6])),
        "fftn_repeated" => x.fft(Fft::over([0, 0, 1]).sizes(&[3, 5, 6])),
        "rfftn_repeated_default" => x.rfft(Fft::over([1, 1])),
        "rfftn_repeated_default_3" => x.rfft(Fft::over([1, 0, 1])),
        "fftshift_odd" => x.fftshift(..),
        "ifftshift_2d" => x.ifftshift(..),
        other => panic!("no op for NumPy's case {other}"),
    }
}

#[test]
fn every_transform_equals_numpy() {
    let cases = numpy_cases();
    let get = |name: &str| &cases.iter().find(|(n, _)| n == name).unwrap().1;
    let mut ran = 0;
    for dev in devices() {
        for (key, input) in &cases {
            let Some(name) = key.strip_suffix("_in") else {
                continue;
            };
            let want = get(&format!("{name}_out"));
            let x = input.to_device(&dev).unwrap();
            let got = run_case(name, &x).unwrap_or_else(|e| panic!("{name} on {dev}: {e}"));
            let n = x
                .dims()
                .iter()
                .chain(want.dims())
                .copied()
                .max()
                .unwrap_or(1);
            assert_spectrum(&got, want, n, &format!("{name} on {dev}"));
            ran += 1;
        }
        let freq = |t: webtensor::Result<Tensor>| t.unwrap().to_vec::<f32>().unwrap();
        let want = |name: &str| get(name).to_vec::<f32>().unwrap();
        assert_eq!(freq(Tensor::fftfreq(7, 0.5, &dev)), want("fftfreq_7_half"));
        assert_eq!(freq(Tensor::fftfreq(8, 1.0, &dev)), want("fftfreq_8"));
        assert_eq!(
            freq(Tensor::rfftfreq(9, 0.1, &dev)),
            want("rfftfreq_9_tenth")
        );
    }
    assert!(ran >= 37 * devices().len(), "only {ran} cases ran");
}

/// `sum_j x[j] exp(-+2 pi i j k / n)` in f64 along the last axis of
/// row-major `rows` x `n` values.
fn dft(x: &[Complex32], n: usize, inverse: bool) -> Vec<Complex32> {
    let sign = if inverse { 1.0 } else { -1.0 };
    x.chunks(n)
        .flat_map(|line| {
            (0..n).map(move |k| {
                let mut acc = (0.0f64, 0.0f64);
                for (j, v) in line.iter().enumerate() {
                    let angle = sign * 2.0 * std::f64::consts::PI * ((j * k) % n) as f64 / n as f64;
                    let (s, c) = angle.sin_cos();
                    acc.0 += v.re as f64 * c - v.im as f64 * s;
                    acc.1 += v.re as f64 * s + v.im as f64 * c;
                }
                Complex32::new(acc.0 as f32, acc.1 as f32)
            })
        })
        .collect()
}

#[test]
fn views_of_every_layout_transform_in_place() {
    for dev in devices() {
        for (label, view) in common::views(&dev) {
            // Along each axis of the [4, 6] view, as a real and as a complex input.
            for axis in [0usize, 1] {
                let moved = view
                    .transpose(axis as isize, 1)
                    .unwrap()
                    .contiguous()
                    .unwrap();
                let values: Vec<Complex32> = complex_values(&moved).into_iter().collect();
                let n = moved.dims()[1];
                let want_rows = dft(&values, n, false);
                let want = Tensor::from_complex(&want_rows, moved.dims(), &Device::cpu())
                    .unwrap()
                    .transpose(axis as isize, 1)
                    .unwrap()
                    .contiguous()
                    .unwrap();
                let got = view.fft(axis as isize).unwrap();
                assert_spectrum(
                    &got.to_device(&Device::cpu()).unwrap(),
                    &want,
                    n,
                    &format!("real {label} axis {axis} on {dev}"),
                );
                let z = Tensor::complex(&view, &view.neg().unwrap()).unwrap();
                let zv: Vec<Complex32> =
                    values.iter().map(|c| Complex32::new(c.re, -c.re)).collect();
                let want_z = Tensor::from_complex(&dft(&zv, n, true), moved.dims(), &Device::cpu())
                    .unwrap()
                    .transpose(axis as isize, 1)
                    .unwrap()
                    .contiguous()
                    .unwrap()
                    .div_scalar(n as f64)
                    .unwrap();
                let got_z = z.ifft(axis as isize).unwrap();
                assert_spectrum(
                    &got_z.to_device(&Device::cpu()).unwrap(),
                    &want_z,
                    n,
                    &format!("complex {label} axis {axis} on {dev}"),
                );
            }
        }
    }
}

#[test]
fn complex_views_are_read_through_their_strides() {
    for dev in devices() {
        let values: Vec<Complex32> = noise(2 * 5 * 18, 3)
            .chunks(2)
            .map(|p| Complex32::new(p[0], p[1]))
            .collect();
        let z = Tensor::from_complex(&values, [5, 18], &dev).unwrap();
        for (label, view) in [
            ("reversed", z.slice(s![.., ..;-1]).unwrap()),
            ("stepped, offset", z.slice(s![1..;2, 3..;3]).unwrap()),
            ("transposed", z.t()),
        ] {
            let rows = view.contiguous().unwrap();
            let n = rows.dims()[1];
            let want = Tensor::from_complex(
                &dft(&rows.to_complex_vec().unwrap(), n, false),
                rows.dims(),
                &Device::cpu(),
            )
            .unwrap();
            let got = view.fft(-1).unwrap().to_device(&Device::cpu()).unwrap();
            assert_spectrum(&got, &want, n, &format!("{label} on {dev}"));
            // The imaginary view of a complex tensor is a strided real input.
            // Its half spectrum from the host's DFT of the values, not from
            // the library's own rfft.
            let imag = view.imag().unwrap();
            let imag_values: Vec<Complex32> = rows
                .to_complex_vec()
                .unwrap()
                .iter()
                .map(|c| Complex32::new(c.im, 0.0))
                .collect();
            let half: Vec<Complex32> = dft(&imag_values, n, false)
                .chunks(n)
                .flat_map(|line| line[..n / 2 + 1].to_vec())
                .collect();
            let want_imag =
                Tensor::from_complex(&half, [rows.dims()[0], n / 2 + 1], &Device::cpu()).unwrap();
            let got_imag = imag.rfft(-1).unwrap().to_device(&Device::cpu()).unwrap();
            assert_spectrum(
                &got_imag,
                &want_imag,
                n,
                &format!("imag of {label} on {dev}"),
            );
        }
    }
}

#[test]
fn round_trips_hold_for_every_length_kind() {
    // Powers of two, mixed radices, primes the kernel takes and ones it
    // does not, one point, and lengths around the GPU kernel's limits.
    let lengths = [
        1usize, 2, 3, 5, 7, 8, 11, 13, 16, 17, 30, 64, 97, 100, 210, 256, 500, 512, 513, 1000,
        1024, 1025, 2048, 2310, 4096,
    ];
    for dev in devices() {
        for &n in &lengths {
            let values = noise(3 * n, n as u64);
            let x = Tensor::from_slice(&values, [3, n], &dev).unwrap();
            let back = x.rfft(-1).unwrap().irfft(Fft::along(-1).size(n)).unwrap();
            common::assert_close(
                &back.to_vec::<f32>().unwrap(),
                &values,
                1e-5 * (n.max(2) as f32).log2(),
                &format!("irfft(rfft) of {n} on {dev}"),
            );
            let z = x.fft(-1).unwrap();
            let want = dft(&complex_values(&x), n, false);
            let want = Tensor::from_complex(&want, [3, n], &Device::cpu()).unwrap();
            assert_spectrum(
                &z.to_device(&Device::cpu()).unwrap(),
                &want,
                n,
                &format!("fft of {n} on {dev}"),
            );
            let zz = z.ifft(-1).unwrap().real().unwrap();
            common::assert_close(
                &zz.contiguous().unwrap().to_vec::<f32>().unwrap(),
                &values,
                1e-5 * (n.max(2) as f32).log2(),
                &format!("ifft(fft) of {n} on {dev}"),
            );
        }
    }
}

#[test]
fn f16_inputs_are_computed_in_f32() {
    for dev in devices() {
        let values: Vec<f32> = noise(4 * 24, 11)
            .iter()
            .map(|v| half::f16::from_f32(*v).to_f32())
            .collect();
        let x32 = Tensor::from_slice(&values, [4, 24], &dev).unwrap();
        let x16 = x32.to_dtype(DType::F16).unwrap();
        for axis in [0isize, 1] {
            let want = x32.fft(axis).unwrap().to_device(&Device::cpu()).unwrap();
            let got = x16
                .slice(s![.., ..])
                .unwrap()
                .fft(axis)
                .unwrap()
                .to_device(&Device::cpu())
                .unwrap();
            assert_spectrum(&got, &want, 24, &format!("f16 axis {axis} on {dev}"));
            let got = x16
                .t()
                .rfft(1 - axis)
                .unwrap()
                .to_device(&Device::cpu())
                .unwrap();
            let want = x32
                .t()
                .rfft(1 - axis)
                .unwrap()
                .to_device(&Device::cpu())
                .unwrap();
            assert_spectrum(&got, &want, 24, &format!("f16 rfft axis {axis} on {dev}"));
        }
        // Integers are cast to f32 first.
        let ints = Tensor::from_slice(&[1i32, 2, 3, 4], [4], &dev).unwrap();
        assert_eq!(
            ints.fft(0).unwrap().to_complex_vec().unwrap()[0],
            Complex32::new(10.0, 0.0)
        );
    }
}

#[test]
fn many_short_lines_share_workgroups() {
    // 70,000 lines of 8 (more lines than one grid row of workgroups holds
    // at 64 lines each) and 3 lines of 1.
    for dev in devices() {
        let values = noise(70_000 * 8, 5);
        let x = Tensor::from_slice(&values, [70_000, 8], &dev).unwrap();
        // The spectrum itself against the host's DFT (a round trip alone
        // lets a wrong line mapping cancel out).
        let spectrum = x.rfft(-1).unwrap().to_complex_vec().unwrap();
        let complex: Vec<Complex32> = values.iter().map(|&v| Complex32::new(v, 0.0)).collect();
        let full = dft(&complex, 8, false);
        assert_eq!((spectrum.len(), full.len()), (70_000 * 5, 70_000 * 8));
        for (line, (got, want)) in spectrum.chunks(5).zip(full.chunks(8)).enumerate() {
            for (g, w) in got.iter().zip(want) {
                assert!(
                    (g - w).norm() <= 1e-5 * (1.0 + w.norm()),
                    "{dev} line {line}: {g} vs {w}"
                );
            }
        }
        let got = x.rfft(-1).unwrap().irfft(-1).unwrap();
        common::assert_close(
            &got.to_vec::<f32>().unwrap(),
            &values,
            1e-5,
            &format!("70,000 lines on {dev}"),
        );
        let one = Tensor::from_slice(&[2.0f32, -1.0, 0.5], [3, 1], &dev).unwrap();
        let z = one.fft(-1).unwrap().to_complex_vec().unwrap();
        assert_eq!(
            z,
            vec![
                Complex32::new(2.0, 0.0),
                Complex32::new(-1.0, 0.0),
                Complex32::new(0.5, 0.0)
            ]
        );
    }
}

#[test]
fn empty_axes_and_padding_from_nothing() {
    for dev in devices() {
        let empty_lines = Tensor::zeros([0, 8], DType::F32, &dev).unwrap();
        assert_eq!(empty_lines.fft(-1).unwrap().dims(), [0, 8]);
        assert_eq!(empty_lines.rfft(-1).unwrap().dims(), [0, 5]);
        let no_points = Tensor::zeros([3, 0], DType::F32, &dev).unwrap();
        let e = no_points.fft(-1).unwrap_err();
        assert!(
            matches!(e, Error::Argument { .. }) && e.to_string().contains("fft"),
            "{e}"
        );
        // A size pads an empty axis with zeros.
        let padded = no_points.fft(Fft::along(-1).size(4)).unwrap();
        assert_eq!(
            padded.to_complex_vec().unwrap(),
            vec![Complex32::new(0.0, 0.0); 12]
        );
    }
}

#[test]
fn bad_input_is_an_error_naming_the_op() {
    let dev = Device::cpu();
    let x = Tensor::from_slice(&[1.0f32, 2.0, 3.0, 4.0], [2, 2], &dev).unwrap();
    let z = x.to_dtype(DType::C64).unwrap();
    let cases: Vec<(&str, webtensor::Result<Tensor>)> = vec![
        ("fft", x.fft(2)),
        ("fft", x.fft(Fft::over([0, 1]).sizes(&[4]))),
        ("rfft", z.rfft(-1)),
        (
            "irfft",
            Tensor::from_complex(&[Complex32::new(1.0, 0.0)], [1], &dev)
                .unwrap()
                .irfft(-1),
        ),
        (
            "fft",
            Tensor::from_slice(&[true, false], [2], &dev)
                .unwrap()
                .fft(0),
        ),
        (
            "fft",
            Tensor::from_slice(&[1.0f32], [], &dev).unwrap().fft(0),
        ),
        ("fftfreq", Tensor::fftfreq(0, 1.0, &dev)),
        ("rfftfreq", Tensor::rfftfreq(4, 0.0, &dev)),
        ("fftshift", x.fftshift(3)),
        // Sizes the host cannot hold are errors, not aborts.
        ("fftfreq", Tensor::fftfreq(1 << 62, 1.0, &dev)),
        ("hann_window", Tensor::hann_window(1 << 62, &dev)),
    ];
    for (op, result) in cases {
        let e = result.unwrap_err();
        assert!(e.to_string().contains(op), "{op}: {e}");
    }
}

#[test]
fn short_kernel_lines_compose_every_length_recursively() {
    // A device whose kernel takes lines of 16 at most: 1024 is 16 x 64,
    // the 64 again 16 x 4; 4096 three levels deep; 1000 is 10 x 100;
    // 17 and 291 (3 x 97) go through Bluestein's algorithm, whose
    // power-of-two transforms are four-step ones.
    let Some(gpu) = common::own_gpu(webtensor::GpuOptions {
        max_fft_line: Some(16),
        ..Default::default()
    }) else {
        return;
    };
    let cpu = Device::cpu();
    for &n in &[1024usize, 4096, 1000, 17, 291, 48] {
        let values = noise(2 * 3 * n, n as u64 + 1);
        let x = Tensor::from_slice(&values, [2, n, 3], &cpu).unwrap();
        let z = Tensor::complex(&x, &x.flip(&[1]).unwrap()).unwrap();
        let tol_n = n;
        type Op<'a> = &'a dyn Fn(&Tensor) -> webtensor::Result<Tensor>;
        let ops: [(&str, Op); 5] = [
            ("fft", &|t: &Tensor| t.fft(1)),
            ("ifft ortho", &|t: &Tensor| {
                t.ifft(Fft::along(1).norm(FftNorm::Ortho))
            }),
            ("rfft", &|t: &Tensor| t.real()?.rfft(1)),
            ("irfft", &|t: &Tensor| {
                t.irfft(Fft::along(1).size(2 * n - 3))
            }),
            ("fft padded", &|t: &Tensor| t.fft(Fft::along(1).size(n + 5))),
        ];
        for (label, op) in ops {
            let want = op(&z).unwrap();
            let got = op(&z.to_device(&gpu).unwrap())
                .unwrap()
                .to_device(&cpu)
                .unwrap();
            assert_spectrum(
                &got,
                &want,
                2 * tol_n,
                &format!("{label} of {n} on short lines"),
            );
        }
        let x16 = x.to_device(&gpu).unwrap().to_dtype(DType::F16).unwrap();
        let want = x16.to_device(&cpu).unwrap().rfft(1).unwrap();
        let got = x16.rfft(1).unwrap().to_device(&cpu).unwrap();
        assert_spectrum(&got, &want, n, &format!("f16 rfft of {n} on short lines"));
    }
}

/// PyTorch's `stft` by its definition: frames of the signal (padded by
/// `n / 2` reflected samples with `center`) times the window centred in
/// `n`, each transformed; `[frequencies, frames]` per row.
fn stft_reference(
    rows: &[Vec<Complex32>],
    n: usize,
    hop: usize,
    window: &[f32],
    center: bool,
    kept: usize,
) -> Vec<Complex32> {
    let left = (n - window.len()) / 2;
    let mut w = vec![0.0f32; n];
    w[left..left + window.len()].copy_from_slice(window);
    let mut out = Vec::new();
    for row in rows {
        let len = row.len() as isize;
        let pad = if center { (n / 2) as isize } else { 0 };
        let at = |i: isize| {
            let mut j = i - pad;
            if j < 0 {
                j = -j;
            }
            if j >= len {
                j = 2 * (len - 1) - j;
            }
            row[j as usize]
        };
        let frames = 1 + (row.len() + 2 * pad as usize - n) / hop;
        let mut spectra = Vec::new();
        for t in 0..frames {
            let frame: Vec<Complex32> = (0..n).map(|m| at((t * hop + m) as isize) * w[m]).collect();
            spectra.push(dft(&frame, n, false));
        }
        for k in 0..kept {
            for s in &spectra {
                out.push(s[k]);
            }
        }
    }
    out
}

#[test]
fn stft_frames_the_signal_as_pytorch_defines() {
    for dev in devices() {
        let (len, n, hop) = (50usize, 16usize, 5usize);
        let values = noise(2 * len, 21);
        let x = Tensor::from_slice(&values, [2, len], &dev).unwrap();
        let rows: Vec<Vec<Complex32>> = values
            .chunks(len)
            .map(|r| r.iter().map(|&v| Complex32::new(v, 0.0)).collect())
            .collect();
        let hann = Tensor::hann_window(12, &dev).unwrap();
        let hann_values = hann.to_vec::<f32>().unwrap();
        let ones = vec![1.0f32; n];
        let check = |got: Tensor, want: Vec<Complex32>, frames: usize, kept: usize, what: &str| {
            assert_eq!(got.dims(), [2, kept, frames], "{what} on {dev}");
            let want = Tensor::from_complex(&want, [2, kept, frames], &Device::cpu()).unwrap();
            assert_spectrum(
                &got.to_device(&Device::cpu()).unwrap(),
                &want,
                n,
                &format!("{what} on {dev}"),
            );
        };
        let got = x.stft(&Stft::new(n).hop(hop).window(&hann)).unwrap();
        check(
            got,
            stft_reference(&rows, n, hop, &hann_values, true, 9),
            11,
            9,
            "centred, Hann of 12",
        );
        let got = x.stft(&Stft::new(n).center(false)).unwrap();
        check(
            got,
            stft_reference(&rows, n, n / 4, &ones, false, 9),
            9,
            9,
            "uncentred, no window",
        );
        // A reversed view of the signal, read in place.
        let reversed = x.slice(s![.., ..;-1]).unwrap();
        let rev_rows: Vec<Vec<Complex32>> = rows
            .iter()
            .map(|r| r.iter().rev().copied().collect())
            .collect();
        let got = reversed.stft(&Stft::new(n).hop(hop).window(&hann)).unwrap();
        check(
            got,
            stft_reference(&rev_rows, n, hop, &hann_values, true, 9),
            11,
            9,
            "reversed view",
        );
        // Normalized, two-sided, of a complex signal.
        let z = Tensor::complex(&x, &x.flip(&[1]).unwrap()).unwrap();
        let z_rows: Vec<Vec<Complex32>> = rows
            .iter()
            .zip(&rev_rows)
            .map(|(a, b)| {
                a.iter()
                    .zip(b)
                    .map(|(p, q)| Complex32::new(p.re, q.re))
                    .collect()
            })
            .collect();
        let got = z.stft(&Stft::new(n).hop(hop).normalized(true)).unwrap();
        let want: Vec<Complex32> = stft_reference(&z_rows, n, hop, &ones, true, n)
            .into_iter()
            .map(|c| c / (n as f32).sqrt())
            .collect();
        check(got, want, 11, n, "complex, normalized");
        // An f64 side beside a complex one computes in c64 (PyTorch's in
        // c128): as its f32 values do, not a dtype error. (GPUs hold no
        // f64.)
        if dev.is_gpu() {
            continue;
        }
        let spec = |w| Stft::new(n).hop(hop).window(w);
        let hann64 = hann.to_dtype(DType::F64).unwrap();
        let complex_hann = hann.to_dtype(DType::C64).unwrap();
        let x64 = x.to_dtype(DType::F64).unwrap();
        for (got, want, what) in [
            (z.stft(&spec(&hann64)), z.stft(&spec(&hann)), "f64 window"),
            (
                x64.stft(&spec(&complex_hann)),
                x.stft(&spec(&complex_hann)),
                "f64 signal",
            ),
        ] {
            let (got, want) = (got.unwrap(), want.unwrap());
            assert_eq!(got.to_string(), want.to_string(), "{what} on {dev}");
        }
    }
    let cpu = Device::cpu();
    let short = Tensor::zeros([8], DType::F32, &cpu).unwrap();
    let window = Tensor::hann_window(32, &cpu).unwrap();
    for result in [
        short.stft(&Stft::new(16)),
        short.stft(&Stft::new(0)),
        short.stft(&Stft::new(4).hop(0)),
        short.stft(&Stft::new(16).center(false)),
        short.stft(&Stft::new(8).window(&window)),
        short
            .to_dtype(DType::C64)
            .unwrap()
            .stft(&Stft::new(4).onesided(true)),
    ] {
        let e = result.unwrap_err();
        assert!(e.to_string().contains("stft"), "{e}");
    }
}

#[test]
fn hann_window_is_periodic() {
    let w = Tensor::hann_window(4, &Device::cpu())
        .unwrap()
        .to_vec::<f32>()
        .unwrap();
    common::assert_close(&w, &[0.0, 0.5, 1.0, 0.5], 1e-7, "hann 4");
    // PyTorch's hann_window(1), (2) and (3): [1], [0, 1], [0, 0.75, 0.75].
    for (n, want) in [
        (1, &[1.0f32][..]),
        (2, &[0.0, 1.0]),
        (3, &[0.0, 0.75, 0.75]),
    ] {
        let w = Tensor::hann_window(n, &Device::cpu()).unwrap();
        common::assert_close(&w.to_vec::<f32>().unwrap(), want, 1e-7, "hann");
    }
}

/// A complex window makes the transform two-sided, as PyTorch's
/// (`torch.stft(arange(10.), 8, window=ones(8, dtype=complex64),
/// return_complex=True)` is `[8, 6]`): the same as the complex signal's
/// under that window; one-sided is refused naming `stft`.
#[test]
fn a_complex_window_gives_a_two_sided_transform() {
    for dev in devices() {
        let x = Tensor::arange(0.0f32, 10.0, 1.0, &dev).unwrap();
        let w = Tensor::hann_window(8, &dev)
            .unwrap()
            .to_dtype(DType::C64)
            .unwrap()
            .mul_scalar(Complex32::new(1.0, 0.5))
            .unwrap();
        let got = x.stft(&Stft::new(8).window(&w)).unwrap();
        assert_eq!(got.dims(), [8, 6], "{dev}");
        let signal = x.to_dtype(DType::C64).unwrap();
        let want = signal.stft(&Stft::new(8).window(&w)).unwrap();
        assert_eq!(
            got.to_complex_vec().unwrap(),
            want.to_complex_vec().unwrap(),
            "{dev}"
        );
        let e = x.stft(&Stft::new(8).window(&w).onesided(true)).unwrap_err();
        assert!(matches!(e, Error::Argument { op: "stft", .. }), "{e}");
    }
}

#[test]
fn stft_refuses_what_pytorch_refuses_naming_itself() {
    for dev in devices() {
        // A window of one sample keeps the signal: frames of one sample,
        // each its own transform.
        let x = Tensor::from_slice(&[1.0f32, -2.0, 3.0], [3], &dev).unwrap();
        let w = Tensor::hann_window(1, &dev).unwrap();
        let spec = Stft::new(1).hop(1).center(false).window(&w);
        let got = x.stft(&spec).unwrap().to_complex_vec().unwrap();
        let want: Vec<Complex32> = [1.0, -2.0, 3.0].map(|v| Complex32::new(v, 0.0)).to_vec();
        assert_eq!(got, want, "{dev}");
        // Frames of a rank-7 signal are of rank 8, past what a complex
        // transform takes (it named rfft), empty or not; rank 6 runs.
        for deep in [[1, 1, 1, 1, 1, 1, 8], [0, 1, 1, 1, 1, 1, 8]] {
            let deep = Tensor::zeros(deep, DType::F32, &dev).unwrap();
            let e = deep
                .stft(&Stft::new(4).center(false))
                .unwrap_err()
                .to_string();
            assert!(e.starts_with("stft:") && e.contains("rank 7"), "{e}");
        }
        let six = Tensor::ones([1, 1, 1, 1, 1, 8], DType::F32, &dev).unwrap();
        let frames = six.stft(&Stft::new(4).center(false)).unwrap();
        assert_eq!(frames.dims(), &[1, 1, 1, 1, 1, 3, 5], "{dev}");
        let b = Tensor::from_slice(&[true; 8], [8], &dev).unwrap();
        let e = b.stft(&Stft::new(4)).unwrap_err().to_string();
        assert!(e.starts_with("stft:") && e.contains("bool"), "{e}");
    }
}

#[test]
fn views_past_one_storage_binding_go_in_parts() {
    // Bindings of 64 KiB: 16 lines of 4096 c64 (512 KiB) transform in
    // parts across the lines, directly and (with kernel lines of 16) by
    // the four-step algorithm; a line of 128 KiB is an error, not a crash.
    for max_fft_line in [None, Some(16)] {
        let Some(gpu) = common::own_gpu(webtensor::GpuOptions {
            max_binding_bytes: Some(64 << 10),
            max_fft_line,
            ..Default::default()
        }) else {
            return;
        };
        let cpu = Device::cpu();
        let values: Vec<Complex32> = noise(2 * 16 * 2048, 77)
            .chunks(2)
            .map(|p| Complex32::new(p[0], p[1]))
            .collect();
        let z = Tensor::from_complex(&values, [16, 2048], &cpu).unwrap();
        for (label, view) in [("rows", z.clone()), ("columns of the transpose", z.t())] {
            let axis = if label == "rows" { -1 } else { 0 };
            let want = view.fft(axis).unwrap();
            let on_gpu = z.to_device(&gpu).unwrap();
            let gpu_view = if label == "rows" { on_gpu } else { on_gpu.t() };
            let got = gpu_view.fft(axis).unwrap().to_device(&cpu).unwrap();
            assert_spectrum(
                &got,
                &want,
                2048,
                &format!("{label}, kernel lines {max_fft_line:?}"),
            );
        }
        // The columns of a tall matrix (issue 44): each line is 16 KiB of
        // f32 strided across the whole 256 KiB buffer, so no part of lines
        // fits a binding until copied compact.
        let tall: Vec<f32> = noise(4096 * 16, 78);
        let tall = Tensor::from_slice(&tall, [4096, 16], &cpu).unwrap();
        let want = tall.fft(0).unwrap();
        let got = tall.to_device(&gpu).unwrap().fft(0).unwrap();
        let got = got.to_device(&cpu).unwrap();
        let what = format!("tall columns, kernel lines {max_fft_line:?}");
        assert_spectrum(&got, &want, 4096, &what);
        // Named for the op called, whichever step failed.
        let long = Tensor::zeros([1, 16384], DType::C64, &gpu).unwrap();
        let real = Tensor::zeros([1, 16384], DType::F32, &gpu).unwrap();
        for (op, got) in [
            ("fft", long.fft(-1)),
            ("ifft", long.ifft(-1)),
            ("rfft", real.rfft(Fft::along(-1).size(16384))),
            ("irfft", long.irfft(Fft::along(-1).size(16384))),
        ] {
            let e = got.and_then(|t| t.to_device(&cpu)).unwrap_err();
            let text = e.to_string();
            assert!(
                matches!(e, Error::TooLarge { .. }) && text.starts_with(&format!("{op}:")),
                "{op}: {text}"
            );
        }
    }
}

#[test]
fn prime_lines_whose_padded_convolution_fills_a_binding_go_one_by_one() {
    // Bindings of 64 KiB: a line of 2049 c64 (16 KiB) fits half of one,
    // and Bluestein's algorithm pads it to 8192 points, a whole binding,
    // so a batch of two goes one padded line at a time (it was refused as
    // a 128 KiB view). Each transform, along the last axis and (through
    // the transpose) the first, against the CPU.
    let Some(gpu) = common::own_gpu(webtensor::GpuOptions {
        max_binding_bytes: Some(64 << 10),
        ..Default::default()
    }) else {
        return;
    };
    let cpu = Device::cpu();
    let n = 2049;
    let values = noise(4 * n, 79);
    let re = Tensor::from_slice(&values[..2 * n], [2, n], &cpu).unwrap();
    let im = Tensor::from_slice(&values[2 * n..], [2, n], &cpu).unwrap();
    let z = Tensor::complex(&re, &im).unwrap();
    let ops: [(&str, LineOp); 6] = [
        ("fft", |t, _| t.fft(-1)),
        ("ifft", |t, _| t.ifft(-1)),
        ("rfft", |t, _| t.real().and_then(|r| r.rfft(-1))),
        ("irfft", |t, n| t.irfft(Fft::along(-1).size(n))),
        ("fft of columns", |t, _| {
            t.t().contiguous().and_then(|c| c.fft(0))
        }),
        ("fft of a reversed view", |t, _| {
            t.flip(&[-1]).and_then(|r| r.fft(-1))
        }),
    ];
    for (label, op) in ops {
        let want = op(&z, n).unwrap();
        let got = op(&z.to_device(&gpu).unwrap(), n).unwrap();
        let got = got.to_device(&cpu).unwrap();
        assert_spectrum(&got, &want, n, label);
    }
    // Parts sized by what a composed transform makes, not only by its
    // input and output: Bluestein's in-kernel table (2m + n c64) past a
    // binding takes the composed path (1361 at 64 KiB: an 81,920-byte
    // table), and the whole spectrum of a real transform (c64 lines of n,
    // twice the output's bytes) is cut to fit one binding.
    /// A binding, a kernel line, the input's dims, n and the op.
    type Case = (u64, Option<usize>, [usize; 2], usize, &'static str);
    let cases: [Case; 5] = [
        (64 << 10, None, [1, 1361], 1361, "fft"),
        (64 << 10, None, [3, 1361], 1361, "rfft"),
        (64 << 10, Some(16), [12, 1024], 1024, "rfft"),
        (64 << 10, Some(16), [12, 513], 1024, "irfft"),
        (128 << 10, None, [9, 1020], 2039, "irfft"),
    ];
    for (binding, max_fft_line, dims, n, op) in cases {
        let Some(small) = common::own_gpu(webtensor::GpuOptions {
            max_binding_bytes: Some(binding),
            max_fft_line,
            ..Default::default()
        }) else {
            return;
        };
        let count = dims[0] * dims[1];
        let values = noise(2 * count, 80);
        let re = Tensor::from_slice(&values[..count], dims, &cpu).unwrap();
        let im = Tensor::from_slice(&values[count..], dims, &cpu).unwrap();
        let z = Tensor::complex(&re, &im).unwrap();
        let run = |t: &Tensor| match op {
            "fft" => t.fft(-1),
            "rfft" => t.real().and_then(|r| r.rfft(-1)),
            _ => t.irfft(Fft::along(-1).size(n)),
        };
        let want = run(&z).unwrap();
        let got = run(&z.to_device(&small).unwrap()).unwrap();
        let what = format!("{op} of {dims:?} (n {n}) at a {binding}-byte binding");
        assert_spectrum(&got.to_device(&cpu).unwrap(), &want, n, &what);
    }
    // Under a memory cap that holds the input and output but not a padded
    // line, the error names the op called (it named the composed steps').
    let x = z.to_device(&gpu).unwrap();
    gpu.sync().unwrap();
    gpu.set_memory_cap(Some(gpu.stats().bytes_live + (72 << 10)));
    let e = x.fft(-1).and_then(|t| t.to_device(&cpu)).unwrap_err();
    gpu.set_memory_cap(None);
    let text = e.to_string();
    assert!(
        matches!(e, Error::OutOfMemory { .. }) && text.starts_with("fft:"),
        "{text}"
    );
    // Bindings of 65,532 bytes: a line of 4093 c64 fits half of one, its
    // padded line of 8192 points does not fit one; an error naming the op
    // called and the sizes.
    let Some(odd) = common::own_gpu(webtensor::GpuOptions {
        max_binding_bytes: Some(65_532),
        ..Default::default()
    }) else {
        return;
    };
    let x = Tensor::zeros([2, 4093], DType::F32, &odd).unwrap();
    let e = x.rfft(-1).and_then(|t| t.to_complex_vec()).unwrap_err();
    let text = e.to_string();
    assert!(
        matches!(e, Error::TooLarge { .. })
            && text.starts_with("rfft:")
            && text.contains("65536")
            && text.contains("65532"),
        "{text}"
    );
}

#[test]
fn lines_past_one_grid_row_of_workgroups() {
    // 64 lines of 2 per workgroup: 4,194,307 lines need more than 65,535
    // workgroups, so the grid takes a second row (long form: 33 MB in,
    // 67 MB out). X[0] = a + b and X[1] = a - b.
    if !common::long_tests() {
        return;
    }
    let Some(gpu) = common::gpu() else {
        return;
    };
    let rows = 64 * 65_536 + 3;
    let values: Vec<f32> = (0..2 * rows).map(|k| (k % 7) as f32 - 3.0).collect();
    let x = Tensor::from_slice(&values, [rows, 2], &gpu).unwrap();
    let got = x.fft(-1).unwrap().to_complex_vec().unwrap();
    for (r, pair) in values.chunks(2).enumerate() {
        let want = [pair[0] + pair[1], pair[0] - pair[1]];
        for (k, w) in want.iter().enumerate() {
            // exp(-i pi) in f32 has an imaginary part of -1.2e-16.
            let g = got[2 * r + k];
            assert!(
                (g.re - w).abs() < 1e-6 && g.im.abs() < 1e-6,
                "line {r}, output {k}: {g}"
            );
        }
    }
}

#[test]
fn kept_tables_stay_right_through_eviction_and_threads() {
    // A device keeps each length's twiddles, and Bluestein's chirp and
    // kernel, for later calls (at most 64 tables). Here far more lengths
    // than that are transformed before any result is read, so tables are
    // evicted while transforms that bind them are still to run; then two
    // threads transform the same lengths at once, in opposite orders.
    let Some(dev) = common::own_gpu(webtensor::GpuOptions::default()) else {
        return;
    };
    let cpu = Device::cpu();
    // Smooth lengths (one kernel's twiddles) and primes (Bluestein's).
    let lengths: Vec<usize> = (1..=60)
        .map(|k| 6 * k + 4)
        .chain([17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67, 71, 73])
        .collect();
    let inputs: Vec<Tensor> = lengths
        .iter()
        .map(|&n| {
            let pairs = noise(2 * n, n as u64);
            Tensor::from_interleaved(&pairs, [n], &dev).unwrap()
        })
        .collect();
    let check = |order: &mut dyn Iterator<Item = usize>, what: &str| {
        let results: Vec<(usize, Tensor)> = order.map(|k| (k, inputs[k].fft(0).unwrap())).collect();
        for (k, got) in results {
            let want = inputs[k].to_device(&cpu).unwrap().fft(0).unwrap();
            let what = format!("{what}: fft of {}", lengths[k]);
            assert_spectrum(&got, &want, lengths[k], &what);
        }
    };
    check(&mut (0..lengths.len()), "one thread");
    std::thread::scope(|scope| {
        let forward = scope.spawn(|| check(&mut (0..lengths.len()), "thread 1"));
        check(&mut (0..lengths.len()).rev(), "thread 2");
        forward.join().unwrap();
    });
    dev.release_pooled_memory();
    check(&mut (0..lengths.len()), "after the release");
}

#[test]
fn bluesteins_algorithm_runs_whole_in_one_kernel() {
    // A length with a prime factor past the kernel's radices (13) whose
    // convolution (the power of two at least 2n - 1) fits one line runs
    // Bluestein's algorithm in the kernel: chirped as read, transformed,
    // multiplied by the kernel's spectrum, transformed back, chirped as
    // written. Lengths to 2047 (a convolution of 4096, lavapipe's longest
    // line) and 2049 (composed), rows and columns (read across), input
    // shorter than the transform (zeros past it), real, f16 and Hermitian
    // (made whole first) reads, against the CPU (NumPy's answers).
    let ops: [(&str, LineOp); 7] = [
        ("fft", |t, _| t.fft(0)),
        ("ifft ortho", |t, _| {
            t.ifft(Fft::along(0).norm(FftNorm::Ortho))
        }),
        ("fft of rows", |t, _| t.t().fft(1)),
        ("fft of a shorter input", |t, n| {
            t.narrow(0, 0, n - 3)?.fft(Fft::along(0).size(n))
        }),
        ("rfft", |t, _| t.real()?.rfft(0)),
        ("f16 rfft of rows", |t, _| {
            t.real()?.t().to_dtype(DType::F16)?.rfft(1)
        }),
        ("irfft", |t, n| {
            t.narrow(0, 0, n / 2 + 1)?.irfft(Fft::along(0).size(n))
        }),
    ];
    for n in [17usize, 19, 34, 51, 97, 291, 1021, 2039, 2047, 2049] {
        for m in [1usize, 5, 70] {
            if n * m <= 40_000 {
                gpus_match_the_cpu(&ops, n, m, (n * 7 + m) as u64);
            }
        }
    }
}

#[test]
fn irfft_reads_only_the_real_part_at_both_ends() {
    // NumPy's irfft ignores a finite imaginary part at 0 and (for an even
    // length) at n/2: bit for bit the same signal as with zeros there.
    // Bluestein's and the four-step algorithm mix real and imaginary
    // parts, so on a GPU's composed lengths (a prime factor past 13, or
    // longer than a kernel line: 17, 34, 8192 on lavapipe) they leaked
    // into the signal (1e6 there cost 4e-3 at 17), as rounding does on the
    // kernel's own lengths (16). Where one is infinite or NaN, NumPy's
    // (and PyTorch's) signal is NaN throughout (`np.fft.irfft([1+inf*1j]
    // + [1]*8, 16)`): its product with 0.
    for dev in devices() {
        for n in [16usize, 17, 34, 8192] {
            let half = n / 2 + 1;
            let values = noise(2 * 3 * half, n as u64);
            let (re, im) = values.split_at(3 * half);
            let mut im = im.to_vec();
            let ends: Vec<usize> = if n % 2 == 0 { vec![0, n / 2] } else { vec![0] };
            let with = |im: &[f32]| {
                let re = Tensor::from_slice(re, [3, half], &dev).unwrap();
                let im = Tensor::from_slice(im, [3, half], &dev).unwrap();
                Tensor::complex(&re, &im)
                    .unwrap()
                    .irfft(Fft::along(1).size(n))
                    .unwrap()
                    .to_vec::<f32>()
                    .unwrap()
            };
            for line in 0..3 {
                for &k in &ends {
                    im[line * half + k] = 0.0;
                }
            }
            let clean = with(&im);
            assert!(clean.iter().all(|v| v.is_finite()), "{n} on {dev}");
            for line in 0..3 {
                for &k in &ends {
                    im[line * half + k] = 1e6 * (k as f32 + 1.0);
                }
            }
            let got = with(&im);
            let same = got
                .iter()
                .zip(&clean)
                .all(|(a, b)| a.to_bits() == b.to_bits());
            assert!(same, "finite parts at the ends of {n} on {dev}");
            // Line 0's first, line 2's last: those lines NaN, line 1 kept.
            im[0] = f32::INFINITY;
            im[2 * half + ends[ends.len() - 1]] = f32::NAN;
            let got = with(&im);
            for line in [0, 2] {
                let signal = &got[line * n..(line + 1) * n];
                assert!(
                    signal.iter().all(|v| v.is_nan()),
                    "line {line} of {n} on {dev}"
                );
            }
            assert_eq!(got[n..2 * n], clean[n..2 * n], "line 1 of {n} on {dev}");
        }
    }
}

/// A transform of lines of `n` along axis 0 (and the line length).
type LineOp = fn(&Tensor, usize) -> webtensor::Result<Tensor>;

/// Each of `ops` on an `n` x `m` complex matrix of noise from `seed`, on
/// every GPU device against the CPU.
fn gpus_match_the_cpu(ops: &[(&str, LineOp)], n: usize, m: usize, seed: u64) {
    let cpu = Device::cpu();
    let values = noise(2 * n * m, seed);
    let re = Tensor::from_slice(&values[..n * m], [n, m], &cpu).unwrap();
    let im = Tensor::from_slice(&values[n * m..], [n, m], &cpu).unwrap();
    let z = Tensor::complex(&re, &im).unwrap();
    for (label, op) in ops {
        let want = op(&z, n).unwrap();
        for gpu in devices().into_iter().filter(Device::is_gpu) {
            let got = op(&z.to_device(&gpu).unwrap(), n)
                .unwrap()
                .to_device(&cpu)
                .unwrap();
            let what = format!("{label} of {n} x {m} on {gpu}");
            assert_spectrum(&got, &want, n, &what);
        }
    }
}

#[test]
fn columns_are_read_across_their_lines_at_every_length() {
    // A GPU workgroup reads strided lines whose neighbours are adjacent
    // (the columns of a matrix, both passes of a four-step transform)
    // across them: element j of up to 64 lines together (fewer for long
    // lines), the last workgroup partly empty. Lengths cross every radix
    // and workgroup shape, column counts cross 64 lines a workgroup, and
    // the reversed, stepped view of every other column reads backwards
    // with gaps. The CPU's answers are NumPy's (every_transform_equals_numpy).
    let ops: [(&str, LineOp); 5] = [
        ("fft", |t, _| t.fft(0)),
        ("ifft of every other column reversed", |t, _| {
            t.slice(s![.., ..;-2])?.ifft(0)
        }),
        ("rfft", |t, _| t.real()?.rfft(0)),
        ("irfft", |t, n| {
            t.narrow(0, 0, n / 2 + 1)?.irfft(Fft::along(0).size(n))
        }),
        ("f16 rfft", |t, _| t.real()?.to_dtype(DType::F16)?.rfft(0)),
    ];
    let lengths = [
        1usize, 2, 3, 8, 12, 16, 17, 60, 64, 105, 128, 256, 500, 512, 1000, 1024, 2048, 4096,
    ];
    for &n in &lengths {
        for &m in &[1usize, 3, 17, 40, 130] {
            if n * m <= 50_000 {
                gpus_match_the_cpu(&ops, n, m, (n * 31 + m) as u64);
            }
        }
    }
    let cpu = Device::cpu();
    let gpus: Vec<Device> = devices().into_iter().filter(|d| d.is_gpu()).collect();
    // Four-step transforms: both passes strided, the second written
    // across into the transposed output (2^20 is 1024 x 1024).
    for n in [1usize << 16, 1 << 20] {
        let values = noise(2 * n, n as u64);
        let re = Tensor::from_slice(&values[..n], [n], &cpu).unwrap();
        let im = Tensor::from_slice(&values[n..], [n], &cpu).unwrap();
        let z = Tensor::complex(&re, &im).unwrap();
        let want = z.fft(0).unwrap();
        for gpu in &gpus {
            let got = z
                .to_device(gpu)
                .unwrap()
                .fft(0)
                .unwrap()
                .to_device(&cpu)
                .unwrap();
            assert_spectrum(&got, &want, n, &format!("fft of {n} on {gpu}"));
        }
    }
}

/// Sizes past the host's range are errors or one frame, never an
/// overflow: a hop past isize over a reversed signal is one frame (its
/// stride once overflowed), and complex tensors of 2^63 elements are
/// refused by their shape.
#[test]
fn huge_hops_and_shapes_do_not_overflow() {
    let cpu = Device::cpu();
    let x = Tensor::arange(0.0f32, 8.0, 1.0, &cpu).unwrap();
    let reversed = x.flip(&[-1]).unwrap();
    let spec = reversed
        .stft(&Stft::new(4).hop(1usize << 63).center(false))
        .unwrap();
    assert_eq!(spec.dims(), [3, 1]);
    let want = reversed
        .narrow(0, 0, 4)
        .unwrap()
        .stft(&Stft::new(4).center(false))
        .unwrap();
    assert_eq!(
        spec.to_complex_vec().unwrap(),
        want.to_complex_vec().unwrap()
    );
    assert!(matches!(
        Tensor::from_complex(&[], [1usize << 63], &cpu),
        Err(Error::Shape { .. })
    ));
    assert!(matches!(
        Tensor::from_interleaved(&[], [1 << 40, 1 << 40], &cpu),
        Err(Error::Shape { .. })
    ));
}

/// An FFT axis given as a `usize` past `isize::MAX` is an axis error, as
/// for `Axes` (it wrapped to a negative axis: `fft(usize::MAX)`
/// transformed the last one).
#[test]
fn usize_axes_past_isize_are_axis_errors() {
    for dev in devices() {
        let x = Tensor::from_slice(&[1.0f32, 2.0, 3.0, 4.0], [2, 2], &dev).unwrap();
        assert!(matches!(
            x.fft(usize::MAX),
            Err(Error::Axis { op: "fft", .. })
        ));
        assert!(matches!(x.ifft(usize::MAX - 1), Err(Error::Axis { .. })));
        assert!(matches!(x.rfft(usize::MAX), Err(Error::Axis { .. })));
        let z = x.to_dtype(DType::C64).unwrap();
        assert!(matches!(z.irfft(usize::MAX), Err(Error::Axis { .. })));
    }
}

/// A GPU's real transforms split the half-length transform's outputs
/// after halving them: a spike of 2e38 at an even position (whose
/// spectrum is finite) gave infinite bins where the sum of two outputs
/// passed f32's range before it was halved. (At an odd position a GPU's
/// bins still overflow, and at some lengths the CPU's, as `fft`'s docs
/// allow.) A line of one point is itself on both devices (the CPU's
/// library made an infinite sample's zero imaginary part NaN).
#[test]
fn spikes_near_f32s_largest_and_one_point_lines() {
    for dev in devices() {
        let lengths: &[usize] = if dev.is_cpu() { &[4] } else { &[4, 6, 10, 64] };
        for &n in lengths {
            for at in [0, 2 * (n / 4)] {
                let mut x = vec![0.0f32; n];
                x[at] = 2e38;
                let t = Tensor::from_vec(x.clone(), [n], &dev).unwrap();
                let got = complex_values(&t.rfft(-1).unwrap());
                let line: Vec<Complex32> = x.iter().map(|&v| Complex32::new(v, 0.0)).collect();
                let want = dft(&line, n, false);
                for (k, (g, w)) in got.iter().zip(&want).enumerate() {
                    let err = (g - w).norm();
                    assert!(
                        err <= 1e-6 * 2e38,
                        "bin {k} of a spike at {at} of {n} on {dev:?}: {g} for {w}"
                    );
                }
            }
        }
        let inf = Complex32::new(f32::INFINITY, 0.0);
        let one = Tensor::from_complex(&[inf], [1], &dev).unwrap();
        for y in [one.fft(-1).unwrap(), one.ifft(-1).unwrap()] {
            let y = complex_values(&y);
            assert!(
                y[0].re == f32::INFINITY && y[0].im == 0.0,
                "{y:?} on {dev:?}"
            );
        }
    }
}
