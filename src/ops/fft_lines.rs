//! One FFT along one axis, on either device. The CPU transforms lines of
//! any length in one call. A GPU kernel holds a line in workgroup memory,
//! so longer lines and lengths with a prime factor past the kernel's
//! radices are composed here from kernel calls and elementwise ops:
//! - the four-step algorithm for lengths whose factors the kernel takes:
//!   `n = n1 n2`, the line viewed as an `n1 x n2` matrix (a free view),
//!   `n2` transforms of `n1` points down its columns, each output twiddled
//!   by `w^(j2 k1)` in the same kernel, then `n1` transforms of `n2` points
//!   along its rows written straight into the transposed view of the
//!   output (recursively, when `n2` is still too long);
//! - Bluestein's algorithm for the others: `jk = (j^2 + k^2 - (k-j)^2)/2`
//!   turns the transform into a circular convolution with a chirp, done by
//!   transforms of a power of two at least `2n - 1` long (the chirp and
//!   its transform computed on the host in f64 by the first call of a
//!   length and kept by the device, see `backend/gpu/constants.rs`): one
//!   kernel where that power of two fits a line (`gpu/fft/chirp.rs`),
//!   composed from kernel calls past it.

use super::PadMode;
use super::binding_parts::for_each_part_across;
use crate::backend::{
    ConstKey, FftCall, FftRead, FftTwist, bluestein_kernel, chirp, chirp_len, chirp_pairs, fft,
    fft_line_limit,
};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::shape::Shape;
use crate::tensor::Tensor;

/// The transform along `axis` of `x` (c64 for a `Complex` or `Hermitian`
/// read, f32 or f16 for a `Real` one) into a fresh tensor whose `axis` is
/// `out_len` long: c64, or f32 after a `Hermitian` read. Its buffer holds
/// the transformed axis last (the view returned puts it back in place).
///
/// # Errors
/// `Error::Shape` when the input or output is c64 of rank 8 (its f32 pair
/// view would need a ninth axis); device errors.
#[allow(clippy::too_many_arguments)]
pub(super) fn transform_axis(
    op: &'static str,
    x: &Tensor,
    axis: usize,
    read: FftRead,
    n: usize,
    inverse: bool,
    scale: f32,
    out_len: usize,
) -> Result<Tensor> {
    let dtype = if read == FftRead::Hermitian {
        DType::F32
    } else {
        DType::C64
    };
    // The kernel's lines along the last axis of both: the output is laid
    // out that way (each line one run, so a view of it over many bindings
    // goes in parts across lines) and handed back as the view with the
    // axis where it was.
    let last = x.rank() as isize - 1;
    let x = x.with_layout(x.layout().transpose(axis as isize, last)?);
    let mut dims = x.dims().to_vec();
    if let Some(last) = dims.last_mut() {
        *last = out_len;
    }
    let out = Tensor::empty_dense(Shape::from(dims), dtype, x.device(), op)?;
    if out.numel() > 0 {
        let lines = Lines {
            op,
            read,
            n,
            inverse,
            scale,
        };
        // The composed steps' errors (a binding's, a memory cap's) as the
        // op called reports them.
        lines.run(&x, &out).map_err(|e| e.named(op))?;
    }
    out.transpose(axis as isize, last)
}

/// A transform of every line along the last axis of its operands.
#[derive(Clone, Copy)]
struct Lines {
    op: &'static str,
    read: FftRead,
    n: usize,
    inverse: bool,
    scale: f32,
}

