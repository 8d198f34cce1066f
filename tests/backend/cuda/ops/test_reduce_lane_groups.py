"""`T.reduce_*` of a shared-memory source whose rows hold at most 16 elements: a warp
reduces 32 / G rows at once on groups of G lanes (G the next power of two of the row
length; ops/reduce.py `lane_group`, tl::group_reduce), log2(G) shuffles per pass instead of
a pass of 5 shuffles per row (the Sinkhorn loop of DeepSeek mHC's pre block: 4 x 4)."""
import pytest
import torch

import tilelang
import tilelang.language as T
from tests.backend.cuda.conftest import needs_nvrtc, needs_sass
from tests.backend.cuda.helpers import build, sass_ops
from tilelang.backend.cuda.ops.reduce import lane_group

OPS = {"sum": T.reduce_sum, "max": T.reduce_max, "min": T.reduce_min, "abssum": T.reduce_abssum,
       "absmax": T.reduce_absmax}


def _kernel(kind, M, N, dim=1, threads=64, clear=True, ranged=False):
    out = M if dim == 1 else N

    @T.prim_func
    def k(A: T.Tensor((M, N), "float32"), Init: T.Tensor((out,), "float32"), B: T.Tensor((out,), "float32")):
        with T.Kernel(1, threads=threads):
            src = T.alloc_shared((M, N), "float32")
            dst = T.alloc_shared((out,), "float32")
            T.copy(A, src)
            T.copy(Init, dst)
            if ranged:   # in a warp-aligned thread range (the mHC kernel's `if tx < 32:`)
                if T.get_thread_binding() < 32:
                    OPS[kind](src, dst, dim=dim, clear=clear)
            else:
                OPS[kind](src, dst, dim=dim, clear=clear)
            T.copy(dst, B)
    return k


def _ref(kind, a, dim, init=None):
    x = a.float()
    r = {"sum": lambda: x.sum(dim), "max": lambda: x.amax(dim), "min": lambda: x.amin(dim),
         "abssum": lambda: x.abs().sum(dim), "absmax": lambda: x.abs().amax(dim)}[kind]()
    if init is None:
        return r
    return {"sum": init + r, "abssum": init + r, "max": torch.maximum(init, r), "absmax": torch.maximum(init, r),
            "min": torch.minimum(init, r)}[kind]


def test_lane_group_width():
    class Op:
        def __init__(self, n):
            from tilelang.ir import expr as E
            self.src, self.dim = type("R", (), {"extents": [E.IntImm(7), E.IntImm(n)]})(), 1
    assert [lane_group(Op(n)) for n in (1, 2, 3, 4, 5, 16, 17, 64)] == [1, 2, 4, 4, 8, 16, 0, 0]


def _source(func):
    from tilelang.backend.registry import get_backend
    return get_backend("cuda").generate(func, {"kind": "cuda", "arch": "sm_90a"})[1]


def test_source_uses_lane_groups_for_short_rows():
    assert "tl::group_reduce<4>(" in _source(_kernel("sum", 4, 4))
    assert "tl::group_reduce<8>(" in _source(_kernel("max", 6, 5, dim=0))   # columns of 6 rows
    long_rows = _source(_kernel("sum", 4, 64))
    assert "group_reduce" not in long_rows and "tl::warp_reduce(" in long_rows


@needs_sass
def test_fewer_shuffles():
    """4 x 4 on one warp: one pass of 2 shuffles (was 4 rows x 5); the static count shows it."""
    grouped = sass_ops(build(_kernel("sum", 4, 4, threads=32)))["SHFL"]
    whole = sass_ops(build(_kernel("sum", 4, 64, threads=32)))["SHFL"]
    assert grouped <= 2 < whole, (grouped, whole)


@needs_nvrtc
def test_compiles_with_abs_kinds_and_in_a_thread_range():
    src = build(_kernel("absmax", 4, 4, dim=0, clear=False, ranged=True)).source
    assert "tl::group_reduce<4>(" in src
    assert "tl::max(" in src   # the element's absolute value before the lanes combine


@pytest.mark.gpu
@pytest.mark.parametrize("kind", list(OPS))
@pytest.mark.parametrize("M,N,dim", [(4, 4, 1), (4, 4, 0), (37, 5, 1), (3, 16, 1), (70, 1, 1), (9, 7, 0)])
@pytest.mark.parametrize("ranged", [False, True])
def test_lane_groups_match_torch(kind, M, N, dim, ranged):
    torch.manual_seed(0)
    k = tilelang.compile(_kernel(kind, M, N, dim, ranged=ranged), out_idx=-1, target="cuda")
    a = torch.randn(M, N, device="cuda")
    out = M if dim == 1 else N
    torch.testing.assert_close(k(a, torch.zeros(out, device="cuda")), _ref(kind, a, dim), atol=1e-4, rtol=1e-4)


@pytest.mark.gpu
@pytest.mark.parametrize("kind", ["sum", "max", "absmax"])
def test_lane_groups_clear_false(kind):
    torch.manual_seed(1)
    M, N = 12, 6
    k = tilelang.compile(_kernel(kind, M, N, clear=False), out_idx=-1, target="cuda")
    a, init = torch.randn(M, N, device="cuda"), torch.randn(M, device="cuda")
    torch.testing.assert_close(k(a, init), _ref(kind, a, 1, init), atol=1e-4, rtol=1e-4)
