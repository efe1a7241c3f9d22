//! The counter-based generator (`Generator`): its streams against an
//! implementation of Philox4x32-10 of the test data's own
//! (`tests/data/make_random_cases.py`, checked against Random123's
//! answers) on every device; every device's draws the same bits as the
//! CPU's, for every draw and dtype at sizes across the kernel's quads,
//! workgroups and grid; the samples' statistics; bad input.

mod common;

use half::{bf16, f16};
use std::collections::HashMap;
use webtensor::{DType, Device, Error, Generator, Tensor, io};

const N: usize = 4099;

fn cases() -> HashMap<String, Tensor> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/random_cases.npz");
    io::from_npz_bytes(&std::fs::read(path).unwrap(), &Device::cpu())
        .unwrap()
        .into_iter()
        .collect()
}

fn case<T: webtensor::Element>(cases: &HashMap<String, Tensor>, name: &str) -> Vec<T> {
    cases[name].to_vec::<T>().unwrap()
}

/// The seed the data was written for.
fn seed(cases: &HashMap<String, Tensor>) -> u64 {
    let w: Vec<u32> = case(cases, "seed_words");
    u64::from(w[0]) | u64::from(w[1]) << 32
}

#[test]
fn streams_match_the_reference_on_every_device() {
    let cases = cases();
    let seed = seed(&cases);
    for dev in common::devices() {
        let g = || Generator::new(seed);
        let bits = g().bits([N], &dev).unwrap();
        assert_eq!(
            bits.to_vec::<u32>().unwrap(),
            case::<u32>(&cases, "bits"),
            "{dev:?}"
        );
        let later = Generator::with_offset(seed, 1000).bits([N], &dev).unwrap();
        assert_eq!(
            later.to_vec::<u32>().unwrap(),
            case::<u32>(&cases, "bits_offset")
        );
        let f32s = g().rand([N], DType::F32, &dev).unwrap();
        assert_eq!(
            f32s.to_vec::<f32>().unwrap(),
            case::<f32>(&cases, "rand_f32")
        );
        let f16s = g().rand([N], DType::F16, &dev).unwrap();
        assert_eq!(
            f16s.to_vec::<f16>().unwrap(),
            case::<f16>(&cases, "rand_f16")
        );
        let bf16s = g()
            .rand([N], DType::BF16, &dev)
            .unwrap()
            .to_vec::<bf16>()
            .unwrap();
        let bf16s: Vec<f32> = bf16s.into_iter().map(f32::from).collect();
        assert_eq!(bf16s, case::<f32>(&cases, "rand_bf16_as_f32"));
        if !dev.is_gpu() {
            let f64s = g().rand([N], DType::F64, &dev).unwrap();
            assert_eq!(
                f64s.to_vec::<f64>().unwrap(),
                case::<f64>(&cases, "rand_f64")
            );
        }
        for name in ["int_dice", "int_wide", "int_i64", "int_odd"] {
            let range: Vec<i64> = case(&cases, &format!("{name}_range"));
            let want: Vec<i64> = case(&cases, name);
            let ints = g()
                .randint([N], range[0], range[1], DType::I64, &dev)
                .unwrap();
            assert_eq!(ints.to_vec::<i64>().unwrap(), want, "{name} on {dev:?}");
            if !matches!(name, "int_i64" | "int_odd") {
                let narrow = g()
                    .randint([N], range[0], range[1], DType::I32, &dev)
                    .unwrap();
                let want32: Vec<i32> = want.iter().map(|&v| v as i32).collect();
                assert_eq!(narrow.to_vec::<i32>().unwrap(), want32, "{name} as i32");
            }
        }
        for (name, p) in [("bernoulli_third", 1.0 / 3.0), ("bernoulli_tiny", 1e-9)] {
            let want: Vec<u8> = case(&cases, name);
            let trials = g().bernoulli([N], p, DType::U8, &dev).unwrap();
            assert_eq!(trials.to_vec::<u8>().unwrap(), want, "{name} on {dev:?}");
            let flags = g().bernoulli([N], p, DType::Bool, &dev).unwrap();
            let want_flags: Vec<bool> = want.iter().map(|&v| v == 1).collect();
            assert_eq!(flags.to_vec::<bool>().unwrap(), want_flags);
        }
    }
    let mut g = Generator::with_offset(seed, 5);
    let children = g.split(3).unwrap();
    let words: Vec<u32> = case(&cases, "split_seed_words");
    for (j, child) in children.iter().enumerate() {
        let want = u64::from(words[2 * j]) | u64::from(words[2 * j + 1]) << 32;
        assert_eq!((child.seed(), child.offset()), (want, 0));
    }
    assert_eq!(g.offset(), 6, "a split moves its generator a block on");
    let mut f = Generator::with_offset(seed, 5);
    assert_eq!(f.fork().unwrap(), children[0]);
    assert_eq!(f.fork().unwrap().seed(), g.split(1).unwrap()[0].seed());
    // At the stream's last block, moving on would wrap to its first (and
    // a second fork repeat the first): both refuse, the offset kept.
    let mut end = Generator::with_offset(seed, u64::MAX);
    for r in [end.fork().map(|_| ()), end.split(2).map(|_| ())] {
        assert!(
            matches!(&r, Err(Error::Argument { op, .. }) if *op == "fork" || *op == "split"),
            "{r:?}"
        );
    }
    assert_eq!(end.offset(), u64::MAX);
}

