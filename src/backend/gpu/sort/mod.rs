//! GPU sorts: a bitonic network over (key, position) pairs, `sort.wgsl`
//! specialised per dtype and direction. Keys are the elements mapped to
//! u32 so that unsigned order is the sort's order; ties fall to the
//! position, so the result is the stable order whatever the network does.

use crate::backend::gpu::command::Bound;
use crate::backend::gpu::kernel::buffer::{buffer_decl, load_fn, needs_f16, store_out_fn};
use crate::backend::gpu::kernel::grid::grid_of;
use crate::backend::gpu::kernel::params_block::line_params;
use crate::backend::gpu::kernel::prelude::fill_kernel;
use crate::backend::gpu::kernel::strided::LINE_STARTS;
use crate::backend::gpu::kernel::wgsl_type::ScalarType;
use crate::backend::gpu::record::{family_key, record_family};
use crate::backend::gpu::storage::GpuStorage;
use crate::backend::{SortCall, Storage, lines};
use crate::dtype::KernelType;
use crate::error::{Error, Result};
use smallvec::{SmallVec, smallvec};
use std::sync::Arc;

const SORT_WGSL: &str = shader!("sort/sort.wgsl");

/// Threads per workgroup of every entry point.
const WORKGROUP: u32 = 256;

/// The most elements one workgroup sorts in workgroup memory (two per
/// thread; the arrays in sort.wgsl hold this many).
const BLOCK: usize = 512;

line_params! {
    /// `Params` of sort.wgsl.
    /// `row_width` counts threads (init, global, emit) or workgroups (local).
    pub(crate) struct SortParams {
        /// The line length rounded up to a power of two.
        padded: u32,
        /// Elements one `local` workgroup sorts: min(padded, 512).
        block: u32,
        /// The merge (bitonic sequence length) and step span of a `global`
        /// step; `local` runs every merge up to `block` when k is 0, else the
        /// steps of merge k with spans below `block`.
        k: u32,
        j: u32,
    }
}

/// The entry points of sort.wgsl, in the order a sort records them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Stage {
    Init,
    Local,
    Global,
    Emit,
}

impl Stage {
    fn entry(self) -> &'static str {
        match self {
            Stage::Init => "init",
            Stage::Local => "local_steps",
            Stage::Global => "global_step",
            Stage::Emit => "emit",
        }
    }
}

/// Everything that selects a distinct sort pipeline.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct SortKey {
    pub dtype: KernelType,
    pub descending: bool,
    pub stage: Stage,
    pub native_f16: bool,
}

/// `fn sort_key(v: Acc) -> u32`: unsigned order = ascending order with NaN
/// last and -0 = +0; descending inverts the bits.
fn key_fn(dtype: KernelType, descending: bool) -> String {
    let body = match ScalarType::of(dtype) {
        ScalarType::F32 => {
            "let b = bitcast<u32>(v);\n    \
             if (is_nan_f32(v)) { return finish(0xffffffffu); }\n    \
             if ((b & 0x7fffffffu) == 0u) { return finish(0x80000000u); }\n    \
             return finish(select(b | 0x80000000u, ~b, (b >> 31u) == 1u));"
        }
        ScalarType::I32 => "return finish(bitcast<u32>(v) ^ 0x80000000u);",
        ScalarType::U32 => "return finish(v);",
        ScalarType::Bool => "return finish(select(0u, 1u, v));",
        // The backend refuses GPU sorts of i64 before any kernel.
        ScalarType::I64 => "return finish(v.y ^ 0x80000000u);",
    };
    let finish = if descending { "~k" } else { "k" };
    format!(
        "fn finish(k: u32) -> u32 {{\n    return {finish};\n}}\n\
         fn sort_key(v: Acc) -> u32 {{\n    {body}\n}}\n"
    )
}

family_key!(SortKey, "webtensor sort", sort_source, entry: |k| k.stage.entry());

/// The WGSL source of the sort kernel for `key`.
///
/// # Errors
/// `Error::Internal` when the template's slots and the generated parts
/// disagree.
pub(crate) fn sort_source(key: &SortKey) -> Result<String> {
    let (dtype, native) = (key.dtype, key.native_f16);
    let bindings = [
        buffer_decl(1, "src", dtype, native, false),
        buffer_decl(2, "out_buf", KernelType::I32, native, true),
    ]
    .concat();
    let ops = format!(
        "alias Acc = {};\n{}{}\
         fn load(p: u32) -> Acc {{\n    return load_src(p);\n}}\n\
         fn store(p: u32, v: i32) {{\n    store_out(p, v);\n}}\n{}",
        ScalarType::of(dtype),
        load_fn("load_src", "src", dtype, native),
        store_out_fn(KernelType::I32, native),
        key_fn(dtype, key.descending),
    );
    let walk = LINE_STARTS.wgsl();
    let slots = [
        ("BINDINGS", bindings.as_str()),
        ("OPS", ops.as_str()),
        ("WALK", walk.as_str()),
    ];
    let f16 = needs_f16(dtype, native);
    fill_kernel("sort kernel", SORT_WGSL, f16, &SortParams::wgsl(), &slots)
}

