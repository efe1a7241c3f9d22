"""Writes numpy_complex_cases.npz for tests/complex.rs: complex64 pairs `a`,
`b` over magnitudes from 1e-45 to 3e38 and every combination of zeros,
infinities and NaN in their parts, with NumPy's complex64 `a / b`
(`quot`, Smith's scaled division) and `abs(a)` (`abs`, C's hypot), and
both again on operands whose f32 subnormal parts are flushed to zero,
their subnormal results flushed too (`quot_ftz`, `abs_ftz`: what a GPU
that flushes subnormals, as WGSL allows, may answer). Where NumPy's own
steps leave f32's normal range, to a subnormal, to zero or to infinity
(`smith_out_of_range`, and `smith_out_of_range_ftz` on flushed operands),
its answer has lost bits or overflowed where the exact quotient did not,
and a GPU that flushes subnormals cannot reproduce it: there the quotient computed in complex128 and rounded to
complex64 (`quot_near`, `quot_near_ftz`) is the reference a result must be
no farther from than NumPy's is, give or take 2 ulp. Run
from tests/data with `python3 make_complex_cases.py` (NumPy 2.4 wrote the
committed file)."""
import itertools
import numpy as np

rng = np.random.default_rng(44)
special = np.array([0.0, -0.0, 1.0, -3.0, 1e-45, 3e38, np.inf, -np.inf, np.nan], np.float32)
parts = np.array(list(itertools.product(range(len(special)), repeat=4)))


def cplx(re, im):
    # Set part by part: `re + 1j * im` would make inf's real part NaN.
    z = np.empty(len(re), np.complex64)
    z.real, z.imag = re, im
    return z


sa = cplx(special[parts[:, 0]], special[parts[:, 1]])
sb = cplx(special[parts[:, 2]], special[parts[:, 3]])


def magnitudes(n):
    exp = rng.uniform(-38, 38.5, n)
    sign = rng.choice([-1.0, 1.0], n)
    return (sign * 10.0 ** exp).astype(np.float32)


n = 4000
ra = cplx(magnitudes(n), magnitudes(n))
rb = cplx(magnitudes(n), magnitudes(n))
# Parts of like magnitude too, where cancellation and rounding matter.
m = rng.uniform(-2, 2, (4, n)).astype(np.float32) * np.float32(1e20) ** rng.integers(-1, 2, (1, n))
la = cplx(m[0], m[1])
lb = cplx(m[2], m[3])
a = np.concatenate([sa, ra, la])
b = np.concatenate([sb, rb, lb])


def ftz(x):
    tiny = np.finfo(np.float32).tiny
    return np.where(np.abs(x) < tiny, np.copysign(np.float32(0), x), x).astype(np.float32)


def flushed(z):
    return cplx(ftz(z.real), ftz(z.imag))


def smith_out_of_range(a, b):
    """Whether a step of NumPy's complex64 Smith division (npymath's, in
    f32) leaves f32's normal range, per element: underflows to a subnormal,
    or to zero from nonzero finite operands, or overflows from finite ones."""
    f = np.float32
    ar, ai, c, d = a.real, a.imag, b.real, b.imag
    by_c = np.abs(c) >= np.abs(d)
    # The larger part p and the smaller q of b, a's parts in that branch's order.
    p, q = np.where(by_c, c, d), np.where(by_c, d, c)
    x, y = np.where(by_c, ar, ai), np.where(by_c, ai, ar)
    tiny = np.finfo(f).tiny
    hit = np.zeros(len(a), bool)

    def step(v, x, y, sum=False):
        # A sum of nonzero parts is zero only exactly; a product or
        # quotient of nonzero finite ones, by underflowing.
        nonlocal hit
        v = v.astype(f)
        finite = np.isfinite(x) & np.isfinite(y)
        lost = (v == 0) & finite & (x != 0) & (y != 0) & (not sum)
        hit |= ((v != 0) & (np.abs(v) < tiny)) | lost | (np.isinf(v) & finite)
        return v

    r = step(q / p, q, p)
    qr = step(q * r, q, r)
    den = step(p + qr, p, qr, sum=True)
    s = step(f(1) / den, f(1), den)
    yr, xr = step(y * r, y, r), step(x * r, x, r)
    u, v = step(x + yr, x, yr, sum=True), step(y - xr, y, xr, sum=True)
    step(u * s, u, s)
    step(v * s, v, s)
    return hit


with np.errstate(all="ignore"):
    quot = (a / b).astype(np.complex64)
    quot_near = (a.astype(np.complex128) / b.astype(np.complex128)).astype(np.complex64)
    quot_near_ftz = flushed(
        (flushed(a).astype(np.complex128) / flushed(b).astype(np.complex128)).astype(np.complex64)
    )
    smith_sub = smith_out_of_range(a, b)
    smith_sub_ftz = smith_out_of_range(flushed(a), flushed(b))
    mag = np.abs(a).astype(np.float32)
    quot_ftz = flushed((flushed(a) / flushed(b)).astype(np.complex64))
    abs_ftz = ftz(np.abs(flushed(a)).astype(np.float32))
assert quot.dtype == np.complex64 and mag.dtype == np.float32
np.savez_compressed(
    "numpy_complex_cases.npz",
    a=a,
    b=b,
    quot=quot,
    abs=mag,
    quot_ftz=quot_ftz,
    quot_near=quot_near,
    quot_near_ftz=quot_near_ftz,
    smith_out_of_range=smith_sub,
    smith_out_of_range_ftz=smith_sub_ftz,
    abs_ftz=abs_ftz,
)
