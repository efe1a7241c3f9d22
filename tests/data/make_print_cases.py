"""Writes numpy_print_cases.txt: arrays of every float dtype, drawn to cross
each of NumPy's printing rules (positional or scientific, the cut-offs per
dtype, digits past the shortest, summaries, 0-d values), with NumPy's own
`str` of each. tests/printing.rs prints the same arrays with webtensor and
compares digit for digit. Run from tests/data with `python3
make_print_cases.py` (NumPy 2.4 wrote the committed file).

One case a line, tab-separated: dtype, shape (comma-separated, empty for
0-d), the values' bits in hex (comma-separated; c64 its parts' f32 bits,
interleaved; integers two's complement, bools 00 or 01), and NumPy's `str` with each newline written as `|`."""
import numpy as np

rng = np.random.default_rng(26)
DTYPES = {"f16": np.float16, "f32": np.float32, "f64": np.float64}
BITS = {"f16": np.uint16, "f32": np.uint32, "f64": np.uint64}
# The boundaries NumPy's rules turn on, and a hair either side of each.
EDGES = [1e-4, 1e3, 1e6, 1e8, 1e16, 1000.0, 1.0, 0.5, 65504.0, 1e-45, 1e-8]


def magnitudes(n, dt):
    info = np.finfo(dt)
    lo, hi = np.log10(float(info.smallest_subnormal)), np.log10(float(info.max))
    return 10.0 ** rng.uniform(lo, hi, n)


def draw(dt, n):
    kind = rng.integers(0, 9)
    if kind == 0:  # any magnitude
        v = magnitudes(n, dt)
    elif kind == 1:  # one decade, a few digits
        v = np.round(rng.uniform(-1, 1, n), rng.integers(0, 6)) * 10.0 ** rng.integers(-9, 10)
    elif kind == 2:  # integers
        v = rng.integers(-100000, 100000, n).astype(np.float64) * 10.0 ** rng.integers(0, 4)
    elif kind == 3:  # near one of the cut-offs
        e = rng.choice(EDGES)
        v = e * (1.0 + rng.choice([-1, 0, 1], n) * 10.0 ** -rng.integers(2, 8, n))
    elif kind == 4:  # with specials
        v = rng.normal(0, 10.0 ** rng.integers(-6, 9), n)
        v[rng.integers(0, n)] = rng.choice([np.nan, np.inf, -np.inf, -0.0, 0.0])
    elif kind == 5:  # a wide ratio
        v = np.array([rng.uniform(1, 9), rng.uniform(1, 9) * 10.0 ** rng.integers(1, 6)] * n)[:n]
    elif kind == 6:  # fractions of many digits
        v = rng.uniform(-1, 1, n) * 10.0 ** rng.integers(-4, 4)
    elif kind == 7:  # subnormals and tiny values
        v = float(np.finfo(dt).smallest_subnormal) * rng.integers(1, 2000, n)
    else:  # a random sign on any magnitude
        v = magnitudes(n, dt) * rng.choice([-1, 1], n)
    v = np.asarray(v, dtype=np.float64)
    if kind != 4:  # only the specials case overflows on purpose
        with np.errstate(over="ignore"):
            v = np.where(np.isfinite(v.astype(dt)), v, magnitudes(n, dt))
    with np.errstate(over="ignore"):
        return v.astype(dt)


lines = []
for name, dt in DTYPES.items():
    for case in range(400):
        shape = [(), (1,), (2,), (3,), (5,), (2, 3), (7,)][case % 7]
        if case % 100 == 99:
            shape = (1001,)  # summarised
        n = int(np.prod(shape)) if shape else 1
        a = draw(dt, n).reshape(shape)
        bits = a.view(BITS[name]).reshape(-1)
        width = {"f16": 4, "f32": 8, "f64": 16}[name]
        lines.append("\t".join([
            name,
            ",".join(str(d) for d in shape),
            ",".join(f"{int(b):0{width}x}" for b in bits),
            str(a).replace("\n", "|"),
        ]))

LINE_BITS = {**BITS, "c64": np.uint32, "i32": np.uint32, "i64": np.uint64, "u32": np.uint32}


def line(name, a):
    """One case line for array `a` of dtype `name` (c64: its real and
    imaginary parts' f32 bits, interleaved)."""
    bits = a.view(LINE_BITS.get(name, np.uint8)).reshape(-1)
    width = {"f16": 4, "f32": 8, "f64": 16, "c64": 8, "i32": 8, "i64": 16, "u32": 8}.get(name, 2)
    return "\t".join([
        name,
        ",".join(str(d) for d in a.shape),
        ",".join(f"{int(b):0{width}x}" for b in bits),
        str(a).replace("\n", "|"),
    ])


# Powers of two in scientific columns: their shortest digits can round up
# where the exact digits tie at the same length (f16 2^-6 is 1.563e-02, its
# exact 0.015625 rounds to 1.562), and a wider column prints exact digits.
# Drawn from no generator, so the random cases above stay as they were.
EXPONENTS = {"f16": range(-24, 16), "f32": range(-149, 128), "f64": range(-1074, 1024, 7)}
for name, es in EXPONENTS.items():
    dt = DTYPES[name]
    for e in es:
        p = dt(2.0**e)
        lines.append(line(name, np.array([p, dt(1000)], dtype=dt)))
        lines.append(line(name, np.array([-p, dt(3), dt(1.1253e-4)], dtype=dt)))
for e in range(-149, 128, 2):
    p = np.float32(2.0**e)
    lines.append(line("c64", np.array([p + 1j, 1 - p * 1j, 1000], dtype=np.complex64)))

# Integers, bools and complex64 of every shape kind, long rows wrapping at
# NumPy's 75 characters, summaries; from a generator of their own, so the
# cases above stay as they were.
more = np.random.default_rng(27)
INTS = {"i32": np.int32, "i64": np.int64, "u32": np.uint32, "u8": np.uint8}
for case in range(240):
    shape = [(), (1,), (4,), (2, 3), (30,), (3, 1, 12), (2, 2, 2, 2), (1200,)][case % 8]
    n = int(np.prod(shape)) if shape else 1
    kind = ["i32", "i64", "u32", "u8", "bool", "c64"][case % 6]
    if kind == "bool":
        a = more.random(n) < 0.5
    elif kind == "c64":
        scale = 10.0 ** more.integers(-6, 9)
        a = (more.normal(0, scale, n) + 1j * more.normal(0, scale, n)).astype(np.complex64)
        if case % 5 == 0:
            a[more.integers(0, n)] = complex(more.choice([np.nan, np.inf, -np.inf]), -0.0)
    else:
        info = np.iinfo(INTS[kind])
        top = [10, 1000, int(info.max)][more.integers(0, 3)]
        lo = max(int(info.min), -top)
        a = more.integers(lo, top, n, dtype=np.int64, endpoint=True).astype(INTS[kind])
    lines.append(line(kind, a.reshape(shape)))

with open("numpy_print_cases.txt", "w") as f:
    f.write("\n".join(lines) + "\n")
