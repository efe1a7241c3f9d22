//! Bind groups kept across flushes. A dispatch's bind group names its
//! pipeline's layout, the parameter arena (bound at a dynamic offset, so
//! the parameters are not part of it) and its storage buffers with their
//! windows; a program run again on the same buffers (a loop, with the pool
//! handing the same buffers back) finds its group here instead of creating
//! one per dispatch.
//!
//! A kept group holds its buffers alive. Pooled buffers are alive anyway
//! while the pool holds them, so groups go all at once when buffers go for
//! good (the pool dropped idle ones, for a memory cap or
//! `release_pooled_memory`, or a foreign buffer's storage went: see
//! `PoolCounters::dropped`) and when the parameter arena is replaced;
//! beyond [`MAX_GROUPS`] the least recently used go.

use rustc_hash::FxHashMap;
use smallvec::SmallVec;

/// Groups kept at most (after a flush); past it the least recently used
/// go, down to half as many.
const MAX_GROUPS: usize = 1024;

/// One storage binding: the buffer and the bytes bound (`None`: all).
pub(crate) type BoundBytes = (wgpu::Buffer, Option<(u64, u64)>);

/// What a bind group binds (wgpu handles compare by identity).
#[derive(Clone, PartialEq, Eq, Hash)]
pub(crate) struct GroupKey {
    pub layout: wgpu::BindGroupLayout,
    pub arena: wgpu::Buffer,
    pub params_size: u64,
    /// Bindings 1.., in order.
    pub buffers: SmallVec<[BoundBytes; 4]>,
}

/// Counters reported by `Device::stats`.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct GroupCounters {
    pub created: u64,
    pub reused: u64,
}

/// The cache, owned by the scheduler (flushes run one at a time).
#[derive(Default)]
pub(crate) struct BindGroupCache {
    /// Each group with the stamp of its last use.
    groups: FxHashMap<GroupKey, (wgpu::BindGroup, u64)>,
    stamp: u64,
    /// The pool's count of buffers gone for good, at the last flush.
    pool_dropped: u64,
    pub counters: GroupCounters,
}

impl BindGroupCache {
    /// Starts a flush; `pool_dropped` is the pool's count of buffers gone
    /// for good so far (when it moved, every group goes).
    pub fn begin_flush(&mut self, pool_dropped: u64) {
        if pool_dropped != self.pool_dropped {
            self.pool_dropped = pool_dropped;
            self.groups.clear();
        }
    }

    /// The group for `key`, made by `create` when none is kept.
    pub fn get(
        &mut self,
        key: GroupKey,
        create: impl FnOnce(&GroupKey) -> wgpu::BindGroup,
    ) -> wgpu::BindGroup {
        self.stamp += 1;
        let stamp = self.stamp;
        if let Some((group, used)) = self.groups.get_mut(&key) {
            *used = stamp;
            self.counters.reused += 1;
            return group.clone();
        }
        let group = create(&key);
        self.counters.created += 1;
        self.groups.insert(key, (group.clone(), stamp));
        group
    }

    /// Ends a flush: past [`MAX_GROUPS`], the least recently used go, down
    /// to half as many (so that this happens once per many new groups).
    pub fn end_flush(&mut self) {
        if self.groups.len() <= MAX_GROUPS {
            return;
        }
        let mut stamps: Vec<u64> = self.groups.values().map(|(_, used)| *used).collect();
        stamps.sort_unstable();
        let oldest_kept = stamps[stamps.len() - MAX_GROUPS / 2];
        self.groups.retain(|_, (_, used)| *used >= oldest_kept);
    }

    /// Drops every group (their buffers may then go).
    pub fn clear(&mut self) {
        self.groups.clear();
    }
}
