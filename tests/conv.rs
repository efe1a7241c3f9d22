//! Convolution, pooling and resizing on every device, against direct
//! double-precision loops written from PyTorch's definitions (and values
//! PyTorch gives, hand-worked), on contiguous and strided inputs, f16, odd
//! sizes and bad input.

mod common;

use common::{devices, noise};
use webtensor::{Activation, Conv, DType, Device, Pool, Resize, Tensor, s};

/// Row-major values of a 4-D shape.
struct Array4 {
    dims: [usize; 4],
    v: Vec<f32>,
}

impl Array4 {
    fn new(dims: [usize; 4], seed: u64) -> Array4 {
        Array4 {
            dims,
            v: noise(dims.iter().product(), seed),
        }
    }

    fn at(&self, [a, b, c, d]: [usize; 4]) -> f64 {
        let [_, n1, n2, n3] = self.dims;
        self.v[((a * n1 + b) * n2 + c) * n3 + d] as f64
    }

    fn tensor(&self, dev: &Device) -> Tensor {
        Tensor::from_slice(&self.v, self.dims, dev).unwrap()
    }
}

/// A convolution's settings, for the reference.
#[derive(Clone, Copy)]
struct Setting {
    stride: [usize; 2],
    pad: [(usize, usize); 2],
    dilation: [usize; 2],
    groups: usize,
}

/// PyTorch's conv2d, by its definition.
fn conv_reference(
    x: &Array4,
    w: &Array4,
    bias: Option<&[f32]>,
    st: Setting,
) -> (Vec<f32>, [usize; 4]) {
    let [n, c, h, wd] = x.dims;
    let [o, cg, kh, kw] = w.dims;
    let (s, d, p) = (st.stride, st.dilation, st.pad);
    let ho = (h + p[0].0 + p[0].1 - d[0] * (kh - 1) - 1) / s[0] + 1;
    let wo = (wd + p[1].0 + p[1].1 - d[1] * (kw - 1) - 1) / s[1] + 1;
    let og = o / st.groups;
    let mut out = Vec::new();
    for b in 0..n {
        for oc in 0..o {
            let group = oc / og;
            for y in 0..ho {
                for xx in 0..wo {
                    let mut acc = bias.map_or(0.0, |b| b[oc] as f64);
                    for ci in 0..cg {
                        let ch = group * cg + ci;
                        for i in 0..kh {
                            for j in 0..kw {
                                let yy = (y * s[0] + i * d[0]) as isize - p[0].0 as isize;
                                let xw = (xx * s[1] + j * d[1]) as isize - p[1].0 as isize;
                                if yy >= 0 && xw >= 0 && (yy as usize) < h && (xw as usize) < wd {
                                    acc += w.at([oc, ci, i, j])
                                        * x.at([b, ch, yy as usize, xw as usize]);
                                }
                            }
                        }
                    }
                    out.push(acc as f32);
                }
            }
        }
    }
    assert_eq!(c, cg * st.groups);
    (out, [n, o, ho, wo])
}

/// A conv2d case: label, input and weight extents, the reference's
/// settings and the same as a `Conv`.
type ConvCase = (&'static str, [usize; 4], [usize; 4], Setting, Conv<'static>);

/// A transposed case: label, input and weight extents, stride, padding,
/// dilation, output padding and groups.
type TransposeCase = (
    &'static str,
    [usize; 4],
    [usize; 4],
    [usize; 2],
    [usize; 2],
    [usize; 2],
    [usize; 2],
    usize,
);

fn check(got: &Tensor, want: &[f32], dims: &[usize], tol: f32, what: &str) {
    assert_eq!(got.dims(), dims, "{what}: shape");
    common::assert_close(&common::read_f32(got), want, tol, what);
}

#[test]
fn conv2d_equals_its_definition_on_every_path() {
    let plain = Setting {
        stride: [1, 1],
        pad: [(0, 0); 2],
        dilation: [1, 1],
        groups: 1,
    };
    // (label, input dims, weight dims, setting, the Conv): few channels,
    // products, groups, depthwise with a multiplier, same padding with an
    // even dilated kernel, strides and dilations per axis; on a GPU the
    // implicit-GEMM kernel but for depthwise and few-pixel outputs.
    let cases: Vec<ConvCase> = vec![
        (
            "rgb 3x3 padded",
            [2, 3, 7, 6],
            [4, 3, 3, 3],
            Setting {
                pad: [(1, 1); 2],
                ..plain
            },
            Conv::new().padding(1),
        ),
        (
            "products, strided, dilated",
            [2, 8, 9, 11],
            [6, 8, 3, 2],
            Setting {
                stride: [2, 1],
                pad: [(1, 1), (0, 0)],
                dilation: [1, 2],
                ..plain
            },
            Conv::new().stride([2, 1]).padding([1, 0]).dilation([1, 2]),
        ),
        (
            "two groups",
            [1, 8, 7, 8],
            [6, 4, 3, 3],
            Setting { groups: 2, ..plain },
            Conv::new().groups(2),
        ),
        (
            "depthwise x2",
            [2, 5, 6, 7],
            [10, 1, 3, 3],
            Setting {
                groups: 5,
                pad: [(1, 1); 2],
                ..plain
            },
            Conv::new().groups(5).padding(1),
        ),
        (
            "same, even kernel, dilation 2",
            [1, 6, 8, 7],
            [3, 6, 4, 2],
            Setting {
                pad: [(3, 3), (0, 1)],
                dilation: [2, 1],
                ..plain
            },
            Conv::new().same().dilation([2, 1]),
        ),
        ("1x1", [3, 16, 4, 4], [8, 16, 1, 1], plain, Conv::new()),
        // Outputs of a few pixels: products per tap on a GPU too.
        (
            "few pixels, grouped",
            [2, 6, 3, 3],
            [4, 3, 2, 2],
            Setting { groups: 2, ..plain },
            Conv::new().groups(2),
        ),
        (
            "few pixels, few channels",
            [2, 3, 3, 4],
            [5, 3, 2, 2],
            plain,
            Conv::new(),
        ),
    ];
    for dev in devices() {
        for (k, (label, xd, wd, setting, conv)) in cases.iter().enumerate() {
            let (x, w) = (
                Array4::new(*xd, k as u64 + 1),
                Array4::new(*wd, k as u64 + 50),
            );
            let bias: Vec<f32> = noise(wd[0], 99);
            let b = Tensor::from_slice(&bias, [wd[0]], &dev).unwrap();
            let (want, dims) = conv_reference(&x, &w, Some(&bias), *setting);
            let got = x
                .tensor(&dev)
                .conv2d(&w.tensor(&dev), &conv.clone().bias(&b))
                .unwrap();
            check(&got, &want, &dims, 1e-5, &format!("{label} on {dev}"));
            // The same data through strided views: NHWC permuted, a reversed copy read backwards.
            let nhwc = x
                .tensor(&dev)
                .permute(&[0, 2, 3, 1])
                .unwrap()
                .contiguous()
                .unwrap();
            let view = nhwc.permute(&[0, 3, 1, 2]).unwrap();
            let got = view
                .conv2d(&w.tensor(&dev), &conv.clone().bias(&b))
                .unwrap();
            check(
                &got,
                &want,
                &dims,
                1e-5,
                &format!("{label}, NHWC view, on {dev}"),
            );
            let flipped = x.tensor(&dev).flip(&[2, 3]).unwrap().contiguous().unwrap();
            let back = flipped.slice(s![.., .., ..;-1, ..;-1]).unwrap();
            let got = back
                .conv2d(&w.tensor(&dev), &conv.clone().bias(&b))
                .unwrap();
            check(
                &got,
                &want,
                &dims,
                1e-5,
                &format!("{label}, reversed view, on {dev}"),
            );
            // A stepped, offset view (every other channel and column, from row 1).
            let [n, c, h, wd_] = *xd;
            let big = Tensor::zeros([n, 2 * c, h + 1, 2 * wd_], DType::F32, &dev).unwrap();
            let stepped = big.slice(s![.., ..;2, 1.., ..;2]).unwrap();
            stepped.assign(&x.tensor(&dev)).unwrap();
            let got = stepped
                .conv2d(&w.tensor(&dev), &conv.clone().bias(&b))
                .unwrap();
            check(
                &got,
                &want,
                &dims,
                1e-5,
                &format!("{label}, stepped view, on {dev}"),
            );
            // f16 operands, computed in f32.
            let (x16, w16) = (
                x.tensor(&dev).to_dtype(DType::F16).unwrap(),
                w.tensor(&dev).to_dtype(DType::F16).unwrap(),
            );
            let got = x16.conv2d(&w16, conv).unwrap();
            assert_eq!(got.dtype(), DType::F16);
            // An f32 bias on f16 operands.
            let biased = x16.conv2d(&w16, &conv.clone().bias(&b)).unwrap();
            assert_eq!(biased.dtype(), DType::F16, "{label} on {dev}");
            let (x32, w32) = (
                x16.to_dtype(DType::F32).unwrap(),
                w16.to_dtype(DType::F32).unwrap(),
            );
            let want16 = x32.conv2d(&w32, conv).unwrap();
            check(
                &got,
                &common::read_f32(&want16),
                &dims,
                2e-3,
                &format!("{label}, f16, on {dev}"),
            );
            // (The f32 path on the rounded operands: checked above against
            // the definition.)
            let want16 = x32.conv2d(&w32, &conv.clone().bias(&b)).unwrap();
            check(
                &biased,
                &common::read_f32(&want16),
                &dims,
                2e-3,
                &format!("{label}, f16 with an f32 bias, on {dev}"),
            );
        }
    }
}

#[test]
fn conv1d_and_unbatched_inputs() {
    for dev in devices() {
        let x = Array4::new([2, 3, 1, 20], 7);
        let w = Array4::new([5, 3, 1, 4], 8);
        let setting = Setting {
            stride: [1, 3],
            pad: [(0, 0), (2, 2)],
            dilation: [1, 2],
            groups: 1,
        };
        let (want, dims) = conv_reference(&x, &w, None, setting);
        let x1 = x.tensor(&dev).squeeze_axis(2).unwrap();
        let w1 = w.tensor(&dev).squeeze_axis(2).unwrap();
        let got = x1
            .conv1d(&w1, &Conv::new().stride(3).padding(2).dilation(2))
            .unwrap();
        check(
            &got,
            &want,
            &[dims[0], dims[1], dims[3]],
            1e-5,
            &format!("conv1d on {dev}"),
        );
        // One sample without its batch axis.
        let single = x
            .tensor(&dev)
            .narrow(0, 1, 1)
            .unwrap()
            .squeeze_axis(0)
            .unwrap();
        let got = single
            .conv2d(
                &w.tensor(&dev),
                &Conv::new().stride([1, 3]).padding([0, 2]).dilation([1, 2]),
            )
            .unwrap();
        let per_sample = want.len() / 2;
        check(
            &got,
            &want[per_sample..],
            &dims[1..],
            1e-5,
            &format!("unbatched on {dev}"),
        );
    }
}

#[test]
fn conv_transpose1d_is_the_transposed_convolution_along_a_length() {
    // PyTorch's conv_transpose1d: a HiFi-GAN upsampling (kernel 16, stride
    // 8, padding 4) and a grouped, dilated one with output padding, batched
    // and not, against the 2-D reference over inputs of one row.
    let cases = [
        ([2, 4, 1, 9], [4, 3, 1, 16], 8, 4, 1, 0, 1),
        ([1, 6, 1, 7], [6, 2, 1, 3], 3, 1, 2, 2, 3),
    ];
    for dev in devices() {
        for (k, (xd, wd, s, p, d, op, g)) in cases.into_iter().enumerate() {
            let (x, w) = (
                Array4::new(xd, 60 + k as u64),
                Array4::new(wd, 70 + k as u64),
            );
            let (want, dims) = transpose_reference(&x, &w, [1, s], [0, p], [1, d], [0, op], g);
            let conv = Conv::new()
                .stride(s)
                .padding(p)
                .dilation(d)
                .output_padding(op)
                .groups(g);
            let x1 = x.tensor(&dev).squeeze_axis(2).unwrap();
            let w1 = w.tensor(&dev).squeeze_axis(2).unwrap();
            let got = x1.conv_transpose1d(&w1, &conv).unwrap();
            let what = format!("case {k} on {dev}");
            check(&got, &want, &[dims[0], dims[1], dims[3]], 1e-5, &what);
            let single = x1.narrow(0, 0, 1).unwrap().squeeze_axis(0).unwrap();
            let got = single.conv_transpose1d(&w1, &conv).unwrap();
            let per_sample = want.len() / dims[0];
            let what = format!("case {k} unbatched on {dev}");
            check(&got, &want[..per_sample], &[dims[1], dims[3]], 1e-5, &what);
        }
    }
}

/// PyTorch's conv_transpose2d, by its definition: each input element
/// times the kernel, added at `input position * stride + tap * dilation -
/// padding`.
/// PyTorch's conv_transpose2d by its definition: each input pixel times
/// each tap added at `(y s + i d - p, x s + j d - p)`.
fn transpose_reference(
    x: &Array4,
    w: &Array4,
    s: [usize; 2],
    p: [usize; 2],
    d: [usize; 2],
    op: [usize; 2],
    g: usize,
) -> (Vec<f32>, [usize; 4]) {
    let [n, c, h, wi] = x.dims;
    let [_, og, kh, kw] = w.dims;
    let o = og * g;
    let full = [
        (h - 1) * s[0] + d[0] * (kh - 1) + 1 + op[0],
        (wi - 1) * s[1] + d[1] * (kw - 1) + 1 + op[1],
    ];
    let out_dims = [n, o, full[0] - 2 * p[0], full[1] - 2 * p[1]];
    let mut want = vec![0.0f64; out_dims.iter().product()];
    let cg = c / g;
    for b in 0..n {
        for ch in 0..c {
            let group = ch / cg;
            for y in 0..h {
                for xx in 0..wi {
                    for oc in 0..og {
                        for i in 0..kh {
                            for j in 0..kw {
                                let yy = (y * s[0] + i * d[0]) as isize - p[0] as isize;
                                let xw = (xx * s[1] + j * d[1]) as isize - p[1] as isize;
                                if yy < 0
                                    || xw < 0
                                    || yy as usize >= out_dims[2]
                                    || xw as usize >= out_dims[3]
                                {
                                    continue;
                                }
                                let at = ((b * o + group * og + oc) * out_dims[2] + yy as usize)
                                    * out_dims[3]
                                    + xw as usize;
                                want[at] += x.at([b, ch, y, xx]) * w.at([ch, oc, i, j]);
                            }
                        }
                    }
                }
            }
        }
    }
    (want.iter().map(|v| *v as f32).collect(), out_dims)
}

#[test]
fn conv_transpose2d_scatters_each_input_through_the_kernel() {
    let cases: [TransposeCase; 5] = [
        (
            "stride 2 = kernel (an upsampling)",
            [2, 4, 3, 5],
            [4, 3, 2, 2],
            [2, 2],
            [0, 0],
            [1, 1],
            [0, 0],
            1,
        ),
        (
            "stride (3, 2) = kernel, 3 groups",
            [1, 6, 4, 3],
            [6, 2, 3, 2],
            [3, 2],
            [0, 0],
            [1, 1],
            [0, 0],
            3,
        ),
        (
            "stride 2, padding 1, output padding 1",
            [2, 4, 3, 5],
            [4, 3, 3, 3],
            [2, 2],
            [1, 1],
            [1, 1],
            [1, 1],
            1,
        ),
        (
            "dilated, grouped",
            [1, 4, 4, 3],
            [4, 2, 2, 3],
            [1, 2],
            [0, 1],
            [2, 1],
            [0, 1],
            2,
        ),
        (
            "plain",
            [1, 2, 3, 3],
            [2, 1, 2, 2],
            [1, 1],
            [0, 0],
            [1, 1],
            [0, 0],
            1,
        ),
    ];
    for dev in devices() {
        for (k, (label, xd, wd, s, p, d, op, g)) in cases.iter().enumerate() {
            let (x, w) = (
                Array4::new(*xd, k as u64 + 10),
                Array4::new(*wd, k as u64 + 20),
            );
            let (want, out_dims) = transpose_reference(&x, &w, *s, *p, *d, *op, *g);
            let o = out_dims[1];
            let conv = Conv::new()
                .stride(*s)
                .padding(*p)
                .dilation(*d)
                .output_padding(*op)
                .groups(*g);
            let got = x
                .tensor(&dev)
                .conv_transpose2d(&w.tensor(&dev), &conv)
                .unwrap();
            check(&got, &want, &out_dims, 1e-5, &format!("{label} on {dev}"));
            // Through views (channels-last, and reversed both ways), with a
            // bias, and in f16 (computed in f32, rounded once).
            let xt = x.tensor(&dev);
            let nhwc = xt.permute(&[0, 2, 3, 1]).unwrap().contiguous().unwrap();
            let flipped = xt.flip(&[2, 3]).unwrap().contiguous().unwrap();
            let bias = noise(o, 77);
            let b = Tensor::from_slice(&bias, [o], &dev).unwrap();
            let plane = out_dims[2] * out_dims[3];
            let biased: Vec<f32> = want
                .iter()
                .enumerate()
                .map(|(k, v)| v + bias[k / plane % o])
                .collect();
            for (view, t) in [
                ("channels-last", nhwc.permute(&[0, 3, 1, 2]).unwrap()),
                ("reversed", flipped.flip(&[2, 3]).unwrap()),
            ] {
                let got = t.conv_transpose2d(&w.tensor(&dev), &conv.clone().bias(&b));
                let what = format!("{label}, {view} view, biased, on {dev}");
                check(&got.unwrap(), &biased, &out_dims, 1e-5, &what);
            }
            let half = |t: Tensor| t.to_dtype(DType::F16).unwrap();
            let got = half(xt)
                .conv_transpose2d(&half(w.tensor(&dev)), &conv)
                .unwrap();
            assert_eq!(got.dtype(), DType::F16);
            check(
                &got,
                &want,
                &out_dims,
                4e-3,
                &format!("{label}, f16, on {dev}"),
            );
        }
    }
}

