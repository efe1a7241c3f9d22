//! What the scheduler records: elementwise ops (their operands and
//! arguments), which fusion may merge, and kernel commands of the other
//! families (reductions, matmul), which run as recorded.

use super::buffer_claim::BufferClaim;
use super::kernel::buffer::element_bytes;
use super::kernel::pipeline::Pipeline;
use crate::backend::recycle::Shared;
use crate::backend::{Storage, TensorRef};
use crate::dtype::KernelType;
use crate::error::{Error, Result};
use crate::layout::{Layout, Window, window_of};
use crate::op::ElementwiseOp;
use crate::scalar::TypedScalar;
use smallvec::SmallVec;
use std::sync::Arc;

/// A buffer a command binds: its claim (`None`: the device's fault
/// record), and whether the buffer may not be taken yet (see
/// [`Command::operands`]).
#[derive(Clone, Copy)]
pub(crate) struct Operand<'a> {
    pub claim: Option<&'a Arc<BufferClaim>>,
    /// Taken at the flush, not when the command was recorded.
    pub deferred: bool,
}

impl Operand<'_> {
    /// The storage's identity within one batch.
    pub fn id(&self) -> StorageId {
        StorageId::of(self.claim)
    }
}

/// One recorded GPU command.
// Elementwise ops are the common case and the large variant: boxing them
// would add an allocation per recorded op.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Command {
    Elementwise(RecordedOp),
    Kernel(KernelCommand),
}

/// Poisons every buffer that `commands` (a batch that failed) were to
/// write, with the batch's `failure`: a later read or use of those tensors
/// is that error, never the stale bytes the buffers still hold.
pub(crate) fn poison_outputs(commands: &[Command], failure: &str) {
    for claim in commands.iter().flat_map(Command::written_claims) {
        claim.poison(failure);
    }
}

/// Poisons what the commands of a batch being flushed write where they
/// read a buffer poisoned since they were recorded (another thread's batch
/// failed between a command's check and its record), in order, so that a
/// chain carries it.
pub(crate) fn carry_poison(commands: &[Command]) {
    for c in commands {
        let failure = match c {
            Command::Elementwise(op) => op.tensor_args().find_map(|t| t.claim.poisoned()),
            Command::Kernel(k) => k
                .bindings
                .iter()
                .find_map(|b| b.claim.as_deref().and_then(|c| c.poisoned())),
        };
        if let Some(failure) = failure.map(str::to_string) {
            for claim in c.written_claims() {
                claim.poison(&failure);
            }
        }
    }
}

/// Storage identity within one batch: the address of the storage's
/// buffer claim, one to a storage (a number, so that scratch keyed by it
/// can outlive the batch). Commands hold the claims they name, so no
/// address is reused while the batch is recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct StorageId(usize);

impl StorageId {
    /// The identity of the storage of `claim` (`None`: the fault record).
    pub fn of(claim: Option<&Arc<BufferClaim>>) -> StorageId {
        StorageId(claim.map_or(0, |c| Arc::as_ptr(c) as usize))
    }
}

/// A tensor operand of a recorded op.
#[derive(Clone)]
pub(crate) struct TensorOperand {
    /// The storage's buffer, taken when a flush needs it (see
    /// `buffer_claim.rs`); also the storage's identity and liveness (gone
    /// once every tensor on it is dropped).
    pub claim: Shared<BufferClaim>,
    /// The id of the buffer, shared by storages that reuse it.
    pub buffer_id: u64,
    /// Over the op's shape (inputs already broadcast).
    pub layout: Layout,
    pub dtype: KernelType,
}

impl TensorOperand {
    /// The storage's identity within one batch.
    pub fn id(&self) -> StorageId {
        StorageId::of(Some(&self.claim))
    }

    /// True once no tensor (nor captured step) refers to the storage.
    pub fn is_dead(&self) -> bool {
        self.claim.is_gone()
    }
}

/// One input of a recorded op.
#[derive(Clone)]
pub(crate) enum OpArg {
    Tensor(TensorOperand),
    Scalar(TypedScalar),
}

/// An elementwise op as recorded: `out = kernel(args...)`.
#[derive(Clone)]
pub(crate) struct RecordedOp {
    pub kernel: ElementwiseOp,
    pub out: TensorOperand,
    pub args: SmallVec<[OpArg; 3]>,
}

impl RecordedOp {
    /// The tensor operands among the arguments.
    pub fn tensor_args(&self) -> impl Iterator<Item = &TensorOperand> {
        self.args.iter().filter_map(|a| match a {
            OpArg::Tensor(t) => Some(t),
            OpArg::Scalar(_) => None,
        })
    }

    /// True when an argument is on storage `id`.
    pub fn reads(&self, id: StorageId) -> bool {
        self.tensor_args().any(|t| t.id() == id)
    }
}

/// A storage buffer bound to a kernel command.
#[derive(Clone)]
pub(crate) struct Bound {
    /// The storage's claim (its buffer taken), its identity and liveness as
    /// for elementwise operands; `None` for the fault record.
    pub claim: Option<Shared<BufferClaim>>,
    pub buffer: wgpu::Buffer,
    /// The pool's id of `buffer`.
    pub buffer_id: u64,
    /// True when the kernel may write it.
    pub writes: bool,
    /// True for the device's fault record: recording the kernel arms the
    /// record's copy at the next flush (see `faults.rs`).
    pub fault_record: bool,
    /// The bytes bound, when not the whole buffer (see [`Bound::rebased`]).
    pub window: Option<Window>,
}

