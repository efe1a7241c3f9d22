//! What a (possibly already merged) program reads, for fusion's checks:
//! its tensor leaves, its distinct scalars and its node count. Leaves name
//! the recorded operand's layout and the permutation into the program's
//! index space, so a footprint is small and merging copies no layout.

use super::perm::{Perm, same_elements};
use crate::backend::gpu::command::{OpArg, RecordedOp, StorageId};
use crate::backend::gpu::elementwise::params::MAX_OPERANDS;
use crate::backend::gpu::elementwise::program::ProgramLimits;
use crate::dtype::KernelType;
use crate::layout::Layout;
use smallvec::SmallVec;
use std::borrow::Cow;

#[derive(Clone)]
pub(super) struct Footprint<'a> {
    /// Inline for the common few (room for all eight a program can bind
    /// measured slower: every fold moves footprints).
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

    /// Nodes of the program, at most (loads counted once per read).
    pub fn nodes(&self) -> usize {
        self.nodes
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
        if !self.leaves.iter().any(|l| l.reads_as(&leaf)) {
            self.leaves.push(leaf);
        }
    }

    /// Replaces this footprint's reads of `t` by `producer`'s, when the
    /// merged program, writing the buffer `out`, fits `limits`; returns
    /// whether it did (else this is unchanged). Merges in place: the common
    /// fold copies nothing but the producer's new leaves.
    pub fn try_inline(
        &mut self,
        t: StorageId,
        producer: &Footprint<'a>,
        limits: ProgramLimits,
        out: u64,
    ) -> bool {
        let kept = |l: &&Leaf<'a>| l.storage != t;
        // The producer's leaves the merged program reads anew (a producer
        // that fits has fewer than 64).
        let mut new_leaves = 0u64;
        for (k, leaf) in producer.leaves.iter().enumerate() {
            if !self.leaves.iter().filter(kept).any(|l| l.reads_as(leaf)) {
                new_leaves |= 1 << k;
            }
        }
        let is_new = |k: usize| new_leaves & (1 << k) != 0;
        let leaves = self.leaves.iter().filter(kept).count() + new_leaves.count_ones() as usize;
        let new_scalars = producer
            .scalars
            .iter()
            .filter(|b| !self.scalars.contains(b))
            .count();
        // One binding per buffer and dtype, as the builder binds them.
        let mut inputs: SmallVec<[(u64, KernelType); MAX_OPERANDS]> = SmallVec::new();
        let reads = self.leaves.iter().filter(kept).chain(
            (0..producer.leaves.len())
                .filter(|&k| is_new(k))
                .map(|k| &producer.leaves[k]),
        );
        for l in reads {
            let key = (l.buffer_id, l.dtype);
            if l.buffer_id != out && !inputs.contains(&key) {
                inputs.push(key);
            }
        }
        // The load of `t` becomes the producer's nodes plus a rounding.
        let nodes = self.nodes + producer.nodes;
        if !limits.fits(
            leaves + 1,
            inputs.len() + 1,
            self.scalars.len() + new_scalars,
            nodes,
        ) {
            return false;
        }
        self.leaves.retain(|l| l.storage != t);
        for (k, leaf) in producer.leaves.iter().enumerate() {
            if is_new(k) {
                self.leaves.push(*leaf);
            }
        }
        for &bits in &producer.scalars {
            self.add_scalar(bits);
        }
        self.nodes = nodes;
        true
    }
}

impl Leaf<'_> {
    /// True when a program reads the same elements of the same storage
    /// through `self` as through `other`.
    fn reads_as(&self, other: &Leaf<'_>) -> bool {
        self.storage == other.storage
            && (self.perm == other.perm && std::ptr::eq(self.recorded, other.recorded)
                || same_elements(&self.layout(), &other.layout()))
    }
}
