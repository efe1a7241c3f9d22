//! Counting and searching against NumPy's answers
//! (`tests/data/make_counting_cases.py`) on every device: `searchsorted`
//! (both sides, NaN, signed zeros, infinities, i64 past 2^53, batched
//! rows, a sorter) and `digitize` (increasing and decreasing bins), over
//! views and in every dtype the values survive; bad input.

mod common;

use std::collections::HashMap;
use webtensor::{DType, Device, Error, Side, SortOrder, Tensor, f16, io, s};

fn cases() -> HashMap<String, Tensor> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/counting_cases.npz");
    io::from_npz_bytes(&std::fs::read(path).unwrap(), &Device::cpu())
        .unwrap()
        .into_iter()
        .collect()
}

fn want(cases: &HashMap<String, Tensor>, name: &str) -> Vec<i64> {
    cases[name].to_vec::<i64>().unwrap()
}

fn on(cases: &HashMap<String, Tensor>, name: &str, dev: &Device) -> Tensor {
    cases[name].to_device(dev).unwrap()
}

fn positions(t: webtensor::Result<Tensor>) -> Vec<i64> {
    let t = t.unwrap();
    assert_eq!(t.dtype(), DType::I64);
    t.to_vec::<i64>().unwrap()
}

#[test]
fn searchsorted_gives_numpys_positions() {
    let cases = cases();
    for dev in common::devices() {
        for dtype in [DType::F32, DType::F16, DType::BF16] {
            // The values are quarters and eighths of small integers: exact
            // in every float dtype, but for the last two, +-1e30, which
            // are infinities in f16.
            let sorted = on(&cases, "sorted_f32", &dev).to_dtype(dtype).unwrap();
            let values = on(&cases, "values_f32", &dev).to_dtype(dtype).unwrap();
            let kept = values.numel() - if dtype == DType::F16 { 2 } else { 0 };
            for (side, name) in [(Side::Left, "f32_left"), (Side::Right, "f32_right")] {
                let got = positions(sorted.searchsorted(&values, side));
                let want = want(&cases, name);
                assert_eq!(got[..kept], want[..kept], "{dtype} {side:?} on {dev:?}");
            }
        }
        let sorted = on(&cases, "sorted_i64", &dev);
        let values = on(&cases, "values_i64", &dev);
        for (side, name) in [(Side::Left, "i64_left"), (Side::Right, "i64_right")] {
            assert_eq!(
                positions(sorted.searchsorted(&values, side)),
                want(&cases, name)
            );
        }
        for dtype in [DType::F32, DType::I32, DType::I64] {
            let rows = on(&cases, "rows", &dev).to_dtype(dtype).unwrap();
            let values = on(&cases, "row_values", &dev).to_dtype(dtype).unwrap();
            for (side, name) in [(Side::Left, "rows_left"), (Side::Right, "rows_right")] {
                let got = rows.searchsorted(&values, side).unwrap();
                assert_eq!(got.dims(), [7, 5]);
                assert_eq!(positions(Ok(got)), want(&cases, name), "rows in {dtype}");
            }
        }
    }
}

#[test]
fn digitize_gives_numpys_bins() {
    let cases = cases();
    for dev in common::devices() {
        let x = on(&cases, "digitize_x", &dev);
        for bins in ["up", "down"] {
            let edges = on(&cases, &format!("bins_{bins}"), &dev);
            for right in [false, true] {
                let name = format!("digitize_{bins}_{}", u8::from(right));
                let got = positions(x.digitize(&edges, right));
                assert_eq!(got, want(&cases, &name), "{name} on {dev:?}");
            }
        }
        // No bins: every value in bin 0.
        let none = Tensor::zeros([0], DType::F32, &dev).unwrap();
        assert_eq!(
            positions(x.narrow(0, 0, 3).unwrap().digitize(&none, false)),
            [0, 0, 0]
        );
    }
}

