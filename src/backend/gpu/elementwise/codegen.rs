//! WGSL generation for elementwise kernels: `elementwise.wgsl` with its
//! slots filled for one [`KernelKey`] (a program of one or more fused ops).
//! Operands are read and written in the storage modes of
//! `kernel::buffer`; arithmetic runs in the compute types (f32 for f16,
//! u32 for u8, masked on store, which gives wrapping).

#[cfg(test)]
use super::access::MAX_SPAN_STEP;
use super::exprs::program_fn;
use super::params::{offset_vecs, params_size, scalar_vecs};
#[cfg(test)]
use super::program::tileable;
use super::program::{Access, KernelKey};
use super::quads::{spans_source, vec4_source, vec8_source};
use crate::backend::gpu::kernel::buffer::{
    StorageMode, array_type, load_expr, packed, quad_type, storage_mode, store_fn,
};
use crate::backend::gpu::kernel::pipeline::{Pipeline, PipelineCache, PipelineSpec};
use crate::backend::gpu::kernel::prelude::{INT64_WGSL, MATH_WGSL};
use crate::backend::gpu::kernel::strided::{Walk, Walked, numbered_walk};
use crate::backend::gpu::kernel::template::fill;
use crate::backend::gpu::kernel::wgsl_type::ScalarType;
use crate::dtype::KernelType;
use crate::error::{Error, Result};
use std::fmt::Write;
use std::sync::Arc;

pub(crate) const COMMON_WGSL: &str = shader!("elementwise/common.wgsl");
pub(crate) const ELEMENTWISE_WGSL: &str = shader!("elementwise/elementwise.wgsl");
pub(crate) const ELEMENTWISE_TILE_WGSL: &str = shader!("elementwise/elementwise_tile.wgsl");
pub(crate) const ELEMENTWISE_ROWS_WGSL: &str = shader!("elementwise/elementwise_rows.wgsl");

/// Threads per workgroup of the elementwise kernels (but see
/// [`workgroup`]).
pub(crate) const WORKGROUP: u32 = 256;

/// Threads per workgroup of the kernel walking `access`: 64 where threads
/// take runs longer than a GPU's (a software adapter's), so that a
/// dispatch still has a workgroup for each of the CPU's cores.
pub(crate) fn workgroup(access: Access) -> u32 {
    match access {
        Access::Strided { run } | Access::Rows { run } | Access::Contiguous { run } if run > 4 => {
            64
        }
        Access::Spans { quads, .. } if quads > 1 => 64,
        _ => WORKGROUP,
    }
}

