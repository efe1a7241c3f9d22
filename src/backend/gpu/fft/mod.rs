//! GPU FFTs: `fft.wgsl`, lines held in workgroup memory and transformed by
//! Stockham passes whose butterflies (radix 2 to 16, and the odd primes to
//! 13) run in registers, several lines per workgroup, specialised per
//! length, read mode, direction and the order its lines are read and
//! written in. Lines whose elements are far apart but whose neighbours
//! are adjacent (the columns of a matrix, a four-step FFT's passes) are
//! read and written across: a workgroup's threads take element `j` of
//! several adjacent lines together, so each access is a run of them. A
//! real line of even length is transformed as half as many complex points
//! and its spectrum separated from theirs. A length with a larger prime
//! factor runs Bluestein's algorithm in the kernel where its convolution
//! fits one line (`chirp.rs`): the chirped line transformed, multiplied by
//! the kernel's spectrum and transformed back, all in workgroup memory.
//! Longer lines are composed by the op layer from these
//! (`ops/fft_lines.rs`).

pub(crate) mod chirp;
mod passes;
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
use crate::layout::Layout;
use plan::{GroupShape, group_shape, radices, table_parts, twiddle_table};
use smallvec::smallvec;
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
        /// Bluestein's chirp and kernel in the table (`FftKey::chirp`).
        chirp_at: u32,
        kernel_at: u32,
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
    /// The input's and the output's lines are read and written across
    /// (adjacent lines together) rather than along themselves.
    pub across: [bool; 2],
    /// The device's workgroup memory, in bytes: how many lines a workgroup
    /// reading across holds.
    pub workgroup_bytes: u32,
    /// Bluestein's algorithm whole: each line chirped as it is loaded,
    /// transformed over `chirp_len(n)` points, multiplied by the kernel's
    /// spectrum, conjugated, transformed again (an inverse transform, with
    /// the passes of a forward one), conjugated and chirped as it is stored.
    pub chirp: bool,
}

family_key!(FftKey, "webtensor fft", fft_source);

/// (the longest line, the largest prime factor of its length) one call
/// takes on the GPU of `s`.
pub(crate) fn fft_line_limit(s: &GpuStorage) -> (usize, usize) {
    (s.ctx.facts.max_fft_line, MAX_RADIX)
}

/// The passes' radices and the workgroup's shape of the kernel for `key`.
///
/// # Errors
/// `Error::Internal` for a length with a prime factor over [`MAX_RADIX`].
fn shape_of(key: &FftKey) -> Result<(usize, Vec<usize>, GroupShape)> {
    let n = passes_of(key);
    let radices = radices(n)
        .ok_or_else(|| Error::internal("fft kernel", format!("length {n} has a large prime")))?;
    let across = key.across[0] || key.across[1];
    let shape = group_shape(n, &radices, across, key.workgroup_bytes);
    Ok((n, radices, shape))
}

