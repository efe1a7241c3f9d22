//! Recording kernels: how an op becomes a command in the device's pending
//! batch. [`record_kernel`] records one dispatch of a fixed-function family
//! (reduce, scan, matmul, indexing); [`record_elementwise`] records an
//! elementwise op, which the scheduler compiles, or fuses, at flush time.

use super::command::{Bound, Command, OpArg, RecordedOp, TensorOperand};
use super::context::GpuContext;
use super::elementwise::codegen::WORKGROUP;
use super::kernel::grid::grid_of;
use super::kernel::pipeline::{PipelineKey, PipelineSpec};
use super::storage::GpuStorage;
use crate::backend::{Call, Input, Storage, TensorRef};
use crate::dtype::KernelType;
use crate::error::{Error, Result};
use crate::layout::Layout;
use smallvec::SmallVec;
use std::sync::Arc;

/// One dispatch of a fixed-function family, as [`record_kernel`] records
/// it.
pub(crate) struct KernelLaunch<'a, K, S> {
    /// What selects the pipeline in the device's cache.
    pub key: &'a K,
    /// The pipeline's label (`webtensor <family>`: profiles call its
    /// dispatches by the family's name).
    pub label: &'static str,
    /// The shader's entry point.
    pub entry: &'static str,
    /// Builds the WGSL source from the key, on the pipeline's first use.
    pub source: S,
    /// The parameter block's bytes (the pipeline's uniform binding has
    /// their size), copied into the batch's parameter bytes.
    pub params: &'a [u8],
    /// Storage bindings 1.., in order, each read or written.
    pub bindings: SmallVec<[Bound; 4]>,
    /// Workgroups in x, y and z.
    pub groups: [u32; 3],
    /// Built without wgpu's runtime checks (webtensor's own kernels, whose
    /// indexing is proven in bounds); false for an application's WGSL.
    pub trusted: bool,
}

/// Records `launch`, building its pipeline on first use.
///
/// # Errors
/// `Error::DeviceLost` on a lost device; `Error::Gpu` when the shader fails
/// to compile; scheduler flush failures.
pub(crate) fn record_kernel<K: PipelineKey>(
    ctx: &GpuContext,
    launch: KernelLaunch<'_, K, impl FnOnce(&K) -> Result<String>>,
) -> Result<()> {
    let KernelLaunch {
        key,
        label,
        entry,
        source,
        params,
        bindings,
        groups,
        trusted,
    } = launch;
    ctx.check_lost(label)?;
    let pipeline = ctx.pipelines.get(&ctx.device, key, || {
        Ok(PipelineSpec {
            label,
            source: source(key)?,
            entry,
            params_size: params.len() as u64,
            read_only: bindings.iter().map(|b| !b.writes).collect(),
            trusted,
        })
    })?;
    let mut scheduler = ctx.scheduler();
    if bindings.iter().any(|b| b.fault_record) {
        ctx.faults.arm();
    }
    let recorded = scheduler.record_kernel(&ctx.target(), pipeline, params, bindings, groups);
    drop(scheduler);
    explain_recording(ctx, label, recorded)
}

/// A recording's result: an automatic flush that failed may be the
/// device's loss before wgpu told of it, then `Error::DeviceLost` naming
/// `op` (its outputs poisoned, so their readbacks say so too).
///
/// # Errors
/// `recorded`'s error, explained.
#[inline(always)]
fn explain_recording(ctx: &GpuContext, op: &'static str, recorded: Result<()>) -> Result<()> {
    match recorded {
        Ok(()) => Ok(()),
        Err(e) => ctx.explain(op, Err(e)),
    }
}

/// The pipeline key of a fixed-function family: it names the pipeline,
/// picks the entry point and writes the WGSL, so that recording one of the
/// family's dispatches takes only the key and the dispatch's data.
pub(crate) trait FamilyKey: PipelineKey {
    /// The pipeline's label, `webtensor <family>` (profiles call its
    /// dispatches by the family's name).
    fn label(&self) -> &'static str;
    /// The entry point this key's dispatches run.
    fn entry(&self) -> &'static str {
        "main"
    }
    /// The WGSL source, built on the pipeline's first use.
    ///
    /// # Errors
    /// `Error::Internal` for a key the family has no kernel for.
    fn source(&self) -> Result<String>;
}

