//! Turning a batch of recorded commands into dispatches, fusing elementwise
//! chains (kernel commands of other families run as recorded).
//!
//! Op `i` is folded into the later op `j` that reads its destination when,
//! at flush time, either
//! - no tensor refers to `i`'s destination any more (the intermediate is
//!   dead, so nobody can observe that it was never written), `j` is the
//!   only later command touching it and does not write it, `i` does not
//!   read it, and `j` reads it through the layout `i` wrote it with, up to
//!   a permutation of the axes (so element `k` of `j` needs exactly one
//!   element of `i`, and `i`'s inputs are read through their own layouts,
//!   permuted alike); or
//! - `j` is the next command touching `i`'s destination and overwrites the
//!   very elements `i` wrote, reading them only at those elements: a chain
//!   of in-place ops on one view, where `i`'s write is never observed;
//!
//! and in both cases
//! - `j` is elementwise (a kernel command such as a reduction never takes
//!   a producer's nodes),
//! - nothing recorded after `i` (kernel commands included), up to and
//!   including `j`, writes a buffer `i` reads (its reads move from `i`'s
//!   turn to `j`'s); `j` itself may write one when every thread reads only
//!   the element it writes or elements nobody writes (an in-place op, or a
//!   destination that reuses the pooled buffer of a dead input of the same
//!   dtype),
//! - the merged program fits the limits of one kernel.
//!
//! Inputs keep their own strides and offsets inside the fused kernel.

use super::command::{Command, KernelCommand, OpArg, RecordedOp, StorageId, TensorOperand};
use super::elementwise::program::{Node, Operand, Program, ProgramLimits};
use crate::dtype::KernelType;
use crate::layout::Layout;
use crate::scalar::TypedScalar;
use crate::shape::MAX_RANK;
use smallvec::{SmallVec, smallvec};
use std::collections::HashMap;

/// The folded producers: `(j, t)` maps to the command `i` whose write of
/// storage `t` command `j` computes inline, and the permutation `j` reads it
/// through.
type Producers<'a> = HashMap<(usize, StorageId), (usize, &'a RecordedOp, Perm)>;

/// An axis permutation: axis `d` of the result is axis `perm[d]` of the source.
type Perm = SmallVec<[usize; MAX_RANK]>;

fn identity(rank: usize) -> Perm {
    (0..rank).collect()
}

/// `layout` with its axes permuted by `perm` (a valid permutation).
fn permuted(layout: &Layout, perm: &[usize]) -> Layout {
    Layout::from_parts(
        perm.iter()
            .map(|&a| layout.dims()[a])
            .collect::<Vec<_>>()
            .into(),
        perm.iter().map(|&a| layout.strides()[a]).collect(),
        layout.offset(),
    )
}

/// `outer` applied after `inner`: permuting by the result equals permuting
/// by `inner`, then by `outer`.
fn compose(inner: &[usize], outer: &[usize]) -> Perm {
    outer.iter().map(|&d| inner[d]).collect()
}

/// True when two layouts of one shape address the same element at every
/// index (strides of extent-1 axes do not matter).
fn same_elements(a: &Layout, b: &Layout) -> bool {
    a.dims() == b.dims()
        && (a.numel() == 0
            || (a.offset() == b.offset()
                && a.dims()
                    .iter()
                    .zip(a.strides().iter().zip(b.strides()))
                    .all(|(&n, (sa, sb))| n == 1 || sa == sb)))
}

/// The permutation `p` with `permuted(written, p)` addressing what `read`
/// addresses, if there is one.
fn read_permutation(read: &Layout, written: &Layout) -> Option<Perm> {
    if read.rank() != written.rank() {
        return None;
    }
    let mut used = [false; MAX_RANK];
    let mut perm = Perm::new();
    for d in 0..read.rank() {
        let (n, stride) = (read.dims()[d], read.strides()[d]);
        let e = (0..written.rank()).find(|&e| {
            !used[e] && written.dims()[e] == n && (n == 1 || written.strides()[e] == stride)
        })?;
        used[e] = true;
        perm.push(e);
    }
    same_elements(&permuted(written, &perm), read).then_some(perm)
}

/// One dispatch of a flush: a generated elementwise program or a kernel
/// command of another family, as recorded.
// Programs are the common, large variant; they are built once per flush.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Step<'a> {
    Program(Program),
    Kernel(&'a KernelCommand),
}

