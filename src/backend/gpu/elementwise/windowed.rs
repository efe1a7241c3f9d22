//! Programs over buffers larger than one storage binding, made ready for
//! binding in windows (see `layout::windows`): each input gets a binding of
//! its own, so that its window follows only its own elements, and a
//! program whose destination is read far from where it is written goes
//! through a temporary buffer.

use super::program::{Node, Operand, Program};
use crate::backend::gpu::buffer_claim::BufferClaim;
use crate::layout::Layout;
use crate::op::ElementwiseOp;
use smallvec::{SmallVec, smallvec};
use std::sync::Arc;

impl Program {
    /// This program with every input not on the destination's buffer on a
    /// binding of its own (inputs on the destination's buffer stay on its
    /// binding: a buffer written in a dispatch is bound once). Read-only
    /// bindings of one buffer may repeat.
    pub fn unshared(&self) -> Program {
        let mut out = Program {
            nodes: self.nodes.clone(),
            operands: smallvec![self.operands[0]],
            layouts: self.layouts.clone(),
            buffers: smallvec![self.buffers[0].clone()],
            input_dtypes: SmallVec::new(),
            scalars: self.scalars.clone(),
        };
        for o in &self.operands[1..] {
            let binding = if o.binding == 1 {
                1
            } else {
                out.buffers
                    .push(self.buffers[o.binding as usize - 1].clone());
                out.input_dtypes
                    .push(self.input_dtypes[o.binding as usize - 2]);
                out.buffers.len() as u8
            };
            out.operands.push(Operand {
                dtype: o.dtype,
                binding,
            });
        }
        out
    }

    /// The largest distance, in bytes, between where the destination is
    /// written and where an input on the destination's buffer is read at
    /// the same index (0 when none is): a window must hold both.
    pub fn self_read_distance(&self, element_bytes: impl Fn(&Operand) -> u64) -> u64 {
        let out = &self.layouts[0];
        self.operands
            .iter()
            .zip(&self.layouts)
            .skip(1)
            .filter(|(o, _)| o.binding == 1)
            .map(|(o, l)| max_distance(out, l) * element_bytes(o))
            .max()
            .unwrap_or(0)
    }

    /// The program in two steps through `temp`, a buffer holding the
    /// destination's elements contiguously: this program writing `temp`
    /// (every input on a binding of its own, the destination's buffer read
    /// only), then a copy of `temp` into the destination.
    pub fn through(&self, temp: &Arc<BufferClaim>) -> (Program, Program) {
        let dest = self.operands[0];
        let dense = Layout::contiguous(self.layouts[0].shape().clone());
        let mut compute = Program {
            nodes: self.nodes.clone(),
            operands: smallvec![dest],
            layouts: self.layouts.clone(),
            buffers: smallvec![temp.clone()],
            input_dtypes: SmallVec::new(),
            scalars: self.scalars.clone(),
        };
        compute.layouts[0] = dense.clone();
        for o in &self.operands[1..] {
            compute
                .buffers
                .push(self.buffers[o.binding as usize - 1].clone());
            compute.input_dtypes.push(o.dtype);
            compute.operands.push(Operand {
                dtype: o.dtype,
                binding: compute.buffers.len() as u8,
            });
        }
        let copy = Program {
            nodes: smallvec![
                Node::Load(1),
                Node::Apply {
                    kernel: ElementwiseOp::Cast,
                    dtype: dest.dtype,
                    args: smallvec![0],
                },
            ],
            operands: smallvec![
                dest,
                Operand {
                    dtype: dest.dtype,
                    binding: 2,
                },
            ],
            layouts: smallvec![self.layouts[0].clone(), dense],
            buffers: smallvec![self.buffers[0].clone(), temp.clone()],
            input_dtypes: smallvec![dest.dtype],
            scalars: SmallVec::new(),
        };
        (compute, copy)
    }
}

/// The largest `|position in a - position in b|` over the common index
/// space of two layouts of one shape, in elements (0 when empty).
fn max_distance(a: &Layout, b: &Layout) -> u64 {
    if a.numel() == 0 {
        return 0;
    }
    // The difference is linear in the index: its extremes are at corners.
    let mut low = b.offset() as i128 - a.offset() as i128;
    let mut high = low;
    for ((&d, &sa), &sb) in a.dims().iter().zip(a.strides()).zip(b.strides()) {
        let reach = (d as i128 - 1) * (sb as i128 - sa as i128);
        if reach < 0 {
            low += reach;
        } else {
            high += reach;
        }
    }
    low.unsigned_abs().max(high.unsigned_abs()) as u64
}
