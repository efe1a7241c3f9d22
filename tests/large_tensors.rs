//! Tensors larger than one storage binding (issue 18): storage up to the
//! device's largest buffer, elementwise ops (fused chains, casts, copies,
//! fills, in-place writes through views) bound in windows, the other op
//! families (reductions, scans, joins, products, indexing, searching,
//! counting, sorting, softmax) cut into parts that fit, and custom kernels refusing such
//! tensors with `TooLarge` naming the op.
//!
//! Most of it runs with small tensors on devices whose binding is capped at
//! a few hundred bytes (`GpuOptions::max_binding_bytes`), so an op splits
//! into many windows on every view layout; two tests then take real
//! tensors over lavapipe's 128 MiB binding (long tests: `#[ignore]`d in
//! the fast form, run by `WEBTENSOR_LONG_TESTS=1 cargo test --
//! --include-ignored`). The fast form checks each case on one capped
//! device in turn, the long form on all three.

mod common;

use proptest::prelude::*;
use std::sync::OnceLock;
use webtensor::{DType, Device, Error, GpuOptions, Side, SortOrder, Tensor, TopK, s};

/// GPU devices with a tiny binding: fusion on and off, f16 native and
/// packed.
fn capped() -> &'static [(&'static str, Device)] {
    static GPUS: OnceLock<Vec<(&'static str, Device)>> = OnceLock::new();
    GPUS.get_or_init(own_capped)
}

/// Capped devices of the caller's own: a test that makes an index fault
/// on a shared device would hand it to the next readback of another test
/// running beside it.
fn own_capped() -> Vec<(&'static str, Device)> {
    let settings = [
        ("fusion", true, false),
        ("no fusion", false, false),
        ("fusion, packed f16", true, true),
    ];
    settings
        .into_iter()
        .filter_map(|(name, fusion, packed)| {
            common::own_gpu(GpuOptions {
                max_binding_bytes: Some(512),
                fusion: Some(fusion),
                flush_threshold: Some(if fusion { 1024 } else { 1 }),
                force_packed_f16: packed,
                ..Default::default()
            })
            .map(|d| (name, d))
        })
        .collect()
}

/// The capped devices that check case `k` of a test: one in turn in the
/// fast form (so that a test's cases still reach every device), the others
/// in the long form (`WEBTENSOR_LONG_TESTS=1`). CI runs both, so each case
/// meets each device once, and its fast form's device with wgpu's runtime
/// checks as well.
fn capped_for(k: usize) -> Vec<&'static (&'static str, Device)> {
    let all = capped();
    if all.is_empty() {
        return Vec::new();
    }
    let fast = k % all.len();
    if common::long_tests() {
        (0..all.len())
            .filter(|&d| d != fast)
            .map(|d| &all[d])
            .collect()
    } else {
        vec![&all[fast]]
    }
}

#[test]
fn a_capped_device_reports_its_binding() {
    for (name, dev) in capped() {
        let info = dev.info();
        assert!(info.max_storage_binding <= 512, "{name}: {info}");
        assert!(info.max_buffer_size >= 1 << 20, "{name}: {info}");
        // One op over 6400 bytes runs as a dispatch per window.
        let x = Tensor::ones([40, 40], DType::F32, dev).unwrap();
        dev.sync().unwrap();
        let before = dev.stats().dispatches;
        x.t().add_scalar_(1.0).unwrap();
        dev.sync().unwrap();
        let windows = dev.stats().dispatches - before;
        assert!(windows >= 13, "{name}: {windows} dispatches");
    }
}

/// Values that stay exact in f16: small integers.
fn values(n: usize, seed: usize) -> Vec<f32> {
    (0..n)
        .map(|i| ((i * 7 + seed * 13) % 23) as f32 - 11.0)
        .collect()
}

/// An elementwise program over views of two tensors of `dims`, on `dev`:
/// transposed, reversed, stepped, offset and broadcast operands, a fused
/// chain, a cast, in-place writes through views (one reading its own
/// storage), a fill and a copy; returns every result as f32.
fn program(dev: &Device, dims: [usize; 2], dtype: DType) -> webtensor::Result<Vec<Vec<f32>>> {
    let [r, c] = dims;
    let a = Tensor::from_vec(values(r * c, 1), [r, c], dev)?.to_dtype(dtype)?;
    let b = Tensor::from_vec(values(c * r, 2), [c, r], dev)?.to_dtype(dtype)?;
    let row = Tensor::from_vec(values(c, 3), [c], dev)?.to_dtype(dtype)?;
    let mut out = Vec::new();
    let read = |t: &Tensor| -> webtensor::Result<Vec<f32>> { t.to_dtype(DType::F32)?.to_vec() };
    // Contiguous + transposed, then a fused chain with a broadcast row.
    let sum = a.add(&b.t())?;
    out.push(read(&sum)?);
    let chain = sum.mul_scalar(3.0)?.sub(&row)?.abs()?.maximum_scalar(2.0)?;
    out.push(read(&chain)?);
    // Reversed and stepped views, offset into the far end.
    let flipped = a.slice(s![..;-1, 1..;2])?;
    out.push(read(&flipped.mul(&b.t().slice(s![..;-1, 1..;2])?)?)?);
    out.push(read(&a.slice(s![r / 2.., c / 3..])?.neg()?)?);
    // A cast to u8 and back (values shifted into range).
    out.push(read(
        &a.add_scalar(11.0)?
            .to_dtype(DType::U8)?
            .to_dtype(DType::F32)?,
    )?);
    // In place through views: a transposed self-read and a stepped fill.
    let d = a.contiguous()?;
    if r == c {
        d.add_(&d.t().contiguous()?)?;
    } else {
        d.add_(&b.t())?;
    }
    d.slice(s![1..;3, ..;-2])?.fill_(7.0)?;
    d.slice(s![.., c / 2..])?.mul_scalar_(-1)?;
    // Reads of the destination's own buffer far from the write (through a
    // temporary) and close to it (one window).
    let k = (r / 2).max(1);
    d.slice(s![..k, ..])?.add_(&d.slice(s![r - k.., ..;-1])?)?;
    d.slice(s![.., 1..])?
        .sub_(&d.slice(s![.., ..c - 1])?.maximum_scalar(0)?)?;
    out.push(read(&d)?);
    // A copy of a transposed view into a fresh tensor, and a where.
    out.push(read(&b.t().contiguous()?)?);
    let mask = a.gt(&b.t())?;
    out.push(read(&Tensor::where_cond(
        &mask,
        &a,
        &row.broadcast_to([r, c])?,
    )?)?);
    Ok(out)
}

#[test]
fn elementwise_ops_in_windows_match_the_cpu() {
    let cpu = Device::cpu();
    let mut k = 0;
    for dims in [[40, 40], [37, 61], [1, 700], [300, 3], [64, 65]] {
        for dtype in [DType::F32, DType::F16, DType::BF16, DType::I32, DType::I64] {
            let want = program(&cpu, dims, dtype).unwrap();
            k += 1;
            for (name, dev) in capped_for(k) {
                let got = program(dev, dims, dtype).unwrap();
                assert_eq!(got, want, "{name}, {dims:?} {dtype}");
            }
        }
    }
}

#[test]
fn u8_and_bool_in_windows_match_the_cpu() {
    let cpu = Device::cpu();
    let run = |dev: &Device| -> webtensor::Result<(Vec<u8>, Vec<bool>)> {
        let x = Tensor::from_vec(
            (0..3000u32)
                .map(|i| (i * 37 % 251) as u8)
                .collect::<Vec<_>>(),
            [50, 60],
            dev,
        )?;
        let y = x.t().slice(s![..;-1, 3..])?.add_scalar(3)?;
        x.slice(s![10.., ..;7])?.fill_(1)?;
        let z = y.gt(&x.t().slice(s![..;-1, 3..])?)?.logical_not()?;
        Ok((y.contiguous()?.to_vec()?, z.to_vec()?))
    };
    let want = run(&cpu).unwrap();
    for (name, dev) in capped() {
        assert_eq!(run(dev).unwrap(), want, "{name}");
    }
}

