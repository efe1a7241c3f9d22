//! Draws of the counter-based generator in one pass (`random/random.wgsl`):
//! each thread enciphers its own Philox block and writes one quad (four
//! elements) of the destination with one store of 8 to 32 bytes, so a
//! draw moves nothing but its output across memory (and nothing across
//! the bus).

use crate::backend::gpu::command::Bound;
use crate::backend::gpu::kernel::grid::grid;
use crate::backend::gpu::kernel::params_block::params_block;
use crate::backend::gpu::kernel::prelude::fill_kernel;
use crate::backend::gpu::record::{family_key, record_family};
use crate::backend::gpu::storage::GpuStorage;
use crate::backend::random::{COS_C, LN2_HI, LN2_LO, LOG_P, SIN_S, f32_param, uniform_bits};
use crate::backend::{Draw, RandomCall};
use crate::dtype::KernelType;
use crate::error::{Error, Result};
use smallvec::smallvec;

const RANDOM_WGSL: &str = shader!("random/random.wgsl");

params_block! {
    /// `Params` of random.wgsl.
    pub(crate) struct RandomParams {
        /// Quads (threads) of the dispatch.
        quads: u32,
        row_threads: u32,
        /// The quad of the binding thread 0 writes.
        out_quad: u32,
        /// Always 0 (see `kept` in random.wgsl).
        zero: u32,
        key0: u32,
        key1: u32,
        /// The dispatch's first Philox block.
        block_lo: u32,
        block_hi: u32,
        /// The draw's parameters: f32 bits of low, span and top (uniform)
        /// or mean and std (normal); the span's and low's words (integers);
        /// the threshold's words (Bernoulli).
        a: u32,
        b: u32,
        c: u32,
        d: u32,
    }
}

/// What a draw computes, apart from its parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum DrawKind {
    Bits,
    Uniform,
    Normal,
    Int,
    Bernoulli,
}

/// Everything that selects a distinct random pipeline.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct RandomKey {
    /// f16 is written as words of bits, with or without SHADER_F16.
    pub dtype: KernelType,
    pub kind: DrawKind,
}

family_key!(RandomKey, "webtensor random", random_source);

/// An f32 as an exact WGSL hexadecimal float literal (a normal number).
fn hex_f32(v: f32) -> String {
    let b = v.to_bits();
    let sign = if b >> 31 == 1 { "-" } else { "" };
    let exponent = ((b >> 23) & 0xff) as i32 - 127;
    format!("{sign}0x1.{:06x}p{exponent}f", (b & 0x007f_ffff) << 1)
}

/// `fn name(v: f32) -> f32`: Horner's rule over `c` (lowest first), each
/// product kept from fusing into its add.
fn horner_fn(name: &str, c: &[f32]) -> String {
    let mut body = format!(
        "fn {name}(v: f32) -> f32 {{\n    var acc = {};\n",
        hex_f32(c[c.len() - 1])
    );
    for &k in c[..c.len() - 1].iter().rev() {
        body.push_str(&format!("    acc = kept(acc * v) + {};\n", hex_f32(k)));
    }
    body + "    return acc;\n}\n"
}

/// The polynomials and constants of `cpu/random.rs`, bit for bit.
fn polynomials() -> String {
    [
        horner_fn("log_poly", &LOG_P),
        horner_fn("sin_poly", &SIN_S),
        horner_fn("cos_poly", &COS_C),
        format!(
            "const LN2_HI: f32 = {};\nconst LN2_LO: f32 = {};\n",
            hex_f32(LN2_HI),
            hex_f32(LN2_LO)
        ),
    ]
    .concat()
}