/// The f32 normals against float64 Box-Muller of the same words: within
/// 1.5e-6 + 4 ulp of the value (the radius's 3.3 ulp and the angle's
/// 2.5e-7 absolute, times a radius under 5.8); f64's within 1e-12.
#[test]
fn normals_are_box_muller_of_the_stream() {
    let cases = cases();
    let seed = seed(&cases);
    let want: Vec<f64> = case(&cases, "randn_f64_reference");
    for dev in common::devices() {
        let got = Generator::new(seed).randn([N], DType::F32, &dev).unwrap();
        let got = got.to_vec::<f32>().unwrap();
        assert_eq!(got.len(), want.len());
        for (i, (&g, &w)) in got.iter().zip(&want).enumerate() {
            let bound = 1.5e-6 + 4.0 * f64::from(f32::EPSILON) * w.abs();
            assert!(
                (f64::from(g) - w).abs() <= bound,
                "{i}: {g} vs {w} on {dev:?}"
            );
        }
    }
    let f64s = Generator::new(seed)
        .randn([N], DType::F64, &Device::cpu())
        .unwrap();
    let f64s = f64s.to_vec::<f64>().unwrap();
    let want: Vec<f64> = case(&cases, "randn_f64_stream");
    assert_eq!(f64s.len(), want.len());
    for (i, (&g, &w)) in f64s.iter().zip(&want).enumerate() {
        assert!((g - w).abs() <= 1e-12 * w.abs().max(1.0), "{i}: {g} vs {w}");
    }
    let cpu32 = Generator::new(seed)
        .randn([N], DType::F32, &Device::cpu())
        .unwrap();
    let cpu32 = cpu32.to_vec::<f32>().unwrap();
    // Different words (two an element), so only the distribution is shared.
    assert_ne!(f64s[0] as f32, cpu32[0]);
}

