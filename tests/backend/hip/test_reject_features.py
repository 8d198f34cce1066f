"""NVIDIA-only features on target 'hip': a TargetFeatureError at the user's line
(file:line:col, the source line, a caret), raised before lowering."""
import pytest

import tilelang.language as T
from tilelang.ir.errors import TargetFeatureError
from tests.backend.hip.helpers import hip_source


def _cluster():
    @T.prim_func
    def k(A: T.Tensor((64,), "float32")):
        with T.Kernel(2, threads=64, cluster_dims=(2, 1, 1)) as bx:  # LINE: cluster
            A[bx] = 1.0
    return k


def _tma_copy():
    @T.prim_func
    def k(A: T.Tensor((64, 64), "float16"), B: T.Tensor((64, 64), "float16")):
        with T.Kernel(1, threads=128) as bx:
            S = T.alloc_shared((64, 64), "float16")
            bar = T.alloc_barrier(1)
            T.tma_copy(A, S, barrier=bar)  # LINE: tma
            T.mbarrier_arrive(bar)
            T.mbarrier_wait_parity(bar, 0)
            T.copy(S, B)
    return k


def _mbarrier():
    @T.prim_func
    def k(A: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=64) as bx:
            bar = T.alloc_barrier(64)
            T.mbarrier_arrive(bar)  # LINE: mbarrier
            A[0] = 1.0
    return k


@pytest.mark.parametrize("make,tag,word", [(_cluster, "cluster", "cluster"), (_tma_copy, "tma", "TMA"),
                                           (_mbarrier, "mbarrier", "mbarrier")])
def test_nvidia_feature_rejected_at_user_line(make, tag, word):
    with pytest.raises(TargetFeatureError) as ei:
        hip_source(make())
    e = ei.value
    assert word.lower() in e.message.lower() and "hip" in e.message
    assert e.span is not None and e.span.file == __file__
    with open(__file__) as f:
        line = f.read().splitlines()[e.span.line - 1]
    assert f"# LINE: {tag}" in line
    text = str(e)
    assert line.strip() in text and "^" in text


def test_gemm_without_whole_wavefronts_is_located():
    @T.prim_func
    def k(A: T.Tensor((16, 16), "float16"), C: T.Tensor((16, 16), "float32")):
        with T.Kernel(1, threads=32) as bx:
            S = T.alloc_shared((16, 16), "float16")
            acc = T.alloc_fragment((16, 16), "float32")
            T.copy(A, S)
            T.gemm(S, S, acc)  # LINE: gemm
            T.copy(acc, C)
    from tilelang.ir.errors import LoweringError
    with pytest.raises(LoweringError, match="multiple of 64") as ei:
        hip_source(k)
    assert ei.value.span.file == __file__


def test_fp8_gemm_needs_gfx940_and_fnuz():
    def make(dt):
        @T.prim_func
        def k(A: T.Tensor((64, 64), dt), C: T.Tensor((64, 64), "float32")):
            with T.Kernel(1, threads=256) as bx:
                S = T.alloc_shared((64, 64), dt)
                acc = T.alloc_fragment((64, 64), "float32")
                T.copy(A, S)
                T.gemm(S, S, acc, transpose_B=True)
                T.copy(acc, C)
        return k
    with pytest.raises(TargetFeatureError, match="gfx90a"):
        hip_source(make("float8_e4m3fnuz"), "gfx90a")
    with pytest.raises(TargetFeatureError, match="FNUZ"):
        hip_source(make("float8_e4m3fn"), "gfx940")
    hip_source(make("float8_e4m3fnuz"), "gfx940")   # accepted
