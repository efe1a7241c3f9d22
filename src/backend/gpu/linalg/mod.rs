//! The two kernels of the blocked factorizations (`linalg/factor.wgsl`,
//! `linalg/triangular.wgsl`): a workgroup per matrix steps an LU panel or
//! a Cholesky diagonal block in place, and a thread per right-hand column
//! solves a small triangular system. Both compute in f32, or in complex
//! f32 (`vec2<f32>`) on the pair view of c64 matrices.

use crate::backend::gpu::command::Bound;
use crate::backend::gpu::kernel::grid::{grid, grid_of};
use crate::backend::gpu::kernel::loop_budget::{ITERATIONS, MAX_ITERATIONS, slices};
use crate::backend::gpu::kernel::params_block::params_block;
use crate::backend::gpu::kernel::prelude::fill_kernel;
use crate::backend::gpu::record::{family_key, record_family};
use crate::backend::gpu::storage::GpuStorage;
use crate::backend::{Factor, FactorCall, LINALG_BLOCK, TensorRef, TriangularCall};
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::shape::Shape;
use smallvec::smallvec;
use std::sync::Arc;

mod householder;
mod jacobi;

pub(crate) use householder::householder;
pub(crate) use jacobi::jacobi;

const FACTOR_WGSL: &str = shader!("linalg/factor.wgsl");
const TRIANGULAR_WGSL: &str = shader!("linalg/triangular.wgsl");

params_block! {
    /// `Params` of factor.wgsl.
    pub(crate) struct FactorParams {
        batch: u32,
        groups_x: u32,
        n: u32,
        m: u32,
        k: u32,
        start: u32,
        width: u32,
        col_from: u32,
        col_to: u32,
        /// 1: a Cholesky step; 0: an LU panel.
        cholesky: u32,
        a_offset: i32,
        a_batch: i32,
        a_row: i32,
        a_col: i32,
        aux_offset: u32,
        aux_batch: u32,
        aux_len: u32,
        pad0: u32,
        pad1: u32,
        pad2: u32,
    }
}

params_block! {
    /// `Params` of triangular.wgsl.
    pub(crate) struct TriangularParams {
        count: u32,
        row_threads: u32,
        w: u32,
        r: u32,
        lower: u32,
        unit: u32,
        conj: u32,
        pad0: u32,
        t_offset: i32,
        t_batch: i32,
        t_row: i32,
        t_col: i32,
        b_offset: i32,
        b_batch: i32,
        b_row: i32,
        b_col: i32,
    }
}

/// Everything that selects a distinct factorization pipeline.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct FactorKey {
    pub complex: bool,
    /// Threads a workgroup: 64 or 256.
    pub threads: u32,
}

/// Everything that selects a distinct triangular-solve pipeline.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct TriangularKey {
    pub complex: bool,
    /// T lies in B's storage, bound once.
    pub shared: bool,
}

family_key!(FactorKey, "webtensor linalg factor", factor_source);
family_key!(
    TriangularKey,
    "webtensor linalg triangular",
    triangular_source
);

