"""Register tiles next to a gemm operand that lives in shared memory (layout/fragment.py,
layout/tile.py): DeepSeek mHC's pre block (`mhc_pre_gemm_sqrsum_tilelang`) widens a bf16
tile to tf32 for an mma.sync gemm whose A operand is read from shared memory, and sums the
squares of that operand in a loop. Only the gemms' register layouts bind the fragments
their loops touch; so the bf16 tile and the sum-of-squares partials are register tiles
(before: both in shared memory, the partials summed by 32 of the 128 threads through 64
dependent shared-memory round trips per tile). The bf16 tile's loads from the 128-byte
swizzled staging tile are 16-byte vectors (ops/vector_access.py `swizzled_vector_ok`)."""
import pytest

import tilelang.language as T
from tests.backend.cuda.conftest import needs_nvrtc, needs_sass
from tests.backend.cuda.helpers import build, sass_ops


def gemm_sqrsum(num_tokens=96, hc_mult3=24, hidden=512, token_block=32, hidden_block=128):
    """The published example's kernel at a small size (static token count)."""
    import tilelang

    @T.prim_func
    def kernel(x: T.Tensor((num_tokens, hidden), T.bfloat16), fn: T.Tensor((hc_mult3, hidden), T.float32),
               out: T.Tensor((num_tokens, hc_mult3), T.float32), sqrsum: T.Tensor((num_tokens,), T.float32)):
        with T.Kernel(T.ceildiv(num_tokens, token_block)) as px:
            out_frag = T.alloc_fragment((token_block, 32), T.float32)
            sqrsum_part = T.alloc_fragment((token_block, 4), T.float32)
            T.clear(out_frag)
            T.clear(sqrsum_part)
            for pz in T.Pipelined(hidden // hidden_block, num_stages=2):
                x_smem_16 = T.alloc_shared((token_block, hidden_block), T.bfloat16)
                fn_smem = T.alloc_shared((32, hidden_block), T.float32)
                T.annotate_layout({x_smem_16: tilelang.layout.make_swizzled_layout(x_smem_16)})
                T.copy(x[px * token_block, pz * hidden_block], x_smem_16)
                T.copy(fn[0, pz * hidden_block], fn_smem)
                x_frag_16 = T.alloc_fragment((token_block, hidden_block), T.bfloat16)
                T.copy(x_smem_16, x_frag_16)
                x_frag = T.alloc_fragment((token_block, hidden_block), T.float32)
                T.copy(x_frag_16, x_frag)
                for jj in T.serial(hidden_block // 4):
                    for i, j in T.Parallel(token_block, 4):
                        sqrsum_part[i, j] += x_frag[i, jj * 4 + j] * x_frag[i, jj * 4 + j]
                T.gemm(x_frag, fn_smem, out_frag, transpose_B=True)
            sqrsum_l = T.alloc_fragment(token_block, T.float32)
            T.reduce_sum(sqrsum_part, sqrsum_l)
            for i in T.Parallel(token_block):
                sqrsum[px * token_block + i] = sqrsum_l[i]
            for i, j in T.Parallel(token_block, 32):
                if j < hc_mult3:
                    out[px * token_block + i, j] = out_frag[i, j]
    return kernel


def _report(func, capsys, monkeypatch):
    monkeypatch.setenv("TILELANG_CUDA_DUMP_FRAGMENTS", "1")
    art = build(func)
    return art, {ln.split()[0]: ln for ln in capsys.readouterr().err.splitlines()[1:]}


@needs_nvrtc
def test_loop_partners_of_a_shared_gemm_operand_are_register_tiles(capsys, monkeypatch):
    # the gemm reads A from shared memory (by default it reads the register fragment:
    # tests/backend/cuda/layout/test_tf32_a_layout.py)
    monkeypatch.setenv("TILELANG_CUDA_WGMMA_RS", "0")
    art, rep = _report(gemm_sqrsum(), capsys, monkeypatch)
    assert "shared" in rep["x_frag"], rep                        # the mma.sync A operand
    assert "ThreadTile<32, 128, T=128, V=8>" in rep["x_frag_16"] and "registers" in rep["x_frag_16"], rep
    assert "ThreadTile<32, 4, T=128, V=1>" in rep["sqrsum_part"], rep
    assert "TileRows" in rep["sqrsum_l"], rep
    assert "registers (acc)" in rep["out_frag"] or "MmaAccLayout" in rep["out_frag"], rep
    src = art.source
    for name in ("x_frag_16", "sqrsum_part", "sqrsum_l"):
        assert f"* {name} = reinterpret_cast" not in src, name
    # the swizzled staging tile is read as 16-byte vectors into the register tile
    assert "reinterpret_cast<const uint4*>(&x_smem_16_slot" in src, src


@needs_sass
def test_gemm_sqrsum_sass_vector_shared_loads_no_spills(monkeypatch):
    from tilelang.backend.cuda.host.nvrtc import sass
    monkeypatch.setenv("TILELANG_CUDA_WGMMA_RS", "0")
    art = build(gemm_sqrsum())
    ops, text = sass_ops(art), sass(art.binary)
    assert ops["HMMA"] > 0 and ops["LDSM"] > 0, ops
    assert ops["LDL"] == 0 and ops["STL"] == 0, ops
    assert "LDS.U16" not in text and "LDS.128" in text, ops


@pytest.mark.gpu
@pytest.mark.parametrize("register_a", [True, False])
@pytest.mark.parametrize("num_tokens", [96, 100])
def test_gemm_sqrsum_on_gpu(num_tokens, register_a, monkeypatch):
    monkeypatch.setenv("TILELANG_CUDA_WGMMA_RS", "1" if register_a else "0")
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU")
    from tilelang.backend.registry import get_backend, parse_target
    torch.manual_seed(0)
    x = torch.randn(num_tokens, 512, device="cuda").bfloat16()
    fn = torch.randn(24, 512, device="cuda") * 1e-2
    out = torch.full((num_tokens, 24), float("nan"), device="cuda")
    sq = torch.full((num_tokens,), float("nan"), device="cuda")
    be = get_backend("cuda")
    art = be.build(gemm_sqrsum(num_tokens=num_tokens), parse_target("cuda"))
    assert ("gemm_rs_tf32" in art.source) == register_a
    be.load(art)([x, fn, out, sq], (), ())
    torch.cuda.synchronize()
    xf = x.float()
    torch.testing.assert_close(sq, xf.square().sum(-1), rtol=1e-4, atol=1e-3)
    ref = xf @ fn.T
    assert ((out - ref).abs().max() / ref.abs().max()).item() < 2e-3     # tf32 products
