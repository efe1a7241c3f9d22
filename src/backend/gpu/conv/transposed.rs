//! The transposed convolution kernel: `conv_transpose.wgsl` runs the
//! matmul family's register-tiled kernel (`matmul/tiling.rs`), or its
//! cooperative-matrix kernel (`matmul/cooperative.rs`) where the device
//! runs products of the dtype on them, over each
//! output phase's stride-1 convolution (its taps only), a workgroup per
//! phase of an image and group, reading the weight and the input through
//! their strides and writing the output where it lies: one dispatch where
//! the composed form took a zeroed output, a product and an add per tap
//! and group, and a crop.

use super::kernel::{ConvTile, checked_grid, gemm_source};
use crate::backend::ConvCall;
use crate::backend::gpu::adapter_facts::AdapterFacts;
use crate::backend::gpu::command::Bound;
use crate::backend::gpu::kernel::params_block::params_block;
use crate::backend::gpu::matmul::tiling::{BSource, Loads, Tiling};
use crate::backend::gpu::matmul::{CoopB, CoopTiling, record_sliced};
use crate::backend::gpu::matmul_tile_choice::MatmulTile;
use crate::backend::gpu::record::family_key;
use crate::backend::gpu::storage::GpuStorage;
use crate::dtype::KernelType;
use crate::error::Result;

const CONV_TRANSPOSE_WGSL: &str = shader!("conv/conv_transpose.wgsl");

params_block! {
    /// `Params` of conv_transpose.wgsl: the names the tiled kernel reads,
    /// then the geometry.
    pub(crate) struct TransposedParams {
        /// Output channels per group, and the end of this dispatch's slice
        /// of k (in channels per group x a phase's taps).
        m: u32,
        k: u32,
        k_start: u32,
        batch_start: u32,
        a_k_fast: u32,
        b_n_fast: u32,
        /// 1 when the output already holds the product over k < k_start.
        accumulate: u32,
        groups: u32,
        /// Phases (stride_h stride_w), and input channels per group.
        phases: u32,
        group_channels: u32,
        a_offset: u32,
        b_offset: u32,
        c_offset: u32,
        /// The weight's strides: input channel, output channel, row, column.
        w_cs: i32,
        w_os: i32,
        w_hs: i32,
        w_ws: i32,
        /// The input's strides: image, channel, row, column.
        x_batch: i32,
        x_cs: i32,
        x_hs: i32,
        x_ws: i32,
        /// The output's strides: image, channel, row, column.
        c_batch: i32,
        c_cs: i32,
        c_hs: i32,
        c_ws: i32,
        kh: u32,
        kw: u32,
        stride_h: u32,
        stride_w: u32,
        dil_h: u32,
        dil_w: u32,
        pad_h: u32,
        pad_w: u32,
        /// Per axis: the step between the taps of a phase (stride / gcd),
        /// and the input rows between them (dilation / gcd).
        step_h: u32,
        step_w: u32,
        e_h: u32,
        e_w: u32,
        /// The output's height and width, and the input's.
        out_h: u32,
        out_w: u32,
        height: u32,
        width: u32,
        pad1: u32,
        pad2: u32,
        pad3: u32,
    }
}

/// Everything that selects a distinct transposed-convolution pipeline.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct TransposedKey {
    /// f32, f16 or bf16.
    pub dtype: KernelType,
    pub native_f16: bool,
    pub tiling: ConvTile,
    /// Testing only: every output is one too large (see
    /// `GpuOptions::sabotage_matmul`).
    pub sabotaged: bool,
}

family_key!(TransposedKey, "webtensor conv_transpose", transposed_source);

/// The WGSL source of the transposed convolution kernel for `key`.
///
/// # Errors
/// `Error::Internal` when the template's slots and the generated parts
/// disagree.
pub(crate) fn transposed_source(key: &TransposedKey) -> Result<String> {
    let what = (key.dtype, key.native_f16, key.tiling, key.sabotaged);
    let template = ("conv_transpose kernel", CONV_TRANSPOSE_WGSL);
    gemm_source(
        template,
        &TransposedParams::wgsl(),
        what,
        BSource::Phases,
        &[],
    )
}

/// A transposed convolution's phases along one axis, from its stride `s`,
/// dilation `d` and kernel taps `k`: (the step between a phase's taps, the
/// input rows between them, the most taps a phase has).
fn phase_steps(s: usize, d: usize, k: usize) -> (usize, usize, usize) {
    let g = gcd(s, d);
    (s / g, d / g, k.div_ceil(s / g))
}

