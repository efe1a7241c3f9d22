//! GPU indexing through index tensors: `shaders/gather.wgsl` (take,
//! index_select, gather) and `shaders/scatter.wgsl` (scatter, scatter_add),
//! specialised per data and index dtype. Both check each index and report
//! out-of-range ones through the device's fault record (`faults.rs`).

use super::codegen::{
    buffer_decl, compute_type, load_fn, load_out_fn, needs_f16, store_out_fn, with_prelude,
};
use super::command::{Bound, record_kernel};
use super::elementwise::grid;
use super::faults::fault_code;
use super::loop_budget::{self, slices};
use super::params::{push_dims, push_strides, push_words};
use super::pipeline::PipelineKey;
use super::storage::GpuStorage;
use crate::backend::{GatherCall, IndexedAxis, ScatterCall, TensorRef, lines};
use crate::dtype::DType;
use crate::error::Result;
use crate::ops::kinds::IndexOp;
use smallvec::{SmallVec, smallvec};

const GATHER_WGSL: &str = include_str!("../../../shaders/gather.wgsl");
const SCATTER_WGSL: &str = include_str!("../../../shaders/scatter.wgsl");
const INDEXING_WGSL: &str = include_str!("../../../shaders/indexing.wgsl");

/// Bytes of the parameter blocks (see `Params` in the shaders).
const GATHER_PARAMS_SIZE: u64 = 32 + 3 * 32;
const SCATTER_PARAMS_SIZE: u64 = 64 + 4 * 32;

/// Which indexing kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum IndexKernel {
    Gather,
    Scatter,
    ScatterAdd,
}

/// Everything that selects a distinct indexing pipeline.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct IndexKey {
    pub kernel: IndexKernel,
    pub dtype: DType,
    /// i32 or u32.
    pub index: DType,
    pub native_f16: bool,
}

/// The WGSL source of the indexing kernel for `key`.
pub(crate) fn index_source(key: &IndexKey) -> String {
    let (dtype, native) = (key.dtype, key.native_f16);
    let bindings = [
        buffer_decl(1, "src", dtype, native, false),
        buffer_decl(2, "idx", key.index, native, false),
        buffer_decl(3, "out_buf", dtype, native, true),
    ]
    .concat();
    let zero = match compute_type(dtype) {
        "f32" => "0.0",
        "i32" => "0",
        "bool" => "false",
        _ => "0u",
    };
    let (raw, resolve) = if key.index == DType::I32 {
        ("bitcast<u32>(load_idx(p))", "resolve_signed")
    } else {
        ("load_idx(p)", "resolve_unsigned")
    };
    let mut access = [
        load_fn("load_src", "src", dtype, native),
        load_fn("load_idx", "idx", key.index, native),
        store_out_fn(dtype, native),
        format!(
            "const ZERO: {} = {zero};\n\
             fn load_raw(p: u32) -> u32 {{\n    return {raw};\n}}\n\
             fn resolve(raw: u32) -> i32 {{\n    return {resolve}(raw);\n}}\n",
            compute_type(dtype)
        ),
        INDEXING_WGSL.to_string(),
    ]
    .concat();
    let (template, write) = match key.kernel {
        IndexKernel::Gather => (GATHER_WGSL, ""),
        IndexKernel::Scatter => (SCATTER_WGSL, "store_out(p, v);"),
        IndexKernel::ScatterAdd => {
            access.push_str(&load_out_fn(dtype, native));
            (SCATTER_WGSL, "store_out(p, load_out(p) + v);")
        }
    };
    with_prelude(template, needs_f16(dtype, native))
        .replace("{{BINDINGS}}", &bindings)
        .replace("{{ACCESS}}", &access)
        .replace("{{WRITE}}", write)
}

/// The fault code of `op` on `target` with an index of `dtype`.
fn code(op: IndexOp, target: &IndexedAxis, index: DType) -> u32 {
    fault_code(op, target.axis, index == DType::U32)
}

/// Bindings 1..=4: source, index, destination, fault record.
fn bindings(
    out: &GpuStorage,
    op: IndexOp,
    src: &TensorRef,
    index: &TensorRef,
    dest: &TensorRef,
) -> Result<SmallVec<[Bound; 4]>> {
    let name = op.name();
    Ok(smallvec![
        Bound::new(name, src.storage, false)?,
        Bound::new(name, index.storage, false)?,
        Bound::new(name, dest.storage, true)?,
        out.ctx.faults.bound(),
    ])
}