/// Reductions of views over many bindings: cut into parts that fit, the
/// parts' results joined (concatenated along kept axes, reduced again
/// along reduced ones).
fn reductions(dev: &Device, dtype: DType) -> webtensor::Result<Vec<Vec<f32>>> {
    let x = Tensor::from_vec(values(40 * 50, 6), [40, 50], dev)?.to_dtype(dtype)?;
    let read = |t: webtensor::Result<Tensor>| -> webtensor::Result<Vec<f32>> {
        t?.to_dtype(DType::F32)?.to_vec()
    };
    let mut out = Vec::new();
    for view in [
        x.clone(),
        x.t(),
        x.slice(s![..;-1, 1..;3])?,
        x.slice(s![3.., ..])?.t().flip(&[0])?,
    ] {
        out.push(read(view.sum(..))?);
        out.push(read(view.sum(0))?);
        out.push(read(view.sum_keepdim(1))?);
        out.push(read(view.max(0))?);
        out.push(read(view.min_keepdim(..))?);
        out.push(read(
            view.abs()?
                .minimum_scalar(2.0)?
                .maximum_scalar(1.0)?
                .prod(1),
        )?);
        out.push(read(view.argmax(1))?);
        out.push(read(view.argmin_keepdim(0))?);
        // Over all of a view: along its flat form, or row by row.
        out.push(read(view.argmax(..))?);
        out.push(read(view.argmin_keepdim(..))?);
        // Indices stay i32 whichever path computed them (the reads above
        // would not tell an f32 index apart).
        for index in [view.argmax(..)?, view.argmin_keepdim(0)?, view.argmax(1)?] {
            assert_eq!(index.dtype(), DType::I32, "{dev} {dtype}");
        }
        if dtype != DType::I32 {
            out.push(read(view.mean(0))?);
            out.push(read(view.var(1, 0))?);
        }
    }
    // bool and u8 widen into i32 and u32.
    let b = x.gt_scalar(0.0)?;
    out.push(read(b.t().sum(1))?);
    let u = x.abs()?.to_dtype(DType::U8)?;
    out.push(read(u.slice(s![..;-1, ..])?.sum(..))?);
    Ok(out)
}

#[test]
fn reductions_of_views_over_many_bindings_match_the_cpu() {
    let cpu = Device::cpu();
    let dtypes = [DType::F32, DType::F16, DType::BF16, DType::I32, DType::I64];
    for (k, dtype) in dtypes.into_iter().enumerate() {
        let want = reductions(&cpu, dtype).unwrap();
        for (name, dev) in capped_for(k) {
            let got = reductions(dev, dtype).unwrap();
            assert_eq!(got.len(), want.len());
            for (k, (g, w)) in got.iter().zip(&want).enumerate() {
                assert_eq!(g.len(), w.len(), "{name} {dtype} result {k}");
                for (a, b) in g.iter().zip(w) {
                    // Sums of these integers are exact; means and
                    // variances are summed in another order (a few f32
                    // ulps), then rounded once: 2 ulps of a half type.
                    let tol =
                        1e-5 * b.abs().max(1.0) + common::half_tol(dtype, 2e-3, 0.0) * b.abs();
                    assert!(
                        a == b || (a - b).abs() <= tol,
                        "{name} {dtype} result {k}: {a} vs {b}"
                    );
                }
            }
        }
    }
}

/// Scans and joins over views spanning many bindings: cut across the
/// lines, or along them with each part carrying on from the one before.
fn scans_and_joins(dev: &Device, dtype: DType) -> webtensor::Result<Vec<Vec<f32>>> {
    let x = Tensor::from_vec(values(40 * 50, 8), [40, 50], dev)?.to_dtype(dtype)?;
    let read = |t: Tensor| -> webtensor::Result<Vec<f32>> { t.to_dtype(DType::F32)?.to_vec() };
    let mut out = Vec::new();
    for view in [x.clone(), x.t(), x.slice(s![..;-1, 1..;3])?] {
        out.push(read(view.cumsum(0)?)?);
        out.push(read(view.cumsum(1)?)?);
        let small = view.abs()?.minimum_scalar(2.0)?.maximum_scalar(1.0)?;
        out.push(read(small.cumprod(1)?)?);
        out.push(read(Tensor::concat(&[&view, &view.flip(&[0])?], 0)?)?);
        out.push(read(Tensor::stack(&[&view, &view], 1)?)?);
    }
    Ok(out)
}

#[test]
fn scans_and_joins_over_many_bindings_match_the_cpu() {
    let cpu = Device::cpu();
    for (k, dtype) in [DType::F32, DType::I32, DType::U8].into_iter().enumerate() {
        let want = scans_and_joins(&cpu, dtype).unwrap();
        for (name, dev) in capped_for(k) {
            assert_eq!(scans_and_joins(dev, dtype).unwrap(), want, "{name} {dtype}");
        }
    }
}

/// Products of operands spanning many bindings: cut along batches, rows,
/// columns and the inner dimension, transposed and broadcast operands.
fn products(dev: &Device, dtype: DType) -> webtensor::Result<Vec<Vec<f32>>> {
    let mk = |dims: &[usize], seed| -> webtensor::Result<Tensor> {
        let n = dims.iter().product();
        Tensor::from_vec(values(n, seed), dims.to_vec(), dev)?
            .mul_scalar(0.25)?
            .to_dtype(dtype)
    };
    let read = |t: Tensor| -> webtensor::Result<Vec<f32>> { t.to_dtype(DType::F32)?.to_vec() };
    let a = mk(&[30, 40], 1)?;
    let b = mk(&[40, 20], 2)?;
    let batch = mk(&[3, 20, 40], 3)?;
    let v = mk(&[40], 4)?;
    Ok(vec![
        read(a.matmul(&b)?)?,
        read(b.t().matmul(&a.t())?)?,
        read(a.slice(s![..;-1, ..])?.matmul(&b.slice(s![.., 1..;2])?)?)?,
        read(batch.matmul(&b)?)?,
        read(batch.matmul(&a.t())?)?,
        read(a.matmul(&v)?)?,
        read(v.matmul(&b)?)?,
    ])
}

#[test]
fn products_over_many_bindings_match_the_cpu() {
    let cpu = Device::cpu();
    for (k, dtype) in [DType::F32, DType::F16, DType::BF16]
        .into_iter()
        .enumerate()
    {
        let want = products(&cpu, dtype).unwrap();
        for (name, dev) in capped_for(k) {
            let got = products(dev, dtype).unwrap();
            for (k, (g, w)) in got.iter().zip(&want).enumerate() {
                assert_eq!(g.len(), w.len(), "{name} {dtype} product {k}");
                // Multiples of 1/4 up to 2.75, 40 at a time: every
                // product and sum is exact in f32 (any order, any cut
                // along k), rounded once to the dtype on both devices.
                assert_eq!(g, w, "{name} {dtype} product {k}");
            }
        }
    }
}

