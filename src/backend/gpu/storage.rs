//! Device buffers holding tensor elements, on loan from the device's pool.

use super::buffer_claim::BufferClaim;
use super::constants::{ConstKey, Constant, MAX_TABLE_BYTES};
use super::context::GpuContext;
use super::faults::{FAULT_BYTES, Unread};
pub(crate) use super::kernel::buffer::element_bytes;
use super::kernel::pipeline::submit_scoped;
use super::pool::{BufferKind, PooledBuffer};
use crate::backend::kept::Kept;
use crate::backend::recycle::{self, Shared};
use crate::dtype::{Element, KernelType};
use crate::error::{Error, Result};
use crate::layout::window_of;
use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock};

/// A buffer of `len` elements of `dtype` on one GPU, taken from the pool
/// when first needed (see `buffer_claim.rs`). Dropping it returns the buffer to
/// the pool, unless the application lent it.
pub(crate) struct GpuStorage {
    claim: Shared<BufferClaim>,
    pub len: usize,
    pub dtype: KernelType,
    pub ctx: Arc<GpuContext>,
    owner: Owner,
    /// What brings the data back after a loss, once a tensor asked to
    /// keep it (see `backend/kept.rs`).
    kept: OnceLock<Arc<Kept>>,
}

/// Who gives the buffer back when the storage is dropped.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Owner {
    /// The pool's: back to it (see [`BufferClaim::orphan`]).
    Pool,
    /// The application's buffer (`Tensor::from_gpu_buffer`): never pooled.
    Lent,
    /// A device table's (see `constants.rs`): the storage's hold is let go.
    Held,
}

/// Checks that `len` elements of `dtype` fit one device buffer, and
/// returns the bytes they need (a multiple of 4, at least 4).
///
/// # Errors
/// `UnsupportedDType` for f64, `TooLarge` above the device's largest buffer
/// or 2^31 - 1 elements.
fn storage_bytes(ctx: &GpuContext, op: &'static str, dtype: KernelType, len: usize) -> Result<u64> {
    ctx.check_lost(op)?;
    if dtype == KernelType::F64 {
        return Err(Error::UnsupportedDType {
            op,
            dtype: dtype.dtype(),
            device: format!("the GPU ({})", ctx.facts.name),
        });
    }
    let bytes = (len as u64 * element_bytes(dtype) as u64)
        .next_multiple_of(4)
        .max(4);
    let limit = ctx.facts.max_tensor_bytes();
    if bytes > limit {
        return Err(Error::TooLarge {
            op,
            what: "tensor storage in bytes",
            requested: bytes,
            limit,
        });
    }
    if len > i32::MAX as usize {
        return Err(Error::TooLarge {
            op,
            what: "element count",
            requested: len as u64,
            limit: i32::MAX as u64,
        });
    }
    Ok(bytes)
}

impl GpuStorage {
    /// Whether `len` elements of `dtype` fit one storage of this device.
    ///
    /// # Errors
    /// As [`storage_bytes`].
    pub fn check_fits(
        ctx: &GpuContext,
        op: &'static str,
        dtype: KernelType,
        len: usize,
    ) -> Result<()> {
        storage_bytes(ctx, op, dtype, len).map(|_| ())
    }

    /// Storage whose contents are unspecified, for a destination the next
    /// recorded command overwrites entirely: its bytes are reserved under
    /// the memory cap now, its buffer taken when first needed.
    ///
    /// # Errors
    /// As [`storage_bytes`]; `OutOfMemory` over the memory cap.
    pub fn uninit(
        ctx: &Arc<GpuContext>,
        op: &'static str,
        dtype: KernelType,
        len: usize,
    ) -> Result<GpuStorage> {
        let bytes = storage_bytes(ctx, op, dtype, len)?;
        let size = ctx.pool.size_for(bytes, ctx.facts.max_tensor_bytes());
        let claim = BufferClaim::deferred(&ctx.pool, op, bytes, size)?;
        Ok(GpuStorage {
            claim: Shared::new(recycle::cell(claim)),
            len,
            dtype,
            ctx: ctx.clone(),
            owner: Owner::Pool,
            kept: OnceLock::new(),
        })
    }

