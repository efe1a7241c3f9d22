"""NumPy's answers for tests/counting.rs (`pip install numpy`):

    python3 tests/data/make_counting_cases.py

searchsorted of sorted rows with runs of equal values, NaN (sorted last),
-0 and +0, infinities, and of values past both ends; digitize with
increasing and decreasing bins, both sides; batched rows searched row by
row (NumPy searches 1-D arrays; PyTorch's batched searchsorted is this).
"""

import pathlib

import numpy as np

HERE = pathlib.Path(__file__).parent
rng = np.random.default_rng(11)
cases = {}

# Floats: runs, signed zeros, infinities and NaN at the end.
sorted_f = np.sort(np.concatenate([
    rng.integers(-20, 20, 300).astype(np.float32) / 4,
    np.array([0.0, -0.0, np.inf, -np.inf, np.nan, np.nan], dtype=np.float32),
]))
values_f = np.concatenate([
    rng.integers(-100, 100, 1000).astype(np.float32) / 8,
    np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e30, -1e30], dtype=np.float32),
])
cases["sorted_f32"] = sorted_f
cases["values_f32"] = values_f
for side in ["left", "right"]:
    cases[f"f32_{side}"] = np.searchsorted(sorted_f, values_f, side=side).astype(np.int64)

# Integers: i64 past 2^53 and i32 runs.
sorted_i64 = np.sort(np.concatenate([
    rng.integers(-(2**62), 2**62, 200, dtype=np.int64),
    np.array([2**53 + 1, 2**53, 2**53 + 1, -(2**63), 2**63 - 1], dtype=np.int64),
]))
values_i64 = np.concatenate([
    rng.integers(-(2**62), 2**62, 500, dtype=np.int64),
    np.array([2**53, 2**53 + 1, 2**53 + 2, -(2**63), 2**63 - 1], dtype=np.int64),
])
cases["sorted_i64"] = sorted_i64
cases["values_i64"] = values_i64
for side in ["left", "right"]:
    cases[f"i64_{side}"] = np.searchsorted(sorted_i64, values_i64, side=side).astype(np.int64)

# Batched rows (7 rows of 33) with 5 values a row.
rows = np.sort(rng.integers(-10, 10, (7, 33)).astype(np.float32), axis=1)
row_values = rng.integers(-12, 12, (7, 5)).astype(np.float32)
cases["rows"] = rows
cases["row_values"] = row_values
for side in ["left", "right"]:
    cases[f"rows_{side}"] = np.stack([np.searchsorted(r, v, side=side) for r, v in zip(rows, row_values)]).astype(np.int64)

# digitize: increasing and decreasing bins, both sides.
x = np.concatenate([rng.uniform(-3, 3, 400), np.arange(-3, 4, 0.5)]).astype(np.float32)
up = np.array([-2.0, -1.0, -1.0, 0.0, 0.5, 2.0], dtype=np.float32)
down = up[::-1].copy()
cases["digitize_x"] = x
cases["bins_up"] = up
cases["bins_down"] = down
for name, bins in [("up", up), ("down", down)]:
    for right in [False, True]:
        cases[f"digitize_{name}_{int(right)}"] = np.digitize(x, bins, right=right).astype(np.int64)

# bincount: counts and f32 weights (NumPy sums them in f64).
ints = rng.integers(0, 50, 5000)
w = rng.uniform(-1, 1, 5000).astype(np.float32)
cases["bincount_x"] = ints.astype(np.int64)
cases["bincount_w"] = w
cases["bincount"] = np.bincount(ints).astype(np.int64)
cases["bincount_min80"] = np.bincount(ints, minlength=80).astype(np.int64)
cases["bincount_weighted"] = np.bincount(ints, weights=w)

# histogram: edges in the data's dtype, values on the edges themselves.
data = np.concatenate([rng.normal(0, 1, 10000), np.linspace(-1, 2.5, 15)]).astype(np.float32)
hw = rng.uniform(0, 2, data.size).astype(np.float32)
cases["hist_data"] = data
cases["hist_w"] = hw
h, e = np.histogram(data, bins=17)
cases["hist_auto"], cases["hist_auto_edges"] = h.astype(np.int64), e
h, e = np.histogram(data, bins=7, range=(-1, 2.5))
cases["hist_range"], cases["hist_range_edges"] = h.astype(np.int64), e
h, _ = np.histogram(data, bins=7, range=(-1, 2.5), weights=hw)
cases["hist_weighted"] = h
h, _ = np.histogram(data, bins=7, range=(-1, 2.5), density=True)
cases["hist_density"] = h

# nonzero, argwhere and masked selection of a 3-D array with NaN (nonzero)
# and -0 (zero).
cube = rng.integers(-2, 3, (4, 5, 6)).astype(np.float32)
cube[0, 0, 0], cube[1, 2, 3], cube[3, 4, 5] = np.nan, -0.0, np.nan
cases["cube"] = cube
cases["cube_argwhere"] = np.argwhere(cube).astype(np.int64)
cases["cube_selected"] = cube[cube > 0]

