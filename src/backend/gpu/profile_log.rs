//! Profiling on a GPU (users get a `crate::profile::Profile`): while a
//! profile is open, the scheduler notes each recorded op's host time and
//! its place in its batch, encodes each dispatch in a compute pass of its
//! own whose start and end the GPU timestamps (where it writes
//! timestamps), and notes which kernels each op became. The timestamps are
//! resolved into buffers read when the profile ends.

use super::kernel::pipeline::Pipeline;
use super::target::Target;
use crate::clock::Stamp;
use crate::profile::{Profile, ProfiledKernel, ProfiledOp, ProfiledSubmit};
use crate::profile_region::{self, Frame, ProfileOpen};
use std::ops::Range;
use std::sync::Arc;

/// What the profile's operation is called in errors.
pub(crate) const OP: &str = "Device::profile";

/// Dispatches timed per query set: two timestamps each, and a set holds at
/// most 4096 (wgpu's `QUERY_SET_MAX_QUERIES`).
const PER_SET: usize = 2048;

/// Query sets a profile makes, then uses again in turn. Metal holds about
/// 32 timestamp sample buffers a device (a 33rd fails, and wgpu takes the
/// failure for a lost device), and wgpu keeps each set alive until the
/// submits using it are done: a set for each batch of a profile that
/// flushes every op would pass that. A set is used again only by a later
/// chunk of dispatches, on the same queue, after the earlier chunk's
/// resolve: the queue runs them in order, so the resolve copied the
/// earlier timestamps first (wgpu resets the queries a pass writes).
const SETS: usize = 8;

/// One dispatch to encode.
pub(super) struct Dispatch<'a> {
    pub pipeline: &'a Pipeline,
    pub group: &'a wgpu::BindGroup,
    pub offset: u32,
    pub groups: [u32; 3],
    /// See `ProfiledKernel::bytes_bound`.
    pub bytes_bound: u64,
}

/// Which op each kernel of a batch computes.
pub(super) enum Origin<'a> {
    /// A flushed batch: per command, the index of its step, and per step
    /// the index of its first dispatch.
    Batch {
        command_steps: &'a [usize],
        step_starts: &'a [usize],
    },
    /// A captured step run again: every kernel is the one op's.
    Replay,
}

/// The timestamps of one query set, resolved into a buffer read at the end.
struct Readback {
    buffer: wgpu::Buffer,
    first_kernel: usize,
    kernels: usize,
}

/// What a profile has measured so far.
pub(crate) struct ProfileLog {
    started: Stamp,
    /// The end of the last op, submit or readback.
    mark: Stamp,
    /// From the closure's last op, submit or readback to its return: no
    /// op's time, and none of the wall time.
    idle: std::time::Duration,
    ops: Vec<ProfiledOp>,
    /// Per op, the region open on the thread that recorded it.
    frames: Vec<Option<Arc<Frame>>>,
    /// Per op: its batch and its command in the batch, until the batch is
    /// encoded and the op's kernels are known.
    places: Vec<(usize, usize)>,
    kernels: Vec<ProfiledKernel>,
    submits: Vec<ProfiledSubmit>,
    /// The batch being recorded (batches closed so far).
    batch: usize,
    /// Per command of the batch being submitted, its kernels.
    commands: Vec<Range<usize>>,
    /// The batch's first kernel.
    batch_kernels: usize,
    readbacks: Vec<Readback>,
    /// The query sets made so far (at most [`SETS`]), and the chunks of
    /// dispatches timed so far (the next chunk's set is `sets[chunks % SETS]`).
    sets: Vec<wgpu::QuerySet>,
    chunks: usize,
    /// The device writes timestamps.
    timestamps: bool,
    _open: ProfileOpen,
}

impl ProfileLog {
    pub fn new(timestamps: bool) -> ProfileLog {
        let now = Stamp::now();
        ProfileLog {
            started: now,
            mark: now,
            idle: std::time::Duration::ZERO,
            ops: Vec::new(),
            frames: Vec::new(),
            places: Vec::new(),
            kernels: Vec::new(),
            submits: Vec::new(),
            batch: 0,
            commands: Vec::new(),
            batch_kernels: 0,
            readbacks: Vec::new(),
            sets: Vec::new(),
            chunks: 0,
            timestamps,
            _open: ProfileOpen::new(),
        }
    }