/// The steps for `commands`, in recording order: one per command, or fewer
/// when `fuse` folds dead elementwise intermediates into their elementwise
/// reader.
pub(crate) fn programs(commands: &[Command], fuse: bool, limits: ProgramLimits) -> Vec<Step<'_>> {
    let consumer = if fuse {
        fold_plan(commands, limits)
    } else {
        vec![None; commands.len()]
    };
    // Keyed by the consumer as well as the storage: a command recorded
    // before the producer that reads the same storage reads what was there
    // before the producer's write, never the producer's value.
    let producer: Producers<'_> = consumer
        .iter()
        .zip(commands)
        .enumerate()
        .filter_map(|(i, (c, command))| {
            let op = command.elementwise()?;
            c.clone().map(|(j, perm)| ((j, op.out.id()), (i, op, perm)))
        })
        .collect();
    commands
        .iter()
        .enumerate()
        .zip(&consumer)
        .filter(|(_, c)| c.is_none())
        .map(|((j, command), _)| match command {
            Command::Elementwise(op) => {
                Step::Program(Builder::new(&producer, &op.out).build(j, op))
            }
            Command::Kernel(k) => Step::Kernel(k),
        })
        .collect()
}

/// The storages a command touches.
fn touched(command: &Command) -> SmallVec<[StorageId; 4]> {
    match command {
        Command::Elementwise(op) => std::iter::once(op.out.id())
            .chain(op.tensor_args().map(TensorOperand::id))
            .collect(),
        Command::Kernel(k) => k
            .bindings
            .iter()
            .map(|b| StorageId(b.storage.as_ptr()))
            .collect(),
    }
}

/// What a (possibly already merged) program reads, for the fusion checks.
#[derive(Clone)]
struct Footprint {
    leaves: Vec<Leaf>,
    /// The distinct scalar values (their bits): a program holds each once.
    scalars: SmallVec<[u32; 8]>,
    nodes: usize,
}

#[derive(Clone)]
struct Leaf {
    storage: StorageId,
    buffer_id: u64,
    layout: Layout,
    dtype: KernelType,
}