/// Views of both operands (reversed, stepped, transposed, broadcast,
/// offset) give what their contiguous copies give, in every dtype.
#[test]
fn searches_read_views_where_they_lie() {
    let cpu = Device::cpu();
    for dev in common::devices() {
        for dtype in [
            DType::F32,
            DType::F16,
            DType::BF16,
            DType::I32,
            DType::I64,
            DType::U8,
            DType::U32,
        ] {
            // 0..64 descending, stepped and reversed: ascending even numbers.
            let base = Tensor::arange(0i32, 64, 1, &dev)
                .unwrap()
                .to_dtype(dtype)
                .unwrap();
            let down = base.flip(&[0]).unwrap();
            let sorted = down.slice(s![1..;2]).unwrap().flip(&[0]).unwrap();
            let values = Tensor::arange(0i32, 70, 1, &dev)
                .unwrap()
                .to_dtype(dtype)
                .unwrap()
                .reshape([7, 10])
                .unwrap()
                .t();
            let got = sorted.searchsorted(&values, Side::Right).unwrap();
            let want = sorted
                .contiguous()
                .unwrap()
                .searchsorted(&values.contiguous().unwrap(), Side::Right)
                .unwrap();
            assert_eq!(got.dims(), [10, 7]);
            assert_eq!(
                got.to_vec::<i64>().unwrap(),
                want.to_vec::<i64>().unwrap(),
                "{dtype} on {dev:?}"
            );
            let on_cpu = sorted
                .to_device(&cpu)
                .unwrap()
                .searchsorted(&values.to_device(&cpu).unwrap(), Side::Right);
            assert_eq!(
                got.to_vec::<i64>().unwrap(),
                on_cpu.unwrap().to_vec::<i64>().unwrap()
            );
        }
        // Rows of a transposed matrix, values broadcast along the rows.
        let m = Tensor::arange(0.0f32, 40.0, 1.0, &dev)
            .unwrap()
            .reshape([8, 5])
            .unwrap()
            .t();
        let v = Tensor::from_slice(&[3.5f32, 17.0, -1.0], [1, 3], &dev)
            .unwrap()
            .broadcast_to([5, 3])
            .unwrap();
        let got = positions(m.searchsorted(&v, Side::Left));
        let want: Vec<i64> = (0..5)
            .flat_map(|r| {
                [3.5f32, 17.0, -1.0]
                    .map(|x| (0..8).filter(|k| ((k * 5 + r) as f32) < x).count() as i64)
            })
            .collect();
        assert_eq!(got, want);
        // Bools: false before true.
        let flags = Tensor::from_slice(&[false, false, true], [3], &dev).unwrap();
        let probe = Tensor::from_slice(&[true, false], [2], &dev).unwrap();
        assert_eq!(positions(flags.searchsorted(&probe, Side::Left)), [2, 0]);
        assert_eq!(positions(flags.searchsorted(&probe, Side::Right)), [3, 2]);
    }
}

/// Rows of every length up to past a few halvings, and more values than
/// one grid row of workgroups holds (65535 x 64).
#[test]
fn searches_cross_the_kernels_boundaries() {
    let cpu = Device::cpu();
    for dev in common::devices().into_iter().filter(Device::is_gpu) {
        for n in [1, 2, 3, 7, 8, 9, 1023, 1025] {
            let sorted = Tensor::arange(0i64, n, 1, &dev)
                .unwrap()
                .mul_scalar(2)
                .unwrap();
            let values = Tensor::arange(-2i64, 2 * n + 2, 1, &dev).unwrap();
            for side in [Side::Left, Side::Right] {
                let got = positions(sorted.searchsorted(&values, side));
                let want: Vec<i64> = (-2..2 * n + 2)
                    .map(|v| {
                        (0..n)
                            .filter(|k| {
                                if side == Side::Left {
                                    2 * k < v
                                } else {
                                    2 * k <= v
                                }
                            })
                            .count() as i64
                    })
                    .collect();
                assert_eq!(got, want, "n = {n}, {side:?}");
            }
        }
        let many = 65_535 * 64 + 77;
        let mut g = webtensor::Generator::new(3);
        let values = g.randint([many], -50, 1050, DType::I32, &dev).unwrap();
        let sorted = g
            .randint([1000], 0, 1000, DType::I32, &dev)
            .unwrap()
            .sort(0, SortOrder::Ascending)
            .unwrap();
        let got = positions(sorted.searchsorted(&values, Side::Left));
        let want = sorted
            .to_device(&cpu)
            .unwrap()
            .searchsorted(&values.to_device(&cpu).unwrap(), Side::Left);
        assert!(got == want.unwrap().to_vec::<i64>().unwrap());
    }
}

#[test]
fn a_sorter_orders_the_rows() {
    for dev in common::devices() {
        let x = Tensor::from_slice(&[5.0f32, 1.0, 4.0, 2.0, 3.0], [5], &dev).unwrap();
        let order = x.argsort(0, SortOrder::Ascending).unwrap();
        let v = Tensor::from_slice(&[2.5f32, 0.0, 4.0], [3], &dev).unwrap();
        assert_eq!(
            positions(x.searchsorted_by(&v, Side::Left, &order)),
            [2, 0, 3]
        );
        let wide = order.to_dtype(DType::I64).unwrap();
        assert_eq!(
            positions(x.searchsorted_by(&v, Side::Right, &wide)),
            [2, 0, 4]
        );
    }
}

#[test]
fn bad_searches_are_errors() {
    for dev in common::devices() {
        let row = Tensor::zeros([4], DType::F32, &dev).unwrap();
        let v = Tensor::zeros([3], DType::F32, &dev).unwrap();
        let scalar = Tensor::zeros([], DType::F32, &dev).unwrap();
        let shape = |r: webtensor::Result<Tensor>, op: &str| match r {
            Err(Error::Shape { op: o, .. }) => assert_eq!(o, op),
            other => panic!("{op}: {other:?}"),
        };
        shape(scalar.searchsorted(&v, Side::Left), "searchsorted");
        let rows = Tensor::zeros([2, 4], DType::F32, &dev).unwrap();
        shape(
            rows.searchsorted(
                &Tensor::zeros([3, 2], DType::F32, &dev).unwrap(),
                Side::Left,
            ),
            "searchsorted",
        );
        shape(rows.searchsorted(&v, Side::Left), "searchsorted");
        shape(v.digitize(&rows, false), "digitize");
        shape(
            row.searchsorted_by(
                &v,
                Side::Left,
                &Tensor::zeros([3], DType::I32, &dev).unwrap(),
            ),
            "searchsorted",
        );
        let c = Tensor::complex(&row, &row).unwrap();
        assert!(matches!(
            c.searchsorted(&v, Side::Left),
            Err(Error::DType { .. })
        ));
        let other = if dev.is_gpu() {
            Device::cpu()
        } else {
            common::gpu().unwrap_or(Device::cpu())
        };
        if other != dev {
            let elsewhere = Tensor::zeros([3], DType::F32, &other).unwrap();
            let e = row.searchsorted(&elsewhere, Side::Left).unwrap_err();
            assert!(matches!(e, webtensor::Error::DeviceMismatch { .. }), "{e}");
        }
        let empty = Tensor::zeros([0, 4], DType::F32, &dev).unwrap();
        assert_eq!(
            empty
                .searchsorted(
                    &Tensor::zeros([0, 2], DType::F32, &dev).unwrap(),
                    Side::Left
                )
                .unwrap()
                .dims(),
            [0, 2]
        );
    }
}

