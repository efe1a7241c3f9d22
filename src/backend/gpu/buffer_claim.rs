//! A tensor's claim on a device buffer, which an op's output takes only
//! when something needs it.
//!
//! An elementwise op records its output without a buffer: the bytes are
//! reserved under the memory cap (so `OutOfMemory` still comes from the op
//! that asks too much), and the buffer is taken when a flush encodes a
//! dispatch that touches the tensor, or when anything else needs the
//! buffer first (another family's kernel, a readback, the application).
//! An intermediate that fusion folds into its reader and that was dropped
//! before the flush never takes one: its bytes never exist on the device.
//!
//! Recorded commands know a buffer by an id (fusion's hazard checks compare
//! ids, see `fusion/`). A claim's id is its buffer's pool id when the
//! buffer is taken before any command knows the claim; otherwise a fresh id
//! stays the claim's for good, and its buffer, taken later, never carries
//! another id in the batch that knows this one:
//! - it is taken only from buffers not released in the open batch, or
//!   released but known by no command still to be encoded (the flush
//!   knows which), and
//! - released, it is held from everyone but such a flush until the batch
//!   closes.
//!
//! A claim whose tensor is gone before the flush but whose write is not
//! fused away (fusion off, or a chain too long for one kernel) gets a
//! temporary of the flush (see the scheduler), given back once the flush
//! has encoded its last reader.

use super::pool::{BufferPool, PooledBuffer};
use crate::error::{Error, Result};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};

/// One tensor's buffer, taken now or later.
pub(crate) struct BufferClaim {
    /// Bytes the buffer will have (the pool's size for the request).
    size: u64,
    /// Bytes asked for.
    bytes: u64,
    state: Mutex<ClaimState>,
    /// The failure of a batch that was to write this buffer: every later
    /// use of the tensor is that error (see [`BufferClaim::poison`]).
    poison: OnceLock<String>,
}

struct ClaimState {
    buffer: Option<PooledBuffer>,
    /// The id recorded commands know the buffer by.
    id: u64,
    /// A recorded command knows `id`.
    referenced: bool,
    /// The tensor is gone; only recorded commands (and captured steps)
    /// hold the claim.
    orphan: bool,
    /// Captured steps holding the buffer: an orphan gives it back only
    /// once none does (see [`BufferClaim::hold_unless_gone`]).
    holds: u32,
    /// `size` bytes are reserved under the pool's cap.
    reserved: bool,
    /// The buffer is a temporary of the flush that took it.
    temporary: bool,
    /// The buffer was handed to the application (`Tensor::gpu_buffer`),
    /// which may destroy it: it never goes back to the pool.
    handed_out: bool,
}

/// Where a buffer taken by a flush came from.
pub(crate) enum Taken {
    /// The claim already had it, or it is the tensor's own for good.
    Kept,
    /// A temporary of this flush (the tensor is gone): the flush gives it
    /// back after its last use.
    Temporary,
}

impl std::fmt::Debug for BufferClaim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = self.state();
        f.debug_struct("BufferClaim")
            .field("size", &self.size)
            .field("id", &s.id)
            .field("taken", &s.buffer.is_some())
            .finish()
    }
}

impl BufferClaim {
    /// A claim holding `buffer` from the start.
    pub fn ready(buffer: PooledBuffer) -> BufferClaim {
        BufferClaim {
            size: buffer.size,
            bytes: buffer.size,
            state: Mutex::new(ClaimState {
                id: buffer.id,
                buffer: Some(buffer),
                referenced: false,
                orphan: false,
                holds: 0,
                reserved: false,
                temporary: false,
                handed_out: false,
            }),
            poison: OnceLock::new(),
        }
    }

    /// A claim with no buffer yet: `bytes` asked for, `size` reserved under
    /// `pool`'s cap, known by a fresh id until a buffer is taken.
    ///
    /// # Errors
    /// `Error::OutOfMemory` naming `op` when the cap leaves no room.
    pub fn deferred(
        pool: &BufferPool,
        op: &'static str,
        bytes: u64,
        size: u64,
    ) -> Result<BufferClaim> {
        let id = pool.reserve(op, size)?;
        Ok(BufferClaim {
            size,
            bytes,
            state: Mutex::new(ClaimState {
                buffer: None,
                id,
                referenced: false,
                orphan: false,
                holds: 0,
                reserved: true,
                temporary: false,
                handed_out: false,
            }),
            poison: OnceLock::new(),
        })
    }

