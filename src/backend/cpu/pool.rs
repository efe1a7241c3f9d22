//! Host buffers kept for reuse. A large vector freed by a dropped tensor
//! is kept here and backs the next tensor of its dtype and about its
//! length, where giving it back to the system allocator would hand a
//! fresh one out as new pages, each faulted in (and zeroed by the kernel)
//! on its first write: on a 2-core VM a network's forward pass spent a
//! fifth of its time in page faults before this pool. The pool is one
//! for the process, as the CPU devices are one memory.

use super::storage::CpuData;
use crate::dtype::KernelType;
use std::sync::Mutex;

/// Buffers smaller than this go back to the allocator, whose own free
/// lists serve them without page faults.
pub(crate) const MIN_BYTES: usize = 64 << 10;

/// Bytes the pool keeps at most: past it, the buffers kept longest go
/// back to the allocator first.
pub(crate) const MAX_BYTES: usize = 256 << 20;

/// What the pool has done so far.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PoolStats {
    /// Buffers taken from the allocator: requests the pool could not serve.
    pub created: u64,
    /// Requests served from the pool.
    pub reused: u64,
    /// Bytes kept now.
    pub bytes_pooled: u64,
}

/// Kept buffers, oldest first, and the pool's counters.
struct Pool {
    kept: Vec<CpuData>,
    bytes: usize,
    /// [`MAX_BYTES`], but for tests.
    max: usize,
    created: u64,
    reused: u64,
}

static POOL: Mutex<Pool> = Mutex::new(Pool::new(MAX_BYTES));

fn pool() -> std::sync::MutexGuard<'static, Pool> {
    POOL.lock().unwrap_or_else(|e| e.into_inner())
}

impl Pool {
    const fn new(max: usize) -> Pool {
        Pool {
            kept: Vec::new(),
            bytes: 0,
            max,
            created: 0,
            reused: 0,
        }
    }

    /// Whether the pool keeps or serves `bytes`.
    fn pooled(&self, bytes: usize) -> bool {
        (MIN_BYTES..=self.max).contains(&bytes)
    }

    /// Keeps `data`, whose size is [`Pool::pooled`]; returns the oldest
    /// kept buffers past the limit, for the allocator. A buffer not
    /// aligned to a cache line (a user's `Vec`) is returned at once: the
    /// tensors the pool backs are every op's outputs, which the kernels
    /// read and write in whole cache lines.
    fn give(&mut self, data: CpuData) -> Vec<CpuData> {
        if !data.is_aligned() {
            return vec![data];
        }
        self.bytes += data.capacity_bytes();
        self.kept.push(data);
        let mut over = 0;
        while self.bytes > self.max {
            self.bytes -= self.kept[over].capacity_bytes();
            over += 1;
        }
        self.kept.drain(..over).collect()
    }

    /// See [`take`].
    fn take(&mut self, dtype: KernelType, len: usize) -> Option<CpuData> {
        let bytes = len.saturating_mul(dtype.dtype().size_in_bytes());
        if !self.pooled(bytes) {
            return None;
        }
        let most = bytes * 2;
        let best = self
            .kept
            .iter()
            .enumerate()
            .filter(|(_, d)| {
                d.kernel_type() == dtype && (bytes..=most).contains(&d.capacity_bytes())
            })
            // The newest: the last freed is the likeliest to be in cache
            // still, where writing a cold one costs a read of each line
            // from memory and the eviction of another (a network's pass
            // on one thread: 42.5 -> 39.1 ms against the best fit).
            .max_by_key(|&(i, _)| i)
            .map(|(i, _)| i);
        let Some(i) = best else {
            self.created += 1;
            return None;
        };
        let data = self.kept.remove(i);
        self.bytes -= data.capacity_bytes();
        self.reused += 1;
        Some(data)
    }
}

/// Keeps `data` for a later [`take`] when it is large enough to be worth
/// it, letting the oldest kept buffers go past [`MAX_BYTES`].
pub(crate) fn give(data: CpuData) {
    // Checked before the lock: most tensors are small.
    if !(MIN_BYTES..=MAX_BYTES).contains(&data.capacity_bytes()) {
        return;
    }
    let gone = pool().give(data);
    // Dropped after the lock, as the allocator may take its time.
    drop(gone);
}

