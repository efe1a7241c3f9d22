use webtensor::{DType, Device, Tensor};
fn main() -> webtensor::Result<()> {
    let dev = Device::gpu()?;
    let mut x = Tensor::rand([64, 48], DType::F32, 9, &dev)?;
    for k in 0..6 {
        x = match k % 3 {
            0 => x.mul_scalar(0.5)?,
            1 => x.add_scalar(1.0)?,
            _ => x.t().sqrt()?.t(),
        };
    }
    dev.sync()?;
    println!("{:?}", dev.stats());
    Ok(())
}
