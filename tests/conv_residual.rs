//! `Conv::residual`: a tensor added to a convolution's output after its
//! bias and before its activation, the convolution then `add` then the
//! activation (f16 and bf16: to the f32 sums, rounded once), on every path
//! and device; bad residuals are errors.

mod common;

use common::{devices, noise, read_f32};
use webtensor::{Activation, Conv, DType, Device, Error, Tensor};

fn bits(t: &Tensor) -> Vec<u32> {
    read_f32(t).iter().map(|v| v.to_bits()).collect()
}

fn close(got: &Tensor, want: &Tensor, tol: f32, what: &str) {
    assert_eq!(got.dims(), want.dims(), "{what}");
    for (i, (g, w)) in read_f32(got).iter().zip(read_f32(want)).enumerate() {
        assert!(
            (g - w).abs() <= tol * (1.0 + w.abs()),
            "{what}: element {i}: {g} vs {w}"
        );
    }
}

/// Activations the CPU's kernels apply as they store (relu, hardswish),
/// one they apply after (sigmoid), one of ops of its own (leaky relu).
const KERNEL_ACTS: [Option<Activation>; 5] = [
    None,
    Some(Activation::Relu),
    Some(Activation::Hardswish),
    Some(Activation::Sigmoid),
    Some(Activation::LeakyRelu(0.1)),
];

fn random(dims: &[usize], seed: u64, scale: f32, dev: &Device) -> Tensor {
    let t = Tensor::from_vec(noise(dims.iter().product(), seed), dims, &Device::cpu()).unwrap();
    t.mul_scalar(f64::from(scale))
        .unwrap()
        .to_device(dev)
        .unwrap()
}

/// The residual is added where the bias is, before the activation (which
/// the CPU's kernels then leave for after it): on the CPU bit for bit the
/// convolution, then `add`, then the activation, over products read in
/// place, flat and packed, depthwise and transposed convolutions, dense
/// and broadcast residuals; on a GPU within a convolution's tolerance of
/// the CPU's.
#[test]
fn a_residual_is_added_after_the_bias_and_before_the_activation() {
    let acts = [
        None,
        Some(Activation::Relu),
        Some(Activation::Hardswish),
        Some(Activation::LeakyRelu(0.1)),
        Some(Activation::Sigmoid),
    ];
    // (label, input, weight, groups, padding, transposed stride): rows in
    // place (a 1x1 over 64 columns), flat bands (3x3 over 20 columns),
    // packed patches (stride 2 over 9), depthwise, transposed.
    let cases = [
        ("1x1", [2usize, 8, 9, 64], [12usize, 8, 1, 1], 1, 0, None),
        ("3x3 flat", [2, 6, 11, 20], [10, 6, 3, 3], 1, 1, None),
        ("strided", [1, 5, 9, 9], [7, 5, 3, 3], 1, 1, Some(0)),
        ("depthwise", [1, 6, 10, 7], [6, 1, 3, 3], 6, 1, None),
        ("transposed", [1, 4, 5, 6], [4, 3, 3, 3], 1, 1, Some(2)),
        ("transposed 2x2", [1, 4, 5, 6], [4, 3, 2, 2], 1, 0, Some(2)),
    ];
    let cpu = Device::cpu();
    for (label, xd, wd, groups, pad, mode) in cases {
        let run = |x: &Tensor, w: &Tensor, conv: Conv| match mode {
            Some(0) => x.conv2d(w, &conv.stride(2).padding(pad)),
            Some(s) => x.conv_transpose2d(w, &conv.stride(s).padding(pad)),
            None => x.conv2d(w, &conv.padding(pad).groups(groups)),
        };
        for dev in devices() {
            let (x, w) = (random(&xd, 1, 4.0, &dev), random(&wd, 2, 1.0, &dev));
            let channels = if matches!(mode, Some(s) if s > 0) {
                wd[1]
            } else {
                wd[0]
            };
            let b = random(&[channels], 3, 1.0, &dev);
            let plain = run(&x, &w, Conv::new().bias(&b)).unwrap();
            let dims = plain.dims().to_vec();
            let dense = random(&dims, 4, 3.0, &dev);
            let per_channel = random(&[channels, 1, 1], 5, 3.0, &dev);
            for (kind, residual) in [("dense", &dense), ("per channel", &per_channel)] {
                for act in acts {
                    let what = format!("{label}, {kind} residual, {act:?} on {dev}");
                    let added = plain.add(residual).unwrap();
                    let want = match act {
                        Some(a) => added.activate(a).unwrap(),
                        None => added,
                    };
                    let mut conv = Conv::new().bias(&b).residual(residual);
                    if let Some(a) = act {
                        conv = conv.activation(a);
                    }
                    let got = run(&x, &w, conv).unwrap();
                    if dev.is_cpu() {
                        assert_eq!(bits(&got), bits(&want), "{what}");
                        continue;
                    }
                    let on_cpu = |t: &Tensor| t.to_device(&cpu).unwrap();
                    let (xc, wc, bc, rc) = (on_cpu(&x), on_cpu(&w), on_cpu(&b), on_cpu(residual));
                    let mut conv = Conv::new().bias(&bc).residual(&rc);
                    if let Some(a) = act {
                        conv = conv.activation(a);
                    }
                    let reference = run(&xc, &wc, conv).unwrap();
                    close(&got, &reference, 1e-4, &what);
                }
            }
            // f16 operands: the residual added to the f32 sums, rounded
            // once after the activation (exactly so in
            // `half_operands_round_once_after_the_residual`).
            let (xh, wh) = (
                x.to_dtype(DType::F16).unwrap(),
                w.to_dtype(DType::F16).unwrap(),
            );
            let conv = Conv::new().residual(&dense).activation(Activation::Relu);
            let got = run(&xh, &wh, conv).unwrap();
            assert_eq!(got.dtype(), DType::F16);
            let f32_of = |t: &Tensor| t.to_dtype(DType::F32).unwrap();
            let want = run(&f32_of(&xh), &f32_of(&wh), Conv::new())
                .unwrap()
                .add(&dense)
                .unwrap()
                .relu()
                .unwrap()
                .to_dtype(DType::F16)
                .unwrap();
            close(&got, &want, 1e-3, &format!("{label} f16 on {dev}"));
        }
    }
}

