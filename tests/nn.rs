//! The neural-network layers of `ops/nn/`: `layer_norm` and `rms_norm`
//! against PyTorch's answers (tests/data/torch_norm_cases.npz, written by
//! make_norm_cases.py) on every device, through views, in f32, f16 and
//! bf16; a GPU's kernels (one, or two for few long lines split over
//! workgroups) against the CPU's composed form on lines crossing their
//! workgroups and chunks, NaN and infinity included; and bad input.

mod common;

use common::{assert_close, devices, half_tol, noise, read_f32};
use webtensor::{DType, Device, Error, Tensor};

/// The cases PyTorch computed, by name, on the CPU.
fn torch_cases() -> Vec<(String, Tensor)> {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/torch_norm_cases.npz");
    webtensor::io::load_npz(path, &Device::cpu()).unwrap()
}

fn dtype_of(code: f64) -> DType {
    match code as u32 {
        0 => DType::F32,
        1 => DType::F16,
        _ => DType::BF16,
    }
}

#[test]
fn norms_give_pytorchs_values() {
    let cases = torch_cases();
    let get = |name: &str| {
        cases
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, t)| t.clone())
    };
    let names: Vec<String> = cases
        .iter()
        .filter_map(|(n, _)| n.strip_suffix("_spec").map(str::to_string))
        .collect();
    assert_eq!(names.len(), 14);
    for dev in devices() {
        for name in &names {
            let spec = get(&format!("{name}_spec"))
                .unwrap()
                .to_vec::<f64>()
                .unwrap();
            let (k, eps, rms, dtype) =
                (spec[0] as usize, spec[1], spec[2] == 1.0, dtype_of(spec[3]));
            let on = |t: Tensor| t.to_device(&dev).unwrap().to_dtype(dtype).unwrap();
            let x = on(get(&format!("{name}_x")).unwrap());
            let w = get(&format!("{name}_w")).map(on);
            let b = get(&format!("{name}_b")).map(on);
            let want = read_f32(&get(&format!("{name}_y")).unwrap());
            let shape = x.dims()[x.rank() - k..].to_vec();
            // As it is, and as a view: the last axis reversed in storage.
            let reversed = x
                .flip(&[-1])
                .unwrap()
                .contiguous()
                .unwrap()
                .flip(&[-1])
                .unwrap();
            for (layout, x) in [("contiguous", x.clone()), ("reversed", reversed)] {
                let got = if rms {
                    x.rms_norm(&shape, w.as_ref(), (!eps.is_nan()).then_some(eps))
                } else {
                    x.layer_norm(&shape, w.as_ref(), b.as_ref(), eps)
                };
                let got = got.unwrap_or_else(|e| panic!("{name} on {dev}: {e}"));
                assert_eq!(got.dtype(), dtype);
                assert_eq!(got.dims(), x.dims());
                // f32 sums in another order than PyTorch's (and x - mean of
                // a row near 1000 keeps 2^-24 of 1000: 2e-5 of a deviation
                // of 3); f16 and bf16 one rounding apart at most.
                let tol = half_tol(dtype, 2e-3, 5e-5);
                assert_close(
                    &read_f32(&got),
                    &want,
                    tol,
                    &format!("{name} {layout} on {dev}"),
                );
            }
        }
    }
}

#[test]
fn a_gpu_norm_agrees_with_the_cpu_across_its_workgroup() {
    // Lines of 1 to 1024 elements (the kernel's workgroup is 128 threads),
    // leading axes, two normalised axes of a permuted view, and a weight
    // and bias of another float dtype.
    let cpu = Device::cpu();
    for dev in common::gpu().into_iter().chain(common::gpu_packed_f16()) {
        // Aligned lines of up to 8 quads a lane run a subgroup per line
        // where the adapter has subgroups (256 elements with lavapipe's 8
        // lanes, 1,024 with 32): lengths across its registers' steps, and
        // lines around a rows-mode workgroup's count (256 over the lanes).
        for (shape, k) in [
            (vec![3usize, 1], 1usize),
            (vec![2, 127], 1),
            (vec![5, 129], 1),
            (vec![2, 3, 1000], 1),
            (vec![4, 9, 13], 2),
            (vec![3, 4], 1),
            (vec![33, 36], 1),
            (vec![5, 128], 1),
            (vec![2, 4, 63], 2),
            (vec![33, 256], 1),
            (vec![3, 260], 1),
        ] {
            let numel: usize = shape.iter().product();
            let norm_shape = shape[shape.len() - k..].to_vec();
            let n: usize = norm_shape.iter().product();
            for dtype in [DType::F32, DType::F16, DType::BF16] {
                let make = |d: &Device| {
                    let x = Tensor::from_vec(noise(numel, 3), shape.clone(), d)
                        .unwrap()
                        .mul_scalar(4.0)
                        .unwrap()
                        .add_scalar(2.0)
                        .unwrap()
                        .to_dtype(dtype)
                        .unwrap();
                    let w = Tensor::from_vec(noise(n, 4), norm_shape.clone(), d)
                        .unwrap()
                        .to_dtype(DType::F16)
                        .unwrap();
                    let b = Tensor::from_vec(noise(n, 5), norm_shape.clone(), d).unwrap();
                    (x, w, b)
                };
                let ((cx, cw, cb), (gx, gw, gb)) = (make(&cpu), make(&dev));
                let what = format!("{shape:?} over {k} {dtype} on {dev}");
                let tol = half_tol(dtype, 2e-3, 1e-5);
                let want = cx
                    .layer_norm(&norm_shape, Some(&cw), Some(&cb), 1e-5)
                    .unwrap();
                let got = gx
                    .layer_norm(&norm_shape, Some(&gw), Some(&gb), 1e-5)
                    .unwrap();
                assert_close(
                    &read_f32(&got),
                    &read_f32(&want),
                    tol,
                    &format!("layer {what}"),
                );
                let want = cx.rms_norm(&norm_shape, Some(&cw), None).unwrap();
                let got = gx.rms_norm(&norm_shape, Some(&gw), None).unwrap();
                assert_close(
                    &read_f32(&got),
                    &read_f32(&want),
                    tol,
                    &format!("rms {what}"),
                );
                let want = cx.layer_norm(&norm_shape, None, None, 0.1).unwrap();
                let got = gx.layer_norm(&norm_shape, None, None, 0.1).unwrap();
                assert_close(
                    &read_f32(&got),
                    &read_f32(&want),
                    tol,
                    &format!("plain {what}"),
                );
            }
        }
        // A view whose normalised axes are not one run: copied, then one line.
        let x = Tensor::from_vec(noise(6 * 5 * 4, 8), [6, 5, 4], &cpu).unwrap();
        let want = x
            .permute(&[1, 2, 0])
            .unwrap()
            .layer_norm(&[4, 6], None, None, 1e-5)
            .unwrap();
        let got = x
            .to_device(&dev)
            .unwrap()
            .permute(&[1, 2, 0])
            .unwrap()
            .layer_norm(&[4, 6], None, None, 1e-5)
            .unwrap();
        assert_close(
            &read_f32(&got),
            &read_f32(&want),
            1e-5,
            &format!("permuted on {dev}"),
        );
    }
}