/// The WGSL source of the FFT kernel for `key`.
///
/// # Errors
/// `Error::Internal` for a length with a prime factor over [`MAX_RADIX`],
/// or when the template's slots and the generated parts disagree.
pub(crate) fn fft_source(key: &FftKey) -> Result<String> {
    let (n, radices, shape) = shape_of(key)?;
    let packed = !key.chirp && n != key.n;
    let complex_in = key.read != FftRead::Real;
    let in_type = if complex_in {
        KernelType::F32
    } else {
        key.dtype
    };
    let src = if complex_in {
        "@group(0) @binding(1) var<storage, read> src: array<vec2<f32>>;\n".to_string()
    } else {
        buffer_decl(1, "src", in_type, key.native_f16, false)
    };
    let out_type = if key.read != FftRead::Hermitian {
        "vec2<f32>"
    } else {
        "f32"
    };
    let bindings = format!(
        "{src}@group(0) @binding(2) var<storage, read_write> out_buf: array<{out_type}>;\n\
         @group(0) @binding(3) var<storage, read> twiddles: array<vec2<f32>>;\n"
    );
    let constants = format!(
        "const N: u32 = {n}u;\nconst LINES: u32 = {}u;\nconst LANES: u32 = {}u;\n\
         const PITCH: u32 = {}u;\nconst SLOTS: u32 = {}u;\nconst CONJ: f32 = {};\n\
         const TW: u32 = {}u;\n",
        shape.lines,
        shape.lanes,
        shape.pitch,
        shape.lines * shape.pitch,
        // Bluestein's passes are forward ones both ways (its tables hold
        // the direction).
        if key.inverse && !key.chirp {
            "-1.0"
        } else {
            "1.0"
        },
        if packed { 2 } else { 1 },
    ) + if shape.skew {
        "fn slot(i: u32) -> u32 {\n    return i + (i >> 4u);\n}\n"
    } else {
        "fn slot(i: u32) -> u32 {\n    return i;\n}\n"
    };
    let access = if complex_in {
        access(key)
    } else {
        [
            load_fn("load_src", "src", in_type, key.native_f16),
            access(key),
        ]
        .concat()
    };
    let (stages, run) = passes::passes(n, &radices, shape.lanes);
    let (output, run) = if key.chirp {
        (
            CHIRP_OUTPUT.to_string(),
            [run.as_str(), CHIRP_MIDDLE, &run].concat(),
        )
    } else if packed {
        (PACKED_OUTPUT.to_string(), run)
    } else {
        (
            "fn output(base: u32, k: u32) -> vec2<f32> {\n    return buf[base + slot(k)];\n}\n"
                .to_string(),
            run,
        )
    };
    let twist = if key.twist {
        "        let m = (l % params.period) * k;\n        \
         y = cmul(y, cmul(root(params.coarse_at + m / params.split), root(params.fine_at + m % params.split)));\n"
    } else {
        ""
    };
    let across = [0, 1].map(|i| key.across[i] && shape.across);
    let (starts, load, store) = lines_code(across, shape.across, twist);
    let walk = LINE_STARTS.wgsl();
    let slots = [
        ("BINDINGS", bindings.as_str()),
        ("WALK", walk.as_str()),
        ("CONSTANTS", constants.as_str()),
        ("ACCESS", access.as_str()),
        ("STAGES", stages.as_str()),
        ("OUTPUT", output.as_str()),
        ("STARTS", starts.as_str()),
        ("LOAD", load.as_str()),
        ("RUN", run.as_str()),
        ("STORE", store.as_str()),
    ];
    let (f16, params) = (needs_f16(in_type, key.native_f16), FftParams::wgsl());
    fill_kernel("fft kernel", FFT_WGSL, f16, &params, &slots)
}

/// The kernel's kept line starts, its load of the lines into `buf` and its
/// store of their outputs: along each line (thread `lane` of line `g`
/// takes elements `lane`, `lane + LANES`, ...) or across the lines
/// (thread `t` takes element `t / LINES` of line `t % LINES`, then steps
/// by the workgroup). Where lines are read or written across (`kept`),
/// their starts are found once by the first `LINES` threads and kept in
/// workgroup memory; else each thread finds its own line's.
fn lines_code(across: [bool; 2], kept: bool, twist: &str) -> (String, String, String) {
    let (starts, find, own) = if kept {
        (
            "var<workgroup> starts: array<vec2<i32>, LINES>;\n",
            "    if (t < LINES && first + t < params.lines) {
        let s = line_starts(first + t);
        starts[t] = vec2<i32>(s[0], s[1]);
    }
    workgroupBarrier();
",
            ["starts[g][0]", "starts[g][1]"],
        )
    } else {
        (
            "",
            "    var mine = array<i32, 2>(0, 0);
    if (live) {
        mine = line_starts(first + g);
    }
",
            ["mine[0]", "mine[1]"],
        )
    };
    let load = if across[0] {
        "    for (var i = t; i < LINES * N; i += LINES * LANES) {
        let h = i % LINES;
        let j = i / LINES;
        if (first + h < params.lines) {
            buf[h * PITCH + slot(j)] = load_x(starts[h][0], j);
        } else {
            buf[h * PITCH + slot(j)] = vec2<f32>(0.0, 0.0);
        }
    }
