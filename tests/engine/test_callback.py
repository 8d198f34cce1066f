"""`tilelang.engine.register_*_postproc`: a hook rewrites generated source before it
is compiled, and is part of the kernel cache key."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang.backend import postproc
from tilelang.engine.callback import register_c_postproc_callback, register_cuda_postproc_callback
from tilelang.engine import register_c_postproc


def _kernel(n=64, scale=2.0):
    @T.prim_func
    def f(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32")):
        with T.Kernel(1, threads=64) as bx:
            for i in T.Parallel(n):
                B[i] = A[i] * scale
    return f


@pytest.fixture(autouse=True)
def _clean():
    yield
    for lang in ("cuda", "c", "hip", "metal"):
        postproc.unregister(lang)


def test_c_hook_rewrites_the_compiled_source():
    seen = []

    @register_c_postproc_callback
    def hook(code, target):
        seen.append(target.kind)
        return "// rewritten by hook\n" + code

    k = tilelang.compile(_kernel(scale=3.0), target="cpu")
    assert k.get_kernel_source().startswith("// rewritten by hook")
    assert seen == ["cpu"]
    a = np.arange(64, dtype=np.float32)
    b = np.zeros_like(a)
    k(a, b)
    np.testing.assert_allclose(b, a * 3.0)


def test_hook_changes_behaviour_and_cache_key():
    # the hook really reaches the compiler: turn the scale 5 into 7
    register_c_postproc(lambda code, t: code.replace("5.0", "7.0").replace("5.f", "7.f"))
    k = tilelang.compile(_kernel(scale=5.0), target="cpu")
    a = np.ones(64, np.float32)
    b = np.zeros_like(a)
    k(a, b)
    np.testing.assert_allclose(b, 7.0)
    postproc.unregister("c")
    k2 = tilelang.compile(_kernel(scale=5.0), target="cpu")   # not the hooked binary from the cache
    k2(a, b)
    np.testing.assert_allclose(b, 5.0)


def test_decorator_forms_and_override():
    @register_cuda_postproc_callback()
    def first(code, t):
        return code

    with pytest.raises(ValueError, match="already registered"):
        @register_cuda_postproc_callback(override=False)
        def second(code, t):
            return code

    @register_cuda_postproc_callback(True)
    def third(code, t):
        return code
    assert postproc._HOOKS["cuda"] is third
    with pytest.raises(TypeError):
        register_cuda_postproc_callback(42)


def test_hook_must_return_source():
    register_c_postproc(lambda code, t: None)
    with pytest.raises(TypeError, match="must return the source"):
        tilelang.compile(_kernel(n=32), target="cpu")


def test_cuda_hook_applies_before_nvrtc():
    from tilelang.backend.cuda.host.nvrtc import nvrtc_available
    if not nvrtc_available():
        pytest.skip("NVRTC not installed")

    @register_cuda_postproc_callback
    def hook(code, target):
        return code.replace('#include "tl_cuda/tl.h"', '#include "tl_cuda/tl.h"\n#define TL_HOOKED 1')

    k = tilelang.compile(_kernel(n=128), target="cuda -arch=sm_90a")
    assert "#define TL_HOOKED 1" in k.get_kernel_source()


def test_published_top_level_names():
    import logging
    assert tilelang.engine.register_cuda_postproc is tilelang.register_cuda_postproc
    tilelang.set_log_level("warning")
    assert logging.getLogger("tilelang").level == logging.WARNING