# unique with every return, NaN and signed zeros among repeats.
u = np.concatenate([rng.integers(-5, 5, 300).astype(np.float32), np.array([np.nan, -0.0, 0.0, np.nan, np.inf], dtype=np.float32)])
u = rng.permutation(u).reshape(5, 61)
values, index, inverse, counts = np.unique(u, return_index=True, return_inverse=True, return_counts=True)
cases["uniq"] = u
cases["uniq_values"], cases["uniq_index"] = values, index.astype(np.int64)
cases["uniq_inverse"], cases["uniq_counts"] = inverse.astype(np.int64), counts.astype(np.int64)
ui = rng.integers(-(2**40), 2**40, 500, dtype=np.int64)
ui = np.concatenate([ui, ui[:100]])
cases["uniq_i64"] = ui
cases["uniq_i64_values"], cases["uniq_i64_counts"] = [a.astype(np.int64) for a in np.unique(ui, return_counts=True)]

# histogram of integers: NumPy's f64 edges against exact integers (e.g.
# np.histogram(np.arange(15), 50)'s edge 25 is 7.000000000000001, so 7 is in
# bin 24), every integer from -2 to 61 on the edges of these bins and
# ranges (None: the data's own ends).
ints = np.arange(-2, 62, dtype=np.int32)
cases["hist_int_data"] = ints
hist_int = []
for bins in [7, 13, 23, 29, 31, 49, 50, 53, 59]:
    for r in [None, (0, 14), (0, 60), (1, 47), (3, 59), (-2, 13.999999999)]:
        h, _ = np.histogram(ints, bins=bins, range=r)
        hist_int.append(h.astype(np.int64))
cases["hist_int_counts"] = np.stack([np.pad(h, (0, 59 - len(h))) for h in hist_int])

# histogram of empty f32 data: the range 0 to 1 is Python floats, the
# edges computed in f64 and rounded to f32.
for bins in [7, 10]:
    cases[f"hist_empty_{bins}_edges"] = np.histogram(np.zeros(0, np.float32), bins)[1]

# histogram of integers past 2^24, which f32 rounds: NumPy bins them
# against its f64 edges, exactly to 2^53. Each case's data, then its counts
# for bins and ranges (None: the data's own ends), named
# hist_big_<case>_<bins>[_<range's ends>][_weighted].
k = np.arange(1000, dtype=np.int64)
big = {
    "i32": np.int32([0, 16777219, 16777217, 16777218, 33554431, -16777219, 7]),
    "i64": (2**40 + (k * 2654435761) % 2**33).astype(np.int64),
    "ends": np.int64([-(2**63), -(2**62), -1, 0, 2**62, 2**63 - 1]),
    "near": np.arange(16777200, 16777240, dtype=np.int64),
}
hist_big = {
    "i32": [(2, None), (5, None), (7, (-16777219, 16777219))],
    "i64": [(7, None), (5, (2**40 + 1e9, 2**40 + 5e9))],
    "ends": [(3, None), (4, None)],
    "near": [(10, (16777205.5, 16777225.5)), (3, (16777201, 16777230))],
}
for name, data in big.items():
    cases[f"hist_big_{name}_data"] = data
    for bins, r in hist_big[name]:
        ends = "" if r is None else f"_{float(r[0])!r}_{float(r[1])!r}"
        cases[f"hist_big_{name}_{bins}{ends}"] = np.histogram(data, bins, r)[0].astype(np.int64)
weights = (k % 5).astype(np.float64) * 0.25
cases["hist_big_i64_weights"] = weights
cases["hist_big_i64_7_weighted"] = np.histogram(big["i64"], 7, weights=weights)[0]
# densities of integers past 2^24: NumPy divides by the widths of its f64
# edges (f32 edges round together there: widths of 0). Each case's data,
# bins and densities, named hist_density_<case>_{data,bins,want}.
dense = {
    "i32": (np.int32([1_000_000_000, 1_000_000_010, 1_000_000_005]), 10),
    "i64": (np.int64([2**40, 2**40 + 4, 2**40 + 1]), 4),
    "wide": (np.int32([-(2**31), 2**31 - 1, 0, 5, 2**30, -7]), 1000),
}
for name, (data, bins) in dense.items():
    cases[f"hist_density_{name}_data"] = data
    cases[f"hist_density_{name}_bins"] = np.int64(bins)
    cases[f"hist_density_{name}_want"] = np.histogram(data, bins, density=True)[0]
# bincount's f64 weights summed in f64 (1e9 + 1 is not an f32).
cases["bincount_f64_w"] = np.array([1e9 + 1, -1e9, 0.1, 3e-8])
cases["bincount_f64_sums"] = np.bincount([0, 0, 1, 1], weights=cases["bincount_f64_w"])

# f16 edges rounded once from f64, as NumPy's linspace(..., dtype) does
# (2049.0001 is 2050; through f32 first it would be 2048): each range's
# counts and edges for [2048, 2050] and its neighbours.
cases["hist_f16_once_data"] = np.float16([2046, 2048, 2050, 2052, 4096])
for i, r in enumerate([(0, 4098.0002), (2047.0001, 2053.0001), (0.0, 6147.0003)]):
    h, e = np.histogram(cases["hist_f16_once_data"], 3 if i == 2 else 2, r)
    cases[f"hist_f16_once_{i}_range"] = np.float64(r)
    cases[f"hist_f16_once_{i}_counts"] = h.astype(np.int64)
    cases[f"hist_f16_once_{i}_edges"] = e

np.savez_compressed(HERE / "counting_cases.npz", **cases)
print(sorted(cases))
