//! webtensor inside an application's GPU (lavapipe here; the browser suite
//! has its own): a device on the application's own wgpu device and queue,
//! tensors handed out as wgpu buffers (strided views, packed f16, held
//! buffers never reused), the application's buffers wrapped as tensors and
//! written in place, the ordering of the application's submissions and
//! webtensor's, and bad input as errors naming the op.

mod common;

use webtensor::{DType, Device, Error, GpuOptions, Tensor, f16, s, wgpu};

/// The application's one wgpu instance (Vulkan, Metal or DX12: an
/// application drawing with GL would not share its context across the
/// test threads).
fn app_instance() -> wgpu::Instance {
    static INSTANCE: std::sync::OnceLock<wgpu::Instance> = std::sync::OnceLock::new();
    INSTANCE
        .get_or_init(|| {
            wgpu::Instance::new(wgpu::InstanceDescriptor {
                backends: wgpu::Backends::PRIMARY,
                ..wgpu::InstanceDescriptor::new_without_display_handle()
            })
        })
        .clone()
}

/// A wgpu device and queue opened the way an application opens its own
/// (no SHADER_F16 asked for, default limits), with its adapter's info.
fn app_device() -> Option<(wgpu::AdapterInfo, wgpu::Device, wgpu::Queue)> {
    common::gpu()?;
    // webtensor opened a GPU: the application's must open too (a silent
    // skip here skipped seven tests).
    let instance = app_instance();
    let adapter =
        pollster::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions::default()))
            .expect("webtensor has a GPU; the application's adapter");
    let (device, queue) =
        pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor::default()))
            .expect("the application's device");
    Some((adapter.get_info(), device, queue))
}

/// The application's way to read a buffer: copy to a staging buffer,
/// submit, map.
fn app_read(device: &wgpu::Device, queue: &wgpu::Queue, buffer: &wgpu::Buffer) -> Vec<u8> {
    let staging = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("app staging"),
        size: buffer.size(),
        usage: wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::MAP_READ,
        mapped_at_creation: false,
    });
    let mut encoder = device.create_command_encoder(&Default::default());
    encoder.copy_buffer_to_buffer(buffer, 0, &staging, 0, buffer.size());
    queue.submit([encoder.finish()]);
    staging
        .slice(..)
        .map_async(wgpu::MapMode::Read, |r| r.unwrap());
    device.poll(wgpu::PollType::wait_indefinitely()).unwrap();
    let bytes = staging.slice(..).get_mapped_range().unwrap().to_vec();
    staging.unmap();
    bytes
}

