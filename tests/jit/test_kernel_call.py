import numpy as np
import pytest
import torch

import tilelang
import tilelang.language as T
from tilelang.ir.errors import ArgumentError
from tests.kernels import add_func, gemm_func


@pytest.fixture(scope="module")
def add():
    return tilelang.compile(add_func(N=300), out_idx=[-1], target="cpu")


def test_outputs_follow_the_callers_array_type(add):
    a = np.random.rand(300).astype("float32")
    out = add(a, a)
    assert isinstance(out, np.ndarray)
    np.testing.assert_allclose(out, 2 * a)
    t = torch.rand(300)
    out = add(t, t)
    assert isinstance(out, torch.Tensor)
    torch.testing.assert_close(out, 2 * t)


def test_outputs_without_array_inputs_are_torch_tensors():
    @T.prim_func
    def iota(A: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=4):
            for i in T.Parallel(4):
                A[i] = i
    out = tilelang.compile(iota, out_idx=[0], target="cpu")()
    assert isinstance(out, torch.Tensor) and out.tolist() == [0, 1, 2, 3]


def test_outputs_may_be_passed_in(add):
    # all parameters given: the outputs are checked like inputs, written and returned
    a = np.ones(300, "float32")
    c = np.zeros(300, "float32")
    out = add(a, a, c)
    assert out is c and (c == 2).all()
    with pytest.raises(ArgumentError, match="argument `C`"):
        add(a, a, "not a tensor")
    with pytest.raises(ArgumentError, match="shape"):
        add(a, a, np.zeros(299, "float32"))
    c.setflags(write=False)
    with pytest.raises(ArgumentError, match="read-only"):
        add(a, a, c)


def test_scalar_arguments_are_checked():
    @T.prim_func
    def k(A: T.Tensor((4,), "float32"), n: T.int32, x: T.float32):
        with T.Kernel(1, threads=4):
            for i in T.Parallel(4):
                A[i] = n * 1.0 + x
    kern = tilelang.compile(k, target="cpu")
    a = torch.zeros(4)
    for _ in range(2):   # the first call and the fast path after it
        kern(a, 3, 0.5)
        assert a.tolist() == [3.5] * 4
        kern(a, torch.tensor(5), np.float32(0.25))   # 0-d tensors and numpy scalars
        assert a.tolist() == [5.25] * 4
        with pytest.raises(ArgumentError, match="`n` is an integer scalar .* got float 2.7"):
            kern(a, 2.7, 0.0)
        with pytest.raises(ArgumentError, match="does not fit int32"):
            kern(a, 2 ** 32 + 3, 0.0)
        with pytest.raises(ArgumentError, match="`x` is a float32 scalar, got NoneType"):
            kern(a, 3, None)


def test_wrong_arity_points_at_the_call(add):
    a = np.ones(300, "float32")
    with pytest.raises(ArgumentError, match=r"takes 2 argument\(s\) \(A, B\), got 1") as e:
        add(a)
    assert "test_kernel_call.py" in str(e.value)


def test_wrong_dtype(add):
    a = np.ones(300, "float64")
    with pytest.raises(ArgumentError, match="dtype float64, the kernel expects float32") as e:
        add(a, a)
    assert "test_kernel_call.py" in str(e.value) and "^" in str(e.value)


def test_wrong_shape(add):
    a = np.ones(301, "float32")
    with pytest.raises(ArgumentError, match="shape"):
        add(a, a)


def test_not_an_array(add):
    with pytest.raises(ArgumentError, match="must be a tensor"):
        add([1.0] * 300, np.ones(300, "float32"))


def test_non_contiguous(add):
    a = np.ones(600, "float32")[::2]
    with pytest.raises(ArgumentError, match="not contiguous"):
        add(a, a)


