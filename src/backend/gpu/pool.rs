//! Device buffers reused by size bucket.
//!
//! Reuse is stream-ordered, as in PyTorch's caching allocator: every GPU
//! command runs in recording order (WebGPU orders the dispatches of a pass
//! and the submits of a queue, with barriers between conflicting uses), so a
//! buffer released by a dropped tensor can back a new tensor at once: every
//! command that read the old tensor was recorded earlier and runs earlier.
//! The one way to break that order is a host write (`queue.write_buffer`),
//! which lands before the next submit and so before commands still pending;
//! [`Acquired::needs_flush`] tells an upload to submit the pending batch
//! first. Readback staging buffers return after their mapping completes,
//! when the GPU is done with them.

use crate::error::{Error, Result};
use rustc_hash::{FxHashMap, FxHashSet};
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::sync::Mutex;

/// What a pooled buffer is for (pools never mix them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum BufferKind {
    /// Tensor storage: STORAGE | COPY_SRC | COPY_DST.
    Tensor,
    /// Readback staging: MAP_READ | COPY_DST.
    Readback,
}

impl BufferKind {
    fn usage(self) -> wgpu::BufferUsages {
        match self {
            BufferKind::Tensor => {
                wgpu::BufferUsages::STORAGE
                    | wgpu::BufferUsages::COPY_SRC
                    | wgpu::BufferUsages::COPY_DST
            }
            BufferKind::Readback => wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        }
    }
}

/// The smallest bucket, in bytes.
const MIN_BUCKET: u64 = 256;

/// The bucket a request of `bytes` is served from: a power of two or one of
/// the three quarter steps above it (at most 25% slack), at least 256 bytes.
pub(crate) fn bucket_size(bytes: u64) -> u64 {
    if bytes <= MIN_BUCKET {
        return MIN_BUCKET;
    }
    let base = 1u64 << (63 - (bytes - 1).leading_zeros());
    let step = base / 4;
    base + (bytes - base).div_ceil(step) * step
}

/// The size of the buffer the pool gives for a request of `bytes` when the
/// device's largest buffer is `limit` and its largest storage binding
/// `binding`: its bucket, or whole vec4s (see the elementwise vec4 access)
/// where the bucket would pass the largest size the request may take. A
/// request that fits one binding is never rounded past it: the ops that
/// bind a buffer whole (scratch, reduction outputs, custom-kernel operands)
/// would refuse it, and a binding that is not a power of two (2^31 - 4
/// bytes on most drivers) lies inside a bucket.
fn buffer_size(bytes: u64, (limit, binding): (u64, u64)) -> u64 {
    let largest = if bytes <= binding {
        binding.min(limit)
    } else {
        limit
    };
    let bucket = bucket_size(bytes);
    if bucket <= largest {
        bucket
    } else if bytes.next_multiple_of(16) <= largest {
        bytes.next_multiple_of(16)
    } else {
        bytes.next_multiple_of(4)
    }
}

/// A buffer on loan from the pool. Cloning clones the handle.
#[derive(Debug, Clone)]
pub(crate) struct PooledBuffer {
    pub buffer: wgpu::Buffer,
    /// Unique per buffer for the device's lifetime (not per loan).
    pub id: u64,
    pub size: u64,
    pub kind: BufferKind,
}

/// The result of [`BufferPool::acquire`].
pub(crate) struct Acquired {
    pub buffer: PooledBuffer,
    /// True when the buffer was released while the batch being recorded was
    /// open, so a pending command may still read it: a host write into it
    /// must wait until that batch is submitted.
    pub needs_flush: bool,
}

struct Free {
    buffer: wgpu::Buffer,
    id: u64,
    released_in_batch: u64,
    /// The id the commands of that batch know the buffer by: `id`, or
    /// another (see [`BufferPool::release_held`]).
    known_as: u64,
}

impl Free {
    /// True when commands of the batch it was released in know it by
    /// another id than the pool's.
    fn held(&self) -> bool {
        self.known_as != self.id
    }
}

/// Counters reported by `Device::stats`.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct PoolCounters {
    pub created: u64,
    pub reused: u64,
    pub bytes_live: u64,
    pub peak_bytes_live: u64,
    pub bytes_pooled: u64,
    /// Bytes promised to tensors whose buffers are taken at the next flush
    /// (see `buffer_claim.rs`): counted under the cap like live ones.
    pub bytes_reserved: u64,
    /// Buffers gone for good: idle ones dropped (to get under the cap, or
    /// cleared) and foreign ones whose storage went. Whatever holds
    /// buffers beyond the pool (kept bind groups) lets go when it moves.
    pub dropped: u64,
}