impl Lines {
    /// Writes the transforms of `x`'s lines into `out` (a view of a fresh
    /// tensor whose lines are as long as the outputs kept).
    fn run(&self, x: &Tensor, out: &Tensor) -> Result<()> {
        // Operands whose pair views do not fit are refused here, before a
        // composed transform splits their axis in two.
        self.pairs_of(x, self.read != FftRead::Real)?;
        self.pairs_of(out, self.read != FftRead::Hermitian)?;
        let Some((longest, largest_prime)) = fft_line_limit(&x.storage()) else {
            return self.call(x, out, None);
        };
        let limit = x.gpu_binding_limit().unwrap_or(u64::MAX);
        let direct = self.n <= longest && smooth(self.n, largest_prime);
        // Bluestein's algorithm in the kernel: the input read as it lies
        // (zeros past it), only the outputs kept written.
        let chirped = !smooth(self.n, largest_prime)
            && self.read != FftRead::Hermitian
            && chirp_fits(self.n, longest, limit);
        // Views over more than one storage binding go in parts across their
        // lines (a line longer than half a binding is an error). A part of
        // the input whose lines interleave with others' (the columns of a
        // tall matrix: each line strided across the whole buffer) is
        // copied to a compact one first; the output's parts bound its size.
        // A composed transform's complex lines of `n` (the whole spectrum
        // of a real one, the four-step's middle) fit one binding a part.
        let last = x.rank() - 1;
        let whole_line = (self.n * DType::C64.size_in_bytes()) as u64;
        let lines = match direct || chirped {
            true => usize::MAX,
            false => (limit / whole_line.max(1)).max(1) as usize,
        };
        for_each_part_across(&[x.clone(), out.clone()], last, lines, &mut |p| {
            let input = match p[0].binding_cut() {
                Some(_) => p[0].contiguous()?,
                None => p[0].clone(),
            };
            if direct {
                self.call(&input, &p[1], None)
            } else if chirped {
                self.call_chirped(&input, &p[1])
            } else {
                self.composed(&input, &p[1], longest, largest_prime)
            }
        })
    }

    /// One backend call.
    fn call(&self, x: &Tensor, out: &Tensor, twist: Option<FftTwist>) -> Result<()> {
        self.backend(x, out, twist, false)
    }

    /// One backend call running Bluestein's algorithm in the kernel.
    fn call_chirped(&self, x: &Tensor, out: &Tensor) -> Result<()> {
        self.backend(x, out, None, true)
    }

    fn backend(
        &self,
        x: &Tensor,
        out: &Tensor,
        twist: Option<FftTwist>,
        chirp: bool,
    ) -> Result<()> {
        let x = self.pairs_of(x, self.read != FftRead::Real)?;
        let out = self.pairs_of(out, self.read != FftRead::Hermitian)?;
        fft(&FftCall {
            input: x.kernel_ref(x.layout().clone())?,
            read: self.read,
            out: out.kernel_out(out.layout().clone())?,
            n: self.n,
            inverse: self.inverse,
            scale: self.scale,
            twist,
            chirp,
        })
    }

    /// The f32 pair view of a complex operand (itself for a real one).
    fn pairs_of(&self, t: &Tensor, complex: bool) -> Result<Tensor> {
        if !complex {
            return Ok(t.clone());
        }
        if !Tensor::pairs_fit(t.rank()) {
            return Err(Error::shape(
                self.op,
                format!(
                    "c64 tensors of rank {} are transformed up to rank {}; reshape first",
                    t.rank(),
                    t.rank() - 1
                ),
            ));
        }
        Ok(t.pairs())
    }

    /// A GPU transform the kernel does not take in one call: the input
    /// made complex (or kept real) and exactly `n` long, transformed whole
    /// by the four-step or Bluestein algorithm, and the outputs kept.
    fn composed(&self, x: &Tensor, out: &Tensor, longest: usize, largest: usize) -> Result<()> {
        let n = self.n;
        let (x, read) = match self.read {
            FftRead::Hermitian => (hermitian_whole(x, n)?, FftRead::Complex),
            read => (fitted(x, n)?, read),
        };
        let whole = self.read != FftRead::Hermitian && out.dims()[out.rank() - 1] == n;
        let full = if whole {
            out.clone()
        } else {
            Tensor::empty_dense(with_last(&x, n), DType::C64, x.device(), self.op)?
        };
        let lines = Lines { read, ..*self };
        if smooth(n, largest) {
            lines.four_step(&x, &full, longest)?;
        } else {
            lines.bluestein(&x, &full, longest)?;
        }
        if !whole {
            let kept = full.narrow(-1, 0, out.dims()[out.rank() - 1])?;
            if self.read == FftRead::Hermitian {
                out.assign(&kept.real()?)?;
            } else {
                out.assign(&kept)?;
            }
        }
        Ok(())
    }

