//! [`Generator`]: a seed and a position in its stream, and the draws it
//! makes.

use super::draw::draw;
use crate::backend::Draw;
use crate::backend::random::uniform_top;
use crate::device::Device;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ops::SortOrder;
use crate::shape::Shape;
use crate::tensor::Tensor;

/// A counter-based random number generator: Philox4x32-10 (Salmon et al.
/// 2011, the generator behind PyTorch's CUDA random numbers) keyed by a
/// 64-bit seed. Its stream is a sequence of 128-bit blocks, block `b`
/// the cipher of the counter `b` under the seed, so that any element of
/// any draw is computed where it lands: on a GPU by a kernel that writes
/// the tensor and uploads nothing; on the CPU by the same integer and f32
/// steps. **The same seed and the same sequence of draws give the same
/// bits on the CPU, every GPU and in the browser**, f16 and bf16 included
/// (f64, which only the CPU holds, draws its normals with the standard
/// library's `ln`, `sin` and `cos`).
///
/// Each draw takes whole blocks from the generator's `offset` on and
/// moves it past them (four 32-bit words a block; one word an element, two
/// for `randint` and for f64 `rand`, `uniform` and normals), as PyTorch's
/// Philox offset does; a draw that would move the offset past 2^64 - 1
/// is an `Error::Argument`, never a wrap to the stream's first block. A
/// generator made with [`Generator::with_offset`] resumes a stream where
/// another left it. [`Generator::split`] and [`Generator::fork`] derive
/// independent generators (keys enciphered from this one's, in a part of
/// the counter space draws never use).
///
/// ```
/// use webtensor::{DType, Device, Generator};
/// # fn main() -> webtensor::Result<()> {
/// let dev = Device::cpu();
/// let mut g = Generator::new(42);
/// let noise = g.randn([2, 3], DType::F32, &dev)?;
/// let dice = g.randint([10], 1, 7, DType::I64, &dev)?;
/// assert!(dice.to_vec::<i64>()?.iter().all(|d| (1..7).contains(d)));
/// // The same seed, the same draws: the same values.
/// let again = Generator::new(42).randn([2, 3], DType::F32, &dev)?;
/// assert_eq!(noise.to_vec::<f32>()?, again.to_vec::<f32>()?);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Generator {
    seed: u64,
    offset: u64,
}

/// The 128-bit counter of derived keys: word 3 set, which no draw's
/// counter has.
const SPLIT_DOMAIN: u32 = 1;

impl Generator {
    /// A generator at the start of `seed`'s stream.
    pub fn new(seed: u64) -> Generator {
        Generator { seed, offset: 0 }
    }

    /// A generator `offset` blocks into `seed`'s stream (where one whose
    /// [`Generator::offset`] was `offset` stood).
    pub fn with_offset(seed: u64, offset: u64) -> Generator {
        Generator { seed, offset }
    }

    /// The seed.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// The blocks of the stream taken so far: the next draw starts here.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Moves the next draw to block `offset` of the stream.
    pub fn set_offset(&mut self, offset: u64) {
        self.offset = offset;
    }

    fn key(&self) -> [u32; 2] {
        [self.seed as u32, (self.seed >> 32) as u32]
    }

    /// `n` generators independent of this one and of each other, their
    /// seeds enciphered from this one's key and offset (and this one moved
    /// a block on, so that splitting again gives others).
    ///
    /// # Errors
    /// `Error::Argument` naming `split` for more than 2^32 generators, or
    /// at offset 2^64 - 1 (moving on would wrap to the stream's first
    /// block); `Error::OutOfMemory` when they do not fit in memory.
    pub fn split(&mut self, n: usize) -> Result<Vec<Generator>> {
        if n as u64 > u64::from(u32::MAX) + 1 {
            return Err(Error::argument(
                "split",
                format!("{n} generators; at most 2^32 come from one split"),
            ));
        }
        let next = self.next_offset("split")?;
        let children =
            crate::backend::cpu::try_collect("split", n, (0..n).map(|j| self.child(j as u32)))?;
        self.offset = next;
        Ok(children)
    }

    /// One generator independent of this one: the first a
    /// [`Generator::split`] would give (and this one moved a block on).
    ///
    /// # Errors
    /// `Error::Argument` naming `fork` at offset 2^64 - 1 (moving on would
    /// wrap to the stream's first block, and the next fork repeat this).
    pub fn fork(&mut self) -> Result<Generator> {
        let next = self.next_offset("fork")?;
        let child = self.child(0);
        self.offset = next;
        Ok(child)
    }