#[test]
fn bincount_gives_numpys_counts() {
    let cases = cases();
    for dev in common::devices() {
        for dtype in [DType::I64, DType::I32, DType::U32, DType::U8] {
            let x = on(&cases, "bincount_x", &dev).to_dtype(dtype).unwrap();
            assert_eq!(
                positions(x.bincount(None, 0)),
                want(&cases, "bincount"),
                "{dtype} on {dev:?}"
            );
            assert_eq!(
                positions(x.bincount(None, 80)),
                want(&cases, "bincount_min80")
            );
            // A reversed, stepped view counts what it holds.
            let view = x.flip(&[0]).unwrap().slice(s![..;2]).unwrap();
            let held: Vec<i64> = view.to_dtype(DType::I64).unwrap().to_vec().unwrap();
            let mut expect = vec![0i64; 50];
            held.iter().for_each(|&v| expect[v as usize] += 1);
            assert_eq!(positions(view.bincount(None, 50)), expect);
        }
        let x = on(&cases, "bincount_x", &dev);
        let w = on(&cases, "bincount_w", &dev);
        let sums = x.bincount(Some(&w), 0).unwrap();
        assert_eq!(sums.dtype(), DType::F32);
        let want: Vec<f64> = cases["bincount_weighted"].to_vec().unwrap();
        for (g, w) in sums.to_vec::<f32>().unwrap().iter().zip(&want) {
            assert!((f64::from(*g) - w).abs() <= 1e-4, "{g} vs {w} on {dev:?}");
        }
        let empty = Tensor::zeros([0], DType::I32, &dev).unwrap();
        assert_eq!(positions(empty.bincount(None, 3)), [0, 0, 0]);
    }
}

/// Few bins (each workgroup's own, in workgroup memory) over more
/// elements than the launched grid holds (grid-stride), and more bins
/// than workgroup memory takes (global atomics): the CPU's counts.
#[test]
fn counts_cross_the_kernels_boundaries() {
    let cpu = Device::cpu();
    for dev in common::devices().into_iter().filter(Device::is_gpu) {
        let mut g = webtensor::Generator::new(12);
        for (n, bins) in [
            (4096 * 256 * 8 + 1001, 7i64),
            (100_000, 2048),
            (100_000, 2049),
            (50_000, 70_000),
        ] {
            let dtype = if bins <= 256 { DType::U8 } else { DType::I32 };
            let x = g.randint([n], 0, bins, dtype, &dev).unwrap();
            let got = positions(x.bincount(None, 0));
            let want = x.to_device(&cpu).unwrap().bincount(None, 0).unwrap();
            assert!(
                got == want.to_vec::<i64>().unwrap(),
                "{n} into {bins} on {dev:?}"
            );
            let w = g.rand([n], DType::F32, &dev).unwrap();
            let got = x.bincount(Some(&w), 0).unwrap().to_vec::<f32>().unwrap();
            let want = x
                .to_device(&cpu)
                .unwrap()
                .bincount(Some(&w.to_device(&cpu).unwrap()), 0);
            for (a, b) in got.iter().zip(want.unwrap().to_vec::<f32>().unwrap()) {
                assert!(
                    (a - b).abs() <= 1e-6 * n as f32,
                    "weighted {n} into {bins}: {a} vs {b}"
                );
            }
        }
    }
}

/// Integers are binned against NumPy's f64 edges, not the edges rounded
/// to the nearest f32 (`np.histogram(np.arange(15), 50)`'s edge 25 is
/// 7.000000000000001: 7 is in bin 24): every integer from -2 to 61 over
/// bins and ranges whose edges fall near integers, on every device.
#[test]
fn integers_are_binned_against_numpys_edges() {
    let cases = cases();
    let counts = want(&cases, "hist_int_counts");
    for dev in common::devices() {
        let data = on(&cases, "hist_int_data", &dev);
        let mut n = 0;
        for bins in [7, 13, 23, 29, 31, 49, 50, 53, 59] {
            let ranges = [
                None,
                Some((0.0, 14.0)),
                Some((0.0, 60.0)),
                Some((1.0, 47.0)),
            ];
            let more = [Some((3.0, 59.0)), Some((-2.0, 13.999999999))];
            for range in ranges.into_iter().chain(more) {
                let (h, _) = data.histogram(bins, range, None, false).unwrap();
                let want = &counts[n * 59..n * 59 + bins];
                assert_eq!(
                    positions(Ok(h)),
                    want,
                    "{bins} bins of {range:?} on {dev:?}"
                );
                n += 1;
            }
        }
    }
}

