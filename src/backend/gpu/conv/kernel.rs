//! The convolution kernel: `conv.wgsl` runs the matmul family's
//! register-tiled kernel (`matmul/tiling.rs`), or its cooperative-matrix
//! kernel (`matmul/cooperative.rs`) where the device runs f16 products
//! on them, with a `b` operand that reads each patch element from the
//! input where it lies (strided, padding implied), one batch per image and
//! group; the output is written in NCHW order directly.

use crate::backend::ConvCall;
use crate::backend::gpu::adapter_facts::AdapterFacts;
use crate::backend::gpu::command::Bound;
use crate::backend::gpu::kernel::buffer::{io_parts, load_out_fn, needs_f16};
use crate::backend::gpu::kernel::params_block::params_block;
use crate::backend::gpu::kernel::prelude::fill_kernel;
use crate::backend::gpu::kernel::wgsl_type::ScalarType;
use crate::backend::gpu::matmul::tiling::{BSource, Loads, Tiling, tile_of};
use crate::backend::gpu::matmul::{CoopB, CoopTiling, PUT_WGSL, record_sliced};
use crate::backend::gpu::matmul_tile_choice::MatmulTile;
use crate::backend::gpu::record::family_key;
use crate::backend::gpu::storage::GpuStorage;
use crate::dtype::KernelType;
use crate::error::{Error, Result};

const CONV_WGSL: &str = shader!("conv/conv.wgsl");

params_block! {
    /// `Params` of conv.wgsl: the names the tiled kernel reads (as
    /// matmul.wgsl's), then the convolution's geometry.
    pub(crate) struct ConvParams {
        /// Output channels per group, output pixels, and the end of this
        /// dispatch's slice of k (in channels per group x taps).
        m: u32,
        n: u32,
        k: u32,
        k_start: u32,
        batch_start: u32,
        a_rs: i32,
        a_cs: i32,
        a_k_fast: u32,
        b_n_fast: u32,
        c_rs: i32,
        c_cs: i32,
        /// 1 when the output already holds the product over k < k_start.
        accumulate: u32,
        groups: u32,
        a_offset: u32,
        b_offset: u32,
        c_offset: u32,
        /// Output elements per image; input channels per group.
        c_image: u32,
        group_channels: u32,
        /// The input's strides: image, channel, row, column.
        x_batch: i32,
        x_cs: i32,
        x_hs: i32,
        x_ws: i32,
        /// Taps per channel (kh kw), kh, kw, and the output's width.
        taps: u32,
        kh: u32,
        kw: u32,
        out_w: u32,
        stride_h: u32,
        stride_w: u32,
        dil_h: u32,
        dil_w: u32,
        pad_h: u32,
        pad_w: u32,
        /// The input's height and width.
        height: u32,
        width: u32,
        pad1: u32,
        pad2: u32,
    }
}

/// The kernel a convolution runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum ConvTile {
    /// The matmul's register tile.
    Registers(Tiling),
    /// Cooperative matrices, the patches staged as their `b`.
    Cooperative(CoopTiling),
}

impl ConvTile {
    /// Output channels and pixels a workgroup covers.
    pub fn block(self) -> [u32; 2] {
        match self {
            ConvTile::Registers(tiling) => [tiling.bm, tiling.bn],
            ConvTile::Cooperative(tiling) => [tiling.block(); 2],
        }
    }

    /// The matmul tile the self-check knows this kernel by.
    pub fn tile(self) -> MatmulTile {
        match self {
            ConvTile::Registers(tiling) => tile_of(tiling),
            ConvTile::Cooperative(_) => MatmulTile::Cooperative,
        }
    }
}

/// Everything that selects a distinct convolution pipeline.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct ConvKey {
    /// f32 or f16.
    pub dtype: KernelType,
    pub native_f16: bool,
    pub tiling: ConvTile,
    /// Testing only: every output is one too large (see
    /// `GpuOptions::sabotage_matmul`).
    pub sabotaged: bool,
}

