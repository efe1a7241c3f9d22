//! Tokens drawn from logits (`Tensor::sample`) against NumPy's draws of
//! Hugging Face's rules (`tests/data/make_sampling_cases.py`), on every
//! device and over views; frequencies against the probabilities; the same
//! seed drawing the same tokens everywhere; bad input.

mod common;

use std::collections::HashMap;
use webtensor::{DType, Device, Error, Sampling, Tensor, io};

fn cases() -> HashMap<String, Tensor> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/sampling_cases.npz");
    io::from_npz_bytes(&std::fs::read(path).unwrap(), &Device::cpu())
        .unwrap()
        .into_iter()
        .collect()
}

fn sampling(args: &[f64]) -> Sampling {
    let mut s = Sampling::new(args[0]);
    if args[1] > 0.0 {
        s = s.top_k(args[1] as usize);
    }
    if args[2] > 0.0 {
        s = s.top_p(args[2]);
    }
    s
}

#[test]
fn draws_match_numpys_with_temperature_top_k_and_top_p() {
    let c = cases();
    for dev in common::devices() {
        let logits = c["logits"].to_device(&dev).unwrap();
        // Cases 6 and 7 draw from logits with ties at the k-th largest.
        let ties = c["ties"].to_device(&dev).unwrap();
        for n in 0..8 {
            let args = c[&format!("case{n}_args")].to_vec::<f64>().unwrap();
            let s = sampling(&args);
            let logits = if args[3] > 0.0 { &ties } else { &logits };
            // The same logits stored transposed: a strided view.
            let view = logits.t().contiguous().unwrap().t();
            let u = c[&format!("case{n}_uniform")].to_device(&dev).unwrap();
            let want = c[&format!("case{n}_tokens")].to_vec::<i32>().unwrap();
            for (what, x) in [("contiguous", logits), ("strided", &view)] {
                let got = x.sample_with(&s, &u).unwrap();
                assert_eq!(got.dims(), &[6]);
                assert_eq!(
                    got.to_vec::<i32>().unwrap(),
                    want,
                    "case {n}, {what}, on {dev}"
                );
            }
        }
        let greedy = logits.sample(&Sampling::greedy(), 0).unwrap();
        assert_eq!(
            greedy.to_vec::<i32>().unwrap(),
            logits.argmax(-1).unwrap().to_vec::<i32>().unwrap()
        );
        let top1 = logits.sample(&Sampling::new(3.0).top_k(1), 5).unwrap();
        assert_eq!(
            top1.to_vec::<i32>().unwrap(),
            greedy.to_vec::<i32>().unwrap()
        );
    }
}

#[test]
fn frequencies_follow_the_probabilities_and_seeds_repeat_everywhere() {
    // Probabilities 0.1, 0.2, 0.3, 0.4 as logits, 4000 rows.
    let p = [0.1f64, 0.2, 0.3, 0.4];
    let row: Vec<f32> = p.iter().map(|v| v.ln() as f32).collect();
    let rows = 4000;
    let flat: Vec<f32> = (0..rows).flat_map(|_| row.iter().copied()).collect();
    let mut first: Option<Vec<i32>> = None;
    for dev in common::devices() {
        let logits = Tensor::from_vec(flat.clone(), [rows, 4], &dev).unwrap();
        let drawn = logits
            .sample(&Sampling::new(1.0), 2026)
            .unwrap()
            .to_vec::<i32>()
            .unwrap();
        for (i, want) in p.iter().enumerate() {
            let got = drawn.iter().filter(|&&t| t == i as i32).count() as f64 / rows as f64;
            let sigma = (want * (1.0 - want) / rows as f64).sqrt();
            assert!(
                (got - want).abs() < 5.0 * sigma,
                "token {i} on {dev}: {got} vs {want}"
            );
        }
        // top_p 0.5 keeps 0.4 and 0.3 (0.4 is short of 0.5, 0.7 is not).
        let nucleus = logits
            .sample(&Sampling::new(1.0).top_p(0.5), 7)
            .unwrap()
            .to_vec::<i32>()
            .unwrap();
        assert!(nucleus.iter().all(|&t| t == 2 || t == 3), "{dev}");
        match &first {
            None => first = Some(drawn),
            Some(f) => assert_eq!(&drawn, f, "the seed draws other tokens on {dev}"),
        }
    }
}