    /// Marks the buffer as not written as recorded: a batch that was to
    /// write it failed with `failure` (the first failure is kept).
    pub fn poison(&self, failure: &str) {
        let _ = self.poison.set(failure.to_string());
    }

    /// Drops the claim's handle on its buffer: no handle to the claim is
    /// left (see `backend/recycle.rs`).
    pub fn let_go_of_buffer(&mut self) {
        let s = self.state.get_mut().unwrap_or_else(|e| e.into_inner());
        s.buffer = None;
    }

    /// The failure that poisoned the buffer, if one did.
    pub fn poisoned(&self) -> Option<&str> {
        self.poison.get().map(String::as_str)
    }

    /// # Errors
    /// `Error::Gpu` naming `op` when a batch that was to write the buffer
    /// failed (see [`BufferClaim::poison`]).
    pub fn check_poison(&self, op: &'static str) -> Result<()> {
        match self.poisoned() {
            Some(failure) => Err(Error::gpu(
                op,
                format!("the batch that was to write this tensor failed: {failure}"),
            )),
            None => Ok(()),
        }
    }

    fn state(&self) -> MutexGuard<'_, ClaimState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Bytes of the buffer, taken or not.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The id recorded commands know the buffer by; from now on a command
    /// does.
    pub fn reference(&self) -> u64 {
        let mut s = self.state();
        s.referenced = true;
        s.id
    }

    /// True when the tensor is gone and no buffer was taken: a write into
    /// it cannot be observed.
    pub fn is_unobservable(&self) -> bool {
        let s = self.state();
        s.is_gone() && s.buffer.is_none()
    }

    /// True once neither a tensor nor a captured step holds the buffer.
    pub fn is_gone(&self) -> bool {
        self.state().is_gone()
    }

    /// True once a recorded command knows the claim.
    pub fn is_referenced(&self) -> bool {
        self.state().referenced
    }

    /// The id recorded commands know the buffer by.
    pub fn id(&self) -> u64 {
        self.state().id
    }

    /// The buffer, if taken.
    pub fn buffer(&self) -> Option<wgpu::Buffer> {
        self.state().buffer.as_ref().map(|b| b.buffer.clone())
    }

    /// True once a buffer is taken.
    pub fn is_taken(&self) -> bool {
        self.state().buffer.is_some()
    }

