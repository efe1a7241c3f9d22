//! GPU FFTs: `fft.wgsl`, lines held in workgroup memory and transformed by
//! Stockham passes (radix 4 and 2 butterflies, a general radix for 3 to
//! 13), several short lines per workgroup, specialised per length, read
//! mode and direction. A real line of even length is transformed as half
//! as many complex points and its spectrum separated from theirs. Longer lines and lengths with larger prime factors
//! are composed by the op layer from these (`ops/fft_lines.rs`).

pub(crate) mod plan;

use crate::backend::gpu::command::Bound;
use crate::backend::gpu::constants::ConstKey;
use crate::backend::gpu::kernel::buffer::{buffer_decl, load_fn, needs_f16};
use crate::backend::gpu::kernel::grid::grid_of;
use crate::backend::gpu::kernel::params_block::line_params;
use crate::backend::gpu::kernel::prelude::fill_kernel;
use crate::backend::gpu::kernel::strided::LINE_STARTS;
use crate::backend::gpu::record::{family_key, record_family};
use crate::backend::gpu::storage::GpuStorage;
use crate::backend::{FftCall, FftRead, Storage};
use crate::dtype::KernelType;
use crate::error::{Error, Result};
use plan::{group_shape, radices, table_parts, twiddle_table};
use smallvec::smallvec;
use std::fmt::Write;
use std::sync::Arc;

pub(crate) use plan::MAX_RADIX;

const FFT_WGSL: &str = shader!("fft/fft.wgsl");

line_params! {
    /// `Params` of fft.wgsl.
    /// `length` counts the elements each input line holds (zeros past it),
    /// `row_width` workgroups.
    pub(crate) struct FftParams {
        /// Outputs stored per line, and the factor each is scaled by.
        count: u32,
        scale: f32,
        /// The four-step twist: `j = l % period`, and where the two parts
        /// of its roots start in the twiddle table (`split` apart).
        period: u32,
        split: u32,
        coarse_at: u32,
        fine_at: u32,
        pad0: u32,
        pad1: u32,
    }
}

/// Everything that selects a distinct FFT pipeline.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct FftKey {
    /// The transform's length.
    pub n: usize,
    pub read: FftRead,
    /// Of a real input: f32 or f16 (complex inputs are f32 pairs).
    pub dtype: KernelType,
    pub native_f16: bool,
    pub inverse: bool,
    /// Outputs are multiplied by a four-step twiddle.
    pub twist: bool,
}

family_key!(FftKey, "webtensor fft", fft_source);

/// (the longest line, the largest prime factor of its length) one call
/// takes on the GPU of `s`.
pub(crate) fn fft_line_limit(s: &GpuStorage) -> (usize, usize) {
    (s.ctx.facts.max_fft_line, MAX_RADIX)
}