/// Integers past 2^24, which f32 rounds, are binned as NumPy's f64
/// comparisons bin them (the data's own largest value fell out of the
/// last bin, its smallest out of the first): i32 and i64 data, their own
/// ends or a range, i64's whole range, edges between integers, weights,
/// as stored and as a reversed view, on every device.
#[test]
fn integers_past_two_to_the_24_are_binned_exactly() {
    let cases = cases();
    let mut ran = 0;
    for dev in common::devices() {
        for (name, want) in cases.iter().filter(|(n, _)| n.starts_with("hist_big_")) {
            let parts: Vec<&str> = name["hist_big_".len()..].split('_').collect();
            let (data, bins) = (parts[0], parts[1]);
            let Ok(bins) = bins.parse::<usize>() else {
                continue;
            };
            let range = match parts[2..] {
                [a, b] => Some((a.parse().unwrap(), b.parse().unwrap())),
                _ => None,
            };
            let weighted = parts.last() == Some(&"weighted");
            let x = on(&cases, &format!("hist_big_{data}_data"), &dev);
            let w = weighted.then(|| {
                let w = &cases["hist_big_i64_weights"];
                w.to_dtype(DType::F32).unwrap().to_device(&dev).unwrap()
            });
            let reversed = x
                .flip(&[0])
                .unwrap()
                .contiguous()
                .unwrap()
                .flip(&[0])
                .unwrap();
            for x in [x, reversed] {
                let (h, _) = x.histogram(bins, range, w.as_ref(), false).unwrap();
                if weighted {
                    let got = h.to_vec::<f32>().unwrap();
                    let want: Vec<f32> = want
                        .to_vec::<f64>()
                        .unwrap()
                        .iter()
                        .map(|&v| v as f32)
                        .collect();
                    assert_eq!(got, want, "{name} on {dev:?}");
                } else {
                    assert_eq!(
                        positions(Ok(h)),
                        want.to_vec::<i64>().unwrap(),
                        "{name} on {dev:?}"
                    );
                }
                ran += 1;
            }
        }
        // f64 weights (the CPU's) are summed as they are: 1e9 + 1 is no f32.
        if dev.is_cpu() {
            let x = Tensor::from_slice(&[0i32, 0, 1, 1], [4], &dev).unwrap();
            let sums = x
                .bincount(Some(&on(&cases, "bincount_f64_w", &dev)), 0)
                .unwrap();
            let want: Vec<f32> = cases["bincount_f64_sums"]
                .to_vec::<f64>()
                .unwrap()
                .iter()
                .map(|&v| v as f32)
                .collect();
            assert_eq!(sums.to_vec::<f32>().unwrap(), want);
        }
    }
    assert!(ran >= 20, "{ran} cases ran");
}

/// Densities of integers past 2^24 divide by the widths of NumPy's f64
/// edges: the f32 edges round together there, and widths of 0 gave inf
/// and NaN (1e9, 1e9 + 5 and 1e9 + 10 in 10 bins) or were off by 0.1%.
#[test]
fn densities_of_integers_past_two_to_the_24_use_numpys_widths() {
    let cases = cases();
    for dev in common::devices() {
        for name in ["i32", "i64", "wide"] {
            let x = on(&cases, &format!("hist_density_{name}_data"), &dev);
            let bins = cases[&format!("hist_density_{name}_bins")]
                .item::<i64>()
                .unwrap();
            let (density, _) = x.histogram(bins as usize, None, None, true).unwrap();
            let got = density.to_vec::<f32>().unwrap();
            let want = cases[&format!("hist_density_{name}_want")]
                .to_vec::<f64>()
                .unwrap();
            assert_eq!(got.len(), want.len());
            for (i, (&g, &w)) in got.iter().zip(&want).enumerate() {
                assert!(
                    (f64::from(g) - w).abs() <= 1e-6 * w,
                    "{name} bin {i} on {dev:?}: {g} for NumPy's {w}"
                );
            }
        }
    }
}

/// An f16 histogram's edges are rounded once from f64, as NumPy's
/// `linspace(..., dtype=float16)` rounds them: a range's edge 2049.0001 is
/// 2050, not 2048 (which rounding through f32 first gives), and the values
/// at 2050 are counted in the bin it opens.
#[test]
fn f16_edges_are_rounded_once() {
    let cases = cases();
    let mut devs = common::devices();
    devs.extend(common::gpu_packed_f16());
    for dev in devs {
        let x = on(&cases, "hist_f16_once_data", &dev);
        for i in 0..3 {
            let r = cases[&format!("hist_f16_once_{i}_range")]
                .to_vec::<f64>()
                .unwrap();
            let bins = if i == 2 { 3 } else { 2 };
            let (h, e) = x.histogram(bins, Some((r[0], r[1])), None, false).unwrap();
            let want_e = &cases[&format!("hist_f16_once_{i}_edges")];
            assert_eq!(e.dtype(), DType::F16, "{dev:?}");
            assert_eq!(
                e.to_vec::<f16>().unwrap(),
                want_e.to_vec::<f16>().unwrap(),
                "edges {i} on {dev:?}"
            );
            let want_h = want(&cases, &format!("hist_f16_once_{i}_counts"));
            assert_eq!(positions(Ok(h)), want_h, "counts {i} on {dev:?}");
        }
    }
}