/// `n` multiples of `step` from -64 to 64 steps, exact in f16 and bf16.
fn grid(n: usize, seed: u64, step: f32) -> Vec<f32> {
    noise(n, seed)
        .into_iter()
        .map(|v| (v * 64.0).round() * step)
        .collect()
}

/// `v` of shape `dims` as `dtype` on `dev`.
fn on(v: &[f32], dims: &[usize], dtype: DType, dev: &Device) -> Tensor {
    Tensor::from_slice(v, dims, dev)
        .unwrap()
        .to_dtype(dtype)
        .unwrap()
}

/// f16 and bf16 convolutions add the residual (and the bias) to their f32
/// sums and round once, on every path: dense, grouped and depthwise, with
/// and without a bias, outputs of a few pixels (composed on a GPU) and of
/// many (its implicit GEMM), channels-last on the CPU. Operands are
/// multiples of 1/8 whose sums are exact in f32 and pass 1024, where f16
/// steps by 1 or more, so rounding the sums before adding the residual
/// (multiples of 1/16) would differ; the reference is the definition
/// summed on the host, rounded once.
#[test]
fn half_operands_round_once_after_the_residual() {
    for dev in devices() {
        for (groups, c, size) in [
            (1, 16, [3, 5]),
            (1, 16, [12, 13]),
            (4, 16, [9, 9]),
            (16, 16, [11, 7]),
        ] {
            let (o, cg) = (16, c / groups);
            let (h, wd) = (size[0], size[1]);
            let xv = grid(2 * c * h * wd, 70, 0.125);
            let wv = grid(o * cg * 9, 71, 0.125);
            let bv = grid(o, 72, 0.5);
            let rv = grid(2 * o * h * wd, 73, 0.0625);
            // The definition, padding 1, on the host: exact in f64 and f32.
            let mut want = Vec::new();
            for with_bias in [false, true] {
                let mut sums = vec![0.0f64; 2 * o * h * wd];
                for n in 0..2 {
                    for (oc, &bias) in bv.iter().enumerate() {
                        let g = oc / (o / groups);
                        for y in 0..h {
                            for x in 0..wd {
                                let mut acc = if with_bias { f64::from(bias) } else { 0.0 };
                                for ci in 0..cg {
                                    let ch = g * cg + ci;
                                    for i in 0..3 {
                                        for j in 0..3 {
                                            let (yy, xx) = (y + i, x + j);
                                            if yy < 1 || xx < 1 || yy > h || xx > wd {
                                                continue;
                                            }
                                            let xi = ((n * c + ch) * h + yy - 1) * wd + xx - 1;
                                            let wi = ((oc * cg + ci) * 3 + i) * 3 + j;
                                            acc += f64::from(xv[xi]) * f64::from(wv[wi]);
                                        }
                                    }
                                }
                                let k = ((n * o + oc) * h + y) * wd + x;
                                sums[k] = acc + f64::from(rv[k]);
                            }
                        }
                    }
                }
                want.push(sums);
            }
            for dt in [DType::F16, DType::BF16] {
                let make = |v: &[f32], dims: &[usize]| on(v, dims, dt, &dev);
                let x = make(&xv, &[2, c, h, wd]);
                let w = make(&wv, &[o, cg, 3, 3]);
                let b = Tensor::from_slice(&bv, [o], &dev).unwrap();
                let r = make(&rv, &[2, o, h, wd]);
                let mut inputs = vec![("row-major", x.clone())];
                if dev.is_cpu() {
                    inputs.push(("channels-last", x.to_channels_last().unwrap()));
                }
                for (layout, x) in inputs {
                    for (k, with_bias) in [false, true].into_iter().enumerate() {
                        let mut conv = Conv::new().padding(1).groups(groups).residual(&r);
                        if with_bias {
                            conv = conv.bias(&b);
                        }
                        let got = x.conv2d(&w, &conv).unwrap();
                        assert_eq!(got.dtype(), dt);
                        let once: Vec<f32> =
                            want[k].iter().map(|&v| common::round_to(dt, v)).collect();
                        let what = format!(
                            "groups {groups}, {size:?}, bias {with_bias}, {dt} {layout} on {dev}"
                        );
                        assert_eq!(read_f32(&got), once, "{what}");
                    }
                }
            }
        }
    }
}

