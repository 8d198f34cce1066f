"""Hand-written wgmma GEMMs atom by atom (WGMMATensorCoreIntrinEmitter): the descriptors
and atom offsets read off the shared layouts, compiled to HGMMA without a GPU; on a GPU,
the result against torch."""
import pytest

from tilelang.ir.errors import TargetFeatureError, TileLangError
from tests.backend.cuda.conftest import needs_sass
from tests.backend.cuda.helpers import build, sass_ops
from tests.language.warpgroup_mma_kernels import wgmma_atom_gemm


@needs_sass
@pytest.mark.parametrize("M,N,K", [(64, 64, 32), (128, 128, 64)])
def test_atoms_compile_to_hgmma(M, N, K):
    art = build(wgmma_atom_gemm(M, N, K), "sm_90a")
    ops = sass_ops(art)
    assert ops["HGMMA"] == (M // 64) * (K // 16), ops
    assert ops["LDL"] == 0 and ops["STL"] == 0, ops


def test_emitter_shapes_and_errors():
    from tilelang.cuda.language import WGMMATensorCoreIntrinEmitter, TCGEN05TensorCoreIntrinEmitter
    e = WGMMATensorCoreIntrinEmitter(block_row_warps=4, block_col_warps=1, warp_row_tiles=32, warp_col_tiles=192,
                                     chunk=64)
    assert (e.wgmma_inst_n, e.wgmma_num_inst_m, e.wgmma_num_inst_n, e.wgmma_num_k_atoms) == (192, 2, 1, 4)
    assert e.wgmma_accum_regs == 2 * 96
    assert WGMMATensorCoreIntrinEmitter(warp_col_tiles=40).wgmma_inst_n == 8   # no multiple of 16 divides 40
    with pytest.raises(TileLangError, match="one warpgroup"):
        WGMMATensorCoreIntrinEmitter(block_row_warps=4, block_col_warps=2, warp_row_tiles=32, warp_col_tiles=64)
    with pytest.raises(TileLangError, match="fragment accumulator"):
        e.make_mma_store_layout(None)
    with pytest.raises(TargetFeatureError, match="sm_100"):
        TCGEN05TensorCoreIntrinEmitter(a_dtype="bfloat16")


@pytest.mark.gpu
@pytest.mark.parametrize("M,N,K", [(64, 64, 32), (128, 128, 64)])
def test_gpu_matches_torch(M, N, K):
    import torch
    import tilelang
    k = tilelang.compile(wgmma_atom_gemm(M, N, K), target="cuda")
    a = torch.randn(M, K, device="cuda", dtype=torch.float16)
    b = torch.randn(K, N, device="cuda", dtype=torch.float16)
    c = torch.zeros(M, N, device="cuda", dtype=torch.float32)
    k(a, b, c)
    torch.testing.assert_close(c, a.float() @ b.float(), rtol=1e-2, atol=1e-2)