#[test]
fn histogram_gives_numpys_counts_and_edges() {
    let cases = cases();
    let floats =
        |name: &str| -> Vec<f64> { cases[name].to_dtype(DType::F64).unwrap().to_vec().unwrap() };
    for dev in common::devices() {
        let data = on(&cases, "hist_data", &dev);
        let (h, e) = data.histogram(17, None, None, false).unwrap();
        assert_eq!(positions(Ok(h)), want(&cases, "hist_auto"), "{dev:?}");
        assert_eq!(e.dtype(), DType::F32);
        let e: Vec<f64> = e
            .to_vec::<f32>()
            .unwrap()
            .into_iter()
            .map(f64::from)
            .collect();
        assert_eq!(e, floats("hist_auto_edges"));
        let range = Some((-1.0, 2.5));
        let (h, e) = data.histogram(7, range, None, false).unwrap();
        assert_eq!(positions(Ok(h)), want(&cases, "hist_range"));
        assert_eq!(
            e.to_vec::<f32>()
                .unwrap()
                .into_iter()
                .map(f64::from)
                .collect::<Vec<f64>>(),
            floats("hist_range_edges")
        );
        let w = on(&cases, "hist_w", &dev);
        let (h, _) = data.histogram(7, range, Some(&w), false).unwrap();
        for (g, w) in h
            .to_vec::<f32>()
            .unwrap()
            .iter()
            .zip(floats("hist_weighted"))
        {
            assert!(
                (f64::from(*g) - w).abs() <= 1e-6 * w.abs().max(1.0) * 20.0,
                "{g} vs {w}"
            );
        }
        let (h, _) = data.histogram(7, range, None, true).unwrap();
        for (g, w) in h
            .to_vec::<f32>()
            .unwrap()
            .iter()
            .zip(floats("hist_density"))
        {
            assert!((f64::from(*g) - w).abs() <= 1e-6 * w.abs(), "{g} vs {w}");
        }
        // Reversed f16 and bf16 views: the counts of their values copied
        // to the CPU (f16 edges, as NumPy's for f16 data).
        for dtype in [DType::F16, DType::BF16] {
            let view = data.to_dtype(dtype).unwrap().flip(&[0]).unwrap();
            let copy = view
                .contiguous()
                .unwrap()
                .to_device(&Device::cpu())
                .unwrap();
            for range in [range, None] {
                let (got, e) = view.histogram(9, range, None, false).unwrap();
                let (want, we) = copy.histogram(9, range, None, false).unwrap();
                assert_eq!(
                    positions(Ok(got)),
                    positions(Ok(want)),
                    "{dtype} on {dev:?}"
                );
                assert_eq!(
                    e.to_dtype(DType::F32).unwrap().to_vec::<f32>().unwrap(),
                    we.to_dtype(DType::F32).unwrap().to_vec::<f32>().unwrap()
                );
            }
        }
        let empty = Tensor::zeros([0], DType::F32, &dev).unwrap();
        let (h, e) = empty.histogram(2, None, None, false).unwrap();
        assert_eq!(
            (positions(Ok(h)), e.to_vec::<f32>().unwrap()),
            (vec![0, 0], vec![0.0, 0.5, 1.0])
        );
        // Their range is f64's (NumPy's 0.9 of 10 bins is 0.89999998).
        for bins in [7, 10] {
            let (_, e) = empty.histogram(bins, None, None, false).unwrap();
            let e: Vec<f64> = e
                .to_vec::<f32>()
                .unwrap()
                .into_iter()
                .map(f64::from)
                .collect();
            assert_eq!(
                e,
                floats(&format!("hist_empty_{bins}_edges")),
                "{bins} on {dev:?}"
            );
        }
    }
}

#[test]
fn bad_counts_are_errors() {
    for dev in common::devices() {
        let x = Tensor::from_slice(&[1i32, -2, 3], [3], &dev).unwrap();
        assert!(matches!(
            x.bincount(None, 0),
            Err(Error::Argument { op: "bincount", .. })
        ));
        let grid = Tensor::zeros([2, 2], DType::I32, &dev).unwrap();
        assert!(matches!(
            grid.bincount(None, 0),
            Err(Error::Shape { op: "bincount", .. })
        ));
        let f = Tensor::zeros([3], DType::F32, &dev).unwrap();
        assert!(matches!(
            f.bincount(None, 0),
            Err(Error::DType { op: "bincount", .. })
        ));
        let ok = Tensor::from_slice(&[1i32, 2], [2], &dev).unwrap();
        assert!(matches!(ok.bincount(Some(&f), 0), Err(Error::Shape { .. })));
        let ints = Tensor::zeros([2], DType::I32, &dev).unwrap();
        assert!(matches!(
            ok.bincount(Some(&ints), 0),
            Err(Error::DType { .. })
        ));
        let arg = |r: webtensor::Result<(Tensor, Tensor)>| {
            assert!(
                matches!(
                    r,
                    Err(Error::Argument {
                        op: "histogram",
                        ..
                    })
                ),
                "{r:?}"
            )
        };
        arg(f.histogram(0, None, None, false));
        arg(f.histogram(3, Some((1.0, 0.0)), None, false));
        arg(f.histogram(3, Some((f64::NAN, 1.0)), None, false));
        let nan = Tensor::from_slice(&[1.0f32, f32::NAN], [2], &dev).unwrap();
        arg(nan.histogram(3, None, None, false));
        let c = Tensor::complex(&f, &f).unwrap();
        assert!(matches!(
            c.histogram(3, None, None, false),
            Err(Error::DType { .. })
        ));
    }
}

