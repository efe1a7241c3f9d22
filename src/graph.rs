//! [`Graph`]: a step of ops captured once and run again for almost nothing
//! on the host.

use crate::backend::Storage;
use crate::backend::gpu::{GpuGraph, capture_step};
use crate::device::Device;
use crate::error::Result;
use crate::tensor::captured_writes;
use std::sync::Weak;

/// A captured step: the ops a closure recorded on its device, run again by
/// [`Graph::run`] without recording them again. Made by
/// [`Device::capture`].
///
/// On a GPU a run submits the dispatches the step recorded the first time
/// (same pipelines, bind groups, parameters and fused kernels): none of
/// webtensor's recording, fusion planning or encoding happens again, so a
/// run costs one submit whatever the number of ops. On the CPU a run calls
/// the closure again, which computes the same thing, but for random draws:
/// a GPU step's are made at capture (each run writes the same numbers),
/// the CPU's anew at each run.
///
/// What a run computes is what the step's ops computed at capture, on the
/// same tensors: values the application wrote into those tensors since
/// (`x.assign(&new)?`, `x.fill_(0.0)?`, in-place ops) are read by the next
/// run. On a GPU, tensors the step made are the graph's own, written
/// again by every run, so a handle to one kept from the capture reads each
/// run's values; on the CPU each run makes them anew, and such a handle
/// keeps the capture's. Results meant to be read on every device go into
/// tensors made outside the step (`out.assign(&y)?` inside it) or through
/// a slot the step fills on each run. Host-side work inside the closure (a
/// slice's values, a Rust `if` on anything) happened once, at capture, on
/// a GPU: a tensor the step makes from host values (`from_slice`,
/// `arange`, `linspace`, `hann_window` ...) is uploaded then, and each run
/// copies those values into it again, so a step that changes it in place
/// starts from them on every run, as on the CPU.
///
/// After the device is lost and recovered ([`Device::recover`]), the next
/// run captures the step again on the new device (host work inside it
/// happens again then), on the tensors it holds: those that came back
/// (`Persist`, `Tensor::checkpoint`) with their restored data, the others
/// failing as lost. A handle that went on on the CPU runs the closure.
///
/// Not `Send`: on the GPU a graph holds the device's buffers the step
/// binds, given back when the graph is dropped.
///
/// ```
/// use webtensor::{Device, Tensor};
/// # fn main() -> webtensor::Result<()> {
/// let dev = Device::default_device()?;
/// let x = Tensor::zeros([4], webtensor::DType::F32, &dev)?;
/// let y = Tensor::from_slice(&[1.0f32, 2.0, 3.0, 4.0], [4], &dev)?;
/// let (xs, ys) = (x.clone(), y.clone());
/// // Captured, and run once: x = 2x + y.
/// let mut step = dev.capture(move || {
///     let twice = xs.mul_scalar(2.0)?;
///     xs.assign(&twice.add(&ys)?)
/// })?;
/// step.run()?;
/// step.run()?;
/// assert_eq!(x.to_vec::<f32>()?, vec![7.0, 14.0, 21.0, 28.0]);
/// # Ok(())
/// # }
/// ```
pub struct Graph {
    inner: Inner,
}

enum Inner {
    /// The captured batch, the step (captured again on the device a
    /// recovery opens) and the handle it was captured on.
    Gpu(Box<GpuStep>),
    Cpu(Box<dyn FnMut() -> Result<()>>),
}

/// A step captured on a GPU.
struct GpuStep {
    graph: GpuGraph,
    step: Box<dyn FnMut() -> Result<()>>,
    device: Device,
    /// The storages the step writes: each run counts as a write to them
    /// (see `tensor/captured_writes.rs`).
    writes: Vec<Weak<Storage>>,
}

