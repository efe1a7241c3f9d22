use webtensor::{DType, Device, Pool, Tensor};
fn main() {
    let dev = Device::gpu().unwrap();
    for n in [64usize, 128, 160, 256] {
        let x = Tensor::ones([1, 1, n, n], DType::F32, &dev).unwrap();
        let a = x
            .avg_pool2d(&Pool::new(n))
            .unwrap()
            .to_vec::<f32>()
            .unwrap();
        let y = Tensor::arange(0.0f32, (n * n) as f32, 1.0, &dev)
            .unwrap()
            .reshape([1, 1, n as isize, n as isize])
            .unwrap();
        let m = y
            .max_pool2d(&Pool::new(n))
            .unwrap()
            .to_vec::<f32>()
            .unwrap();
        println!("{n}: avg {a:?} max {m:?} (want {})", (n * n - 1));
    }
}