#[test]
fn nonzero_argwhere_and_masked_select_give_numpys_answers() {
    let cases = cases();
    let want_at = want(&cases, "cube_argwhere");
    let selected: Vec<f32> = cases["cube_selected"].to_vec().unwrap();
    for dev in common::devices() {
        let cube = on(&cases, "cube", &dev);
        let at = cube.argwhere().unwrap();
        assert_eq!(at.dims(), [want_at.len() / 3, 3]);
        assert_eq!(positions(Ok(at)), want_at, "{dev:?}");
        let axes = cube.nonzero().unwrap();
        assert_eq!(axes.len(), 3);
        for (d, axis) in axes.iter().enumerate() {
            let column: Vec<i64> = want_at.chunks(3).map(|c| c[d]).collect();
            assert_eq!(axis.to_vec::<i64>().unwrap(), column);
        }
        let mask = cube.gt_scalar(0.0).unwrap();
        assert_eq!(
            cube.masked_select(&mask).unwrap().to_vec::<f32>().unwrap(),
            selected
        );
        // A transposed view and a broadcast mask.
        let t = cube.permute(&[2, 0, 1]).unwrap();
        let row = Tensor::from_slice(&[true, false, true, false, true], [5], &dev).unwrap();
        let got = t.masked_select(&row).unwrap().to_vec::<f32>().unwrap();
        let all = t.contiguous().unwrap().to_vec::<f32>().unwrap();
        let want: Vec<f32> = all
            .iter()
            .enumerate()
            .filter(|(i, _)| i % 5 % 2 == 0)
            .map(|(_, v)| *v)
            .collect();
        assert!(
            got.iter()
                .zip(&want)
                .all(|(a, b)| a.to_bits() == b.to_bits())
                && got.len() == want.len()
        );
        assert_eq!(
            cube.count_nonzero().unwrap().item::<i64>().unwrap(),
            want_at.len() as i64 / 3
        );
        // Nothing kept, and bools.
        let none = Tensor::zeros([3, 2], DType::I32, &dev).unwrap();
        assert_eq!(none.argwhere().unwrap().dims(), [0, 2]);
        // A 0-d tensor: np.argwhere(np.array(5)) has shape (1, 0), of 0
        // (0, 0); np.nonzero refuses it.
        for (value, rows) in [(5, 1), (0, 0)] {
            let scalar = Tensor::full([], value, DType::I32, &dev).unwrap();
            let at = scalar.argwhere().unwrap();
            assert_eq!((at.dims(), at.dtype()), (&[rows, 0][..], DType::I64));
            assert!(scalar.nonzero().is_err());
        }
        let flags = Tensor::from_slice(&[false, true, true], [3], &dev).unwrap();
        assert_eq!(positions(Ok(flags.nonzero().unwrap().remove(0))), [1, 2]);
    }
}

#[test]
fn unique_gives_numpys_values_indices_inverse_and_counts() {
    let cases = cases();
    let floats = |name: &str| -> Vec<u32> {
        cases[name]
            .to_vec::<f32>()
            .unwrap()
            .iter()
            .map(|v| v.to_bits())
            .collect()
    };
    for dev in common::devices() {
        let u = on(&cases, "uniq", &dev);
        let all = u.unique_all().unwrap();
        let bits = |t: &Tensor| -> Vec<u32> {
            t.to_vec::<f32>()
                .unwrap()
                .iter()
                .map(|v| v.to_bits())
                .collect()
        };
        // NaN's bits: NumPy keeps the first NaN it sorted; both are quiet NaN.
        assert_eq!(bits(&all.values), floats("uniq_values"), "{dev:?}");
        assert_eq!(positions(Ok(all.indices)), want(&cases, "uniq_index"));
        assert_eq!(all.inverse.dims(), [5, 61]);
        assert_eq!(positions(Ok(all.inverse)), want(&cases, "uniq_inverse"));
        assert_eq!(positions(Ok(all.counts)), want(&cases, "uniq_counts"));
        assert_eq!(bits(&u.unique().unwrap()), floats("uniq_values"));
        let ints = on(&cases, "uniq_i64", &dev);
        let all = ints.unique_all().unwrap();
        assert_eq!(positions(Ok(all.values)), want(&cases, "uniq_i64_values"));
        assert_eq!(positions(Ok(all.counts)), want(&cases, "uniq_i64_counts"));
        // A reversed view of f16, and the empty tensor.
        let half = u.to_dtype(DType::F16).unwrap().flip(&[1]).unwrap();
        let got = half
            .unique()
            .unwrap()
            .to_dtype(DType::F32)
            .unwrap()
            .to_vec::<f32>()
            .unwrap();
        let want_values: Vec<f32> = cases["uniq_values"].to_vec().unwrap();
        assert_eq!(got.len(), want_values.len());
        let empty = Tensor::zeros([0, 3], DType::I32, &dev)
            .unwrap()
            .unique_all()
            .unwrap();
        assert_eq!(
            (
                empty.values.numel(),
                empty.counts.numel(),
                empty.inverse.dims()
            ),
            (0, 0, &[0usize, 3][..])
        );
        let c = Tensor::complex(&u, &u).unwrap();
        assert!(matches!(c.unique(), Err(Error::DType { .. })));
        assert!(matches!(
            Tensor::zeros([], DType::F32, &dev).unwrap().nonzero(),
            Err(Error::Shape { .. })
        ));
        let f = Tensor::zeros([2], DType::F32, &dev).unwrap();
        assert!(matches!(f.masked_select(&f), Err(Error::DType { .. })));
    }
}

