//! GPU scans (cumulative sums and products): `scan.wgsl`
//! specialised per op and dtype, one thread per short line or one
//! workgroup per long one.

use crate::backend::gpu::command::Bound;
use crate::backend::gpu::kernel::buffer::{
    buffer_decl, load_fn, load_out_fn, needs_f16, store_out_fn,
};
use crate::backend::gpu::kernel::grid::grid;
use crate::backend::gpu::kernel::loop_budget::{self, slices};
use crate::backend::gpu::kernel::params_block::line_params;
use crate::backend::gpu::kernel::prelude::{INT64_WGSL, fill_kernel};
use crate::backend::gpu::kernel::strided::LINE_STARTS;
use crate::backend::gpu::kernel::wgsl_type::ScalarType;
use crate::backend::gpu::record::{family_key, group_or_thread, record_family};
use crate::backend::gpu::storage::GpuStorage;
use crate::backend::{ScanCall, lines};
use crate::dtype::KernelType;
use crate::error::Result;
use crate::op::ScanOp;
use smallvec::smallvec;

const SCAN_WGSL: &str = shader!("scan/scan.wgsl");

/// Lines at most this long run one thread each.
const THREAD_MODE_MAX: usize = 64;

/// scan.wgsl's near-one functions for f32 products: a factor within 2^-7
/// of 1 (not NaN) is near; near chunks combine deviations from 1.
const NEAR_ONE: &str = "const NEAR_ONE: bool = true;
fn is_far(v: f32) -> bool {
    return !(abs(v - 1.0) <= 0.0078125);
}
fn to_near(v: f32, near: bool) -> f32 {
    if (near) {
        return v - 1.0;
    }
    return v;
}
fn from_near(v: f32, near: bool) -> f32 {
    if (near) {
        return 1.0 + v;
    }
    return v;
}
fn combine_near(a: f32, b: f32, near: bool) -> f32 {
    if (near) {
        return a + b + a * b;
    }
    return a * b;
}
";

/// scan.wgsl's near-one functions for every other scan: none is near.
const NOT_NEAR_ONE: &str = "const NEAR_ONE: bool = false;
fn is_far(v: Acc) -> bool { return true; }
fn to_near(v: Acc, near: bool) -> Acc { return v; }
fn from_near(v: Acc, near: bool) -> Acc { return v; }
fn combine_near(a: Acc, b: Acc, near: bool) -> Acc { return combine(a, b); }
";

line_params! {
    /// `Params` of scan.wgsl.
    /// `row_width` counts workgroups (group mode) or threads (thread mode).
    pub(crate) struct ScanParams {
        /// Group mode: the slice of every line this dispatch scans; a slice
        /// after the first carries on from the output just before it.
        first: u32,
        end: u32,
        pad0: u32,
        pad1: u32,
    }
}

/// Everything that selects a distinct scan pipeline.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct ScanKey {
    pub op: ScanOp,
    /// f32, f16, i32 or u32 (the op layer widens bool and u8).
    pub dtype: KernelType,
    /// One workgroup per line (else one thread).
    pub group: bool,
    pub native_f16: bool,
}

family_key!(ScanKey, "webtensor scan", scan_source, entry: |k| group_or_thread(k.group));

