//! GPU matrix products: `matmul.wgsl` specialised per dtype and kernel
//! (`tiling.rs`: register-tiled kernels and the choice among them;
//! `subgroup.rs`: teams of subgroup lanes sharing `a` by shuffles;
//! `small.rs`: one thread per output; `gemv.rs`: matrix-vector;
//! `cooperative.rs`: cooperative matrices, tensor cores) and
//! recorded as kernel commands, one per 65535 batches and slice of k.

mod autotune;
mod cooperative;
mod gemv;
#[cfg(not(target_arch = "wasm32"))]
pub(crate) mod probe;
pub(crate) mod self_check;
mod small;
mod subgroup;
pub(crate) mod tiling;

use crate::backend::gpu::GpuContext;
use crate::backend::gpu::adapter_facts::AdapterFacts;
use crate::backend::gpu::matmul_tile_choice::{MatmulTile, MatmulVariant};
pub(crate) use cooperative::{CoopB, CoopTiling};
use self_check::Verdict;
use tiling::{Loads, Tiling};

use crate::backend::gpu::command::Bound;
use crate::backend::gpu::kernel::buffer::{
    StorageMode, buffer_decl, load_fn, load_out_fn, needs_f16, storage_mode, store_out_fn,
    vec4_access,
};
use crate::backend::gpu::kernel::grid::grid_of;
use crate::backend::gpu::kernel::loop_budget::{self, slices};
use crate::backend::gpu::kernel::params_block::{dims8, params_block, strides8};
use crate::backend::gpu::kernel::prelude::prelude;
use crate::backend::gpu::kernel::strided::{Walk, Walked};
use crate::backend::gpu::kernel::template::fill;
use crate::backend::gpu::kernel::wgsl_type::ScalarType;
use crate::backend::gpu::record::{FamilyKey, family_key, record_family};
use crate::backend::gpu::storage::GpuStorage;
use crate::backend::{MatmulCall, TensorRef};
use crate::dtype::KernelType;
use crate::error::{Error, Result};
use std::fmt::Write;
use std::ops::Range;

const MATMUL_WGSL: &str = shader!("matmul/matmul.wgsl");
/// `put`, the store every kernel on the matmul's tiles ends with (the
/// convolution's too).
pub(crate) const PUT_WGSL: &str = shader!("matmul/put.wgsl");

/// Most of k one dispatch covers: at most 1,024 steps of the k loop (its
/// body is unrolled), well inside lavapipe's limit.
pub(crate) const K_SLICE: usize = loop_budget::ITERATIONS;

params_block! {
    /// `Params` of matmul.wgsl.
    pub(crate) struct MatmulParams {
        m: u32,
        n: u32,
        /// The end of this dispatch's slice of k.
        k: u32,
        batch_rank: u32,
        a_offset: u32,
        b_offset: u32,
        c_offset: u32,
        /// First batch of this dispatch (z covers at most 65535 batches).
        batch_start: u32,
        a_rs: i32,
        a_cs: i32,
        b_rs: i32,
        b_cs: i32,
        c_rs: i32,
        c_cs: i32,
        k_start: u32,
        /// 1 when the output already holds the product over k < k_start.
        accumulate: u32,
        /// 1 when a's k stride is its smaller one (consecutive threads load
        /// along k), 0 when its row stride is (a transposed a).
        a_k_fast: u32,
        /// 1 when b's column stride is its smaller one.
        b_n_fast: u32,
        /// Matrices of this dispatch (the per-output kernel, small.rs).
        batches: u32,
        pad1: u32,
        batch_shape: [u32; 8],
        a_batch: [i32; 8],
        b_batch: [i32; 8],
        c_batch: [i32; 8],
    }
}

/// Everything that selects a distinct matmul pipeline.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct MatmulKey {
    /// The operands' dtype.
    pub dtype: KernelType,
    /// The output's: the operands', or f32 where a half product over a
    /// long k keeps its partial sums (see `ops/matmul.rs`).
    pub out: KernelType,
    pub native_f16: bool,
    pub kernel: MatmulKernel,
    /// The kernel adds 1 to every output (`GpuOptions::sabotage_matmul`:
    /// tests of the self-check only).
    pub sabotaged: bool,
}

