//! The user's WGSL kernels (`CustomKernel`): the body wrapped in generated
//! bindings, strided accessors, parameters and an entry point that runs it
//! once per output element.

use super::command::Bound;
use super::kernel::buffer::{buffer_decl, load_fn, needs_f16, storage_mode, store_fn_named};
use super::kernel::grid::grid_of;
use super::kernel::params_block::{dims8, strides8};
use super::kernel::pipeline::PipelineSpec;
use super::kernel::prelude::prelude;
use super::kernel::strided::{Walk, Walked, numbered_walk};
use super::kernel::template::fill;
use super::kernel::wgsl_type::ScalarType;
use super::record::{KernelLaunch, record_kernel};
use super::storage::GpuStorage;
use crate::backend::CustomCall;
use crate::backend::{CustomSpec, CustomSpecs};
use crate::dtype::{DType, KernelType};
use crate::error::{Error, Result};
use smallvec::SmallVec;
use std::fmt::Write;
use std::sync::atomic::Ordering;

const WORKGROUP: u32 = 256;

/// Selects a custom kernel's pipeline: the kernel, and how f16 is stored.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct CustomKey {
    id: u64,
    native_f16: bool,
}

// Everything of webtensor's is named `wt_...` (argument names may not
// start so) and the body's function shadows what touches memory, so the
// body reaches its arguments only through their views.
const TEMPLATE: &str = "{{PRELUDE}}
struct WtOperand {
    offset: u32,
    rank: u32,
    // Elements of the operand's own shape (NAME_at reads zero past them).
    numel: u32,
    pad1: u32,
    // Over the output's shape (broadcast), then over the operand's own.
    strides: array<vec4<i32>, 2>,
    own_shape: array<vec4<u32>, 2>,
    own_strides: array<vec4<i32>, 2>,
}

struct WtParams {
    numel: u32,
    rank: u32,
    row_width: u32,
    pad0: u32,
    shape: array<vec4<u32>, 2>,
    scalars: array<vec4<u32>, {{SCALAR_WORDS}}>,
    operands: array<WtOperand, {{OPERANDS}}>,
}

@group(0) @binding(0) var<uniform> wt_params: WtParams;

{{BINDINGS}}
{{ACCESS}}
var<private> wt_index: u32;

fn out_dim(d: u32) -> u32 {
    return wt_params.shape[d / 4u][d % 4u];
}

// The current output element's coordinate along axis d.
fn out_coord(d: u32) -> u32 {
    var rem = wt_index;
    for (var a = i32(wt_params.rank) - 1; a > i32(d); a--) {
        rem = rem / out_dim(u32(a));
    }
    return rem % out_dim(d);
}

fn wt_body({{PARAMS}}) -> {{OUT_TYPE}} {
{{SCALARS}}{{SHADOWS}}    var {{OUT}}: {{OUT_TYPE}};
{{BODY}}
    return {{OUT}};
}

@compute @workgroup_size(256)
fn wt_main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let index = gid.x + gid.y * wt_params.row_width;
    if (index >= wt_params.numel) {
        return;
    }
    wt_index = index;
    let pos = wt_positions(index);
    wt_store(u32(pos[{{N}}]), wt_body({{ARGS}}));
}
";

/// The kernel's storage dtype of a tensor dtype (the op layer refused c64
/// and f64).
fn kernel_type(d: DType) -> KernelType {
    KernelType::of(d).unwrap_or(KernelType::F32)
}

