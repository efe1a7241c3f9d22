//! The buffer behind a CPU tensor: the elements of a `Vec`, but where the
//! library allocates it, starting on a cache line.
//!
//! The system allocator puts a large block 16 bytes past a page (its
//! header), so a 64-byte vector load from such a block straddles two
//! cache lines at every step: a channels-last depthwise 5x5 over 64
//! channels at 80x80 ran in 0.38 ms from a `Vec` and 0.29 ms from the
//! same values 64 bytes aligned. A buffer the CPU device allocates for an
//! op to write (`CpuData::for_overwrite` and `zeros`, and so every
//! kernel's output and the pool's buffers) is aligned to [`ALIGN`] bytes;
//! a `Vec` handed over (a user's, or one the library filled itself: a
//! GPU readback, `arange`'s values) is kept as it is, without a copy, and
//! is not pooled.

use super::alloc::refused;
use crate::error::Result;
use bytemuck::Zeroable;
use std::alloc::Layout;
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

/// The alignment, in bytes, of the buffers the library allocates: a
/// cache line, and the width of an AVX-512 vector.
pub(crate) const ALIGN: usize = 64;

/// `len` initialised elements at `ptr`, room for `cap`, inside an
/// allocation of the global allocator (none where `cap` is 0).
pub(crate) struct HostVec<T: Copy> {
    ptr: NonNull<T>,
    len: usize,
    cap: usize,
    /// The elements initialised, `len..=cap`: all of a zeroed block, and
    /// of a `Vec` those it held or a resize wrote since.
    init: usize,
    /// The allocation's start and layout, for `dealloc`: `ptr` and a
    /// `Vec`'s layout for a `Vec` taken as it is, or a block up to
    /// [`ALIGN`] bytes before `ptr` for one the library made.
    block: Option<(NonNull<u8>, Layout)>,
    /// Whether the library made it, `ptr` on an [`ALIGN`]-byte boundary.
    aligned: bool,
    _owns: PhantomData<T>,
}

// SAFETY: a `HostVec` owns its elements as a `Vec` does; sending or sharing
// it sends or shares them.
unsafe impl<T: Copy + Send> Send for HostVec<T> {}
// SAFETY: as for `Send`.
unsafe impl<T: Copy + Sync> Sync for HostVec<T> {}

impl<T: Copy> HostVec<T> {
    /// `len` zeroed elements starting on an [`ALIGN`]-byte boundary, from
    /// zeroed pages where the allocator has them (no write pass): the
    /// block is asked for with `T`'s own alignment and [`ALIGN`] bytes
    /// more, which the system allocator serves zeroed (`calloc`) where an
    /// aligned request would be written with zeros first.
    ///
    /// # Errors
    /// `Error::OutOfMemory` naming `op` when the size overflows or the
    /// allocator refuses.
    pub(crate) fn try_zeroed(op: &'static str, len: usize) -> Result<HostVec<T>>
    where
        T: Zeroable,
    {
        let bytes = len
            .checked_mul(size_of::<T>())
            .ok_or_else(|| refused::<T>(op, len))?;
        if bytes == 0 {
            return Ok(HostVec::from(Vec::new()));
        }
        let layout = bytes
            .checked_add(ALIGN)
            .and_then(|size| Layout::from_size_align(size, align_of::<T>()).ok())
            .ok_or_else(|| refused::<T>(op, len))?;
        // SAFETY: the layout has a non-zero size.
        let base = unsafe { std::alloc::alloc_zeroed(layout) };
        let base = NonNull::new(base).ok_or_else(|| refused::<T>(op, len))?;
        // At most ALIGN - 1 bytes in, a multiple of T's size as both the
        // block and ALIGN are aligned to it.
        let skip = base.as_ptr().align_offset(ALIGN);
        debug_assert!(skip < ALIGN && skip.is_multiple_of(align_of::<T>()));
        // SAFETY: `skip + bytes <= ALIGN - 1 + bytes`, inside the block;
        // its `len` elements are all zero bytes, a valid `T` (`Zeroable`).
        let ptr = unsafe { base.add(skip) }.cast::<T>();
        Ok(HostVec {
            ptr,
            len,
            cap: len,
            init: len,
            block: Some((base, layout)),
            aligned: true,
            _owns: PhantomData,
        })
    }

    /// Whether it starts on an [`ALIGN`]-byte boundary because the library
    /// allocated it so (a user's `Vec` may start on one by chance, and is
    /// not counted).
    pub(crate) fn is_aligned(&self) -> bool {
        self.aligned
    }

    /// The elements the allocation has room for.
    pub(crate) fn capacity(&self) -> usize {
        self.cap
    }

    /// Shortens the buffer to `len` elements, or lengthens it within its
    /// capacity: the elements it held before keep their values, and those
    /// never initialised are zeros (a zeroed block's are, so lengthening a
    /// buffer the library made writes nothing: a pooled buffer's
    /// lengthening was a pass of zeros over up to half of it, 0.75 ms of a
    /// network's 28); `false` (and no change) past the capacity.
    pub(crate) fn resize_within(&mut self, len: usize) -> bool
    where
        T: Zeroable,
    {
        if len > self.cap {
            return false;
        }
        if len > self.init {
            // SAFETY: the elements from `init` to `len` lie inside the
            // allocation (`len <= cap`), and are written before they are
            // read as initialised.
            unsafe {
                let tail = self.ptr.as_ptr().add(self.init);
                for i in 0..len - self.init {
                    tail.add(i).write(T::zeroed());
                }
            }
            self.init = len;
        }
        self.len = len;
        true
    }
}

impl<T: Copy> From<Vec<T>> for HostVec<T> {
    /// Takes the vector's allocation as it is, with no copy.
    fn from(v: Vec<T>) -> HostVec<T> {
        let mut v = std::mem::ManuallyDrop::new(v);
        // A `Vec`'s pointer is never null (dangling where it holds no
        // allocation).
        let ptr = NonNull::new(v.as_mut_ptr()).expect("a Vec's pointer is not null");
        let cap = v.capacity();
        // A `Vec` of `cap` elements of non-zero size allocated
        // `Layout::array::<T>(cap)`, which was valid.
        let block = (cap * size_of::<T>() > 0).then(|| {
            (
                ptr.cast::<u8>(),
                Layout::array::<T>(cap).expect("a Vec's layout"),
            )
        });
        HostVec {
            ptr,
            len: v.len(),
            cap,
            init: v.len(),
            block,
            aligned: false,
            _owns: PhantomData,
        }
    }
}

impl<T: Copy> Drop for HostVec<T> {
    fn drop(&mut self) {
        if let Some((base, layout)) = self.block {
            // SAFETY: the global allocator gave `base` with this layout (by
            // `try_zeroed`, or a `Vec`'s); the elements are `Copy`, so
            // nothing is dropped first.
            unsafe { std::alloc::dealloc(base.as_ptr(), layout) }
        }
    }
}

impl<T: Copy> std::fmt::Debug for HostVec<T> {
    /// Its length, capacity, elements initialised and whether the library
    /// aligned it (not its elements, which may be millions).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostVec")
            .field("len", &self.len)
            .field("cap", &self.cap)
            .field("init", &self.init)
            .field("aligned", &self.aligned)
            .finish()
    }
}