    /// The buffer, taken now if it is not yet, and the id commands know it
    /// by (with `reference`, from now on a command does, as
    /// [`BufferClaim::reference`] says). Before any command knows the
    /// claim, any idle buffer will do and the claim takes its id; after, of
    /// the buffers released in the open batch only those whose ids
    /// `unused_from_here` says no command still to be encoded knows.
    ///
    /// # Errors
    /// `Error::OutOfMemory` naming `op` over the cap.
    pub fn take(
        &self,
        pool: &BufferPool,
        target: (&wgpu::Device, &'static str, u64),
        open_batch: &dyn Fn() -> u64,
        unused_from_here: &dyn Fn(u64) -> bool,
        reference: bool,
    ) -> Result<(wgpu::Buffer, u64)> {
        let mut s = self.state();
        self.take_locked(
            &mut s,
            pool,
            target,
            open_batch,
            unused_from_here,
            reference,
        )
    }

    /// [`BufferClaim::take`] under the state's lock, which the caller holds.
    fn take_locked(
        &self,
        s: &mut ClaimState,
        pool: &BufferPool,
        (device, op, limit): (&wgpu::Device, &'static str, u64),
        open_batch: &dyn Fn() -> u64,
        unused_from_here: &dyn Fn(u64) -> bool,
        reference: bool,
    ) -> Result<(wgpu::Buffer, u64)> {
        if let Some(b) = &s.buffer {
            let buffer = b.buffer.clone();
            s.referenced |= reference;
            return Ok((buffer, s.id));
        }
        // The reservation makes room for the buffer itself.
        let reserved = if s.reserved { self.size } else { 0 };
        let b = pool.acquire_for_claim(
            device,
            op,
            (self.bytes, limit, reserved),
            open_batch,
            s.referenced.then_some(unused_from_here),
        )?;
        if !s.referenced {
            s.id = b.id;
        }
        s.reserved = false;
        let buffer = b.buffer.clone();
        s.buffer = Some(b);
        s.referenced |= reference;
        Ok((buffer, s.id))
    }

    /// The buffer for a flush encoding a dispatch that touches it: the
    /// claim's own (taken now if the tensor lives, as [`BufferClaim::take`] says),
    /// or, for a gone tensor, a temporary: `temporary()` gives one of this
    /// claim's size.
    ///
    /// # Errors
    /// As [`BufferClaim::take`], and what `temporary` returns.
    pub fn take_for_flush(
        &self,
        pool: &BufferPool,
        target: (&wgpu::Device, &'static str, u64),
        open_batch: u64,
        unused_from_here: &dyn Fn(u64) -> bool,
        temporary: impl FnOnce(u64) -> Result<PooledBuffer>,
    ) -> Result<(wgpu::Buffer, Taken)> {
        // One lock throughout: a tensor dropped between a check that it
        // lives and the take would leave a buffer nobody gives back.
        let mut s = self.state();
        if let Some(b) = &s.buffer {
            return Ok((b.buffer.clone(), Taken::Kept));
        }
        if s.is_gone() {
            let b = temporary(self.bytes)?;
            let buffer = b.buffer.clone();
            s.buffer = Some(b);
            s.temporary = true;
            return Ok((buffer, Taken::Temporary));
        }
        let (buffer, _) = self.take_locked(
            &mut s,
            pool,
            target,
            &|| open_batch,
            unused_from_here,
            false,
        )?;
        Ok((buffer, Taken::Kept))
    }

    /// The temporary a flush lent this claim, to lend again after the
    /// claim's last use.
    pub fn temporary(&self) -> Option<PooledBuffer> {
        let s = self.state();
        s.buffer.clone().filter(|_| s.temporary)
    }

    /// The tensor is gone: its buffer goes back to the pool (held from
    /// reuse in the open batch when commands know it by another id), or
    /// its reservation is given back, once no captured step holds it.
    /// Recorded commands keep the claim.
    pub fn orphan(&self, pool: &BufferPool, open_batch: &AtomicU64) {
        let mut s = self.state();
        s.orphan = true;
        s.give_back_when_gone(pool, self.size, open_batch);
    }

    /// Marks the buffer as the application's too (`Tensor::gpu_buffer`):
    /// once the tensor is gone it is let go, not pooled, for the
    /// application may have destroyed it.
    pub fn hand_out(&self) {
        self.state().handed_out = true;
    }

    /// Keeps the buffer the claim's, even once the tensor is gone, until
    /// a [`BufferClaim::let_go`]: for a claim the caller knows is not gone
    /// (a device table and the storages over it, see `constants.rs`).
    pub fn hold(&self) {
        self.state().holds += 1;
    }

    /// A captured step binds the buffer on every run: it stays the
    /// claim's, even once the tensor is gone, until the step lets go
    /// (unless the tensor, and every step holding the buffer, is gone
    /// already: checked and held under one lock). True when held.
    /// True when the tensor is gone and its own buffer went back to the
    /// pool (taken outside any command: by an op that failed after
    /// binding it), where a command that still writes it would write the
    /// buffer the pool hands on.
    pub fn released_with_buffer(&self) -> bool {
        let s = self.state();
        s.is_gone() && s.buffer.is_some() && !s.temporary
    }

    pub fn hold_unless_gone(&self) -> bool {
        let mut s = self.state();
        if s.is_gone() {
            return false;
        }
        s.holds += 1;
        true
    }

    /// Ends a hold; the buffer of a gone tensor goes back to the pool
    /// with the last.
    pub fn let_go(&self, pool: &BufferPool, open_batch: &AtomicU64) {
        let mut s = self.state();
        if s.holds > 0 {
            s.holds -= 1;
            s.give_back_when_gone(pool, self.size, open_batch);
        }
    }
}

impl ClaimState {
    fn is_gone(&self) -> bool {
        self.orphan && self.holds == 0
    }

    /// Gives the buffer (or the reservation of `size` bytes) back to
    /// `pool` once neither the tensor nor a captured step holds it.
    ///
    /// The open batch is read only now, after the last hold: a command
    /// another holder recorded before letting go is in that batch or an
    /// earlier one (read before, on a thread racing a flush, it could name
    /// a closed batch, and an upload could then write the buffer before
    /// such a command reads it).
    fn give_back_when_gone(&mut self, pool: &BufferPool, size: u64, open_batch: &AtomicU64) {
        if !self.is_gone() {
            return;
        }
        let open_batch = open_batch.load(Ordering::Acquire);
        if let Some(b) = &self.buffer {
            if self.handed_out {
                pool.forget(b.clone());
            } else if b.id == self.id {
                pool.release(b.clone(), open_batch);
            } else {
                pool.release_held(b.clone(), open_batch, self.id);
            }
        } else if self.reserved {
            self.reserved = false;
            pool.unreserve(size);
        }
    }
}
