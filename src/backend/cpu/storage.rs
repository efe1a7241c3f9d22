//! Host storage: one buffer of the element type behind a lock, so that
//! views sharing it can be written in place.

use super::host_vec::HostVec;
use super::threads::Threads;
use crate::backend::TensorRef;
use crate::dtype::{Element, KernelType};
use crate::error::{Error, Result};
use bytemuck::Zeroable;
use half::{bf16, f16};
use smallvec::SmallVec;
use std::any::Any;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// The host data behind an operand of `op`, locked for reading.
///
/// # Errors
/// As [`Storage::host`].
pub(crate) fn host_data<'a>(
    op: &'static str,
    t: &'a TensorRef,
) -> Result<RwLockReadGuard<'a, CpuData>> {
    Ok(t.storage.host(op)?.read())
}

/// The host data of a kernel's operands, each storage locked for reading
/// once: a second read lock on a storage this thread holds waits behind a
/// write another thread queued between the two (the lock lets a waiting
/// writer go first), and neither moves (a convolution's weight a view of
/// its input, `searchsorted(x, x)`).
pub(crate) struct Reads<'a>(Locked<'a>);

/// The locks of a kernel's operands: inline for the few a kernel has (an
/// elementwise op on the CPU allocates nothing to lock them).
type Locked<'a> = SmallVec<[(&'a CpuStorage, RwLockReadGuard<'a, CpuData>); 4]>;

impl<'a> Reads<'a> {
    /// Locks the storages of `operands` (`None`s skipped), each once.
    ///
    /// # Errors
    /// As [`host_data`].
    pub(crate) fn lock(op: &'static str, operands: &[Option<&'a TensorRef>]) -> Result<Reads<'a>> {
        Ok(Reads::lock_around(op, None, operands)?.0)
    }

    /// Locks `out` for writing and the storages of `operands` (`None`s and
    /// those that are `out` skipped) for reading, each once: for a kernel
    /// that writes a storage others may hold (an in-place op). `out` is
    /// read through its own guard.
    ///
    /// All of a kernel's locks are taken in the order of the storages'
    /// addresses: two threads whose in-place ops each read what the other
    /// writes (`a.add_(&b)` beside `b.add_(&a)`) otherwise hold a read
    /// lock each and wait for each other's write lock forever.
    ///
    /// # Errors
    /// As [`host_data`].
    pub(crate) fn lock_writing(
        op: &'static str,
        out: &'a CpuStorage,
        operands: &[Option<&'a TensorRef>],
    ) -> Result<(Reads<'a>, RwLockWriteGuard<'a, CpuData>)> {
        let (reads, write) = Reads::lock_around(op, Some(out), operands)?;
        let write =
            write.ok_or_else(|| Error::internal(op, "the written storage was not locked"))?;
        Ok((reads, write))
    }

    /// The locks of [`Reads::lock_writing`], `out` optional.
    #[allow(clippy::type_complexity)]
    fn lock_around(
        op: &'static str,
        out: Option<&'a CpuStorage>,
        operands: &[Option<&'a TensorRef>],
    ) -> Result<(Reads<'a>, Option<RwLockWriteGuard<'a, CpuData>>)> {
        let mut storages: SmallVec<[&'a CpuStorage; 4]> = SmallVec::new();
        for t in operands.iter().flatten() {
            let storage = t.storage.host(op)?;
            let known = storages.iter().any(|s| std::ptr::eq(*s, storage));
            if !known && !out.is_some_and(|o| std::ptr::eq(o, storage)) {
                storages.push(storage);
            }
        }
        let address = |s: &CpuStorage| s as *const CpuStorage as usize;
        storages.sort_by_key(|s| address(s));
        let below = out.map_or(storages.len(), |o| {
            storages.partition_point(|s| address(s) < address(o))
        });
        let mut locked = Locked::new();
        for &s in &storages[..below] {
            locked.push((s, s.read()));
        }
        let write = out.map(CpuStorage::write);
        for &s in &storages[below..] {
            locked.push((s, s.read()));
        }
        Ok((Reads(locked), write))
    }

    /// The data of `t`, one of the operands locked.
    ///
    /// # Errors
    /// `Error::Internal` naming `op` for another operand.
    pub(crate) fn of(&self, op: &'static str, t: &TensorRef) -> Result<&CpuData> {
        let storage = t.storage.host(op)?;
        self.0
            .iter()
            .find(|(s, _)| std::ptr::eq(*s, storage))
            .map(|(_, data)| &**data)
            .ok_or_else(|| Error::internal(op, "an operand read was not locked"))
    }
}

/// A kernel's optional f32 bias (or residual) operand: [`Bias::values`]
/// are its elements from its view's first one.
pub(crate) struct Bias<'a>(Option<(&'a CpuData, usize)>);