/// The `{{FIELD}}` slot: type `V` and its arithmetic.
pub(super) fn field(complex: bool) -> &'static str {
    if complex {
        "alias V = vec2<f32>;\n\
         fn one_v() -> V { return vec2<f32>(1.0, 0.0); }\n\
         fn sub_v(a: V, b: V) -> V { return a - b; }\n\
         fn mul_v(a: V, b: V) -> V { return vec2<f32>(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x); }\n\
         fn conj_v(a: V) -> V { return vec2<f32>(a.x, -a.y); }\n\
         fn scale_v(a: V, r: f32) -> V { return a * r; }\n\
         fn re_v(a: V) -> f32 { return a.x; }\n\
         fn from_re(r: f32) -> V { return vec2<f32>(r, 0.0); }\n\
         fn is_zero(a: V) -> bool { return a.x == 0.0 && a.y == 0.0; }\n\
         fn pivot_size(a: V) -> f32 { return abs(a.x) + abs(a.y); }\n\
         fn zero_v() -> V { return vec2<f32>(0.0, 0.0); }\n\
         fn add_v(a: V, b: V) -> V { return a + b; }\n\
         fn im_v(a: V) -> f32 { return a.y; }\n\
         fn abs_sq(a: V) -> f32 { return a.x * a.x + a.y * a.y; }\n\
         fn max_part(a: V) -> f32 { return max(abs(a.x), abs(a.y)); }\n\
         // a 2^k in two steps: HLSL's ldexp is a * exp2(k), 0 at k = -128.\n\
         fn scale2(a: f32, k: i32) -> f32 { return ldexp(ldexp(a, k / 2), k - k / 2); }\n\
         fn scale2_v(a: V, k: i32) -> V { return vec2<f32>(scale2(a.x, k), scale2(a.y, k)); }\n\
         fn magnitude(a: V) -> f32 {\n    \
             let s = max(abs(a.x), abs(a.y));\n    \
             if (s == 0.0) { return 0.0; }\n    \
             let x = vec2<f32>(div_f32(a.x, s), div_f32(a.y, s));\n    \
             return s * sqrt(x.x * x.x + x.y * x.y);\n\
         }\n\
         // Scaled by d's larger part, so that |d / s|^2 lies in [1, 2].\n\
         fn div_v(a: V, d: V) -> V {\n    \
             let s = max(abs(d.x), abs(d.y));\n    \
             let x = vec2<f32>(div_f32(a.x, s), div_f32(a.y, s));\n    \
             let e = vec2<f32>(div_f32(d.x, s), div_f32(d.y, s));\n    \
             let q = e.x * e.x + e.y * e.y;\n    \
             return vec2<f32>(div_f32(x.x * e.x + x.y * e.y, q), div_f32(x.y * e.x - x.x * e.y, q));\n\
         }\n"
    } else {
        "alias V = f32;\n\
         fn one_v() -> V { return 1.0; }\n\
         fn sub_v(a: V, b: V) -> V { return a - b; }\n\
         fn mul_v(a: V, b: V) -> V { return a * b; }\n\
         fn conj_v(a: V) -> V { return a; }\n\
         fn scale_v(a: V, r: f32) -> V { return a * r; }\n\
         fn re_v(a: V) -> f32 { return a; }\n\
         fn from_re(r: f32) -> V { return r; }\n\
         fn is_zero(a: V) -> bool { return a == 0.0; }\n\
         fn pivot_size(a: V) -> f32 { return abs(a); }\n\
         fn zero_v() -> V { return 0.0; }\n\
         fn add_v(a: V, b: V) -> V { return a + b; }\n\
         fn im_v(a: V) -> f32 { return 0.0; }\n\
         fn abs_sq(a: V) -> f32 { return a * a; }\n\
         fn max_part(a: V) -> f32 { return abs(a); }\n\
         // a 2^k in two steps: HLSL's ldexp is a * exp2(k), 0 at k = -128.\n\
         fn scale2(a: f32, k: i32) -> f32 { return ldexp(ldexp(a, k / 2), k - k / 2); }\n\
         fn scale2_v(a: V, k: i32) -> V { return scale2(a, k); }\n\
         fn magnitude(a: V) -> f32 { return abs(a); }\n\
         fn div_v(a: V, d: V) -> V { return div_f32(a, d); }\n"
    }
}

/// `fn load_{name}(p) -> V` (and `store_{name}(p, v)`) over `buf`.
pub(super) fn access(name: &str, buf: &str, complex: bool, writes: bool) -> String {
    let (load, store) = if complex {
        (
            format!("vec2<f32>({buf}[p], {buf}[p + 1u])"),
            format!("{buf}[p] = v.x;\n    {buf}[p + 1u] = v.y;"),
        )
    } else {
        (format!("{buf}[p]"), format!("{buf}[p] = v;"))
    };
    let mut out = format!("fn load_{name}(p: u32) -> V {{\n    return {load};\n}}\n");
    if writes {
        out += &format!("fn store_{name}(p: u32, v: V) {{\n    {store}\n}}\n");
    }
    out
}

/// The WGSL source of the factorization kernel for `key`.
///
/// # Errors
/// `Error::Internal` when the template's slots and the generated parts
/// disagree.
pub(crate) fn factor_source(key: &FactorKey) -> Result<String> {
    let matrices = [
        "@group(0) @binding(1) var<storage, read_write> a_buf: array<f32>;\n",
        "@group(0) @binding(2) var<storage, read_write> aux_buf: array<i32>;\n",
        &access("a", "a_buf", key.complex, true),
    ]
    .concat();
    let threads = key.threads.to_string();
    let slots = [
        ("FIELD", field(key.complex)),
        ("MATRICES", matrices.as_str()),
        ("WG", threads.as_str()),
    ];
    let params = FactorParams::wgsl();
    fill_kernel("linalg factor kernel", FACTOR_WGSL, false, &params, &slots)
}

