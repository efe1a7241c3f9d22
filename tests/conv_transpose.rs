//! The GPU's transposed convolution kernel (one dispatch over the output's
//! phases) against the CPU's, which `conv.rs` checks against PyTorch's
//! definition: random geometries whose phases have several taps, one or
//! none, every view of the input and the weight, f32, f16 (native and
//! packed) and bf16, and sizes past each of the kernel's boundaries (the
//! tiles' rows and columns, a slice of k, the grid's 65,535 batches).

mod common;

use common::{Rng, devices, noise, read_f32};
use webtensor::{Conv, DType, Device, Tensor, s};

/// One transposed convolution: input and weight dims, stride, padding,
/// dilation, output padding, groups.
#[derive(Debug, Clone, Copy)]
struct Case {
    x: [usize; 4],
    w: [usize; 4],
    stride: [usize; 2],
    pad: [usize; 2],
    dilation: [usize; 2],
    output_padding: [usize; 2],
    groups: usize,
}

/// One image of one channel by a 1 x 1 kernel, stride 1: the cases below
/// change what they need.
const PLAIN: Case = Case {
    x: [1, 1, 1, 1],
    w: [1, 1, 1, 1],
    stride: [1, 1],
    pad: [0, 0],
    dilation: [1, 1],
    output_padding: [0, 0],
    groups: 1,
};

impl Case {
    fn conv(&self) -> Conv<'static> {
        Conv::new()
            .stride(self.stride)
            .padding(self.pad)
            .dilation(self.dilation)
            .output_padding(self.output_padding)
            .groups(self.groups)
    }

    /// A random case whose output has at least one pixel: strides to 4
    /// (some larger than the input), dilations to 3, kernels to 5.
    fn random(rng: &mut Rng) -> Case {
        loop {
            let groups = 1 + rng.below(3);
            let n = 1 + rng.below(2);
            let (cg, og) = (1 + rng.below(5), 1 + rng.below(6));
            let k = [1 + rng.below(5), 1 + rng.below(5)];
            let stride = [1 + rng.below(4), 1 + rng.below(4)];
            let dilation = [1 + rng.below(3), 1 + rng.below(3)];
            let size = [1 + rng.below(9), 1 + rng.below(9)];
            let output_padding = [0, 1].map(|a| rng.below(stride[a].max(dilation[a])));
            let pad = [0, 1].map(|a| rng.below(k[a] * dilation[a] / 2 + 2));
            let full = [0, 1].map(|a| {
                (size[a] - 1) * stride[a] + dilation[a] * (k[a] - 1) + 1 + output_padding[a]
            });
            if (0..2).all(|a| 2 * pad[a] < full[a]) {
                return Case {
                    x: [n, groups * cg, size[0], size[1]],
                    w: [groups * cg, og, k[0], k[1]],
                    stride,
                    pad,
                    dilation,
                    output_padding,
                    groups,
                };
            }
        }
    }
}

/// `dims` of values from `seed`, laid out as `view` says: contiguous,
/// channels-last, reversed along the last two axes, every other element
/// of a larger tensor, at an offset in a larger tensor, broadcast along
/// the width, or with its last two axes transposed.
fn laid_out(dims: [usize; 4], seed: u64, view: usize, dev: &Device, rounded: bool) -> Tensor {
    let [a, b, h, w] = dims;
    let values = |n: usize| {
        let v = noise(n, seed);
        match rounded {
            true => v
                .iter()
                .map(|&x| webtensor::f16::from_f32(x).to_f32())
                .collect(),
            false => v,
        }
    };
    let plain = |d: [usize; 4]| Tensor::from_slice(&values(d.iter().product()), d, dev);
    match view % 7 {
        0 => plain(dims).unwrap(),
        1 => plain([a, h, w, b]).unwrap().permute(&[0, 3, 1, 2]).unwrap(),
        2 => plain(dims).unwrap().flip(&[2, 3]).unwrap(),
        3 => plain([a, b, 2 * h, 2 * w])
            .unwrap()
            .slice(s![.., .., ..;2, ..;2])
            .unwrap(),
        4 => plain([a + 1, b, h + 2, w + 3])
            .unwrap()
            .slice(s![1.., .., 2.., 3..])
            .unwrap(),
        5 => plain([a, b, h, 1])
            .unwrap()
            .broadcast_to([a, b, h, w])
            .unwrap(),
        _ => plain([a, b, w, h]).unwrap().transpose(2, 3).unwrap(),
    }
}

