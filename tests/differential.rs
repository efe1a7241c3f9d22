//! Differential property tests: random chains of views, in-place writes
//! through them (elementwise, clamp and scatter), activations (relu6,
//! hardsigmoid, hardswish, gelu, silu, erf, mish, softplus, elu,
//! leaky_relu, hardtanh, threshold, hardshrink, softshrink), special
//! functions (lgamma, digamma, erfc, i0, erfinv, atan, sinh),
//! fills, casts, reductions,
//! joins, roll, triangles, floor division by scalars,
//! take, matmul, where and reads, with handles
//! dropped and replaced at random points, run on the CPU and on four GPU
//! devices (fusion on with large batches, fusion off with one op per
//! submit, batches of three, and f16 stored packed), which must all give
//! the same values and fail on the same steps with the same error.
//!
//! Values are small integers in f32 (a quarter of the tensors in f16, with a
//! fourth device that stores f16 packed, and a fifth in i32), and every op
//! keeps them exact or rounds them the same way on every device, so any
//! difference is a bug. Operands of different dtypes promote (see
//! `Tensor::result_type`), in-place ops that would change their
//! destination's dtype fail, and both must agree everywhere. `PROPTEST_CASES` sets the number of
//! chains per test (64 in the fast form, 128 with `WEBTENSOR_LONG_TESTS=1`); a longer run is, for example,
//! `PROPTEST_CASES=2000 cargo test --test differential`.

mod common;

use proptest::prelude::*;
use webtensor::{DType, Device, Error, Fft, GpuOptions, PadMode, Pool, SliceItem, Tensor};