    /// The four-step algorithm: `x` is `n` long, `out` complex and `n` long.
    fn four_step(&self, x: &Tensor, out: &Tensor, longest: usize) -> Result<()> {
        let n = self.n;
        let n1 = four_step_split(n, longest);
        let n2 = n / n1;
        // x[j1 n2 + j2] as [.., n1, n2]; the first pass takes its columns.
        let columns = x
            .split_axis(self.op, x.rank() - 1, [n1, n2])?
            .transpose(-1, -2)?;
        let mut dims = x.dims()[..x.rank() - 1].to_vec();
        dims.extend([n2, n1]);
        let middle = Tensor::empty_dense(Shape::from(dims), DType::C64, x.device(), self.op)?;
        let first = Lines {
            n: n1,
            scale: 1.0,
            ..*self
        };
        let twist = FftTwist {
            period: n2,
            total: n,
        };
        first.call(&columns, &middle, Some(twist))?;
        // X[k1 + n1 k2] as [.., n2, n1], transposed: rows of k2 per k1.
        let rows_out = out
            .split_axis(self.op, out.rank() - 1, [n2, n1])?
            .transpose(-1, -2)?;
        let second = Lines {
            n: n2,
            read: FftRead::Complex,
            ..*self
        };
        second.run(&middle.transpose(-1, -2)?, &rows_out)
    }

    /// Bluestein's algorithm: `x` is `n` long, `out` complex and `n` long;
    /// one kernel where its convolution fits one line (`longest`), else
    /// composed over parts of the batch whose padded lines fit one storage
    /// binding (a padded line is `m >= 2n - 1` points, a power of two: at
    /// most one binding for a line of at most half a binding, where the
    /// binding limit is a power of two; past one, `Error::TooLarge`).
    fn bluestein(&self, x: &Tensor, out: &Tensor, longest: usize) -> Result<()> {
        let m = chirp_len(self.n);
        let limit = x.gpu_binding_limit().unwrap_or(u64::MAX);
        if chirp_fits(self.n, longest, limit) {
            return self.call_chirped(x, out);
        }
        // Each padded line starts a whole line into a fresh buffer, so any
        // count of lines within the limit binds at once.
        let line_bytes = (m * DType::C64.size_in_bytes()) as u64;
        if line_bytes > limit {
            return Err(Error::TooLarge {
                op: self.op,
                what: "bytes of one padded line of a prime-length transform",
                requested: line_bytes,
                limit,
            });
        }
        let per_part = usize::try_from(limit / line_bytes).unwrap_or(usize::MAX);
        let last = x.rank() - 1;
        for_each_part_across(&[x.clone(), out.clone()], last, per_part, &mut |p| {
            self.bluestein_lines(&p[0], &p[1], m)
        })
    }

    /// Bluestein's algorithm over lines whose padded convolutions (`m`
    /// points each) fit one binding together.
    fn bluestein_lines(&self, x: &Tensor, out: &Tensor, m: usize) -> Result<()> {
        let n = self.n;
        let device = x.device();
        // The chirp and the convolution's kernel are the device's tables,
        // made on the host by the first transform of this length and
        // direction.
        let table = |kind, len: usize, make: fn(usize, bool) -> Vec<f32>| {
            let inverse = self.inverse;
            let key = ConstKey {
                kind,
                args: [n as u64, u64::from(inverse), 0],
            };
            Tensor::constant(self.op, key, 2 * len, device, || make(n, inverse))?
                .reshape([len, 2])
                .map(|pairs| pairs.complex_of_pairs())
        };
        let chirp_t = table("bluestein chirp", n, |n, inverse| {
            chirp_pairs(&chirp(n, inverse))
        })?;
        let kernel_t = table("bluestein kernel", m, bluestein_kernel)?;
        let padded = Tensor::zeros(with_last(x, m), DType::C64, device)?;
        padded.narrow(-1, 0, n)?.assign(&x.mul(&chirp_t)?)?;
        let spectrum = Tensor::empty_dense(with_last(x, m), DType::C64, device, self.op)?;
        let pass = |inverse: bool, from: &Tensor, to: &Tensor| {
            let lines = Lines {
                read: FftRead::Complex,
                n: m,
                inverse,
                scale: 1.0,
                ..*self
            };
            lines.run(from, to)
        };
        pass(false, &padded, &spectrum)?;
        spectrum.mul_(&kernel_t)?;
        pass(true, &spectrum, &padded)?;
        let y = padded.narrow(-1, 0, n)?.mul(&chirp_t)?;
        if self.scale != 1.0 {
            y.mul_scalar_(self.scale)?;
        }
        out.assign(&y)
    }
}