impl<'a> Bias<'a> {
    /// `bias` (none: none), locked in `reads`.
    ///
    /// # Errors
    /// As [`Reads::of`].
    pub(crate) fn of(
        reads: &'a Reads<'_>,
        op: &'static str,
        bias: Option<&TensorRef>,
    ) -> Result<Bias<'a>> {
        Ok(Bias(match bias {
            Some(b) => Some((reads.of(op, b)?, b.layout.offset())),
            None => None,
        }))
    }

    /// The bias from its first element on, where there is one.
    ///
    /// # Errors
    /// `Error::Internal` naming `op` for a bias that is not f32.
    pub(crate) fn values(&self, op: &'static str) -> Result<Option<&[f32]>> {
        match &self.0 {
            Some((data, offset)) => match data {
                CpuData::F32(b) => Ok(Some(&b[*offset..])),
                _ => Err(Error::internal(
                    op,
                    "a convolution's bias and residual must be f32",
                )),
            },
            None => Ok(None),
        }
    }
}

/// The typed buffer behind a CPU tensor.
pub(crate) enum CpuData {
    F32(HostVec<f32>),
    F16(HostVec<f16>),
    BF16(HostVec<bf16>),
    F64(HostVec<f64>),
    I32(HostVec<i32>),
    I64(HostVec<i64>),
    U32(HostVec<u32>),
    U8(HostVec<u8>),
    Bool(HostVec<bool>),
}

/// Expands `$body` once per variant with `$v` bound to the typed vector.
macro_rules! with_cpu_data {
    ($data:expr, $v:ident => $body:expr) => {
        match $data {
            $crate::backend::cpu::CpuData::F32($v) => $body,
            $crate::backend::cpu::CpuData::F16($v) => $body,
            $crate::backend::cpu::CpuData::BF16($v) => $body,
            $crate::backend::cpu::CpuData::F64($v) => $body,
            $crate::backend::cpu::CpuData::I32($v) => $body,
            $crate::backend::cpu::CpuData::I64($v) => $body,
            $crate::backend::cpu::CpuData::U32($v) => $body,
            $crate::backend::cpu::CpuData::U8($v) => $body,
            $crate::backend::cpu::CpuData::Bool($v) => $body,
        }
    };
}
pub(crate) use with_cpu_data;

impl CpuData {
    /// No elements, with no allocation (a storage's stand-in once its
    /// buffer has gone).
    pub fn empty() -> CpuData {
        CpuData::U8(HostVec::from(Vec::new()))
    }

    /// Wraps a typed vector, without a copy.
    pub fn from_vec<T: Element>(v: Vec<T>) -> CpuData {
        let any: Box<dyn Any> = Box::new(v);
        macro_rules! take {
            ($variant:ident) => {
                match any.downcast::<Vec<_>>() {
                    Ok(b) => CpuData::$variant(HostVec::from(*b)),
                    Err(_) => unreachable!("Element::DTYPE matches the Rust type"),
                }
            };
        }
        match T::KERNEL_TYPE {
            KernelType::F32 => take!(F32),
            KernelType::F16 => take!(F16),
            KernelType::BF16 => take!(BF16),
            KernelType::F64 => take!(F64),
            KernelType::I32 => take!(I32),
            KernelType::I64 => take!(I64),
            KernelType::U32 => take!(U32),
            KernelType::U8 => take!(U8),
            KernelType::Bool => take!(Bool),
        }
    }

    /// A vector of `len` elements of `dtype` whose values are unspecified:
    /// a pooled one's (see `pool.rs`), or zeros. Builds with debug
    /// assertions (the tests) fill it with a poison, all bits set (NaN,
    /// -1, `true`), so that a kernel that leaves an element unwritten
    /// shows.
    ///
    /// # Errors
    /// `Error::OutOfMemory` naming `op` when the host cannot hold it.
    pub fn for_overwrite(op: &'static str, dtype: KernelType, len: usize) -> Result<CpuData> {
        #[allow(unused_mut)]
        let mut data = match super::pool::take(dtype, len) {
            Some(data) => data,
            None => Self::fresh_zeros(op, dtype, len)?,
        };
        #[cfg(debug_assertions)]
        data.poison();
        Ok(data)
    }

