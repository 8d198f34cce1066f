"""tilelang.compile for target 'hip' end to end with hipcc: the source, the ISA
(get_asm) and a launch that explains why it cannot run here."""
import pytest

import tilelang
import tilelang.language as T
from tests.backend.hip.helpers import needs_hipcc


def fp8_gemm(M=128, N=128, K=128, bm=64, bn=64, bk=64):
    dt = "float8_e4m3fnuz"

    @T.prim_func
    def fp8_gemm_nt(A: T.Tensor((M, K), dt), B: T.Tensor((N, K), dt), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=256) as (bx, by):
            As = T.alloc_shared((bm, bk), dt)
            Bs = T.alloc_shared((bn, bk), dt)
            acc = T.alloc_fragment((bm, bn), "float32")
            T.clear(acc)
            for k in T.Pipelined(T.ceildiv(K, bk), num_stages=2):
                T.copy(A[by * bm, k * bk], As)
                T.copy(B[bx * bn, k * bk], Bs)
                T.gemm(As, Bs, acc, transpose_B=True)
            T.copy(acc, C[by * bm, bx * bn])
    return fp8_gemm_nt


@needs_hipcc
def test_fp8_gemm_on_gfx940(monkeypatch):
    from tilelang.backend.hip.compiler import kernel_resources
    kernel = tilelang.compile(fp8_gemm(), target="hip -arch=gfx940")
    src = kernel.get_kernel_source()
    assert "__builtin_amdgcn_mfma_f32_32x32x16_fp8_fp8" in src and "__shared__" in src
    asm = kernel.get_asm()
    assert "v_mfma_f32_32x32x16_fp8_fp8" in asm
    assert all(v.get("vgpr_spill_count") == 0 and v.get("private_segment_fixed_size") == 0
               for v in kernel_resources(asm).values())
    monkeypatch.setenv("TILELANG_HIP_LIBRARY", "/nonexistent/libamdhip64.so")
    monkeypatch.setattr("tilelang.backend.hip.runtime._driver", None)
    torch = pytest.importorskip("torch")
    a = torch.zeros(128, 128, dtype=torch.uint8)
    with pytest.raises(RuntimeError, match="libamdhip64"):
        kernel.launcher([a, a, torch.zeros(128, 128)], [], [])