/// A vocabulary of 128,256 whose largest token has 0.999 of the mass and
/// the rest share 0.001 (7.8e-9 each): a running f32 sum from the largest
/// stops growing at 0.999 (each step is under half its last bit), which
/// made every token of the tail undrawable. Sums from the smallest keep
/// the tail's mass: uniform numbers past 0.999 draw tail tokens where the
/// float64 probabilities put them (within 1% of the vocabulary).
#[test]
fn a_long_tail_of_tiny_probabilities_keeps_its_mass() {
    let n = 128_256usize;
    let (p0, pt) = (0.999f64, 0.001 / (n - 1) as f64);
    let tail = (pt / p0).ln() as f32;
    let mut row = vec![tail; n];
    row[0] = 0.0;
    let us = [0.5f32, 0.9992, 0.9995, 0.9999];
    let flat: Vec<f32> = us.iter().flat_map(|_| row.iter().copied()).collect();
    for dev in common::devices() {
        let logits = Tensor::from_vec(flat.clone(), [us.len(), n], &dev).unwrap();
        let u = Tensor::from_slice(&us, [us.len()], &dev).unwrap();
        for sampling in [Sampling::new(1.0), Sampling::new(1.0).top_p(1.0)] {
            let got = logits
                .sample_with(&sampling, &u)
                .unwrap()
                .to_vec::<i32>()
                .unwrap();
            for (&u, &token) in us.iter().zip(&got) {
                // The tail in index order (equal logits: a stable sort).
                let want = match f64::from(u) < p0 {
                    true => 0.0,
                    false => 1.0 + ((f64::from(u) - p0) / pt).floor(),
                };
                assert!(
                    (f64::from(token) - want).abs() <= n as f64 / 100.0,
                    "u {u} on {dev}: token {token}, float64's {want}"
                );
            }
        }
    }
}

#[test]
fn half_logits_and_leading_axes_draw_valid_tokens() {
    for dev in common::devices() {
        let logits = Tensor::randn([2, 3, 17], DType::F32, 4, &dev).unwrap();
        for dtype in [DType::F16, DType::BF16] {
            let t = logits
                .to_dtype(dtype)
                .unwrap()
                .sample(&Sampling::new(0.8).top_k(4), 9)
                .unwrap();
            assert_eq!(t.dims(), &[2, 3]);
            assert_eq!(t.dtype(), DType::I32);
            // Each among its row's 4 largest.
            let (_, top) = logits.topk(4, -1, webtensor::TopK::Largest).unwrap();
            let top = top.to_vec::<i32>().unwrap();
            for (r, tok) in t.to_vec::<i32>().unwrap().iter().enumerate() {
                assert!(
                    top[4 * r..4 * r + 4].contains(tok),
                    "{dtype} on {dev}: row {r} drew {tok}"
                );
            }
        }
    }
}

#[test]
fn sampling_refuses_bad_input() {
    let dev = Device::cpu();
    let logits = Tensor::zeros([2, 5], DType::F32, &dev).unwrap();
    let u = Tensor::zeros([2], DType::F32, &dev).unwrap();
    for (s, what) in [
        (Sampling::new(-1.0), "temperature"),
        (Sampling::new(f64::NAN), "temperature"),
        (Sampling::new(1.0).top_k(0), "top_k"),
        (Sampling::new(1.0).top_p(-0.1), "top_p"),
        (Sampling::new(1.0).top_p(1.5), "top_p"),
    ] {
        match logits.sample_with(&s, &u) {
            Err(Error::Argument { op: "sample", msg }) => assert!(msg.contains(what), "{msg}"),
            other => panic!("{what}: {other:?}"),
        }
    }
    let s = Sampling::new(1.0);
    assert!(matches!(
        logits.sample_with(&s, &Tensor::zeros([3], DType::F32, &dev).unwrap()),
        Err(Error::Shape { .. })
    ));
    // Uniform numbers of another dtype: a dtype error, as documented (it
    // was a shape error).
    assert!(matches!(
        logits.sample_with(&s, &Tensor::zeros([2], DType::F64, &dev).unwrap()),
        Err(Error::DType { op: "sample", .. })
    ));
    assert!(matches!(
        Tensor::zeros([2, 0], DType::F32, &dev)
            .unwrap()
            .sample(&s, 1),
        Err(Error::Shape { .. })
    ));
    assert!(matches!(
        Tensor::zeros([2, 5], DType::I32, &dev)
            .unwrap()
            .sample(&s, 1),
        Err(Error::DType { .. })
    ));
}