    /// Sets every bit of every element (`true` for bool, whose other
    /// values are not valid).
    #[cfg(debug_assertions)]
    fn poison(&mut self) {
        match self {
            CpuData::Bool(v) => v.fill(true),
            CpuData::F32(v) => bytemuck::cast_slice_mut::<_, u8>(v).fill(0xff),
            CpuData::F16(v) => bytemuck::cast_slice_mut::<_, u8>(v).fill(0xff),
            CpuData::BF16(v) => bytemuck::cast_slice_mut::<_, u8>(v).fill(0xff),
            CpuData::F64(v) => bytemuck::cast_slice_mut::<_, u8>(v).fill(0xff),
            CpuData::I32(v) => bytemuck::cast_slice_mut::<_, u8>(v).fill(0xff),
            CpuData::I64(v) => bytemuck::cast_slice_mut::<_, u8>(v).fill(0xff),
            CpuData::U32(v) => bytemuck::cast_slice_mut::<_, u8>(v).fill(0xff),
            CpuData::U8(v) => v.fill(0xff),
        }
    }

    /// A zero-filled vector of `len` elements of `dtype`.
    ///
    /// # Errors
    /// `Error::OutOfMemory` naming `op` when the host cannot hold it.
    pub fn zeros(op: &'static str, dtype: KernelType, len: usize) -> Result<CpuData> {
        if let Some(mut data) = super::pool::take(dtype, len) {
            with_cpu_data!(&mut data, v => v.fill(Zeroable::zeroed()));
            return Ok(data);
        }
        Self::fresh_zeros(op, dtype, len)
    }

    /// A zero-filled vector from the allocator (zeroed pages, no write
    /// pass, where it has them).
    fn fresh_zeros(op: &'static str, dtype: KernelType, len: usize) -> Result<CpuData> {
        Ok(match dtype {
            KernelType::F32 => CpuData::F32(HostVec::try_zeroed(op, len)?),
            KernelType::F16 => CpuData::F16(HostVec::try_zeroed(op, len)?),
            KernelType::BF16 => CpuData::BF16(HostVec::try_zeroed(op, len)?),
            KernelType::F64 => CpuData::F64(HostVec::try_zeroed(op, len)?),
            KernelType::I32 => CpuData::I32(HostVec::try_zeroed(op, len)?),
            KernelType::I64 => CpuData::I64(HostVec::try_zeroed(op, len)?),
            KernelType::U32 => CpuData::U32(HostVec::try_zeroed(op, len)?),
            KernelType::U8 => CpuData::U8(HostVec::try_zeroed(op, len)?),
            KernelType::Bool => CpuData::Bool(HostVec::try_zeroed(op, len)?),
        })
    }

    /// The elements as `&[T]`, or `None` when `T` is not the stored type.
    pub fn as_slice<T: Element>(&self) -> Option<&[T]> {
        with_cpu_data!(self, v => (v as &dyn Any).downcast_ref::<HostVec<T>>().map(|v| &v[..]))
    }

    /// The elements as `&[T]` for the `T` of `_like` (another operand's
    /// elements, inside a `with_cpu_data!` arm that names no type), or
    /// `None` when `T` is not the stored type.
    pub fn as_slice_like<T: Element>(&self, _like: &[T]) -> Option<&[T]> {
        self.as_slice::<T>()
    }

    /// The elements as `&mut [T]`, or `None` when `T` is not the stored type.
    pub fn as_mut_slice<T: Element>(&mut self) -> Option<&mut [T]> {
        with_cpu_data!(self, v => (v as &mut dyn Any).downcast_mut::<HostVec<T>>().map(|v| &mut v[..]))
    }

    pub fn len(&self) -> usize {
        with_cpu_data!(self, v => v.len())
    }

    /// The element type.
    pub fn kernel_type(&self) -> KernelType {
        match self {
            CpuData::F32(_) => KernelType::F32,
            CpuData::F16(_) => KernelType::F16,
            CpuData::BF16(_) => KernelType::BF16,
            CpuData::F64(_) => KernelType::F64,
            CpuData::I32(_) => KernelType::I32,
            CpuData::I64(_) => KernelType::I64,
            CpuData::U32(_) => KernelType::U32,
            CpuData::U8(_) => KernelType::U8,
            CpuData::Bool(_) => KernelType::Bool,
        }
    }

    /// Whether the library allocated it on a cache line (see `host_vec.rs`).
    pub fn is_aligned(&self) -> bool {
        with_cpu_data!(self, v => v.is_aligned())
    }

    /// The bytes the vector holds room for.
    pub fn capacity_bytes(&self) -> usize {
        with_cpu_data!(self, v => capacity_bytes(v))
    }

    /// Shortens the buffer to `len`, or lengthens it within its capacity
    /// (the elements keep what they held; those never initialised are
    /// zeros: `HostVec::resize_within`); `false` (and no change) past
    /// that.
    pub fn resize_within(&mut self, len: usize) -> bool {
        with_cpu_data!(self, v => v.resize_within(len))
    }
}