impl MatmulKey {
    /// The key of `kernel` over operands of `dtype` into an output of
    /// `out` on the device of `ctx`.
    fn new(
        ctx: &GpuContext,
        dtype: KernelType,
        out: KernelType,
        kernel: MatmulKernel,
    ) -> MatmulKey {
        MatmulKey {
            dtype,
            out,
            native_f16: ctx.facts.native_f16,
            kernel,
            sabotaged: ctx
                .tuner
                .sabotaged()
                .is_some_and(|tile| MatmulVariant::Tile(tile) == kernel.variant()),
        }
    }
}

/// Which kernel a matmul runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum MatmulKernel {
    /// Register-tiled (`tiling.rs`), loading `a` and `b` as each says.
    Tiled(Tiling, [Loads; 2]),
    /// Matrix-vector (`gemv.rs`).
    Gemv,
    /// One thread per output (`small.rs`).
    PerOutput,
    /// Teams of subgroup lanes sharing `a` by shuffles (`subgroup.rs`),
    /// loading `b` as it says.
    Subgroup(Loads),
    /// Cooperative matrices (`cooperative.rs`).
    Cooperative(CoopTiling),
}

impl MatmulKernel {
    /// The variant the self-check knows this kernel by.
    fn variant(self) -> MatmulVariant {
        match self {
            MatmulKernel::Tiled(tiling, _) => MatmulVariant::Tile(tiling::tile_of(tiling)),
            MatmulKernel::Gemv => MatmulVariant::Gemv,
            MatmulKernel::PerOutput => MatmulVariant::Tile(MatmulTile::PerOutput),
            MatmulKernel::Subgroup(_) => MatmulVariant::Tile(MatmulTile::Subgroup),
            MatmulKernel::Cooperative(_) => MatmulVariant::Tile(MatmulTile::Cooperative),
        }
    }
}

family_key!(MatmulKey, "webtensor matmul", matmul_source);

/// The WGSL source of the matmul kernel for `key`.
///
/// # Errors
/// `Error::Internal` when the template's slots and the generated parts
/// disagree.
pub(crate) fn matmul_source(key: &MatmulKey) -> Result<String> {
    let (dtype, native) = (key.dtype, key.native_f16);
    let acc = ScalarType::of(dtype);
    let zero = acc.zero();
    let loads = match key.kernel {
        MatmulKernel::Tiled(_, loads) => loads,
        MatmulKernel::Gemv | MatmulKernel::PerOutput => [Loads::Scalar; 2],
        MatmulKernel::Cooperative(tiling) => tiling.loads,
        MatmulKernel::Subgroup(b) => [Loads::Scalar, b],
    };
    // Each operand bound as elements (with its scalar loader) or as vec4s.
    let mut bindings = String::new();
    let mut access = String::new();
    for (k, (name, loads)) in ["a", "b"].into_iter().zip(loads).enumerate() {
        let binding = k as u32 + 1;
        if loads == Loads::Scalar {
            bindings.push_str(&buffer_decl(binding, name, dtype, native, false));
            access.push_str(&load_fn(&format!("load_{name}"), name, dtype, native));
            continue;
        }
        let element = match storage_mode(dtype, native) {
            StorageMode::Plain(t) => t.to_string(),
            StorageMode::F16 => "f16".to_string(),
            StorageMode::PackedF16
            | StorageMode::PackedBF16
            | StorageMode::Bytes
            | StorageMode::Words64 => {
                return Err(Error::internal(
                    "matmul kernel",
                    "vec4 loads of a packed operand",
                ));
            }
        };
        let _ = writeln!(
            bindings,
            "@group(0) @binding({binding}) var<storage, read> {name}: array<vec4<{element}>>;"
        );
    }
    bindings.push_str(&buffer_decl(3, "out_buf", key.out, native, true));
    access.push_str(&store_out_fn(key.out, native));
    access.push_str(&load_out_fn(key.out, native));
    let acc = format!("alias Acc = {acc};\nconst ZERO: Acc = {zero};\n");
    let walk = Walk {
        name: "batch_bases",
        rank: "params.batch_rank",
        shape: "params.batch_shape",
        operands: &[
            Walked {
                start: "i32(params.a_offset)",
                strides: "params.a_batch",
            },
            Walked {
                start: "i32(params.b_offset)",
                strides: "params.b_batch",
            },
            Walked {
                start: "i32(params.c_offset)",
                strides: "params.c_batch",
            },
        ],
    }
    .wgsl();
    let kernel = match key.kernel {
        MatmulKernel::Tiled(tiling, loads) => tiling.wgsl(loads),
        MatmulKernel::Gemv => gemv::gemv_wgsl().to_string(),
        MatmulKernel::PerOutput => small::per_output_wgsl().to_string(),
        MatmulKernel::Subgroup(b) => subgroup::wgsl(b),
        MatmulKernel::Cooperative(tiling) => tiling.wgsl(),
    };
    let params = MatmulParams::wgsl();
    // The cooperative kernel's fragments are f16 whatever the dtype.
    let cooperative = matches!(key.kernel, MatmulKernel::Cooperative(_));
    let mut prelude = prelude(cooperative || needs_f16(dtype, native), &params);
    if cooperative {
        prelude = format!("enable wgpu_cooperative_matrix;\n{prelude}");
    }
    let mut slots = vec![("PRELUDE", prelude.as_str())];
    slots.extend([
        ("BINDINGS", bindings.as_str()),
        ("ACCESS", access.as_str()),
        ("ACC", acc.as_str()),
        ("WALK", walk.as_str()),
        ("PUT", PUT_WGSL),
        ("KERNEL", kernel.as_str()),
    ]);
    let source = fill("matmul kernel", MATMUL_WGSL, &slots)?;
    Ok(match key.sabotaged {
        true => source.replace("store_out(p, x);", "store_out(p, x + Acc(1));"),
        false => source,
    })
}