/// A `top_p` of 0 (Hugging Face takes `[0, 1]`) or below f32's resolution
/// of 1 keeps the largest logit alone: the draw is greedy (a p of 1e-9
/// once cut every token, and the draw took the smallest).
#[test]
fn a_top_p_of_nothing_keeps_the_largest() {
    let logits: Vec<f32> = [1.0, 3.0, 2.0, 0.5].repeat(3);
    let us = [0.0f32, 0.5, 0.999];
    for dev in common::devices() {
        let logits = Tensor::from_slice(&logits, [3, 4], &dev).unwrap();
        let u = Tensor::from_slice(&us, [3], &dev).unwrap();
        for p in [0.0, 1e-9] {
            let got = logits
                .sample_with(&Sampling::new(1.0).top_p(p), &u)
                .unwrap()
                .to_vec::<i32>()
                .unwrap();
            assert_eq!(got, [1, 1, 1], "top_p {p} on {dev}");
        }
    }
}

/// Logits tied at top_p's cut are kept in index order, the earlier first,
/// on every device, as documented: of [2, 1, 1, 0] at p = 0.6 (0.58 in
/// the largest) tokens 0 and 1 are drawn, never 2 (Hugging Face keeps 0
/// and 2); of four equal logits at p = 0.5, tokens 0 and 1.
#[test]
fn ties_at_the_top_p_cut_keep_the_earlier_tokens() {
    let us: Vec<f32> = (0..16).map(|i| i as f32 / 16.0).collect();
    for dev in common::devices() {
        for (row, p, kept) in [
            ([2.0f32, 1.0, 1.0, 0.0], 0.6, [0, 1]),
            ([1.0; 4], 0.5, [0, 1]),
        ] {
            let logits = Tensor::from_slice(&row.repeat(16), [16, 4], &dev).unwrap();
            let u = Tensor::from_slice(&us, [16], &dev).unwrap();
            let got = logits
                .sample_with(&Sampling::new(1.0).top_p(p), &u)
                .unwrap()
                .to_vec::<i32>()
                .unwrap();
            for token in kept {
                assert!(got.contains(&token), "{row:?} on {dev}: {got:?}");
            }
            assert!(
                got.iter().all(|t| kept.contains(t)),
                "{row:?} on {dev}: {got:?}"
            );
        }
    }
}