#[test]
fn norms_refuse_bad_input_naming_the_op() {
    for dev in devices() {
        let x = Tensor::zeros([2, 3, 4], DType::F32, &dev).unwrap();
        let w = Tensor::ones([4], DType::F32, &dev).unwrap();
        let ints = Tensor::zeros([2, 4], DType::I32, &dev).unwrap();
        let cases: Vec<(&str, webtensor::Result<Tensor>)> = vec![
            ("layer_norm", x.layer_norm(&[], None, None, 1e-5)),
            ("layer_norm", x.layer_norm(&[3], None, None, 1e-5)),
            ("layer_norm", x.layer_norm(&[1, 2, 3, 4], None, None, 1e-5)),
            ("layer_norm", x.layer_norm(&[3, 4], Some(&w), None, 1e-5)),
            ("layer_norm", x.layer_norm(&[4], None, Some(&x), 1e-5)),
            ("layer_norm", ints.layer_norm(&[4], None, None, 1e-5)),
            (
                "rms_norm",
                x.rms_norm(&[4], Some(&ints.narrow(0, 0, 1).unwrap()), None),
            ),
            ("rms_norm", x.rms_norm(&[2, 4], None, None)),
        ];
        for (op, result) in cases {
            let e = result.expect_err(op);
            assert!(
                matches!(e, Error::Shape { .. } | Error::DType { .. }),
                "{op} on {dev}: {e:?}"
            );
            assert!(e.to_string().starts_with(&format!("{op}: ")), "{e}");
        }
        // No elements: an empty result, as PyTorch's.
        let empty = Tensor::zeros([0, 4], DType::F32, &dev).unwrap();
        assert_eq!(
            empty.layer_norm(&[4], None, None, 1e-5).unwrap().dims(),
            [0, 4]
        );
    }
}

/// The group and batch normalisation cases PyTorch computed, by name.
fn torch_channel_cases() -> Vec<(String, Tensor)> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/torch_channel_norm_cases.npz");
    webtensor::io::load_npz(path, &Device::cpu()).unwrap()
}

/// `x` with the same values held channels-last in storage (axis 1 moved
/// last, made contiguous, moved back): a strided view.
fn channels_last(x: &Tensor) -> Tensor {
    x.moveaxis(1, -1)
        .unwrap()
        .contiguous()
        .unwrap()
        .moveaxis(-1, 1)
        .unwrap()
}

#[test]
fn group_and_batch_norms_give_pytorchs_values() {
    let cases = torch_channel_cases();
    let get = |name: &str| {
        cases
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, t)| t.clone())
    };
    let names: Vec<String> = cases
        .iter()
        .filter_map(|(n, _)| n.strip_suffix("_spec").map(str::to_string))
        .collect();
    assert_eq!(names.len(), 14);
    for dev in devices() {
        for name in &names {
            let spec = get(&format!("{name}_spec"))
                .unwrap()
                .to_vec::<f64>()
                .unwrap();
            let (groups, eps, dtype) = (spec[0] as usize, spec[1], dtype_of(spec[2]));
            let on = |t: Tensor| t.to_device(&dev).unwrap().to_dtype(dtype).unwrap();
            let part = |p: &str| get(&format!("{name}_{p}")).map(on);
            let x = part("x").unwrap();
            let (w, b) = (part("w"), part("b"));
            let want = read_f32(&get(&format!("{name}_y")).unwrap());
            for (layout, x) in [
                ("contiguous", x.clone()),
                ("channels last", channels_last(&x)),
            ] {
                let got = if groups > 0 {
                    x.group_norm(groups, w.as_ref(), b.as_ref(), eps)
                } else {
                    let (mean, var) = (part("mean").unwrap(), part("var").unwrap());
                    x.batch_norm(&mean, &var, w.as_ref(), b.as_ref(), eps)
                };
                let got = got.unwrap_or_else(|e| panic!("{name} on {dev}: {e}"));
                assert_eq!(got.dtype(), dtype);
                assert_eq!(got.dims(), x.dims());
                // As layer_norm: f32 sums in another order than PyTorch's
                // (rows near 100 keep 2^-24 of 100 in x - mean); f16 and
                // bf16 one rounding apart at most.
                let tol = half_tol(dtype, 2e-3, 2e-5);
                assert_close(
                    &read_f32(&got),
                    &want,
                    tol,
                    &format!("{name} {layout} on {dev}"),
                );
            }
        }
    }
}

#[test]
fn a_gpu_group_norm_agrees_with_the_cpu_across_its_workgroup() {
    // (sample, group) lines of 1 to 2,100 elements (the kernel's workgroup
    // is 128 threads), channels of one element and of many, a weight of
    // another float dtype, and batch_norm with fusion on and off.
    let cpu = Device::cpu();
    for dev in common::gpu().into_iter().chain(common::gpu_packed_f16()) {
        for (shape, groups) in [
            (vec![3usize, 1], 1usize),
            (vec![2, 4], 4),
            (vec![2, 6, 127], 6),
            (vec![1, 4, 129], 2),
            (vec![2, 12, 5, 7], 3),
            (vec![1, 3, 700], 1),
        ] {
            let numel: usize = shape.iter().product();
            let c = shape[1];
            for dtype in [DType::F32, DType::F16, DType::BF16] {
                let make = |d: &Device| {
                    let x = Tensor::from_vec(noise(numel, 13), shape.clone(), d)
                        .unwrap()
                        .mul_scalar(3.0)
                        .unwrap()
                        .add_scalar(-5.0)
                        .unwrap()
                        .to_dtype(dtype)
                        .unwrap();
                    let p = |seed| Tensor::from_vec(noise(c, seed), [c], d).unwrap();
                    let w = p(14).to_dtype(DType::F16).unwrap();
                    let var = p(16).abs().unwrap().add_scalar(0.25).unwrap();
                    (x, w, p(15), var)
                };
                let ((cx, cw, cb, cv), (gx, gw, gb, gv)) = (make(&cpu), make(&dev));
                let what = format!("{shape:?} in {groups} groups, {dtype} on {dev}");
                let tol = half_tol(dtype, 2e-3, 1e-5);
                let want = cx.group_norm(groups, Some(&cw), Some(&cb), 1e-5).unwrap();
                let got = gx.group_norm(groups, Some(&gw), Some(&gb), 1e-5).unwrap();
                assert_close(
                    &read_f32(&got),
                    &read_f32(&want),
                    tol,
                    &format!("group {what}"),
                );
                let want = cx.group_norm(groups, None, None, 0.1).unwrap();
                let got = gx.group_norm(groups, None, None, 0.1).unwrap();
                assert_close(
                    &read_f32(&got),
                    &read_f32(&want),
                    tol,
                    &format!("plain {what}"),
                );
                // The GPU's chain is PyTorch's CUDA form, `(x - mean) *
                // invstd * weight + bias`; the CPU's is PyTorch's CPU form,
                // `x * scale + shift` with both made per channel first:
                // a few ulps apart (a half rounds them away or not).
                let want = read_f32(&cx.batch_norm(&cb, &cv, Some(&cw), Some(&cb), 1e-5).unwrap());
                // (The device is shared: its setting is put back.)
                let was = dev.fusion();
                for fusion in [true, false] {
                    dev.set_fusion(fusion);
                    let got = gx.batch_norm(&gb, &gv, Some(&gw), Some(&gb), 1e-5);
                    let got = read_f32(&got.unwrap());
                    dev.set_fusion(was);
                    let tol = half_tol(dtype, 1e-3, 1e-6);
                    assert_close(&got, &want, tol, &format!("batch {what}, fusion {fusion}"));
                }
            }
        }
    }
}