    /// The offset a block on, for `op`; an error at the stream's end.
    fn next_offset(&self, op: &'static str) -> Result<u64> {
        self.offset.checked_add(1).ok_or_else(|| {
            Error::argument(
                op,
                "the generator is at offset 2^64 - 1, the stream's last block: \
                 moving on would wrap to its first",
            )
        })
    }

    /// Derived generator `j` at this one's offset: its seed the first two
    /// words of the counter `(offset, j, SPLIT_DOMAIN)` enciphered.
    fn child(&self, j: u32) -> Generator {
        let at = self.offset;
        let c = [at as u32, (at >> 32) as u32, j, SPLIT_DOMAIN];
        let w = crate::backend::cpu::philox(c, self.key());
        Generator::new(u64::from(w[0]) | u64::from(w[1]) << 32)
    }

    /// Draws `what` into a fresh tensor and moves past the blocks it took.
    fn make(
        &mut self,
        op: &'static str,
        what: Draw,
        shape: Shape,
        dtype: DType,
        device: &Device,
    ) -> Result<Tensor> {
        let (t, blocks) = draw(op, self.key(), self.offset, what, shape, dtype, device)?;
        self.offset += blocks;
        Ok(t)
    }

    /// The stream's 32-bit words themselves, one an element (JAX's
    /// `random.bits`).
    ///
    /// # Errors
    /// As [`Tensor::zeros`].
    pub fn bits(&mut self, shape: impl Into<Shape>, device: &Device) -> Result<Tensor> {
        self.make("bits", Draw::Bits, shape.into(), DType::U32, device)
    }

    /// Uniform samples in `[0, 1)`: whole multiples of the dtype's
    /// resolution (2^-24 in f32, 2^-11 in f16, 2^-8 in bf16, 2^-53 in f64),
    /// each equally likely, so no sample rounds up to 1.
    ///
    /// # Errors
    /// `Error::DType` naming `rand` for a dtype that is not a float
    /// (f64 on the CPU only); as [`Tensor::zeros`].
    pub fn rand(
        &mut self,
        shape: impl Into<Shape>,
        dtype: DType,
        device: &Device,
    ) -> Result<Tensor> {
        float_dtype("rand", dtype)?;
        let draw = Draw::Uniform {
            low: 0.0,
            span: 1.0,
            top: 1.0,
        };
        self.make("rand", draw, shape.into(), dtype, device)
    }

    /// Uniform samples in `[low, high)`, as PyTorch's `uniform_`: `low`
    /// and `high` rounded to the dtype, then `low + (high - low) u` of
    /// [`Generator::rand`]'s `u`, computed in f32 (f64 for f64) and rounded
    /// to the dtype; a sample that rounds to `high` is `low` instead, so
    /// that none reaches `high` (where `low < high` in the dtype; where
    /// they round to one value, every sample is it). Results (and
    /// parameters) below f32's smallest normal number are zeros of their
    /// sign on every device, as a GPU may make them (f64, on the CPU
    /// only, keeps them).
    ///
    /// # Errors
    /// `Error::Argument` naming `uniform` where `low > high` or the range
    /// is not finite in the dtype's compute type; as [`Generator::rand`].
    pub fn uniform(
        &mut self,
        shape: impl Into<Shape>,
        low: f64,
        high: f64,
        dtype: DType,
        device: &Device,
    ) -> Result<Tensor> {
        const OP: &str = "uniform";
        float_dtype(OP, dtype)?;
        // Every sample is finite in the dtype: both ends are, and the span
        // of the rounded ends is in the f32 the samples are computed in
        // (rounding may widen it past f32's range: an infinite span made
        // every sample `low`, or NaN).
        let largest = match dtype {
            DType::F16 => f64::from(half::f16::MAX),
            DType::BF16 => f64::from(half::bf16::MAX),
            DType::F32 => f64::from(f32::MAX),
            _ => f64::MAX,
        };
        let finite = |v: f64| v.is_finite() && v.abs() <= largest;
        // The bounds as the dtype holds them (through f32, as PyTorch's
        // halves take them).
        let rounded = |v: f64| match dtype {
            DType::F64 => v,
            DType::F16 => half::f16::from_f32(v as f32).to_f64(),
            DType::BF16 => half::bf16::from_f32(v as f32).to_f64(),
            _ => f64::from(v as f32),
        };
        let span = rounded(high) - rounded(low);
        let wide = dtype != DType::F64 && !(span as f32).is_finite();
        if !(low <= high && finite(low) && finite(high) && span.is_finite()) || wide {
            return Err(Error::argument(
                OP,
                format!(
                    "low = {low} and high = {high} must be finite in {dtype}, low <= high, with a finite span"
                ),
            ));
        }
        let (low, high) = (rounded(low), rounded(high));
        let top = uniform_top(high, dtype);
        let draw = Draw::Uniform { low, span, top };
        self.make(OP, draw, shape.into(), dtype, device)
    }

