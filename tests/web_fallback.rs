//! webtensor on wasm without WebGPU: run by wasm-bindgen-test in Node.js,
//! which has no `navigator.gpu`. Opening the GPU is an `Err`, the default
//! device falls back to the CPU with the reason in its info, and ops run
//! there (see README, "In the browser").
#![cfg(target_arch = "wasm32")]

use wasm_bindgen_test::wasm_bindgen_test;
use webtensor::{DType, Device, DeviceKind, Error, Tensor, s};

#[wasm_bindgen_test]
async fn no_webgpu_means_the_cpu_with_a_reason() {
    let e = Device::gpu_async().await.unwrap_err();
    assert!(matches!(e, Error::NoAdapter { .. }), "{e}");
    let dev = Device::default_async().await.expect("default device");
    let info = dev.info();
    assert_eq!(info.kind, DeviceKind::Cpu);
    let reason = info.fallback_reason.expect("a reason");
    assert!(reason.contains("WebGPU"), "{reason}");
}

#[wasm_bindgen_test]
async fn every_op_family_runs_on_the_fallback() {
    let dev = Device::default_async().await.unwrap();
    let a = Tensor::arange(0.0f32, 6.0, 1.0, &dev)
        .unwrap()
        .reshape([2, 3])
        .unwrap();
    let f = |t: Tensor| async move { t.to_vec_async::<f32>().await.unwrap() };
    assert_eq!(
        f(a.t().mul_scalar(2.0).unwrap()).await,
        [0., 6., 2., 8., 4., 10.]
    );
    a.slice(s![.., ..;2]).unwrap().fill_(-1.0).unwrap();
    assert_eq!(f(a.clone()).await, [-1., 1., -1., -1., 4., -1.]);
    assert_eq!(f(a.sum(1).unwrap()).await, [-1., 2.]);
    assert_eq!(f(a.matmul(&a.t()).unwrap()).await, [3., 6., 6., 18.]);
    assert_eq!(f(a.cumsum(0).unwrap()).await, [-1., 1., -1., -2., 5., -2.]);
    let i = Tensor::from_slice(&[1i32], [1], &dev).unwrap();
    assert_eq!(f(a.index_select(&i, 0).unwrap()).await, [-1., 4., -1.]);
    let h = a.to_dtype(DType::F16).unwrap().exp().unwrap();
    assert_eq!(h.dtype(), DType::F16);
    assert!(matches!(
        a.take(&Tensor::from_slice(&[9i32], [1], &dev).unwrap(), 1),
        Err(Error::Index {
            op: "take",
            index: 9,
            ..
        })
    ));
}
