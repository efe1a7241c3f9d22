//! `quantile` and `nanquantile` against PyTorch 2.15's values
//! (`tests/data/make_quantile_cases.py`) on every device: every
//! interpolation, one and several probabilities, one, several and every
//! axis, keepdim, NaN lines, ties, f64, f16 and integers; views; refusals.

mod common;

use common::{assert_op_err, devices, read_f32};
use std::collections::HashMap;
use webtensor::{DType, Device, Interpolation, Quantiles, Tensor, s};

const MODES: [Interpolation; 5] = [
    Interpolation::Linear,
    Interpolation::Lower,
    Interpolation::Higher,
    Interpolation::Nearest,
    Interpolation::Midpoint,
];

fn cases() -> HashMap<String, Tensor> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/quantile_cases.npz");
    webtensor::io::from_npz_bytes(&std::fs::read(path).unwrap(), &Device::cpu())
        .unwrap()
        .into_iter()
        .collect()
}

/// `got` equals `want` within an ulp or two (exactly where `exact`):
/// PyTorch's CPU blends with a fused multiply-add, which webtensor's CPU
/// rounds twice and a GPU's compiler may fuse or not; NaN where PyTorch
/// has NaN.
/// The blend's rounding is relative to the elements blended, up to
/// `scale`.
fn assert_matches(got: &[f32], want: &[f32], exact: bool, scale: f32, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}");
    for (k, (&g, &w)) in got.iter().zip(want).enumerate() {
        let ok = if w.is_nan() {
            g.is_nan()
        } else if exact {
            g == w
        } else {
            // An ulp of the largest element blended: enough for the two
            // roundings against one, not for a position off in f32.
            (g - w).abs() <= 1.2e-7 * scale
        };
        assert!(ok, "{what}: element {k} is {g}, PyTorch's {w}");
    }
}

#[test]
fn quantiles_match_pytorch_on_every_device() {
    let c = cases();
    let count = c.keys().filter(|k| k.ends_with("_want")).count();
    assert!(count >= 40);
    for dev in devices() {
        for k in 0..count {
            let get = |key: &str| &c[&format!("case{k}_{key}")];
            let x = match get("x").to_device(&dev) {
                Ok(x) => x,
                // Adapters without 64-bit floats (lavapipe) refuse f64.
                Err(webtensor::Error::UnsupportedDType {
                    dtype: DType::F64, ..
                }) => continue,
                Err(e) => panic!("{e}"),
            };
            let q_t = get("q");
            let q: Quantiles = if q_t.rank() == 0 {
                q_t.item::<f64>().unwrap().into()
            } else {
                q_t.to_vec::<f64>().unwrap().into()
            };
            let axes: Vec<isize> = get("axes")
                .to_vec::<i64>()
                .unwrap()
                .iter()
                .map(|&a| a as isize)
                .collect();
            let meta = get("meta").to_vec::<i64>().unwrap();
            let how = MODES[meta[0] as usize];
            let (keepdim, nan) = (meta[1] == 1, meta[2] == 1);
            let axes: webtensor::Axes = if axes.is_empty() {
                (..).into()
            } else {
                axes.into()
            };
            let got = match (nan, keepdim) {
                (false, false) => x.quantile(q.clone(), axes, how),
                (false, true) => x.quantile_keepdim(q.clone(), axes, how),
                (true, false) => x.nanquantile(q.clone(), axes, how),
                (true, true) => x.nanquantile_keepdim(q.clone(), axes, how),
            }
            .unwrap();
            let want = get("want");
            let scale = read_f32(get("x"))
                .iter()
                .filter(|v| !v.is_nan())
                .fold(0.0f32, |m, v| m.max(v.abs()));
            let what = format!("case {k} ({how:?}, {q:?}) of {:?} on {dev}", x.dims());
            assert_eq!(got.dims(), want.dims(), "{what}");
            let expected_dtype = match x.dtype() {
                DType::I32 => DType::F32,
                d => d,
            };
            assert_eq!(got.dtype(), expected_dtype, "{what}");
            // Lower, higher and nearest pick elements: exact everywhere.
            let exact = matches!(
                how,
                Interpolation::Lower | Interpolation::Higher | Interpolation::Nearest
            );
            if x.dtype() == DType::F16 && dev.is_gpu() {
                // An ulp of f32 may round to the next f16.
                let (g, w) = (read_f32(&got), read_f32(want));
                for (a, b) in g.iter().zip(&w) {
                    assert!((a - b).abs() <= 1e-3 * b.abs().max(1.0), "{what}");
                }
            } else {
                assert_matches(&read_f32(&got), &read_f32(want), exact, scale, &what);
            }
        }
    }
}

#[test]
fn quantiles_of_views_match_the_cpu() {
    // Transposed, reversed, stepped, offset and broadcast lines.
    let cpu = Device::cpu();
    let values: Vec<f32> = common::noise(12 * 30, 9);
    let base = Tensor::from_vec(values, [12, 30], &cpu).unwrap();
    let views = |t: &Tensor| {
        vec![
            t.t(),
            t.flip(&[0, 1]).unwrap(),
            t.slice(s![1..;3, 2..;2]).unwrap(),
            t.slice(s![4..5, ..])
                .unwrap()
                .broadcast_to([3, 30])
                .unwrap(),
        ]
    };
    let want: Vec<Vec<f32>> = views(&base)
        .iter()
        .map(|v| {
            read_f32(
                &v.quantile([0.1, 0.5, 0.95], -1, Interpolation::Linear)
                    .unwrap(),
            )
        })
        .collect();
    for dev in devices().iter().filter(|d| d.is_gpu()) {
        let on = base.to_device(dev).unwrap();
        for (k, v) in views(&on).iter().enumerate() {
            let got = v
                .quantile([0.1, 0.5, 0.95], -1, Interpolation::Linear)
                .unwrap();
            let what = format!("view {k} on {dev}");
            assert_matches(&read_f32(&got), &want[k], false, 2.0, &what);
        }
    }
}

#[test]
fn quantile_refuses_bad_probabilities_axes_and_dtypes() {
    for dev in devices() {
        let x = Tensor::from_slice(&[1.0f32, 2.0, 3.0, 4.0], [2, 2], &dev).unwrap();
        let lin = Interpolation::Linear;
        assert_op_err(x.quantile(1.5, 0, lin), "quantile");
        assert_op_err(x.quantile(-0.1, 0, lin), "quantile");
        assert_op_err(x.nanquantile(f64::NAN, 0, lin), "nanquantile");
        assert_op_err(x.quantile(Vec::<f64>::new(), 0, lin), "quantile");
        assert_op_err(x.quantile(0.5, 2, lin), "quantile");
        assert_op_err(x.quantile(0.5, [0, 0], lin), "quantile");
        let empty = Tensor::zeros([3, 0], DType::F32, &dev).unwrap();
        assert_op_err(empty.quantile(0.5, 1, lin), "quantile");
        // Lines of none along a kept axis are fine: no quantiles.
        assert_eq!(empty.quantile(0.5, 0, lin).unwrap().dims(), &[0]);
        // q = -0 is 0: each line's least number.
        let low = x.nanquantile(-0.0, 1, lin).unwrap();
        assert_eq!(read_f32(&low), vec![1.0, 3.0], "{dev}");
        let b = x.gt_scalar(2.0).unwrap();
        assert_op_err(b.quantile(0.5, 0, lin), "quantile");
        let z = Tensor::complex(&x, &x).unwrap();
        assert_op_err(z.quantile(0.5, 0, lin), "quantile");
    }
}
