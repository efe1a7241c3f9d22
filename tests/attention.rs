//! Rotary embeddings and scaled dot-product attention against NumPy's
//! answers (`tests/data/make_attention_cases.py`), on every device, over
//! views, in f32, f16 and bf16, and their bad input.

mod common;

use std::collections::HashMap;
use webtensor::{Attention, DType, Device, Error, Rope, RopeScaling, RopeStyle, Tensor, io, s};

fn cases() -> HashMap<String, Tensor> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/attention_cases.npz"
    );
    io::from_npz_bytes(&std::fs::read(path).unwrap(), &Device::cpu())
        .unwrap()
        .into_iter()
        .collect()
}

fn read(t: &Tensor) -> Vec<f32> {
    t.to_dtype(DType::F32).unwrap().to_vec::<f32>().unwrap()
}

/// Asserts `got` is within `rel * (1 + |want|)` of `want`, elementwise.
#[track_caller]
fn close(got: &[f32], want: &[f32], rel: f32, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= rel * (1.0 + w.abs()) || (w.is_nan() && g.is_nan()),
            "{what}: element {i} is {g}, NumPy's {w}"
        );
    }
}

const STYLES: [(RopeStyle, &str); 2] = [
    (RopeStyle::HalfSplit, "half"),
    (RopeStyle::Interleaved, "interleaved"),
];

#[test]
fn rotations_match_numpy_from_its_tables_and_from_our_own() {
    let c = cases();
    for dev in common::devices() {
        for k in 0..4 {
            let args = c[&format!("rope{k}_args")].to_vec::<f64>().unwrap();
            let (start, len, dim, theta) = (
                args[0] as usize,
                args[1] as usize,
                args[2] as usize,
                args[3],
            );
            let x = c[&format!("rope{k}_x")].to_device(&dev).unwrap();
            let cos = c[&format!("rope{k}_cos")].to_device(&dev).unwrap();
            let sin = c[&format!("rope{k}_sin")].to_device(&dev).unwrap();
            for (style, name) in STYLES {
                let want = c[&format!("rope{k}_{name}")].to_vec::<f32>().unwrap();
                let what = format!("case {k}, {name}, on {dev}");
                // NumPy's tables: the rotation rounds as NumPy's does (a GPU
                // may fuse a product into the sum: an ulp).
                let theirs = Rope::from_tables(&cos, &sin, style).unwrap();
                let got = read(&x.rope(&theirs).unwrap());
                if dev.is_cpu() {
                    assert_eq!(got, want, "{what}");
                } else {
                    close(&got, &want, 1e-6, &what);
                }
                // Our tables: angles within an ulp or two of NumPy's (an ulp
                // of the largest angle, the last position, moves its cosine
                // and sine by as much), cosines and sines a few ulps apart.
                let ours = Rope::new(start, len, dim, theta, style, &dev).unwrap();
                let ulp_of_angle = (start + len) as f32 * f32::EPSILON;
                close(
                    &read(&x.rope(&ours).unwrap()),
                    &want,
                    2e-5 + 4.0 * ulp_of_angle,
                    &what,
                );
                // A slice of longer tables is the tables of its positions.
                let long = Rope::new(0, start + len + 3, dim, theta, style, &dev).unwrap();
                let sliced = long.positions(start, len).unwrap();
                assert_eq!((sliced.len(), sliced.head_dim()), (len, dim));
                assert_eq!(
                    read(&x.rope(&sliced).unwrap()),
                    read(&x.rope(&ours).unwrap()),
                    "{what}: sliced tables"
                );
            }
        }
    }
}

/// The scaling a case of `make_attention_cases.py` names (`rs{k}_kind`).
fn scaling_of(c: &HashMap<String, Tensor>, k: usize) -> RopeScaling {
    let kind = c[&format!("rs{k}_kind")].to_vec::<f64>().unwrap();
    match kind[0] as usize {
        0 => RopeScaling::Llama3 {
            factor: kind[1],
            low_freq_factor: kind[2],
            high_freq_factor: kind[3],
            original_max_position: kind[4] as usize,
        },
        1 => RopeScaling::Linear { factor: kind[1] },
        _ => RopeScaling::Factors(c[&format!("rs{k}_factors")].to_vec::<f32>().unwrap()),
    }
}

#[test]
fn scaled_frequencies_and_rotations_match_hugging_faces() {
    // Llama 3.1's settings, a llama3 scaling with a frequency in each
    // band, linear interpolation and ggml's factors, against NumPy's f32
    // mirror of Hugging Face's code.
    let c = cases();
    for k in 0..4 {
        let args = c[&format!("rs{k}_args")].to_vec::<f64>().unwrap();
        let (start, len, dim, theta) = (
            args[0] as usize,
            args[1] as usize,
            args[2] as usize,
            args[3],
        );
        let scaling = scaling_of(&c, k);
        let want = c[&format!("rs{k}_freqs")].to_vec::<f32>().unwrap();
        let got = scaling.frequencies(dim, theta).unwrap();
        // powf's last bit may differ from NumPy's.
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert!(
                (g - w).abs() <= 4.0 * f32::EPSILON * w.abs(),
                "{scaling:?}: frequency {i} is {g}, NumPy's {w}"
            );
        }
        assert_eq!(got.len(), want.len());
        // Scaled frequencies are not the plain ones (the test can fail).
        let plain = RopeScaling::None.frequencies(dim, theta).unwrap();
        assert!(
            got.iter()
                .zip(&plain)
                .any(|(g, p)| (g - p).abs() > 1e-3 * p)
        );
        for dev in common::devices() {
            let x = c[&format!("rs{k}_x")].to_device(&dev).unwrap();
            for (style, name) in STYLES {
                let want = c[&format!("rs{k}_{name}")].to_vec::<f32>().unwrap();
                let rope = Rope::scaled(start, len, dim, theta, &scaling, style, &dev).unwrap();
                let ulp_of_angle = (start + len) as f32 * f32::EPSILON;
                let what = format!("scaling case {k}, {name}, on {dev}");
                close(
                    &read(&x.rope(&rope).unwrap()),
                    &want,
                    2e-5 + 4.0 * ulp_of_angle,
                    &what,
                );
            }
        }
    }
}

