use std::time::Instant;
use webtensor::linalg::{self, QrMode, Triangle};
use webtensor::{DType, Device, Generator};
fn best(f: &dyn Fn()) -> f64 {
    f();
    let mut b = f64::MAX;
    for _ in 0..3 {
        let t = Instant::now();
        f();
        b = b.min(t.elapsed().as_secs_f64());
    }
    b * 1e3
}
fn main() {
    let dev = Device::cpu();
    let mut g = Generator::new(1);
    let a = g.randn([512, 512], DType::F32, &dev).unwrap();
    let sym = a.add(&a.transpose(0, 1).unwrap()).unwrap();
    let sa = g.randn([1000, 8, 8], DType::F32, &dev).unwrap();
    let ssym = sa.add(&sa.transpose(-2, -1).unwrap()).unwrap();
    println!(
        "qr 512: {:.3} ms",
        best(&|| {
            linalg::qr(&a, QrMode::Reduced).unwrap();
        })
    );
    println!(
        "eigh 512: {:.3} ms",
        best(&|| {
            linalg::eigh(&sym, Triangle::Lower).unwrap();
        })
    );
    println!(
        "svd 512: {:.3} ms",
        best(&|| {
            linalg::svd(&a, false).unwrap();
        })
    );
    println!(
        "qr 1000x8x8: {:.3} ms",
        best(&|| {
            linalg::qr(&sa, QrMode::Reduced).unwrap();
        })
    );
    println!(
        "eigh 1000x8x8: {:.3} ms",
        best(&|| {
            linalg::eigh(&ssym, Triangle::Lower).unwrap();
        })
    );
    println!(
        "svd 1000x8x8: {:.3} ms",
        best(&|| {
            linalg::svd(&sa, false).unwrap();
        })
    );
}
