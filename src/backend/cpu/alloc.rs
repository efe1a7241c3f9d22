//! Host allocations that fail with an error instead of aborting: a tensor
//! too large for the machine is `Error::OutOfMemory`, as on the GPU.

use crate::error::{Error, Result};
use bytemuck::Zeroable;

/// The error for a refused allocation of `len` elements of `T` for `op`.
pub(crate) fn refused<T>(op: &'static str, len: usize) -> Error {
    Error::OutOfMemory {
        op,
        requested: (len as u64).saturating_mul(size_of::<T>() as u64),
        in_use: 0,
        cap: None,
    }
}

/// `len` zeroed elements, from zeroed pages where the allocator has them (no
/// write pass, as `vec![0; len]`).
///
/// # Errors
/// `Error::OutOfMemory` naming `op` when the allocator refuses.
pub(crate) fn try_zeroed<T: Zeroable>(op: &'static str, len: usize) -> Result<Vec<T>> {
    let layout = std::alloc::Layout::array::<T>(len).map_err(|_| refused::<T>(op, len))?;
    if layout.size() == 0 {
        return Ok(std::iter::repeat_with(T::zeroed).take(len).collect());
    }
    // SAFETY: the layout has a non-zero size. A non-null result is an
    // allocation of the global allocator with exactly the layout of a
    // `Vec<T>` of capacity `len`, and all-zero bytes are a valid `T`
    // (`Zeroable`), so every element is initialised.
    unsafe {
        let ptr = std::alloc::alloc_zeroed(layout).cast::<T>();
        if ptr.is_null() {
            return Err(refused::<T>(op, len));
        }
        Ok(Vec::from_raw_parts(ptr, len, len))
    }
}

/// An empty vector with room for `len` elements.
///
/// # Errors
/// `Error::OutOfMemory` naming `op` when the allocator refuses.
pub(crate) fn try_with_capacity<T>(op: &'static str, len: usize) -> Result<Vec<T>> {
    let mut v = Vec::new();
    v.try_reserve_exact(len)
        .map_err(|_| refused::<T>(op, len))?;
    Ok(v)
}

/// The elements of `iter`, which yields exactly `len`, collected fallibly.
///
/// # Errors
/// As [`try_with_capacity`].
pub(crate) fn try_collect<T>(
    op: &'static str,
    len: usize,
    iter: impl IntoIterator<Item = T>,
) -> Result<Vec<T>> {
    let mut v = try_with_capacity(op, len)?;
    v.extend(iter);
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn impossible_sizes_are_errors() {
        let err = try_zeroed::<f32>("zeros", 1 << 60).unwrap_err();
        assert!(
            matches!(
                err,
                Error::OutOfMemory {
                    op: "zeros",
                    cap: None,
                    ..
                }
            ),
            "{err}"
        );
        assert!(try_zeroed::<f64>("t", usize::MAX / 4).is_err());
        assert!(try_with_capacity::<u8>("t", usize::MAX).is_err());
        assert_eq!(try_zeroed::<i32>("t", 5).unwrap(), [0; 5]);
        assert_eq!(try_zeroed::<()>("t", 3).unwrap().len(), 3);
        assert_eq!(try_collect("t", 3, 0..3).unwrap(), [0, 1, 2]);
    }
}