/// The length `n1` of a four-step FFT's first pass over `n = n1 n2`
/// points, on kernels taking lines of `longest` at most: the smallest
/// factor at least `sqrt(n)` where both halves fit one kernel (2^20 is
/// 1024 x 1024, 2^21 2048 x 1024: the second pass, strided on both sides,
/// gets the shorter lines, more of which share a workgroup), else the
/// largest factor that fits (the second pass composed again).
fn four_step_split(n: usize, longest: usize) -> usize {
    let root = n.isqrt() + usize::from(n.isqrt().pow(2) < n);
    (root..=longest.min(n))
        .find(|d| n.is_multiple_of(*d))
        .or_else(|| (2..=longest.min(n)).rev().find(|d| n.is_multiple_of(*d)))
        .unwrap_or(n)
}

/// True when Bluestein's algorithm for `n` points runs in one kernel: its
/// convolution (`m` points) fits a kernel's line (`longest`) and its table
/// (`m` twiddles, the chirp and the kernel: `2m + n` c64) one storage
/// binding of `limit` bytes.
fn chirp_fits(n: usize, longest: usize, limit: u64) -> bool {
    let m = chirp_len(n);
    let table = ((2 * m + n) * DType::C64.size_in_bytes()) as u64;
    m <= longest && table <= limit
}

/// True when every prime factor of `n` is at most `largest`.
fn smooth(n: usize, largest: usize) -> bool {
    let mut rest = n.max(1);
    for p in 2..=largest {
        while rest.is_multiple_of(p) {
            rest /= p;
        }
    }
    rest == 1
}

/// `t`'s shape with its last axis `len` long.
fn with_last(t: &Tensor, len: usize) -> Shape {
    let mut dims = t.dims().to_vec();
    let last = dims.len() - 1;
    dims[last] = len;
    Shape::from(dims)
}

/// `t` cropped or padded with zeros to `n` along its last axis.
fn fitted(t: &Tensor, n: usize) -> Result<Tensor> {
    let len = t.dims()[t.rank() - 1];
    if len >= n {
        return t.narrow(-1, 0, n);
    }
    t.pad(&[(0, n - len)], PadMode::Constant(0.into()))
}

/// The whole spectrum of `n` points whose first half `t` holds (c64):
/// element `k` is `t[k]` up to `n / 2` and `conj(t[n - k])` beyond, the
/// elements at 0 and `n / 2` (even `n`) real (see [`real_ends`]).
fn hermitian_whole(t: &Tensor, n: usize) -> Result<Tensor> {
    let half = n / 2 + 1;
    let h = fitted(t, half)?;
    let whole = Tensor::empty_dense(with_last(t, n), DType::C64, t.device(), "irfft")?;
    whole.narrow(-1, 0, half)?.assign(&h)?;
    let rest = n - half;
    if rest > 0 {
        let mirrored = h.narrow(-1, 1, rest)?.flip(&[-1])?.conj()?;
        whole.narrow(-1, half, rest)?.assign(&mirrored)?;
    }
    real_ends(&whole, n)?;
    Ok(whole)
}

/// Makes the elements at 0 and `n / 2` (even `n`) of `whole`'s lines real,
/// as NumPy's `irfft` reads them (the imaginary part times 0 added: NaN
/// where it is not finite), before Bluestein's or the four-step algorithm
/// mixes the parts.
fn real_ends(whole: &Tensor, n: usize) -> Result<()> {
    let ends = if n.is_multiple_of(2) {
        vec![0, n / 2]
    } else {
        vec![0]
    };
    for k in ends {
        let z = whole.narrow(-1, k, 1)?;
        let im = z.imag()?;
        z.real()?.add_(&im.mul_scalar(0.0)?)?;
        im.fill_(0.0)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn four_step_halves_are_balanced_where_both_fit() {
        assert_eq!(four_step_split(1 << 20, 4096), 1024);
        assert_eq!(four_step_split(1 << 21, 4096), 2048);
        assert_eq!(four_step_split(1 << 22, 4096), 2048);
        assert_eq!(four_step_split(1 << 22, 2048), 2048);
        assert_eq!(four_step_split(8192, 4096), 128);
        assert_eq!(four_step_split(1000 * 1000, 4096), 1000);
        // 1024 on lines of 16: 16 x 64, the 64 composed again.
        assert_eq!(four_step_split(1024, 16), 16);
        assert_eq!(four_step_split(3 * 4096, 4096), 128);
    }

    #[test]
    fn smooth_lengths_have_only_small_primes() {
        assert!(smooth(1, 13));
        assert!(smooth(2 * 3 * 5 * 7 * 11 * 13, 13));
        assert!(!smooth(17, 13));
        assert!(!smooth(2 * 17, 13));
    }
}
