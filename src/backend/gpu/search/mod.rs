//! Binary searches in one pass (`search/searchsorted.wgsl`): a thread per
//! value, reading its row of the sorted operand where it lies (any
//! strides), writing its i64 position.

use crate::backend::SearchCall;
use crate::backend::gpu::command::Bound;
use crate::backend::gpu::kernel::buffer::{buffer_decl, load_fn, needs_f16};
use crate::backend::gpu::kernel::grid::grid;
use crate::backend::gpu::kernel::params_block::params_block;
use crate::backend::gpu::kernel::prelude::{INT64_WGSL, fill_kernel};
use crate::backend::gpu::kernel::wgsl_type::ScalarType;
use crate::backend::gpu::record::{family_key, record_family};
use crate::backend::gpu::storage::GpuStorage;
use crate::dtype::KernelType;
use crate::error::{Error, Result};
use smallvec::smallvec;

const SEARCH_WGSL: &str = shader!("search/searchsorted.wgsl");

params_block! {
    /// `Params` of searchsorted.wgsl.
    pub(crate) struct SearchParams {
        /// Values (threads): rows times m.
        count: u32,
        row_threads: u32,
        /// Values a row, and the sorted rows' length.
        m: u32,
        n: u32,
        /// 1: after equal elements (`side = "right"`).
        right: u32,
        /// 1: a row whose last element orders first is searched reversed.
        auto_direction: u32,
        out_offset: u32,
        s_offset: i32,
        s_row: i32,
        s_step: i32,
        v_offset: i32,
        v_row: i32,
        v_step: i32,
        pad0: u32,
        pad1: u32,
        pad2: u32,
    }
}

/// Everything that selects a distinct search pipeline.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct SearchKey {
    pub dtype: KernelType,
    pub native_f16: bool,
}

family_key!(SearchKey, "webtensor searchsorted", search_source);

/// `fn less(a, b)`: the order of the sort (NaN after every number, -0
/// equal to +0, false before true). Floats compare on their bits, as the
/// sort's keys do: a GPU may flush subnormals in a float comparison.
fn less_fn(dtype: KernelType) -> &'static str {
    match ScalarType::of(dtype) {
        ScalarType::F32 => {
            "fn less(a: f32, b: f32) -> bool {\n    \
             return !is_nan_f32(a) && (is_nan_f32(b) || \
             order_key_f32(bitcast<u32>(a)) < order_key_f32(bitcast<u32>(b)));\n}\n"
        }
        ScalarType::Bool => "fn less(a: bool, b: bool) -> bool {\n    return !a && b;\n}\n",
        _ if dtype == KernelType::I64 => {
            "fn less(a: vec2<u32>, b: vec2<u32>) -> bool {\n    return i64_lt(a, b);\n}\n"
        }
        _ => "fn less(a: {T}, b: {T}) -> bool {\n    return a < b;\n}\n",
    }
}

/// The WGSL source of the search kernel for `key`.
///
/// # Errors
/// `Error::Internal` when the template's slots and the generated parts
/// disagree.
pub(crate) fn search_source(key: &SearchKey) -> Result<String> {
    let (dtype, native) = (key.dtype, key.native_f16);
    let bindings = [
        buffer_decl(1, "sorted", dtype, native, false),
        buffer_decl(2, "values", dtype, native, false),
        "@group(0) @binding(3) var<storage, read_write> out_buf: array<vec2<u32>>;\n".to_string(),
    ]
    .concat();
    let access = [
        load_fn("load_sorted", "sorted", dtype, native),
        load_fn("load_values", "values", dtype, native),
    ]
    .concat();
    let t = ScalarType::of(dtype).to_string();
    let source = SEARCH_WGSL.replace("{T}", &t);
    let less = less_fn(dtype).replace("{T}", &t);
    let int64 = if dtype == KernelType::I64 {
        INT64_WGSL
    } else {
        ""
    };
    let slots = [
        ("WIDE_INTS", int64),
        ("BINDINGS", bindings.as_str()),
        ("ACCESS", access.as_str()),
        ("LESS", less.as_str()),
    ];
    let (f16, params) = (needs_f16(dtype, native), SearchParams::wgsl());
    fill_kernel("searchsorted kernel", &source, f16, &params, &slots)
}

/// Records `call`, whose output storage is `out`.
///
/// # Errors
/// `Error::TooLarge` for more values than one dispatch's grid or an
/// operand over one storage binding; `Error::Internal` for operands that
/// are not `[rows, len]` views.
pub(crate) fn search(out: &GpuStorage, call: &SearchCall) -> Result<()> {
    const OP: &str = "searchsorted";
    let ctx = &out.ctx;
    let count = call.out.layout.numel();
    if count == 0 {
        return Ok(());
    }
    let (s_bound, sorted) = Bound::view(OP, call.sorted.clone(), false)?;
    let (v_bound, values) = Bound::view(OP, call.values.clone(), false)?;
    let (out_bound, dest) = Bound::view(OP, call.out.clone(), true)?;
    let (&[_, n], &[_, m]) = (sorted.layout.dims(), values.layout.dims()) else {
        return Err(Error::internal(OP, "a search takes [rows, len] views"));
    };
    let (s, v) = (sorted.layout.strides(), values.layout.strides());
    let groups = grid(count, ctx.facts.max_workgroups_per_dim)?;
    let key = SearchKey {
        dtype: call.values.dtype,
        native_f16: ctx.facts.native_f16,
    };
    let params = SearchParams {
        count: count as u32,
        row_threads: groups[0] * 64,
        m: m as u32,
        n: n as u32,
        right: u32::from(call.right),
        auto_direction: u32::from(call.auto_direction),
        out_offset: dest.layout.offset() as u32,
        s_offset: sorted.layout.offset() as i32,
        s_row: s[0] as i32,
        s_step: s[1] as i32,
        v_offset: values.layout.offset() as i32,
        v_row: v[0] as i32,
        v_step: v[1] as i32,
        pad0: 0,
        pad1: 0,
        pad2: 0,
    };
    let bindings = smallvec![s_bound, v_bound, out_bound];
    record_family(
        ctx,
        &key,
        params.bytes(),
        bindings,
        [groups[0], groups[1], 1],
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::gpu::kernel::params_block::tests::assert_layout;
    use crate::backend::gpu::kernel::prelude::tests::validate;

    #[test]
    fn every_search_kernel_is_valid_wgsl_and_matches_its_params() {
        for dtype in KernelType::ALL {
            if dtype == KernelType::F64 {
                continue;
            }
            for native_f16 in [true, false] {
                let key = SearchKey { dtype, native_f16 };
                let source = search_source(&key).unwrap();
                validate(&source, &format!("{key:?}"));
                assert_layout(&source, SearchParams::FIELDS, SearchParams::SIZE, "search");
            }
        }
    }
}
