//! Turning a batch of recorded elementwise ops into programs, fusing chains.
//!
//! Op `i` is folded into the one later op `j` that reads its destination
//! when, at flush time:
//! - no tensor refers to `i`'s destination any more (the intermediate is
//!   dead, so nobody can observe that it was never written),
//! - `j` is the only later op touching it, reads it (never writes it) and
//!   reads it through the very layout `i` wrote it with (so element `k` of
//!   `j` needs exactly element `k` of `i`),
//! - `i` does not read its own destination,
//! - nothing recorded after `i`, up to and including `j`, writes a buffer
//!   `i` reads (its reads move from `i`'s turn to `j`'s); `j` itself may
//!   write one when it reads that same storage element for element, as an
//!   in-place op does,
//! - the merged program fits the limits of one kernel.
//!
//! Inputs keep their own strides and offsets inside the fused kernel.

use super::program::{Node, Operand, Program, ProgramLimits};
use crate::backend::Storage;
use crate::dtype::DType;
use crate::layout::Layout;
use crate::ops::kinds::Kernel;
use crate::scalar::TypedScalar;
use smallvec::{SmallVec, smallvec};
use std::collections::HashMap;
use std::sync::Weak;

/// A tensor operand of a recorded op.
#[derive(Clone)]
pub(crate) struct TensorOperand {
    /// Identity and liveness of the storage (dead once every tensor on it
    /// is dropped; the allocation, and so the identity, outlives the batch).
    pub storage: Weak<Storage>,
    pub buffer: wgpu::Buffer,
    /// The pool's id of `buffer`, shared by storages that reuse it.
    pub buffer_id: u64,
    /// Over the op's shape (inputs already broadcast).
    pub layout: Layout,
    pub dtype: DType,
}

impl TensorOperand {
    fn id(&self) -> StorageId {
        StorageId(self.storage.as_ptr())
    }

    fn is_dead(&self) -> bool {
        self.storage.strong_count() == 0
    }
}

/// Storage identity within one batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct StorageId(*const Storage);

/// One input of a recorded op.
#[derive(Clone)]
pub(crate) enum OpArg {
    Tensor(TensorOperand),
    Scalar(TypedScalar),
}

/// An elementwise op as recorded: `out = kernel(args...)`.
#[derive(Clone)]
pub(crate) struct RecordedOp {
    pub kernel: Kernel,
    pub out: TensorOperand,
    pub args: SmallVec<[OpArg; 3]>,
}

impl RecordedOp {
    fn tensor_args(&self) -> impl Iterator<Item = &TensorOperand> {
        self.args.iter().filter_map(|a| match a {
            OpArg::Tensor(t) => Some(t),
            OpArg::Scalar(_) => None,
        })
    }

    fn reads(&self, id: StorageId) -> bool {
        self.tensor_args().any(|t| t.id() == id)
    }

    fn touches(&self, id: StorageId) -> bool {
        self.out.id() == id || self.reads(id)
    }
}

/// The programs for `ops`, in recording order: one per op, or fewer when
/// `fuse` folds dead intermediates into their reader.
pub(crate) fn programs(ops: &[RecordedOp], fuse: bool, limits: ProgramLimits) -> Vec<Program> {
    let consumer = if fuse {
        fold_plan(ops, limits)
    } else {
        vec![None; ops.len()]
    };
    let producer: HashMap<StorageId, usize> = consumer
        .iter()
        .enumerate()
        .filter(|(_, c)| c.is_some())
        .map(|(i, _)| (ops[i].out.id(), i))
        .collect();
    (0..ops.len())
        .filter(|&j| consumer[j].is_none())
        .map(|j| Builder::new(ops, &producer, &ops[j].out).build(j))
        .collect()
}

/// What a (possibly already merged) program reads, for the fusion checks.
#[derive(Clone)]
struct Footprint {
    leaves: Vec<Leaf>,
    scalars: usize,
    nodes: usize,
}

#[derive(Clone)]
struct Leaf {
    storage: StorageId,
    buffer_id: u64,
    layout: Layout,
}

impl Footprint {
    fn of(op: &RecordedOp) -> Footprint {
        let mut f = Footprint {
            leaves: Vec::new(),
            scalars: op.args.len() - op.tensor_args().count(),
            nodes: op.args.len() + 1,
        };
        for t in op.tensor_args() {
            f.add_leaf(Leaf {
                storage: t.id(),
                buffer_id: t.buffer_id,
                layout: t.layout.clone(),
            });
        }
        f
    }

    fn add_leaf(&mut self, leaf: Leaf) {
        let known = self
            .leaves
            .iter()
            .any(|l| l.storage == leaf.storage && l.layout == leaf.layout);
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
            scalars: self.scalars + producer.scalars,
            // The load of `t` becomes the producer's nodes plus a rounding.
            nodes: self.nodes + producer.nodes,
        };
        for leaf in &producer.leaves {
            merged.add_leaf(leaf.clone());
        }
        merged
    }

    fn fits(&self, limits: ProgramLimits, out: StorageId) -> bool {
        let mut inputs: SmallVec<[StorageId; 8]> = SmallVec::new();
        for l in &self.leaves {
            if l.storage != out && !inputs.contains(&l.storage) {
                inputs.push(l.storage);
            }
        }
        limits.fits(
            self.leaves.len() + 1,
            inputs.len() + 1,
            self.scalars,
            self.nodes,
        )
    }
}

