//! The plans of the last flushes that each held one elementwise op, kept
//! for later such flushes. An app that submits after every op (a flush
//! threshold of 1, or a readback after each step) records the same ops over
//! the same layouts again and again, and working out an op's program,
//! kernel key, pipeline, grid and parameter block cost about as much as
//! wgpu's encoding of the dispatch. A flush whose one op matches a kept
//! plan's (kernel, dtypes, layouts, buffer sizes, which operands share a
//! storage or a buffer, which scalars share a slot) takes the op's buffers,
//! binds them in the order the program bound them (the destination's, then
//! each new buffer of the inputs, as `fusion/builder.rs` binds them; a
//! program binding one buffer as two dtypes keeps no plan, its binding
//! count not being its buffers') and appends the kept parameter block with
//! the op's own scalar values.

use crate::backend::gpu::bind_groups::Binding;
use crate::backend::gpu::buffer_claim::{BufferClaim, Taken};
use crate::backend::gpu::command::{OpArg, RecordedOp, TensorOperand};
use crate::backend::gpu::dispatch::Encoded;
use crate::backend::gpu::elementwise::params::scalar_vecs;
use crate::backend::gpu::kernel::pipeline::Pipeline;
use crate::backend::gpu::target::Target;
use crate::dtype::KernelType;
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::op::ElementwiseOp;
use smallvec::SmallVec;
use std::cell::Cell;
use std::sync::Arc;
use std::sync::atomic::Ordering;

/// One operand of the kept op (the destination first), as far as its plan
/// depends on it: its own fields (a tensor's layout and buffer size; whole
/// bindings, no windows), and how it relates to the other operands.
struct Kept {
    layout: Option<Layout>,
    dtype: KernelType,
    size: u64,
    relation: Relation,
}

#[derive(Clone, Copy, PartialEq)]
enum Relation {
    /// The first operand on the same storage, and on the same buffer.
    Tensor { storage: u8, buffer: u8 },
    /// The scalar slot it is read from.
    Scalar { slot: u8 },
}

impl Kept {
    fn is(&self, a: Arg<'_>) -> bool {
        match a {
            Arg::Tensor(t) => {
                self.dtype == t.dtype
                    && self.size == t.claim.size()
                    && self.layout.as_ref() == Some(&t.layout)
            }
            Arg::Scalar(s) => self.dtype == s.dtype && self.layout.is_none(),
        }
    }
}

/// Plans kept: as many as the distinct ops of a step an app repeats
/// (the Gray-Scott step of the examples records 23).
const KEPT: usize = 32;

/// A kept plan.
struct Plan {
    kernel: ElementwiseOp,
    fusion: bool,
    operands: SmallVec<[Kept; 4]>,
    pipeline: Arc<Pipeline>,
    /// The parameter block, its scalar slots last.
    params: Vec<u8>,
    groups: [u32; 3],
    /// Every binding a whole number of vec4s (the kernel's access depends
    /// on it).
    whole_vec4s: bool,
}

/// The plans of the last one-op flushes that could be kept, the oldest
/// replaced first.
#[derive(Default)]
pub(super) struct OneOpMemo {
    plans: Vec<Plan>,
    /// The plan to replace next once `KEPT` are kept.
    next: usize,
    /// The pipeline cache's evictions when the plans were last checked.
    evictions: u64,
}

/// An operand of an op: the destination or an argument.
#[derive(Clone, Copy)]
enum Arg<'a> {
    Tensor(&'a TensorOperand),
    Scalar(crate::scalar::TypedScalar),
}

fn args(op: &RecordedOp) -> impl Iterator<Item = Arg<'_>> {
    std::iter::once(Arg::Tensor(&op.out)).chain(op.args.iter().map(|a| match a {
        OpArg::Tensor(t) => Arg::Tensor(t),
        OpArg::Scalar(s) => Arg::Scalar(*s),
    }))
}

