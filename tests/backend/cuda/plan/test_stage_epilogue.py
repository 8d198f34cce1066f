"""plan/stage_epilogue.py (`stage_gemm_epilogue`, TILELANG_CUDA_EPILOGUE_TMA_STORE=1): the
fragment -> global store after a GEMM's pipelined loop becomes fragment -> shared tile ->
global (a TMA store), the shared tile placed over the ring's slots; copies that are not a
whole accumulator tile after such a loop, tiles larger than the ring and the switch's
default are left alone. GPU results against torch at the end (pytest -m gpu)."""
import pytest

import tilelang.language as T
from tilelang.backend.registry import parse_target
from tilelang.backend.cuda import pipeline as P
from tilelang.backend.cuda.options import OPTIONS, CudaOptions
from tilelang.backend.cuda.plan.stage_epilogue import stage_gemm_epilogue
from tilelang.ir import stmt as S
from tilelang.ir import tile_ops as TO
from tilelang.ir.printer import func_str
from tilelang.transform.pass_manager import PassContext, run_passes
from tests.backend.cuda.conftest import needs_nvrtc
from tests.backend.cuda.helpers import build, load_example, sass_ops

ON = {"TILELANG_CUDA_EPILOGUE_TMA_STORE": "1"}
gemm_example = load_example("gemm", "stage_epilogue")


def _ctx(env, arch="sm_90a"):
    ctx = PassContext(config={"_keep_tile_ops": P.KEEP_TILE_OPS, OPTIONS: CudaOptions.from_config(None, arch, env)})
    ctx.target = parse_target({"kind": "cuda", "arch": arch})
    return ctx


def _around(func, env=ON, arch="sm_90a"):
    """(the IR before stage_gemm_epilogue, the IR after it)."""
    ctx = _ctx(env, arch)
    k = P.PASSES.index(stage_gemm_epilogue)
    before = run_passes(func, P.PASSES[:k], ctx)
    return before, stage_gemm_epilogue(before, ctx)


def _gemm(M=1024, N=1024, K=512, dtype="float16", **kw):
    cfg = dict(block_M=128, block_N=256, block_K=64, num_stages=4, threads=256)
    cfg.update(kw)
    return gemm_example.matmul.get_tir(M, N, K, dtype=dtype, **cfg)


def _tail(func):
    """The launch body's statements after its pipelined loop."""
    body = func.body.body if isinstance(func.body, S.KernelLaunch) else func.body.stmts[0].body
    stmts = body.stmts
    k = max(i for i, s in enumerate(stmts) if isinstance(s, S.For) and s.kind == S.PIPELINED)
    return stmts[k + 1:]


@pytest.mark.parametrize("kw", [dict(), dict(dtype="bfloat16", trans_B=True, relu=True),
                                dict(block_N=128, num_stages=3)])
def test_accumulator_store_is_staged_through_shared(kw):
    before, after = _around(_gemm(**kw))
    old = [s for s in _tail(before) if isinstance(s, TO.Copy)]
    assert len(old) == 1 and old[0].src.buffer.scope == "local.fragment"
    tail = [s for s in _tail(after) if isinstance(s, (TO.Copy, S.DeclBuffer))]
    decl, to_shared, to_global = tail
    staged = decl.buffer
    bm, bn = (int(d) for d in old[0].src.buffer.shape)
    assert staged.scope == "shared" and [int(d) for d in staged.shape] == [bm, bn]
    assert staged.dtype == old[0].dst.buffer.dtype
    assert to_shared.src.buffer is old[0].src.buffer and to_shared.dst.buffer is staged
    assert to_global.src.buffer is staged and to_global.dst.buffer is old[0].dst.buffer
    assert [str(r) for r in to_global.dst.ranges] == [str(r) for r in old[0].dst.ranges]


def test_switch_off_and_other_targets_leave_the_kernel_alone():
    assert _around(_gemm(), env={})[1] is not _around(_gemm(), env={})[0]   # on by default
    before, after = _around(_gemm(), env={"TILELANG_CUDA_EPILOGUE_TMA_STORE": "0"})
    assert after is before
    before, after = _around(_gemm(), arch="sm_80")   # no TMA store
    assert func_str(after) == func_str(before)


def test_tile_larger_than_the_ring_or_not_16_bit_is_not_staged():
    # 128 x 256 x 2 = 64 KB > the ring's (128 x 16 + 16 x 256) x 2 B x 2 stages = 32 KB
    before, after = _around(_gemm(block_K=16, num_stages=2))
    assert after is before
    before, after = _around(_gemm(dtype="float32", block_N=128, block_K=32, num_stages=3))
    assert after is before


def test_no_pipelined_gemm_no_staging():
    @T.prim_func
    def scale(A: T.Tensor((256, 256), "float16"), C: T.Tensor((256, 256), "float16")):
        with T.Kernel(2, 2, threads=128) as (bx, by):
            F = T.alloc_fragment((128, 128), "float32")
            T.copy(A[by * 128, bx * 128], F)
            T.copy(F, C[by * 128, bx * 128])
    before, after = _around(scale)
    assert after is before


@needs_nvrtc
def test_generated_kernel_stores_through_tma(monkeypatch):
    monkeypatch.setenv("TILELANG_CUDA_EPILOGUE_TMA_STORE", "1")
    art = build(_gemm(M=1000))
    ops = sass_ops(art)
    assert ops["UTMASTG"] >= 1 and ops["HGMMA"] >= 1
    assert ops["STL"] == 0 and ops["LDL"] == 0
    monkeypatch.setenv("TILELANG_CUDA_EPILOGUE_TMA_STORE", "0")
    assert sass_ops(build(_gemm(M=1000)))["UTMASTG"] == 0


@pytest.mark.gpu
@pytest.mark.parametrize("M,N,K,dtype,kw", [
    (1024, 1024, 512, "float16", dict()),
    (1000, 1152, 320, "bfloat16", dict(trans_B=True, relu=True)),   # partial row and column tiles: the store clips
    (512, 384, 256, "float16", dict(block_M=64, block_N=128, num_stages=3, threads=128)),   # one warpgroup
    (64, 256, 512, "float16", dict()),   # the matrix is smaller than the tile
    (512, 512, 256, "float16", dict(block_N=128, num_stages=3)),
])
def test_matches_torch(monkeypatch, M, N, K, dtype, kw):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    import tilelang
    monkeypatch.setenv("TILELANG_CUDA_EPILOGUE_TMA_STORE", "1")
    kern = tilelang.compile(_gemm(M, N, K, dtype=dtype, **kw), out_idx=[-1], target="cuda")
    assert "tma_store" in kern.get_kernel_source()
    tdt = getattr(torch, dtype)
    a = torch.randn(M, K, device="cuda", dtype=tdt)
    b = torch.randn(N, K, device="cuda", dtype=tdt) if kw.get("trans_B") else torch.randn(K, N, device="cuda", dtype=tdt)
    ref = a.float() @ (b.float().t() if kw.get("trans_B") else b.float())
    ref = ref.relu() if kw.get("relu") else ref
    torch.testing.assert_close(kern(a, b).float(), ref, rtol=2e-2, atol=2e-1)