#[test]
fn a_gpu_norm_of_few_long_lines_splits_them_and_agrees_with_the_cpu() {
    // Few lines of 8,192 elements or more split over workgroups (issue
    // 45: a statistics pass over chunks, then an apply pass combining the
    // line's chunks): on lavapipe's 16 resident workgroups, up to 7 lines;
    // on a big GPU's 2,048 (`gpu_big_grids`) into up to 64 chunks (150,001
    // elements), 48 (100,003) or 4 (9,001). Lengths leave a short last
    // chunk; a transposed view steps along its lines; weights and biases,
    // RMS, group norm's channels; f16 and bf16.
    let cpu = Device::cpu();
    for dev in common::gpu()
        .into_iter()
        .chain(common::gpu_packed_f16())
        .chain(common::gpu_big_grids())
    {
        for dtype in [DType::F32, DType::F16, DType::BF16] {
            let tol = half_tol(dtype, 2e-3, 1e-5);
            let data = |n: usize, seed: u64, d: &Device| {
                Tensor::from_vec(noise(n, seed), [n], d)
                    .unwrap()
                    .mul_scalar(3.0)
                    .unwrap()
                    .add_scalar(7.0)
                    .unwrap()
                    .to_dtype(dtype)
                    .unwrap()
            };
            for (lines, length, transposed) in [
                (1, 100_003, false),
                (3, 9_001, false),
                (2, 20_000, true),
                (1, 150_001, false),
            ] {
                let what = format!("{lines} x {length} (t={transposed}) {dtype} on {dev}");
                let make = |d: &Device| {
                    let x = data(lines * length, 21, d);
                    let x = match transposed {
                        true => x.reshape([length, lines]).unwrap().t(),
                        false => x.reshape([lines, length]).unwrap(),
                    };
                    let w = Tensor::from_vec(noise(length, 22), [length], d).unwrap();
                    let b = Tensor::from_vec(noise(length, 23), [length], d).unwrap();
                    (x, w.to_dtype(DType::F16).unwrap(), b)
                };
                let ((cx, cw, cb), (gx, gw, gb)) = (make(&cpu), make(&dev));
                let want = cx.layer_norm(&[length], Some(&cw), Some(&cb), 1e-5);
                let got = gx.layer_norm(&[length], Some(&gw), Some(&gb), 1e-5);
                let (got, want) = (read_f32(&got.unwrap()), read_f32(&want.unwrap()));
                assert_close(&got, &want, tol, &format!("layer {what}"));
                let want = read_f32(&cx.rms_norm(&[length], Some(&cw), None).unwrap());
                let got = read_f32(&gx.rms_norm(&[length], Some(&gw), None).unwrap());
                assert_close(&got, &want, tol, &format!("rms {what}"));
            }
            // A group norm of 2 x 9 channels of 50 x 60 in 3 groups: 6
            // lines of 9,000, each of 3 channels of 3,000; on two cores 2
            // chunks of 4,500 a line, so the first chunk ends inside the
            // second channel.
            let (c, h, w) = (9, 50, 60);
            let make = |d: &Device| {
                let x = data(2 * c * h * w, 24, d);
                let x = x.reshape([2, c, h, w]).unwrap();
                let w = Tensor::from_vec(noise(c, 25), [c], d).unwrap();
                (x, w.clone(), w.add_scalar(1.0).unwrap())
            };
            let ((cx, cw, cb), (gx, gw, gb)) = (make(&cpu), make(&dev));
            let want = read_f32(&cx.group_norm(3, Some(&cw), Some(&cb), 1e-5).unwrap());
            let run = || gx.group_norm(3, Some(&gw), Some(&gb), 1e-5).unwrap();
            assert_close(
                &read_f32(&run()),
                &want,
                tol,
                &format!("group {dtype} on {dev}"),
            );
        }
    }
    // The split happened where the cores say it does (lavapipe keeps 8 of
    // the norm's workgroups a core: kernel_budgets.rs; a hardware
    // adapter's residency is its own), on a device of its own: a profile
    // sees every kernel of its device, the other tests' too.
    let Some(dev) = common::own_gpu(webtensor::GpuOptions::default()) else {
        return;
    };
    let x = Tensor::from_vec(noise(2 * 9 * 50 * 60, 24), [2, 9, 50, 60], &dev).unwrap();
    let profile = dev
        .profile(|| {
            x.group_norm(3, None, None, 1e-5)
                .map(|y| drop(read_f32(&y)))
        })
        .unwrap();
    let grids: Vec<u32> = profile
        .kernels()
        .iter()
        .map(|k| k.workgroups.iter().product())
        .collect();
    if !dev.info().name.contains("llvmpipe") {
        // A hardware adapter's residency is its own: one kernel of a
        // workgroup a line, or two of as many chunks a line (at most 4).
        let split = grids.len() == 2 && grids[0] == grids[1];
        assert!(
            (grids == [6] || split)
                && grids[0].is_multiple_of(6)
                && (1..=4).contains(&(grids[0] / 6)),
            "group split on {dev}: {grids:?}"
        );
        return;
    }
    let resident = 8 * std::thread::available_parallelism().map_or(4, |n| n.get());
    let chunks = if 2 * 6 >= resident {
        1
    } else {
        (resident / 6).min(4)
    };
    let kernels = if chunks == 1 { 1 } else { 2 };
    assert_eq!(
        grids,
        vec![6 * chunks as u32; kernels],
        "group split on {dev}"
    );
}