    /// A buffer holding `values`. A reused buffer that a pending command may
    /// still read gets the pending batch submitted before the write.
    ///
    /// # Errors
    /// As [`GpuStorage::uninit`]; `Error::Gpu` when the flush fails.
    pub fn upload<T: Element>(
        ctx: &Arc<GpuContext>,
        op: &'static str,
        values: &[T],
    ) -> Result<GpuStorage> {
        let (storage, buffer, needs_flush) = Self::acquire(ctx, op, T::KERNEL_TYPE, values.len())?;
        if needs_flush {
            ctx.flush().map_err(|e| e.named(op))?;
        }
        let mut bytes = Vec::with_capacity(values.len() * element_bytes(T::KERNEL_TYPE) + 3);
        T::write_bytes(values, &mut bytes);
        bytes.resize(bytes.len().next_multiple_of(4), 0);
        if !bytes.is_empty() {
            ctx.queue.write_buffer(&buffer, 0, &bytes);
            ctx.bytes_uploaded
                .fetch_add(bytes.len() as u64, Ordering::Relaxed);
            ctx.uploads
                .note(&ctx.queue, ctx.is_lost(), bytes.len() as u64);
        }
        Ok(storage)
    }

    fn acquire(
        ctx: &Arc<GpuContext>,
        op: &'static str,
        dtype: KernelType,
        len: usize,
    ) -> Result<(GpuStorage, wgpu::Buffer, bool)> {
        let bytes = storage_bytes(ctx, op, dtype, len)?;
        let got = ctx.pool.acquire(
            &ctx.device,
            op,
            BufferKind::Tensor,
            bytes,
            ctx.facts.max_tensor_bytes(),
            || ctx.open_batch(),
        )?;
        let buffer = got.buffer.buffer.clone();
        let storage = GpuStorage {
            claim: Shared::new(recycle::cell(BufferClaim::ready(got.buffer))),
            len,
            dtype,
            ctx: ctx.clone(),
            owner: Owner::Pool,
            kept: OnceLock::new(),
        };
        Ok((storage, buffer, got.needs_flush))
    }

    /// The device's f32 table for `key` (see `constants.rs`): the one kept,
    /// or `make()`'s values uploaded now and kept (uploaded for this call
    /// alone when larger than the cache keeps). Nothing may write it.
    ///
    /// # Errors
    /// `Error::DeviceLost` naming `op` on a lost device; as
    /// [`GpuStorage::upload`].
    pub fn constant(
        ctx: &Arc<GpuContext>,
        op: &'static str,
        key: ConstKey,
        make: impl FnOnce() -> Vec<f32>,
    ) -> Result<GpuStorage> {
        ctx.check_lost(op)?;
        let held = |table: Constant| GpuStorage {
            claim: table.claim,
            len: table.len,
            dtype: KernelType::F32,
            ctx: ctx.clone(),
            owner: Owner::Held,
            kept: OnceLock::new(),
        };
        if let Some(table) = ctx.constants.get(&key) {
            return Ok(held(table));
        }
        let values = make();
        let uploaded = Self::upload(ctx, op, &values)?;
        let bytes = 4 * values.len() as u64;
        if bytes > MAX_TABLE_BYTES {
            return Ok(uploaded);
        }
        let table = Constant {
            claim: uploaded.claim.clone(),
            len: values.len(),
            bytes,
        };
        // One hold for the cache, one for the storage returned; the
        // upload's own storage goes, so the last hold let go frees it.
        table.claim.hold();
        table.claim.hold();
        drop(uploaded);
        let counter = ctx.open_batch_counter();
        ctx.constants.keep(key, table.clone(), &ctx.pool, counter);
        Ok(held(table))
    }

    /// Storage on a buffer the application owns, holding `len` elements of
    /// `dtype` from its start (the caller checked size, usage and dtype).
    pub fn lent(
        ctx: &Arc<GpuContext>,
        buffer: wgpu::Buffer,
        dtype: KernelType,
        len: usize,
    ) -> GpuStorage {
        let size = buffer.size();
        GpuStorage {
            claim: Shared::new(Arc::new(BufferClaim::ready(PooledBuffer {
                buffer,
                id: ctx.pool.fresh_id(),
                size,
                kind: BufferKind::Tensor,
            }))),
            len,
            dtype,
            ctx: ctx.clone(),
            owner: Owner::Lent,
            kept: OnceLock::new(),
        }
    }