/// The WGSL source of `spec` and the line of the source where the body's
/// first line is.
fn source(spec: &CustomSpec, native: bool) -> Result<(String, usize)> {
    let n = spec.inputs.len();
    let mut bindings = String::new();
    let mut access = String::new();
    let mut uses_f16 = false;
    // webtensor's names that reach memory, shadowed inside the body.
    let mut hidden = vec![
        "wt_params".to_string(),
        "wt_index".into(),
        "wt_out".into(),
        "wt_store".into(),
        "wt_positions".into(),
    ];
    for (k, (name, dtype)) in spec.inputs.iter().enumerate() {
        let d = kernel_type(*dtype);
        uses_f16 |= needs_f16(d, native);
        let (buf, load, pos) = (
            format!("wt_buf{k}"),
            format!("wt_load{k}"),
            format!("wt_pos{k}"),
        );
        bindings.push_str(&buffer_decl(1 + k as u32, &buf, d, native, false));
        access.push_str(&load_fn(&load, &buf, d, native));
        let start = format!("i32(wt_params.operands[{k}].offset)");
        let (rank, shape, strides) = (
            format!("wt_params.operands[{k}].rank"),
            format!("wt_params.operands[{k}].own_shape"),
            format!("wt_params.operands[{k}].own_strides"),
        );
        let walk = Walk {
            name: &pos,
            rank: &rank,
            shape: &shape,
            operands: &[Walked {
                start: &start,
                strides: &strides,
            }],
        };
        access.push_str(&walk.wgsl());
        let ct = ScalarType::of(d);
        let _ = write!(
            access,
            "fn {name}_at(i: u32) -> {ct} {{\n    \
             if (i >= wt_params.operands[{k}].numel) {{ return {ct}(); }}\n    \
             return {load}(u32({pos}(i)[0]));\n}}\n\
             fn {name}_dim(d: u32) -> u32 {{\n    return wt_params.operands[{k}].own_shape[d / 4u][d % 4u];\n}}\n"
        );
        hidden.extend([buf, load, pos]);
    }
    let out = kernel_type(spec.output.1);
    uses_f16 |= needs_f16(out, native);
    bindings.push_str(&buffer_decl(1 + n as u32, "wt_out", out, native, true));
    access.push_str(&store_fn_named(
        "wt_store",
        "wt_out",
        out,
        storage_mode(out, native),
    ));
    access.push_str(&numbered_walk(
        "wt_positions",
        ["wt_params.rank", "wt_params.shape"],
        n + 1,
        |k| format!("i32(wt_params.operands[{k}].offset)"),
        |k| format!("wt_params.operands[{k}].strides"),
    ));
    // The body's parameters: the index and each input's element. Each
    // scalar is a `let` at the body's top, decoded from the parameter
    // block (names the body cannot take: `wt_params`, `bitcast`), not a
    // parameter: WGSL compilers may take no more than 255 (Tint refuses
    // more), and a kernel may have thousands of scalars.
    let mut params = vec!["index: u32".to_string()];
    let mut args = vec!["index".to_string()];
    for (k, (name, d)) in spec.inputs.iter().enumerate() {
        params.push(format!("{name}: {}", ScalarType::of(kernel_type(*d))));
        args.push(format!("wt_load{k}(u32(pos[{k}]))"));
    }
    let mut scalars = String::new();
    for (k, (name, dtype)) in spec.scalars.iter().enumerate() {
        let bits = format!("wt_params.scalars[{}][{}]", k / 4, k % 4);
        let ct = ScalarType::of(kernel_type(*dtype));
        let value = match ct {
            ScalarType::F32 => format!("bitcast<f32>({bits})"),
            ScalarType::I32 => format!("bitcast<i32>({bits})"),
            ScalarType::U32 => bits,
            ScalarType::Bool => format!("{bits} != 0u"),
            // The op layer refuses i64 in custom kernels.
            ScalarType::I64 => format!("vec2<u32>({bits}, 0u)"),
        };
        scalars.push_str(&format!("    let {name}: {ct} = {value};\n"));
    }
    let shadows: String = hidden
        .iter()
        .map(|h| format!("    let {h} = 0u;\n"))
        .collect();
    let scalar_words = spec.scalars.len().div_ceil(4).max(1).to_string();
    let operands = (n + 1).to_string();
    let n_text = n.to_string();
    let out_type = ScalarType::of(out).to_string();
    let (params, args) = (params.join(", "), args.join(", "));
    let prelude = prelude(uses_f16, "");
    let mut slots = vec![("PRELUDE", prelude.as_str())];
    // The body goes in last, so that nothing it holds is taken for a slot.
    slots.extend([
        ("SCALAR_WORDS", scalar_words.as_str()),
        ("OPERANDS", operands.as_str()),
        ("BINDINGS", bindings.as_str()),
        ("ACCESS", access.as_str()),
        ("PARAMS", params.as_str()),
        ("OUT_TYPE", out_type.as_str()),
        ("SCALARS", scalars.as_str()),
        ("SHADOWS", shadows.as_str()),
        ("OUT", spec.output.0.as_str()),
        ("N", n_text.as_str()),
        ("ARGS", args.as_str()),
        ("BODY", "{{BODY}}"),
    ]);
    let framed = fill("custom kernel", TEMPLATE, &slots)?;
    let line = framed
        .split("{{BODY}}")
        .next()
        .map_or(1, |before| before.matches('\n').count() + 1);
    Ok((framed.replacen("{{BODY}}", &spec.body, 1), line))
}

