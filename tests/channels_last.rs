//! Channels-last images (`to_channels_last`): on the CPU a convolution of
//! one writes a channels-last output through the pixel kernels, whose
//! sums are bit for bit those over planes (the same order, the same
//! arithmetic); on every device the values are those of the NCHW image,
//! and those of a double-precision loop written from PyTorch's
//! definition. Dense and depthwise convolutions over every padding,
//! stride, dilation, group and channel count the kernels branch on; f32,
//! f16 and bf16; crops, channel slices, flips and steps of channels-last
//! memory; one and two threads.

mod common;

use common::noise;
use webtensor::{Activation, Conv, DType, Device, Tensor, s};

/// PyTorch's conv2d in f64 over row-major `[n, c, h, w]` values.
fn reference(
    x: (&[f32], [usize; 4]),
    w: (&[f32], [usize; 4]),
    bias: Option<&[f32]>,
    (stride, pad, dilation, groups): ([usize; 2], [usize; 2], [usize; 2], usize),
    after: [usize; 2],
) -> Vec<f32> {
    let ((x, [n, c, h, wd]), (w, [o, cg, kh, kw])) = (x, w);
    let ho = (h + pad[0] + after[0] - dilation[0] * (kh - 1) - 1) / stride[0] + 1;
    let wo = (wd + pad[1] + after[1] - dilation[1] * (kw - 1) - 1) / stride[1] + 1;
    let og = o / groups;
    let mut out = Vec::new();
    for b in 0..n {
        for oc in 0..o {
            for y in 0..ho {
                for xx in 0..wo {
                    let mut acc = bias.map_or(0.0, |b| b[oc] as f64);
                    for ci in 0..cg {
                        let ch = oc / og * cg + ci;
                        for i in 0..kh {
                            for j in 0..kw {
                                let yy =
                                    (y * stride[0] + i * dilation[0]) as isize - pad[0] as isize;
                                let xw =
                                    (xx * stride[1] + j * dilation[1]) as isize - pad[1] as isize;
                                if yy >= 0 && xw >= 0 && (yy as usize) < h && (xw as usize) < wd {
                                    let wv = w[((oc * cg + ci) * kh + i) * kw + j] as f64;
                                    let xv = x[((b * c + ch) * h + yy as usize) * wd + xw as usize];
                                    acc += wv * xv as f64;
                                }
                            }
                        }
                    }
                    out.push(acc as f32);
                }
            }
        }
    }
    assert_eq!(c, cg * groups);
    out
}

/// A float tensor's values as bits, any NaN as one.
fn bits(t: &Tensor) -> Vec<u32> {
    common::read_f32(t)
        .iter()
        .map(|x| if x.is_nan() { u32::MAX } else { x.to_bits() })
        .collect()
}

/// Asserts two float tensors hold the same bits (any NaN alike), naming
/// the first output that differs.
fn assert_same_bits(got: &Tensor, want: &Tensor, what: &str) {
    let (g, w) = (bits(got), bits(want));
    assert_eq!(g.len(), w.len(), "{what}: sizes");
    if let Some(i) = (0..g.len()).find(|&i| g[i] != w[i]) {
        let (a, b) = (f32::from_bits(g[i]), f32::from_bits(w[i]));
        panic!("{what}: output {i} is {a:e}, NCHW's {b:e}");
    }
}

/// Channels-last views of `[n, c, h, w]` values: the dense copy, a crop of
/// a larger image, a channel slice of a wider one, flipped rows and
/// columns, every second row and column of a twice-as-large one.
fn channels_last_views(
    v: &[f32],
    [n, c, h, w]: [usize; 4],
    dt: DType,
    dev: &Device,
) -> Vec<(&'static str, Tensor)> {
    let x = Tensor::from_slice(v, [n, c, h, w], dev)
        .unwrap()
        .to_dtype(dt)
        .unwrap();
    let dense = x.to_channels_last().unwrap();
    // A larger channels-last image holding x at [.., 2.., 1.., 3..].
    let big = Tensor::zeros([n, c + 5, h + 3, 2 * w + 4], dt, dev)
        .unwrap()
        .to_channels_last()
        .unwrap();
    big.slice(s![
        ..,
        2..2 + c as isize,
        1..1 + h as isize,
        3..3 + w as isize
    ])
    .unwrap()
    .assign(&x)
    .unwrap();
    let crop = big
        .slice(s![
            ..,
            2..2 + c as isize,
            1..1 + h as isize,
            3..3 + w as isize
        ])
        .unwrap();
    let flipped_src = x.flip(&[2, 3]).unwrap().to_channels_last().unwrap();
    let flipped = flipped_src.flip(&[2, 3]).unwrap();
    let double = Tensor::zeros([n, c, 2 * h, 2 * w], dt, dev)
        .unwrap()
        .to_channels_last()
        .unwrap();
    let stepped = double.slice(s![.., .., ..;2, ..;2]).unwrap();
    stepped.assign(&x).unwrap();
    vec![
        ("dense", dense),
        ("crop and channel slice", crop),
        ("flipped", flipped),
        ("stepped", stepped),
    ]
}