/// An f16 or bf16 product whose operands are cut along k sums the parts
/// in f32 and rounds once, as an uncut product under 8,192 of k does: a
/// sum of 5,000 ones is 5000 in f16 (each part rounded gave 4992), 3,001
/// ones 3000 in f16 and 3008 in bf16 (PyTorch's f32 accumulation, rounded
/// once), whichever operand is transposed.
#[test]
fn half_products_cut_along_k_round_once() {
    for (name, dev) in capped() {
        for (dtype, k, want) in [
            (DType::F16, 5000, 5000.0),
            (DType::F16, 3001, 3000.0),
            (DType::BF16, 3001, 3008.0),
        ] {
            let ones = |dims: [usize; 2]| Tensor::ones(dims, dtype, dev).unwrap();
            let products = [
                ones([1, k]).matmul(&ones([k, 1])).unwrap(),
                ones([2, k]).matmul(&ones([2, k]).t()).unwrap(),
                ones([k, 3]).t().matmul(&ones([k, 2])).unwrap(),
            ];
            for p in products {
                let got: Vec<f32> = p.to_dtype(DType::F32).unwrap().to_vec().unwrap();
                assert!(
                    got.iter().all(|&x| x == want),
                    "{name} {dtype} k = {k}: {got:?}"
                );
            }
        }
    }
}

/// An in-place op reading its own buffer far from where it writes goes
/// through a temporary buffer from the pool: counted by the stats, reused,
/// and held to the memory cap.
#[test]
fn a_far_self_read_takes_its_temporary_from_the_pool() {
    let Some(dev) = common::own_gpu(GpuOptions {
        max_binding_bytes: Some(512),
        ..Default::default()
    }) else {
        return;
    };
    let cpu = Device::cpu();
    let step = |d: &Tensor| d.slice(s![..20, ..])?.add_(&d.slice(s![20.., ..;-1])?);
    let want = Tensor::from_vec(values(40 * 50, 1), [40, 50], &cpu).unwrap();
    step(&want).unwrap();
    let d = Tensor::from_vec(values(40 * 50, 1), [40, 50], &dev).unwrap();
    dev.sync().unwrap();
    let taken = |s: webtensor::DeviceStats| s.buffers_created + s.buffers_reused;
    let before = dev.stats();
    step(&d).unwrap();
    dev.sync().unwrap();
    let first = dev.stats();
    assert_eq!(taken(first) - taken(before), 1, "{first:?}");
    step(&d).unwrap();
    step(&want).unwrap();
    dev.sync().unwrap();
    let second = dev.stats();
    assert_eq!(second.buffers_created, first.buffers_created, "{second:?}");
    assert_eq!(
        second.buffers_reused - first.buffers_reused,
        1,
        "{second:?}"
    );
    assert_eq!(d.to_vec::<f32>().unwrap(), want.to_vec::<f32>().unwrap());
    // No room for the temporary: the flush reports it (at the op when it
    // flushes at once, else at the sync), the tensor that batch was to
    // write is poisoned by it, and the device goes on.
    dev.release_pooled_memory();
    dev.set_memory_cap(Some(dev.stats().bytes_live));
    let r = step(&d).and_then(|()| dev.sync());
    assert!(matches!(r, Err(Error::OutOfMemory { .. })), "{r:?}");
    dev.set_memory_cap(None);
    let e = d.to_vec::<f32>().unwrap_err().to_string();
    assert!(e.contains("failed") && e.contains("memory cap"), "{e}");
    assert!(step(&d).is_err());
    let fresh = Tensor::from_vec(values(40 * 50, 1), [40, 50], &dev).unwrap();
    step(&fresh).unwrap();
    dev.sync().unwrap();
}

/// Indexing through index tensors where the indexed view, the index or
/// the result spans many bindings: take, index_select and gather read
/// across them (the indexed axis cut into parts, each taking the indices
/// that fall in it), scatter and scatter_add write across them with
/// repeated and negative indices (the last duplicate wins, sums in order).
fn indexing(dev: &Device, dtype: DType) -> webtensor::Result<Vec<Vec<f32>>> {
    let x = Tensor::from_vec(values(40 * 50, 9), [40, 50], dev)?.to_dtype(dtype)?;
    let read = |t: Tensor| -> webtensor::Result<Vec<f32>> { t.to_dtype(DType::F32)?.to_vec() };
    let picks: Vec<i32> = (0..90).map(|i| (i * 17 % 79) - 39).collect();
    let cols = Tensor::from_vec(
        picks.iter().map(|i| i.rem_euclid(50) as u32).collect(),
        [3, 30],
        dev,
    )?;
    let mut out = Vec::new();
    for view in [x.clone(), x.t(), x.slice(s![..;-1, 1..;3])?] {
        let (r, c) = (view.dims()[0] as i32, view.dims()[1] as i32);
        let in_rows = Tensor::from_vec(picks.iter().map(|i| i % r).collect(), [90], dev)?;
        out.push(read(view.take(&in_rows, 0)?)?);
        out.push(read(view.index_select(&in_rows, 0)?)?);
        let in_cols = cols.remainder_scalar(c)?;
        out.push(read(view.take(&in_cols, 1)?)?);
        // gather: an index of the view's shape, reversed.
        let g: Vec<i32> = (0..r * c).map(|k| (k * 31 % r) - r / 2).collect();
        let g = Tensor::from_vec(g, [r as usize, c as usize], dev)?.flip(&[1])?;
        out.push(read(view.gather(&g, 0)?)?);
        // scatter and scatter_add along both axes, into copies and in
        // place through the view (repeats: the last wins, sums in order).
        let src = view.mul_scalar(3)?.add_scalar(1)?;
        let s0: Vec<i32> = (0..r * c).map(|k| (k * 7 + k / c) % r).collect();
        let s0 = Tensor::from_vec(s0, [r as usize, c as usize], dev)?;
        out.push(read(view.scatter(&s0, &src, 0)?)?);
        out.push(read(view.scatter_add(&s0, &src, 0)?)?);
        let s1 = s0.t().remainder_scalar(c)?.t();
        let half = s1.slice(s![..r / 2, ..])?;
        out.push(read(view.scatter_add(&half, &src, 1)?)?);
        // In place through a transposed view of a fresh tensor.
        if view.dims() == [50, 40] {
            let target = x.contiguous()?;
            target.t().scatter_(&s0, &src, 0)?;
            out.push(read(target)?);
        }
    }
    Ok(out)
}

#[test]
fn indexing_over_many_bindings_matches_the_cpu() {
    let cpu = Device::cpu();
    let dtypes = [DType::F32, DType::F16, DType::BF16, DType::U8, DType::I64];
    for (k, dtype) in dtypes.into_iter().enumerate() {
        let want = indexing(&cpu, dtype).unwrap();
        for (name, dev) in capped_for(k) {
            assert_eq!(indexing(dev, dtype).unwrap(), want, "{name} {dtype}");
        }
    }
}

/// An index out of range is found across the parts, reported once at the
/// next readback, as for a tensor that fits one binding.
#[test]
fn an_index_out_of_range_across_bindings_is_reported() {
    for (name, dev) in &own_capped() {
        let x = Tensor::ones([40, 50], DType::F32, dev).unwrap();
        let i = Tensor::from_vec(vec![3i32, 40, 1], [3], dev).unwrap();
        let r = x.take(&i, 0).and_then(|t| t.to_vec::<f32>());
        assert!(
            matches!(
                r,
                Err(Error::Index {
                    op: "take",
                    index: 40,
                    axis: 0,
                    size: 40
                })
            ),
            "{name}: {r:?}"
        );
        let j = Tensor::from_vec(vec![0i32, -51], [1, 2], dev).unwrap();
        let src = Tensor::ones([1, 2], DType::F32, dev).unwrap();
        let r = x.scatter(&j, &src, 1).and_then(|t| t.to_vec::<f32>());
        assert!(
            matches!(
                r,
                Err(Error::Index {
                    op: "scatter",
                    index: -51,
                    axis: 1,
                    size: 50
                })
            ),
            "{name}: {r:?}"
        );
        // The device goes on.
        assert_eq!(x.sum(..).unwrap().item::<f32>().unwrap(), 2000.0);
    }
}

