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

mod builder;
mod footprint;
mod perm;

use super::command::{Command, KernelCommand, Operand, StorageId};
use super::elementwise::program::{Program, ProgramLimits};
use builder::Builder;
use footprint::Footprint;
use perm::{Perm, read_permutation, same_elements};
use rustc_hash::FxHashMap;
use smallvec::SmallVec;

/// The folded producers: `(j, t)` maps to the command `i` whose write of
/// storage `t` command `j` computes inline, and the permutation `j` reads it
/// through.
type Producers = FxHashMap<(usize, StorageId), (usize, Perm)>;

/// One dispatch of a flush: a generated elementwise program, or the kernel
/// command of another family at this index of the batch, as recorded.
// Programs are the common, large variant; they are built once per flush.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Step {
    Program(Program),
    Kernel(usize),
}

impl Step {
    /// The kernel command of this step, if it is one of `commands`.
    pub fn kernel<'a>(&self, commands: &'a [Command]) -> Option<&'a KernelCommand> {
        match (self, commands.get(self.kernel_index()?)) {
            (Step::Kernel(_), Some(Command::Kernel(k))) => Some(k),
            _ => None,
        }
    }

    fn kernel_index(&self) -> Option<usize> {
        match self {
            Step::Kernel(c) => Some(*c),
            Step::Program(_) => None,
        }
    }
}

/// What planning a flush needs besides the commands, kept by the scheduler
/// across flushes: once the first batches have grown them, a flush of a
/// thousand ops allocates nothing for them (nor faults in fresh pages).
#[derive(Default)]
pub(crate) struct FusionScratch {
    /// The commands touching each storage, in order.
    touching: FxHashMap<StorageId, SmallVec<[usize; 4]>>,
    /// For each command, the command it is folded into and the permutation
    /// that command reads its destination through.
    consumer: Vec<Option<(usize, Perm)>>,
    producer: Producers,
    /// For each command that took producers, about how many nodes its
    /// program will have (room its builder reserves at once).
    nodes: Vec<usize>,
}

impl FusionScratch {
    /// For each command of the batch planned last, the index of the step
    /// that computes it: its own, or that of the command it is folded into.
    pub fn steps_of_commands(&self, out: &mut Vec<usize>) {
        out.clear();
        let mut steps = 0;
        for c in &self.consumer {
            out.push(steps);
            steps += usize::from(c.is_none());
        }
        // A command is folded into a later one: theirs is known first.
        for i in (0..out.len()).rev() {
            if let Some((j, _)) = self.consumer[i] {
                out[i] = out[j];
            }
        }
    }
}

/// Appends to `steps` the steps for `commands`, in recording order: one per
/// command, or fewer when `fuse` folds dead elementwise intermediates into
/// their elementwise reader.
pub(crate) fn programs(
    commands: &[Command],
    fuse: bool,
    limits: ProgramLimits,
    scratch: &mut FusionScratch,
    steps: &mut Vec<Step>,
) {
    scratch.consumer.clear();
    scratch.consumer.resize(commands.len(), None);
    scratch.nodes.clear();
    scratch.nodes.resize(commands.len(), 0);
    // Only an elementwise op can be folded, into a later one.
    if fuse
        && commands
            .iter()
            .filter(|c| c.elementwise().is_some())
            .nth(1)
            .is_some()
    {
        fold_plan(commands, limits, scratch);
    }
    // Keyed by the consumer as well as the storage: a command recorded
    // before the producer that reads the same storage reads what was there
    // before the producer's write, never the producer's value.
    let producer = &mut scratch.producer;
    producer.clear();
    for (i, (c, command)) in scratch.consumer.iter().zip(commands).enumerate() {
        if let (Some((j, perm)), Some(op)) = (c, command.elementwise()) {
            producer.insert((*j, op.out.id()), (i, *perm));
        }
    }
    for (j, (command, c)) in commands.iter().zip(&scratch.consumer).enumerate() {
        if c.is_some() {
            continue;
        }
        steps.push(match command {
            Command::Elementwise(op) => {
                let nodes = scratch.nodes[j];
                Step::Program(Builder::new(commands, producer, &op.out, nodes).build(j, op))
            }
            Command::Kernel(_) => Step::Kernel(j),
        });
    }
}

/// Sets `scratch.consumer` (all `None` on entry): for each command, the
/// command it is folded into and the permutation that command reads its
/// destination through (see the module docs for when).
fn fold_plan(commands: &[Command], limits: ProgramLimits, scratch: &mut FusionScratch) {
    // The commands touching each storage, in order, so finding a reader is cheap.
    let FusionScratch {
        touching,
        consumer,
        nodes,
        ..
    } = scratch;
    touching.clear();
    for (c, command) in commands.iter().enumerate() {
        for id in command.operands().iter().map(Operand::id) {
            let list = touching.entry(id).or_default();
            if list.last() != Some(&c) {
                list.push(c);
            }
        }
    }
    // What each command's program reads, as merged so far (`None`: its
    // own op's, not yet worked out). Only commands after `i` are read once
    // `i` is planned.
    let mut footprints: Vec<Option<Footprint<'_>>> = Vec::new();
    footprints.resize_with(commands.len(), || None);
    for (i, command) in commands.iter().enumerate() {
        let Some(op) = command.elementwise() else {
            continue;
        };
        let t = op.out.id();
        // The commands after `i` touching `t` (the list is in order: a
        // long chain on one storage is searched, not scanned).
        let Some(list) = touching.get(&t) else {
            continue;
        };
        let mut users = list[list.partition_point(|&c| c <= i)..].iter().copied();
        let Some(j) = users.next() else { continue };
        let overwrite = overwritten(commands, i, j);
        if !overwrite && (!op.out.is_dead() || op.reads(t) || users.next().is_some()) {
            continue;
        }
        // Only an elementwise reader can take the producer's nodes.
        let Some(reader) = commands[j].elementwise() else {
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
            Perm::identity(op.out.layout.rank())
        } else {
            let Some(perm) = read_permutation(&first.layout, &op.out.layout) else {
                continue;
            };
            perm
        };
        let mut moved = footprints[i].take().unwrap_or_else(|| Footprint::of(op));
        moved.permute(&perm);
        if !reads_stay_valid(commands, i, j, &moved) {
            continue;
        }
        let reader_footprint = footprints[j].get_or_insert_with(|| Footprint::of(reader));
        if reader_footprint.try_inline(t, &moved, limits, reader.out.buffer_id) {
            consumer[i] = Some((j, perm));
            nodes[j] = reader_footprint.nodes();
        }
    }
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
                    || (c == j && w.dtype == leaf.dtype && {
                        let read = leaf.layout();
                        same_elements(&w.layout, &read) || !w.layout.may_overlap(&read)
                    })
            })
        }
    })
}