/// Every draw in every dtype: the GPUs' bits are the CPU's, at lengths
/// across a quad, a workgroup's 256 elements and the CPU's 16384-element
/// pieces, from offsets where the block count carries into its high word.
#[test]
fn every_device_draws_the_cpus_bits() {
    type Draw = fn(&mut Generator, usize, &Device) -> webtensor::Result<Tensor>;
    let draws: Vec<(&str, Draw)> = vec![
        ("bits", |g, n, d| g.bits([n], d)),
        ("rand f32", |g, n, d| g.rand([n], DType::F32, d)),
        ("rand f16", |g, n, d| g.rand([n], DType::F16, d)),
        ("rand bf16", |g, n, d| g.rand([n], DType::BF16, d)),
        ("uniform f32", |g, n, d| {
            g.uniform([n], -3.5, 1e3, DType::F32, d)
        }),
        ("uniform f16", |g, n, d| {
            g.uniform([n], -2.0, 7.25, DType::F16, d)
        }),
        ("uniform bf16", |g, n, d| {
            g.uniform([n], 0.1, 0.2, DType::BF16, d)
        }),
        ("randn f32", |g, n, d| g.randn([n], DType::F32, d)),
        ("normal f16", |g, n, d| {
            g.normal([n], 0.5, 1e-3, DType::F16, d)
        }),
        ("normal f16 tiny", |g, n, d| {
            g.normal([n], 0.0, 1e-5, DType::F16, d)
        }),
        ("normal bf16", |g, n, d| {
            g.normal([n], -4.0, 30.0, DType::BF16, d)
        }),
        ("randint i32", |g, n, d| {
            g.randint([n], -1000, 1_000_000_007, DType::I32, d)
        }),
        ("randint u32", |g, n, d| {
            g.randint([n], 0, 1 << 32, DType::U32, d)
        }),
        ("randint u8", |g, n, d| g.randint([n], 3, 256, DType::U8, d)),
        ("randint i64", |g, n, d| {
            g.randint([n], -(1 << 62), 1 << 62, DType::I64, d)
        }),
        // A span whose words both carry in the product.
        ("randint i64 odd", |g, n, d| {
            g.randint([n], -7, 0x1E37_79B9_7F4A_7C15, DType::I64, d)
        }),
        ("bernoulli f32", |g, n, d| {
            g.bernoulli([n], 0.25, DType::F32, d)
        }),
        ("bernoulli f16", |g, n, d| {
            g.bernoulli([n], 0.75, DType::F16, d)
        }),
        ("bernoulli bf16", |g, n, d| {
            g.bernoulli([n], 0.5, DType::BF16, d)
        }),
        ("bernoulli i64", |g, n, d| {
            g.bernoulli([n], 1.0, DType::I64, d)
        }),
        ("bernoulli i32", |g, n, d| {
            g.bernoulli([n], 0.9, DType::I32, d)
        }),
        ("bernoulli bool", |g, n, d| {
            g.bernoulli([n], 0.0, DType::Bool, d)
        }),
    ];
    let cpu = Device::cpu();
    let gpus: Vec<Device> = common::devices()
        .into_iter()
        .filter(Device::is_gpu)
        .collect();
    for (name, draw) in &draws {
        for n in [1, 3, 4, 5, 255, 256, 257, 1031, 16_389] {
            for offset in [0, u64::from(u32::MAX) - 2] {
                let mut g = Generator::with_offset(0xDEAD_BEEF, offset);
                let want = draw(&mut g, n, &cpu).unwrap();
                let want_offset = g.offset();
                let want = bytes(&want);
                for dev in &gpus {
                    let mut g = Generator::with_offset(0xDEAD_BEEF, offset);
                    let got = draw(&mut g, n, dev).unwrap();
                    assert_eq!(g.offset(), want_offset, "{name}");
                    assert!(
                        bytes(&got) == want,
                        "{name} of {n} from {offset} on {dev:?}"
                    );
                }
            }
        }
    }
}

/// A tensor's elements as bytes (bool as 0 and 1).
fn bytes(t: &Tensor) -> Vec<u8> {
    match t.dtype() {
        DType::F32 => t
            .to_vec::<f32>()
            .unwrap()
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect(),
        DType::F16 => t
            .to_vec::<f16>()
            .unwrap()
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect(),
        DType::BF16 => t
            .to_vec::<bf16>()
            .unwrap()
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect(),
        DType::I32 => t
            .to_vec::<i32>()
            .unwrap()
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect(),
        DType::U32 => t
            .to_vec::<u32>()
            .unwrap()
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect(),
        DType::I64 => t
            .to_vec::<i64>()
            .unwrap()
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect(),
        DType::U8 => t.to_vec::<u8>().unwrap(),
        DType::Bool => t
            .to_vec::<bool>()
            .unwrap()
            .into_iter()
            .map(u8::from)
            .collect(),
        other => panic!("no bytes of {other}"),
    }
}

