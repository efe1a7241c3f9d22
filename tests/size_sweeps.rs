//! Every kernel family at sizes on both sides of each boundary it has:
//! the 64-thread workgroup (63..65), the 65,535 workgroups of one grid row
//! and the loop budget of one invocation (65,535..65,537, and lavapipe's
//! loop limiter in scatter, scan and matmul: 8,191..8,193 and 2^19 +- 1),
//! the second grid dimension (65,535 x 64 + 1 threads: past it for the
//! kernels of a thread per element or row, not for the elementwise ones,
//! whose threads take runs; `views_and_inplace.rs`'s
//! `dispatch_beyond_65535_workgroups_works` runs one past it), and
//! 2^20 + 3.
//! Each GPU result is compared with the CPU path's, exactly: the data are
//! small integers, so every sum is exact in any order.

mod common;

use common::{gpu, gpu_packed_f16};
use webtensor::{DType, Device, Tensor};

/// The GPU devices present (native and packed f16).
fn gpus() -> Vec<Device> {
    gpu().into_iter().chain(gpu_packed_f16()).collect()
}

/// Integer values in -2..=2 as `dtype`, deterministic in `seed`.
fn small_ints(n: usize, seed: u64, dtype: DType, dev: &Device) -> Tensor {
    let values: Vec<i32> = common::noise(n, seed)
        .iter()
        .map(|&x| ((x + 1.0) * 2.5).floor() as i32 - 2)
        .collect();
    Tensor::from_vec(values, [n], dev)
        .unwrap()
        .to_dtype(dtype)
        .unwrap()
}

/// `f` on the CPU and on every GPU, which must agree exactly.
fn agree(what: &str, f: impl Fn(&Device) -> Tensor) {
    let want = f(&Device::cpu());
    let want_values = as_f64(&want);
    for dev in gpus() {
        let got = f(&dev);
        assert_eq!(got.dims(), want.dims(), "{what} on {dev}: shape");
        assert_eq!(got.dtype(), want.dtype(), "{what} on {dev}: dtype");
        let got_values = as_f64(&got);
        if let Some(k) = (0..want_values.len()).find(|&k| {
            let (g, w) = (got_values[k], want_values[k]);
            g != w && !(g.is_nan() && w.is_nan())
        }) {
            panic!(
                "{what} on {dev}: element {k} of {}: got {}, want {}",
                want_values.len(),
                got_values[k],
                want_values[k]
            );
        }
    }
}

fn as_f64(t: &Tensor) -> Vec<f64> {
    match t.dtype() {
        DType::I32 => t
            .to_vec::<i32>()
            .unwrap()
            .iter()
            .map(|&x| x as f64)
            .collect(),
        DType::U32 => t
            .to_vec::<u32>()
            .unwrap()
            .iter()
            .map(|&x| x as f64)
            .collect(),
        _ => t
            .to_dtype(DType::F32)
            .unwrap()
            .to_vec::<f32>()
            .unwrap()
            .iter()
            .map(|&x| x as f64)
            .collect(),
    }
}

const WORKGROUP: [usize; 3] = [63, 64, 65];
const GRID_ROW: [usize; 3] = [65535, 65536, 65537];
const HALF_MEGA: [usize; 3] = [(1 << 19) - 1, 1 << 19, (1 << 19) + 1];
const LARGE: [usize; 2] = [(1 << 20) + 3, 65535 * 64 + 1];

/// Sizes on both sides of every boundary: all of them in the long form
/// (`WEBTENSOR_LONG_TESTS=1`); the fast form keeps one size either side of
/// 2^19 and, of the two large sizes, the one past the second grid
/// dimension.
fn sizes() -> Vec<usize> {
    let mut sizes: Vec<usize> = WORKGROUP.into_iter().chain(GRID_ROW).collect();
    if common::long_tests() {
        sizes.extend(HALF_MEGA.into_iter().chain(LARGE));
    } else {
        sizes.extend([HALF_MEGA[0], HALF_MEGA[2], LARGE[1]]);
    }
    sizes
}

#[test]
fn elementwise_and_fused_kernels_at_every_boundary() {
    for (i, n) in sizes().into_iter().enumerate() {
        // Every dtype at the small sizes; past 2^19 one in turn in the
        // fast form.
        // Every stored dtype but bool, which has no add.
        let all = &common::STORAGE_DTYPES[..6];
        let dtypes = if n < 1 << 19 || common::long_tests() {
            all.to_vec()
        } else {
            vec![all[i % all.len()]]
        };
        for dtype in dtypes {
            agree(&format!("add {dtype} n={n}"), |d| {
                small_ints(n, 1, dtype, d)
                    .add(&small_ints(n, 2, dtype, d))
                    .unwrap()
            });
        }
        // A bool result (packed four to a word) and a logical op on bools.
        agree(&format!("compare and xor n={n}"), |d| {
            let a = small_ints(n, 8, DType::F32, d);
            let b = small_ints(n, 9, DType::F32, d);
            a.gt(&b).unwrap().logical_xor(&a.eq(&b).unwrap()).unwrap()
        });
        // A reversed read, a stepped in-place write and a fused chain.
        agree(&format!("reversed in place n={n}"), |d| {
            let x = small_ints(n, 3, DType::F32, d);
            let y = small_ints(n, 4, DType::F32, d);
            x.slice(webtensor::s![..;2])
                .unwrap()
                .add_(&y.flip(&[0]).unwrap().slice(webtensor::s![..;2]).unwrap())
                .unwrap();
            x
        });
        agree(&format!("fused chain n={n}"), |d| {
            let (a, b) = (
                small_ints(n, 5, DType::F32, d),
                small_ints(n, 6, DType::F32, d),
            );
            a.mul_scalar(2.0)
                .unwrap()
                .add(&b)
                .unwrap()
                .relu()
                .unwrap()
                .sub_scalar(1.0)
                .unwrap()
        });
        agree(&format!("cast n={n}"), |d| {
            small_ints(n, 7, DType::F32, d)
                .to_dtype(DType::I32)
                .unwrap()
        });
    }
}