impl Footprint {
    fn of(op: &RecordedOp) -> Footprint {
        let mut f = Footprint {
            leaves: Vec::new(),
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
                layout: t.layout.clone(),
                dtype: t.dtype,
            });
        }
        f
    }

    /// The footprint with every leaf's axes permuted by `perm`.
    fn permuted(&self, perm: &[usize]) -> Footprint {
        let mut f = self.clone();
        for leaf in &mut f.leaves {
            leaf.layout = permuted(&leaf.layout, perm);
        }
        f
    }

    fn add_scalar(&mut self, bits: u32) {
        if !self.scalars.contains(&bits) {
            self.scalars.push(bits);
        }
    }

    fn add_leaf(&mut self, leaf: Leaf) {
        let known = self
            .leaves
            .iter()
            .any(|l| l.storage == leaf.storage && same_elements(&l.layout, &leaf.layout));
        if !known {
            self.leaves.push(leaf);
        }
    }

    /// This footprint with the reads of `t` replaced by `producer`'s.
    fn inline(&self, t: StorageId, producer: &Footprint) -> Footprint {
        let mut merged = Footprint {
            leaves: self
                .leaves
                .iter()
                .filter(|l| l.storage != t)
                .cloned()
                .collect(),
            scalars: self.scalars.clone(),
            // The load of `t` becomes the producer's nodes plus a rounding.
            nodes: self.nodes + producer.nodes,
        };
        for leaf in &producer.leaves {
            merged.add_leaf(leaf.clone());
        }
        for &bits in &producer.scalars {
            merged.add_scalar(bits);
        }
        merged
    }

    /// True when a program reading this and writing the buffer `out` fits.
    fn fits(&self, limits: ProgramLimits, out: u64) -> bool {
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

/// For each command, the command it is folded into and the permutation that
/// command reads its destination through (see the module docs for when).
fn fold_plan(commands: &[Command], limits: ProgramLimits) -> Vec<Option<(usize, Perm)>> {
    // The commands touching each storage, in order, so finding a reader is cheap.
    let mut touching: HashMap<StorageId, SmallVec<[usize; 4]>> = HashMap::new();
    for (c, command) in commands.iter().enumerate() {
        for id in touched(command) {
            let list = touching.entry(id).or_default();
            if list.last() != Some(&c) {
                list.push(c);
            }
        }
    }
    let mut footprints: Vec<Option<Footprint>> = commands
        .iter()
        .map(|c| c.elementwise().map(Footprint::of))
        .collect();
    let mut consumer = vec![None; commands.len()];
    for (i, command) in commands.iter().enumerate() {
        let Some(op) = command.elementwise() else {
            continue;
        };
        let t = op.out.id();
        let mut users = touching[&t].iter().copied().filter(|&c| c > i);
        let Some(j) = users.next() else { continue };
        let overwrite = overwritten(commands, i, j);
        if !overwrite && (!op.out.is_dead() || op.reads(t) || users.next().is_some()) {
            continue;
        }
        // Only an elementwise reader can take the producer's nodes.
        let (Some(reader), Some(reader_footprint), Some(footprint)) = (
            commands[j].elementwise(),
            footprints[j].as_ref(),
            footprints[i].as_ref(),
        ) else {
            continue;
        };
        if reader.out.id() == t && !overwrite {
            continue;
        }
        // Every read of `t` must use one layout, a permutation of the write's
        // (the write's own, when `j` overwrites it).
        let mut reads = reader.tensor_args().filter(|a| a.id() == t);
        let Some(first) = reads.next() else { continue };
        if !reads.all(|a| same_elements(&a.layout, &first.layout)) {
            continue;
        }
        let perm = if overwrite {
            if !same_elements(&first.layout, &op.out.layout) {
                continue;
            }
            identity(op.out.layout.rank())
        } else {
            let Some(perm) = read_permutation(&first.layout, &op.out.layout) else {
                continue;
            };
            perm
        };
        let moved = footprint.permuted(&perm);
        if !reads_stay_valid(commands, i, j, &moved) {
            continue;
        }
        let merged = reader_footprint.inline(t, &moved);
        if merged.fits(limits, reader.out.buffer_id) {
            footprints[j] = Some(merged);
            consumer[i] = Some((j, perm));
        }
    }
    consumer
}

/// True when `j`, the next command touching `i`'s destination, is an
/// elementwise op writing the same elements of it: each of `j`'s threads
/// can then compute `i`'s value at its element from what the element held
/// before `i`, and `i`'s own write is never observed (a chain of in-place
/// ops on one view). That `i` reads only elements nobody else writes in
/// the meantime is `reads_stay_valid`'s to check, as for any fold.
fn overwritten(commands: &[Command], i: usize, j: usize) -> bool {
    let (Some(op), Some(reader)) = (commands[i].elementwise(), commands[j].elementwise()) else {
        return false;
    };
    reader.out.id() == op.out.id() && same_elements(&reader.out.layout, &op.out.layout)
}

/// True when no command after `i` up to `j` writes a buffer `i` reads,
/// except `j` writing one it can read through its own binding: same dtype,
/// and each element read is the one written at that index or one never
/// written.
fn reads_stay_valid(commands: &[Command], i: usize, j: usize, reads: &Footprint) -> bool {
    (i + 1..=j).all(|c| match &commands[c] {
        Command::Kernel(k) => k.bindings.iter().all(|b| {
            !b.writes
                || reads
                    .leaves
                    .iter()
                    .all(|leaf| leaf.buffer_id != b.buffer_id)
        }),
        Command::Elementwise(op) => {
            let w = &op.out;
            reads.leaves.iter().all(|leaf| {
                w.buffer_id != leaf.buffer_id
                    || (c == j
                        && w.dtype == leaf.dtype
                        && (same_elements(&w.layout, &leaf.layout)
                            || !w.layout.may_overlap(&leaf.layout)))
            })
        }
    })
}

/// Builds the program of one emitted op, expanding folded producers.
struct Builder<'a> {
    producer: &'a Producers<'a>,
    out_buffer: u64,
    program: Program,
    /// (storage, layout) of operands 1.. for deduplication.
    operand_keys: Vec<(StorageId, Layout)>,
    /// The load node of each operand.
    loads: HashMap<usize, u8>,
    /// The buffer behind each input binding (2..).
    binding_buffers: SmallVec<[u64; 4]>,
    /// The rounded value node of each expanded producer.
    values: HashMap<usize, u8>,
}

