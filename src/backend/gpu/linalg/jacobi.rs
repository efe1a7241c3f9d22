//! One-sided Jacobi (`linalg/jacobi.wgsl`): a workgroup per matrix runs
//! consecutive round-robin steps of its sweeps, as many dispatches as
//! keep each invocation's loops within the loop budget, up to the call's
//! sweeps (dispatches after a matrix converged return at once).

use super::{access, field, matrices};
use crate::backend::gpu::command::Bound;
use crate::backend::gpu::kernel::grid::grid_of;
use crate::backend::gpu::kernel::loop_budget::{ITERATIONS, MAX_ITERATIONS, slices};
use crate::backend::gpu::kernel::params_block::params_block;
use crate::backend::gpu::kernel::prelude::fill_kernel;
use crate::backend::gpu::record::{family_key, record_family};
use crate::backend::gpu::storage::GpuStorage;
use crate::backend::{JACOBI_CONVERGED, JACOBI_ROTATED, JACOBI_SIGNIFICANT, JacobiCall};
use crate::error::{Error, Result};
use smallvec::smallvec;

const JACOBI_WGSL: &str = shader!("linalg/jacobi.wgsl");

params_block! {
    /// `Params` of jacobi.wgsl.
    pub(crate) struct JacobiParams {
        batch: u32,
        groups_x: u32,
        n: u32,
        m: u32,
        m_even: u32,
        step_from: u32,
        step_to: u32,
        tol: f32,
        negligible: f32,
        a_offset: i32,
        a_batch: i32,
        a_row: i32,
        a_col: i32,
        v_offset: i32,
        v_batch: i32,
        v_row: i32,
        v_col: i32,
        aux_offset: u32,
        aux_batch: u32,
        pair_from: u32,
        pair_to: u32,
    }
}

/// Everything that selects a distinct Jacobi pipeline.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct JacobiKey {
    pub complex: bool,
}

family_key!(JacobiKey, "webtensor linalg jacobi", jacobi_source);

/// The WGSL source of the Jacobi kernel for `key`.
///
/// # Errors
/// `Error::Internal` when the template's slots and the generated parts
/// disagree.
pub(crate) fn jacobi_source(key: &JacobiKey) -> Result<String> {
    let matrices = [
        "@group(0) @binding(1) var<storage, read_write> a_buf: array<f32>;\n",
        "@group(0) @binding(2) var<storage, read_write> v_buf: array<f32>;\n",
        "@group(0) @binding(3) var<storage, read_write> aux_buf: array<atomic<i32>>;\n",
        &access("a", "a_buf", key.complex, true),
        &access("v", "v_buf", key.complex, true),
    ]
    .concat();
    let states = format!(
        "const ROTATED: i32 = {JACOBI_ROTATED};\nconst SIGNIFICANT: i32 = {JACOBI_SIGNIFICANT};\nconst CONVERGED: i32 = {JACOBI_CONVERGED};\n"
    );
    let slots = [
        ("FIELD", field(key.complex)),
        ("MATRICES", matrices.as_str()),
        ("STATES", states.as_str()),
    ];
    let params = JacobiParams::wgsl();
    fill_kernel("linalg jacobi kernel", JACOBI_WGSL, false, &params, &slots)
}

/// Records a Jacobi orthogonalization.
///
/// # Errors
/// `Error::TooLarge` for operands over one storage binding, a batch past
/// the grid, or a matrix whose one pair of columns would loop past
/// [`MAX_ITERATIONS`]; `Error::Internal` for views of another rank.
pub(crate) fn jacobi(out: &GpuStorage, call: &JacobiCall) -> Result<()> {
    const OP: &str = "svd";
    let ctx = &out.ctx;
    let (a_bound, a) = Bound::view(OP, call.a.clone(), true)?;
    let (v_bound, v) = Bound::view(OP, call.v.clone(), true)?;
    let (aux_bound, aux) = Bound::view(OP, call.aux.clone(), true)?;
    let ([batch, n, m], at) = matrices(OP, &a, call.complex)?;
    let (_, vt) = matrices(OP, &v, call.complex)?;
    if batch == 0 || m < 2 {
        return Ok(());
    }
    let even = m + m % 2;
    // Iterations a pair costs an invocation (its dot products and the
    // rotations of A's and V's columns), and a step: a thread takes
    // every 64th pair.
    let pair = 2 * n + m;
    if pair > MAX_ITERATIONS {
        return Err(Error::TooLarge {
            op: OP,
            what: "rows and columns of a matrix (one invocation's loop)",
            requested: pair as u64,
            limit: MAX_ITERATIONS as u64,
        });
    }
    let all_pairs = even / 2;
    let step = all_pairs.div_ceil(64) * pair + 4;
    // Whole steps a dispatch, or one step's pairs in shares.
    let (steps, share) = if step <= ITERATIONS {
        (ITERATIONS / step, all_pairs)
    } else {
        (1, 64 * (ITERATIONS / pair).max(1))
    };
    let groups = grid_of(batch, 1, ctx.facts.max_workgroups_per_dim)?;
    let key = JacobiKey {
        complex: call.complex,
    };
    for range in slices(call.sweeps * (even - 1), steps) {
        for pairs in slices(all_pairs, share) {
            let params = JacobiParams {
                batch: batch as u32,
                groups_x: groups[0],
                n: n as u32,
                m: m as u32,
                m_even: even as u32,
                step_from: range.start as u32,
                step_to: range.end as u32,
                tol: call.tol,
                negligible: call.negligible,
                a_offset: at[0],
                a_batch: at[1],
                a_row: at[2],
                a_col: at[3],
                v_offset: vt[0],
                v_batch: vt[1],
                v_row: vt[2],
                v_col: vt[3],
                aux_offset: aux.layout.offset() as u32,
                aux_batch: aux.layout.strides()[0] as u32,
                pair_from: pairs.start as u32,
                pair_to: pairs.end as u32,
            };
            let bindings = smallvec![a_bound.clone(), v_bound.clone(), aux_bound.clone()];
            record_family(
                ctx,
                &key,
                params.bytes(),
                bindings,
                [groups[0], groups[1], 1],
            )?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::gpu::kernel::params_block::tests::assert_layout;
    use crate::backend::gpu::kernel::prelude::tests::validate;

    #[test]
    fn every_jacobi_kernel_is_valid_wgsl_and_matches_its_params() {
        for complex in [false, true] {
            let key = JacobiKey { complex };
            let source = jacobi_source(&key).unwrap();
            validate(&source, &format!("{key:?}"));
            assert_layout(&source, JacobiParams::FIELDS, JacobiParams::SIZE, "jacobi");
        }
    }
}