#[test]
fn a_nan_or_infinity_reaches_its_whole_line_in_split_norms_as_on_the_cpu() {
    // A NaN in one chunk of a split line makes every element of the line
    // NaN; an infinity makes a layer norm's line NaN (inf - inf), and an
    // RMS norm's finite elements 0 and its own NaN: PyTorch's answers, the
    // CPU's. 2 lines of 20,000 split on lavapipe.
    let cpu = Device::cpu();
    for dev in common::gpu().into_iter().chain(common::gpu_packed_f16()) {
        for dtype in [DType::F32, DType::F16] {
            let make = |d: &Device| {
                let mut v = noise(2 * 20_000, 31);
                v[19_999] = f32::NAN;
                v[20_000 + 5] = f32::INFINITY;
                let x = Tensor::from_vec(v, [2, 20_000], d).unwrap();
                x.to_dtype(dtype).unwrap()
            };
            let (cx, gx) = (make(&cpu), make(&dev));
            let what = format!("{dtype} on {dev}");
            let want = read_f32(&cx.layer_norm(&[20_000], None, None, 1e-5).unwrap());
            let got = read_f32(&gx.layer_norm(&[20_000], None, None, 1e-5).unwrap());
            assert!(want.iter().all(|v| v.is_nan()), "the CPU's layer norm");
            assert_close(&got, &want, 0.0, &format!("layer {what}"));
            let want = read_f32(&cx.rms_norm(&[20_000], None, None).unwrap());
            let got = read_f32(&gx.rms_norm(&[20_000], None, None).unwrap());
            assert!(want[..20_000].iter().all(|v| v.is_nan()));
            assert!(want[20_000..].iter().filter(|v| v.is_nan()).count() == 1);
            assert_close(&got, &want, 0.0, &format!("rms {what}"));
        }
    }
}

#[test]
fn channel_norms_refuse_bad_input_naming_the_op() {
    for dev in devices() {
        let x = Tensor::zeros([2, 6, 4], DType::F32, &dev).unwrap();
        let c = Tensor::ones([6], DType::F32, &dev).unwrap();
        let short = Tensor::ones([4], DType::F32, &dev).unwrap();
        let ints = Tensor::zeros([6], DType::I32, &dev).unwrap();
        let flat = Tensor::zeros([6], DType::F32, &dev).unwrap();
        let cases: Vec<(&str, webtensor::Result<Tensor>)> = vec![
            ("group_norm", flat.group_norm(1, None, None, 1e-5)),
            ("group_norm", x.group_norm(0, None, None, 1e-5)),
            ("group_norm", x.group_norm(4, None, None, 1e-5)),
            ("group_norm", x.group_norm(12, None, None, 1e-5)),
            // No channels still needs groups.
            (
                "group_norm",
                Tensor::zeros([2, 0, 3], DType::F32, &dev)
                    .unwrap()
                    .group_norm(0, None, None, 1e-5),
            ),
            ("group_norm", x.group_norm(3, Some(&short), None, 1e-5)),
            ("group_norm", x.group_norm(3, None, Some(&ints), 1e-5)),
            (
                "group_norm",
                x.to_dtype(DType::I32)
                    .unwrap()
                    .group_norm(3, None, None, 1e-5),
            ),
            ("batch_norm", flat.batch_norm(&c, &c, None, None, 1e-5)),
            ("batch_norm", x.batch_norm(&short, &c, None, None, 1e-5)),
            ("batch_norm", x.batch_norm(&c, &ints, None, None, 1e-5)),
            ("batch_norm", x.batch_norm(&c, &c, Some(&short), None, 1e-5)),
            ("batch_norm", x.batch_norm(&c, &c, None, Some(&x), 1e-5)),
            (
                "batch_norm",
                x.to_dtype(DType::Bool)
                    .unwrap()
                    .batch_norm(&c, &c, None, None, 1e-5),
            ),
        ];
        for (op, result) in cases {
            let e = result.expect_err(op);
            assert!(
                matches!(e, Error::Shape { .. } | Error::DType { .. }),
                "{op} on {dev}: {e:?}"
            );
            assert!(e.to_string().starts_with(&format!("{op}: ")), "{e}");
        }
        // No elements: an empty result, as PyTorch's.
        let empty = Tensor::zeros([0, 6, 3], DType::F32, &dev).unwrap();
        assert_eq!(
            empty.group_norm(2, None, None, 1e-5).unwrap().dims(),
            [0, 6, 3]
        );
        assert_eq!(
            empty.batch_norm(&c, &c, None, None, 1e-5).unwrap().dims(),
            [0, 6, 3]
        );
        // No pixels, or no channels: PyTorch's group_norm gives an empty
        // tensor of the input's shape (it refused neither).
        let no_pixels = Tensor::zeros([2, 6, 0], DType::F32, &dev).unwrap();
        let y = no_pixels.group_norm(3, Some(&c), Some(&c), 1e-5).unwrap();
        assert_eq!(y.dims(), [2, 6, 0]);
        let no_channels = Tensor::zeros([2, 0, 3], DType::F16, &dev).unwrap();
        let y = no_channels.group_norm(1, None, None, 1e-5).unwrap();
        assert_eq!((y.dims(), y.dtype()), (&[2, 0, 3][..], DType::F16));
        // No positions, or no channels (PyTorch's `batch_norm(zeros(2, 3,
        // 0), ...)` is (2, 3, 0)): empty too, in f32 (the CPU's 1x1
        // convolution refused them) and f16.
        let none = Tensor::zeros([0], DType::F32, &dev).unwrap();
        for dtype in [DType::F32, DType::F16] {
            let x = Tensor::zeros([2, 6, 0], dtype, &dev).unwrap();
            assert_eq!(
                x.batch_norm(&c, &c, None, None, 1e-5).unwrap().dims(),
                [2, 6, 0]
            );
            let x = Tensor::zeros([2, 0, 3, 2], dtype, &dev).unwrap();
            let y = x.batch_norm(&none, &none, None, None, 1e-5).unwrap();
            assert_eq!((y.dims(), y.dtype()), (&[2, 0, 3, 2][..], dtype));
        }
    }
}

