//! CPU steps of the blocked factorizations ([`FactorCall`]) and small
//! triangular solves ([`TriangularCall`]): each matrix of a batch copies
//! the block it works on into a column-major scratch, is computed there
//! on the op's threads, and is written back.

use super::field::Field;
use super::storage::host_data;
use super::threads::for_each_piece_mut;
use crate::backend::{Factor, FactorCall, TriangularCall};
use crate::dtype::KernelType;
use crate::error::{Error, Result};
use crate::layout::Layout;
use num_complex::Complex32;

/// Runs a factorization step on the CPU.
pub(crate) fn factor(call: &FactorCall) -> Result<()> {
    match (call.a.dtype, call.complex) {
        (KernelType::F32, false) => factor_in::<f32>(call),
        (KernelType::F64, false) => factor_in::<f64>(call),
        (KernelType::F32, true) => factor_in::<Complex32>(call),
        (dtype, _) => Err(Error::internal(
            "linalg",
            format!("no CPU factorization of {dtype:?}"),
        )),
    }
}

/// Runs a triangular solve on the CPU.
pub(crate) fn triangular(call: &TriangularCall) -> Result<()> {
    match (call.b.dtype, call.complex) {
        (KernelType::F32, false) => triangular_in::<f32>(call),
        (KernelType::F64, false) => triangular_in::<f64>(call),
        (KernelType::F32, true) => triangular_in::<Complex32>(call),
        (dtype, _) => Err(Error::internal(
            "solve_triangular",
            format!("no CPU triangular solve of {dtype:?}"),
        )),
    }
}

/// Raw positions of the elements of a `[batch, rows, cols]` matrix view
/// (or its `[.., 2]` pair view).
pub(super) struct Matrices {
    pub(super) dims: [usize; 3],
    offset: isize,
    strides: [isize; 3],
}

impl Matrices {
    pub(super) fn of(layout: &Layout, complex: bool) -> Result<Matrices> {
        let (d, s) = (layout.dims(), layout.strides());
        let rank = if complex { 4 } else { 3 };
        if d.len() != rank {
            return Err(Error::internal("linalg", "matrices come as [batch, n, m]"));
        }
        Ok(Matrices {
            dims: [d[0], d[1], d[2]],
            offset: layout.offset() as isize,
            strides: [s[0], s[1], s[2]],
        })
    }

    #[inline(always)]
    pub(super) fn at(&self, b: usize, i: usize, j: usize) -> usize {
        let s = &self.strides;
        (self.offset + b as isize * s[0] + i as isize * s[1] + j as isize * s[2]) as usize
    }

    /// Writes the block `rows x cols` from `at` of matrix `b` to the
    /// front of `out`, column-major.
    pub(super) fn gather_to<F: Field>(
        &self,
        raw: &[F::Raw],
        b: usize,
        at: [usize; 2],
        [rows, cols]: [usize; 2],
        out: &mut [F],
    ) {
        for j in 0..cols {
            let column = &mut out[j * rows..(j + 1) * rows];
            for (i, x) in column.iter_mut().enumerate() {
                *x = F::get(raw, self.at(b, at[0] + i, at[1] + j));
            }
        }
    }

    /// The block `rows x cols` from `at` of matrix `b`, column-major.
    pub(super) fn gather<F: Field>(
        &self,
        raw: &[F::Raw],
        b: usize,
        at: [usize; 2],
        size: [usize; 2],
    ) -> Vec<F> {
        let mut out = vec![F::from_re(0.0); size[0] * size[1]];
        self.gather_to(raw, b, at, size, &mut out);
        out
    }

    pub(super) fn scatter<F: Field>(
        &self,
        raw: &mut [F::Raw],
        b: usize,
        at: [usize; 2],
        block: &[F],
        rows: usize,
    ) {
        for (e, &v) in block.iter().enumerate() {
            v.put(raw, self.at(b, at[0] + e % rows, at[1] + e / rows));
        }
    }
}

/// Matrices a piece of the op's threads takes: enough for a few
/// thousand elements of blocks.
fn matrices_per_piece(block: usize) -> usize {
    (4096 / block.max(1)).max(1)
}