    /// The buffer, taken from the pool now if it is not yet (see
    /// `buffer_claim.rs`).
    ///
    /// # Errors
    /// `Error::DeviceLost` naming `op` on a lost device;
    /// `Error::OutOfMemory` over the memory cap; as
    /// [`GpuStorage::check_poison`].
    pub fn buffer(&self, op: &'static str) -> Result<wgpu::Buffer> {
        Ok(self.take(op, false)?.0)
    }

    /// [`GpuStorage::buffer`] and [`GpuStorage::buffer_id`] at once.
    ///
    /// # Errors
    /// As [`GpuStorage::buffer`].
    pub fn bound_buffer(&self, op: &'static str) -> Result<(wgpu::Buffer, u64)> {
        self.take(op, true)
    }

    fn take(&self, op: &'static str, reference: bool) -> Result<(wgpu::Buffer, u64)> {
        self.ctx.check_lost(op)?;
        self.check_poison(op)?;
        let ctx = &self.ctx;
        // Commands of the open batch are all still to be encoded. Its id
        // is read under the pool's lock (see `BufferPool::acquire`).
        let limit = ctx.facts.max_tensor_bytes();
        let target = (&ctx.device, op, limit);
        let open_batch = || ctx.open_batch();
        self.claim
            .take(&ctx.pool, target, &open_batch, &|_| false, reference)
    }

    /// True when the application may write the buffer behind webtensor's
    /// back: its own (`Tensor::from_gpu_buffer`), or one handed to it
    /// (`Tensor::gpu_buffer`).
    pub fn app_may_write(&self) -> bool {
        self.owner == Owner::Lent || self.claim.buffer().is_some_and(|b| self.ctx.is_shared(&b))
    }

    /// What keeps this storage's data for a recovery, if anything does.
    #[inline]
    pub fn kept(&self) -> Option<&Arc<Kept>> {
        self.kept.get()
    }

    /// What keeps this storage's data for a recovery, made now if nothing
    /// did yet and made known to `device`, the handle's device now (whose
    /// recovery restores it: the storage's own, or the one that replaced
    /// it).
    pub fn keep(&self, device: &GpuContext) -> &Arc<Kept> {
        self.kept.get_or_init(|| {
            let kept = Arc::new(Kept::default());
            device.register_kept(&kept);
            kept
        })
    }

    /// The error of `op` meeting this storage where storage `wanted` was
    /// (`"in host memory"`, `"on this GPU"`): `Error::DeviceLost` when its
    /// device is lost (a tensor a recovery left behind), else
    /// `Error::Internal`.
    #[cold]
    #[inline(never)]
    pub fn elsewhere(&self, op: &'static str, wanted: &str) -> Error {
        self.elsewhere_lost(op)
            .unwrap_or_else(|| Error::internal(op, format!("an operand is not {wanted}")))
    }

    /// `Error::Gpu` naming `op` with the first failure of a batch that was
    /// to write this tensor: it holds no data anyone can trust
    /// (`Error::DeviceLost` when its device is lost since).
    ///
    /// # Errors
    /// As described.
    pub fn check_poison(&self, op: &'static str) -> Result<()> {
        // A batch that failed on a device since lost failed with it.
        self.claim
            .check_poison(op)
            .map_err(|e| self.elsewhere_lost(op).unwrap_or(e))
    }

    /// `Error::DeviceLost` naming `op` when the device is lost.
    #[cold]
    #[inline(never)]
    fn elsewhere_lost(&self, op: &'static str) -> Option<Error> {
        self.ctx.is_lost().then(|| self.ctx.lost_error(op))
    }

    /// The claim of the buffer, for a recorded command.
    pub fn claim(&self) -> &Shared<BufferClaim> {
        &self.claim
    }

    /// Bytes of the buffer, taken or not.
    pub fn size(&self) -> u64 {
        self.claim.size()
    }

    /// The id recorded commands know the buffer by (shared by every
    /// storage that held a pooled buffer before any command knew it):
    /// from now on, a command does.
    pub fn buffer_id(&self) -> u64 {
        self.claim.reference()
    }

    pub fn len(&self) -> usize {
        self.len
    }

    /// Bytes one storage binding holds on this device.
    pub fn binding_limit(&self) -> u64 {
        self.ctx.facts.max_storage_binding
    }

    /// True when elements `lo..=hi` can be bound at once: the buffer fits
    /// one storage binding, or the aligned window over them does.
    pub fn window_fits(&self, lo: usize, hi: usize) -> bool {
        let limit = self.binding_limit();
        self.size() <= limit
            || window_of(
                lo,
                hi,
                element_bytes(self.dtype) as u64,
                u64::from(self.ctx.facts.storage_align),
            )
            .size
                <= limit
    }