/// Ops along lines over views spanning many bindings: softmax and
/// log_softmax (in parts across the lines where a line fits half a
/// binding, composed from reductions where it does not), sort, argsort and
/// topk (parts across the lines, through a compact copy of a part whose
/// lines are strided wider than a binding).
fn along_lines(dev: &Device, dtype: DType) -> webtensor::Result<Vec<Vec<f32>>> {
    let x = Tensor::from_vec(values(40 * 50, 10), [40, 50], dev)?
        .mul_scalar(0.25)?
        .to_dtype(dtype)?;
    let read = |t: Tensor| -> webtensor::Result<Vec<f32>> { t.to_dtype(DType::F32)?.to_vec() };
    let mut out = Vec::new();
    for view in [x.clone(), x.t(), x.slice(s![..;-1, 1..;3])?] {
        for axis in [0, 1] {
            out.push(read(view.sort(
                axis,
                [SortOrder::Ascending, SortOrder::Descending][axis as usize],
            )?)?);
            out.push(read(view.argsort(axis, SortOrder::Ascending)?)?);
            let (values, indices) = view.topk(5, axis, TopK::Largest)?;
            out.push(read(values)?);
            out.push(read(indices)?);
            if dtype.is_float() {
                out.push(read(view.softmax(axis)?)?);
                out.push(read(view.log_softmax(axis)?)?);
            }
        }
    }
    Ok(out)
}

#[test]
fn ops_along_lines_over_many_bindings_match_the_cpu() {
    let cpu = Device::cpu();
    let dtypes = [DType::F32, DType::F16, DType::BF16, DType::I32, DType::I64];
    for (k, dtype) in dtypes.into_iter().enumerate() {
        let want = along_lines(&cpu, dtype).unwrap();
        for (name, dev) in capped_for(k) {
            let got = along_lines(dev, dtype).unwrap();
            assert_eq!(got.len(), want.len());
            for (k, (g, w)) in got.iter().zip(&want).enumerate() {
                assert_eq!(g.len(), w.len(), "{name} {dtype} result {k}");
                for (a, b) in g.iter().zip(w) {
                    let tol = 1e-5 + common::half_tol(dtype, 2e-3, 0.0);
                    assert!(
                        a == b || (a - b).abs() <= tol * b.abs().max(1.0),
                        "{name} {dtype} result {k}: {a} vs {b}"
                    );
                }
            }
        }
    }
}

fn searches(dev: &Device, dtype: DType) -> webtensor::Result<Vec<Vec<f32>>> {
    // 600 ascending edges in runs of 100 (so that some parts of a cut row
    // are constant), -0 beside +0, NaN last.
    let mut edges: Vec<f32> = (0..600).map(|i| (i / 100) as f32 * 1.5 - 4.0).collect();
    edges[250] = -0.0;
    edges[599] = f32::NAN;
    let queries: Vec<f32> = (0..300)
        .map(|i| match i % 7 {
            0 => f32::NAN,
            1 => -0.0,
            _ => ((i * 37) % 23) as f32 * 0.75 - 8.0,
        })
        .collect();
    let cast = |v: &[f32], shape: &[usize]| -> webtensor::Result<Tensor> {
        // Integers take 99 for NaN, keeping the edges sorted.
        let v: Vec<f32> = v
            .iter()
            .map(|&x| {
                if x.is_nan() && !dtype.is_float() {
                    99.0
                } else {
                    x
                }
            })
            .collect();
        Tensor::from_vec(v, shape.to_vec(), dev)?.to_dtype(dtype)
    };
    let (sorted, at) = (cast(&edges, &[600])?, cast(&queries, &[300])?);
    let descending = sorted.flip(&[0])?;
    let flat = Tensor::full([600], 1.0, dtype, dev)?;
    // Rows of their own: [4, 150] sorted rows and [4, 75] values.
    let rows = sorted.reshape([4, 150])?;
    let per_row = at.reshape([4, 75])?;
    let mask = Tensor::from_slice(&values(2000, 7), [40, 50], dev)?.gt_scalar(2.0)?;
    let x = Tensor::from_slice(&values(2000, 3), [40, 50], dev)?.to_dtype(dtype)?;
    let mut outs = vec![
        sorted.searchsorted(&at, Side::Left)?,
        sorted.searchsorted(&at, Side::Right)?,
        rows.searchsorted(&per_row, Side::Left)?,
        rows.t()
            .contiguous()?
            .t()
            .searchsorted(&per_row, Side::Right)?,
        at.digitize(&sorted, false)?,
        at.digitize(&sorted, true)?,
        at.digitize(&descending, false)?,
        at.digitize(&descending, true)?,
        sorted.searchsorted(&sorted, Side::Left)?,
        // Bins of one value ascend (NumPy's, and the one-kernel path's:
        // last < first, strictly); a cut row took them as descending for
        // digitize(right = false).
        at.digitize(&flat, false)?,
        at.digitize(&flat, true)?,
        x.masked_select(&mask)?,
        mask.argwhere()?,
    ];
    outs.extend(mask.nonzero()?);
    outs.iter()
        .map(|t| t.to_dtype(DType::F32)?.to_vec())
        .collect()
}

#[test]
fn searches_and_selections_over_many_bindings_match_the_cpu() {
    let cpu = Device::cpu();
    // NumPy 2.4: digitize([0, 1, 5], ones(600)) with right false and true.
    for (name, dev) in capped_for(0).into_iter().chain(&[("cpu", cpu.clone())]) {
        let flat = Tensor::full([600], 1.0, DType::F32, dev).unwrap();
        let x = Tensor::from_slice(&[0.0f32, 1.0, 5.0], [3], dev).unwrap();
        for (right, want) in [(false, [0, 600, 600]), (true, [0, 0, 600])] {
            let got = x.digitize(&flat, right).unwrap().to_vec::<i64>().unwrap();
            assert_eq!(got, want, "{name}: right {right}");
        }
    }
    for (k, dtype) in [DType::F32, DType::I32, DType::F16].into_iter().enumerate() {
        let want = searches(&cpu, dtype).unwrap();
        for (name, dev) in capped_for(k) {
            let got = searches(dev, dtype).unwrap_or_else(|e| panic!("{name} {dtype}: {e}"));
            for (j, (g, w)) in got.iter().zip(&want).enumerate() {
                let same = g.len() == w.len()
                    && g.iter()
                        .zip(w)
                        .all(|(a, b)| a == b || a.is_nan() && b.is_nan());
                assert!(same, "{name} {dtype} result {j}: {g:?} vs {w:?}");
            }
        }
    }
}

fn counts(dev: &Device, dtype: DType) -> webtensor::Result<Vec<Vec<f32>>> {
    let index: Vec<f32> = (0..2000).map(|i| ((i * 37) % 701) as f32).collect();
    let index = Tensor::from_vec(index, [2000], dev)?;
    // Quarter weights: sums exact in f32 whichever order they add in.
    let weights = Tensor::from_vec(values(2000, 4), [2000], dev)?.mul_scalar(0.25)?;
    let mut data = values(2000, 9);
    data[5] = f32::NAN;
    data[6] = 30.0;
    let data = Tensor::from_vec(data, [2000], dev)?
        .mul_scalar(0.5)?
        .to_dtype(dtype)?;
    let (hist, edges) = data.histogram(300, Some((-4.0, 5.0)), None, false)?;
    let (weighted, _) = data.histogram(300, Some((-4.0, 5.0)), Some(&weights), false)?;
    let (density, _) = data.histogram(257, Some((-4.0, 5.0)), None, true)?;
    // The data's own range: NaN left out (NumPy refuses a NaN range).
    let clean = data.narrow(0, 6, 1994)?;
    let (found, found_edges) = clean.histogram(200, None, None, false)?;
    let outs = [
        index.to_dtype(DType::I32)?.bincount(None, 0)?,
        index.to_dtype(DType::I64)?.bincount(Some(&weights), 900)?,
        index.gt_scalar(300.0)?.bincount(None, 1000)?,
        hist,
        edges,
        weighted,
        density,
        found,
        found_edges,
    ];
    outs.iter()
        .map(|t| t.to_dtype(DType::F32)?.to_vec())
        .collect()
}

