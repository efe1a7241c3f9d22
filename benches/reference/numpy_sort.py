"""NumPy reference times for BENCHMARKS.md: the workloads of
benches/sort.rs (stable argsort of one line of 1M f32, of each row of a
1024 x 1024 matrix, and the top 10 of each row through argpartition and a
sort of the 10). Run with `python3 benches/reference/numpy_sort.py`
(pip install numpy)."""
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
line = rng.random(1 << 20, dtype=np.float32)
rows = line.reshape(1024, 1024)


def topk_rows():
    part = np.argpartition(-rows, 10, axis=1)[:, :10]
    vals = np.take_along_axis(rows, part, axis=1)
    return np.take_along_axis(part, np.argsort(-vals, axis=1, kind="stable"), axis=1)


print(f"argsort 1M f32 (stable): {best_of(lambda: np.argsort(line, kind='stable')) * 1e3:.2f} ms")
print(f"argsort rows 1024x1024 (stable): {best_of(lambda: np.argsort(rows, axis=1, kind='stable')) * 1e3:.2f} ms")
print(f"top 10 of each row 1024x1024: {best_of(topk_rows) * 1e3:.2f} ms")
