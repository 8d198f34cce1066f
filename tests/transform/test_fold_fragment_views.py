"""before / expected for fold_fragment_views: element accesses of a `T.reshape` view that
splits a fragment's last dimension become accesses of the base, and a T.Parallel pair over
the split becomes one loop (so a register layout of the base reaches it); other views and
loops are left alone, and results are unchanged (CPU backend)."""
import numpy as np

import tilelang
import tilelang.language as T
from tilelang.ir import expr as E
from tilelang.ir import stmt as S
from tilelang.ir import tile_ops as TO
from tilelang.ir.visitor import walk
from tilelang.transform.fold_fragment_views import fold_fragment_views, split_view

M, A, B = 16, 4, 8


def _kernel(swapped=False):
    @T.prim_func
    def k(X: T.Tensor((M, A * B), "float32"), W: T.Tensor((A, B), "float32"), Out: T.Tensor((M, A), "float32")):
        with T.Kernel(1, threads=128):
            s = T.alloc_fragment((M, A * B), "float32")
            grouped = T.reshape(s, (M, A, B))
            t = T.alloc_fragment((M, A * B), "float32")
            shifted = T.reshape(t, (M, A, B))
            w = T.alloc_fragment((A, B), "float32")
            out = T.alloc_fragment((M, A), "float32")
            T.copy(X, s)
            T.copy(W, w)
            for i, a, b in T.Parallel(M, A, B):
                if swapped:   # also reads the view at another column: the pair cannot merge
                    shifted[i, a, b] = grouped[i, a, b] * w[a, b] + grouped[i, a, 0]
                else:
                    shifted[i, a, b] = T.max(grouped[i, a, b], 0) * w[a, b]
            T.reduce_sum(shifted, out, dim=-1, clear=True)
            T.copy(out, Out)
    return k


def _accesses(func, name):
    out = []
    walk(func.body, lambda n: out.append(list(n.indices)) if isinstance(n, (E.BufferLoad, S.BufferStore))
         and n.buffer.name == name else None)
    return out


def _parallel_extents(func):
    out = []

    def f(n):
        if isinstance(n, S.For) and n.kind == S.PARALLEL and isinstance(n.body, S.For) or \
                isinstance(n, S.For) and n.kind == S.PARALLEL:
            out.append(E.const_int_value(n.extent))
    walk(func.body, f)
    return out


def test_split_view_recognises_only_a_split_of_the_last_dimension():
    seen = {}

    @T.prim_func
    def k(X: T.Tensor((8, 32), "float32")):
        with T.Kernel(1, threads=32):
            s = T.alloc_fragment((8, 32), "float32")
            T.reshape(s, (8, 4, 8))      # split of the last dimension
            T.reshape(s, (2, 4, 32))     # split of the first
            T.reshape(s, (256,))         # flattening
            T.copy(X, s)
    walk(k.body, lambda n: seen.setdefault(tuple(E.const_int_value(d) for d in n.buffer.shape), split_view(n.buffer))
         if isinstance(n, S.DeclBuffer) else None)
    base, a, b = seen[(8, 4, 8)]
    assert base.name == "s" and (a, b) == (4, 8)
    assert seen[(2, 4, 32)] is None and seen[(256,)] is None


def test_the_pair_over_the_split_becomes_one_loop_over_the_base():
    f = fold_fragment_views(_kernel())
    assert _accesses(f, "grouped") == [] and _accesses(f, "shifted") == []
    (load,), (store,) = _accesses(f, "s")[-1:], _accesses(f, "t")
    assert len(store) == 2 and store[1] is load[1] and isinstance(store[1], E.Var)   # t[i, j] = f(s[i, j])
    assert A * B in _parallel_extents(f) and B not in _parallel_extents(f)
    reduces = []
    walk(f.body, lambda n: reduces.append(n) if isinstance(n, TO.Reduce) else None)
    assert [r.src.buffer.name for r in reduces] == ["shifted"]   # the tile op keeps naming the view


def test_a_loop_reading_the_view_elsewhere_keeps_its_shape_and_reads_the_base():
    f = fold_fragment_views(_kernel(swapped=True))
    assert _accesses(f, "grouped") == [] and _accesses(f, "shifted") == []
    assert B in _parallel_extents(f)
    assert any(len(ix) == 2 and E.const_int_value(ix[1]) is None for ix in _accesses(f, "s"))


def test_results_are_unchanged():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((M, A * B)).astype(np.float32)
    w = rng.standard_normal((A, B)).astype(np.float32)
    for swapped in (False, True):
        got = np.zeros((M, A), np.float32)
        tilelang.compile(fold_fragment_views(_kernel(swapped)), target="cpu")(x, w, got)
        g = x.reshape(M, A, B)
        ref = (g * w + g[:, :, :1] if swapped else np.maximum(g, 0) * w).sum(-1)
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)