/// The WGSL source of the FFT kernel for `key`.
///
/// # Errors
/// `Error::Internal` for a length with a prime factor over [`MAX_RADIX`],
/// or when the template's slots and the generated parts disagree.
pub(crate) fn fft_source(key: &FftKey) -> Result<String> {
    let n = passes_len(key.read, key.n);
    let radices = radices(n)
        .ok_or_else(|| Error::internal("fft kernel", format!("length {n} has a large prime")))?;
    let (lines, lanes) = group_shape(n);
    let packed = n != key.n;
    let complex_in = key.read != FftRead::Real;
    let in_type = if complex_in {
        KernelType::F32
    } else {
        key.dtype
    };
    let bindings = [
        buffer_decl(1, "src", in_type, key.native_f16, false),
        "@group(0) @binding(2) var<storage, read_write> out_buf: array<f32>;\n".to_string(),
        "@group(0) @binding(3) var<storage, read> twiddles: array<vec2<f32>>;\n".to_string(),
    ]
    .concat();
    let constants = format!(
        "const N: u32 = {n}u;\nconst LINES: u32 = {lines}u;\nconst LANES: u32 = {lanes}u;\n\
         const SLOTS: u32 = {}u;\nconst CONJ: f32 = {};\nconst TW: u32 = {}u;\n",
        lines * n,
        if key.inverse { "-1.0" } else { "1.0" },
        if packed { 2 } else { 1 },
    );
    let access = [
        load_fn("load_src", "src", in_type, key.native_f16),
        access(key),
    ]
    .concat();
    let (stages, run, last) = passes(n, &radices);
    let output = if packed {
        PACKED_OUTPUT.replace("FINAL", last)
    } else {
        format!("fn output(base: u32, k: u32) -> vec2<f32> {{\n    return {last}[base + k];\n}}\n")
    };
    let twist = if key.twist {
        "            let m = (l % params.period) * k;\n            \
         y = cmul(y, cmul(root(params.coarse_at + m / params.split), root(params.fine_at + m % params.split)));"
    } else {
        ""
    };
    let walk = LINE_STARTS.wgsl();
    let slots = [
        ("BINDINGS", bindings.as_str()),
        ("WALK", walk.as_str()),
        ("CONSTANTS", constants.as_str()),
        ("ACCESS", access.as_str()),
        ("STAGES", stages.as_str()),
        ("RUN", run.as_str()),
        ("OUTPUT", output.as_str()),
        ("TWIST", twist),
    ];
    let (f16, params) = (needs_f16(in_type, key.native_f16), FftParams::wgsl());
    fill_kernel("fft kernel", FFT_WGSL, f16, &params, &slots)
}

/// The length of the passes of a kernel transforming lines of `n` read as
/// `read`: a real line of even length is transformed as `n / 2` complex
/// points (its even samples the real parts, its odd ones the imaginary),
/// half the work, and its spectrum separated from theirs.
fn passes_len(read: FftRead, n: usize) -> usize {
    if read == FftRead::Real && n.is_multiple_of(2) {
        n / 2
    } else {
        n
    }
}

/// `output` of a real line transformed as `N` complex points
/// (`z[j] = x[2j] + i x[2j + 1]`) whose transform `Z` the buffer `FINAL`
/// holds. The transforms of the even and odd samples are
/// `E = (Z[k] + conj Z[N - k]) / 2` and `O = (Z[k] - conj Z[N - k]) / 2i`;
/// output `k <= N` is `E + w^k O` (`w` the line's root, table entry `k`),
/// and the outputs past `N` mirror those below it.
const PACKED_OUTPUT: &str = "fn half_output(base: u32, k: u32) -> vec2<f32> {
    let a = FINAL[base + k % N];
    let b = FINAL[base + (N - k) % N];
    let even = 0.5 * vec2<f32>(a.x + b.x, a.y - b.y);
    let i_odd = 0.5 * vec2<f32>(a.x - b.x, a.y + b.y);
    return even + cmul(root(k), vec2<f32>(i_odd.y, -i_odd.x));
}

fn output(base: u32, k: u32) -> vec2<f32> {
    if (k > N) {
        let y = half_output(base, 2u * N - k);
        return vec2<f32>(y.x, -y.y);
    }
    return half_output(base, k);
}
";

