//! What a (possibly already merged) program reads, for fusion's checks:
//! its tensor leaves, its distinct scalars and its node count. Leaves name
//! the recorded operand's layout and the permutation into the program's
//! index space, so a footprint is small and merging copies no layout.

use super::perm::{Perm, same_elements};
use crate::backend::gpu::command::{OpArg, RecordedOp, StorageId};
use crate::backend::gpu::elementwise::program::ProgramLimits;
use crate::dtype::KernelType;
use crate::layout::Layout;
use smallvec::SmallVec;
use std::borrow::Cow;

#[derive(Clone)]
pub(super) struct Footprint<'a> {
    /// Inline for the common few.
    pub leaves: SmallVec<[Leaf<'a>; 4]>,
    /// The distinct scalar values (their bits): a program holds each once.
    scalars: SmallVec<[u32; 8]>,
    nodes: usize,
}

/// One tensor a program reads.
#[derive(Clone, Copy)]
pub(super) struct Leaf<'a> {
    pub storage: StorageId,
    pub buffer_id: u64,
    pub dtype: KernelType,
    /// The operand's layout as recorded, ...
    recorded: &'a Layout,
    /// ... and the permutation taking it to the program's index space.
    perm: Perm,
}

impl<'a> Leaf<'a> {
    /// The layout the program reads this leaf through (the recorded one
    /// itself when the permutation keeps every axis).
    pub fn layout(&self) -> Cow<'a, Layout> {
        self.perm.view(self.recorded)
    }
}

impl<'a> Footprint<'a> {
    pub fn of(op: &'a RecordedOp) -> Footprint<'a> {
        let mut f = Footprint {
            leaves: SmallVec::new(),
            scalars: SmallVec::new(),
            nodes: op.args.len() + 1,
        };
        for arg in &op.args {
            if let OpArg::Scalar(s) = arg {
                f.add_scalar(s.bits());
            }
        }
        for t in op.tensor_args() {
            f.add_leaf(Leaf {
                storage: t.id(),
                buffer_id: t.buffer_id,
                dtype: t.dtype,
                recorded: &t.layout,
                perm: Perm::identity(t.layout.rank()),
            });
        }
        f
    }

    /// Permutes every leaf's axes by `perm`.
    pub fn permute(&mut self, perm: &Perm) {
        if perm.is_identity() {
            return;
        }
        for leaf in &mut self.leaves {
            leaf.perm = leaf.perm.then(perm);
        }
    }

    fn add_scalar(&mut self, bits: u32) {
        if !self.scalars.contains(&bits) {
            self.scalars.push(bits);
        }
    }

    fn add_leaf(&mut self, leaf: Leaf<'a>) {
        let known = self.leaves.iter().any(|l| {
            l.storage == leaf.storage
                && (l.perm == leaf.perm && std::ptr::eq(l.recorded, leaf.recorded)
                    || same_elements(&l.layout(), &leaf.layout()))
        });
        if !known {
            self.leaves.push(leaf);
        }
    }

    /// This footprint with the reads of `t` replaced by `producer`'s.
    pub fn inline(&self, t: StorageId, producer: &Footprint<'a>) -> Footprint<'a> {
        let mut merged = Footprint {
            leaves: self
                .leaves
                .iter()
                .filter(|l| l.storage != t)
                .copied()
                .collect(),
            scalars: self.scalars.clone(),
            // The load of `t` becomes the producer's nodes plus a rounding.
            nodes: self.nodes + producer.nodes,
        };
        for leaf in &producer.leaves {
            merged.add_leaf(*leaf);
        }
        for &bits in &producer.scalars {
            merged.add_scalar(bits);
        }
        merged
    }

    /// True when a program reading this and writing the buffer `out` fits.
    pub fn fits(&self, limits: ProgramLimits, out: u64) -> bool {
        let mut inputs: SmallVec<[u64; 8]> = SmallVec::new();
        for l in &self.leaves {
            if l.buffer_id != out && !inputs.contains(&l.buffer_id) {
                inputs.push(l.buffer_id);
            }
        }
        limits.fits(
            self.leaves.len() + 1,
            inputs.len() + 1,
            self.scalars.len(),
            self.nodes,
        )
    }
}