impl Bound {
    /// `storage`'s buffer, bound whole for reading or (with `writes`)
    /// writing.
    ///
    /// # Errors
    /// `Error::Gpu` naming `op` when the storage is not on the GPU;
    /// `Error::TooLarge` naming `op` when the buffer is larger than one
    /// storage binding (only elementwise ops bind such buffers, in windows).
    pub fn new(op: &'static str, storage: &Arc<Storage>, writes: bool) -> Result<Bound> {
        let Storage::Gpu(s) = &**storage else {
            return Err(Error::internal(op, "operand is not on the GPU"));
        };
        let limit = s.ctx.facts.max_storage_binding;
        if s.size() > limit {
            return Err(Error::TooLarge {
                op,
                what: "operand bytes in one storage binding (this op does not split larger tensors)",
                requested: s.size(),
                limit,
            });
        }
        let (buffer, buffer_id) = s.bound_buffer(op)?;
        Ok(Bound {
            claim: Some(s.claim().clone()),
            buffer,
            buffer_id,
            writes,
            fault_record: false,
            window: None,
        })
    }

    /// The bytes of `t`'s buffer that its layout touches, bound for
    /// reading or (with `writes`) writing, and its layout counted from the
    /// first byte bound (`None`: unchanged): the whole buffer when it fits
    /// one storage binding, else a window of it (an op over a view of a
    /// tensor larger than one binding).
    ///
    /// # Errors
    /// As [`Bound::new`]; `Error::TooLarge` naming `op` when the view itself
    /// spans more than one binding.
    fn rebased(
        op: &'static str,
        t: &TensorRef<'_>,
        writes: bool,
    ) -> Result<(Bound, Option<Layout>)> {
        let Storage::Gpu(s) = &**t.storage else {
            return Err(Error::internal(op, "operand is not on the GPU"));
        };
        let facts = &s.ctx.facts;
        let limit = facts.max_storage_binding;
        if s.size() <= limit {
            return Ok((Bound::new(op, &t.storage, writes)?, None));
        }
        let bytes = element_bytes(s.dtype) as u64;
        let (lo, hi) = t.layout.span().unwrap_or((0, 0));
        let window = window_of(lo, hi, bytes, u64::from(facts.storage_align));
        if window.size > limit {
            return Err(Error::TooLarge {
                op,
                what: "bytes one operand view spans in one storage binding (this op does not split it)",
                requested: window.size,
                limit,
            });
        }
        let l = &t.layout;
        let shift = (window.offset / bytes) as usize;
        let layout = Layout::from_parts(l.shape().clone(), l.strides().into(), l.offset() - shift);
        let (buffer, buffer_id) = s.bound_buffer(op)?;
        Ok((
            Bound {
                claim: Some(s.claim().clone()),
                buffer,
                buffer_id,
                writes,
                fault_record: false,
                window: Some(window),
            },
            Some(layout),
        ))
    }
    /// Bytes the kernel sees: the window's, or the whole buffer's.
    pub fn bytes(&self) -> u64 {
        self.window.map_or(self.buffer.size(), |w| w.size)
    }

    /// `t` bound, with its layout rebased as [`Bound::rebased`] says (moved
    /// into the result otherwise): the operand a kernel of a fixed-function
    /// family reads its layout from.
    ///
    /// # Errors
    /// As [`Bound::rebased`].
    pub fn view<'a>(
        op: &'static str,
        mut t: TensorRef<'a>,
        writes: bool,
    ) -> Result<(Bound, TensorRef<'a>)> {
        let (bound, rebased) = Self::rebased(op, &t, writes)?;
        if let Some(layout) = rebased {
            t.layout = layout;
        }
        Ok((bound, t))
    }
}

/// A dispatch whose pipeline, parameters and grid are fixed at recording:
/// bindings 1.. are `bindings` in order, binding 0 its parameter block.
pub(crate) struct KernelCommand {
    pub pipeline: Arc<Pipeline>,
    /// Where its parameter block lies in the batch's parameter bytes
    /// (`Scheduler::record_kernel`: no allocation of its own).
    pub params: std::ops::Range<usize>,
    pub bindings: SmallVec<[Bound; 4]>,
    /// Workgroups in x, y and z.
    pub groups: [u32; 3],
}

impl Command {
    /// The storages the command binds, each with its claim when it may not
    /// have taken its buffer yet (an elementwise operand; a kernel command
    /// binds buffers taken when it was recorded).
    pub fn operands(&self) -> SmallVec<[Operand<'_>; 4]> {
        match self {
            Command::Elementwise(op) => std::iter::once(&op.out)
                .chain(op.tensor_args())
                .map(|t| Operand {
                    claim: Some(&t.claim),
                    deferred: true,
                })
                .collect(),
            Command::Kernel(k) => k
                .bindings
                .iter()
                .map(|b| Operand {
                    claim: b.claim.as_deref(),
                    deferred: false,
                })
                .collect(),
        }
    }

    /// The claims of the buffers the command writes (the fault record
    /// aside; a kernel command's, while a tensor holds them).
    pub fn written_claims(&self) -> SmallVec<[Arc<BufferClaim>; 2]> {
        match self {
            Command::Elementwise(op) => smallvec::smallvec![Arc::clone(&op.out.claim)],
            Command::Kernel(k) => k
                .bindings
                .iter()
                .filter(|b| b.writes && !b.fault_record)
                .filter_map(|b| b.claim.as_deref().filter(|c| !c.is_gone()).cloned())
                .collect(),
        }
    }

    /// What a profile calls the command: the elementwise function, or the
    /// kernel family.
    pub fn name(&self) -> &'static str {
        match self {
            Command::Elementwise(op) => op.kernel.name(),
            Command::Kernel(k) => k.pipeline.name,
        }
    }

    /// The elementwise op, if this is one.
    pub fn elementwise(&self) -> Option<&RecordedOp> {
        match self {
            Command::Elementwise(op) => Some(op),
            Command::Kernel(_) => None,
        }
    }
}