thread_local! {
    /// The GPU devices the chains run on, with what sets them apart: a
    /// test thread's own, released when it ends, so that no device is
    /// alive while the process exits (where a software driver's global
    /// teardown may race its threads).
    static GPUS: Vec<(&'static str, Device)> = gpus();
}

/// The GPU devices the chains run on (see [`GPUS`]).
fn gpus() -> Vec<(&'static str, Device)> {
    {
        let settings = [
            ("fusion, batches of 1024", Some(1024), Some(true)),
            ("no fusion, one op per submit", Some(1), Some(false)),
            ("fusion, batches of 3", Some(3), Some(true)),
        ];
        let mut gpus: Vec<_> = settings
            .into_iter()
            .filter_map(|(name, flush_threshold, fusion)| {
                common::own_gpu(GpuOptions {
                    flush_threshold,
                    fusion,
                    ..Default::default()
                })
                .map(|d| (name, d))
            })
            .collect();
        let packed = GpuOptions {
            flush_threshold: Some(1024),
            fusion: Some(true),
            force_packed_f16: true,
            ..Default::default()
        };
        gpus.extend(common::own_gpu(packed).map(|d| ("packed f16, fusion", d)));
        gpus
    }
}

/// One step of a chain. Slot indices are taken modulo the live slots.
#[derive(Debug, Clone)]
enum Step {
    New {
        dims: Vec<usize>,
        seed: u8,
        dtype: DType,
    },
    View {
        src: usize,
        view: View,
    },
    Unary {
        src: usize,
        op: u8,
        replace: bool,
    },
    /// `replace`: 0 pushes the result, 1 puts it in `a`'s slot, 2 in `b`'s.
    Binary {
        a: usize,
        b: usize,
        op: u8,
        replace: u8,
    },
    Scalar {
        src: usize,
        op: u8,
        value: i8,
        replace: bool,
    },
    InPlace {
        dst: usize,
        src: usize,
        op: u8,
    },
    InPlaceScalar {
        dst: usize,
        op: u8,
        value: i8,
    },
    Reduce {
        src: usize,
        axis: i8,
        keepdim: bool,
    },
    Cumsum {
        src: usize,
        axis: i8,
    },
    Cast {
        src: usize,
    },
    Concat {
        a: usize,
        b: usize,
        axis: i8,
    },
    Take {
        src: usize,
        axis: i8,
        seed: u8,
    },
    /// `dst.scatter_(index, src)` (or `scatter_add_`) through `dst`'s view.
    Scatter {
        dst: usize,
        src: usize,
        axis: i8,
        seed: u8,
        add: bool,
    },
    Matmul {
        a: usize,
        b: usize,
    },
    Where {
        cond: usize,
        a: usize,
        b: usize,
    },
    Contiguous {
        src: usize,
    },
    /// A real FFT and its inverse along `axis` (rounded back to integers),
    /// a 2 x 2 max or average pooling (times 4: a sum) of the last two
    /// axes, an adaptive average pooling of them into 1 to 3 bins each, or
    /// a pad of the last two axes in one of the four modes (`axis` picks
    /// the bins, the widths and the mode).
    Signal {
        src: usize,
        axis: i8,
        op: u8,
    },
    Drop {
        slot: usize,
    },
    Read {
        slot: usize,
    },
}

#[derive(Debug, Clone)]
enum View {
    Slice(Vec<(Option<i8>, Option<i8>, i8)>),
    Index(i8),
    Flip(i8),
    T,
    Unsqueeze(i8),
    Broadcast(usize),
    Reshape(Vec<usize>),
    Squeeze,
}

fn dims() -> impl Strategy<Value = Vec<usize>> {
    prop_oneof![
        8 => prop::collection::vec(0usize..5, 0..4),
        2 => prop::collection::vec(1usize..4, 4..6),
        // Rank 8, the limit.
        1 => prop::collection::vec(1usize..3, 8..=8),
    ]
}

fn view() -> impl Strategy<Value = View> {
    let bound = prop::option::of(-5i8..6);
    let step = prop_oneof![1i8..3, -3i8..0, Just(7i8)];
    prop_oneof![
        4 => prop::collection::vec((bound.clone(), bound, step), 0..3).prop_map(View::Slice),
        1 => (-3i8..3).prop_map(View::Index),
        2 => (-3i8..3).prop_map(View::Flip),
        2 => Just(View::T),
        1 => (-3i8..4).prop_map(View::Unsqueeze),
        1 => (1usize..3).prop_map(View::Broadcast),
        1 => prop::collection::vec(1usize..5, 1..3).prop_map(View::Reshape),
        1 => Just(View::Squeeze),
    ]
}

/// The dtype of a new tensor: mostly f32, some f16, bf16, i32 and i64, so
/// that chains mix dtypes and promote (f32 with f16 is f32, i32 with f16
/// is f16, f16 with bf16 is f32, i32 with i64 is i64 ...) the same way on
/// every device.
fn dtype() -> impl Strategy<Value = DType> {
    prop_oneof![
        9 => Just(DType::F32),
        3 => Just(DType::F16),
        2 => Just(DType::BF16),
        3 => Just(DType::I32),
        2 => Just(DType::I64)
    ]
}

/// A step of a chain; `w` weighs writes through views and rebinding (the
/// patterns fusion must order right) against the other ops.
fn step(w: u32) -> impl Strategy<Value = Step> {
    let slot = 0usize..64;
    prop_oneof![
        3 => (dims(), any::<u8>(), dtype())
            .prop_map(|(dims, seed, dtype)| Step::New { dims, seed, dtype }),
        5 + w => (slot.clone(), view()).prop_map(|(src, view)| Step::View { src, view }),
        2 => (slot.clone(), 0u8..33, any::<bool>())
            .prop_map(|(src, op, replace)| Step::Unary { src, op, replace }),
        4 + w => (slot.clone(), slot.clone(), 0u8..7, 0u8..3)
            .prop_map(|(a, b, op, replace)| Step::Binary { a, b, op, replace }),
        2 => (slot.clone(), 0u8..6, -3i8..4, any::<bool>())
            .prop_map(|(src, op, value, replace)| Step::Scalar { src, op, value, replace }),
        4 + w => (slot.clone(), slot.clone(), 0u8..4)
            .prop_map(|(dst, src, op)| Step::InPlace { dst, src, op }),
        3 + w => (slot.clone(), 0u8..6, -3i8..4)
            .prop_map(|(dst, op, value)| Step::InPlaceScalar { dst, op, value }),
        1 => (slot.clone(), -3i8..3, any::<bool>())
            .prop_map(|(src, axis, keepdim)| Step::Reduce { src, axis, keepdim }),
        1 => (slot.clone(), -3i8..3).prop_map(|(src, axis)| Step::Cumsum { src, axis }),
        1 => slot.clone().prop_map(|src| Step::Cast { src }),
        1 => (slot.clone(), slot.clone(), -2i8..2)
            .prop_map(|(a, b, axis)| Step::Concat { a, b, axis }),
        1 => slot.clone().prop_map(|src| Step::Contiguous { src }),
        4 => (slot.clone(), -8i8..8, 0u8..5).prop_map(|(src, axis, op)| Step::Signal { src, axis, op }),
        1 => (slot.clone(), -2i8..2, any::<u8>())
            .prop_map(|(src, axis, seed)| Step::Take { src, axis, seed }),
        1 + w / 2 => (slot.clone(), slot.clone(), -2i8..2, any::<u8>(), any::<bool>())
            .prop_map(|(dst, src, axis, seed, add)| Step::Scatter { dst, src, axis, seed, add }),
        1 => (slot.clone(), slot.clone()).prop_map(|(a, b)| Step::Matmul { a, b }),
        1 => (slot.clone(), slot.clone(), slot.clone())
            .prop_map(|(cond, a, b)| Step::Where { cond, a, b }),
        4 + w => slot.clone().prop_map(|slot| Step::Drop { slot }),
        1 => slot.prop_map(|slot| Step::Read { slot }),
    ]
}

/// What a step did: its error kind, or the values of a read.
#[derive(Debug, PartialEq)]
enum Outcome {
    Ok,
    Err(std::mem::Discriminant<Error>, String),
    Values(Vec<usize>, Vec<f32>),
}

/// Keeps values bounded (and so exact in f32) after ops that grow them.
/// `t` rounded to integers, for the ops whose order of additions differs
/// between devices (sums, scans, products): on the non-integers that
/// scalar ops leave, their results would differ in the last bit.
fn exact(t: &Tensor) -> webtensor::Result<Tensor> {
    t.round()
}

/// `t` as integers: itself, or a float cut toward zero to i32.
fn ints(t: &Tensor) -> webtensor::Result<Tensor> {
    if t.dtype().is_int() {
        Ok(t.clone())
    } else {
        t.to_dtype(DType::I32)
    }
}

/// Values kept within ±1000 (integer bounds, so that no dtype is lifted).
fn clamp(t: Tensor) -> webtensor::Result<Tensor> {
    t.minimum_scalar(1000)?.maximum_scalar(-1000)
}

fn read(t: &Tensor) -> Outcome {
    match t.to_dtype(DType::F32).and_then(|t| t.to_vec::<f32>()) {
        Ok(v) => Outcome::Values(t.dims().to_vec(), v),
        Err(e) => err(e),
    }
}

fn err(e: Error) -> Outcome {
    assert!(!matches!(e, Error::Internal { .. }), "{e}");
    Outcome::Err(std::mem::discriminant(&e), e.to_string())
}

/// Runs `steps` on `dev`: one outcome per step, then a read of every slot.
fn run(steps: &[Step], dev: &Device) -> Vec<Outcome> {
    let mut slots: Vec<Tensor> = Vec::new();
    let mut trace = Vec::new();
    for step in steps {
        let outcome = apply(step, &mut slots, dev);
        trace.push(match outcome {
            Ok(Some(values)) => values,
            Ok(None) => Outcome::Ok,
            Err(e) => err(e),
        });
    }
    trace.extend(slots.iter().map(read));
    trace
}

fn pick(slots: &[Tensor], k: usize) -> Option<usize> {
    (!slots.is_empty()).then(|| k % slots.len())
}

/// Stores `t` as a new slot, or in place of slot `k` (dropping that handle).
fn store(slots: &mut Vec<Tensor>, k: usize, replace: bool, t: Tensor) {
    if replace {
        slots[k] = t;
    } else {
        slots.push(t);
    }
}

fn apply(step: &Step, slots: &mut Vec<Tensor>, dev: &Device) -> webtensor::Result<Option<Outcome>> {
    if slots.is_empty() && !matches!(step, Step::New { .. }) {
        return Ok(None);
    }
    let at = |k: usize| pick(slots, k).unwrap_or(0);
    match step {
        Step::New { dims, seed, dtype } => {
            let n: usize = dims.iter().product();
            let data: Vec<f32> = (0..n)
                .map(|i| ((i * 7 + *seed as usize * 13) % 17) as f32 - 8.0)
                .collect();
            let t = Tensor::from_vec(data, dims.clone(), dev)?;
            slots.push(t.to_dtype(*dtype)?);
        }
        Step::View { src, view } => {
            let t = &slots[at(*src)];
            let v = match view {
                View::Slice(items) => {
                    let items: Vec<SliceItem> = items
                        .iter()
                        .take(t.rank())
                        .map(|&(start, end, step)| SliceItem::Range {
                            start: start.map(isize::from),
                            end: end.map(isize::from),
                            step: step as isize,
                        })
                        .collect();
                    t.slice(items)?
                }
                View::Index(i) => t.slice([SliceItem::Index(*i as isize)])?,
                View::Flip(axis) => t.flip(&[*axis as isize])?,
                View::T => t.t(),
                View::Unsqueeze(axis) => t.unsqueeze(*axis as isize)?,
                View::Broadcast(lead) => {
                    let mut shape = vec![*lead];
                    shape.extend_from_slice(t.dims());
                    t.broadcast_to(shape)?
                }
                View::Reshape(dims) => t.reshape(dims.clone())?,
                View::Squeeze => t.squeeze(),
            };
            slots.push(v);
        }
        Step::Unary { src, op, replace } => {
            let k = at(*src);
            let t = &slots[k];
            let r = match op {
                0 => t.neg()?,
                1 => t.abs()?,
                2 => t.relu()?,
                3 => t.floor()?,
                4 => t.sign()?,
                5 => t.roll(1, -1)?,
                6 => t.triu(0)?,
                7 => t.clamp(-2.0, 3.0)?,
                8 => t.relu6()?,
                // Integers again (each rounds once, alike everywhere; later
                // sums would add their fractions in other orders).
                9 => exact(&t.hardsigmoid()?.mul_scalar(6.0)?)?,
                10 => exact(&t.hardswish()?)?,
                // The smooth ones: no integer input lands near a half, so
                // each device's few-ulp rounding rounds alike.
                11 => exact(&t.gelu()?)?,
                12 => exact(&t.silu()?)?,
                13 => exact(&t.erf()?.mul_scalar(3.0)?)?,
                14 => exact(&t.mish()?)?,
                15 => exact(&t.softplus(1.0, 20.0)?)?,
                16 => exact(&t.elu(1.0)?)?,
                17 => exact(&t.leaky_relu(0.25)?)?,
                // Special functions where they are finite and smooth, no
                // integer landing near a half: lgamma and digamma past
                // their poles, i0 before it overflows, erfinv inside
                // (-1, 1).
                18 => exact(&t.clamp(1.0, 12.0)?.lgamma()?)?,
                19 => exact(&t.clamp(1.0, 12.0)?.digamma()?.mul_scalar(2.0)?)?,
                20 => exact(&t.erfc()?.mul_scalar(3.0)?)?,
                21 => exact(&t.clamp(-8.0, 8.0)?.i0()?)?,
                22 => exact(
                    &t.clamp(-1.0, 1.0)?
                        .mul_scalar(0.5)?
                        .erfinv()?
                        .mul_scalar(4.0)?,
                )?,
                // Activations that keep integers integers, and two smooth
                // ones whose values at integers are far from halves.
                23 => t.hardtanh(-2.0, 3.0)?,
                24 => t.threshold(0.0, 5.0)?,
                25 => t.hardshrink(1.5)?,
                26 => t.softshrink(1.0)?,
                27 => exact(&t.atan()?.mul_scalar(4.0)?)?,
                28 => exact(&t.clamp(-6.0, 6.0)?.sinh()?)?,
                // Bitwise ops of integers (floats cut to i32 first).
                29 => ints(t)?.bitwise_not()?,
                30 => ints(t)?.bitwise_right_shift_scalar(2)?,
                31 => clamp(ints(t)?.bitwise_left_shift_scalar(3)?)?,
                _ => clamp(t.square()?)?,
            };
            store(slots, k, *replace, r);
        }
        Step::Binary { a, b, op, replace } => {
            let (ka, kb) = (at(*a), at(*b));
            let (x, y) = (&slots[ka], &slots[kb]);
            let r = match op {
                0 => x.add(y)?,
                1 => x.sub(y)?,
                2 => x.maximum(y)?,
                3 => x.minimum(y)?,
                4 => ints(x)?.bitwise_xor(&ints(y)?)?,
                5 => ints(x)?.bitwise_and(&ints(y)?)?,
                _ => clamp(x.mul(y)?)?,
            };
            match replace {
                0 => slots.push(r),
                1 => slots[ka] = r,
                _ => slots[kb] = r,
            }
        }
        Step::Scalar {
            src,
            op,
            value,
            replace,
        } => {
            let k = at(*src);
            let (t, v) = (&slots[k], *value as f32);
            // A value no f16 holds: rounded to the tensor's dtype first on
            // both devices.
            let odd = v * 0.7 + 1e-4;
            let r = match op {
                0 => t.add_scalar(odd)?,
                1 => t.mul_scalar(v.clamp(-1.0, 1.0))?,
                2 => t.maximum_scalar(odd)?,
                3 => t.floor_divide_scalar(if v == 0.0 { 2.0 } else { v })?,
                4 => t.remainder_scalar(if v == 0.0 { 1.5 } else { odd })?,
                _ => t.sub_scalar(v)?,
            };
            store(slots, k, *replace, r);
        }
        Step::InPlace { dst, src, op } => {
            let (d, s) = (&slots[at(*dst)], &slots[at(*src)]);
            match op {
                0 => d.add_(s)?,
                1 => d.sub_(s)?,
                2 => d.assign(s)?,
                _ => d.maximum_(s)?,
            }
        }
        Step::InPlaceScalar { dst, op, value } => {
            let (d, v) = (&slots[at(*dst)], *value as f32);
            match op {
                0 => d.add_scalar_(v)?,
                1 => d.mul_scalar_(-1.0)?,
                2 => d.fill_(v)?,
                3 => d.clamp_(-v.abs(), v.abs())?,
                4 if d.dtype().is_int() => d.bitwise_xor_scalar_(*value)?,
                _ => d.neg_()?,
            }
        }
        Step::Reduce { src, axis, keepdim } => {
            let x = exact(&slots[at(*src)])?;
            let r = if *keepdim {
                x.sum_keepdim(*axis as isize)?
            } else {
                x.sum(*axis as isize)?
            };
            slots.push(clamp(r)?);
        }
        Step::Cumsum { src, axis } => {
            let r = exact(&slots[at(*src)])?.cumsum(*axis as isize)?;
            slots.push(clamp(r)?);
        }
        Step::Cast { src } => {
            let k = at(*src);
            let r = slots[k].to_dtype(DType::I32)?.to_dtype(slots[k].dtype())?;
            slots.push(r);
        }
        Step::Concat { a, b, axis } => {
            let r = Tensor::concat(&[&slots[at(*a)], &slots[at(*b)]], *axis as isize)?;
            slots.push(r);
        }
        Step::Contiguous { src } => {
            let r = slots[at(*src)].contiguous()?;
            slots.push(r);
        }
        Step::Signal { src, axis, op } => {
            let t = &slots[at(*src)];
            let r = match op {
                0 => {
                    // -3 to 3: mostly in range, sometimes not.
                    let axis = (*axis % 4) as isize;
                    let n = match t.rank() {
                        0 => 1,
                        r => t.dims()[axis.rem_euclid(r as isize) as usize],
                    };
                    let round_trip = Fft::along(axis).size(n);
                    // Of integers: the round trip comes back within an ulp
                    // or two, which rounding removes; a value at .5 (a
                    // remainder by 1.5) could round either way.
                    let back = exact(t)?.rfft(axis)?.irfft(round_trip)?;
                    back.round()?.to_dtype(t.dtype())?
                }
                1 => t.max_pool2d(&Pool::new(2))?,
                2 => t.avg_pool2d(&Pool::new(2))?.mul_scalar(4.0)?,
                3 => {
                    // Of integers within ±1000: each bin's sum is exact in
                    // either order of additions, and both devices divide
                    // it by the bin's height and then its width.
                    // (Integers as f32: their error is pinned elsewhere.)
                    let k = (*axis as i32 + 8) as usize;
                    let x = match t.dtype() {
                        DType::F16 | DType::BF16 | DType::F32 => clamp(exact(t)?)?,
                        _ => clamp(t.to_dtype(DType::F32)?)?,
                    };
                    x.adaptive_avg_pool2d([k % 3 + 1, k / 3 % 3 + 1])?
                }
                _ => {
                    // Widths 0 to 3 before and 0 to 2 after: an axis of
                    // fewer elements than a reflection or wrap takes is
                    // gathered, the others are copies of views.
                    let k = (*axis as i32 + 8) as usize;
                    let mode = match k % 4 {
                        0 => PadMode::Constant(3.into()),
                        1 => PadMode::Edge,
                        2 => PadMode::Reflect,
                        _ => PadMode::Wrap,
                    };
                    let a = k / 4;
                    let widths = [(a, k % 3), (3 - a, a % 2)];
                    t.pad(&widths[..t.rank().min(2)], mode)?
                }
            };
            slots.push(r);
        }
        Step::Take { src, axis, seed } => {
            let t = &slots[at(*src)];
            let n = match t.rank() {
                0 => 1,
                r => t.dims()[(*axis as isize).rem_euclid(r as isize) as usize],
            };
            let index = positions(&[3], n, *seed, dev)?;
            slots.push(t.take(&index, *axis as isize)?);
        }
        Step::Scatter {
            dst,
            src,
            axis,
            seed,
            add,
        } => {
            let d = &slots[at(*dst)];
            let n = match d.rank() {
                0 => 1,
                r => d.dims()[(*axis as isize).rem_euclid(r as isize) as usize],
            };
            let index = positions(d.dims(), n, *seed, dev)?;
            let s = &slots[at(*src)];
            if *add {
                d.scatter_add_(&index, s, *axis as isize)?;
            } else {
                d.scatter_(&index, s, *axis as isize)?;
            }
        }
        Step::Matmul { a, b } => {
            let (x, y) = (&slots[at(*a)], &slots[at(*b)]);
            // f16 products round differently in each GEMM; f32 ones of
            // integers are exact.
            if x.dtype() == DType::F32 && y.dtype() == DType::F32 {
                slots.push(clamp(exact(x)?.matmul(&exact(y)?)?)?);
            }
        }
        Step::Where { cond, a, b } => {
            let c = slots[at(*cond)].gt_scalar(0.0)?;
            let r = Tensor::where_cond(&c, &slots[at(*a)], &slots[at(*b)])?;
            slots.push(r);
        }
        Step::Drop { slot } => {
            slots.remove(at(*slot));
        }
        Step::Read { slot } => return Ok(Some(read(&slots[at(*slot)]))),
    }
    // Keep the working set small: storages nobody holds are what fusion
    // may fold away.
    if slots.len() > 8 {
        slots.remove(0);
    }
    Ok(None)
}

/// The chain gives the CPU's outcomes on every GPU device.
fn agree(steps: &[Step]) -> Result<(), TestCaseError> {
    let want = run(steps, &Device::cpu());
    GPUS.with(|gpus| {
        for (name, dev) in gpus {
            let got = run(steps, dev);
            prop_assert_eq!(got.len(), want.len(), "{} outcomes", name);
            for (k, (g, w)) in got.iter().zip(&want).enumerate() {
                prop_assert_eq!(g, w, "{} (step {} of {:?})", name, k, steps.get(k));
            }
        }
        Ok(())
    })
}

/// An i32 index tensor of `dims` with positions in `0..n` (0 when `n` is
/// 0, which the op must then reject), repeats included.
fn positions(dims: &[usize], n: usize, seed: u8, dev: &Device) -> webtensor::Result<Tensor> {
    let count: usize = dims.iter().product();
    let values: Vec<i32> = (0..count)
        .map(|i| ((i * 7 + seed as usize) % n.max(1)) as i32)
        .collect();
    Tensor::from_vec(values, dims.to_vec(), dev)
}

fn cases() -> u32 {
    common::cases(64, 128)
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: cases(),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn random_chains_agree_on_every_device(steps in prop::collection::vec(step(0), 1..64)) {
        agree(&steps)?;
    }

    #[test]
    fn chains_of_writes_through_views_agree_on_every_device(
        steps in prop::collection::vec(step(6), 1..64)
    ) {
        agree(&steps)?;
    }
}