fn capacity_bytes<T: Copy>(v: &HostVec<T>) -> usize {
    v.capacity() * size_of::<T>()
}

/// A form an op derived from a storage's data, and the count of the
/// storage's write locks it was made at.
type Derived = (u64, Arc<dyn Any + Send + Sync>);

/// Host memory shared by every view of one tensor.
pub(crate) struct CpuStorage {
    data: RwLock<CpuData>,
    /// The pool of the device that made it: ops writing it run there.
    threads: Threads,
    /// The write locks taken so far: while the count is the same, so is
    /// the data.
    writes: AtomicU64,
    /// The last form an op derived from the data ([`CpuStorage::derived`]).
    derived: Mutex<Option<Derived>>,
}

impl CpuStorage {
    pub fn new(data: CpuData, threads: Threads) -> CpuStorage {
        CpuStorage {
            data: RwLock::new(data),
            threads,
            writes: AtomicU64::new(0),
            derived: Mutex::new(None),
        }
    }

    /// What `make` derives from the data, kept for the next call while no
    /// write lock is taken: the kept form where it is a `D` that `fits`,
    /// else `make`'s, kept in its place (one form a storage). A
    /// convolution keeps its weights packed so, as ONNX Runtime packs them
    /// once for a session.
    ///
    /// The caller holds a read lock of the data meanwhile (`Reads`): no
    /// write can then come between the count read here and `make`'s
    /// reads.
    ///
    /// # Errors
    /// `make`'s, where it is called (nothing is kept then).
    pub fn derived<D: Any + Send + Sync>(
        &self,
        fits: impl FnOnce(&D) -> bool,
        make: impl FnOnce() -> Result<D>,
    ) -> Result<Arc<D>> {
        let writes = self.writes.load(Ordering::Acquire);
        let mut slot = self.derived.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((at, kept)) = &*slot
            && *at == writes
            && let Ok(kept) = Arc::clone(kept).downcast::<D>()
            && fits(&kept)
        {
            return Ok(kept);
        }
        let made = Arc::new(make()?);
        *slot = Some((writes, Arc::clone(&made) as Arc<dyn Any + Send + Sync>));
        Ok(made)
    }

    /// The threads of the device that made this storage.
    pub fn threads(&self) -> &Threads {
        &self.threads
    }

    pub fn read(&self) -> RwLockReadGuard<'_, CpuData> {
        self.data.read().unwrap_or_else(|e| e.into_inner())
    }

    /// The data, locked for writing: what was derived from it is made
    /// again after (counted once the lock is held, when no reader is left
    /// to derive from the data as it was).
    pub fn write(&self) -> RwLockWriteGuard<'_, CpuData> {
        let data = self.data.write().unwrap_or_else(|e| e.into_inner());
        self.writes.fetch_add(1, Ordering::AcqRel);
        data
    }

    pub fn len(&self) -> usize {
        self.read().len()
    }
}

impl Drop for CpuStorage {
    /// Keeps a large vector for the next storage (see `pool.rs`).
    fn drop(&mut self) {
        let data = self.data.get_mut().unwrap_or_else(|e| e.into_inner());
        super::pool::give(std::mem::replace(data, CpuData::empty()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_derived_form_is_kept_until_a_write_lock_or_a_misfit() {
        let s = CpuStorage::new(CpuData::from_vec(vec![1f32; 4]), Threads::default());
        let made = std::cell::Cell::new(0);
        let make = |v: u32| {
            made.set(made.get() + 1);
            Ok(v)
        };
        let get = |d: Result<Arc<u64>>| *d.expect("made");
        {
            let _read = s.read();
            assert_eq!(*s.derived(|_: &u32| true, || make(1)).expect("made"), 1);
            // Kept: not made again.
            assert_eq!(*s.derived(|_: &u32| true, || make(2)).expect("made"), 1);
            // A kept form that does not fit, or of another type: made.
            assert_eq!(*s.derived(|&v: &u32| v == 3, || make(3)).expect("made"), 3);
            assert_eq!(get(s.derived(|_: &u64| true, || Ok(4u64))), 4);
            assert_eq!(get(s.derived(|_: &u64| true, || Ok(5u64))), 4);
        }
        assert_eq!(made.get(), 2);
        // A write lock, even one that writes nothing: made again.
        drop(s.write());
        let _read = s.read();
        assert_eq!(get(s.derived(|_: &u64| true, || Ok(6u64))), 6);
        assert_eq!(get(s.derived(|_: &u64| true, || Ok(7u64))), 6);
    }
}