/// A kept vector of `dtype` resized to `len` elements whose values are
/// unspecified (what its earlier tensors left there), or `None` when none
/// fits: the last kept of those holding `len` with at most as much again
/// to spare.
pub(crate) fn take(dtype: KernelType, len: usize) -> Option<CpuData> {
    let mut data = pool().take(dtype, len)?;
    // It holds `len`: taken for it.
    data.resize_within(len).then_some(data)
}

/// Gives every kept buffer back to the allocator.
pub(crate) fn release() {
    let gone = {
        let mut p = pool();
        p.bytes = 0;
        std::mem::take(&mut p.kept)
    };
    drop(gone);
}

/// The pool's counters.
pub(crate) fn stats() -> PoolStats {
    let p = pool();
    PoolStats {
        created: p.created,
        reused: p.reused,
        bytes_pooled: p.bytes as u64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::cpu::host_vec::HostVec;

    fn f32s(len: usize, value: f32) -> CpuData {
        let mut data = CpuData::F32(HostVec::try_zeroed("test", len).unwrap());
        data.as_mut_slice::<f32>().unwrap().fill(value);
        data
    }

    #[test]
    fn a_users_vec_is_not_kept() {
        let mut p = Pool::new(1 << 20);
        let gone = p.give(CpuData::from_vec(vec![1f32; MIN_BYTES]));
        assert_eq!((gone.len(), p.bytes), (1, 0));
        assert!(p.give(f32s(MIN_BYTES, 1.0)).is_empty());
        assert!(p.take(KernelType::F32, MIN_BYTES).unwrap().is_aligned());
    }

    #[test]
    fn a_freed_buffer_backs_the_next_of_its_dtype_and_length() {
        let mut p = Pool::new(1 << 20);
        let len = MIN_BYTES;
        assert!(p.give(f32s(len, 7.0)).is_empty());
        assert_eq!(p.bytes, 4 * MIN_BYTES);
        // Another dtype, or a length the buffer cannot hold, or one it
        // holds with more than as much again to spare: a new buffer.
        assert!(p.take(KernelType::I32, len).is_none());
        assert!(p.take(KernelType::F32, len + 1).is_none());
        assert!(p.take(KernelType::F32, len / 2 - 1).is_none());
        assert_eq!((p.created, p.reused), (3, 0));
        let mut got = p.take(KernelType::F32, len / 2).expect("fits");
        assert_eq!((p.created, p.reused, p.bytes), (3, 1, 0));
        assert!(got.resize_within(len / 2));
        assert_eq!(got.len(), len / 2);
        assert_eq!(got.as_slice::<f32>().unwrap()[0], 7.0);
        assert!(p.take(KernelType::F32, len).is_none());
    }

    #[test]
    fn small_and_huge_buffers_are_not_kept_the_oldest_go_and_the_newest_serve_first() {
        let mut p = Pool::new(4 * MIN_BYTES);
        let len = MIN_BYTES / 4;
        assert!(!p.pooled((len - 1) * 4) && !p.pooled((4 * len + 1) * 4));
        for v in 0..4 {
            assert!(p.give(f32s(len, v as f32)).is_empty());
        }
        let gone = p.give(f32s(len, 4.0));
        assert_eq!(gone.len(), 1);
        assert_eq!(gone[0].as_slice::<f32>().unwrap()[0], 0.0);
        assert_eq!(p.bytes, 4 * MIN_BYTES);
        assert!(p.take(KernelType::F32, len - 1).is_none());
        // The last kept (the likeliest in cache), then the one before.
        for v in [4.0, 3.0] {
            let got = p.take(KernelType::F32, len).unwrap();
            assert_eq!(got.as_slice::<f32>().unwrap()[0], v);
        }
    }

    #[test]
    fn the_last_kept_serves_before_a_closer_fit() {
        let mut p = Pool::new(1 << 20);
        let len = MIN_BYTES / 4;
        assert!(p.give(f32s(len, 1.0)).is_empty());
        assert!(p.give(f32s(2 * len, 2.0)).is_empty());
        assert!(p.give(f32s(3 * len, 3.0)).is_empty());
        // Three times the length is more than as much again to spare.
        let got = p.take(KernelType::F32, len).unwrap();
        assert_eq!(got.as_slice::<f32>().unwrap()[0], 2.0);
        let got = p.take(KernelType::F32, len).unwrap();
        assert_eq!(got.as_slice::<f32>().unwrap()[0], 1.0);
    }
}
