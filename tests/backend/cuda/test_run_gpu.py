"""GPU: run the kernels and compare with torch."""
import pytest

from tests.backend.cuda import kernels as K

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.gpu


def _run(func, buffers, ints=(), floats=()):
    from tilelang.backend.registry import get_backend, parse_target
    be = get_backend("cuda")
    art = be.build(func, parse_target("cuda"))
    be.load(art)(buffers, ints, floats)
    torch.cuda.synchronize()
    return art


def test_elementwise_add():
    a, b = torch.randn(1000, device="cuda"), torch.randn(1000, device="cuda")
    c = torch.full_like(a, float("nan"))
    _run(K.elementwise_add(), [a, b, c])
    torch.testing.assert_close(c, a + b)


def test_copy_ragged():
    a = torch.randn(100, 70, device="cuda", dtype=torch.float16)
    b = torch.full_like(a, float("nan"))
    _run(K.copy_2d(), [a, b])
    torch.testing.assert_close(b, a * 2)


@pytest.mark.parametrize("trans_A,trans_B", [(False, False), (False, True), (True, False), (True, True)])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_gemm_mma(trans_A, trans_B, dtype):
    M, N, K_ = 256, 384, 320
    td = getattr(torch, dtype)
    a = torch.randn(M, K_, device="cuda", dtype=td)
    b = torch.randn(K_, N, device="cuda", dtype=td)
    c = torch.full((M, N), float("nan"), device="cuda", dtype=td)
    A = a.t().contiguous() if trans_A else a
    B = b.t().contiguous() if trans_B else b
    _run(K.gemm(M, N, K_, trans_A=trans_A, trans_B=trans_B, dtype=dtype), [A, B, c])
    ref = (a.float() @ b.float())
    err = (c.float() - ref).norm() / ref.norm()
    assert err < 1e-2, err


def test_gemm_ragged_and_simt():
    M, N, K_ = 200, 130, 100
    a = torch.randn(M, K_, device="cuda", dtype=torch.float16)
    b = torch.randn(K_, N, device="cuda", dtype=torch.float16)
    c = torch.full((M, N), float("nan"), device="cuda", dtype=torch.float16)
    _run(K.gemm(M, N, K_), [a, b, c])
    ref = a.float() @ b.float()
    assert ((c.float() - ref).norm() / ref.norm()) < 1e-2
    a32, b32 = a.float(), b.float()
    c32 = torch.full((M, N), float("nan"), device="cuda")
    _run(K.gemm(M, N, K_, dtype="float32", bk=16), [a32, b32, c32])
    torch.testing.assert_close(c32, ref, rtol=1e-4, atol=1e-3)


def test_softmax():
    a = torch.randn(100, 1000, device="cuda")
    b = torch.full_like(a, float("nan"))
    _run(K.softmax(), [a, b])
    torch.testing.assert_close(b, torch.softmax(a, dim=1))


def test_atomic_rowsum():
    a = torch.randn(64, 256, device="cuda")
    o = torch.zeros(64, device="cuda")
    _run(K.row_sum_atomic(), [a, o])
    torch.testing.assert_close(o, a.sum(1), rtol=1e-4, atol=1e-4)


def test_scalars_and_dynamic_dim():
    a = torch.randn(1000, device="cuda")
    b = torch.full_like(a, float("nan"))
    _run(K.scalar_and_dynamic(), [a, b], ints=[3, 1000], floats=[0.5])
    torch.testing.assert_close(b, a * 1.5)


def test_jit_compile_target_cuda():
    import tilelang
    k = tilelang.compile(K.elementwise_add(), out_idx=[2], target="cuda")
    a, b = torch.randn(1000, device="cuda"), torch.randn(1000, device="cuda")
    torch.testing.assert_close(k(a, b), a + b)


def test_misaligned_view_is_rejected():
    from tilelang.backend.cuda.host.runtime import CudaRuntimeError
    M, N, K_ = 128, 128, 64
    a = torch.randn(M * K_ + 1, device="cuda", dtype=torch.float16)[1:].view(M, K_)
    b = torch.randn(K_, N, device="cuda", dtype=torch.float16)
    c = torch.empty(M, N, device="cuda", dtype=torch.float16)
    with pytest.raises(CudaRuntimeError, match="aligned"):
        _run(K.gemm(M, N, K_), [a, b, c])


@pytest.mark.parametrize("trans_A,trans_B", [(False, False), (False, True), (True, False)])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("cfg", [dict(bm=128, bn=256, bk=64, threads=256, stages=3),
                                 dict(bm=64, bn=128, bk=64, threads=128, stages=2)])
def test_gemm_pipelined_wgmma(trans_A, trans_B, dtype, cfg):
    """sm_90a: wgmma from swizzled shared tiles filled by cp.async; ragged M, N, K."""
    M, N, K_ = 320, 400, 360
    td = getattr(torch, dtype)
    a = torch.randn(M, K_, device="cuda", dtype=td)
    b = torch.randn(K_, N, device="cuda", dtype=td)
    c = torch.full((M, N), float("nan"), device="cuda", dtype=td)
    A = a.t().contiguous() if trans_A else a
    B = b.t().contiguous() if trans_B else b
    art = _run(K.gemm(M, N, K_, trans_A=trans_A, trans_B=trans_B, dtype=dtype, **cfg), [A, B, c])
    ref = a.float() @ b.float()
    err = (c.float() - ref).norm() / ref.norm()
    assert err < 1e-2, (err, "wgmma_gemm" in art.source)