/// Dense convolution cases: input `[n, c, h, w]`, output channels, kernel,
/// stride, padding, dilation, groups.
type Case = (
    [usize; 4],
    usize,
    [usize; 2],
    [usize; 2],
    [usize; 2],
    [usize; 2],
    usize,
);

fn dense_cases() -> Vec<Case> {
    vec![
        // 1x1, read in place: output channels across a panel and a half.
        ([2, 16, 5, 13], 24, [1, 1], [1, 1], [0, 0], [1, 1], 1),
        ([1, 17, 3, 11], 33, [1, 1], [1, 1], [0, 0], [1, 1], 1),
        ([1, 40, 6, 7], 70, [1, 1], [1, 1], [0, 0], [1, 1], 1),
        ([1, 8, 9, 9], 8, [1, 1], [2, 2], [0, 0], [1, 1], 1),
        // 3x3, padded (copied bands), a stem's stride 2 over 3 channels.
        ([1, 3, 19, 23], 16, [3, 3], [2, 2], [1, 1], [1, 1], 1),
        ([2, 16, 7, 9], 24, [3, 3], [1, 1], [1, 1], [1, 1], 1),
        ([1, 5, 11, 6], 32, [3, 3], [1, 2], [2, 1], [2, 1], 1),
        ([1, 12, 8, 8], 9, [5, 3], [1, 1], [2, 1], [1, 1], 1),
        // Groups (not depthwise), an unpadded 3x3 in place.
        ([1, 8, 7, 10], 12, [3, 3], [1, 1], [1, 1], [1, 1], 4),
        ([1, 6, 9, 9], 40, [3, 3], [1, 1], [0, 0], [1, 1], 2),
        // Groups of two panels each (32 channels and a narrow 8).
        ([1, 8, 5, 6], 80, [3, 3], [1, 1], [1, 1], [1, 1], 2),
        // Pairs of pixels (f32 on AVX-512, from a copy): 24 channels (8
        // pairs a tile) and 8 (16), odd rows (a pair without its second
        // pixel) and a last tile reaching back, stride 2, dilation, groups,
        // a 1x3; rows of exactly one tile of pairs, and of one pixel too few
        // for a tile (unpaired).
        ([1, 16, 4, 37], 24, [3, 3], [1, 1], [1, 1], [1, 1], 1),
        ([1, 10, 7, 40], 24, [3, 3], [2, 2], [1, 1], [1, 1], 1),
        ([2, 6, 6, 35], 24, [3, 3], [1, 1], [2, 2], [2, 2], 1),
        ([1, 8, 4, 20], 48, [3, 3], [1, 1], [1, 1], [1, 1], 2),
        ([2, 12, 3, 33], 8, [3, 3], [1, 1], [1, 1], [1, 1], 1),
        ([1, 9, 3, 34], 24, [3, 3], [1, 1], [1, 1], [1, 1], 3),
        ([1, 7, 2, 40], 24, [1, 3], [1, 1], [0, 1], [1, 1], 1),
        ([1, 5, 3, 15], 24, [3, 3], [1, 1], [1, 1], [1, 1], 1),
        ([1, 5, 3, 13], 24, [3, 3], [1, 1], [1, 1], [1, 1], 1),
        // One output pixel; one row; the kernel as large as the image.
        ([1, 4, 3, 3], 5, [3, 3], [1, 1], [0, 0], [1, 1], 1),
        ([1, 7, 1, 30], 10, [1, 3], [1, 1], [0, 1], [1, 1], 1),
    ]
}

fn depthwise_cases() -> Vec<Case> {
    vec![
        ([1, 16, 9, 13], 16, [3, 3], [1, 1], [1, 1], [1, 1], 16),
        ([2, 24, 8, 11], 24, [3, 3], [2, 2], [1, 1], [1, 1], 24),
        ([1, 40, 10, 10], 40, [5, 5], [1, 1], [2, 2], [1, 1], 40),
        ([1, 19, 9, 17], 19, [5, 5], [2, 2], [2, 2], [1, 1], 19),
        ([1, 3, 7, 12], 3, [3, 3], [1, 2], [2, 1], [2, 1], 3),
        // A channel multiplier of 2 (copied pixels), unpadded.
        ([1, 8, 6, 9], 16, [3, 3], [1, 1], [0, 0], [1, 1], 8),
        // Wider than the image: every pixel a border pixel.
        ([1, 16, 2, 3], 16, [5, 5], [1, 1], [2, 2], [1, 1], 16),
        ([1, 48, 4, 37], 48, [3, 3], [1, 1], [1, 1], [1, 1], 48),
        // Column dilation; one output pixel.
        ([1, 16, 6, 21], 16, [3, 3], [1, 1], [1, 2], [1, 3], 16),
        ([2, 24, 3, 3], 24, [3, 3], [1, 1], [0, 0], [1, 1], 24),
        // Rows of 5 and of 3 taps summed from each input pixel loaded once
        // (16 channels at a time, the last block masked), a row's last
        // group reaching back, padded rows skipped; the 5x5 with an
        // infinite tap too (its padded products NaN).
        ([1, 40, 7, 21], 40, [5, 5], [1, 1], [2, 2], [1, 1], 40),
        ([1, 40, 7, 21], 40, [5, 5], [1, 1], [2, 2], [1, 1], 40),
        ([2, 36, 5, 29], 36, [3, 3], [1, 1], [1, 1], [1, 1], 36),
        // Fewer than 16 channels: the masked block alone.
        ([1, 12, 6, 20], 12, [3, 3], [1, 1], [1, 1], [1, 1], 12),
    ]
}

