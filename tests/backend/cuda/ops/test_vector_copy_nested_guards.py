"""ops/vector_copy.py match_copy: a copy under a user's row check and the bounds check
the compiler adds (two nested `if`s: varlen attention's output store
`if bx * block_M + i < q_current_seqlen: Output[q_start + bx * block_M + i, h, d] = O_shared[i, d]`)
is one guarded copy, moved in 16-byte vectors when both checks hold or fail for whole
vectors; it was a scalar store a thread per element."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tests.backend.cuda.plan.test_copy_forms import _before_after, _notes

ROWS, DIM, TOTAL = 64, 64, 100


def guarded_store():
    @T.prim_func
    def k(G: T.Tensor((ROWS * 2, DIM), "float16"), H: T.Tensor((TOTAL, DIM), "float16"), n_valid: T.int32):
        with T.Kernel(2, threads=128) as bx:
            S = T.alloc_shared((ROWS, DIM), "float16")
            T.copy(G[bx * ROWS:(bx + 1) * ROWS, :], S)
            for i, d in T.Parallel(ROWS, DIM):
                if bx * ROWS + i < n_valid:
                    H[bx * ROWS + i, d] = S[i, d]
    return k


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_nested_guards_are_one_vector_copy(arch):
    assert _notes(_before_after(guarded_store(), arch)[1])[1] == "copy -> vector x8 (16 B)"


def test_on_cpu():
    kern = tilelang.compile(guarded_store(), target="cpu")
    g = (np.arange(ROWS * 2 * DIM).reshape(ROWS * 2, DIM) % 2048).astype(np.float16)
    h = np.zeros((TOTAL, DIM), np.float16)
    kern(g, h, 90)
    np.testing.assert_array_equal(h[:90], g[:90])
    assert not h[90:].any()


@pytest.mark.gpu
def test_on_gpu():
    import torch
    kern = tilelang.compile(guarded_store(), target="cuda")
    g = (torch.arange(ROWS * 2 * DIM, device="cuda").reshape(ROWS * 2, DIM) % 2048).half()
    h = torch.zeros(TOTAL, DIM, device="cuda", dtype=torch.float16)
    kern(g, h, 90)
    torch.testing.assert_close(h[:90], g[:90], rtol=0, atol=0)
    assert not h[90:].any()