"
        .to_string()
    } else {
        format!(
            "    for (var j = lane; j < N; j += LANES) {{
        var z = vec2<f32>(0.0, 0.0);
        if (live) {{
            z = load_x({}, j);
        }}
        buf[base + slot(j)] = z;
    }}
",
            own[0]
        )
    };
    let store = if across[1] {
        format!(
            "    for (var i = t; i < LINES * params.count; i += LINES * LANES) {{
        let h = i % LINES;
        let l = first + h;
        if (l < params.lines) {{
            let k = i / LINES;
            var y = output(h * PITCH, k) * params.scale;
{twist}            store_y(starts[h][1], k, y);
        }}
    }}
"
        )
    } else {
        format!(
            "    if (live) {{
        let l = first + g;
        for (var k = lane; k < params.count; k += LANES) {{
            var y = output(base, k) * params.scale;
{twist}            store_y({}, k, y);
        }}
    }}
",
            own[1]
        )
    };
    (starts.to_string(), [find, load.as_str()].concat(), store)
}

/// The length of the passes of `key`'s kernel: Bluestein's convolution's
/// (`chirp_len(n)`), or [`passes_len`].
fn passes_of(key: &FftKey) -> usize {
    if key.chirp {
        chirp::chirp_len(key.n)
    } else {
        passes_len(key.read, key.n)
    }
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

/// Bluestein's step between its two transforms: each element of the
/// spectrum times the kernel's (table entry `kernel_at + k`), conjugated,
/// so that the next (forward) passes transform it back.
const CHIRP_MIDDLE: &str = "    for (var k = lane; k < N; k += LANES) {
        let s = base + slot(k);
        let z = cmul(buf[s], twiddles[params.kernel_at + k]);
        buf[s] = vec2<f32>(z.x, -z.y);
    }
    workgroupBarrier();
";

/// Bluestein's `output`: the convolution's element `k` conjugated back and
/// times the chirp (table entry `chirp_at + k`).
const CHIRP_OUTPUT: &str = "fn output(base: u32, k: u32) -> vec2<f32> {
    let z = buf[base + slot(k)];
    return cmul(vec2<f32>(z.x, -z.y), twiddles[params.chirp_at + k]);
}
";

/// `output` of a real line transformed as `N` complex points
/// (`z[j] = x[2j] + i x[2j + 1]`) whose transform `Z` the buffer holds.
/// The transforms of the even and odd samples are
/// `E = (Z[k] + conj Z[N - k]) / 2` and `O = (Z[k] - conj Z[N - k]) / 2i`;
/// output `k <= N` is `E + w^k O` (`w` the line's root, table entry `k`),
/// and the outputs past `N` mirror those below it.
const PACKED_OUTPUT: &str = "fn half_output(base: u32, k: u32) -> vec2<f32> {
    // Halved first (exact but for subnormals), so that a sum of two
    // values past half f32's largest is not infinite.
    let a = 0.5 * buf[base + slot(k % N)];
    let b = 0.5 * buf[base + slot((N - k) % N)];
    let even = vec2<f32>(a.x + b.x, a.y - b.y);
    let i_odd = vec2<f32>(a.x - b.x, a.y + b.y);
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

