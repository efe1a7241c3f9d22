//! The user's WGSL kernels (`CustomKernel`): the body wrapped in generated
//! bindings, strided accessors, parameters and an entry point that runs it
//! once per output element.

use super::command::Bound;
use super::kernel::buffer::{buffer_decl, load_fn, needs_f16, store_out_fn};
use super::kernel::grid::grid_of;
use super::kernel::params_block::{dims8, strides8};
use super::kernel::pipeline::PipelineSpec;
use super::kernel::prelude::prelude;
use super::kernel::strided::{Walk, Walked};
use super::kernel::template::fill;
use super::kernel::wgsl_type::ScalarType;
use super::launch::record_kernel;
use super::storage::GpuStorage;
use crate::backend::CustomCall;
use crate::backend::CustomSpec;
use crate::dtype::{DType, KernelType};
use crate::error::{Error, Result};
use smallvec::SmallVec;
use std::fmt::Write;

const WORKGROUP: u32 = 256;

/// Selects a custom kernel's pipeline: the kernel, and how f16 is stored.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct CustomKey {
    id: u64,
    native_f16: bool,
}

const TEMPLATE: &str = "{{HEADER}}
struct Operand {
    offset: u32,
    rank: u32,
    pad0: u32,
    pad1: u32,
    // Over the output's shape (broadcast), then over the operand's own.
    strides: array<vec4<i32>, 2>,
    own_shape: array<vec4<u32>, 2>,
    own_strides: array<vec4<i32>, 2>,
}

struct Params {
    numel: u32,
    rank: u32,
    row_width: u32,
    pad0: u32,
    shape: array<vec4<u32>, 2>,
    scalars: array<vec4<u32>, {{SCALAR_WORDS}}>,
    operands: array<Operand, {{OPERANDS}}>,
}

@group(0) @binding(0) var<uniform> params: Params;

{{MATH}}
{{BINDINGS}}
{{ACCESS}}
var<private> current_index: u32;

fn out_dim(d: u32) -> u32 {
    return params.shape[d / 4u][d % 4u];
}

// The current output element's coordinate along axis d.
fn out_coord(d: u32) -> u32 {
    var rem = current_index;
    for (var a = i32(params.rank) - 1; a > i32(d); a--) {
        rem = rem / out_dim(u32(a));
    }
    return rem % out_dim(d);
}

fn body({{PARAMS}}) -> {{OUT_TYPE}} {
    let index = current_index;
{{SCALARS}}    var {{OUT}}: {{OUT_TYPE}};
{{BODY}}
    return {{OUT}};
}

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let index = gid.x + gid.y * params.row_width;
    if (index >= params.numel) {
        return;
    }
    current_index = index;
    let pos = positions(index);
    store_out(u32(pos[{{N}}]), body({{ARGS}}));
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
    for (k, (name, dtype)) in spec.inputs.iter().enumerate() {
        let d = kernel_type(*dtype);
        uses_f16 |= needs_f16(d, native);
        let buf = format!("{name}_buf");
        bindings.push_str(&buffer_decl(1 + k as u32, &buf, d, native, false));
        access.push_str(&load_fn(&format!("load_{name}"), &buf, d, native));
        let start = format!("i32(params.operands[{k}].offset)");
        let (rank, shape, strides) = (
            format!("params.operands[{k}].rank"),
            format!("params.operands[{k}].own_shape"),
            format!("params.operands[{k}].own_strides"),
        );
        let walk = Walk {
            name: &format!("{name}_pos"),
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
            "fn {name}_at(i: u32) -> {ct} {{\n    return load_{name}(u32({name}_pos(i)[0]));\n}}\n\
             fn {name}_dim(d: u32) -> u32 {{\n    return params.operands[{k}].own_shape[d / 4u][d % 4u];\n}}\n"
        );
    }
    let out = kernel_type(spec.output.1);
    uses_f16 |= needs_f16(out, native);
    bindings.push_str(&buffer_decl(1 + n as u32, "out_buf", out, native, true));
    access.push_str(&store_out_fn(out, native));
    let starts: Vec<String> = (0..=n)
        .map(|k| format!("i32(params.operands[{k}].offset)"))
        .collect();
    let strides: Vec<String> = (0..=n)
        .map(|k| format!("params.operands[{k}].strides"))
        .collect();
    let walked: Vec<Walked> = starts
        .iter()
        .zip(&strides)
        .map(|(start, strides)| Walked { start, strides })
        .collect();
    access.push_str(
        &Walk {
            name: "positions",
            rank: "params.rank",
            shape: "params.shape",
            operands: &walked,
        }
        .wgsl(),
    );
    let mut scalars = String::new();
    for (k, (name, dtype)) in spec.scalars.iter().enumerate() {
        let bits = format!("params.scalars[{}][{}]", k / 4, k % 4);
        let value = match ScalarType::of(kernel_type(*dtype)) {
            ScalarType::F32 => format!("bitcast<f32>({bits})"),
            ScalarType::I32 => format!("bitcast<i32>({bits})"),
            ScalarType::U32 => bits,
            ScalarType::Bool => format!("{bits} != 0u"),
        };
        let _ = writeln!(scalars, "    let {name} = {value};");
    }
    let params: Vec<String> = spec
        .inputs
        .iter()
        .map(|(name, d)| format!("{name}: {}", ScalarType::of(kernel_type(*d))))
        .collect();
    let args: Vec<String> = (0..n)
        .map(|k| format!("load_{}(u32(pos[{k}]))", spec.inputs[k].0))
        .collect();
    let scalar_words = spec.scalars.len().div_ceil(4).max(1).to_string();
    let operands = (n + 1).to_string();
    let n_text = n.to_string();
    let out_type = ScalarType::of(out).to_string();
    let (params, args) = (params.join(", "), args.join(", "));
    let mut slots = prelude(uses_f16).to_vec();
    // The body goes in last, so that nothing it holds is taken for a slot.
    slots.extend([
        ("SCALAR_WORDS", scalar_words.as_str()),
        ("OPERANDS", operands.as_str()),
        ("BINDINGS", bindings.as_str()),
        ("ACCESS", access.as_str()),
        ("PARAMS", params.as_str()),
        ("OUT_TYPE", out_type.as_str()),
        ("SCALARS", scalars.as_str()),
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
        words.extend([over_out.offset() as u32, own.rank() as u32, 0, 0]);
        strides(&mut words, over_out.strides());
        dims(&mut words, own.dims());
        strides(&mut words, own.strides());
    }
    bytemuck::cast_slice(&words).to_vec()
}

