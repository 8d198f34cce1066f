"""plan/copy_forms.py: a global -> shared tile copy outside a pipeline with more 16-byte
vectors per thread than the printer unrolls runs as `cp.async + wait` (every copy of the
thread in flight, one wait), not as loads and stores that ptxas waits for four at a time
(`example_mha_fwd_bshd`'s 128 x 128 K/V tiles in a num_stages=1 loop, 16 vectors a
thread). Copies whose loads are all in flight already, and those in a cp.async
pipeline's body (whose groups the wait would drain), keep the vector form."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tests.backend.cuda.conftest import needs_sass
from tests.backend.cuda.helpers import build
from tests.backend.cuda.plan.test_copy_forms import _before_after, _notes


def tile_copy(rows, cols=128, threads=128, n=2):
    """n tiles of rows x cols: G -> shared -> H, one tile per iteration of a plain loop."""
    @T.prim_func
    def k(G: T.Tensor((n * rows, cols), "float16"), H: T.Tensor((n * rows, cols), "float16")):
        with T.Kernel(1, threads=threads):
            S = T.alloc_shared((rows, cols), "float16")
            for t in T.serial(n):
                T.copy(G[t * rows:(t + 1) * rows, :], S)
                T.copy(S, H[t * rows:(t + 1) * rows, :])
    return k


def pipelined_rest(stages=2):
    """A cp.async pipeline whose body also loads a tile it cannot issue ahead."""
    @T.prim_func
    def k(G: T.Tensor((256, 128), "float16"), W: T.Tensor((256, 128), "float16"), H: T.Tensor((128, 128), "float32")):
        with T.Kernel(1, threads=128):
            S = T.alloc_shared((128, 128), "float16")
            Ws = T.alloc_shared((128, 128), "float16")
            acc = T.alloc_fragment((128, 128), "float32")
            T.clear(acc)
            for t in T.Pipelined(2, num_stages=stages):
                T.copy(G[t * 128:(t + 1) * 128, :], S)
                for i, j in T.Parallel(128, 128):
                    S[i, j] = S[i, j] * 2
                T.copy(W[t * 128:(t + 1) * 128, :], Ws)
                T.gemm(S, Ws, acc, transpose_B=True)
            T.copy(acc, H)
    return k


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_a_tile_of_many_vectors_a_thread_is_cp_async_and_waited(arch):
    # 128 x 128 halves on 128 threads: 16 vectors a thread
    assert _notes(_before_after(tile_copy(128), arch)[1])[0] == "copy -> cp.async + wait x8 (16 B)"


@pytest.mark.parametrize("rows,threads", [(64, 128), (128, 256), (8, 128)])
def test_loads_already_in_flight_keep_the_vector_form(rows, threads):
    # 8 and 8 vectors a thread of an exact split (fully unrolled), 1 of a small tile
    assert _notes(_before_after(tile_copy(rows, threads=threads))[1])[0] == "copy -> vector x8 (16 B)"


def test_sm75_keeps_the_vector_form():
    assert _notes(_before_after(tile_copy(128), "sm_75")[1])[0] == "copy -> vector x8 (16 B)"


def test_a_copy_in_a_cp_async_pipeline_body_is_not_waited():
    notes = _notes(_before_after(pipelined_rest(), "sm_80")[1])
    assert "copy -> cp.async + wait x8 (16 B)" not in notes and "copy -> vector x8 (16 B)" in notes, notes


@needs_sass
def test_sass_issues_the_copies_then_waits_once():
    from tilelang.backend.cuda.host.nvrtc import sass
    text = sass(build(tile_copy(128), arch="sm_90a").binary)
    assert text.count("LDGSTS.E.BYPASS.128") >= 1 and "LDGDEPBAR" in text and "DEPBAR" in text


def test_tile_copy_on_cpu():
    kern = tilelang.compile(tile_copy(128), target="cpu")
    g = np.random.rand(256, 128).astype(np.float16)
    h = np.zeros_like(g)
    kern(g, h)
    np.testing.assert_array_equal(h, g)


@pytest.mark.gpu
@pytest.mark.parametrize("rows", [128, 64])
def test_tile_copy_on_gpu(rows):
    import torch
    kern = tilelang.compile(tile_copy(rows), target="cuda")
    g = torch.randn(2 * rows, 128, device="cuda", dtype=torch.float16)
    h = torch.zeros_like(g)
    kern(g, h)
    torch.testing.assert_close(h, g, rtol=0, atol=0)