fn f32s(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

fn app_buffer(device: &wgpu::Device, queue: &wgpu::Queue, values: &[f32]) -> wgpu::Buffer {
    let buffer = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("app data"),
        size: (values.len() * 4) as u64,
        usage: wgpu::BufferUsages::STORAGE
            | wgpu::BufferUsages::COPY_SRC
            | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    queue.write_buffer(&buffer, 0, &bytes);
    queue.submit([]);
    buffer
}

#[test]
fn a_device_on_the_applications_own_wgpu_device() {
    let Some((info, device, queue)) = app_device() else {
        return;
    };
    let dev = Device::from_wgpu(&info, device.clone(), queue.clone(), GpuOptions::default())
        .expect("a device on the application's wgpu device");
    assert!(dev.is_gpu());
    assert_eq!(dev.info().name, info.name);
    // The application asked for no SHADER_F16: f16 is packed.
    assert!(!dev.info().native_f16);
    let cpu = Device::cpu();
    let a = Tensor::rand([33, 20], DType::F32, 1, &cpu).unwrap();
    let want = a
        .matmul(&a.t())
        .unwrap()
        .softmax(-1)
        .unwrap()
        .to_vec::<f32>()
        .unwrap();
    let got = a.to_device(&dev).unwrap();
    let got = got
        .matmul(&got.t())
        .unwrap()
        .softmax(-1)
        .unwrap()
        .to_vec::<f32>()
        .unwrap();
    common::assert_close(&got, &want, 1e-5, "matmul + softmax on the app's device");
    let h = a.to_dtype(DType::F16).unwrap();
    assert_eq!(
        h.to_device(&dev)
            .unwrap()
            .t()
            .add_scalar(1.0)
            .unwrap()
            .to_vec::<f16>()
            .unwrap(),
        h.t().add_scalar(1.0).unwrap().to_vec::<f16>().unwrap()
    );
    let (d2, _) = dev.wgpu().unwrap();
    assert_eq!(d2, device);
}

#[test]
fn application_buffers_become_tensors_both_ways() {
    let Some((info, device, queue)) = app_device() else {
        return;
    };
    let dev = Device::from_wgpu(&info, device.clone(), queue.clone(), GpuOptions::default())
        .expect("a device on the application's wgpu device");
    // The application writes, webtensor reads.
    let values: Vec<f32> = (0..24).map(|k| k as f32).collect();
    let buffer = app_buffer(&device, &queue, &values);
    let before = dev.stats().submits;
    let t = Tensor::from_gpu_buffer(&buffer, DType::F32, [4, 6], 0, &dev).unwrap();
    // Its check of the buffer is a submit of webtensor's, counted.
    assert_eq!(dev.stats().submits, before + 1);
    assert_eq!(
        t.t().mul_scalar(2.0).unwrap().to_vec::<f32>().unwrap()[..4],
        [0.0, 12.0, 24.0, 36.0]
    );
    // webtensor writes in place (through a view), the application reads
    // after a flush.
    t.slice(s![.., ..;-2]).unwrap().add_scalar_(100.0).unwrap();
    dev.flush().unwrap();
    let seen = f32s(&app_read(&device, &queue, &buffer));
    let want: Vec<f32> = (0..24)
        .map(|k| {
            if k % 2 == 1 {
                k as f32 + 100.0
            } else {
                k as f32
            }
        })
        .collect();
    assert_eq!(seen, want);
    // The application writes again; ops recorded after see the new data.
    queue.write_buffer(&buffer, 0, &[0u8; 96]);
    assert_eq!(t.sum(..).unwrap().item::<f32>().unwrap(), 0.0);
    // An offset into the buffer, and a tensor that outlives nothing: the
    // buffer is the application's, never pooled.
    let tail = Tensor::from_gpu_buffer(&buffer, DType::F32, [2], 88, &dev).unwrap();
    tail.fill_(7.0).unwrap();
    drop(tail);
    drop(t);
    let fresh = Tensor::zeros([24], DType::F32, &dev).unwrap();
    fresh.fill_(-1.0).unwrap();
    dev.flush().unwrap();
    let seen = f32s(&app_read(&device, &queue, &buffer));
    assert_eq!(&seen[20..], [0.0, 0.0, 7.0, 7.0]);
}

#[test]
fn tensors_hand_out_their_buffers() {
    let Some(dev) = common::own_batching_gpu() else {
        return;
    };
    let packed = common::gpu_packed_f16().unwrap();
    let (device, queue) = dev.wgpu().unwrap();
    let base = Tensor::arange(0.0f32, 12.0, 1.0, &dev)
        .unwrap()
        .reshape([3, 4])
        .unwrap();
    let view = base
        .slice(s![..;-1, 1..;2])
        .unwrap()
        .mul_scalar(1.0)
        .unwrap()
        .t();
    let out = view.gpu_buffer().unwrap();
    assert_eq!(
        (out.shape.clone(), out.dtype, out.element_bytes),
        (vec![2, 3], DType::F32, 4)
    );
    let bytes = app_read(&device, &queue, &out.buffer);
    let at = |i: usize, j: usize| {
        let p = out.byte_offset as isize
            + (i as isize * out.strides[0] + j as isize * out.strides[1]) * 4;
        f32::from_le_bytes(bytes[p as usize..p as usize + 4].try_into().unwrap())
    };
    let want = view.to_vec::<f32>().unwrap();
    for i in 0..2 {
        for j in 0..3 {
            assert_eq!(at(i, j), want[i * 3 + j]);
        }
    }
    // A held buffer is not reused after its tensor is gone.
    let before: Vec<u8> = bytes.clone();
    drop(view);
    let others: Vec<Tensor> = (0..8)
        .map(|_| Tensor::full([2, 3], 9.0, DType::F32, &dev).unwrap())
        .collect();
    dev.sync().unwrap();
    assert_eq!(app_read(&device, &queue, &out.buffer), before);
    drop(others);
    // Wrapped back, the buffer is its tensor's 6 elements, whatever its
    // size (a shape past them read the pool's stale bytes).
    assert!(out.buffer.size() > 24);
    let again = Tensor::from_gpu_buffer(&out.buffer, DType::F32, [6], 0, &dev).unwrap();
    assert_eq!(again.to_vec::<f32>().unwrap().len(), 6);
    for (shape, offset) in [([7], 0), ([6], 4)] {
        let e = Tensor::from_gpu_buffer(&out.buffer, DType::F32, shape, offset, &dev).unwrap_err();
        assert!(e.to_string().contains("the 6 of the tensor"), "{e}");
    }
    drop(again);
    // A strided view exports its own layout; contiguous_gpu_buffer copies.
    let strided = base.slice(s![1.., ..;-3]).unwrap().gpu_buffer().unwrap();
    assert_eq!(
        (strided.strides.clone(), strided.byte_offset),
        (vec![4, -3], 7 * 4)
    );
    let dense = base.t().contiguous_gpu_buffer().unwrap();
    assert_eq!(dense.strides, [3, 1]);
    // f16, packed: two bytes per element either way.
    let (pdev, pqueue) = packed.wgpu().unwrap();
    let h = Tensor::from_slice(
        &[f16::from_f32(1.5), f16::from_f32(-2.0), f16::from_f32(0.25)],
        [3],
        &packed,
    )
    .unwrap();
    let hb = h.gpu_buffer().unwrap();
    assert_eq!((hb.element_bytes, hb.wgsl_array), (2, "array<u32>"));
    let raw = app_read(&pdev, &pqueue, &hb.buffer);
    let halves: Vec<f32> = raw[..6]
        .chunks_exact(2)
        .map(|c| f16::from_le_bytes([c[0], c[1]]).to_f32())
        .collect();
    assert_eq!(halves, [1.5, -2.0, 0.25]);
    // Imported packed f16 reads back the same.
    let again = Tensor::from_gpu_buffer(&hb.buffer, DType::F16, [3], 0, &packed).unwrap();
    assert_eq!(again.to_vec::<f16>().unwrap(), h.to_vec::<f16>().unwrap());
}

#[test]
fn bad_buffers_are_errors_naming_the_op() {
    let Some((info, device, queue)) = app_device() else {
        return;
    };
    let dev = Device::from_wgpu(&info, device.clone(), queue.clone(), GpuOptions::default())
        .expect("a device on the application's wgpu device");
    let buffer = app_buffer(&device, &queue, &[0.0; 8]);
    let err = |r: webtensor::Result<Tensor>| r.unwrap_err().to_string();
    let e = err(Tensor::from_gpu_buffer(&buffer, DType::F32, [9], 0, &dev));
    assert!(
        e.contains("from_gpu_buffer") && e.contains("32 bytes"),
        "{e}"
    );
    let e = err(Tensor::from_gpu_buffer(&buffer, DType::F32, [2], 6, &dev));
    assert!(e.contains("offset 6"), "{e}");
    let e = err(Tensor::from_gpu_buffer(&buffer, DType::F64, [2], 0, &dev));
    assert!(e.contains("from_gpu_buffer") && e.contains("f64"), "{e}");
    let e = err(Tensor::from_gpu_buffer(
        &buffer,
        DType::F32,
        [2],
        0,
        &Device::cpu(),
    ));
    assert!(e.contains("CPU"), "{e}");
    let uniform = device.create_buffer(&wgpu::BufferDescriptor {
        label: None,
        size: 16,
        usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    });
    let e = err(Tensor::from_gpu_buffer(&uniform, DType::F32, [2], 0, &dev));
    assert!(e.contains("STORAGE"), "{e}");
    // A buffer of no bytes: said so (its probe's binding of zero bytes
    // was reported as a buffer of another device, or mapped).
    let empty = device.create_buffer(&wgpu::BufferDescriptor {
        label: None,
        size: 0,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    });
    let e = err(Tensor::from_gpu_buffer(&empty, DType::F32, [0], 0, &dev));
    assert!(
        e.contains("from_gpu_buffer") && e.contains("0 bytes"),
        "{e}"
    );
    // A buffer of another wgpu device of the same instance.
    let (info2, device2, queue2) = app_device().unwrap();
    let other = Device::from_wgpu(&info2, device2, queue2, GpuOptions::default())
        .expect("a device on the application's wgpu device");
    let e = err(Tensor::from_gpu_buffer(&buffer, DType::F32, [2], 0, &other));
    assert!(
        e.contains("from_gpu_buffer") && e.contains("cannot be bound"),
        "{e}"
    );
    // Two devices webtensor opened share one instance: a buffer of one is
    // refused by the other.
    let (a, b) = (
        common::own_gpu(GpuOptions::default()).unwrap(),
        common::own_gpu(GpuOptions::default()).unwrap(),
    );
    let exported = Tensor::zeros([4], DType::F32, &a)
        .unwrap()
        .gpu_buffer()
        .unwrap();
    let e = err(Tensor::from_gpu_buffer(
        &exported.buffer,
        DType::F32,
        [4],
        0,
        &b,
    ));
    assert!(e.contains("cannot be bound"), "{e}");
    assert!(Tensor::from_gpu_buffer(&exported.buffer, DType::F32, [4], 0, &a).is_ok());
    let cpu_tensor = Tensor::zeros([2], DType::F32, &Device::cpu()).unwrap();
    assert!(
        cpu_tensor
            .gpu_buffer()
            .unwrap_err()
            .to_string()
            .contains("gpu_buffer")
    );
    // The device still works after the refusals.
    assert_eq!(
        Tensor::from_gpu_buffer(&buffer, DType::F32, [8], 0, &dev)
            .unwrap()
            .sum(..)
            .unwrap()
            .item::<f32>()
            .unwrap(),
        0.0
    );
}

/// Reads the top-left `w x h` pixels of an Rgba8/Bgra8 texture as the
/// application would (texture to buffer, rows padded to 256 bytes).
fn app_pixels(
    device: &wgpu::Device,
    queue: &wgpu::Queue,
    texture: &wgpu::Texture,
    w: u32,
    h: u32,
) -> Vec<[u8; 4]> {
    let pitch = (w * 4).next_multiple_of(256);
    let buffer = device.create_buffer(&wgpu::BufferDescriptor {
        label: None,
        size: (pitch * h) as u64,
        usage: wgpu::BufferUsages::COPY_DST
            | wgpu::BufferUsages::COPY_SRC
            | wgpu::BufferUsages::STORAGE,
        mapped_at_creation: false,
    });
    let mut encoder = device.create_command_encoder(&Default::default());
    encoder.copy_texture_to_buffer(
        texture.as_image_copy(),
        wgpu::TexelCopyBufferInfo {
            buffer: &buffer,
            layout: wgpu::TexelCopyBufferLayout {
                offset: 0,
                bytes_per_row: Some(pitch),
                rows_per_image: Some(h),
            },
        },
        wgpu::Extent3d {
            width: w,
            height: h,
            depth_or_array_layers: 1,
        },
    );
    queue.submit([encoder.finish()]);
    let bytes = app_read(device, queue, &buffer);
    (0..h as usize)
        .flat_map(|r| {
            let row = &bytes[r * pitch as usize..];
            (0..w as usize).map(move |c| row[4 * c..4 * c + 4].try_into().unwrap())
        })
        .collect()
}

fn texture(device: &wgpu::Device, format: wgpu::TextureFormat, w: u32, h: u32) -> wgpu::Texture {
    device.create_texture(&wgpu::TextureDescriptor {
        label: Some("app texture"),
        size: wgpu::Extent3d {
            width: w,
            height: h,
            depth_or_array_layers: 1,
        },
        mip_level_count: 1,
        sample_count: 1,
        dimension: wgpu::TextureDimension::D2,
        format,
        usage: wgpu::TextureUsages::COPY_DST
            | wgpu::TextureUsages::COPY_SRC
            | wgpu::TextureUsages::TEXTURE_BINDING,
        view_formats: &[],
    })
}

#[test]
fn tensors_draw_into_the_applications_textures() {
    use webtensor::ColorMap;
    let Some((info, device, queue)) = app_device() else {
        return;
    };
    let dev = Device::from_wgpu(&info, device.clone(), queue.clone(), GpuOptions::default())
        .expect("a device on the application's wgpu device");
    let (w, h) = (70u32, 5u32);
    // A transposed view: values -1 .. 2 and a NaN.
    let base = Tensor::linspace(-1.0, 2.0, (w * h) as usize, DType::F32, &dev)
        .unwrap()
        .reshape([w as usize, h as usize])
        .unwrap();
    base.slice(s![3, 1]).unwrap().fill_(f32::NAN).unwrap();
    let x = base.t();
    let host = x.to_vec::<f32>().unwrap();
    let tex = texture(&device, wgpu::TextureFormat::Rgba8Unorm, 80, 8);
    x.write_to_texture(&tex, ColorMap::Gray { min: 0.0, max: 1.0 })
        .unwrap();
    let px = app_pixels(&device, &queue, &tex, w, h);
    let level = |v: f32| {
        if v.is_nan() {
            0
        } else {
            (v.clamp(0.0, 1.0) * 255.0).round() as u8
        }
    };
    for (k, p) in px.iter().enumerate() {
        let g = level(host[k]);
        assert_eq!(*p, [g, g, g, 255], "pixel {k} of value {}", host[k]);
    }
    // Heat into a Bgra8 texture: the bytes come out b, g, r, a.
    let bgra = texture(&device, wgpu::TextureFormat::Bgra8Unorm, w, h);
    x.write_to_texture(
        &bgra,
        ColorMap::Heat {
            min: -1.0,
            max: 2.0,
        },
    )
    .unwrap();
    let px = app_pixels(&device, &queue, &bgra, w, h);
    for (k, p) in px.iter().enumerate() {
        let t = if host[k].is_nan() {
            0.0
        } else {
            ((host[k] + 1.0) / 3.0).clamp(0.0, 1.0) * 3.0
        };
        let c = |v: f32| (v.clamp(0.0, 1.0) * 255.0).round() as u8;
        let want = [c(t - 2.0), c(t - 1.0), c(t), 255];
        for (ch, (&got, &want)) in p.iter().zip(&want).enumerate() {
            assert!(
                got.abs_diff(want) <= 1,
                "pixel {k} channel {ch}: {got} vs {want}"
            );
        }
    }
    // RGBA u8, RGB f32.
    let rgba = Tensor::from_slice(&[10u8, 20, 30, 40, 250, 0, 1, 255], [1, 2, 4], &dev).unwrap();
    rgba.write_to_texture(&tex, ColorMap::Rgba).unwrap();
    assert_eq!(
        app_pixels(&device, &queue, &tex, 2, 1),
        [[10, 20, 30, 40], [250, 0, 1, 255]]
    );
    let rgb = Tensor::from_slice(&[0.0f32, 0.5, 1.0], [1, 1, 3], &dev).unwrap();
    rgb.write_to_texture(&tex, ColorMap::Rgba).unwrap();
    assert_eq!(
        app_pixels(&device, &queue, &tex, 1, 1),
        [[0, 128, 255, 255]]
    );
    // Bad input.
    let e = |r: webtensor::Result<()>| r.unwrap_err().to_string();
    let small = texture(&device, wgpu::TextureFormat::Rgba8Unorm, 4, 4);
    assert!(e(x.write_to_texture(&small, ColorMap::Rgba)).contains("write_to_texture"));
    assert!(
        e(x.write_to_texture(&small, ColorMap::Gray { min: 0.0, max: 1.0 }))
            .contains("does not fit")
    );
    let float_tex = texture(&device, wgpu::TextureFormat::R32Float, 80, 8);
    assert!(
        e(x.write_to_texture(&float_tex, ColorMap::Gray { min: 0.0, max: 1.0 }))
            .contains("R32Float")
    );
    let cpu = x.to_device(&Device::cpu()).unwrap();
    assert!(e(cpu.write_to_texture(&tex, ColorMap::Gray { min: 0.0, max: 1.0 })).contains("CPU"));
    // A texture of another device of the same instance.
    let (info2, device2, queue2) = app_device().unwrap();
    let other = Device::from_wgpu(&info2, device2, queue2, GpuOptions::default())
        .expect("a device on the application's wgpu device");
    let far = Tensor::zeros([2, 2], DType::F32, &other).unwrap();
    let err = e(far.write_to_texture(&tex, ColorMap::Gray { min: 0.0, max: 1.0 }));
    assert!(
        err.contains("write_to_texture") && err.contains("failed"),
        "{err}"
    );
    // The device still draws.
    x.write_to_texture(&tex, ColorMap::Gray { min: 0.0, max: 1.0 })
        .unwrap();
}

/// Issue 26: a batch that fails (here: it reads an application buffer
/// destroyed before the flush) poisons every tensor it was to write, on
/// webtensor's own device and on the application's; other tensors and
/// later work go on.
#[test]
fn a_failed_batch_poisons_what_it_was_to_write() {
    let Some((info, device, queue)) = app_device() else {
        return;
    };
    // Batches of many ops, whatever the environment says: the ops below
    // are recorded before the buffer goes, and flushed after.
    let batching = GpuOptions {
        flush_threshold: Some(1024),
        ..Default::default()
    };
    let own = common::own_gpu(batching.clone()).unwrap();
    let on_app = Device::from_wgpu(&info, device.clone(), queue.clone(), batching)
        .expect("a device on the application's wgpu device");
    for dev in [own, on_app] {
        let (device, queue) = dev.wgpu().unwrap();
        let before = Tensor::full([4], 3.0, DType::F32, &dev).unwrap();
        before.to_vec::<f32>().unwrap();
        let buffer = app_buffer(&device, &queue, &[1.0, 2.0, 3.0, 4.0]);
        let w = Tensor::from_gpu_buffer(&buffer, DType::F32, [4], 0, &dev).unwrap();
        let y = (&w + 1.0).exp().unwrap();
        let u = before.mul_scalar(2.0).unwrap();
        buffer.destroy();
        let first = y.to_vec::<f32>().unwrap_err().to_string();
        for again in 0..2 {
            let e = y.to_vec::<f32>().unwrap_err().to_string();
            assert!(e.contains("failed"), "{dev} read {again}: {e}");
        }
        // Written by the same batch: poisoned too, with the same failure.
        let e = u.to_vec::<f32>().unwrap_err().to_string();
        assert!(e.contains("failed"), "{dev}: {e}");
        // A read on another op's behalf names that op.
        let e = u.checkpoint().unwrap_err().to_string();
        assert!(e.contains("checkpoint"), "{dev}: {e}");
        assert!(
            y.mul_scalar(2.0).is_err(),
            "{dev}: an op reading a poisoned tensor"
        );
        assert!(
            y.sum(..).is_err(),
            "{dev}: a reduction of a poisoned tensor"
        );
        assert!(!first.is_empty());
        // What the batch did not write, and new work, are fine.
        assert_eq!(before.to_vec::<f32>().unwrap(), [3.0; 4], "{dev}");
        let fresh = (&before + 1.0).to_vec::<f32>().unwrap();
        assert_eq!(fresh, [4.0; 4], "{dev}");
    }
}

/// An index fault flushed before a readback whose batch fails is not lost
/// with it: the failed submit never copied the fault record, so the next
/// readback reports it (it read back the gather's garbage as `Ok`).
#[test]
fn an_index_fault_outlives_a_failed_readback() {
    let Some(dev) = common::own_gpu(GpuOptions {
        flush_threshold: Some(1024),
        ..Default::default()
    }) else {
        return;
    };
    let (device, queue) = dev.wgpu().unwrap();
    let x = Tensor::arange(0.0f32, 4.0, 1.0, &dev).unwrap();
    let idx = Tensor::from_slice(&[7i32], [1], &dev).unwrap();
    let g = x.index_select(&idx, 0).unwrap();
    dev.flush().unwrap();
    let buffer = app_buffer(&device, &queue, &[1.0; 4]);
    let y = Tensor::from_gpu_buffer(&buffer, DType::F32, [4], 0, &dev)
        .unwrap()
        .add_scalar(1.0)
        .unwrap();
    buffer.destroy();
    assert!(y.to_vec::<f32>().is_err());
    match g.to_vec::<f32>() {
        Err(webtensor::Error::Index {
            index: 7, size: 4, ..
        }) => {}
        other => panic!("{other:?}"),
    }
}

/// Issue 26: two tensors over one wgpu buffer are one storage to the
/// overlap rules, whichever handles wrap it.
#[test]
fn one_buffer_wrapped_twice_is_one_storage() {
    let Some(dev) = common::gpu() else {
        return;
    };
    let t = Tensor::arange(0.0f32, 6.0, 1.0, &dev).unwrap();
    let gb = t.gpu_buffer().unwrap();
    let w = Tensor::from_gpu_buffer(&gb.buffer, DType::F32, [6], 0, &dev).unwrap();
    assert!(w.shares_storage(&t));
    // NumPy: t += t_alias[::-1] reads the alias before any write.
    t.add_(&w.flip(&[0]).unwrap()).unwrap();
    assert_eq!(t.to_vec::<f32>().unwrap(), [5.0; 6]);
    drop(gb);
    let (device, queue) = dev.wgpu().unwrap();
    let buffer = app_buffer(&device, &queue, &[1.0, 2.0, 3.0, 4.0]);
    let a = Tensor::from_gpu_buffer(&buffer, DType::F32, [4], 0, &dev).unwrap();
    let b = Tensor::from_gpu_buffer(&buffer, DType::F32, [4], 0, &dev).unwrap();
    assert!(a.shares_storage(&b));
    a.add_(&b.flip(&[0]).unwrap()).unwrap();
    assert_eq!(a.to_vec::<f32>().unwrap(), [5.0; 4]);
    assert!(Tensor::from_gpu_buffer(&buffer, DType::I32, [4], 0, &dev).is_err());
}

/// Threads wrapping one buffer at once get one storage: a wrap looked the
/// buffer up, then checked its device (a submit, milliseconds), then
/// registered its storage only if none had come meanwhile, returning its
/// own either way: two storages of one buffer, whose in-place ops then
/// bound it twice in a dispatch.
#[test]
fn threads_wrapping_one_buffer_at_once_get_one_storage() {
    let Some(dev) = common::gpu() else {
        return;
    };
    let (device, queue) = dev.wgpu().unwrap();
    for _ in 0..4 {
        let buffer = app_buffer(&device, &queue, &[1.0, 2.0, 3.0, 4.0]);
        let start = std::sync::Barrier::new(6);
        let wrapped: Vec<Tensor> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..6)
                .map(|_| {
                    s.spawn(|| {
                        start.wait();
                        Tensor::from_gpu_buffer(&buffer, DType::F32, [4], 0, &dev).unwrap()
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for w in &wrapped[1..] {
            assert!(w.shares_storage(&wrapped[0]));
        }
        let (a, b) = (&wrapped[0], &wrapped[5]);
        a.add_(&b.flip(&[0]).unwrap()).unwrap();
        assert_eq!(a.to_vec::<f32>().unwrap(), [5.0; 4]);
    }
}

/// Issue 26: a buffer of another wgpu instance has an id that may be one
/// of webtensor's own buffers: refused, never read.
#[test]
fn buffers_of_another_instance_are_refused() {
    if common::gpu().is_none() {
        return;
    }
    let open = || {
        let instance = wgpu::Instance::new(wgpu::InstanceDescriptor {
            backends: wgpu::Backends::PRIMARY,
            ..wgpu::InstanceDescriptor::new_without_display_handle()
        });
        let adapter = pollster::block_on(instance.request_adapter(&Default::default())).unwrap();
        let info = adapter.get_info();
        let (device, queue) =
            pollster::block_on(adapter.request_device(&Default::default())).unwrap();
        (instance, info, device, queue)
    };
    let (_ours, info, device, queue) = open();
    let dev = Device::from_wgpu(&info, device, queue, GpuOptions::default())
        .expect("a device on the application's wgpu device");
    let secret = Tensor::full([64], 4200.0, DType::F32, &dev).unwrap();
    secret.to_vec::<f32>().unwrap();
    let (_theirs, _, device, queue) = open();
    for k in 0..4 {
        let buffer = app_buffer(&device, &queue, &[k as f32; 64]);
        match Tensor::from_gpu_buffer(&buffer, DType::F32, [64], 0, &dev) {
            Err(_) => {}
            Ok(t) => panic!(
                "buffer {k} of another instance wrapped: {:?}",
                t.to_vec::<f32>()
            ),
        }
    }
    // The device goes on.
    assert_eq!((&secret + 1.0).to_vec::<f32>().unwrap(), [4201.0; 64]);
}

/// A tensor as large as the device's largest buffer reads back, with an
/// index fault pending beside it: the readback's staging buffer once asked
/// for the fault record's 32 bytes more than the device allows.
#[test]
fn a_tensor_of_the_largest_buffer_reads_back() {
    const LARGEST: u64 = 1 << 20;
    let Some(_) = common::gpu() else { return };
    let adapter =
        pollster::block_on(app_instance().request_adapter(&wgpu::RequestAdapterOptions::default()))
            .unwrap();
    let limits = wgpu::Limits {
        max_buffer_size: LARGEST,
        max_storage_buffer_binding_size: LARGEST,
        ..wgpu::Limits::default()
    };
    let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
        required_limits: limits,
        ..Default::default()
    }))
    .unwrap();
    let dev = Device::from_wgpu(&adapter.get_info(), device, queue, GpuOptions::default())
        .expect("a device on the application's wgpu device");
    let n = LARGEST as usize / 4;
    let values: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let x = Tensor::from_slice(&values, [n], &dev).unwrap();
    let y = x.add_scalar(1.0).unwrap();
    let want: Vec<f32> = values.iter().map(|v| v + 1.0).collect();
    assert_eq!(y.to_vec::<f32>().unwrap(), want);
    // A fault recorded before the read is reported by it, then cleared.
    let bad = Tensor::from_slice(&[n as i32 + 5], [1], &dev).unwrap();
    let _ = x.take(&bad, 0).unwrap();
    let z = x.mul_scalar(2.0).unwrap();
    assert!(matches!(
        z.to_vec::<f32>(),
        Err(webtensor::Error::Index { index, .. }) if index == n as isize + 5
    ));
    let want: Vec<f32> = values.iter().map(|v| v * 2.0).collect();
    assert_eq!(z.to_vec::<f32>().unwrap(), want);
}

/// A binding cap that is not whole words is rounded down to them (wrapping
/// a buffer past it bound a window of 1001 bytes, which wgpu refuses).
#[test]
fn a_binding_cap_of_odd_bytes_wraps_buffers() {
    let Some((info, device, queue)) = app_device() else {
        return;
    };
    let options = GpuOptions {
        max_binding_bytes: Some(1001),
        ..GpuOptions::default()
    };
    let dev = Device::from_wgpu(&info, device.clone(), queue.clone(), options)
        .expect("a device on the application's wgpu device");
    let values: Vec<f32> = (0..600).map(|k| k as f32).collect();
    let buffer = app_buffer(&device, &queue, &values);
    let t = Tensor::from_gpu_buffer(&buffer, DType::F32, [600], 0, &dev).unwrap();
    let want: Vec<f32> = values.iter().map(|v| v * 2.0).collect();
    assert_eq!(t.mul_scalar(2.0).unwrap().to_vec::<f32>().unwrap(), want);
}

/// A profiled batch that fails at its submit (an application's buffer
/// destroyed under it) shows its ops without kernels: the profile once
/// read the failed batch's timestamps for kernels it had dropped (an index
/// past the list).
#[test]
fn a_profile_of_a_failed_batch_shows_no_kernels() {
    // A device of webtensor's own: it writes timestamps where it can.
    let Some(dev) = common::own_gpu(GpuOptions::default()) else {
        return;
    };
    let (device, queue) = dev.wgpu().unwrap();
    let buffer = app_buffer(&device, &queue, &[1.0, 2.0, 3.0, 4.0]);
    let t = Tensor::from_gpu_buffer(&buffer, DType::F32, [4], 0, &dev).unwrap();
    buffer.destroy();
    // The failure comes from the flush, or from the op itself where each
    // op submits (`WEBTENSOR_FLUSH_THRESHOLD=1`).
    let profile = dev.profile(|| {
        let _ = t.add_scalar_(1.0);
        let _ = dev.flush();
        Ok(())
    });
    let profile = profile.unwrap();
    assert!(
        profile.kernels().iter().all(|k| k.gpu.is_none()),
        "{profile}"
    );
    // The device goes on.
    let x = Tensor::full([4], 2.0, DType::F32, &dev).unwrap();
    assert_eq!(
        x.mul_scalar(2.0).unwrap().to_vec::<f32>().unwrap(),
        [4.0; 4]
    );
}

/// A texture of another wgpu instance is refused with an error naming the
/// op: wgpu-core panicked looking up its id in webtensor's instance.
#[test]
fn textures_of_another_instance_are_refused() {
    use webtensor::ColorMap;
    let Some(gpu) = common::gpu() else {
        return;
    };
    let Some((_, device, _)) = app_device() else {
        return;
    };
    let theirs = texture(&device, wgpu::TextureFormat::Rgba8Unorm, 2, 2);
    let x = Tensor::zeros([2, 2], DType::F32, &gpu).unwrap();
    let err = x
        .write_to_texture(&theirs, ColorMap::Gray { min: 0.0, max: 1.0 })
        .unwrap_err();
    assert!(err.to_string().contains("write_to_texture"), "{err}");
    // The device goes on.
    assert_eq!((&x + 1.0).to_vec::<f32>().unwrap(), [1.0; 4]);
}

/// A buffer still mapped (here since its creation) is refused where it is
/// wrapped: its first read failed the batch it was submitted in, taking
/// the other tensors of that batch with it.
#[test]
fn a_mapped_buffer_is_refused_where_it_is_wrapped() {
    let Some((info, device, queue)) = app_device() else {
        return;
    };
    let dev = Device::from_wgpu(&info, device.clone(), queue, GpuOptions::default())
        .expect("a device on the application's wgpu device");
    let buffer = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("app data, mapped"),
        size: 16,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: true,
    });
    let other = Tensor::from_slice(&[1.0f32, 2.0], [2], &dev).unwrap();
    let y = &other * 3.0;
    let err = Tensor::from_gpu_buffer(&buffer, DType::F32, [4], 0, &dev).unwrap_err();
    assert!(err.to_string().contains("from_gpu_buffer"), "{err}");
    assert!(err.to_string().contains("mapped"), "{err}");
    assert_eq!(y.to_vec::<f32>().unwrap(), [3.0, 6.0]);
    // Unmapped, it wraps.
    buffer.unmap();
    let t = Tensor::from_gpu_buffer(&buffer, DType::F32, [4], 0, &dev).unwrap();
    assert_eq!(t.to_vec::<f32>().unwrap(), [0.0; 4]);
}

