"""Per-thread code that stages a shared tile in rounds, each thread writing elements named by
its index (`S[(i * 2048 + tx * 8 + v) // 128, (i * 2048 + tx * 8 + v) % 128]`, the published
dequantize-GEMM examples' B tile): plan/sync.py puts no barrier between the rounds (a thread
never writes what another one wrote: analysis/thread_owned.py), only before the staging (the
last K tile's readers) and after it (this tile's readers). With the barrier every round, the
published `example_dequant_gemm_bf16_fp4_hopper` ran 0.266 -> 0.304 ms on the H200."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang.backend.cuda.plan.sync import insert_barriers
from tests.backend.cuda.plan.around import around


def staging(lanes_per_thread=8, round_stride=2048):
    """O = sum over 4 K tiles of 2 * A's tile, the tile staged through shared memory by
    per-thread vector stores in 8 rounds; `lanes_per_thread` < 8 makes threads' lanes
    overlap (not thread-owned), `round_stride` < 2048 makes rounds overlap too."""
    L, R = lanes_per_thread, round_stride

    @T.prim_func
    def k(A: T.Tensor((4, 128, 128), "float32"), O: T.Tensor((128, 128), "float32")):
        with T.Kernel(1, threads=256):
            tx = T.get_thread_binding(0)
            local = T.alloc_local((8,), "float32")
            S = T.alloc_shared((128, 128), "float32")
            acc = T.alloc_fragment((128, 128), "float32")
            T.clear(acc)
            for ko in T.serial(4):
                for i in T.serial(8):
                    for v in T.vectorized(8):
                        local[v] = A[ko, (i * 2048 + tx * 8 + v) // 128, (i * 2048 + tx * 8 + v) % 128] * 2
                    for v in T.vectorized(8):
                        S[(i * R + tx * L + v) // 128, (i * R + tx * L + v) % 128] = local[v]
                for r, c in T.Parallel(128, 128):
                    acc[r, c] += S[r, c]
            T.copy(acc, O)
    return k


def _ko_body(text):
    lines = [ln.strip() for ln in text.splitlines()
             if ln.strip().startswith(("for ", "T.sync_threads", "S["))]
    start = next(n for n, ln in enumerate(lines) if ln.startswith("for ko in"))
    return lines[start + 1:]


def test_rounds_of_thread_owned_stores_need_no_barrier_between_them():
    _, after = around(staging(), insert_barriers)
    body = _ko_body(after)
    assert body[0].startswith("T.sync_threads()  # inserted: S"), body   # the last tile's readers
    assert body[1].startswith("for i in T.serial(8)"), body
    assert body[2].startswith("for v in T.vectorized(8)"), body
    assert body[3].startswith("for v_1 in T.vectorized(8)"), body      # no barrier before it
    assert body[4].startswith("S["), body
    assert body[5].startswith("T.sync_threads()  # inserted: S"), body   # this tile's readers
    assert body[6].startswith("for r, c in T.Parallel"), body


def test_overlapping_lanes_keep_the_barrier_between_rounds():
    # threads' lanes overlap and so do rounds (512 apart, 1028 elements a round)
    _, after = around(staging(lanes_per_thread=4, round_stride=512), insert_barriers)
    body = _ko_body(after)
    i_loop = body.index("for i in T.serial(8):")
    assert body[i_loop + 2].startswith("T.sync_threads()  # inserted: S"), body
    assert body[i_loop + 3].startswith("for v_1 in T.vectorized(8)"), body


def test_rounds_apart_need_no_barrier_even_when_lanes_overlap(monkeypatch):
    monkeypatch.setenv("TILELANG_CUDA_ITERATION_DISJOINT", "1")
    # 2048 apart, each round's elements (1028) are none of the next round's: nothing is carried
    # from one round to the next (analysis/iteration_disjoint.py), whoever wrote them
    _, after = around(staging(lanes_per_thread=4), insert_barriers)
    body = _ko_body(after)
    i_loop = body.index("for i in T.serial(8):")
    assert body[i_loop + 2].startswith("for v_1 in T.vectorized(8)"), body


@pytest.mark.gpu
def test_staged_tiles_sum_on_the_gpu():
    torch = pytest.importorskip("torch")
    kernel = tilelang.compile(staging(), target="cuda")
    a = torch.randn(4, 128, 128, device="cuda")
    o = torch.empty(128, 128, device="cuda")
    for _ in range(20):   # a race shows only some of the time
        kernel(a, o)
        np.testing.assert_allclose(o.cpu().numpy(), 2 * a.sum(0).cpu().numpy(), rtol=1e-5, atol=1e-5)