/// The complete WGSL source of the kernel selected by `key`.
///
/// # Errors
/// `Error::Internal` when the template's slots and the generated parts
/// disagree.
pub(crate) fn elementwise_source(key: &KernelKey) -> Result<String> {
    let out_storage = storage_mode(key.out(), key.native_f16);
    let out_atomic = packed(out_storage);
    let mut uses_f16 = out_storage == StorageMode::F16;
    let vec4 = matches!(key.access, Access::Vec4 | Access::Spans { .. });
    let vec8 = key.access == Access::Vec8;
    // The vec4 and span accesses bind every buffer as entries of four
    // elements, the
    // vec8 one as 16-byte entries of eight (one thread owns each, so even
    // a packed destination needs no atomics).
    let array = |s: StorageMode, atomic: bool| {
        if vec4 {
            format!("array<{}>", quad_type(s))
        } else if vec8 {
            "array<vec4<u32>>".to_string()
        } else {
            array_type(s, atomic).to_string()
        }
    };
    let mut bindings = format!(
        "@group(0) @binding(1) var<storage, read_write> out_buf: {};\n",
        array(out_storage, out_atomic)
    );
    for (k, &dtype) in key.inputs.iter().enumerate() {
        let s = storage_mode(dtype, key.native_f16);
        uses_f16 |= s == StorageMode::F16;
        let _ = writeln!(
            bindings,
            "@group(0) @binding({}) var<storage, read> in{k}_buf: {};",
            k + 2,
            array(s, false)
        );
    }
    // A copy of native f16 stored element by element (the others run
    // bf16's kernel, see `Program::key`) moves its values as f16, never
    // converted: f16's conversions through f32 quiet a signalling NaN or
    // drop a NaN's payload.
    let moves_f16 = key.moves_native_f16();
    let (ops, program) = if moves_f16 {
        (
            String::new(),
            "fn program(x1: f16) -> f16 {\n    return x1;\n}\n".to_string(),
        )
    } else {
        program_fn(key)
    };
    let uses_i64 = (0..key.nodes.len()).any(|n| key.node_dtype(n) == KernelType::I64)
        || key.operands.iter().any(|o| o.dtype == KernelType::I64);
    let header = format!(
        "{}\nconst OPERANDS: u32 = {}u;\nconst OFFSET_VECS: u32 = {}u;\n\
         const SCALAR_VECS: u32 = {}u;\nconst WORKGROUP: u32 = {}u;\n{}",
        if uses_f16 { "enable f16;" } else { "" },
        key.operands.len(),
        offset_vecs(key.operands.len()),
        scalar_vecs(key.scalars as usize),
        workgroup(key.access),
        if uses_i64 { INT64_WGSL } else { "" },
    );
    let buffer = |k: usize| operand_buffer(key, k);
    let base = Prelude {
        header: &header,
        walk: "",
        bindings: &bindings,
        access: "",
        ops: &ops,
        program: &program,
    };
    if let Access::Spans { quads, steps } = key.access {
        let walk = strided_walk(key.operands.len());
        let prelude = Prelude {
            walk: &walk,
            ..base
        };
        return spans_source(key, &prelude, quads, &steps);
    }
    if vec4 {
        return vec4_source(key, &base);
    }
    if vec8 {
        return vec8_source(key, &base);
    }
    let mut access = if moves_f16 {
        "fn store_out(p: u32, v: f16) {\n    out_buf[p] = v;\n}\n".to_string()
    } else {
        store_fn(key.out(), out_storage)
    };
    for (k, operand) in key.operands.iter().enumerate().skip(1) {
        let s = storage_mode(operand.dtype, key.native_f16);
        let atomic = operand.binding == 1 && out_atomic;
        let (expr, value) = if moves_f16 {
            (format!("{}[p]", buffer(k)), "f16")
        } else {
            let expr = load_expr(operand.dtype, s, &buffer(k), atomic);
            (expr, ScalarType::of(operand.dtype).name())
        };
        let _ = write!(
            access,
            "fn load_op{k}(p: u32) -> {value} {{\n    return {expr};\n}}\n",
        );
    }
    let loads: Vec<String> = (1..key.operands.len())
        .map(|k| format!("load_op{k}(u32(p[{k}]))"))
        .collect();
    if key.access == Access::Tiled {
        return tiled_source(
            key,
            &Prelude {
                access: &access,
                ..base
            },
        );
    }
    if let Access::Rows { run } = key.access {
        let strides: String = (0..key.operands.len())
            .map(|k| format!("    let step{k} = params.strides[{k}][lv][lc] * jump;\n"))
            .collect();
        let steps: String = (0..key.operands.len())
            .map(|k| format!("        p[{k}] += step{k};\n"))
            .collect();
        let walk = strided_walk(key.operands.len());
        let prelude = Prelude {
            walk: &walk,
            access: &access,
            ..base
        };
        return fill(
            "elementwise rows kernel",
            ELEMENTWISE_ROWS_WGSL,
            &[
                ("PRELUDE", &prelude.wgsl()),
                ("RUN", &run.to_string()),
                ("LOADS", &loads.join(", ")),
                ("STRIDES", strides.trim_end_matches('\n')),
                ("STEP", steps.trim_end_matches('\n')),
            ],
        );
    }
    let (positions, walk, next, run) = match key.access {
        Access::Contiguous { run } => (
            "contiguous_positions",
            String::new(),
            (0..key.operands.len())
                .map(|k| format!("        p[{k}] += threads;"))
                .collect::<Vec<_>>()
                .join("\n"),
            run,
        ),
        Access::Strided { run } => (
            "strided_positions",
            strided_walk(key.operands.len()),
            "        p = strided_positions(i + threads);".to_string(),
            run,
        ),
        other => {
            return Err(Error::internal(
                "elementwise kernel",
                format!("no template walks {other:?}"),
            ));
        }
    };
    let prelude = Prelude {
        walk: &walk,
        access: &access,
        ..base
    };
    fill(
        "elementwise kernel",
        ELEMENTWISE_WGSL,
        &[
            ("PRELUDE", &prelude.wgsl()),
            ("RUN", &run.to_string()),
            ("POSITIONS", positions),
            ("LOADS", &loads.join(", ")),
            ("NEXT", &next),
        ],
    )
}

