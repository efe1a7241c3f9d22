//! The CPU device's elementwise loops cut into parts on rayon's threads
//! (issue 47 item 2): every result is the one-thread result bit for bit,
//! over every view layout, in-place writes through views included, at
//! sizes on both sides of the size that starts cutting (2 x 65,536
//! elements) and odd sizes that leave parts of unequal length.

use webtensor::{DType, Device, Tensor, s};

/// `f` on a pool of `threads` threads.
fn on<T: Send>(threads: usize, f: impl FnOnce() -> T + Send) -> T {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap()
        .install(f)
}

fn bits(t: &Tensor) -> Vec<u32> {
    let v = t.to_dtype(DType::F32).unwrap().to_vec::<f32>().unwrap();
    v.iter().map(|x| x.to_bits()).collect()
}

/// The views of an `n`-element parent the checks run on: the whole, a
/// transpose, reversed rows, a stepped and offset slice, and a broadcast.
fn views(parent: &Tensor, rows: usize) -> Vec<(&'static str, Tensor)> {
    let m = parent.reshape([rows, parent.numel() / rows]).unwrap();
    vec![
        ("contiguous", m.clone()),
        ("transposed", m.t()),
        ("reversed", m.flip(&[0, 1]).unwrap()),
        ("stepped", m.slice(s![1.., ..;2]).unwrap()),
        (
            "broadcast",
            m.slice(s![..1, ..])
                .unwrap()
                .broadcast_to(m.dims())
                .unwrap(),
        ),
    ]
}

/// Results of elementwise ops of every arity on `x` and `y`.
fn results(x: &Tensor, y: &Tensor) -> Vec<Vec<u32>> {
    let cond = x.gt(y).unwrap();
    vec![
        bits(&x.exp().unwrap()),
        bits(&x.gelu().unwrap()),
        bits(&x.add(y).unwrap()),
        bits(&x.mul_scalar(3.0).unwrap()),
        bits(&x.maximum(y).unwrap()),
        bits(&Tensor::where_cond(&cond, x, y).unwrap()),
        bits(&x.to_dtype(DType::F16).unwrap()),
        bits(&x.to_dtype(DType::I32).unwrap()),
        bits(&Tensor::full(x.dims(), 2.5, DType::F32, &Device::cpu()).unwrap()),
    ]
}

#[test]
fn elementwise_results_do_not_depend_on_the_thread_count() {
    let dev = Device::cpu();
    // Below, at and past the cut (2 x 65,536), and odd.
    for (n, rows) in [(131_070, 2), (131_072, 256), (393_213, 3)] {
        let x = Tensor::rand([n], DType::F32, 1, &dev)
            .unwrap()
            .mul_scalar(8.0)
            .unwrap();
        let y = Tensor::rand([n], DType::F32, 2, &dev)
            .unwrap()
            .sub_scalar(0.5)
            .unwrap();
        for ((name, xv), (_, yv)) in views(&x, rows).into_iter().zip(views(&y, rows)) {
            let one = on(1, || results(&xv, &yv));
            for threads in [2, 3, 4] {
                let many = on(threads, || results(&xv, &yv));
                assert!(one == many, "{name} view of {n}, {threads} threads");
            }
        }
    }
}

#[test]
fn in_place_writes_through_views_do_not_depend_on_the_thread_count() {
    let dev = Device::cpu();
    let n = 3 * 131_075;
    let run = |threads: usize| {
        on(threads, || {
            let x = Tensor::rand([n], DType::F32, 3, &dev).unwrap();
            let m = x.reshape([3, n / 3]).unwrap();
            // In place through a stepped view, reading itself.
            let v = m.slice(s![.., ..;2]).unwrap();
            v.mul_(&v).unwrap();
            // Through a reversed view, reading another part of the parent.
            let back = m.slice(s![..1, ..]).unwrap().flip(&[1]).unwrap();
            back.add_(&m.slice(s![2..3, ..]).unwrap()).unwrap();
            // A chain of in-place ops on one view.
            m.t().relu_().unwrap();
            m.t().sub_scalar_(0.25).unwrap();
            bits(&x)
        })
    };
    let one = run(1);
    for threads in [2, 4] {
        assert!(one == run(threads), "{threads} threads");
    }
}

#[test]
fn softmax_results_do_not_depend_on_the_thread_count() {
    // Lines of 3 to 70,000 elements, along either axis of a view, enough
    // of them to be cut into groups of lines (2 x 65,536 elements).
    let dev = Device::cpu();
    for (rows, cols) in [(50_000, 3), (700, 500), (2, 70_000)] {
        let x = Tensor::rand([rows, cols], DType::F32, 4, &dev)
            .unwrap()
            .mul_scalar(20.0)
            .unwrap();
        let run = |threads: usize| {
            on(threads, || {
                let mut out = Vec::new();
                for axis in [0, 1] {
                    out.push(bits(&x.softmax(axis).unwrap()));
                    out.push(bits(&x.t().log_softmax(axis).unwrap()));
                    let h = x.to_dtype(DType::BF16).unwrap();
                    out.push(bits(&h.flip(&[1]).unwrap().softmax(axis).unwrap()));
                }
                out
            })
        };
        let one = run(1);
        for threads in [2, 3] {
            assert!(one == run(threads), "{rows} x {cols}, {threads} threads");
        }
    }
}
