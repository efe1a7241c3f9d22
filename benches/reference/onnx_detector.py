"""onnxruntime beside `cargo bench --bench networks` (issue 47 item 5).

Builds the MobileNetV3 + DBNet detector of benches/detector/mod.rs as an
ONNX graph (opset 17) from the weights that bench saved, with the same
input, checks that onnxruntime's probability map agrees with webtensor's
to f32 tolerance, and times onnxruntime on one thread and on two (runs
alternating; the median and fastest of --reps each).

Run, after the bench: `python3 benches/reference/onnx_detector.py`
(it installs numpy, onnx and onnxruntime with pip when they are missing,
into a virtual environment under target/networks when pip may not install
into this Python). Keep the graph in step with benches/detector/mod.rs.
"""
import argparse
import json
import os
import subprocess
import sys
import time

PACKAGES = ["numpy", "onnx", "onnxruntime"]


def ensure_packages():
    try:
        import numpy  # noqa: F401
        import onnx  # noqa: F401
        import onnxruntime  # noqa: F401
        return
    except ImportError:
        pass
    if os.environ.get("WEBTENSOR_NET_VENV") == "1":
        sys.exit("numpy, onnx and onnxruntime are still missing in the virtual environment")
    pip = [sys.executable, "-m", "pip", "install", "--quiet", *PACKAGES]
    if subprocess.call(pip) == 0:
        os.execv(sys.executable, [sys.executable, *sys.argv])
    venv = os.path.join("target", "networks", "venv")
    python = os.path.join(venv, "bin", "python")
    if not os.path.exists(python):
        subprocess.check_call([sys.executable, "-m", "venv", venv])
    subprocess.check_call([python, "-m", "pip", "install", "--quiet", *PACKAGES])
    os.environ["WEBTENSOR_NET_VENV"] = "1"
    os.execv(python, [python, *sys.argv])


ensure_packages()

import numpy as np  # noqa: E402
import onnx  # noqa: E402
import onnxruntime as ort  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

# benches/detector/mod.rs's BLOCKS: (cin, exp, cout, k, stride, se, hardswish).
BLOCKS = [
    (16, 16, 16, 3, 1, False, False),
    (16, 32, 24, 3, 2, False, False),
    (24, 40, 24, 3, 1, False, False),
    (24, 40, 40, 5, 2, True, False),
    (40, 64, 40, 5, 1, True, False),
    (40, 120, 48, 3, 2, False, True),
    (48, 100, 48, 3, 1, False, True),
    (48, 240, 56, 3, 1, True, True),
    (56, 336, 80, 5, 2, True, True),
    (80, 480, 80, 5, 1, True, True),
    (80, 480, 96, 5, 1, True, True),
]
TAPS = [2, 4, 7, 10]


def read_safetensors(path):
    """The f32 tensors of a safetensors file, by name (the format is a
    little-endian u64 header length, a JSON header, then the data)."""
    with open(path, "rb") as f:
        raw = f.read()
    n = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8 : 8 + n])
    data = raw[8 + n :]
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        assert info["dtype"] == "F32", (name, info["dtype"])
        lo, hi = info["data_offsets"]
        out[name] = np.frombuffer(data[lo:hi], dtype="<f4").reshape(info["shape"])
    return out


class Graph:
    def __init__(self, weights):
        self.weights = weights
        self.nodes = []
        self.inits = {}
        self.count = 0

    def name(self, base):
        self.count += 1
        return f"{base}_{self.count}"

    def init(self, name, value=None):
        if name not in self.inits:
            v = self.weights[name] if value is None else value
            self.inits[name] = numpy_helper.from_array(np.ascontiguousarray(v), name)
        return name

    def node(self, op, inputs, **attrs):
        out = self.name(op.lower())
        self.nodes.append(helper.make_node(op, inputs, [out], **attrs))
        return out

    def conv(self, x, prefix, stride=1, pad=0, groups=1, bias=False):
        w = self.weights[f"{prefix}.weight"]
        k = w.shape[-1]
        inputs = [x, self.init(f"{prefix}.weight")]
        if bias:
            inputs.append(self.init(f"{prefix}.bias"))
        return self.node(
            "Conv", inputs, kernel_shape=[k, k], strides=[stride, stride],
            pads=[pad] * 4, group=groups,
        )

    def bn(self, x, prefix):
        names = [self.init(f"{prefix}.{p}") for p in ("weight", "bias", "mean", "var")]
        return self.node("BatchNormalization", [x, *names], epsilon=1e-5)

    def conv_bn(self, x, prefix, act, **conv):
        y = self.bn(self.conv(x, f"{prefix}.conv", **conv), f"{prefix}.bn")
        if act is None:
            return y
        return self.node("HardSwish" if act else "Relu", [y])

    def up(self, x, f):
        scales = self.init(f"scales{f}", np.array([1, 1, f, f], dtype=np.float32))
        return self.node(
            "Resize", [x, "", scales], mode="nearest",
            coordinate_transformation_mode="asymmetric", nearest_mode="floor",
        )

    def transposed(self, x, prefix):
        inputs = [x, self.init(f"{prefix}.weight"), self.init(f"{prefix}.bias")]
        return self.node("ConvTranspose", inputs, kernel_shape=[2, 2], strides=[2, 2])