/// `load_x` and `store_y` for `key`'s read mode and output.
fn access(key: &FftKey) -> String {
    let load = match key.read {
        FftRead::Real if passes_len(key.read, key.n) != key.n => {
            "fn load_x(start: i32, j: u32) -> vec2<f32> {
    var z = vec2<f32>(0.0, 0.0);
    let e = 2u * j;
    if (e < params.length) {
        z.x = load_src(u32(start + i32(e) * params.src_step));
    }
    if (e + 1u < params.length) {
        z.y = load_src(u32(start + i32(e + 1u) * params.src_step));
    }
    return z;
}
"
        }
        FftRead::Real => {
            "fn load_x(start: i32, j: u32) -> vec2<f32> {
    if (j >= params.length) {
        return vec2<f32>(0.0, 0.0);
    }
    return vec2<f32>(load_src(u32(start + i32(j) * params.src_step)), 0.0);
}
"
        }
        FftRead::Complex => {
            "fn load_x(start: i32, j: u32) -> vec2<f32> {
    if (j >= params.length) {
        return vec2<f32>(0.0, 0.0);
    }
    let p = u32(start + i32(j) * params.src_step);
    return vec2<f32>(load_src(p), load_src(p + 1u));
}
"
        }
        FftRead::Hermitian => {
            "fn load_x(start: i32, k: u32) -> vec2<f32> {
    var j = k;
    var sign = 1.0;
    if (k > N / 2u) {
        j = N - k;
        sign = -1.0;
    }
    if (j >= params.length) {
        return vec2<f32>(0.0, 0.0);
    }
    let p = u32(start + i32(j) * params.src_step);
    return vec2<f32>(load_src(p), sign * load_src(p + 1u));
}
"
        }
    };
    let store = if key.read == FftRead::Hermitian {
        "fn store_y(start: i32, k: u32, y: vec2<f32>) {
    out_buf[u32(start + i32(k) * params.dst_step)] = y.x;
}
"
    } else {
        "fn store_y(start: i32, k: u32, y: vec2<f32>) {
    let p = u32(start + i32(k) * params.dst_step);
    out_buf[p] = y.x;
    out_buf[p + 1u] = y.y;
}
"
    };
    [load, store].concat()
}

/// The pass functions, the calls running them in order, and the buffer the
/// last one wrote.
fn passes(n: usize, radices: &[usize]) -> (String, String, &'static str) {
    let (mut stages, mut run) = (String::new(), String::new());
    let mut span = 1;
    let mut from = ("ping", "pong");
    for (s, &r) in radices.iter().enumerate() {
        let (a, b) = from;
        let (quarter, step) = (n / r, n / (span * r));
        let body = match r {
            2 => format!(
                "    for (var j = lane; j < {quarter}u; j += LANES) {{
        let k = j % {span}u;
        let v0 = {a}[base + j];
        let v1 = cmul({a}[base + j + {quarter}u], w(k * {step}u));
        let o = base + (j / {span}u) * {}u + k;
        {b}[o] = v0 + v1;
        {b}[o + {span}u] = v0 - v1;
    }}
",
                2 * span
            ),
            4 => format!(
                "    for (var j = lane; j < {quarter}u; j += LANES) {{
        let k = j % {span}u;
        let v0 = {a}[base + j];
        let v1 = cmul({a}[base + j + {quarter}u], w(k * {step}u));
        let v2 = cmul({a}[base + j + {}u], w(2u * k * {step}u));
        let v3 = cmul({a}[base + j + {}u], w(3u * k * {step}u));
        let a0 = v0 + v2;
        let a1 = v0 - v2;
        let a2 = v1 + v3;
        let d = v1 - v3;
        // (v1 - v3) times -i (forward) or i (inverse).
        let a3 = CONJ * vec2<f32>(d.y, -d.x);
        let o = base + (j / {span}u) * {}u + k;
        {b}[o] = a0 + a2;
        {b}[o + {span}u] = a1 + a3;
        {b}[o + {}u] = a0 - a2;
        {b}[o + {}u] = a1 - a3;
    }}
",
                2 * quarter,
                3 * quarter,
                4 * span,
                2 * span,
                3 * span
            ),
            // One output per thread and index: q-th output of butterfly j,
            // each input twiddled and multiplied by the radix's root in one
            // table lookup.
            _ => format!(
                "    for (var e = lane; e < N; e += LANES) {{
        let j = e % {quarter}u;
        let q = e / {quarter}u;
        let k = j % {span}u;
        var acc = vec2<f32>(0.0, 0.0);
        for (var i = 0u; i < {r}u; i++) {{
            let m = (i * k * {step}u + ((i * q) % {r}u) * {quarter}u) % N;
            acc += cmul({a}[base + j + i * {quarter}u], w(m));
        }}
        {b}[base + (j / {span}u) * {}u + k + q * {span}u] = acc;
    }}
",
                r * span
            ),
        };
        let _ = write!(
            stages,
            "// Pass {s}: radix {r} over sub-transforms of {span}.\nfn pass{s}(base: u32, lane: u32) {{\n{body}}}\n\n"
        );
        let _ = writeln!(run, "    pass{s}(base, lane);\n    workgroupBarrier();");
        span *= r;
        from = (b, a);
    }
    (stages, run, from.0)
}