/// The parameter block: counts, the output's shape, the scalars' bits, and
/// each operand's offset, strides over the output's shape, own shape and
/// own strides (the output last).
fn params(call: &CustomCall, row_width: u32) -> Vec<u8> {
    let mut words: Vec<u32> = Vec::new();
    let dims = |w: &mut Vec<u32>, d: &[usize]| w.extend(dims8(d));
    let strides = |w: &mut Vec<u32>, s: &[isize]| w.extend(strides8(s).map(|x| x as u32));
    let out = &call.out.layout;
    words.extend([out.numel() as u32, out.rank() as u32, row_width, 0]);
    dims(&mut words, out.dims());
    let scalar_words = call.scalars.len().div_ceil(4).max(1) * 4;
    words.extend(call.scalars.iter().map(|s| s.bits()));
    words.resize(words.len() + scalar_words - call.scalars.len(), 0);
    let operands = call
        .inputs
        .iter()
        .map(|(r, own)| (&r.layout, own))
        .chain([(out, out)]);
    for (over_out, own) in operands {
        words.extend([
            over_out.offset() as u32,
            own.rank() as u32,
            own.numel() as u32,
            0,
        ]);
        strides(&mut words, over_out.strides());
        dims(&mut words, own.dims());
        strides(&mut words, own.strides());
    }
    bytemuck::cast_slice(&words).to_vec()
}

/// Where `message` points into `body` (`wgsl:LINE:COLUMN` as wgpu's
/// messages give it: lines counted at `\n`, columns in characters, the
/// body's first line being line `first` of the source), as a line of the
/// body counted as WGSL counts them: at each of its line breaks (`\r`,
/// U+2028 ...), CR LF one.
fn body_line(message: &str, first: usize, body: &str) -> Option<usize> {
    message.match_indices("wgsl:").find_map(|(at, _)| {
        let number = |text: &str| -> Option<usize> {
            let digits: String = text.chars().take_while(char::is_ascii_digit).collect();
            digits.parse().ok()
        };
        let rest = &message[at + 5..];
        let line = number(rest)?;
        let column = rest
            .split_once(':')
            .and_then(|(_, c)| number(c))
            .unwrap_or(1);
        let chunk = line.checked_sub(first)?;
        let start: usize = body.split('\n').take(chunk).map(|l| l.len() + 1).sum();
        let text = body.split('\n').nth(chunk)?;
        let within = text
            .char_indices()
            .nth(column.saturating_sub(1))
            .map_or(text.len(), |(at, _)| at);
        let before = body.get(..start + within)?;
        Some(1 + before.matches(is_wgsl_line_break).count() - before.matches("\r\n").count())
    })
}

