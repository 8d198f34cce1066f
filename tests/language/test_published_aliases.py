"""Smaller published names: `T.Serial/Unroll/Vectorized`, `T.transpose`, `T.allocate`,
`T.SharedBuffer/LocalBuffer/FragmentBuffer`, `T.inline`, `T.get_let_value/has_let_value`,
`T.make_tensor`, `T.pdl_trigger/pdl_sync`: run on the CPU, compiled for CUDA."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang.ir.errors import TileLangError
from tests.backend.cuda.conftest import needs_nvrtc, needs_sass
from tests.backend.cuda.helpers import build


def _loops(N=64):
    @T.prim_func
    def k(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
        with T.Kernel(1, threads=32):
            for i in T.Serial(N):
                B[i] = A[i]
            for i in T.Unroll(0, N, 2):
                B[i] = B[i] * 2
            for i in T.Vectorized(4):
                B[i] = B[i] + 1
            for i in T.Serial(1, N, 2):
                B[i] = B[i] - 1
    return k


def test_capitalised_loops():
    a = np.random.rand(64).astype(np.float32)
    b = np.zeros_like(a)
    tilelang.compile(_loops(), target="cpu")(a, b)
    want = a.copy()
    want[::2] *= 2
    want[:4] += 1
    want[1::2] -= 1
    np.testing.assert_array_equal(b, want)


def _transpose(M=64, N=32, batch=False):
    shape_a, shape_b = ((2, M, N), (2, N, M)) if batch else ((M, N), (N, M))

    @T.prim_func
    def k(A: T.Tensor(shape_a, "float32"), B: T.Tensor(shape_b, "float32")):
        with T.Kernel(1, threads=128):
            s = T.alloc_shared(shape_a, "float32")
            t = T.alloc_shared(shape_b, "float32")
            T.copy(A, s)
            T.transpose(s, t)
            T.copy(t, B)
    return k


@pytest.mark.parametrize("batch", [False, True])
def test_transpose(batch):
    a = np.random.rand(*((2, 64, 32) if batch else (64, 32))).astype(np.float32)
    b = np.zeros(a.shape[:-2] + a.shape[:-3:-1], np.float32)
    tilelang.compile(_transpose(batch=batch), target="cpu")(a, b)
    np.testing.assert_array_equal(b, np.swapaxes(a, -1, -2))


def test_transpose_of_regions():
    @T.prim_func
    def k(A: T.Tensor((8, 16), "float32"), B: T.Tensor((16, 16), "float32")):
        with T.Kernel(1, threads=32):
            t = T.alloc_shared((16, 16), "float32")
            T.fill(t, 0)
            T.transpose(A[0:8, 4:12], t[2:10, 3:11])
            T.copy(t, B)
    a = np.random.rand(8, 16).astype(np.float32)
    b = np.ones((16, 16), np.float32)
    tilelang.compile(k, target="cpu")(a, b)
    want = np.zeros((16, 16), np.float32)
    want[2:10, 3:11] = a[:, 4:12].T
    np.testing.assert_array_equal(b, want)


def test_transpose_shape_error():
    from tilelang.ir.errors import ShapeMismatchError
    with pytest.raises(ShapeMismatchError, match=r"a \(64, 32\) source needs a \(32, 64\) destination"):
        @T.prim_func
        def k(A: T.Tensor((64, 32), "float32")):
            with T.Kernel(1, threads=32):
                s = T.alloc_shared((64, 32), "float32")
                T.transpose(A, s)


def _allocate_and_annotations(N=64):
    @T.macro
    def double_into(src: T.SharedBuffer((N,), "float32"), dst: T.LocalBuffer((N,), "float32")):
        for i in T.serial(N):
            dst[i] = src[i] * 2

    @T.prim_func
    def k(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
        with T.Kernel(1, threads=1):
            with T.allocate([N], "float32", "shared") as s:
                with T.allocate([N], "float32", "local") as r:
                    T.copy(A, s)
                    double_into(s, r)
                    T.copy(r, B)
    return k


def test_allocate_and_scoped_annotations():
    a = np.random.rand(64).astype(np.float32)
    b = np.zeros_like(a)
    tilelang.compile(_allocate_and_annotations(), target="cpu")(a, b)
    np.testing.assert_array_equal(b, a * 2)
    ty = T.FragmentBuffer((16, 16), "float16")
    assert ty.scope == "local.fragment" and T.SharedBuffer[(4,), "int8"].scope == "shared"
    with pytest.raises(TileLangError, match="unknown scope"):
        @T.prim_func
        def bad(A: T.Tensor((4,), "float32")):
            with T.Kernel(1, threads=1):
                with T.allocate([4], "float32", "texture"):
                    pass


class Counter:
    """A helper object with per-thread state, updated by an inlined method."""

    def __init__(self):
        self.count = T.alloc_var("int32", 0)

    @T.inline
    def bump(self, by):
        self.count[0] = self.count[0] + by


def test_inline_method():
    @T.prim_func
    def k(A: T.Tensor((1,), "int32")):
        with T.Kernel(1, threads=1):
            c = Counter()
            for i in T.serial(5):
                c.bump(i)
            A[0] = c.count[0]
    a = np.zeros(1, np.int32)
    tilelang.compile(k, target="cpu")(a)
    assert a[0] == 10


def test_let_values():
    seen = {}

    @T.prim_func
    def k(A: T.Tensor((4,), "int32")):
        with T.Kernel(1, threads=1) as bx:
            x = bx * 2 + 1
            seen["x"] = (T.has_let_value(x), T.get_let_value(x))
            seen["bx"] = (T.has_let_value(bx), T.get_let_value(bx))
            A[0] = x
    assert seen["x"][0] and seen["x"][1] is not None and "bx" in str(seen["x"][1])
    assert seen["bx"] == (False, None)


def _make_tensor(N=64):
    @T.prim_func
    def k(A: T.Tensor((N,), "float32"), B: T.Tensor((N // 2, 2), "float32")):
        with T.Kernel(1, threads=32):
            A2 = T.make_tensor(A, (N // 2, 2), "float32")
            for i, j in T.Parallel(N // 2, 2):
                B[i, j] = A2[i, j] + 1
    return k


def test_make_tensor():
    a = np.random.rand(64).astype(np.float32)
    b = np.zeros((32, 2), np.float32)
    tilelang.compile(_make_tensor(), target="cpu")(a, b)
    np.testing.assert_array_equal(b, a.reshape(32, 2) + 1)
    with pytest.raises(TileLangError, match="raw addresses are not supported"):
        @T.prim_func
        def k(A: T.Tensor((4,), "float32")):
            with T.Kernel(1, threads=1):
                T.make_tensor_from_addr(0, (4,), "float32")


def _pdl(N=256):
    @T.prim_func
    def k(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32"), C: T.Tensor((N,), "float32")):
        with T.Kernel(N // 128, threads=128) as bx:
            for i in T.Parallel(128):
                B[bx * 128 + i] = A[bx * 128 + i] + 1
            T.pdl_trigger()
        with T.Kernel(N // 128, threads=128) as bx:
            T.pdl_sync()
            for i in T.Parallel(128):
                C[bx * 128 + i] = B[bx * 128 + i] * 2
    return k


def test_pdl_is_a_no_op_on_the_cpu():
    a = np.random.rand(256).astype(np.float32)
    b, c = np.zeros_like(a), np.zeros_like(a)
    tilelang.compile(_pdl(), target="cpu")(a, b, c)
    np.testing.assert_allclose(c, (a + 1) * 2)


@needs_nvrtc
@pytest.mark.parametrize("arch", ["sm_90a", "sm_80"])
def test_cuda_compiles(arch):
    for f in (_loops(), _transpose(), _transpose(batch=True), _allocate_and_annotations(), _make_tensor()):
        build(f, arch)
    src = build(_pdl(), arch).source
    # every thread waits / triggers (not only thread 0, as block-level stores do),
    # with the CUDA runtime's names (the published spelling)
    lines = [ln.strip() for ln in src.splitlines()]
    assert "cudaGridDependencySynchronize();" in lines and "cudaTriggerProgrammaticLaunchCompletion();" in lines
    # a kernel started early must not read through the non-coherent path
    assert "__restrict__" not in src


@needs_sass
def test_cuda_pdl_sass():
    """griddepcontrol.wait is ACQBULK and launch_dependents PREEXIT on sm_90a; sm_80 has neither."""
    from tilelang.backend.cuda.host.nvrtc import sass
    text = sass(build(_pdl(), "sm_90a").binary)
    assert "ACQBULK" in text and "PREEXIT" in text
    text = sass(build(_pdl(), "sm_80").binary)
    assert "ACQBULK" not in text and "PREEXIT" not in text


@pytest.mark.gpu
def test_gpu_runs():
    import torch
    for make, shapes, ref in ((_transpose, [(64, 32), (32, 64)], lambda a: a.T),
                              (_make_tensor, [(64,), (32, 2)], lambda a: a.reshape(32, 2) + 1),
                              (_allocate_and_annotations, [(64,), (64,)], lambda a: a * 2)):
        a = torch.rand(*shapes[0], device="cuda")
        b = torch.zeros(*shapes[1], device="cuda")
        tilelang.compile(make(), target="cuda")(a, b)
        torch.testing.assert_close(b, ref(a))
    a = torch.rand(256, device="cuda")
    b, c = torch.zeros_like(a), torch.zeros_like(a)
    tilelang.compile(_pdl(), target="cuda")(a, b, c)
    torch.testing.assert_close(c, (a + 1) * 2)