/// Runs every case on `dev` in `dt` with each activation and with and
/// without a bias, checks the channels-last views' outputs against the
/// NCHW image's (bit for bit where `exact`) and the f32 ones against the
/// reference.
fn check_cases(cases: &[Case], dev: &Device, dt: DType, exact: bool) {
    for (k, &(xd, o, kernel, stride, pad, dilation, groups)) in cases.iter().enumerate() {
        let [n, c, h, w] = xd;
        let wd = [o, c / groups, kernel[0], kernel[1]];
        let xv = noise(n * c * h * w, 100 + k as u64);
        let mut wv = noise(wd.iter().product(), 200 + k as u64);
        if (k == 2 || k == 11) && cases.len() == depthwise_cases().len() {
            // An infinite tap: its padded products are NaN.
            wv[0] = f32::INFINITY;
        }
        let bv = noise(o, 300 + k as u64);
        let weight = Tensor::from_slice(&wv, wd, dev)
            .unwrap()
            .to_dtype(dt)
            .unwrap();
        let bias = Tensor::from_slice(&bv, [o], dev).unwrap();
        let x = Tensor::from_slice(&xv, xd, dev)
            .unwrap()
            .to_dtype(dt)
            .unwrap();
        for (act, with_bias) in [
            (None, false),
            (None, true),
            (Some(Activation::Relu), true),
            (Some(Activation::Hardsigmoid), true),
            (Some(Activation::Hardswish), false),
            (Some(Activation::Gelu), true),
        ] {
            let mut conv = Conv::new()
                .stride(stride)
                .padding(pad)
                .dilation(dilation)
                .groups(groups);
            if with_bias {
                conv = conv.bias(&bias);
            }
            if let Some(a) = act {
                conv = conv.activation(a);
            }
            let what = format!("{dt:?} case {k} {xd:?} -> {o} {act:?} bias {with_bias}");
            let want = x.conv2d(&weight, &conv).unwrap();
            if !dev.is_cpu() {
                // The GPU's planes against the CPU's (the views below are
                // checked against the planes).
                let cpu = Device::cpu();
                let on_cpu = |t: &Tensor| t.to_device(&cpu).unwrap();
                let bias_cpu = on_cpu(&bias);
                let mut conv_cpu = Conv::new()
                    .stride(stride)
                    .padding(pad)
                    .dilation(dilation)
                    .groups(groups);
                if with_bias {
                    conv_cpu = conv_cpu.bias(&bias_cpu);
                }
                if let Some(a) = act {
                    conv_cpu = conv_cpu.activation(a);
                }
                let reference = on_cpu(&x).conv2d(&on_cpu(&weight), &conv_cpu).unwrap();
                let (g, r) = (common::read_f32(&want), common::read_f32(&reference));
                // f32 sums in another order; an f16 one rounded once on
                // the CPU (the bias and activation applied to the f32 sum)
                // and up to three times on a GPU (the sum, the bias's add,
                // the activation: see Conv::activation), a few of its ulps
                // of the values added.
                let tol = if dt == DType::F32 {
                    1e-5
                } else {
                    4.0 * 2f32.powi(-10)
                };
                for (i, (&a, &b)) in g.iter().zip(&r).enumerate() {
                    let same = a == b
                        || (a.is_nan() && b.is_nan())
                        || (a - b).abs() <= tol * (b.abs() + 1.0);
                    assert!(same, "{what} on {dev}: output {i} is {a}, the CPU's {b}");
                }
            }
            if dt == DType::F32 && act.is_none() && wv.iter().all(|v| v.is_finite()) {
                let r = reference(
                    (&xv, xd),
                    (&wv, wd),
                    with_bias.then_some(&bv[..]),
                    (stride, pad, dilation, groups),
                    pad,
                );
                let got = common::read_f32(&want);
                for (i, (&g, &r)) in got.iter().zip(&r).enumerate() {
                    let same =
                        (g.is_nan() && r.is_nan()) || (g - r).abs() <= 1e-4 * (1.0 + r.abs());
                    assert!(same, "{what}: output {i} is {g}, the reference {r}");
                }
            }
            for (view, xl) in channels_last_views(&xv, xd, dt, dev) {
                let got = xl.conv2d(&weight, &conv).unwrap();
                assert_eq!(got.dims(), want.dims(), "{what} {view}");
                if dev.is_cpu() {
                    assert!(got.is_channels_last(), "{what} {view}: not channels-last");
                }
                if exact {
                    assert_same_bits(&got, &want, &format!("{what} {view}"));
                } else {
                    let (g, wnt) = (common::read_f32(&got), common::read_f32(&want));
                    let tol = if dt == DType::F32 { 1e-5 } else { 2e-2 };
                    for (i, (&a, &b)) in g.iter().zip(&wnt).enumerate() {
                        let same = a == b
                            || (a.is_nan() && b.is_nan())
                            || (a - b).abs() <= tol * (1.0 + b.abs());
                        assert!(same, "{what} {view}: output {i} is {a}, NCHW's {b}");
                    }
                }
            }
        }
    }
}