/// The same for transposed convolutions: a stride equal to the kernel
/// (a 1x1 convolution shuffled into place) and overlapping taps (the
/// GPU's phase kernel, the CPU's products), with and without a bias.
#[test]
fn half_transposed_operands_round_once_after_the_residual() {
    let (c, o, h, wd) = (16, 8, 5, 6);
    for dev in devices() {
        for (k, st, p) in [(2, 2, 0), (3, 2, 1)] {
            let (ho, wo) = ((h - 1) * st + k - 2 * p, (wd - 1) * st + k - 2 * p);
            let xv = grid(c * h * wd, 80, 0.125);
            let wv = grid(c * o * k * k, 81, 0.125);
            let bv = grid(o, 82, 0.5);
            let rv = grid(o * ho * wo, 83, 0.0625);
            for dt in [DType::F16, DType::BF16] {
                let make = |v: &[f32], dims: &[usize]| on(v, dims, dt, &dev);
                let (x, w) = (make(&xv, &[1, c, h, wd]), make(&wv, &[c, o, k, k]));
                let r = make(&rv, &[1, o, ho, wo]);
                let b = Tensor::from_slice(&bv, [o], &dev).unwrap();
                for with_bias in [false, true] {
                    let mut sums: Vec<f64> = (0..o * ho * wo)
                        .map(|i| {
                            f64::from(rv[i])
                                + if with_bias {
                                    f64::from(bv[i / (ho * wo)])
                                } else {
                                    0.0
                                }
                        })
                        .collect();
                    for ci in 0..c {
                        for oc in 0..o {
                            for (iy, ix, i, j) in (0..h).flat_map(|iy| {
                                (0..wd).flat_map(move |ix| {
                                    (0..k).flat_map(move |i| (0..k).map(move |j| (iy, ix, i, j)))
                                })
                            }) {
                                let (oy, ox) = (iy * st + i, ix * st + j);
                                if oy < p || ox < p || oy - p >= ho || ox - p >= wo {
                                    continue;
                                }
                                let xi = (ci * h + iy) * wd + ix;
                                let wi = ((ci * o + oc) * k + i) * k + j;
                                sums[(oc * ho + oy - p) * wo + ox - p] +=
                                    f64::from(xv[xi]) * f64::from(wv[wi]);
                            }
                        }
                    }
                    let mut conv = Conv::new().stride(st).padding(p).residual(&r);
                    if with_bias {
                        conv = conv.bias(&b);
                    }
                    let got = x.conv_transpose2d(&w, &conv).unwrap();
                    let once: Vec<f32> = sums.iter().map(|&v| common::round_to(dt, v)).collect();
                    let what = format!("kernel {k} stride {st}, bias {with_bias}, {dt} on {dev}");
                    assert_eq!(read_f32(&got), once, "{what}");
                }
            }
        }
    }
}

