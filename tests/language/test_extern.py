"""T.import_source, T.call_extern, T.access_ptr / buffer.access_ptr and T.dp4a."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang.ir import expr as E
from tilelang.ir import stmt as S
from tilelang.ir.errors import TileLangError, LoweringError
from tilelang.ir.visitor import walk


ADD_ONE = """
template <class T> __device__ void add_one(T* p, int n) {
  for (int i = 0; i < n; ++i) p[i] = p[i] + T(1);
}
"""


def _calls(func, name):
    out = []
    walk(func.body, lambda n: out.append(n) if isinstance(n, E.Call) and n.name == name else None)
    return out


def _evaluated(func):
    out = []
    walk(func.body, lambda n: out.append(n.value) if isinstance(n, S.Evaluate) else None)
    return out


def test_call_extern_takes_the_dtype_first_or_as_keyword_and_a_bare_call_is_a_statement():
    @T.prim_func
    def f(A: T.Tensor((4,), "float32")):
        with T.Kernel(1):
            T.call_extern("handle", "ext_void", A[0], 3)
            x = T.call_extern("ext_float", A[1], dtype="float32")
            A[2] = x
    ev = [v for v in _evaluated(f) if isinstance(v, E.Call)]
    assert [v.name for v in ev] == ["ext_void"]   # the bare call is kept; the assigned one is an expression
    (g,) = _calls(f, "ext_float")
    assert g.dtype == T.float32
    assert "T.call_extern(\"handle\", 'ext_void'" in f.script()


def test_call_extern_errors():
    with pytest.raises(TileLangError, match="function name"):
        @T.prim_func
        def f(A: T.Tensor((4,), "float32")):
            with T.Kernel(1):
                T.call_extern("handle", A[0])
    with pytest.raises(TileLangError, match="not a dtype"):
        @T.prim_func
        def g(A: T.Tensor((4,), "float32")):
            with T.Kernel(1):
                T.call_extern("no_such_dtype", "fn")


def test_access_ptr_forms():
    @T.prim_func
    def f(A: T.Tensor((4, 8), "float16")):
        with T.Kernel(1):
            L = T.alloc_local((8,), "float16")
            S_ = T.alloc_shared((4, 8), "float16")
            T.call_extern("handle", "use", T.access_ptr(L, "w"), T.access_ptr(S_[1, 2], "rw"),
                          L.access_ptr("r", offset=2), S_.access_ptr("r", offset=10), T.access_ptr(A[0:2, 4:8], 1))
    (c,) = _calls(f, "use")
    ptrs = c.args
    assert all(p.name == E.ACCESS_PTR for p in ptrs)
    assert [E.access_mask(p) for p in ptrs] == [2, 3, 1, 1, 1]
    idx = [[E.const_int_value(i) for i in E.addressed_load(p).indices] for p in ptrs]
    assert idx == [[0], [1, 2], [2], [1, 2], [0, 4]]
    assert 'T.access_ptr(' in f.script()


def test_access_ptr_rejects_a_bad_mask():
    with pytest.raises(TileLangError, match="access type"):
        @T.prim_func
        def f(A: T.Tensor((4,), "float32")):
            with T.Kernel(1):
                T.call_extern("handle", "use", T.access_ptr(A[0], "x"))


def _imported_kernel():
    @T.prim_func
    def f(A: T.Tensor((128, 8), "float32"), B: T.Tensor((128, 8), "float32")):
        with T.Kernel(1, threads=128):
            tx = T.get_thread_binding()
            T.import_source(ADD_ONE)
            T.import_source(None)  # nothing to import: no effect
            L = T.alloc_local((8,), "float32")
            for i in T.serial(8):
                L[i] = A[tx, i]
            T.call_extern("handle", "add_one", T.access_ptr(L, "rw"), 8)
            for i in T.serial(8):
                B[tx, i] = L[i]
    return f


def test_import_source_goes_before_the_kernel_and_the_call_runs_on_every_thread():
    pytest.importorskip("cuda.bindings")
    src = tilelang.compile(_imported_kernel(), target="cuda -arch=sm_90a").get_kernel_source()
    assert src.count("__device__ void add_one") == 1
    assert src.index("__device__ void add_one") < src.index('extern "C" __global__')
    assert "__align__(16) float L[8];" in src       # extern code may read it as wider vectors
    call = next(line for line in src.splitlines() if "add_one((&L[0]), 8)" in line)
    assert "tl_tid == 0" not in call                # each thread works on its own registers


@pytest.mark.gpu
def test_import_source_runs_on_the_gpu():
    import torch
    k = tilelang.compile(_imported_kernel(), target="cuda")
    a = torch.randn(128, 8, device="cuda")
    b = torch.zeros_like(a)
    k(a, b)
    torch.testing.assert_close(b, a + 1)


def test_import_source_is_rejected_by_the_cpu_backend():
    @T.prim_func
    def f(A: T.Tensor((4,), "float32")):
        with T.Kernel(1):
            T.import_source(ADD_ONE)
            A[0] = 1.0
    with pytest.raises(LoweringError, match="CUDA device code"):
        tilelang.compile(f, target="cpu")


def test_import_source_needs_text():
    with pytest.raises(TileLangError, match="source text"):
        @T.prim_func
        def f(A: T.Tensor((4,), "float32")):
            with T.Kernel(1):
                T.import_source(3)


def _dp4a_kernel(n):
    @T.prim_func
    def f(A: T.Tensor((n * 4,), "int8"), B: T.Tensor((n * 4,), "int8"), C: T.Tensor((n,), "int32")):
        with T.Kernel(1):
            for i in T.serial(n):
                T.dp4a(A[i * 4], B[i * 4], C[i])
    return f


def test_dp4a_accumulates_int8_dot_products_on_the_cpu():
    n = 16
    k = tilelang.compile(_dp4a_kernel(n), target="cpu")
    a = np.random.randint(-128, 128, n * 4).astype(np.int8)
    b = np.random.randint(-128, 128, n * 4).astype(np.int8)
    c = np.random.randint(-1000, 1000, n).astype(np.int32)
    ref = c + (a.astype(np.int32) * b.astype(np.int32)).reshape(n, 4).sum(-1)
    k(a, b, c)
    np.testing.assert_array_equal(c, ref)


def test_dp4a_uses_the_instruction_on_cuda():
    pytest.importorskip("cuda.bindings")
    k = tilelang.compile(_dp4a_kernel(4), target="cuda -arch=sm_90a")
    assert "tl::dp4a((&A[(i * 4)]), (&B[(i * 4)]), (&C[i]))" in k.get_kernel_source()
    from tilelang.backend.cuda.host.nvrtc import cuobjdump_path
    if cuobjdump_path() is not None:
        assert "IDP.4A.S8.S8" in k.get_sass()


def test_dp4a_checks_dtypes():
    with pytest.raises(TileLangError, match="int8 inputs"):
        @T.prim_func
        def f(A: T.Tensor((4,), "float16"), C: T.Tensor((1,), "int32")):
            with T.Kernel(1):
                T.dp4a(A[0], A[0], C[0])
    with pytest.raises(TileLangError, match="int32 accumulator"):
        @T.prim_func
        def g(A: T.Tensor((4,), "int8"), C: T.Tensor((1,), "float32")):
            with T.Kernel(1):
                T.dp4a(A[0], A[0], C[0])
