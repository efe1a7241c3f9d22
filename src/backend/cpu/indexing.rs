//! CPU indexing through an index tensor (i32, i64 or u32): gathers read, scatters
//! write. An out-of-range index is an `Error::Index`; a scatter checks every
//! index before it writes anything.

use super::storage::{CpuData, CpuStorage, Reads, with_cpu_data};
use super::strided::for_each_run;
use crate::backend::{GatherCall, IndexedAxis, ScatterCall, lines};
use crate::error::{Error, Result};
use crate::layout::IterPlan;
use crate::op::IndexOp;

fn mismatch() -> Error {
    Error::internal("cpu indexing", "storage dtype differs from the call's")
}

/// The `Error::Index` for the raw index `raw` of `op`.
fn out_of_range(op: IndexOp, target: &IndexedAxis, raw: i64) -> Error {
    Error::Index {
        op: op.name(),
        index: crate::error::index_value(raw),
        axis: target.axis,
        size: target.size,
    }
}

/// Expands `$body` with `$i` bound to the index tensor's elements.
macro_rules! with_indices {
    ($data:expr, $i:ident => $body:expr) => {
        match $data {
            CpuData::I32($i) => $body,
            CpuData::I64($i) => $body,
            CpuData::U32($i) => $body,
            _ => Err(mismatch()),
        }
    };
}

/// The CPU takes every call whole (only GPU ops over views larger than one
/// storage binding come in parts).
fn check_whole(op: IndexOp, target: &IndexedAxis) -> Result<()> {
    if target.is_whole() {
        return Ok(());
    }
    Err(Error::internal(
        op.name(),
        "the CPU takes an indexed axis whole, not in parts",
    ))
}

/// Runs `call`, whose fresh output storage is `out`.
pub(crate) fn gather(out: &CpuStorage, call: &GatherCall) -> Result<()> {
    check_whole(call.op, &call.target)?;
    // Both read in address order (see `Reads::lock_writing`).
    let (reads, mut dst) =
        Reads::lock_writing("cpu indexing", out, &[Some(&call.src), Some(&call.index)])?;
    let (src, index) = (
        reads.of("cpu indexing", &call.src)?,
        reads.of("cpu indexing", &call.index)?,
    );
    with_cpu_data!(src, s => {
        let d = dst.as_mut_slice().ok_or_else(mismatch)?;
        with_indices!(index, i => gather_typed(s, i, d, call))
    })
}

fn gather_typed<T: Copy, I: Copy + Into<i64>>(
    src: &[T],
    index: &[I],
    out: &mut [T],
    call: &GatherCall,
) -> Result<()> {
    let plan = IterPlan::new(&[&call.out.layout, &call.src.layout, &call.index.layout]);
    let target = call.target;
    let mut bad = None;
    for_each_run::<3>(&plan, |[po, ps, pi], [so, ss, si], len| {
        if si == 0 {
            // One index for the whole run (a row picked by take or
            // index_select): resolve it once and copy the run.
            let raw: i64 = index[pi as usize].into();
            let Some(j) = target.resolve(raw) else {
                bad.get_or_insert(raw);
                return;
            };
            let base = ps + j as isize * target.stride;
            if so == 1 && ss == 1 {
                let (o, b) = (po as usize, base as usize);
                out[o..o + len].copy_from_slice(&src[b..b + len]);
            } else {
                for k in 0..len as isize {
                    out[(po + k * so) as usize] = src[(base + k * ss) as usize];
                }
            }
            return;
        }
        for k in 0..len as isize {
            let raw: i64 = index[(pi + k * si) as usize].into();
            match target.resolve(raw) {
                Some(j) => {
                    out[(po + k * so) as usize] =
                        src[(ps + k * ss + j as isize * target.stride) as usize];
                }
                None => {
                    bad.get_or_insert(raw);
                }
            }
        }
    });
    match bad {
        Some(raw) => Err(out_of_range(call.op, &target, raw)),
        None => Ok(()),
    }
}

/// Runs `call`, writing into `out`, the destination's storage (which the
/// op layer keeps apart from the source's and the index's).
pub(crate) fn scatter(out: &CpuStorage, call: &ScatterCall) -> Result<()> {
    const OP: &str = "cpu indexing";
    check_whole(call.op, &call.target)?;
    // The destination is another's tensor: every lock in the order of the
    // storages' addresses (see `Reads::lock_writing`).
    let (reads, mut dst) = Reads::lock_writing(OP, out, &[Some(&call.src), Some(&call.index)])?;
    let (src, index) = (reads.of(OP, &call.src)?, reads.of(OP, &call.index)?);
    with_cpu_data!(src, s => {
        let d = dst.as_mut_slice().ok_or_else(mismatch)?;
        with_indices!(index, i => scatter_typed(s, i, d, call))
    })
}

fn scatter_typed<T: ScatterElement, I: Copy + Into<i64>>(
    src: &[T],
    index: &[I],
    out: &mut [T],
    call: &ScatterCall,
) -> Result<()> {
    let target = call.target;
    let (out_lines, _) = lines(&call.out);
    let (src_lines, src_step) = lines(&call.src);
    let (index_lines, index_step) = lines(&call.index);
    let length = call.index.layout.dims().last().copied().unwrap_or(1) as isize;
    let starts: Vec<(isize, isize, isize)> = out_lines
        .positions()
        .into_iter()
        .zip(src_lines.positions())
        .zip(index_lines.positions())
        .map(|((o, s), i)| (o as isize, s as isize, i as isize))
        .collect();
    // Lines write distinct elements and only a line's own order matters,
    // so step k of every line runs before step k + 1 of any: neighbouring
    // lines are neighbours in memory. Every index is checked first, so an
    // error writes nothing.
    for k in 0..length {
        for &(_, _, i) in &starts {
            let raw: i64 = index[(i + k * index_step) as usize].into();
            if target.resolve(raw).is_none() {
                return Err(out_of_range(call.op, &target, raw));
            }
        }
    }
    let add = call.op == IndexOp::ScatterAdd;
    for k in 0..length {
        for &(o, s, i) in &starts {
            let raw: i64 = index[(i + k * index_step) as usize].into();
            let j = target.resolve(raw).unwrap_or_default() as isize;
            let p = (o + j * target.stride) as usize;
            let v = src[(s + k * src_step) as usize];
            out[p] = if add { out[p].plus(v) } else { v };
        }
    }
    Ok(())
}

/// Element addition as scatter_add does it: wrapping for integers, f16 and bf16 in
/// f32 (the GPU's arithmetic), logical or for bool (never reached: the op
/// layer rejects bool).
trait ScatterElement: Copy {
    fn plus(self, o: Self) -> Self;
}

macro_rules! scatter_element {
    ($($t:ty => $f:expr),* $(,)?) => {$(
        impl ScatterElement for $t {
            #[inline]
            fn plus(self, o: Self) -> Self {
                $f(self, o)
            }
        }
    )*};
}
scatter_element!(
    f32 => |a: f32, b| a + b,
    f64 => |a: f64, b| a + b,
    half::f16 => |a: half::f16, b: half::f16| half::f16::from_f32(a.to_f32() + b.to_f32()),
    half::bf16 => |a: half::bf16, b: half::bf16| half::bf16::from_f32(a.to_f32() + b.to_f32()),
    i32 => i32::wrapping_add,
    i64 => i64::wrapping_add,
    u32 => u32::wrapping_add,
    u8 => u8::wrapping_add,
    bool => |a: bool, b| a | b,
);