#[test]
fn channels_last_convolutions_are_the_planes_bit_for_bit_on_the_cpu() {
    for threads in [1, 2] {
        let dev = Device::cpu_with_threads(threads).unwrap();
        for dt in [DType::F32, DType::F16, DType::BF16] {
            check_cases(&dense_cases(), &dev, dt, true);
            check_cases(&depthwise_cases(), &dev, dt, true);
        }
    }
}

/// A zero image under negative weights and a -0 bias: every product is
/// -0, padded or not, and a sum from +0 stays +0 (the padded taps the
/// channels-last kernels skip add nothing), so the outputs are +0 as the
/// planes' kernel, adding every tap, makes them; a sum started at -0
/// would end at -0.
#[test]
fn depthwise_sums_of_zeros_keep_the_sign_the_planes_give() {
    let dev = Device::cpu();
    for (c, k) in [(16usize, 3usize), (40, 5), (12, 3)] {
        let x = Tensor::zeros([1, c, 5, 23], DType::F32, &dev).unwrap();
        let w = Tensor::full([c, 1, k, k], -0.5, DType::F32, &dev).unwrap();
        let b = Tensor::full([c], -0.0, DType::F32, &dev).unwrap();
        let conv = Conv::new().padding(k / 2).groups(c).bias(&b);
        let want = x.conv2d(&w, &conv).unwrap();
        let got = x.to_channels_last().unwrap().conv2d(&w, &conv).unwrap();
        assert!(got.is_channels_last());
        assert_same_bits(&got, &want, &format!("{c} channels, {k}x{k}"));
        let positive = want.to_vec::<f32>().unwrap();
        assert!(positive.iter().all(|v| v.to_bits() == 0), "{c}: +0 each");
    }
}

#[test]
fn channels_last_convolutions_give_the_planes_values_on_every_gpu() {
    for dev in common::devices().into_iter().filter(Device::is_gpu) {
        for dt in [DType::F32, DType::F16] {
            check_cases(&dense_cases(), &dev, dt, false);
            check_cases(&depthwise_cases(), &dev, dt, false);
        }
    }
}

#[test]
fn a_network_converted_at_its_input_stays_channels_last_on_the_cpu() {
    let dev = Device::cpu();
    let x = Tensor::from_slice(&noise(3 * 32 * 32, 1), [1, 3, 32, 32], &dev).unwrap();
    let stem = Tensor::from_slice(&noise(16 * 27, 2), [16, 3, 3, 3], &dev).unwrap();
    let dw = Tensor::from_slice(&noise(16 * 9, 3), [16, 1, 3, 3], &dev).unwrap();
    let project = Tensor::from_slice(&noise(16 * 16, 4), [16, 16, 1, 1], &dev).unwrap();
    let net = |x: &Tensor| {
        let h = x
            .conv2d(
                &stem,
                &Conv::new()
                    .stride(2)
                    .padding(1)
                    .activation(Activation::Hardswish),
            )
            .unwrap();
        let d = h
            .conv2d(&dw, &Conv::new().padding(1).groups(16))
            .unwrap()
            .relu()
            .unwrap();
        let p = d.conv2d(&project, &Conv::new()).unwrap();
        let se = p.mean_keepdim([2, 3]).unwrap().hardsigmoid().unwrap();
        let out = p.mul(&se).unwrap().add(&h).unwrap();
        (vec![h, d, p], out)
    };
    let (convs0, want) = net(&x);
    let (convs1, got) = net(&x.to_channels_last().unwrap());
    assert!(!want.is_channels_last() && got.is_channels_last());
    for ((a, b), what) in convs1
        .iter()
        .zip(&convs0)
        .zip(["stem", "depthwise", "projection"])
    {
        assert!(a.is_channels_last() && !b.is_channels_last(), "{what}");
        assert_same_bits(a, b, what);
    }
    // The mean sums the pixels in memory order: within rounding.
    common::assert_close(
        &common::read_f32(&got),
        &common::read_f32(&want),
        1e-5,
        "the block",
    );
    // An FPN's nearest upsampling and concatenation keep the memory too.
    let up = |t: &Tensor| t.resize_by([2.0, 2.0], webtensor::Resize::Nearest).unwrap();
    let (a, b) = (&convs1[0], &convs0[0]);
    let (ua, ub) = (up(a), up(b));
    assert!(ua.is_channels_last() && !ub.is_channels_last());
    assert_same_bits(&ua, &ub, "upsampled");
    let (ca, cb) = (
        Tensor::concat(&[a, &convs1[1]], 1).unwrap(),
        Tensor::concat(&[b, &convs0[1]], 1).unwrap(),
    );
    assert!(ca.is_channels_last() && !cb.is_channels_last());
    assert_same_bits(&ca, &cb, "concatenated");
    // A mix of memory orders joins row-major.
    assert!(
        !Tensor::concat(&[a, &convs0[1]], 1)
            .unwrap()
            .is_channels_last()
    );
}

