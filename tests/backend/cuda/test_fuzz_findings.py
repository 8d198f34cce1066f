"""Wrong results on the H200 that the differential fuzzer (tilelang/testing/fuzz) found,
each checked on the CPU reference, in the generated CUDA, and on the GPU."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tests.backend.cuda.helpers import build


def int_reduce(kind, negate):
    @T.prim_func
    def k(A: T.Tensor((4, 32), "int32"), B: T.Tensor((4,), "int32")):
        with T.Kernel(1, threads=32):
            f = T.alloc_fragment((4, 32), "int32")
            r = T.alloc_fragment((4,), "int32")
            T.copy(A, f)
            if negate:
                for i, j in T.Parallel(4, 32):
                    f[i, j] = -f[i, j]
            getattr(T, f"reduce_{kind}")(f, r, dim=1)
            T.copy(r, B)
    return k


def cast_chain():
    # float32 -> float16 -> float32: the float16 rounding is part of the result
    @T.prim_func
    def k(A: T.Tensor((64, 64), "float32"), B: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128):
            f = T.alloc_fragment((64, 64), "float32")
            T.copy(A, f)
            for i, j in T.Parallel(64, 64):
                B[i, j] = T.cast(T.cast(f[i, j], "float16"), "float32")
    return k


CASES = [("absmax", False), ("max", True), ("min", True)]


def _ref(kind, negate, a):
    x = -a if negate else a
    return {"absmax": np.abs(x).max(1), "max": x.max(1), "min": x.min(1)}[kind]


def _inputs():
    rng = np.random.default_rng(0)
    a = rng.integers(-1000, 1000, (4, 32)).astype("int32")
    a[0] = -7   # a row of one negative value: absmax 7 (ptxas's fused form gave 0)
    return a


@pytest.mark.parametrize("kind,negate", CASES)
def test_int_reductions_on_the_cpu(kind, negate):
    a, b = _inputs(), np.zeros(4, "int32")
    tilelang.compile(int_reduce(kind, negate), target="cpu")(a, b)
    np.testing.assert_array_equal(b, _ref(kind, negate, a))


def test_int_minmax_is_a_compare_and_select():
    # tl::max/min on int go through setp/selp, which ptxas fuses without losing signs
    import pathlib
    import tilelang.backend.cuda as cuda
    header = pathlib.Path(cuda.__file__).parent / "include" / "tl_cuda" / "common.h"
    assert "tl::max(" in build(int_reduce("absmax", False)).source
    assert "selp.b32" in header.read_text()


def test_cast_chain_is_not_a_plain_copy():
    src = build(cast_chain()).source
    assert "half" in src   # the intermediate float16 conversion is kept


def test_cast_chain_on_the_cpu():
    a = np.random.default_rng(1).standard_normal((64, 64)).astype("float32") * 3
    b = np.zeros_like(a)
    tilelang.compile(cast_chain(), target="cpu")(a, b)
    np.testing.assert_array_equal(b, a.astype("float16").astype("float32"))


@pytest.mark.gpu
@pytest.mark.parametrize("kind,negate", CASES)
def test_int_reductions_on_the_gpu(kind, negate):
    torch = pytest.importorskip("torch")
    a = _inputs()
    b = torch.zeros(4, dtype=torch.int32, device="cuda")
    tilelang.compile(int_reduce(kind, negate), target="cuda")(torch.from_numpy(a).cuda(), b)
    np.testing.assert_array_equal(b.cpu().numpy(), _ref(kind, negate, a))


@pytest.mark.gpu
def test_cast_chain_on_the_gpu():
    torch = pytest.importorskip("torch")
    a = torch.randn(64, 64, device="cuda") * 3
    b = torch.zeros_like(a)
    tilelang.compile(cast_chain(), target="cuda")(a, b)
    assert torch.equal(b, a.half().float())