fn factor_in<F: Field>(call: &FactorCall) -> Result<()> {
    const OP: &str = "linalg";
    let a = Matrices::of(&call.a.layout, call.complex)?;
    let [batch, n, m] = a.dims;
    let (start, width, factor) = (call.start, call.width, call.factor);
    // LU works on the panel below the diagonal, Cholesky on the block.
    let rows = match factor {
        Factor::Lu => n - start,
        Factor::Cholesky => width,
    };
    let size = (rows * width).max(1);
    let aux_len = call.aux.layout.dims()[1];
    let aux_at = |b: usize| call.aux.layout.offset() + b * call.aux.layout.strides()[0] as usize;
    // Every matrix's block and aux row, in two flat scratches; each piece
    // of the op's threads copies its matrices' blocks in, then steps them.
    let mut blocks = vec![F::from_re(0.0); batch * size];
    let mut auxes = Vec::with_capacity(batch * aux_len);
    {
        let data = host_data(OP, &call.a)?;
        let raw = (data.as_slice::<F::Raw>()).ok_or_else(|| Error::internal(OP, "dtype"))?;
        let aux = host_data(OP, &call.aux)?;
        let aux = (aux.as_slice::<i32>()).ok_or_else(|| Error::internal(OP, "aux"))?;
        for b in 0..batch {
            auxes.extend_from_slice(&aux[aux_at(b)..aux_at(b) + aux_len]);
        }
        let mut pairs: Vec<(&mut [F], &mut [i32])> = blocks
            .chunks_mut(size)
            .zip(auxes.chunks_mut(aux_len.max(1)))
            .collect();
        let per = matrices_per_piece(size);
        for_each_piece_mut(&mut pairs, per, |(piece, group)| {
            for (i, (block, aux)) in group.iter_mut().enumerate() {
                a.gather_to(raw, piece * per + i, [start, start], [rows, width], block);
                match factor {
                    Factor::Lu => lu_panel(block, aux, [n, m], start, width),
                    Factor::Cholesky => cholesky_block(block, &mut aux[0], start, width),
                }
            }
        });
    }
    let mut data = call.a.storage.host(OP)?.write();
    let raw = (data.as_mut_slice::<F::Raw>()).ok_or_else(|| Error::internal(OP, "dtype"))?;
    let mut aux = call.aux.storage.host(OP)?.write();
    let aux = (aux.as_mut_slice::<i32>()).ok_or_else(|| Error::internal(OP, "aux"))?;
    for b in 0..batch {
        a.scatter(
            raw,
            b,
            [start, start],
            &blocks[b * size..b * size + rows * width],
            rows,
        );
        let row = &auxes[b * aux_len..(b + 1) * aux_len];
        aux[aux_at(b)..aux_at(b) + aux_len].copy_from_slice(row);
        match factor {
            // The panel's swaps, in order, on the columns outside it.
            Factor::Lu => {
                for (r, &p) in row.iter().enumerate().take(start + width).skip(start) {
                    let p = p as usize;
                    if p == r {
                        continue;
                    }
                    for j in (0..start).chain(start + width..m) {
                        let (x, y) = (a.at(b, r, j), a.at(b, p, j));
                        let (u, v) = (F::get(raw, x), F::get(raw, y));
                        v.put(raw, x);
                        u.put(raw, y);
                    }
                }
            }
            // The factor's zeros right of the block's diagonal, to the
            // last column (nothing later touches these rows' upper parts).
            Factor::Cholesky => {
                for r in start..start + width {
                    for c in r + 1..m {
                        F::from_re(0.0).put(raw, a.at(b, r, c));
                    }
                }
            }
        }
    }
    Ok(())
}

/// LAPACK's `getf2` on the panel `p` (rows `start..n`, `width` columns,
/// column-major) and the matrix's aux row; the swaps, noted as pivots,
/// reach the other columns when the panel is written back.
fn lu_panel<F: Field>(
    p: &mut [F],
    aux: &mut [i32],
    [n, m]: [usize; 2],
    start: usize,
    width: usize,
) {
    let (k, rows) = (n.min(m), n - start);
    let (pivots, rest) = aux.split_at_mut(k);
    let (perm, info) = rest.split_at_mut(n);
    if start == 0 {
        for (i, p) in perm.iter_mut().enumerate() {
            *p = i as i32;
        }
    }
    for j in 0..width {
        let col = j * rows;
        // The first of the largest, from the diagonal as LAPACK's i?amax:
        // nothing is larger than a NaN there, so it stays (a matrix with
        // a NaN is no singular one), and a NaN below is never larger.
        let (mut best, mut size) = (j, p[col + j].pivot_size());
        for i in j + 1..rows {
            let s = p[col + i].pivot_size();
            if s > size {
                (best, size) = (i, s);
            }
        }
        if best != j {
            for c in 0..width {
                p.swap(c * rows + j, c * rows + best);
            }
            perm.swap(start + j, start + best);
        }
        pivots[start + j] = (start + best) as i32;
        let pivot = p[col + j];
        if pivot.is_zero() {
            if info[0] == 0 {
                info[0] = (start + j + 1) as i32;
            }
        } else {
            // Divided, as the GPU's kernel does, not multiplied by the
            // reciprocal as LAPACK's getf2: a rank-deficient matrix of
            // small integers ([[3, 3], [7, 7]]) then keeps its exact zero
            // pivot (3 * fl(1/7) * 7 is not 3), so that both devices find
            // it singular; and a tiny pivot's reciprocal would overflow.
            for x in &mut p[col + j + 1..col + rows] {
                *x = x.div(pivot);
            }
        }
        for c in j + 1..width {
            let u = p[c * rows + j];
            let (left, right) = p.split_at_mut(c * rows);
            let l = &left[col + j + 1..col + rows];
            for (x, &l) in right[j + 1..rows].iter_mut().zip(l) {
                *x = *x - l * u;
            }
        }
    }
}