#[test]
fn bad_scalings_are_errors_naming_the_values() {
    let llama3 = |factor, low, high, old| RopeScaling::Llama3 {
        factor,
        low_freq_factor: low,
        high_freq_factor: high,
        original_max_position: old,
    };
    for (scaling, what) in [
        (RopeScaling::Linear { factor: 0.0 }, "factor 0"),
        (RopeScaling::Linear { factor: f64::NAN }, "factor NaN"),
        (llama3(8.0, 4.0, 4.0, 8192), "high_freq_factor 4"),
        (llama3(8.0, 1.0, 4.0, 0), "original_max_position 0"),
        (llama3(-8.0, 1.0, 4.0, 8192), "factor -8"),
        (llama3(8.0, 0.0, 4.0, 8192), "low_freq_factor 0"),
        (RopeScaling::Factors(vec![1.0; 3]), "3 factors"),
        (
            RopeScaling::Factors(vec![1.0, 0.0, 1.0, 1.0]),
            "factor 1, 0",
        ),
        (
            RopeScaling::Factors(vec![1.0, 1.0, f32::INFINITY, 1.0]),
            "factor 2, inf",
        ),
        (
            RopeScaling::Factors(vec![1.0, 1e-40, 1.0, 1.0]),
            "factor 1, 0.0000",
        ),
        // Values f64 holds that f32 does not: they would make infinities.
        (RopeScaling::Linear { factor: 1e-50 }, "factor 0.0000"),
        (
            llama3(8.0, 1e-37, 1.01e-37, 8192),
            "high_freq_factor - low_freq_factor",
        ),
    ] {
        match scaling.frequencies(8, 10000.0) {
            Err(Error::Argument { op, msg }) => {
                assert_eq!(op, "RopeScaling::frequencies");
                assert!(msg.contains(what), "{what}: {msg}");
            }
            other => panic!("{what}: {other:?}"),
        }
        let dev = Device::cpu();
        match Rope::scaled(0, 4, 8, 10000.0, &scaling, RopeStyle::HalfSplit, &dev) {
            Err(Error::Argument { op, msg }) => {
                assert_eq!(op, "Rope::scaled");
                assert!(msg.contains(what), "{what}: {msg}");
            }
            other => panic!("{what}: {other:?}"),
        }
    }
    // The plain frequencies' own bad input, through a scaling.
    let none = RopeScaling::None;
    for (dim, theta) in [(7, 10000.0), (8, 1.0), (8, 1e300), (8, f64::NAN)] {
        assert!(matches!(
            none.frequencies(dim, theta),
            Err(Error::Argument { .. })
        ));
    }
}

#[test]
fn the_factors_llama_cpp_stores_give_the_llama3_frequencies() {
    // convert_hf_to_gguf.py writes a "llama3" scaling as rope_freqs: each
    // frequency's divisor, computed per element from the f32 frequencies
    // (here in f64). Divided by them, the frequencies are Hugging Face's
    // to a few ulps, in every band (Llama 3.1's and 3.2's settings).
    for (factor, old) in [(8.0, 8192), (32.0, 8192)] {
        let (low, high) = (1.0, 4.0);
        let plain = RopeScaling::None.frequencies(128, 500_000.0).unwrap();
        let divisors: Vec<f32> = plain
            .iter()
            .map(|&f| {
                let wavelength = 2.0 * std::f64::consts::PI / f as f64;
                let old = old as f64;
                if wavelength < old / high {
                    1.0
                } else if wavelength > old / low {
                    factor as f32
                } else {
                    let smooth = (old / wavelength - low) / (high - low);
                    (1.0 / ((1.0 - smooth) / factor + smooth)) as f32
                }
            })
            .collect();
        assert!(divisors.iter().any(|&d| d > 1.0 && d < factor as f32));
        let stored = RopeScaling::Factors(divisors);
        let llama3 = RopeScaling::Llama3 {
            factor,
            low_freq_factor: low,
            high_freq_factor: high,
            original_max_position: old,
        };
        let a = stored.frequencies(128, 500_000.0).unwrap();
        let b = llama3.frequencies(128, 500_000.0).unwrap();
        for (i, (x, y)) in a.iter().zip(&b).enumerate() {
            assert!(
                (x - y).abs() <= 8.0 * f32::EPSILON * y.abs(),
                "frequency {i}: {x} from the factors, {y} from llama3"
            );
        }
    }
}

/// make_attention_cases.py's `rotate` in f32: `x`'s lines of `dim`, line
/// `l` at position `l % positions` (the second-last axis, as long as the
/// tables' rows of `dim / 2`), rotated by that row of the tables.
fn rotate_on_host(x: &[f32], cos: &[f32], sin: &[f32], dim: usize, style: RopeStyle) -> Vec<f32> {
    let half = dim / 2;
    let positions = cos.len() / half;
    let mut out = vec![0.0; x.len()];
    for (l, line) in x.chunks(2 * half).enumerate() {
        let p = l % positions;
        for i in 0..half {
            let (a, b) = match style {
                RopeStyle::HalfSplit => (i, i + half),
                _ => (2 * i, 2 * i + 1),
            };
            let (c, s) = (cos[p * half + i], sin[p * half + i]);
            out[l * 2 * half + a] = line[a] * c - line[b] * s;
            out[l * 2 * half + b] = line[b] * c + line[a] * s;
        }
    }
    out
}

#[test]
fn rotations_read_any_view_and_round_half_types_once() {
    let c = cases();
    for dev in common::devices() {
        let x = c["rope1_x"].to_device(&dev).unwrap(); // (2, 3, 3, 64)
        let (cos, sin) = (&c["rope1_cos"], &c["rope1_sin"]);
        for (style, name) in STYLES {
            let rope = Rope::from_tables(
                &cos.to_device(&dev).unwrap(),
                &sin.to_device(&dev).unwrap(),
                style,
            )
            .unwrap();
            let want = read(&x.rope(&rope).unwrap());
            // Heads and positions stored the other way round, and reversed.
            let stored = x.transpose(1, 2).unwrap().contiguous().unwrap();
            let view = stored.transpose(1, 2).unwrap();
            assert_eq!(read(&view.rope(&rope).unwrap()), want, "{name} on {dev}");
            let reversed = common::reversed_view(&x);
            assert_eq!(
                read(&reversed.rope(&rope).unwrap()),
                want,
                "{name} on {dev}"
            );
            for dtype in [DType::F16, DType::BF16] {
                let h = x.to_dtype(dtype).unwrap();
                let got = h.rope(&rope).unwrap();
                assert_eq!(got.dtype(), dtype);
                // NumPy's formula on the host over the rounded values, in
                // f32 as written, rounded once to the dtype.
                let once: Vec<f32> = rotate_on_host(&read(&h), &read(cos), &read(sin), 64, style)
                    .into_iter()
                    .map(|v| common::round_to(dtype, f64::from(v)))
                    .collect();
                assert_eq!(read(&got), once, "{name} {dtype} on {dev}");
            }
        }
    }
}

/// `Rope::at` gathers its tables' rows: a negative position counts back
/// from the end of the tables (as `index_select`'s indices), and one
/// outside `-len..len` is an index error, on the CPU at once and on a GPU
/// at the readback.
#[test]
fn positions_gathered_by_at_count_back_from_the_end() {
    // Devices of its own: the faults it causes are reported at the next
    // readback of the device, whichever test thread makes it.
    for dev in common::own_devices() {
        let rope = Rope::new(0, 4, 8, 10000.0, RopeStyle::HalfSplit, &dev).unwrap();
        let x = Tensor::randn([1, 4, 8], DType::F32, 3, &dev).unwrap();
        let read = |p: &[i64]| {
            let p = Tensor::from_slice(p, [4], &dev).unwrap();
            x.rope(&rope.at(&p)?)?.to_vec::<f32>()
        };
        assert_eq!(
            read(&[0, 1, -2, -1]).unwrap(),
            read(&[0, 1, 2, 3]).unwrap(),
            "{dev}"
        );
        for bad in [4, -5] {
            assert!(
                matches!(read(&[0, 1, 2, bad]), Err(Error::Index { .. })),
                "{bad} on {dev}"
            );
        }
    }
}