    /// Standard normal samples: Box-Muller of two uniforms a pair, in f32
    /// with fixed polynomials for its logarithm, square root, sine and
    /// cosine (so every device rounds alike; each within a few ulp of
    /// f64), then rounded to the dtype; in f64 (the CPU) with the standard
    /// library's. The radius's uniform has 23 bits, so samples stay within
    /// about ±5.77 (f32) as PyTorch's f32 ones do; f64's reach ±8.5.
    ///
    /// # Errors
    /// As [`Generator::rand`], naming `randn`.
    pub fn randn(
        &mut self,
        shape: impl Into<Shape>,
        dtype: DType,
        device: &Device,
    ) -> Result<Tensor> {
        self.normal_named("randn", shape.into(), 0.0, 1.0, dtype, device)
    }

    /// Normal samples of mean `mean` and standard deviation `std`:
    /// `mean + std z` of [`Generator::randn`]'s `z` (in f32, then rounded;
    /// subnormal results are zeros of their sign, and samples past the
    /// dtype's largest value are infinities, as PyTorch's are).
    ///
    /// # Errors
    /// `Error::Argument` naming `normal` for a mean or deviation that is not
    /// finite in the compute type, or a negative deviation; as
    /// [`Generator::rand`].
    pub fn normal(
        &mut self,
        shape: impl Into<Shape>,
        mean: f64,
        std: f64,
        dtype: DType,
        device: &Device,
    ) -> Result<Tensor> {
        self.normal_named("normal", shape.into(), mean, std, dtype, device)
    }

    fn normal_named(
        &mut self,
        op: &'static str,
        shape: Shape,
        mean: f64,
        std: f64,
        dtype: DType,
        device: &Device,
    ) -> Result<Tensor> {
        float_dtype(op, dtype)?;
        let finite = |v: f64| {
            if dtype == DType::F64 {
                v.is_finite()
            } else {
                (v as f32).is_finite()
            }
        };
        if !(finite(mean) && finite(std) && std >= 0.0) {
            return Err(Error::argument(
                op,
                format!("mean = {mean} and std = {std} must be finite in {dtype}, std >= 0"),
            ));
        }
        self.make(op, Draw::Normal { mean, std }, shape, dtype, device)
    }

    /// Integers uniform in `[low, high)` (NumPy's `integers`, PyTorch's
    /// `randint`): `low + floor(x (high - low) / 2^64)` of 64 random bits
    /// `x` an element. Each value takes `floor(2^64 / span)` or one more of
    /// the 2^64 `x`, so one is favoured over another by at most `span /
    /// 2^64` of its chance: under 2^-24 for ranges up to 2^40, but 5% at
    /// 10^18 and 2x past 2^62, where some values come twice as often
    /// (PyTorch's `randint`, by a modulo, has the same bias; NumPy rejects
    /// to remove it; this keeps one pass). For uniform words over a whole
    /// range, use [`Generator::bits`] (32 bits an element).
    ///
    /// # Errors
    /// `Error::DType` naming `randint` for a dtype other than i32, i64, u32
    /// or u8; `Error::Argument` where `low >= high` or the range does not
    /// fit the dtype (`high` is exclusive: it may be one past the dtype's
    /// largest value, but for i64, whose largest value cannot be drawn).
    pub fn randint(
        &mut self,
        shape: impl Into<Shape>,
        low: i64,
        high: i64,
        dtype: DType,
        device: &Device,
    ) -> Result<Tensor> {
        const OP: &str = "randint";
        let (min, end): (i128, i128) = match dtype {
            DType::I32 => (i32::MIN.into(), i128::from(i32::MAX) + 1),
            DType::I64 => (i64::MIN.into(), i128::from(i64::MAX) + 1),
            DType::U32 => (0, i128::from(u32::MAX) + 1),
            DType::U8 => (0, 256),
            other => {
                return Err(Error::dtype(
                    OP,
                    format!("needs i32, i64, u32 or u8, got {other}"),
                ));
            }
        };
        if low >= high || i128::from(low) < min || i128::from(high) > end {
            return Err(Error::argument(
                OP,
                format!(
                    "[{low}, {high}) must be a non-empty range inside {dtype}'s [{min}, {end})"
                ),
            ));
        }
        let span = high.wrapping_sub(low) as u64;
        self.make(OP, Draw::Int { low, span }, shape.into(), dtype, device)
    }