/// Records `call`, whose output storage is `out`.
///
/// # Errors
/// `Error::Gpu` when an operand is not on this GPU; `TooLarge` when the
/// output's rows or columns need more workgroups than the device allows.
pub(crate) fn matmul(out: &GpuStorage, call: MatmulCall) -> Result<()> {
    let ctx = &out.ctx;
    // Views of tensors larger than one binding bind just their windows.
    let (a_bound, a) = Bound::view("matmul", call.a, false)?;
    let (b_bound, b) = Bound::view("matmul", call.b, false)?;
    let (c_bound, c) = Bound::view("matmul", call.out, true)?;
    let bound = [a_bound, b_bound, c_bound];
    let call = &MatmulCall { a, b, out: c };
    let (m, k, n) = call.dims();
    let batches: usize = call.out.layout.dims()[..call.out.layout.rank() - 2]
        .iter()
        .product();
    if m == 0 || n == 0 || batches == 0 {
        return Ok(());
    }
    // The kernels count k in 32 bits; the op layer cuts longer products.
    if u32::try_from(k).is_err() {
        return Err(Error::internal(
            "matmul",
            format!("an inner dimension of {k} reached a 32-bit kernel"),
        ));
    }
    let max = ctx.facts.max_workgroups_per_dim as usize;
    let choice = ctx.matmul_tile();
    if choice == MatmulTile::Auto && (m == 1 || n == 1) {
        let gemv = Gemv::of(call, m, n);
        let verdict = self_check::verdict(ctx, MatmulVariant::Gemv, call.a.dtype)?;
        let usable = matches!(verdict, Verdict::Right | Verdict::Unchecked);
        if usable && n.max(m).div_ceil(gemv::outputs_per_group(gemv.along_k)) <= max {
            return gemv.record(out, call, bound, k, batches);
        }
    }
    let dims = [m, n, k, batches];
    let tile = match choice {
        MatmulTile::Auto if ctx.tuner.enabled() => autotune::tile(out, call, &bound, dims)?,
        fixed => fixed,
    };
    let tile = match tile {
        MatmulTile::Auto => untuned(&ctx.facts, call.a.dtype, m, n),
        tile => tile,
    };
    let tile = self_check::checked_tile(out, tile, dims, call.a.dtype)?;
    record_with(out, call, bound, tile, dims)
}

/// What `MatmulTile::Auto` runs untuned for an `m` x `n` output of
/// `dtype`: cooperative matrices (tensor cores) where the device runs the
/// dtype's products on them and the output is more than 16 x 16 (f16, as
/// PyTorch's f16 products take tensor cores; f32 only under
/// `MatmulPrecision::Fast`), else `Auto` (the tile by size).
pub(super) fn untuned(facts: &AdapterFacts, dtype: KernelType, m: usize, n: usize) -> MatmulTile {
    match facts.cooperative_for(dtype) && m > tiling::SKINNY && n > tiling::SKINNY {
        true => MatmulTile::Cooperative,
        false => MatmulTile::Auto,
    }
}

