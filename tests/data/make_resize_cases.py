"""Writes torch_resize_cases.npz for tests/conv.rs: PyTorch's
`interpolate` (CPU, f32) of random images at many size ratios, by size
and by scale factor, nearest and bilinear with and without aligned
corners, and bilinear antialiased (`antialias`). Each case `NAME_in` ([2, 1, h, w]) and `NAME_out`; the name says
the mode (`nearest`, `bilinear`, `corners`), whether a size or a factor
was given, and the sizes or factors (`x` between the two axes).

Also torch_resize_f64_cases.npz: f64 images, whose blending modes
PyTorch works out in f64, along axes long enough (hundreds of pixels)
that f32 positions are far from f64's. No antialiased case there has an
output axis of one pixel: PyTorch 2.15's CPU antialias weighs such an
axis wrongly. Run from tests/data with `python3 make_resize_cases.py`
(PyTorch 2.15 wrote the committed files)."""
import numpy as np
import torch
import torch.nn.functional as F

rng = np.random.default_rng(11)
cases = {}
MODES = {"nearest": ("nearest", None), "bilinear": ("bilinear", False), "corners": ("bilinear", True),
         "antialias": ("bilinear", False)}

def add(name, x, into=cases, **kw):
    kind = name.split("_")[0]
    mode, corners = MODES[kind]
    y = F.interpolate(torch.from_numpy(x), mode=mode, align_corners=corners,
                      antialias=kind == "antialias", **kw)
    into[name + "_in"] = x
    into[name + "_out"] = y.numpy()

SIZES = [((1, 14), (1, 46)), ((7, 5), (3, 9)), ((14, 16), (46, 28)), ((5, 3), (10, 6)),
         ((31, 2), (33, 64)), ((3, 7), (3, 7)), ((16, 9), (7, 4)), ((1, 1), (4, 3)),
         ((10, 13), (20, 27)), ((23, 40), (17, 100))]
FACTORS = [((10, 10), (2.01, 0.5)), ((7, 9), (1.7, 2.5)), ((13, 6), (0.3, 3.0)),
           ((20, 11), (1.01, 1.9))]
for mode in MODES:
    for (h, w), (oh, ow) in SIZES:
        x = rng.standard_normal((2, 1, h, w)).astype(np.float32)
        add(f"{mode}_size_{h}x{w}_{oh}x{ow}", x, size=(oh, ow))
    if mode == "corners":
        continue  # a factor with aligned corners: PyTorch uses the sizes
    for (h, w), (sh, sw) in FACTORS:
        x = rng.standard_normal((2, 1, h, w)).astype(np.float32)
        add(f"{mode}_factor_{h}x{w}_{sh}x{sw}", x, scale_factor=(sh, sw))
# Antialiased windows past the GPU kernel's 64 taps (a scale of 66), and
# large even and odd factors down.
for (h, w), (oh, ow) in [((200, 9), (3, 2)), ((64, 64), (16, 16)), ((45, 91), (4, 13))]:
    x = rng.standard_normal((2, 1, h, w)).astype(np.float32)
    add(f"antialias_size_{h}x{w}_{oh}x{ow}", x, size=(oh, ow))
# Non-finite pixels: PyTorch's blend multiplies every tap by its weight,
# so an infinity next to a pixel weighted 0 still gives NaN there.
x = np.array([[[[1.0, np.inf, 3.0, 4.0], [np.nan, 1.0, -np.inf, 2.0]]]], np.float32)
add("bilinear_size_2x4_3x8", x, size=(3, 8))
add("corners_size_2x4_2x7", x, size=(2, 7))
add("nearest_size_2x4_5x9", x, size=(5, 9))
# An antialiased axis of unchanged length is left alone (no NaN from inf).
add("antialias_size_2x4_2x3", x, size=(2, 3))
# Factors whose output is as long as the input, or twice as long, on
# outputs past 128 rows and columns together, where PyTorch's nearest
# takes floor(i / scale) with no shortcut (its generic path), and one at
# 124 that keeps them (its fast path).
late_rng = np.random.default_rng(12)
for mode in ["nearest", "bilinear"]:
    for (h, w), (sh, sw) in [((100, 3), (2.005, 1.0)), ((3, 100), (1.2, 1.5)),
                             ((60, 4), (2.005, 1.0)), ((64, 3), (1.0, 2.2))]:
        x = late_rng.standard_normal((2, 1, h, w)).astype(np.float32)
        add(f"{mode}_factor_{h}x{w}_{sh}x{sw}", x, scale_factor=(sh, sw))
np.savez_compressed("torch_resize_cases.npz", **cases)

# f64 images (torch_resize_f64_cases.npz).
wide_rng = np.random.default_rng(5)
wide = {}
for mode, (h, w), (oh, ow) in [("bilinear", (1, 1000), (1, 1401)),
                               ("bilinear", (2, 300), (3, 701)),
                               ("corners", (1, 300), (2, 899)),
                               ("corners", (3, 817), (2, 300)),
                               ("antialias", (3, 600), (2, 201)),
                               ("antialias", (2, 140), (3, 420)),
                               ("nearest", (1, 600), (1, 999))]:
    add(f"{mode}_size_{h}x{w}_{oh}x{ow}", wide_rng.standard_normal((1, 1, h, w)), size=(oh, ow), into=wide)
for mode, (h, w), (sh, sw) in [("bilinear", (2, 600), (1.5, 1.37)),
                               ("antialias", (3, 400), (1.0, 0.43))]:
    add(f"{mode}_factor_{h}x{w}_{sh}x{sw}", wide_rng.standard_normal((1, 1, h, w)),
        scale_factor=(sh, sw), into=wide)
np.savez_compressed("torch_resize_f64_cases.npz", **wide)