/// The WGSL source of the scan kernel for `key`.
///
/// # Errors
/// `Error::Internal` when the template's slots and the generated parts
/// disagree.
pub(crate) fn scan_source(key: &ScanKey) -> Result<String> {
    let (dtype, native) = (key.dtype, key.native_f16);
    let acc = ScalarType::of(dtype);
    // -0.0 for floats: the identity of an addition of any sign (0.0 +
    // -0.0 is 0.0, and NumPy's cumsum of -0.0 is -0.0).
    let identity = match (key.op, acc) {
        (ScanOp::Sum, ScalarType::F32) => "-0.0",
        (ScanOp::Sum, _) => acc.zero(),
        (ScanOp::Prod, _) => acc.one(),
    };
    let combine = match (key.op, acc) {
        (ScanOp::Sum, ScalarType::I64) => "i64_add(a, b)",
        (ScanOp::Prod, ScalarType::I64) => "i64_mul(a, b)",
        (ScanOp::Sum, _) => "a + b",
        (ScanOp::Prod, _) => "a * b",
    };
    // f32 products scan chunks of factors near 1 as deviations from 1
    // (scan.wgsl's main_group says why).
    let near = if key.op == ScanOp::Prod && acc == ScalarType::F32 {
        NEAR_ONE
    } else {
        NOT_NEAR_ONE
    };
    let bindings = [
        buffer_decl(1, "src", dtype, native, false),
        buffer_decl(2, "out_buf", dtype, native, true),
    ]
    .concat();
    let ops = format!(
        "alias Acc = {acc};\n\
         fn identity() -> Acc {{\n    return {identity};\n}}\n\
         fn combine(a: Acc, b: Acc) -> Acc {{\n    return {combine};\n}}\n\
         {}{}{}\
         fn load(p: u32) -> Acc {{\n    return load_src(p);\n}}\n\
         fn store(p: u32, v: Acc) {{\n    store_out(p, v);\n}}\n\
         fn load_done(p: u32) -> Acc {{\n    return load_out(p);\n}}\n{}{near}",
        load_fn("load_src", "src", dtype, native),
        store_out_fn(dtype, native),
        load_out_fn(dtype, native),
        if acc == ScalarType::I64 {
            INT64_WGSL
        } else {
            ""
        },
    );
    let walk = LINE_STARTS.wgsl();
    let slots = [
        ("BINDINGS", bindings.as_str()),
        ("OPS", ops.as_str()),
        ("WALK", walk.as_str()),
    ];
    let f16 = needs_f16(dtype, native);
    fill_kernel("scan kernel", SCAN_WGSL, f16, &ScanParams::wgsl(), &slots)
}

/// Records `call`, whose output storage is `out`.
///
/// # Errors
/// `Error::Gpu` when the input is not on this GPU; `TooLarge` for more
/// lines than one dispatch can cover.
pub(crate) fn scan(out: &GpuStorage, call: &ScanCall) -> Result<()> {
    let ctx = &out.ctx;
    // Views of tensors larger than one binding bind just their windows.
    let (src, input) = Bound::view("scan", call.input.clone(), false)?;
    let (dst, out) = Bound::view("scan", call.out.clone(), true)?;
    let call = &ScanCall {
        op: call.op,
        input,
        out,
    };
    let (src_lines, src_step) = lines(&call.input);
    let (dst_lines, dst_step) = lines(&call.out);
    let (lines, length) = (src_lines.numel(), call.length());
    if lines == 0 || length == 0 {
        return Ok(());
    }
    let key = ScanKey {
        op: call.op,
        dtype: call.input.dtype,
        group: length > THREAD_MODE_MAX,
        native_f16: ctx.facts.native_f16,
    };
    let threads = if key.group { lines * 64 } else { lines };
    let groups = grid(threads, ctx.facts.max_workgroups_per_dim)?;
    let row_width = if key.group { groups[0] } else { groups[0] * 64 };
    // 64 elements per step of a workgroup's loop; a thread-mode line is
    // one slice, never longer than THREAD_MODE_MAX.
    const _: () = assert!(crate::backend::SCAN_PASS == 64 * loop_budget::ITERATIONS / 8);
    for slice in slices(length, crate::backend::SCAN_PASS) {
        let params = ScanParams {
            first: slice.start as u32,
            end: slice.end as u32,
            ..bytemuck::Zeroable::zeroed()
        }
        .walking(
            [&src_lines, &dst_lines],
            [src_step, dst_step],
            length,
            row_width,
        );
        record_family(
            ctx,
            &key,
            params.bytes(),
            smallvec![src.clone(), dst.clone()],
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
    fn every_scan_kernel_is_valid_wgsl() {
        for op in [ScanOp::Sum, ScanOp::Prod] {
            for dtype in [
                KernelType::F32,
                KernelType::F16,
                KernelType::BF16,
                KernelType::I32,
                KernelType::I64,
                KernelType::U32,
            ] {
                for (group, native_f16) in [(true, true), (false, false), (true, false)] {
                    let key = ScanKey {
                        op,
                        dtype,
                        group,
                        native_f16,
                    };
                    validate(&scan_source(&key).unwrap(), &format!("{key:?}"));
                }
            }
        }
    }

    #[test]
    fn params_match_the_wgsl_struct() {
        let key = ScanKey {
            op: ScanOp::Sum,
            dtype: KernelType::F32,
            group: true,
            native_f16: true,
        };
        assert_layout(
            &scan_source(&key).unwrap(),
            ScanParams::FIELDS,
            ScanParams::SIZE,
            "scan",
        );
    }
}
