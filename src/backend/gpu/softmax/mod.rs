//! GPU softmax and log-softmax: `softmax.wgsl`, one workgroup per line
//! (an online maximum and sum in one pass, then one pass writing the
//! results), specialised per dtype and form, reading and writing four
//! elements at a time where every line is an aligned run.

use crate::backend::gpu::command::Bound;
use crate::backend::gpu::kernel::buffer::{
    buffer_decl, load_fn, needs_f16, quad_lanes, quad_of, quad_type, storage_mode, store_out_fn,
};
use crate::backend::gpu::kernel::grid::grid_of;
use crate::backend::gpu::kernel::params_block::line_params;
use crate::backend::gpu::kernel::prelude::fill_kernel;
use crate::backend::gpu::kernel::strided::LINE_STARTS;
use crate::backend::gpu::record::{family_key, record_family};
use crate::backend::gpu::storage::GpuStorage;
use crate::backend::{SoftmaxCall, lines};
use crate::dtype::KernelType;
use crate::error::Result;
use smallvec::smallvec;

const SOFTMAX_WGSL: &str = shader!("softmax/softmax.wgsl");

line_params! {
    /// `Params` of softmax.wgsl.
    /// `row_width` counts workgroups, one per line.
    pub(crate) struct SoftmaxParams {}
}

/// Everything that selects a distinct softmax pipeline.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct SoftmaxKey {
    /// f32 or f16.
    pub dtype: KernelType,
    pub log: bool,
    pub native_f16: bool,
    /// Every line of the source and of the destination is a run of stride
    /// 1 from a multiple of four, of a length that is a multiple of four,
    /// in bindings of whole 16-byte entries: a thread reads and writes four
    /// elements at a time as one array entry (no atomics for packed f16).
    pub quads: bool,
}

/// `gather` and `spread` one element at a time, through the lines' steps.
const ONE_AT_A_TIME: &str = "fn gather(src0: i32, t: u32) -> Partial {
    var p = Partial(0.0, 0.0, false);
    for (var i = t; i < params.length; i += WORKGROUP) {
        p = absorb(p, load_src(u32(src0 + i32(i) * params.src_step)));
    }
    return p;
}

fn spread(src0: i32, dst0: i32, t: u32, whole: Partial) {
    let undefined = whole.bad || whole.s == 0.0;
    for (var i = t; i < params.length; i += WORKGROUP) {
        var y = nan_f32();
        if (!undefined) {
            y = result(load_src(u32(src0 + i32(i) * params.src_step)), whole.m, whole.s);
        }
        store_out(u32(dst0 + i32(i) * params.dst_step), y);
    }
}
";

/// `gather` and `spread` four elements at a time (`load_quad` and
/// `store_quad` take an entry's index).
const FOUR_AT_A_TIME: &str = "fn gather(src0: i32, t: u32) -> Partial {
    var p = Partial(0.0, 0.0, false);
    for (var q = t; q < params.length / 4u; q += WORKGROUP) {
        let v = load_quad(u32(src0) / 4u + q);
        p = absorb(absorb(absorb(absorb(p, v.x), v.y), v.z), v.w);
    }
    return p;
}

fn spread(src0: i32, dst0: i32, t: u32, whole: Partial) {
    let undefined = whole.bad || whole.s == 0.0;
    let m = whole.m;
    let s = whole.s;
    for (var q = t; q < params.length / 4u; q += WORKGROUP) {
        var y = vec4<f32>(nan_f32());
        if (!undefined) {
            let v = load_quad(u32(src0) / 4u + q);
            y = vec4<f32>(result(v.x, m, s), result(v.y, m, s), result(v.z, m, s), result(v.w, m, s));
        }
        store_quad(u32(dst0) / 4u + q, y);
    }
}
";

family_key!(SoftmaxKey, "webtensor softmax", softmax_source);