impl<T: Copy> Deref for HostVec<T> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        // SAFETY: `ptr` holds `len` initialised elements (or is dangling
        // and aligned where `len` is 0), owned by `self`.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: Copy> DerefMut for HostVec<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: as in `deref`, borrowed mutably through `self`.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_librarys_buffers_start_on_a_cache_line_and_a_users_vec_is_kept_as_it_is() {
        for len in [1, 3, 4096, 1 << 20] {
            let v = HostVec::<f32>::try_zeroed("zeros", len).unwrap();
            assert_eq!(v.as_ptr() as usize % ALIGN, 0, "{len}");
            assert!(v.is_aligned());
            assert_eq!((v.len(), v.capacity()), (len, len));
            assert!(v.iter().all(|&x| x == 0.0));
            let d = HostVec::<f64>::try_zeroed("zeros", len).unwrap();
            assert_eq!(d.as_ptr() as usize % ALIGN, 0, "{len}");
        }
        assert!(HostVec::<u8>::try_zeroed("zeros", 0).unwrap().is_empty());
        let user = vec![1.5f32, 2.5, 3.5];
        let at = user.as_ptr();
        let kept = HostVec::from(user);
        assert!(!kept.is_aligned());
        assert_eq!((kept.as_ptr(), &kept[..]), (at, &[1.5f32, 2.5, 3.5][..]));
    }

    /// This process's resident memory in bytes (Linux).
    #[cfg(target_os = "linux")]
    fn resident() -> usize {
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
        let kib: usize = line.split_whitespace().nth(1).unwrap().parse().unwrap();
        kib << 10
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn a_large_zeroed_buffer_is_not_written_until_used() {
        // Zeroed pages from the system, not a zeroing pass over 1 GiB
        // (which an aligned allocation would have been given): the
        // process's resident memory grows only by what is touched.
        let before = resident();
        let mut v = HostVec::<f32>::try_zeroed("zeros", 1 << 28).unwrap();
        let grown = resident().saturating_sub(before);
        assert!(
            grown < 128 << 20,
            "{grown} bytes resident after the allocation"
        );
        assert_eq!((v[0], v[(1 << 28) - 1]), (0.0, 0.0));
        v[12345] = 1.0;
        assert_eq!(v.iter().step_by(4096).sum::<f32>(), 0.0);
    }

    #[test]
    fn resizing_stays_within_the_allocation_and_zeroes_only_what_was_never_written() {
        let mut held = vec![7u32; 4];
        held.reserve_exact(4);
        let mut v = HostVec::from(held);
        assert_eq!((v.len(), v.capacity()), (4, 8));
        assert!(v.resize_within(3));
        assert_eq!(&v[..], &[7, 7, 7]);
        // The fourth held 7; the fifth and sixth were never initialised.
        assert!(v.resize_within(6));
        assert_eq!(&v[..], &[7, 7, 7, 7, 0, 0]);
        v[5] = 9;
        assert!(v.resize_within(2) && v.resize_within(8));
        assert_eq!(&v[..], &[7, 7, 7, 7, 0, 9, 0, 0]);
        assert!(!v.resize_within(9));
        assert_eq!((v.len(), v.capacity()), (8, 8));
        // A zeroed block: every element initialised, lengthening writes
        // nothing and keeps what was there.
        let mut z = HostVec::<f32>::try_zeroed("zeros", 6).unwrap();
        z[4] = 2.0;
        assert!(z.resize_within(1) && z.resize_within(6));
        assert_eq!(&z[..], &[0.0, 0.0, 0.0, 0.0, 2.0, 0.0]);
    }

    #[test]
    fn impossible_sizes_are_errors() {
        for len in [1 << 60, usize::MAX / 2] {
            let err = HostVec::<f32>::try_zeroed("zeros", len).unwrap_err();
            assert!(
                matches!(
                    err,
                    crate::error::Error::OutOfMemory {
                        op: "zeros",
                        cap: None,
                        ..
                    }
                ),
                "{err}"
            );
        }
        assert!(HostVec::<f64>::try_zeroed("t", usize::MAX / 4).is_err());
    }
}
