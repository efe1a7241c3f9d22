"""NumPy reference times for BENCHMARKS.md: the workloads of benches/fft.rs
(the FFT of one line of 2^20 complex points, the fft2 of a 1024 x 1024
complex matrix, the rfft of each row of a 1024 x 1024 real matrix), by
numpy.fft (pocketfft; complex128 whatever the input, as NumPy computes)
and, where SciPy is installed, scipy.fft on complex64 (pocketfft in single
precision, webtensor's precision). Run with
`python3 benches/reference/numpy_fft.py` (pip install numpy scipy)."""
import time

import numpy as np


def best_of(f, repeats=10):
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        f()
        best = min(best, time.perf_counter() - t)
    return best


rng = np.random.default_rng(1)
line = (rng.random(1 << 20) + 1j * rng.random(1 << 20)).astype(np.complex64)
square = line.reshape(1024, 1024)
rows = rng.random((1024, 1024), dtype=np.float32)

print(f"numpy fft 2^20 c64: {best_of(lambda: np.fft.fft(line)) * 1e3:.2f} ms")
print(f"numpy fft2 1024x1024 c64: {best_of(lambda: np.fft.fft2(square)) * 1e3:.2f} ms")
print(f"numpy rfft rows 1024x1024 f32: {best_of(lambda: np.fft.rfft(rows)) * 1e3:.2f} ms")
try:
    import scipy.fft as sf

    print(f"scipy fft 2^20 c64 (single): {best_of(lambda: sf.fft(line)) * 1e3:.2f} ms")
    print(f"scipy fft2 1024x1024 c64 (single): {best_of(lambda: sf.fft2(square)) * 1e3:.2f} ms")
    print(f"scipy rfft rows 1024x1024 f32 (single): {best_of(lambda: sf.rfft(rows)) * 1e3:.2f} ms")
except ImportError:
    print("scipy is not installed: no single-precision pocketfft figures")