/// PyTorch's max_pool2d / avg_pool2d by their definitions.
fn pool_reference(
    x: &Array4,
    k: [usize; 2],
    s: [usize; 2],
    p: [usize; 2],
    ceil: bool,
    max: bool,
    count_pad: bool,
) -> (Vec<f32>, [usize; 4]) {
    let [n, c, h, w] = x.dims;
    let size = |len: usize, a: usize| {
        let span = len + 2 * p[a] - k[a];
        let mut out = if ceil {
            span.div_ceil(s[a]) + 1
        } else {
            span / s[a] + 1
        };
        if ceil && (out - 1) * s[a] >= len + p[a] {
            out -= 1;
        }
        out
    };
    let (ho, wo) = (size(h, 0), size(w, 1));
    let mut out = Vec::new();
    for b in 0..n {
        for ch in 0..c {
            for y in 0..ho {
                for xx in 0..wo {
                    let (y0, x0) = (
                        (y * s[0]) as isize - p[0] as isize,
                        (xx * s[1]) as isize - p[1] as isize,
                    );
                    let (y1, x1) = (
                        (y0 + k[0] as isize).min((h + p[0]) as isize),
                        (x0 + k[1] as isize).min((w + p[1]) as isize),
                    );
                    let pool_size = ((y1 - y0) * (x1 - x0)) as f64;
                    let (mut best, mut sum, mut inside) = (f64::NEG_INFINITY, 0.0, 0.0);
                    for yy in y0.max(0)..y1.min(h as isize) {
                        for xw in x0.max(0)..x1.min(w as isize) {
                            let v = x.at([b, ch, yy as usize, xw as usize]);
                            best = best.max(v);
                            sum += v;
                            inside += 1.0;
                        }
                    }
                    out.push(if max {
                        best as f32
                    } else {
                        (sum / if count_pad { pool_size } else { inside }) as f32
                    });
                }
            }
        }
    }
    (out, [n, c, ho, wo])
}

/// `ceil_mode` windows longer than the input, as PyTorch's
/// `pooling_output_shape` counts them (`F.max_pool2d(arange(4.).reshape(1,
/// 1, 2, 2), 3, 2, ceil_mode=True)` is `[[[[3.]]]]`, the average 1.5;
/// over `arange(25.)` as 5 x 5 with a kernel of 4, stride 3 and padding
/// 1, the maxima are `[[12, 14], [22, 24]]` and the averages without the
/// padding `[[6, 8], [16, 18]]`; a 1 x 1 input under a kernel of 4 has no
/// window); and an empty batch of huge planes pools to an empty tensor
/// without a table of its windows.
#[test]
fn ceil_mode_windows_longer_than_the_input_follow_pytorch() {
    for dev in devices() {
        let x = Tensor::arange(0.0f32, 4.0, 1.0, &dev)
            .unwrap()
            .reshape([1, 1, 2, 2])
            .unwrap();
        let pool = Pool::new(3).stride(2).ceil_mode(true);
        assert_eq!(
            x.max_pool2d(&pool).unwrap().to_vec::<f32>().unwrap(),
            [3.0],
            "{dev}"
        );
        assert_eq!(
            x.avg_pool2d(&pool).unwrap().to_vec::<f32>().unwrap(),
            [1.5],
            "{dev}"
        );
        let x = Tensor::arange(0.0f32, 25.0, 1.0, &dev)
            .unwrap()
            .reshape([1, 1, 5, 5])
            .unwrap();
        let pool = Pool::new(4).stride(3).padding(1).ceil_mode(true);
        let max = x.max_pool2d(&pool).unwrap().to_vec::<f32>().unwrap();
        assert_eq!(max, [12.0, 14.0, 22.0, 24.0], "{dev}");
        let avg = x.avg_pool2d(&pool.count_include_pad(false)).unwrap();
        assert_eq!(
            avg.to_vec::<f32>().unwrap(),
            [6.0, 8.0, 16.0, 18.0],
            "{dev}"
        );
        let one = Tensor::zeros([1, 1, 1, 1], DType::F32, &dev).unwrap();
        assert!(matches!(
            one.max_pool2d(&Pool::new(4).stride(2).ceil_mode(true)),
            Err(webtensor::Error::Shape { .. })
        ));
        let empty = Tensor::zeros([0, 1, 100_000, 100_000], DType::F32, &dev).unwrap();
        let y = empty.avg_pool2d(&Pool::new(1)).unwrap();
        assert_eq!(y.dims(), [0, 1, 100_000, 100_000]);
        // A maximum too: no tap is visited (the CPU once made an op of
        // each of the window's 10^10).
        let y = empty.max_pool2d(&Pool::new(100_000)).unwrap();
        assert_eq!(y.dims(), [0, 1, 1, 1]);
        // No channels or an empty plane: PyTorch 2.15 refuses both ("Expected
        // 3D or 4D (batch mode) tensor with optional 0 dim batch size").
        for shape in [&[1, 0, 4, 4][..], &[0, 4, 4], &[1, 2, 0, 4]] {
            let x = Tensor::zeros(shape, DType::F32, &dev).unwrap();
            for e in [x.max_pool2d(&Pool::new(2)), x.avg_pool2d(&Pool::new(2))] {
                let e = e.unwrap_err();
                assert!(
                    matches!(e, webtensor::Error::Shape { .. }),
                    "{shape:?}: {e}"
                );
            }
        }
    }
}

#[test]
fn pooling_equals_its_definition() {
    let x = Array4::new([2, 3, 9, 8], 31);
    let cases = [
        ([2, 2], [2, 2], [0, 0], false),
        ([3, 3], [2, 2], [1, 1], false),
        ([3, 2], [2, 3], [1, 0], true),
        ([3, 3], [3, 3], [0, 1], true),
    ];
    for dev in devices() {
        for (k, s, p, ceil) in cases {
            let pool = Pool::new(k).stride(s).padding(p).ceil_mode(ceil);
            let what = format!("kernel {k:?} stride {s:?} padding {p:?} ceil {ceil} on {dev}");
            let (want, dims) = pool_reference(&x, k, s, p, ceil, true, true);
            check(
                &x.tensor(&dev).max_pool2d(&pool).unwrap(),
                &want,
                &dims,
                0.0,
                &format!("max, {what}"),
            );
            for count in [true, false] {
                let (want, dims) = pool_reference(&x, k, s, p, ceil, false, count);
                let got = x
                    .tensor(&dev)
                    .avg_pool2d(&pool.count_include_pad(count))
                    .unwrap();
                check(
                    &got,
                    &want,
                    &dims,
                    1e-6,
                    &format!("avg (count padding {count}), {what}"),
                );
            }
            // A transposed view pools in place, and f16 keeps its dtype.
            let t = x
                .tensor(&dev)
                .transpose(2, 3)
                .unwrap()
                .contiguous()
                .unwrap()
                .transpose(2, 3)
                .unwrap();
            check(
                &t.max_pool2d(&pool).unwrap(),
                &pool_reference(&x, k, s, p, ceil, true, true).0,
                &dims,
                0.0,
                &format!("max of a view, {what}"),
            );
            let h = x.tensor(&dev).to_dtype(DType::F16).unwrap();
            let got = h.avg_pool2d(&pool).unwrap();
            assert_eq!(got.dtype(), DType::F16);
            // The f32 pool (checked above) of the rounded input, rounded.
            let want = h.to_dtype(DType::F32).unwrap().avg_pool2d(&pool).unwrap();
            let want = want.to_dtype(DType::F16).unwrap();
            let (_, dims) = pool_reference(&x, k, s, p, ceil, false, true);
            check(
                &got,
                &common::read_f32(&want),
                &dims,
                1e-3,
                &format!("f16 avg, {what}"),
            );
        }
        // NaN propagates through a maximum.
        let nan = Tensor::from_slice(&[1.0f32, f32::NAN, 3.0, 2.0], [1, 1, 2, 2], &dev).unwrap();
        assert!(
            nan.max_pool2d(&Pool::new(2))
                .unwrap()
                .to_vec::<f32>()
                .unwrap()[0]
                .is_nan()
        );
    }
}

#[test]
fn adaptive_average_pooling_covers_uneven_bins() {
    let x = Array4::new([2, 3, 7, 10], 41);
    for dev in devices() {
        for out in [[3usize, 4], [7, 10], [1, 1], [5, 3]] {
            let mut want = Vec::new();
            for b in 0..2 {
                for ch in 0..3 {
                    for i in 0..out[0] {
                        let (h0, h1) = (i * 7 / out[0], ((i + 1) * 7).div_ceil(out[0]));
                        for j in 0..out[1] {
                            let (w0, w1) = (j * 10 / out[1], ((j + 1) * 10).div_ceil(out[1]));
                            let mut sum = 0.0;
                            for y in h0..h1 {
                                for xx in w0..w1 {
                                    sum += x.at([b, ch, y, xx]);
                                }
                            }
                            want.push((sum / ((h1 - h0) * (w1 - w0)) as f64) as f32);
                        }
                    }
                }
            }
            let got = x.tensor(&dev).adaptive_avg_pool2d(out).unwrap();
            check(
                &got,
                &want,
                &[2, 3, out[0], out[1]],
                1e-5,
                &format!("adaptive {out:?} on {dev}"),
            );
        }
    }
}

#[test]
fn adaptive_average_pooling_of_a_long_axis_and_of_the_highest_rank() {
    // Bins of two lengths over a long axis (each bin taken whole), and at
    // the highest rank (its leading axes taken as one for the bins' axis):
    // against sums in f64, bin by bin.
    let (h, w) = (3usize, 20_011usize);
    let values: Vec<f32> = (0..h * w)
        .map(|i| ((i * 7919) % 1013) as f32 / 64.0)
        .collect();
    let mean = |r0: usize, r1: usize, c0: usize, c1: usize| {
        let mut sum = 0.0f64;
        for y in r0..r1 {
            for x in c0..c1 {
                sum += f64::from(values[y * w + x]);
            }
        }
        (sum / ((r1 - r0) * (c1 - c0)) as f64) as f32
    };
    let bins = |i: usize, n: usize, m: usize| (i * n / m, ((i + 1) * n).div_ceil(m));
    for dev in devices() {
        for out in [[2usize, 3], [3, 7], [5, 1]] {
            let mut want = Vec::new();
            for i in 0..out[0] {
                let (r0, r1) = bins(i, h, out[0]);
                for j in 0..out[1] {
                    let (c0, c1) = bins(j, w, out[1]);
                    want.push(mean(r0, r1, c0, c1));
                }
            }
            let x = Tensor::from_slice(&values, [1, 1, h, w], &dev).unwrap();
            let got = x.adaptive_avg_pool2d(out).unwrap();
            check(
                &got,
                &want,
                &[1, 1, out[0], out[1]],
                1e-5,
                &format!("{out:?} on {dev}"),
            );
            // Eight axes, a broadcast view (its leading axes of stride 0).
            let deep = Tensor::from_slice(&values, [1, 1, 1, 1, 1, 1, h, w], &dev)
                .unwrap()
                .broadcast_to([2, 1, 1, 1, 1, 2, h, w])
                .unwrap();
            let got = deep.adaptive_avg_pool2d(out).unwrap();
            let repeated: Vec<f32> = want.iter().cycle().take(4 * want.len()).copied().collect();
            let dims = [2, 1, 1, 1, 1, 2, out[0], out[1]];
            check(
                &got,
                &repeated,
                &dims,
                1e-5,
                &format!("8-D {out:?} on {dev}"),
            );
        }
    }
}

/// The cases PyTorch computed (tests/data/torch_resize_cases.npz, written
/// by make_resize_cases.py), by name, on the CPU.
fn torch_resize_cases() -> Vec<(String, Tensor)> {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/torch_resize_cases.npz");
    webtensor::io::load_npz(path, &Device::cpu()).unwrap()
}

/// A resize case's name (`MODE_size_HxW_OHxOW` or `MODE_factor_..`) in
/// words, its mode, and its last word's numbers (the factors).
fn resize_case(name: &str) -> (Vec<&str>, Resize, Vec<f64>) {
    let w: Vec<&str> = name.split('_').collect();
    let mode = match w[0] {
        "nearest" => Resize::Nearest,
        "bilinear" => Resize::Bilinear,
        "antialias" => Resize::BilinearAntialias,
        _ => Resize::BilinearAlignCorners,
    };
    let factors = w[3].split('x').map(|f| f.parse().unwrap()).collect();
    (w, mode, factors)
}

#[test]
fn resizing_picks_pytorchs_source_pixels_at_every_ratio() {
    let cases = torch_resize_cases();
    let get = |name: &str| &cases.iter().find(|(n, _)| n == name).unwrap().1;
    for dev in devices() {
        let mut ran = 0;
        for (key, input) in &cases {
            let Some(name) = key.strip_suffix("_in") else {
                continue;
            };
            let want = get(&format!("{name}_out"));
            let (w, mode, factors) = resize_case(name);
            let (h, wd) = (want.dims()[2], want.dims()[3]);
            let x = input.to_device(&dev).unwrap();
            // Contiguous, and a view of a transposed copy.
            let flipped = x.transpose(-1, -2).unwrap().contiguous().unwrap();
            for (layout, x) in [
                ("contiguous", x),
                ("transposed", flipped.transpose(-1, -2).unwrap()),
            ] {
                let got = match w[1] {
                    "size" => x.resize([h, wd], mode),
                    _ => x.resize_by([factors[0], factors[1]], mode),
                };
                let got = got.unwrap_or_else(|e| panic!("{name} on {dev}: {e}"));
                assert_eq!(got.dims(), want.dims(), "{name} {layout} on {dev}");
                let (g, v) = (got.to_vec::<f32>().unwrap(), want.to_vec::<f32>().unwrap());
                let what = format!("{name} {layout} on {dev}");
                if mode == Resize::Nearest {
                    // The same source pixels: the values bit for bit.
                    let same = |(a, b): (&f32, &f32)| {
                        a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
                    };
                    assert!(g.iter().zip(&v).all(same), "{what}: {g:?}, want {v:?}");
                } else {
                    // The same pixels and weights; PyTorch's own kernel
                    // rounds its blends a few ulp apart from the f32
                    // formula (contracted products, by their look).
                    common::assert_close(&g, &v, 1e-5, &what);
                }
                // f16 (native or packed) computes in f32, rounded once.
                let half = x.to_dtype(DType::F16).unwrap();
                let got = match w[1] {
                    "size" => half.resize([h, wd], mode),
                    _ => half.resize_by([factors[0], factors[1]], mode),
                };
                let want_half: Vec<f32> = want
                    .to_dtype(DType::F16)
                    .unwrap()
                    .to_dtype(DType::F32)
                    .unwrap()
                    .to_vec()
                    .unwrap();
                let tol = if mode == Resize::Nearest { 0.0 } else { 2e-3 };
                common::assert_close(&common::read_f32(&got.unwrap()), &want_half, tol, &what);
            }
            ran += 1;
        }
        assert!(ran >= 67, "{dev}: only {ran} cases");
    }
}