    /// Notes an op recorded as command `command` of the batch being
    /// recorded.
    pub fn record(&mut self, name: &'static str, command: usize) {
        let now = Stamp::now();
        self.ops.push(ProfiledOp {
            name,
            host: self.mark.until(now),
            kernels: 0..0,
            region: None,
        });
        self.frames.push(profile_region::current());
        self.places.push((self.batch, command));
        self.mark = now;
    }

    /// Starts the next op's host time now (after a wait for the GPU).
    pub fn mark(&mut self) {
        self.mark = Stamp::now();
    }

    /// The closure has returned: the time since its last op, submit or
    /// readback is left out of the wall time, which so ends with its last
    /// op whatever was still pending (as on the CPU); the submit of what
    /// was pending follows.
    pub fn close(&mut self) {
        let now = Stamp::now();
        self.idle += self.mark.until(now);
        self.mark = now;
    }

    /// Encodes `dispatches` into `encoder`, each in a pass of its own timed
    /// by the GPU where it writes timestamps, and notes them as kernels of
    /// the batch whose ops `origin` tells.
    pub(super) fn encode(
        &mut self,
        ctx: &Target<'_>,
        encoder: &mut wgpu::CommandEncoder,
        dispatches: &[Dispatch<'_>],
        origin: Origin<'_>,
    ) {
        let first = self.kernels.len();
        self.batch_kernels = first;
        self.commands.clear();
        match origin {
            Origin::Batch {
                command_steps,
                step_starts,
            } => self.commands.extend(command_steps.iter().map(|&s| {
                let start = step_starts.get(s).copied().unwrap_or(dispatches.len());
                let end = step_starts.get(s + 1).copied().unwrap_or(dispatches.len());
                first + start..first + end
            })),
            Origin::Replay => self.commands.push(first..first + dispatches.len()),
        }
        for chunk in dispatches.chunks(PER_SET) {
            let queries = self.timestamps.then(|| self.next_set(ctx));
            for (k, d) in chunk.iter().enumerate() {
                let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                    label: Some("webtensor profiled dispatch"),
                    timestamp_writes: queries.as_ref().map(|query_set| {
                        wgpu::ComputePassTimestampWrites {
                            query_set,
                            beginning_of_pass_write_index: Some(2 * k as u32),
                            end_of_pass_write_index: Some(2 * k as u32 + 1),
                        }
                    }),
                });
                pass.set_pipeline(&d.pipeline.pipeline);
                pass.set_bind_group(0, d.group, &[d.offset]);
                pass.dispatch_workgroups(d.groups[0], d.groups[1], d.groups[2]);
                self.kernels.push(ProfiledKernel {
                    name: d.pipeline.name,
                    ops: Vec::new(),
                    workgroups: d.groups,
                    bytes_bound: d.bytes_bound,
                    gpu: None,
                    submit: self.submits.len(),
                });
            }
            if let Some(queries) = &queries {
                let bytes = 2 * chunk.len() as u64 * u64::from(wgpu::QUERY_SIZE);
                let buffer = |label, usage| {
                    ctx.device.create_buffer(&wgpu::BufferDescriptor {
                        label: Some(label),
                        size: bytes,
                        usage,
                        mapped_at_creation: false,
                    })
                };
                let resolved = buffer(
                    "webtensor profile timestamps",
                    wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
                );
                let readback = buffer(
                    "webtensor profile readback",
                    wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                );
                encoder.resolve_query_set(queries, 0..2 * chunk.len() as u32, &resolved, 0);
                encoder.copy_buffer_to_buffer(&resolved, 0, &readback, 0, bytes);
                self.readbacks.push(Readback {
                    buffer: readback,
                    first_kernel: self.kernels.len() - chunk.len(),
                    kernels: chunk.len(),
                });
            }
        }
    }

    /// The query set for the next chunk of dispatches: a new one until
    /// there are [`SETS`], then each in turn.
    fn next_set(&mut self, ctx: &Target<'_>) -> wgpu::QuerySet {
        let at = self.chunks % SETS;
        self.chunks += 1;
        if let Some(set) = self.sets.get(at) {
            return set.clone();
        }
        let set = ctx.device.create_query_set(&wgpu::QuerySetDescriptor {
            label: Some("webtensor profile"),
            ty: wgpu::QueryType::Timestamp,
            count: 2 * PER_SET as u32,
        });
        self.sets.push(set.clone());
        set
    }

    /// Closes the batch being recorded, submitted or not, whose planning,
    /// encoding and submit started at `started`: its ops get their kernels
    /// (none when it failed before encoding), and the next ops are the next
    /// batch's.
    pub fn close_batch(&mut self, started: Stamp, submitted: bool) {
        let now = Stamp::now();
        let kernels = if submitted {
            self.batch_kernels..self.kernels.len()
        } else {
            // Encoded but never submitted: its kernels never ran, and
            // their timestamps are never written.
            self.kernels.truncate(self.batch_kernels);
            let kept = self.batch_kernels;
            self.readbacks.retain(|r| r.first_kernel < kept);
            self.commands.clear();
            self.batch_kernels..self.batch_kernels
        };
        if submitted {
            self.submits.push(ProfiledSubmit {
                host: started.until(now),
                kernels,
            });
        }
        for (op, &(batch, command)) in self.ops.iter_mut().zip(&self.places).rev() {
            if batch != self.batch {
                break;
            }
            op.kernels = self.commands.get(command).cloned().unwrap_or(0..0);
        }
        self.commands.clear();
        self.batch_kernels = self.kernels.len();
        self.batch += 1;
        self.mark = now;
    }

    /// The profile, once the GPU has run every submit: kernels' GPU times
    /// read from their timestamps (`read` maps a readback buffer and gives
    /// its bytes, waiting for the GPU), in ticks of `period_ns`
    /// nanoseconds; the wall time from the start to the last op, submit or
    /// readback, less the closure's time after its last one.
    ///
    /// A readback that fails leaves its kernels without GPU times (the
    /// profile says so), but for the loss of the device.
    ///
    /// # Errors
    /// `Error::DeviceLost` where `read` returns it.
    pub fn finish(
        mut self,
        period_ns: f32,
        mut read: impl FnMut(&wgpu::Buffer) -> crate::error::Result<Vec<u8>>,
    ) -> crate::error::Result<Profile> {
        let wall = self.started.until(self.mark).saturating_sub(self.idle);
        for r in std::mem::take(&mut self.readbacks) {
            let bytes = match read(&r.buffer) {
                Ok(bytes) => bytes,
                Err(e @ crate::error::Error::DeviceLost { .. }) => return Err(e),
                // The host's times stand without these kernels' GPU times.
                Err(_) => continue,
            };
            let stamp = |q: usize| {
                let mut word = [0u8; 8];
                word.copy_from_slice(bytes.get(8 * q..8 * q + 8)?);
                Some(u64::from_le_bytes(word))
            };
            for k in 0..r.kernels {
                let span = match (stamp(2 * k), stamp(2 * k + 1)) {
                    (Some(start), Some(end)) => end.checked_sub(start),
                    _ => None,
                };
                if let Some(kernel) = self.kernels.get_mut(r.first_kernel + k) {
                    kernel.gpu = span.map(|ticks| {
                        std::time::Duration::from_secs_f64(
                            ticks as f64 * f64::from(period_ns) * 1e-9,
                        )
                    });
                }
            }
        }
        let note = (!self.timestamps).then_some(if cfg!(target_arch = "wasm32") {
            "in a browser, GPU timestamps are read only asynchronously and quantised to 100 µs: not used"
        } else {
            "the device writes no GPU timestamps (no TIMESTAMP_QUERY)"
        });
        Ok(Profile::new(
            self.ops,
            &self.frames,
            self.kernels,
            self.submits,
            wall,
            note,
        ))
    }
}
