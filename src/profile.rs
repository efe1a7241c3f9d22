//! [`Profile`]: where the time of a block of ops went, per recorded op and
//! per kernel dispatched, as [`Device::profile`](crate::Device::profile)
//! measured it; printable as a table.

use crate::profile_region::{self, Frame};
use std::fmt;
use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

/// What [`Device::profile`](crate::Device::profile) measured: the ops the
/// closure recorded, the kernels they ran in and the submits that sent
/// them, in order.
///
/// On a GPU an op's host time is what the library spent on it before any
/// kernel runs (checks, layouts, recording); the planning, fusing and
/// encoding of a batch is its submit's host time; a kernel's GPU time comes
/// from timestamps the GPU writes at the start and end of its dispatch.
/// Fusion folds chains of elementwise ops into one kernel, so several ops
/// may point at one kernel; an op over a tensor larger than one binding may
/// run in several; an op whose result was dropped unread runs in none.
///
/// A public call that runs as several ops (a `layer_norm`, a GPU's
/// `conv2d`) is a region of them, and so is each
/// [`Device::profile_region`](crate::Device::profile_region) the closure
/// opens: [`Profile::regions`] gives each one's ops and times, and every op
/// its innermost region.
///
/// `Display` prints four tables (regions where there are any, ops,
/// kernels, submits):
///
/// ```
/// use webtensor::{Device, Tensor};
/// # fn main() -> webtensor::Result<()> {
/// let dev = Device::default_device()?;
/// let x = Tensor::from_slice(&[1.0f32, 2.0, 3.0], [3], &dev)?;
/// let y = x.clone();
/// let profile = dev.profile(move || {
///     let z = y.mul_scalar(2.0)?.exp()?;
///     z.sum(..)?;
///     Ok(())
/// })?;
/// assert_eq!(profile.ops()[0].name, "mul");
/// assert_eq!(profile.ops()[1].name, "exp");
/// println!("{profile}");
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct Profile {
    ops: Vec<ProfiledOp>,
    kernels: Vec<ProfiledKernel>,
    submits: Vec<ProfiledSubmit>,
    regions: Vec<ProfiledRegion>,
    wall: Duration,
    gpu_note: Option<&'static str>,
}

/// One op as recorded: an elementwise op (`add`, `exp`, `cast`, `fill`
/// ...), or one kernel of another family (`reduce`, `matmul`, `scan`,
/// `sort`, `softmax`, `gather`, `scatter`, `custom kernel`); a `Graph::run`
/// is one op whose kernels are the step's. Some ops record several (a
/// reduction in two passes, a sort in stages), views record none.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ProfiledOp {
    /// What was recorded (see the type's docs).
    pub name: &'static str,
    /// Host time from the end of the previous op, submit or readback (or
    /// the profile's start) to the end of this op's recording: the op's
    /// checks, layouts and recording, and whatever the closure did between
    /// the two. On the CPU device, the op's whole run.
    pub host: Duration,
    /// Indices into [`Profile::kernels`] of the kernels that computed it:
    /// empty on the CPU device, for an op whose result was dropped unread
    /// (never computed), and for one whose batch failed.
    pub kernels: Range<usize>,
    /// Index into [`Profile::regions`] of the innermost region it was
    /// recorded in, if any.
    pub region: Option<usize>,
}

/// A region of a profile: the ops one public call ran as (a `conv2d`
/// whose padding, product and bias are several ops), or the ops recorded
/// inside a [`Device::profile_region`](crate::Device::profile_region).
/// A public op that ran as one op of its own name has no region.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ProfiledRegion {
    /// The op's name, or the user's label.
    pub name: String,
    /// Index into [`Profile::regions`] of the region it is inside, if any
    /// (a region comes after the one it is inside).
    pub parent: Option<usize>,
    /// Indices into [`Profile::ops`] from its first op to its last, those
    /// of regions inside it included (on a GPU, ops other threads recorded
    /// meanwhile may fall between them).
    pub ops: Range<usize>,
    /// Host time of its ops (see [`ProfiledOp::host`]).
    pub host: Duration,
    /// GPU time of the kernels whose last op is one of its ops; `None`
    /// where kernels have no GPU time ([`Profile::gpu_times_unavailable`])
    /// or one of these has none.
    pub gpu: Option<Duration>,
}

/// One kernel dispatched.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ProfiledKernel {
    /// The kernel family: `elementwise` (a generated kernel, one or more
    /// fused ops), `reduce`, `matmul` ...
    pub name: &'static str,
    /// Indices into [`Profile::ops`] of the ops it computes.
    pub ops: Vec<usize>,
    /// Workgroups dispatched in x, y and z.
    pub workgroups: [u32; 3],
    /// Bytes its storage bindings span (windows where it binds part of a
    /// buffer, whole pooled buffers otherwise), a binding it may write
    /// counted twice (read and written): an upper bound on the memory it
    /// can touch, to set beside the bytes the op needs (a composed form or
    /// a scratch buffer shows as more).
    pub bytes_bound: u64,
    /// Time on the GPU from the start to the end of its dispatch, where the
    /// device writes timestamps (see [`Profile::gpu_times_unavailable`]).
    pub gpu: Option<Duration>,
    /// Index into [`Profile::submits`] of the submit that sent it.
    pub submit: usize,
}