/// A `WEBTENSOR_*` setting set to a value it does not take is an
/// `Error::Argument` naming it from every way to a GPU device: never its
/// default, and never the CPU in the GPU's place. The environment is the
/// process's, so the checks run in a child process of this test binary
/// (`bad_settings_in_a_child`) with `WEBTENSOR_FUSION=2`.
/// A wgpu device opened without compute shaders (WebGL2's downlevel
/// limits) is refused when wrapped: every kernel would fail on it.
#[test]
fn a_device_without_compute_is_refused() {
    let Some(_) = common::gpu() else {
        return;
    };
    let adapter =
        pollster::block_on(app_instance().request_adapter(&wgpu::RequestAdapterOptions::default()))
            .expect("webtensor has a GPU; the application's adapter");
    let descriptor = wgpu::DeviceDescriptor {
        required_limits: wgpu::Limits::downlevel_webgl2_defaults(),
        ..Default::default()
    };
    let (device, queue) = pollster::block_on(adapter.request_device(&descriptor)).unwrap();
    let r = Device::from_wgpu(&adapter.get_info(), device, queue, GpuOptions::default());
    let Err(Error::Argument { op, msg }) = r else {
        panic!("{:?}", r.map(|d| d.info()));
    };
    assert_eq!(op, "Device::from_wgpu");
    assert!(msg.contains("= 0"), "{msg}");
}