/// The case on `gpu` against the CPU, in `dtype`, the input laid out as
/// view `xv` and the weight as view `wv` of [`laid_out`].
fn check_case(case: &Case, gpu: &Device, dtype: DType, views: [usize; 2], what: &str) {
    // f16 operands from values exact in f16: WGSL leaves the GPU's
    // rounding of f32 to f16 open, and an operand an ulp off moves a sum
    // by more than the tolerance allows.
    compare(case, gpu, dtype, views, dtype == DType::F16, what);
}

/// As [`check_case`], the operands' values rounded to f16 first where
/// `rounded`.
fn compare(
    case: &Case,
    gpu: &Device,
    dtype: DType,
    [xv, wv]: [usize; 2],
    rounded: bool,
    what: &str,
) {
    let cpu = Device::cpu();
    let on = |dev: &Device| {
        let x = laid_out(case.x, 1, xv, dev, rounded);
        let w = laid_out(case.w, 2, wv, dev, rounded);
        let (x, w) = (x.to_dtype(dtype).unwrap(), w.to_dtype(dtype).unwrap());
        x.conv_transpose2d(&w, &case.conv())
            .unwrap_or_else(|e| panic!("{what}: {case:?}: {e}"))
    };
    let (want, got) = (on(&cpu), on(gpu));
    assert_eq!(got.dims(), want.dims(), "{what}: {case:?}");
    assert_eq!(got.dtype(), dtype, "{what}: {case:?}");
    let (got, want) = (read_f32(&got), read_f32(&want));
    // Each output sums at most cg kh kw products of values in [-1, 1):
    // f32 sums in another order (1e-6 of the taps apart at most), and for
    // f16 / bf16 those sums rounded once into the dtype: two of its ulps
    // of the value apart at most.
    let taps = (case.w[0] / case.groups * case.w[2] * case.w[3]) as f32;
    let ulp = match dtype {
        DType::F32 => 0.0,
        DType::F16 => 2f32.powi(-10),
        _ => 2f32.powi(-7),
    };
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        let tol = 2.0 * ulp * w.abs() + 1e-6 * taps * w.abs().max(1.0);
        assert!(
            (g - w).abs() <= tol,
            "{what}: {case:?}, views {xv} {wv}: element {i}: got {g}, want {w}"
        );
    }
}

fn gpus() -> Vec<Device> {
    devices().into_iter().filter(Device::is_gpu).collect()
}

#[test]
fn random_geometries_match_the_cpu_on_every_view_and_dtype() {
    let mut rng = Rng(0x7a5c_0e11);
    let cases: Vec<Case> = (0..common::cases(36, 300))
        .map(|_| Case::random(&mut rng))
        .collect();
    for gpu in gpus() {
        for (k, case) in cases.iter().enumerate() {
            let views = [k, k / 7 + k];
            check_case(case, &gpu, DType::F32, views, &format!("f32 on {gpu}"));
            let half = [DType::F16, DType::BF16][k % 2];
            check_case(case, &gpu, half, views, &format!("{half} on {gpu}"));
        }
        let dropped = gpu.info().dropped_kernels;
        assert!(dropped.is_empty(), "{gpu}: {dropped:?}");
    }
}