/// One draw past 65535 workgroups in x (the grid's second row), on the
/// GPUs against the CPU.
#[test]
fn a_draw_past_one_grid_row_matches_the_cpu() {
    let n = 65_535 * 256 + 4 * 64 + 5;
    let want = Generator::new(9)
        .randint([n], 0, 256, DType::U8, &Device::cpu())
        .unwrap();
    let want = want.to_vec::<u8>().unwrap();
    for dev in common::devices().into_iter().filter(Device::is_gpu) {
        let got = Generator::new(9)
            .randint([n], 0, 256, DType::U8, &dev)
            .unwrap();
        assert!(got.to_vec::<u8>().unwrap() == want, "{dev:?}");
    }
}

/// A draw larger than one storage binding goes in parts, each bound in a
/// window of the buffer: on devices whose binding is capped at 512 bytes,
/// every draw of 5,003 elements takes tens of parts, and gives the CPU's
/// bits.
#[test]
fn draws_over_many_bindings_match_the_cpu() {
    let capped = common::own_gpu(webtensor::GpuOptions {
        max_binding_bytes: Some(512),
        ..Default::default()
    });
    type Draw = fn(&mut Generator, &Device) -> webtensor::Result<Tensor>;
    const N: usize = 5003;
    let draws: [(&str, Draw); 6] = [
        ("randn f32", |g, d| g.randn([N], DType::F32, d)),
        ("rand f16", |g, d| g.rand([N], DType::F16, d)),
        ("randint u8", |g, d| g.randint([N], 0, 200, DType::U8, d)),
        ("randint i64", |g, d| {
            g.randint([N], -5, 1 << 40, DType::I64, d)
        }),
        ("bernoulli bool", |g, d| {
            g.bernoulli([N], 0.5, DType::Bool, d)
        }),
        ("bits", |g, d| g.bits([N], d)),
    ];
    if let Some(dev) = capped {
        for (name, draw) in draws {
            let mut g = Generator::with_offset(11, 3);
            let got = bytes(&draw(&mut g, &dev).unwrap());
            let mut h = Generator::with_offset(11, 3);
            let want = bytes(&draw(&mut h, &Device::cpu()).unwrap());
            assert!(got == want, "{name} in parts");
            assert_eq!(g.offset(), h.offset());
        }
    }
}

/// Draws follow one another in the stream: each takes whole blocks from
/// the offset on.
#[test]
fn draws_take_whole_blocks_in_turn() {
    for dev in common::devices() {
        let mut g = Generator::new(77);
        let a = g.bits([5], &dev).unwrap().to_vec::<u32>().unwrap();
        assert_eq!(g.offset(), 2);
        let b = g.randint([3], 0, 10, DType::I64, &dev).unwrap();
        assert_eq!((b.numel(), g.offset()), (3, 4), "six words: two blocks");
        let c = g.bits([4], &dev).unwrap().to_vec::<u32>().unwrap();
        let whole = Generator::new(77)
            .bits([20], &dev)
            .unwrap()
            .to_vec::<u32>()
            .unwrap();
        assert_eq!(a, whole[..5]);
        assert_eq!(c, whole[16..20]);
        let mut empty = Generator::new(77);
        assert_eq!(
            empty.randn([0, 3], DType::F32, &dev).unwrap().dims(),
            [0, 3]
        );
        assert_eq!(empty.offset(), 0);
    }
}

/// The old seeded constructors are the generator's first draw.
#[test]
fn seeded_constructors_are_a_generators_first_draw() {
    for dev in common::devices() {
        let a = Tensor::rand([7, 9], DType::F32, 3, &dev).unwrap();
        let b = Generator::new(3).rand([7, 9], DType::F32, &dev).unwrap();
        assert_eq!(a.to_vec::<f32>().unwrap(), b.to_vec::<f32>().unwrap());
        let a = Tensor::randn([130], DType::F16, 4, &dev).unwrap();
        let b = Generator::new(4).randn([130], DType::F16, &dev).unwrap();
        assert_eq!(a.to_vec::<f16>().unwrap(), b.to_vec::<f16>().unwrap());
    }
}

/// Chi-square of `counts` against equal expectations, as a multiple of
/// its standard deviation from its mean (`k - 1` degrees of freedom).
fn chi_square_sigmas(counts: &[u64], total: u64) -> f64 {
    let k = counts.len() as f64;
    let e = total as f64 / k;
    let chi: f64 = counts.iter().map(|&c| (c as f64 - e).powi(2) / e).sum();
    (chi - (k - 1.0)) / (2.0 * (k - 1.0)).sqrt()
}