#[test]
fn counts_over_many_bindings_match_the_cpu() {
    let cpu = Device::cpu();
    for (k, dtype) in [DType::F32, DType::I32, DType::F16].into_iter().enumerate() {
        let want = counts(&cpu, dtype).unwrap();
        for (name, dev) in capped_for(k) {
            let got = counts(dev, dtype).unwrap_or_else(|e| panic!("{name} {dtype}: {e}"));
            for (j, (g, w)) in got.iter().zip(&want).enumerate() {
                assert_eq!(g.len(), w.len(), "{name} {dtype} result {j}");
                for (a, b) in g.iter().zip(w) {
                    assert!(
                        (a - b).abs() <= 1e-6 * b.abs(),
                        "{name} {dtype} result {j}: {a} vs {b}"
                    );
                }
            }
        }
    }
}

#[test]
fn ops_that_do_not_split_refuse_naming_the_op() {
    for (name, dev) in capped() {
        let x = Tensor::ones([64, 64], DType::F32, dev).unwrap();
        // A custom body may read any coordinate, so no window is known.
        let double = webtensor::CustomKernel::new(
            "double",
            &[("a", DType::F32)],
            &[],
            ("out", DType::F32),
            "out = 2.0 * a;",
        )
        .unwrap();
        // One line whose sort scratch is over the binding.
        let long = Tensor::ones([200], DType::F32, dev).unwrap();
        let checks: [(&str, webtensor::Result<Tensor>); 2] = [
            ("CustomKernel::call", double.call(&[&x], &[])),
            ("sort", long.sort(0, SortOrder::Ascending)),
        ];
        for (op, r) in checks {
            match r.and_then(|t| t.to_vec::<f32>().map(|_| t)) {
                Err(Error::TooLarge { op: got, what, .. }) => {
                    assert!(what.contains("binding"), "{name} {op}: {what}");
                    assert_eq!(got, op, "{name}");
                }
                other => panic!("{name} {op}: expected TooLarge, got {other:?}"),
            }
        }
        // Small tensors on the same device run everything.
        let small = Tensor::ones([4, 4], DType::F32, dev).unwrap();
        assert_eq!(
            double
                .call(&[&small.matmul(&small).unwrap()], &[])
                .unwrap()
                .sum(..)
                .unwrap()
                .item::<f32>()
                .unwrap(),
            128.0
        );
    }
}

/// Reductions whose output outgrows one binding while their input fits
/// (a broadcast view, u8 and bool summed to wider integers) run in parts
/// along their kept axes; they were refused as `TooLarge` naming `reduce`.
#[test]
fn reductions_whose_output_outgrows_a_binding_run_in_parts() {
    let run = |dev: &Device| -> webtensor::Result<Vec<Vec<f32>>> {
        let row = Tensor::from_slice(&[1.5f32, -2.0, 3.25], [1, 3], dev)?;
        let wide = row.broadcast_to([300, 3])?;
        let column = Tensor::from_slice(&values(7, 2), [7, 1], dev)?.broadcast_to([7, 90])?;
        let bytes = Tensor::from_slice(&values(300, 4), [150, 2], dev)?;
        let (u8s, bools) = (bytes.abs()?.to_dtype(DType::U8)?, bytes.gt_scalar(0.0)?);
        let outs = [
            wide.sum(1)?,
            wide.mean(1)?,
            wide.var(1, 1)?,
            wide.max(1)?,
            wide.argmax(1)?,
            column.sum(0)?,
            column.prod(0)?,
            u8s.sum(1)?,
            bools.sum(1)?,
            bools.any(1)?,
        ];
        Ok(outs.iter().map(common::read_f32).collect())
    };
    let want = run(&Device::cpu()).unwrap();
    for (k, (name, dev)) in capped().iter().enumerate() {
        if k > 0 && !common::long_tests() {
            break;
        }
        let got = run(dev).unwrap_or_else(|e| panic!("{name}: {e}"));
        for (j, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_eq!(g.len(), w.len(), "{name} output {j}");
            for (a, b) in g.iter().zip(w) {
                assert!(
                    (a - b).abs() <= 1e-5 * b.abs().max(1.0),
                    "{name} output {j}: {a} vs {b}"
                );
            }
        }
    }
}

/// A request that fits one binding is never rounded past it. The pool
/// serves buckets up to 25% above a request, and a binding that is not a
/// power of two (an H200's 2^31 - 4 bytes; 1,000 here) lies inside a
/// bucket: ops that bind a buffer whole (sort scratch, reduction outputs,
/// custom-kernel operands ...) refused tensors that fit.
#[test]
fn requests_under_a_binding_are_not_rounded_past_it() {
    let Some(dev) = common::own_gpu(GpuOptions {
        max_binding_bytes: Some(1000),
        ..Default::default()
    }) else {
        return;
    };
    let cpu = Device::cpu();
    let double = webtensor::CustomKernel::new(
        "double",
        &[("a", DType::F32)],
        &[],
        ("out", DType::F32),
        "out = 2.0 * a;",
    )
    .unwrap();
    // 900, 930 and 960 bytes: buckets of 1,024.
    let run = |dev: &Device| -> webtensor::Result<Vec<Vec<f32>>> {
        // Distinct values (37 is prime to 225), so argsort has one answer.
        let distinct: Vec<f32> = (0..225)
            .map(|i| ((i * 37) % 225) as f32 / 16.0 - 7.0)
            .collect();
        let x = Tensor::from_slice(&distinct, [225], dev)?;
        let b = Tensor::from_slice(&values(930, 5), [930], dev)?.gt_scalar(0.0)?;
        let m = x.reshape([15, 15])?;
        // A sort's scratch is twice the line: 960 bytes.
        let line = x.narrow(0, 0, 120)?;
        let outs = [
            line.sort(0, SortOrder::Descending)?,
            line.argsort(0, SortOrder::Ascending)?
                .to_dtype(DType::F32)?,
            b.sum(..)?.to_dtype(DType::F32)?,
            b.reshape([30, 31])?
                .to_dtype(DType::I32)?
                .cumsum(1)?
                .to_dtype(DType::F32)?,
            m.softmax(1)?,
            m.matmul(&m)?,
            if dev.is_gpu() {
                double.call(&[&x], &[])?
            } else {
                x.mul_scalar(2.0)?
            },
        ];
        Ok(outs.iter().map(common::read_f32).collect())
    };
    let want = run(&cpu).unwrap();
    let got = run(&dev).unwrap();
    for (k, (g, w)) in got.iter().zip(&want).enumerate() {
        assert_eq!(g.len(), w.len(), "output {k}");
        for (a, b) in g.iter().zip(w) {
            assert!(
                (a - b).abs() <= 1e-5 * b.abs().max(1.0),
                "output {k}: {a} vs {b}"
            );
        }
    }
}

fn cases() -> u32 {
    common::cases(24, 64)
}

/// One random elementwise step over the two slots.
#[derive(Debug, Clone)]
struct Step {
    /// Which view of slot `src` to read: transposed, flipped, stepped.
    view: u8,
    op: u8,
    scalar: i8,
    /// Write in place through a view of slot 0 instead of replacing slot 1.
    in_place: bool,
}

