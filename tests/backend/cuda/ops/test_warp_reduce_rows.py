"""`T.reduce_*(..., batch=B)` of a shared-memory source: a warp reduces B rows together
(tl::warp_reduce_rows in include/tl_cuda/reduce.h): each of the first log2(B) butterfly
levels halves the rows a lane keeps, B - 1 + log2(32 / B) shuffles for B rows instead of
5 B. Results do not depend on B."""
import pytest
import torch

import tilelang
import tilelang.language as T
from tests.backend.cuda.conftest import needs_nvrtc, needs_sass
from tests.backend.cuda.helpers import build, sass_ops

OPS = {"sum": T.reduce_sum, "max": T.reduce_max, "min": T.reduce_min, "abssum": T.reduce_abssum,
       "absmax": T.reduce_absmax}


def _kernel(kind, M, N, batch, dt="float32", threads=256, clear=True, nan_propagate=False):
    kw = {"nan_propagate": True} if nan_propagate else {}

    @T.prim_func
    def k(A: T.Tensor((M, N), dt), Init: T.Tensor((M,), dt), B: T.Tensor((M,), dt)):
        with T.Kernel(1, threads=threads):
            src = T.alloc_shared((M, N), dt)
            dst = T.alloc_shared((M,), dt)
            T.copy(A, src)
            T.copy(Init, dst)
            OPS[kind](src, dst, dim=1, clear=clear, batch=batch, **kw)
            T.copy(dst, B)
    return k


def _ref(kind, a):
    x = a.float()
    return {"sum": lambda: x.sum(1), "max": lambda: x.amax(1), "min": lambda: x.amin(1),
            "abssum": lambda: x.abs().sum(1), "absmax": lambda: x.abs().amax(1)}[kind]()


def test_source_uses_row_butterfly():
    src = build(_kernel("sum", 128, 64, 4)).source
    assert "tl::warp_reduce_rows<4>(" in src
    assert "warp_reduce_rows" not in build(_kernel("sum", 128, 64, 1)).source
    assert "warp_reduce_rows" not in build(_kernel("sum", 128, 64, 3)).source   # not a power of two


@needs_nvrtc
@pytest.mark.parametrize("kind,dt,nan", [("sum", "float16", False), ("absmax", "bfloat16", True),
                                         ("min", "float32", False), ("abssum", "float32", False)])
@pytest.mark.parametrize("batch", [2, 32])
def test_batched_rows_compile(kind, dt, nan, batch):
    build(_kernel(kind, 37, 100, batch, dt, clear=False, nan_propagate=nan))


@needs_sass
def test_fewer_shuffles_per_row():
    per_row = {}
    for b in (1, 8):
        ops = sass_ops(build(_kernel("sum", 128, 64, b)))
        per_row[b] = ops["SHFL"]
    # static counts (the row loop is unrolled alike): 5 per row vs 9 per 8 rows
    assert per_row[8] < 2 * per_row[1], per_row


@pytest.mark.gpu
@pytest.mark.parametrize("kind", list(OPS))
@pytest.mark.parametrize("batch", [1, 2, 4, 8, 32])
@pytest.mark.parametrize("M,N", [(128, 64), (37, 100)])
def test_batched_rows_match_torch(kind, batch, M, N):
    torch.manual_seed(0)
    k = tilelang.compile(_kernel(kind, M, N, batch), out_idx=-1, target="cuda")
    a = torch.randn(M, N, device="cuda")
    torch.testing.assert_close(k(a, torch.zeros(M, device="cuda")), _ref(kind, a), atol=1e-4, rtol=1e-4)


@pytest.mark.gpu
@pytest.mark.parametrize("kind", ["sum", "max"])
def test_batched_rows_clear_false_fp16(kind):
    torch.manual_seed(1)
    M, N = 64, 128
    k = tilelang.compile(_kernel(kind, M, N, 4, "float16", clear=False), out_idx=-1, target="cuda")
    a = torch.randn(M, N, device="cuda", dtype=torch.float16)
    init = torch.randn(M, device="cuda", dtype=torch.float16)
    ref = _ref(kind, a) + init.float() if kind == "sum" else torch.maximum(_ref(kind, a), init.float())
    torch.testing.assert_close(k(a, init).float(), ref, atol=5e-2, rtol=1e-2)