/// The compute type of a quad of `key`'s values and how its values are
/// made: floats (uniform, normal, Bernoulli into floats) as `vec4<f32>`,
/// the rest as words.
fn draw_fn(key: &RandomKey) -> Result<String> {
    let float = matches!(
        key.dtype,
        KernelType::F32 | KernelType::F16 | KernelType::BF16
    );
    let bits = uniform_bits(key.dtype);
    let body = match (key.kind, float) {
        (DrawKind::Bits, _) if key.dtype == KernelType::U32 => "fn draw(t: u32) -> vec4<u32> {\n    return words(t);\n}\n".to_string(),
        (DrawKind::Bernoulli, _) => {
            let ty = if float { "f32" } else { "u32" };
            format!(
                "fn draw(t: u32) -> vec4<{ty}> {{\n    \
                 let below = words(t) < vec4<u32>(params.a);\n    \
                 let always = params.b != 0u;\n    \
                 return vec4<{ty}>(vec4<u32>(below | vec4<bool>(always)));\n}}\n"
            )
        }
        (DrawKind::Uniform, true) => format!(
            "fn draw(t: u32) -> vec4<f32> {{\n    \
             let u = vec4<f32>(words(t) >> vec4<u32>({shift}u)) * {unit};\n    \
             let span = bitcast<f32>(params.b);\n    \
             let low = bitcast<f32>(params.a);\n    \
             let v = flushed4(flushed4(vec4<f32>(kept(span * u.x), kept(span * u.y), kept(span * u.z), kept(span * u.w))) + low);\n    \
             // What would round to high is low (see `uniform_top`).\n    \
             return select(v, vec4<f32>(low), v >= vec4<f32>(bitcast<f32>(params.c)));\n}}\n",
            shift = 32 - bits,
            unit = hex_f32(1.0 / (1u32 << bits) as f32),
        ),
        (DrawKind::Normal, true) => "fn draw(t: u32) -> vec4<f32> {\n    \
             let w = words(t);\n    \
             let z = vec4<f32>(normal_pair(w.x, w.y), normal_pair(w.z, w.w));\n    \
             let mean = bitcast<f32>(params.a);\n    \
             let deviation = bitcast<f32>(params.b);\n    \
             return flushed4(flushed4(vec4<f32>(kept(deviation * z.x), kept(deviation * z.y), kept(deviation * z.z), kept(deviation * z.w))) + mean);\n}\n"
            .to_string(),
        (DrawKind::Int, false) if key.dtype != KernelType::Bool => {
            let ty = if key.dtype == KernelType::I64 { "array<vec2<u32>, 4>" } else { "vec4<u32>" };
            let pack = if key.dtype == KernelType::I64 {
                "return array<vec2<u32>, 4>(a, b, c, d);"
            } else {
                "return vec4<u32>(a.x, b.x, c.x, d.x);"
            };
            format!(
                "fn draw(t: u32) -> {ty} {{\n    \
                 let x = words(2u * t);\n    \
                 let y = words(2u * t + 1u);\n    \
                 let a = scaled_int(x.xy);\n    \
                 let b = scaled_int(x.zw);\n    \
                 let c = scaled_int(y.xy);\n    \
                 let d = scaled_int(y.zw);\n    \
                 {pack}\n}}\n"
            )
        }
        _ => return Err(Error::internal("random", "no kernel makes this draw in this dtype")),
    };
    Ok(body)
}