#[test]
fn activations_give_pytorchs_values() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/torch_activation_cases.npz");
    let cases = webtensor::io::load_npz(path, &Device::cpu()).unwrap();
    let get = |name: &str| {
        cases
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, t)| read_f32(t))
            .unwrap()
    };
    let x = get("x");
    let n = x.len();
    for dev in devices() {
        for (dtype, suffix) in [
            (DType::F32, "f32"),
            (DType::F16, "f16"),
            (DType::BF16, "bf16"),
        ] {
            let t = Tensor::from_slice(&x, [n], &dev)
                .unwrap()
                .to_dtype(dtype)
                .unwrap();
            // As it is, and as a reversed view.
            let reversed = t
                .flip(&[0])
                .unwrap()
                .contiguous()
                .unwrap()
                .flip(&[0])
                .unwrap();
            for (layout, t) in [("contiguous", &t), ("reversed", &reversed)] {
                for (op, got) in [
                    ("relu6", t.relu6()),
                    ("hardsigmoid", t.hardsigmoid()),
                    ("hardswish", t.hardswish()),
                    ("hardtanh", t.hardtanh(-1.0, 1.0)),
                    ("hardtanh_m2_5", t.hardtanh(-2.0, 5.0)),
                    ("softshrink", t.softshrink(0.5)),
                    ("softshrink_3", t.softshrink(3.0)),
                    ("hardshrink", t.hardshrink(0.5)),
                    ("hardshrink_3", t.hardshrink(3.0)),
                    ("softshrink_03", t.softshrink(0.3)),
                    ("hardshrink_03", t.hardshrink(0.3)),
                    ("threshold", t.threshold(0.1, 20.0)),
                    ("threshold_m3_nan", t.threshold(-3.0, f64::NAN)),
                ] {
                    let got = got.unwrap();
                    assert_eq!(got.dtype(), dtype);
                    let want = get(&format!("{op}_{suffix}"));
                    // Bit for bit (NaN as NaN, zeros with their signs), but
                    // for a zero where PyTorch's result is an f32 subnormal:
                    // WGSL lets a GPU flush those (NVIDIA's driver does).
                    // PyTorch's softshrink gives +0 in its vectorised loop
                    // and `x * 0` in its scalar one (a tensor's last few).
                    let any_zero = op.starts_with("softshrink");
                    for (i, (g, w)) in read_f32(&got).iter().zip(&want).enumerate() {
                        assert!(
                            g.to_bits() == w.to_bits()
                                || g.is_nan() && w.is_nan()
                                || *g == 0.0 && (w.is_subnormal() || any_zero && *w == 0.0),
                            "{op} {dtype} {layout} on {dev}: x = {}: got {g}, want {w}",
                            x[i]
                        );
                    }
                }
            }
        }
        let ints = Tensor::zeros([3], DType::I32, &dev).unwrap();
        for (op, e) in [
            ("relu6", ints.relu6()),
            ("hardsigmoid", ints.hardsigmoid()),
            ("hardswish", ints.hardswish()),
            ("hardtanh", ints.hardtanh(-1.0, 1.0)),
            ("softshrink", ints.softshrink(0.5)),
            ("hardshrink", ints.hardshrink(0.5)),
            ("threshold", ints.threshold(0.0, 1.0)),
        ] {
            let e = e.expect_err(op);
            assert!(matches!(e, Error::DType { .. }), "{op}: {e:?}");
            assert!(e.to_string().starts_with(&format!("{op}: ")), "{e}");
        }
    }
}

type Activation = fn(&Tensor) -> webtensor::Result<Tensor>;

/// The smooth activations against PyTorch's (tests/data/
/// make_activation_cases.py): within 8 + 2|x| ulp (WGSL's bound on `exp`,
/// plus 5) of the dtype's rounding of PyTorch's f32 value, and for GELU
/// as many of `x / 2` (`1 + erf(x / sqrt(2))` cancels for negative `x`,
/// in PyTorch's form as in ours);
/// infinities and NaN exactly (but GELU's where PyTorch's is not); a zero
/// where PyTorch's is an f32 subnormal
/// (a GPU may flush those). Contiguous and reversed views, f32, f16, bf16;
/// the GPU with fusion on runs each as one kernel.
#[test]
fn smooth_activations_are_pytorchs() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/torch_activation_cases.npz");
    let cases = webtensor::io::load_npz(path, &Device::cpu()).unwrap();
    let get = |name: &str| {
        let t = cases.iter().find(|(n, _)| n == name);
        read_f32(&t.unwrap_or_else(|| panic!("{name}")).1)
    };
    let x = get("x");
    let n = x.len();
    let ops: [(&str, Activation); 17] = [
        ("gelu", Tensor::gelu),
        ("gelu_tanh", Tensor::gelu_tanh),
        ("silu", Tensor::silu),
        ("erf", Tensor::erf),
        ("mish", Tensor::mish),
        ("softplus", |t| t.softplus(1.0, 20.0)),
        ("softplus_b2_t5", |t| t.softplus(2.0, 5.0)),
        ("elu", |t| t.elu(1.0)),
        ("elu_a05", |t| t.elu(0.5)),
        ("leaky_relu", |t| t.leaky_relu(0.01)),
        ("leaky_relu_02", |t| t.leaky_relu(0.2)),
        ("selu", Tensor::selu),
        ("celu", |t| t.celu(1.0)),
        ("celu_a03", |t| t.celu(0.3)),
        ("softsign", Tensor::softsign),
        ("logsigmoid", Tensor::logsigmoid),
        ("tanhshrink", Tensor::tanhshrink),
    ];
    for dev in devices() {
        for (dtype, suffix, eps) in [
            (DType::F32, "f32", f32::EPSILON),
            (DType::F16, "f16", 2f32.powi(-10)),
            (DType::BF16, "bf16", 2f32.powi(-7)),
        ] {
            let t = Tensor::from_slice(&x, [n], &dev)
                .unwrap()
                .to_dtype(dtype)
                .unwrap();
            let reversed = t.flip(&[0]).unwrap().contiguous().unwrap().flip(&[0]);
            let xs = read_f32(&t);
            for (layout, t) in [("contiguous", t.clone()), ("reversed", reversed.unwrap())] {
                for (op, f) in &ops {
                    let got = f(&t).unwrap();
                    assert_eq!(got.dtype(), dtype, "{op}");
                    let want = get(&format!("{op}_{suffix}"));
                    for (i, (g, w)) in read_f32(&got).iter().zip(&want).enumerate() {
                        let scale = if op.starts_with("gelu") {
                            xs[i].abs() / 2.0
                        } else if *op == "tanhshrink" {
                            // x - tanh(x) cancels near 0.
                            xs[i].abs()
                        } else {
                            0.0
                        };
                        // WGSL lets a GPU's exp(x) be 3 + 2|x| ulp off.
                        let ulps = 8.0 + 2.0 * xs[i].abs().min(100.0);
                        // And 1e-35: `e^x` past x = -87 is an f32 subnormal,
                        // which a GPU may flush to zero (mish(-89) is 2e-37).
                        let tol = ulps * eps * (w.abs() + scale) + 1e-35;
                        // PyTorch's vectorised GELU gives NaN for inf and inf
                        // for 3e38 (its scalar form gives inf and 3e38): past
                        // 10, GELU is x in f32.
                        let identity = op.starts_with("gelu") && xs[i] > 10.0 && *g == xs[i];
                        // PyTorch's bf16 erf is 0 for 1e-20 and 1e-40 (its f32
                        // and f16 ones are not).
                        let tiny = xs[i].abs() < 1e-15;
                        let flushed = tiny && *w == 0.0 && g.abs() <= 2.0 * xs[i].abs();
                        let ok = identity
                            || flushed
                            || if w.is_finite() {
                                (g - w).abs() <= tol || (*g == 0.0 && w.is_subnormal())
                            } else {
                                g.to_bits() == w.to_bits() || g.is_nan() && w.is_nan()
                            };
                        assert!(
                            ok,
                            "{op} {dtype} {layout} on {dev}: x = {}: got {g}, want {w}",
                            xs[i]
                        );
                    }
                }
            }
        }
        let ints = Tensor::zeros([3], DType::I32, &dev).unwrap();
        for (op, f) in &ops {
            let e = f(&ints).expect_err(op);
            assert!(matches!(e, Error::DType { .. }), "{op}: {e:?}");
            // The case's name less its parameters' suffix.
            let name = ["_b2_t5", "_a05", "_a03", "_02"]
                .iter()
                .find_map(|p| op.strip_suffix(p))
                .unwrap_or(op);
            assert!(e.to_string().starts_with(&format!("{name}: ")), "{e}");
        }
    }
}

