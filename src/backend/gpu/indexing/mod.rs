//! GPU indexing through index tensors (i32, u32 or i64): `gather.wgsl` (take,
//! index_select, gather) and `scatter.wgsl` (scatter, scatter_add),
//! specialised per data and index dtype. Both check each index and report
//! out-of-range ones through the device's fault record (`faults.rs`).

use crate::backend::gpu::command::Bound;
use crate::backend::gpu::faults::fault_code;
use crate::backend::gpu::kernel::buffer::{
    buffer_decl, load_fn, load_out_fn, needs_f16, store_out_fn,
};
use crate::backend::gpu::kernel::grid::grid;
use crate::backend::gpu::kernel::loop_budget::{self, slices};
use crate::backend::gpu::kernel::params_block::{dims8, params_block, strides8};
use crate::backend::gpu::kernel::prelude::{INT64_WGSL, fill_kernel};
use crate::backend::gpu::kernel::strided::{Walk, Walked};
use crate::backend::gpu::kernel::wgsl_type::ScalarType;
use crate::backend::gpu::record::{FamilyKey, record_family};
use crate::backend::gpu::storage::GpuStorage;
use crate::backend::{GatherCall, IndexedAxis, ScatterCall, TensorRef, lines};
use crate::dtype::KernelType;
use crate::error::{Error, Result};
use crate::op::IndexOp;
use smallvec::{SmallVec, smallvec};

const GATHER_WGSL: &str = shader!("indexing/gather.wgsl");
const SCATTER_WGSL: &str = shader!("indexing/scatter.wgsl");
const INDEXING_WGSL: &str = shader!("indexing/indexing.wgsl");

params_block! {
    /// `Params` of gather.wgsl.
    pub(crate) struct GatherParams {
        numel: u32,
        rank: u32,
        row_threads: u32,
        /// Op, axis and signedness, for the fault record.
        code: u32,
        src_offset: u32,
        idx_offset: u32,
        axis_size: u32,
        axis_stride: i32,
        first: u32,
        count: u32,
        out_offset: u32,
        pad0: u32,
        shape: [u32; 8],
        src_strides: [i32; 8],
        idx_strides: [i32; 8],
        out_strides: [i32; 8],
    }
}

params_block! {
    /// `Params` of scatter.wgsl.
    pub(crate) struct ScatterParams {
        lines: u32,
        rank: u32,
        row_threads: u32,
        /// Op, axis and signedness, for the fault record.
        code: u32,
        axis_size: u32,
        axis_stride: i32,
        out_offset: u32,
        src_offset: u32,
        idx_offset: u32,
        src_step: i32,
        idx_step: i32,
        /// The slice of every line this dispatch walks.
        first: u32,
        end: u32,
        part_first: u32,
        part_count: u32,
        pad0: u32,
        shape: [u32; 8],
        out_strides: [i32; 8],
        src_strides: [i32; 8],
        idx_strides: [i32; 8],
    }
}

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
    pub dtype: KernelType,
    /// i32 or u32.
    pub index: KernelType,
    pub native_f16: bool,
}

impl FamilyKey for IndexKey {
    fn label(&self) -> &'static str {
        match self.kernel {
            IndexKernel::Gather => "webtensor gather",
            IndexKernel::Scatter | IndexKernel::ScatterAdd => "webtensor scatter",
        }
    }

    fn source(&self) -> Result<String> {
        index_source(self)
    }
}

