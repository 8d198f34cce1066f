"""`T.cast(x, dtype, round=, sat=, rbits=)`: the published keyword arguments. Round to
nearest (the default, "" or "rn") is an ordinary conversion; modifiers no target of ours
has (stochastic rounding is sm_100a's) are rejected at the user's line, never ignored."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang.ir import expr as E
from tilelang.ir.errors import TargetFeatureError


@pytest.mark.parametrize("kwargs,match", [(dict(round="up"), "Invalid round"), (dict(sat="yes"), "Invalid sat"),
                                          (dict(round="rs"), "rbits is required"),
                                          (dict(round="rn", rbits=3), "rbits is only valid")])
def test_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        T.cast(1.0, "float8_e4m3fn", **kwargs)


def test_round_to_nearest_is_a_plain_cast():
    x = E.Var("x", "float32")
    assert isinstance(T.cast(x, "float16", round="rn"), E.Cast)
    assert isinstance(T.cast(x, "float16", sat=False), E.Cast)     # fp16 conversions never saturate
    assert not isinstance(T.cast(x, "float8_e4m3fn", sat=False), E.Cast)   # fp8 ones do: kept, then rejected


def rounded(round, dtype="float8_e4m3fn"):
    @T.prim_func
    def k(A: T.Tensor((32,), "float32"), B: T.Tensor((32,), dtype)):
        with T.Kernel(1, threads=32):
            for i in T.Parallel(32):
                B[i] = T.cast(A[i], dtype, round=round, rbits=T.uint32(7) if round == "rs" else None)
    return k


@pytest.mark.parametrize("target", ["cpu", "cuda -arch=sm_90a"])
def test_stochastic_rounding_is_rejected_at_the_users_line(target):
    if target != "cpu":
        pytest.importorskip("cuda.bindings.nvrtc")
    with pytest.raises(TargetFeatureError, match="Stochastic rounding f32-to-FP8 requires sm_100a") as e:
        tilelang.compile(rounded("rs"), target=target)
    assert "test_cast_rounding.py" in str(e.value)
    assert isinstance(e.value, RuntimeError)


def test_rn_runs_like_the_default_cast_on_cpu():
    kern = tilelang.compile(rounded("rn", "float16"), target="cpu")
    a = np.linspace(-3, 3, 32).astype(np.float32)
    b = np.zeros(32, dtype=np.float16)
    kern(a, b)
    np.testing.assert_array_equal(b, a.astype(np.float16))