fn gcd(mut a: usize, mut b: usize) -> usize {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// The extents of `call`'s product: (output channels per group, the most
/// pixels a phase has, the most patch rows a phase has, batches).
fn extents(call: &ConvCall) -> [usize; 4] {
    let (x, o) = (call.input.layout.dims(), call.out.layout.dims());
    let (s, d, k) = (call.stride, call.dilation, call.kernel);
    let taps = [0, 1].map(|a| phase_steps(s[a], d[a], k[a]).2);
    let pixels = o[2].div_ceil(s[0]) * o[3].div_ceil(s[1]);
    let cg = x[1] / call.groups;
    [
        o[1] / call.groups,
        pixels,
        cg * taps[0] * taps[1],
        x[0] * call.groups * s[0] * s[1],
    ]
}

/// The kernel `call` runs on `facts`' device: cooperative matrices where
/// the device runs products of its dtype on them (as the convolution's),
/// else the matmul's choice of tile for its extents.
pub(super) fn tiling_for(call: &ConvCall, facts: &AdapterFacts) -> ConvTile {
    let scalar = [Loads::Scalar; 2];
    if let Some(tiling) = CoopTiling::on_device(facts, call.out.dtype, scalar, [false; 2]) {
        return ConvTile::Cooperative(tiling.with_b(CoopB::Phases));
    }
    let [m, n, _, batches] = extents(call);
    ConvTile::Registers(Tiling::choose(MatmulTile::Auto, m, n, batches))
}

/// The workgroups along x (a phase's pixels) and y (output channels) of
/// `call` on `tiling`.
fn grid(call: &ConvCall, tiling: ConvTile) -> [usize; 2] {
    let [m, n, _, _] = extents(call);
    let [bm, bn] = tiling.block();
    [n.div_ceil(bn as usize), m.div_ceil(bm as usize)]
}

/// True when `call`'s tiles fit a grid of `max` workgroups per dimension
/// (a phase of more pixels than that many tiles is composed instead).
pub(super) fn grid_fits(call: &ConvCall, tiling: ConvTile, max: u32) -> bool {
    grid(call, tiling).iter().all(|&g| g <= max as usize)
}

/// Records `call` (a transposed convolution: the weight `[in, out /
/// groups, kh, kw]`, `pad` cropped from each side of the whole output),
/// whose output storage is `out`, on the kernel of `tiling`.
///
/// # Errors
/// `Error::Gpu` when an operand is not on this GPU; `TooLarge` for more
/// output tiles per axis than the device has workgroups per dimension, or
/// an operand over one storage binding.
pub(super) fn record(out: &GpuStorage, call: &ConvCall, tiling: ConvTile) -> Result<()> {
    const OP: &str = "conv_transpose2d";
    let ctx = &out.ctx;
    let (weight_bound, weight) = Bound::view(OP, call.weight.clone(), false)?;
    let (input_bound, input) = Bound::view(OP, call.input.clone(), false)?;
    let (out_bound, dest) = Bound::view(OP, call.out.clone(), true)?;
    let (x, xs) = (input.layout.dims(), input.layout.strides());
    let (ws, os) = (weight.layout.strides(), dest.layout.strides());
    let o = dest.layout.dims();
    let [m, n, k, batches] = extents(call);
    if batches == 0 || m == 0 || n == 0 {
        return Ok(());
    }
    let grid = checked_grid(OP, ctx.facts.max_workgroups_per_dim, grid(call, tiling))?;
    let key = TransposedKey {
        dtype: call.out.dtype,
        native_f16: ctx.facts.native_f16,
        tiling,
        sabotaged: ctx.tuner.sabotaged() == Some(tiling.tile()),
    };
    let (s, d) = (call.stride, call.dilation);
    let steps = [0, 1].map(|a| phase_steps(s[a], d[a], call.kernel[a]));
    // Consecutive threads along the weight's smaller stride: its taps
    // (row-major) or its output channels (channels innermost).
    let a_k_fast = ws[3].unsigned_abs() <= ws[1].unsigned_abs();
    let block = TransposedParams {
        m: m as u32,
        a_k_fast: u32::from(a_k_fast),
        b_n_fast: 1,
        groups: call.groups as u32,
        phases: (s[0] * s[1]) as u32,
        group_channels: (x[1] / call.groups) as u32,
        a_offset: weight.layout.offset() as u32,
        b_offset: input.layout.offset() as u32,
        c_offset: dest.layout.offset() as u32,
        w_cs: ws[0] as i32,
        w_os: ws[1] as i32,
        w_hs: ws[2] as i32,
        w_ws: ws[3] as i32,
        x_batch: xs[0] as i32,
        x_cs: xs[1] as i32,
        x_hs: xs[2] as i32,
        x_ws: xs[3] as i32,
        c_batch: os[0] as i32,
        c_cs: os[1] as i32,
        c_hs: os[2] as i32,
        c_ws: os[3] as i32,
        kh: call.kernel[0] as u32,
        kw: call.kernel[1] as u32,
        stride_h: s[0] as u32,
        stride_w: s[1] as u32,
        dil_h: d[0] as u32,
        dil_w: d[1] as u32,
        pad_h: call.pad[0] as u32,
        pad_w: call.pad[1] as u32,
        step_h: steps[0].0 as u32,
        step_w: steps[1].0 as u32,
        e_h: steps[0].1 as u32,
        e_w: steps[1].1 as u32,
        out_h: o[2] as u32,
        out_w: o[3] as u32,
        height: x[2] as u32,
        width: x[3] as u32,
        ..bytemuck::Zeroable::zeroed()
    };
    let bound = [&weight_bound, &input_bound, &out_bound];
    record_sliced(ctx, &key, bound, grid, [batches, k], |ks, batch_start| {
        TransposedParams {
            k: ks.end as u32,
            k_start: ks.start as u32,
            accumulate: u32::from(ks.start > 0),
            batch_start: batch_start as u32,
            ..block
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::gpu::kernel::params_block::tests::assert_layout;
    use crate::backend::gpu::kernel::prelude::tests::{FLOAT_STORAGES, validate};
    use crate::backend::gpu::matmul::tiling::ALL;
    use crate::dtype::KernelType;

    #[test]
    fn every_transposed_kernel_is_valid_wgsl_and_matches_its_params() {
        for (dtype, native_f16) in FLOAT_STORAGES {
            let mut tilings: Vec<ConvTile> = ALL.into_iter().map(ConvTile::Registers).collect();
            // The cooperative kernel of each fragment and subgroup size
            // it takes (f16 native only, as the device has it): the taps'
            // staging checks its k offsets step evenly as it writes them.
            if native_f16 && matches!(dtype, KernelType::F16 | KernelType::F32) {
                for fragment in [8, 16] {
                    for lanes in [8, 16, 32, 64] {
                        let tiling =
                            CoopTiling::new(fragment, lanes, [Loads::Scalar; 2], [false; 2]);
                        tilings
                            .extend(tiling.map(|t| ConvTile::Cooperative(t.with_b(CoopB::Phases))));
                    }
                }
            }
            for tiling in tilings {
                let key = TransposedKey {
                    dtype,
                    native_f16,
                    tiling,
                    sabotaged: false,
                };
                let source = transposed_source(&key).unwrap();
                validate(&source, &format!("{key:?}"));
                assert_layout(
                    &source,
                    TransposedParams::FIELDS,
                    TransposedParams::SIZE,
                    "conv_transpose",
                );
                // Both operands are read through their taps, advanced by
                // additions in the loop, which runs to the phase's k.
                let product = &source[source.find("for (var k0").unwrap()..];
                for call in ["tap_of(", "pixel_of(", "a_at(", "b_at("] {
                    assert!(!product.contains(call), "{tiling:?}: {call}");
                }
                let advanced: &[&str] = match tiling {
                    ConvTile::Registers(_) => &[
                        "ta0 = advance(ta0, b_step);",
                        "tp0 = advance(tp0, b_step);",
                        "k0 < k_end;",
                    ],
                    ConvTile::Cooperative(_) => &[
                        "atp = advance(atp, a_step);",
                        "btp = advance(btp, b_step);",
                        "k0 < k_end;",
                        "let k_end = slice_end(",
                    ],
                };
                for advanced in advanced {
                    assert!(source.contains(advanced), "{tiling:?}: {advanced}");
                }
            }
        }
    }

    #[test]
    fn a_phase_steps_over_the_taps_that_divide_exactly() {
        // Stride 2, dilation 1: every other tap, at most 2 of a 3x3's.
        assert_eq!(phase_steps(2, 1, 3), (2, 1, 2));
        // Stride 2, dilation 2: every tap lands on the same phase.
        assert_eq!(phase_steps(2, 2, 3), (1, 1, 3));
        // Stride 4, dilation 6: gcd 2, every second tap, 3 rows apart.
        assert_eq!(phase_steps(4, 6, 5), (2, 3, 3));
        // Stride 1: one phase, every tap.
        assert_eq!(phase_steps(1, 3, 4), (1, 3, 4));
        assert_eq!(gcd(12, 18), 6);
    }
}