impl Device {
    /// Captures the ops `step` records on this device into a [`Graph`],
    /// running them once; [`Graph::run`] runs them again. `step` works on
    /// tensors made before the capture (it moves clones of their handles
    /// in) and updates them in place.
    ///
    /// On a GPU nothing is submitted while `step` runs: an op that needs
    /// the step's recorded work submitted at once (a readback such as
    /// `to_vec`, a `sync` or `flush` with ops recorded, `gpu_buffer`,
    /// drawing into a texture, or an upload into a buffer that recorded
    /// work still reads, where the pool has no other) returns
    /// `Error::Argument`, and the capture fails with that error even if
    /// `step` ignored it. Ops other threads record on this device while
    /// `step` runs become part of the step; ops on CPU tensors inside it
    /// are host work, done once at capture. A matmul whose class
    /// autotuning has not timed yet takes the tile its size picks, and a
    /// product or convolution kernel the device has not yet checked (the
    /// check that drops a kernel computing wrong, see
    /// [`DeviceInfo::dropped_kernels`](crate::DeviceInfo::dropped_kernels))
    /// gives way, for the graph's life, to the
    /// per-output product kernel (convolutions to products): run one
    /// product of each dtype (one convolution) eagerly before capturing.
    /// A capture begun while another thread's product, convolution or
    /// attention kernel is being checked, or a product autotuned (which
    /// submit work of their own), waits for that to end.
    /// On the CPU the capture runs `step` once and keeps it.
    ///
    /// # Errors
    /// What `step` returned, and on a GPU `Error::Argument` as above (what
    /// the step recorded until then runs, as eager ops would have), a
    /// capture inside a capture on one device, or while the device is
    /// being profiled, or when an op that failed inside the step (an
    /// error `step` let pass) had taken the buffer of a tensor the step
    /// then dropped while other ops still wrote it; the device's errors.
    pub fn capture(&self, step: impl FnMut() -> Result<()> + 'static) -> Result<Graph> {
        let mut step: Box<dyn FnMut() -> Result<()>> = Box::new(step);
        let inner = match self.gpu_context() {
            Some(ctx) => {
                let (graph, writes) =
                    captured_writes::during(ctx.id(), || capture_step(&ctx, &mut step));
                Inner::Gpu(Box::new(GpuStep {
                    graph: graph?,
                    step,
                    device: self.clone(),
                    writes,
                }))
            }
            None => {
                step()?;
                Inner::Cpu(step)
            }
        };
        Ok(Graph { inner })
    }
}

impl Graph {
    /// Runs the step again, after the work recorded before it (on a GPU:
    /// one submit, after another for work still pending; it does not wait
    /// for the GPU).
    ///
    /// # Errors
    /// On a GPU, `Error::Gpu` when a tensor the step reads or writes was
    /// poisoned by a failed batch, or the device rejects the submit (the
    /// step's outputs are poisoned then; in a browser a rejected submit is
    /// seen only by a later readback or sync, see the README); index faults of indexing ops in
    /// the step are reported by the next readback, as for any op. On the
    /// CPU, what the step returns.
    pub fn run(&mut self) -> Result<()> {
        match &mut self.inner {
            Inner::Gpu(gpu) if gpu.graph.is_lost() => {
                let GpuStep {
                    graph,
                    step,
                    device,
                    writes,
                } = &mut **gpu;
                // The handle's device was lost; once a recovery rebound
                // it, the step is captured again there (this run).
                match device.gpu_context() {
                    Some(ctx) if !ctx.is_lost() && !graph.runs_on(&ctx) => {
                        let (again, written) =
                            captured_writes::during(ctx.id(), || capture_step(&ctx, step));
                        *graph = again?;
                        *writes = written;
                        Ok(())
                    }
                    Some(_) => graph.run(),
                    None => {
                        // Gone on on the CPU: a run calls the step.
                        let was =
                            std::mem::replace(&mut self.inner, Inner::Cpu(Box::new(|| Ok(()))));
                        if let Inner::Gpu(gpu) = was {
                            self.inner = Inner::Cpu(gpu.step);
                        }
                        self.run()
                    }
                }
            }
            Inner::Gpu(gpu) => {
                let ran = gpu.graph.run();
                // Counted once the run is recorded: a host copy taken
                // meanwhile from data without it goes stale.
                captured_writes::written(&gpu.writes);
                ran
            }
            Inner::Cpu(step) => step(),
        }
    }

    /// The ops the step recorded at capture (0 on the CPU, which records
    /// nothing).
    pub fn ops(&self) -> usize {
        match &self.inner {
            Inner::Gpu(gpu) => gpu.graph.ops(),
            Inner::Cpu(_) => 0,
        }
    }

    /// The kernel dispatches one run submits (0 on the CPU).
    pub fn dispatches(&self) -> usize {
        match &self.inner {
            Inner::Gpu(gpu) => gpu.graph.dispatches(),
            Inner::Cpu(_) => 0,
        }
    }
}

impl std::fmt::Debug for Graph {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Graph")
            .field("ops", &self.ops())
            .field("dispatches", &self.dispatches())
            .finish()
    }
}
