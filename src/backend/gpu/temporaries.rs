//! Temporaries of one flush: buffers for the outputs of ops whose tensors
//! are gone but whose writes were not fused away (see `buffer_claim.rs`).

use super::buffer_claim::{BufferClaim, Taken};
use super::command::Command;
use super::fusion::Step;
use super::pool::PooledBuffer;
use super::target::Target;
use crate::error::Result;
use rustc_hash::FxHashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;

/// Temporaries of one flush: buffers for the outputs of ops whose tensors
/// are gone but whose writes were not fused away (see `buffer_claim.rs`). Each
/// goes to the next such output once the flush has encoded its last use,
/// so a chain that fusion leaves alone needs two, not one per op.
#[derive(Default)]
pub(super) struct Temporaries {
    /// Every temporary taken, to give back when the flush ends.
    pub all: Vec<PooledBuffer>,
    /// Those free for the next output.
    free: Vec<PooledBuffer>,
    /// The last step using each claim of a program.
    last_use: FxHashMap<*const BufferClaim, usize>,
    /// The last step using each buffer id.
    last_use_of_id: FxHashMap<u64, usize>,
    /// Claims holding a temporary, by the step that uses them last.
    lent: Vec<(usize, Arc<BufferClaim>)>,
}

impl Temporaries {
    pub fn new(steps: &[Step], commands: &[Command]) -> Temporaries {
        // Only programs take buffers at flush time (kernel commands bound
        // theirs when recorded): without one, nothing asks.
        if !steps.iter().any(|s| matches!(s, Step::Program(_))) {
            return Temporaries::default();
        }
        let mut last_use = FxHashMap::default();
        let mut last_use_of_id = FxHashMap::default();
        for (index, step) in steps.iter().enumerate() {
            match step {
                Step::Program(p) => {
                    for claim in &p.buffers {
                        last_use.insert(Arc::as_ptr(claim), index);
                        last_use_of_id.insert(claim.id(), index);
                    }
                }
                Step::Kernel(_) => {
                    for b in step.kernel(commands).iter().flat_map(|k| &k.bindings) {
                        last_use_of_id.insert(b.buffer_id, index);
                    }
                }
            }
        }
        Temporaries {
            all: Vec::new(),
            free: Vec::new(),
            last_use,
            last_use_of_id,
            lent: Vec::new(),
        }
    }

    /// True when step `index` writes `out`, whose tensor is gone, which
    /// has no buffer, and which no later step uses: nothing can observe
    /// the write.
    pub fn is_dead(&self, index: usize, out: &Arc<BufferClaim>) -> bool {
        out.is_unobservable() && self.last_use.get(&Arc::as_ptr(out)) == Some(&index)
    }

    /// Takes the buffers of step `index`'s `claims`.
    ///
    /// # Errors
    /// `OutOfMemory` over the memory cap.
    pub fn take(
        &mut self,
        ctx: &Target<'_>,
        index: usize,
        claims: &[Arc<BufferClaim>],
    ) -> Result<()> {
        let open_batch = ctx.open_batch.load(Ordering::Acquire);
        let limit = ctx.facts.max_tensor_bytes();
        // A buffer released while this batch was open is free for this
        // step when no step from here on uses it.
        let last_use_of_id = &self.last_use_of_id;
        let unused_from_here = |id: u64| last_use_of_id.get(&id).is_none_or(|&last| last < index);
        for claim in claims {
            let (_, taken) = claim.take_for_flush(
                ctx.pool,
                (ctx.device, "flush", limit),
                open_batch,
                &unused_from_here,
                |bytes| {
                    let size = claim.size();
                    if let Some(at) = self.free.iter().position(|b| b.size == size) {
                        return Ok(self.free.swap_remove(at));
                    }
                    let b = ctx.pool.acquire_for_flush(
                        ctx.device,
                        "elementwise (an intermediate kept by the flush)",
                        (bytes, limit),
                        || open_batch,
                        unused_from_here,
                    )?;
                    self.all.push(b.clone());
                    Ok(b)
                },
            )?;
            if let Taken::Temporary = taken {
                let last = self.last_use.get(&Arc::as_ptr(claim)).copied();
                self.lent.push((last.unwrap_or(index), claim.clone()));
            }
        }
        Ok(())
    }

    /// Frees the temporaries whose last use was step `index`.
    pub fn after(&mut self, index: usize) {
        let mut k = 0;
        while k < self.lent.len() {
            if self.lent[k].0 <= index {
                let (_, claim) = self.lent.swap_remove(k);
                if let Some(b) = claim.temporary() {
                    self.free.push(b);
                }
            } else {
                k += 1;
            }
        }
    }
}