/// The WGSL source of the indexing kernel for `key`.
///
/// # Errors
/// `Error::Internal` when the template's slots and the generated parts
/// disagree.
pub(crate) fn index_source(key: &IndexKey) -> Result<String> {
    // Gather and scatter move f16 values with every bit pattern kept
    // (signalling NaNs, payloads), as copies do: f16's conversions through
    // f32 quiet a signalling NaN or drop a NaN's payload. Packed, f16 runs
    // bf16's loads and stores (16-bit words alike, whose conversions keep
    // every pattern); native, its values move as f16, never converted.
    let moves_f16 = key.dtype == KernelType::F16 && key.kernel != IndexKernel::ScatterAdd;
    let native = key.native_f16;
    let dtype = match moves_f16 && !native {
        true => KernelType::BF16,
        false => key.dtype,
    };
    let bindings = [
        buffer_decl(1, "src", dtype, native, false),
        buffer_decl(2, "idx", key.index, native, false),
        buffer_decl(3, "out_buf", dtype, native, true),
    ]
    .concat();
    let zero = ScalarType::of(dtype).zero();
    // The raw index as (low word, high word).
    let (raw, resolve) = match key.index {
        KernelType::I32 => (
            "vec2<u32>(bitcast<u32>(load_idx(p)), 0u)",
            "resolve_signed(raw.x)",
        ),
        KernelType::I64 => ("load_idx(p)", "resolve_wide(raw)"),
        _ => ("vec2<u32>(load_idx(p), 0u)", "resolve_unsigned(raw.x)"),
    };
    let (moved, zero, load_src, store_out) = match moves_f16 && native {
        true => (
            "f16".to_string(),
            "0.0h".to_string(),
            "fn load_src(p: u32) -> f16 {\n    return src[p];\n}\n".to_string(),
            "fn store_out(p: u32, v: f16) {\n    out_buf[p] = v;\n}\n".to_string(),
        ),
        false => (
            ScalarType::of(dtype).to_string(),
            zero.to_string(),
            load_fn("load_src", "src", dtype, native),
            store_out_fn(dtype, native),
        ),
    };
    let mut access = [
        load_src,
        load_fn("load_idx", "idx", key.index, native),
        store_out,
        format!(
            "const ZERO: {moved} = {zero};\n\
             fn load_raw(p: u32) -> vec2<u32> {{\n    return {raw};\n}}\n\
             fn resolve(raw: vec2<u32>) -> i32 {{\n    return {resolve};\n}}\n"
        ),
        INDEXING_WGSL.to_string(),
    ]
    .concat();
    let (template, write) = match key.kernel {
        IndexKernel::Gather => (GATHER_WGSL, ""),
        IndexKernel::Scatter => (SCATTER_WGSL, "store_out(p, v);"),
        IndexKernel::ScatterAdd if dtype == KernelType::I64 => {
            access.push_str(&load_out_fn(dtype, native));
            access.push_str(INT64_WGSL);
            (SCATTER_WGSL, "store_out(p, i64_add(load_out(p), v));")
        }
        IndexKernel::ScatterAdd => {
            access.push_str(&load_out_fn(dtype, native));
            (SCATTER_WGSL, "store_out(p, load_out(p) + v);")
        }
    };
    let walked: &[Walked] = if key.kernel == IndexKernel::Gather {
        &[
            Walked {
                start: "i32(params.src_offset)",
                strides: "params.src_strides",
            },
            Walked {
                start: "i32(params.idx_offset)",
                strides: "params.idx_strides",
            },
            Walked {
                start: "i32(params.out_offset)",
                strides: "params.out_strides",
            },
        ]
    } else {
        &[
            Walked {
                start: "i32(params.out_offset)",
                strides: "params.out_strides",
            },
            Walked {
                start: "i32(params.src_offset)",
                strides: "params.src_strides",
            },
            Walked {
                start: "i32(params.idx_offset)",
                strides: "params.idx_strides",
            },
        ]
    };
    let walk = Walk {
        name: "positions",
        rank: "params.rank",
        shape: "params.shape",
        operands: walked,
    }
    .wgsl();
    let params = if key.kernel == IndexKernel::Gather {
        GatherParams::wgsl()
    } else {
        ScatterParams::wgsl()
    };
    let mut slots = vec![
        ("BINDINGS", bindings.as_str()),
        ("ACCESS", access.as_str()),
        ("WALK", walk.as_str()),
    ];
    if key.kernel != IndexKernel::Gather {
        slots.push(("WRITE", write));
    }
    let f16 = needs_f16(dtype, native);
    fill_kernel("indexing kernel", template, f16, &params, &slots)
}

/// The fault code of `op` on `target` with an index of `dtype`.
fn code(op: IndexOp, target: &IndexedAxis, index: KernelType) -> u32 {
    fault_code(op, target.axis, index)
}

/// `t`, the indexed operand (a layout at position `target.first` of the
/// indexed axis), bound over every element positions `target.first..
/// target.first + target.count` along the axis reach from it, and its
/// layout counted from the first byte bound (see [`Bound::rebased`]).
///
/// # Errors
/// As [`Bound::view`].
fn bind_indexed<'a>(
    op: &'static str,
    t: &TensorRef<'a>,
    target: &IndexedAxis,
    writes: bool,
) -> Result<(Bound, TensorRef<'a>)> {
    // Indices resolve in i32 (indexing.wgsl). A longer axis fits a binding
    // only broadcast; its extent would wrap, and a valid index seem out of
    // range (or a negative one land elsewhere).
    if target.size > i32::MAX as usize {
        return Err(Error::TooLarge {
            op,
            what: "elements along an indexed axis (indices resolve in i32)",
            requested: target.size as u64,
            limit: i32::MAX as u64,
        });
    }
    let reach = t.with_layout(t.layout.with_last_axis(target.count, target.stride));
    let (bound, reach) = Bound::view(op, reach, writes)?;
    let layout = reach.layout.without_last_axis();
    Ok((bound, t.with_layout(layout)))
}