#[derive(Default)]
struct PoolState {
    free: FxHashMap<(BufferKind, u64), Vec<Free>>,
    /// The [`identity`] of every buffer the pool made that it has not
    /// dropped (wgpu-core never reuses one, so a set of them all would
    /// grow with every buffer made).
    made: FxHashSet<u64>,
    next_id: u64,
    counters: PoolCounters,
    cap: Option<u64>,
}

impl PoolState {
    fn allocated(&self) -> u64 {
        self.counters.bytes_live + self.counters.bytes_pooled + self.counters.bytes_reserved
    }

    /// Refuses `size` more bytes over the cap (after dropping idle buffers,
    /// where that makes room: a request that cannot fit keeps them).
    fn check_cap(&mut self, op: &'static str, size: u64) -> Result<()> {
        let in_use = self.counters.bytes_live + self.counters.bytes_reserved;
        if self.cap.is_some_and(|cap| in_use + size <= cap) {
            self.trim_for(size);
        }
        match self.cap {
            Some(cap) if self.allocated() + size > cap => Err(Error::OutOfMemory {
                op,
                requested: size,
                in_use,
                cap: Some(cap),
            }),
            _ => Ok(()),
        }
    }

    /// Drops idle buffers until `extra` more bytes fit under the cap.
    fn trim_for(&mut self, extra: u64) {
        let Some(cap) = self.cap else { return };
        if self.allocated() + extra <= cap {
            return;
        }
        let mut keys: Vec<(BufferKind, u64)> = self.free.keys().copied().collect();
        keys.sort_by_key(|&(_, size)| std::cmp::Reverse(size));
        for key in keys {
            while self.allocated() + extra > cap {
                let Some(list) = self.free.get_mut(&key) else {
                    break;
                };
                let Some(free) = list.pop() else {
                    break;
                };
                self.made.remove(&identity(&free.buffer));
                self.counters.bytes_pooled -= key.1;
                self.counters.dropped += 1;
            }
        }
        self.free.retain(|_, list| !list.is_empty());
    }
}

/// The buffer pool of one device.
pub(crate) struct BufferPool {
    state: Mutex<PoolState>,
    /// The device's largest storage binding (see [`buffer_size`]).
    binding: u64,
}

/// A buffer handle's identity as wgpu compares handles: for wgpu-core, its
/// id within the instance that made it (so a buffer of another instance
/// can have the identity of one of this device's).
pub(crate) fn identity(buffer: &wgpu::Buffer) -> u64 {
    let mut h = DefaultHasher::new();
    buffer.hash(&mut h);
    h.finish()
}

impl BufferPool {
    /// The pool of a device whose largest storage binding is `binding`
    /// bytes.
    pub fn new(binding: u64) -> BufferPool {
        BufferPool {
            state: Mutex::default(),
            binding,
        }
    }

    /// The size of the buffer a request of `bytes` is served in on a device
    /// whose largest buffer is `limit` (see [`buffer_size`]).
    pub fn size_for(&self, bytes: u64, limit: u64) -> u64 {
        buffer_size(bytes, (limit, self.binding))
    }

    /// Counts `buffer`, made by the device's own code outside the pool (the
    /// parameter arena, the fault record ...), among the buffers it made.
    pub fn note_made(&self, buffer: &wgpu::Buffer) {
        self.state().made.insert(identity(buffer));
    }

    /// Stops counting `buffer` (see [`BufferPool::note_made`]), which its
    /// holder drops now.
    pub fn forget_made(&self, buffer: &wgpu::Buffer) {
        self.state().made.remove(&identity(buffer));
    }

    /// True when `buffer` has the identity of a buffer this pool made (or
    /// was told of by [`BufferPool::note_made`]).
    pub fn made(&self, buffer: &wgpu::Buffer) -> bool {
        self.state().made.contains(&identity(buffer))
    }

    fn state(&self) -> std::sync::MutexGuard<'_, PoolState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A buffer of at least `bytes` for `kind`, reused when one of the same
    /// bucket is idle. `limit` is the largest buffer the device allows;
    /// `open_batch` reads the id of the batch being recorded, which is read
    /// under the pool's lock: read before it, another thread's flush and a
    /// release in the newer batch could come between, and a buffer with a
    /// reader still unsubmitted would seem idle (an upload into it would
    /// then land before that reader runs).
    ///
    /// # Errors
    /// `Error::OutOfMemory` when the memory cap leaves no room.
    pub fn acquire(
        &self,
        device: &wgpu::Device,
        op: &'static str,
        kind: BufferKind,
        bytes: u64,
        limit: u64,
        open_batch: impl Fn() -> u64,
    ) -> Result<Acquired> {
        // A held buffer would be known by two ids in one batch.
        self.take(device, op, (kind, bytes, limit, 0), open_batch, |f| {
            !f.held()
        })
    }