#[test]
fn every_view_of_both_operands_is_read_where_it_lies() {
    // Stride 2 with a 3x3 (phases of 1 and 2 taps), output padding and two
    // groups, each view of the input against each of the weight.
    let case = Case {
        x: [2, 4, 5, 6],
        w: [4, 3, 3, 3],
        stride: [2, 2],
        pad: [1, 1],
        dilation: [1, 1],
        output_padding: [1, 0],
        groups: 2,
    };
    for gpu in gpus() {
        for xv in 0..7 {
            for wv in 0..7 {
                check_case(&case, &gpu, DType::F32, [xv, wv], &format!("on {gpu}"));
            }
        }
    }
}

#[test]
fn the_kernel_crosses_its_tiles_and_slices() {
    let mut cases = vec![
        // 130 output channels a group: past the 128-row tile, in both
        // groups; phases of 144 pixels: past the widest tile.
        Case {
            x: [1, 6, 12, 12],
            w: [6, 130, 3, 3],
            stride: [2, 2],
            pad: [1, 1],
            output_padding: [1, 1],
            groups: 2,
            ..PLAIN
        },
        // k = 2100 channels x 4 taps = 8400: past one dispatch's slice of
        // k, later slices adding to the output.
        Case {
            x: [1, 2100, 2, 3],
            w: [2100, 2, 2, 2],
            ..PLAIN
        },
        // Phases that no tap reaches (kernel 1, stride 3) and phases that
        // have no pixel (two input rows 4 apart, one cropped each side).
        Case {
            x: [2, 3, 2, 5],
            w: [3, 2, 1, 2],
            stride: [4, 3],
            pad: [1, 0],
            dilation: [1, 2],
            ..PLAIN
        },
        // An input pixel by strides of 2^16 each way (2^32 phases, wrapped
        // to none, once left most outputs unwritten).
        Case {
            x: [1, 1, 1, 1],
            w: [1, 1, 3, 3],
            stride: [1 << 16, 1 << 16],
            ..PLAIN
        },
    ];
    if common::long_tests() {
        // 8,200 groups x 8 phases: more batches than one dispatch's grid.
        cases.push(Case {
            x: [1, 8200, 1, 1],
            w: [8200, 1, 4, 2],
            stride: [4, 2],
            groups: 8200,
            ..PLAIN
        });
        // A phase of 8.4M pixels: more tiles than a grid's row holds (the
        // op layer composes it).
        cases.push(Case {
            x: [1, 1, 2900, 2900],
            ..PLAIN
        });
    }
    for gpu in gpus() {
        for case in &cases {
            check_case(case, &gpu, DType::F32, [0, 0], &format!("on {gpu}"));
        }
    }
}

/// The kernel's self-check: made wrong on purpose (each output off by
/// one), it fails its probe, is dropped and named, and the transposed
/// convolution is composed from products instead, still the CPU's.
#[test]
fn a_wrong_transposed_kernel_is_dropped_and_results_stay_right() {
    let Some(gpu) = common::own_gpu(webtensor::GpuOptions {
        sabotage_matmul: Some(webtensor::MatmulTile::Small),
        autotune: Some(false),
        ..Default::default()
    }) else {
        return;
    };
    // 4 output channels of 7 x 9 pixels in 4 phases: the Small tile.
    let case = Case {
        x: [1, 3, 4, 5],
        w: [3, 4, 3, 3],
        stride: [2, 2],
        pad: [1, 1],
        dilation: [1, 1],
        output_padding: [0, 0],
        groups: 1,
    };
    for _ in 0..2 {
        check_case(&case, &gpu, DType::F32, [0, 0], "a dropped kernel");
    }
    let info = gpu.info();
    assert!(
        info.dropped_kernels
            .contains(&"conv_transpose small f32".to_string()),
        "{info}"
    );
    assert_eq!(gpu.stats().kernels_dropped, 1);
}

