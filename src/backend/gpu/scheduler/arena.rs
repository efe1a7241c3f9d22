//! The parameter arena: one uniform buffer holding the flushes' parameter
//! blocks, bound at dynamic offsets. Writing it is a `write_buffer` (in
//! wgpu a staging buffer, a copy and its tracking: about an eighth of a
//! one-op submit on the host), so the arena remembers the last few batches
//! of blocks it holds, and a flush whose blocks equal one of them (a loop
//! submitting the same ops each time) binds that region instead.
//!
//! A region stays valid until overwritten: every write goes into the queue
//! ahead of the next submit and after the earlier ones, which have read
//! what they needed by then, so rewriting from the start is always safe.

use super::super::bind_groups::BindGroupCache;
use super::super::target::Target;
use rustc_hash::FxHasher;
use std::hash::Hasher;

/// Regions remembered at most (a miss compares against each).
const REGIONS: usize = 32;
/// The smallest arena: room for many one-op regions.
const MIN_ARENA: u64 = 64 << 10;

#[derive(Default)]
pub(super) struct ParamArena {
    buffer: Option<wgpu::Buffer>,
    /// The regions written since the buffer was last filled from its start.
    regions: Vec<Region>,
    /// Where the next region goes.
    end: u64,
    /// The regions' bytes as written (at their offsets).
    shadow: Vec<u8>,
}

struct Region {
    offset: u64,
    len: usize,
    hash: u64,
}

impl ParamArena {
    /// The arena and the offset at which it holds `bytes` (the blocks of
    /// one flush, each aligned), written now unless a region holds them.
    pub fn place(
        &mut self,
        ctx: &Target<'_>,
        bytes: &[u8],
        groups: &mut BindGroupCache,
    ) -> (wgpu::Buffer, u32) {
        let mut hasher = FxHasher::default();
        hasher.write(bytes);
        let hash = hasher.finish();
        let found = self.regions.iter().find(|r| {
            r.len == bytes.len() && r.hash == hash && {
                let at = r.offset as usize;
                self.shadow.get(at..at + r.len) == Some(bytes)
            }
        });
        if let (Some(r), Some(buffer)) = (found, &self.buffer) {
            return (buffer.clone(), r.offset as u32);
        }
        let len = bytes.len() as u64;
        let align = u64::from(ctx.facts.uniform_align).max(4);
        let buffer = match &self.buffer {
            Some(b) if b.size() >= len => {
                let b = b.clone();
                if self.end + len > b.size() || self.regions.len() == REGIONS {
                    self.reset();
                }
                b
            }
            _ => {
                let b = ctx.device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("webtensor params"),
                    size: len.next_power_of_two().max(MIN_ARENA),
                    usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
                    mapped_at_creation: false,
                });
                ctx.pool.note_made(&b);
                // Groups binding the old arena would keep it alive.
                groups.clear();
                self.buffer = Some(b.clone());
                self.reset();
                b
            }
        };
        let offset = self.end;
        ctx.queue.write_buffer(&buffer, offset, bytes);
        let at = offset as usize;
        self.shadow.resize(at, 0);
        self.shadow.extend_from_slice(bytes);
        self.regions.push(Region {
            offset,
            len: bytes.len(),
            hash,
        });
        self.end = (offset + len).next_multiple_of(align);
        (buffer, offset as u32)
    }

    /// Forgets every region: the next one goes at the start.
    fn reset(&mut self) {
        self.regions.clear();
        self.shadow.clear();
        self.end = 0;
    }
}