/// The destination's declaration (whole quads) and `store_quad`.
fn store_fn(key: &RandomKey) -> (String, String) {
    let decl = |ty: &str| {
        format!("@group(0) @binding(1) var<storage, read_write> out_buf: array<{ty}>;\n")
    };
    match key.dtype {
        KernelType::F32 => (
            decl("vec4<f32>"),
            "fn store_quad(q: u32, v: vec4<f32>) {\n    out_buf[q] = v;\n}\n".into(),
        ),
        KernelType::F16 | KernelType::BF16 => {
            let bits = if key.dtype == KernelType::F16 {
                "f16_rne"
            } else {
                "bf16_bits"
            };
            (
                decl("vec2<u32>"),
                format!(
                    "fn store_quad(q: u32, v: vec4<f32>) {{\n    \
                     out_buf[q] = vec2<u32>({bits}(v.x) | ({bits}(v.y) << 16u), {bits}(v.z) | ({bits}(v.w) << 16u));\n}}\n"
                ),
            )
        }
        KernelType::I32 => (
            decl("vec4<i32>"),
            "fn store_quad(q: u32, v: vec4<u32>) {\n    out_buf[q] = bitcast<vec4<i32>>(v);\n}\n"
                .into(),
        ),
        KernelType::I64 => {
            let ty = if matches!(key.kind, DrawKind::Int) {
                "array<vec2<u32>, 4>"
            } else {
                "vec4<u32>"
            };
            let words = if matches!(key.kind, DrawKind::Int) {
                "out_buf[2u * q] = vec4<u32>(v[0], v[1]);\n    out_buf[2u * q + 1u] = vec4<u32>(v[2], v[3]);"
            } else {
                "out_buf[2u * q] = vec4<u32>(v.x, 0u, v.y, 0u);\n    out_buf[2u * q + 1u] = vec4<u32>(v.z, 0u, v.w, 0u);"
            };
            (
                decl("vec4<u32>"),
                format!("fn store_quad(q: u32, v: {ty}) {{\n    {words}\n}}\n"),
            )
        }
        KernelType::U8 | KernelType::Bool => (
            decl("u32"),
            "fn store_quad(q: u32, v: vec4<u32>) {\n    \
             let b = v & vec4<u32>(0xffu);\n    \
             out_buf[q] = b.x | (b.y << 8u) | (b.z << 16u) | (b.w << 24u);\n}\n"
                .into(),
        ),
        // u32, and f64 (which never reaches a kernel).
        _ => (
            decl("vec4<u32>"),
            "fn store_quad(q: u32, v: vec4<u32>) {\n    out_buf[q] = v;\n}\n".into(),
        ),
    }
}

/// The WGSL source of the random kernel for `key`.
///
/// # Errors
/// `Error::Internal` for a draw no kernel makes in its dtype, or when the
/// template's slots and the generated parts disagree.
pub(crate) fn random_source(key: &RandomKey) -> Result<String> {
    let draw = draw_fn(key)?;
    let (bindings, store) = store_fn(key);
    let polynomials = polynomials();
    let slots = [
        ("BINDINGS", bindings.as_str()),
        ("POLYNOMIALS", polynomials.as_str()),
        ("DRAW", draw.as_str()),
        ("STORE", store.as_str()),
    ];
    fill_kernel(
        "random kernel",
        RANDOM_WGSL,
        false,
        &RandomParams::wgsl(),
        &slots,
    )
}

/// The kind of `draw`.
fn kind(draw: &Draw) -> DrawKind {
    match draw {
        Draw::Bits => DrawKind::Bits,
        Draw::Uniform { .. } => DrawKind::Uniform,
        Draw::Normal { .. } => DrawKind::Normal,
        Draw::Int { .. } => DrawKind::Int,
        Draw::Bernoulli { .. } => DrawKind::Bernoulli,
    }
}

