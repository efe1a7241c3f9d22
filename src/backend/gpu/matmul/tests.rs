//! The matmul kernels' sources: parameter layouts, every kernel valid WGSL,
//! the cooperative ones through naga's SPIR-V writer.

use super::*;
use crate::backend::gpu::kernel::params_block::tests::assert_layout;
use crate::backend::gpu::kernel::prelude::tests::validate;

#[test]
fn params_match_the_wgsl_struct() {
    let key = MatmulKey {
        dtype: KernelType::F16,
        out: KernelType::F16,
        native_f16: false,
        kernel: MatmulKernel::Tiled(tiling::LARGE, [Loads::Scalar; 2]),
        sabotaged: false,
    };
    let source = matmul_source(&key).unwrap();
    assert_layout(&source, MatmulParams::FIELDS, MatmulParams::SIZE, "matmul");
}

/// Every cooperative kernel a device may run: both fragment sides,
/// every subgroup size, both stagings of each operand.
fn cooperative_kernels() -> Vec<CoopTiling> {
    let mut all = Vec::new();
    // Each operand's loads, and its staging order where they are
    // scalar.
    let orders = [
        (Loads::Scalar, false),
        (Loads::Scalar, true),
        (Loads::VecCols, false),
        (Loads::VecRows, true),
    ];
    for fragment in [8, 16] {
        for lanes in [8, 16, 32, 64] {
            for (a, a_rows) in orders {
                for (b, b_rows) in orders {
                    let tiling = CoopTiling::new(fragment, lanes, [a, b], [a_rows, b_rows]);
                    all.extend(tiling);
                }
            }
        }
    }
    // Four subgroup sizes on 8 x 8 fragments, two on 16 x 16.
    assert_eq!(all.len(), 6 * 16);
    all
}

/// The cooperative kernels are validated with the other kernels; no
/// adapter of CI has cooperative matrices, so they also go through
/// naga's SPIR-V writer here, as wgpu's Vulkan backend will take them.
#[cfg(not(target_arch = "wasm32"))]
#[test]
fn the_cooperative_kernels_translate_to_spirv() {
    // f16 products into f16, and into f32 (a long k's partial sums).
    let types = [
        (KernelType::F16, KernelType::F16),
        (KernelType::F16, KernelType::F32),
        (KernelType::F32, KernelType::F32),
    ];
    for ((dtype, out), tiling) in types
        .into_iter()
        .flat_map(|d| cooperative_kernels().into_iter().map(move |t| (d, t)))
    {
        let key = MatmulKey {
            dtype,
            out,
            native_f16: true,
            kernel: MatmulKernel::Cooperative(tiling),
            sabotaged: false,
        };
        let source = matmul_source(&key).unwrap();
        let what = format!("{dtype} into {out} {tiling:?}");
        crate::backend::gpu::kernel::prelude::tests::translate_to_spirv(&source, &what);
        // The subgroup's quarter indexes workgroup arrays: its id is
        // clamped before any use.
        assert_eq!(source.matches("sg_id").count(), 2, "{what}");
        assert!(source.contains("let sg = min(sg_id, 3u);"), "{what}");
    }
}

#[test]
fn every_matmul_kernel_is_valid_wgsl() {
    for dtype in [
        KernelType::F32,
        KernelType::F16,
        KernelType::BF16,
        KernelType::I32,
        KernelType::U32,
    ] {
        for native_f16 in [true, false] {
            let all = [Loads::Scalar, Loads::VecCols, Loads::VecRows];
            let vec = vec4_access(storage_mode(dtype, native_f16));
            let mut kernels = vec![MatmulKernel::Gemv, MatmulKernel::PerOutput];
            for b in all {
                if vec || b == Loads::Scalar {
                    kernels.push(MatmulKernel::Subgroup(b));
                }
            }
            for tiling in tiling::ALL {
                for a in all {
                    for b in all {
                        if vec || (a == Loads::Scalar && b == Loads::Scalar) {
                            kernels.push(MatmulKernel::Tiled(tiling, [a, b]));
                        }
                    }
                }
            }
            // Cooperative matrices need native f16 (their fragments are
            // f16), for f16 and fast f32 products.
            // Each layout on the smallest subgroups of each fragment
            // (the SPIR-V test validates every subgroup size).
            if native_f16 && matches!(dtype, KernelType::F16 | KernelType::F32) {
                kernels.extend(
                    cooperative_kernels()
                        .into_iter()
                        .filter(|t| t.lanes * 8 == t.fragment * t.fragment)
                        .map(MatmulKernel::Cooperative),
                );
            }
            // A half product over a long k may keep its partial sums
            // in f32.
            let outs = match dtype {
                KernelType::F16 | KernelType::BF16 => vec![dtype, KernelType::F32],
                _ => vec![dtype],
            };
            for (kernel, out) in kernels
                .into_iter()
                .flat_map(|k| outs.iter().map(move |&o| (k, o)))
            {
                let key = MatmulKey {
                    dtype,
                    out,
                    native_f16,
                    kernel,
                    sabotaged: false,
                };
                let source = matmul_source(&key).unwrap();
                validate(&source, &format!("{key:?}"));
                // The self-check's tests run a kernel made wrong.
                let wrong = MatmulKey {
                    sabotaged: true,
                    ..key
                };
                let wrong = matmul_source(&wrong).unwrap();
                assert_ne!(wrong, source);
                validate(&wrong, &format!("{key:?}, sabotaged"));
            }
            // Packed f16 has no vec4 loads.
            if !vec {
                let key = MatmulKey {
                    dtype,
                    out: dtype,
                    native_f16,
                    kernel: MatmulKernel::Tiled(tiling::SMALL, [Loads::VecCols, Loads::Scalar]),
                    sabotaged: false,
                };
                assert!(matmul_source(&key).is_err());
            }
        }
    }
}