/// Records `call`, whose fresh output storage is `out`.
///
/// # Errors
/// `Error::Gpu` when an operand is not on this GPU; `TooLarge` for an
/// output over one dispatch's grid.
pub(crate) fn gather(out: &GpuStorage, call: &GatherCall) -> Result<()> {
    let ctx = &out.ctx;
    let numel = call.out.layout.numel();
    if numel == 0 {
        return Ok(());
    }
    debug_assert!(call.out.layout.is_contiguous() && call.out.layout.offset() == 0);
    let groups = grid(numel, ctx.facts.max_workgroups_per_dim)?;
    let key = IndexKey {
        kernel: IndexKernel::Gather,
        dtype: call.out.dtype,
        index: call.index.dtype,
        native_f16: ctx.facts.native_f16,
    };
    let (src, index) = (&call.src.layout, &call.index.layout);
    let mut params = Vec::with_capacity(GATHER_PARAMS_SIZE as usize);
    push_words(
        &mut params,
        [
            numel as u32,
            call.out.layout.rank() as u32,
            groups[0] * 64,
            code(call.op, &call.target, call.index.dtype),
            src.offset() as u32,
            index.offset() as u32,
            call.target.size as u32,
            call.target.stride as i32 as u32,
        ],
    );
    push_dims(&mut params, call.out.layout.dims());
    push_strides(&mut params, src.strides());
    push_strides(&mut params, index.strides());
    let source_key = key.clone();
    record_kernel(
        ctx,
        PipelineKey::Index(key),
        ("webtensor gather", "main", GATHER_PARAMS_SIZE),
        || index_source(&source_key),
        params,
        bindings(out, call.op, &call.src, &call.index, &call.out)?,
        [groups[0], groups[1], 1],
    )
}

/// Records `call`, whose destination storage is `out`.
///
/// # Errors
/// As [`gather`], for the number of lines.
pub(crate) fn scatter(out: &GpuStorage, call: &ScatterCall) -> Result<()> {
    let ctx = &out.ctx;
    let (out_lines, _) = lines(&call.out);
    let (src_lines, src_step) = lines(&call.src);
    let (index_lines, index_step) = lines(&call.index);
    let count = index_lines.numel();
    let length = call.index.layout.dims().last().copied().unwrap_or(1);
    if count == 0 || length == 0 {
        return Ok(());
    }
    let groups = grid(count, ctx.facts.max_workgroups_per_dim)?;
    let key = IndexKey {
        kernel: if call.op == IndexOp::ScatterAdd {
            IndexKernel::ScatterAdd
        } else {
            IndexKernel::Scatter
        },
        dtype: call.out.dtype,
        index: call.index.dtype,
        native_f16: ctx.facts.native_f16,
    };
    // A long line is walked in slices, one dispatch each, in order.
    for slice in slices(length, loop_budget::ITERATIONS) {
        let mut params = Vec::with_capacity(SCATTER_PARAMS_SIZE as usize);
        push_words(
            &mut params,
            [
                count as u32,
                length as u32,
                index_lines.rank() as u32,
                groups[0] * 64,
                code(call.op, &call.target, call.index.dtype),
                call.target.size as u32,
                call.target.stride as i32 as u32,
                out_lines.offset() as u32,
                src_lines.offset() as u32,
                index_lines.offset() as u32,
                src_step as i32 as u32,
                index_step as i32 as u32,
                slice.start as u32,
                slice.end as u32,
                0,
                0,
            ],
        );
        push_dims(&mut params, index_lines.dims());
        for layout in [&out_lines, &src_lines, &index_lines] {
            push_strides(&mut params, layout.strides());
        }
        let source_key = key.clone();
        record_kernel(
            ctx,
            PipelineKey::Index(key.clone()),
            ("webtensor scatter", "main", SCATTER_PARAMS_SIZE),
            || index_source(&source_key),
            params,
            bindings(out, call.op, &call.src, &call.index, &call.out)?,
            [groups[0], groups[1], 1],
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::gpu::codegen::tests::{GPU_DTYPES, validate};

    #[test]
    fn every_indexing_kernel_is_valid_wgsl() {
        let kernels = [
            IndexKernel::Gather,
            IndexKernel::Scatter,
            IndexKernel::ScatterAdd,
        ];
        for kernel in kernels {
            for dtype in GPU_DTYPES {
                if kernel == IndexKernel::ScatterAdd && dtype == DType::Bool {
                    continue;
                }
                for index in [DType::I32, DType::U32] {
                    for native_f16 in [true, false] {
                        let key = IndexKey {
                            kernel,
                            dtype,
                            index,
                            native_f16,
                        };
                        validate(&index_source(&key), &format!("{key:?}"));
                    }
                }
            }
        }
    }
}