#[test]
fn rotations_refuse_bad_input() {
    let dev = Device::cpu();
    let rope = Rope::new(0, 4, 8, 10000.0, RopeStyle::HalfSplit, &dev).unwrap();
    let x = Tensor::zeros([2, 4, 8], DType::F32, &dev).unwrap();
    assert!(x.rope(&rope).is_ok());
    assert_eq!(
        format!("{rope:?}"),
        "Rope { style: HalfSplit, positions: 4, head_dim: 8, dtype: F32, device: \"cpu\" }"
    );
    for (result, what) in [
        (
            Tensor::zeros([2, 5, 8], DType::F32, &dev)
                .unwrap()
                .rope(&rope),
            "positions",
        ),
        (
            Tensor::zeros([2, 4, 6], DType::F32, &dev)
                .unwrap()
                .rope(&rope),
            "head_dim",
        ),
        (
            Tensor::zeros([8], DType::F32, &dev).unwrap().rope(&rope),
            "positions",
        ),
    ] {
        match result {
            Err(Error::Shape { op: "rope", msg }) => assert!(msg.contains(what), "{msg}"),
            other => panic!("{what}: {other:?}"),
        }
    }
    let ints = Tensor::zeros([4, 8], DType::I32, &dev).unwrap();
    assert!(matches!(ints.rope(&rope), Err(Error::DType { .. })));
    for (r, what) in [
        (
            Rope::new(0, 4, 7, 10000.0, RopeStyle::HalfSplit, &dev),
            "even",
        ),
        (
            Rope::new(0, 0, 8, 10000.0, RopeStyle::HalfSplit, &dev),
            "empty",
        ),
        (
            Rope::new(1 << 24, 1, 8, 10000.0, RopeStyle::HalfSplit, &dev),
            "2^24",
        ),
        (
            Rope::new(0, 4, 8, f64::NAN, RopeStyle::HalfSplit, &dev),
            "theta",
        ),
        (rope.positions(2, 3), "outside"),
        (
            Rope::new(0, 4, 1 << 40, 10000.0, RopeStyle::HalfSplit, &dev),
            "head_dim",
        ),
    ] {
        match r {
            Err(Error::Argument { msg, .. }) => assert!(msg.contains(what), "{msg}"),
            other => panic!("{what}: {other:?}"),
        }
    }
    // Tables of 2^24 positions by 2^15 pairs (2 TiB each) are refused
    // by the host's allocator, in the name of the op that was called.
    assert!(matches!(
        Rope::new(0, 1 << 24, 1 << 16, 10000.0, RopeStyle::HalfSplit, &dev),
        Err(Error::OutOfMemory {
            op: "Rope::new",
            ..
        })
    ));
    // No positions: an error (it divided by zero in `head_dim`).
    let none = Tensor::zeros([0], DType::I32, &dev).unwrap();
    assert!(matches!(
        rope.at(&none),
        Err(Error::Shape { op: "Rope::at", .. })
    ));
    let cos = Tensor::zeros([4, 4], DType::F32, &dev).unwrap();
    let sin = Tensor::zeros([4, 3], DType::F32, &dev).unwrap();
    assert!(matches!(
        Rope::from_tables(&cos, &sin, RopeStyle::Interleaved),
        Err(Error::Shape { .. })
    ));
    if let Some(gpu) = common::gpu() {
        let far = x.to_device(&gpu).unwrap();
        assert!(matches!(far.rope(&rope), Err(Error::DeviceMismatch { .. })));
    }
}

const ATTENTION: [&str; 14] = [
    "plain",
    "causal",
    "causal_wide",
    "gqa",
    "gqa_causal",
    "bool_mask",
    "float_mask",
    "decode",
    "tiles",
    "tiles_causal",
    "wide_head",
    "odd_heads",
    "float_mask_rows",
    "head_mask",
];

/// The attention of case `name` on `dev`, its operands passed through
/// `view` first.
fn attend(
    c: &HashMap<String, Tensor>,
    name: &str,
    dev: &Device,
    view: impl Fn(Tensor) -> Tensor,
) -> Tensor {
    let on = |part: &str| view(c[&format!("{name}_{part}")].to_device(dev).unwrap());
    let mut a = Attention::new();
    if c[&format!("{name}_causal")].to_vec::<bool>().unwrap()[0] {
        a = a.causal();
    }
    let scale = c[&format!("{name}_scale")].to_vec::<f64>().unwrap()[0];
    if !scale.is_nan() {
        a = a.scale(scale);
    }
    let q = on("q");
    if let Some(m) = c.get(&format!("{name}_mask")) {
        // A float mask in the queries' dtype, as PyTorch takes it.
        let m = m.to_device(dev).unwrap();
        let m = if m.dtype() == DType::Bool {
            m
        } else {
            m.to_dtype(q.dtype()).unwrap()
        };
        a = a.mask(&m);
    }
    q.sdpa(&on("k"), &on("v"), &a).unwrap()
}

#[test]
fn attention_matches_numpy_with_masks_groups_and_views() {
    let c = cases();
    for dev in common::devices() {
        for name in ATTENTION {
            let want = c[&format!("{name}_out")].to_vec::<f32>().unwrap();
            let got = attend(&c, name, &dev, |t| t);
            assert_eq!(got.dims(), c[&format!("{name}_out")].dims(), "{name}");
            close(&read(&got), &want, 2e-5, &format!("{name} on {dev}"));
            // Operands stored with their last two axes swapped, and
            // reversed along the first: strided views.
            let strided = attend(&c, name, &dev, |t| {
                let r = t.rank() as isize;
                let swapped = t.transpose(r - 1, r - 2).unwrap().contiguous().unwrap();
                common::reversed_view(&swapped.transpose(r - 1, r - 2).unwrap())
            });
            close(
                &read(&strided),
                &want,
                2e-5,
                &format!("{name} from views on {dev}"),
            );
            // Against NumPy's from the rounded operands, rounded once:
            // within an ulp of the dtype (the f32 reference took a softmax
            // scale 10% off within bf16's old 8e-2).
            let rounded = |half: &str| c[&format!("{name}_out_{half}")].to_vec::<f32>().unwrap();
            let half = attend(&c, name, &dev, |t| t.to_dtype(DType::F16).unwrap());
            assert_eq!(half.dtype(), DType::F16);
            close(
                &read(&half),
                &rounded("f16"),
                2e-3,
                &format!("{name} in f16 on {dev}"),
            );
            let brain = attend(&c, name, &dev, |t| {
                common::reversed_view(&t.to_dtype(DType::BF16).unwrap())
            });
            assert_eq!(brain.dtype(), DType::BF16);
            close(
                &read(&brain),
                &rounded("bf16"),
                1.6e-2,
                &format!("{name} in bf16 from views on {dev}"),
            );
        }
    }
}