    /// Samples of a Bernoulli trial of probability `p`: 1 (true) with
    /// probability `p`, else 0 (false), in any dtype but c64. A sample is 1
    /// where its word is below `ceil(p 2^32)`, so `p` is honoured to 2^-32.
    ///
    /// # Errors
    /// `Error::Argument` naming `bernoulli` for `p` outside `[0, 1]`;
    /// `Error::DType` for c64.
    pub fn bernoulli(
        &mut self,
        shape: impl Into<Shape>,
        p: f64,
        dtype: DType,
        device: &Device,
    ) -> Result<Tensor> {
        const OP: &str = "bernoulli";
        if !(0.0..=1.0).contains(&p) {
            return Err(Error::argument(OP, format!("p = {p} must be in [0, 1]")));
        }
        if dtype.is_complex() {
            return Err(super::super::complex::not_for_complex(OP));
        }
        let threshold = (p * 4_294_967_296.0).ceil() as u64;
        self.make(
            OP,
            Draw::Bernoulli { threshold },
            shape.into(),
            dtype,
            device,
        )
    }

    /// A random permutation of `0..n` (i64; NumPy's `permutation`,
    /// PyTorch's `randperm`): the order that sorts `n` random 63-bit keys,
    /// stably (a tie, of chance about `n^2 / 2^64`, keeps index order).
    ///
    /// # Errors
    /// As [`Tensor::argsort`], naming `permutation`; `Error::Shape` for `n`
    /// past `i32::MAX`.
    pub fn permutation(&mut self, n: usize, device: &Device) -> Result<Tensor> {
        const OP: &str = "permutation";
        // Refused before the keys are drawn (8n bytes), as PyTorch's
        // randperm; a sort that fails after them gives their blocks back.
        if n > i32::MAX as usize {
            return Err(Error::shape(
                OP,
                format!("a permutation of {n} values; at most 2^31 - 1 are sorted"),
            ));
        }
        let start = self.offset;
        let order = super::super::as_op(OP, || {
            let keys = self.randint([n], 0, i64::MAX, DType::I64, device)?;
            keys.argsort(0, SortOrder::Ascending)?.to_dtype(DType::I64)
        });
        if order.is_err() {
            self.offset = start;
        }
        order
    }

    /// `k` distinct integers of `0..n` in random order (NumPy's `choice(n,
    /// k, replace=False)`): the first `k` of a [`Generator::permutation`].
    /// With replacement, [`Generator::randint`] draws them.
    ///
    /// # Errors
    /// `Error::Argument` naming `choice` for `k > n`; as
    /// [`Generator::permutation`].
    pub fn choice(&mut self, n: usize, k: usize, device: &Device) -> Result<Tensor> {
        if k > n {
            return Err(Error::argument(
                "choice",
                format!("{k} distinct values cannot come from {n}"),
            ));
        }
        super::super::as_op("choice", || self.permutation(n, device)?.narrow(0, 0, k))
    }

    /// `t` with its entries along `axis` in a random order (NumPy's
    /// `permutation` of an array, along any axis): one
    /// [`Generator::permutation`] of the axis, gathered.
    ///
    /// # Errors
    /// `Error::Axis` naming `shuffle` for an axis out of range;
    /// `Error::DType` for a c64 tensor; as [`Generator::permutation`].
    pub fn shuffle(&mut self, t: &Tensor, axis: isize) -> Result<Tensor> {
        let a = crate::layout::normalize_axis("shuffle", axis, t.rank())?;
        let order = self.permutation(t.dims()[a], t.device())?;
        super::super::as_op("shuffle", || t.index_select(&order, axis))
    }
}

/// Refuses a dtype that is not a float.
fn float_dtype(op: &'static str, dtype: DType) -> Result<()> {
    if dtype.is_float() {
        Ok(())
    } else {
        Err(Error::dtype(
            op,
            format!("needs a float dtype, got {dtype}"),
        ))
    }
}