/// LAPACK's `potf2` on the lower triangle of the diagonal block `b`
/// (`w` square, column-major).
fn cholesky_block<F: Field>(b: &mut [F], info: &mut i32, start: usize, w: usize) {
    if *info != 0 {
        return;
    }
    for j in 0..w {
        let d = b[j * w + j].re();
        if d.is_nan() || d <= 0.0 {
            *info = (start + j + 1) as i32;
            return;
        }
        let l = d.sqrt();
        b[j * w + j] = F::from_re(l);
        let r = F::from_re(1.0 / l);
        for x in &mut b[j * w + j + 1..(j + 1) * w] {
            *x = *x * r;
        }
        for c in j + 1..w {
            let u = b[j * w + c].conj();
            let (left, right) = b.split_at_mut(c * w);
            let l = &left[j * w + c..(j + 1) * w];
            for (x, &l) in right[c..w].iter_mut().zip(l) {
                *x = *x - l * u;
            }
        }
    }
}

fn triangular_in<F: Field>(call: &TriangularCall) -> Result<()> {
    const OP: &str = "solve_triangular";
    let (t, b) = (
        Matrices::of(&call.t.layout, call.complex)?,
        Matrices::of(&call.b.layout, call.complex)?,
    );
    let [batch, w, r] = b.dims;
    if batch * w * r == 0 {
        return Ok(());
    }
    // Every matrix's right-hand sides, in a flat scratch; each piece of
    // the op's threads copies its matrices' triangles and sides in, then
    // solves them; B is written after.
    let mut rhs = vec![F::from_re(0.0); batch * w * r];
    let (lower, unit, conj) = (call.lower, call.unit, call.conj);
    {
        // One read lock where T lies in B's storage (a second read of one
        // lock may wait behind a writer).
        let shared = std::sync::Arc::ptr_eq(&*call.t.storage, &*call.b.storage);
        let b_data = host_data(OP, &call.b)?;
        let t_data = if shared {
            None
        } else {
            Some(host_data(OP, &call.t)?)
        };
        let b_raw = (b_data.as_slice::<F::Raw>()).ok_or_else(|| Error::internal(OP, "dtype"))?;
        let t_raw = match &t_data {
            Some(d) => (d.as_slice::<F::Raw>()).ok_or_else(|| Error::internal(OP, "dtype"))?,
            None => b_raw,
        };
        let mut systems: Vec<&mut [F]> = rhs.chunks_mut(w * r).collect();
        let per = matrices_per_piece(w * (w + r));
        for_each_piece_mut(&mut systems, per, |(piece, group)| {
            let mut tri = vec![F::from_re(0.0); w * w];
            for (i, x) in group.iter_mut().enumerate() {
                let k = piece * per + i;
                t.gather_to(t_raw, k, [0, 0], [w, w], &mut tri);
                b.gather_to(b_raw, k, [0, 0], [w, r], x);
                let at = |i: usize, j: usize| {
                    let v = tri[j * w + i];
                    if conj { v.conj() } else { v }
                };
                for col in x.chunks_mut(w) {
                    for step in 0..w {
                        let j = if lower { step } else { w - 1 - step };
                        let mut s = col[j];
                        let known = if lower { 0..j } else { j + 1..w };
                        for q in known {
                            s = s - at(j, q) * col[q];
                        }
                        col[j] = if unit { s } else { s.div(at(j, j)) };
                    }
                }
            }
        });
    }
    let mut data = call.b.storage.host(OP)?.write();
    let raw = (data.as_mut_slice::<F::Raw>()).ok_or_else(|| Error::internal(OP, "dtype"))?;
    for (k, x) in rhs.chunks(w * r).enumerate() {
        b.scatter(raw, k, [0, 0], x, w);
    }
    Ok(())
}