    /// A tensor buffer of at least `bytes` for commands of batch
    /// `open_batch` recorded before it was taken (a temporary of the
    /// scheduler, or a tensor's buffer taken late, see `buffer_claim.rs`): of the
    /// buffers released while that batch was open, only one known by an id
    /// that `unused_from_here` says no command encoded from here on knows
    /// (any other could be overwritten before a command recorded earlier
    /// reads it). A temporary goes back with
    /// [`BufferPool::release`] once encoded: later batches run after it.
    ///
    /// # Errors
    /// As [`BufferPool::acquire`].
    pub fn acquire_for_flush(
        &self,
        device: &wgpu::Device,
        op: &'static str,
        (bytes, limit): (u64, u64),
        open_batch: impl Fn() -> u64,
        unused_from_here: impl Fn(u64) -> bool,
    ) -> Result<PooledBuffer> {
        let request = (BufferKind::Tensor, bytes, limit, 0);
        let reusable = |f: &Free| unused_from_here(f.known_as);
        Ok(self.take(device, op, request, open_batch, reusable)?.buffer)
    }

    /// The tensor buffer of a claim that reserved `reserved` bytes for it
    /// (0 for none, see `buffer_claim.rs`): as [`BufferPool::acquire`], or
    /// with `unused_from_here` as [`BufferPool::acquire_for_flush`]. The
    /// reservation is given back and the buffer taken under one lock, so
    /// that no other request takes the room it kept in between; it stands
    /// when no buffer can be had.
    ///
    /// # Errors
    /// As [`BufferPool::acquire`].
    pub fn acquire_for_claim(
        &self,
        device: &wgpu::Device,
        op: &'static str,
        (bytes, limit, reserved): (u64, u64, u64),
        open_batch: impl Fn() -> u64,
        unused_from_here: Option<&dyn Fn(u64) -> bool>,
    ) -> Result<PooledBuffer> {
        let request = (BufferKind::Tensor, bytes, limit, reserved);
        let reusable = |f: &Free| match unused_from_here {
            Some(unused) => unused(f.known_as),
            None => !f.held(),
        };
        Ok(self.take(device, op, request, open_batch, reusable)?.buffer)
    }