#[test]
fn long_keys_split_over_workgroups_match_the_cpu() {
    // More keys than one workgroup of the flash kernel takes within the
    // loop budget: the keys are split and the partial results merged (see
    // kernel_budgets.rs). Compared with the CPU (checked against NumPy
    // above) for decoding and for causal prefill, with a bool mask stored
    // transposed, in f32 and f16; on a device splitting as a big GPU does
    // too (`gpu_big_grids`: a split a key tile where the pairs of batch
    // and query tile are few).
    let cpu = Device::cpu();
    let gpus: Vec<Device> = common::gpu()
        .into_iter()
        .chain(common::gpu_big_grids())
        .collect();
    let q = Tensor::randn([1, 4, 40, 64], DType::F32, 11, &cpu).unwrap();
    let k = Tensor::randn([1, 2, 2100, 64], DType::F32, 12, &cpu).unwrap();
    let v = Tensor::randn([1, 2, 2100, 48], DType::F32, 13, &cpu).unwrap();
    let keep = Tensor::rand([2100, 40], DType::F32, 14, &cpu)
        .unwrap()
        .lt_scalar(0.8)
        .unwrap()
        .transpose(0, 1)
        .unwrap();
    for dtype in [DType::F32, DType::F16] {
        let on = |t: &Tensor, d: &Device| t.to_dtype(dtype).unwrap().to_device(d).unwrap();
        let cases = [
            (
                "decode",
                q.slice(s![.., .., -1.., ..]).unwrap(),
                false,
                None,
            ),
            ("causal", q.clone(), true, None),
            ("mask", q.clone(), false, Some(&keep)),
        ];
        for (name, q, causal, mask) in cases {
            let run = |d: &Device| {
                let mut a = Attention::new();
                if causal {
                    a = a.causal();
                }
                if let Some(m) = mask {
                    a = a.mask(&m.to_device(d).unwrap());
                }
                read(&on(&q, d).sdpa(&on(&k, d), &on(&v, d), &a).unwrap())
            };
            let rel = if dtype == DType::F32 { 2e-5 } else { 2e-3 };
            let want = run(&cpu);
            for gpu in &gpus {
                close(
                    &run(gpu),
                    &want,
                    rel,
                    &format!("{name} in {dtype} on {gpu}"),
                );
            }
        }
    }
}

#[test]
fn partial_results_past_one_binding_go_in_chunks() {
    // 256 KiB bindings: 4,096 queries (256 query tiles) over 3,000 keys
    // split in two take 459 KB of partial results, so the pairs of
    // (batch, query tile) run in two chunks, each a flash and a combine
    // dispatch; every operand still fits a binding.
    let options = webtensor::GpuOptions {
        max_binding_bytes: Some(256 << 10),
        ..Default::default()
    };
    let Some(gpu) = common::own_gpu(options) else {
        return;
    };
    let cpu = Device::cpu();
    let q = Tensor::randn([1, 1, 4096, 16], DType::F32, 1, &cpu).unwrap();
    let k = Tensor::randn([1, 1, 3000, 16], DType::F32, 2, &cpu).unwrap();
    let v = Tensor::randn([1, 1, 3000, 12], DType::F32, 3, &cpu).unwrap();
    let a = Attention::new();
    let want = read(&q.sdpa(&k, &v, &a).unwrap());
    let on = |t: &Tensor| t.to_device(&gpu).unwrap();
    let (q, k, v) = (on(&q), on(&k), on(&v));
    let out = q.sdpa(&k, &v, &a).unwrap();
    close(&read(&out), &want, 2e-5, "chunks");
    let profile = gpu
        .profile(|| q.sdpa(&k, &v, &a)?.to_vec::<f32>().map(drop))
        .unwrap();
    let kernels: Vec<&str> = profile.kernels().iter().map(|k| k.name).collect();
    let flash = kernels.iter().filter(|n| **n == "attention").count();
    assert!(flash >= 2, "{kernels:?}");
    assert_eq!(
        kernels
            .iter()
            .filter(|n| **n == "attention combine")
            .count(),
        flash
    );
}

#[test]
fn broadcast_keys_and_values_match_the_cpu() {
    // Keys and values of one batch for two, a value of one head for four
    // key heads, and one key head for four query heads (multi-query).
    let cpu = Device::cpu();
    let r = |dims: &[usize], seed| Tensor::randn(dims, DType::F32, seed, &cpu).unwrap();
    let cases = [
        (
            r(&[2, 4, 5, 8], 1),
            r(&[1, 4, 7, 8], 2),
            r(&[1, 4, 7, 6], 3),
        ),
        (
            r(&[1, 4, 5, 8], 4),
            r(&[1, 4, 7, 8], 5),
            r(&[1, 1, 7, 8], 6),
        ),
        (
            r(&[2, 4, 40, 8], 7),
            r(&[2, 1, 70, 8], 8),
            r(&[2, 1, 70, 8], 9),
        ),
    ];
    for (n, (q, k, v)) in cases.iter().enumerate() {
        let a = Attention::new().causal();
        let want = read(&q.sdpa(k, v, &a).unwrap());
        for dev in common::devices() {
            let on = |t: &Tensor| t.to_device(&dev).unwrap();
            let got = read(&on(q).sdpa(&on(k), &on(v), &a).unwrap());
            close(&got, &want, 2e-5, &format!("case {n} on {dev}"));
        }
    }
}

#[test]
fn values_at_keys_a_query_does_not_attend_reach_it_as_the_product_does() {
    // The composed form's product multiplies every value by its weight,
    // so a NaN or infinite value at a masked key makes its column NaN
    // (0 x inf): the kernel gives the same where it skips a causal tile or
    // a split sees no key, as where it multiplies.
    let cpu = Device::cpu();
    let q = Tensor::randn([1, 2, 40, 8], DType::F32, 1, &cpu).unwrap();
    let k = Tensor::randn([1, 2, 100, 8], DType::F32, 2, &cpu).unwrap();
    let mut vs = Tensor::randn([1, 2, 100, 8], DType::F32, 3, &cpu)
        .unwrap()
        .to_vec::<f32>()
        .unwrap();
    // Key 90 of head 0 (past every query of the causal case), key 20 of
    // head 1 (attended by some queries, masked for the first ones).
    vs[90 * 8 + 2] = f32::NAN;
    vs[90 * 8 + 5] = f32::INFINITY;
    vs[(100 + 20) * 8 + 1] = f32::NEG_INFINITY;
    let v = Tensor::from_slice(&vs, [1, 2, 100, 8], &cpu).unwrap();
    let keep = Tensor::rand([40, 100], DType::F32, 4, &cpu)
        .unwrap()
        .lt_scalar(0.5)
        .unwrap();
    for (name, causal, mask) in [("causal", true, None), ("mask", false, Some(&keep))] {
        let run = |dev: &Device, q: &Tensor| {
            let on = |t: &Tensor| t.to_device(dev).unwrap().to_dtype(q.dtype()).unwrap();
            let mut a = Attention::new();
            if causal {
                a = a.causal();
            }
            if let Some(m) = mask {
                // The mask's last rows, one a query.
                let rows = q.dims()[2] as isize;
                a = a.mask(&m.slice(s![-rows.., ..]).unwrap().to_device(dev).unwrap());
            }
            read(&on(q).sdpa(&on(&k), &on(&v), &a).unwrap())
        };
        // f16 too: the cooperative kernel's where the device has it.
        for (dtype, rel) in [(DType::F32, 1e-4), (DType::F16, 1e-2)] {
            for q in [q.clone(), q.slice(s![.., .., -1.., ..]).unwrap()] {
                let q = q.to_dtype(dtype).unwrap();
                let want = run(&cpu, &q);
                assert!(want.iter().any(|x| x.is_nan()), "{name}");
                for dev in common::devices() {
                    let got = run(&dev, &q);
                    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                        assert!(
                            g == w
                                || (g.is_nan() && w.is_nan())
                                || (g - w).abs() <= rel * (1.0 + w.abs()),
                            "{name}, {} queries {dtype} on {dev}: element {i} is {g}, the CPU's {w}",
                            q.dims()[2]
                        );
                    }
                }
            }
        }
    }
}