@pytest.mark.parametrize("tma", [True, False])
@pytest.mark.parametrize("trans_A,trans_B", [(False, False), (False, True), (True, False)])
@pytest.mark.parametrize("M,N,K_", [(320, 400, 360), (512, 512, 1024)])
def test_gemm_tma(tma, trans_A, trans_B, M, N, K_):
    """sm_90a: bulk tensor copies on mbarriers (default) vs cp.async (tl.disable_tma_lower);
    ragged edges are zero-filled boxes; a second call with other tensors re-encodes the maps."""
    from tilelang.backend.registry import get_backend, parse_target
    be = get_backend("cuda")
    art = be.build(K.gemm(M, N, K_, bm=128, bn=256, bk=64, threads=256, stages=4, trans_A=trans_A,
                          trans_B=trans_B), parse_target("cuda"), {"tl.disable_tma_lower": not tma})
    if torch.cuda.get_device_capability() >= (9, 0):
        assert ("tma_load_2d" in art.source) == tma
    run = be.load(art)
    for _ in range(2):
        a = torch.randn(M, K_, device="cuda", dtype=torch.float16)
        b = torch.randn(K_, N, device="cuda", dtype=torch.float16)
        c = torch.full((M, N), float("nan"), device="cuda", dtype=torch.float16)
        run([a.t().contiguous() if trans_A else a, b.t().contiguous() if trans_B else b, c])
        torch.cuda.synchronize()
        ref = a.float() @ b.float()
        assert float((c.float() - ref).norm() / ref.norm()) < 1e-2


def test_view_of_shared_tile():
    import tilelang.language as T

    @T.prim_func
    def viewk(A: T.Tensor((64, 64), "float32"), B: T.Tensor((4096,), "float32")):
        with T.Kernel(1, threads=128) as bx:
            S = T.alloc_shared((64, 64), "float32")
            T.copy(A, S)
            flat = T.reshape(S, (4096,))
            for i in T.Parallel(4096):
                B[i] = flat[(i + 64) % 4096] * 2
    a = torch.randn(64, 64, device="cuda")
    b = torch.full((4096,), float("nan"), device="cuda")
    _run(viewk, [a, b])
    torch.testing.assert_close(b, a.flatten().roll(-64) * 2)


def _fa_module():
    import os
    import sys
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    sys.path.insert(0, os.path.join(root, "examples", "flash_attention"))
    import example_flash_attention as FA
    return FA


@pytest.mark.parametrize("rs", ["1", "0"])
@pytest.mark.parametrize("b,h,sq,skv,d,causal,cfg", [
    (2, 3, 512, 512, 128, False, dict(block_M=128, block_N=64, num_stages=2, threads=256)),
    (2, 3, 512, 512, 128, True, dict(block_M=128, block_N=64, num_stages=2, threads=256)),
    (1, 2, 300, 427, 64, True, dict(block_M=64, block_N=64, num_stages=2, threads=128)),
    (1, 2, 333, 333, 64, False, dict(block_M=128, block_N=128, num_stages=2, threads=256)),
    (2, 2, 256, 256, 128, False, dict(block_M=64, block_N=64, num_stages=1, threads=128)),
])
def test_flash_attention_register_fragments(monkeypatch, rs, b, h, sq, skv, d, causal, cfg):
    """Scores, P and row statistics in registers (wgmma A from registers, or P staged
    through shared memory with rs=0); ragged lengths exercise the masks."""
    monkeypatch.setenv("TILELANG_CUDA_WGMMA_RS", rs)
    FA = _fa_module()
    f = FA.flash_attention.get_tir(b, h, sq, skv, d, causal, "bhsd", **cfg)
    q = torch.randn(b, h, sq, d, device="cuda", dtype=torch.float16)
    k = torch.randn(b, h, skv, d, device="cuda", dtype=torch.float16)
    v = torch.randn(b, h, skv, d, device="cuda", dtype=torch.float16)
    o = torch.full_like(q, float("nan"))
    art = _run(f, [q, k, v, o])
    assert ("wgmma_gemm_rs" in art.source) == (rs == "1")
    ref = FA.ref_program(q, k, v, causal, "bhsd").float()
    err = (o.float() - ref).norm() / ref.norm()
    assert err < 1e-2, err


@pytest.mark.parametrize("kw", [dict(), dict(threads=64), dict(threads=64, policy="Square", N=128),
                                dict(reduce_dim=0), dict(M=200)])
def test_gemm_row_stats(kw):
    """Register reductions (quad shuffles, clear and non-clear), row-replicated stores,
    and the shared-memory fallbacks, against torch."""
    M, N, K_ = kw.get("M", 256), kw.get("N", 64), 128
    a = torch.randn(M, K_, device="cuda", dtype=torch.float16)
    b = torch.randn(K_, N, device="cuda", dtype=torch.float16)
    d = torch.full((M, N), float("nan"), device="cuda", dtype=torch.float16)
    mx = torch.full((M,), float("nan"), device="cuda")
    sm = torch.full((M,), float("nan"), device="cuda")
    _run(K.gemm_row_stats(**kw), [a, b, d, mx, sm])
    c = a.float() @ b.float()
    if kw.get("reduce_dim", 1) == 1:
        m = c.max(1).values
        torch.testing.assert_close(mx, m, rtol=1e-3, atol=1e-3)
        c = c - m[:, None]
        torch.testing.assert_close(sm, 1 + c.sum(1), rtol=1e-3, atol=5e-2)
    torch.testing.assert_close(d.float(), (c * 0.5).half().float(), rtol=1e-2, atol=5e-2)