    /// [`BufferPool::acquire`], taking of the buffers released in
    /// `open_batch` only those `reusable` accepts, for a request that had
    /// `reserved` bytes reserved (given back first).
    fn take(
        &self,
        device: &wgpu::Device,
        op: &'static str,
        (kind, bytes, limit, reserved): (BufferKind, u64, u64, u64),
        open_batch: impl Fn() -> u64,
        reusable: impl Fn(&Free) -> bool,
    ) -> Result<Acquired> {
        let size = self.size_for(bytes, limit);
        let mut state = self.state();
        state.counters.bytes_reserved -= reserved;
        let open_batch = open_batch();
        // The newest buffer of a closed batch, else the newest of the open
        // one that `reusable` takes (an upload into one waits for a flush).
        let reusable = state.free.get_mut(&(kind, size)).and_then(|list| {
            let at = list
                .iter()
                .rposition(|f| f.released_in_batch != open_batch)
                .or_else(|| list.iter().rposition(&reusable))?;
            Some(list.remove(at))
        });
        if let Some(free) = reusable {
            let c = &mut state.counters;
            c.reused += 1;
            c.bytes_pooled -= size;
            c.bytes_live += size;
            c.peak_bytes_live = c.peak_bytes_live.max(c.bytes_live + c.bytes_reserved);
            return Ok(Acquired {
                buffer: PooledBuffer {
                    buffer: free.buffer,
                    id: free.id,
                    size,
                    kind,
                },
                needs_flush: free.released_in_batch == open_batch,
            });
        }
        if let Err(e) = state.check_cap(op, size) {
            state.counters.bytes_reserved += reserved;
            return Err(e);
        }
        let buffer = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(match kind {
                BufferKind::Tensor => "webtensor tensor",
                BufferKind::Readback => "webtensor readback",
            }),
            size,
            usage: kind.usage(),
            mapped_at_creation: false,
        });
        state.next_id += 1;
        let id = state.next_id;
        state.made.insert(identity(&buffer));
        let c = &mut state.counters;
        c.created += 1;
        c.bytes_live += size;
        c.peak_bytes_live = c.peak_bytes_live.max(c.bytes_live + c.bytes_reserved);
        Ok(Acquired {
            buffer: PooledBuffer {
                buffer,
                id,
                size,
                kind,
            },
            needs_flush: false,
        })
    }

    /// Promises `size` bytes (a [`buffer_size`]) under the cap to a buffer
    /// taken later (which then fits, idle buffers dropped if need be);
    /// [`BufferPool::unreserve`] gives the promise back. Returns a fresh
    /// buffer id for the claim (as [`BufferPool::fresh_id`], under the same
    /// lock).
    ///
    /// # Errors
    /// `Error::OutOfMemory` naming `op` when the cap leaves no room.
    pub fn reserve(&self, op: &'static str, size: u64) -> Result<u64> {
        let mut state = self.state();
        // Idle buffers do not count: taking the buffer reuses one of them
        // or drops them to make room.
        if let Some(cap) = state.cap {
            let c = &state.counters;
            let in_use = c.bytes_live + c.bytes_reserved;
            if in_use + size > cap {
                return Err(Error::OutOfMemory {
                    op,
                    requested: size,
                    in_use,
                    cap: Some(cap),
                });
            }
        }
        let c = &mut state.counters;
        c.bytes_reserved += size;
        c.peak_bytes_live = c.peak_bytes_live.max(c.bytes_live + c.bytes_reserved);
        state.next_id += 1;
        Ok(state.next_id)
    }

    /// Gives back a promise of [`BufferPool::reserve`].
    pub fn unreserve(&self, size: u64) {
        self.state().counters.bytes_reserved -= size;
    }

    /// A new buffer id for a buffer the pool does not own (one the
    /// application lent) or not yet taken, so that batches tell it apart
    /// from pooled ones.
    pub fn fresh_id(&self) -> u64 {
        let mut state = self.state();
        state.next_id += 1;
        state.next_id
    }

    /// Counts the drop of a storage on a buffer the pool does not own (see
    /// [`PoolCounters::dropped`]).
    pub fn foreign_dropped(&self) {
        self.state().counters.dropped += 1;
    }

    /// Takes a buffer back; `open_batch` is the id of the batch being
    /// recorded, which may still hold commands that use it.
    pub fn release(&self, buffer: PooledBuffer, open_batch: u64) {
        let id = buffer.id;
        self.put_back(buffer, open_batch, id);
    }

    /// [`BufferPool::release`] of a buffer that commands of the open batch
    /// know by `known_as`, not the pool's id (a tensor's buffer taken after
    /// it was recorded, see `buffer_claim.rs`): before the batch closes only a
    /// flush takes it, for a step after every use of `known_as`, so that
    /// within one batch a buffer has one id at a time.
    pub fn release_held(&self, buffer: PooledBuffer, open_batch: u64, known_as: u64) {
        self.put_back(buffer, open_batch, known_as);
    }

    /// Lets `buffer` go rather than pool it (a readback's staging buffer
    /// that a dropped future or a failed map may leave mapping): its bytes
    /// stop counting as live.
    pub fn forget(&self, buffer: PooledBuffer) {
        let mut state = self.state();
        state.counters.bytes_live -= buffer.size;
        state.made.remove(&identity(&buffer.buffer));
    }

    fn put_back(&self, buffer: PooledBuffer, open_batch: u64, known_as: u64) {
        let mut state = self.state();
        state.counters.bytes_live -= buffer.size;
        state.counters.bytes_pooled += buffer.size;
        state
            .free
            .entry((buffer.kind, buffer.size))
            .or_default()
            .push(Free {
                buffer: buffer.buffer,
                id: buffer.id,
                released_in_batch: open_batch,
                known_as,
            });
        state.trim_for(0);
    }

    /// The cap on bytes held, if any.
    pub fn cap(&self) -> Option<u64> {
        self.state().cap
    }

    /// Sets or clears the cap on bytes held (live plus idle), dropping idle
    /// buffers to get under it.
    pub fn set_cap(&self, cap: Option<u64>) {
        let mut state = self.state();
        state.cap = cap;
        state.trim_for(0);
    }

    /// Drops every idle buffer.
    pub fn clear(&self) {
        let mut state = self.state();
        let idle: usize = state.free.values().map(Vec::len).sum();
        for free in std::mem::take(&mut state.free).into_values().flatten() {
            state.made.remove(&identity(&free.buffer));
        }
        state.counters.bytes_pooled = 0;
        state.counters.dropped += idle as u64;
    }

    pub fn counters(&self) -> PoolCounters {
        self.state().counters
    }
}

#[cfg(test)]
mod tests {
    use super::{BufferKind, BufferPool, bucket_size, buffer_size};