/// `fuse_conv_bn_weights` is PyTorch's fold, by its definition (in f64
/// here): the weight scaled per output channel, the bias shifted and
/// scaled; the convolution by the folded pair is the batch norm of the
/// convolution within rounding, with and without the optional
/// parameters, in f32, f16 and bf16 weights, on every device; bad shapes,
/// dtypes and ranks are errors naming the op.
#[test]
fn a_folded_batch_norm_is_pytorchs_fold() {
    let (c, cin) = (5, 3);
    for dev in devices() {
        let t = |v: Vec<f32>, dims: &[usize]| Tensor::from_vec(v, dims, &dev).unwrap();
        let w = t(noise(c * cin * 9, 1), &[c, cin, 3, 3]);
        let b = t(noise(c, 2), &[c]);
        let mean = t(noise(c, 3), &[c]);
        let var = t(noise(c, 4).iter().map(|v| v.abs() + 0.5).collect(), &[c]);
        let gamma = t(noise(c, 5), &[c]);
        let beta = t(noise(c, 6), &[c]);
        let x = t(noise(2 * cin * 36, 7), &[2, cin, 6, 6]);
        let eps = 1e-3;
        for (conv_b, g, be) in [
            (None, None, None),
            (Some(&b), Some(&gamma), Some(&beta)),
            (Some(&b), None, Some(&beta)),
        ] {
            let (fw, fb) = w
                .fuse_conv_bn_weights(conv_b, &mean, &var, eps, g, be)
                .unwrap();
            let what = format!(
                "{} bias {} gamma {}",
                dev.info().name,
                conv_b.is_some(),
                g.is_some()
            );
            // PyTorch's definition in f64.
            let read = |t: &Tensor| read_f32(t).iter().map(|&v| v as f64).collect::<Vec<_>>();
            let (wv, mv, vv) = (read(&w), read(&mean), read(&var));
            let gv = g.map_or(vec![1.0; c], read);
            let bv = conv_b.map_or(vec![0.0; c], read);
            let bev = be.map_or(vec![0.0; c], read);
            let s: Vec<f64> = (0..c).map(|k| gv[k] / (vv[k] + eps).sqrt()).collect();
            let want_w: Vec<f32> = wv
                .iter()
                .enumerate()
                .map(|(i, v)| (v * s[i / (cin * 9)]) as f32)
                .collect();
            let want_b: Vec<f32> = (0..c)
                .map(|k| ((bv[k] - mv[k]) * s[k] + bev[k]) as f32)
                .collect();
            assert_close(&read_f32(&fw), &want_w, 1e-6, &what);
            assert_close(&read_f32(&fb), &want_b, 1e-6, &what);
            let conv = match conv_b {
                Some(b) => webtensor::Conv::new().bias(b),
                None => webtensor::Conv::new(),
            };
            let apart = x
                .conv2d(&w, &conv.padding(1))
                .unwrap()
                .batch_norm(&mean, &var, g, be, eps)
                .unwrap();
            let fused = x
                .conv2d(&fw, &webtensor::Conv::new().bias(&fb).padding(1))
                .unwrap();
            assert_close(&read_f32(&fused), &read_f32(&apart), 1e-4, &what);
            for dtype in [DType::F16, DType::BF16] {
                let wh = w.to_dtype(dtype).unwrap();
                let (fw, fb) = wh
                    .fuse_conv_bn_weights(conv_b, &mean, &var, eps, g, be)
                    .unwrap();
                // The bias in the conv bias's dtype, else the weight's (as
                // PyTorch's `conv_bias_dtype`).
                let bias_dtype = conv_b.map_or(dtype, Tensor::dtype);
                assert_eq!((fw.dtype(), fb.dtype()), (dtype, bias_dtype), "{what}");
                let want: Vec<f32> = read_f32(&wh)
                    .iter()
                    .enumerate()
                    .map(|(i, &v)| (v as f64 * s[i / (cin * 9)]) as f32)
                    .collect();
                let tol = half_tol(dtype, 1e-3, 1e-6);
                assert_close(&read_f32(&fw), &want, tol, &format!("{what} {dtype}"));
            }
        }
        let err = |r: webtensor::Result<(Tensor, Tensor)>| r.map(drop).unwrap_err().to_string();
        let short = t(vec![1.0; c - 1], &[c - 1]);
        for e in [
            err(w.fuse_conv_bn_weights(None, &short, &var, eps, None, None)),
            err(w.fuse_conv_bn_weights(Some(&short), &mean, &var, eps, None, None)),
            err(w.fuse_conv_bn_weights(None, &mean, &var, eps, None, Some(&short))),
            err(mean.fuse_conv_bn_weights(None, &mean, &var, eps, None, None)),
            err(w
                .to_dtype(DType::I32)
                .unwrap()
                .fuse_conv_bn_weights(None, &mean, &var, eps, None, None)),
        ] {
            assert!(e.contains("fuse_conv_bn_weights"), "{e}");
        }
    }
}

/// `fuse_conv_transpose_bn_weights` is PyTorch's fold with `transpose`:
/// the weight `(C_in, C, kh, kw)` scaled along its axis 1, by its
/// definition in f64; the transposed convolution by the folded pair is
/// the batch norm of the transposed convolution, on every device; a
/// statistic of axis 0's length is an error naming the op.
#[test]
fn a_folded_batch_norm_after_a_transposed_convolution_scales_axis_one() {
    let (cin, c) = (3, 5);
    for dev in devices() {
        let t = |v: Vec<f32>, dims: &[usize]| Tensor::from_vec(v, dims, &dev).unwrap();
        let w = t(noise(cin * c * 4, 11), &[cin, c, 2, 2]);
        let b = t(noise(c, 12), &[c]);
        let mean = t(noise(c, 13), &[c]);
        let var = t(noise(c, 14).iter().map(|v| v.abs() + 0.5).collect(), &[c]);
        let gamma = t(noise(c, 15), &[c]);
        let beta = t(noise(c, 16), &[c]);
        let x = t(noise(2 * cin * 20, 17), &[2, cin, 4, 5]);
        let eps = 1e-5;
        let (fw, fb) = w
            .fuse_conv_transpose_bn_weights(Some(&b), &mean, &var, eps, Some(&gamma), Some(&beta))
            .unwrap();
        let read = |t: &Tensor| read_f32(t).iter().map(|&v| v as f64).collect::<Vec<_>>();
        let (wv, bv, mv, vv, gv, bev) = (
            read(&w),
            read(&b),
            read(&mean),
            read(&var),
            read(&gamma),
            read(&beta),
        );
        let s: Vec<f64> = (0..c).map(|k| gv[k] / (vv[k] + eps).sqrt()).collect();
        let want_w: Vec<f32> = wv
            .iter()
            .enumerate()
            .map(|(i, v)| (v * s[i / 4 % c]) as f32)
            .collect();
        let want_b: Vec<f32> = (0..c)
            .map(|k| ((bv[k] - mv[k]) * s[k] + bev[k]) as f32)
            .collect();
        let what = dev.info().name;
        assert_close(&read_f32(&fw), &want_w, 1e-6, &what);
        assert_close(&read_f32(&fb), &want_b, 1e-6, &what);
        let stride = webtensor::Conv::new().stride(2);
        let apart = x
            .conv_transpose2d(&w, &stride.clone().bias(&b))
            .unwrap()
            .batch_norm(&mean, &var, Some(&gamma), Some(&beta), eps)
            .unwrap();
        let fused = x.conv_transpose2d(&fw, &stride.bias(&fb)).unwrap();
        assert_close(&read_f32(&fused), &read_f32(&apart), 1e-4, &what);
        let per_input = t(vec![1.0; cin], &[cin]);
        let e = w
            .fuse_conv_transpose_bn_weights(None, &per_input, &per_input, eps, None, None)
            .map(drop)
            .unwrap_err()
            .to_string();
        assert!(e.contains("fuse_conv_transpose_bn_weights"), "{e}");
    }
}