@pytest.mark.gpu
@pytest.mark.parametrize("nan_propagate", [False, True])
def test_batched_rows_nan(nan_propagate):
    M, N = 64, 128
    a = torch.arange(N, device="cuda", dtype=torch.float32).repeat(M, 1).to(torch.float16)
    a[2, 7] = float("nan")
    k = tilelang.compile(_kernel("max", M, N, 8, "float16", nan_propagate=nan_propagate), out_idx=-1,
                         target="cuda")
    b = k(a, torch.zeros(M, device="cuda", dtype=torch.float16))
    assert torch.isnan(b[2]).item() == nan_propagate
    assert not torch.isnan(torch.cat([b[:2], b[3:]])).any()


# register tiles: a group of g <= 32 threads shares each row; with batch=B it exchanges B
# rows together and gathers them back (tl::group_allreduce_rows)
def _tile_kernel(kind, M, N, batch, dt="float32", threads=256, nan_propagate=False):
    kw = {"nan_propagate": True} if nan_propagate else {}

    @T.prim_func
    def k(A: T.Tensor((M, N), dt), B: T.Tensor((M,), dt)):
        with T.Kernel(1, threads=threads):
            src = T.alloc_fragment((M, N), dt)
            dst = T.alloc_fragment((M,), dt)
            T.copy(A, src)
            OPS[kind](src, dst, dim=1, batch=batch, **kw)
            T.copy(dst, B)
    return k


@needs_sass
def test_tile_rows_fewer_shuffles():
    shfl = {b: sass_ops(build(_tile_kernel("max", 128, 128, b)))["SHFL"] for b in (1, 8)}
    assert shfl[8] * 2 <= shfl[1], shfl   # 16 rows of 32 threads: 80 -> 32 (static counts)
    ops = sass_ops(build(_tile_kernel("max", 128, 128, 8)))
    assert ops["LDL"] == 0 and ops["STL"] == 0


def test_tile_rows_source():
    assert "tl::group_allreduce_rows<4, 16>(" in build(_tile_kernel("sum", 64, 128, 4, "float16")).source
    assert "group_allreduce_rows" not in build(_tile_kernel("sum", 64, 128, 8, "float16")).source  # 4 rows/thread


@pytest.mark.gpu
@pytest.mark.parametrize("kind", list(OPS))
@pytest.mark.parametrize("M,N,dt,threads,batch", [(64, 128, "float16", 256, 4), (128, 128, "float32", 256, 4),
                                                   (128, 128, "float16", 256, 8), (128, 128, "float32", 256, 16),
                                                   (64, 64, "float32", 128, 2), (32, 64, "float32", 32, 4)])
def test_tile_rows_match_torch(kind, M, N, dt, threads, batch):
    torch.manual_seed(2)
    a = torch.randn(M, N, device="cuda").to(getattr(torch, dt))
    b = tilelang.compile(_tile_kernel(kind, M, N, batch, dt, threads), out_idx=-1, target="cuda")(a)
    tol = 5e-2 if dt == "float16" else 1e-4
    torch.testing.assert_close(b.float(), _ref(kind, a).to(getattr(torch, dt)).float(), atol=tol, rtol=tol)


@pytest.mark.gpu
def test_tile_rows_nan():
    M, N = 64, 128
    a = torch.arange(N, device="cuda", dtype=torch.float32).repeat(M, 1).to(torch.bfloat16)
    a[2, 7] = float("nan")
    b = tilelang.compile(_tile_kernel("max", M, N, 4, "bfloat16", nan_propagate=True), out_idx=-1, target="cuda")(a)
    assert torch.isnan(b[2]) and not torch.isnan(torch.cat([b[:2], b[3:]])).any()