/// A temperature small enough that the logits over it pass f32's range is
/// the greedy draw, its limit (the scaled logits were all +inf, and the
/// draw took the first); a row with a NaN logit, or no finite one, gives
/// `argmax`'s token as documented, and one with +inf its first +inf.
#[test]
fn a_tiny_temperature_is_greedy_and_odd_rows_draw_argmax() {
    let (nan, inf) = (f32::NAN, f32::INFINITY);
    #[rustfmt::skip]
    let logits = [
        10.0, 20.0, -5.0, 19.0,
        -3e38, 1.0, 3e38, 2.0,
        1.0, nan, 3.0, nan,
        -inf, -inf, -inf, -inf,
        1.0, inf, 2.0, inf,
    ];
    let us = [0.0f32, 0.3, 0.5, 0.7, 0.999];
    for dev in common::devices() {
        let logits = Tensor::from_slice(&logits, [5, 4], &dev).unwrap();
        let u = Tensor::from_slice(&us, [5], &dev).unwrap();
        // Down to temperatures that round to 0 in f32 (they divided to
        // NaN, whose draw was the first NaN).
        for t in [1e-38, 1e-30, 1e-46, 1e-300] {
            let got = logits.sample_with(&Sampling::new(t), &u).unwrap();
            assert_eq!(
                got.to_vec::<i32>().unwrap(),
                [1, 2, 1, 0, 1],
                "{t} on {dev}"
            );
        }
        let got = logits.sample_with(&Sampling::new(1.0), &u).unwrap();
        let tokens = got.to_vec::<i32>().unwrap();
        assert_eq!(tokens[1..], [2, 1, 0, 1], "{dev}");
        // A temperature past f32's range draws among the finite logits as
        // its limit, uniformly (the larger first), never a -inf one (it was infinite in f32,
        // and -inf / inf drew the first logit).
        let banned = Tensor::from_slice(&[-inf, 2.0, -inf, 7.0], [1, 4], &dev).unwrap();
        for t in [1e38, 3.5e38, 1e300] {
            let drawn: Vec<i32> = [0.1f32, 0.4, 0.6, 0.9]
                .iter()
                .map(|&u| {
                    let u = Tensor::from_slice(&[u], [1], &dev).unwrap();
                    let got = banned.sample_with(&Sampling::new(t), &u).unwrap();
                    got.to_vec::<i32>().unwrap()[0]
                })
                .collect();
            assert_eq!(drawn, [3, 3, 1, 1], "{t} on {dev}");
        }
    }
}

/// f64 logits keep their differences (f32 copies of 1e10 and 1e10 + 1 are
/// equal, and the draw was a coin toss): `top_k(1)` is the greedy token,
/// and the larger logit is drawn with its probability `1 / (1 + e^-1)`
/// (0.731).
#[test]
fn f64_logits_keep_their_differences() {
    let dev = Device::cpu();
    let n = 1000;
    let row = [1e10f64, 1e10 + 1.0];
    let logits = Tensor::from_slice(&row.repeat(n), [n, 2], &dev).unwrap();
    let us: Vec<f32> = (0..n).map(|i| (i as f32 + 0.5) / n as f32).collect();
    let u = Tensor::from_slice(&us, [n], &dev).unwrap();
    let top = logits
        .sample_with(&Sampling::new(1.0).top_k(1), &u)
        .unwrap();
    assert!(top.to_vec::<i32>().unwrap().iter().all(|&t| t == 1));
    let drawn = logits.sample_with(&Sampling::new(1.0), &u).unwrap();
    let ones = drawn
        .to_vec::<i32>()
        .unwrap()
        .iter()
        .filter(|&&t| t == 1)
        .count();
    let p = 1.0 / (1.0 + (-1.0f64).exp());
    assert!(
        (ones as f64 - p * n as f64).abs() <= 1.0,
        "{ones} of {n} drew the larger logit, want {:.1}",
        p * n as f64
    );
}

/// Uniform numbers out of `[0, 1)` draw as documented: below 0 the most
/// probable kept token, 1 or more the least probable kept one (never a
/// dropped or impossible token after it: they drew the last sorted, a
/// -inf logit), NaN the most probable.
#[test]
fn numbers_out_of_range_draw_kept_tokens() {
    let inf = f32::INFINITY;
    for dev in common::devices() {
        let logits = Tensor::from_slice(&[0.0f32, 1.0, -inf, 2.0, 3.0], [1, 5], &dev).unwrap();
        for (sampling, least) in [
            (Sampling::new(1.0), 0),
            (Sampling::new(1.0).top_k(1), 4),
            (Sampling::new(1.0).top_k(3), 1),
            (Sampling::new(1.0).top_p(0.5), 4),
        ] {
            for (u, want) in [(-0.5f32, 4), (1.0, least), (2.0, least), (f32::NAN, 4)] {
                let u = Tensor::from_slice(&[u], [1], &dev).unwrap();
                let got = logits
                    .sample_with(&sampling, &u)
                    .unwrap()
                    .to_vec::<i32>()
                    .unwrap();
                assert_eq!(got, [want], "{sampling:?}, u = {u} on {dev}");
            }
        }
    }
}