/// A 1-D convolution's residual is `[batch, out, length]` (the height
/// axis it adds inside is no residual's).
#[test]
fn a_one_dimensional_residual_has_the_outputs_shape() {
    for dev in devices() {
        let x = random(&[2, 3, 17], 6, 2.0, &dev);
        let w = random(&[5, 3, 3], 7, 1.0, &dev);
        let r = random(&[2, 5, 17], 8, 1.0, &dev);
        let conv = Conv::new().padding(1);
        let want = x.conv1d(&w, &conv).unwrap().add(&r).unwrap();
        let got = x.conv1d(&w, &conv.clone().residual(&r)).unwrap();
        close(&got, &want, 1e-6, &format!("conv1d on {dev}"));
        let row = random(&[17], 9, 1.0, &dev);
        let want = x.conv1d(&w, &conv).unwrap().add(&row).unwrap();
        let got = x.conv1d(&w, &conv.clone().residual(&row)).unwrap();
        close(&got, &want, 1e-6, &format!("conv1d, a row on {dev}"));
    }
}

#[test]
fn a_residual_that_does_not_fit_is_an_error_naming_the_op() {
    let cpu = Device::cpu();
    let x = random(&[1, 2, 6, 6], 10, 1.0, &cpu);
    let w = random(&[3, 2, 3, 3], 11, 1.0, &cpu);
    // Output [1, 3, 4, 4].
    for dims in [vec![1, 3, 4, 5], vec![2, 3, 4, 4], vec![4, 1, 1]] {
        let r = Tensor::zeros(dims.clone(), DType::F32, &cpu).unwrap();
        let err = x.conv2d(&w, &Conv::new().residual(&r)).unwrap_err();
        assert!(
            matches!(err, Error::Shape { op: "conv2d", .. }),
            "{dims:?}: {err}"
        );
    }
    let ints = Tensor::zeros([1, 3, 4, 4], DType::I32, &cpu).unwrap();
    let err = x.conv2d(&w, &Conv::new().residual(&ints)).unwrap_err();
    assert!(matches!(err, Error::DType { .. }), "{err}");
    let r = Tensor::zeros([1, 3, 4, 4], DType::F32, &cpu).unwrap();
    let err = x
        .conv_transpose2d(
            &random(&[2, 3, 3, 3], 12, 1.0, &cpu),
            &Conv::new().residual(&r),
        )
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::Shape {
                op: "conv_transpose2d",
                ..
            }
        ),
        "{err}"
    );
    // An unbatched input's output is [3, 4, 4]: the convolution then its
    // `add` of a [1, 3, 4, 4] residual is [1, 3, 4, 4], which the fused
    // one cannot give (it gave [3, 4, 4]); a residual of the output's
    // rank or less is added.
    let one = x.squeeze_axis(0).unwrap();
    let err = one.conv2d(&w, &Conv::new().residual(&r)).unwrap_err();
    assert!(matches!(err, Error::Shape { op: "conv2d", .. }), "{err}");
    let fits = Tensor::ones([3, 1, 4], DType::F32, &cpu).unwrap();
    let got = one.conv2d(&w, &Conv::new().residual(&fits)).unwrap();
    let want = one.conv2d(&w, &Conv::new()).unwrap().add(&fits).unwrap();
    assert_eq!(bits(&got), bits(&want));
    let line = random(&[2, 6], 13, 1.0, &cpu);
    let w1 = random(&[3, 2, 3], 14, 1.0, &cpu);
    for (op, result) in [
        (
            "conv1d",
            line.conv1d(
                &w1,
                &Conv::new().residual(&r.narrow(3, 0, 1).unwrap().squeeze_axis(3).unwrap()),
            ),
        ),
        (
            "conv_transpose1d",
            line.conv_transpose1d(
                &random(&[2, 3, 3], 15, 1.0, &cpu),
                &Conv::new().residual(&Tensor::zeros([1, 3, 8], DType::F32, &cpu).unwrap()),
            ),
        ),
    ] {
        match result {
            Err(Error::Shape { op: o, .. }) if o == op => {}
            other => panic!("{op}: {other:?}"),
        }
    }
    // `same` on a transposed convolution is refused as such, with a
    // stride too (it was refused as needing stride 1).
    let err = x
        .conv_transpose2d(
            &random(&[2, 3, 3, 3], 12, 1.0, &cpu),
            &Conv::new().same().stride(2),
        )
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("not defined for a transposed convolution"),
        "{err}"
    );
    if let Some(gpu) = common::gpu() {
        let on = r.to_device(&gpu).unwrap();
        let err = x.conv2d(&w, &Conv::new().residual(&on)).unwrap_err();
        assert!(matches!(err, Error::DeviceMismatch { .. }), "{err}");
    }
}