/// How operand `k` of `op`, `a`, relates to the others; `slots` holds the
/// scalar slots' bits so far (equal scalars share a slot, as the program
/// builder shares them).
fn relation(op: &RecordedOp, k: usize, a: Arg<'_>, slots: &mut SmallVec<[u32; 4]>) -> Relation {
    match a {
        Arg::Tensor(t) => {
            let first = |same: &dyn Fn(&TensorOperand) -> bool| {
                let mut tensors = args(op).map(|a| match a {
                    Arg::Tensor(u) => same(u),
                    Arg::Scalar(_) => false,
                });
                tensors.position(|x| x).unwrap_or(k) as u8
            };
            Relation::Tensor {
                storage: first(&|u| u.id() == t.id()),
                buffer: first(&|u| u.buffer_id == t.buffer_id),
            }
        }
        Arg::Scalar(s) => {
            let bits = s.bits();
            let slot = slots.iter().position(|&b| b == bits).unwrap_or_else(|| {
                slots.push(bits);
                slots.len() - 1
            });
            Relation::Scalar { slot: slot as u8 }
        }
    }
}

/// `op`'s operands as the plan depends on them.
fn describe(op: &RecordedOp) -> SmallVec<[Kept; 4]> {
    let mut slots = SmallVec::new();
    args(op)
        .enumerate()
        .map(|(k, a)| {
            let relation = relation(op, k, a, &mut slots);
            match a {
                Arg::Tensor(t) => Kept {
                    layout: Some(t.layout.clone()),
                    dtype: t.dtype,
                    size: t.claim.size(),
                    relation,
                },
                Arg::Scalar(s) => Kept {
                    layout: None,
                    dtype: s.dtype,
                    size: 0,
                    relation,
                },
            }
        })
        .collect()
}

/// The scalar slots' bits of `op` when [`describe`] would describe it as
/// `kept` (compared in place: no layout is cloned).
fn same_operands(kept: &[Kept], op: &RecordedOp) -> Option<SmallVec<[u32; 4]>> {
    let mut slots = SmallVec::new();
    let mut n = 0;
    for (k, a) in args(op).enumerate() {
        let kept = kept.get(k)?;
        if !kept.is(a) || relation(op, k, a, &mut slots) != kept.relation {
            return None;
        }
        n += 1;
    }
    (n == kept.len()).then_some(slots)
}

/// The claims `op`'s program binds, in binding order: the destination's,
/// then each input buffer other than the destination's, first use first.
fn bound_claims(op: &RecordedOp) -> SmallVec<[&Arc<BufferClaim>; 4]> {
    let mut claims = SmallVec::new();
    claims.push(&*op.out.claim);
    let mut ids: SmallVec<[u64; 4]> = SmallVec::new();
    ids.push(op.out.buffer_id);
    for t in op.tensor_args() {
        if !ids.contains(&t.buffer_id) {
            ids.push(t.buffer_id);
            claims.push(&*t.claim);
        }
    }
    claims
}

fn whole_vec4s(bindings: &[Binding]) -> bool {
    bindings.iter().all(|b| b.bytes() % 16 == 0)
}

impl OneOpMemo {
    /// Lets every plan go when the pipeline cache has evicted since the
    /// last check (`evicted` its count so far): a plan holds its pipeline,
    /// which would outlive its eviction, uncounted, past the cache's limit.
    pub fn forget_after(&mut self, evicted: u64) {
        if evicted != self.evictions {
            self.evictions = evicted;
            self.plans.clear();
            self.next = 0;
        }
    }

