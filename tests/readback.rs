//! The async edge: `to_vec_async`, `item_async`, `sync_async` and
//! `to_device_async` driven by a plain executor (not pollster), on every
//! device and every dtype the device stores.

mod common;

use common::devices;
use futures::executor::block_on;
use half::f16;
use webtensor::{DType, Device, Tensor, s};

#[test]
fn to_vec_async_reads_strided_views_of_every_dtype() {
    for dev in devices() {
        let base = Tensor::arange(0i32, 12, 1, &dev)
            .unwrap()
            .reshape([3, 4])
            .unwrap();
        // Column-reversed, row-stepped view: [[3, 2, 1, 0], [11, 10, 9, 8]].
        let view = base.slice(s![..;2, ..;-1]).unwrap();
        let want: Vec<i32> = vec![3, 2, 1, 0, 11, 10, 9, 8];
        assert_eq!(block_on(view.to_vec_async::<i32>()).unwrap(), want, "{dev}");

        let as_f32: Vec<f32> = want.iter().map(|&v| v as f32).collect();
        let cast = |d: DType| view.to_dtype(d).unwrap();
        assert_eq!(
            block_on(cast(DType::F32).to_vec_async::<f32>()).unwrap(),
            as_f32
        );
        let halves: Vec<f16> = as_f32.iter().map(|&v| f16::from_f32(v)).collect();
        assert_eq!(
            block_on(cast(DType::F16).to_vec_async::<f16>()).unwrap(),
            halves
        );
        let unsigned: Vec<u32> = want.iter().map(|&v| v as u32).collect();
        assert_eq!(
            block_on(cast(DType::U32).to_vec_async::<u32>()).unwrap(),
            unsigned
        );
        let bytes: Vec<u8> = want.iter().map(|&v| v as u8).collect();
        assert_eq!(
            block_on(cast(DType::U8).to_vec_async::<u8>()).unwrap(),
            bytes
        );
        let flags: Vec<bool> = want.iter().map(|&v| v != 0).collect();
        assert_eq!(
            block_on(cast(DType::Bool).to_vec_async::<bool>()).unwrap(),
            flags
        );

        // Asking for the wrong element type is an Err naming both dtypes.
        let err = block_on(view.to_vec_async::<f32>())
            .unwrap_err()
            .to_string();
        assert!(err.contains("i32") && err.contains("f32"), "{err}");
    }
}

#[test]
fn item_sync_and_device_moves_have_async_forms() {
    let cpu = Device::cpu();
    for dev in devices() {
        let t = Tensor::from_slice(&[1.5f32, -2.0, 4.0], [3], &dev).unwrap();
        t.mul_scalar_(2.0).unwrap();
        block_on(dev.sync_async()).unwrap();
        let last = t.slice(s![-1]).unwrap();
        assert_eq!(block_on(last.item_async::<f32>()).unwrap(), 8.0, "{dev}");
        assert!(
            block_on(t.item_async::<f32>()).is_err(),
            "item of 3 elements"
        );

        // There and back again through a strided view.
        let on_cpu = block_on(t.slice(s![..;-1]).unwrap().to_device_async(&cpu)).unwrap();
        assert_eq!(on_cpu.to_vec::<f32>().unwrap(), [8.0, -4.0, 3.0]);
        let back = block_on(on_cpu.to_device_async(&dev)).unwrap();
        assert_eq!(back.device(), &dev);
        assert_eq!(
            block_on(back.to_vec_async::<f32>()).unwrap(),
            [8.0, -4.0, 3.0]
        );
    }
}

#[test]
fn waits_that_poll_before_they_block_read_back_the_same() {
    // GpuOptions::spin_wait: none (block at once), a short poll that a
    // long chain outlasts, and a poll longer than any of these waits.
    for spin_us in [0, 5, 1_000_000] {
        let options = webtensor::GpuOptions {
            spin_wait: Some(std::time::Duration::from_micros(spin_us)),
            ..Default::default()
        };
        let Some(dev) = common::own_gpu(options) else {
            continue;
        };
        let x = Tensor::from_vec((0..4096).map(|i| i as f32).collect(), [4096], &dev).unwrap();
        let mut y = x.clone();
        for _ in 0..50 {
            y = y.mul_scalar(0.5).unwrap().add(&x).unwrap();
        }
        dev.sync().unwrap();
        let got = y.to_vec::<f32>().unwrap();
        let cpu = Device::cpu();
        let cx = x.to_device(&cpu).unwrap();
        let mut cy = cx.clone();
        for _ in 0..50 {
            cy = cy.mul_scalar(0.5).unwrap().add(&cx).unwrap();
        }
        assert_eq!(got, cy.to_vec::<f32>().unwrap(), "spin {spin_us} us");
        assert_eq!(
            y.slice(s![7..9]).unwrap().to_vec::<f32>().unwrap(),
            &got[7..9]
        );
    }
}