/// f64 images resized on the CPU (f64 has no GPU path) as PyTorch does,
/// its blending modes' positions and weights in f64: within 1e-13 of
/// PyTorch's values (tests/data/torch_resize_f64_cases.npz, written by
/// make_resize_cases.py), where f32 positions were up to 2e-4 off;
/// nearest bit for bit (PyTorch picks its pixels in f32 for f64 too).
#[test]
fn f64_resizes_work_in_f64_as_pytorchs() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/torch_resize_f64_cases.npz");
    let cases = webtensor::io::load_npz(path, &Device::cpu()).unwrap();
    let get = |name: &str| &cases.iter().find(|(n, _)| n == name).unwrap().1;
    let mut ran = 0;
    for (key, x) in &cases {
        let Some(name) = key.strip_suffix("_in") else {
            continue;
        };
        let want = get(&format!("{name}_out"));
        let (w, mode, factors) = resize_case(name);
        let got = match w[1] {
            "size" => x.resize([want.dims()[2], want.dims()[3]], mode),
            _ => x.resize_by([factors[0], factors[1]], mode),
        }
        .unwrap();
        assert_eq!(
            (got.dims(), got.dtype()),
            (want.dims(), DType::F64),
            "{name}"
        );
        let (g, v) = (got.to_vec::<f64>().unwrap(), want.to_vec::<f64>().unwrap());
        let tol = if mode == Resize::Nearest { 0.0 } else { 1e-13 };
        for (i, (a, b)) in g.iter().zip(&v).enumerate() {
            assert!(
                (a - b).abs() <= tol * (1.0 + b.abs()),
                "{name}[{i}]: {a} vs {b}"
            );
        }
        ran += 1;
    }
    assert_eq!(ran, 9);
    // A position just below a whole number picks its lower pixel in f32,
    // as PyTorch's `floorf`: a lone 1 at 3084 of 4114 resized to 8231 with
    // corners aligned, and at 2057 of 2744 resized to 4117, blend nothing
    // of it into outputs 6173 and 3088 (`F.interpolate(x, size=(1, 8231),
    // mode="bilinear", align_corners=True)[..., 6170:6176]` of PyTorch
    // 2.15, and the other's `[..., 3084:3092]`), where an f64 floor gave
    // 1.2e-4.
    for (n, one, m, mode, from, want) in [
        (
            4114,
            3084,
            8231,
            Resize::BilinearAlignCorners,
            6170,
            &[
                0.5006075334144953,
                0.9996354799513938,
                0.49987849331728285,
                0.0,
                0.0,
                0.0,
            ][..],
        ),
        (
            2744,
            2057,
            4117,
            Resize::Bilinear,
            3084,
            &[
                0.0,
                0.00036434296816878486,
                0.6668690794267604,
                0.6666261841146479,
                0.0,
                0.0,
                0.0,
                0.0,
            ],
        ),
    ] {
        let mut v = vec![0.0f64; n];
        v[one] = 1.0;
        let x = Tensor::from_vec(v, [1, 1, 1, n], &Device::cpu()).unwrap();
        let got = x.resize([1, m], mode).unwrap().to_vec::<f64>().unwrap();
        for (i, (a, b)) in got[from..from + want.len()].iter().zip(want).enumerate() {
            assert!(
                (a - b).abs() <= 1e-13,
                "{mode:?} [{}]: {a} vs {b}",
                from + i
            );
        }
    }
}

#[test]
fn resizing_gives_pytorchs_values() {
    for dev in devices() {
        let row = |v: &[f32]| Tensor::from_slice(v, [1, 1, 1, v.len()], &dev).unwrap();
        let read = |t: Tensor| t.to_vec::<f32>().unwrap();
        // interpolate([0, 1], size=4, mode="nearest") and "bilinear".
        assert_eq!(
            read(row(&[0.0, 1.0]).resize([1, 4], Resize::Nearest).unwrap()),
            [0.0, 0.0, 1.0, 1.0]
        );
        assert_eq!(
            read(row(&[0.0, 1.0]).resize([1, 4], Resize::Bilinear).unwrap()),
            [0.0, 0.25, 0.75, 1.0]
        );
        // Downscaling [0, 1, 2, 3] to 2 samples at 0.5 and 2.5.
        assert_eq!(
            read(
                row(&[0.0, 1.0, 2.0, 3.0])
                    .resize([1, 2], Resize::Bilinear)
                    .unwrap()
            ),
            [0.5, 2.5]
        );
        assert_eq!(
            read(
                row(&[0.0, 1.0, 2.0, 3.0])
                    .resize([1, 3], Resize::BilinearAlignCorners)
                    .unwrap()
            ),
            [0.0, 1.5, 3.0]
        );
        // scale_factor=2 on [0, 1, 2]: positions (i + 0.5) / 2 - 0.5.
        assert_eq!(
            read(
                row(&[0.0, 1.0, 2.0])
                    .resize_by([1.0, 2.0], Resize::Bilinear)
                    .unwrap()
            ),
            [0.0, 0.25, 0.75, 1.25, 1.75, 2.0]
        );
        // scale_factor=1.5 nearest on [5, 6]: floor(i / 1.5).
        assert_eq!(
            read(
                row(&[5.0, 6.0])
                    .resize_by([1.0, 1.5], Resize::Nearest)
                    .unwrap()
            ),
            [5.0, 5.0, 6.0]
        );
        // A factor of 2.005 making 200 rows of 100: PyTorch 2.15's generic
        // nearest path takes floor(i / 2.005) (rows 0, 0, 0, 1 ...), its
        // fast path, for channels-last images of more than 3 channels,
        // i / 2 (`F.interpolate(arange(800.).reshape(1, 4, 100, 2),
        // scale_factor=(2.005, 1.0))[0, 1, :8, 0]`, and with the input
        // `contiguous(memory_format=channels_last)`); 3 channels-last
        // channels take the generic path.
        let image = |c: usize| {
            let v: Vec<f32> = (0..c * 200).map(|k| k as f32).collect();
            Tensor::from_vec(v, [1, c, 100, 2], &dev).unwrap()
        };
        let generic = [200.0, 200.0, 200.0, 202.0, 202.0, 204.0, 204.0, 206.0];
        let fast = [200.0, 200.0, 202.0, 202.0, 204.0, 204.0, 206.0, 206.0];
        for (x, want) in [
            (image(4), generic),
            (image(4).to_channels_last().unwrap(), fast),
            (image(3).to_channels_last().unwrap(), generic),
        ] {
            let y = x.resize_by([2.005, 1.0], Resize::Nearest).unwrap();
            let column = y.narrow(1, 1, 1).unwrap().narrow(2, 0, 8).unwrap();
            let column = column.narrow(3, 0, 1).unwrap().contiguous().unwrap();
            assert_eq!(read(column), want, "{} on {dev}", x.is_channels_last());
        }
        // Both axes of a strided view, against separable blending done here.
        let img = Array4::new([1, 2, 5, 6], 61);
        let view = img.tensor(&dev).flip(&[3]).unwrap();
        let got = view.resize([8, 3], Resize::Bilinear).unwrap();
        let source = |i: usize, n: usize, m: usize| {
            let s = ((i as f64 + 0.5) * n as f64 / m as f64 - 0.5).max(0.0);
            let i0 = (s.floor() as usize).min(n - 1);
            (i0, (i0 + 1).min(n - 1), s - i0 as f64)
        };
        let mut want = Vec::new();
        for ch in 0..2 {
            for y in 0..8 {
                let (y0, y1, ly) = source(y, 5, 8);
                for x in 0..3 {
                    let (x0, x1, lx) = source(x, 6, 3);
                    let at = |yy: usize, xx: usize| img.at([0, ch, yy, 5 - xx]);
                    let top = at(y0, x0) * (1.0 - lx) + at(y0, x1) * lx;
                    let bottom = at(y1, x0) * (1.0 - lx) + at(y1, x1) * lx;
                    want.push((top * (1.0 - ly) + bottom * ly) as f32);
                }
            }
        }
        check(
            &got,
            &want,
            &[1, 2, 8, 3],
            1e-6,
            &format!("bilinear view on {dev}"),
        );
        // u8 images resize by nearest as they are.
        let bytes = Tensor::from_slice(&[10u8, 20, 30, 40], [2, 2], &dev).unwrap();
        assert_eq!(
            bytes
                .resize([4, 4], Resize::Nearest)
                .unwrap()
                .to_vec::<u8>()
                .unwrap()[..4],
            [10, 10, 20, 20]
        );
    }
}

#[test]
fn bad_input_is_an_error_naming_the_op() {
    let dev = Device::cpu();
    let x = Tensor::zeros([1, 4, 5, 5], DType::F32, &dev).unwrap();
    let w = Tensor::zeros([6, 4, 3, 3], DType::F32, &dev).unwrap();
    let cases: Vec<(&str, webtensor::Result<Tensor>)> = vec![
        ("conv2d", x.conv2d(&w, &Conv::new().groups(3))),
        (
            "conv2d",
            x.conv2d(
                &Tensor::zeros([6, 4, 7, 3], DType::F32, &dev).unwrap(),
                &Conv::new(),
            ),
        ),
        ("conv2d", x.conv2d(&w, &Conv::new().same().stride(2))),
        ("conv2d", x.conv2d(&w, &Conv::new().stride(0))),
        (
            "conv2d",
            x.conv2d(
                &Tensor::zeros([6, 4, 3], DType::F32, &dev).unwrap(),
                &Conv::new(),
            ),
        ),
        (
            "conv2d",
            x.conv2d(
                &w,
                &Conv::new().bias(&Tensor::zeros([5], DType::F32, &dev).unwrap()),
            ),
        ),
        (
            "conv2d",
            x.to_dtype(DType::I32)
                .unwrap()
                .conv2d(&w.to_dtype(DType::I32).unwrap(), &Conv::new()),
        ),
        (
            "conv2d",
            Tensor::zeros([5, 5], DType::F32, &dev)
                .unwrap()
                .conv2d(&w, &Conv::new()),
        ),
        (
            "conv1d",
            Tensor::zeros([1, 4, 5], DType::F32, &dev)
                .unwrap()
                .conv1d(&w, &Conv::new()),
        ),
        (
            "conv2d",
            x.conv2d(
                &Tensor::zeros([6, 4, 0, 3], DType::F32, &dev).unwrap(),
                &Conv::new(),
            ),
        ),
        (
            "conv_transpose2d",
            Tensor::zeros([1, 4, 0, 5], DType::F32, &dev)
                .unwrap()
                .conv_transpose2d(&w, &Conv::new()),
        ),
        (
            "conv_transpose2d",
            x.conv_transpose2d(&w, &Conv::new().stride(2).output_padding(2)),
        ),
        (
            "conv_transpose2d",
            x.conv_transpose2d(&w, &Conv::new().same()),
        ),
        (
            "conv_transpose1d",
            Tensor::zeros([1, 4, 5], DType::F32, &dev)
                .unwrap()
                .conv_transpose1d(&w, &Conv::new()),
        ),
        (
            "conv_transpose1d",
            Tensor::zeros([1, 4, 5], DType::F32, &dev)
                .unwrap()
                .conv_transpose1d(
                    &Tensor::zeros([4, 2, 3], DType::F32, &dev).unwrap(),
                    &Conv::new().stride(2).output_padding(2),
                ),
        ),
        (
            "conv_transpose1d",
            Tensor::zeros([1, 3, 5], DType::F32, &dev)
                .unwrap()
                .conv_transpose1d(
                    &Tensor::zeros([4, 2, 3], DType::F32, &dev).unwrap(),
                    &Conv::new(),
                ),
        ),
        ("max_pool2d", x.max_pool2d(&Pool::new(2).padding(2))),
        // An empty plane, whatever the padding (PyTorch refuses it; the
        // padding made windows of nothing: -inf, or 0 / 0).
        (
            "max_pool2d",
            Tensor::zeros([1, 1, 0, 4], DType::F32, &dev)
                .unwrap()
                .max_pool2d(&Pool::new(2).padding(1)),
        ),
        (
            "conv2d",
            Tensor::zeros([1, 1, 0, 4], DType::F32, &dev)
                .unwrap()
                .conv2d(
                    &Tensor::zeros([2, 1, 3, 3], DType::F32, &dev).unwrap(),
                    &Conv::new().padding(2),
                ),
        ),
        (
            "avg_pool2d",
            Tensor::zeros([1, 1, 0, 4], DType::F32, &dev)
                .unwrap()
                .avg_pool2d(&Pool::new(2).padding(1).count_include_pad(false)),
        ),
        ("max_pool2d", x.max_pool2d(&Pool::new(6))),
        ("avg_pool2d", x.avg_pool2d(&Pool::new(2).dilation(2))),
        (
            "max_pool2d",
            Tensor::zeros([5, 5], DType::F32, &dev)
                .unwrap()
                .max_pool2d(&Pool::new(2)),
        ),
        ("adaptive_avg_pool2d", x.adaptive_avg_pool2d([0, 2])),
        ("resize", x.resize([0, 3], Resize::Bilinear)),
        ("resize_by", x.resize_by([f64::NAN, 1.0], Resize::Bilinear)),
        // Its axes' tables past what the host holds: named resize_by.
        ("resize_by", x.resize_by([1e12, 1.0], Resize::Bilinear)),
        // Sizes the host cannot hold are errors, not aborts.
        ("resize", x.resize([1 << 62, 2], Resize::Bilinear)),
        ("adaptive_avg_pool2d", x.adaptive_avg_pool2d([1 << 62, 1])),
        (
            "resize",
            x.to_dtype(DType::I32)
                .unwrap()
                .resize([3, 3], Resize::Bilinear),
        ),
    ];
    for (op, result) in cases {
        let e = result.unwrap_err();
        assert!(e.to_string().starts_with(&format!("{op}: ")), "{op}: {e}");
    }
}

/// A bias or residual of the wrong shape is refused before any work: a
/// fresh GPU device records, dispatches and reads back nothing (its first
/// convolution would check its kernel first). It batches whatever the
/// environment says, so that making the bias and residual submits nothing.
#[test]
fn a_bad_bias_or_residual_is_refused_before_any_work() {
    let Some(dev) = common::own_gpu(webtensor::GpuOptions {
        flush_threshold: Some(1024),
        ..Default::default()
    }) else {
        return;
    };
    let zeros = |shape: &[usize]| Tensor::zeros(shape.to_vec(), DType::F32, &dev).unwrap();
    let (x, w, wt) = (
        zeros(&[1, 4, 9, 9]),
        zeros(&[6, 4, 3, 3]),
        zeros(&[4, 6, 3, 3]),
    );
    dev.sync().unwrap();
    let before = dev.stats();
    let bias = zeros(&[5]);
    let residual = zeros(&[1, 6, 7, 6]);
    let calls = [
        x.conv2d(&w, &Conv::new().bias(&bias)),
        x.conv2d(&w, &Conv::new().residual(&residual)),
        x.conv_transpose2d(&wt, &Conv::new().bias(&bias)),
        x.conv_transpose2d(&wt, &Conv::new().residual(&residual)),
    ];
    for (k, call) in calls.into_iter().enumerate() {
        assert!(
            matches!(call, Err(webtensor::Error::Shape { .. })),
            "{k}: {call:?}"
        );
    }
    let after = dev.stats();
    assert_eq!(
        (after.ops_recorded, after.submits, after.readbacks),
        (before.ops_recorded + 2, before.submits, before.readbacks),
        "only the bias and the residual were made"
    );
}

#[test]
fn one_d_convolutions_show_their_own_shapes_in_errors() {
    // conv1d and conv_transpose1d run as the 2-D ones over one row; their
    // errors show the caller's 3-D shapes and per-length values, never the
    // height axis the op added.
    let dev = Device::cpu();
    let x = Tensor::zeros([1, 4, 5], DType::F32, &dev).unwrap();
    let zeros = |shape: &[usize]| Tensor::zeros(shape.to_vec(), DType::F32, &dev).unwrap();
    let cases: Vec<(webtensor::Result<Tensor>, &str)> = vec![
        (
            x.conv1d(&zeros(&[6, 3, 3]), &Conv::new()),
            "need a weight of [6, 4, k], got shape [6, 3, 3]",
        ),
        (
            x.conv1d(&zeros(&[6, 4, 0]), &Conv::new()),
            "must be [out, in / groups, k] with at least one tap, got shape [6, 4, 0]",
        ),
        (
            x.conv1d(&zeros(&[6, 4, 8]), &Conv::new().padding(1)),
            "a kernel spanning [8] is larger than the padded input [7] (input [5], padding [(1, 1)])",
        ),
        (
            x.conv1d(&zeros(&[6, 4, 3]), &Conv::new().stride(0)),
            "stride [0], dilation [1] and groups 1 must be at least 1",
        ),
        (
            x.conv1d(&zeros(&[6, 4, 3]), &Conv::new().stride(2).same()),
            "padding \"same\" needs stride 1, got [2]",
        ),
        (
            x.conv1d(
                &zeros(&[6, 4, 3]),
                &Conv::new().residual(&zeros(&[1, 6, 4])),
            ),
            "a residual of shape [1, 6, 4] does not broadcast to the output's [1, 6, 3]",
        ),
        (
            x.conv_transpose1d(&zeros(&[4, 2, 3]), &Conv::new().stride(2).output_padding(2)),
            "output padding [2] must be below the stride [2] or the dilation [1]",
        ),
        (
            x.conv_transpose1d(&zeros(&[3, 2, 3]), &Conv::new()),
            "need a weight of [4, out / 1, k], got shape [3, 2, 3]",
        ),
        (
            x.conv_transpose1d(&zeros(&[4, 2, 3]), &Conv::new().padding(4)),
            "padding [4] leaves no output of the [7] a [5] input gives",
        ),
        (
            zeros(&[1, 4, 0]).conv1d(&zeros(&[6, 4, 3]), &Conv::new()),
            "an input of [0] elements has no output",
        ),
    ];
    for (result, want) in cases {
        let e = result.unwrap_err().to_string();
        assert!(e.contains(want), "{e:?} should say {want:?}");
        assert!(e.contains("1d"), "{e:?} should name the 1-D op");
    }
}

