//! Resizing in one pass (`resize/resize.wgsl`): each output element's
//! source positions and weights computed in the shader, so a resize is one
//! dispatch that reads its input where it lies (any view), with no index
//! or weight tables to upload and no fault record to arm. A thread writes
//! four outputs of a row (`kernel::grid::row_segments`).

use crate::backend::gpu::command::Bound;
use crate::backend::gpu::kernel::buffer::{io_parts, needs_f16};
use crate::backend::gpu::kernel::grid::{ROW_OUTPUTS, grid, row_segments};
use crate::backend::gpu::kernel::params_block::{dims8, params_block, strides8};
use crate::backend::gpu::kernel::prelude::{LEAD_AXES_WGSL, fill_kernel};
use crate::backend::gpu::kernel::wgsl_type::ScalarType;
use crate::backend::gpu::record::{family_key, record_family};
use crate::backend::gpu::storage::GpuStorage;
use crate::backend::{MAX_ANTIALIAS_TAPS, ResizeCall, Sampling};
use crate::dtype::KernelType;
use crate::error::{Error, Result};
use smallvec::smallvec;

const RESIZE_WGSL: &str = shader!("resize/resize.wgsl");

params_block! {
    /// `Params` of resize.wgsl.
    pub(crate) struct ResizeParams {
        /// Threads, each writing up to `ROW_OUTPUTS` outputs of a row.
        threads: u32,
        row_threads: u32,
        /// Leading axes (all but the last two).
        lead_rank: u32,
        /// 0 nearest, 1 bilinear, 2 bilinear with corners aligned, 3
        /// antialiased, 4 nearest without the shortcuts.
        mode: u32,
        /// Always 0 (see `kept` in resize.wgsl).
        zero: u32,
        in_h: u32,
        in_w: u32,
        out_h: u32,
        out_w: u32,
        /// Input positions per output position, as f32 bits.
        ratio_h: u32,
        ratio_w: u32,
        x_offset: u32,
        x_hs: i32,
        x_ws: i32,
        out_offset: u32,
        /// A row's outputs over the outputs a thread writes, rounded up.
        segment: u32,
        lead_shape: [u32; 8],
        lead_strides: [i32; 8],
    }
}

/// Everything that selects a distinct resize pipeline.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct ResizeKey {
    pub dtype: KernelType,
    pub native_f16: bool,
    /// Blending (bilinear, either alignment) or picking (nearest).
    pub blends: bool,
    /// Antialiased windows (blends too).
    pub antialias: bool,
}

/// `sample_at` of the antialiased mode: output (oh, ow) weighs the input
/// rows and columns of its windows (`backend::antialias_weights`, computed
/// here by the same f32 steps): each row's columns summed first, the
/// first product then the others added, then the rows likewise, an axis
/// of unchanged length taken as it is. Products are kept from fusing into
/// the adds, so every rounding falls as on the CPU.
const ANTIALIAS_SAMPLE: &str = "const MAX_TAPS: u32 = MAX_TAPSu;

struct Window {
    first: u32,
    count: u32,
    center: f32,
    inverse: f32,
    total: f32,
}

// Tap j's weight: 0 past the window (an empty one's first tap is read).
fn weight_at(win: Window, j: u32) -> f32 {
    if (j >= win.count) {
        return 0.0;
    }
    let x = abs(kept(kept(f32(win.first + j) - win.center) + 0.5) * win.inverse);
    if (x < 1.0) {
        return 1.0 - x;
    }
    return 0.0;
}

fn window(i: u32, n: u32, scale: f32) -> Window {
    var support = 1.0;
    var inverse = 1.0;
    if (scale >= 1.0) {
        support = scale;
        inverse = div_f32(1.0, scale);
    }
    let center = kept(scale * (f32(i) + 0.5));
    let first = u32(max(kept(kept(center - support) + 0.5), 0.0));
    let end = min(u32(max(kept(kept(center + support) + 0.5), 0.0)), n);
    let taps = u32(ceil(support)) * 2u + 1u;
    let count = min(select(0u, end - first, end > first), taps);
    // Upsampling an axis of 2^23 or more, the centre can round to n and the
    // window hold nothing from first = n: the first tap, read whatever the
    // count (with a weight of 0, as `weight_at` gives past the window),
    // stays inside the axis.
    var win = Window(min(first, n - 1u), count, center, inverse, 0.0);
    var total = 0.0;
    for (var j = 0u; j < win.count; j++) {
        total += weight_at(win, j);
    }
    win.total = total;
    return win;
}

