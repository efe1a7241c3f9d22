//! Building the program of one step: the op's nodes, with the nodes of
//! every producer folded into it expanded in place (each computed once and
//! rounded as its store would round it), operands deduplicated by storage
//! and layout, and a buffer bound once for each dtype it is read as.

use super::Producers;
use super::perm::{Perm, same_elements};
use crate::backend::gpu::command::StorageId;
use crate::backend::gpu::command::{Command, OpArg, RecordedOp, TensorOperand};
use crate::backend::gpu::elementwise::program::{MAX_NODES, Node, Operand, Program};
use crate::dtype::KernelType;
use crate::layout::Layout;
use crate::scalar::TypedScalar;
use smallvec::{SmallVec, smallvec};
use std::borrow::Cow;
use std::sync::Arc;

/// Builds the program of one emitted op, expanding folded producers.
pub(super) struct Builder<'a> {
    commands: &'a [Command],
    producer: &'a Producers,
    out_buffer: u64,
    program: Program,
    /// The storage of operands 1.. (their layouts are the program's), for
    /// deduplication.
    operand_storages: SmallVec<[StorageId; 4]>,
    /// The load node of each operand (by operand number), once loaded.
    loads: SmallVec<[Option<u8>; 4]>,
    /// The buffer behind each input binding (2..), and the dtype it is
    /// read as.
    binding_buffers: SmallVec<[(u64, KernelType); 4]>,
    /// The rounded value node of each expanded producer (by command).
    values: SmallVec<[(usize, u8); 4]>,
}

impl<'a> Builder<'a> {
    /// A builder of the program writing `out`, with room for `nodes`
    /// nodes (a hint: fewer or more are fine).
    pub fn new(
        commands: &'a [Command],
        producer: &'a Producers,
        out: &TensorOperand,
        nodes: usize,
    ) -> Builder<'a> {
        Builder {
            commands,
            producer,
            out_buffer: out.buffer_id,
            program: Program {
                nodes: SmallVec::with_capacity(nodes.min(MAX_NODES)),
                operands: smallvec![Operand {
                    dtype: out.dtype,
                    binding: 1
                }],
                layouts: smallvec![out.layout.clone()],
                buffers: smallvec![Arc::clone(&out.claim)],
                input_dtypes: SmallVec::new(),
                scalars: SmallVec::new(),
            },
            operand_storages: SmallVec::new(),
            loads: SmallVec::new(),
            binding_buffers: SmallVec::new(),
            // About one per folded producer (a few nodes each).
            values: SmallVec::with_capacity(nodes / 3),
        }
    }

    /// The program of command `c`, `op`.
    pub fn build(mut self, c: usize, op: &'a RecordedOp) -> Program {
        self.apply(c, op, &Perm::identity(op.out.layout.rank()));
        self.program
    }

    fn push(&mut self, node: Node) -> u8 {
        self.program.nodes.push(node);
        (self.program.nodes.len() - 1) as u8
    }

    /// The nodes of `op`, command `c`, whose layouts `to_program` permutes
    /// into the program's index space; returns its result node.
    fn apply(&mut self, c: usize, op: &'a RecordedOp, to_program: &Perm) -> u8 {
        let mut args = SmallVec::new();
        for arg in &op.args {
            let node = match arg {
                OpArg::Scalar(s) => self.scalar(*s),
                OpArg::Tensor(t) => {
                    let folded = self.producer.get(&(c, t.id())).and_then(|(p, read)| {
                        let producer = self.commands[*p].elementwise()?;
                        Some((*p, producer, read.then(to_program)))
                    });
                    match folded {
                        Some((p, producer, read)) => self.folded_value(p, producer, &read),
                        None => self.load(t, to_program.view(&t.layout)),
                    }
                }
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
    fn folded_value(&mut self, p: usize, producer: &'a RecordedOp, to_program: &Perm) -> u8 {
        if let Some(&(_, v)) = self.values.iter().find(|(q, _)| *q == p) {
            return v;
        }
        let result = self.apply(p, producer, to_program);
        let v = self.push(Node::Round {
            arg: result,
            dtype: producer.out.dtype,
        });
        self.values.push((p, v));
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
    fn load(&mut self, t: &TensorOperand, layout: Cow<'_, Layout>) -> u8 {
        let id = t.id();
        let layouts = &self.program.layouts[1..];
        let known = self
            .operand_storages
            .iter()
            .zip(layouts)
            .position(|(s, l)| *s == id && same_elements(l, &layout));
        let operand = match known {
            Some(k) => k + 1,
            None => {
                let binding = self.binding_of(t);
                self.program.operands.push(Operand {
                    dtype: t.dtype,
                    binding,
                });
                self.program.layouts.push(layout.into_owned());
                self.operand_storages.push(id);
                self.loads.push(None);
                self.operand_storages.len()
            }
        };
        if let Some(node) = self.loads[operand - 1] {
            return node;
        }
        let node = self.push(Node::Load(operand as u8));
        self.loads[operand - 1] = Some(node);
        node
    }

    /// The binding `t` is read through. A buffer is bound once for each
    /// dtype it is read as (a buffer freed and claimed again within a batch
    /// can hold operands of two dtypes, and a binding's array has one
    /// element type); the destination's buffer is read through the
    /// destination's binding (the fusion rules make that safe and the
    /// dtypes equal).
    fn binding_of(&mut self, t: &TensorOperand) -> u8 {
        if t.buffer_id == self.out_buffer {
            return 1;
        }
        let key = (t.buffer_id, t.dtype);
        let k = match self.binding_buffers.iter().position(|&b| b == key) {
            Some(k) => k,
            None => {
                self.binding_buffers.push(key);
                self.program.buffers.push(Arc::clone(&t.claim));
                self.program.input_dtypes.push(t.dtype);
                self.binding_buffers.len() - 1
            }
        };
        (k + 2) as u8
    }
}