/// The WGSL source of the triangular-solve kernel for `key`.
///
/// # Errors
/// As [`factor_source`].
pub(crate) fn triangular_source(key: &TriangularKey) -> Result<String> {
    let mut matrices =
        "@group(0) @binding(1) var<storage, read_write> b_buf: array<f32>;\n".to_string();
    matrices += &access("b", "b_buf", key.complex, true);
    if key.shared {
        matrices += &access("t", "b_buf", key.complex, false);
    } else {
        matrices += "@group(0) @binding(2) var<storage, read> t_buf: array<f32>;\n";
        matrices += &access("t", "t_buf", key.complex, false);
    }
    let slots = [
        ("FIELD", field(key.complex)),
        ("MATRICES", matrices.as_str()),
    ];
    let params = TriangularParams::wgsl();
    fill_kernel(
        "linalg triangular kernel",
        TRIANGULAR_WGSL,
        false,
        &params,
        &slots,
    )
}

/// `[batch, rows, cols]` and the three strides of a matrix view (or its
/// pair view).
pub(super) fn matrices(
    op: &'static str,
    t: &TensorRef,
    complex: bool,
) -> Result<([usize; 3], [i32; 4])> {
    let (d, s) = (t.layout.dims(), t.layout.strides());
    if d.len() != 3 + usize::from(complex) {
        return Err(Error::internal(op, "matrices come as [batch, n, m]"));
    }
    let at = [
        t.layout.offset() as i32,
        s[0] as i32,
        s[1] as i32,
        s[2] as i32,
    ];
    Ok(([d[0], d[1], d[2]], at))
}

/// The error for a panel whose one column would loop an invocation past
/// [`MAX_ITERATIONS`] (past about 110,000 rows for QR, 220,000 for LU).
pub(super) fn too_tall(op: &'static str, iterations: usize) -> Error {
    Error::TooLarge {
        op,
        what: "rows of a panel (one invocation's loop over a column)",
        requested: iterations as u64,
        limit: MAX_ITERATIONS as u64,
    }
}