/// Records `call` (bound as `bound`, of extents `[m, n, k, batches]`) with
/// the kernel `tile` names, or picks by size.
///
/// # Errors
/// As [`record_tiled`].
fn record_with(
    out: &GpuStorage,
    call: &MatmulCall,
    bound: [Bound; 3],
    tile: MatmulTile,
    dims: [usize; 4],
) -> Result<()> {
    let [m, n, ..] = dims;
    match tile {
        MatmulTile::PerOutput => record_per_output(out, call, bound, dims),
        MatmulTile::Auto if m <= tiling::SKINNY && n <= tiling::SKINNY => {
            record_per_output(out, call, bound, dims)
        }
        tile => record_tiled(out, call, bound, tile, dims),
    }
}

/// True when the kernel `tile` names can cover an `m` x `n` output on this
/// device.
fn fits(out: &GpuStorage, tile: MatmulTile, [m, n, _, batches]: [usize; 4]) -> bool {
    let tiling = Tiling::choose(tile, m, n, batches);
    tile == MatmulTile::PerOutput || tile_grid(out, [tiling.bm, tiling.bn], m, n).is_some()
}

/// Records `call` with the per-output kernel (`small.rs`): as many
/// matrices per dispatch as keep its thread numbers in range, each slice
/// of k a dispatch of its own.
///
/// # Errors
/// `TooLarge` when a dispatch's threads exceed the device's grid.
fn record_per_output(
    out: &GpuStorage,
    call: &MatmulCall,
    bound: [Bound; 3],
    [m, n, k, batches]: [usize; 4],
) -> Result<()> {
    let ctx = &out.ctx;
    let key = MatmulKey::new(ctx, call.a.dtype, call.out.dtype, MatmulKernel::PerOutput);
    let per = m * n;
    for batch_range in slices(batches, small::batches_per_dispatch(per)) {
        let [x, y] = grid_of(
            batch_range.len() * per,
            small::THREADS,
            ctx.facts.max_workgroups_per_dim,
        )?;
        for k_range in slices(k, K_SLICE) {
            let block = MatmulParams {
                batches: batch_range.len() as u32,
                ..params(call, [m, n], k_range, batch_range.start)
            };
            let bindings = bound.iter().cloned().collect();
            record_family(ctx, &key, block.bytes(), bindings, [x, y, 1])?;
        }
    }
    Ok(())
}

/// The output blocks per axis (columns, rows) of `[rows, columns]`
/// outputs each over an `m` x `n` output, or `None` past the device's
/// workgroups per dimension.
fn tile_grid(out: &GpuStorage, [bm, bn]: [u32; 2], m: usize, n: usize) -> Option<[u32; 2]> {
    let max = out.ctx.facts.max_workgroups_per_dim as usize;
    let groups = [n.div_ceil(bn as usize), m.div_ceil(bm as usize)];
    groups
        .iter()
        .all(|&g| g <= max)
        .then(|| groups.map(|g| g as u32))
}

/// Records `call` (bound as `bound`, of extents `[m, n, k, batches]`) with
/// the register-tiled kernel `tile` picks.
///
/// # Errors
/// `TooLarge` when the output needs more tiles per axis than the device
/// has workgroups per dimension.
fn record_tiled(
    out: &GpuStorage,
    call: &MatmulCall,
    bound: [Bound; 3],
    tile: MatmulTile,
    [m, n, k, batches]: [usize; 4],
) -> Result<()> {
    let facts = &out.ctx.facts;
    let tiling = Tiling::choose(tile, m, n, batches);
    let loads = vec_loads(call, [m, n, k], facts.native_f16);
    // The subgroup and cooperative kernels where the device runs them,
    // else their block as a plain register tile.
    let (kernel, block) = match tile {
        MatmulTile::Subgroup if facts.subgroups_of(subgroup::TEAM) => {
            (MatmulKernel::Subgroup(loads[1]), [tiling.bm, tiling.bn])
        }
        MatmulTile::Cooperative if facts.cooperative_for(call.a.dtype) => {
            let tiling = cooperative_tiling(facts, call, loads)?;
            (MatmulKernel::Cooperative(tiling), [tiling.block(); 2])
        }
        _ => (MatmulKernel::Tiled(tiling, loads), [tiling.bm, tiling.bn]),
    };
    let Some(groups) = tile_grid(out, block, m, n) else {
        return Err(Error::TooLarge {
            op: "matmul",
            what: "output tiles per axis",
            requested: n
                .div_ceil(block[1] as usize)
                .max(m.div_ceil(block[0] as usize)) as u64,
            limit: u64::from(out.ctx.facts.max_workgroups_per_dim),
        });
    };
    record_slices(
        out,
        kernel,
        [&call.a, &call.b, &call.out],
        bound,
        groups,
        [batches, k],
        |k, start| params(call, [m, n], k, start),
    )
}