#[test]
fn tensors_past_one_storage_binding_go_in_parts() {
    // Bindings of 64 KiB against tensors of several hundred KiB.
    let Some(gpu) = common::own_gpu(webtensor::GpuOptions {
        max_binding_bytes: Some(64 << 10),
        ..Default::default()
    }) else {
        return;
    };
    let cpu = Device::cpu();
    let x = Array4::new([4, 8, 40, 36], 91);
    let w = Array4::new([6, 8, 3, 3], 92);
    let dw = Array4::new([8, 1, 3, 3], 93);
    let (gx, cx) = (x.tensor(&gpu), x.tensor(&cpu));
    // conv_transpose2d's weight is [in, out, kh, kw]: the [6, 8, 3, 3]
    // weight with its first two axes swapped (a view) makes an 8 -> 6 one.
    type Op = fn(&Tensor, &[Tensor; 3]) -> webtensor::Result<Tensor>;
    let ops: [(&str, Op); 6] = [
        ("conv2d", |x, [w, _, _]| {
            x.conv2d(w, &Conv::new().padding(1).stride([1, 2]))
        }),
        ("depthwise", |x, [_, dw, _]| {
            x.conv2d(dw, &Conv::new().groups(8).same())
        }),
        ("conv_transpose2d", |x, [_, _, wt]| {
            x.conv_transpose2d(wt, &Conv::new().stride(2))
        }),
        ("max_pool2d", |x, _| {
            x.max_pool2d(&Pool::new(3).stride(2).padding(1))
        }),
        ("adaptive_avg_pool2d", |x, _| x.adaptive_avg_pool2d([5, 7])),
        ("resize", |x, _| x.resize([61, 17], Resize::Bilinear)),
    ];
    let weights = |dev: &Device| {
        let wt = w.tensor(dev).permute(&[1, 0, 2, 3]).unwrap();
        [w.tensor(dev), dw.tensor(dev), wt]
    };
    let (gw, cw) = (weights(&gpu), weights(&cpu));
    for (name, op) in ops {
        let want = op(&cx, &cw).map(|t| common::read_f32(&t));
        let got = op(&gx, &gw).map(|t| common::read_f32(&t));
        match (got, want) {
            (Ok(got), Ok(want)) => {
                common::assert_close(&got, &want, 1e-5, &format!("{name} past one binding"))
            }
            (got, want) => panic!("{name}: {:?} against {:?}", got.err(), want.err()),
        }
    }
}

#[test]
fn the_implicit_gemm_kernel_crosses_its_slices() {
    // 1000 channels of 3 x 3 taps: k = 9000, past one dispatch's slice of
    // k (later slices add to the output). The long form adds 65,540
    // groups of one 4 x 4 image: more batches than one dispatch's grid
    // holds (several seconds on lavapipe), and an image of more pixels
    // than a grid's row of tiles covers.
    let plain = Setting {
        stride: [1, 1],
        pad: [(1, 1); 2],
        dilation: [1, 1],
        groups: 1,
    };
    let mut cases = vec![([1usize, 1000, 5, 4], [3usize, 1000, 3, 3], plain)];
    if common::long_tests() {
        let groups = 65_540;
        let setting = Setting {
            pad: [(0, 0); 2],
            groups,
            ..plain
        };
        cases.push(([1, 2 * groups, 4, 4], [groups, 2, 1, 1], setting));
        // An image of 8.4M pixels: more tiles than a grid's row holds (the
        // op layer composes it; it was an error).
        let one = Setting {
            pad: [(0, 0); 2],
            ..plain
        };
        cases.push(([1, 1, 2900, 2900], [1, 1, 1, 1], one));
    }
    equal_the_reference(&cases, 200);
}

/// Each case (input dims, weight dims, symmetric setting) on every device
/// against [`conv_reference`], inputs drawn from `seed` on.
fn equal_the_reference(cases: &[([usize; 4], [usize; 4], Setting)], seed: u64) {
    for dev in devices() {
        for (k, (xd, wd, st)) in cases.iter().enumerate() {
            let (x, w) = (
                Array4::new(*xd, seed + k as u64),
                Array4::new(*wd, seed + 100 + k as u64),
            );
            let (want, dims) = conv_reference(&x, &w, None, *st);
            let conv = Conv::new()
                .stride(st.stride)
                .padding([st.pad[0].0, st.pad[1].0])
                .dilation(st.dilation)
                .groups(st.groups);
            let got = x.tensor(&dev).conv2d(&w.tensor(&dev), &conv).unwrap();
            check(&got, &want, &dims, 1e-4, &format!("case {k} on {dev}"));
        }
    }
}

#[test]
fn the_implicit_gemm_advances_taps_past_the_tile_depth() {
    // A GPU thread of the implicit GEMM advances its patch rows by the
    // tile's depth (8 or 16) with carries into the tap row and the
    // channel: kernels of more taps than the depth (5 x 5, 7 x 7), a row
    // of 17 taps, dilated and strided ones, and a slice of k ending
    // inside a channel's taps (340 channels of 25: k = 8500).
    let setting = |stride: usize, pad: [usize; 2], dilation: usize| Setting {
        stride: [stride; 2],
        pad: [(pad[0], pad[0]), (pad[1], pad[1])],
        dilation: [dilation; 2],
        groups: 1,
    };
    let cases = [
        (
            [2usize, 5, 13, 11],
            [6usize, 5, 5, 5],
            setting(1, [2, 2], 1),
        ),
        ([1, 3, 12, 12], [4, 3, 7, 7], setting(2, [3, 3], 1)),
        ([1, 4, 1, 40], [3, 4, 1, 17], setting(1, [0, 8], 1)),
        ([1, 2, 14, 15], [3, 2, 5, 5], setting(1, [4, 4], 2)),
        ([1, 340, 6, 5], [2, 340, 5, 5], setting(1, [2, 2], 1)),
    ];
    equal_the_reference(&cases, 400);
    for dev in devices() {
        let dropped = dev.info().dropped_kernels;
        assert!(
            !dropped.iter().any(|d| d.starts_with("conv")),
            "{dev}: {dropped:?}"
        );
    }
}

/// Convolutions on cooperative matrices, where the device has them: f16
/// ones, and f32 ones under `MatmulPrecision::Fast` (operands rounded to
/// f16). `scripts/cooperative-tests` runs this on a lavapipe that has them
/// (`WEBTENSOR_REQUIRE_COOPERATIVE=1`); elsewhere it checks the register
/// tiles. Inputs rounded to f16 beforehand, so the reference (in f64) is
/// exact for either; kernels with more taps than a k step (16 or 32),
/// strides, dilations, padding, groups, a slice of k ending inside a
/// channel's taps, channels and pixels past the 64 and 128 blocks, and
/// the input through channels-last, reversed and stepped views.
#[test]
fn cooperative_convolutions_equal_the_definition() {
    let Some((dev, on)) = common::fast_gpu(None) else {
        return;
    };
    let setting = |stride: usize, pad: usize, dilation: usize, groups: usize| Setting {
        stride: [stride; 2],
        pad: [(pad, pad); 2],
        dilation: [dilation; 2],
        groups,
    };
    let cases = [
        ([2usize, 5, 13, 11], [6usize, 5, 5, 5], setting(1, 2, 1, 1)),
        ([1, 3, 12, 12], [4, 3, 7, 7], setting(2, 3, 1, 1)),
        ([1, 2, 14, 15], [3, 2, 5, 5], setting(1, 4, 2, 1)),
        ([2, 8, 9, 30], [132, 4, 3, 3], setting(1, 1, 1, 2)),
        ([1, 16, 17, 17], [70, 16, 1, 1], setting(1, 0, 1, 1)),
        ([1, 340, 6, 5], [2, 340, 5, 5], setting(1, 2, 1, 1)),
    ];
    let rounded = |dims: [usize; 4], seed: u64| {
        let v = noise(dims.iter().product(), seed);
        let v = v
            .iter()
            .map(|&x| webtensor::f16::from_f32(x).to_f32())
            .collect();
        Array4 { dims, v }
    };
    for (case, (xd, wd, st)) in cases.into_iter().enumerate() {
        let (x, w) = (
            rounded(xd, 500 + case as u64),
            rounded(wd, 600 + case as u64),
        );
        let (want, dims) = conv_reference(&x, &w, None, st);
        let conv = Conv::new()
            .stride(st.stride)
            .padding([st.pad[0].0, st.pad[1].0])
            .dilation(st.dilation)
            .groups(st.groups);
        let base = x.tensor(&dev);
        let [n, c, h, wd_] = xd;
        // The input stored channels-last, reversed (flipped back) and
        // every second column of a wider one.
        let wide =
            Tensor::from_vec(noise(n * c * h * 2 * wd_, 7), [n, c, h, 2 * wd_], &dev).unwrap();
        wide.slice(s![.., .., .., ..;2])
            .unwrap()
            .assign(&base)
            .unwrap();
        let views = [
            ("contiguous", base.clone()),
            (
                "channels-last",
                base.permute(&[0, 2, 3, 1])
                    .unwrap()
                    .contiguous()
                    .unwrap()
                    .permute(&[0, 3, 1, 2])
                    .unwrap(),
            ),
            (
                "reversed",
                base.flip(&[3])
                    .unwrap()
                    .contiguous()
                    .unwrap()
                    .flip(&[3])
                    .unwrap(),
            ),
            ("stepped", wide.slice(s![.., .., .., ..;2]).unwrap()),
        ];
        for (what, input) in views {
            for dtype in [DType::F16, DType::F32] {
                let got = input
                    .to_dtype(dtype)
                    .unwrap()
                    .conv2d(&w.tensor(&dev).to_dtype(dtype).unwrap(), &conv)
                    .unwrap();
                assert_eq!(got.dtype(), dtype);
                let tol = if dtype == DType::F16 { 2e-3 } else { 1e-4 };
                let label = format!("case {case}, {what} input, {dtype}, cooperative {on}");
                check(&got, &want, &dims, tol, &label);
                let dropped = dev.info().dropped_kernels;
                assert!(dropped.is_empty(), "{label}: {dropped:?}");
            }
        }
    }
}

/// A GPU device of its own, for a profile no other test adds to.
fn own_gpu() -> Option<Device> {
    common::own_gpu(webtensor::GpuOptions::default())
}

#[test]
fn convolutions_of_few_channels_or_few_pixels_run_the_oblong_tiles() {
    // Where the large tile would run a side of 64 or less (Tiling::choose):
    // 64 output channels over 8 images of 64 x 64 take the 64 x 128 tile,
    // 130 channels over 64 images of 7 x 7 pixels the 128 x 64 one (the
    // kernel's rows are output channels, its columns pixels), each against
    // the definition.
    let plain = Setting {
        stride: [1, 1],
        pad: [(1, 1); 2],
        dilation: [1, 1],
        groups: 1,
    };
    let cases = [
        ([8usize, 3, 64, 64], [64usize, 3, 3, 3]),
        ([64, 4, 7, 7], [130, 4, 3, 3]),
    ];
    for dev in devices() {
        for (k, (xd, wd)) in cases.iter().enumerate() {
            let (x, w) = (
                Array4::new(*xd, 400 + k as u64),
                Array4::new(*wd, 500 + k as u64),
            );
            let (want, dims) = conv_reference(&x, &w, None, plain);
            let (xt, wt) = (x.tensor(&dev), w.tensor(&dev));
            let run = || xt.conv2d(&wt, &Conv::new().padding(1));
            let got = run().unwrap();
            check(&got, &want, &dims, 1e-4, &format!("case {k} on {dev}"));
            if let Some(own) = dev.is_gpu().then(own_gpu).flatten() {
                // The tile, by its grid (images on z): 64 x 128 blocks over
                // 64 channels and 4,096 pixels an image are 32 x 8 = 256,
                // 128 x 64 over 130 and 49 are 2 x 64 = 128, where the 64
                // x 64 tile runs 512 and 192 (the large tile's grids are
                // the same; tiling.rs's unit tests pin the choice). On a
                // device of its own: a profile sees its device's every
                // kernel, other tests' too.
                let (xo, wo) = (x.tensor(&own), w.tensor(&own));
                let run = || xo.conv2d(&wo, &Conv::new().padding(1));
                run().unwrap();
                let profile = own.profile(|| run().map(drop)).unwrap();
                let grids: Vec<u32> = profile
                    .kernels()
                    .iter()
                    .map(|k| k.workgroups.iter().product())
                    .collect();
                assert_eq!(grids, [[256], [128]][k], "case {k} on {own}");
            }
        }
        let dropped = dev.info().dropped_kernels;
        assert!(
            dropped.iter().all(|d| !d.starts_with("conv")),
            "{dev}: {dropped:?}"
        );
    }
}

#[test]
fn the_cpu_convolution_crosses_its_bands() {
    // Where it packs patches (strided rows, a short row's single tap), the CPU packs
    // those of a band of output pixels at a time, at least 512 of them (256 KiB for a shallow matrix), into panels of 16
    // or 32 pixels, and sums tiles of 4, 6 or 8 channels: bands end inside
    // an output row and the last panel and tile are partial (61 columns,
    // 11 channels, 2,257 pixels in five bands; a strided 2-group case over
    // two images, both with a bias; a 1x1 product over 1,024 channels),
    // also through a channels-last view.
    let plain = Setting {
        stride: [1, 1],
        pad: [(0, 0); 2],
        dilation: [1, 1],
        groups: 1,
    };
    let padded = Setting {
        pad: [(1, 1); 2],
        ..plain
    };
    let strided = Setting {
        stride: [2, 2],
        groups: 2,
        ..padded
    };
    // Rows read in place (unit horizontal stride, rows of 26 pixels or
    // more): bands of output rows over a copy of the input rows they
    // read, the taps dilated, the rows stepped, two groups and images.
    let stepped_rows = Setting {
        stride: [2, 1],
        pad: [(2, 2); 2],
        dilation: [2, 3],
        groups: 2,
    };
    // Unpadded f32 rows are read where they are when every tile's reads
    // (a last panel's past its row's end) stay inside the input: rows of
    // 64 outputs do, and the dilated taps' last reach the input's end;
    // views and padded inputs are copied.
    let unpadded = Setting {
        stride: [2, 1],
        ..plain
    };
    let dilated = Setting {
        dilation: [2, 2],
        groups: 2,
        ..plain
    };
    // Horizontal strides: each copied row split into the stride's phases
    // (rows of 64 and of 32 outputs).
    let phased = Setting {
        stride: [2, 2],
        dilation: [1, 2],
        groups: 2,
        ..padded
    };
    let thirds = Setting {
        stride: [1, 3],
        ..padded
    };
    // Flat bands (unit strides, rows too short for whole panels: 61, 42
    // and 10 outputs): a band's rows run as one, a tile crossing from one
    // row into the next (three rows at 10 outputs) and summing the padded
    // columns between them unstored; unpadded f32 inputs read in place.
    let grouped = Setting {
        groups: 2,
        ..padded
    };
    let cases = [
        ([1usize, 6, 21, 129], [8usize, 3, 3, 3], phased, true),
        ([2, 5, 9, 94], [4, 5, 3, 3], thirds, false),
        ([1, 256, 37, 61], [11, 256, 3, 3], padded, true),
        ([2, 64, 75, 70], [10, 32, 3, 3], strided, true),
        ([1, 1024, 50, 45], [2, 1024, 1, 1], plain, false),
        ([2, 12, 29, 70], [10, 6, 3, 5], stepped_rows, true),
        ([2, 40, 33, 64], [24, 40, 1, 1], unpadded, true),
        ([1, 8, 30, 68], [10, 4, 3, 3], dilated, false),
        ([2, 100, 30, 44], [9, 100, 3, 3], plain, true),
        ([2, 64, 40, 10], [12, 32, 3, 3], grouped, true),
    ];
    let cpu = Device::cpu();
    for (k, (xd, wd, setting, biased)) in cases.into_iter().enumerate() {
        let (x, w) = (
            Array4::new(xd, 500 + k as u64),
            Array4::new(wd, 600 + k as u64),
        );
        let bias = noise(wd[0], 650 + k as u64);
        let bias_t = Tensor::from_slice(&bias, [wd[0]], &cpu).unwrap();
        let (want, dims) = conv_reference(&x, &w, biased.then_some(&bias[..]), setting);
        let mut conv = Conv::new()
            .padding(setting.pad[0].0)
            .stride(setting.stride)
            .dilation(setting.dilation)
            .groups(setting.groups);
        if biased {
            conv = conv.bias(&bias_t);
        }
        let got = x.tensor(&cpu).conv2d(&w.tensor(&cpu), &conv).unwrap();
        check(&got, &want, &dims, 1e-4, &format!("case {k}"));
        let flipped = x.tensor(&cpu).flip(&[2, 3]).unwrap().contiguous().unwrap();
        let reversed = flipped.flip(&[2, 3]).unwrap();
        let got = reversed.conv2d(&w.tensor(&cpu), &conv).unwrap();
        check(&got, &want, &dims, 1e-4, &format!("case {k}, reversed"));
        let nhwc = x
            .tensor(&cpu)
            .permute(&[0, 2, 3, 1])
            .unwrap()
            .contiguous()
            .unwrap();
        let view = nhwc.permute(&[0, 3, 1, 2]).unwrap();
        let got = view.conv2d(&w.tensor(&cpu), &conv).unwrap();
        check(&got, &want, &dims, 1e-4, &format!("case {k}, NHWC view"));
        // Rows of unit stride inside wider ones: not one after another.
        let [n, c, h, wd_] = xd;
        let wide = Tensor::zeros([n, c, h + 2, wd_ + 6], DType::F32, &cpu).unwrap();
        let (rows, columns) = (1..1 + h as isize, 3..3 + wd_ as isize);
        let inside = wide.slice(s![.., .., rows, columns]).unwrap();
        inside.assign(&x.tensor(&cpu)).unwrap();
        let got = inside.conv2d(&w.tensor(&cpu), &conv).unwrap();
        check(
            &got,
            &want,
            &dims,
            1e-4,
            &format!("case {k}, rows inside wider ones"),
        );
    }
    // Transposed: 64 output channels of 4 x 4 taps over 256 columns make
    // bands of 8 input rows (three for 20).
    let (x, w) = (
        Array4::new([1, 2, 20, 256], 700),
        Array4::new([2, 64, 4, 4], 701),
    );
    let (want, dims) = transpose_reference(&x, &w, [2, 2], [1, 1], [1, 1], [0, 0], 1);
    let conv = Conv::new().stride(2).padding(1);
    let got = x
        .tensor(&cpu)
        .conv_transpose2d(&w.tensor(&cpu), &conv)
        .unwrap();
    check(&got, &want, &dims, 1e-4, "transposed");
}