def build(weights, size):
    g = Graph(weights)
    x = g.conv_bn("input", "stem", True, stride=2, pad=1)
    taps = []
    for i, (cin, exp, cout, k, stride, se, hs) in enumerate(BLOCKS):
        p = f"blocks.{i}"
        h = g.conv_bn(x, f"{p}.expand", hs) if exp != cin else x
        h = g.conv_bn(h, f"{p}.depthwise", hs, stride=stride, pad=k // 2, groups=exp)
        if se:
            s = g.node("GlobalAveragePool", [h])
            s = g.node("Relu", [g.conv(s, f"{p}.se.reduce", bias=True)])
            s = g.node("HardSigmoid", [g.conv(s, f"{p}.se.expand", bias=True)],
                       alpha=1.0 / 6.0, beta=0.5)
            h = g.node("Mul", [h, s])
        h = g.conv_bn(h, f"{p}.project", None)
        if stride == 1 and cin == cout:
            h = g.node("Add", [h, x])
        x = h
        if i in TAPS:
            taps.append(x)
    inner = [g.conv(t, f"fpn.inner.{s}") for s, t in enumerate(taps)]
    merged = [inner[3]]
    for s in (2, 1, 0):
        merged.append(g.node("Add", [inner[s], g.up(merged[-1], 2)]))
    merged.reverse()
    fused = []
    for s, m in enumerate(merged):
        p = g.conv(m, f"fpn.out.{s}", pad=1)
        fused.append(p if s == 0 else g.up(p, 1 << s))
    h = g.node("Concat", fused, axis=1)
    h = g.node("Relu", [g.bn(g.conv(h, "head.conv", pad=1), "head.bn1")])
    h = g.node("Relu", [g.bn(g.transposed(h, "head.up1"), "head.bn2")])
    h = g.node("Sigmoid", [g.transposed(h, "head.up2")])
    g.nodes[-1].output[0] = "output"
    graph = helper.make_graph(
        g.nodes, "detector",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, size, size])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 1, size, size])],
        list(g.inits.values()),
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    return model


def session(model, threads):
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    return ort.InferenceSession(
        model.SerializeToString(), opts, providers=["CPUExecutionProvider"]
    )


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("file", nargs="?", default="target/networks/detector.safetensors")
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    t = read_safetensors(args.file)
    image, theirs = t.pop("input"), t.pop("output")
    size = image.shape[-1]
    model = build(t, size)
    print(f"detector {size}x{size}: {len(model.graph.node)} ONNX nodes, "
          f"onnxruntime {ort.__version__}, {args.reps} runs alternating")
    sessions = {n: session(model, n) for n in (1, 2)}
    ours = {n: s.run(None, {"input": image})[0] for n, s in sessions.items()}
    for n, out in ours.items():
        diff = float(np.abs(out - theirs).max())
        print(f"  {n} thread(s): largest difference from webtensor's output {diff:.2e}")
        if not diff <= 1e-4:
            sys.exit(f"onnxruntime and webtensor disagree by {diff}")
    times = {n: [] for n in sessions}
    for _ in range(args.reps):
        for n, s in sessions.items():
            start = time.perf_counter()
            s.run(None, {"input": image})
            times[n].append(time.perf_counter() - start)
    for n, ts in times.items():
        ts.sort()
        print(f"  {n} thread(s): median {ts[len(ts) // 2] * 1e3:8.1f} ms, "
              f"fastest {ts[0] * 1e3:8.1f} ms")


if __name__ == "__main__":
    main()
