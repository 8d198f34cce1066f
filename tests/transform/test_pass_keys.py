"""Every published pass-config key is accepted; those without effect warn once."""
import warnings

import pytest

import tilelang
import tilelang.language as T
from tilelang.transform import PassConfigKey


def _k():
    @T.prim_func
    def k(A: T.Tensor((4,), "float32")):
        with T.Kernel(1):
            for i in T.Parallel(4):
                A[i] = A[i] + 1
    return k


def test_published_keys_exist():
    for name in ("TL_DEVICE_COMPILE_FLAGS", "TL_DISABLE_WGMMA", "TL_DISABLE_SHARED_MEMORY_REUSE",
                 "TL_ENABLE_FAST_MATH", "TL_DISABLE_TMA_LOWER", "TIR_NOALIAS"):
        assert isinstance(getattr(PassConfigKey, name).value, str)


def test_ignored_key_warns_once():
    from tilelang.transform import pass_keys
    pass_keys._warned.discard("tl.disable_out_of_bound_warning")
    with pytest.warns(UserWarning, match="no effect"):
        tilelang.compile(_k(), target="cpu", pass_configs={PassConfigKey.TL_DISABLE_OUT_OF_BOUND_WARNING: True})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tilelang.compile(_k(), target="cpu", pass_configs={PassConfigKey.TL_DISABLE_OUT_OF_BOUND_WARNING: True})


def test_enum_keys_are_honored_like_strings():
    # a PassConfigKey member must act exactly like its string
    k = tilelang.compile(_k(), target="cpu", pass_configs={PassConfigKey.TL_DISABLE_SAFE_MEMORY_ACCESS: True})
    assert k.pass_configs == {"tl.disable_safe_memory_legalize": True}
