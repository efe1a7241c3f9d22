//! The elementwise kernels that read and write whole array entries: four
//! elements a thread (`Access::Vec4`), eight 16-bit ones (`Access::Vec8`)
//! and groups of four along rows at small steps (`Access::Spans`), their
//! entries packed and unpacked in the compute types.

use super::access::MAX_SPAN_STEP;
use super::codegen::{Prelude, operand_buffer};
use super::program::KernelKey;
use crate::backend::gpu::kernel::buffer::{
    StorageMode, quad_lanes, quad_of, quad_type, storage_mode,
};
use crate::backend::gpu::kernel::template::fill;
use crate::backend::gpu::kernel::wgsl_type::ScalarType;
use crate::dtype::KernelType;
use crate::error::{Error, Result};
use std::fmt::Write;

pub(super) const ELEMENTWISE_VEC4_WGSL: &str = shader!("elementwise/elementwise_vec4.wgsl");
pub(super) const ELEMENTWISE_VEC8_WGSL: &str = shader!("elementwise/elementwise_vec8.wgsl");
pub(super) const ELEMENTWISE_SPANS_WGSL: &str = shader!("elementwise/elementwise_spans.wgsl");

/// The vec4 kernel of `key` (see `Access::Vec4`): each thread reads
/// four elements of every operand as one array entry, runs the program on
/// each lane in the compute types, and writes one entry of the
/// destination (f16 rounded, u8 wrapped as the other kernels store).
///
/// # Errors
/// As `elementwise_source`.
pub(super) fn vec4_source(key: &KernelKey, prelude: &Prelude) -> Result<String> {
    let mode = |k: usize| storage_mode(key.operands[k].dtype, key.native_f16);
    let buffer = |k: usize| operand_buffer(key, k);
    let mut loads = String::new();
    for k in 1..key.operands.len() {
        let lanes = quad_lanes(key.operands[k].dtype, mode(k), &format!("u{k}"));
        let _ = writeln!(
            loads,
            "    let u{k} = {}[q + operand_offset({k}u) / 4u];\n    let w{k} = {lanes};",
            buffer(k)
        );
    }
    // Lanes in the compute types; pack_out rounds (f16) or wraps (u8) them
    // as the other kernels' stores do.
    let (out_fns, out_lanes) = quad_out_fns(key);
    fill(
        "elementwise vec4 kernel",
        ELEMENTWISE_VEC4_WGSL,
        &[
            ("PRELUDE", &prelude.wgsl()),
            ("OUT_FNS", &out_fns),
            ("VLOADS", loads.trim_end()),
            ("LANES", &quad_lanes_of_program(key)),
            ("OUT", &out_lanes),
        ],
    )
}

/// `fn pack_out` and `fn merge_out` for the destination of `key`, whose
/// lanes are the `vec4` of its compute type (the vec4 and span kernels').
pub(super) fn quad_out_fns(key: &KernelKey) -> (String, String) {
    let mode = storage_mode(key.out(), key.native_f16);
    let (out, quad) = (key.out(), quad_type(mode));
    let out_lanes = format!("vec4<{}>", ScalarType::of(out));
    let fns = format!(
        "fn pack_out(v: {out_lanes}) -> {quad} {{\n    return {};\n}}\n{}",
        quad_of(out, mode, "v"),
        merge_fn(&quad, mode),
    );
    (fns, out_lanes)
}

