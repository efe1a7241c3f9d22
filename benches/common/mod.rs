//! Shared by the benches that compare the CPU path with the GPU.

use webtensor::Device;

/// The CPU, then the GPU when an adapter exists, each with its bench label.
pub fn devices() -> Vec<(&'static str, Device)> {
    let mut devs = vec![("webtensor_cpu", Device::cpu())];
    if let Ok(gpu) = Device::gpu() {
        devs.push(("webtensor_gpu", gpu));
    }
    devs
}
