"""emit/kernel.py `_pair_store`: a gemm accumulator added atomically into a global tensor,
`T.atomic_add(G[.., j], acc[i, j])`, goes out as one vector atomic per register pair
(columns j, j + 1 of one row: `AtomicAddx2`, REDG.E.ADD.F32x2 on sm_90), under any number
of nested row guards (the varlen FlashAttention backward), and stays scalar where the pair
is not two aligned neighbours. The generated source is checked (no NVRTC needed)."""
import pytest

import tilelang.language as T
from tilelang.backend.registry import get_backend


def acc_atomic(dtype="float32", col_offset=0, guards=2, n=64, extra=2):
    @T.prim_func
    def k(A: T.Tensor((64, 32), "float16"), B: T.Tensor((32, n), "float16"), G: T.Tensor((100, n + extra), dtype),
          rows: T.int32):
        with T.Kernel(1, threads=128) as _:
            a_s = T.alloc_shared((64, 32), "float16")
            b_s = T.alloc_shared((32, n), "float16")
            acc = T.alloc_fragment((64, n), "float32")
            T.copy(A, a_s)
            T.copy(B, b_s)
            T.clear(acc)
            T.gemm(a_s, b_s, acc)
            for i, j in T.Parallel(64, n):
                if guards >= 1:
                    if i < rows:
                        if guards >= 2:
                            if i + 8 < 100:
                                T.atomic_add(G[i + 8, j + col_offset], acc[i, j])
                        else:
                            T.atomic_add(G[i + 8, j + col_offset], acc[i, j])
                else:
                    T.atomic_add(G[i + 8, j + col_offset], acc[i, j])
    return k


def _source(func, arch="sm_90a"):
    return get_backend("cuda").generate(func, {"kind": "cuda", "arch": arch})[1]


@pytest.mark.parametrize("guards", [0, 1, 2])
def test_float_pairs_under_guards(guards):
    src = _source(acc_atomic(guards=guards))
    assert "AtomicAddx2(&G[" in src and "AtomicAdd(&G[" not in src, src


def test_half_pairs():
    src = _source(acc_atomic("float16"))
    assert "AtomicAddx2(&G[" in src and "AtomicAdd(&G[" not in src, src


def test_odd_column_or_sm80_stays_scalar():
    assert "AtomicAddx2" not in _source(acc_atomic(col_offset=1))   # a pair at an odd column: unaligned
    assert "AtomicAddx2" not in _source(acc_atomic(extra=1))        # odd rows: every other row unaligned
    assert "AtomicAddx2" not in _source(acc_atomic(), "sm_80")
