//! [`Device::profile`]: where a block of ops spends its time.

use crate::backend::{cpu, gpu};
use crate::device::Device;
use crate::error::Result;
use crate::profile::Profile;
use crate::profile_region::Region;
use std::borrow::Cow;

impl Device {
    /// Runs `ops` and returns where their time went: per recorded op its
    /// host time and the kernels it ran in, per kernel its GPU time, per
    /// submit the host time of planning, fusing and encoding its batch
    /// (see [`Profile`]; print it for a table).
    ///
    /// On a GPU, what was pending is submitted before `ops` run (a batch
    /// of it that fails poisons its outputs, as below, and the profile
    /// goes on), and what they leave pending after; then, where the device
    /// writes timestamps, the call waits for the GPU to read them. Each
    /// kernel is dispatched in a compute pass of its own, whose start and
    /// end the GPU timestamps where the device writes timestamps
    /// (`TIMESTAMP_QUERY`, natively; a browser's are not used, and host
    /// times there are quantised by `performance.now()`); fusion and
    /// batching work as outside a profile, and ops other threads record on
    /// the device meanwhile are profiled too. Matmul autotuning does not
    /// run inside a profile (a class not tuned yet takes the tile its size
    /// picks), nor a product or convolution kernel's first check: one not
    /// checked yet gives way, that time, to the per-output product kernel
    /// (convolutions to products), so profile a product of each dtype (and
    /// a convolution) after running one eagerly. A submit that fails poisons its outputs as usual (the next
    /// read of them is the error) and shows its ops without kernels. On the
    /// CPU device, the ops this thread runs, each with its host time.
    ///
    /// # Errors
    /// What `ops` returned; `Error::Argument` when the device (on the CPU,
    /// this thread) is being profiled already, or (on a GPU) a step is
    /// being captured; `Error::DeviceLost` when the device is lost. A
    /// readback of timestamps that fails otherwise leaves its kernels
    /// without GPU times (see [`Profile::gpu_times_unavailable`]).
    pub fn profile(&self, ops: impl FnOnce() -> Result<()>) -> Result<Profile> {
        match self.gpu_context() {
            Some(ctx) => gpu::profile_ops(&ctx, ops),
            None => cpu::profile_ops(ops),
        }
    }

    /// Runs `f` inside a region named `label` of any profile open meanwhile
    /// ([`Device::profile`]): the ops this thread records in `f`, on any
    /// device, are the region's, and the profile's table shows the region
    /// as one row with their time. Regions nest; outside a profile, `f`
    /// just runs.
    ///
    /// ```
    /// use webtensor::{Device, Tensor};
    /// # fn main() -> webtensor::Result<()> {
    /// let dev = Device::default_device()?;
    /// let x = Tensor::from_slice(&[1.0f32, 2.0, 3.0], [3], &dev)?;
    /// let profile = dev.profile(|| {
    ///     let y = dev.profile_region("scale", || x.mul_scalar(2.0))?;
    ///     y.exp()?;
    ///     Ok(())
    /// })?;
    /// assert_eq!(profile.regions()[0].name, "scale");
    /// assert_eq!(profile.ops()[0].region, Some(0));
    /// assert_eq!(profile.ops()[1].region, None);
    /// # Ok(())
    /// # }
    /// ```
    pub fn profile_region<R>(&self, label: impl Into<String>, f: impl FnOnce() -> R) -> R {
        let _region = Region::open(Cow::Owned(label.into()));
        f()
    }
}