/// On the CPU a residual of the output's dims and memory order (f32) is
/// added in the convolution's kernel, as it stores each sum: a
/// channels-last image's whole tiles along its rows and those crossing
/// into the next, narrow (16 channels) and wide (24, 40) panels, in place
/// (1x1) and copied (3x3 padded), a residual offset in its storage; no
/// `add` in the profile, bit for bit the convolution then `add` then the
/// activation (the kernels' own and others after), on one thread and two,
/// groups too. A residual of another memory order, or any into planes, is
/// added after the kernel (planes' tiles adding it ran slower), with the
/// same values.
#[test]
fn a_residual_in_the_outputs_memory_order_is_added_in_the_cpus_kernel() {
    // (input [n, c, h, w], out channels, kernel, padding, groups).
    let cases = [
        ([2usize, 16, 7, 20], 16usize, 1usize, 0usize, 1usize),
        ([2, 16, 3, 36], 24, 1, 0, 1),
        ([1, 8, 6, 19], 40, 3, 1, 1),
        ([2, 5, 4, 33], 16, 3, 1, 1),
        ([1, 12, 5, 18], 36, 3, 1, 3),
        // Pairs of pixels: 24 channels, 8 in groups, last tiles reaching
        // back.
        ([1, 16, 5, 37], 24, 3, 1, 1),
        ([1, 9, 4, 35], 24, 3, 1, 3),
    ];
    for threads in [1, 2] {
        let dev = Device::cpu_with_threads(threads).unwrap();
        for (xd, o, k, pad, groups) in cases {
            let x = random(&xd, 20, 4.0, &dev).to_channels_last().unwrap();
            let w = random(&[o, xd[1] / groups, k, k], 21, 1.0, &dev);
            let b = random(&[o], 22, 1.0, &dev);
            let conv = Conv::new().padding(pad).groups(groups).bias(&b);
            let plain = x.conv2d(&w, &conv).unwrap();
            assert!(plain.is_channels_last(), "{xd:?}");
            let dims = plain.dims().to_vec();
            // The second and third images of a channels-last batch of three
            // (two, where the batch is one): the output's strides, offset.
            let mut more = dims.clone();
            more[0] += 1;
            let batch = random(&more, 23, 3.0, &dev).to_channels_last().unwrap();
            let offset = batch.narrow(0, 1, dims[0]).unwrap();
            let dense = random(&dims, 24, 3.0, &dev).to_channels_last().unwrap();
            let planes = random(&dims, 25, 3.0, &dev);
            // The image as planes, its output too.
            let xp = x.contiguous().unwrap();
            let plain_p = xp.conv2d(&w, &conv).unwrap();
            // (label, image, its output, residual, in the kernel).
            let residuals = [
                ("offset", &x, &plain, &offset, true),
                ("dense", &x, &plain, &dense, true),
                ("planes", &x, &plain, &planes, false),
                ("planes into planes", &xp, &plain_p, &planes, false),
            ];
            for (kind, x, plain, residual, in_kernel) in residuals {
                let same = residual.strides() == plain.strides();
                assert_eq!(same, in_kernel || x.is_contiguous(), "{kind}");
                for act in KERNEL_ACTS {
                    let what =
                        format!("{xd:?} -> {o}, {kind} residual, {act:?}, {threads} threads");
                    let added = plain.add(residual).unwrap();
                    let want = match act {
                        Some(a) => added.activate(a).unwrap(),
                        None => added,
                    };
                    let mut fused = conv.clone().residual(residual);
                    if let Some(a) = act {
                        fused = fused.activation(a);
                    }
                    let mut got = None;
                    let profile = dev
                        .profile(|| {
                            got = Some(x.conv2d(&w, &fused)?);
                            Ok(())
                        })
                        .unwrap();
                    let got = got.unwrap();
                    assert_eq!(bits(&got), bits(&want), "{what}");
                    let names: Vec<&str> = profile.ops().iter().map(|op| op.name).collect();
                    // (A leaky relu is ops of its own after the kernel.)
                    assert_eq!(names[0], "conv2d", "{what}");
                    assert_eq!(names.contains(&"add"), !in_kernel, "{what}: {names:?}");
                }
            }
        }
    }
}