#[test]
fn a_setting_not_understood_is_an_error_from_every_opening() {
    // The child opens the application's device on the adapter webtensor
    // opens here.
    if common::gpu().is_none() {
        return;
    }
    common::run_child("bad_settings_in_a_child", &[("WEBTENSOR_FUSION", "2")]);
}

#[test]
#[ignore = "the child process of a_setting_not_understood_is_an_error_from_every_opening"]
fn bad_settings_in_a_child() {
    if !common::is_child("bad_settings_in_a_child") {
        return;
    }
    let refused = |e: webtensor::Error, op: &str| {
        let msg = e.to_string();
        assert!(matches!(e, webtensor::Error::Argument { .. }), "{msg}");
        assert!(
            msg.contains(op) && msg.contains("WEBTENSOR_FUSION=\"2\""),
            "{msg}"
        );
    };
    refused(Device::gpu().unwrap_err(), "Device::gpu");
    // Not the CPU, with the GPU's error as its reason.
    refused(Device::default_device().unwrap_err(), "Device::gpu");
    let adapter =
        pollster::block_on(app_instance().request_adapter(&wgpu::RequestAdapterOptions::default()))
            .expect("the parent opened a GPU; the application's adapter");
    let (device, queue) =
        pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor::default()))
            .expect("the application's device");
    let e = Device::from_wgpu(&adapter.get_info(), device, queue, GpuOptions::default());
    refused(e.expect_err("an error"), "Device::from_wgpu");
}