/// Transposed convolutions on cooperative matrices, where the device has
/// them: f16 ones, and f32 ones under `MatmulPrecision::Fast` (operands
/// rounded to f16, so the values are rounded beforehand and the CPU's f32
/// answer is the reference). `scripts/cooperative-tests` runs this on a
/// lavapipe that has them (`WEBTENSOR_REQUIRE_COOPERATIVE=1`); elsewhere it
/// checks the register tiles. Output channels past the 64 and 128 blocks,
/// k past a step (16 or 32) and a multiple of none, phases without taps or
/// pixels, a dilation sharing the stride's factor, groups, two images, and
/// every view of both operands.
#[test]
fn cooperative_transposed_convolutions_equal_the_cpu() {
    let Some((gpu, on)) = common::fast_gpu(None) else {
        return;
    };
    let cases = [
        Case {
            x: [2, 6, 5, 7],
            w: [6, 70, 3, 3],
            stride: [2, 2],
            pad: [1, 1],
            output_padding: [1, 0],
            groups: 2,
            ..PLAIN
        },
        Case {
            x: [1, 5, 9, 4],
            w: [5, 131, 5, 2],
            stride: [2, 3],
            pad: [2, 0],
            dilation: [2, 1],
            ..PLAIN
        },
        Case {
            x: [2, 3, 2, 5],
            w: [3, 2, 1, 2],
            stride: [4, 3],
            pad: [1, 0],
            dilation: [1, 2],
            ..PLAIN
        },
        Case {
            x: [1, 40, 3, 3],
            w: [40, 9, 4, 4],
            stride: [1, 1],
            pad: [1, 2],
            ..PLAIN
        },
    ];
    for (c, case) in cases.iter().enumerate() {
        for dtype in [DType::F16, DType::F32] {
            for v in 0..7 {
                let what = format!("{dtype}, cooperative {on}");
                compare(case, &gpu, dtype, [v, (v + c) % 7], true, &what);
            }
        }
    }
    let info = gpu.info();
    assert!(info.dropped_kernels.is_empty(), "{info}");
}

/// A cooperative kernel made wrong on purpose is dropped and named on a
/// device that has cooperative matrices, and its transposed convolutions
/// go elsewhere: results stay right.
#[test]
fn a_sabotaged_cooperative_transposed_kernel_is_dropped_and_named() {
    let Some(gpu) = common::own_gpu(webtensor::GpuOptions {
        sabotage_matmul: Some(webtensor::MatmulTile::Cooperative),
        autotune: Some(false),
        ..Default::default()
    }) else {
        return;
    };
    let on = common::cooperative(&gpu);
    let case = Case {
        x: [1, 3, 4, 5],
        w: [3, 4, 3, 3],
        stride: [2, 2],
        pad: [1, 1],
        dilation: [1, 1],
        output_padding: [0, 0],
        groups: 1,
    };
    for _ in 0..2 {
        compare(&case, &gpu, DType::F16, [0, 0], true, "a dropped kernel");
    }
    let info = gpu.info();
    let named = info
        .dropped_kernels
        .contains(&"conv_transpose cooperative f16".to_string());
    assert_eq!(named, on, "{info}");
}

/// Strides of thousands: the kernel found each phase's first tap by trying
/// the taps in turn, three times a thread, so at a stride of 30,000 the
/// phases past about 21,800 ran out of lavapipe's loop budget and wrote 0.
/// Such geometries now compose: the CPU's values, on every GPU.
#[test]
fn strides_of_thousands_reach_every_phase() {
    let cpu = Device::cpu();
    for dev in gpus() {
        let run = |d: &Device| {
            let x = Tensor::from_slice(&[1.0f32, 2.0], [1, 1, 1, 2], d).unwrap();
            let w = Tensor::ones([1, 1, 1, 30_000], DType::F32, d).unwrap();
            x.conv_transpose2d(&w, &Conv::new().stride([1, 30_000]))
                .unwrap()
                .to_vec::<f32>()
                .unwrap()
        };
        let got = run(&dev);
        assert_eq!(got.len(), 60_000, "{dev}");
        assert_eq!(got, run(&cpu), "{dev}");
    }
}