#[test]
fn channels_last_memory_is_asked_of_images_only() {
    let dev = Device::cpu();
    let x = Tensor::zeros([2, 3, 4], DType::F32, &dev).unwrap();
    let e = x.to_channels_last().unwrap_err().to_string();
    assert!(
        e.contains("to_channels_last") && e.contains("[2, 3, 4]"),
        "{e}"
    );
    assert!(!x.is_channels_last());
    // A channels-last tensor is returned as it is; one channel is both.
    let y = Tensor::zeros([1, 4, 2, 2], DType::F32, &dev)
        .unwrap()
        .to_channels_last()
        .unwrap();
    assert!(y.to_channels_last().unwrap().shares_storage(&y));
    assert!(
        Tensor::zeros([2, 1, 3, 3], DType::F32, &dev)
            .unwrap()
            .is_channels_last()
    );
}

/// `same` padding of an even kernel pads more after the image than before
/// (PyTorch's: `d (k - 1) / 2` before, the rest after): the last output
/// row and column read zeros past the input, never the next row's or
/// image's first pixels nor a crop's spare columns: in either memory
/// order, batched, on every device.
#[test]
fn same_padding_of_an_even_kernel_reads_zeros_past_the_image() {
    let mut devs = vec![
        Device::cpu_with_threads(1).unwrap(),
        Device::cpu_with_threads(2).unwrap(),
    ];
    devs.extend(common::devices().into_iter().filter(Device::is_gpu));
    for dev in devs {
        for (xd, o, k, d) in [
            ([2, 4, 3, 3], 8, [2, 2], [1, 1]),
            ([1, 3, 5, 4], 5, [1, 2], [1, 1]),
            ([2, 6, 4, 7], 20, [4, 2], [1, 2]),
            // Rows long enough for the planes' kernel to read in place.
            ([2, 3, 3, 64], 8, [2, 2], [1, 1]),
            ([1, 2, 2, 129], 4, [1, 2], [1, 1]),
            // Depthwise (as many outputs as input channels, one group
            // each).
            ([2, 16, 5, 20], 0, [2, 4], [1, 1]),
        ] {
            let [n, c, h, w] = xd;
            let xv = noise(n * c * h * w, 7);
            let (o, groups) = if o == 0 { (c, c) } else { (o, 1) };
            let wd = [o, c / groups, k[0], k[1]];
            let wv = noise(wd.iter().product(), 8);
            let weight = Tensor::from_slice(&wv, wd, &dev).unwrap();
            // The reference pads (total / 2, the rest); its `pad` is the
            // leading one, and it reads zeros past the end.
            let lead = [0, 1].map(|a| d[a] * (k[a] - 1) / 2);
            let after = [0, 1].map(|a| d[a] * (k[a] - 1) - lead[a]);
            let r = reference((&xv, xd), (&wv, wd), None, ([1, 1], lead, d, groups), after);
            let x = Tensor::from_slice(&xv, xd, &dev).unwrap();
            let conv = Conv::new().same().dilation(d).groups(groups);
            // Crops of larger images whose rows run on past the crop (the
            // values after a row are spare columns or the next row).
            let wide = Tensor::full([n, c, h + 1, w + 3], 7.0, DType::F32, &dev).unwrap();
            let crop = wide.slice(s![.., .., ..h as isize, ..w as isize]).unwrap();
            crop.assign(&x).unwrap();
            let wide_last = wide.to_channels_last().unwrap();
            let crop_last = wide_last
                .slice(s![.., .., ..h as isize, ..w as isize])
                .unwrap();
            let views = [
                ("NCHW", x.clone()),
                ("channels-last", x.to_channels_last().unwrap()),
                ("NCHW crop", crop),
                ("channels-last crop", crop_last),
            ];
            for (what, input) in views {
                let got = input.conv2d(&weight, &conv).unwrap();
                assert_eq!(got.dims(), &[n, o, h, w], "{what} {xd:?} {k:?}");
                common::assert_close(
                    &common::read_f32(&got),
                    &r,
                    1e-5,
                    &format!("{what} {xd:?} {k:?}"),
                );
            }
        }
    }
}