family_key!(ConvKey, "webtensor conv", conv_source);

/// The WGSL source of the convolution kernel for `key`.
///
/// # Errors
/// `Error::Internal` when the template's slots and the generated parts
/// disagree.
pub(crate) fn conv_source(key: &ConvKey) -> Result<String> {
    let what = (key.dtype, key.native_f16, key.tiling, key.sabotaged);
    // conv.wgsl defines the patches' loader.
    let (template, params) = (("conv kernel", CONV_WGSL), ConvParams::wgsl());
    gemm_source(
        template,
        &params,
        what,
        BSource::Patches,
        &[("PUT", PUT_WGSL)],
    )
}

/// The source of a convolution family's kernel from `template` (its name
/// and text) with `params`: for `(dtype, native f16, tiling, sabotaged)`,
/// the tiled kernel reading `b` from `b_source` or the cooperative one,
/// with `extra` slots.
///
/// # Errors
/// As [`conv_source`].
pub(super) fn gemm_source(
    (name, template): (&'static str, &str),
    params: &str,
    (dtype, native_f16, tiling, sabotaged): (KernelType, bool, ConvTile, bool),
    b_source: BSource,
    extra: &[(&str, &str)],
) -> Result<String> {
    let [bindings, access, acc] = operand_parts(dtype, native_f16);
    let kernel = match tiling {
        ConvTile::Registers(tiling) => {
            tiling.wgsl_loading([Loads::Scalar, Loads::VecCols], b_source)
        }
        ConvTile::Cooperative(tiling) => tiling.wgsl(),
    };
    let cooperative = matches!(tiling, ConvTile::Cooperative(_));
    let mut slots = vec![
        ("BINDINGS", bindings.as_str()),
        ("ACCESS", access.as_str()),
        ("ACC", acc.as_str()),
        ("KERNEL", kernel.as_str()),
    ];
    slots.extend_from_slice(extra);
    let f16 = cooperative || needs_f16(dtype, native_f16);
    let source = fill_kernel(name, template, f16, params, &slots)?;
    let source = match sabotaged {
        true => source.replace("store_out(p, x);", "store_out(p, x + Acc(1));"),
        false => source,
    };
    // An `enable` comes before any declaration.
    Ok(match cooperative {
        true => format!("enable wgpu_cooperative_matrix;\n{source}"),
        false => source,
    })
}

/// The `BINDINGS`, `ACCESS` and `ACC` slots of a convolution kernel over
/// `dtype`: the weight (binding 1, `load_a`), the input (2, `load_b`) and
/// `out_buf` (3, `store_out`, `load_out`), and the accumulator.
pub(super) fn operand_parts(dtype: KernelType, native: bool) -> [String; 3] {
    let acc = ScalarType::of(dtype);
    let [bindings, mut access] = io_parts(&["a", "b"], dtype, native);
    access.push_str(&load_out_fn(dtype, native));
    let acc = format!("alias Acc = {acc};\nconst ZERO: Acc = {};\n", acc.zero());
    [bindings, access, acc]
}

/// The kernel `call` runs on `facts`' device: cooperative matrices where
/// the device runs products of its dtype on them (f16, and f32 under
/// `MatmulPrecision::Fast`), else the matmul's choice of tile for its
/// extents.
pub(super) fn tiling_for(call: &ConvCall, facts: &AdapterFacts) -> ConvTile {
    let scalar = [Loads::Scalar; 2];
    if let Some(tiling) = CoopTiling::on_device(facts, call.out.dtype, scalar, [false; 2]) {
        return ConvTile::Cooperative(tiling.with_b(CoopB::Patches));
    }
    let (x, o) = (call.input.layout.dims(), call.out.layout.dims());
    let batches = x[0] * call.groups;
    ConvTile::Registers(Tiling::choose(
        MatmulTile::Auto,
        o[1] / call.groups,
        o[2] * o[3],
        batches,
    ))
}

/// The workgroups along x (output pixels) and y (output channels) of
/// `call` on `tiling`.
fn grid(call: &ConvCall, tiling: ConvTile) -> [usize; 2] {
    let o = call.out.layout.dims();
    let (m, n) = (o[1] / call.groups, o[2] * o[3]);
    let [bm, bn] = tiling.block();
    [n.div_ceil(bn as usize), m.div_ceil(bm as usize)]
}

/// True when `call`'s tiles fit a grid of `max` workgroups per dimension
/// (an image of more pixels than that many tiles is composed instead).
pub(super) fn grid_fits(call: &ConvCall, tiling: ConvTile, max: u32) -> bool {
    grid(call, tiling).iter().all(|&g| g <= max as usize)
}

/// `grid` (workgroups along x and y) as the dispatch's.
///
/// # Errors
/// `TooLarge` naming `op` for more than `max` workgroups along an axis.
pub(super) fn checked_grid(op: &'static str, max: u32, grid: [usize; 2]) -> Result<[u32; 2]> {
    match grid.iter().all(|&g| g <= max as usize) {
        true => Ok(grid.map(|g| g as u32)),
        false => Err(Error::TooLarge {
            op,
            what: "output tiles per axis",
            requested: grid[0].max(grid[1]) as u64,
            limit: max.into(),
        }),
    }
}

/// Records `call`, whose output storage is `out`, on `tiling`.
///
/// # Errors
/// `Error::Gpu` when an operand is not on this GPU; `TooLarge` for more
/// output tiles per axis than the device has workgroups per dimension, or
/// an operand over one storage binding.
pub(super) fn record(out: &GpuStorage, call: &ConvCall, tiling: ConvTile) -> Result<()> {
    const OP: &str = "conv2d";
    let ctx = &out.ctx;
    let (weight_bound, weight) = Bound::view(OP, call.weight.clone(), false)?;
    let (input_bound, input) = Bound::view(OP, call.input.clone(), false)?;
    let (out_bound, dest) = Bound::view(OP, call.out.clone(), true)?;
    let (x, xs) = (input.layout.dims(), input.layout.strides());
    let o = dest.layout.dims();
    let g = call.groups;
    let (og, cg, taps) = (o[1] / g, x[1] / g, call.kernel[0] * call.kernel[1]);
    let (m, n, k) = (og, o[2] * o[3], cg * taps);
    let batches = x[0] * g;
    if batches == 0 || m == 0 || n == 0 {
        return Ok(());
    }
    let grid = checked_grid(OP, ctx.facts.max_workgroups_per_dim, grid(call, tiling))?;
    let key = ConvKey {
        dtype: call.out.dtype,
        native_f16: ctx.facts.native_f16,
        tiling,
        sabotaged: ctx.tuner.sabotaged() == Some(tiling.tile()),
    };
    let block = ConvParams {
        m: m as u32,
        n: n as u32,
        a_rs: k as i32,
        a_cs: 1,
        a_k_fast: 1,
        b_n_fast: 1,
        c_rs: n as i32,
        c_cs: 1,
        groups: g as u32,
        a_offset: weight.layout.offset() as u32,
        b_offset: input.layout.offset() as u32,
        c_offset: dest.layout.offset() as u32,
        c_image: (o[1] * n) as u32,
        group_channels: cg as u32,
        x_batch: xs[0] as i32,
        x_cs: xs[1] as i32,
        x_hs: xs[2] as i32,
        x_ws: xs[3] as i32,
        taps: taps as u32,
        kh: call.kernel[0] as u32,
        kw: call.kernel[1] as u32,
        out_w: o[3] as u32,
        stride_h: call.stride[0] as u32,
        stride_w: call.stride[1] as u32,
        dil_h: call.dilation[0] as u32,
        dil_w: call.dilation[1] as u32,
        pad_h: call.pad[0] as u32,
        pad_w: call.pad[1] as u32,
        height: x[2] as u32,
        width: x[3] as u32,
        ..bytemuck::Zeroable::zeroed()
    };
    let bound = [&weight_bound, &input_bound, &out_bound];
    record_sliced(ctx, &key, bound, grid, [batches, k], |ks, batch_start| {
        ConvParams {
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

    /// Every kernel a convolution runs: each register tile, and the
    /// cooperative kernel of each fragment and of small and large
    /// subgroups (f16 native only, as the device has it).
    fn kernels(dtype: KernelType, native_f16: bool) -> Vec<ConvTile> {
        let mut all: Vec<ConvTile> = ALL.into_iter().map(ConvTile::Registers).collect();
        if native_f16 && matches!(dtype, KernelType::F16 | KernelType::F32) {
            for (fragment, lanes) in [(8, 8), (8, 32), (16, 32), (16, 64)] {
                let tiling = CoopTiling::new(fragment, lanes, [Loads::Scalar; 2], [false; 2]);
                all.push(ConvTile::Cooperative(
                    tiling.unwrap().with_b(CoopB::Patches),
                ));
            }
        }
        all
    }

    #[test]
    fn every_conv_kernel_is_valid_wgsl_and_matches_its_params() {
        for (dtype, native_f16) in FLOAT_STORAGES {
            for tiling in kernels(dtype, native_f16) {
                let key = ConvKey {
                    dtype,
                    native_f16,
                    tiling,
                    sabotaged: false,
                };
                let source = conv_source(&key).unwrap();
                validate(&source, &format!("{key:?}"));
                assert_layout(&source, ConvParams::FIELDS, ConvParams::SIZE, "conv");
            }
        }
    }

    #[test]
    fn the_product_loop_divides_nothing() {
        // Issue 46: each patch element cost six runtime divisions (its
        // channel, tap row and column, and its pixel's row and column).
        // A thread now finds its pixels and first taps before the loop and
        // advances its taps by additions.
        let body_of = |source: &str, f: &str| {
            let start = source.find(f).unwrap_or_else(|| panic!("{f}"));
            source[start..][..source[start..].find("\n}\n").unwrap()].to_string()
        };
        for tiling in kernels(KernelType::F32, true) {
            let key = ConvKey {
                dtype: KernelType::F32,
                native_f16: true,
                tiling,
                sabotaged: false,
            };
            let source = conv_source(&key).unwrap();
            let product = &source[source.find("for (var k0").unwrap()..];
            for call in ["tap_of(", "pixel_of(", "b_at("] {
                assert!(!product.contains(call), "{tiling:?}: {call}");
            }
            let ConvTile::Registers(tiling) = tiling else {
                // The cooperative kernel advances its first patch row's tap
                // once a step, and the tap from row to row.
                assert!(
                    product.contains("btp = advance(btp, b_step);"),
                    "{tiling:?}"
                );
                assert!(
                    product.contains("bt = advance(bt, b_row_step);"),
                    "{tiling:?}"
                );
                continue;
            };
            assert!(
                product.contains("tp0 = advance(tp0, b_step);"),
                "{tiling:?}"
            );
            // Four adjacent pixels a load: a tap advanced and a vec4 stored
            // into the tile for each four elements of b.
            let (x, y) = tiling.threads_xy();
            let quads = (tiling.bk * tiling.bn / (x * y) / 4) as usize;
            assert_eq!(product.matches("= advance(").count(), quads, "{tiling:?}");
            assert!(
                product.contains("tile_b[br0 * PITCH_B + bc0 / 4u] = pb0;"),
                "{tiling:?}"
            );
            for f in ["fn b_tap(", "fn advance("] {
                let body = body_of(&source, f);
                assert!(!body.contains('/') && !body.contains('%'), "{f}: {body}");
            }
        }
    }
}