/// Lines of integers over a large offset (1.7 million and 0 to 9, exact
/// in f32), where a mean summed in f32 is off by several ulps: the
/// deviations from it, uncorrected, made the outputs off by up to 1.8
/// (a GPU's kernel) and 0.5 (the CPU's composed form). Every path: lines
/// a subgroup holds (rows mode), a workgroup per line, few long lines
/// split over workgroups, and a group normalisation; against the exact
/// normalisation (f64 sums of small integers).
#[test]
fn layer_norm_of_integers_over_a_large_offset() {
    let digit = |i: usize| ((i * 7 + i / 13) % 10) as f64;
    for dev in devices() {
        for [lines, length] in [[64, 1024], [64, 4099], [2, 65536]] {
            let data: Vec<f32> = (0..lines * length)
                .map(|i| 1.7e6 + digit(i) as f32)
                .collect();
            let x = Tensor::from_vec(data, [lines, length], &dev).unwrap();
            let want: Vec<f32> = (0..lines)
                .flat_map(|l| {
                    let line: Vec<f64> = (0..length).map(|j| digit(l * length + j)).collect();
                    let n = length as f64;
                    let mean = line.iter().sum::<f64>() / n;
                    let var = line.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n;
                    let scale = 1.0 / (var + 1e-5).sqrt();
                    line.into_iter().map(move |v| ((v - mean) * scale) as f32)
                })
                .collect();
            let got = x.layer_norm(&[length], None, None, 1e-5).unwrap();
            assert_close(
                &read_f32(&got),
                &want,
                2e-3,
                &format!("{dev} layer_norm of {lines} x {length}"),
            );
            // The same lines as (N, C, H) with one group a sample.
            let grouped = x.reshape([lines, 4, length / 4]);
            if let Ok(grouped) = grouped {
                let got = grouped.group_norm(1, None, None, 1e-5).unwrap();
                assert_close(
                    &read_f32(&got),
                    &want,
                    2e-3,
                    &format!("{dev} group_norm of {lines} x {length}"),
                );
            }
        }
    }
}

/// `logsumexp`, `softmin`, `glu` and `prelu` against PyTorch's answers
/// (tests/data/make_axis_activation_cases.py): over one axis, several and
/// all, kept or dropped, lines of -inf only, with +inf, NaN, and values
/// past exp's f32 range (shifted by the maximum), an empty axis and i32
/// input (f32 out); in f32, f16 and bf16, on every device, as they are and
/// as reversed views.
#[test]
fn axis_activations_give_pytorchs_values() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/torch_axis_activation_cases.npz");
    let cases = webtensor::io::load_npz(path, &Device::cpu()).unwrap();
    let get = |name: &str| {
        let t = cases.iter().find(|(n, _)| n == name);
        t.unwrap_or_else(|| panic!("{name}")).1.clone()
    };
    let names: Vec<&str> = cases
        .iter()
        .filter_map(|(n, _)| n.strip_suffix("_spec"))
        .collect();
    assert_eq!(names.len(), 41);
    for dev in devices() {
        for name in &names {
            let spec = get(&format!("{name}_spec")).to_vec::<f64>().unwrap();
            let dtype = match spec[0] as u32 {
                3 => DType::I32,
                code => dtype_of(f64::from(code)),
            };
            let (keep, params) = (spec[1] == 1.0, &spec[2..]);
            let x = get(&format!("{name}_x")).to_device(&dev).unwrap();
            let x = x.to_dtype(dtype).unwrap();
            let want = get(&format!("{name}_y"));
            let reversed = if x.rank() > 0 && x.numel() > 0 {
                let flipped = x.flip(&[-1]).unwrap().contiguous().unwrap();
                flipped.flip(&[-1]).unwrap()
            } else {
                x.clone()
            };
            for (layout, x) in [("contiguous", &x), ("reversed", &reversed)] {
                let axes: Vec<isize> = params.iter().map(|&a| a as isize).collect();
                let got = if name.starts_with("lse_") {
                    match keep {
                        true => x.logsumexp_keepdim(axes.as_slice()),
                        false => x.logsumexp(axes.as_slice()),
                    }
                } else if name.starts_with("softmin_") {
                    x.softmin(axes[0])
                } else if name.starts_with("glu_") {
                    x.glu(axes[0])
                } else {
                    let w = get(&format!("{name}_w")).to_device(&dev).unwrap();
                    x.prelu(&w.to_dtype(dtype).unwrap())
                };
                let what = format!("{name} {dtype} {layout} on {dev}");
                let got = got.unwrap_or_else(|e| panic!("{what}: {e}"));
                let out_dtype = if dtype == DType::I32 {
                    DType::F32
                } else {
                    dtype
                };
                assert_eq!(got.dtype(), out_dtype, "{what}");
                assert_eq!(got.dims(), want.dims(), "{what}");
                let (got, want) = (read_f32(&got), read_f32(&want));
                if name.starts_with("softmin_") && dtype == DType::F32 {
                    // Probabilities keep their digits however small (f16's
                    // are subnormal below 6e-5).
                    common::assert_relative(&got, &want, 2e-5, &what);
                } else {
                    assert_close(&got, &want, half_tol(dtype, 2e-3, 1e-5), &what);
                }
            }
        }
    }
}