fn normalised(win: Window, j: u32) -> f32 {
    let w = weight_at(win, j);
    if (win.total == 0.0) {
        return w;
    }
    return div_f32(w, win.total);
}

// Row h of the input at columns ow's window (or column ow itself where the
// width is unchanged).
fn row_value(base: i32, h: u32, ow: u32, wx: Window, xs: ptr<function, array<f32, MAX_TAPS>>) -> f32 {
    if (params.in_w == params.out_w) {
        return f32(at(base, h, ow));
    }
    var t = kept(f32(at(base, h, wx.first)) * (*xs)[0]);
    for (var j = 1u; j < wx.count; j++) {
        t = t + kept(f32(at(base, h, wx.first + j)) * (*xs)[j]);
    }
    return t;
}

fn sample_at(base: i32, oh: u32, ow: u32) -> f32 {
    let wx = window(ow, params.in_w, bitcast<f32>(params.ratio_w));
    var xs: array<f32, MAX_TAPS>;
    for (var j = 0u; j < wx.count; j++) {
        xs[j] = normalised(wx, j);
    }
    if (params.in_h == params.out_h) {
        return row_value(base, oh, ow, wx, &xs);
    }
    let wy = window(oh, params.in_h, bitcast<f32>(params.ratio_h));
    var acc = kept(row_value(base, wy.first, ow, wx, &xs) * normalised(wy, 0u));
    for (var k = 1u; k < wy.count; k++) {
        acc = acc + kept(row_value(base, wy.first + k, ow, wx, &xs) * normalised(wy, k));
    }
    return acc;
}
";

family_key!(ResizeKey, "webtensor resize", resize_source);

/// The WGSL source of the resize kernel for `key`.
///
/// # Errors
/// `Error::Internal` when the template's slots and the generated parts
/// disagree.
pub(crate) fn resize_source(key: &ResizeKey) -> Result<String> {
    let (dtype, native) = (key.dtype, key.native_f16);
    let [bindings, access] = io_parts(&["x"], dtype, native);
    let at = "fn at(base: i32, h: u32, w: u32) -> {T} {\n    \
              return load_x(u32(base + i32(h) * params.x_hs + i32(w) * params.x_ws));\n}\n";
    let sample = if key.antialias {
        ANTIALIAS_SAMPLE
    } else if key.blends {
        // Columns first, then rows: PyTorch blends each row's pair of
        // columns, so the roundings fall alike.
        "fn sample(base: i32, th: Taps, tw: Taps) -> f32 {\n    \
         let top = blend(at(base, th.lo, tw.lo), at(base, th.lo, tw.hi), tw.w);\n    \
         let bottom = blend(at(base, th.hi, tw.lo), at(base, th.hi, tw.hi), tw.w);\n    \
         return blend(top, bottom, th.w);\n}\n"
    } else {
        "fn sample(base: i32, th: Taps, tw: Taps) -> {T} {\n    \
         return at(base, th.lo, tw.lo);\n}\n"
    };
    let t = ScalarType::of(dtype).to_string();
    let taps_of = if key.antialias {
        ""
    } else {
        "fn sample_at(base: i32, oh: u32, ow: u32) -> {T} {\n    \
         let th = taps(oh, params.in_h, params.out_h, bitcast<f32>(params.ratio_h));\n    \
         let tw = taps(ow, params.in_w, params.out_w, bitcast<f32>(params.ratio_w));\n    \
         return sample(base, th, tw);\n}\n"
    };
    let sample = [at, sample, taps_of]
        .concat()
        .replace("{T}", &t)
        .replace("MAX_TAPSu", &format!("{MAX_ANTIALIAS_TAPS}u"));
    let slots = [
        ("BINDINGS", bindings.as_str()),
        ("ACCESS", access.as_str()),
        ("LEAD", LEAD_AXES_WGSL),
        ("SAMPLE", sample.as_str()),
        ("OUTS", &format!("const OUTS: u32 = {ROW_OUTPUTS}u;")),
    ];
    let (f16, params) = (needs_f16(dtype, native), ResizeParams::wgsl());
    fill_kernel("resize kernel", RESIZE_WGSL, f16, &params, &slots)
}

