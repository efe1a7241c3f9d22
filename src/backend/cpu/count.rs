//! CPU counts ([`CountCall`]): in index order, one element at a time;
//! weights summed in f64 and rounded once (NumPy's sums are f64).

use super::CpuData;
use super::sort::Keyed;
use super::storage::{CpuStorage, Reads, with_cpu_data};
use crate::backend::CountCall;
use crate::dtype::Element;
use crate::error::{Error, Result};

/// Runs `call`, whose output storage is `out` (zeroed i64 or f32).
pub(crate) fn count(out: &CpuStorage, call: &CountCall) -> Result<()> {
    const OP: &str = "bincount";
    // Each storage locked once (`histogram(x, weights: x)` reads one
    // storage twice).
    let reads = Reads::lock(
        OP,
        &[
            Some(&call.index),
            call.weights.as_ref(),
            call.edges.as_ref(),
        ],
    )?;
    let index = reads.of(OP, &call.index)?;
    let weights = match &call.weights {
        Some(w) => Some(match reads.of(OP, w)? {
            CpuData::F32(v) => Weights::F32(&v[w.layout.offset()..]),
            CpuData::F64(v) => Weights::F64(&v[w.layout.offset()..]),
            _ => return Err(Error::internal(OP, "weights must be f32 or f64")),
        }),
        None => None,
    };
    let mut dst = out.write();
    let (i0, n) = (call.index.layout.offset(), call.index.layout.numel());
    let (from, len) = (call.out.layout.offset(), call.out.layout.numel());
    let bins = Bins {
        weights,
        out: &mut dst,
        from,
        len,
    };
    if let Some(e) = &call.edges {
        let edges = reads.of(OP, e)?;
        let e0 = e.layout.offset();
        return with_cpu_data!(index, v => {
            let edges = edges
                .as_slice_like(v)
                .ok_or_else(|| Error::internal(OP, "edges and values differ in dtype"))?;
            bins.binned(&v[i0..i0 + n], &edges[e0..e0 + len + 1])
        });
    }
    match index {
        CpuData::I32(v) => bins.add(&v[i0..i0 + n]),
        CpuData::I64(v) => bins.add(&v[i0..i0 + n]),
        CpuData::U32(v) => bins.add(&v[i0..i0 + n]),
        CpuData::U8(v) => bins.add(&v[i0..i0 + n]),
        _ => Err(Error::internal(OP, "bins must be integers")),
    }
}

/// The weights of a count's elements, in index order.
enum Weights<'a> {
    F32(&'a [f32]),
    F64(&'a [f64]),
}

/// Where a count goes: bins `from..from + len` of `out`, each counting
/// (no weights) or summing the weights of its elements.
struct Bins<'a> {
    weights: Option<Weights<'a>>,
    out: &'a mut CpuData,
    from: usize,
    len: usize,
}

impl Bins<'_> {
    /// Counts integer bins.
    fn add<T: Element>(self, index: &[T]) -> Result<()> {
        let len = self.len;
        // Exact for every bin there is; other values fall outside.
        self.accumulate(index.iter().map(|x| {
            let b = x.to_f64();
            (b >= 0.0 && b < len as f64).then_some(b as usize)
        }))
    }

    /// Counts values into the bins between `edges`, by the sort's order.
    fn binned<T: Keyed>(self, values: &[T], edges: &[T]) -> Result<()> {
        let keys: Vec<u64> = edges.iter().map(|e| e.key()).collect();
        let (first, last) = (keys[0], keys[keys.len() - 1]);
        let last_bin = self.len - 1;
        self.accumulate(values.iter().map(|x| {
            let k = x.key();
            if k < first || k > last {
                return None;
            }
            if k == last {
                return Some(last_bin);
            }
            Some(keys.partition_point(|&e| e <= k) - 1)
        }))
    }

    /// Adds each element's bin (none: skipped) in order.
    fn accumulate(self, bins: impl Iterator<Item = Option<usize>>) -> Result<()> {
        let len = self.len;
        let bad = || Error::internal("bincount", "the output has another dtype");
        match self.weights {
            Some(w) => {
                // Summed in f64 and rounded once, as NumPy sums in f64.
                let mut wide = super::try_zeroed::<f64>("bincount", len)?;
                let mut add = |bin: Option<usize>, weight: f64| {
                    if let Some(b) = bin {
                        wide[b] += weight;
                    }
                };
                match w {
                    Weights::F32(w) => bins.zip(w).for_each(|(b, &w)| add(b, f64::from(w))),
                    Weights::F64(w) => bins.zip(w).for_each(|(b, &w)| add(b, w)),
                }
                let sums = &mut self.out.as_mut_slice::<f32>().ok_or_else(bad)?[self.from..];
                // Added into the bins, as the GPU's parts add.
                for (s, w) in sums.iter_mut().zip(wide) {
                    *s += w as f32;
                }
            }
            None => {
                let counts = &mut self.out.as_mut_slice::<i64>().ok_or_else(bad)?[self.from..];
                for b in bins.flatten() {
                    counts[b] += 1;
                }
            }
        }
        Ok(())
    }
}