/// Where `message` points into the body, as a line of the body.
fn body_line(message: &str, first: usize, lines: usize) -> Option<usize> {
    message.match_indices("wgsl:").find_map(|(at, _)| {
        let rest = &message[at + 5..];
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        let line: usize = digits.parse().ok()?;
        (line >= first && line < first + lines).then(|| line - first + 1)
    })
}

/// Records `call`, whose output storage is `out`.
///
/// # Errors
/// `Error::Argument` naming the op for WGSL that does not compile (with
/// the body's line where the compiler names one) or more tensors than the
/// device binds; `TooLarge` for more elements than a dispatch covers.
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
    let native = ctx.facts.native_f16;
    let key = CustomKey {
        id: spec.id,
        native_f16: native,
    };
    let (wgsl, first) = source(spec, native)?;
    let lines = spec.body.lines().count().max(1);
    let read_only: SmallVec<[bool; 4]> = (0..bound).map(|k| k < call.inputs.len()).collect();
    let params_size = (48 + 16 * spec.scalars.len().div_ceil(4).max(1) + 112 * bound) as u64;
    ctx.pipelines
        .get(&ctx.device, &key, || {
            Ok(PipelineSpec {
                label: "webtensor custom kernel",
                source: wgsl.clone(),
                entry: "main",
                params_size,
                read_only: read_only.iter().copied().collect(),
            })
        })
        .map_err(|e| {
            let message = e.to_string();
            let at = body_line(&message, first, lines)
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
    let groups = grid_of(numel, WORKGROUP, ctx.facts.max_workgroups_per_dim)?;
    let mut bindings: SmallVec<[Bound; 4]> = SmallVec::new();
    for (input, _) in &call.inputs {
        bindings.push(Bound::new(call.op, input.storage, false)?);
    }
    bindings.push(Bound::new(call.op, call.out.storage, true)?);
    let params = params(call, groups[0] * WORKGROUP);
    debug_assert_eq!(params.len() as u64, params_size);
    record_kernel(
        ctx,
        &key,
        ("webtensor custom kernel", "main", params_size),
        || Ok(wgsl),
        params,
        bindings,
        [groups[0], groups[1], 1],
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

    #[test]
    fn compiler_lines_map_into_the_body() {
        assert_eq!(body_line("error\n  ┌─ wgsl:42:7\n", 40, 5), Some(3));
        assert_eq!(body_line("error at wgsl:12:1", 40, 5), None);
        assert_eq!(body_line("no location", 40, 5), None);
    }
}
