"""NumPy's np.pad of one array in the modes webtensor's `pad` takes, for
tests/numpy_ops.rs (`pip install numpy`):

    python3 tests/data/make_pad_cases.py

pad_cases.npz holds `x` (arange(60) as 3 x 4 x 5, int32) and, for case k,
`mode_k` (0 edge, 1 reflect, 2 wrap), `widths_k` ((before, after) for
each of the last `len(widths_k)` axes) and `want_k`, np.pad's answer.
Widths cross every boundary the copies of views have (0, 1, the axis less
one, the axis, past it: a reflection or wrap that repeats).
"""

import pathlib

import numpy as np

HERE = pathlib.Path(__file__).parent
rng = np.random.default_rng(7)
x = np.arange(60, dtype=np.int32).reshape(3, 4, 5)
MODES = ["edge", "reflect", "wrap"]
out = {"x": x}
k = 0
for m, mode in enumerate(MODES):
    for _ in range(24):
        axes = int(rng.integers(1, 4))
        widths = []
        for a in range(3 - axes, 3):
            n = x.shape[a]
            choices = [0, 1, n - 1, n, n + 1, 2 * n + 1]
            widths.append((int(rng.choice(choices)), int(rng.choice(choices))))
        full = [(0, 0)] * (3 - axes) + widths
        out[f"mode_{k}"] = np.array(m, dtype=np.int32)
        out[f"widths_{k}"] = np.array(widths, dtype=np.int64)
        out[f"want_{k}"] = np.pad(x, full, mode=mode)
        k += 1
np.savez_compressed(HERE / "pad_cases.npz", **out)
print(k, "cases")