/// `load_x` and `store_y` for `key`'s read mode and output; a complex
/// value moves as one `vec2<f32>` (its pair view's positions are even).
fn access(key: &FftKey) -> String {
    let pair = "src[p >> 1u]";
    let load = match key.read {
        FftRead::Real if passes_of(key) < key.n => "fn load_x(start: i32, j: u32) -> vec2<f32> {
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
        .to_string(),
        FftRead::Real => "fn load_x(start: i32, j: u32) -> vec2<f32> {
    if (j >= params.length) {
        return vec2<f32>(0.0, 0.0);
    }
    return vec2<f32>(load_src(u32(start + i32(j) * params.src_step)), 0.0);
}
"
        .to_string(),
        FftRead::Complex => format!(
            "fn load_x(start: i32, j: u32) -> vec2<f32> {{
    if (j >= params.length) {{
        return vec2<f32>(0.0, 0.0);
    }}
    let p = u32(start + i32(j) * params.src_step);
    return {pair};
}}
"
        ),
        FftRead::Hermitian => format!(
            "fn load_x(start: i32, k: u32) -> vec2<f32> {{
    var j = k;
    var sign = 1.0;
    if (k > N / 2u) {{
        j = N - k;
        sign = -1.0;
    }}
    if (j >= params.length) {{
        return vec2<f32>(0.0, 0.0);
    }}
    let p = u32(start + i32(j) * params.src_step);
    let z = {pair};
    if (j == 0u || 2u * j == N) {{
        // Real, as NumPy reads them: NaN where the imaginary part is
        // infinite or NaN (its product with 0), else dropped.
        let lost = (bitcast<u32>(z.y) & 0x7fffffffu) >= 0x7f800000u;
        return vec2<f32>(bitcast<f32>(select(bitcast<u32>(z.x), 0x7fc00000u, lost)), 0.0);
    }}
    return vec2<f32>(z.x, sign * z.y);
}}
"
        ),
    };
    let store = if key.read == FftRead::Hermitian {
        "fn store_y(start: i32, k: u32, y: vec2<f32>) {
    out_buf[u32(start + i32(k) * params.dst_step)] = y.x;
}
"
    } else {
        "fn store_y(start: i32, k: u32, y: vec2<f32>) {
    out_buf[u32(start + i32(k) * params.dst_step) >> 1u] = y;
}
"
    };
    if key.chirp {
        // The element as read (zero past the line), times the chirp.
        let plain = load.replacen("fn load_x(", "fn load_plain(", 1);
        let chirped = "fn load_x(start: i32, j: u32) -> vec2<f32> {
    if (j >= params.length) {
        return vec2<f32>(0.0, 0.0);
    }
    return cmul(load_plain(start, j), twiddles[params.chirp_at + j]);
}
";
        return [plain.as_str(), chirped, store].concat();
    }
    [load.as_str(), store].concat()
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
    let passes = if call.chirp { chirp::chirp_len(n) } else { n };
    if passes > fft_line_limit(out).0 {
        return Err(Error::internal(
            OP,
            format!("a line of {n} reached the kernel"),
        ));
    }
    if call.chirp && (call.read == FftRead::Hermitian || call.twist.is_some()) {
        return Err(Error::internal(
            OP,
            "Bluestein's kernel takes complex or real lines, untwisted",
        ));
    }
    let complex = [call.read != FftRead::Real, call.complex_out()];
    // A c64 tensor's pair view (and its window in a binding, which starts
    // on the storage alignment) has even positions only: its pairs are
    // bound as vec2<f32>.
    let odd = |c: bool, lines: &Layout, step: isize| c && !plan::even_positions(lines, step);
    if odd(complex[0], &src_lines, src_step) || odd(complex[1], &dst_lines, dst_step) {
        return Err(Error::internal(OP, "a complex operand at an odd position"));
    }
    let unit = |c: bool| if c { 2 } else { 1 };
    let key = FftKey {
        n,
        read: call.read,
        dtype: call.input.dtype,
        native_f16: ctx.facts.native_f16,
        inverse: call.inverse,
        twist: call.twist.is_some(),
        across: [
            plan::reads_across(&src_lines, src_step, unit(complex[0])),
            plan::reads_across(&dst_lines, dst_step, unit(complex[1])),
        ],
        workgroup_bytes: ctx.facts.workgroup_bytes,
        chirp: call.chirp,
    };
    // A length with a prime over MAX_RADIX is refused here, before its
    // table is made.
    let (_, _, shape) = shape_of(&key)?;
    // The table is the device's, uploaded by the first call of its kind.
    let total = call.twist.map(|t| t.total);
    let table = if call.chirp {
        let table_key = ConstKey {
            kind: "fft bluestein",
            args: [n as u64, u64::from(call.inverse), 0],
        };
        GpuStorage::constant(ctx, OP, table_key, || {
            chirp::bluestein_table(n, call.inverse)
        })?
    } else {
        let table_key = ConstKey {
            kind: "fft twiddles",
            args: [n as u64, total.unwrap_or(0) as u64, 0],
        };
        GpuStorage::constant(ctx, OP, table_key, || twiddle_table(n, total))?
    };
    let table = Arc::new(Storage::Gpu(table));
    let parts = total.map(|total| table_parts(n, total));
    let table_bound = Bound::new(OP, &table, false)?;
    // Lines not read across after all (one line of them fits) take the
    // shape of lines read along: one pipeline for both requests.
    let key = FftKey {
        across: key.across.map(|a| a && shape.across),
        ..key
    };
    let groups = grid_of(
        src_lines.numel(),
        shape.lines as u32,
        ctx.facts.max_workgroups_per_dim,
    )?;
    let (chirp_at, kernel_at) = match call.chirp {
        true => chirp::table_starts(n),
        false => (0, 0),
    };
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
        chirp_at: chirp_at as u32,
        kernel_at: kernel_at as u32,
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
        let storages = [
            (KernelType::F32, true),
            (KernelType::F16, true),
            (KernelType::F16, false),
            (KernelType::BF16, true),
        ];
        for n in [1, 2, 3, 4, 8, 12, 13, 16, 22, 60, 105, 1024, 2048, 4096] {
            for (k, read) in reads.into_iter().enumerate() {
                for (s, (dtype, native_f16)) in storages.into_iter().enumerate() {
                    for across in [[false, false], [true, false], [false, true], [true, true]] {
                        let key = FftKey {
                            n,
                            read,
                            dtype,
                            native_f16,
                            inverse: k == 1,
                            twist: k != 2,
                            across,
                            workgroup_bytes: [16384, 32768, 49152][(n + s) % 3],
                            chirp: false,
                        };
                        if n > plan::max_line(key.workgroup_bytes) {
                            continue;
                        }
                        let source = fft_source(&key).unwrap();
                        validate(&source, &format!("{key:?}"));
                        assert_layout(&source, FftParams::FIELDS, FftParams::SIZE, "fft");
                    }
                }
            }
        }
    }

    #[test]
    fn every_bluestein_kernel_is_valid_wgsl() {
        // Primes past the radices and lengths with one, whose convolutions
        // fit 16, 32 and 48 KiB (m up to 2048, 4096).
        for n in [17, 19, 34, 101, 257, 1021, 2039, 2047] {
            for read in [FftRead::Complex, FftRead::Real] {
                for (dtype, native_f16) in [(KernelType::F32, true), (KernelType::F16, false)] {
                    for across in [[false, false], [true, true]] {
                        for workgroup_bytes in [16384, 32768, 49152] {
                            let key = FftKey {
                                n,
                                read,
                                dtype,
                                native_f16,
                                inverse: n % 2 == 0,
                                twist: false,
                                across,
                                workgroup_bytes,
                                chirp: true,
                            };
                            if chirp::chirp_len(n) > plan::max_line(workgroup_bytes) {
                                continue;
                            }
                            let source = fft_source(&key).unwrap();
                            validate(&source, &format!("{key:?}"));
                            // Two runs of the passes around the kernel's
                            // spectrum.
                            assert_eq!(source.matches("pass0(base, lane);").count(), 2);
                            assert!(source.contains("const CONJ: f32 = 1.0;"));
                        }
                    }
                }
            }
        }
    }
}
