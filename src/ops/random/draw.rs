//! A draw made into a fresh tensor where it lives: one kernel on a GPU (in
//! parts where the tensor is larger than one storage binding), the same
//! bits computed on the CPU.

use crate::backend::{Draw, RandomCall, random};
use crate::device::Device;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::shape::Shape;
use crate::tensor::{Tensor, alloc};

/// A fresh tensor of `shape` and `dtype` on `device` holding `draw` from
/// block `block` of `key`'s stream, and the blocks it took.
///
/// # Errors
/// As [`Tensor::zeros`]; GPU failures.
pub(super) fn draw(
    op: &'static str,
    key: [u32; 2],
    block: u64,
    draw: Draw,
    shape: Shape,
    dtype: DType,
    device: &Device,
) -> Result<(Tensor, u64)> {
    shape.check(op)?;
    let n = shape.numel();
    let words = draw.words(dtype.stored_as().0);
    let blocks = (n as u64 * words).div_ceil(4);
    // Past the stream's last block the counter would wrap to its first,
    // and the draw repeat another's numbers.
    if block.checked_add(blocks).is_none() {
        return Err(Error::argument(
            op,
            format!(
                "{blocks} blocks from block {block} pass the end of the stream (2^64 blocks); set another offset"
            ),
        ));
    }
    // The kernel writes whole quads: the storage ends with the last one.
    let storage = alloc(device, op, dtype, n.div_ceil(4) * 4)?;
    let t = Tensor::from_parts(storage, Layout::contiguous(shape), dtype, device.clone());
    if n == 0 {
        return Ok((t, 0));
    }
    // Parts of at most half a binding, each starting a quad (the window
    // a part is bound in starts at an aligned byte, a whole number of
    // quads before it).
    let part = match t.storage().binding_limit() {
        Some(limit) => ((limit / 2) as usize / dtype.size_in_bytes()).max(4) & !3,
        None => n,
    };
    crate::ops::as_op(op, || {
        let mut first = 0;
        while first < n {
            let len = part.min(n - first);
            let layout = Layout::from_parts(Shape::from([len]), smallvec::smallvec![1], first);
            random(&RandomCall {
                key,
                block,
                first: first as u64,
                draw,
                out: t.kernel_out(layout)?,
            })?;
            first += len;
        }
        Ok(())
    })?;
    Ok((t, blocks))
}