#[test]
fn samples_have_their_distributions() {
    let n = 1 << 20;
    for dev in common::devices() {
        let mut g = Generator::new(2024);
        // Uniform: 256 equal bins.
        let u = g
            .rand([n], DType::F32, &dev)
            .unwrap()
            .to_vec::<f32>()
            .unwrap();
        let mut bins = vec![0u64; 256];
        u.iter().for_each(|&v| bins[(v * 256.0) as usize] += 1);
        assert!(
            chi_square_sigmas(&bins, n as u64).abs() < 5.0,
            "uniform on {dev:?}"
        );
        // Normal: moments, and 64 bins of equal probability.
        let z = g
            .randn([n], DType::F32, &dev)
            .unwrap()
            .to_vec::<f32>()
            .unwrap();
        let m = |k: i32| z.iter().map(|&v| f64::from(v).powi(k)).sum::<f64>() / n as f64;
        let s = (n as f64).sqrt();
        assert!(m(1).abs() < 5.0 / s, "mean {} on {dev:?}", m(1));
        assert!(
            (m(2) - 1.0).abs() < 5.0 * 2f64.sqrt() / s,
            "variance {}",
            m(2)
        );
        assert!(m(3).abs() < 5.0 * 15f64.sqrt() / s, "third moment {}", m(3));
        assert!(
            (m(4) - 3.0).abs() < 5.0 * 96f64.sqrt() / s,
            "fourth moment {}",
            m(4)
        );
        let cdf = |x: f64| 0.5 * (1.0 + libm::erf(x / 2f64.sqrt()));
        let mut bins = vec![0u64; 64];
        z.iter()
            .for_each(|&v| bins[((cdf(f64::from(v)) * 64.0) as usize).min(63)] += 1);
        assert!(
            chi_square_sigmas(&bins, n as u64).abs() < 5.0,
            "normal bins on {dev:?}"
        );
        // Dice and coins.
        let dice = g
            .randint([n], 1, 7, DType::I32, &dev)
            .unwrap()
            .to_vec::<i32>()
            .unwrap();
        let mut faces = vec![0u64; 6];
        dice.iter().for_each(|&d| faces[(d - 1) as usize] += 1);
        assert!(
            chi_square_sigmas(&faces, n as u64).abs() < 5.0,
            "dice on {dev:?}"
        );
        let coins = g
            .bernoulli([n], 0.3, DType::U8, &dev)
            .unwrap()
            .to_vec::<u8>()
            .unwrap();
        let heads = coins.iter().map(|&c| u64::from(c)).sum::<u64>() as f64;
        let sd = (n as f64 * 0.3 * 0.7).sqrt();
        assert!(
            (heads - 0.3 * n as f64).abs() < 5.0 * sd,
            "{heads} heads on {dev:?}"
        );
    }
}

#[test]
fn permutations_choices_and_shuffles() {
    let cpu = Device::cpu();
    let want = Generator::new(5)
        .permutation(1000, &cpu)
        .unwrap()
        .to_vec::<i64>()
        .unwrap();
    let mut sorted = want.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, (0..1000).collect::<Vec<i64>>());
    assert_ne!(
        want, sorted,
        "a permutation of 1000 in order: chance 1/1000!"
    );
    for dev in common::devices() {
        let mut g = Generator::new(5);
        let p = g.permutation(1000, &dev).unwrap();
        assert_eq!(
            (p.dtype(), p.to_vec::<i64>().unwrap()),
            (DType::I64, want.clone())
        );
        let picks = Generator::new(5).choice(1000, 10, &dev).unwrap();
        assert_eq!(picks.to_vec::<i64>().unwrap(), want[..10]);
        let t = Tensor::arange(0.0f32, 12.0, 1.0, &dev)
            .unwrap()
            .reshape([3, 4])
            .unwrap();
        let shuffled = Generator::new(8)
            .shuffle(&t.transpose(0, 1).unwrap(), 0)
            .unwrap();
        let rows = shuffled.to_vec::<f32>().unwrap();
        let mut firsts: Vec<i32> = rows.chunks(3).map(|r| r[0] as i32).collect();
        assert!(
            rows.chunks(3)
                .all(|r| r[1] == r[0] + 4.0 && r[2] == r[0] + 8.0)
        );
        firsts.sort_unstable();
        assert_eq!(firsts, [0, 1, 2, 3]);
        assert_eq!(Generator::new(1).permutation(0, &dev).unwrap().numel(), 0);
    }
}