fn apply(slots: &mut [Tensor; 2], step: &Step) -> webtensor::Result<()> {
    let [a, b] = &*slots;
    let view = |t: &Tensor| -> webtensor::Result<Tensor> {
        match step.view % 4 {
            0 => Ok(t.clone()),
            1 => Ok(t.t()),
            2 => t.flip(&[0]),
            _ => t.flip(&[1]),
        }
    };
    let x = view(b)?;
    let s = f64::from(step.scalar);
    let r = match step.op % 5 {
        0 => a.add(&x)?,
        1 => a.sub(&x)?.mul_scalar(s)?,
        2 => a.maximum(&x)?.add_scalar(s)?,
        3 => x.abs()?.minimum_scalar(40.0)?,
        _ => a.mul(&x)?.clamp(-50.0, 50.0)?,
    };
    if step.in_place {
        let target = if step.view.is_multiple_of(2) {
            a.clone()
        } else {
            a.t()
        };
        target.assign(&r.t().t())?;
        target.slice(s![..;2, 1..])?.add_scalar_(s)?;
    } else {
        slots[1] = r;
    }
    Ok(())
}

fn chain(dev: &Device, n: usize, steps: &[Step]) -> Vec<f32> {
    let mk = |seed| Tensor::from_vec(values(n * n, seed), [n, n], dev).unwrap();
    let mut slots = [mk(4), mk(5)];
    for step in steps {
        apply(&mut slots, step).unwrap();
    }
    let [a, b] = &slots;
    let mut v: Vec<f32> = a.to_vec().unwrap();
    v.extend(b.to_vec::<f32>().unwrap());
    v
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: cases(),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// Random chains of elementwise ops through views, with handles
    /// replaced (fusion folds the dropped ones), agree with the CPU on
    /// every capped device.
    #[test]
    fn random_chains_in_windows_agree_with_the_cpu(
        n in 9usize..48,
        steps in prop::collection::vec(
            (any::<u8>(), any::<u8>(), -3i8..4, any::<bool>())
                .prop_map(|(view, op, scalar, in_place)| Step { view, op, scalar, in_place }),
            1..12,
        )
    ) {
        let want = chain(&Device::cpu(), n, &steps);
        for (name, dev) in capped_for(n) {
            prop_assert_eq!(&chain(dev, n, &steps), &want, "{}", name);
        }
    }
}

/// A GPU device binding at most 128 MiB at once (lavapipe's and
/// WebGPU's default; an adapter binding more is held to it), f16 packed
/// or not, that can hold a buffer of `bytes`; `None` without a GPU, or
/// when the adapter's largest buffer is smaller (said on stderr: there is
/// nothing this test can do there).
fn gpu_binding_128_mib(bytes: u64, force_packed_f16: bool) -> Option<Device> {
    let dev = common::own_gpu(GpuOptions {
        max_binding_bytes: Some(128 << 20),
        force_packed_f16,
        ..Default::default()
    })?;
    let info = dev.info();
    assert!(info.max_storage_binding <= 128 << 20, "{info}");
    if info.max_buffer_size < bytes {
        // Under WEBTENSOR_REQUIRE_GPU=1 (CI's lavapipe holds them) a
        // failure, not a silent pass.
        assert!(
            !common::require_gpu(),
            "{info} holds no buffer of {bytes} bytes"
        );
        eprintln!("not run: {info} holds no buffer of {bytes} bytes");
        return None;
    }
    Some(dev)
}

/// 200 MiB of f32 on 128 MiB bindings: created, added to a
/// transposed view, run through a fused chain, sliced at the far end,
/// read back, reduced over rows, columns and all, multiplied from either
/// side, summed cumulatively along both axes, indexed from both ends and
/// scattered into, equal to the host's values.
#[test]
#[ignore = "long: tensors of hundreds of MiB (WEBTENSOR_LONG_TESTS=1 cargo test -- --include-ignored)"]
fn a_200_mib_f32_tensor_works() {
    let Some(dev) = gpu_binding_128_mib(200 << 20, false) else {
        return;
    };
    let n = 7240; // 7240^2 * 4 bytes = 200 MiB
    let base: Vec<f32> = (0..n * n).map(|i| (i % 1021) as f32).collect();
    let a = Tensor::from_slice(&base, [n, n], &dev).unwrap();
    let sum = a.add(&a.t()).unwrap();
    let chain = sum
        .mul_scalar(0.5)
        .unwrap()
        .sub_scalar(3.0)
        .unwrap()
        .abs()
        .unwrap();
    let far = chain
        .slice(s![n - 3.., n - 5..])
        .unwrap()
        .to_vec::<f32>()
        .unwrap();
    let want_at = |i: usize, j: usize| ((base[i * n + j] + base[j * n + i]) * 0.5 - 3.0).abs();
    let mut k = 0;
    for i in n - 3..n {
        for j in n - 5..n {
            assert_eq!(far[k], want_at(i, j), "[{i}, {j}]");
            k += 1;
        }
    }
    let all = chain.to_vec::<f32>().unwrap();
    for i in (0..n).step_by(97) {
        for j in (0..n).step_by(89) {
            assert_eq!(all[i * n + j], want_at(i, j), "[{i}, {j}]");
        }
    }
    // The whole first and last rows, across every window.
    for j in 0..n {
        assert_eq!(all[j], want_at(0, j));
        assert_eq!(all[(n - 1) * n + j], want_at(n - 1, j));
    }
    drop(all);
    // Reductions: over rows, over columns (a transposed view), over all.
    let close = |got: f32, want: f64, what: &str| {
        assert!(
            ((got as f64) - want).abs() <= 1e-5 * want.abs().max(1.0),
            "{what}: {got} vs {want}"
        );
    };
    let mut rows = vec![0f64; n];
    let mut cols = vec![0f64; n];
    for i in 0..n {
        for j in 0..n {
            rows[i] += base[i * n + j] as f64;
            cols[j] += base[i * n + j] as f64;
        }
    }
    let row_sums: Vec<f32> = a.sum(1).unwrap().to_vec().unwrap();
    let col_sums: Vec<f32> = a.t().sum(1).unwrap().to_vec().unwrap();
    for i in 0..n {
        close(row_sums[i], rows[i], &format!("row {i}"));
        close(col_sums[i], cols[i], &format!("column {i}"));
    }
    let total: f64 = rows.iter().sum();
    close(a.sum(..).unwrap().item::<f32>().unwrap(), total, "sum");
    close(
        a.mean(..).unwrap().item::<f32>().unwrap(),
        total / (n * n) as f64,
        "mean",
    );
    let max = a.slice(s![..;-1, 1..]).unwrap().max(0).unwrap();
    assert_eq!(max.to_vec::<f32>().unwrap().len(), n - 1);
    // Arg reductions along rows and columns (cut along the reduced axis).
    let first_max = |line: &mut dyn Iterator<Item = f32>| {
        let v: Vec<f32> = line.collect();
        let m = v.iter().cloned().fold(f32::MIN, f32::max);
        v.iter().position(|&x| x == m).unwrap() as i32
    };
    let along_rows: Vec<i32> = a.argmax(1).unwrap().to_vec().unwrap();
    let along_cols: Vec<i32> = a.argmax(0).unwrap().to_vec().unwrap();
    for i in (0..n).step_by(97) {
        assert_eq!(
            along_rows[i],
            first_max(&mut (0..n).map(|j| base[i * n + j])),
            "row {i}"
        );
        assert_eq!(
            along_cols[i],
            first_max(&mut (0..n).map(|j| base[j * n + i])),
            "column {i}"
        );
    }
    // Over all of the transposed view (no flat form: row by row).
    let mut best = (f32::MIN, 0);
    for r in 0..n {
        for c in 0..n {
            if base[c * n + r] > best.0 {
                best = (base[c * n + r], r * n + c);
            }
        }
    }
    let flat: i32 = a.t().argmax(..).unwrap().item().unwrap();
    assert_eq!(flat as usize, best.1, "argmax over all of a.t()");
    // A product with the large operand on either side.
    let w: Vec<f32> = (0..n * 2).map(|i| (i % 5) as f32 - 2.0).collect();
    let wt = Tensor::from_slice(&w, [n, 2], &dev).unwrap();
    let left: Vec<f32> = a.matmul(&wt).unwrap().to_vec().unwrap();
    let right: Vec<f32> = wt.t().matmul(&a).unwrap().to_vec().unwrap();
    for i in (0..n).step_by(53) {
        for c in 0..2 {
            let l: f64 = (0..n)
                .map(|j| base[i * n + j] as f64 * w[j * 2 + c] as f64)
                .sum();
            let r: f64 = (0..n)
                .map(|j| w[j * 2 + c] as f64 * base[j * n + i] as f64)
                .sum();
            close(left[i * 2 + c], l, &format!("(a @ w)[{i}, {c}]"));
            close(right[c * n + i], r, &format!("(w.t @ a)[{c}, {i}]"));
        }
    }
    // Cumulative sums along rows and down columns.
    let along = a.cumsum(1).unwrap();
    let down = a.cumsum(0).unwrap();
    for i in [0, n / 2, n - 1] {
        let row: Vec<f32> = along.slice(s![i, ..]).unwrap().to_vec().unwrap();
        let col: Vec<f32> = down.slice(s![.., i]).unwrap().to_vec().unwrap();
        let (mut r, mut c) = (0f64, 0f64);
        for j in 0..n {
            r += base[i * n + j] as f64;
            c += base[j * n + i] as f64;
            close(row[j], r, &format!("cumsum(1)[{i}, {j}]"));
            close(col[j], c, &format!("cumsum(0)[{j}, {i}]"));
        }
    }
    drop((along, down));
    // Rows and columns picked from both ends (across the bindings), one
    // element per row gathered, and rows scattered in place.
    let picks = [n as i32 - 1, 0, (n / 2) as i32, -2];
    let idx = Tensor::from_slice(&picks, [4], &dev).unwrap();
    let at = |k: i32| k.rem_euclid(n as i32) as usize;
    let rows: Vec<f32> = a.take(&idx, 0).unwrap().to_vec().unwrap();
    let cols: Vec<f32> = a.take(&idx, 1).unwrap().to_vec().unwrap();
    for (p, &k) in picks.iter().enumerate() {
        for j in (0..n).step_by(7) {
            assert_eq!(rows[p * n + j], base[at(k) * n + j], "take row {k}");
            assert_eq!(cols[j * 4 + p], base[j * n + at(k)], "take column {k}");
        }
    }
    let per_row: Vec<i32> = (0..n).map(|i| ((i * 31) % n) as i32).collect();
    let per_row_idx = Tensor::from_slice(&per_row, [n, 1], &dev).unwrap();
    let one_each: Vec<f32> = a.gather(&per_row_idx, 1).unwrap().to_vec().unwrap();
    for i in 0..n {
        assert_eq!(
            one_each[i],
            base[i * n + per_row[i] as usize],
            "gather row {i}"
        );
    }
    let targets = Tensor::from_slice(&[n as i32 - 1, 1], [2, 1], &dev)
        .unwrap()
        .broadcast_to([2, n])
        .unwrap()
        .contiguous()
        .unwrap();
    let src = Tensor::from_slice(&[-1.0f32, -2.0], [2, 1], &dev)
        .unwrap()
        .broadcast_to([2, n])
        .unwrap()
        .contiguous()
        .unwrap();
    a.scatter_(&targets, &src, 0).unwrap();
    let ends: Vec<f32> = a.take(&idx, 0).unwrap().to_vec().unwrap();
    assert!(ends[..n].iter().all(|&v| v == -1.0), "row n - 1 scattered");
    assert_eq!(&ends[n..n + 5], &base[..5], "row 0 untouched");
    let second: Vec<f32> = a.slice(s![1, ..]).unwrap().to_vec().unwrap();
    assert!(second.iter().all(|&v| v == -2.0), "row 1 scattered");
}