#[test]
fn histograms_refuse_what_numpy_refuses_and_take_bools() {
    for dev in common::devices() {
        let arg = |r: webtensor::Result<(Tensor, Tensor)>, what: &str| {
            assert!(
                matches!(
                    r,
                    Err(Error::Argument {
                        op: "histogram",
                        ..
                    })
                ),
                "{what}: {r:?}"
            )
        };
        // Edges that repeat in the dtype: NumPy's "too many bins".
        let close = Tensor::from_slice(&[1.0f32, 1.000_000_1], [2], &dev).unwrap();
        arg(close.histogram(5, None, None, false), "f32 edges");
        let huge = Tensor::from_slice(&[1e30f32], [1], &dev).unwrap();
        arg(
            huge.histogram(2, None, None, false),
            "a widened range lost in f32",
        );
        let half = Tensor::from_slice(&[0.0f32, 60000.0], [2], &dev)
            .unwrap()
            .to_dtype(DType::F16)
            .unwrap();
        arg(half.histogram(2500, None, None, false), "f16 edges");
        // A range past f16 (NumPy accepts it, its last edge inf; refused
        // here, where edges must be finite).
        arg(
            half.histogram(2, Some((0.0, 70000.0)), None, false),
            "an f16 edge past f16",
        );
        arg(
            close.histogram(usize::MAX, None, None, false),
            "usize::MAX bins",
        );
        // 2^40 edges do not fit in memory: an error, not an abort.
        let r = close.histogram(1 << 40, Some((0.0, 1.0)), None, false);
        assert!(
            matches!(
                r,
                Err(Error::OutOfMemory {
                    op: "histogram",
                    ..
                })
            ),
            "{r:?}"
        );
        let grid = Tensor::zeros([2, 2], DType::F32, &dev).unwrap();
        let flat = Tensor::zeros([4], DType::F32, &dev).unwrap();
        assert!(matches!(
            flat.histogram(2, None, Some(&grid), false),
            Err(Error::Shape { .. })
        ));
        // Bools count as 0 and 1.
        let flags = Tensor::from_slice(&[true, false, true, true], [4], &dev).unwrap();
        assert_eq!(positions(flags.bincount(None, 0)), [1, 3]);
        let (h, e) = flags.histogram(2, None, None, false).unwrap();
        assert_eq!(
            (positions(Ok(h)), e.to_vec::<f32>().unwrap()),
            (vec![1, 3], vec![0.0, 0.5, 1.0])
        );
    }
}

/// Subnormals are numbers to a search, as to the sort: NumPy's
/// `np.searchsorted(np.float32([0, 1e-40, 2e-40]), np.float32([1e-40,
/// 1e-45, -0.0]))` is `[1, 1, 0]` (left) and `[2, 1, 1]` (right). A GPU
/// may flush subnormals in a float comparison; the search compares bits.
#[test]
fn searches_order_subnormals_as_numpy() {
    for dev in common::devices() {
        let sorted = Tensor::from_slice(&[0.0f32, 1e-40, 2e-40], [3], &dev).unwrap();
        let values = Tensor::from_slice(&[1e-40f32, 1e-45, -0.0], [3], &dev).unwrap();
        for (side, want) in [(Side::Left, [1, 1, 0]), (Side::Right, [2, 1, 1])] {
            assert_eq!(
                positions(sorted.searchsorted(&values, side)),
                want,
                "{side:?} on {dev:?}"
            );
        }
    }
}

/// Subnormals are distinct values: `unique` tells runs apart by the sort's
/// keys (bits), not by a float comparison, which a GPU that flushes
/// subnormals (NVIDIA's driver does) would make equal to 0 and each other.
/// NumPy 2.4 and PyTorch 2.15 (bf16): values [-1e-40, 0, 1e-40, 2e-40],
/// inverse [1, 2, 3, 2, 0, 1], counts [1, 2, 2, 1]. (lavapipe keeps
/// subnormals, so there this holds before the change too.)
#[test]
fn unique_keeps_subnormals_apart() {
    let values = [0.0f32, 1e-40, 2e-40, 1e-40, -1e-40, -0.0];
    for dev in common::devices() {
        for dtype in [DType::F32, DType::BF16] {
            let x = Tensor::from_slice(&values, [6], &dev)
                .unwrap()
                .to_dtype(dtype)
                .unwrap();
            let u = x.unique_all().unwrap();
            let as_i64 = |t: &Tensor| t.to_vec::<i64>().unwrap();
            assert_eq!(as_i64(&u.inverse), [1, 2, 3, 2, 0, 1], "{dev} {dtype}");
            assert_eq!(as_i64(&u.counts), [1, 2, 2, 1], "{dev} {dtype}");
            assert_eq!(as_i64(&u.indices), [4, 0, 1, 2], "{dev} {dtype}");
        }
    }
}

