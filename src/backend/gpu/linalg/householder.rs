//! The Householder QR step (`linalg/householder.wgsl`): a workgroup per
//! matrix reduces a panel's columns in place and writes its triangular
//! factor, in as many dispatches as keep each invocation's loops within
//! the loop budget.

use super::{access, field, matrices};
use crate::backend::HouseholderCall;
use crate::backend::gpu::command::Bound;
use crate::backend::gpu::kernel::grid::grid_of;
use crate::backend::gpu::kernel::loop_budget::{ITERATIONS, MAX_ITERATIONS, slices};
use crate::backend::gpu::kernel::params_block::params_block;
use crate::backend::gpu::kernel::prelude::fill_kernel;
use crate::backend::gpu::record::{family_key, record_family};
use crate::backend::gpu::storage::GpuStorage;
use crate::error::{Error, Result};
use smallvec::smallvec;

const HOUSEHOLDER_WGSL: &str = shader!("linalg/householder.wgsl");

params_block! {
    /// `Params` of householder.wgsl.
    pub(crate) struct HouseholderParams {
        batch: u32,
        groups_x: u32,
        n: u32,
        start: u32,
        width: u32,
        col_from: u32,
        col_to: u32,
        pad0: u32,
        a_offset: i32,
        a_batch: i32,
        a_row: i32,
        a_col: i32,
        t_offset: i32,
        t_batch: i32,
        t_row: i32,
        t_col: i32,
    }
}

/// Everything that selects a distinct Householder pipeline.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct HouseholderKey {
    pub complex: bool,
    /// Threads a workgroup: 64 or 256 (groups of 64, a column each).
    pub threads: u32,
}

family_key!(
    HouseholderKey,
    "webtensor linalg householder",
    householder_source
);

/// The WGSL source of the Householder kernel for `key`.
///
/// # Errors
/// `Error::Internal` when the template's slots and the generated parts
/// disagree.
pub(crate) fn householder_source(key: &HouseholderKey) -> Result<String> {
    let matrices = [
        "@group(0) @binding(1) var<storage, read_write> a_buf: array<f32>;\n",
        "@group(0) @binding(2) var<storage, read_write> t_buf: array<f32>;\n",
        &access("a", "a_buf", key.complex, true),
        &access("t", "t_buf", key.complex, true),
    ]
    .concat();
    let threads = key.threads.to_string();
    let slots = [
        ("FIELD", field(key.complex)),
        ("MATRICES", matrices.as_str()),
        ("WG", threads.as_str()),
    ];
    let params = HouseholderParams::wgsl();
    fill_kernel(
        "linalg householder kernel",
        HOUSEHOLDER_WGSL,
        false,
        &params,
        &slots,
    )
}

/// Records a Householder QR step.
///
/// # Errors
/// `Error::TooLarge` for operands over one storage binding, a batch past
/// the grid, or a panel too tall for one invocation's loop;
/// `Error::Internal` for views of another rank or a panel of more than 64
/// columns.
pub(crate) fn householder(out: &GpuStorage, call: &HouseholderCall) -> Result<()> {
    const OP: &str = "qr";
    let ctx = &out.ctx;
    let (a_bound, a) = Bound::view(OP, call.a.clone(), true)?;
    let (t_bound, t) = Bound::view(OP, call.t.clone(), true)?;
    let ([batch, n, _], at) = matrices(OP, &a, call.complex)?;
    let (_, tt) = matrices(OP, &t, call.complex)?;
    if batch == 0 || call.width == 0 {
        return Ok(());
    }
    // The panel's dot products live in a workgroup array of COLUMNS (64),
    // which the kernel indexes unchecked.
    if call.width > 64 {
        return Err(Error::internal(
            OP,
            format!("a panel of {} columns (at most 64)", call.width),
        ));
    }
    let threads: u32 = if n <= 128 { 64 } else { 256 };
    let groups_of_rows = (threads / 64) as usize;
    let rows = n - call.start;
    let per = |x: usize| x.div_ceil(threads as usize);
    // Iterations one column costs an invocation: the norm, its tree, the
    // scaling, the dot products, the update and T's column.
    let column = 2 * per(rows) + rows.div_ceil(groups_of_rows) + per(rows * call.width) + 90;
    if column > MAX_ITERATIONS {
        return Err(super::too_tall(OP, column));
    }
    let columns = (ITERATIONS / column).max(1);
    let groups = grid_of(batch, 1, ctx.facts.max_workgroups_per_dim)?;
    let key = HouseholderKey {
        complex: call.complex,
        threads,
    };
    for cols in slices(call.width, columns) {
        let params = HouseholderParams {
            batch: batch as u32,
            groups_x: groups[0],
            n: n as u32,
            start: call.start as u32,
            width: call.width as u32,
            col_from: (call.start + cols.start) as u32,
            col_to: (call.start + cols.end) as u32,
            pad0: 0,
            a_offset: at[0],
            a_batch: at[1],
            a_row: at[2],
            a_col: at[3],
            t_offset: tt[0],
            t_batch: tt[1],
            t_row: tt[2],
            t_col: tt[3],
        };
        let bindings = smallvec![a_bound.clone(), t_bound.clone()];
        record_family(
            ctx,
            &key,
            params.bytes(),
            bindings,
            [groups[0], groups[1], 1],
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::gpu::kernel::params_block::tests::assert_layout;
    use crate::backend::gpu::kernel::prelude::tests::validate;

    #[test]
    fn every_householder_kernel_is_valid_wgsl_and_matches_its_params() {
        for complex in [false, true] {
            for threads in [64, 256] {
                let key = HouseholderKey { complex, threads };
                let source = householder_source(&key).unwrap();
                validate(&source, &format!("{key:?}"));
                let (fields, size) = (HouseholderParams::FIELDS, HouseholderParams::SIZE);
                assert_layout(&source, fields, size, "householder");
            }
        }
    }
}
