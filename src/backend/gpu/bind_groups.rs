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

use crate::layout::Window;
use rustc_hash::{FxHashMap, FxHasher};
use smallvec::SmallVec;
use std::hash::{Hash, Hasher};

/// Groups kept at most (after a flush); past it the least recently used
/// go, down to half as many.
const MAX_GROUPS: usize = 1024;

/// A storage binding: `size` bytes of `buffer` from `offset`, or all of it.
#[derive(Clone, PartialEq, Eq, Hash)]
pub(crate) struct Binding {
    pub buffer: wgpu::Buffer,
    pub window: Option<Window>,
}

impl Binding {
    pub fn whole(buffer: wgpu::Buffer) -> Binding {
        Binding {
            buffer,
            window: None,
        }
    }

    /// Bytes the kernel sees.
    pub fn bytes(&self) -> u64 {
        self.window.map_or(self.buffer.size(), |w| w.size)
    }
}

/// What a bind group binds (wgpu handles compare by identity); the cache
/// files it under its [`GroupProbe`]'s hash.
pub(crate) struct GroupKey {
    pub layout: wgpu::BindGroupLayout,
    pub arena: wgpu::Buffer,
    pub params_size: u64,
    /// Bindings 1.., in order.
    pub buffers: SmallVec<[Binding; 4]>,
}

/// A [`GroupKey`] as a dispatch has it, borrowed: looking a group up
/// clones no handle (each clone and drop is two atomic counts), only
/// making one does.
pub(crate) struct GroupProbe<'a> {
    pub layout: &'a wgpu::BindGroupLayout,
    pub arena: &'a wgpu::Buffer,
    pub params_size: u64,
    pub buffers: &'a [Binding],
}

impl GroupProbe<'_> {
    /// The hash the cache files the group under.
    fn hash(&self) -> u64 {
        let mut h = FxHasher::default();
        (self.layout, self.arena, self.params_size, self.buffers).hash(&mut h);
        h.finish()
    }

    /// True when `key` binds what this names.
    fn matches(&self, key: &GroupKey) -> bool {
        key.layout == *self.layout
            && key.arena == *self.arena
            && key.params_size == self.params_size
            && key.buffers[..] == *self.buffers
    }

    /// The owned key (handles cloned).
    pub fn key(&self) -> GroupKey {
        GroupKey {
            layout: self.layout.clone(),
            arena: self.arena.clone(),
            params_size: self.params_size,
            buffers: self.buffers.iter().cloned().collect(),
        }
    }
}

/// A kept group, its key and the stamp of its last use.
struct Kept {
    key: GroupKey,
    group: wgpu::BindGroup,
    used: u64,
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
    /// Each group with the stamp of its last use, by its probe's hash.
    groups: FxHashMap<u64, SmallVec<[Kept; 1]>>,
    /// Groups kept.
    len: usize,
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
            self.clear();
        }
    }

    /// The group `probe` names, made by `create` when none is kept.
    pub fn get(
        &mut self,
        probe: GroupProbe<'_>,
        create: impl FnOnce(&GroupKey) -> wgpu::BindGroup,
    ) -> wgpu::BindGroup {
        self.stamp += 1;
        let stamp = self.stamp;
        let kept = self.groups.entry(probe.hash()).or_default();
        if let Some(k) = kept.iter_mut().find(|k| probe.matches(&k.key)) {
            k.used = stamp;
            self.counters.reused += 1;
            return k.group.clone();
        }
        let key = probe.key();
        let group = create(&key);
        self.counters.created += 1;
        self.len += 1;
        kept.push(Kept {
            key,
            group: group.clone(),
            used: stamp,
        });
        group
    }

    /// Ends a flush: past [`MAX_GROUPS`], the least recently used go, down
    /// to half as many (so that this happens once per many new groups).
    pub fn end_flush(&mut self) {
        if self.len <= MAX_GROUPS {
            return;
        }
        let mut stamps: Vec<u64> = self.groups.values().flatten().map(|k| k.used).collect();
        stamps.sort_unstable();
        let oldest_kept = stamps[stamps.len() - MAX_GROUPS / 2];
        for kept in self.groups.values_mut() {
            kept.retain(|k| k.used >= oldest_kept);
        }
        self.groups.retain(|_, kept| !kept.is_empty());
        self.len = self.groups.values().map(SmallVec::len).sum();
    }

    /// Drops every group (their buffers may then go).
    pub fn clear(&mut self) {
        self.groups.clear();
        self.len = 0;
    }
}