/// The convolution kernel's self-check: made wrong on purpose (its Small
/// tile, each output off by one), it fails its probe before its first
/// convolution, is dropped and named, and the convolution is composed
/// from products instead, still equal to the CPU's.
#[test]
fn a_wrong_convolution_kernel_is_dropped_and_results_stay_right() {
    let Some(gpu) = common::own_gpu(webtensor::GpuOptions {
        sabotage_matmul: Some(webtensor::MatmulTile::Small),
        autotune: Some(false),
        ..Default::default()
    }) else {
        return;
    };
    let cpu = Device::cpu();
    // 4 output channels of 8 x 8: the Small tile.
    let (x, w) = (
        Array4::new([1, 3, 8, 8], 401),
        Array4::new([4, 3, 3, 3], 402),
    );
    let conv = Conv::new().padding(1);
    let want = x.tensor(&cpu).conv2d(&w.tensor(&cpu), &conv).unwrap();
    let got = x.tensor(&gpu).conv2d(&w.tensor(&gpu), &conv).unwrap();
    check(
        &got,
        &common::read_f32(&want),
        want.dims(),
        1e-5,
        "a dropped conv kernel",
    );
    let info = gpu.info();
    assert!(
        info.dropped_kernels.contains(&"conv small f32".to_string()),
        "{info}"
    );
    // A second convolution goes straight to the composed path.
    let got = x.tensor(&gpu).conv2d(&w.tensor(&gpu), &conv).unwrap();
    check(
        &got,
        &common::read_f32(&want),
        want.dims(),
        1e-5,
        "after the drop",
    );
    let stats = gpu.stats();
    assert_eq!(stats.kernels_dropped, 1, "{stats:?}");
}

#[test]
fn adaptive_pooling_keeps_non_finite_values_in_their_bins() {
    let (inf, nan) = (f32::INFINITY, f32::NAN);
    // PyTorch 2.15's adaptive_avg_pool2d of each (bins of one
    // length, bins of two lengths, NaN and -inf, both axes binned).
    // (input, its [h, w], the bins, PyTorch's output)
    type Case<'a> = (&'a [f32], [usize; 2], [usize; 2], &'a [f32]);
    let cases: [Case; 4] = [
        (&[1.0, 2.0, 3.0, inf], [1, 4], [1, 2], &[1.5, inf]),
        (&[1.0, inf, 3.0, 4.0, 5.0], [1, 5], [1, 3], &[inf, inf, 4.5]),
        (
            &[nan, 1.0, 2.0, 3.0, 1.0, 2.0, 3.0, -inf],
            [2, 4],
            [2, 2],
            &[nan, 2.5, 1.5, -inf],
        ),
        (
            &[nan, 1.0, 2.0, 3.0, 1.0, 2.0, 3.0, -inf, 0.0, 0.0, 0.0, 0.0],
            [3, 4],
            [2, 1],
            &[nan, -inf],
        ),
    ];
    for dev in devices() {
        for (values, [h, w], out, want) in cases {
            let x = Tensor::from_slice(values, [1, 1, h, w], &dev).unwrap();
            // As given, and as a reversed view of reversed values.
            let reversed: Vec<f32> = values.iter().rev().copied().collect();
            let r = Tensor::from_slice(&reversed, [1, 1, h, w], &dev).unwrap();
            for (layout, x) in [("contiguous", x), ("reversed", r.flip(&[2, 3]).unwrap())] {
                let got = x.adaptive_avg_pool2d(out).unwrap().to_vec::<f32>().unwrap();
                common::assert_close(&got, want, 1e-6, &format!("{values:?} {layout} on {dev}"));
            }
        }
        // PyTorch sums each bin from +0, so bins of -0.0 average to +0.0
        // (each bin one element, bins of two lengths, of one, one bin).
        let zeros = Tensor::full([1, 1, 3, 3], -0.0f32, DType::F32, &dev).unwrap();
        for out in [[3, 3], [2, 2], [4, 2], [1, 1]] {
            let got = zeros.adaptive_avg_pool2d(out).unwrap();
            let got = got.to_vec::<f32>().unwrap();
            assert!(
                got.iter().all(|v| v.to_bits() == 0),
                "{out:?} on {dev}: {got:?}"
            );
        }
        // An empty spatial axis averages nothing: PyTorch refuses it.
        for shape in [[1, 1, 0, 4], [1, 1, 4, 0]] {
            let x = Tensor::zeros(shape, DType::F32, &dev).unwrap();
            let err = x.adaptive_avg_pool2d(2).unwrap_err().to_string();
            assert!(err.starts_with("adaptive_avg_pool2d: axis"), "{err}");
        }
        // An empty batch is fine.
        let x = Tensor::zeros([0, 2, 4, 4], DType::F32, &dev).unwrap();
        assert_eq!(x.adaptive_avg_pool2d(2).unwrap().dims(), &[0, 2, 2, 2]);
    }
}

/// PyTorch's pooling cases (tests/data/torch_pool_cases.npz, written by
/// make_pool_cases.py), by name, on the CPU.
fn torch_pool_cases() -> Vec<(String, Tensor)> {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/torch_pool_cases.npz");
    webtensor::io::load_npz(path, &Device::cpu()).unwrap()
}

/// The float dtype a case's name ends in: `f32`, `f16` or `bf16`.
fn float_named(name: &str) -> DType {
    match name {
        "f32" => DType::F32,
        "f16" => DType::F16,
        _ => DType::BF16,
    }
}

/// `got`, widened to f32, has `want`'s bits.
fn assert_same_bits(got: &Tensor, want: &Tensor, what: &str) {
    let (got, want) = (common::read_f32(got), want.to_vec::<f32>().unwrap());
    let same = got.len() == want.len()
        && got
            .iter()
            .zip(&want)
            .all(|(a, b)| a.to_bits() == b.to_bits());
    assert!(same, "{what}: {got:?}, want {want:?}");
}

#[test]
fn adaptive_pooling_divides_as_pytorch_does() {
    // PyTorch's adaptive_avg_pool2d of whole numbers (sums exact in any
    // order) divides each bin's sum by its height and then its width, in
    // f32 for every float dtype (tests/data/make_pool_cases.py): bit for
    // bit. Dividing per axis, or by the bin's size, is an ulp off in a
    // tenth of the bins; and a bin of four 1e38 is inf, as PyTorch's.
    let cases = torch_pool_cases();
    let get = |name: &str| &cases.iter().find(|(n, _)| n == name).unwrap().1;
    let mut ran = 0;
    for dev in devices() {
        for (key, want) in &cases {
            let w: Vec<&str> = key.split('_').collect();
            let [input, bins, dtype] = w[..] else {
                continue;
            };
            let bins: Vec<usize> = bins.split('x').map(|b| b.parse().unwrap()).collect();
            let dtype = float_named(dtype);
            let x = get(input).to_device(&dev).unwrap().to_dtype(dtype).unwrap();
            let flipped = x.transpose(-1, -2).unwrap().contiguous().unwrap();
            for (layout, x) in [
                ("contiguous", x),
                ("transposed", flipped.transpose(-1, -2).unwrap()),
            ] {
                let got = x.adaptive_avg_pool2d([bins[0], bins[1]]).unwrap();
                assert_eq!(got.dtype(), dtype, "{key}");
                assert_same_bits(&got, want, &format!("{key} {layout} on {dev}"));
                ran += 1;
            }
        }
    }
    assert!(ran >= 44, "{ran} cases ran");
}

#[test]
fn pooling_matches_pytorch_bit_for_bit() {
    // PyTorch's avg_pool2d and max_pool2d of whole numbers (each window's
    // sum exact in any order; PyTorch divides it once, in f32 for every
    // float dtype) over kernels, strides, paddings, dilations and ceil
    // modes (tests/data/make_pool_cases.py), in f32, f16 and bf16, on a
    // contiguous tensor and a transposed view.
    let cases = torch_pool_cases();
    let ints = &cases.iter().find(|(n, _)| n == "ints").unwrap().1;
    let pools = cases
        .iter()
        .filter(|(n, _)| n.starts_with("pool_") && n.split('_').count() == 9)
        .count();
    assert!(pools >= 63, "{pools} pooling cases");
    let mut ran = 0;
    for dev in devices() {
        for (key, want) in &cases {
            let w: Vec<&str> = key.split('_').collect();
            let ["pool", kind, k, st, pad, dil, ceil, count, dtype] = w[..] else {
                continue;
            };
            let pair = |v: &str| -> [usize; 2] {
                let v: Vec<usize> = v.split('x').map(|b| b.parse().unwrap()).collect();
                [v[0], v[1]]
            };
            let pool = Pool::new(pair(k))
                .stride(pair(st))
                .padding(pair(pad))
                .dilation(pair(dil))
                .ceil_mode(ceil == "1")
                .count_include_pad(count == "1");
            let dtype = float_named(dtype);
            let x = ints.to_device(&dev).unwrap().to_dtype(dtype).unwrap();
            let flipped = x.transpose(-1, -2).unwrap().contiguous().unwrap();
            for (layout, x) in [
                ("contiguous", x),
                ("transposed", flipped.transpose(-1, -2).unwrap()),
            ] {
                let got = match kind {
                    "max" => x.max_pool2d(&pool),
                    _ => x.avg_pool2d(&pool),
                };
                let got = got.unwrap_or_else(|e| panic!("{key} on {dev}: {e}"));
                assert_eq!((got.dims(), got.dtype()), (want.dims(), dtype), "{key}");
                assert_same_bits(&got, want, &format!("{key} {layout} on {dev}"));
                ran += 1;
            }
        }
    }
    // Every case, both layouts, on every device (a CPU-only run has one).
    assert_eq!(ran, pools * 2 * devices().len());
}

#[test]
fn convolution_arguments_are_checked_as_pytorch_checks_them() {
    // What PyTorch 2.15 answers for each: an output padding given to a
    // forward convolution (a TypeError there; it was dropped here), an
    // integer or bool weight (refused; it was promoted), channels that do
    // not divide into the groups (the message says so), and a transposed
    // convolution of an empty batch whose input has no rows (PyTorch's
    // output shapes; it was refused).
    for dev in devices() {
        let z = |shape: &[usize], dtype| Tensor::zeros(shape.to_vec(), dtype, &dev).unwrap();
        let x = z(&[1, 4, 5, 5], DType::F32);
        let w = z(&[2, 4, 3, 3], DType::F32);
        let padded = Conv::new().stride(2).output_padding(1);
        let e = x.conv2d(&w, &padded).unwrap_err();
        assert!(matches!(e, webtensor::Error::Argument { .. }), "{e}");
        assert!(e.to_string().starts_with("conv2d: output padding"), "{e}");
        let e = z(&[1, 4, 5], DType::F32)
            .conv1d(&z(&[2, 4, 3], DType::F32), &padded)
            .unwrap_err();
        assert!(e.to_string().starts_with("conv1d: output padding"), "{e}");
        for wd in [DType::I32, DType::Bool, DType::U8] {
            let e = x.conv2d(&z(&[2, 4, 3, 3], wd), &Conv::new()).unwrap_err();
            assert!(matches!(e, webtensor::Error::DType { .. }), "{wd}: {e}");
            let e = z(&[1, 4, 5, 5], wd).conv2d(&w, &Conv::new()).unwrap_err();
            assert!(matches!(e, webtensor::Error::DType { .. }), "{wd}: {e}");
            let e = x
                .conv_transpose2d(&z(&[4, 2, 3, 3], wd), &Conv::new())
                .unwrap_err();
            assert!(matches!(e, webtensor::Error::DType { .. }), "{wd}: {e}");
        }
        // Floats of two dtypes promote, as documented.
        let y = x
            .to_dtype(DType::F16)
            .unwrap()
            .conv2d(&w, &Conv::new())
            .unwrap();
        assert_eq!(y.dtype(), DType::F32);
        let groups = [
            (
                x.conv2d(&z(&[3, 2, 3, 3], DType::F32), &Conv::new().groups(2)),
                "output channels 3",
            ),
            (
                z(&[1, 5, 5, 5], DType::F32)
                    .conv2d(&z(&[4, 2, 3, 3], DType::F32), &Conv::new().groups(2)),
                "input channels 5",
            ),
            (
                z(&[1, 3, 5, 5], DType::F32)
                    .conv_transpose2d(&z(&[3, 3, 3, 3], DType::F32), &Conv::new().groups(2)),
                "input channels 3",
            ),
        ];
        for (result, want) in groups {
            let e = result.unwrap_err().to_string();
            assert!(
                e.contains(&format!("{want} do not divide into 2 groups")),
                "{e}"
            );
        }
        let w = z(&[3, 2, 3, 3], DType::F32);
        let empty = z(&[0, 3, 0, 5], DType::F32);
        let y = empty.conv_transpose2d(&w, &Conv::new()).unwrap();
        assert_eq!(y.dims(), [0, 2, 2, 7]);
        let y = empty.conv_transpose2d(&w, &Conv::new().stride(2)).unwrap();
        assert_eq!(y.dims(), [0, 2, 1, 11]);
        let y = z(&[0, 3, 0], DType::F32)
            .conv_transpose1d(&z(&[3, 2, 3], DType::F32), &Conv::new())
            .unwrap();
        assert_eq!(y.dims(), [0, 2, 2]);
        let y = empty.conv_transpose2d(&w, &Conv::new().padding(1)).unwrap();
        assert_eq!(y.dims(), [0, 2, 0, 5]);
        // Fewer than no rows are refused, as PyTorch refuses them; and a
        // batch of images with no rows has no output.
        let e = empty
            .conv_transpose2d(&w, &Conv::new().padding(2))
            .unwrap_err();
        assert!(matches!(e, webtensor::Error::Shape { .. }), "{e}");
        let e = z(&[1, 3, 0, 5], DType::F32)
            .conv_transpose2d(&w, &Conv::new())
            .unwrap_err();
        assert!(matches!(e, webtensor::Error::Shape { .. }), "{e}");
    }
}