/// Records `call`, whose output storage is `out`.
///
/// # Errors
/// `Error::Gpu` when the input is not on this GPU; `TooLarge` for more
/// lines than one dispatch covers, or a view over one storage binding;
/// `Error::Internal` for a length the kernel does not take (the op layer
/// composes those).
pub(crate) fn fft(out: &GpuStorage, call: &FftCall) -> Result<()> {
    const OP: &str = "fft";
    let ctx = &out.ctx;
    let (input_bound, input) = Bound::view(OP, call.input.clone(), false)?;
    let (out_bound, dest) = Bound::view(OP, call.out.clone(), true)?;
    let rebased = FftCall {
        input,
        out: dest,
        twist: call.twist,
        ..*call
    };
    let (src_lines, src_step, avail) = rebased.input_lines();
    let (dst_lines, dst_step, count) = rebased.out_lines();
    let n = call.n;
    if src_lines.numel() == 0 || count == 0 || n == 0 {
        return Ok(());
    }
    if n > fft_line_limit(out).0 || radices(n).is_none() {
        return Err(Error::internal(
            OP,
            format!("a line of {n} reached the kernel"),
        ));
    }
    let key = FftKey {
        n,
        read: call.read,
        dtype: call.input.dtype,
        native_f16: ctx.facts.native_f16,
        inverse: call.inverse,
        twist: call.twist.is_some(),
    };
    // The table is the device's, uploaded by the first call of its kind.
    let total = call.twist.map(|t| t.total);
    let table_key = ConstKey {
        kind: "fft twiddles",
        args: [n as u64, total.unwrap_or(0) as u64, 0],
    };
    let table = GpuStorage::constant(ctx, OP, table_key, || twiddle_table(n, total))?;
    let table = Arc::new(Storage::Gpu(table));
    let parts = total.map(|total| table_parts(n, total));
    let table_bound = Bound::new(OP, &table, false)?;
    let (lines, _) = group_shape(passes_len(call.read, n));
    let groups = grid_of(
        src_lines.numel(),
        lines as u32,
        ctx.facts.max_workgroups_per_dim,
    )?;
    let parts = parts.unwrap_or(plan::TableParts {
        coarse_at: 0,
        fine_at: 0,
        split: 1,
    });
    let params = FftParams {
        count: count as u32,
        scale: call.scale,
        period: call.twist.map_or(1, |t| t.period) as u32,
        split: parts.split as u32,
        coarse_at: parts.coarse_at as u32,
        fine_at: parts.fine_at as u32,
        ..bytemuck::Zeroable::zeroed()
    }
    .walking(
        [&src_lines, &dst_lines],
        [src_step, dst_step],
        avail.min(n),
        groups[0],
    );
    record_family(
        ctx,
        &key,
        params.bytes(),
        smallvec![input_bound, out_bound, table_bound],
        [groups[0], groups[1], 1],
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::gpu::kernel::params_block::tests::assert_layout;
    use crate::backend::gpu::kernel::prelude::tests::validate;

    #[test]
    fn every_fft_kernel_is_valid_wgsl_and_matches_its_params() {
        let reads = [FftRead::Complex, FftRead::Real, FftRead::Hermitian];
        for n in [1, 2, 3, 4, 8, 12, 13, 60, 105, 2048, 4096] {
            for (k, read) in reads.into_iter().enumerate() {
                for (dtype, native_f16) in [
                    (KernelType::F32, true),
                    (KernelType::F16, true),
                    (KernelType::F16, false),
                    (KernelType::BF16, true),
                ] {
                    let key = FftKey {
                        n,
                        read,
                        dtype,
                        native_f16,
                        inverse: k == 1,
                        twist: k != 2,
                    };
                    let source = fft_source(&key).unwrap();
                    validate(&source, &format!("{key:?}"));
                    assert_layout(&source, FftParams::FIELDS, FftParams::SIZE, "fft");
                }
            }
        }
    }
}
