"""NumPy (OpenBLAS) reference rates for BENCHMARKS.md: f32 matmul at the
sizes of benches/matmul.rs and a sum over 16M f32. Run with
`python3 benches/reference/numpy_matmul.py` (pip install numpy)."""
import time

import numpy as np


def best_of(f, repeats):
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        f()
        best = min(best, time.perf_counter() - t)
    return best


rng = np.random.default_rng(1)
for n in (256, 1024, 2048):
    a = rng.random((n, n), dtype=np.float32)
    b = rng.random((n, n), dtype=np.float32)
    a @ b
    t = best_of(lambda: a @ b, 10 if n < 2048 else 5)
    print(f"matmul f32 {n}: {t * 1e3:.2f} ms, {2 * n**3 / t / 1e9:.1f} GFLOP/s")
x = rng.random((4096, 4096), dtype=np.float32)
t = best_of(lambda: x.sum(), 10)
print(f"sum 16M f32: {t * 1e3:.2f} ms")
