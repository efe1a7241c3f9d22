//! Counting into bins in one pass (`count/count.wgsl`): a bounded grid of
//! workgroups of 256, each with its own bins in workgroup memory (up to
//! 2048 of them) added to the output once, the way CUB and PyTorch build a
//! histogram of few bins; more bins take global atomics.

use crate::backend::CountCall;
use crate::backend::gpu::command::Bound;
use crate::backend::gpu::kernel::buffer::{buffer_decl, load_fn};
use crate::backend::gpu::kernel::params_block::params_block;
use crate::backend::gpu::kernel::prelude::fill_kernel;
use crate::backend::gpu::record::{family_key, record_family};
use crate::backend::gpu::storage::GpuStorage;
use crate::dtype::KernelType;
use crate::error::{Error, Result};
use smallvec::smallvec;

const COUNT_WGSL: &str = shader!("count/count.wgsl");

/// Elements a thread takes at least before another workgroup is launched.
const PER_THREAD: usize = 8;
/// The most workgroups a count launches (the rest is grid-stride).
const MAX_GROUPS: usize = 4096;

params_block! {
    /// `Params` of count.wgsl.
    pub(crate) struct CountParams {
        /// Elements.
        n: u32,
        /// Bins.
        len: u32,
        index_offset: u32,
        weights_offset: u32,
        out_offset: u32,
        pad0: u32,
        pad1: u32,
        pad2: u32,
    }
}

/// Everything that selects a distinct count pipeline.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct CountKey {
    /// The index dtype: i32, i64, u32 or u8.
    pub index: KernelType,
    pub weighted: bool,
}

family_key!(CountKey, "webtensor bincount", count_source);

/// `fn bin_of(p)`: element p's bin as u32, past any length for one that
/// is negative or past 2^32.
fn bin_fn(index: KernelType) -> &'static str {
    match index {
        KernelType::I64 => {
            "fn bin_of(p: u32) -> u32 {\n    \
             let v = load_index(params.index_offset + p);\n    \
             return select(0xffffffffu, v.x, v.y == 0u);\n}\n"
        }
        KernelType::I32 => {
            "fn bin_of(p: u32) -> u32 {\n    return bitcast<u32>(load_index(params.index_offset + p));\n}\n"
        }
        _ => "fn bin_of(p: u32) -> u32 {\n    return load_index(params.index_offset + p);\n}\n",
    }
}

/// The WGSL source of the count kernel for `key`.
///
/// # Errors
/// `Error::Internal` for an index dtype that is not an integer, or when
/// the template's slots and the generated parts disagree.
pub(crate) fn count_source(key: &CountKey) -> Result<String> {
    if !matches!(
        key.index,
        KernelType::I32 | KernelType::I64 | KernelType::U32 | KernelType::U8
    ) {
        return Err(Error::internal("bincount", "bins must be integers"));
    }
    let bindings = [
        buffer_decl(1, "index", key.index, true, false),
        "@group(0) @binding(2) var<storage, read> weights: array<f32>;\n".to_string(),
        "@group(0) @binding(3) var<storage, read_write> out_buf: array<atomic<u32>>;\n".to_string(),
        load_fn("load_index", "index", key.index, true),
    ]
    .concat();
    let add = if key.weighted {
        "fn weight(p: u32) -> f32 {\n    return weights[params.weights_offset + p];\n}\n\
         fn add_shared(b: u32, p: u32) {\n    add_f32_shared(b, weight(p));\n}\n\
         fn add_element(b: u32, p: u32) {\n    add_f32_global(params.out_offset + b, weight(p));\n}\n\
         fn add_global(b: u32, bits: u32) {\n    add_f32_global(params.out_offset + b, bitcast<f32>(bits));\n}\n"
    } else {
        "fn add_shared(b: u32, p: u32) {\n    atomicAdd(&private_bins[b], 1u);\n}\n\
         fn add_element(b: u32, p: u32) {\n    atomicAdd(&out_buf[2u * (params.out_offset + b)], 1u);\n}\n\
         fn add_global(b: u32, bits: u32) {\n    atomicAdd(&out_buf[2u * (params.out_offset + b)], bits);\n}\n"
    };
    let slots = [
        ("BINDINGS", bindings.as_str()),
        ("BIN", bin_fn(key.index)),
        ("ADD", add),
    ];
    fill_kernel(
        "bincount kernel",
        COUNT_WGSL,
        false,
        &CountParams::wgsl(),
        &slots,
    )
}

/// Records `call`, whose output storage is `out`.
///
/// # Errors
/// `Error::TooLarge` for 2^32 elements or more, or an operand over one
/// storage binding.
pub(crate) fn count(out: &GpuStorage, call: &CountCall) -> Result<()> {
    const OP: &str = "bincount";
    let ctx = &out.ctx;
    let n = call.index.layout.numel();
    if n == 0 || call.out.layout.numel() == 0 {
        return Ok(());
    }
    if n > u32::MAX as usize {
        return Err(Error::TooLarge {
            op: OP,
            what: "elements counted in one pass",
            requested: n as u64,
            limit: u64::from(u32::MAX),
        });
    }
    let (index_bound, index) = Bound::view(OP, call.index.clone(), false)?;
    let (out_bound, dest) = Bound::view(OP, call.out.clone(), true)?;
    // Unweighted: the index bound again stands in for the weights (never
    // read).
    let (weights_bound, weights_offset) = match &call.weights {
        Some(w) => {
            let (bound, w) = Bound::view(OP, w.clone(), false)?;
            (bound, w.layout.offset())
        }
        None => (index_bound.clone(), 0),
    };
    let key = CountKey {
        index: call.index.dtype,
        weighted: call.weights.is_some(),
    };
    let groups = n.div_ceil(256 * PER_THREAD).clamp(1, MAX_GROUPS) as u32;
    let params = CountParams {
        n: n as u32,
        len: dest.layout.numel() as u32,
        index_offset: index.layout.offset() as u32,
        weights_offset: weights_offset as u32,
        out_offset: dest.layout.offset() as u32,
        pad0: 0,
        pad1: 0,
        pad2: 0,
    };
    let bindings = smallvec![index_bound, weights_bound, out_bound];
    record_family(ctx, &key, params.bytes(), bindings, [groups, 1, 1])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::gpu::kernel::params_block::tests::assert_layout;
    use crate::backend::gpu::kernel::prelude::tests::validate;

    #[test]
    fn every_count_kernel_is_valid_wgsl_and_matches_its_params() {
        for index in [
            KernelType::I32,
            KernelType::I64,
            KernelType::U32,
            KernelType::U8,
        ] {
            for weighted in [false, true] {
                let key = CountKey { index, weighted };
                let source = count_source(&key).unwrap();
                validate(&source, &format!("{key:?}"));
                assert_layout(&source, CountParams::FIELDS, CountParams::SIZE, "count");
            }
        }
        assert!(
            count_source(&CountKey {
                index: KernelType::F32,
                weighted: false
            })
            .is_err()
        );
    }
}