/// Records a factorization step (as many dispatches as keep each
/// invocation's loops within the loop budget).
///
/// # Errors
/// `Error::TooLarge` for operands over one storage binding, a batch past
/// the grid, or a panel too tall for one invocation's loop
/// ([`too_tall`]); `Error::Internal` for views of another rank.
pub(crate) fn factor(out: &GpuStorage, call: &FactorCall) -> Result<()> {
    const OP: &str = "linalg";
    let ctx = &out.ctx;
    let (a_bound, a) = Bound::view(OP, call.a.clone(), true)?;
    let (aux_bound, aux) = Bound::view(OP, call.aux.clone(), true)?;
    let ([batch, n, m], at) = matrices(OP, &a, call.complex)?;
    if batch == 0 || call.width == 0 {
        return Ok(());
    }
    let cholesky = call.factor == Factor::Cholesky;
    let threads: u32 = if cholesky || n <= 128 { 64 } else { 256 };
    let per = |x: usize| x.div_ceil(threads as usize);
    // Iterations one column costs an invocation: its loops and tree.
    let column = if cholesky {
        per(call.width) + per(m) + per(call.width * call.width) + 2
    } else {
        let rows = n - call.start;
        3 * per(rows) + per(m) + per(rows * call.width) + 10
    };
    if column > MAX_ITERATIONS {
        return Err(too_tall(OP, column));
    }
    let columns = (ITERATIONS.saturating_sub(per(n)) / column).max(1);
    let groups = grid_of(batch, 1, ctx.facts.max_workgroups_per_dim)?;
    let key = FactorKey {
        complex: call.complex,
        threads,
    };
    let aux_dims = aux.layout.dims();
    for cols in slices(call.width, columns) {
        let params = FactorParams {
            batch: batch as u32,
            groups_x: groups[0],
            n: n as u32,
            m: m as u32,
            k: n.min(m) as u32,
            start: call.start as u32,
            width: call.width as u32,
            col_from: (call.start + cols.start) as u32,
            col_to: (call.start + cols.end) as u32,
            cholesky: u32::from(cholesky),
            a_offset: at[0],
            a_batch: at[1],
            a_row: at[2],
            a_col: at[3],
            aux_offset: aux.layout.offset() as u32,
            aux_batch: aux.layout.strides()[0] as u32,
            aux_len: aux_dims[1] as u32,
            pad0: 0,
            pad1: 0,
            pad2: 0,
        };
        let bindings = smallvec![a_bound.clone(), aux_bound.clone()];
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

/// Records a triangular solve.
///
/// # Errors
/// As [`factor`], and `Error::Internal` for a triangle wider than
/// [`LINALG_BLOCK`].
pub(crate) fn triangular(out: &GpuStorage, call: &TriangularCall) -> Result<()> {
    const OP: &str = "solve_triangular";
    let ctx = &out.ctx;
    let shared = Arc::ptr_eq(&*call.t.storage, &*call.b.storage);
    let ([batch, w, r], _) = matrices(OP, &call.b, call.complex)?;
    if w > LINALG_BLOCK {
        return Err(Error::internal(OP, "a triangle wider than one block"));
    }
    let count = batch * r;
    if count == 0 || w == 0 {
        return Ok(());
    }
    let (t_at, b_at, bindings) = if shared {
        // One binding, a window holding both T's and B's elements: both
        // move by the window's shift.
        let (Some(ts), Some(bs)) = (call.t.layout.span(), call.b.layout.span()) else {
            return Ok(());
        };
        let (first, last) = (ts.0.min(bs.0), ts.1.max(bs.1));
        let hull = Layout::from_parts(Shape::from([last - first + 1]), smallvec![1], first);
        let (bound, rebased) = Bound::view(OP, call.b.with_layout(hull), true)?;
        let shift = first as i64 - rebased.layout.offset() as i64;
        let moved = |t: &TensorRef| -> Result<[i32; 4]> {
            let (_, mut at) = matrices(OP, t, call.complex)?;
            at[0] = i32::try_from(i64::from(at[0]) - shift)
                .map_err(|_| Error::internal(OP, "an offset past i32"))?;
            Ok(at)
        };
        (moved(&call.t)?, moved(&call.b)?, smallvec![bound])
    } else {
        let (b_bound, b) = Bound::view(OP, call.b.clone(), true)?;
        let (t_bound, t) = Bound::view(OP, call.t.clone(), false)?;
        let t_at = matrices(OP, &t, call.complex)?.1;
        (
            t_at,
            matrices(OP, &b, call.complex)?.1,
            smallvec![b_bound, t_bound],
        )
    };
    let groups = grid(count, ctx.facts.max_workgroups_per_dim)?;
    let params = TriangularParams {
        count: count as u32,
        row_threads: groups[0] * 64,
        w: w as u32,
        r: r as u32,
        lower: u32::from(call.lower),
        unit: u32::from(call.unit),
        conj: u32::from(call.conj),
        pad0: 0,
        t_offset: t_at[0],
        t_batch: t_at[1],
        t_row: t_at[2],
        t_col: t_at[3],
        b_offset: b_at[0],
        b_batch: b_at[1],
        b_row: b_at[2],
        b_col: b_at[3],
    };
    let key = TriangularKey {
        complex: call.complex,
        shared,
    };
    record_family(
        ctx,
        &key,
        params.bytes(),
        bindings,
        [groups[0], groups[1], 1],
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::gpu::kernel::params_block::tests::assert_layout;
    use crate::backend::gpu::kernel::prelude::tests::validate;

    #[test]
    fn every_linalg_kernel_is_valid_wgsl_and_matches_its_params() {
        for complex in [false, true] {
            for threads in [64, 256] {
                let key = FactorKey { complex, threads };
                let source = factor_source(&key).unwrap();
                validate(&source, &format!("{key:?}"));
                assert_layout(&source, FactorParams::FIELDS, FactorParams::SIZE, "factor");
            }
            for shared in [false, true] {
                let key = TriangularKey { complex, shared };
                let source = triangular_source(&key).unwrap();
                validate(&source, &format!("{key:?}"));
                let (fields, size) = (TriangularParams::FIELDS, TriangularParams::SIZE);
                assert_layout(&source, fields, size, "triangular");
            }
        }
    }
}