/// The new activations refuse what PyTorch refuses, naming themselves.
#[test]
fn axis_activations_refuse_bad_input() {
    for dev in devices() {
        let x = Tensor::zeros([2, 3, 4], DType::F32, &dev).unwrap();
        let ints = Tensor::zeros([2, 4], DType::I32, &dev).unwrap();
        let w = |n: usize| Tensor::ones([n], DType::F32, &dev).unwrap();
        let cases: Vec<(&str, webtensor::Result<Tensor>)> = vec![
            ("glu", x.glu(1)),
            ("glu", x.glu(3)),
            (
                "glu",
                Tensor::full([], 1.0, DType::F32, &dev).unwrap().glu(0),
            ),
            ("glu", ints.glu(1)),
            ("prelu", x.prelu(&w(2))),
            ("prelu", x.prelu(&w(4))),
            (
                "prelu",
                x.prelu(&Tensor::ones([3, 1], DType::F32, &dev).unwrap()),
            ),
            ("prelu", x.narrow(1, 0, 1).unwrap().squeeze().prelu(&w(2))),
            (
                "prelu",
                x.prelu(&Tensor::ones([3], DType::I32, &dev).unwrap()),
            ),
            ("prelu", ints.prelu(&w(4))),
            ("softmin", ints.softmin(0)),
            ("softmin", x.softmin(3)),
            ("logsumexp", x.logsumexp(3)),
            ("logsumexp", x.logsumexp([0, 0])),
            (
                "logsumexp",
                Tensor::zeros([2], DType::C64, &dev).unwrap().logsumexp(0),
            ),
            ("celu", x.celu(0.0)),
            ("hardtanh", x.hardtanh(1.0, -1.0)),
            ("hardtanh", x.hardtanh(f64::NAN, 1.0)),
            ("softshrink", x.softshrink(-0.5)),
            (
                "threshold",
                x.to_dtype(DType::F16).unwrap().threshold(0.0, 70000.0),
            ),
            (
                "hardshrink",
                x.to_dtype(DType::F16).unwrap().hardshrink(65505.0),
            ),
        ];
        for (op, got) in cases {
            let e = got.expect_err(op);
            assert!(
                e.to_string().starts_with(&format!("{op}: ")),
                "{op} on {dev}: {e}"
            );
        }
        // What PyTorch takes: hardshrink of a negative lambda is the
        // identity; glu along an even axis of a view; logsumexp over no
        // axes is over all of them, and of nothing is -inf.
        let v = Tensor::from_slice(&[-1.0f32, 0.25, 3.0, -0.0], [4], &dev).unwrap();
        let same = v.hardshrink(-1.0).unwrap().to_vec::<f32>().unwrap();
        assert_eq!(same, vec![-1.0, 0.25, 3.0, -0.0]);
        let all = v.logsumexp(Vec::<isize>::new()).unwrap();
        let want = [-1.0f32, 0.25, 3.0, 0.0]
            .iter()
            .map(|v| v.exp())
            .sum::<f32>()
            .ln();
        assert!((all.item::<f32>().unwrap() - want).abs() < 1e-5, "{dev}");
        let none = Tensor::zeros([3, 0], DType::F16, &dev)
            .unwrap()
            .logsumexp(1)
            .unwrap();
        assert_eq!(none.dtype(), DType::F16);
        assert_eq!(read_f32(&none), vec![f32::NEG_INFINITY; 3]);
        // No lines: an empty result of the kept shape.
        let empty = Tensor::zeros([0, 5], DType::F32, &dev).unwrap();
        assert_eq!(empty.logsumexp(1).unwrap().dims(), &[0]);
        assert_eq!(empty.logsumexp_keepdim(1).unwrap().dims(), &[0, 1]);
        let scalar = Tensor::full([], 2.5, DType::F32, &dev).unwrap();
        let scalar = scalar.logsumexp(0).unwrap();
        assert_eq!((scalar.rank(), scalar.item::<f32>().unwrap()), (0, 2.5));
    }
}

/// A view of a tensor, as a test takes it.
type View = fn(&Tensor) -> Tensor;

/// A GPU's one-pass logsumexp (the softmax kernel writing `m + ln s` per
/// line) against the CPU's composed one, and its softmin (the softmax
/// kernel negating as it reads) against the CPU's: lines across its modes (a
/// subgroup per aligned line of whole quads up to its registers' reach,
/// a workgroup per line past it or for other lines), one element and
/// odd lengths, more lines than 65,535 workgroups, lines of -inf only and
/// with +inf and NaN; transposed, reversed, offset and stepped views; f32,
/// f16 (native and packed) and bf16.
#[test]
fn a_gpu_logsumexp_and_softmin_agree_with_the_cpu_across_their_kernel() {
    let cpu = Device::cpu();
    for dev in common::gpu().into_iter().chain(common::gpu_packed_f16()) {
        for (lines, length) in [
            (3usize, 1usize),
            (300, 4),
            (5, 36),
            (257, 256),
            (3, 260),
            (2, 1028),
            (4, 4097),
            (70_001, 3),
        ] {
            let mut v = noise(lines * length, 11);
            v.iter_mut().for_each(|x| *x *= 30.0);
            if lines > 3 {
                v[length..2 * length].fill(f32::NEG_INFINITY);
                v[2 * length] = f32::INFINITY;
                v[3 * length] = f32::NAN;
            }
            for dtype in [DType::F32, DType::F16, DType::BF16] {
                let make = |d: &Device| {
                    Tensor::from_vec(v.clone(), [lines, length], d)
                        .unwrap()
                        .to_dtype(dtype)
                        .unwrap()
                };
                let (g, c) = (make(&dev), make(&cpu));
                let views: [(&str, View, isize); 5] = [
                    ("rows", |t| t.clone(), 1),
                    ("columns", |t| t.transpose(0, 1).unwrap(), 0),
                    ("reversed", |t| t.flip(&[1]).unwrap(), 1),
                    ("offset", |t| t.narrow(1, 1, t.dims()[1] - 1).unwrap(), 1),
                    ("stepped", |t| t.slice(webtensor::s![.., ..;2]).unwrap(), 1),
                ];
                // The many lines in one layout and dtype: they cross the
                // grid's rows, not the kernel's modes.
                let many = lines > 65_535;
                for (what, view, axis) in views {
                    let (gv, cv) = (view(&g), view(&c));
                    if gv.numel() == 0 || many && (what != "rows" || dtype != DType::F32) {
                        continue;
                    }
                    let got = gv.logsumexp(axis).unwrap();
                    let want = cv.logsumexp(axis).unwrap();
                    assert_eq!(got.dtype(), dtype);
                    let what = format!("{lines}x{length} {what} {dtype} on {dev}");
                    // The exps sum in another order; f16 and bf16 round once.
                    let tol = half_tol(dtype, 2e-3, 2e-6);
                    assert_close(&read_f32(&got), &read_f32(&want), tol, &what);
                    let got = gv.softmin(axis).unwrap();
                    let want = cv.softmin(axis).unwrap();
                    let what = format!("softmin of {what}");
                    assert_close(&read_f32(&got), &read_f32(&want), tol, &what);
                }
            }
        }
    }
}