/// Nearest upsampling by whole factors keeps channels-last memory on the
/// CPU and `concat` on every device, with the NCHW image's values: f32,
/// f16 and an integer dtype, factors 2 and 3 by 1, a crop of a larger
/// image.
#[test]
fn upsampling_and_joining_keep_channels_last_memory() {
    for dev in common::devices() {
        for dt in [DType::F32, DType::F16, DType::I32] {
            let x = Tensor::from_slice(&noise(2 * 5 * 3 * 4, 11), [2, 5, 3, 4], &dev)
                .unwrap()
                .mul_scalar(100.0)
                .unwrap()
                .to_dtype(dt)
                .unwrap();
            let last = x.to_channels_last().unwrap();
            let crop = Tensor::zeros([2, 7, 3, 6], dt, &dev)
                .unwrap()
                .to_channels_last()
                .unwrap()
                .slice(s![.., 1..6, .., 2..])
                .unwrap();
            crop.assign(&x).unwrap();
            for factors in [[2.0, 2.0], [3.0, 1.0]] {
                let want = x.resize_by(factors, webtensor::Resize::Nearest).unwrap();
                let got = last.resize_by(factors, webtensor::Resize::Nearest).unwrap();
                // (A GPU's one-pass resize kernel writes row-major.)
                assert_eq!(
                    got.is_channels_last(),
                    dev.is_cpu(),
                    "{dev:?} {dt:?} {factors:?}"
                );
                assert_same_bits(
                    &got,
                    &want,
                    &format!("{dev:?} {dt:?} upsampled {factors:?}"),
                );
            }
            let want = Tensor::concat(&[&x, &x.narrow(1, 1, 3).unwrap()], 1).unwrap();
            let parts = [
                last.clone(),
                last.narrow(1, 1, 3).unwrap().to_channels_last().unwrap(),
            ];
            let got = Tensor::concat(&[&parts[0], &parts[1]], 1).unwrap();
            assert!(got.is_channels_last(), "{dev:?} {dt:?} concat");
            assert_same_bits(&got, &want, &format!("{dev:?} {dt:?} concatenated"));
            // A crop's channels lie side by side but are not dense: it
            // joins row-major, with the same values.
            let mixed = Tensor::concat(&[&crop, &last], 1).unwrap();
            assert!(!mixed.is_channels_last());
            let want = Tensor::concat(&[&x, &x], 1).unwrap();
            assert_same_bits(&mixed, &want, &format!("{dev:?} {dt:?} crop joined"));
        }
    }
}

/// A transposed convolution whose stride is its kernel (a 1x1 product
/// and a shuffle) of a channels-last image writes channels-last, with the
/// NCHW image's values bit for bit: groups, bias, activation, a residual,
/// f32, f16 and f64 (whose product composes row-major columns).
#[test]
fn disjoint_transposed_convolutions_keep_channels_last_memory() {
    for threads in [1, 2] {
        let dev = Device::cpu_with_threads(threads).unwrap();
        for (xd, og, k, groups, dt) in [
            ([1, 24, 5, 7], 24, [2, 2], 1, DType::F32),
            ([2, 6, 4, 3], 5, [2, 3], 2, DType::F32),
            ([1, 8, 3, 9], 1, [2, 2], 1, DType::F16),
            ([1, 4, 3, 3], 3, [3, 2], 2, DType::F64),
        ] {
            let [n, c, h, w] = xd;
            let wd = [c, og, k[0], k[1]];
            let x = Tensor::from_slice(&noise(n * c * h * w, 21), xd, &dev)
                .unwrap()
                .to_dtype(dt)
                .unwrap();
            let weight = Tensor::from_slice(&noise(wd.iter().product(), 22), wd, &dev)
                .unwrap()
                .to_dtype(dt)
                .unwrap();
            let o = og * groups;
            let bias = Tensor::from_slice(&noise(o, 23), [o], &dev)
                .unwrap()
                .to_dtype(dt)
                .unwrap();
            let out = [n, o, h * k[0], w * k[1]];
            let skip = Tensor::from_slice(&noise(out.iter().product(), 24), out, &dev)
                .unwrap()
                .to_dtype(dt)
                .unwrap();
            for residual in [false, true] {
                let mut conv = Conv::new()
                    .stride(k)
                    .groups(groups)
                    .bias(&bias)
                    .activation(Activation::Relu);
                if residual {
                    conv = conv.residual(&skip);
                }
                let what = format!("{xd:?} {k:?} groups {groups} {dt:?} residual {residual}");
                let want = x.conv_transpose2d(&weight, &conv).unwrap();
                let got = x
                    .to_channels_last()
                    .unwrap()
                    .conv_transpose2d(&weight, &conv)
                    .unwrap();
                assert_eq!(got.dims(), &out, "{what}");
                assert!(
                    got.is_channels_last() && !want.is_channels_last() || o == 1,
                    "{what}"
                );
                assert_same_bits(&got, &want, &what);
            }
        }
    }
}