    /// Reads elements `start..start + count` back to the host as raw bytes
    /// (the device representation), after submitting all pending work.
    ///
    /// # Errors
    /// `Error::Gpu` when mapping fails or the device is lost, naming `op`;
    /// `Error::Index` when an indexing kernel met an out-of-range index
    /// (see `faults.rs`).
    pub async fn read_bytes(
        &self,
        op: &'static str,
        start: usize,
        count: usize,
    ) -> Result<Vec<u8>> {
        // Inside another GPU's captured step (a `to_device` from this GPU
        // there), the read is an op that step's replays would not run: the
        // capture counts it and refuses the step. This GPU's own step
        // refuses its readbacks at the flush.
        super::capture::note_op(self.ctx.id());
        self.read_bytes_with(op, start, count, Faults::Report).await
    }

    /// [`GpuStorage::read_bytes`] of every element, leaving the fault
    /// record for the application's next readback: for webtensor's own
    /// reads (the matmul self-check's probes), which must not take an
    /// index fault of the application's ops as theirs.
    ///
    /// # Errors
    /// `Error::Gpu` when mapping fails or the device is lost.
    #[cfg_attr(target_arch = "wasm32", allow(dead_code))]
    pub async fn read_own_bytes(&self) -> Result<Vec<u8>> {
        self.read_bytes_with("to_vec", 0, self.len, Faults::Leave)
            .await
    }

    async fn read_bytes_with(
        &self,
        op: &'static str,
        start: usize,
        count: usize,
        faults: Faults,
    ) -> Result<Vec<u8>> {
        // A lost device is why a tensor's batch failed, if it did.
        self.ctx.check_lost(op)?;
        self.check_poison(op)?;
        let eb = element_bytes(self.dtype) as u64;
        let first = start as u64 * eb;
        let wanted = count as u64 * eb;
        if wanted == 0 {
            return Ok(Vec::new());
        }
        let aligned_start = first & !3;
        let size = (first + wanted).next_multiple_of(4) - aligned_start;
        host_bytes(op, size, READBACK_BYTES)?;
        let skip = (first - aligned_start) as usize;
        // A buffer no command knows is taken now; one that pending
        // commands know is taken by their flush, which the copy follows
        // (so it may reuse a buffer freed in this batch, see `buffer_claim.rs`).
        if !self.claim.is_referenced() {
            self.buffer(op)?;
        }
        let mut taken = true;
        let bytes = read_back(
            &self.ctx,
            op,
            size,
            skip..skip + wanted as usize,
            faults,
            |encoder, staging| match self.claim.buffer() {
                Some(b) => encoder.copy_buffer_to_buffer(&b, aligned_start, staging, 0, size),
                None => taken = false,
            },
        )
        .await?;
        // Another thread's flush of the batch that was to write this
        // tensor may have failed since the check above.
        self.check_poison(op)?;
        // No buffer: only commands skipped as dead knew it (an
        // `empty_like` read by an op whose result was dropped), and nothing
        // wrote it. Its values are unspecified; zeros.
        Ok(if taken {
            bytes
        } else {
            vec![0; wanted as usize]
        })
    }
}

/// The most bytes one readback takes: what one host `Vec` holds, and on
/// wasm32 half of that (1 GiB), since a browser's mapping is copied into
/// the module's memory whole and the bytes copied again from it, and then
/// typed while the bytes live: two copies at once in a 4 GiB address
/// space, which cannot fail gracefully (a 2 GiB read trapped).
const READBACK_BYTES: u64 = if cfg!(target_arch = "wasm32") {
    isize::MAX as u64 / 2
} else {
    isize::MAX as u64
};

/// `size` bytes read back as one host `Vec` (and, in a browser, a second
/// copy of the mapping wgpu makes), refused past `limit`
/// ([`READBACK_BYTES`]; a tensor of 4 GiB once wrapped to no bytes at all
/// on wasm32).
///
/// # Errors
/// `Error::TooLarge` naming `op`, `size` and `limit`.
fn host_bytes(op: &'static str, size: u64, limit: u64) -> Result<usize> {
    usize::try_from(size)
        .ok()
        .filter(|_| size <= limit)
        .ok_or(Error::TooLarge {
            op,
            what: "bytes read back into one host vector",
            requested: size,
            limit,
        })
}

