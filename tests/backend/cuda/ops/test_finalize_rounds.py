"""`T.finalize_reducer` of a reducer whose copies span several warps: the per-warp copies of
all its slots go through shared memory together, two barriers per round of slots rather
than per slot (thread_allreduce._combine_warps)."""
import pytest
import torch

import tilelang
import tilelang.language as T
from tilelang.backend.cuda.ops import thread_allreduce as thread_allreduce
from tests.backend.cuda.conftest import needs_nvrtc
from tests.backend.cuda.helpers import build


def _kernel(M, N, op, dt="float32", threads=256, batch=1):
    @T.prim_func
    def k(A: T.Tensor((M, N), dt), B: T.Tensor((M,), dt)):
        with T.Kernel(1, threads=threads):
            r = T.alloc_reducer(M, dt, op=op, replication="all")
            T.clear(r)
            a = T.alloc_fragment((M, N), dt)
            T.copy(A, a)
            for i, j in T.Parallel(M, N):
                if op == "sum":
                    r[i] += a[i, j]
                elif op == "max":
                    r[i] = T.max(r[i], a[i, j])
                else:
                    r[i] = T.min(r[i], a[i, j])
            T.finalize_reducer(r, batch=batch)
            T.copy(r, B)
    return k


def test_one_round_of_barriers_for_all_slots():
    src = build(_kernel(4, 1024, "sum")).source
    tail = src[src.index("tl_red_smem"):]
    assert tail.count("__syncthreads()") == 2   # was two per slot (8)


@needs_nvrtc
def test_rounds_when_the_scratch_is_capped(monkeypatch):
    monkeypatch.setattr(thread_allreduce, "FINALIZE_ROUND_BYTES", 256 * 4 * 3)   # 3 slots per round
    src = build(_kernel(4, 1024, "max")).source
    tail = src[src.index("tl_red_smem"):]
    assert tail.count("__syncthreads()") == 4


@pytest.mark.parametrize("target", ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
@pytest.mark.parametrize("op", ["sum", "max", "min"])
@pytest.mark.parametrize("round_bytes", [32768, 256 * 4 * 3])
def test_finalize_across_warps_matches_torch(monkeypatch, target, op, round_bytes):
    monkeypatch.setattr(thread_allreduce, "FINALIZE_ROUND_BYTES", round_bytes)
    monkeypatch.setenv("TILELANG_DISABLE_CACHE", "1")
    torch.manual_seed(0)
    a = torch.randn(4, 1024, device=target)
    b = tilelang.compile(_kernel(4, 1024, op), out_idx=-1, target=target)(a)
    ref = {"sum": lambda: a.sum(1), "max": lambda: a.amax(1), "min": lambda: a.amin(1)}[op]()
    torch.testing.assert_close(b, ref, atol=1e-3, rtol=1e-4)


# batch=B: B slots exchanged together within the warp (tl::group_allreduce_rows)
@pytest.mark.parametrize("M,N,B,expect", [(128, 64, 4, "<4, 16>"), (64, 128, 8, "<8, 32>"), (4, 1024, 4, "<4, 32>")])
def test_batched_slots_source(M, N, B, expect):
    assert f"tl::group_allreduce_rows{expect}(" in build(_kernel(M, N, "sum", batch=B)).source


@pytest.mark.gpu
@pytest.mark.parametrize("op", ["sum", "max", "min"])
@pytest.mark.parametrize("M,N,B", [(128, 64, 4), (64, 128, 8), (128, 128, 16), (4, 1024, 4), (128, 64, 1)])
def test_batched_slots_match_torch(op, M, N, B):
    torch.manual_seed(3)
    a = torch.randn(M, N, device="cuda")
    b = tilelang.compile(_kernel(M, N, op, batch=B), out_idx=-1, target="cuda")(a)
    ref = {"sum": lambda: a.sum(1), "max": lambda: a.amax(1), "min": lambda: a.amin(1)}[op]()
    torch.testing.assert_close(b, ref, atol=1e-3, rtol=1e-4)