/// The program on lanes x, y, z and w of each input's `wK`.
pub(super) fn quad_lanes_of_program(key: &KernelKey) -> String {
    ["x", "y", "z", "w"]
        .iter()
        .map(|lane| {
            let args: Vec<String> = (1..key.operands.len())
                .map(|k| format!("w{k}.{lane}"))
                .collect();
            format!("program({})", args.join(", "))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The span kernel of `key` (see `Access::Spans`): `quads` groups of
/// four a thread; operand `k` steps `steps[k]` elements along the row.
///
/// # Errors
/// As `elementwise_source`; `Error::Internal` for a step past
/// `MAX_SPAN_STEP` or a destination that does not step by 1.
pub(super) fn spans_source(
    key: &KernelKey,
    prelude: &Prelude,
    quads: u8,
    steps: &[u8],
) -> Result<String> {
    if steps[0] != 1 || steps.iter().any(|&s| s > MAX_SPAN_STEP) {
        return Err(Error::internal(
            "elementwise span kernel",
            format!("steps {steps:?}"),
        ));
    }
    let lane_names = ["x", "y", "z", "w"];
    let mut spans = String::new();
    let mut loads = String::new();
    for (k, (operand, &step)) in key.operands.iter().zip(steps).enumerate().skip(1) {
        let (dtype, step) = (operand.dtype, u32::from(step));
        let mode = storage_mode(dtype, key.native_f16);
        let lanes_type = format!("vec4<{}>", ScalarType::of(dtype));
        let buffer = operand_buffer(key, k);
        // Entry m of the span holds lanes from ceil(4m / step) on; it is
        // read only where that lane lies in the row (entry 0 otherwise).
        let entries = if step == 0 { 1 } else { (3 * step) / 4 + 1 };
        let mut body = String::from("    let e = at / 4u;\n");
        for m in 0..entries {
            let index = match m {
                0 => "e".to_string(),
                _ => format!("e + select(0u, {m}u, left > {}u)", (4 * m).div_ceil(step)),
            };
            let _ = writeln!(
                body,
                "    let u{m} = {buffer}[{index}];\n    let a{m} = {};",
                quad_lanes(dtype, mode, &format!("u{m}"))
            );
        }
        // A step of 0 repeats one element of the row, wherever it lies.
        let picked: Vec<String> = (0..4)
            .map(|j| match step {
                0 => "a0[at % 4u]".to_string(),
                _ => {
                    let at = step * j;
                    format!("a{}.{}", at / 4, lane_names[(at % 4) as usize])
                }
            })
            .collect();
        let _ = write!(
            spans,
            "fn span_op{k}(at: u32, left: u32) -> {lanes_type} {{\n{body}    return {lanes_type}({});\n}}\n",
            picked.join(", ")
        );
        let _ = writeln!(
            loads,
            "        let w{k} = span_op{k}(u32(p[{k}]) + {step}u * first, left);"
        );
    }
    let (out_fns, out_lanes) = quad_out_fns(key);
    fill(
        "elementwise span kernel",
        ELEMENTWISE_SPANS_WGSL,
        &[
            ("PRELUDE", &prelude.wgsl()),
            ("OUT_FNS", &out_fns),
            ("SPANS", &spans),
            ("QUADS", &quads.max(1).to_string()),
            ("VLOADS", loads.trim_end()),
            ("LANES", &quad_lanes_of_program(key)),
            ("OUT", &out_lanes),
        ],
    )
}

/// `fn merge_out(was, now, n)`: an entry of type `quad` (of storage `s`)
/// holding `now`'s lanes before lane `n` and `was`'s bits past them.
pub(super) fn merge_fn(quad: &str, s: StorageMode) -> String {
    let body = match s {
        StorageMode::Plain(_) | StorageMode::F16 | StorageMode::Words64 => {
            "return select(was, now, vec4<u32>(0u, 1u, 2u, 3u) < vec4<u32>(n));".to_string()
        }
        // Words of two 16-bit lanes, or one word of four bytes.
        _ => {
            let bits = if s == StorageMode::Bytes { 8 } else { 16 };
            let words = match quad {
                "u32" => 1,
                "vec2<u32>" => 2,
                _ => 4,
            };
            let masks: Vec<String> = (0..words)
                .map(|w| format!("lane_mask(n, {}u, {bits}u)", w * 32 / bits))
                .collect();
            format!(
                "let m = {quad}({});\n    return (was & ~m) | (now & m);",
                masks.join(", ")
            )
        }
    };
    format!("fn merge_out(was: {quad}, now: {quad}, n: u32) -> {quad} {{\n    {body}\n}}\n")
}

/// The vec8 kernel of `key` (see `Access::Vec8`): each thread reads
/// eight 16-bit elements of every operand as one `vec4<u32>` entry, runs
/// the program on each lane in the compute types, and writes one entry of
/// the destination, each result rounded once (as the other kernels'
/// stores round it).
///
/// # Errors
/// As `elementwise_source`; `Error::Internal` for an operand that is not
/// f16 or bf16.
pub(super) fn vec8_source(key: &KernelKey, prelude: &Prelude) -> Result<String> {
    // Lane `2w + h` of a word of two: its value in f32.
    let half = |dtype: KernelType, word: &str, h: usize| -> Result<String> {
        Ok(match (dtype, key.native_f16) {
            // f16, native or packed (the same bits), as the packed
            // storage's loads convert it.
            (KernelType::F16, _) => format!("f16_pair({word}).{}", ["x", "y"][h]),
            (KernelType::BF16, _) => format!("bf16_of_word({word}, {h}u)"),
            (other, _) => {
                return Err(Error::internal(
                    "elementwise vec8 kernel",
                    format!("an operand of {other:?}"),
                ));
            }
        })
    };
    let lanes_of = |dtype: KernelType, entry: &str| -> Result<String> {
        let lanes = ["x", "y", "z", "w"]
            .iter()
            .flat_map(|w| [0, 1].map(move |h| (w, h)))
            .map(|(w, h)| half(dtype, &format!("{entry}.{w}"), h))
            .collect::<Result<Vec<_>>>()?;
        Ok(format!("array<f32, 8>({})", lanes.join(", ")))
    };
    let mut loads = String::new();
    for k in 1..key.operands.len() {
        let lanes = lanes_of(key.operands[k].dtype, &format!("u{k}"))?;
        let _ = writeln!(
            loads,
            "    let u{k} = {}[q + operand_offset({k}u) / 8u];\n    var w{k} = {lanes};",
            operand_buffer(key, k)
        );
    }
    let args: Vec<String> = (1..key.operands.len())
        .map(|k| format!("w{k}[l]"))
        .collect();
    let lane = format!("program({})", args.join(", "));
    // Each result rounded once to its 16 bits (the packed stores' rounding;
    // native f16 stores the same bits).
    let bits = match key.out() {
        KernelType::BF16 => "bf16_bits",
        _ => "f16_bits",
    };
    let words: Vec<String> = (0..4)
        .map(|w| format!("{bits}(v[{}]) | ({bits}(v[{}]) << 16u)", 2 * w, 2 * w + 1))
        .collect();
    let out_fns = format!(
        "fn pack_out(v: array<f32, 8>) -> vec4<u32> {{\n    return vec4<u32>({});\n}}\n{}",
        words.join(", "),
        merge_fn("vec4<u32>", StorageMode::PackedF16),
    );
    fill(
        "elementwise vec8 kernel",
        ELEMENTWISE_VEC8_WGSL,
        &[
            ("PRELUDE", &prelude.wgsl()),
            ("OUT_FNS", &out_fns),
            ("VLOADS", loads.trim_end()),
            ("LANE", &lane),
        ],
    )
}