    #[test]
    fn the_open_batch_is_read_under_the_pools_lock() {
        // Issue 44 item 17: an upload read the open batch's id, then took
        // a buffer. Another thread's flush and a release in the newer batch
        // could come between; the buffer, released while its reader was
        // still unsubmitted, seemed idle, and the upload's write landed
        // before that reader ran. Read under the lock, no flush or release
        // comes between.
        let (device, _queue) = wgpu::Device::noop(&Default::default());
        let pool = BufferPool::new(u64::MAX);
        let take = |batch: u64| {
            pool.acquire(&device, "test", BufferKind::Tensor, 1024, 1 << 20, || {
                assert!(pool.state.try_lock().is_err(), "read outside the lock");
                batch
            })
            .unwrap()
        };
        let first = take(3);
        assert!(!first.needs_flush);
        pool.release(first.buffer, 3);
        // The same buffer, with a reader that may be pending in batch 3.
        let again = take(3);
        assert!(again.needs_flush);
        pool.release(again.buffer, 3);
        // Batch 3 is submitted: nothing to wait for.
        assert!(!take(4).needs_flush);
    }

    #[test]
    fn a_claims_reservation_becomes_its_buffer_or_stands() {
        // The reservation is given back and the buffer taken under one
        // lock: given back first, another thread's reservation could take
        // the room, and the flush taking the buffer fail over the cap.
        let (device, _queue) = wgpu::Device::noop(&Default::default());
        let pool = BufferPool::new(u64::MAX);
        pool.set_cap(Some(4096));
        let limit = 1 << 20;
        pool.reserve("test", 2048).unwrap();
        // No room for another promise of as much, over a live 2048.
        let live = pool
            .acquire(&device, "test", BufferKind::Tensor, 2048, limit, || 0)
            .unwrap();
        assert!(pool.reserve("test", 2048).is_err());
        // A claim of more than it reserved cannot have its buffer: its
        // promise stands.
        let over = pool.acquire_for_claim(&device, "test", (4096, limit, 2048), || 0, None);
        assert!(over.is_err());
        assert_eq!(pool.counters().bytes_reserved, 2048);
        // The claim's own buffer comes out of its own promise.
        let mine = pool
            .acquire_for_claim(&device, "test", (2048, limit, 2048), || 0, None)
            .unwrap();
        let c = pool.counters();
        assert_eq!((c.bytes_reserved, c.bytes_live), (0, 4096));
        pool.release(mine, 0);
        pool.release(live.buffer, 0);
    }

    #[test]
    fn buckets_waste_at_most_a_quarter() {
        assert_eq!(bucket_size(1), 256);
        assert_eq!(bucket_size(256), 256);
        assert_eq!(bucket_size(257), 320);
        assert_eq!(bucket_size(512), 512);
        assert_eq!(bucket_size(513), 640);
        assert_eq!(bucket_size(64 << 20), 64 << 20);
        for bytes in (1..100_000u64).step_by(97) {
            let b = bucket_size(bytes);
            assert!(
                b >= bytes && (b <= 256 || b * 4 <= bytes * 5 + 4 * 64),
                "{bytes} -> {b}"
            );
            // Whole vec4s: the elementwise vec4 access reads a buffer's
            // last elements as part of one.
            assert_eq!(b % 16, 0);
        }
    }

    #[test]
    fn requests_under_the_binding_stay_under_it() {
        let gib = 1u64 << 30;
        let binding = (1 << 31) - 4;
        let limit = 8 * gib;
        // 1.9 GiB is in the 2 GiB bucket, past the binding: whole vec4s.
        let bytes = 1_900 << 20;
        assert_eq!(buffer_size(bytes, (limit, binding)), bytes);
        assert_eq!(buffer_size(binding - 2, (limit, binding)), binding);
        assert_eq!(buffer_size(binding, (limit, binding)), binding);
        // Past the binding, buckets again (windows bind such buffers).
        assert_eq!(buffer_size(binding + 4, (limit, binding)), 2 * gib);
        assert_eq!(buffer_size(binding + 8, (limit, binding)), 2560 << 20);
        // Under, buckets as before.
        assert_eq!(buffer_size(1_500 << 20, (limit, binding)), 1_536 << 20);
        for bytes in (4..4_000_000u64).step_by(4093) {
            let size = buffer_size(bytes, (limit, 1_000_000));
            assert!(size >= bytes && size.is_multiple_of(4), "{bytes} -> {size}");
            assert!(bytes > 1_000_000 || size <= 1_000_000, "{bytes} -> {size}");
        }
    }
}