/// A row that attends no key has weights of 0, as PyTorch's since 2.5
/// (its safe softmax: `F.scaled_dot_product_attention(ones(1, 2, 4),
/// ones(1, 3, 4), ones(1, 3, 4), attn_mask=[[T, F, T], [F, F, F]])` is
/// `[[1, 1, 1, 1], [0, 0, 0, 0]]`, f32, f16, bf16, bool or -inf masks), on
/// every device through the flash kernel, its splits (600 keys) and its
/// cooperative form (f16 on a device that has one): a NaN value at a key
/// it does not attend still reaches it (0 x NaN), and a second attention
/// over the first's output stays finite where the first's row was 0.
#[test]
fn a_row_that_attends_nothing_is_zero_as_pytorchs() {
    let cpu = Device::cpu();
    let mask = Tensor::from_slice(&[true, false, true, false, false, false], [2, 3], &cpu).unwrap();
    for dev in common::devices() {
        for dtype in [DType::F32, DType::F16, DType::BF16] {
            let what = format!("{dtype} on {dev}");
            let q = Tensor::ones([1, 2, 4], dtype, &dev).unwrap();
            let kv = Tensor::ones([1, 3, 4], dtype, &dev).unwrap();
            let m = mask.to_device(&dev).unwrap();
            let out = read(&q.sdpa(&kv, &kv, &Attention::new().mask(&m)).unwrap());
            assert_eq!(out, [1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0], "{what}");
            // The same as an additive mask of -inf.
            let f = Tensor::zeros([2, 3], dtype, &dev)
                .unwrap()
                .masked_fill(&m.logical_not().unwrap(), f64::NEG_INFINITY)
                .unwrap();
            let out = read(&q.sdpa(&kv, &kv, &Attention::new().mask(&f)).unwrap());
            assert_eq!(
                out,
                [1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0],
                "{what}: -inf"
            );
        }
        // 40 queries over 600 keys (the keys split over workgroups), rows 3
        // and 17 attending nothing, a NaN value at key 5.
        for dtype in [DType::F32, DType::F16] {
            let what = format!("40 x 600 {dtype} on {dev}");
            let q = Tensor::randn([1, 40, 8], DType::F32, 1, &cpu).unwrap();
            let k = Tensor::randn([1, 600, 8], DType::F32, 2, &cpu).unwrap();
            let mut vs = Tensor::randn([1, 600, 8], DType::F32, 3, &cpu)
                .unwrap()
                .to_vec::<f32>()
                .unwrap();
            vs[5 * 8 + 2] = f32::NAN;
            let v = Tensor::from_slice(&vs, [1, 600, 8], &cpu).unwrap();
            let mut keep = vec![true; 40 * 600];
            for row in [3, 17] {
                keep[row * 600..(row + 1) * 600].fill(false);
            }
            let keep = Tensor::from_slice(&keep, [40, 600], &dev).unwrap();
            let on = |t: &Tensor| t.to_device(&dev).unwrap().to_dtype(dtype).unwrap();
            let out = read(
                &on(&q)
                    .sdpa(&on(&k), &on(&v), &Attention::new().mask(&keep))
                    .unwrap(),
            );
            for row in 0..40 {
                for col in 0..8 {
                    let y = out[row * 8 + col];
                    match (row, col) {
                        (3 | 17, 2) => assert!(y.is_nan(), "{what}: ({row}, {col}) is {y}"),
                        (3 | 17, _) => assert_eq!(y, 0.0, "{what}: ({row}, {col})"),
                        (_, 2) => assert!(y.is_nan(), "{what}: ({row}, {col}) is {y}"),
                        _ => assert!(y.is_finite(), "{what}: ({row}, {col}) is {y}"),
                    }
                }
            }
        }
        // Two layers: the first's masked row is 0, not NaN, so the second
        // (attending it) stays finite.
        let x = Tensor::randn([1, 1, 4, 4], DType::F32, 4, &dev).unwrap();
        let mut m = vec![false; 16];
        for i in 1..4 {
            for j in 1..=i {
                m[i * 4 + j] = true;
            }
        }
        let m = Tensor::from_slice(&m, [4, 4], &dev).unwrap();
        let a = Attention::new().mask(&m);
        let o1 = x.sdpa(&x, &x, &a).unwrap();
        let o2 = read(&o1.sdpa(&o1, &o1, &a).unwrap());
        assert_eq!(&read(&o1)[..4], &[0.0; 4], "{dev}");
        assert_eq!(&o2[..4], &[0.0; 4], "{dev}");
        assert!(o2[4..].iter().all(|y| y.is_finite()), "{dev}: {o2:?}");
    }
}

/// A NaN or +inf score at a key a bool mask hides makes the row NaN, as
/// PyTorch's (it adds the mask's -inf: `F.scaled_dot_product_attention(
/// ones(1, 1, 2, 4), k, ones(1, 1, 2, 4), attn_mask=[[T, F], [T, F]])`
/// with key 1 all NaN is NaN), as the same mask given as -inf floats:
/// the bool mask filled the score with -inf, a finite row. On every
/// device: the flash kernel, its splits (600 keys) and its cooperative
/// form where the device has one (f16).
#[test]
fn a_nan_key_behind_a_bool_mask_is_nan_as_pytorchs() {
    let cpu = Device::cpu();
    for (rows, keys) in [(2usize, 2usize), (8, 16), (2, 600)] {
        let mut ks = vec![1.0f32; keys * 8];
        // Key 1: NaN in one head dimension, +inf in another (a score of
        // +inf once scaled); key 0 stays.
        ks[8] = f32::NAN;
        ks[8 + 3] = f32::INFINITY;
        let k = Tensor::from_slice(&ks, [1, 1, keys, 8], &cpu).unwrap();
        let mut keep = vec![true; rows * keys];
        for r in 0..rows {
            keep[r * keys + 1] = false;
        }
        let keep = Tensor::from_slice(&keep, [rows, keys], &cpu).unwrap();
        let bias = Tensor::zeros([rows, keys], DType::F32, &cpu)
            .unwrap()
            .masked_fill(&keep.logical_not().unwrap(), f64::NEG_INFINITY)
            .unwrap();
        for dev in common::devices() {
            for dtype in [DType::F32, DType::F16, DType::BF16] {
                let on = |t: &Tensor| t.to_device(&dev).unwrap().to_dtype(dtype).unwrap();
                let q = Tensor::ones([1, 1, rows, 8], dtype, &dev).unwrap();
                let v = Tensor::ones([1, 1, keys, 8], dtype, &dev).unwrap();
                let by_bool = Attention::new().mask(&keep.to_device(&dev).unwrap());
                let by_float = Attention::new().mask(&on(&bias));
                for (what, a) in [("bool", by_bool), ("float", by_float)] {
                    let out = read(&q.sdpa(&on(&k), &v, &a).unwrap());
                    assert!(
                        out.iter().all(|y| y.is_nan()),
                        "{rows} x {keys}, {what} mask, {dtype} on {dev}: {out:?}"
                    );
                }
            }
        }
    }
    // 8 x 16 in f16 runs on the cooperative kernel where the device has it.
    if let (Some(gpu), Some((_, on))) = (common::gpu(), common::fast_gpu(None)) {
        let q = Tensor::ones([1, 1, 8, 8], DType::F16, &gpu).unwrap();
        let k = Tensor::ones([1, 1, 16, 8], DType::F16, &gpu).unwrap();
        let keep = Tensor::ones([8, 16], DType::Bool, &gpu).unwrap();
        let run = || q.sdpa(&k, &k, &Attention::new().mask(&keep)).unwrap();
        assert_eq!(ran_cooperative(&gpu, &run), on, "{gpu}");
    }
}