/// The cooperative kernel for `call` on a device with cooperative
/// matrices: its fragment and subgroup size, each operand read as `loads`
/// says and staged along its axis of smaller stride.
///
/// # Errors
/// `Error::Internal` when the device's facts name a shape the kernel does
/// not take (`opening.rs` checks them).
fn cooperative_tiling(
    facts: &AdapterFacts,
    call: &MatmulCall,
    loads: [Loads; 2],
) -> Result<CoopTiling> {
    let rows_fast = |t: &TensorRef| {
        let (rs, cs) = MatmulCall::matrix_strides(t);
        rs.unsigned_abs() < cs.unsigned_abs()
    };
    let rows = [rows_fast(&call.a), rows_fast(&call.b)];
    CoopTiling::on_device(facts, call.a.dtype, loads, rows).ok_or_else(|| {
        Error::internal(
            "matmul",
            format!(
                "no cooperative kernel for {:?} fragments and subgroups of {}",
                facts.cooperative, facts.subgroup_min_size
            ),
        )
    })
}

/// How the tiled kernels can load `call`'s operands (of extents `[m, n,
/// k]`): four elements at a time along an axis of stride 1 where the
/// elements are 32-bit or native f16, the other matrix stride, every batch
/// stride and the offset are multiples of four, and so is the extent
/// along that axis (so a vec4 is aligned, and all in or all out of the
/// matrix); one at a time otherwise.
fn vec_loads(call: &MatmulCall, [m, n, k]: [usize; 3], native_f16: bool) -> [Loads; 2] {
    if !vec4_access(storage_mode(call.a.dtype, native_f16)) {
        return [Loads::Scalar; 2];
    }
    let of = |t: &TensorRef, [rows, cols]: [usize; 2]| {
        let (rs, cs) = MatmulCall::matrix_strides(t);
        let aligned = t.layout.offset().is_multiple_of(4)
            && MatmulCall::batch_strides(t).iter().all(|s| s % 4 == 0);
        if !aligned {
            Loads::Scalar
        } else if cs == 1 && rs % 4 == 0 && cols.is_multiple_of(4) {
            Loads::VecCols
        } else if rs == 1 && cs % 4 == 0 && rows.is_multiple_of(4) {
            Loads::VecRows
        } else {
            Loads::Scalar
        }
    };
    [of(&call.a, [m, k]), of(&call.b, [k, n])]
}

/// Records `kernel` over `operands` (bindings 1, 2 and the output, bound
/// as `bound`) on a
/// grid of `groups` per batch: one dispatch per 65535 batches and slice of
/// k (`extents` = [batches, k]); the slices of one batch range run in
/// order, each after the first adding to the output. `params` gives the
/// block of a k slice starting at a batch.
fn record_slices(
    out: &GpuStorage,
    kernel: MatmulKernel,
    operands: [&TensorRef; 3],
    bound: [Bound; 3],
    groups: [u32; 2],
    [batches, k]: [usize; 2],
    params: impl Fn(Range<usize>, usize) -> MatmulParams,
) -> Result<()> {
    let ctx = &out.ctx;
    let key = MatmulKey::new(ctx, operands[0].dtype, operands[2].dtype, kernel);
    let bound = [&bound[0], &bound[1], &bound[2]];
    record_sliced(ctx, &key, bound, groups, [batches, k], params)
}

/// Records `key`'s tiled kernel (the matmul's, or a convolution's on its
/// tiles) over operands bound as `bound` (bindings 1, 2 and the output)
/// on a grid of `groups` per batch: one dispatch per 65535 batches and
/// slice of k (`extents` = [batches, k]); the slices of one batch range
/// run in order, each after the first adding to the output. `params`
/// gives the block of a k slice starting at a batch.
///
/// # Errors
/// Those of `record_family`.
pub(crate) fn record_sliced<K: FamilyKey, P: AsRef<[u8]>>(
    ctx: &GpuContext,
    key: &K,
    bound: [&Bound; 3],
    groups: [u32; 2],
    [batches, k]: [usize; 2],
    params: impl Fn(Range<usize>, usize) -> P,
) -> Result<()> {
    for batch_range in slices(batches, ctx.facts.max_workgroups_per_dim as usize) {
        for k_range in slices(k, K_SLICE) {
            let bindings = bound.iter().map(|&b| b.clone()).collect();
            let block = params(k_range, batch_range.start);
            let groups = [groups[0], groups[1], batch_range.len() as u32];
            record_family(ctx, key, block.as_ref(), bindings, groups)?;
        }
    }
    Ok(())
}