/// What every elementwise template declares before its entry point, in
/// this order, as its `{{PRELUDE}}` slot.
#[derive(Clone, Copy)]
pub(super) struct Prelude<'a> {
    /// `enable f16;` where needed, and the kernel's constants.
    header: &'a str,
    /// The walk from an element to its operands' positions, if any.
    walk: &'a str,
    bindings: &'a str,
    /// `load_opK` / `store_out`, where the template calls them.
    access: &'a str,
    ops: &'a str,
    program: &'a str,
}

impl Prelude<'_> {
    /// The prelude with the parameter block (`common.wgsl`) and the math
    /// functions between its parts.
    pub(super) fn wgsl(&self) -> String {
        [
            self.header,
            COMMON_WGSL,
            self.walk,
            MATH_WGSL,
            self.bindings,
            self.access,
            self.ops,
            self.program,
        ]
        .join("\n")
    }
}

/// The buffer operand `k` of `key` is read from: the destination's, or
/// its input binding's.
pub(super) fn operand_buffer(key: &KernelKey, k: usize) -> String {
    match key.operands[k].binding {
        1 => "out_buf".to_string(),
        b => format!("in{}_buf", b - 2),
    }
}

/// The tiled kernel of a one-input `key` (see [`Access::Tiled`]).
///
/// # Errors
/// As [`elementwise_source`]; `Error::Internal` for a key with more than
/// one input or a bool result (workgroup tiles hold 32-bit values).
fn tiled_source(key: &KernelKey, prelude: &Prelude) -> Result<String> {
    let result = ScalarType::of(key.out());
    // A native f16 copy's tile holds f16 values, moved as they are.
    let tile_type = if key.moves_native_f16() {
        "f16"
    } else {
        result.name()
    };
    if key.operands.len() != 2 || result == ScalarType::Bool {
        return Err(Error::internal(
            "elementwise tiled kernel",
            "one input and a 32-bit result only",
        ));
    }
    let walk = Walk {
        name: "batch_positions",
        rank: "(params.rank - 2u)",
        shape: "params.shape",
        operands: &[
            Walked {
                start: "i32(operand_offset(0u))",
                strides: "params.strides[0]",
            },
            Walked {
                start: "i32(operand_offset(1u))",
                strides: "params.strides[1]",
            },
        ],
    }
    .wgsl();
    fill(
        "elementwise tiled kernel",
        ELEMENTWISE_TILE_WGSL,
        &[
            (
                "PRELUDE",
                &Prelude {
                    walk: &walk,
                    ..*prelude
                }
                .wgsl(),
            ),
            ("RESULT", tile_type),
        ],
    )
}

/// `strided_positions(i)`: the storage position of row-major element `i`
/// in each of the `operands` operands.
fn strided_walk(operands: usize) -> String {
    numbered_walk(
        "strided_positions",
        ["params.rank", "params.shape"],
        operands,
        |k| format!("i32(operand_offset({k}u))"),
        |k| format!("params.strides[{k}]"),
    )
}