#[test]
fn integer_arguments_at_their_extremes_are_errors_or_the_cpus_answer() {
    // Each argument of each op at 0, 1, around 2^31, 2^32 and 2^63 and at
    // usize::MAX: an error naming the op (never an internal one, a panic
    // or a wrapped size), or, where PyTorch gives a result, the CPU's.
    let extremes = [
        0,
        1,
        (1 << 31) - 1,
        (1 << 31) + 1,
        (1 << 32) - 1,
        (1 << 32) + 1,
        1 << 63,
        usize::MAX / 2,
        usize::MAX,
    ];
    type Run = fn(&Tensor, &Tensor, [usize; 2]) -> webtensor::Result<Tensor>;
    let runs: [(&str, Run); 12] = [
        ("conv2d", |x, w, v| x.conv2d(w, &Conv::new().stride(v))),
        ("conv2d", |x, w, v| x.conv2d(w, &Conv::new().padding(v))),
        ("conv2d", |x, w, v| x.conv2d(w, &Conv::new().dilation(v))),
        ("conv2d", |x, w, v| {
            x.conv2d(w, &Conv::new().stride(v).padding(v))
        }),
        ("conv2d", |x, w, v| x.conv2d(w, &Conv::new().groups(v[0]))),
        ("conv1d", |x, w, v| {
            let w1 = w.narrow(2, 0, 1)?.squeeze_axis(2)?;
            x.narrow(2, 0, 1)?
                .squeeze_axis(2)?
                .conv1d(&w1, &Conv::new().dilation(v).padding(v[1] / 2))
        }),
        ("conv_transpose2d", |x, w, v| {
            x.conv_transpose2d(w, &Conv::new().stride(v))
        }),
        ("conv_transpose2d", |x, w, v| {
            x.conv_transpose2d(w, &Conv::new().dilation(v))
        }),
        ("conv_transpose2d", |x, w, v| {
            x.conv_transpose2d(w, &Conv::new().padding(v))
        }),
        ("max_pool2d", |x, _, v| {
            x.max_pool2d(&Pool::new(3).dilation(v))
        }),
        ("max_pool2d", |x, _, v| {
            x.max_pool2d(&Pool::new(v).stride(2))
        }),
        ("avg_pool2d", |x, _, v| {
            x.avg_pool2d(&Pool::new(2).stride(v))
        }),
    ];
    let cpu = Device::cpu();
    let x = Tensor::from_vec(noise(2 * 4 * 16, 5), [1, 2, 4, 16], &cpu).unwrap();
    let w = Tensor::from_vec(noise(2 * 2 * 9, 6), [2, 2, 3, 3], &cpu).unwrap();
    for dev in devices() {
        let (xd, wd) = (x.to_device(&dev).unwrap(), w.to_device(&dev).unwrap());
        for (op, run) in runs {
            for &big in &extremes {
                for v in [[big, 1], [1, big]] {
                    let what = format!("{op} {v:?} on {dev}");
                    match (run(&xd, &wd, v), run(&x, &w, v)) {
                        (Ok(got), Ok(want)) => {
                            assert_eq!(got.dims(), want.dims(), "{what}");
                            check(&got, &common::read_f32(&want), want.dims(), 1e-5, &what);
                        }
                        (Err(e), Err(_)) => {
                            let msg = e.to_string();
                            assert!(msg.starts_with(op), "{what}: {msg}");
                            assert!(
                                !matches!(e, webtensor::Error::Internal { .. }),
                                "{what}: {msg}"
                            );
                        }
                        (got, want) => panic!("{what}: got {got:?}, the CPU {want:?}"),
                    }
                }
            }
        }
    }
}

#[test]
fn an_f16_convolution_adds_its_bias_before_its_one_rounding() {
    // Channels 1000 and 0.3 summed by a 1x1 f16 convolution with bias
    // -1000: 1000 + 0.30004883 - 1000 rounded once, not 1000.5 - 1000.
    for dev in devices() {
        let mut values = vec![1000.0f32; 16];
        values.extend([0.3f32; 16]);
        let x = Tensor::from_vec(values, [1, 2, 4, 4], &dev)
            .unwrap()
            .to_dtype(DType::F16)
            .unwrap();
        let w = Tensor::ones([1, 2, 1, 1], DType::F16, &dev).unwrap();
        let bias = Tensor::full([1], -1000.0, DType::F16, &dev).unwrap();
        let out = x.conv2d(&w, &Conv::new().bias(&bias)).unwrap();
        assert_eq!(out.dtype(), DType::F16);
        let want =
            webtensor::f16::from_f32(1000.0 + webtensor::f16::from_f32(0.3).to_f32() - 1000.0);
        assert_eq!(
            out.to_vec::<webtensor::f16>().unwrap(),
            vec![want; 16],
            "{dev}"
        );
    }
}

/// Views of `[n, c, 7, 9]` images over `x` (`[n, c, 14, 18]`):
/// contiguous, transposed, reversed, stepped, offset, broadcast along the
/// width and (with `permuted`) the first two axes swapped.
fn image_views(x: &Tensor, permuted: bool) -> Vec<(&'static str, Tensor)> {
    let window = x.slice(s![.., .., ..7, ..9]).unwrap();
    let [n, c] = [window.dims()[0], window.dims()[1]];
    let mut views = vec![
        ("contiguous", window.contiguous().unwrap()),
        (
            "transposed",
            x.slice(s![.., .., ..9, ..7])
                .unwrap()
                .transpose(-1, -2)
                .unwrap(),
        ),
        ("reversed", window.flip(&[1, 3]).unwrap()),
        ("stepped", x.slice(s![.., .., ..;2, ..;2]).unwrap()),
        ("offset", x.slice(s![1.., .., 3..10, 5..14]).unwrap()),
        (
            "broadcast",
            x.slice(s![..1, .., ..7, ..1])
                .unwrap()
                .broadcast_to([n, c, 7, 9])
                .unwrap(),
        ),
    ];
    if permuted {
        views.push(("permuted", window.permute(&[1, 0, 2, 3]).unwrap()));
    }
    views
}

/// A float tensor's values as bits, any NaN as one (a NaN's sign and
/// payload are not kept through f16 alike everywhere).
fn float_bits(t: &Tensor) -> Vec<u32> {
    let v = common::read_f32(t);
    v.iter()
        .map(|x| if x.is_nan() { u32::MAX } else { x.to_bits() })
        .collect()
}

/// The GPU's one-pass resize kernel against the CPU's composed resize, bit
/// for bit: every mode, sizes down, up, twice (nearest's shortcut),
/// unchanged on one axis (bilinear's `x + 0 x`, which makes an infinity
/// NaN) and 1; `resize_by` factors; contiguous, transposed, reversed,
/// stepped, offset, permuted and broadcast views, with infinities and NaN
/// in the image; f32, f16 (native and packed) and bf16, and the integer
/// dtypes nearest copies; an output past 65535 workgroups of 64.
#[test]
fn the_resize_kernel_matches_the_cpu_bit_for_bit() {
    let gpus: Vec<Device> = common::gpu()
        .into_iter()
        .chain(common::gpu_packed_f16())
        .collect();
    let cpu = Device::cpu();
    let mut v = noise(2 * 3 * 14 * 18, 7);
    v[5] = f32::INFINITY;
    v[40] = f32::NAN;
    v[77] = f32::NEG_INFINITY;
    let base = |dev: &Device, dtype: DType| {
        Tensor::from_slice(&v, [2, 3, 14, 18], dev)
            .unwrap()
            .to_dtype(dtype)
            .unwrap()
    };
    // Views of [2, 3, 7, 9] (the last of [2, 3, 7, 1], broadcast along w).
    let views = |x: &Tensor| image_views(x, true);
    let modes = [
        Resize::Nearest,
        Resize::Bilinear,
        Resize::BilinearAlignCorners,
        Resize::BilinearAntialias,
    ];
    let sizes = [[5, 13], [14, 18], [7, 20], [3, 9], [1, 1]];
    let dtypes = [
        DType::F32,
        DType::F16,
        DType::BF16,
        DType::I32,
        DType::U8,
        DType::I64,
    ];
    let bits = |t: &Tensor| -> Vec<u64> {
        match t.dtype() {
            DType::I64 => t
                .to_vec::<i64>()
                .unwrap()
                .iter()
                .map(|&x| x as u64)
                .collect(),
            DType::I32 | DType::U8 => t
                .to_dtype(DType::I64)
                .unwrap()
                .to_vec::<i64>()
                .unwrap()
                .iter()
                .map(|&x| x as u64)
                .collect(),
            // Any NaN is NaN (a NaN's sign and payload are not kept
            // through f16 alike everywhere).
            _ => common::read_f32(t)
                .iter()
                .map(|x| {
                    if x.is_nan() {
                        u64::MAX
                    } else {
                        x.to_bits() as u64
                    }
                })
                .collect(),
        }
    };
    for gpu in &gpus {
        for dtype in dtypes {
            let (c, g) = (base(&cpu, dtype), base(gpu, dtype));
            for ((name, cv), (_, gv)) in views(&c).into_iter().zip(views(&g)) {
                for mode in modes {
                    if !dtype.is_float() && mode != Resize::Nearest {
                        continue;
                    }
                    let mut runs: Vec<(String, Tensor, Tensor)> = sizes
                        .iter()
                        .map(|&size| {
                            let what = format!("{size:?}");
                            (
                                what,
                                cv.resize(size, mode).unwrap(),
                                gv.resize(size, mode).unwrap(),
                            )
                        })
                        .collect();
                    for factors in [[1.5, 0.7], [2.0, 2.0]] {
                        let what = format!("by {factors:?}");
                        let (a, b) = (cv.resize_by(factors, mode), gv.resize_by(factors, mode));
                        runs.push((what, a.unwrap(), b.unwrap()));
                    }
                    for (what, want, got) in runs {
                        assert_eq!(got.dims(), want.dims());
                        assert!(
                            bits(&got) == bits(&want),
                            "{gpu} {dtype} {name} {mode:?} {what}:\n{:?}\nwant\n{:?}",
                            common::read_f32(&got),
                            common::read_f32(&want)
                        );
                    }
                }
            }
        }
        // 2048 x 2100 outputs: more than 65535 workgroups of 64.
        let img = Tensor::from_vec(noise(1024 * 1050, 3), [1, 1, 1024, 1050], &cpu).unwrap();
        let want = img.resize([2048, 2100], Resize::Bilinear).unwrap();
        let got = img
            .to_device(gpu)
            .unwrap()
            .resize([2048, 2100], Resize::Bilinear)
            .unwrap();
        assert!(bits(&got) == bits(&want), "{gpu}: the large resize differs");
    }
}

/// The GPU's one-pass pooling kernel against the CPU's composed pooling,
/// bit for bit (any NaN as NaN): max and average, square and oblong
/// windows, strides, padding, dilation (max), ceil mode, padding counted
/// or not; contiguous, transposed, reversed, stepped, offset, permuted and
/// broadcast views with infinities, NaN and signed zeros; f32, f16 (native
/// and packed) and bf16; an output past 65535 workgroups of 64.
#[test]
fn the_pooling_kernel_matches_the_cpu_bit_for_bit() {
    let gpus: Vec<Device> = common::gpu()
        .into_iter()
        .chain(common::gpu_packed_f16())
        .collect();
    let cpu = Device::cpu();
    let mut v = noise(2 * 3 * 14 * 18, 9);
    v[5] = f32::INFINITY;
    v[40] = f32::NAN;
    v[77] = f32::NEG_INFINITY;
    v[78] = -0.0;
    v[79] = 0.0;
    let base = |dev: &Device, dtype: DType| {
        Tensor::from_slice(&v, [2, 3, 14, 18], dev)
            .unwrap()
            .to_dtype(dtype)
            .unwrap()
    };
    let views = |x: &Tensor| image_views(x, true);
    let pools = [
        Pool::new(2),
        Pool::new(3).stride(2).padding(1),
        Pool::new(3).stride(2).padding(1).ceil_mode(true),
        Pool::new([3, 2])
            .stride([1, 2])
            .padding([1, 0])
            .count_include_pad(false),
        Pool::new([2, 4])
            .stride(3)
            .padding([1, 2])
            .ceil_mode(true)
            .count_include_pad(false),
        Pool::new([7, 9]),
    ];
    let bits = float_bits;
    for gpu in &gpus {
        for dtype in [DType::F32, DType::F16, DType::BF16] {
            let (c, g) = (base(&cpu, dtype), base(gpu, dtype));
            for ((name, cv), (_, gv)) in views(&c).into_iter().zip(views(&g)) {
                for (k, pool) in pools.iter().enumerate() {
                    let dilated = (*pool).dilation([2, 1]);
                    let runs = [
                        ("max", cv.max_pool2d(pool), gv.max_pool2d(pool)),
                        ("avg", cv.avg_pool2d(pool), gv.avg_pool2d(pool)),
                        (
                            "dilated max",
                            cv.max_pool2d(&dilated),
                            gv.max_pool2d(&dilated),
                        ),
                    ];
                    for (what, want, got) in runs {
                        let (want, got) = match (want, got) {
                            (Ok(w), Ok(g)) => (w, g),
                            (Err(w), Err(g)) => {
                                assert_eq!(w.to_string(), g.to_string());
                                continue;
                            }
                            (w, g) => panic!("{gpu} {dtype} {name} {what} {k}: {w:?} vs {g:?}"),
                        };
                        assert_eq!(got.dims(), want.dims());
                        assert!(
                            bits(&got) == bits(&want),
                            "{gpu} {dtype} {name} {what} pool {k}:\n{:?}\nwant\n{:?}",
                            common::read_f32(&got),
                            common::read_f32(&want)
                        );
                    }
                }
            }
        }
        let img = Tensor::from_vec(noise(2049 * 2101, 4), [1, 1, 2049, 2101], &cpu).unwrap();
        let pool = Pool::new(2).stride(1);
        let want = img.avg_pool2d(&pool).unwrap();
        let got = img.to_device(gpu).unwrap().avg_pool2d(&pool).unwrap();
        assert!(
            bits(&got) == bits(&want),
            "{gpu}: the large pooling differs"
        );
    }
}

/// PyTorch's `adaptive_avg_pool2d` of planes of `[h, w]` in `v` (row-major,
/// one after another), as its kernels compute it: each bin's elements
/// added to +0 in f32 in row-major order, the sum divided by the bin's
/// height and then by its width, rounded once to `dtype`.
fn adaptive_reference(
    v: &[f32],
    [h, w]: [usize; 2],
    [oh, ow]: [usize; 2],
    dtype: DType,
) -> Vec<f32> {
    let bin = |o: usize, n: usize, m: usize| (o * n / m, ((o + 1) * n).div_ceil(m));
    let round = |x: f32| match dtype {
        DType::F16 => half::f16::from_f32(x).to_f32(),
        DType::BF16 => half::bf16::from_f32(x).to_f32(),
        _ => x,
    };
    let mut out = Vec::new();
    for plane in v.chunks(h * w) {
        for oy in 0..oh {
            let (y0, y1) = bin(oy, h, oh);
            for ox in 0..ow {
                let (x0, x1) = bin(ox, w, ow);
                let mut sum = 0.0f32;
                for y in y0..y1 {
                    for x in x0..x1 {
                        sum += plane[y * w + x];
                    }
                }
                out.push(round(sum / (y1 - y0) as f32 / (x1 - x0) as f32));
            }
        }
    }
    out
}

#[test]
fn the_adaptive_pooling_kernel_adds_in_pytorchs_order() {
    // On a GPU, bins of up to 256 elements are one kernel that adds each
    // bin in PyTorch's row-major order and divides as PyTorch does: bit
    // for bit against that order on the host, over every view (the
    // values read back, so f16's rounding is the view's), with
    // infinities, NaN and signed zeros among noise; bins of one length,
    // of two and three lengths, one element a bin on one axis, more bins
    // than elements, f32, f16 (native and packed) and bf16; and a
    // broadcast view of the highest rank (six leading axes).
    let gpus: Vec<Device> = common::gpu()
        .into_iter()
        .chain(common::gpu_packed_f16())
        .collect();
    let mut v = noise(2 * 3 * 14 * 18, 19);
    v[5] = f32::INFINITY;
    v[40] = f32::NAN;
    v[77] = f32::NEG_INFINITY;
    v[78] = -0.0;
    v[79] = 0.0;
    let bins = [
        [3usize, 4],
        [5, 2],
        [7, 3],
        [2, 9],
        [10, 12],
        [1, 5],
        [6, 7],
    ];
    let mut ran = 0;
    for gpu in &gpus {
        for dtype in [DType::F32, DType::F16, DType::BF16] {
            let x = Tensor::from_slice(&v, [2, 3, 14, 18], gpu)
                .unwrap()
                .to_dtype(dtype)
                .unwrap();
            for (name, view) in image_views(&x, true) {
                let d = view.dims().to_vec();
                let values = common::read_f32(&view);
                for out in bins {
                    let got = view.adaptive_avg_pool2d(out).unwrap();
                    assert_eq!(got.dims(), [d[0], d[1], out[0], out[1]]);
                    assert_eq!(got.dtype(), dtype);
                    let want = adaptive_reference(&values, [d[2], d[3]], out, dtype);
                    let want: Vec<u32> = want
                        .iter()
                        .map(|x| if x.is_nan() { u32::MAX } else { x.to_bits() })
                        .collect();
                    assert!(
                        float_bits(&got) == want,
                        "{gpu} {dtype} {name} {out:?}:\n{:?}",
                        common::read_f32(&got)
                    );
                    ran += 1;
                }
            }
            let plane = x.slice(s![1, 2, 3..10, 5..14]).unwrap();
            let values = common::read_f32(&plane);
            let deep = plane.broadcast_to([2, 1, 1, 3, 1, 2, 7, 9]).unwrap();
            let got = deep.adaptive_avg_pool2d([3, 4]).unwrap();
            let want = adaptive_reference(&values, [7, 9], [3, 4], dtype);
            let got = common::read_f32(&got);
            assert_eq!(got.len(), 12 * want.len());
            for (k, part) in got.chunks(want.len()).enumerate() {
                assert!(
                    part.iter()
                        .zip(&want)
                        .all(|(a, b)| a.to_bits() == b.to_bits()),
                    "{gpu} {dtype} 8-D copy {k}: {part:?}, want {want:?}"
                );
            }
        }
    }
    assert!(
        gpus.is_empty() || ran >= 7 * 7 * 3 * gpus.len(),
        "{ran} cases"
    );
    // The long form: an output of 4100 x 4100 (16.8M outputs, past one
    // row of 65,535 workgroups: a 2-D grid) of a transposed 3 x 2 image.
    if common::long_tests() {
        for gpu in &gpus {
            let six = [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0];
            let small = Tensor::from_slice(&six, [1, 1, 2, 3], gpu).unwrap();
            let small = small.transpose(-1, -2).unwrap();
            let got = small.adaptive_avg_pool2d([4100, 4100]).unwrap();
            let values = common::read_f32(&small);
            let want = adaptive_reference(&values, [3, 2], [4100, 4100], DType::F32);
            assert!(
                common::read_f32(&got) == want,
                "{gpu}: the 4100 x 4100 output differs"
            );
        }
    }
}