/// Whether a readback reports the fault record (see `faults.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Faults {
    /// Read it when armed and report what it holds (then it is cleared).
    Report,
    /// Leave it armed for the next readback that reports.
    Leave,
}

/// Submits all pending work plus `copy` (which fills the first `size` bytes
/// of a staging buffer), waits for it and returns bytes `range` of the
/// staging buffer. The device's fault record rides along when armed and
/// `faults` says to report it.
///
/// # Errors
/// `Error::DeviceLost` naming `op` when the device is lost; `Error::Gpu`
/// when mapping fails; `Error::Index` for a recorded out-of-range index.
pub(crate) async fn read_back(
    ctx: &GpuContext,
    op: &'static str,
    size: u64,
    range: std::ops::Range<usize>,
    faults: Faults,
    copy: impl FnOnce(&mut wgpu::CommandEncoder, &wgpu::Buffer),
) -> Result<Vec<u8>> {
    ctx.check_lost(op)?;
    let read = read_back_now(ctx, op, size, range, faults, copy).await;
    ctx.explain_async(op, read).await
}

async fn read_back_now(
    ctx: &GpuContext,
    op: &'static str,
    size: u64,
    range: std::ops::Range<usize>,
    faults: Faults,
    copy: impl FnOnce(&mut wgpu::CommandEncoder, &wgpu::Buffer),
) -> Result<Vec<u8>> {
    let limit = ctx.facts.max_buffer_size;
    let mut faults = faults;
    if faults == Faults::Report && size + FAULT_BYTES > limit {
        // No room for the record beside the bytes in one buffer: it is read
        // first, on its own (after the same pending work).
        if ctx.faults.is_armed() {
            let nothing: fn(&mut wgpu::CommandEncoder, &wgpu::Buffer) = |_, _| {};
            Box::pin(read_back_now(ctx, op, 0, 0..0, faults, nothing)).await?;
        }
        faults = Faults::Leave;
    }
    let total = (size + FAULT_BYTES).min(limit.max(size));
    let acquired = ctx
        .pool
        .acquire(&ctx.device, op, BufferKind::Readback, total, limit, || {
            ctx.open_batch()
        })?;
    let buffer = acquired.buffer.buffer.clone();
    let mut staging = Staging {
        ctx,
        buffer: Some(acquired.buffer),
        mapping: false,
    };
    let mut with_faults = false;
    let mut copy = Some(copy);
    let (flushed, submit_errors) = submit_scoped(&ctx.device, &mut || {
        ctx.scheduler().flush(&ctx.target(), |encoder| {
            if let Some(copy) = copy.take() {
                copy(encoder, &buffer);
            }
            with_faults =
                faults == Faults::Report && ctx.faults.copy_if_armed(encoder, &buffer, size);
        })
    });
    // A submit that failed never ran the fault record's copy and clearing:
    // a fault it holds waits for the next readback.
    if flushed.is_err() && with_faults {
        ctx.faults.arm();
    }
    flushed?;
    let fault_range = size as usize..(size + if with_faults { FAULT_BYTES } else { 0 }) as usize;
    staging.mapping = true;
    // A future dropped at an await below (in a browser) leaves the
    // record's copy to the next readback that reports.
    let mut unread = Unchecked {
        faults: &ctx.faults,
        record: with_faults.then(|| Unread::Mapping(buffer.clone(), size)),
    };
    let result = map_and_read(ctx, op, &buffer, total, |view| {
        (view[range].to_vec(), view[fault_range].to_vec())
    })
    .await;
    unread.record = match &result {
        Ok((_, record)) if with_faults => Some(Unread::Read(record.clone())),
        _ => None,
    };
    // Mapping completes only once the GPU is done with the copy; a buffer
    // whose map failed is let go.
    staging.mapping = result.is_err();
    drop(staging);
    if let Some(e) = submit_errors.await {
        // The failed submit's copy is no record: the record waits, armed.
        unread.record = None;
        if with_faults {
            ctx.faults.arm();
        }
        return Err(Error::gpu(op, format!("the device reported: {e}")));
    }
    unread.record = None;
    let (bytes, record) = result?;
    // An index fault is cleared as it is reported; a device error waits in
    // its claim, so neither is lost when both are there. Records of
    // dropped readbacks came first.
    if faults == Faults::Report {
        ctx.faults.check_unread()?;
    }
    if with_faults {
        super::faults::Faults::check(&record)?;
    }
    ctx.check_device_error(op)?;
    Ok(bytes)
}