/// Subnormals are non-zero in `nonzero`, `argwhere`, `count_nonzero`,
/// `to_dtype(Bool)`, `any`, `all` and the 0-norm, in c64 parts too (NumPy
/// 2.4 and PyTorch 2.15, f32 and bf16: count 4, positions [1, 2, 4, 5]):
/// they were compared with 0 as
/// floats, which a GPU that flushes subnormals reads as equal. (lavapipe
/// keeps subnormals, so there this holds before the change too.)
#[test]
fn subnormals_are_nonzero() {
    let values = [0.0f32, 1e-40, 1.0, -0.0, f32::NAN, -1e-40];
    for dev in common::devices() {
        for dtype in [DType::F32, DType::BF16] {
            let x = Tensor::from_slice(&values, [6], &dev)
                .unwrap()
                .to_dtype(dtype)
                .unwrap();
            let what = format!("{dev} {dtype}");
            let count = x.count_nonzero().unwrap().to_vec::<i64>().unwrap();
            assert_eq!(count, [4], "{what}");
            let at = x.argwhere().unwrap().to_vec::<i64>().unwrap();
            assert_eq!(at, [1, 2, 4, 5], "{what}");
            let at = x.nonzero().unwrap()[0].to_vec::<i64>().unwrap();
            assert_eq!(at, [1, 2, 4, 5], "{what}");
            let truth = x.to_dtype(DType::Bool).unwrap().to_vec::<bool>().unwrap();
            assert_eq!(truth, [false, true, true, false, true, true], "{what}");
            let pair = x.narrow(0, 0, 2).unwrap();
            assert!(pair.any(..).unwrap().item::<bool>().unwrap(), "{what}");
            let tiny = x.narrow(0, 1, 2).unwrap();
            assert!(tiny.all(..).unwrap().item::<bool>().unwrap(), "{what}");
            // torch.linalg.vector_norm(x, 0) counts them too: 4.
            let zero_norm = x.norm(0.0, ..).unwrap().to_dtype(DType::F32).unwrap();
            assert_eq!(zero_norm.item::<f32>().unwrap(), 4.0, "{what}");
        }
        // c64 by either part (NumPy and PyTorch: any true, all of the first
        // two true, all false, 0-norm 2, count 2 at [0, 1]; NaN is nonzero).
        let c = webtensor::Complex32::new;
        let z = [c(1e-40, 0.0), c(0.0, -1e-40), c(0.0, 0.0)];
        let z = Tensor::from_complex(&z, [3], &dev).unwrap();
        let count = z.count_nonzero().unwrap().to_vec::<i64>().unwrap();
        assert_eq!(count, [2], "{dev}");
        assert_eq!(
            z.argwhere().unwrap().to_vec::<i64>().unwrap(),
            [0, 1],
            "{dev}"
        );
        let w = [c(0.0, 0.0), c(f32::NAN, 0.0), c(0.0, 0.0), c(-2.0, 3.0)];
        let w = Tensor::from_complex(&w, [2, 2], &dev).unwrap();
        let at = w.nonzero().unwrap();
        assert_eq!(at[0].to_vec::<i64>().unwrap(), [0, 1], "{dev}");
        assert_eq!(at[1].to_vec::<i64>().unwrap(), [1, 1], "{dev}");
        assert!(z.any(..).unwrap().item::<bool>().unwrap(), "{dev}");
        let pair = z.narrow(0, 0, 2).unwrap();
        assert!(pair.all(..).unwrap().item::<bool>().unwrap(), "{dev}");
        assert!(!z.all(..).unwrap().item::<bool>().unwrap(), "{dev}");
        assert_eq!(
            z.norm(0.0, ..).unwrap().item::<f32>().unwrap(),
            2.0,
            "{dev}"
        );
    }
}

/// The GPU bins values by their order keys (bits), as the CPU does: a GPU
/// that flushes subnormals made every subnormal equal to every subnormal
/// edge (all in the last bin), and one that lowers float comparisons as
/// unordered would put NaN in the last bin. NumPy 2.4: [1, 1, 2] and
/// [1, 1]. (lavapipe keeps subnormals and orders its comparisons, so there
/// this holds before the change too.)
#[test]
fn histograms_bin_subnormals_and_drop_nan() {
    for dev in common::devices() {
        let tiny = Tensor::from_slice(&[0.0f32, 1e-40, 2e-40, 3e-40], [4], &dev).unwrap();
        let (h, _) = tiny.histogram(3, None, None, false).unwrap();
        assert_eq!(h.to_vec::<i64>().unwrap(), [1, 1, 2], "{dev}");
        let nan = Tensor::from_slice(&[0.5f32, f32::NAN, 2.0], [3], &dev).unwrap();
        let (h, _) = nan.histogram(2, Some((0.0, 2.0)), None, false).unwrap();
        assert_eq!(h.to_vec::<i64>().unwrap(), [1, 1], "{dev}");
    }
}
