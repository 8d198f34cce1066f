"""T.thread_binding, the TVM-style cross-thread reduction (T.attr + T.comm_reducer +
T.tvm_thread_allreduce), and T.alloc_reducer / T.finalize_reducer."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang.ir import stmt as S
from tilelang.ir.errors import TileLangError
from tilelang.ir.visitor import walk


def _find(func, cls):
    out = []
    walk(func.body, lambda n: out.append(n) if isinstance(n, cls) else None)
    return out


def test_thread_binding_is_the_kernels_thread_index():
    seen = {}

    @T.prim_func
    def f(A: T.Tensor((4, 32), "float32")):
        with T.Kernel(1, threads=(32, 4)):
            kr = T.thread_binding(0, 32, thread="threadIdx.x")
            ni = T.thread_binding(4, "threadIdx.y")
            seen["same"] = kr is T.get_thread_binding(0) and ni is T.get_thread_binding(1)
            for tx in T.thread_binding(0, 32, thread="threadIdx.x"):   # one iteration per thread
                seen["loop"] = tx is kr
                A[ni, tx] = 1.0
    assert seen == {"same": True, "loop": True}
    assert not [s for s in _find(f, S.For)]   # the loop form made no IR loop


@pytest.mark.parametrize("args, match", [
    ((0, 64, "threadIdx.x"), "does not match the kernel's extent 32"),
    ((1, 33, "threadIdx.x"), "does not match"),
    ((0, 32, "threadIdx.w"), "must be one of"),
    ((0, 1, "threadIdx.z"), "1 thread dimension"),
])
def test_thread_binding_errors(args, match):
    with pytest.raises(TileLangError, match=match):
        @T.prim_func
        def f(A: T.Tensor((32,), "float32")):
            with T.Kernel(1, threads=32):
                t = T.thread_binding(*args)
                A[t] = 1.0


def _allreduce(threads=(2, 32), reduce_dim=1, op=lambda x, y: x + y, ident=0, cond=True):
    @T.prim_func
    def f(A: T.Tensor((128,), "float32"), C: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=threads):
            tid = T.get_thread_binding(0) + T.get_thread_binding(1) * threads[0]
            acc = T.alloc_local((1,), "float32")
            out = T.alloc_local((1,), "float32")
            acc[0] = A[tid]
            with T.attr(T.comm_reducer(op, [T.cast(ident, "float32")]), "reduce_scope",
                        T.reinterpret(T.uint64(0), dtype="handle")):
                T.evaluate(T.tvm_thread_allreduce(T.uint32(1), acc[0], cond() if callable(cond) else cond, out[0],
                                                  T.get_thread_binding(reduce_dim), dtype="handle"))
            C[tid] = out[0]
    return f


def test_tvm_thread_allreduce_records_one_statement():
    f = _allreduce()
    (r,) = _find(f, S.ThreadAllReduce)
    assert r.thread_vars[0].name == "ty" and r.identity.value == 0.0
    assert r.dst.buffer.scope == "local"
    assert "T.tvm_thread_allreduce(T.uint32(1), acc[0], True, out[0], ty" in f.script()
    assert "lambda x, y: x + y" in f.script()


@pytest.mark.parametrize("reduce_dim,op,np_op", [(1, lambda x, y: x + y, np.sum), (0, lambda x, y: x + y, np.sum),
                                                  (1, lambda x, y: T.max(x, y), np.max)])
def test_tvm_thread_allreduce_on_the_cpu(reduce_dim, op, np_op):
    # two thread phases around the reduction (backend/cpu/thread_phases.py)
    ident = 0 if np_op is np.sum else -1e30
    k = tilelang.compile(_allreduce(reduce_dim=reduce_dim, op=op, ident=ident), target="cpu")
    a = np.random.default_rng(reduce_dim).standard_normal(128).astype(np.float32)
    c = np.zeros(128, np.float32)
    k(a, c)
    grid = a[:64].reshape(32, 2)          # [ty, tx]: tid = tx + 2 * ty
    red = np_op(grid, axis=0 if reduce_dim == 1 else 1, keepdims=True)
    np.testing.assert_allclose(c[:64].reshape(32, 2), np.broadcast_to(red, (32, 2)), rtol=1e-5, atol=1e-5)


def test_tvm_thread_allreduce_errors():
    with pytest.raises(TileLangError, match="reduce_scope"):
        @T.prim_func
        def f(A: T.Tensor((32,), "float32")):
            with T.Kernel(1, threads=32):
                o = T.alloc_local((1,), "float32")
                T.tvm_thread_allreduce(T.uint32(1), A[0], True, o[0], T.get_thread_binding(), dtype="handle")
    with pytest.raises(TileLangError, match="thread indices"):
        @T.prim_func
        def g(A: T.Tensor((32,), "float32")):
            with T.Kernel(1, threads=32) as bx:
                o = T.alloc_local((1,), "float32")
                with T.attr(T.comm_reducer(lambda x, y: x + y, [T.float32(0)]), "reduce_scope", 0):
                    T.tvm_thread_allreduce(T.uint32(1), A[0], True, o[0], bx, dtype="handle")
    with pytest.raises(TileLangError, match="local buffer"):
        @T.prim_func
        def h(A: T.Tensor((32,), "float32")):
            with T.Kernel(1, threads=32):
                with T.attr(T.comm_reducer(lambda x, y: x + y, [T.float32(0)]), "reduce_scope", 0):
                    T.tvm_thread_allreduce(T.uint32(1), A[0], True, A[1], T.get_thread_binding(),
                                           dtype="handle")
    with pytest.raises(TileLangError, match="single-value"):
        @T.prim_func
        def k(A: T.Tensor((32,), "float32")):
            with T.Kernel(1, threads=32):
                T.comm_reducer(lambda x, y: x + y, [T.float32(0), T.float32(0)])


def _reducer_gemv(M, N, bm, bn, threads, op="sum"):
    @T.prim_func
    def f(a: T.Tensor((M, N), "float32"), x: T.Tensor((N,), "float32"), o: T.Tensor((M,), "float32")):
        with T.Kernel(T.ceildiv(M, bm), threads=threads) as bx:
            r = T.alloc_reducer(bm, "float32", op=op, replication="all")
            T.fill(r, 0.0 if op == "sum" else -T.infinity("float32"))
            for k in T.serial(T.ceildiv(N, bn)):
                af = T.alloc_fragment((bm, bn), "float32")
                T.copy(a[bx * bm, k * bn], af)
                for i, j in T.Parallel(bm, bn):
                    if op == "sum":
                        r[i] += af[i, j] * x[k * bn + j]
                    else:
                        r[i] = T.max(r[i], af[i, j] * x[k * bn + j])
            T.finalize_reducer(r)
            T.copy(r, o[bx * bm])
    return f


@pytest.mark.parametrize("op", ["sum", "max"])
def test_finalize_reducer_on_the_cpu(op):
    M, N = 64, 256
    k = tilelang.compile(_reducer_gemv(M, N, 32, 128, 128, op), target="cpu")
    a = np.random.rand(M, N).astype(np.float32)
    x = np.random.rand(N).astype(np.float32)
    o = np.zeros(M, np.float32)
    k(a, x, o)
    ref = a @ x if op == "sum" else (a * x).max(-1)
    np.testing.assert_allclose(o, ref, rtol=1e-5)


def test_reducer_errors():
    with pytest.raises(TileLangError, match="op must be"):
        @T.prim_func
        def f(A: T.Tensor((32,), "float32")):
            with T.Kernel(1):
                T.alloc_reducer(32, "float32", op="prod")
    with pytest.raises(TileLangError, match="T.alloc_reducer"):
        @T.prim_func
        def g(A: T.Tensor((32,), "float32")):
            with T.Kernel(1):
                b = T.alloc_fragment((32,), "float32")
                T.finalize_reducer(b)
