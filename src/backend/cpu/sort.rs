//! CPU sorts: each line's positions sorted stably by value (Rust's stable
//! merge sort), with the order of [`SortCall`](crate::backend::SortCall):
//! NaN after everything ascending, before everything descending, -0 equal
//! to +0.

use super::storage::{CpuStorage, with_cpu_data};
use crate::backend::{SortCall, Storage, lines};
use crate::dtype::Element;
use crate::error::{Error, Result};
use std::cmp::Ordering;

/// Runs `call`, whose output storage is `out` (fresh i32).
pub(crate) fn sort(out: &CpuStorage, call: &SortCall) -> Result<()> {
    let Storage::Cpu(input) = &**call.input.storage else {
        return Err(Error::internal("cpu sort", "input is not in host memory"));
    };
    let data = input.read();
    let mut out_data = out.write();
    let dst: &mut [i32] = out_data
        .as_mut_slice()
        .ok_or_else(|| Error::internal("cpu sort", "output is not i32"))?;
    let (in_lines, in_step) = lines(&call.input);
    let (out_lines, out_step) = lines(&call.out);
    let n = call.length();
    let starts: Vec<(usize, usize)> = in_lines
        .positions()
        .into_iter()
        .zip(out_lines.positions())
        .collect();
    with_cpu_data!(&*data, src => {
        let mut order: Vec<usize> = Vec::with_capacity(n);
        let mut line: Vec<f64> = Vec::with_capacity(n);
        for &(a, b) in &starts {
            line.clear();
            line.extend((0..n).map(|i| src[(a as isize + i as isize * in_step) as usize].to_f64()));
            order.clear();
            order.extend(0..n);
            if call.descending {
                order.sort_by(|&i, &j| ascending(line[j], line[i]));
            } else {
                order.sort_by(|&i, &j| ascending(line[i], line[j]));
            }
            for (k, &i) in order.iter().enumerate() {
                // Lines are at most i32::MAX long (the op layer checks).
                dst[(b as isize + k as isize * out_step) as usize] = i as i32;
            }
        }
    });
    Ok(())
}

/// The ascending order of two elements (exact in f64 for every dtype the
/// CPU holds): NaN after every number, -0 equal to +0.
fn ascending(a: f64, b: f64) -> Ordering {
    match (a.is_nan(), b.is_nan()) {
        (false, false) => a.partial_cmp(&b).unwrap_or(Ordering::Equal),
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
    }
}