/// `Tensor::add_conv2d` is bit for bit `conv2d` with the tensor as its
/// residual, on every device, whether the tensor's storage becomes the
/// output (on the CPU, a channels-last f32 tensor of the output's shape
/// whose last handle the call takes: whole tiles along rows and across
/// them, the pixels left over summed apart, narrow and wide panels, 1x1
/// in place and 3x3 copied, groups, stride 2, activations in the kernel
/// and after it) or not (a clone kept, which keeps its values; row-major,
/// offset and per-channel residuals; f16), on one thread and two.
#[test]
fn add_conv2d_is_conv2d_with_its_residual_bit_for_bit() {
    // (input [n, c, h, w], out channels, kernel, padding, stride, groups).
    let cases = [
        ([2usize, 16, 7, 20], 16usize, 1usize, 0usize, 1usize, 1usize),
        ([1, 8, 6, 19], 40, 3, 1, 1, 1),
        ([2, 5, 4, 33], 16, 3, 1, 1, 1),
        ([1, 12, 5, 18], 36, 3, 1, 1, 3),
        ([1, 6, 9, 23], 24, 3, 1, 2, 1),
        // Pairs of pixels, last tiles reaching back: each residual value
        // added once.
        ([1, 16, 5, 37], 24, 3, 1, 1, 1),
        ([1, 9, 4, 35], 24, 3, 1, 1, 3),
        ([1, 6, 9, 40], 24, 3, 1, 2, 1),
    ];
    let mut devs = vec![Device::cpu_with_threads(1).unwrap(), Device::cpu()];
    devs.extend(devices().into_iter().skip(1));
    for dev in devs {
        for (xd, o, k, pad, stride, groups) in cases {
            let x = random(&xd, 30, 4.0, &dev).to_channels_last().unwrap();
            let w = random(&[o, xd[1] / groups, k, k], 31, 1.0, &dev);
            let b = random(&[o], 32, 1.0, &dev);
            let conv = Conv::new()
                .padding(pad)
                .stride(stride)
                .groups(groups)
                .bias(&b);
            let dims = x.conv2d(&w, &conv).unwrap().dims().to_vec();
            let mut more = dims.clone();
            more[0] += 1;
            // Each kind's residual, made afresh for each call (the same
            // values each time): (label, maker).
            type Make<'a> = Box<dyn Fn() -> Tensor + 'a>;
            let kinds: [(&str, Make); 5] = [
                (
                    "channels-last",
                    Box::new(|| random(&dims, 33, 3.0, &dev).to_channels_last().unwrap()),
                ),
                ("row-major", Box::new(|| random(&dims, 33, 3.0, &dev))),
                (
                    "offset",
                    Box::new(|| {
                        let batch = random(&more, 34, 3.0, &dev).to_channels_last().unwrap();
                        batch.narrow(0, 1, dims[0]).unwrap()
                    }),
                ),
                (
                    "per channel",
                    Box::new(|| random(&[o, 1, 1], 35, 3.0, &dev)),
                ),
                (
                    "f16",
                    Box::new(|| {
                        let r = random(&dims, 33, 3.0, &dev).to_channels_last().unwrap();
                        r.to_dtype(DType::F16).unwrap()
                    }),
                ),
            ];
            // The image channels-last, and as planes.
            let planes = x.contiguous().unwrap();
            let images = [("", &x), (" planes", &planes)];
            for ((kind, make), (layout, x)) in kinds.iter().flat_map(|k| images.map(|i| (k, i))) {
                for act in KERNEL_ACTS {
                    let what = format!(
                        "{xd:?}{layout} -> {o} s{stride}, {kind} residual, {act:?} on {dev}"
                    );
                    let conv = match act {
                        Some(a) => conv.clone().activation(a),
                        None => conv.clone(),
                    };
                    let want = x.conv2d(&w, &conv.clone().residual(&make())).unwrap();
                    let got = make().add_conv2d(x, &w, &conv).unwrap();
                    assert_eq!(got.dims(), want.dims(), "{what}");
                    assert_eq!(bits(&got), bits(&want), "{what}");
                    // A clone kept: the result is fresh, the clone as it was.
                    let kept = make();
                    let got = kept.clone().add_conv2d(x, &w, &conv).unwrap();
                    assert_eq!(bits(&got), bits(&want), "{what}, a clone kept");
                    assert!(!got.shares_storage(&kept), "{what}");
                    assert_eq!(bits(&kept), bits(&make()), "{what}: the clone kept");
                }
            }
        }
    }
}