    /// Appends `op`'s dispatch to `encoded` and its parameter block to
    /// `bytes` (aligned to `align`) when a kept plan is `op`'s, taking its
    /// buffers; false (and nothing appended) otherwise.
    ///
    /// # Errors
    /// `OutOfMemory` when the destination's buffer does not fit under the
    /// memory cap.
    pub fn encode(
        &self,
        ctx: &Target<'_>,
        (op, fusion): (&RecordedOp, bool),
        (bytes, align): (&mut Vec<u8>, usize),
        encoded: &mut Vec<Encoded>,
    ) -> Result<bool> {
        let found = self
            .plans
            .iter()
            .filter(|p| p.kernel == op.kernel && p.fusion == fusion)
            .find_map(|p| Some((p, same_operands(&p.operands, op)?)));
        let Some((plan, slots)) = found else {
            return Ok(false);
        };
        // A destination nobody can read is never written (the planner's
        // to skip); inputs without buffers would need temporaries.
        if op.out.claim.is_unobservable() || op.tensor_args().any(|t| !t.claim.is_taken()) {
            return Ok(false);
        }
        let open_batch = ctx.open_batch.load(Ordering::Acquire);
        let limit = ctx.facts.max_tensor_bytes();
        // As for a planned step: a buffer released in this batch is free
        // unless this op binds it.
        let used: SmallVec<[u64; 4]> = std::iter::once(&op.out)
            .chain(op.tensor_args())
            .map(|t| t.buffer_id)
            .collect();
        let unused = |id: u64| !used.contains(&id);
        let mut buffers: SmallVec<[Binding; 4]> = SmallVec::new();
        for claim in bound_claims(op) {
            // The result's tensor may be dropped on another thread since
            // the check above: a gone claim needs a temporary, which only
            // the planned path lends. Buffers taken so far are the claims'
            // own, as that path would take them.
            let gone = Cell::new(false);
            let took = claim.take_for_flush(
                ctx.pool,
                (ctx.device, "flush", limit),
                open_batch,
                &unused,
                |_| {
                    gone.set(true);
                    Err(Error::internal("flush", "a kept plan needs a temporary"))
                },
            );
            match took {
                Err(_) if gone.get() => return Ok(false),
                Err(e) => return Err(e),
                Ok((_, Taken::Temporary)) => {
                    return Err(Error::internal("flush", "a kept plan took a temporary"));
                }
                Ok((buffer, Taken::Kept)) => buffers.push(Binding::whole(buffer)),
            }
        }
        if whole_vec4s(&buffers) != plan.whole_vec4s {
            return Ok(false);
        }
        let offset = bytes.len();
        bytes.extend_from_slice(&plan.params);
        let scalars = offset + plan.params.len() - 16 * scalar_vecs(slots.len());
        for (k, bits) in slots.iter().enumerate() {
            let at = scalars + 4 * k;
            bytes[at..at + 4].copy_from_slice(&bits.to_ne_bytes());
        }
        bytes.resize(bytes.len().next_multiple_of(align), 0);
        encoded.push(Encoded {
            pipeline: plan.pipeline.clone(),
            buffers,
            offset: offset as u32,
            groups: plan.groups,
            fused_ops: 0,
        });
        Ok(true)
    }

    /// Keeps the plan of `op` when a flush planned it as the one dispatch
    /// `e` (its parameter block in `bytes`) over whole buffers bound as
    /// [`bound_claims`] orders them.
    pub fn remember(&mut self, (op, fusion): (&RecordedOp, bool), e: &Encoded, bytes: &[u8]) {
        let claims = bound_claims(op);
        let bound_as_kept = e.buffers.len() == claims.len()
            && e.fused_ops == 0
            && e.buffers
                .iter()
                .zip(&claims)
                .all(|(b, c)| b.window.is_none() && c.buffer().is_some_and(|cb| cb == b.buffer));
        let start = e.offset as usize;
        let block = bytes.get(start..start + e.pipeline.params_size as usize);
        let (Some(block), true) = (block, bound_as_kept) else {
            return;
        };
        let plan = Plan {
            kernel: op.kernel,
            fusion,
            operands: describe(op),
            pipeline: e.pipeline.clone(),
            params: block.to_vec(),
            groups: e.groups,
            whole_vec4s: whole_vec4s(&e.buffers),
        };
        if self.plans.len() < KEPT {
            self.plans.push(plan);
        } else {
            self.plans[self.next] = plan;
            self.next = (self.next + 1) % KEPT;
        }
    }
}
