"""CPU-only: kernels compile with NVRTC for sm_80 and sm_90a; their SASS uses the
instructions it must (HMMA for the tensor-core gemm) and never spills to local
memory (LDL/STL)."""
import pytest

from tests.backend.cuda import kernels as K
from tests.backend.cuda.conftest import needs_nvrtc, needs_sass
from tests.backend.cuda.helpers import build, sass_ops

ARCHS = ["sm_80", "sm_90a"]
SIMPLE = ["elementwise_add", "copy_2d", "softmax", "row_sum_atomic", "scalar_and_dynamic"]


@needs_sass
@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("name", SIMPLE)
def test_simple_kernels_compile_without_spills(name, arch):
    art = build(getattr(K, name)(), arch)
    ops = sass_ops(art)
    assert ops["LDL"] == 0 and ops["STL"] == 0, ops


@needs_sass
@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("trans_A,trans_B", [(False, False), (False, True), (True, False), (True, True)])
def test_gemm_uses_tensor_cores(arch, trans_A, trans_B):
    art = build(K.gemm(trans_A=trans_A, trans_B=trans_B), arch)
    ops = sass_ops(art)
    if arch == "sm_90a" and not trans_A:
        # 128 x 128 x 32 on one warpgroup: wgmma over two 64-row slabs, A (and a K-major B) in sw64
        assert "tl::wgmma_" in art.source and ops["HGMMA"] > 0, ops
    else:
        assert "tl::gemm_ss<" in art.source
        assert ops["HMMA"] > 0 and ops["LDSM"] > 0, ops
    assert ops["LDL"] == 0 and ops["STL"] == 0, ops


@needs_sass
def test_gemm_bf16_and_256_threads():
    art = build(K.gemm(dtype="bfloat16", threads=256), "sm_90a")
    ops = sass_ops(art)
    assert ops["HGMMA"] > 0 and ops["LDL"] == 0


@needs_nvrtc
def test_fp32_gemm_runs_on_tf32_tensor_cores():
    art = build(K.gemm(dtype="float32", bk=16), "sm_80")
    assert "tl::gemm_ss<" not in art.source and "tl::gemm_ss_tf32<128, 128, 16, 2, 2, false, false>" in art.source


@needs_nvrtc
def test_accumulator_lives_in_registers():
    art = build(K.gemm(), "sm_80")
    assert "float Cf[128];" in art.source


@needs_nvrtc
def test_large_shared_memory_recorded():
    art = build(K.gemm(dtype="float32", bm=128, bn=128, bk=64), "sm_90a")
    assert art.meta["kernels"][0]["smem"] > 48 * 1024


@needs_nvrtc
def test_compile_error_shows_source_line():
    from tilelang.backend.cuda.host.nvrtc import compile_cuda, CudaCompileError
    src = '#include "tl_cuda/tl.h"\nextern "C" __global__ void k() {\n  int x = undefined_name;\n}\n'
    with pytest.raises(CudaCompileError) as e:
        compile_cuda(src, "sm_80", name="bad.cu")
    msg = str(e.value)
    assert "undefined_name" in msg and ">    3 |" in msg


@needs_sass
def test_gemm_tile_copies_are_16_byte_vectors(monkeypatch):
    art = build(K.gemm(trans_A=True), "sm_90a")   # mma.sync: its tiles come by cp.async
    assert "tl::cp_async_gs<16>" in art.source or "tl::cp_async_gs_conditional<16>" in art.source
    from tilelang.backend.cuda.host.nvrtc import sass
    assert "LDGSTS.E.BYPASS.128" in sass(art.binary)
    # C: the epilogue is one TMA store of a staged tile (plan/stage_epilogue.py): 16-byte aligned
    assert art.meta["kernels"][0]["aligned"] == {"A": 16, "B": 16, "C": 16}
    # stored per thread instead, column pairs as 32-bit words
    monkeypatch.setenv("TILELANG_CUDA_EPILOGUE_TMA_STORE", "0")
    art = build(K.gemm(trans_A=True), "sm_90a")
    assert art.meta["kernels"][0]["aligned"] == {"A": 16, "B": 16, "C": 4}


@needs_nvrtc
def test_ragged_width_vectorizes_only_what_divides():
    art = build(K.copy_2d(N=70), "sm_80")   # 70 halves per row: pairs only
    assert art.meta["kernels"][0]["aligned"] == {"A": 4, "B": 4}


@needs_nvrtc
def test_nvrtc_leaves_python_objects_alone():
    """A kernel that compiles without a warning has a one-byte (empty) log. NVRTC writes
    into the buffer it is handed; `b" " * 1` was CPython's shared one-byte object, and
    its NUL then changed every b" " and f-string " " compiled later in the process."""
    from tilelang.backend.cuda.host.nvrtc import compile_cuda
    c = compile_cuda('extern "C" __global__ void quiet(float* x) { x[threadIdx.x] = 1.0f; }', "sm_90a")
    assert c.log == ""
    assert eval(compile('b" "', "<after>", "eval"))[0] == 32   # (== b" " would compare the object with itself)
    assert eval(compile('f"{a} {b}"', "<after>", "eval"), {"a": "int32_t", "b": "bx"}) == "int32_t bx"