/// f16 and bf16 operands with an f32 bias sum in f32, and an f32
/// residual of the output's layout is added (into its own storage, on the
/// CPU) before the result is rounded to the operands' dtype: bit for bit
/// `conv2d` with the residual.
#[test]
fn add_conv2d_of_half_operands_with_a_bias_is_conv2d_with_its_residual() {
    let mut devs = vec![Device::cpu_with_threads(1).unwrap()];
    devs.extend(devices());
    for dev in devs {
        for dt in [DType::F16, DType::BF16] {
            let x = random(&[1, 8, 6, 19], 50, 2.0, &dev)
                .to_channels_last()
                .unwrap()
                .to_dtype(dt)
                .unwrap();
            let w = random(&[24, 8, 3, 3], 51, 1.0, &dev).to_dtype(dt).unwrap();
            let b = random(&[24], 52, 1.0, &dev);
            let conv = Conv::new()
                .padding(1)
                .bias(&b)
                .activation(Activation::Hardswish);
            let make = || {
                random(&[1, 24, 6, 19], 53, 3.0, &dev)
                    .to_channels_last()
                    .unwrap()
            };
            let want = x.conv2d(&w, &conv.clone().residual(&make())).unwrap();
            let got = make().add_conv2d(&x, &w, &conv).unwrap();
            assert_eq!(got.dtype(), dt, "{dt:?} on {dev}");
            assert_eq!(bits(&got), bits(&want), "{dt:?} on {dev}");
        }
    }
}

#[test]
fn add_conv2d_with_a_residual_of_its_own_or_one_that_does_not_fit_is_an_error() {
    for dev in devices() {
        let x = random(&[1, 2, 6, 6], 40, 1.0, &dev)
            .to_channels_last()
            .unwrap();
        let w = random(&[3, 2, 3, 3], 41, 1.0, &dev);
        let r = Tensor::zeros([1, 3, 4, 4], DType::F32, &dev).unwrap();
        let twice = Conv::new().residual(&r);
        let err = r.clone().add_conv2d(&x, &w, &twice).unwrap_err();
        assert!(
            matches!(
                err,
                Error::Argument {
                    op: "add_conv2d",
                    ..
                }
            ),
            "{dev}: {err}"
        );
        // Output [1, 3, 4, 4].
        for dims in [vec![1, 3, 4, 5], vec![2, 3, 4, 4], vec![4, 1, 1]] {
            let r = Tensor::zeros(dims.clone(), DType::F32, &dev).unwrap();
            let err = r.add_conv2d(&x, &w, &Conv::new()).unwrap_err();
            assert!(
                matches!(
                    err,
                    Error::Shape {
                        op: "add_conv2d",
                        ..
                    }
                ),
                "{dev}: {dims:?}: {err}"
            );
        }
    }
}