/// WGSL's line breaks (naga's set: Unicode Pattern_White_Space but the
/// spaces and marks), which end a `//` comment and count a line.
pub(crate) fn is_wgsl_line_break(c: char) -> bool {
    matches!(c, '\u{a}'..='\u{d}' | '\u{85}' | '\u{2028}' | '\u{2029}')
}

/// WGSL's cap on one function's variables, which browsers enforce and naga
/// does not: per-thread memory, which a driver may reserve for every
/// thread at once (lavapipe reserved tens of gigabytes for a body's
/// `var a: array<f32, 16777216>`).
#[cfg(not(target_arch = "wasm32"))]
const FUNCTION_BYTES: u64 = 8192;

/// What browsers' WGSL compilers refuse in `source` and naga does not, as
/// wgpu reports an error (`wgsl:LINE:COLUMN: ...`): more than
/// [`FUNCTION_BYTES`] in one function's variables, and a barrier or
/// subgroup operation (the body runs only for threads that have an output
/// element: outside uniform control flow a barrier can hang a GPU, and a
/// subgroup's result depends on the grid; a body cannot `enable
/// subgroups` in a browser). Webtensor's own rule besides: no value of
/// more than [`FUNCTION_BYTES`] either (a driver holds it a thread as it
/// holds a variable). Source that does not parse passes: its compilation
/// reports it. Native only: a browser refuses the rest itself.
#[cfg(not(target_arch = "wasm32"))]
fn browsers_refuse(source: &str) -> std::result::Result<(), String> {
    let Ok(module) = naga::front::wgsl::parse_str(source) else {
        return Ok(());
    };
    let gctx = module.to_ctx();
    let size = |ty: naga::Handle<naga::Type>| {
        module.types[ty]
            .inner
            .try_size(gctx)
            .map_or(u64::MAX, u64::from)
    };
    // As wgpu's messages give places: columns in characters.
    let at = |span: naga::Span| {
        let place = span.location(source);
        let start = (place.offset + 1 - place.line_position) as usize;
        let column = source
            .get(start..place.offset as usize)
            .map_or(1, |text| text.chars().count() + 1);
        format!("wgsl:{}:{column}", place.line_number)
    };
    let functions = module.functions.iter().map(|(_, f)| f);
    for f in functions.chain(module.entry_points.iter().map(|e| &e.function)) {
        let mut total = 0u64;
        for (h, var) in f.local_variables.iter() {
            total = total.saturating_add(size(var.ty));
            if total > FUNCTION_BYTES {
                return Err(format!(
                    "{}: the function's variables (the output's among them) take {total} bytes a thread; WGSL allows {FUNCTION_BYTES}",
                    at(f.local_variables.get_span(h))
                ));
            }
        }
        if let Some(span) = collective(&f.body) {
            return Err(format!(
                "{}: a barrier or subgroup operation in a kernel's body, which runs only for the threads that have an output element (WGSL takes these in uniform control flow only)",
                at(span)
            ));
        }
        for (h, e) in f.expressions.iter() {
            let (naga::Expression::ZeroValue(ty) | naga::Expression::Compose { ty, .. }) = *e
            else {
                continue;
            };
            if size(ty) > FUNCTION_BYTES {
                return Err(format!(
                    "{}: a value of {} bytes a thread; WGSL allows {FUNCTION_BYTES} for a function's variables",
                    at(f.expressions.get_span(h)),
                    size(ty)
                ));
            }
        }
    }
    Ok(())
}

