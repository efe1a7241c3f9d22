//! webtensor quickstart: the device, views, in-place ops through a view, a
//! readback and a profile. Run with `cargo run --example quickstart`.

use webtensor::{DType, Device, Tensor, s};

fn main() -> webtensor::Result<()> {
    // A hardware GPU when one exists, else the CPU path (a software adapter
    // such as lavapipe is passed over; WEBTENSOR_DEVICE=cpu|gpu chooses).
    let dev = Device::default_device()?;
    println!("device: {}", dev.info());

    // A 4x6 matrix 0..24.
    let m = Tensor::arange(0.0f32, 24.0, 1.0, &dev)?.reshape([4, 6])?;
    println!("m =\n{m}");

    // Views are free: every other column, reversed, rows 1..; no copy.
    let v = m.slice(s![1.., ..;-2])?;
    println!(
        "m[1:, ::-2] (shape {}, strides {:?}) =\n{v}",
        v.shape(),
        v.strides()
    );

    // Elementwise ops take any layout; the transposed operand is not copied.
    let w = m
        .t()
        .mul_scalar(0.5)?
        .add(&Tensor::ones([6, 1], DType::F32, &dev)?)?;
    println!("m.T * 0.5 + 1 =\n{w}");

    // In-place through the view writes into m.
    v.mul_scalar_(-1.0)?;
    println!("after m[1:, ::-2] *= -1, m =\n{m}");

    // Readback.
    let total: f32 = m.to_vec::<f32>()?.iter().sum();
    println!("sum of m = {total}");
    if dev.is_gpu() {
        println!("device stats: {:?}", dev.stats());
    }

    // Where the time goes: each op's host time and the kernels it ran in
    // (a fused chain shares one), each kernel's GPU time where the device
    // writes timestamps, each submit's host time.
    let (a, b) = (m.clone(), w.clone());
    let profile = dev.profile(move || {
        let scores = a.t().mul(&b)?.exp()?;
        let _total = scores.sum(..)?;
        let _products = a.matmul(&b)?;
        Ok(())
    })?;
    println!("{profile}");
    Ok(())
}
