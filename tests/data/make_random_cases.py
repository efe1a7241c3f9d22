"""The counter-based generator's streams, written by an implementation of
Philox4x32-10 of its own (checked against Random123's published answers),
for tests/random.rs (`pip install numpy`):

    python3 tests/data/make_random_cases.py

A draw takes whole 128-bit blocks from the generator's offset on: block b
is Philox4x32-10 of the counter (b low word, b high word, 0, 0) under the
key (seed low word, seed high word). Element i of a draw takes word w*i
on (w = 1, or 2 for 64-bit integers and f64, the first word the low one).
What each element is, from its words, is written here with exact integer
and float64 arithmetic: the test compares webtensor's draws with it
exactly (bits, uniforms, integers, Bernoulli trials, derived seeds) or
within a few ulps (normals, which the library computes in f32 with fixed
polynomials: these are float64 Box-Muller of the same words).
"""

import pathlib

import numpy as np

HERE = pathlib.Path(__file__).parent
MASK = 0xFFFFFFFF


def philox(counter, key):
    """Philox4x32-10 of four-word counters (an (n, 4) array) under a key."""
    c = [counter[:, k].astype(np.uint64) for k in range(4)]
    k0, k1 = np.uint64(key[0]), np.uint64(key[1])
    for r in range(10):
        if r:
            k0 = (k0 + np.uint64(0x9E3779B9)) & np.uint64(MASK)
            k1 = (k1 + np.uint64(0xBB67AE85)) & np.uint64(MASK)
        p0 = np.uint64(0xD2511F53) * c[0]
        p1 = np.uint64(0xCD9E8D57) * c[2]
        c = [
            (p1 >> np.uint64(32)) ^ c[1] ^ k0,
            p1 & np.uint64(MASK),
            (p0 >> np.uint64(32)) ^ c[3] ^ k1,
            p0 & np.uint64(MASK),
        ]
    return np.stack(c, axis=1).astype(np.uint32)


KAT = [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((MASK,) * 4, (MASK,) * 2, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
     (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
]
for ctr, key, want in KAT:
    assert tuple(philox(np.array([ctr], dtype=np.uint64), key)[0]) == want


def key_of(seed):
    return (seed & MASK, seed >> 32)


def words(seed, offset, count):
    """`count` words of seed's stream from block `offset` on."""
    blocks = -(-count // 4)
    b = np.arange(offset, offset + blocks, dtype=np.uint64)
    ctr = np.stack([b & np.uint64(MASK), b >> np.uint64(32), 0 * b, 0 * b], axis=1)
    return philox(ctr, key_of(seed)).reshape(-1)[:count]


def wide(w):
    """Pairs of words as 64-bit values (Python ints), the first word low."""
    return [int(lo) | int(hi) << 32 for lo, hi in zip(w[0::2], w[1::2])]


cases = {}
SEED = 0x0123_4567_89AB_CDEF
N = 4099  # crosses quads, workgroups and the CPU's pieces
cases["seed_words"] = np.array(key_of(SEED), dtype=np.uint32)
cases["bits"] = words(SEED, 0, N)
cases["bits_offset"] = words(SEED, 1000, N)
# Uniforms: k 2^-bits of the word's top bits.
cases["rand_f32"] = ((words(SEED, 0, N) >> 8).astype(np.float64) * 2.0**-24).astype(np.float32)
cases["rand_f16"] = ((words(SEED, 0, N) >> 21).astype(np.float64) * 2.0**-11).astype(np.float16)
cases["rand_bf16_as_f32"] = ((words(SEED, 0, N) >> 24).astype(np.float64) * 2.0**-8).astype(np.float32)
cases["rand_f64"] = np.array([(x >> 11) * 2.0**-53 for x in wide(words(SEED, 0, 2 * N))])
# Normals: Box-Muller of word pairs, the radius's u = (2k + 1) 2^-24 of the
# first word's top 23 bits, the angle's turn (w >> 8) 2^-24 of the second.
w = words(SEED, 0, N + 1).astype(np.float64)
u1 = (np.floor(w[0::2] / 512) * 2 + 1) * 2.0**-24
t = np.floor(w[1::2] / 256) * 2.0**-24 * 2 * np.pi
r = np.sqrt(-2 * np.log(u1))
cases["randn_f64_reference"] = np.stack([r * np.cos(t), r * np.sin(t)], axis=1).reshape(-1)[:N]
# f64 normals (the CPU's f64, two words an element): Box-Muller of pairs of
# 64-bit values, the radius's u = (2k + 1) 2^-53 of the first value's top
# 52 bits, the angle's turn (x >> 11) 2^-53 of the second.
x = wide(words(SEED, 0, 2 * (N + 1)))
u1 = np.array([((v >> 12) * 2 + 1) * 2.0**-53 for v in x[0::2]])
t = np.array([(v >> 11) * 2.0**-53 for v in x[1::2]]) * 2 * np.pi
r = np.sqrt(-2 * np.log(u1))
cases["randn_f64_stream"] = np.stack([r * np.cos(t), r * np.sin(t)], axis=1).reshape(-1)[:N]
# Integers: low + floor(x span / 2^64).
for name, low, high in [("int_dice", 1, 7), ("int_wide", -(2**31), 2**31), ("int_i64", -(2**63), 2**63 - 1),
                        ("int_odd", -(2**63), -(2**63) + 0x9E3779B97F4A7C15)]:
    x = wide(words(SEED, 0, 2 * N))
    cases[name] = np.array([low + ((v * (high - low)) >> 64) for v in x], dtype=np.int64)
    cases[name + "_range"] = np.array([low, high], dtype=np.int64)
# Bernoulli: word < ceil(p 2^32).
for name, p in [("bernoulli_third", 1 / 3), ("bernoulli_tiny", 1e-9)]:
    threshold = int(np.ceil(p * 2.0**32))
    cases[name] = (words(SEED, 0, N).astype(np.uint64) < threshold).astype(np.uint8)
# Derived seeds: split at offset 5 gives child j the first two words of
# Philox4x32-10 of (5, 0, j, 1).
ctr = np.array([[5, 0, j, 1] for j in range(3)], dtype=np.uint64)
out = philox(ctr, key_of(SEED))
cases["split_seed_words"] = out[:, :2].astype(np.uint32)

np.savez_compressed(HERE / "random_cases.npz", **cases)
print({k: v.shape for k, v in cases.items()})