/// Leading axes broadcast among the query, the key and the value, as
/// matmul's (PyTorch's `scaled_dot_product_attention(randn(1, 2, 3, 4),
/// randn(2, 2, 3, 4), randn(2, 2, 3, 4))` is `(2, 2, 3, 4)`): the same as
/// the operands broadcast by hand, on every device.
#[test]
fn leading_axes_broadcast_among_query_key_and_value() {
    let cpu = Device::cpu();
    let q = Tensor::randn([1, 2, 3, 4], DType::F32, 1, &cpu).unwrap();
    let k = Tensor::randn([2, 1, 2, 5, 4], DType::F32, 2, &cpu).unwrap();
    let v = Tensor::randn([2, 2, 5, 6], DType::F32, 3, &cpu).unwrap();
    let q5 = q.unsqueeze(0).unwrap();
    let v5 = v.unsqueeze(0).unwrap();
    for dev in common::devices() {
        let on = |t: &Tensor| t.to_device(&dev).unwrap();
        let got = on(&q5).sdpa(&on(&k), &on(&v5), &Attention::new()).unwrap();
        assert_eq!(got.dims(), &[2, 2, 2, 3, 6], "{dev}");
        let wide = |t: &Tensor, last: [usize; 3]| {
            let mut dims = vec![2, 2];
            dims.extend(last);
            on(t).broadcast_to(dims).unwrap().contiguous().unwrap()
        };
        let want = wide(&q5, [2, 3, 4])
            .sdpa(
                &wide(&k, [2, 5, 4]),
                &wide(&v5, [2, 5, 6]),
                &Attention::new(),
            )
            .unwrap();
        assert_eq!(read(&got), read(&want), "{dev}");
    }
}

#[test]
fn attention_refuses_bad_input() {
    let dev = Device::cpu();
    let t = |dims: &[usize], dtype| Tensor::zeros(dims, dtype, &dev).unwrap();
    let q = t(&[1, 4, 3, 8], DType::F32);
    let k = t(&[1, 2, 5, 8], DType::F32);
    let a = Attention::new();
    assert_eq!(q.sdpa(&k, &k, &a).unwrap().dims(), &[1, 4, 3, 8]);
    let shape = |r: webtensor::Result<Tensor>, what: &str| match r {
        Err(Error::Shape { op: "sdpa", msg }) => assert!(msg.contains(what), "{msg}"),
        other => panic!("{what}: {other:?}"),
    };
    shape(
        q.sdpa(
            &t(&[2, 2, 5, 8], DType::F32),
            &t(&[3, 2, 5, 8], DType::F32),
            &a,
        ),
        "broadcast",
    );
    let _ = shape;
    let shape = |r: webtensor::Result<Tensor>, what: &str| match r {
        Err(Error::Shape { op: "sdpa", msg }) => assert!(msg.contains(what), "{msg}"),
        other => panic!("{what}: {other:?}"),
    };
    shape(q.sdpa(&t(&[2, 5, 8], DType::F32), &k, &a), "rank");
    shape(q.sdpa(&t(&[1, 2, 5, 7], DType::F32), &k, &a), "head size");
    shape(q.sdpa(&k, &t(&[1, 2, 6, 8], DType::F32), &a), "length");
    shape(
        q.sdpa(
            &t(&[1, 3, 5, 8], DType::F32),
            &t(&[1, 3, 5, 8], DType::F32),
            &a,
        ),
        "groups",
    );
    shape(
        q.sdpa(&k, &k, &Attention::new().mask(&t(&[2, 2], DType::Bool))),
        "broadcast",
    );
    assert!(matches!(
        q.sdpa(&k, &k.to_dtype(DType::F16).unwrap(), &a),
        Err(Error::DType { .. })
    ));
    assert!(matches!(
        t(&[1, 4, 3, 8], DType::I32).sdpa(
            &t(&[1, 2, 5, 8], DType::I32),
            &t(&[1, 2, 5, 8], DType::I32),
            &a
        ),
        Err(Error::DType { .. })
    ));
    assert!(matches!(
        q.sdpa(&k, &k, &Attention::new().mask(&t(&[3, 5], DType::I32))),
        Err(Error::DType { .. })
    ));
    assert!(matches!(
        q.sdpa(
            &k,
            &k,
            &Attention::new().causal().mask(&t(&[3, 5], DType::Bool))
        ),
        Err(Error::Argument { op: "sdpa", .. })
    ));
}

/// What PyTorch takes that a first form refused: a float mask of another
/// float dtype than the queries', added as it is (an f32 row of -1e9
/// beside f16 queries weighs every key alike, as PyTorch's CPU kernel
/// gives: the values' mean; rounded to f16 it was -inf, a row attending
/// nothing, 0), and one query head beside several key heads (broadcast, as
/// any leading axis), on every device.
#[test]
fn attention_takes_what_pytorch_takes() {
    let cpu = Device::cpu();
    for dev in common::devices() {
        let r = |dims: &[usize], seed| {
            Tensor::randn(dims, DType::F32, seed, &cpu)
                .unwrap()
                .to_device(&dev)
                .unwrap()
        };
        let half = |t: Tensor| t.to_dtype(DType::F16).unwrap();
        let (q, k, v) = (
            half(r(&[1, 2, 4, 8], 1)),
            half(r(&[1, 2, 5, 8], 2)),
            half(r(&[1, 2, 5, 8], 3)),
        );
        let row = |i: usize| (0..5).map(move |j| if i == 1 { -1e9 } else { 0.1 * j as f32 });
        let bias: Vec<f32> = (0..4).flat_map(row).collect();
        let bias = Tensor::from_slice(&bias, [4, 5], &dev).unwrap();
        let got = q.sdpa(&k, &v, &Attention::new().mask(&bias)).unwrap();
        assert_eq!(got.dtype(), DType::F16, "{dev}");
        let got = read(&got);
        let exact = half(bias.clone()).to_dtype(DType::F32).unwrap();
        let rest = q
            .sdpa(&k, &v, &Attention::new().mask(&half(exact)))
            .unwrap();
        let mean = v.to_dtype(DType::F32).unwrap().mean_keepdim(-2).unwrap();
        let mean = read(&half(mean.broadcast_to([1, 2, 4, 8]).unwrap()));
        for (i, (g, (r, m))) in got.iter().zip(read(&rest).iter().zip(&mean)).enumerate() {
            let want = if i / 8 % 4 == 1 { m } else { r };
            assert!(
                (g - want).abs() <= 2e-3 * want.abs().max(1.0),
                "{dev}: {i}: {g} {want}"
            );
        }
        let (q, k, v) = (r(&[1, 4, 8], 5), r(&[4, 5, 8], 6), r(&[4, 5, 8], 7));
        let got = q.sdpa(&k, &v, &Attention::new()).unwrap();
        assert_eq!(got.dims(), &[4, 4, 8], "{dev}");
        let wide = q.broadcast_to([4, 4, 8]).unwrap();
        let want = wide.sdpa(&k, &v, &Attention::new()).unwrap();
        assert_eq!(read(&got), read(&want), "{dev}");
    }
}

