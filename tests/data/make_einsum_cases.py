"""einsum cases and NumPy's answers (float64, rounded to f32), for
tests/einsum.rs (`pip install numpy`):

    python3 tests/data/make_einsum_cases.py

Writes einsum_cases.npz: for case k, `k_subscripts` (the string's bytes),
`k_n` (its operand count), `k_op0`, `k_op1` ... (f32) and `k_out`; and
tensordot cases `tdk_a`, `tdk_b`, `tdk_axes_a`, `tdk_axes_b`, `tdk_out`.
"""

import pathlib

import numpy as np

HERE = pathlib.Path(__file__).parent
rng = np.random.default_rng(3)

CASES = [
    ("ij,jk->ik", [(3, 4), (4, 5)]),
    ("ij,jk", [(3, 4), (4, 5)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("ii->", [(4, 4)]),
    ("ii", [(5, 5)]),
    ("ii->i", [(4, 4)]),
    ("ij->ji", [(3, 5)]),
    ("ij->", [(3, 5)]),
    ("ijk->kj", [(2, 3, 4)]),
    ("i,j->ij", [(3,), (4,)]),
    ("i,i->", [(7,), (7,)]),
    ("i,i", [(1,), (6,)]),
    ("ij,ij->ij", [(3, 4), (3, 4)]),
    ("ij,kj->ik", [(3, 4), (5, 4)]),
    ("abc,bcd,de->ae", [(3, 4, 5), (4, 5, 6), (6, 2)]),
    ("ij,jk,kl,lm->im", [(2, 3), (3, 4), (4, 5), (5, 2)]),
    ("...ij,...jk->...ik", [(2, 3, 4), (2, 4, 5)]),
    ("...ij,...jk", [(3, 1, 2, 4), (5, 4, 3)]),
    ("i...->...", [(3, 2, 4)]),
    ("iij->ij", [(3, 3, 4)]),
    ("iji->j", [(3, 4, 3)]),
    ("ab,ba->", [(4, 5), (5, 4)]),
    ("Ba,ab", [(2, 3), (3, 2)]),
    ("bA", [(2, 3)]),
    ("i,jk,l->lkji", [(2,), (3, 1), (2,)]),
    ("ij,j->i", [(6, 33), (33,)]),
    ("bhqd,bhkd->bhqk", [(2, 3, 5, 8), (2, 3, 7, 8)]),
    # The smallest pair's contraction (an outer product) has 10 axes, past
    # a tensor's 8: another pair goes first.
    ("abcde,fghij,abcdek,fghijk->", [(2, 2, 2, 1, 1), (2, 1, 2, 1, 2), (2, 2, 2, 1, 1, 70), (2, 1, 2, 1, 2, 70)]),
    ("abcd,efgh,ijkl,abcdefgh,ijkl->", [(1, 1, 1, 1), (1, 1, 1, 1), (1, 2, 1, 1), (1, 1, 1, 1, 1, 1, 1, 2), (1, 2, 1, 1)]),
]
out = {}
for k, (subs, shapes) in enumerate(CASES):
    ops = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    res = np.einsum(subs, *[o.astype(np.float64) for o in ops])
    out[f"{k}_subscripts"] = np.frombuffer(subs.encode(), dtype=np.uint8)
    out[f"{k}_n"] = np.array([len(ops)], dtype=np.int32)
    for i, o in enumerate(ops):
        out[f"{k}_op{i}"] = o
    out[f"{k}_out"] = np.asarray(res, dtype=np.float32)
TENSORDOT = [
    ((3, 4), (4, 5), [1], [0]),
    ((2, 3, 4), (4, 3, 5), [1, 2], [1, 0]),
    ((2, 3), (3, 2), [0, 1], [1, 0]),
    ((3,), (4,), [], []),
    ((5, 2, 3), (3, 2), [-1, -2], [0, 1]),
]
for k, (sa, sb, xa, xb) in enumerate(TENSORDOT):
    a = rng.standard_normal(sa).astype(np.float32)
    b = rng.standard_normal(sb).astype(np.float32)
    out[f"td{k}_a"], out[f"td{k}_b"] = a, b
    out[f"td{k}_axes_a"] = np.array(xa, dtype=np.int64)
    out[f"td{k}_axes_b"] = np.array(xb, dtype=np.int64)
    res = np.tensordot(a.astype(np.float64), b.astype(np.float64), axes=(xa, xb))
    out[f"td{k}_out"] = np.asarray(res, dtype=np.float32)
np.savez(HERE / "einsum_cases.npz", **out)
print(len(CASES), "cases")
