"""Writes torch_resize_cases.npz for tests/conv.rs: PyTorch's
`interpolate` (CPU, f32) of random images at many size ratios, by size
and by scale factor, nearest and bilinear with and without aligned
corners, and bilinear antialiased (`antialias`). Each case `NAME_in` ([2, 1, h, w]) and `NAME_out`; the name says
the mode (`nearest`, `bilinear`, `corners`), whether a size or a factor
was given, and the sizes or factors (`x` between the two axes). Run from
tests/data with `python3 make_resize_cases.py` (PyTorch 2.15 wrote the
committed file)."""
import numpy as np
import torch
import torch.nn.functional as F

rng = np.random.default_rng(11)
cases = {}
MODES = {"nearest": ("nearest", None), "bilinear": ("bilinear", False), "corners": ("bilinear", True),
         "antialias": ("bilinear", False)}

def add(name, x, **kw):
    kind = name.split("_")[0]
    mode, corners = MODES[kind]
    y = F.interpolate(torch.from_numpy(x), mode=mode, align_corners=corners,
                      antialias=kind == "antialias", **kw)
    cases[name + "_in"] = x
    cases[name + "_out"] = y.numpy()

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
np.savez_compressed("torch_resize_cases.npz", **cases)