/// Records `call`, whose output storage is `out`.
///
/// # Errors
/// `Error::Gpu` when an operand is not on this GPU; `TooLarge` for an
/// output over one dispatch's grid or an operand view over one storage
/// binding (the op layer cuts larger views).
pub(crate) fn gather(out: &GpuStorage, call: &GatherCall) -> Result<()> {
    let ctx = &out.ctx;
    let numel = call.out.layout.numel();
    if numel == 0 {
        return Ok(());
    }
    let name = call.op.name();
    let (src_bound, src) = bind_indexed(name, &call.src, &call.target, false)?;
    let (index_bound, index) = Bound::view(name, call.index.clone(), false)?;
    let (out_bound, dest) = Bound::view(name, call.out.clone(), true)?;
    let groups = grid(numel, ctx.facts.max_workgroups_per_dim)?;
    let key = IndexKey {
        kernel: IndexKernel::Gather,
        dtype: call.out.dtype,
        index: call.index.dtype,
        native_f16: ctx.facts.native_f16,
    };
    let (src, index, dest) = (&src.layout, &index.layout, &dest.layout);
    let params = GatherParams {
        numel: numel as u32,
        rank: dest.rank() as u32,
        row_threads: groups[0] * 64,
        code: code(call.op, &call.target, call.index.dtype),
        src_offset: src.offset() as u32,
        idx_offset: index.offset() as u32,
        axis_size: call.target.size as u32,
        axis_stride: call.target.stride as i32,
        first: call.target.first as u32,
        count: call.target.count as u32,
        out_offset: dest.offset() as u32,
        pad0: 0,
        shape: dims8(dest.dims()),
        src_strides: strides8(src.strides()),
        idx_strides: strides8(index.strides()),
        out_strides: strides8(dest.strides()),
    };
    record_family(
        ctx,
        &key,
        params.bytes(),
        smallvec![src_bound, index_bound, out_bound, ctx.faults.bound()],
        [groups[0], groups[1], 1],
    )
}

/// Records `call`, whose destination storage is `out`.
///
/// # Errors
/// As [`gather`], for the number of lines.
pub(crate) fn scatter(out: &GpuStorage, call: &ScatterCall) -> Result<()> {
    let ctx = &out.ctx;
    let name = call.op.name();
    let (src_bound, src) = Bound::view(name, call.src.clone(), false)?;
    let (index_bound, index) = Bound::view(name, call.index.clone(), false)?;
    let (out_bound, dest) = bind_indexed(name, &call.out, &call.target, true)?;
    let bound: SmallVec<[Bound; 4]> =
        smallvec![src_bound, index_bound, out_bound, ctx.faults.bound()];
    let (out_lines, _) = lines(&dest);
    let (src_lines, src_step) = lines(&src);
    let (index_lines, index_step) = lines(&index);
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
        let params = ScatterParams {
            lines: count as u32,
            rank: index_lines.rank() as u32,
            row_threads: groups[0] * 64,
            code: code(call.op, &call.target, call.index.dtype),
            axis_size: call.target.size as u32,
            axis_stride: call.target.stride as i32,
            out_offset: out_lines.offset() as u32,
            src_offset: src_lines.offset() as u32,
            idx_offset: index_lines.offset() as u32,
            src_step: src_step as i32,
            idx_step: index_step as i32,
            first: slice.start as u32,
            end: slice.end as u32,
            part_first: call.target.first as u32,
            part_count: call.target.count as u32,
            pad0: 0,
            shape: dims8(index_lines.dims()),
            out_strides: strides8(out_lines.strides()),
            src_strides: strides8(src_lines.strides()),
            idx_strides: strides8(index_lines.strides()),
        };
        record_family(
            ctx,
            &key,
            params.bytes(),
            bound.clone(),
            [groups[0], groups[1], 1],
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::gpu::kernel::buffer::tests::GPU_DTYPES;
    use crate::backend::gpu::kernel::params_block::tests::assert_layout;
    use crate::backend::gpu::kernel::prelude::tests::validate;

    #[test]
    fn params_match_the_wgsl_structs() {
        let key = |kernel| IndexKey {
            kernel,
            dtype: KernelType::F32,
            index: KernelType::I32,
            native_f16: true,
        };
        let gather = index_source(&key(IndexKernel::Gather)).unwrap();
        assert_layout(&gather, GatherParams::FIELDS, GatherParams::SIZE, "gather");
        let scatter = index_source(&key(IndexKernel::ScatterAdd)).unwrap();
        assert_layout(
            &scatter,
            ScatterParams::FIELDS,
            ScatterParams::SIZE,
            "scatter",
        );
    }

    #[test]
    fn every_indexing_kernel_is_valid_wgsl() {
        let kernels = [
            IndexKernel::Gather,
            IndexKernel::Scatter,
            IndexKernel::ScatterAdd,
        ];
        for kernel in kernels {
            for dtype in GPU_DTYPES.into_iter().chain([KernelType::I64]) {
                if kernel == IndexKernel::ScatterAdd && dtype == KernelType::Bool {
                    continue;
                }
                for index in [KernelType::I32, KernelType::U32, KernelType::I64] {
                    for native_f16 in [true, false] {
                        let key = IndexKey {
                            kernel,
                            dtype,
                            index,
                            native_f16,
                        };
                        validate(&index_source(&key).unwrap(), &format!("{key:?}"));
                    }
                }
            }
        }
    }
}