/// Where the first barrier or subgroup operation among `block`'s
/// statements (nested ones too) is.
#[cfg(not(target_arch = "wasm32"))]
fn collective(block: &naga::Block) -> Option<naga::Span> {
    use naga::Statement as S;
    block
        .span_iter()
        .find_map(|(statement, span)| match statement {
            S::ControlBarrier(_)
            | S::MemoryBarrier(_)
            | S::WorkGroupUniformLoad { .. }
            | S::SubgroupBallot { .. }
            | S::SubgroupGather { .. }
            | S::SubgroupCollectiveOperation { .. } => Some(*span),
            S::Block(b) => collective(b),
            S::If { accept, reject, .. } => collective(accept).or_else(|| collective(reject)),
            S::Switch { cases, .. } => cases.iter().find_map(|c| collective(&c.body)),
            S::Loop {
                body, continuing, ..
            } => collective(body).or_else(|| collective(continuing)),
            _ => None,
        })
}

/// Records `call`, whose output storage is `out`.
///
/// # Errors
/// `Error::Argument` naming the op for WGSL that does not compile (with
/// the body's line where the compiler names one), more tensors than the
/// device binds or a parameter block larger than its uniform bindings;
/// `TooLarge` for more elements than a dispatch covers.
pub(crate) fn custom(out: &GpuStorage, call: &CustomCall) -> Result<()> {
    let ctx = &out.ctx;
    let spec = call.spec;
    let bound = call.inputs.len() + 1;
    if bound > ctx.facts.max_storage_buffers as usize {
        return Err(Error::argument(
            call.op,
            format!(
                "kernel {:?} binds {bound} tensors; this device binds at most {}",
                spec.name, ctx.facts.max_storage_buffers
            ),
        ));
    }
    let params_size = (48 + 16 * spec.scalars.len().div_ceil(4).max(1) + 112 * bound) as u64;
    if params_size > ctx.facts.max_uniform_binding {
        return Err(Error::argument(
            call.op,
            format!(
                "kernel {:?}: {} scalars and {bound} tensors take a parameter block of {params_size} bytes; this device's uniform bindings hold at most {}",
                spec.name,
                spec.scalars.len(),
                ctx.facts.max_uniform_binding
            ),
        ));
    }
    let native = ctx.facts.native_f16;
    let key = CustomKey {
        id: spec.id,
        native_f16: native,
    };
    // The pipelines of kernels no handle holds any more go, once a spec has
    // been dropped since the last sweep.
    let dropped = CustomSpecs::dropped();
    if ctx.custom_sweep.swap(dropped, Ordering::Relaxed) != dropped {
        ctx.pipelines
            .retain(|k: &CustomKey| CustomSpecs::is_held(k.id));
    }
    let read_only: SmallVec<[bool; 4]> = (0..bound).map(|k| k < call.inputs.len()).collect();
    ctx.pipelines
        .get(&ctx.device, &key, || {
            let source = source(spec, native)?.0;
            #[cfg(not(target_arch = "wasm32"))]
            super::kernel::deep_stack::on_deep_stack(|| browsers_refuse(&source))
                .map_err(|msg| Error::argument(call.op, msg))?;
            Ok(PipelineSpec {
                label: "webtensor custom kernel",
                source,
                entry: "wt_main",
                params_size,
                read_only: read_only.iter().copied().collect(),
                trusted: false,
            })
        })
        .map_err(|e| {
            let message = match e {
                Error::Argument { msg, .. } => msg,
                e => e.to_string(),
            };
            let first = source(spec, native).map_or(0, |(_, first)| first);
            let at = body_line(&message, first, &spec.body)
                .map_or(String::new(), |l| format!(" at line {l} of the body"));
            Error::argument(
                call.op,
                format!(
                    "kernel {:?}: the WGSL does not compile{at}: {message}",
                    spec.name
                ),
            )
        })?;
    let numel = call.out.layout.numel();
    if numel == 0 {
        return Ok(());
    }
    let groups = grid_of(numel, WORKGROUP, ctx.facts.max_workgroups_per_dim)?;
    let mut bindings: SmallVec<[Bound; 4]> = SmallVec::new();
    for (input, _) in &call.inputs {
        bindings.push(Bound::new(call.op, &input.storage, false)?);
    }
    bindings.push(Bound::new(call.op, &call.out.storage, true)?);
    let params = params(call, groups[0] * WORKGROUP);
    debug_assert_eq!(params.len() as u64, params_size);
    record_kernel(
        ctx,
        KernelLaunch {
            key: &key,
            label: "webtensor custom kernel",
            entry: "wt_main",
            source: |_: &CustomKey| Ok(source(spec, native)?.0),
            params: &params,
            bindings,
            groups: [groups[0], groups[1], 1],
            // Checked, whichever call builds the pipeline.
            trusted: false,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::gpu::kernel::prelude::tests::validate;

    fn spec(body: &str) -> CustomSpec {
        CustomSpec {
            id: 0,
            name: "t".into(),
            inputs: vec![
                ("x".into(), DType::F16),
                ("m".into(), DType::Bool),
                ("k".into(), DType::U8),
            ],
            scalars: vec![("s".into(), DType::F32), ("n".into(), DType::I32)],
            output: ("y".into(), DType::F16),
            body: body.into(),
        }
    }

    #[test]
    fn generated_kernels_are_valid_wgsl_in_every_storage_mode() {
        let body =
            "y = select(x, x_at(index) * s, m) + f32(k) + f32(n) + f32(out_coord(0u) + x_dim(0u));";
        for native in [true, false] {
            let (wgsl, first) = source(&spec(body), native).unwrap();
            validate(&wgsl, "custom kernel");
            assert_eq!(wgsl.lines().nth(first - 1), Some(body));
        }
    }

    /// Scalars are lets in the body, not its parameters: Tint takes no
    /// more than 255 parameters, and a kernel may have thousands of
    /// scalars.
    #[test]
    fn scalars_are_not_parameters_of_the_body() {
        let mut many = spec("y = x + s299 + f32(n);");
        many.scalars
            .extend((0..300).map(|k| (format!("s{k}"), DType::F32)));
        for native in [true, false] {
            let (wgsl, _) = source(&many, native).unwrap();
            validate(&wgsl, "custom kernel");
            let signature = wgsl.lines().find(|l| l.starts_with("fn wt_body(")).unwrap();
            assert_eq!(signature.matches(':').count(), 4, "{signature}");
            assert!(wgsl.contains("    let s299: f32 = bitcast<f32>(wt_params.scalars[75][1]);"));
        }
    }

    #[test]
    fn compiler_lines_map_into_the_body() {
        let body = "a\nb\nc\nd\ne";
        assert_eq!(body_line("error\n  ┌─ wgsl:42:1\n", 40, body), Some(3));
        assert_eq!(body_line("error at wgsl:12:1", 40, body), None);
        assert_eq!(body_line("past the body wgsl:45:1", 40, body), None);
        assert_eq!(body_line("no location", 40, body), None);
        // Columns in characters, past breaks naga does not count; CR LF one.
        let body = "y = x;\ry = x;\r\n\u{2028}y = x +;";
        assert_eq!(body_line("wgsl:40:7", 40, body), Some(1));
        assert_eq!(body_line("wgsl:40:8", 40, body), Some(2));
        assert_eq!(body_line("wgsl:40:14", 40, body), Some(2));
        assert_eq!(body_line("wgsl:41:1", 40, body), Some(3));
        assert_eq!(body_line("wgsl:41:4", 40, body), Some(4));
    }

    /// An input `x` gets the functions `x_at` and `x_dim` beside the math
    /// library every kernel includes: no function there may end so (an
    /// input named `bf16` once met math.wgsl's `bf16_at`).
    #[test]
    fn no_library_function_looks_like_an_inputs_accessor() {
        let library = crate::backend::gpu::kernel::prelude::MATH_WGSL;
        for line in library.lines().filter(|l| l.starts_with("fn ")) {
            let name = line[3..].split('(').next().unwrap_or("");
            assert!(!name.ends_with("_at") && !name.ends_with("_dim"), "{name}");
        }
    }
}