/// A matrix-vector product as `gemv.rs` computes it: `out[j] = sum over k
/// of A[j, k] * x[k]`, where A is `a` and x `b` when `n == 1`, and A is
/// `b` seen transposed and x `a` when `m == 1`.
struct Gemv {
    /// True when `b` is A (so it goes to binding 1).
    swapped: bool,
    outputs: usize,
    /// A's (j, k) strides, x's k stride, the output's j stride.
    a_strides: (isize, isize),
    x_stride: isize,
    c_stride: isize,
    along_k: bool,
}

impl Gemv {
    fn of(call: &MatmulCall, m: usize, n: usize) -> Gemv {
        let (a_rs, a_cs) = MatmulCall::matrix_strides(&call.a);
        let (b_rs, b_cs) = MatmulCall::matrix_strides(&call.b);
        let (c_rs, c_cs) = MatmulCall::matrix_strides(&call.out);
        let swapped = n != 1;
        let (a_strides, x_stride, c_stride, outputs) = if swapped {
            ((b_cs, b_rs), a_cs, c_cs, n)
        } else {
            ((a_rs, a_cs), b_rs, c_rs, m)
        };
        Gemv {
            swapped,
            outputs,
            a_strides,
            x_stride,
            c_stride,
            along_k: a_strides.1.unsigned_abs() <= a_strides.0.unsigned_abs(),
        }
    }

    /// Records the product.
    fn record(
        &self,
        out: &GpuStorage,
        call: &MatmulCall,
        bound: [Bound; 3],
        k: usize,
        batches: usize,
    ) -> Result<()> {
        let [a_bound, b_bound, out_bound] = bound;
        let ((a, x), (a_bound, x_bound)) = if self.swapped {
            ((&call.b, &call.a), (b_bound, a_bound))
        } else {
            ((&call.a, &call.b), (a_bound, b_bound))
        };
        let groups = self.outputs.div_ceil(gemv::outputs_per_group(self.along_k));
        let batch = |t: &TensorRef| strides8(MatmulCall::batch_strides(t));
        record_slices(
            out,
            MatmulKernel::Gemv,
            [a, x, &call.out],
            [a_bound, x_bound, out_bound],
            [groups as u32, 1],
            [batches, k],
            |k, start| MatmulParams {
                a_offset: a.layout.offset() as u32,
                b_offset: x.layout.offset() as u32,
                a_batch: batch(a),
                b_batch: batch(x),
                a_rs: self.a_strides.0 as i32,
                a_cs: self.a_strides.1 as i32,
                b_rs: self.x_stride as i32,
                b_cs: 0,
                c_rs: self.c_stride as i32,
                c_cs: 0,
                a_k_fast: u32::from(self.along_k),
                ..params(call, [self.outputs, 1], k, start)
            },
        )
    }
}

/// The parameter block of the dispatch over `k` (of the whole product's k)
/// starting at batch `start`.
fn params(call: &MatmulCall, [m, n]: [usize; 2], k: Range<usize>, start: usize) -> MatmulParams {
    let (a, b, c) = (&call.a, &call.b, &call.out);
    let strides = |t: &TensorRef| MatmulCall::matrix_strides(t);
    let batch = |t: &TensorRef| strides8(MatmulCall::batch_strides(t));
    MatmulParams {
        m: m as u32,
        n: n as u32,
        k: k.end as u32,
        batch_rank: MatmulCall::batch_strides(c).len() as u32,
        a_offset: a.layout.offset() as u32,
        b_offset: b.layout.offset() as u32,
        c_offset: c.layout.offset() as u32,
        batch_start: start as u32,
        a_rs: strides(a).0 as i32,
        a_cs: strides(a).1 as i32,
        b_rs: strides(b).0 as i32,
        b_cs: strides(b).1 as i32,
        c_rs: strides(c).0 as i32,
        c_cs: strides(c).1 as i32,
        k_start: k.start as u32,
        accumulate: u32::from(k.start > 0),
        a_k_fast: u32::from(strides(a).1.unsigned_abs() <= strides(a).0.unsigned_abs()),
        b_n_fast: u32::from(strides(b).1.unsigned_abs() <= strides(b).0.unsigned_abs()),
        batches: 0,
        pad1: 0,
        batch_shape: dims8(&c.layout.dims()[..c.layout.rank() - 2]),
        a_batch: batch(a),
        b_batch: batch(b),
        c_batch: batch(c),
    }
}

#[cfg(test)]
mod tests;
