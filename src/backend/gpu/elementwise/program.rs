//! Elementwise programs: what one generated kernel computes.
//!
//! A recorded op is a one-node program; fusion splices the program of a
//! dead intermediate into the program that reads it. A [`KernelKey`] holds
//! the program's structure (ops, dtypes, bindings) and its access, never
//! shapes or strides, so one pipeline serves every layout an access
//! takes; the one exception is [`Access::Spans`], whose key holds each
//! input's step along its rows (0 to 4: a pipeline per step, whose reads
//! it unrolls). A [`Program`] adds the operands' layouts, buffers and
//! scalar values of one dispatch.

use super::params::{MAX_OPERANDS, MAX_SCALARS};
use crate::backend::gpu::buffer_claim::BufferClaim;
use crate::dtype::KernelType;
use crate::layout::Layout;
use crate::op::ElementwiseOp;
use smallvec::SmallVec;
use std::sync::Arc;

/// Most nodes in one fused program (keeps generated kernels small).
pub(crate) const MAX_NODES: usize = 128;

/// One step of a program. Nodes refer to earlier nodes by index; the last
/// node is the value stored into the destination.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Node {
    /// Operand `k` (1 and up; operand 0 is the destination) at its position.
    Load(u8),
    /// Scalar slot `slot` of the parameter block, as `dtype`.
    Scalar { slot: u8, dtype: KernelType },
    /// `kernel` applied to earlier nodes, giving a value of `dtype`.
    Apply {
        kernel: ElementwiseOp,
        dtype: KernelType,
        args: SmallVec<[u8; 3]>,
    },
    /// A fused intermediate, rounded as storing it as `dtype` would round it
    /// (f16 precision, u8 wrap), so fused and unfused results agree.
    Round { arg: u8, dtype: KernelType },
}

/// How a kernel reads one operand.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Operand {
    pub dtype: KernelType,
    /// The binding it is read from: 1 is the destination's, 2.. inputs.
    pub binding: u8,
}

/// Everything that selects a distinct pipeline.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct KernelKey {
    /// The program; its last node is stored into operand 0.
    pub nodes: SmallVec<[Node; 4]>,
    /// Operand 0 is the destination (binding 1), the others its inputs.
    pub operands: SmallVec<[Operand; 4]>,
    /// Dtypes of the read-only bindings 2, 3, ...
    pub inputs: SmallVec<[KernelType; 3]>,
    /// Scalar slots used.
    pub scalars: u8,
    pub native_f16: bool,
    /// How the kernel walks its operands.
    pub access: Access,
}

/// How an elementwise kernel walks its operands, chosen per dispatch from
/// the iteration plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Access {
    /// Each operand through its strides, element by element: thread `t`
    /// of `n` takes elements `t`, `t + n`, `t + 2n` ..., `run` at most
    /// (the device's run, `AdapterFacts::elementwise_run`).
    Strided { run: u8 },
    /// Strided, along the last axis: each thread walks to its first
    /// element once, then takes up to `run` elements of the row, stepping
    /// each operand by its last-axis stride (the walk's index math once
    /// per run). A row's threads interleave: thread `q` of `n` takes
    /// elements `q`, `q + n`, `q + 2n` ...
    Rows { run: u8 },
    /// Strided, along the last axis, in whole 16-byte entries (see
    /// `access::span_steps` for when): each thread takes up to `quads`
    /// groups of four adjacent elements of a row (thread `q` of a row's
    /// `n` takes groups `q`, `q + n` ...), reads each input's group as the
    /// `steps[k]` entries (one where `steps[k]` is 0 or 1) its elements lie
    /// in and writes the destination's as one entry, working out the row's
    /// positions once. `steps[k]` is operand `k`'s step along the row; a
    /// row of step 0 (broadcast along it) may start anywhere, the others
    /// at multiples of 4.
    Spans {
        quads: u8,
        steps: [u8; MAX_OPERANDS],
    },
    /// Every operand is one forward run (the index math is skipped);
    /// threads take elements as [`Access::Strided`] does.
    Contiguous { run: u8 },
    /// Contiguous, every operand starting at a multiple of 4 in a binding
    /// of whole 16-byte entries: four elements per thread, read and written
    /// as one array entry of each operand (a vec4 of 32-bit values or
    /// native f16, two words of packed f16, one word of u8 or bool; no
    /// atomics for a packed destination).
    Vec4,
    /// Contiguous, every operand f16 or bf16 starting at a multiple of 8 in
    /// a binding of whole 16-byte entries: eight elements per thread, read
    /// and written as one 16-byte entry (`vec4<u32>`) of each operand, so
    /// that 16-bit data moves as many bytes per access as 32-bit data does
    /// under [`Access::Vec4`].
    Vec8,
    /// One input whose fastest axis is not the destination's: 32 x 32 tiles
    /// over those two axes pass through workgroup memory, so that both the
    /// reads and the writes are coalesced (the plan's last axis is the
    /// destination's fastest, the one before it the input's).
    Tiled,
}