/// One submit: a batch of recorded ops planned, fused, encoded and sent
/// to the GPU (or a captured step's dispatches sent again).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ProfiledSubmit {
    /// Host time planning, encoding and submitting it.
    pub host: Duration,
    /// Indices into [`Profile::kernels`] of its kernels.
    pub kernels: Range<usize>,
}

impl Profile {
    /// A profile of `ops`, op `i` recorded inside `frames[i]`, whose
    /// kernels list no ops yet (their op lists are filled in from the
    /// ops' kernel ranges) and whose ops no region.
    pub(crate) fn new(
        mut ops: Vec<ProfiledOp>,
        frames: &[Option<Arc<Frame>>],
        mut kernels: Vec<ProfiledKernel>,
        submits: Vec<ProfiledSubmit>,
        wall: Duration,
        gpu_note: Option<&'static str>,
    ) -> Profile {
        for (index, op) in ops.iter().enumerate() {
            for kernel in kernels.get_mut(op.kernels.clone()).into_iter().flatten() {
                kernel.ops.push(index);
            }
        }
        let timed = gpu_note.is_none();
        let regions = profile_region::regions(frames, &mut ops, &kernels, timed);
        // A total without some kernels would read as the whole: it is
        // `None`, and the reason is given.
        let gpu_note = match timed && kernels.iter().any(|k| k.gpu.is_none()) {
            true => Some(SOME_UNTIMED),
            false => gpu_note,
        };
        Profile {
            ops,
            kernels,
            submits,
            regions,
            wall,
            gpu_note,
        }
    }

    /// The ops recorded, in order.
    pub fn ops(&self) -> &[ProfiledOp] {
        &self.ops
    }

    /// The kernels dispatched, in order.
    pub fn kernels(&self) -> &[ProfiledKernel] {
        &self.kernels
    }

    /// The regions, in the order their first ops were recorded: public
    /// calls that ran as several ops, and the user's
    /// [`Device::profile_region`](crate::Device::profile_region)s.
    pub fn regions(&self) -> &[ProfiledRegion] {
        &self.regions
    }

    /// The submits, in order.
    pub fn submits(&self) -> &[ProfiledSubmit] {
        &self.submits
    }

    /// Host time from the profile's start to the end of its last op,
    /// submit or readback, on a GPU with the submit of what the closure
    /// left pending (the closure's time after its last op, and the wait for
    /// the GPU's timestamps at the end, not included): at least the sum of
    /// the ops' and submits' host times, and the same whatever the flush
    /// threshold.
    pub fn wall(&self) -> Duration {
        self.wall
    }

    /// Host time of the ops and the submits together.
    pub fn host(&self) -> Duration {
        let ops: Duration = self.ops.iter().map(|o| o.host).sum();
        ops + self.submits.iter().map(|s| s.host).sum::<Duration>()
    }

    /// GPU time of all kernels, when every kernel has one; `None` on the
    /// CPU device, and wherever [`Profile::gpu_times_unavailable`] says why
    /// (each kernel's own time, [`ProfiledKernel::gpu`], is there where it
    /// was measured).
    pub fn gpu(&self) -> Option<Duration> {
        if self.gpu_note.is_some() {
            return None;
        }
        self.kernels.iter().map(|k| k.gpu).sum()
    }

    /// Why kernels have no GPU time, when they have none: the CPU device,
    /// a GPU that writes no timestamps (no `TIMESTAMP_QUERY`), or a
    /// browser (whose timestamps, quantised to 100 µs and read only
    /// asynchronously, are not used); or why some have none (a kernel's
    /// end stamped before its start, as a counter that wraps or is reset
    /// gives, or timestamps that could not be read back), which makes the
    /// total `None`.
    pub fn gpu_times_unavailable(&self) -> Option<&'static str> {
        self.gpu_note
    }
}

/// Why [`Profile::gpu`] is `None` where some kernels have a GPU time.
const SOME_UNTIMED: &str = "some kernels have no GPU time: an end stamped before its start, \
     or timestamps that could not be read back";

/// Microseconds with two decimals.
struct Micros(Duration);

impl fmt::Display for Micros {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let width = f.width().unwrap_or(0);
        write!(f, "{:>width$.2}", self.0.as_secs_f64() * 1e6)
    }
}

/// `k3`, `k3..=k5`, or `-` for no kernel.
struct Kernels<'a>(&'a Range<usize>);

impl fmt::Display for Kernels<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let r = self.0;
        match r.len() {
            0 => write!(f, "-"),
            1 => write!(f, "k{}", r.start),
            _ => write!(f, "k{}..=k{}", r.start, r.end - 1),
        }
    }
}

impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "profile: ops {}, kernels {}, submits {}; wall {} µs, host {} µs, GPU ",
            self.ops.len(),
            self.kernels.len(),
            self.submits.len(),
            Micros(self.wall),
            Micros(self.host()),
        )?;
        match (self.gpu(), self.gpu_note) {
            (Some(t), None) => writeln!(f, "{} µs", Micros(t))?,
            (_, note) => writeln!(f, "not available ({})", note.unwrap_or("partial"))?,
        }
        if !self.regions.is_empty() {
            writeln!(
                f,
                "{:>6}  {:<24} {:>12} {:>10} {:>10}",
                "region", "name", "ops", "host µs", "GPU µs"
            )?;
        }
        for (i, r) in self.regions.iter().enumerate() {
            let depth = std::iter::successors(r.parent, |&p| self.regions[p].parent).count();
            let name = format!("{:indent$}{}", "", r.name, indent = 2 * depth);
            let gpu = r.gpu.map_or("-".to_string(), |t| Micros(t).to_string());
            writeln!(
                f,
                "{:>6}  {name:<24} {:>12} {:>10} {gpu:>10}",
                format!("r{i}"),
                match r.ops.len() {
                    1 => r.ops.start.to_string(),
                    _ => format!("{}..={}", r.ops.start, r.ops.end.saturating_sub(1)),
                },
                Micros(r.host),
            )?;
        }
        writeln!(
            f,
            "{:>6}  {:<16} {:>10}  {:<8}  region",
            "op", "name", "host µs", "kernels"
        )?;
        for (i, op) in self.ops.iter().enumerate() {
            let region = op.region.map_or("-".to_string(), |r| format!("r{r}"));
            writeln!(
                f,
                "{i:>6}  {:<16} {:>10}  {:<8}  {region}",
                op.name,
                Micros(op.host),
                Kernels(&op.kernels).to_string(),
            )?;
        }
        if !self.kernels.is_empty() {
            writeln!(
                f,
                "{:>6}  {:<16} {:>16} {:>12} {:>10}  submit  ops",
                "kernel", "name", "workgroups", "bytes bound", "GPU µs"
            )?;
        }
        for (i, k) in self.kernels.iter().enumerate() {
            let [x, y, z] = k.workgroups;
            let gpu = k.gpu.map_or("-".to_string(), |t| Micros(t).to_string());
            let ops: Vec<String> = k
                .ops
                .iter()
                .map(|&o| format!("{o} {}", self.ops[o].name))
                .collect();
            writeln!(
                f,
                "{:>6}  {:<16} {:>16} {:>12} {gpu:>10}  {:>6}  {}",
                format!("k{i}"),
                k.name,
                format!("{x}x{y}x{z}"),
                k.bytes_bound,
                k.submit,
                ops.join(", ")
            )?;
        }
        if !self.submits.is_empty() {
            writeln!(f, "{:>6}  {:>10}  kernels", "submit", "host µs")?;
        }
        for (i, s) in self.submits.iter().enumerate() {
            writeln!(f, "{i:>6}  {:>10}  {}", Micros(s.host), Kernels(&s.kernels))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kernel(gpu: Option<Duration>) -> ProfiledKernel {
        ProfiledKernel {
            name: "elementwise",
            ops: Vec::new(),
            workgroups: [1, 1, 1],
            bytes_bound: 16,
            gpu,
            submit: 0,
        }
    }

    /// A kernel without a GPU time (an end stamped before its start, a
    /// failed readback) makes the total `None` with the reason, and every
    /// other kernel keeps its time.
    #[test]
    fn a_kernel_without_a_gpu_time_leaves_no_total_and_says_why() {
        let op = |k: usize| ProfiledOp {
            name: "exp",
            host: Duration::from_micros(3),
            kernels: k..k + 1,
            region: None,
        };
        let submits = vec![ProfiledSubmit {
            host: Duration::from_micros(5),
            kernels: 0..2,
        }];
        let ms = Some(Duration::from_millis(1));
        let whole = Profile::new(
            vec![op(0), op(1)],
            &[None, None],
            vec![kernel(ms), kernel(ms)],
            submits.clone(),
            Duration::from_millis(3),
            None,
        );
        assert_eq!(whole.gpu(), Some(Duration::from_millis(2)));
        assert_eq!(whole.gpu_times_unavailable(), None);
        let part = Profile::new(
            vec![op(0), op(1)],
            &[None, None],
            vec![kernel(ms), kernel(None)],
            submits,
            Duration::from_millis(3),
            None,
        );
        assert_eq!(part.gpu(), None);
        assert_eq!(part.gpu_times_unavailable(), Some(SOME_UNTIMED));
        assert_eq!(part.kernels()[0].gpu, ms);
        let table = part.to_string();
        assert!(table.contains(SOME_UNTIMED), "{table}");
        assert!(table.contains("k0..=k1"), "{table}");
    }
}