/// The WGSL source of the softmax kernel for `key`.
///
/// # Errors
/// `Error::Internal` when the template's slots and the generated parts
/// disagree.
pub(crate) fn softmax_source(key: &SoftmaxKey) -> Result<String> {
    let (dtype, native) = (key.dtype, key.native_f16);
    let (bindings, access) = if key.quads {
        let mode = storage_mode(dtype, native);
        let quad = quad_type(mode);
        (
            format!(
                "@group(0) @binding(1) var<storage, read> src: array<{quad}>;\n\
                 @group(0) @binding(2) var<storage, read_write> out_buf: array<{quad}>;\n"
            ),
            format!(
                "fn load_quad(q: u32) -> vec4<f32> {{\n    let e = src[q];\n    return {};\n}}\n\
                 fn store_quad(q: u32, y: vec4<f32>) {{\n    out_buf[q] = {};\n}}\n{FOUR_AT_A_TIME}",
                quad_lanes(dtype, mode, "e"),
                quad_of(dtype, mode, "y"),
            ),
        )
    } else {
        (
            [
                buffer_decl(1, "src", dtype, native, false),
                buffer_decl(2, "out_buf", dtype, native, true),
            ]
            .concat(),
            [
                load_fn("load_src", "src", dtype, native),
                store_out_fn(dtype, native),
                ONE_AT_A_TIME.to_string(),
            ]
            .concat(),
        )
    };
    let walk = LINE_STARTS.wgsl();
    let result = if key.log {
        "(x - m) - log_f32(s)"
    } else {
        "exp(x - m) / s"
    };
    let slots = [
        ("BINDINGS", bindings.as_str()),
        ("ACCESS", access.as_str()),
        ("WALK", walk.as_str()),
        ("RESULT", result),
    ];
    let (f16, params) = (needs_f16(dtype, native), SoftmaxParams::wgsl());
    fill_kernel("softmax kernel", SOFTMAX_WGSL, f16, &params, &slots)
}

/// Records `call`, whose output storage is `out`.
///
/// # Errors
/// `Error::Gpu` when the input is not on this GPU; `TooLarge` for more
/// lines than one dispatch can cover, or a view over one storage binding
/// (the op layer cuts larger views).
pub(crate) fn softmax(out: &GpuStorage, call: &SoftmaxCall) -> Result<()> {
    let ctx = &out.ctx;
    let (input_bound, input) = Bound::view("softmax", call.input.clone(), false)?;
    let (out_bound, dest) = Bound::view("softmax", call.out.clone(), true)?;
    let (src_lines, src_step) = lines(&input);
    let (dst_lines, dst_step) = lines(&dest);
    let (count, length) = (src_lines.numel(), call.length());
    if count == 0 || length == 0 {
        return Ok(());
    }
    let quads = src_step == 1
        && dst_step == 1
        && length.is_multiple_of(4)
        && src_lines.positions_aligned(4)
        && dst_lines.positions_aligned(4)
        && input_bound.bytes().is_multiple_of(16)
        && out_bound.bytes().is_multiple_of(16);
    let key = SoftmaxKey {
        dtype: call.input.dtype,
        log: call.log,
        native_f16: ctx.facts.native_f16,
        quads,
    };
    // One workgroup per line.
    let groups = grid_of(count, 1, ctx.facts.max_workgroups_per_dim)?;
    let lines = [&src_lines, &dst_lines];
    let params = <SoftmaxParams as bytemuck::Zeroable>::zeroed().walking(
        lines,
        [src_step, dst_step],
        length,
        groups[0],
    );
    record_family(
        ctx,
        &key,
        params.bytes(),
        smallvec![input_bound, out_bound],
        [groups[0], groups[1], 1],
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::gpu::kernel::params_block::tests::assert_layout;
    use crate::backend::gpu::kernel::prelude::tests::validate;

    #[test]
    fn every_softmax_kernel_is_valid_wgsl_and_matches_its_params() {
        for dtype in [KernelType::F32, KernelType::F16, KernelType::BF16] {
            for log in [false, true] {
                for (native_f16, quads) in
                    [(true, false), (false, false), (true, true), (false, true)]
                {
                    let key = SoftmaxKey {
                        dtype,
                        log,
                        native_f16,
                        quads,
                    };
                    let source = softmax_source(&key).unwrap();
                    validate(&source, &format!("{key:?}"));
                    assert_layout(
                        &source,
                        SoftmaxParams::FIELDS,
                        SoftmaxParams::SIZE,
                        "softmax",
                    );
                }
            }
        }
    }
}
