"""Writes torch_resize_f64_cases.npz for tests/conv.rs: PyTorch's
`interpolate` (CPU) of f64 images, whose blending modes work out their
positions and weights in f64, along axes long enough (hundreds of
pixels) that f32 positions are far from f64's. Names as in
make_resize_cases.py (`MODE_size_HxW_OHxOW` or `MODE_factor_HxW_SHxSW`).
No antialiased case has an output axis of one pixel: PyTorch 2.15's CPU
antialias weighs such an axis wrongly. Run from tests/data with
`python3 make_resize_f64_cases.py` (PyTorch 2.15 wrote the committed file)."""
import numpy as np
import torch
import torch.nn.functional as F

rng = np.random.default_rng(5)
cases = {}
MODES = {"nearest": ("nearest", None), "bilinear": ("bilinear", False),
         "corners": ("bilinear", True), "antialias": ("bilinear", False)}


def add(name, x, **kw):
    kind = name.split("_")[0]
    mode, corners = MODES[kind]
    y = F.interpolate(torch.from_numpy(x), mode=mode, align_corners=corners,
                      antialias=kind == "antialias", **kw)
    cases[name + "_in"] = x
    cases[name + "_out"] = y.numpy()


for mode, (h, w), (oh, ow) in [("bilinear", (1, 1000), (1, 1401)),
                               ("bilinear", (2, 300), (3, 701)),
                               ("corners", (1, 300), (2, 899)),
                               ("corners", (3, 817), (2, 300)),
                               ("antialias", (3, 600), (2, 201)),
                               ("antialias", (2, 140), (3, 420)),
                               ("nearest", (1, 600), (1, 999))]:
    add(f"{mode}_size_{h}x{w}_{oh}x{ow}", rng.standard_normal((1, 1, h, w)), size=(oh, ow))
for mode, (h, w), (sh, sw) in [("bilinear", (2, 600), (1.5, 1.37)),
                               ("antialias", (3, 400), (1.0, 0.43))]:
    add(f"{mode}_factor_{h}x{w}_{sh}x{sw}", rng.standard_normal((1, 1, h, w)),
        scale_factor=(sh, sw))
np.savez_compressed("torch_resize_f64_cases.npz", **cases)
