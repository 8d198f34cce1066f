"""GPU: the memory-bound kernels of benchmarks/memory_bound.py (examples rms_norm, softmax,
elementwise with the bench suite's configurations, a tile that 256 threads do not divide
into whole vectors, ragged edges) against torch, with each switch that concerns them
(TILELANG_CUDA_GUARDED_SPLIT, TILELANG_CUDA_STREAMING_OCCUPANCY, TILELANG_CUDA_REGISTER_PREFETCH; a
row whose last chunk is partial), and tiles staged through
shared memory and stored by a TMA store (TILELANG_CUDA_SELECTIVE_PROXY_FENCES)."""
import pytest

import tilelang
import tilelang.language as T
from tests.backend.cuda.helpers import load_example

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.gpu

VARIANTS = [{}, {"TILELANG_CUDA_GUARDED_SPLIT": "0"}, {"TILELANG_CUDA_STREAMING_OCCUPANCY": "1"},
            {"TILELANG_CUDA_REGISTER_PREFETCH": "1"}]   # (opt-in: its results checked too)
ROW_CONFIGS = [dict(block_M=1, block_N=4096, threads=256), dict(block_M=4, block_N=1024, threads=256),
               dict(block_M=2, block_N=1024, threads=128)]


def _compiled(monkeypatch, env, factory, *args, **kwargs):
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    return tilelang.compile(factory.get_tir(*args, **kwargs), out_idx=[-1], target="cuda")


@pytest.mark.parametrize("env", VARIANTS)
@pytest.mark.parametrize("cfg", ROW_CONFIGS)
def test_rms_norm_and_softmax(monkeypatch, env, cfg):
    rn, sm = load_example("rms_norm", "mb_gpu"), load_example("softmax", "mb_gpu")
    M, N = 67, 4096   # a last block with missing rows when block_M > 1
    torch.manual_seed(0)
    x = torch.randn(M, N, device="cuda", dtype=torch.float16)
    w = torch.randn(N, device="cuda", dtype=torch.float16)
    k = _compiled(monkeypatch, env, rn.rms_norm, M, N, dtype=T.float16, **cfg)
    torch.testing.assert_close(k(x, w), rn.ref_program(x, w), rtol=1e-2, atol=1e-2)
    k = _compiled(monkeypatch, env, sm.softmax, M, N, dtype=T.float16, **cfg)
    torch.testing.assert_close(k(x), torch.softmax(x.float(), -1).half(), rtol=1e-2, atol=1e-3)


@pytest.mark.parametrize("prefetch", ["1", "0"])
def test_chunked_rows_with_a_partial_last_chunk(monkeypatch, prefetch):
    """The chunk loaded one iteration ahead (plan/register_prefetch.py) is predicated as the
    loop's own load was: columns past N read 0 / are masked, rows past M are skipped."""
    rn, sm = load_example("rms_norm", "mb_gpu"), load_example("softmax", "mb_gpu")
    M, N, cfg = 67, 4000, dict(block_M=4, block_N=1024, threads=256)
    env = {"TILELANG_CUDA_REGISTER_PREFETCH": prefetch}
    torch.manual_seed(0)
    x = torch.randn(M, N, device="cuda", dtype=torch.float16)
    w = torch.randn(N, device="cuda", dtype=torch.float16)
    k = _compiled(monkeypatch, env, rn.rms_norm, M, N, dtype=T.float16, **cfg)
    torch.testing.assert_close(k(x, w), rn.ref_program(x, w), rtol=1e-2, atol=1e-2)
    k = _compiled(monkeypatch, env, sm.softmax, M, N, dtype=T.float16, **cfg)
    torch.testing.assert_close(k(x), torch.softmax(x.float(), -1).half(), rtol=1e-2, atol=1e-3)


@pytest.mark.parametrize("env", VARIANTS)
@pytest.mark.parametrize("cfg", [dict(block_M=32, block_N=256, threads=256), dict(block_M=4, block_N=256, threads=256),
                                 dict(block_M=1, block_N=1024, threads=256), dict(block_M=3, block_N=256, threads=256)])
def test_elementwise_add(monkeypatch, env, cfg):
    ew = load_example("elementwise", "mb_gpu")
    M, N = 100, 4096   # 100 rows: a ragged last block for every block_M above
    a = torch.randn(M, N, device="cuda", dtype=torch.float16)
    b = torch.randn(M, N, device="cuda", dtype=torch.float16)
    k = _compiled(monkeypatch, env, ew.elementwise_add, M, N, in_dtype=T.float16, out_dtype=T.float16, **cfg)
    torch.testing.assert_close(k(a, b), a + b)


@pytest.mark.parametrize("selective", ["1", "0"])
def test_staged_add_through_a_tma_store(monkeypatch, selective):
    # the barrier after the A / B copies is not fenced (plan/proxy_fences.py selective_fences)
    from tests.backend.cuda.plan.test_proxy_fences import staged_add
    monkeypatch.setenv("TILELANG_CUDA_SELECTIVE_PROXY_FENCES", selective)
    k = tilelang.compile(staged_add(), out_idx=[2, 3], target="cuda")
    a = torch.randn(256, 256, device="cuda")
    b = torch.randn(256, 256, device="cuda")
    c, _ = k(a, b)
    torch.testing.assert_close(c, a + b)