impl<'a> Builder<'a> {
    fn new(producer: &'a Producers<'a>, out: &TensorOperand) -> Builder<'a> {
        Builder {
            producer,
            out_buffer: out.buffer_id,
            program: Program {
                nodes: SmallVec::new(),
                operands: smallvec![Operand {
                    dtype: out.dtype,
                    binding: 1
                }],
                layouts: smallvec![out.layout.clone()],
                buffers: smallvec![out.slot.clone()],
                input_dtypes: SmallVec::new(),
                scalars: SmallVec::new(),
            },
            operand_keys: Vec::new(),
            loads: HashMap::new(),
            binding_buffers: SmallVec::new(),
            values: HashMap::new(),
        }
    }

    /// The program of command `c`, `op`.
    fn build(mut self, c: usize, op: &RecordedOp) -> Program {
        self.apply(c, op, &identity(op.out.layout.rank()));
        self.program
    }

    fn push(&mut self, node: Node) -> u8 {
        self.program.nodes.push(node);
        (self.program.nodes.len() - 1) as u8
    }

    /// The nodes of `op`, command `c`, whose layouts `to_program` permutes
    /// into the program's index space; returns its result node.
    fn apply(&mut self, c: usize, op: &RecordedOp, to_program: &[usize]) -> u8 {
        let mut args = SmallVec::new();
        for arg in &op.args {
            let node = match arg {
                OpArg::Scalar(s) => self.scalar(*s),
                OpArg::Tensor(t) => match self.producer.get(&(c, t.id())) {
                    Some((p, producer, read)) => {
                        self.folded_value(*p, producer, &compose(read, to_program))
                    }
                    None => self.load(t, permuted(&t.layout, to_program)),
                },
            };
            args.push(node);
        }
        self.push(Node::Apply {
            kernel: op.kernel,
            dtype: op.out.dtype,
            args,
        })
    }

    /// The value the folded producer `p` would have stored, computed once.
    fn folded_value(&mut self, p: usize, producer: &RecordedOp, to_program: &[usize]) -> u8 {
        if let Some(&v) = self.values.get(&p) {
            return v;
        }
        let result = self.apply(p, producer, to_program);
        let v = self.push(Node::Round {
            arg: result,
            dtype: producer.out.dtype,
        });
        self.values.insert(p, v);
        v
    }

    fn scalar(&mut self, s: TypedScalar) -> u8 {
        let bits = s.bits();
        let slot = match self.program.scalars.iter().position(|&b| b == bits) {
            Some(slot) => slot,
            None => {
                self.program.scalars.push(bits);
                self.program.scalars.len() - 1
            }
        };
        self.push(Node::Scalar {
            slot: slot as u8,
            dtype: s.dtype,
        })
    }

    /// The load of `t` through `layout` (its layout in program space).
    fn load(&mut self, t: &TensorOperand, layout: Layout) -> u8 {
        let id = t.id();
        let known = self
            .operand_keys
            .iter()
            .position(|(s, l)| *s == id && same_elements(l, &layout));
        let operand = match known {
            Some(k) => k + 1,
            None => {
                let binding = self.binding_of(t);
                self.program.operands.push(Operand {
                    dtype: t.dtype,
                    binding,
                });
                self.program.layouts.push(layout.clone());
                self.operand_keys.push((id, layout));
                self.operand_keys.len()
            }
        };
        if let Some(&node) = self.loads.get(&operand) {
            return node;
        }
        let node = self.push(Node::Load(operand as u8));
        self.loads.insert(operand, node);
        node
    }

    /// The binding `t` is read through. A buffer is bound once; the
    /// destination's buffer is read through the destination's binding (the
    /// fusion rules make that safe and the dtypes equal).
    fn binding_of(&mut self, t: &TensorOperand) -> u8 {
        if t.buffer_id == self.out_buffer {
            return 1;
        }
        let k = match self.binding_buffers.iter().position(|&b| b == t.buffer_id) {
            Some(k) => k,
            None => {
                self.binding_buffers.push(t.buffer_id);
                self.program.buffers.push(t.slot.clone());
                self.program.input_dtypes.push(t.dtype);
                self.binding_buffers.len() - 1
            }
        };
        (k + 2) as u8
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permutations_compose_like_successive_permutes() {
        let l = Layout::contiguous([2, 3, 4]);
        let (inner, outer) = ([2, 0, 1], [1, 2, 0]);
        let twice = permuted(&permuted(&l, &inner), &outer);
        assert_eq!(permuted(&l, &compose(&inner, &outer)), twice);
    }

    #[test]
    fn a_transposed_read_is_a_permutation_of_the_write() {
        let written = Layout::contiguous([3, 4]);
        let read = written.transpose(0, 1).unwrap();
        let perm = read_permutation(&read, &written).unwrap();
        assert_eq!(perm.as_slice(), &[1, 0]);
        assert_eq!(
            read_permutation(&written, &written).unwrap().as_slice(),
            &[0, 1]
        );
        // A stepped or reshaped read is not.
        let stepped = Layout::contiguous([6, 4])
            .slice(&[crate::index::SliceItem::Range {
                start: None,
                end: None,
                step: 2,
            }])
            .unwrap();
        assert!(read_permutation(&stepped, &written).is_none());
        let reshaped = written.reshaped(&[4, 3].into()).unwrap();
        assert!(read_permutation(&reshaped, &written).is_none());
    }

    #[test]
    fn extent_one_strides_do_not_matter() {
        let a = Layout::from_parts([1, 4].into(), smallvec![99, 1], 0);
        let b = Layout::contiguous([1, 4]);
        assert!(same_elements(&a, &b));
        assert!(!same_elements(&b, &Layout::contiguous([4, 1])));
    }
}
