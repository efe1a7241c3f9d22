//! The CPU device's ops cut into parts on its threads (issue 47 item 2):
//! every result is the one-thread result bit for bit, over every view
//! layout, in-place writes through views included, at sizes on both sides
//! of the size that starts cutting (2 x 65,536 elements) and odd sizes
//! that leave parts of unequal length; `Device::cpu_with_threads` and the
//! count `DeviceInfo` reports.

use webtensor::{Conv, DType, Device, Error, Tensor, s};

/// A CPU device of `threads` threads of its own.
fn cpu(threads: usize) -> Device {
    Device::cpu_with_threads(threads).unwrap()
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
    let dev = x.device().clone();
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
        bits(&Tensor::full(x.dims(), 2.5, DType::F32, &dev).unwrap()),
    ]
}

#[test]
fn elementwise_results_do_not_depend_on_the_thread_count() {
    // Below, at and past the cut (2 x 65,536), and odd.
    for (n, rows) in [(131_070, 2), (131_072, 256), (393_213, 3)] {
        let run = |threads: usize| {
            let dev = cpu(threads);
            let x = Tensor::rand([n], DType::F32, 1, &dev)
                .unwrap()
                .mul_scalar(8.0)
                .unwrap();
            let y = Tensor::rand([n], DType::F32, 2, &dev)
                .unwrap()
                .sub_scalar(0.5)
                .unwrap();
            views(&x, rows)
                .into_iter()
                .zip(views(&y, rows))
                .map(|((name, xv), (_, yv))| (name, results(&xv, &yv)))
                .collect::<Vec<_>>()
        };
        let one = run(1);
        for threads in [2, 3, 4] {
            for ((name, a), (_, b)) in one.iter().zip(run(threads)) {
                assert!(*a == b, "{name} view of {n}, {threads} threads");
            }
        }
    }
}

