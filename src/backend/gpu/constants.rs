//! Tables an op needs on the device for every call of one kind (an FFT's
//! twiddles, Bluestein's chirp and its transform), uploaded on the first
//! call and kept by the device, so that later calls upload nothing, do no
//! host work for them, and never flush the open batch for an upload.
//!
//! A table is a claim on a pooled buffer that the cache holds (a
//! [`BufferClaim::hold`], as a captured step holds what it binds); each
//! storage handed out holds it too while it lives. The buffer goes back to
//! the pool once the cache has let go (evicted, or
//! `Device::release_pooled_memory`) and the last storage over it is gone.
//! The cache keeps claims, never storages: a storage holds its device, and
//! a device holding its own storages would never be dropped.
//!
//! The cache is small and bounded: [`MAX_ENTRIES`] tables and
//! [`MAX_BYTES`] in all, the least recently used evicted first. A table
//! larger than [`MAX_TABLE_BYTES`] is uploaded for its call alone.

use super::buffer_claim::BufferClaim;
use super::pool::BufferPool;
use crate::backend::recycle::Shared;
use std::sync::atomic::AtomicU64;
use std::sync::{Mutex, MutexGuard};

/// Tables a device keeps at most.
const MAX_ENTRIES: usize = 64;
/// Bytes of tables a device keeps at most.
const MAX_BYTES: u64 = 64 << 20;
/// The largest table kept; larger ones serve one call.
pub(crate) const MAX_TABLE_BYTES: u64 = 16 << 20;

/// What a table is: the op family's name and the numbers that fix its
/// contents (a length, a direction ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ConstKey {
    pub kind: &'static str,
    pub args: [u64; 3],
}

/// A table kept: its claim (held by the cache), elements and bytes.
#[derive(Clone)]
pub(crate) struct Constant {
    pub claim: Shared<BufferClaim>,
    pub len: usize,
    pub bytes: u64,
}

struct Entry {
    key: ConstKey,
    table: Constant,
    /// When it was last asked for (a counter of the cache's lookups).
    used: u64,
}

#[derive(Default)]
struct Tables {
    entries: Vec<Entry>,
    bytes: u64,
    clock: u64,
}

/// A device's kept tables.
#[derive(Default)]
pub(crate) struct Constants {
    tables: Mutex<Tables>,
}

impl Constants {
    fn tables(&self) -> MutexGuard<'_, Tables> {
        self.tables.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The table kept under `key`, held once more for the caller (who lets
    /// go with [`BufferClaim::let_go`] when done).
    pub fn get(&self, key: &ConstKey) -> Option<Constant> {
        let mut t = self.tables();
        t.clock += 1;
        let now = t.clock;
        let entry = t.entries.iter_mut().find(|e| e.key == *key)?;
        entry.used = now;
        entry.table.claim.hold();
        Some(entry.table.clone())
    }

    /// Keeps `table` (which the caller holds once for the cache) under
    /// `key`, evicting the least recently used tables past the bounds; a
    /// table already kept under `key` (another thread's, made meanwhile)
    /// stays, and `table` is let go.
    pub fn keep(&self, key: ConstKey, table: Constant, pool: &BufferPool, open_batch: &AtomicU64) {
        let mut evicted = Vec::new();
        {
            let mut t = self.tables();
            if t.entries.iter().any(|e| e.key == key) {
                evicted.push(table.claim);
            } else {
                t.clock += 1;
                let used = t.clock;
                t.bytes += table.bytes;
                t.entries.push(Entry { key, table, used });
                while t.entries.len() > MAX_ENTRIES || t.bytes > MAX_BYTES {
                    let Some(oldest) = (0..t.entries.len()).min_by_key(|&k| t.entries[k].used)
                    else {
                        break;
                    };
                    let e = t.entries.swap_remove(oldest);
                    t.bytes -= e.table.bytes;
                    evicted.push(e.table.claim);
                }
            }
        }
        for claim in evicted {
            claim.let_go(pool, open_batch);
        }
    }

    /// Lets go of every table kept.
    pub fn clear(&self, pool: &BufferPool, open_batch: &AtomicU64) {
        let entries = {
            let mut t = self.tables();
            t.bytes = 0;
            std::mem::take(&mut t.entries)
        };
        for e in entries {
            e.table.claim.let_go(pool, open_batch);
        }
    }
}
