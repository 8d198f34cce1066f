"""The ten puzzles: for each, the function the learner writes, the sizes the checker varies
(passed to the factory as `T.dynamic` sizes, so one compiled kernel is checked on several
ragged shapes), the fixed arguments, how inputs are drawn and what the answer must be."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np


@dataclass(frozen=True)
class Puzzle:
    number: int
    slug: str                    # exercises/p{number:02d}_{slug}.py
    title: str
    entry: str                   # the factory the learner's file defines
    sizes: dict                  # size name -> (low, high) of the random draw
    inputs: Callable             # (rng, sizes, params) -> list of numpy inputs
    reference: Callable          # (inputs, sizes, params) -> expected output (numpy, float64)
    out_dtype: str
    out_tile: Callable           # params -> the output tile a block writes (one entry per output dim)
    params: dict = field(default_factory=dict)   # fixed factory arguments (block sizes, small dims)
    atol: float = 1e-4
    rtol: float = 1e-4

    @property
    def filename(self) -> str:
        return f"p{self.number:02d}_{self.slug}.py"

    def draw_sizes(self, rng, ragged=True) -> dict:
        """Random sizes in each range; with `ragged`, none a multiple of 8, so every tile
        size the puzzle uses leaves a partial tile at the edge."""
        out = {}
        for name, (lo, hi) in self.sizes.items():
            while True:
                v = int(rng.integers(lo, hi + 1))
                if not ragged or v % 8 or hi - lo < 8:
                    break
            out[name] = v
        return out


def _normal(rng, *shape, dtype="float32"):
    return rng.standard_normal(shape).astype(dtype)


def _silu_backward(x, dy):
    s = 1.0 / (1.0 + np.exp(-x))
    return dy * s * (1.0 + x * (1.0 - s))


def _softmax(a):
    e = np.exp(a - a.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _scalar_attention(q, k, v):
    return np.einsum("bij,bj->bi", _softmax(q[:, :, None] * k[:, None, :]), v)


def _conv1d(x, w):
    kw = w.shape[0]
    lo = x.shape[1] - kw + 1
    return sum(np.einsum("blc,cf->blf", x[:, t:t + lo], w[t]) for t in range(kw))


def _pack_int4(q):
    """(N, K) values in 0..15 -> (N, K/2) bytes, even k in the low nibble."""
    return (q[:, 0::2] | (q[:, 1::2] << 4)).astype(np.uint8)


def _dequant_inputs(rng, s, p):
    q = rng.integers(0, 16, (s["N"], p["K"]), dtype=np.uint8)
    scale = (rng.random(s["N"]) * 0.1 + 0.01).astype("float16")
    return [_normal(rng, s["M"], p["K"], dtype="float16"), _pack_int4(q), scale]


def _dequant_reference(x, s, p):
    a, packed, scale = (v.astype(np.float64) if v.dtype != np.uint8 else v for v in x)
    q = np.empty((packed.shape[0], packed.shape[1] * 2), dtype=np.int64)
    q[:, 0::2] = packed & 15
    q[:, 1::2] = packed >> 4
    return a @ ((q - 8) * scale[:, None]).T


def _f64(x):
    return [v.astype(np.float64) for v in x]


PUZZLES = [
    Puzzle(1, "copy", "Copy", "copy", {"N": (1, 300)},
           lambda r, s, p: [_normal(r, s["N"])],
           lambda x, s, p: x[0].astype(np.float64), "float32",
           lambda p: (p["block_N"],), {"block_N": 64}),
    Puzzle(2, "vector_add", "Vector add", "vector_add", {"N": (1, 300)},
           lambda r, s, p: [_normal(r, s["N"]), _normal(r, s["N"])],
           lambda x, s, p: _f64(x)[0] + _f64(x)[1], "float32",
           lambda p: (p["block_N"],), {"block_N": 64}),
    Puzzle(3, "outer_add", "Outer add (broadcasting)", "outer_add", {"M": (1, 70), "N": (1, 100)},
           lambda r, s, p: [_normal(r, s["M"]), _normal(r, s["N"])],
           lambda x, s, p: _f64(x)[0][:, None] + _f64(x)[1][None, :], "float32",
           lambda p: (p["block_M"], p["block_N"]), {"block_M": 16, "block_N": 32}),
    Puzzle(4, "silu_backward", "A backward op: the gradient of SiLU", "silu_backward",
           {"M": (1, 70), "N": (1, 100)},
           lambda r, s, p: [_normal(r, s["M"], s["N"]), _normal(r, s["M"], s["N"])],
           lambda x, s, p: _silu_backward(*_f64(x)), "float32",
           lambda p: (p["block_M"], p["block_N"]), {"block_M": 16, "block_N": 32}),
    Puzzle(5, "row_sum", "Reduction: row sums", "row_sum", {"M": (1, 40), "N": (1, 150)},
           lambda r, s, p: [_normal(r, s["M"], s["N"])],
           lambda x, s, p: _f64(x)[0].sum(axis=1), "float32",
           lambda p: (p["block_M"],), {"block_M": 8, "block_N": 32}),
    Puzzle(6, "softmax", "Softmax over rows", "softmax", {"M": (1, 40), "N": (1, 150)},
           lambda r, s, p: [_normal(r, s["M"], s["N"]) * 3],
           lambda x, s, p: _softmax(_f64(x)[0]), "float32",
           lambda p: (p["block_M"], None), {"block_M": 8, "block_N": 32}),
    Puzzle(7, "scalar_attention", "Scalar flash attention", "scalar_attention", {"B": (1, 4), "S": (1, 120)},
           lambda r, s, p: [_normal(r, s["B"], s["S"]) for _ in range(3)],
           lambda x, s, p: _scalar_attention(*_f64(x)), "float32",
           lambda p: (1, p["block_Q"]), {"block_Q": 16, "block_K": 32}),
    Puzzle(8, "gemm", "GEMM on tensor cores", "gemm", {"M": (1, 100), "N": (1, 100), "K": (1, 100)},
           lambda r, s, p: [_normal(r, s["M"], s["K"], dtype="float16"), _normal(r, s["K"], s["N"], dtype="float16")],
           lambda x, s, p: _f64(x)[0] @ _f64(x)[1], "float32",
           lambda p: (p["block_M"], p["block_N"]), {"block_M": 32, "block_N": 32, "block_K": 32},
           atol=1e-2, rtol=1e-3),
    Puzzle(9, "conv1d", "1-D convolution as GEMMs", "conv1d", {"batch": (1, 3), "L": (3, 90)},
           lambda r, s, p: [_normal(r, s["batch"], s["L"], p["C"], dtype="float16"),
                            _normal(r, p["KW"], p["C"], p["F"], dtype="float16")],
           lambda x, s, p: _conv1d(*_f64(x)), "float32",
           lambda p: (1, p["block_L"], p["block_F"]),
           {"C": 32, "F": 64, "KW": 3, "block_L": 32, "block_F": 32}, atol=1e-2, rtol=1e-3),
    Puzzle(10, "dequant_gemm", "GEMM with 4-bit weights (dequantize on the fly)", "dequant_gemm",
           {"M": (1, 80), "N": (1, 80)}, _dequant_inputs, _dequant_reference, "float32",
           lambda p: (p["block_M"], p["block_N"]), {"K": 80, "block_M": 32, "block_N": 32, "block_K": 32},
           atol=1e-2, rtol=1e-3),
]


def get(number) -> Puzzle:
    for p in PUZZLES:
        if str(p.number) == str(number).lstrip("0") or p.slug == str(number):
            return p
    raise ValueError(f"puzzle: no puzzle {number!r}; `python -m tilelang.puzzles list` shows the ten")