impl Access {
    /// True when a thread reads and writes whole array entries (no
    /// atomics for a packed destination).
    pub fn whole_entries(self) -> bool {
        matches!(self, Access::Vec4 | Access::Vec8 | Access::Spans { .. })
    }
}

impl KernelKey {
    /// The destination's dtype.
    pub fn out(&self) -> KernelType {
        self.operands[0].dtype
    }

    /// True when the program copies f16 elements: one operand loaded and
    /// stored as it is (a cast to its own dtype), with nothing fused in.
    pub fn copies_f16(&self) -> bool {
        let copy = matches!(
            self.nodes.as_slice(),
            [Node::Load(1), Node::Apply { kernel: ElementwiseOp::Cast, args, .. }]
                if args.as_slice() == [0]
        );
        copy && self.operands.len() == 2 && self.operands.iter().all(|o| o.dtype == KernelType::F16)
    }

    /// True when the kernel copies native f16 element by element, moving
    /// the values as f16 (whole entries move as bf16, see
    /// [`Program::key`]).
    pub fn moves_native_f16(&self) -> bool {
        self.native_f16 && self.copies_f16() && !self.access.whole_entries()
    }

    /// The dtype of node `n`'s value.
    pub fn node_dtype(&self, n: usize) -> KernelType {
        match &self.nodes[n] {
            Node::Load(k) => self.operands[*k as usize].dtype,
            Node::Scalar { dtype, .. } | Node::Apply { dtype, .. } | Node::Round { dtype, .. } => {
                *dtype
            }
        }
    }
}

/// True when a program over `operands` can run [`Access::Tiled`]: one
/// input, and a result that is not bool (workgroup tiles hold the results
/// as 32-bit values).
pub(crate) fn tileable(operands: &[Operand]) -> bool {
    operands.len() == 2 && operands[0].dtype != KernelType::Bool
}

/// One dispatch of a generated kernel: its key without the flags fixed at
/// flush time, and the values behind it.
#[derive(Debug, Clone)]
pub(crate) struct Program {
    pub nodes: SmallVec<[Node; 4]>,
    pub operands: SmallVec<[Operand; 4]>,
    /// Per operand, over the program's common shape.
    pub layouts: SmallVec<[Layout; 4]>,
    /// Binding 1 first (the destination), then the inputs in binding order;
    /// a flush takes their buffers before it encodes the program.
    pub buffers: SmallVec<[Arc<BufferClaim>; 4]>,
    pub input_dtypes: SmallVec<[KernelType; 3]>,
    /// Scalar bits, one per slot.
    pub scalars: SmallVec<[u32; 4]>,
}

impl Program {
    /// The pipeline key of this program.
    pub fn key(&self, native_f16: bool, access: Access) -> KernelKey {
        let mut key = KernelKey {
            nodes: self.nodes.clone(),
            operands: self.operands.clone(),
            inputs: self.input_dtypes.clone(),
            scalars: self.scalars.len() as u8,
            native_f16,
            access,
        };
        // An f16 copy keeps every bit pattern (signalling NaNs, payloads):
        // where its stores are whole entries, or f16 is packed, it runs
        // bf16's kernel, which moves 16-bit words alike and whose loads
        // and stores keep every pattern's bits (f16's convert through f32
        // and quiet a signalling NaN); one pipeline serves both dtypes'
        // copies. Native f16 stored element by element keeps its own
        // kernel (a bf16 destination there takes two atomics an element),
        // whose loads and stores move the bits (see `codegen.rs`).
        if key.copies_f16() && (access.whole_entries() || !native_f16) {
            for o in &mut key.operands {
                o.dtype = KernelType::BF16;
            }
            for d in &mut key.inputs {
                *d = KernelType::BF16;
            }
            if let Some(Node::Apply { dtype, .. }) = key.nodes.last_mut() {
                *dtype = KernelType::BF16;
            }
        }
        key
    }

    /// Number of `Apply` nodes beyond the first: ops folded in by fusion.
    pub fn fused_ops(&self) -> usize {
        let applies = self
            .nodes
            .iter()
            .filter(|n| matches!(n, Node::Apply { .. }))
            .count();
        applies.saturating_sub(1)
    }
}

/// Limits a fused program must respect on a device.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ProgramLimits {
    /// Storage bindings per kernel, the destination included.
    pub bindings: usize,
}

impl ProgramLimits {
    /// True when a program of this size can be generated and bound. Each
    /// operand may need a binding of its own (over a buffer larger than one
    /// binding, see `windowed.rs`), which a device with fewer bindings than
    /// `MAX_OPERANDS` must then have.
    pub fn fits(&self, operands: usize, bindings: usize, scalars: usize, nodes: usize) -> bool {
        operands <= MAX_OPERANDS
            && bindings <= self.bindings
            && (self.bindings >= MAX_OPERANDS || operands <= self.bindings)
            && scalars <= MAX_SCALARS
            && nodes <= MAX_NODES
    }
}