/// On the CPU a channels-last f32 transposed convolution whose stride is
/// its kernel (and of one group) writes each tap row's 1x1 product
/// straight into its output rows (rows `kh` apart): one `conv2d` a tap
/// row and no shuffle, bit for bit the NCHW image's result, over batches,
/// kernels taller than wide and wider than tall, output rows of fewer
/// and more than a tile's channels and pixels that end mid-tile, the
/// activations the kernel applies in registers and after, no bias,
/// dense, cropped, stepped and flipped inputs, one and two threads, one
/// tap row (`kh` = 1). Tap rows of fewer than 6 channels (`kw og`) and
/// activations no kernel applies take the columns and their shuffle.
#[test]
fn disjoint_transposed_convolutions_write_tap_rows_in_place() {
    for threads in [1, 2] {
        let dev = Device::cpu_with_threads(threads).unwrap();
        for (n, c, h, w, og, k) in [
            (2, 3, 5, 19, 8, [3, 2]),
            (1, 7, 4, 33, 20, [2, 2]),
            (1, 16, 3, 17, 5, [2, 3]),
            (2, 2, 2, 5, 1, [2, 1]),
            (1, 4, 3, 5, 8, [1, 2]),
            (1, 3, 2, 7, 3, [2, 2]),
            (1, 4, 3, 9, 1, [2, 2]),
        ] {
            let xd = [n, c, h, w + 2];
            let x = Tensor::from_slice(&noise(xd.iter().product(), 31), xd, &dev).unwrap();
            let wd = [c, og, k[0], k[1]];
            let weight = Tensor::from_slice(&noise(wd.iter().product(), 32), wd, &dev).unwrap();
            let bias = Tensor::from_slice(&noise(og, 33), [og], &dev).unwrap();
            let last = x.to_channels_last().unwrap();
            // Dense; cropped by a column at each side; every other row.
            let views = [
                (
                    "dense",
                    last.narrow(3, 0, w)
                        .unwrap()
                        .contiguous()
                        .unwrap()
                        .to_channels_last()
                        .unwrap(),
                    x.narrow(3, 0, w).unwrap(),
                ),
                (
                    "cropped",
                    last.narrow(3, 1, w).unwrap(),
                    x.narrow(3, 1, w).unwrap(),
                ),
                (
                    "stepped",
                    last.slice(s![.., .., ..;2, 0..w]).unwrap(),
                    x.slice(s![.., .., ..;2, 0..w]).unwrap(),
                ),
                (
                    "flipped",
                    last.narrow(3, 0, w).unwrap().flip(&[2, 3]).unwrap(),
                    x.narrow(3, 0, w).unwrap().flip(&[2, 3]).unwrap(),
                ),
            ];
            for (view, input, planes) in &views {
                for act in [
                    None,
                    Some(Activation::Relu),
                    Some(Activation::Sigmoid),
                    Some(Activation::Gelu),
                    Some(Activation::Relu6),
                ] {
                    for biased in [false, true] {
                        let mut conv = Conv::new().stride(k);
                        if biased {
                            conv = conv.bias(&bias);
                        }
                        if let Some(a) = act {
                            conv = conv.activation(a);
                        }
                        let what = format!(
                            "{threads} threads {:?} k {k:?} og {og} {view} {act:?} bias {biased}",
                            input.dims()
                        );
                        let want = planes
                            .contiguous()
                            .unwrap()
                            .conv_transpose2d(&weight, &conv)
                            .unwrap();
                        let mut got = None;
                        let profile = dev
                            .profile(|| {
                                got = Some(input.conv_transpose2d(&weight, &conv)?);
                                Ok(())
                            })
                            .unwrap();
                        let got = got.unwrap();
                        assert!(got.is_channels_last(), "{what}");
                        assert_same_bits(&got, &want, &what);
                        let names: Vec<&str> = profile.ops().iter().map(|op| op.name).collect();
                        let convs = names.iter().filter(|&&op| op == "conv2d").count();
                        // Relu6 is no kernel's: the columns apply it.
                        if k[1] * og >= 6 && act != Some(Activation::Relu6) {
                            // One product a tap row, and nothing else but
                            // the input's and weight's own copies.
                            assert_eq!(convs, k[0], "{what}: {names:?}");
                        } else {
                            assert_eq!(convs, 1, "{what}: {names:?}");
                        }
                    }
                }
            }
        }
    }
}