/// Normal values on the CPU, exact in f16 (rounded to it), as f32.
fn exact_in_f16(dims: &[usize], seed: u64) -> Tensor {
    Tensor::randn(dims, DType::F32, seed, &Device::cpu())
        .unwrap()
        .to_dtype(DType::F16)
        .unwrap()
        .to_dtype(DType::F32)
        .unwrap()
}

/// Whether `f`'s kernels include the cooperative attention kernel.
fn ran_cooperative(dev: &Device, f: &dyn Fn() -> Tensor) -> bool {
    let profile = dev
        .profile(|| f().to_dtype(DType::F32)?.to_vec::<f32>().map(|_| ()))
        .unwrap();
    (profile.kernels().iter()).any(|k| k.name.contains("attention cooperative"))
}

/// On a device with cooperative matrices (`scripts/cooperative-tests`
/// runs this on a lavapipe that has them, with
/// `WEBTENSOR_REQUIRE_COOPERATIVE=1`), f16 attention runs on them, and
/// f32 attention under `MatmulPrecision::Fast`: queries crossing the
/// workgroup's rows (4 fragments), keys crossing its tile (2), heads and
/// value rows that are no multiple of a fragment, heads up to the widest
/// (256: `q` staged in chunks of at most 128 columns), value
/// rows past 128 (in parts, a workgroup each), grouped heads, both masks, causal with fewer and more queries than
/// keys, and strided views; within the weights' f16 rounding of the CPU's
/// answer for the same values.
#[test]
fn cooperative_attention_matches_the_cpu() {
    let Some((fast, on)) = common::fast_gpu(None) else {
        return;
    };
    let gpu = common::gpu().unwrap();
    let cpu = Device::cpu();
    // ([leading, query heads, key heads, queries, keys], [head, value],
    // causal, a bool mask or a float one)
    type Case = ([usize; 5], [usize; 2], bool, Option<bool>);
    let cases: [Case; 10] = [
        ([1, 1, 1, 8, 16], [8, 8], false, None),
        ([2, 2, 2, 33, 17], [20, 24], false, None),
        ([1, 4, 2, 40, 100], [64, 64], true, None),
        ([1, 2, 2, 70, 50], [40, 12], true, None),
        ([3, 1, 1, 9, 130], [128, 128], false, Some(true)),
        ([1, 4, 2, 31, 47], [16, 16], false, Some(false)),
        ([2, 1, 1, 64, 33], [100, 72], false, Some(true)),
        ([1, 2, 1, 100, 100], [32, 32], true, None),
        ([1, 2, 1, 37, 45], [256, 200], true, None),
        ([2, 1, 1, 20, 30], [200, 130], false, Some(false)),
    ];
    for (n, &([lead, hq, hk, l, s], [d, dv], causal, mask)) in cases.iter().enumerate() {
        let exact = |dims: &[usize], seed: u64| exact_in_f16(dims, seed);
        let q = exact(&[lead, hq, l, d], 10 * n as u64);
        let k = exact(&[lead, hk, s, d], 10 * n as u64 + 1);
        let v = exact(&[lead, hk, s, dv], 10 * n as u64 + 2);
        let keep = Tensor::rand([l, s], DType::F32, 10 * n as u64 + 3, &cpu)
            .unwrap()
            .lt_scalar(0.7)
            .unwrap();
        // Every row keeps its first key (a row that attends nothing is
        // another test's).
        let first = Tensor::arange(0, s as i64, 1, &cpu)
            .unwrap()
            .eq_scalar(0)
            .unwrap();
        let keep = keep.logical_or(&first).unwrap();
        let bias = keep
            .logical_not()
            .unwrap()
            .to_dtype(DType::F32)
            .unwrap()
            .mul_scalar(-1e4)
            .unwrap();
        let vmax = read(&v).iter().fold(0f32, |a, x| a.max(x.abs()));
        let attention = |dev: &Device, dtype: DType, strided: bool| -> Tensor {
            let on = |t: &Tensor| {
                let t = t.to_device(dev).unwrap().to_dtype(dtype).unwrap();
                match strided {
                    true => common::reversed_view(&t),
                    false => t,
                }
            };
            let mut a = Attention::new();
            if causal {
                a = a.causal();
            }
            match mask {
                Some(true) => a = a.mask(&keep.to_device(dev).unwrap()),
                Some(false) => a = a.mask(&on(&bias)),
                None => {}
            }
            let q = match strided {
                true => on(&q.transpose(2, 3).unwrap().contiguous().unwrap())
                    .transpose(2, 3)
                    .unwrap(),
                false => on(&q),
            };
            q.sdpa(&on(&k), &on(&v), &a).unwrap()
        };
        let want = read(&attention(&cpu, DType::F32, false));
        for (dev, dtype) in [(&gpu, DType::F16), (&fast, DType::F32)] {
            for strided in [false, true] {
                let what = format!("case {n} {dtype} strided {strided} on {dev}, cooperative {on}");
                let got = read(&attention(dev, dtype, strided));
                for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                    assert!(
                        (g - w).abs() <= 4e-3 * vmax,
                        "{what}: element {i} is {g}, the CPU's {w}"
                    );
                }
                let ran = ran_cooperative(dev, &|| attention(dev, dtype, strided));
                assert_eq!(ran, on, "{what}");
            }
        }
    }
    // Each shape and mask's probe ran and passed (the shared device's
    // count also holds other tests' matmul probes).
    for dev in [&gpu, &fast] {
        let info = dev.info();
        let dropped = info.dropped_kernels.iter().any(|k| k.contains("attention"));
        assert!(!dropped, "{info}");
        assert!(!on || dev.stats().kernels_checked > 0, "{:?}", dev.stats());
    }
    assert_eq!(fast.stats().kernels_checked > 0, on, "{:?}", fast.stats());
}