/// Every family's kernels on an application's device of WebGPU's default
/// limits (what `wgpu::DeviceDescriptor::default()` asks for: 16 KiB of
/// workgroup memory, 8 storage buffers a stage, 128 MiB bindings), as
/// most applications open theirs, against the CPU: each family plans by
/// the device's own limits, not the adapter's. (wgpu 30 checks a
/// pipeline's storage buffers and workgroup size against the device's
/// limits, not its workgroup memory, which lavapipe has 32 KiB of:
/// webtensor's pipeline build checks that, so a kernel planned past 16
/// KiB fails here.)
#[test]
fn every_family_runs_on_a_device_of_webgpus_default_limits() {
    use webtensor::linalg::{self, Triangle};
    use webtensor::{Attention, Fft, GgmlType, Pool, QTensor, Resize, SortOrder, TopK};
    let Some((info, device, queue)) = app_device() else {
        return;
    };
    assert_eq!(device.limits().max_compute_workgroup_storage_size, 16384);
    let dev = Device::from_wgpu(&info, device, queue, GpuOptions::default()).unwrap();
    let cpu = Device::cpu();
    type Case = (&'static str, fn(&Device) -> webtensor::Result<Vec<Tensor>>);
    let cases: Vec<Case> = vec![
        ("sum, max, argmax, var", |d| {
            let x = Tensor::randn([300, 1000], DType::F32, 1, d)?;
            Ok(vec![
                x.sum(-1)?,
                x.sum(0)?,
                x.max(-1)?,
                x.argmax(0)?,
                x.var(-1, 1)?,
                x.sum(webtensor::Axes::All)?,
            ])
        }),
        ("softmax, norms", |d| {
            let x = Tensor::randn([64, 3000], DType::F32, 2, d)?;
            let w = Tensor::randn([3000], DType::F32, 3, d)?;
            let g = Tensor::randn([2, 8, 40, 40], DType::F32, 4, d)?;
            Ok(vec![
                x.softmax(-1)?,
                x.log_softmax(0)?,
                x.layer_norm(&[3000], Some(&w), None, 1e-5)?,
                x.rms_norm(&[3000], Some(&w), None)?,
                g.group_norm(4, None, None, 1e-5)?,
            ])
        }),
        ("cumsum", |d| {
            Ok(vec![
                Tensor::randn([7, 5000], DType::F32, 5, d)?.cumsum(-1)?,
            ])
        }),
        ("a fused chain of twelve inputs", |d| {
            let mut y = Tensor::randn([33, 65], DType::F32, 100, d)?;
            for i in 1..12 {
                let x = Tensor::randn([33, 65], DType::F32, 100 + i, d)?;
                y = y.mul_scalar(0.5)?.add(&x.t().t())?;
            }
            Ok(vec![y])
        }),
        ("matmul", |d| {
            let a = Tensor::randn([130, 70], DType::F32, 6, d)?;
            let b = Tensor::randn([70, 300], DType::F32, 7, d)?;
            let h = a.to_dtype(DType::F16)?;
            Ok(vec![
                a.matmul(&b)?,
                h.matmul(&b.to_dtype(DType::F16)?)?.to_dtype(DType::F32)?,
                a.matmul(&b.slice(s![.., 0..1])?)?,
            ])
        }),
        ("fft", |d| {
            let x = Tensor::randn([3, 4096], DType::F32, 8, d)?;
            let y = Tensor::randn([1 << 16], DType::F32, 9, d)?;
            Ok(vec![
                x.rfft(Fft::along(-1))?.abs()?,
                y.rfft(Fft::along(0))?.abs()?,
                x.fft(Fft::along(0))?.abs()?,
            ])
        }),
        ("sort, topk", |d| {
            let x = Tensor::randn([5, 10000], DType::F32, 10, d)?;
            Ok(vec![
                x.sort(-1, SortOrder::Ascending)?,
                x.argsort(0, SortOrder::Descending)?,
                x.topk(20, -1, TopK::Largest)?.0,
            ])
        }),
        ("conv, pooling, resize", |d| {
            let x = Tensor::randn([2, 16, 30, 30], DType::F32, 11, d)?;
            let w = Tensor::randn([32, 16, 3, 3], DType::F32, 12, d)?;
            let dw = Tensor::randn([16, 1, 3, 3], DType::F32, 13, d)?;
            let wt = Tensor::randn([16, 8, 3, 3], DType::F32, 14, d)?;
            Ok(vec![
                x.conv2d(&w, &webtensor::Conv::new().padding(1))?,
                x.conv2d(&dw, &webtensor::Conv::new().groups(16))?,
                x.conv_transpose2d(&wt, &webtensor::Conv::new().stride(2))?,
                x.max_pool2d(&Pool::new(3).stride(2))?,
                x.resize([47, 13], Resize::Bilinear)?,
                x.adaptive_avg_pool2d(7)?,
            ])
        }),
        ("attention", |d| {
            let q = Tensor::randn([1, 4, 70, 64], DType::F32, 15, d)?;
            let k = Tensor::randn([1, 4, 300, 64], DType::F32, 16, d)?;
            let v = Tensor::randn([1, 4, 300, 64], DType::F32, 17, d)?;
            Ok(vec![
                q.sdpa(&k, &v, &Attention::new())?,
                q.slice(s![.., .., -1.., ..])?
                    .sdpa(&k, &v, &Attention::new())?,
            ])
        }),
        ("quantized product", |d| {
            let w = Tensor::randn([96, 256], DType::F32, 18, d)?;
            let x = Tensor::randn([5, 256], DType::F32, 19, d)?;
            let mut out = Vec::new();
            for ty in [
                GgmlType::Q4_0,
                GgmlType::Q4_1,
                GgmlType::Q5_0,
                GgmlType::Q8_0,
            ] {
                let q = QTensor::quantize(&w, ty)?;
                out.push(x.qmatmul(&q)?);
                out.push(x.slice(s![0..1, ..])?.qmatmul(&q)?);
            }
            Ok(out)
        }),
        ("linalg", |d| {
            let a = Tensor::randn([40, 40], DType::F32, 20, d)?;
            let s = a
                .matmul(&a.t())?
                .add(&Tensor::eye(40, DType::F32, d)?.mul_scalar(40.0)?)?;
            Ok(vec![
                linalg::solve(&s, &a)?,
                linalg::cholesky(&s, Triangle::Lower)?,
                linalg::eigvalsh(&s, Triangle::Lower)?,
                linalg::svdvals(&a)?,
                linalg::det(&s.div_scalar(40.0)?)?,
            ])
        }),
        ("unique, histogram, gather", |d| {
            let x = Tensor::rand([3000], DType::F32, 21, d)?
                .mul_scalar(50.0)?
                .floor()?
                .to_dtype(DType::I32)?;
            let f = Tensor::randn([3000], DType::F32, 22, d)?;
            Ok(vec![
                x.unique()?.to_dtype(DType::F32)?,
                f.histogram(30, None, None, false)?.0,
                f.gather(&x.to_dtype(DType::I64)?, 0)?,
            ])
        }),
    ];
    for (name, run) in cases {
        let want = run(&cpu).unwrap_or_else(|e| panic!("{name} on the CPU: {e}"));
        let got = run(&dev).unwrap_or_else(|e| panic!("{name} on {dev}: {e}"));
        for (k, (g, w)) in got.iter().zip(&want).enumerate() {
            let g = g.to_dtype(DType::F32).unwrap().to_vec::<f32>().unwrap();
            let w = w.to_dtype(DType::F32).unwrap().to_vec::<f32>().unwrap();
            common::assert_close(&g, &w, 2e-3, &format!("{name} {k} on {dev}"));
        }
    }
}

#[test]
fn a_handed_out_buffer_the_application_destroys_is_never_pooled_again() {
    // The application may destroy a buffer it was handed: once its tensor
    // is gone the buffer was pooled all the same, and the next tensors of
    // its size failed (`Buffer ... has been destroyed`) until the pool was
    // emptied.
    let Some(dev) = common::own_gpu(GpuOptions::default()) else {
        return;
    };
    let t = Tensor::full([256], 5.0f32, DType::F32, &dev).unwrap();
    let handed = t.gpu_buffer().unwrap();
    handed.buffer.destroy();
    drop(handed);
    drop(t);
    for round in 0..3 {
        let a = Tensor::arange(0.0f32, 256.0, 1.0, &dev)
            .unwrap()
            .mul_scalar(3.0)
            .unwrap();
        let b = Tensor::full([256], 2.0f32, DType::F32, &dev).unwrap();
        let want: Vec<f32> = (0..256).map(|i| 3.0 * i as f32).collect();
        assert_eq!(a.to_vec::<f32>().unwrap(), want, "round {round}");
        assert_eq!(b.to_vec::<f32>().unwrap(), vec![2.0; 256], "round {round}");
    }
}