/// Records `call`, whose output storage is `out`.
///
/// # Errors
/// `Error::TooLarge` for a destination over one dispatch's grid or one
/// storage binding (the op layer draws those in parts); `Error::Internal`
/// for a destination that does not start a quad.
pub(crate) fn random(out: &GpuStorage, call: &RandomCall) -> Result<()> {
    const OP: &str = "random";
    let ctx = &out.ctx;
    let numel = call.out.layout.numel();
    if numel == 0 {
        return Ok(());
    }
    // The kernel writes whole quads: the view is padded to one.
    let quads = numel.div_ceil(4);
    let padded = call.out.with_layout(crate::layout::Layout::from_parts(
        crate::shape::Shape::from([quads * 4]),
        smallvec![1],
        call.out.layout.offset(),
    ));
    let (out_bound, dest) = Bound::view(OP, padded, true)?;
    let offset = dest.layout.offset();
    if !offset.is_multiple_of(4) || !call.first.is_multiple_of(4) {
        return Err(Error::internal(
            OP,
            "a draw's destination must start a quad",
        ));
    }
    let groups = grid(quads, ctx.facts.max_workgroups_per_dim)?;
    let key = RandomKey {
        dtype: call.out.dtype,
        kind: kind(&call.draw),
    };
    let words = call.draw.words(call.out.dtype);
    let block = call.block.wrapping_add(call.first * words / 4);
    let f32_bits = |v: f64| f32_param(v).to_bits();
    let [a, b, c, d] = match call.draw {
        Draw::Bits => [0; 4],
        Draw::Uniform { low, span, top } => [f32_bits(low), f32_bits(span), f32_bits(top), 0],
        Draw::Normal { mean, std } => [f32_bits(mean), f32_bits(std), 0, 0],
        Draw::Int { low, span } => {
            let low = low as u64;
            [
                span as u32,
                (span >> 32) as u32,
                low as u32,
                (low >> 32) as u32,
            ]
        }
        // A threshold of 2^32 takes every word.
        Draw::Bernoulli { threshold } => [
            threshold.min(u64::from(u32::MAX)) as u32,
            u32::from(threshold > u64::from(u32::MAX)),
            0,
            0,
        ],
    };
    let params = RandomParams {
        quads: quads as u32,
        row_threads: groups[0] * 64,
        out_quad: (offset / 4) as u32,
        zero: 0,
        key0: call.key[0],
        key1: call.key[1],
        block_lo: block as u32,
        block_hi: (block >> 32) as u32,
        a,
        b,
        c,
        d,
    };
    record_family(
        ctx,
        &key,
        params.bytes(),
        smallvec![out_bound],
        [groups[0], groups[1], 1],
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::gpu::kernel::params_block::tests::assert_layout;
    use crate::backend::gpu::kernel::prelude::tests::validate;

    #[test]
    fn every_random_kernel_is_valid_wgsl_and_matches_its_params() {
        let floats = [KernelType::F32, KernelType::F16, KernelType::BF16];
        let words = [
            KernelType::I32,
            KernelType::U32,
            KernelType::U8,
            KernelType::Bool,
            KernelType::I64,
        ];
        let mut built = 0;
        for dtype in floats.into_iter().chain(words) {
            for kind in [
                DrawKind::Bits,
                DrawKind::Uniform,
                DrawKind::Normal,
                DrawKind::Int,
                DrawKind::Bernoulli,
            ] {
                let key = RandomKey { dtype, kind };
                let Ok(source) = random_source(&key) else {
                    continue;
                };
                validate(&source, &format!("{key:?}"));
                assert_layout(&source, RandomParams::FIELDS, RandomParams::SIZE, "random");
                built += 1;
            }
        }
        // Uniform, normal and Bernoulli for 3 float dtypes; Bernoulli
        // for 5 word dtypes, integers for 4 (not bool); bits for u32.
        assert_eq!(built, 3 * 3 + 5 + 4 + 1);
    }

    #[test]
    fn special_wgsl_sinpi_takes_the_generators_polynomials() {
        // special.wgsl writes them as literals: they must stay these.
        let special = shader!("kernel/special.wgsl");
        let start = special.find("fn sinpi_cospi_f32").unwrap();
        let body = &special[start..start + special[start..].find("\n}\n").unwrap()];
        for c in SIN_S.iter().chain(&COS_C) {
            assert!(body.contains(&format!("{}", c.abs())), "{c} in {body}");
        }
    }

    #[test]
    fn hex_floats_are_exact() {
        for v in [
            1.0f32,
            -0.499_999_97,
            6.283_185_5,
            1.428_606_8e-6,
            -75.393_94,
        ] {
            let text = hex_f32(v);
            let (mantissa, exponent) = text
                .trim_start_matches('-')
                .trim_start_matches("0x1.")
                .trim_end_matches('f')
                .split_once('p')
                .unwrap();
            let m = 1.0 + u32::from_str_radix(mantissa, 16).unwrap() as f64 / 16f64.powi(6);
            let back = m * 2f64.powi(exponent.parse().unwrap()) * v.signum() as f64;
            assert_eq!(back as f32, v, "{text}");
        }
    }
}