#[test]
fn bad_draws_are_refused() {
    let mut g = Generator::new(1);
    for dev in common::devices() {
        let arg = |r: webtensor::Result<Tensor>, op: &str| match r {
            Err(Error::Argument { op: o, .. }) => assert_eq!(o, op),
            other => panic!("{op}: {other:?}"),
        };
        arg(g.randint([3], 5, 5, DType::I32, &dev), "randint");
        arg(g.randint([3], 0, 257, DType::U8, &dev), "randint");
        arg(g.randint([3], -1, 3, DType::U32, &dev), "randint");
        arg(
            g.randint([3], 0, i64::from(i32::MAX) + 2, DType::I32, &dev),
            "randint",
        );
        arg(g.uniform([3], 2.0, 1.0, DType::F32, &dev), "uniform");
        arg(g.uniform([3], -3e38, 3e38, DType::F32, &dev), "uniform");
        arg(
            g.uniform([3], 0.0, f64::INFINITY, DType::F32, &dev),
            "uniform",
        );
        // Bounds whose span fits in f32 until they are rounded to the
        // dtype (it then overflowed: every sample was low, or NaN).
        let p = |e: i32| 2f64.powi(e);
        let (low, high) = (-(p(127) - p(101)), p(127) - p(103) - p(101));
        arg(g.uniform([64], low, high, DType::F32, &dev), "uniform");
        let (low, high) = (
            -(p(127) + p(119) + p(110)),
            p(127) - p(119) - p(110) - p(104),
        );
        arg(g.uniform([64], low, high, DType::BF16, &dev), "uniform");
        // A draw past the stream's last block (it wrapped to the first).
        let mut end = Generator::with_offset(9, u64::MAX - 1);
        arg(end.bits([12], &dev), "bits");
        arg(end.rand([5], DType::F32, &dev), "rand");
        assert_eq!(end.offset(), u64::MAX - 1);
        assert!(end.bits([4], &dev).is_ok());
        assert_eq!(end.offset(), u64::MAX);
        arg(end.bits([1], &dev), "bits");
        assert!(matches!(
            g.permutation(i32::MAX as usize + 1, &dev),
            Err(Error::Shape {
                op: "permutation",
                ..
            })
        ));
        arg(g.normal([3], 0.0, -1.0, DType::F32, &dev), "normal");
        arg(g.normal([3], f64::NAN, 1.0, DType::F32, &dev), "normal");
        arg(g.bernoulli([3], 1.5, DType::F32, &dev), "bernoulli");
        arg(g.bernoulli([3], f64::NAN, DType::F32, &dev), "bernoulli");
        assert!(matches!(g.choice(3, 4, &dev), Err(Error::Argument { .. })));
        assert!(matches!(
            g.rand([3], DType::I32, &dev),
            Err(Error::DType { .. })
        ));
        assert!(matches!(
            g.randn([3], DType::U8, &dev),
            Err(Error::DType { .. })
        ));
        assert!(matches!(
            g.randint([3], 0, 2, DType::F32, &dev),
            Err(Error::DType { .. })
        ));
        assert!(matches!(
            g.bernoulli([3], 0.5, DType::C64, &dev),
            Err(Error::DType { .. })
        ));
        let e = g.rand([1 << 40, 1 << 40], DType::F32, &dev).unwrap_err();
        assert!(
            matches!(e, Error::Shape { .. } | Error::TooLarge { .. }),
            "{e}"
        );
        assert!(e.to_string().contains("rand"), "{e}");
        assert!(
            g.shuffle(&Tensor::zeros([2], DType::F32, &dev).unwrap(), 1)
                .is_err()
        );
    }
    assert_eq!(g.offset(), 0, "refused draws take nothing");
    assert!(g.rand([2], DType::F64, &Device::cpu()).is_ok());
    assert!(matches!(g.split(usize::MAX), Err(Error::Argument { .. })));
}