def test_dynamic_dims_are_bound_and_checked():
    n = T.dynamic("n")

    @T.prim_func
    def scale(A: T.Tensor((n, 4), "float32"), B: T.Tensor((n, 4), "float32")):
        with T.Kernel(T.ceildiv(n, 32)) as bx:
            for i, j in T.Parallel(32, 4):
                if bx * 32 + i < n:
                    B[bx * 32 + i, j] = A[bx * 32 + i, j] * 2
    k = tilelang.compile(scale, out_idx=[-1], target="cpu")
    for rows in (5, 70):
        a = np.random.rand(rows, 4).astype("float32")
        np.testing.assert_allclose(k(a), 2 * a)


def test_get_kernel_source_and_target_env(monkeypatch):
    monkeypatch.setenv("TILELANG_DEFAULT_TARGET", "cpu")
    k = tilelang.compile(gemm_func(), out_idx=[-1])
    assert k.target.kind == "cpu"
    src = k.get_kernel_source()
    assert "tl::gemm<tl::half_t, tl::half_t, float, false, false>" in src
    assert "#pragma omp parallel" in src


def test_jit_factory_caches_per_arguments():
    calls = []

    @tilelang.jit(out_idx=[-1], target="cpu")
    def make(N):
        calls.append(N)
        return add_func(N=N)
    k1 = make(64)
    k2 = make(64)
    k3 = make(65)
    assert k1 is k2 and k1 is not k3 and calls == [64, 65]


def test_a_written_tensor_must_not_overlap_another_argument():
    @T.prim_func
    def rev(A: T.Tensor((8,), "float32"), B: T.Tensor((8,), "float32")):
        with T.Kernel(1, threads=8):
            for i in T.Parallel(8):
                B[i] = A[7 - i]

    @T.prim_func
    def add(A: T.Tensor((8,), "float32"), B: T.Tensor((8,), "float32"), C: T.Tensor((8,), "float32")):
        with T.Kernel(1, threads=8):
            for i in T.Parallel(8):
                C[i] = A[i] + B[i]
    k = tilelang.compile(rev, target="cpu")
    a = torch.arange(8.0)
    for _ in range(2):   # the first call and the fast path after it
        k(a, torch.zeros(8))
        with pytest.raises(ArgumentError, match="`A` and `B` share memory, and the kernel writes `B`"):
            k(a, a)
        big = torch.arange(16.0)
        with pytest.raises(ArgumentError, match="share memory"):
            k(big[:8], big[4:12])      # overlapping views
        k(big[:8], big[8:])            # adjacent views do not overlap
    c = torch.zeros(8)
    tilelang.compile(add, target="cpu")(a, a, c)   # one tensor read through two parameters
    assert c.tolist() == (2 * torch.arange(8.0)).tolist()


def test_arguments_by_name(add):
    a, b = np.ones(300, "float32"), np.full(300, 2.0, "float32")
    assert (add(B=b, A=a) == 3).all()
    assert (add(a, B=b) == 3).all()
    c = np.zeros(300, "float32")
    assert add(A=a, B=b, C=c) is c and (c == 3).all()      # every output named: written in place
    with pytest.raises(ArgumentError, match="no parameter `X`; its parameters are A, B, C"):
        add(a, X=b)
    with pytest.raises(ArgumentError, match="argument `B` is missing"):
        add(A=a)


def test_a_read_only_array_the_kernel_writes_is_refused(add):
    a = np.ones(300, "float32")
    c = np.zeros(300, "float32")
    a.setflags(write=False)
    add(a, a)                        # read-only inputs are fine
    c.setflags(write=False)
    with pytest.raises(ArgumentError, match="read-only"):
        add(a, a, c)


def test_wrong_shape_prints_the_shape_as_written():
    @T.prim_func
    def k(A: T.Tensor((256, 256), "float32")):
        with T.Kernel(1, threads=32):
            A[0, 0] = 1.0
    kern = tilelang.compile(k, target="cpu")
    with pytest.raises(ArgumentError, match=r"has shape \(256, 255\), the kernel expects \(256, 256\)") as e:
        kern(np.ones((256, 255), "float32"))
    assert "hint:" in str(e.value) and "'256'" not in str(e.value)
