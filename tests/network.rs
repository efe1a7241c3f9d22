//! A whole network gives onnxruntime's answer on every device: the
//! MobileNetV3 + DBNet detector of `benches/detector/` (stem, inverted
//! residual blocks with depthwise 3x3 and 5x5 and squeeze-excite, an FPN
//! with nearest upsampling, a transposed-convolution head) at 64x64 with
//! its seeded weights, against the map onnxruntime computed for the same
//! graph (tests/data/onnx_detector_64.npy, written by
//! make_detector_reference.py), also on two threads of the CPU device.

mod common;
#[path = "../benches/detector/mod.rs"]
mod detector;

use common::devices;
use webtensor::{DType, Device, Tensor};

fn onnxruntime_map() -> Vec<f32> {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/onnx_detector_64.npy");
    let t = webtensor::io::load_npy(path, &Device::cpu()).unwrap();
    assert_eq!(t.dims(), &[1, 1, 64, 64]);
    t.to_vec::<f32>().unwrap()
}

#[test]
fn the_detector_gives_onnxruntimes_map() {
    let want = onnxruntime_map();
    let mut devs = devices();
    devs.push(Device::cpu_with_threads(2).unwrap());
    for dev in devs {
        let net = detector::Detector::new(&dev).unwrap();
        let image = Tensor::rand([1, 3, 64, 64], DType::F32, 1000, &dev).unwrap();
        let got = net.forward(&image).unwrap().to_vec::<f32>().unwrap();
        assert_eq!(got.len(), want.len(), "{dev}");
        let worst = got
            .iter()
            .zip(&want)
            .map(|(g, w)| (g - w).abs())
            .fold(
                0.0f32,
                |m, d| if d.is_nan() { f32::INFINITY } else { m.max(d) },
            );
        // Sigmoid outputs in (0, 1) after 60 layers: f32 rounding noise.
        assert!(worst <= 1e-4, "{dev}: largest difference {worst:e}");
        let spread = want.iter().fold(0.0f32, |m, w| m.max((w - 0.5).abs()));
        assert!(spread > 0.05, "a map with nothing in it proves nothing");
    }
}