/// A permutation whose sort fails after its keys are drawn (a GPU whose
/// bindings hold fewer bytes than a line's sort) gives their blocks back:
/// refused draws take nothing.
#[test]
fn a_permutation_refused_by_its_sort_takes_nothing() {
    let options = webtensor::GpuOptions {
        max_binding_bytes: Some(4 << 10),
        ..Default::default()
    };
    if let Some(dev) = common::own_gpu(options) {
        let mut g = Generator::new(3);
        common::assert_op_err(g.permutation(4096, &dev), "permutation");
        assert_eq!(g.offset(), 0);
        assert!(g.permutation(64, &dev).is_ok());
        assert_eq!(g.offset(), 32);
    }
}

/// No uniform sample reaches `high`, as none of PyTorch's does: a bound
/// rounded up (low = 0.15 in f32) and one rounded down (high = 0.16) used
/// to put samples above `high`, and f16 and bf16 samples rounded to it.
#[test]
fn uniform_samples_stay_below_high() {
    let n = 1 << 22;
    for dev in common::devices() {
        let u = Generator::new(11)
            .uniform([n], 0.15, 0.16, DType::F32, &dev)
            .unwrap()
            .to_vec::<f32>()
            .unwrap();
        assert!(
            u.iter().all(|&v| (0.15f32..0.16f32).contains(&v)),
            "f32 on {dev:?}: {:?}",
            u.iter().copied().fold(0.0f32, f32::max)
        );
        for (dtype, high) in [(DType::F16, 6.0), (DType::BF16, 6.0), (DType::BF16, -2.0)] {
            let low = high - 1.0;
            let v = Generator::new(12)
                .uniform([1 << 16], low, high, dtype, &dev)
                .unwrap()
                .to_dtype(DType::F32)
                .unwrap()
                .to_vec::<f32>()
                .unwrap();
            let (low, high) = (low as f32, high as f32);
            assert!(
                v.iter().all(|&v| v >= low && v < high),
                "{dtype} on {dev:?}"
            );
            assert!(v.contains(&low), "{dtype} on {dev:?}");
        }
        // Bounds that round to one value give it.
        let v = Generator::new(13)
            .uniform([64], 1.0, 1.0001, DType::BF16, &dev)
            .unwrap()
            .to_dtype(DType::F32)
            .unwrap();
        assert_eq!(v.to_vec::<f32>().unwrap(), vec![1.0; 64], "{dev:?}");
    }
}

/// Subnormal results are zeros of their sign, and the rest are as f32
/// computes them.
#[test]
fn tiny_samples_are_flushed_alike() {
    for dev in common::devices() {
        let u = Generator::new(6)
            .uniform([4096], 0.0, 1e-37, DType::F32, &dev)
            .unwrap();
        let u = u.to_vec::<f32>().unwrap();
        assert!(u.iter().all(|v| *v == 0.0 || v.is_normal()), "{dev:?}");
        assert!(u.iter().filter(|v| **v == 0.0).count() > 100);
        let z = Generator::new(6)
            .normal([64], 0.0, 1e-39, DType::F32, &dev)
            .unwrap();
        assert!(z.to_vec::<f32>().unwrap().iter().all(|v| *v == 0.0));
    }
}

/// Bernoulli trials in f64 (the CPU) are those of f32.
#[test]
fn bernoulli_trials_in_f64_are_f32s() {
    let cpu = Device::cpu();
    for p in [0.0, 0.3, 1.0] {
        let wide = Generator::new(8)
            .bernoulli([1001], p, DType::F64, &cpu)
            .unwrap();
        let narrow = Generator::new(8)
            .bernoulli([1001], p, DType::F32, &cpu)
            .unwrap();
        let narrow: Vec<f64> = narrow
            .to_vec::<f32>()
            .unwrap()
            .into_iter()
            .map(f64::from)
            .collect();
        assert_eq!(wide.to_vec::<f64>().unwrap(), narrow);
    }
    let ones = Generator::new(8)
        .bernoulli([9], 1.0, DType::F64, &cpu)
        .unwrap();
    assert_eq!(ones.to_vec::<f64>().unwrap(), vec![1.0; 9]);
}