/// The merges and spans a line padded to `padded` takes after the first
/// `local` stage (which sorts each block of `block`): for each merge `k`
/// past the block, its global spans `j >= block`, then a local finish.
fn network(padded: usize, block: usize) -> Vec<(Stage, usize, usize)> {
    let mut steps = vec![(Stage::Local, 0, 0)];
    let mut k = block * 2;
    while k <= padded {
        let mut j = k / 2;
        while j >= block {
            steps.push((Stage::Global, k, j));
            j /= 2;
        }
        steps.push((Stage::Local, k, 0));
        k *= 2;
    }
    steps
}

/// Records `call`, whose output storage is `out`.
///
/// # Errors
/// `Error::Gpu` when the input is not on this GPU; `TooLarge` for more
/// scratch elements than u32 counts, a buffer over one storage binding, or
/// more workgroups than a dispatch can cover.
pub(crate) fn sort(out: &GpuStorage, call: &SortCall) -> Result<()> {
    const OP: &str = "sort";
    let ctx = &out.ctx;
    let (input_bound, input) = Bound::view(OP, call.input.clone(), false)?;
    let (out_bound, dest) = Bound::view(OP, call.out.clone(), true)?;
    let (src_lines, src_step) = lines(&input);
    let (dst_lines, dst_step) = lines(&dest);
    let (count, length) = (src_lines.numel(), call.length());
    if count == 0 || length == 0 {
        return Ok(());
    }
    let padded = length.next_power_of_two();
    let block = padded.min(BLOCK);
    let scratch = count
        .checked_mul(padded)
        .filter(|&n| n <= u32::MAX as usize)
        .ok_or_else(|| Error::TooLarge {
            op: OP,
            what: "scratch elements",
            requested: (count as u64).saturating_mul(padded as u64),
            limit: u32::MAX as u64,
        })?;
    let keys = Arc::new(Storage::Gpu(GpuStorage::uninit(
        ctx,
        OP,
        KernelType::U32,
        scratch,
    )?));
    let slots = Arc::new(Storage::Gpu(GpuStorage::uninit(
        ctx,
        OP,
        KernelType::U32,
        scratch,
    )?));
    // Every stage binds the same four buffers.
    let bound: SmallVec<[Bound; 4]> = smallvec![
        input_bound,
        out_bound,
        Bound::new(OP, &keys, true)?,
        Bound::new(OP, &slots, true)?,
    ];
    let max = ctx.facts.max_workgroups_per_dim;
    let mut steps = vec![(Stage::Init, 0, 0)];
    steps.extend(network(padded, block));
    steps.push((Stage::Emit, 0, 0));
    for (stage, k, j) in steps {
        let groups = match stage {
            Stage::Init => grid_of(scratch, WORKGROUP, max)?,
            Stage::Global => grid_of(scratch / 2, WORKGROUP, max)?,
            // One workgroup per block.
            Stage::Local => grid_of(scratch / block, 1, max)?,
            Stage::Emit => grid_of(count * length, WORKGROUP, max)?,
        };
        let row_width = match stage {
            Stage::Local => groups[0],
            _ => groups[0] * WORKGROUP,
        };
        let params = SortParams {
            padded: padded as u32,
            block: block as u32,
            k: k as u32,
            j: j as u32,
            ..bytemuck::Zeroable::zeroed()
        }
        .walking(
            [&src_lines, &dst_lines],
            [src_step, dst_step],
            length,
            row_width,
        );
        let key = SortKey {
            dtype: call.input.dtype,
            descending: call.descending,
            stage,
            native_f16: ctx.facts.native_f16,
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
    use crate::backend::gpu::kernel::params_block::tests::assert_layout;
    use crate::backend::gpu::kernel::prelude::tests::validate;

    #[test]
    fn every_sort_kernel_is_valid_wgsl() {
        for dtype in crate::backend::gpu::kernel::buffer::tests::GPU_DTYPES {
            for descending in [false, true] {
                for native_f16 in [true, false] {
                    let key = SortKey {
                        dtype,
                        descending,
                        stage: Stage::Init,
                        native_f16,
                    };
                    validate(&sort_source(&key).unwrap(), &format!("{key:?}"));
                }
            }
        }
    }

    #[test]
    fn params_match_the_wgsl_struct() {
        let key = SortKey {
            dtype: KernelType::F32,
            descending: false,
            stage: Stage::Init,
            native_f16: true,
        };
        assert_layout(
            &sort_source(&key).unwrap(),
            SortParams::FIELDS,
            SortParams::SIZE,
            "sort",
        );
    }

    #[test]
    fn the_network_merges_every_power_of_two_once() {
        // 2048 in blocks of 512: merges 1024 and 2048 after the block sort.
        let steps = network(2048, 512);
        assert_eq!(
            steps,
            [
                (Stage::Local, 0, 0),
                (Stage::Global, 1024, 512),
                (Stage::Local, 1024, 0),
                (Stage::Global, 2048, 1024),
                (Stage::Global, 2048, 512),
                (Stage::Local, 2048, 0),
            ]
        );
        assert_eq!(network(8, 8), [(Stage::Local, 0, 0)]);
    }
}