/// The elementwise pipeline for `key`, from `cache` or built into it.
///
/// # Errors
/// As [`PipelineCache::get`]; [`elementwise_source`]'s errors.
pub(crate) fn elementwise_pipeline(
    cache: &PipelineCache,
    device: &wgpu::Device,
    key: &KernelKey,
) -> Result<Arc<Pipeline>> {
    cache.get(device, key, || {
        Ok(PipelineSpec {
            label: "webtensor elementwise",
            source: elementwise_source(key)?,
            entry: "main",
            params_size: params_size(key.operands.len(), key.scalars as usize),
            read_only: std::iter::once(false)
                .chain(key.inputs.iter().map(|_| true))
                .collect(),
            trusted: true,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::super::params::{MAX_OPERANDS, MAX_SCALARS};
    use super::super::program::{MAX_NODES, Node, Operand};
    use super::*;
    use crate::backend::gpu::kernel::buffer::tests::GPU_DTYPES;
    use crate::backend::gpu::kernel::prelude::tests::validate;
    use crate::dtype::KernelType;
    use crate::op::ElementwiseOp;
    use crate::op::{BinaryOp, CompareOp, UnaryOp};
    use smallvec::{SmallVec, smallvec};

    /// Where a test kernel's input comes from.
    #[derive(Clone, Copy)]
    enum Src {
        Binding,
        Out,
        Scalar,
    }

    /// The key of one op reading `inputs`, as the scheduler builds it.
    fn single(
        kernel: ElementwiseOp,
        out: KernelType,
        inputs: &[(KernelType, Src)],
        native_f16: bool,
        access: Access,
    ) -> KernelKey {
        let mut key = KernelKey {
            nodes: SmallVec::new(),
            operands: smallvec![Operand {
                dtype: out,
                binding: 1
            }],
            inputs: SmallVec::new(),
            scalars: 0,
            native_f16,
            access,
        };
        let mut args = SmallVec::new();
        for &(dtype, src) in inputs {
            args.push(key.nodes.len() as u8);
            let node = match src {
                Src::Scalar => {
                    key.scalars += 1;
                    Node::Scalar {
                        slot: key.scalars - 1,
                        dtype,
                    }
                }
                Src::Out | Src::Binding => {
                    let binding = if matches!(src, Src::Out) {
                        1
                    } else {
                        key.inputs.push(dtype);
                        key.inputs.len() as u8 + 1
                    };
                    key.operands.push(Operand { dtype, binding });
                    Node::Load(key.operands.len() as u8 - 1)
                }
            };
            key.nodes.push(node);
        }
        key.nodes.push(Node::Apply {
            kernel,
            dtype: out,
            args,
        });
        key
    }

    #[test]
    fn the_elementwise_block_matches_the_wgsl_struct() {
        use super::super::params::{field_offsets, params_size};
        use crate::backend::gpu::kernel::params_block::tests::assert_layout;
        for (operands, scalars) in [(1, 0), (4, 1), (5, 5), (8, 8)] {
            let source = format!(
                "const OPERANDS: u32 = {operands}u;\nconst OFFSET_VECS: u32 = {}u;\n\
                 const SCALAR_VECS: u32 = {}u;\n{COMMON_WGSL}",
                offset_vecs(operands),
                scalar_vecs(scalars)
            );
            assert_layout(
                &source,
                &field_offsets(operands),
                params_size(operands, scalars),
                &format!("elementwise, {operands} operands, {scalars} scalars"),
            );
        }
    }

    #[test]
    fn standalone_shader_files_validate() {
        let consts = "const OPERANDS: u32 = 4u;\nconst OFFSET_VECS: u32 = 1u;\nconst SCALAR_VECS: u32 = 1u;\n";
        validate(&format!("{consts}{COMMON_WGSL}"), "common.wgsl");
        validate(&format!("{consts}{COMMON_WGSL}\n{MATH_WGSL}"), "math.wgsl");
    }

    /// Every single-op kernel the library can generate, for every dtype,
    /// storage mode and contiguity, parses and validates with naga.
    #[test]
    fn every_generated_kernel_validates() {
        let mut keys = Vec::new();
        // i64 too: the elementwise family computes on it (int64.wgsl).
        let dtypes: Vec<KernelType> = GPU_DTYPES.into_iter().chain([KernelType::I64]).collect();
        for native_f16 in [true, false] {
            for access in [
                Access::Contiguous { run: 32 },
                Access::Strided { run: 4 },
                Access::Rows { run: 1 },
                Access::Rows { run: 16 },
            ] {
                let key = |kernel, out, inputs: &[(KernelType, Src)]| {
                    single(kernel, out, inputs, native_f16, access)
                };
                for &d in &dtypes {
                    keys.push(key(ElementwiseOp::Fill, d, &[(d, Src::Scalar)]));
                    keys.push(key(
                        ElementwiseOp::Where,
                        d,
                        &[
                            (KernelType::Bool, Src::Binding),
                            (d, Src::Out),
                            (d, Src::Binding),
                        ],
                    ));
                    for &from in &dtypes {
                        keys.push(key(ElementwiseOp::Cast, d, &[(from, Src::Binding)]));
                    }
                    for op in UnaryOp::ALL {
                        if op.check(d.dtype()).is_ok() {
                            keys.push(key(ElementwiseOp::Unary(op), d, &[(d, Src::Out)]));
                        }
                    }
                    for op in BinaryOp::ALL {
                        if op.check(d.dtype()).is_ok() {
                            keys.push(key(
                                ElementwiseOp::Binary(op),
                                d,
                                &[(d, Src::Binding), (d, Src::Scalar)],
                            ));
                        }
                    }
                    for op in CompareOp::ALL {
                        keys.push(key(
                            ElementwiseOp::Compare(op),
                            KernelType::Bool,
                            &[(d, Src::Binding), (d, Src::Binding)],
                        ));
                    }
                }
            }
        }
        let (mut vec4, mut vec8, mut tiled, mut spans) = (0, 0, 0, 0);
        for key in &keys {
            validate(&elementwise_source(key).unwrap(), &format!("{key:?}"));
            // And four elements per thread (every storage mode but i64's
            // allows it).
            let i64s = key.operands.iter().any(|o| o.dtype == KernelType::I64);
            if matches!(key.access, Access::Contiguous { .. }) && !i64s {
                let key = KernelKey {
                    access: Access::Vec4,
                    ..key.clone()
                };
                validate(&elementwise_source(&key).unwrap(), &format!("{key:?}"));
                vec4 += 1;
            }
            // And eight where every operand is 16-bit.
            let sixteen = key
                .operands
                .iter()
                .all(|o| matches!(o.dtype, KernelType::F16 | KernelType::BF16));
            if matches!(key.access, Access::Contiguous { .. }) && sixteen {
                let key = KernelKey {
                    access: Access::Vec8,
                    ..key.clone()
                };
                validate(&elementwise_source(&key).unwrap(), &format!("{key:?}"));
                vec8 += 1;
            }
            // And along rows in whole entries, the inputs' steps turning
            // through 0 to 4 from key to key (one read from the
            // destination's binding steps as it does, by 1).
            if key.access == (Access::Rows { run: 16 }) && !i64s {
                let mut steps = [1; MAX_OPERANDS];
                for (k, o) in key.operands.iter().enumerate().skip(1) {
                    if o.binding != 1 {
                        steps[k] = ((k + spans) % (usize::from(MAX_SPAN_STEP) + 1)) as u8;
                    }
                }
                let key = KernelKey {
                    access: Access::Spans { quads: 4, steps },
                    ..key.clone()
                };
                validate(&elementwise_source(&key).unwrap(), &format!("{key:?}"));
                spans += 1;
            }
            // And through workgroup tiles, where the program allows it.
            if matches!(key.access, Access::Strided { .. }) && tileable(&key.operands) {
                let key = KernelKey {
                    access: Access::Tiled,
                    ..key.clone()
                };
                validate(&elementwise_source(&key).unwrap(), &format!("{key:?}"));
                tiled += 1;
            }
        }
        assert!(vec4 > 100, "{vec4} vec4 kernels");
        assert!(vec8 > 20, "{vec8} vec8 kernels");
        assert!(tiled > 50, "{tiled} tiled kernels");
        assert!(spans > 100, "{spans} span kernels");
        assert!(keys.len() > 500, "{} kernels", keys.len());
    }

    /// A fused program: ((a * 2 + b).exp() - c).relu() with rounding of the
    /// intermediates, in every float storage mode, validates; and so does a
    /// program with the most operands and scalar slots.
    #[test]
    fn fused_programs_validate() {
        for (dtype, native_f16) in [
            (KernelType::F32, true),
            (KernelType::F16, true),
            (KernelType::F16, false),
            (KernelType::BF16, true),
        ] {
            let operand = |binding| Operand { dtype, binding };
            let apply = |op, args: &[u8]| Node::Apply {
                kernel: ElementwiseOp::Binary(op),
                dtype,
                args: args.iter().copied().collect(),
            };
            let key = KernelKey {
                nodes: smallvec![
                    Node::Load(1),
                    Node::Scalar { slot: 0, dtype },
                    apply(BinaryOp::Mul, &[0, 1]),
                    Node::Round { arg: 2, dtype },
                    Node::Load(2),
                    apply(BinaryOp::Add, &[3, 4]),
                    Node::Round { arg: 5, dtype },
                    Node::Apply {
                        kernel: ElementwiseOp::Unary(UnaryOp::Exp),
                        dtype,
                        args: smallvec![6]
                    },
                    Node::Load(3),
                    apply(BinaryOp::Sub, &[7, 8]),
                    Node::Apply {
                        kernel: ElementwiseOp::Unary(UnaryOp::Relu),
                        dtype,
                        args: smallvec![9]
                    },
                ],
                operands: smallvec![operand(1), operand(2), operand(3), operand(4)],
                inputs: smallvec![dtype, dtype, dtype],
                scalars: 1,
                native_f16,
                access: Access::Strided { run: 16 },
            };
            validate(&elementwise_source(&key).unwrap(), &format!("{key:?}"));
        }
        let mut wide = single(
            ElementwiseOp::Binary(BinaryOp::Add),
            KernelType::U8,
            &[
                (KernelType::U8, Src::Binding),
                (KernelType::U8, Src::Scalar),
            ],
            false,
            Access::Contiguous { run: 4 },
        );
        let add = |args: [u8; 2]| Node::Apply {
            kernel: ElementwiseOp::Binary(BinaryOp::Add),
            dtype: KernelType::U8,
            args: args.into_iter().collect(),
        };
        for k in 0..6u8 {
            let prev = wide.nodes.len() as u8 - 1;
            wide.inputs.push(KernelType::U8);
            wide.operands.push(Operand {
                dtype: KernelType::U8,
                binding: 3 + k,
            });
            wide.nodes.push(Node::Load(2 + k));
            wide.nodes.push(Node::Scalar {
                slot: 1 + k,
                dtype: KernelType::U8,
            });
            wide.nodes.push(add([prev + 1, prev + 2]));
            wide.nodes.push(Node::Round {
                arg: prev + 3,
                dtype: KernelType::U8,
            });
            wide.nodes.push(add([prev, prev + 4]));
        }
        assert_eq!(wide.operands.len(), 8);
        validate(
            &elementwise_source(&wide).unwrap(),
            "eight operands, seven scalars",
        );
        // Then every scalar slot, and nodes up to the limit.
        let mut slot = 7;
        while wide.nodes.len() + 2 <= MAX_NODES {
            let prev = wide.nodes.len() as u8 - 1;
            wide.nodes.push(Node::Scalar {
                slot: slot.min(MAX_SCALARS as u8 - 1),
                dtype: KernelType::U8,
            });
            wide.nodes.push(add([prev, prev + 1]));
            slot += 1;
        }
        wide.scalars = MAX_SCALARS as u8;
        validate(
            &elementwise_source(&wide).unwrap(),
            "eight operands, every scalar slot and node",
        );
    }
}