/// Implements [`FamilyKey`] for a family's key type: pipelines labelled
/// `$label`, their WGSL from `$source(&key)`, their entry point `main` or
/// (after `entry:`) the one `$entry(&key)` names.
macro_rules! family_key {
    ($key:ty, $label:literal, $source:path $(, entry: $entry:expr)?) => {
        impl $crate::backend::gpu::record::FamilyKey for $key {
            fn label(&self) -> &'static str {
                $label
            }

            $(fn entry(&self) -> &'static str {
                let entry: fn(&$key) -> &'static str = $entry;
                entry(self)
            })?

            fn source(&self) -> $crate::error::Result<String> {
                $source(self)
            }
        }
    };
}
pub(crate) use family_key;

/// The entry point of a family with a workgroup mode (a workgroup per
/// line or output, `main_group`) and a thread mode (`main_thread`).
pub(crate) fn group_or_thread(group: bool) -> &'static str {
    if group { "main_group" } else { "main_thread" }
}

/// Records one dispatch of `key`'s pipeline: `params`, the parameter
/// block's bytes; `bindings`, the storage bindings 1.. in order;
/// `groups`, the workgroups in x, y and z.
///
/// # Errors
/// As [`record_kernel`].
pub(crate) fn record_family<K: FamilyKey>(
    ctx: &GpuContext,
    key: &K,
    params: &[u8],
    bindings: SmallVec<[Bound; 4]>,
    groups: [u32; 3],
) -> Result<()> {
    let launch = KernelLaunch {
        key,
        label: key.label(),
        entry: key.entry(),
        source: K::source,
        params,
        bindings,
        groups,
        trusted: true,
    };
    record_kernel(ctx, launch)
}

/// The operand of a recorded elementwise op that `t` is, on `s`: the
/// layout moves from the call into the command. (Inlined into its two
/// uses: the recording path of every elementwise op.)
#[inline(always)]
fn operand(
    op: &'static str,
    layout: Layout,
    dtype: KernelType,
    s: &GpuStorage,
) -> Result<TensorOperand> {
    s.check_poison(op)?;
    Ok(TensorOperand {
        claim: s.claim().clone(),
        buffer_id: s.buffer_id(),
        layout,
        dtype,
    })
}

/// The error of elementwise op `op` recording on `ctx` and meeting an input
/// of another device (`s`) or in host memory (`None`): the loss of `ctx`
/// when it is lost (the destination is a tensor a recovery left behind),
/// else the input's (see `GpuStorage::elsewhere`).
#[cold]
#[inline(never)]
fn stranger(ctx: &GpuContext, op: &'static str, s: Option<&GpuStorage>) -> Error {
    match s {
        _ if ctx.is_lost() => ctx.lost_error(op),
        Some(s) => s.elsewhere(op, "on this GPU"),
        None => Error::internal(op, "an input is not on the GPU"),
    }
}

/// Records `call` on the GPU that holds its destination.
///
/// # Errors
/// `Error::DeviceLost` on a lost device; `Error::TooLarge` when the
/// dispatch grid cannot cover the destination;
/// `Error::Gpu` when an input is not on this GPU; flush failures when the
/// recording reaches the flush threshold.
pub(crate) fn record_elementwise(call: Call) -> Result<()> {
    let Call {
        kernel,
        out:
            TensorRef {
                storage: out_storage,
                layout: out_layout,
                dtype: out_dtype,
            },
        inputs,
    } = call;
    let Storage::Gpu(out) = &**out_storage else {
        return Err(Error::internal(
            kernel.name(),
            "the destination is not on the GPU",
        ));
    };
    let ctx = &out.ctx;
    // Fails now, not at flush time, when the grid cannot cover the op.
    grid_of(
        out_layout.numel(),
        WORKGROUP,
        ctx.facts.max_workgroups_per_dim,
    )?;
    let mut args = smallvec::SmallVec::new();
    for input in inputs {
        args.push(match input {
            Input::Tensor(TensorRef {
                storage,
                layout,
                dtype,
            }) => {
                let Storage::Gpu(s) = &**storage else {
                    return Err(stranger(ctx, kernel.name(), None));
                };
                // A tensor of the device a recovery replaced (lost, so
                // every tensor of another device is refused before).
                if !Arc::ptr_eq(&s.ctx, ctx) {
                    return Err(stranger(ctx, kernel.name(), Some(s)));
                }
                OpArg::Tensor(operand(kernel.name(), layout, dtype, s)?)
            }
            Input::Scalar(s) => OpArg::Scalar(s),
        });
    }
    let op = RecordedOp {
        kernel,
        out: operand(kernel.name(), out_layout, out_dtype, out)?,
        args,
    };
    let name = op.kernel.name();
    let recorded = ctx
        .scheduler()
        .record(&ctx.target(), Command::Elementwise(op));
    explain_recording(ctx, name, recorded)
}