#[test]
fn in_place_writes_through_views_do_not_depend_on_the_thread_count() {
    let n = 3 * 131_075;
    let run = |threads: usize| {
        let x = Tensor::rand([n], DType::F32, 3, &cpu(threads)).unwrap();
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
    for (rows, cols) in [(50_000, 3), (700, 500), (2, 70_000)] {
        let run = |threads: usize| {
            let x = Tensor::rand([rows, cols], DType::F32, 4, &cpu(threads))
                .unwrap()
                .mul_scalar(20.0)
                .unwrap();
            let mut out = Vec::new();
            for axis in [0, 1] {
                out.push(bits(&x.softmax(axis).unwrap()));
                out.push(bits(&x.t().log_softmax(axis).unwrap()));
                let h = x.to_dtype(DType::BF16).unwrap();
                out.push(bits(&h.flip(&[1]).unwrap().softmax(axis).unwrap()));
            }
            out
        };
        let one = run(1);
        for threads in [2, 3] {
            assert!(one == run(threads), "{rows} x {cols}, {threads} threads");
        }
    }
}

#[test]
fn products_and_convolutions_do_not_depend_on_the_thread_count() {
    // gemm's products, the banded im2col convolution, the depthwise
    // kernel (a plane per part) and the transposed convolution's col2im.
    let run = |threads: usize| {
        let dev = cpu(threads);
        let a = Tensor::rand([3, 97, 130], DType::F32, 5, &dev).unwrap();
        let b = Tensor::rand([3, 130, 71], DType::F32, 6, &dev).unwrap();
        let x = Tensor::rand([2, 6, 37, 41], DType::F32, 7, &dev).unwrap();
        let nhwc = Tensor::rand([2, 37, 41, 6], DType::F32, 11, &dev).unwrap();
        let w = Tensor::rand([8, 6, 3, 3], DType::F32, 8, &dev).unwrap();
        let dw = Tensor::rand([6, 1, 5, 5], DType::F32, 9, &dev).unwrap();
        let wt = Tensor::rand([6, 4, 3, 3], DType::F32, 10, &dev).unwrap();
        let strided = Conv::new().stride(2).padding(1);
        vec![
            bits(&a.matmul(&b).unwrap()),
            bits(&a.transpose(-1, -2).unwrap().matmul(&a).unwrap()),
            bits(&x.conv2d(&w, &strided).unwrap()),
            bits(
                &nhwc
                    .permute(&[0, 3, 1, 2])
                    .unwrap()
                    .conv2d(&w, &Conv::new().padding(1))
                    .unwrap(),
            ),
            bits(&x.conv2d(&dw, &Conv::new().padding(2).groups(6)).unwrap()),
            bits(&x.conv_transpose2d(&wt, &strided).unwrap()),
        ]
    };
    let one = run(1);
    for threads in [2, 3] {
        for (k, (a, b)) in one.iter().zip(run(threads)).enumerate() {
            assert!(*a == b, "result {k}, {threads} threads");
        }
    }
}

/// Shapes chosen (by reading the dispatch) for kernels the products' test
/// misses give the same bits for any thread count: channels-last
/// depthwise (f32 and bf16, dilated), the paired kernels of 8 output
/// channels, and a transposed convolution of stride equal to its kernel
/// (tap rows written into the output).
#[test]
fn channels_last_depthwise_pairs_and_tap_rows_do_not_depend_on_the_thread_count() {
    let run = |threads: usize| {
        let dev = cpu(threads);
        let x = Tensor::rand([2, 24, 37, 41], DType::F32, 12, &dev)
            .unwrap()
            .to_channels_last()
            .unwrap();
        let dw = Tensor::rand([48, 1, 3, 3], DType::F32, 13, &dev).unwrap();
        let w8 = Tensor::rand([8, 24, 3, 3], DType::F32, 14, &dev).unwrap();
        let up = Tensor::rand([24, 8, 2, 2], DType::F32, 15, &dev).unwrap();
        let xb = x.to_dtype(DType::BF16).unwrap();
        let dwb = Tensor::rand([24, 1, 3, 3], DType::BF16, 16, &dev).unwrap();
        let conv = |x: &Tensor, w: &Tensor, c: Conv| bits(&x.conv2d(w, &c).unwrap());
        vec![
            conv(&x, &dw, Conv::new().padding(1).stride(2).groups(24)),
            conv(&xb, &dwb, Conv::new().padding(2).dilation(2).groups(24)),
            conv(&x, &w8, Conv::new().padding(1)),
            bits(&x.conv_transpose2d(&up, &Conv::new().stride(2)).unwrap()),
        ]
    };
    let one = run(1);
    for threads in [2, 3, 5] {
        for (k, (a, b)) in one.iter().zip(run(threads)).enumerate() {
            assert!(*a == b, "result {k}, {threads} threads");
        }
    }
}

#[test]
fn a_device_reports_and_keeps_its_threads() {
    for n in [1, 3] {
        let dev = cpu(n);
        assert_eq!(dev.info().threads, n);
        assert!(dev.info().to_string().contains(&format!("{n} threads")));
        // The CPU devices are one memory: tensors of different pools mix.
        let x = Tensor::arange(0.0f32, 6.0, 1.0, &dev).unwrap();
        let y = Tensor::ones([6], DType::F32, &Device::cpu()).unwrap();
        assert_eq!(dev, Device::cpu());
        assert_eq!(
            x.add(&y).unwrap().to_vec::<f32>().unwrap(),
            [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
        );
        // A move onto another pool copies, contiguous, with the values.
        let moved = x.flip(&[0]).unwrap().to_device(&cpu(2)).unwrap();
        assert_eq!(
            moved.to_vec::<f32>().unwrap(),
            [5.0, 4.0, 3.0, 2.0, 1.0, 0.0]
        );
        assert!(moved.is_contiguous());
    }
    assert!(Device::cpu().info().threads >= 1);
    let default = Device::default_device().unwrap();
    assert_eq!(default.info().threads == 0, default.is_gpu());
}

/// No threads, and more than a machine runs (a million spawned threads
/// until the system refused one, starving it first), are refused.
#[test]
fn zero_threads_and_a_million_are_refused() {
    for n in [0, 1025, 1 << 20] {
        match Device::cpu_with_threads(n) {
            Err(Error::Argument { op, msg }) => {
                assert_eq!(op, "Device::cpu_with_threads");
                assert!(msg.contains(&format!("threads = {n}")), "{msg}");
            }
            Err(e) => panic!("wrong error: {e}"),
            Ok(_) => panic!("a device of {n} threads"),
        }
    }
}

/// Freed host vectors back the next tensors (issue 47: a network's
/// forward pass spent a fifth of its time faulting fresh pages in): the
/// vector of a dropped tensor serves the next of its dtype and size,
/// `zeros` over a reused vector is zeros, an op's output over one holds
/// the op's values, and `release_pooled_memory` empties the pool.
#[test]
fn freed_host_vectors_are_reused_and_zeros_stay_zeros() -> Result<(), Error> {
    let dev = Device::cpu();
    // A length no other test here makes: the pool is the process's.
    let n = 123_457;
    let full = Tensor::full([n], 7.0f32, DType::F32, &dev)?;
    let before = dev.stats();
    drop(full);
    assert!(dev.stats().bytes_pooled >= before.bytes_pooled + 4 * n as u64);
    let zeros = Tensor::zeros([n], DType::F32, &dev)?;
    assert!(dev.stats().buffers_reused > before.buffers_reused);
    assert!(zeros.to_vec::<f32>()?.iter().all(|&v| v.to_bits() == 0));
    let reused = dev.stats().buffers_reused;
    let sum = zeros.add_scalar(2.5)?;
    drop(zeros);
    let again = sum.mul_scalar(2.0)?;
    assert!(dev.stats().buffers_reused > reused);
    assert!(again.to_vec::<f32>()?.iter().all(|&v| v == 5.0));
    drop((sum, again));
    // The pool is the process's: another test of this binary may free a
    // vector of this size's bucket between emptying it and the next
    // request, so the emptying gets three tries to show.
    let mut emptied = false;
    for _ in 0..3 {
        dev.release_pooled_memory();
        let created = dev.stats().buffers_created;
        let fresh = Tensor::zeros([n], DType::F32, &dev)?;
        emptied |= dev.stats().buffers_created > created;
        assert!(fresh.to_vec::<f32>()?.iter().all(|&v| v.to_bits() == 0));
    }
    assert!(emptied, "release_pooled_memory left the pool serving");
    Ok(())
}

/// Two threads whose in-place ops on the CPU each read what the other
/// writes (`a.add_(&b)` beside `b.add_(&a)`, a scatter into one from the
/// other) finish: every kernel takes its storages' locks in one order.
/// Before, each thread could hold its input's read lock while waiting for
/// the other's write lock, forever. The watchdog fails the test rather
/// than hang it.
#[test]
fn crossed_in_place_ops_on_two_threads_finish() {
    use std::sync::mpsc;
    use std::time::Duration;
    let cpu = Device::cpu();
    let a = Tensor::zeros([1 << 16], DType::F32, &cpu).unwrap();
    let b = Tensor::zeros([1 << 16], DType::F32, &cpu).unwrap();
    let index = Tensor::arange(0i64, 1 << 12, 1, &cpu).unwrap();
    let rounds = 300;
    let (done, finished) = mpsc::channel();
    for flip in [false, true] {
        let (x, y, i, done) = (a.clone(), b.clone(), index.clone(), done.clone());
        std::thread::spawn(move || {
            let (x, y) = if flip { (y, x) } else { (x, y) };
            for _ in 0..rounds {
                x.add_(&y).unwrap();
                let part = y.narrow(0, 0, 1 << 12).unwrap();
                x.scatter_(&i, &part, 0).unwrap();
            }
            done.send(()).unwrap();
        });
    }
    for _ in 0..2 {
        finished
            .recv_timeout(Duration::from_secs(120))
            .expect("a thread is still waiting for a lock after 120 s");
    }
}

/// A product called from a worker of the application's own rayon pool,
/// whose other job writes an operand: the product's wait let rayon run
/// that job on the thread that held the operand's lock, which then waited
/// on itself. Both a device of its own threads and the process's.
#[test]
fn a_product_inside_the_applications_rayon_pool_finishes() {
    use std::sync::mpsc;
    use std::time::Duration;
    let (done, finished) = mpsc::channel();
    for threads in [Some(2), None] {
        let done = done.clone();
        std::thread::spawn(move || {
            let dev = match threads {
                Some(n) => Device::cpu_with_threads(n).unwrap(),
                None => Device::cpu(),
            };
            // Past gemm's threading threshold (m n k > 589,824).
            let a = Tensor::rand([96, 96], DType::F32, 1, &dev).unwrap();
            let user = rayon::ThreadPoolBuilder::new()
                .num_threads(1)
                .build()
                .unwrap();
            for _ in 0..20 {
                user.scope(|s| {
                    s.spawn(|_| a.sub_scalar_(1.0).unwrap());
                    a.matmul(&a).unwrap();
                });
            }
            done.send(threads).unwrap();
        });
    }
    for _ in 0..2 {
        finished
            .recv_timeout(Duration::from_secs(120))
            .expect("a product inside a rayon pool is still waiting after 120 s");
    }
}