/// The CPU keeps a convolution's packed weight panels with the weight's
/// storage, for channels-last and row-major images alike: a second call
/// takes them, a write to the weight (in place, through a view) packs it
/// again, and a view at another offset of the storage, or of other dims
/// or groups, packs its own; each result bit for bit a fresh copy's.
#[test]
fn kept_weight_panels_follow_every_write_and_view() {
    let dev = Device::cpu();
    let image = |c: usize, seed: u64| {
        Tensor::from_vec(noise(2 * c * 9 * 9, seed), [2, c, 9, 9], &dev).unwrap()
    };
    for channels_last in [true, false] {
        let memory = |t: Tensor| {
            if channels_last {
                t.to_channels_last().unwrap()
            } else {
                t
            }
        };
        let (x, narrow) = (memory(image(24, 11)), memory(image(12, 14)));
        let all = Tensor::from_vec(noise(80 * 24 * 9, 12), [80, 24, 3, 3], &dev).unwrap();
        let check_on = |x: &Tensor, w: &Tensor, groups: usize, what: &str| {
            let what = format!("{what} (channels-last: {channels_last})");
            let conv = Conv::new().padding(1).groups(groups);
            let got = x.conv2d(w, &conv).unwrap();
            assert_eq!(got.is_channels_last(), channels_last, "{what}: the kernels");
            let copy = Tensor::from_vec(w.to_vec::<f32>().unwrap(), w.dims(), &dev).unwrap();
            assert!(!copy.shares_storage(w));
            assert_same_bits(&got, &x.conv2d(&copy, &conv).unwrap(), &what);
        };
        let check = |w: &Tensor, groups: usize, what: &str| check_on(&x, w, groups, what);
        let (first, second) = (
            all.slice(s![0..40]).unwrap(),
            all.slice(s![40..80]).unwrap(),
        );
        check(&first, 1, "the first 40 channels");
        check(&first, 1, "the first 40 again");
        check(&second, 1, "the next 40: another offset");
        check(&first, 1, "the first 40 after the next");
        // Writes through views of the storage, in place.
        first.slice(s![3..4]).unwrap().fill_(0.5).unwrap();
        check(&first, 1, "the first 40 after a channel was filled");
        all.slice(s![.., .., 1..2, 1..2])
            .unwrap()
            .fill_(-2.0)
            .unwrap();
        check(&first, 1, "the first 40 after the centre taps were filled");
        check(&second, 1, "the next 40 after the centre taps were filled");
        // The same memory as 160 channels of two groups of 12.
        let grouped = all.reshape([160, 12, 3, 3]).unwrap();
        assert!(grouped.shares_storage(&all));
        check(&grouped, 2, "the storage as two groups");
        check(&first, 1, "the first 40 after the groups");
        // One view, of 12 input channels a group, read in one group of 12
        // channels and then in two of 24: the groups alone tell them apart.
        let twelve = grouped.slice(s![0..40]).unwrap();
        check_on(&narrow, &twelve, 1, "12 channels in one group");
        check(&twelve, 2, "the same view in two groups");
        check_on(&narrow, &twelve, 1, "12 channels in one group again");
        // Views of other strides, read through them: flipped taps, the
        // taps transposed (the same offset and dims over the same memory:
        // the strides alone tell them apart), the weight channels-last
        // (PyTorch's `model.to(memory_format=channels_last)`), and a
        // permuted storage of [24, 40, 3, 3].
        check(&first.flip(&[2, 3]).unwrap(), 1, "the first 40 flipped");
        check(&first, 1, "the first 40 after their flip");
        check(
            &first.transpose(2, 3).unwrap(),
            1,
            "the first 40's taps transposed",
        );
        check(&first, 1, "the first 40 after their transpose");
        let cl = first.to_channels_last().unwrap();
        check(&cl, 1, "the first 40 channels-last");
        check(&cl, 1, "the first 40 channels-last again");
        let other = Tensor::from_vec(noise(24 * 40 * 9, 15), [24, 40, 3, 3], &dev).unwrap();
        check(
            &other.permute(&[1, 0, 2, 3]).unwrap(),
            1,
            "a permuted storage",
        );
        // Depthwise, through a flipped view.
        let dw = Tensor::from_vec(noise(24 * 9, 16), [24, 1, 3, 3], &dev).unwrap();
        check(&dw.flip(&[2, 3]).unwrap(), 24, "depthwise taps flipped");
    }
}

/// A weight of another memory order (channels-last, as PyTorch's
/// `model.to(memory_format=channels_last)` makes it) is read where it
/// lies on the CPU: the convolution is one op, no copy of the weight
/// made for the call, its values the dense weight's bit for bit.
#[test]
fn a_channels_last_weight_is_read_in_place_on_the_cpu() {
    for threads in [1, 2] {
        let dev = Device::cpu_with_threads(threads).unwrap();
        for (c, o, groups) in [(16, 24, 1), (16, 40, 1), (16, 16, 16)] {
            let x = Tensor::from_vec(noise(c * 100, 20), [1, c, 10, 10], &dev)
                .unwrap()
                .to_channels_last()
                .unwrap();
            let w = Tensor::from_vec(noise(o * c / groups * 9, 21), [o, c / groups, 3, 3], &dev)
                .unwrap();
            let cl = w.to_channels_last().unwrap();
            // (One input channel a group: channels-last is row-major.)
            assert_eq!(cl.is_contiguous(), groups == c);
            let conv = Conv::new().padding(1).groups(groups);
            let want = x.conv2d(&w, &conv).unwrap();
            let mut got = None;
            let profile = dev
                .profile(|| {
                    got = Some(x.conv2d(&cl, &conv)?);
                    Ok(())
                })
                .unwrap();
            let names: Vec<&str> = profile.ops().iter().map(|op| op.name).collect();
            let what = format!("{c} -> {o} in {groups} groups, {threads} threads");
            let op = if groups == c { "depthwise" } else { "conv2d" };
            assert_eq!(names, [op], "{what}");
            assert_same_bits(&got.unwrap(), &want, &what);
        }
    }
}
