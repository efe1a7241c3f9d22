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

/// `len` initialised elements in an allocation of `cap` of them, made
/// with the alignment `align` by the global allocator (or none, where
/// `cap` is 0).
pub(crate) struct HostVec<T: Copy> {
    ptr: NonNull<T>,
    len: usize,
    cap: usize,
    /// [`ALIGN`], or `T`'s own for a `Vec` taken as it is.
    align: usize,
    _owns: PhantomData<T>,
}

// SAFETY: a `HostVec` owns its elements as a `Vec` does; sending or sharing
// it sends or shares them.
unsafe impl<T: Copy + Send> Send for HostVec<T> {}
// SAFETY: as for `Send`.
unsafe impl<T: Copy + Sync> Sync for HostVec<T> {}

impl<T: Copy> HostVec<T> {
    /// The layout the buffer was allocated with, where it was (`cap` > 0
    /// elements of a non-zero size).
    fn layout(&self) -> Option<Layout> {
        let bytes = self.cap * size_of::<T>();
        // The size and alignment are those of the allocation, which had a
        // valid layout.
        (bytes > 0).then(|| Layout::from_size_align(bytes, self.align).expect("its own layout"))
    }

    /// `len` zeroed elements starting on an [`ALIGN`]-byte boundary, from
    /// zeroed pages where the allocator has them (no write pass).
    ///
    /// # Errors
    /// `Error::OutOfMemory` naming `op` when the size overflows or the
    /// allocator refuses.
    pub(crate) fn try_zeroed(op: &'static str, len: usize) -> Result<HostVec<T>>
    where
        T: Zeroable,
    {
        let align = ALIGN.max(align_of::<T>());
        let layout = len
            .checked_mul(size_of::<T>())
            .and_then(|bytes| Layout::from_size_align(bytes, align).ok())
            .ok_or_else(|| refused::<T>(op, len))?;
        if layout.size() == 0 {
            return Ok(HostVec::from(Vec::new()));
        }
        // SAFETY: the layout has a non-zero size. A non-null result holds
        // `len` elements, all zero bytes, which are a valid `T` (`Zeroable`),
        // and is freed in `drop` with this same layout.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) }.cast::<T>();
        let ptr = NonNull::new(ptr).ok_or_else(|| refused::<T>(op, len))?;
        Ok(HostVec {
            ptr,
            len,
            cap: len,
            align,
            _owns: PhantomData,
        })
    }

    /// Whether it starts on an [`ALIGN`]-byte boundary because the library
    /// allocated it so (a user's `Vec` may start on one by chance, and is
    /// not counted).
    pub(crate) fn is_aligned(&self) -> bool {
        self.align >= ALIGN
    }

    /// The elements the allocation has room for.
    pub(crate) fn capacity(&self) -> usize {
        self.cap
    }

    /// Shortens the buffer to `len` elements, or lengthens it with zeros
    /// within its capacity; `false` (and no change) past that.
    pub(crate) fn resize_within(&mut self, len: usize) -> bool
    where
        T: Zeroable,
    {
        if len > self.cap {
            return false;
        }
        if len > self.len {
            // SAFETY: the elements from `self.len` to `len` lie inside the
            // allocation (`len <= cap`), and are written before they are
            // read as initialised.
            unsafe {
                let tail = self.ptr.as_ptr().add(self.len);
                for i in 0..len - self.len {
                    tail.add(i).write(T::zeroed());
                }
            }
        }
        self.len = len;
        true
    }
}

impl<T: Copy> From<Vec<T>> for HostVec<T> {
    /// Takes the vector's allocation as it is, with no copy.
    fn from(v: Vec<T>) -> HostVec<T> {
        let mut v = std::mem::ManuallyDrop::new(v);
        HostVec {
            // A `Vec`'s pointer is never null (dangling where it holds no
            // allocation).
            ptr: NonNull::new(v.as_mut_ptr()).expect("a Vec's pointer is not null"),
            len: v.len(),
            cap: v.capacity(),
            align: align_of::<T>(),
            _owns: PhantomData,
        }
    }
}

impl<T: Copy> Drop for HostVec<T> {
    fn drop(&mut self) {
        if let Some(layout) = self.layout() {
            // SAFETY: the buffer was allocated by the global allocator with
            // this layout: by `try_zeroed`, or by a `Vec`, which allocates
            // `Layout::array::<T>(cap)` (the same size and `T`'s alignment).
            // Its elements are `Copy`, so nothing is dropped first.
            unsafe { std::alloc::dealloc(self.ptr.as_ptr().cast(), layout) }
        }
    }
}

impl<T: Copy> std::fmt::Debug for HostVec<T> {
    /// Its length, capacity and alignment (not its elements, which may be
    /// millions).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostVec")
            .field("len", &self.len)
            .field("cap", &self.cap)
            .field("align", &self.align)
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

    #[test]
    fn resizing_stays_within_the_allocation_and_zeroes_what_it_adds() {
        let mut v = HostVec::from(vec![7u32; 8]);
        assert!(v.resize_within(3));
        assert_eq!(&v[..], &[7, 7, 7]);
        assert!(v.resize_within(5));
        assert_eq!(&v[..], &[7, 7, 7, 0, 0]);
        assert!(!v.resize_within(9));
        assert_eq!((v.len(), v.capacity()), (5, 8));
        v[4] = 9;
        assert_eq!(v[4], 9);
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