/// 600 MiB of u8 and 300 MiB of f16 (packed and native): created, cast,
/// written in place at the far end, summed, scattered into, indexed and
/// read back.
#[test]
#[ignore = "long: tensors of hundreds of MiB (WEBTENSOR_LONG_TESTS=1 cargo test -- --include-ignored)"]
fn a_600_mib_u8_tensor_and_a_300_mib_f16_tensor_work() {
    let Some(dev) = gpu_binding_128_mib(600 << 20, false) else {
        return;
    };
    let n = 600 << 20;
    let x = Tensor::zeros([n], DType::U8, &dev).unwrap();
    x.slice(s![n - 10..]).unwrap().fill_(9).unwrap();
    x.slice(s![..;(1 << 20)]).unwrap().add_scalar_(5).unwrap();
    let v: Vec<u8> = x.to_vec().unwrap();
    // Each MiB: a 5, then zeros (compared as slices: memcmp, fast in debug).
    let zeros = vec![0u8; 1 << 20];
    for (k, mib) in v.chunks(1 << 20).enumerate() {
        assert_eq!(mib[0], 5, "u8 element {}", k << 20);
        let rest = if k == 599 {
            &mib[1..mib.len() - 10]
        } else {
            &mib[1..]
        };
        assert!(rest == &zeros[..rest.len()], "MiB {k} holds stray values");
    }
    assert_eq!(&v[n - 10..], &[9; 10]);
    drop(v);
    // Sums across the windows, into u32.
    let total: u32 = x.sum(..).unwrap().item().unwrap();
    assert_eq!(total, 600 * 5 + 10 * 9);
    let tail: Vec<u32> = x
        .reshape([600, 1 << 20])
        .unwrap()
        .sum(1)
        .unwrap()
        .to_vec()
        .unwrap();
    assert_eq!(&tail[598..], &[5, 5 + 90]);
    // Scattered into and picked from across the bindings.
    let far = [n as i32 - 3, 1 << 20, 7, (300 << 20) + 1];
    let idx = Tensor::from_slice(&far, [4], &dev).unwrap();
    let src = Tensor::from_slice(&[11u8, 12, 13, 14], [4], &dev).unwrap();
    x.scatter_(&idx, &src, 0).unwrap();
    let picked: Vec<u8> = x.take(&idx, 0).unwrap().to_vec().unwrap();
    assert_eq!(picked, [11, 12, 13, 14]);
    let around: Vec<u8> = x
        .slice(s![(1 << 20) - 1..(1 << 20) + 2])
        .unwrap()
        .to_vec()
        .unwrap();
    assert_eq!(around, [0, 12, 0]);
    drop(x);
    for dev in [dev]
        .into_iter()
        .chain(gpu_binding_128_mib(300 << 20, true))
    {
        let m = 150 << 20;
        let h = Tensor::ones([m], DType::F16, &dev).unwrap();
        h.slice(s![..;-3]).unwrap().mul_scalar_(-2.0).unwrap();
        let f = h.slice(s![m - 6..]).unwrap().to_dtype(DType::F32).unwrap();
        let got: Vec<f32> = f.to_vec().unwrap();
        let want: Vec<f32> = (m - 6..m)
            .map(|i| if (m - 1 - i) % 3 == 0 { -2.0 } else { 1.0 })
            .collect();
        assert_eq!(got, want, "{}", dev.info());
        let ends = Tensor::from_slice(&[0u32, m as u32 - 1], [2], &dev).unwrap();
        let values = Tensor::from_slice(&[0.5f32, 0.25], [2], &dev)
            .unwrap()
            .to_dtype(DType::F16)
            .unwrap();
        h.scatter_add_(&ends, &values, 0).unwrap();
        let picked = h.take(&ends, 0).unwrap().to_dtype(DType::F32).unwrap();
        assert_eq!(
            picked.to_vec::<f32>().unwrap(),
            [1.5, -1.75],
            "{}",
            dev.info()
        );
    }
}