/// For each op, the op it is folded into (see the module docs for when).
fn fold_plan(ops: &[RecordedOp], limits: ProgramLimits) -> Vec<Option<usize>> {
    let mut footprints: Vec<Footprint> = ops.iter().map(Footprint::of).collect();
    let mut consumer = vec![None; ops.len()];
    for (i, op) in ops.iter().enumerate() {
        let t = op.out.id();
        if !op.out.is_dead() || op.reads(t) {
            continue;
        }
        let mut users = (i + 1..ops.len()).filter(|&c| ops[c].touches(t));
        let (Some(j), None) = (users.next(), users.next()) else {
            continue;
        };
        let reader = &ops[j];
        let same_layout = reader
            .tensor_args()
            .filter(|a| a.id() == t)
            .all(|a| a.layout == op.out.layout);
        if reader.out.id() == t || !same_layout || !reads_stay_valid(ops, i, j, &footprints[i]) {
            continue;
        }
        let merged = footprints[j].inline(t, &footprints[i]);
        if merged.fits(limits, reader.out.id()) {
            footprints[j] = merged;
            consumer[i] = Some(j);
        }
    }
    consumer
}

/// True when no op after `i` up to `j` writes what `i` reads, except `j`
/// writing a storage it also reads element for element (or not at all).
fn reads_stay_valid(ops: &[RecordedOp], i: usize, j: usize, reads: &Footprint) -> bool {
    (i + 1..=j).all(|c| {
        let w = &ops[c].out;
        reads.leaves.iter().all(|leaf| {
            w.buffer_id != leaf.buffer_id
                || (c == j
                    && w.id() == leaf.storage
                    && (w.layout == leaf.layout || !w.layout.may_overlap(&leaf.layout)))
        })
    })
}

/// Builds the program of one emitted op, expanding folded producers.
struct Builder<'a> {
    ops: &'a [RecordedOp],
    producer: &'a HashMap<StorageId, usize>,
    out: StorageId,
    program: Program,
    /// (storage, layout) of operands 1.. for deduplication.
    operand_keys: Vec<(StorageId, Layout)>,
    /// The load node of each operand.
    loads: HashMap<usize, u8>,
    /// The storage behind each input binding (2..).
    binding_storages: SmallVec<[StorageId; 4]>,
    /// The rounded value node of each expanded producer.
    values: HashMap<usize, u8>,
}

impl<'a> Builder<'a> {
    fn new(
        ops: &'a [RecordedOp],
        producer: &'a HashMap<StorageId, usize>,
        out: &TensorOperand,
    ) -> Builder<'a> {
        Builder {
            ops,
            producer,
            out: out.id(),
            program: Program {
                nodes: SmallVec::new(),
                operands: smallvec![Operand {
                    dtype: out.dtype,
                    binding: 1
                }],
                layouts: smallvec![out.layout.clone()],
                buffers: smallvec![out.buffer.clone()],
                input_dtypes: SmallVec::new(),
                scalars: SmallVec::new(),
            },
            operand_keys: Vec::new(),
            loads: HashMap::new(),
            binding_storages: SmallVec::new(),
            values: HashMap::new(),
        }
    }

    fn build(mut self, j: usize) -> Program {
        self.apply(j);
        self.program
    }

    fn push(&mut self, node: Node) -> u8 {
        self.program.nodes.push(node);
        (self.program.nodes.len() - 1) as u8
    }

    /// The nodes of op `c`; returns its result node.
    fn apply(&mut self, c: usize) -> u8 {
        let op = &self.ops[c];
        let mut args = SmallVec::new();
        for arg in &op.args {
            let node = match arg {
                OpArg::Scalar(s) => self.scalar(*s),
                OpArg::Tensor(t) => match self.producer.get(&t.id()) {
                    Some(&p) => self.folded_value(p),
                    None => self.load(t),
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

    /// The value a folded producer would have stored, computed once.
    fn folded_value(&mut self, p: usize) -> u8 {
        if let Some(&v) = self.values.get(&p) {
            return v;
        }
        let result = self.apply(p);
        let v = self.push(Node::Round {
            arg: result,
            dtype: self.ops[p].out.dtype,
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

    fn load(&mut self, t: &TensorOperand) -> u8 {
        let id = t.id();
        let known = self
            .operand_keys
            .iter()
            .position(|(s, l)| *s == id && *l == t.layout);
        let operand = match known {
            Some(k) => k + 1,
            None => {
                let binding = self.binding_of(t);
                self.program.operands.push(Operand {
                    dtype: t.dtype,
                    binding,
                });
                self.program.layouts.push(t.layout.clone());
                self.operand_keys.push((id, t.layout.clone()));
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

    fn binding_of(&mut self, t: &TensorOperand) -> u8 {
        let id = t.id();
        if id == self.out {
            return 1;
        }
        let k = match self.binding_storages.iter().position(|&s| s == id) {
            Some(k) => k,
            None => {
                self.binding_storages.push(id);
                self.program.buffers.push(t.buffer.clone());
                self.program.input_dtypes.push(t.dtype);
                self.binding_storages.len() - 1
            }
        };
        (k + 2) as u8
    }
}
