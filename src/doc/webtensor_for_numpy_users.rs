//! webtensor for NumPy (and PyTorch) users: the everyday calls side by
//! side, and where the semantics differ.
//!
//! webtensor follows NumPy's semantics (broadcasting, views, negative
//! indices and steps, `keepdims`, half-to-even rounding, how arrays print)
//! and runs them on a GPU or the CPU alike. What changes is the spelling:
//! methods that return `Result` (errors name the op and the values), axes
//! as `isize`, shapes as arrays or slices, and an explicit
//! [`Device`](crate::Device).
//!
//! The examples below the tables are doctests: they run most of the
//! forms their table shows, not every one.
//!
//! # Devices and readback
//!
//! | NumPy / PyTorch | webtensor |
//! |---|---|
//! | `torch.device("cuda")` | `Device::gpu()?`, or `Device::default_device()?` (a hardware GPU, else the CPU) |
//! | `x.to("cuda")` | `x.to_device(&gpu)?` |
//! | `x.numpy()`, `x.tolist()` | `x.to_vec::<f32>()?` (row-major; `to_vec_async` in a browser) |
//! | `x.item()` | `x.item::<f32>()?` |
//! | `torch.cuda.synchronize()` | `dev.sync()?` (ops are batched; a readback waits by itself) |
//!
//! ```
//! use webtensor::{DType, Device, Tensor};
//! # fn main() -> webtensor::Result<()> {
//! let dev = Device::default_device()?;
//! let cpu = Device::cpu();
//! let x = Tensor::from_slice(&[1.0f32, 2.0, 3.0], [3], &cpu)?;
//! let y = x.to_device(&dev)?;
//! assert_eq!(y.to_vec::<f32>()?, vec![1.0, 2.0, 3.0]);
//! assert_eq!(y.sum(..)?.item::<f32>()?, 6.0);
//! dev.sync()?;
//! # Ok(())
//! # }
//! ```
//!
//! # Creation
//!
//! | NumPy | webtensor |
//! |---|---|
//! | `np.array([[1, 2], [3, 4]], np.float32)` | `Tensor::from_slice(&[1.0f32, 2.0, 3.0, 4.0], [2, 2], &dev)?` |
//! | `np.zeros((2, 3))`, `np.ones`, `np.full((2, 3), 7)` | `Tensor::zeros([2, 3], DType::F32, &dev)?`, `ones`, `Tensor::full([2, 3], 7.0, DType::F32, &dev)?` |
//! | `np.arange(0, 6)` (int64), `np.arange(0.0, 6.0, dtype=np.float32)` | `Tensor::arange(0i64, 6, 1, &dev)?`, `Tensor::arange(0.0f32, 6.0, 1.0, &dev)?` |
//! | `np.linspace(0, 1, 5)` | `Tensor::linspace(0.0, 1.0, 5, DType::F32, &dev)?` |
//! | `np.eye(3)` | `Tensor::eye(3, DType::F32, &dev)?` |
//! | `np.zeros_like(a)` | `a.zeros_like()?` |
//! | `rng.standard_normal((2, 2))` | `Tensor::randn([2, 2], DType::F32, seed, &dev)?` (the same values on every device) |
//! | `rng = np.random.default_rng(seed)`; `rng.integers(0, 10, 5)` | `let mut g = Generator::new(seed); g.randint([5], 0, 10, DType::I64, &dev)?` (Philox, not NumPy's PCG64: other values) |
//! | `rng.permutation(n)`, `rng.choice(n, k, replace=False)` | `g.permutation(n, &dev)?`, `g.choice(n, k, &dev)?` |
//! | `np.searchsorted(a, v, side="right")`, `np.digitize(x, bins)` | `a.searchsorted(&v, Side::Right)?`, `x.digitize(&bins, false)?` |
//! | `np.bincount(x, minlength=5)`, `np.histogram(a, 10, (0, 1))` | `x.bincount(None, 5)?`, `a.histogram(10, Some((0.0, 1.0)), None, false)?` |
//! | `scipy.special.gammaln(a)`, `psi(a)`, `erfinv(a)`, `erfc(a)`, `expit(a)`; `np.i0(a)` | `a.lgamma()?`, `a.digamma()?`, `a.erfinv()?`, `a.erfc()?`, `a.expit()?`; `a.i0()?` |
//! | `np.linalg.solve(a, b)`, `inv(a)`, `det(a)`, `slogdet(a)`, `cholesky(a)` | `linalg::solve(&a, &b)?`, `linalg::inv(&a)?`, `linalg::det(&a)?`, `linalg::slogdet(&a)?`, `linalg::cholesky(&a, Triangle::Lower)?` |
//! | `np.linalg.qr(a)`, `svd(a, full_matrices=False)`, `svdvals(a)`, `eigh(a)` | `linalg::qr(&a, QrMode::Reduced)?`, `linalg::svd(&a, false)?`, `linalg::svdvals(&a)?`, `linalg::eigh(&a, Triangle::Lower)?` |
//! | `np.linalg.lstsq(a, b)`, `pinv(a, rtol=None)`, `matrix_rank(a)`, `norm(a, 2)`, `cond(a)` | `linalg::lstsq(&a, &b, None)?` (NumPy's default cutoff for f32 input is f64's ε: it may count a higher rank), `linalg::pinv(&a, None)?` (NumPy's `pinv(a)` cuts at `1e-15` times the largest singular value; `None` is `max(m, n) ε`, as its `rtol=None`), `linalg::matrix_rank(&a, None)?`, `linalg::matrix_norm(&a, MatrixNorm::Two)?`, `linalg::cond(&a, None)?` |
//! | `scipy.linalg.lu(a)`, `lu_factor(a)`, `solve_triangular(a, b, lower=True)` | `linalg::lu(&a)?`, `linalg::lu_factor(&a)?`, `linalg::solve_triangular(&a, &b, Triangle::Lower, Side::Left, false)?` |
//! | `np.argwhere(a)`, `a[mask]`, `np.unique(a, return_counts=True)` | `a.argwhere()?`, `a.masked_select(&mask)?`, `a.unique_all()?` (values, indices, inverse, counts) |
//!
//! ```
//! use webtensor::{DType, Device, Tensor};
//! # fn main() -> webtensor::Result<()> {
//! let dev = Device::cpu();
//! let a = Tensor::from_slice(&[1.0f32, 2.0, 3.0, 4.0], [2, 2], &dev)?;
//! let z = Tensor::zeros([2, 3], DType::F32, &dev)?;
//! let o = Tensor::ones([2, 3], DType::F32, &dev)?;
//! let f = Tensor::full([2, 3], 7.0, DType::F32, &dev)?;
//! let r = Tensor::arange(0.0f32, 6.0, 1.0, &dev)?;
//! let l = Tensor::linspace(0.0, 1.0, 5, DType::F32, &dev)?;
//! let i = Tensor::eye(3, DType::F32, &dev)?;
//! let zl = a.zeros_like()?;
//! let n = Tensor::randn([2, 2], DType::F32, 7, &dev)?;
//! assert_eq!(l.to_vec::<f32>()?, vec![0.0, 0.25, 0.5, 0.75, 1.0]);
//! assert_eq!(f.sum(..)?.item::<f32>()?, 42.0);
//! # let _ = (z, o, r, i, zl, n);
//! # Ok(())
//! # }
//! ```
//!
//! # Indexing and views
//!
//! Basic indexing gives views, as in NumPy: no copy, and writes through a
//! view reach the tensor it views (on the GPU too). [`s!`](crate::s) takes
//! NumPy's items; a step goes after `;`.
//!
//! | NumPy | webtensor |
//! |---|---|
//! | `a[1]`, `a[-1]` | `a.slice(s![1])?`, `a.slice(s![-1])?` |
//! | `a[1:, ::2]` | `a.slice(s![1.., ..;2])?` |
//! | `a[::-1]` | `a.slice(s![..;-1])?` or `a.flip(&[0])?` |
//! | `a[:, None]` | `a.slice(s![.., NewAxis])?` or `a.unsqueeze(1)?` |
//! | `a.T`, `a.transpose(1, 0)` | `a.t()`, `a.permute(&[1, 0])?` |
//! | `a.reshape(-1)` | `a.reshape([-1])?` (a view when the strides allow, else a copy) |
//! | `a[[2, 0]]` | `a.take(&idx, 0)?` (`idx` an i32, i64 or u32 tensor) |
//! | `np.take_along_axis(a, i, 1)` | `a.gather(&i, 1)?` (PyTorch's `gather`: `i` is not broadcast, the result has its shape) |
//! | `a[mask] = 0` | `a.masked_fill_(&mask, 0.0)?` |
//! | `np.where(c, x, y)` | `Tensor::where_cond(&c, &x, &y)?` |
//!
//! ```
//! use webtensor::{s, DType, Device, NewAxis, Tensor};
//! # fn main() -> webtensor::Result<()> {
//! let dev = Device::cpu();
//! let a = Tensor::arange(0.0f32, 12.0, 1.0, &dev)?.reshape([3, 4])?;
//! assert_eq!(a.slice(s![-1])?.to_vec::<f32>()?, vec![8.0, 9.0, 10.0, 11.0]);
//! assert_eq!(a.slice(s![1.., ..;2])?.dims(), &[2, 2]);
//! assert_eq!(a.slice(s![..;-1])?.to_vec::<f32>()?, a.flip(&[0])?.to_vec::<f32>()?);
//! assert_eq!(a.slice(s![.., NewAxis])?.dims(), a.unsqueeze(1)?.dims());
//! assert_eq!(a.t().to_vec::<f32>()?, a.permute(&[1, 0])?.to_vec::<f32>()?);
//! let flat = a.reshape([-1])?;
//! let idx = Tensor::from_slice(&[2i32, 0], [2], &dev)?;
//! let rows = a.take(&idx, 0)?;
//! let picked = a.gather(&Tensor::zeros([3, 1], DType::I32, &dev)?, 1)?;
//! let mask = a.gt_scalar(9.0)?;
//! let c = Tensor::where_cond(&mask, &a, &a.neg()?)?;
//! a.masked_fill_(&mask, 0.0)?;
//! a.slice(s![0, ..])?.fill_(-1.0)?;   // writes into `a`
//! assert_eq!(a.slice(s![0])?.to_vec::<f32>()?, vec![-1.0; 4]);
//! assert_eq!(a.max(..)?.item::<f32>()?, 9.0);
//! # let _ = (flat, rows, picked, c);
//! # Ok(())
//! # }
//! ```
//!
//! # Arithmetic, broadcasting and in-place ops
//!
//! Broadcasting follows NumPy's rules. Methods return new tensors; the
//! forms ending in `_` write in place, through any view. Operators are
//! sugar for the methods (they panic where a method would return `Err`).
//!
//! | NumPy | webtensor |
//! |---|---|
//! | `a + b`, `a * 2` | `a.add(&b)?`, `a.mul_scalar(2.0)?`, or `&a + &b`, `&a * 2.0` |
//! | `a += b`, `a *= 2` | `a.add_(&b)?`, `a.mul_scalar_(2.0)?`, or `a += &b` |
//! | `a[...] = b` | `a.assign(&b)?` |
//! | `np.exp(a)`, `np.clip(a, 0, 1)` | `a.exp()?`, `a.clamp(0.0, 1.0)?` |
//! | `a // b`, `a % b` | `a.floor_divide(&b)?`, `a.remainder(&b)?` |
//! | `a & b`, `~a`, `a << 2` (integers) | `a.bitwise_and(&b)?`, `a.bitwise_not()?`, `a.bitwise_left_shift_scalar(2)?`, or `&a & &b`, `!&a`, `&a << 2` |
//! | `a @ b` | `a.matmul(&b)?` |
//! | `a > 0.5` | `a.gt_scalar(0.5)?` (a bool tensor) |
//!
//! ```
//! use webtensor::{DType, Device, Tensor};
//! # fn main() -> webtensor::Result<()> {
//! let dev = Device::cpu();
//! let mut a = Tensor::arange(0.0f32, 6.0, 1.0, &dev)?.reshape([2, 3])?;
//! let b = Tensor::from_slice(&[10.0f32, 20.0, 30.0], [3], &dev)?;
//! let c = a.add(&b)?;                 // [2, 3] + [3]
//! let d = &a * 2.0;
//! a.add_(&b)?;
//! a.mul_scalar_(0.5)?;
//! a += &b;
//! a.assign(&c)?;
//! let e = a.exp()?.clamp(0.0, 1.0)?;
//! let f = a.floor_divide(&b)?;
//! let g = a.remainder(&b)?;
//! let h = a.matmul(&a.t())?;          // [2, 2]
//! let m = a.gt_scalar(20.0)?;
//! assert_eq!(m.dtype(), DType::Bool);
//! assert_eq!(h.dims(), &[2, 2]);
//! # let _ = (d, e, f, g);
//! # Ok(())
//! # }
//! ```
//!
//! # Reductions: axes, `keepdims`, `axis=-1`
//!
//! Reductions take the axes: `..` for all, an axis, or a list; negative
//! counts from the end. Each has a `_keepdim` twin for NumPy's
//! `keepdims=True` (`sum_keepdim`, `mean_keepdim`, ...), so no call ends in
//! a bare `true` or `false`.
//!
//! | NumPy | webtensor |
//! |---|---|
//! | `a.sum()` | `a.sum(..)?` (a 0-d tensor; `.item()` reads it) |
//! | `a.mean(axis=0, keepdims=True)` | `a.mean_keepdim(0)?` |
//! | `a.max(axis=-1)` | `a.max(-1)?` |
//! | `a.sum(axis=(0, 2))` | `a.sum(&[0, 2][..])?` |
//! | `a.std(axis=0, ddof=1)` | `a.std(0, 1)?` |
//! | `a.argmax(axis=1)` | `a.argmax(1)?` (i32 indices) |
//! | `np.cumsum(a, axis=1)` | `a.cumsum(1)?` |
//! | `np.sort(a, axis=-1)` | `a.sort(-1, SortOrder::Ascending)?` (or `Descending`) |
//! | `torch.topk(a, 2)` | `a.topk(2, -1, TopK::Largest)?` (values and i32 positions; or `Smallest`) |
//! | `scipy.special.softmax(a, axis=-1)` | `a.softmax(-1)?` |
//!
//! ```
//! use webtensor::{Device, SortOrder, Tensor, TopK};
//! # fn main() -> webtensor::Result<()> {
//! let dev = Device::cpu();
//! let a = Tensor::arange(0.0f32, 24.0, 1.0, &dev)?.reshape([2, 3, 4])?;
//! assert_eq!(a.sum(..)?.item::<f32>()?, 276.0);
//! assert_eq!(a.mean_keepdim(0)?.dims(), &[1, 3, 4]);
//! assert_eq!(a.max(-1)?.dims(), &[2, 3]);
//! assert_eq!(a.sum(&[0, 2][..])?.dims(), &[3]);
//! let s = a.std(0, 1)?;
//! let i = a.argmax(1)?;
//! let c = a.cumsum(1)?;
//! let sorted = a.sort(-1, SortOrder::Ascending)?;
//! let (top, at) = a.topk(2, -1, TopK::Largest)?;
//! let p = a.softmax(-1)?;
//! # let _ = (s, i, c, sorted, top, at, p);
//! # Ok(())
//! # }
//! ```
//!
//! # Fourier transforms: `numpy.fft`
//!
//! The same names, one argument: an axis, or an [`Fft`](crate::Fft) for
//! several axes, a size (`n`, `s`) and a `norm`. Spectra are c64, as NumPy
//! 2 gives for float32 input (f64 input, and NumPy 1.x, give complex128;
//! webtensor has no complex128).
//!
//! | NumPy | webtensor |
//! |---|---|
//! | `np.fft.fft(a)` | `a.fft(-1)?` |
//! | `np.fft.ifft(a, n=64, axis=0, norm="ortho")` | `a.ifft(Fft::along(0).size(64).norm(FftNorm::Ortho))?` |
//! | `np.fft.fft2(a)`, `np.fft.fftn(a)` | `a.fft(Fft::over([-2, -1]))?`, `a.fft(Fft::over(..))?` |
//! | `np.fft.rfft(a)`, `np.fft.irfft(x, n=9)` | `a.rfft(-1)?`, `x.irfft(Fft::along(-1).size(9))?` |
//! | `np.fft.fftfreq(8, d=0.1)` | `Tensor::fftfreq(8, 0.1, &dev)?` |
//! | `np.fft.fftshift(a)` | `a.fftshift(..)?` |
//! | `torch.stft(x, 512, 128, window=torch.hann_window(512), return_complex=True)` | `x.stft(&Stft::new(512).hop(128).window(&Tensor::hann_window(512, &dev)?))?` |
//!
//! ```
//! use webtensor::{Device, Fft, FftNorm, Tensor};
//! # fn main() -> webtensor::Result<()> {
//! let dev = Device::cpu();
//! let t = Tensor::arange(0.0f32, 8.0, 1.0, &dev)?;
//! let wave = t.mul_scalar(std::f64::consts::PI / 2.0)?.cos()?; // 2 cycles in 8 samples
//! let spectrum = wave.rfft(-1)?; // 5 c64 bins
//! let peak = spectrum.abs()?.argmax(-1)?.item::<i32>()?;
//! assert_eq!(peak, 2);
//! let back = spectrum.irfft(Fft::along(-1).size(8))?;
//! assert!(back.allclose(&wave, 1e-5, 1e-5, false)?);
//! let unitary = wave.fft(Fft::along(-1).norm(FftNorm::Ortho))?;
//! let freqs = Tensor::rfftfreq(8, 1.0, &dev)?;
//! # let _ = (unitary, freqs);
//! # Ok(())
//! # }
//! ```
//!
//! # Convolution, pooling and resizing: `torch.nn.functional`
//!
//! | PyTorch | webtensor |
//! |---|---|
//! | `F.conv2d(x, w, b, stride=2, padding=1, groups=4)` | `x.conv2d(&w, &Conv::new().stride(2).padding(1).groups(4).bias(&b))?` |
//! | `F.conv2d(x, w, padding="same", dilation=2)` | `x.conv2d(&w, &Conv::new().same().dilation(2))?` |
//! | `F.conv1d(x, w)`, `F.conv_transpose2d(x, w, stride=2)`, `F.conv_transpose1d(x, w, stride=8, padding=4)` | `x.conv1d(&w, &Conv::new())?`, `x.conv_transpose2d(&w, &Conv::new().stride(2))?`, `x.conv_transpose1d(&w, &Conv::new().stride(8).padding(4))?` |
//! | `F.max_pool2d(x, 3, 2, 1, ceil_mode=True)` | `x.max_pool2d(&Pool::new(3).stride(2).padding(1).ceil_mode(true))?` |
//! | `F.avg_pool2d(x, 2)`, `F.adaptive_avg_pool2d(x, (7, 7))` | `x.avg_pool2d(&Pool::new(2))?`, `x.adaptive_avg_pool2d([7, 7])?` |
//! | `F.interpolate(x, size=(h, w), mode="bilinear")` | `x.resize([h, w], Resize::Bilinear)?` |
//! | `F.interpolate(x, scale_factor=2, mode="nearest")` | `x.resize_by([2.0, 2.0], Resize::Nearest)?` |
//!
//! # dtypes
//!
//! f32, f16, bf16 (`ml_dtypes.bfloat16`; an integer past 2^24 reaches it
//! through f32, as in PyTorch, so it can round twice where ml_dtypes
//! rounds once), i32, u32, u8, bool and c64
//! (complex), and i64 (NumPy's default integer) on every device; f64 on
//! the CPU only. Mixed dtypes promote as PyTorch's `result_type` does (the
//! README has the table): `f32 + i32` is f32 and `i32 * 0.5` is f32 (NumPy
//! gives float64 for both; f64 is not a GPU dtype), and a scalar never
//! widens a tensor within its category (`f16 * 2.0` stays f16, as in
//! NumPy); `astype` is `to_dtype`. In place, a result is stored
//! in the destination's dtype within its category (`f16 += f32` works, as
//! NumPy's `same_kind` casting; `i32 += f32` is an error). Integer `div` truncates toward zero and
//! divides by zero to 0 (NumPy's `/` would give floats); `floor_divide` is
//! NumPy's `//`. Sums, products and cumulative sums of i32 stay i32 and
//! wrap (NumPy widens them to int64), of u8 are u32, of bool i32; means of
//! integers are f32. `linalg` factors f32 matrices in f32 (NumPy in f64,
//! rounding only the answer), so ill-conditioned ones lose more digits.
//!
//! ```
//! use webtensor::{DType, Device, Tensor};
//! # fn main() -> webtensor::Result<()> {
//! let dev = Device::cpu();
//! let a = Tensor::from_slice(&[1.0f32, 2.5], [2], &dev)?;
//! let i = Tensor::from_slice(&[7i32, -7], [2], &dev)?;
//! assert_eq!(a.add(&i)?.to_vec::<f32>()?, vec![8.0, -4.5]); // f32 + i32: f32
//! assert_eq!((&i * 0.5).to_vec::<f32>()?, vec![3.5, -3.5]);
//! assert!(i.add_(&a).is_err());              // in place would make i32 f32
//! let z = 2.0 * &a + 1.0;                    // unsuffixed literals on the left
//! assert_eq!(z.to_vec::<f32>()?, vec![3.0, 6.0]);
//! let two = Tensor::full([2], 2, DType::I32, &dev)?;
//! assert_eq!(i.div(&two)?.to_vec::<i32>()?, vec![3, -3]);
//! assert_eq!(i.floor_divide(&two)?.to_vec::<i32>()?, vec![3, -4]);
//! assert_eq!(i.gt_scalar(0)?.sum(..)?.item::<i32>()?, 1);
//! assert_eq!(i.mean(..)?.dtype(), DType::F32);
//! # Ok(())
//! # }
//! ```
//!
//! # Saving and loading
//!
//! | NumPy | webtensor |
//! |---|---|
//! | `np.save("a.npy", a)`, `np.load` | `io::save_npy("a.npy", &a)?`, `io::load_npy("a.npy", &dev)?` |
//! | `np.savez`, `np.load("a.npz")` | `io::save_npz`, `io::load_npz` |
//! | safetensors' `save_file`, `load_file` | `io::save_safetensors`, `io::load_safetensors` |
//! | bytes in memory | `io::to_npy_bytes(&a)?`, `io::from_npy_bytes(&bytes, &dev)?` (`from_npy_bytes` on any target; in a browser, write with `io::to_npy_bytes_async(&a).await?`) |
//!
//! ```
//! use webtensor::{io, Device, Tensor};
//! # fn main() -> webtensor::Result<()> {
//! let dev = Device::cpu();
//! let a = Tensor::arange(0.0f32, 6.0, 1.0, &dev)?.reshape([2, 3])?;
//! let bytes = io::to_npy_bytes(&a.t())?;     // a view, written in C order
//! let back = io::from_npy_bytes(&bytes, &dev)?;
//! assert_eq!(back.dims(), &[3, 2]);
//! let path = std::env::temp_dir().join("webtensor_numpy_guide.npy");
//! io::save_npy(&path, &a)?;
//! assert_eq!(io::load_npy(&path, &dev)?.to_vec::<f32>()?, a.to_vec::<f32>()?);
//! # std::fs::remove_file(&path).ok();
//! # Ok(())
//! # }
//! ```
