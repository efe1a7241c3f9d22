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
        /// Binned values: where their edges start.
        edges_offset: u32,
        pad1: u32,
        pad2: u32,
    }
}

/// Everything that selects a distinct count pipeline.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct CountKey {
    /// The index dtype: i32, i64, u32 or u8; a float for binned values.
    pub index: KernelType,
    pub native_f16: bool,
    /// Values binned between edges (binding 4), not integer bins.
    pub binned: bool,
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

/// `fn bin_of(p)` of a value binned between increasing edges: the count
/// of edges at or below it, less one (a binary search); the last edge
/// closes the last bin; a value outside them (or NaN) past any bin.
/// Values and edges compare by their order keys (bits, -0 as 0), as the
/// CPU's do: a float comparison on a GPU that flushes subnormals would
/// make them equal to 0 and each other.
const BINNED: &str = "fn key_of(v: f32) -> i32 {
    return order_key_f32(bitcast<u32>(v));
}

fn bin_of(p: u32) -> u32 {
    let x = load_index(params.index_offset + p);
    let k = key_of(x);
    let lo = key_of(load_edges(params.edges_offset));
    let hi = key_of(load_edges(params.edges_offset + params.len));
    if (is_nan_f32(x) || k < lo || k > hi) {
        return 0xffffffffu;
    }
    if (k == hi) {
        return params.len - 1u;
    }
    var a = 0u;
    var b = params.len + 1u;
    for (var step = 0u; step < 32u && a < b; step++) {
        let mid = a + (b - a) / 2u;
        if (key_of(load_edges(params.edges_offset + mid)) <= k) {
            a = mid + 1u;
        } else {
            b = mid;
        }
    }
    return a - 1u;
}
";

/// The WGSL source of the count kernel for `key`.
///
/// # Errors
/// `Error::Internal` for an index dtype that is not an integer, or when
/// the template's slots and the generated parts disagree.
pub(crate) fn count_source(key: &CountKey) -> Result<String> {
    let float = matches!(
        key.index,
        KernelType::F32 | KernelType::F16 | KernelType::BF16
    );
    let integer = matches!(
        key.index,
        KernelType::I32 | KernelType::I64 | KernelType::U32 | KernelType::U8
    );
    if (key.binned && !float) || (!key.binned && !integer) {
        return Err(Error::internal(
            "bincount",
            "bins must be integers, binned values floats",
        ));
    }
    let native = key.native_f16;
    let mut bindings = [
        buffer_decl(1, "index", key.index, native, false),
        "@group(0) @binding(2) var<storage, read> weights: array<f32>;\n".to_string(),
        "@group(0) @binding(3) var<storage, read_write> out_buf: array<atomic<u32>>;\n".to_string(),
        load_fn("load_index", "index", key.index, native),
    ]
    .concat();
    if key.binned {
        bindings.push_str(&buffer_decl(4, "edges", key.index, native, false));
        bindings.push_str(&load_fn("load_edges", "edges", key.index, native));
    }
    let add = if key.weighted {
        "fn weight(p: u32) -> f32 {\n    return weights[params.weights_offset + p];\n}\n\
         fn add_shared(b: u32, p: u32) {\n    add_f32_shared(b, weight(p));\n}\n\
         fn add_element(b: u32, p: u32) {\n    add_f32_global(params.out_offset + b, weight(p));\n}\n\
         fn add_global(b: u32, bits: u32) {\n    add_f32_global(params.out_offset + b, bitcast<f32>(bits));\n}\n"
    } else {
        "fn add_shared(b: u32, p: u32) {\n    atomicAdd(&private_bins[b], 1u);\n}\n\
         // An i64 bin's low word, carried into its high one where an add\n\
         // wraps it (the parts of a count past a binding add into one bin).\n\
         fn add_count(b: u32, n: u32) {\n    let at = 2u * (params.out_offset + b);\n    \
         let old = atomicAdd(&out_buf[at], n);\n    \
         if (old + n < old) {\n        atomicAdd(&out_buf[at + 1u], 1u);\n    }\n}\n\
         fn add_element(b: u32, p: u32) {\n    add_count(b, 1u);\n}\n\
         fn add_global(b: u32, bits: u32) {\n    add_count(b, bits);\n}\n"
    };
    let slots = [
        ("BINDINGS", bindings.as_str()),
        (
            "BIN",
            if key.binned {
                BINNED
            } else {
                bin_fn(key.index)
            },
        ),
        ("ADD", add),
    ];
    let f16 = crate::backend::gpu::kernel::buffer::needs_f16(key.index, native);
    fill_kernel(
        "bincount kernel",
        COUNT_WGSL,
        f16,
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
    let edges = match &call.edges {
        Some(e) => Some(Bound::view(OP, e.clone(), false)?),
        None => None,
    };
    let key = CountKey {
        index: call.index.dtype,
        native_f16: ctx.facts.native_f16,
        binned: edges.is_some(),
        weighted: call.weights.is_some(),
    };
    let groups = n.div_ceil(256 * PER_THREAD).clamp(1, MAX_GROUPS) as u32;
    let params = CountParams {
        n: n as u32,
        len: dest.layout.numel() as u32,
        index_offset: index.layout.offset() as u32,
        weights_offset: weights_offset as u32,
        out_offset: dest.layout.offset() as u32,
        edges_offset: edges.as_ref().map_or(0, |(_, e)| e.layout.offset() as u32),
        pad1: 0,
        pad2: 0,
    };
    let mut bindings = smallvec![index_bound, weights_bound, out_bound];
    if let Some((bound, _)) = edges {
        bindings.push(bound);
    }
    record_family(ctx, &key, params.bytes(), bindings, [groups, 1, 1])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::gpu::kernel::params_block::tests::assert_layout;
    use crate::backend::gpu::kernel::prelude::tests::validate;

    #[test]
    fn every_count_kernel_is_valid_wgsl_and_matches_its_params() {
        let integers = [
            KernelType::I32,
            KernelType::I64,
            KernelType::U32,
            KernelType::U8,
        ];
        let floats = [
            (KernelType::F32, true),
            (KernelType::F16, true),
            (KernelType::F16, false),
            (KernelType::BF16, true),
        ];
        let keys = integers.iter().map(|&index| (index, true, false)).chain(
            floats
                .iter()
                .map(|&(index, native_f16)| (index, native_f16, true)),
        );
        for (index, native_f16, binned) in keys {
            for weighted in [false, true] {
                let key = CountKey {
                    index,
                    native_f16,
                    binned,
                    weighted,
                };
                let source = count_source(&key).unwrap();
                validate(&source, &format!("{key:?}"));
                assert_layout(&source, CountParams::FIELDS, CountParams::SIZE, "count");
            }
        }
        let unbinned_float = CountKey {
            index: KernelType::F32,
            native_f16: true,
            binned: false,
            weighted: false,
        };
        assert!(count_source(&unbinned_float).is_err());
    }
}