/// The GPU's one-pass depthwise convolution against the CPU's composed
/// one, bit for bit (any NaN as NaN): channel multipliers 1 and 2,
/// strides, padding (`same` too), dilation, a bias (f32, f16) or none, an
/// unbatched input; contiguous, transposed, reversed, stepped, offset and
/// broadcast inputs with infinities and NaN (in the weights too: the
/// padding's 0 times inf is NaN on both); f32, f16 (native and packed),
/// bf16 and an f16 input with f32 weights; an output past 65535
/// workgroups of 64.
#[test]
fn the_depthwise_kernel_matches_the_cpu_bit_for_bit() {
    let gpus: Vec<Device> = common::gpu()
        .into_iter()
        .chain(common::gpu_packed_f16())
        .collect();
    let cpu = Device::cpu();
    let mut v = noise(2 * 4 * 14 * 18, 11);
    v[5] = f32::INFINITY;
    v[40] = f32::NAN;
    v[77] = f32::NEG_INFINITY;
    let mut wv = noise(8 * 3 * 3, 12);
    wv[13] = f32::INFINITY;
    // Not permuted: the channels are the groups.
    let views = |x: &Tensor| image_views(x, false);
    let bits = float_bits;
    for gpu in &gpus {
        for (xd, wd) in [
            (DType::F32, DType::F32),
            (DType::F16, DType::F16),
            (DType::BF16, DType::BF16),
            (DType::F16, DType::F32),
        ] {
            let on = |dev: &Device| {
                let x = Tensor::from_slice(&v, [2, 4, 14, 18], dev)
                    .unwrap()
                    .to_dtype(xd)
                    .unwrap();
                let w = Tensor::from_slice(&wv, [8, 1, 3, 3], dev)
                    .unwrap()
                    .to_dtype(wd)
                    .unwrap();
                let b = Tensor::from_slice(&noise(8, 13), [8], dev).unwrap();
                (x, w, b)
            };
            let ((cx, cw, cb), (gx, gw, gb)) = (on(&cpu), on(gpu));
            let (cb16, gb16) = (
                cb.to_dtype(DType::F16).unwrap(),
                gb.to_dtype(DType::F16).unwrap(),
            );
            for ((name, cv), (_, gv)) in views(&cx).into_iter().zip(views(&gx)) {
                for multiplier in [1, 2] {
                    let o = 4 * multiplier;
                    let (cwk, gwk) = (cw.narrow(0, 0, o).unwrap(), gw.narrow(0, 0, o).unwrap());
                    let (cbk, gbk) = (cb.narrow(0, 0, o).unwrap(), gb.narrow(0, 0, o).unwrap());
                    let (cbh, gbh) = (cb16.narrow(0, 0, o).unwrap(), gb16.narrow(0, 0, o).unwrap());
                    let settings: Vec<(&str, Conv, Conv)> = vec![
                        ("plain", Conv::new().groups(4), Conv::new().groups(4)),
                        (
                            "strided padded",
                            Conv::new().groups(4).stride(2).padding(1).bias(&cbk),
                            Conv::new().groups(4).stride(2).padding(1).bias(&gbk),
                        ),
                        (
                            // Both column phases of a stride of 2 start
                            // past the padding; the CPU splits contiguous
                            // rows' even and odd columns in one pass.
                            "stride 2, padding 2",
                            Conv::new().groups(4).stride(2).padding(2),
                            Conv::new().groups(4).stride(2).padding(2),
                        ),
                        (
                            "same dilated",
                            Conv::new().groups(4).same().dilation([2, 1]).bias(&cbh),
                            Conv::new().groups(4).same().dilation([2, 1]).bias(&gbh),
                        ),
                        (
                            "oblong padding",
                            Conv::new().groups(4).stride([1, 3]).padding([2, 0]),
                            Conv::new().groups(4).stride([1, 3]).padding([2, 0]),
                        ),
                        (
                            // Taps in every phase of the stride, and in one.
                            "strided dilated",
                            Conv::new()
                                .groups(4)
                                .stride([2, 3])
                                .dilation([3, 3])
                                .padding([2, 1]),
                            Conv::new()
                                .groups(4)
                                .stride([2, 3])
                                .dilation([3, 3])
                                .padding([2, 1]),
                        ),
                    ];
                    for (what, cc, gc) in settings {
                        let want = cv.conv2d(&cwk, &cc).unwrap();
                        let got = gv.conv2d(&gwk, &gc).unwrap();
                        assert_eq!(got.dims(), want.dims());
                        assert!(
                            bits(&got) == bits(&want),
                            "{gpu} {xd}/{wd} {name} x{multiplier} {what}:\n{:?}\nwant\n{:?}",
                            common::read_f32(&got),
                            common::read_f32(&want)
                        );
                    }
                    // 1x1 taps with a bias: a scale and shift per channel
                    // (batch_norm's form on the CPU, its own loop there).
                    let centre = |w: &Tensor| w.narrow(2, 1, 1).unwrap().narrow(3, 1, 1).unwrap();
                    let want = cv.conv2d(&centre(&cwk), &Conv::new().groups(4).bias(&cbk));
                    let got = gv.conv2d(&centre(&gwk), &Conv::new().groups(4).bias(&gbk));
                    let (got, want) = (got.unwrap(), want.unwrap());
                    assert!(
                        bits(&got) == bits(&want),
                        "{gpu} {xd}/{wd} {name} x{multiplier} 1x1"
                    );
                }
            }
            // Unbatched: [channels, h, w].
            let (c3, g3) = (cx.slice(s![1]).unwrap(), gx.slice(s![1]).unwrap());
            let conv = Conv::new().groups(4).padding(1);
            let want = c3.conv2d(&cw.narrow(0, 0, 4).unwrap(), &conv).unwrap();
            let got = g3.conv2d(&gw.narrow(0, 0, 4).unwrap(), &conv).unwrap();
            assert!(bits(&got) == bits(&want), "{gpu} {xd}/{wd} unbatched");
        }
        let img = Tensor::from_vec(noise(2 * 1024 * 1050, 4), [1, 2, 1024, 1050], &cpu).unwrap();
        let w = Tensor::from_vec(noise(4 * 9, 5), [4, 1, 3, 3], &cpu).unwrap();
        // Dilated rows: each of the CPU's taps reads one run of its padded
        // copy across every row's end.
        let conv = Conv::new().groups(2).dilation([2, 1]).padding([2, 1]);
        let want = img.conv2d(&w, &conv).unwrap();
        let got = img
            .to_device(gpu)
            .unwrap()
            .conv2d(&w.to_device(gpu).unwrap(), &conv)
            .unwrap();
        assert!(
            bits(&got) == bits(&want),
            "{gpu}: the large depthwise convolution differs"
        );
    }
}

/// Every activation a convolution applies is the convolution then that
/// activation: on the CPU bit for bit in f32 (its kernels apply the
/// op's own f32 function to each biased sum as they store it, with no
/// pass of its own), within one rounding in f16 and bf16, and on a GPU
/// (which runs the activation after) within a convolution's tolerance;
/// over a product, a depthwise, a few-channel composed and a transposed
/// convolution, with and without a bias.
#[test]
fn a_convolutions_activation_is_the_activation_of_its_output() {
    let acts = [
        Activation::Relu,
        Activation::Relu6,
        Activation::LeakyRelu(0.1),
        Activation::Sigmoid,
        Activation::Tanh,
        Activation::Hardsigmoid,
        Activation::Hardswish,
        Activation::Silu,
        Activation::Gelu,
        Activation::GeluTanh,
    ];
    // (label, input, weight, groups, transposed stride): a transposed
    // convolution whose stride is its kernel is a 1x1 product and a
    // shuffle (the product applies the activation), another runs it after.
    let cases = [
        ("product", [2usize, 8, 9, 11], [6usize, 8, 3, 3], 1, None),
        ("depthwise", [1, 6, 10, 7], [6, 1, 3, 3], 6, None),
        ("depthwise 1x1", [1, 6, 10, 7], [6, 1, 1, 1], 6, None),
        ("transposed", [1, 4, 5, 6], [4, 3, 2, 2], 1, Some(1)),
        (
            "transposed, stride = kernel",
            [1, 4, 5, 6],
            [4, 3, 2, 2],
            1,
            Some(2),
        ),
    ];
    let cpu = Device::cpu();
    for (label, xd, wd, groups, transposed) in cases {
        let x = Tensor::from_vec(noise(xd.iter().product(), 31), xd, &cpu)
            .unwrap()
            .mul_scalar(4.0)
            .unwrap();
        let w = Tensor::from_vec(noise(wd.iter().product(), 32), wd, &cpu).unwrap();
        let channels = if transposed.is_some() { wd[1] } else { wd[0] };
        let b = Tensor::from_vec(noise(channels, 33), [channels], &cpu).unwrap();
        let run = |x: &Tensor, w: &Tensor, conv: &Conv| {
            if let Some(stride) = transposed {
                x.conv_transpose2d(w, &conv.clone().stride(stride))
            } else {
                x.conv2d(w, &conv.clone().padding(1).groups(groups))
            }
            .unwrap()
        };
        for act in acts {
            for biased in [false, true] {
                let plain = if biased {
                    Conv::new().bias(&b)
                } else {
                    Conv::new()
                };
                let what = format!("{label} {act:?} bias {biased}");
                let want = run(&x, &w, &plain).activate(act).unwrap();
                let fused = plain.clone().activation(act);
                let got = run(&x, &w, &fused);
                assert_eq!(float_bits(&got), float_bits(&want), "{what}: CPU f32");
                for dtype in [DType::F16, DType::BF16] {
                    let (xh, wh) = (x.to_dtype(dtype).unwrap(), w.to_dtype(dtype).unwrap());
                    let want = run(&xh, &wh, &plain).activate(act).unwrap();
                    let got = run(&xh, &wh, &fused);
                    assert_eq!(got.dtype(), dtype, "{what}");
                    let tol = if dtype == DType::F16 { 2e-3 } else { 1.6e-2 };
                    check(
                        &got,
                        &common::read_f32(&want),
                        want.dims(),
                        tol,
                        &format!("{what} {dtype}"),
                    );
                }
                for dev in devices().into_iter().skip(1) {
                    let on = b.to_device(&dev).unwrap();
                    let conv = if biased {
                        Conv::new().bias(&on)
                    } else {
                        Conv::new()
                    };
                    let (xd, wd) = (x.to_device(&dev).unwrap(), w.to_device(&dev).unwrap());
                    let got = run(&xd, &wd, &conv.activation(act));
                    let what = format!("{what} GPU");
                    check(&got, &common::read_f32(&want), want.dims(), 1e-4, &what);
                }
            }
        }
        // No pass of its own on the CPU: the product and depthwise kernels
        // apply it (an overlapping transposed convolution runs it after).
        let relu_pass = |then_relu: bool, conv: Conv| {
            let p = cpu
                .profile(|| {
                    let y = run(&x, &w, &conv);
                    let y = if then_relu { y.relu()? } else { y };
                    y.to_vec::<f32>().map(drop)
                })
                .unwrap();
            p.ops().iter().any(|op| op.name == "relu")
        };
        assert!(
            relu_pass(true, Conv::new()),
            "{label}: the profile names relu"
        );
        assert_eq!(
            relu_pass(false, Conv::new().activation(Activation::Relu)),
            transposed == Some(1),
            "{label}: a relu pass"
        );
    }
}

/// A bias that is a view starting past its storage's first element (a
/// slice of a longer vector) is read from where it starts by the CPU's
/// product and depthwise kernels.
#[test]
fn a_bias_view_is_read_from_its_offset() {
    let cpu = Device::cpu();
    let long = Tensor::from_vec(noise(9, 41), [9], &cpu).unwrap();
    let bias = long.narrow(0, 3, 6).unwrap();
    let copy = bias.contiguous().unwrap().to_vec::<f32>().unwrap();
    let copy = Tensor::from_vec(copy, [6], &cpu).unwrap();
    let x = Tensor::from_vec(noise(6 * 25, 42), [1, 6, 5, 5], &cpu).unwrap();
    for (what, w, groups) in [
        (
            "product",
            Tensor::from_vec(noise(6 * 6 * 9, 43), [6, 6, 3, 3], &cpu).unwrap(),
            1,
        ),
        (
            "depthwise",
            Tensor::from_vec(noise(6 * 9, 44), [6, 1, 3, 3], &cpu).unwrap(),
            6,
        ),
    ] {
        let conv = |b| Conv::new().padding(1).groups(groups).bias(b);
        let got = x.conv2d(&w, &conv(&bias)).unwrap();
        let want = x.conv2d(&w, &conv(&copy)).unwrap();
        assert_eq!(float_bits(&got), float_bits(&want), "{what}");
    }
}

/// A nearest resize by whole factors (one copy of a broadcast view two
/// axes longer than its input) at every rank up to the largest: each
/// pixel repeated, on every device (a rank-7 input was an error on the
/// CPU once: its view would have had rank 9).
#[test]
fn a_nearest_resize_by_whole_factors_takes_every_rank() {
    for dev in devices() {
        for rank in 2..=8 {
            let mut dims = vec![1usize; rank];
            dims[rank - 2] = 2;
            dims[rank - 1] = 3;
            let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], dims, &dev).unwrap();
            let got = x.resize_by([2.0, 3.0], Resize::Nearest).unwrap();
            assert_eq!(&got.dims()[rank - 2..], &[4, 9], "rank {rank} on {dev}");
            let want: Vec<f32> = (0..4)
                .flat_map(|y| (0..9).map(move |x| (y / 2 * 3 + x / 3 + 1) as f32))
                .collect();
            assert_eq!(got.to_vec::<f32>().unwrap(), want, "rank {rank} on {dev}");
        }
    }
}

#[test]
fn operands_viewing_one_storage_read_it_as_copies_do() {
    // A convolution (and a depthwise one) whose weight and input are views
    // of one storage, and a searchsorted of a tensor in itself: the
    // kernels lock each storage once (two read locks taken around a write
    // another thread queued would wait on each other) and read every
    // operand where it is, as from separate copies.
    let dev = Device::cpu();
    let (n, m) = (2 * 8 * 8, 4 * 2 * 3 * 3);
    let all = Tensor::rand([n + m], DType::F32, 3, &dev).unwrap();
    let x = all.narrow(0, 0, n).unwrap().reshape([1, 2, 8, 8]).unwrap();
    let w = all.narrow(0, n, m).unwrap().reshape([4, 2, 3, 3]).unwrap();
    // The bias from a storage of its own: each operand read from its own.
    let b = Tensor::rand([4], DType::F32, 4, &dev).unwrap();
    // A storage of its own (`contiguous` keeps a dense view's).
    let copy = |t: &Tensor| Tensor::from_vec(t.to_vec::<f32>().unwrap(), t.dims(), &dev).unwrap();
    let read = |t: Tensor| t.to_vec::<f32>().unwrap();
    let conv = Conv::new().padding(1);
    assert_eq!(
        read(x.conv2d(&w, &conv.clone().bias(&b)).unwrap()),
        read(
            copy(&x)
                .conv2d(&copy(&w), &conv.clone().bias(&copy(&b)))
                .unwrap()
        )
    );
    // A dense view of the same storage (a strided one would be copied).
    let dw = all.narrow(0, n, 18).unwrap().reshape([2, 1, 3, 3]).unwrap();
    let b2 = b.narrow(0, 0, 2).unwrap();
    let depthwise = conv.groups(2).bias(&b2);
    assert_eq!(
        read(x.conv2d(&dw, &depthwise).unwrap()),
        read(copy(&x).conv2d(&copy(&dw), &depthwise).unwrap())
    );
    let sorted = Tensor::arange(0.0f32, 64.0, 0.5, &dev).unwrap();
    let found = sorted.searchsorted(&sorted, webtensor::Side::Left).unwrap();
    let want: Vec<i64> = (0..128).collect();
    assert_eq!(found.to_vec::<i64>().unwrap(), want);
}