/// True when the kernel takes `dtype` in `mode`: any dtype picked, the
/// float ones blended.
pub(crate) fn takes(dtype: KernelType, mode: Sampling) -> bool {
    let blends = !matches!(mode, Sampling::Nearest | Sampling::NearestGeneric);
    !blends || matches!(dtype, KernelType::F32 | KernelType::F16 | KernelType::BF16)
}

/// Records `call`, whose output storage is `out`.
///
/// # Errors
/// `Error::Gpu` when an operand is not on this GPU; `TooLarge` for an
/// output over one dispatch's grid or an operand view over one storage
/// binding (the op layer composes those resizes).
pub(crate) fn resize(out: &GpuStorage, call: &ResizeCall) -> Result<()> {
    const OP: &str = "resize";
    let ctx = &out.ctx;
    let numel = call.out.layout.numel();
    if numel == 0 {
        return Ok(());
    }
    if !takes(call.out.dtype, call.mode) || call.input.dtype != call.out.dtype {
        return Err(Error::internal(
            OP,
            "the resize kernel got a dtype it does not take",
        ));
    }
    let (x_bound, x) = Bound::view(OP, call.input.clone(), false)?;
    let (out_bound, dest) = Bound::view(OP, call.out.clone(), true)?;
    let (dims, strides) = (x.layout.dims(), x.layout.strides());
    let r = dims.len();
    let o = dest.layout.dims();
    let (segment, threads) = row_segments(OP, &dest.layout)?;
    let groups = grid(threads, ctx.facts.max_workgroups_per_dim)?;
    let key = ResizeKey {
        dtype: call.out.dtype,
        native_f16: ctx.facts.native_f16,
        blends: !matches!(call.mode, Sampling::Nearest | Sampling::NearestGeneric),
        antialias: call.mode == Sampling::BilinearAntialias,
    };
    let params = ResizeParams {
        threads: threads as u32,
        row_threads: groups[0] * 64,
        lead_rank: (r - 2) as u32,
        mode: match call.mode {
            Sampling::Nearest => 0,
            Sampling::Bilinear => 1,
            Sampling::BilinearAlignCorners => 2,
            Sampling::BilinearAntialias => 3,
            Sampling::NearestGeneric => 4,
        },
        zero: 0,
        in_h: dims[r - 2] as u32,
        in_w: dims[r - 1] as u32,
        out_h: o[r - 2] as u32,
        out_w: o[r - 1] as u32,
        ratio_h: call.ratio[0].to_bits(),
        ratio_w: call.ratio[1].to_bits(),
        x_offset: x.layout.offset() as u32,
        x_hs: strides[r - 2] as i32,
        x_ws: strides[r - 1] as i32,
        out_offset: dest.layout.offset() as u32,
        segment: segment as u32,
        lead_shape: dims8(&dims[..r - 2]),
        lead_strides: strides8(&strides[..r - 2]),
    };
    let bindings = smallvec![x_bound, out_bound];
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
    fn every_resize_kernel_is_valid_wgsl_and_matches_its_params() {
        let dtypes = [
            (KernelType::F32, true),
            (KernelType::F16, true),
            (KernelType::F16, false),
            (KernelType::BF16, true),
            (KernelType::I32, true),
            (KernelType::U32, true),
            (KernelType::U8, true),
            (KernelType::Bool, true),
            (KernelType::I64, true),
        ];
        for (dtype, native_f16) in dtypes {
            for (blends, antialias) in [(false, false), (true, false), (true, true)] {
                if blends && !takes(dtype, Sampling::Bilinear) {
                    continue;
                }
                let key = ResizeKey {
                    dtype,
                    native_f16,
                    blends,
                    antialias,
                };
                let source = resize_source(&key).unwrap();
                validate(&source, &format!("{key:?}"));
                assert_layout(&source, ResizeParams::FIELDS, ResizeParams::SIZE, "resize");
            }
        }
    }
}