#[test]
fn reductions_at_every_boundary() {
    for n in sizes() {
        agree(&format!("sum f32 n={n}"), |d| {
            small_ints(n, 8, DType::F32, d).sum(..).unwrap()
        });
        agree(&format!("sum i32 reversed n={n}"), |d| {
            small_ints(n, 9, DType::I32, d)
                .flip(&[0])
                .unwrap()
                .sum(..)
                .unwrap()
        });
        agree(&format!("argmax n={n}"), |d| {
            small_ints(n, 10, DType::F32, d).argmax(0).unwrap()
        });
        // n outputs of short reductions, and a column sum.
        agree(&format!("row sums n={n}"), |d| {
            small_ints(3 * n, 11, DType::I32, d)
                .reshape([n, 3])
                .unwrap()
                .sum(1)
                .unwrap()
        });
        agree(&format!("column sums n={n}"), |d| {
            small_ints(3 * n, 12, DType::I32, d)
                .reshape([n, 3])
                .unwrap()
                .sum(0)
                .unwrap()
        });
    }
}

#[test]
fn scans_at_every_boundary() {
    for n in sizes() {
        agree(&format!("cumsum f32 n={n}"), |d| {
            small_ints(n, 13, DType::F32, d).cumsum(0).unwrap()
        });
        agree(&format!("cumsum i32 reversed n={n}"), |d| {
            small_ints(n, 14, DType::I32, d)
                .flip(&[0])
                .unwrap()
                .cumsum(0)
                .unwrap()
        });
    }
    // Several long lines of a transposed view.
    for n in GRID_ROW {
        agree(&format!("cumsum of 3 columns n={n}"), |d| {
            small_ints(3 * n, 15, DType::I32, d)
                .reshape([n, 3])
                .unwrap()
                .cumsum(0)
                .unwrap()
        });
    }
}

/// A permutation of 0..n (reversed runs of 10), as i32 indices.
fn permutation(n: usize, dev: &Device) -> Tensor {
    let values: Vec<i32> = (0..n)
        .map(|i| {
            let run = i / 10 * 10;
            let end = (run + 10).min(n);
            (end - 1 - (i - run)) as i32
        })
        .collect();
    Tensor::from_vec(values, [n], dev).unwrap()
}

#[test]
fn indexing_at_every_boundary() {
    let lengths = [8191, 8192, 8193].into_iter().chain(sizes());
    for n in lengths {
        agree(&format!("take n={n}"), |d| {
            small_ints(n, 16, DType::F32, d)
                .take(&permutation(n, d), 0)
                .unwrap()
        });
        agree(&format!("scatter n={n}"), |d| {
            Tensor::zeros([n], DType::F32, d)
                .unwrap()
                .scatter(&permutation(n, d), &small_ints(n, 17, DType::F32, d), 0)
                .unwrap()
        });
        // Every element of one long line into seven slots: one thread walks it.
        agree(&format!("scatter_add n={n}"), |d| {
            let slots = permutation(n, d).remainder_scalar(7).unwrap();
            Tensor::zeros([7], DType::I32, d)
                .unwrap()
                .scatter_add(&slots, &small_ints(n, 18, DType::I32, d), 0)
                .unwrap()
        });
    }
}

#[test]
fn matmul_at_every_boundary() {
    // Tile edges in m and n, k across the per-dispatch slice and far past
    // lavapipe's loop limit.
    for (m, k, n) in [
        (63, 64, 65),
        (65, 8191, 1),
        (1, 8192, 64),
        (64, 8193, 63),
        (2, 65537, 3),
        (1, (1 << 19) + 1, 1),
    ] {
        for dtype in [DType::F32, DType::I32] {
            agree(&format!("matmul {dtype} {m}x{k}x{n}"), |d| {
                let a = small_ints(m * k, 19, dtype, d).reshape([m, k]).unwrap();
                let b = small_ints(k * n, 20, dtype, d).reshape([n, k]).unwrap();
                a.matmul(&b.t()).unwrap()
            });
        }
    }
    // Batches past one grid dimension with a long k.
    agree("matmul 65537 batches", |d| {
        let a = small_ints(65537 * 2, 21, DType::I32, d)
            .reshape([65537, 1, 2])
            .unwrap();
        let b = small_ints(2 * 3, 22, DType::I32, d)
            .reshape([2, 3])
            .unwrap();
        a.matmul(&b).unwrap()
    });
}