#[test]
fn depthwise_strides_past_the_kernel_copy_only_the_phases_taps_read() {
    // A stride past the kernel's extent (3 x 4 over a 2 x 3 kernel) leaves
    // phases of the stride no tap reads; a stride of 100,000 over one
    // pixel once asked the CPU for 10^10 floats of copies (an abort).
    for dev in devices() {
        for (xd, wd, stride, pad) in [
            ([1usize, 2, 9, 13], [2usize, 1, 2, 3], [3usize, 4], 1usize),
            ([2, 3, 1, 1], [3, 1, 1, 1], [100_000, 100_000], 0),
            ([1, 2, 7, 7], [4, 1, 3, 3], [5, 2], 2),
            // Two column phases copied of a stride of 3 (a kernel 2 wide):
            // not the adjacent pairs of a stride of 2.
            ([1, 2, 9, 11], [2, 1, 2, 2], [3, 3], 1),
            ([1, 3, 6, 13], [3, 1, 1, 2], [1, 4], 0),
        ] {
            let setting = Setting {
                stride,
                pad: [(pad, pad); 2],
                dilation: [1, 1],
                groups: xd[1],
            };
            let (x, w) = (Array4::new(xd, 61), Array4::new(wd, 62));
            let (want, dims) = conv_reference(&x, &w, None, setting);
            let conv = Conv::new().stride(stride).padding(pad).groups(xd[1]);
            let got = x.tensor(&dev).conv2d(&w.tensor(&dev), &conv).unwrap();
            check(
                &got,
                &want,
                &dims,
                1e-5,
                &format!("{xd:?} stride {stride:?} on {dev}"),
            );
        }
    }
}

#[test]
fn image_kernels_write_several_outputs_of_a_row_per_thread() {
    // A GPU thread of the pooling, depthwise and resize kernels writes
    // four outputs of one row, a quarter of the row apart: output widths
    // crossing every multiple of four, over a transposed view, in f32,
    // f16 and bf16 (u8 for the nearest resize), agree bit for bit with
    // the CPU's (same taps, same order, one rounding).
    let cpu = Device::cpu();
    let gpus: Vec<Device> = devices().into_iter().filter(|d| d.is_gpu()).collect();
    for width in 1..=13 {
        let x = Array4::new([2, 3, width + 2, 5], width as u64);
        let view = x.tensor(&cpu).transpose(2, 3).unwrap();
        let w = Tensor::from_slice(&noise(6 * 9, 7), [6, 1, 3, 3], &cpu).unwrap();
        let pool = Pool::new([2, 3]).stride([1, 1]).padding([0, 1]);
        type Op<'a> = Box<dyn Fn(&Tensor, &Tensor) -> webtensor::Result<Tensor> + 'a>;
        let ops: [(&str, Op); 7] = [
            ("max_pool2d", Box::new(|x, _| x.max_pool2d(&pool))),
            (
                "nearest",
                Box::new(|x, _| x.resize([7, 2 * width + 1], Resize::Nearest)),
            ),
            (
                "bilinear",
                Box::new(|x, _| x.resize([4, width + 3], Resize::Bilinear)),
            ),
            (
                "antialiased",
                Box::new(|x, _| x.resize([3, width.div_ceil(2)], Resize::BilinearAntialias)),
            ),
            ("avg_pool2d", Box::new(|x, _| x.avg_pool2d(&pool))),
            (
                "depthwise",
                Box::new(|x, w| x.conv2d(w, &Conv::new().groups(3).padding([1, 0]))),
            ),
            (
                "depthwise, stride 2",
                Box::new(|x, w| x.conv2d(w, &Conv::new().groups(3).stride(2).padding(1))),
            ),
        ];
        // Every float storage (f16 packed in words on the packed device,
        // its stores sharing words between threads), and bytes resized.
        let bytes = view.mul_scalar(100.0).unwrap().abs().unwrap();
        let bytes = bytes.to_dtype(DType::U8).unwrap();
        let dtypes = [DType::F32, DType::F16, DType::BF16, DType::U8];
        let cases = ops
            .iter()
            .flat_map(|op| dtypes.iter().map(move |&d| (op, d)));
        for ((label, op), dtype) in cases {
            let (view, w) = match dtype {
                DType::U8 if *label != "nearest" => continue,
                DType::U8 => (bytes.clone(), w.clone()),
                _ => (view.to_dtype(dtype).unwrap(), w.to_dtype(dtype).unwrap()),
            };
            let want = op(&view, &w).unwrap();
            for gpu in &gpus {
                let (xg, wg) = (view.to_device(gpu).unwrap(), w.to_device(gpu).unwrap());
                let got = op(&xg, &wg).unwrap();
                let label = format!("{label} {dtype:?}");
                assert_eq!(got.dims(), want.dims(), "{label} {width} on {gpu}");
                let f32s = |t: &Tensor| t.to_dtype(DType::F32).unwrap().to_vec::<f32>().unwrap();
                let (g, e) = (f32s(&got), f32s(&want));
                let differs = g
                    .iter()
                    .zip(&e)
                    .position(|(a, b)| a.to_bits() != b.to_bits());
                if let Some(i) = differs {
                    panic!(
                        "{label} of width {width} on {gpu}: element {i}: {} for {}",
                        g[i], e[i]
                    );
                }
            }
        }
    }
}

/// An f16 convolution over more patch rows than a GPU's slice of k (8192)
/// rounds once, as the CPU's: the first slice's 2048.5 and the rest's 1
/// make 2049.5, which f16 holds as 2050; the slices added through an f16
/// output gave 2048 + 1, a tie rounded to 2048.
#[test]
fn a_half_convolution_past_one_slice_of_k_rounds_once() {
    let (c, taps) = (1024, 9);
    let w: Vec<f32> = (0..c * taps)
        .map(|r| match r {
            8191 => 0.75,
            r if r < 8191 => 0.25,
            _ => 1.0 / 1024.0,
        })
        .collect();
    for dev in devices() {
        let x = Tensor::ones([1, c, 10, 10], DType::F16, &dev).unwrap();
        let weight = Tensor::from_slice(&w, [1, c, 3, 3], &dev)
            .unwrap()
            .to_dtype(DType::F16)
            .unwrap();
        let y = x.conv2d(&weight, &Conv::new()).unwrap();
        assert_eq!(y.dtype(), DType::F16);
        assert_eq!(common::read_f32(&y), [2050.0; 64], "{dev}");
    }
}

/// Windows of many taps: a global pooling tiles the input (a reduction
/// over the taps' axes; the one kernel's thread stopped at lavapipe's loop
/// budget, past 16,384 taps, and gave 0.992 for the mean of ones), and
/// overlapping windows past the kernel's budget compose; kernels far
/// longer than the input cost what the input does (PyTorch's values).
#[test]
fn windows_of_many_taps_pool_right() {
    for dev in devices() {
        for n in [256usize, 300] {
            let ones = Tensor::ones([2, 1, n, n], DType::F32, &dev).unwrap();
            let mean = ones.avg_pool2d(&Pool::new(n)).unwrap();
            assert_eq!(mean.to_vec::<f32>().unwrap(), [1.0, 1.0], "{dev} {n}");
            let ramp = Tensor::arange(0.0f32, (n * n) as f32, 1.0, &dev)
                .unwrap()
                .reshape([1, 1, n as isize, n as isize])
                .unwrap();
            let top = ramp.max_pool2d(&Pool::new(n)).unwrap();
            assert_eq!(
                top.to_vec::<f32>().unwrap(),
                [(n * n - 1) as f32],
                "{dev} {n}"
            );
            // Tiles of 128 over 300: two a side, the rest left out.
            let tiles = ramp.max_pool2d(&Pool::new(128)).unwrap();
            let at = |y: usize, x: usize| (y * n + x) as f32;
            assert_eq!(
                tiles.to_vec::<f32>().unwrap(),
                [at(127, 127), at(127, 255), at(255, 127), at(255, 255)]
            );
        }
        // Overlapping windows of 130 x 130 (past the kernel's budget).
        let x = Tensor::from_vec(noise(131 * 131, 5), [1, 1, 131, 131], &dev).unwrap();
        let cpu = x.to_device(&Device::cpu()).unwrap();
        let pool = Pool::new(130).stride(1);
        let (got, want) = (
            x.max_pool2d(&pool).unwrap().to_vec::<f32>().unwrap(),
            cpu.max_pool2d(&pool).unwrap().to_vec::<f32>().unwrap(),
        );
        assert_eq!(got, want, "{dev}");
        // A kernel of a million over a row of 4 (ceil mode), and one of
        // 20,001 with 10,000 of padding: PyTorch's answers, at once.
        let x = Tensor::arange(0.0f32, 16.0, 1.0, &dev)
            .unwrap()
            .reshape([1, 1, 4, 4])
            .unwrap();
        let long = Pool::new([1, 1_000_000])
            .stride([1, 2_000_000])
            .ceil_mode(true);
        let started = std::time::Instant::now();
        assert_eq!(
            x.max_pool2d(&long).unwrap().to_vec::<f32>().unwrap(),
            [3.0, 7.0, 11.0, 15.0]
        );
        assert_eq!(
            x.avg_pool2d(&long).unwrap().to_vec::<f32>().unwrap(),
            [1.5, 5.5, 9.5, 13.5]
        );
        let padded = Pool::new([1, 20_001]).stride(1).padding([0, 10_000]);
        let rows = x.max_pool2d(&padded).unwrap().to_vec::<f32>().unwrap();
        let want: Vec<f32> = [3.0f32, 7.0, 11.0, 15.0]
            .iter()
            .flat_map(|&v| [v; 4])
            .collect();
        assert_eq!(rows, want, "{dev}");
        // Structure, not speed: a few taps' work (it was a million ops).
        assert!(
            started.elapsed().as_secs() < 20,
            "{dev}: {:?}",
            started.elapsed()
        );
    }
}

/// Tall windows at the kernels' budget (14,336 taps): a thread looped over
/// a window's rows, then over each row's taps, so a window of 12,000 x 1
/// ran 24,000 iterations an output, four outputs a thread, which lavapipe
/// stopped past 65,535 (the third and fourth outputs of each thread were
/// partial maxima and sums). The kernels now loop once over the taps: the
/// CPU's values, for tall and wide windows.
#[test]
fn tall_windows_stay_within_the_loop_budget() {
    let cpu = Device::cpu();
    for dev in devices().into_iter().filter(|d| d.is_gpu()) {
        let n = 14_336;
        let xs = noise(n * 4 * 2, 9);
        let ws = noise(n * 2, 3);
        let run = |d: &Device| {
            let x = Tensor::from_slice(&xs[..n * 4], [1, 1, n, 4], d).unwrap();
            let pool = Pool::new([n, 1]).stride(1);
            let wide = Pool::new([1, 4]).stride(1);
            let t = Tensor::from_slice(&xs[..n * 4], [1, 1, 4, n], d).unwrap();
            let x2 = Tensor::from_slice(&xs, [1, 2, n, 4], d).unwrap();
            let w = Tensor::from_slice(&ws, [2, 1, n, 1], d).unwrap();
            [
                x.max_pool2d(&pool).unwrap(),
                x.avg_pool2d(&pool).unwrap(),
                t.max_pool2d(&wide).unwrap(),
                x2.conv2d(&w, &Conv::new().groups(2)).unwrap(),
            ]
            .map(|t| t.to_vec::<f32>().unwrap())
        };
        let (got, want) = (run(&dev), run(&cpu));
        for (k, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_eq!(g.len(), w.len(), "{dev} {k}");
            for (i, (a, b)) in g.iter().zip(w).enumerate() {
                assert!(
                    (a - b).abs() <= 1e-4 * b.abs().max(1.0),
                    "{dev} result {k} [{i}]: {a} vs {b}"
                );
            }
        }
    }
}

/// A depthwise convolution of more taps than a GPU thread may loop over
/// (17,000 taps for each of four outputs: lavapipe stopped the loop
/// silently past 65,535, and the later outputs were wrong) composes its
/// taps: the CPU's values.
#[test]
fn depthwise_kernels_past_the_loop_budget_are_right() {
    let Some(gpu) = common::gpu() else {
        return;
    };
    let k = 17_000;
    let xs: Vec<f32> = (0..2 * (k + 100))
        .map(|i| (i as f32 * 0.37).sin())
        .collect();
    let ws: Vec<f32> = (0..2 * k).map(|i| (i as f32 * 0.11).cos()).collect();
    let run = |dev: &Device| {
        let x = Tensor::from_slice(&xs, [1, 2, k + 100], dev).unwrap();
        let w = Tensor::from_slice(&ws, [2, 1, k], dev).unwrap();
        x.conv1d(&w, &Conv::new().groups(2))
            .unwrap()
            .to_vec::<f32>()
            .unwrap()
    };
    let (got, want) = (run(&gpu), run(&Device::cpu()));
    assert_eq!(got.len(), want.len());
    for (k, (g, w)) in got.iter().zip(&want).enumerate() {
        assert!((g - w).abs() <= 1e-4 * w.abs().max(1.0), "{k}: {g} vs {w}");
    }
}

/// Upsampling an axis of 2^23 or more with antialiasing, the last output's
/// centre rounds to the axis's length in f32 and its window holds nothing;
/// the kernel still reads its first tap (times 0), which started one past
/// the axis: here the NaN beyond the view, which made the output NaN where
/// the CPU (and PyTorch, summing nothing) gives 0.
#[test]
fn antialiased_upsampling_past_2_pow_23_reads_inside_the_axis() {
    let Some(gpu) = common::gpu() else {
        return;
    };
    let n = (1usize << 23) + 2;
    let mut v = vec![1.0f32; n + 1];
    v[n] = f32::NAN;
    let cpu = Device::cpu();
    // Along the width, then the height (whose first tap took a weight of
    // 1/2 in an empty window, where the CPU and PyTorch sum nothing).
    for axis in [3, 2] {
        let mut dims = [1, 1, 1, 1];
        dims[axis] = n + 1;
        let mut size = [1, 1];
        size[axis - 2] = n + 2;
        let mut last = Vec::new();
        for dev in [&cpu, &gpu] {
            let t = Tensor::from_slice(&v, dims, dev).unwrap();
            let x = t.narrow(axis as isize, 0, n).unwrap();
            let y = x.resize(size, Resize::BilinearAntialias).unwrap();
            let y = y
                .narrow(axis as isize, n - 2, 4)
                .unwrap()
                .to_vec::<f32>()
                .unwrap();
            assert!(y.iter().all(|v| !v.is_nan()), "{dev} axis {axis}: {y:?}");
            last.push(y);
        }
        assert_eq!(last[0], last[1], "axis {axis}");
        assert_eq!(last[0][3], 0.0, "axis {axis}");
    }
}

/// An antialiased axis shrunk by a factor past about half its output's
/// length is summed window by window: a 2^21-wide image to one pixel was
/// 2^22 steps of a few ops each (hours), and a broadcast 2^46-wide one
/// made each window's 2^46 weights with an allocation that aborts (2^48
/// bytes: past any address space, whatever the overcommit setting). On
/// the CPU the sums are PyTorch's (`resizing_picks_...` reaches this path)
/// and the GPU kernel's (`the_resize_kernel_matches_the_cpu_bit_for_bit`);
/// a GPU's composed form (windows past its kernel's 64 taps) sums them with
/// a scan, in another order.
#[test]
fn antialiased_shrinking_by_large_factors_takes_a_step_per_output() {
    let cpu = Device::cpu();
    let image = Tensor::from_vec(noise(3 * 1000, 17), [1, 1, 3, 1000], &cpu).unwrap();
    let want = common::read_f32(&image.resize([2, 4], Resize::BilinearAntialias).unwrap());
    for dev in devices() {
        let x = Tensor::full([1, 1, 3, 1 << 21], 1.0, DType::F32, &dev).unwrap();
        for size in [[1, 1], [2, 3]] {
            let y = common::read_f32(&x.resize(size, Resize::BilinearAntialias).unwrap());
            assert_eq!(y.len(), size[0] * size[1]);
            for v in y {
                assert!((v - 1.0).abs() < 1e-3, "{dev} {size:?}: {v}");
            }
        }
        // Windows of 501 taps on data (the GPU's composed form).
        let got = image.to_device(&dev).unwrap();
        let got = common::read_f32(&got.resize([2, 4], Resize::BilinearAntialias).unwrap());
        common::assert_close(&got, &want, 1e-5, &format!("501 taps on {dev}"));
        let wide = Tensor::full([1, 1, 1, 1], 2.0, DType::F32, &dev)
            .unwrap()
            .broadcast_to([1, 1, 1, 1 << 46])
            .unwrap();
        let err = wide.resize([1, 1], Resize::BilinearAntialias).unwrap_err();
        assert!(err.to_string().contains("resize"), "{dev}: {err}");
    }
}