/// The cooperative kernel's self-check: a kernel made wrong on purpose
/// (`sabotage_matmul` naming the cooperative tile: every output off by
/// one) is dropped and named for its shape, mask and dtype, on a device
/// with cooperative matrices, and the attention runs on the flash kernel:
/// results stay right. Each mask of each shape is probed once.
#[test]
fn a_sabotaged_cooperative_attention_kernel_is_dropped_and_named() {
    use webtensor::{GpuOptions, MatmulTile};
    let Some(gpu) = common::own_gpu(GpuOptions {
        sabotage_matmul: Some(MatmulTile::Cooperative),
        ..Default::default()
    }) else {
        return;
    };
    let on = common::cooperative(&gpu);
    let cpu = Device::cpu();
    // Values exact in f16: the CPU's f32 answer is the reference.
    let make = exact_in_f16;
    let (q, k, v) = (
        make(&[2, 4, 40, 24], 1),
        make(&[2, 2, 70, 24], 2),
        make(&[2, 2, 70, 40], 3),
    );
    let keep = Tensor::rand([40, 70], DType::F32, 4, &cpu)
        .unwrap()
        .lt_scalar(0.8)
        .unwrap();
    let on_gpu = |t: &Tensor| t.to_device(&gpu).unwrap().to_dtype(DType::F16).unwrap();
    for masked in [false, true] {
        let settings = |dev: &Device| match masked {
            false => Attention::new().causal(),
            true => Attention::new().mask(&keep.to_device(dev).unwrap()),
        };
        let want = read(&q.sdpa(&k, &v, &settings(&cpu)).unwrap());
        let a = settings(&gpu);
        let run = || on_gpu(&q).sdpa(&on_gpu(&k), &on_gpu(&v), &a).unwrap();
        for round in 0..2 {
            let got = read(&run().to_dtype(DType::F32).unwrap());
            assert_eq!(got.len(), want.len());
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                // f16 operands exact, the kernel's sums in f32, each
                // output rounded once: within 2 f16 ulps.
                assert!(
                    (g - w).abs() <= 2e-3 * w.abs().max(1.0),
                    "masked {masked}, round {round}: element {i} is {g}, the CPU's {w}"
                );
            }
            assert!(!ran_cooperative(&gpu, &run), "masked {masked}");
        }
    }
    let info = gpu.info();
    let dropped: Vec<&String> = (info.dropped_kernels.iter())
        .filter(|k| k.starts_with("attention"))
        .collect();
    let named = [
        "attention cooperative 3x5 none f16",
        "attention cooperative 3x5 bool f16",
    ];
    match on {
        // 8 x 8 fragments on lavapipe; 16 x 16 on NVIDIA's.
        true => assert!(
            dropped.len() == 2
                && (dropped.iter().zip(named).all(|(d, n)| *d == n)
                    || dropped.iter().all(|d| d.contains(" 2x3 "))),
            "{info}"
        ),
        false => assert!(dropped.is_empty(), "{info}"),
    }
}

/// Heads of nothing: every score is an empty sum, 0, so every key weighs
/// alike and the output is the values' mean, as PyTorch's (the default
/// scale, 1 / sqrt(0), made 0 x inf NaN scores).
#[test]
fn heads_of_nothing_weigh_every_key_alike() {
    for dev in common::devices() {
        let q = Tensor::zeros([1, 1, 3, 0], DType::F32, &dev).unwrap();
        let k = Tensor::zeros([1, 1, 4, 0], DType::F32, &dev).unwrap();
        let values: Vec<f32> = (0..8).map(|i| i as f32).collect();
        let v = Tensor::from_slice(&values, [1, 1, 4, 2], &dev).unwrap();
        let y = q.sdpa(&k, &v, &Attention::new()).unwrap();
        assert_eq!(y.dims(), [1, 1, 3, 2]);
        assert_eq!(read(&y), [3.0, 4.0, 3.0, 4.0, 3.0, 4.0], "{dev}");
    }
}

/// Heads that are not groups broadcast as PyTorch broadcasts them: values
/// of 4 heads beside one head of queries and keys, keys of one head beside
/// 4 of queries and values (shapes from `F.scaled_dot_product_attention`:
/// `[2, 4, 3, 6]` and `[1, 4, 3, 6]`), each equal to the heads widened
/// first.
#[test]
fn heads_that_are_not_groups_broadcast() {
    let cpu = Device::cpu();
    let r = |dims: &[usize], seed| Tensor::randn(dims, DType::F32, seed, &cpu).unwrap();
    let cases = [
        ([2, 1, 3, 8], [2, 1, 5, 8], [2, 4, 5, 6], [2, 4, 3, 6]),
        ([1, 4, 3, 8], [1, 1, 5, 8], [1, 4, 5, 6], [1, 4, 3, 6]),
    ];
    for dev in common::devices() {
        for (n, (qd, kd, vd, want_dims)) in cases.iter().enumerate() {
            let on = |t: &Tensor| t.to_device(&dev).unwrap();
            let (q, k, v) = (
                r(qd, 3 * n as u64),
                r(kd, 3 * n as u64 + 1),
                r(vd, 3 * n as u64 + 2),
            );
            let got = on(&q).sdpa(&on(&k), &on(&v), &Attention::new()).unwrap();
            assert_eq!(got.dims(), want_dims, "{dev}");
            let wide = |t: &Tensor, last: [usize; 2]| {
                let mut dims = want_dims[..2].to_vec();
                dims.extend(last);
                on(t).broadcast_to(dims).unwrap().contiguous().unwrap()
            };
            let want = wide(&q, [3, 8])
                .sdpa(&wide(&k, [5, 8]), &wide(&v, [5, 6]), &Attention::new())
                .unwrap();
            assert_eq!(read(&got), read(&want), "case {n} on {dev}");
        }
    }
}

/// Keys and values of different head counts that each divide the queries'
/// (PyTorch's `enable_gqa`, which takes `k (.., 2, ..)` beside `v (.., 1,
/// ..)`): query head `h` reads key head `h / (hq / hk)` and value head
/// `h / (hq / hv)`, here checked against the heads picked out by that rule
/// (they were refused), with masks and causal, on every device.
#[test]
fn keys_and_values_of_different_groups_attend_as_pytorchs_gqa() {
    let cpu = Device::cpu();
    let r = |dims: &[usize], seed| Tensor::randn(dims, DType::F32, seed, &cpu).unwrap();
    let cases = [
        ([1, 4, 3, 8], [1, 2, 5, 8], [1, 1, 5, 6]),
        ([2, 6, 3, 8], [2, 2, 5, 8], [2, 3, 5, 4]),
        ([1, 6, 17, 8], [1, 3, 17, 8], [1, 2, 17, 8]),
    ];
    for dev in common::devices() {
        for (n, (qd, kd, vd)) in cases.iter().enumerate() {
            let on = |t: &Tensor| t.to_device(&dev).unwrap();
            let seed = 10 * n as u64;
            let (q, k, v) = (on(&r(qd, seed)), on(&r(kd, seed + 1)), on(&r(vd, seed + 2)));
            let hq = qd[1];
            let picked = |t: &Tensor| {
                let h = t.dims()[1];
                let heads: Vec<i32> = (0..hq).map(|j| (j / (hq / h)) as i32).collect();
                let index = Tensor::from_slice(&heads, [hq], &dev).unwrap();
                t.index_select(&index, 1).unwrap()
            };
            let (wk, wv) = (picked(&k), picked(&v));
            let mask: Vec<bool> = (0..qd[2] * kd[2]).map(|i| i % 3 != 1).collect();
            let mask = Tensor::from_slice(&mask, [qd[2], kd[2]], &dev).unwrap();
            for a in [
                Attention::new(),
                Attention::new().causal(),
                Attention::new().mask(&mask),
            ] {
                let got = q.sdpa(&k, &v, &a).unwrap();
                let want = q.sdpa(&wk, &wv, &a).unwrap();
                assert_eq!(got.dims(), &[qd[0], hq, qd[2], vd[3]], "{dev}");
                close(
                    &read(&got),
                    &read(&want),
                    1e-6,
                    &format!("case {n} on {dev}"),
                );
            }
        }
        // Heads that do not divide the queries' stay refused.
        let on = |t: Tensor| t.to_device(&dev).unwrap();
        let (q, k) = (on(r(&[1, 4, 3, 8], 1)), on(r(&[1, 2, 5, 8], 2)));
        let v = on(r(&[1, 3, 5, 8], 3));
        let e = q.sdpa(&k, &v, &Attention::new()).unwrap_err().to_string();
        assert!(e.contains("groups"), "{e}");
    }
}
