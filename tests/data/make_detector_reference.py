"""onnxruntime's probability map for tests/network.rs: the detector of
benches/detector/mod.rs at 64x64, built as an ONNX graph by
benches/reference/onnx_detector.py from the weights and input the bench
saves (seeded: webtensor's `Tensor::rand` makes the same values on every
device). Writes tests/data/onnx_detector_64.npy. Run from the repository
root:

    WEBTENSOR_NET_SIZE=64 WEBTENSOR_NET_REPS=1 cargo bench --bench networks
    python3 tests/data/make_detector_reference.py
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "benches", "reference"))
import onnx_detector as od  # noqa: E402

t = od.read_safetensors("target/networks/detector.safetensors")
image = t.pop("input")
t.pop("output")
assert image.shape == (1, 3, 64, 64), image.shape
model = od.build(t, 64)
out = od.session(model, 1).run(None, {"input": image})[0]
od.np.save(os.path.join(os.path.dirname(__file__), "onnx_detector_64.npy"), out)
print("wrote onnx_detector_64.npy", out.shape, float(out.mean()))
