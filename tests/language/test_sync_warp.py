"""T.sync_warp (was silently dropped) and T.sync_global (the published name of T.sync_grid)."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang.ir import stmt as S
from tilelang.ir.visitor import walk


def neighbour_in_warp():
    @T.prim_func
    def k(A: T.Tensor((64,), "int32"), B: T.Tensor((64,), "int32")):
        with T.Kernel(1, threads=64):
            tx = T.get_thread_binding()
            s = T.alloc_shared((64,), "int32")
            s[tx] = A[tx] * 2
            T.sync_warp()
            B[tx] = s[(tx // 32) * 32 + (tx + 1) % 32]
    return k


def _barriers(f):
    out = []
    walk(f.body, lambda n: out.append(n) if isinstance(n, S.Barrier) else None)
    return out


def test_sync_warp_is_a_warp_barrier_in_the_ir():
    f = neighbour_in_warp()
    [bar] = _barriers(f)
    assert bar.kind == "warp" and bar.is_partial
    assert "T.sync_warp(T.uint32(4294967295))" in f.script()


def test_sync_warp_orders_shared_memory_on_the_cpu():
    a = np.arange(64, dtype="int32")
    b = np.zeros(64, "int32")
    tilelang.compile(neighbour_in_warp(), target="cpu")(a, b)
    lane = np.arange(64)
    np.testing.assert_array_equal(b, 2 * ((lane // 32) * 32 + (lane + 1) % 32))


def test_sync_warp_on_cuda():
    from tests.backend.cuda.helpers import build
    assert "__syncwarp(4294967295u);" in build(neighbour_in_warp()).source


def test_sync_global_is_a_grid_barrier():
    @T.prim_func
    def k(A: T.Tensor((4,), "int32")):
        with T.Kernel(4, threads=32) as bx:
            A[bx] = 1
            T.sync_global()
            A[bx] = A[(bx + 1) % 4] + 1
    assert "sync_grid" in k.script()


@pytest.mark.gpu
def test_sync_warp_on_the_gpu():
    torch = pytest.importorskip("torch")
    a = torch.arange(64, dtype=torch.int32, device="cuda")
    b = torch.zeros(64, dtype=torch.int32, device="cuda")
    tilelang.compile(neighbour_in_warp(), target="cuda")(a, b)
    lane = torch.arange(64, device="cuda")
    assert torch.equal(b, (2 * ((lane // 32) * 32 + (lane + 1) % 32)).int())