/// The record's copy a readback made, until the readback checks it: handed
/// to the next readback when the readback's future is dropped first.
struct Unchecked<'a> {
    faults: &'a super::faults::Faults,
    record: Option<Unread>,
}

impl Drop for Unchecked<'_> {
    fn drop(&mut self) {
        if let Some(record) = self.record.take() {
            self.faults.keep_unread(record);
        }
    }
}

/// A readback's staging buffer, back to the pool when it is dropped, or let
/// go (see [`BufferPool::forget`]) while it may be mapping: a readback's
/// future can be dropped at any await, and its flush can fail.
struct Staging<'a> {
    ctx: &'a GpuContext,
    buffer: Option<PooledBuffer>,
    mapping: bool,
}

impl Drop for Staging<'_> {
    fn drop(&mut self) {
        if let Some(buffer) = self.buffer.take() {
            match self.mapping {
                true => self.ctx.pool.forget(buffer),
                false => self.ctx.pool.release(buffer, self.ctx.open_batch()),
            }
        }
    }
}

impl GpuContext {
    /// Submits pending work and, when an indexing kernel has run since the
    /// last check, reads the fault record back.
    ///
    /// # Errors
    /// `Error::Index` for a recorded out-of-range index; `Error::Gpu` when
    /// the device is lost.
    pub async fn check_faults(&self, op: &'static str) -> Result<()> {
        if self.faults.is_armed() {
            read_back(self, op, 0, 0..0, Faults::Report, |_, _| {}).await?;
        }
        self.check_device_error(op)
    }
}

/// Maps the first `size` bytes of `staging`, passes them to `read`, then
/// unmaps.
pub(crate) async fn map_and_read<R>(
    ctx: &GpuContext,
    op: &'static str,
    staging: &wgpu::Buffer,
    size: u64,
    read: impl FnOnce(&[u8]) -> R,
) -> Result<R> {
    ctx.readbacks.fetch_add(1, Ordering::Relaxed);
    let (sender, receiver) = futures::channel::oneshot::channel();
    staging
        .slice(..size)
        .map_async(wgpu::MapMode::Read, move |r| {
            let _ = sender.send(r);
        });
    ctx.wait_idle(op)?;
    receiver
        .await
        .map_err(|_| Error::gpu(op, "the device was dropped during readback"))?
        .map_err(|e| Error::gpu(op, e.to_string()))?;
    let result = {
        let view = staging
            .slice(..size)
            .get_mapped_range()
            .map_err(|e| Error::gpu(op, e.to_string()))?;
        read(&view)
    };
    staging.unmap();
    // The wait is no op's host time.
    ctx.scheduler().profile_mark();
    Ok(result)
}

impl Drop for GpuStorage {
    fn drop(&mut self) {
        match self.owner {
            Owner::Lent => {
                // Not the pool's: it goes with its last handle, so kept bind
                // groups and the shared buffers must let it go too.
                self.ctx.pool.foreign_dropped();
                self.ctx.forget_unshared();
            }
            // Recorded commands keep the claim; the buffer goes back to the
            // pool.
            Owner::Pool => self
                .claim
                .orphan(&self.ctx.pool, self.ctx.open_batch_counter()),
            Owner::Held => self
                .claim
                .let_go(&self.ctx.pool, self.ctx.open_batch_counter()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readbacks_past_what_a_host_vec_holds_are_refused() {
        // wasm32's limit: a tensor of 4 GiB (once wrapped to 0 bytes) and
        // one of just over 2 GiB are refused, 2 GiB less a byte is not.
        let wasm = i32::MAX as u64;
        for size in [1 << 32, (1 << 31) + 4] {
            match host_bytes("to_vec", size, wasm) {
                Err(Error::TooLarge {
                    op: "to_vec",
                    requested,
                    limit,
                    ..
                }) => assert_eq!((requested, limit), (size, wasm)),
                other => panic!("{size}: {other:?}"),
            }
        }
        assert_eq!(host_bytes("to_vec", wasm, wasm).unwrap() as u64, wasm);
        assert_eq!(
            host_bytes("to_vec", 1 << 32, isize::MAX as u64).ok(),
            usize::try_from(1u64 << 32).ok()
        );
    }
}