/// Reductions of more elements per output than a GPU kernel counts in 32
/// bits (issue 44: a sum of 2^32 + 8 broadcast ones gave 8): cut into
/// parts. Long: each reads 2^32 elements (about 18 s on lavapipe).
#[test]
#[ignore = "long: 2^32 elements read per reduction (WEBTENSOR_LONG_TESTS=1 runs it)"]
fn gpu_reductions_past_2_pow_32_elements_count_them_all() {
    let Some(dev) = common::gpu() else {
        return;
    };
    let n = (1usize << 32) + 8;
    let ones = Tensor::ones([1], DType::I64, &dev)
        .unwrap()
        .broadcast_to([n])
        .unwrap();
    assert_eq!(
        ones.sum(..).unwrap().to_vec::<i64>().unwrap(),
        vec![n as i64]
    );
    // Two axes, each within 32 bits, their product past it.
    let grid = Tensor::ones([1, 1], DType::F32, &dev)
        .unwrap()
        .broadcast_to([1 << 16, (1 << 16) + 1])
        .unwrap();
    let mean = grid.mean(..).unwrap().to_vec::<f32>().unwrap()[0];
    assert!((mean - 1.0).abs() <= 1e-6, "mean {mean}");
}

/// Products past one grid axis of output tiles (more than 1,048,560 rows
/// or columns; with few columns a 64-row tile ran out at 4,194,240 rows)
/// run in parts; an i64 product (no GPU kernel: elementwise products and
/// sums) holds a bounded part of its 157 million products at a time.
#[test]
#[ignore = "long: products of 4.3 million rows (WEBTENSOR_LONG_TESTS=1 cargo test -- --include-ignored)"]
fn products_past_the_grid_and_wide_integer_products_run_in_parts() {
    let Some(dev) = common::own_gpu(GpuOptions::default()) else {
        return;
    };
    let m = 4_300_000;
    let a: Vec<f32> = (0..m * 3).map(|i| (i % 7) as f32 - 3.0).collect();
    let w: Vec<f32> = (0..9).map(|i| i as f32 - 4.0).collect();
    let want: Vec<f32> = (0..m * 3)
        .map(|p| (0..3).map(|k| a[p / 3 * 3 + k] * w[k * 3 + p % 3]).sum())
        .collect();
    let x = Tensor::from_slice(&a, [m, 3], &dev).unwrap();
    let y = Tensor::from_slice(&w, [3, 3], &dev).unwrap();
    assert_eq!(x.matmul(&y).unwrap().to_vec::<f32>().unwrap(), want);
    // The wide product: xᵀ's columns.
    let wide = y.matmul(&x.t()).unwrap().to_vec::<f32>().unwrap();
    let tall = x.matmul(&y.t()).unwrap().to_vec::<f32>().unwrap();
    for (k, v) in wide.iter().enumerate() {
        assert_eq!(*v, tall[(k % m) * 3 + k / m], "wide element {k}");
    }
    // i64: against the CPU's, and with its products' memory bounded (the
    // whole m x k x n of them is 1.2 GiB).
    let cpu = Device::cpu();
    let ints = |n: usize, rows: usize, seed: i64| -> Vec<i64> {
        (0..n * rows)
            .map(|i| (i as i64 * seed) % 1_000_003 - 500_000)
            .collect()
    };
    let (p, q) = (ints(1024, 512, 7919), ints(512, 300, 104_729));
    let on = |dev: &Device| {
        let x = Tensor::from_slice(&p, [1024, 512], dev).unwrap();
        let y = Tensor::from_slice(&q, [512, 300], dev).unwrap();
        x.matmul(&y).unwrap().to_vec::<i64>().unwrap()
    };
    assert_eq!(on(&dev), on(&cpu));
    // The device's peak over the whole test (the f32 products' 150 MiB
    // among it).
    let peak = dev.stats().peak_bytes_live;
    assert!(peak < 256 << 20, "peak {peak} bytes");
}

/// Empty tensors with an axis past what the kernels count (2^48, 2^40)
/// reduce and index as NumPy does, on every device: to empty results,
/// where a GPU cut the long axis into too many parts, added i32 part
/// offsets to argmax's indices past i32, and checked `index_select`'s
/// indices against a real line of the axis's length (2^40 bytes).
#[test]
fn empty_views_of_huge_axes_reduce_and_index_as_numpy() {
    let (long, longer) = (1usize << 40, 1usize << 48);
    // Devices of this test's own: it makes index faults.
    for dev in common::own_devices() {
        let tall = Tensor::zeros([longer, 0], DType::F32, &dev).unwrap();
        let wide = Tensor::zeros([0, longer], DType::F32, &dev).unwrap();
        let sums = [
            ("sum(0)", tall.sum(0).unwrap()),
            ("max(0)", tall.max(0).unwrap()),
            ("var(0)", tall.var(0, 0).unwrap()),
            ("any(0)", tall.any(0).unwrap()),
            ("sum(1)", wide.sum(1).unwrap()),
        ];
        for (what, t) in sums {
            assert_eq!(t.dims(), &[0], "{what} on {dev}");
            assert_eq!(
                t.to_vec::<u8>().map(|v| v.len()).unwrap_or(0),
                0,
                "{what} on {dev}"
            );
        }
        let arg = Tensor::zeros([long, 0], DType::F32, &dev)
            .unwrap()
            .argmax(0)
            .unwrap();
        assert_eq!(
            (arg.dims(), arg.dtype()),
            (&[0usize][..], DType::I32),
            "{dev}"
        );
        let three = Tensor::zeros([3, 1 << 33, 0], DType::F32, &dev).unwrap();
        let arg = three.argmin_keepdim(1).unwrap();
        assert_eq!(arg.dims(), &[3, 1, 0], "{dev}");
        assert!(arg.to_vec::<i32>().unwrap().is_empty(), "{dev}");
        // Indices are checked (NumPy checks them while the result is
        // empty) without a line of the axis's length: 2^30 bytes here
        // (lavapipe's largest buffer is 2^31), 2^40 on the CPU, where a
        // GPU's indices resolve in i32 and refuse that axis.
        let mut axes = vec![1usize << 30];
        if dev.is_cpu() {
            axes.push(long);
        }
        for n in axes {
            let x = Tensor::zeros([n, 0], DType::F32, &dev).unwrap();
            let index = Tensor::from_slice(&[n as i64 - 1, 0], [2], &dev).unwrap();
            let picked = x.index_select(&index, 0).unwrap();
            assert_eq!(picked.dims(), &[2, 0], "{dev}");
            assert!(picked.to_vec::<f32>().unwrap().is_empty(), "{dev}");
            let out_of_range = Tensor::from_slice(&[n as i64], [1], &dev).unwrap();
            // Refused at once on the CPU, at the next sync on a GPU.
            let r = x.index_select(&out_of_range, 0).and_then(|_| dev.sync());
            assert!(r.is_err(), "{dev}: index {n} of an axis of {n}");
        }
    }
}

/// A GPU reduction whose output passes the device's largest buffer is
/// refused before any part runs: it filled part after part (64 MiB each)
/// until the host's memory ran out, or failed with a wgpu validation
/// error, where the output's own allocation would have been `TooLarge`.
#[test]
fn a_reduction_whose_output_passes_the_largest_buffer_is_refused_at_once() {
    let n = 1usize << 34;
    for dev in common::gpu().into_iter().chain(common::gpu_packed_f16()) {
        let empty = Tensor::zeros([0, n], DType::F32, &dev).unwrap();
        let ones = Tensor::ones([1, 1], DType::F32, &dev).unwrap();
        let wide = ones.broadcast_to([2, n]).unwrap();
        let checks = [
            ("sum", empty.sum(0)),
            ("prod", empty.prod(0)),
            ("sum", wide.sum(0)),
        ];
        for (op, r) in checks {
            match r {
                Err(Error::TooLarge { op: got, .. }) => assert_eq!(got, op, "{dev}"),
                other => panic!("{op} on {dev}: expected TooLarge, got {other:?}"),
            }
        }
    }
}
