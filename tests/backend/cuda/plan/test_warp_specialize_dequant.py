"""plan/warp_specialize.py on dequantizing GEMMs: a pipelined body that converts a packed
tile (loaded on the TMA ring) into the gemm's shared operand before the wgmma runs in the
consumer warpgroups while a producer warpgroup loads ahead, as the published package does
for its dequantize_gemm examples; the body's block barriers become the consumers' named
barrier, one of them at the top of every iteration (the converted tile is rewritten), and
an epilogue tile placed over the ring does not stop it. CPU: the decision, the printed
roles, SASS. GPU: results against torch."""
import pytest

import tilelang
import tilelang.language as T
from tests.backend.cuda.conftest import needs_sass
from tests.backend.cuda.helpers import build, sass_ops
from tests.backend.cuda.plan.test_warp_specialize import _before_after, _consumer_code, _decision


def dequant_gemm(M, N, K, bM=128, bN=128, bK=64, threads=256, stages=2, dtype="float16", epilogue_tile=True,
                 user_barrier=False):
    """C = A @ dequant(B)^T: B holds two signed 4-bit values per byte (offset 8), scaled per
    row and K tile by `Scale`, a global tensor the body reads (as the mxfp4 example does).
    `user_barrier`: the body also synchronizes a numbered barrier of its own."""
    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((N, K // 2), "uint8"), Scale: T.Tensor((N, K // bK), dtype),
             C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), threads=threads) as (bx, by):
            A_s = T.alloc_shared((bM, bK), dtype)
            B_s = T.alloc_shared((bN, bK // 2), "uint8")
            B_d = T.alloc_shared((bN, bK), dtype)
            C_l = T.alloc_fragment((bM, bN), "float32")
            T.clear(C_l)
            for k in T.Pipelined(K // bK, num_stages=stages):
                T.copy(A[by * bM, k * bK], A_s)
                T.copy(B[bx * bN, k * bK // 2], B_s)
                for i, j in T.Parallel(bN, bK):
                    nib = (B_s[i, j // 2] >> T.Cast("uint8", 4 * (j % 2))) & T.Cast("uint8", 15)
                    B_d[i, j] = (T.Cast(dtype, nib) - T.Cast(dtype, 8)) * Scale[bx * bN + i, k]
                if user_barrier:
                    T.sync_threads(1, threads)
                T.gemm(A_s, B_d, C_l, transpose_B=True)
            if epilogue_tile:   # staged through shared memory, which may lie over the ring
                C_s = T.alloc_shared((bM, bN), dtype)
                T.copy(C_l, C_s)
                T.copy(C_s, C[by * bM, bx * bN])
            else:
                T.copy(C_l, C[by * bM, bx * bN])
    return main


def test_a_dequantizing_body_gets_a_producer_warpgroup():
    _, after = _before_after(dequant_gemm(1024, 1024, 1024))
    assert _decision(after) == [
        "warp-specialized loop over k: 384 threads launched, producer threads 256..383 (one elected thread "
        "issues the TMA loads of 2 slots), consumers 0..255 with named barrier 1, registers: producer 24, "
        "consumers 240 (setmaxnreg); slot released after the body"]
    _, after = _before_after(dequant_gemm(1024, 1024, 1024, epilogue_tile=False, threads=128, bM=64))
    assert _decision(after)[0].startswith("warp-specialized loop over k: 256 threads launched")


def test_a_numbered_barrier_of_the_users_keeps_the_single_role_ring():
    _, after = _before_after(dequant_gemm(1024, 1024, 1024, user_barrier=True))
    assert _decision(after) == ["none (the pipelined body synchronizes a numbered barrier of its own)"]


def test_a_body_that_converts_no_ring_tile_keeps_the_ring_and_its_schedules():
    """Attention: the softmax between the gemms reads registers only (the ring's warpgroup
    ping-pong stays)."""
    from tests.backend.cuda.plan.test_warp_specialize import gemm_variant
    _, after = _before_after(gemm_variant("body"))
    assert _decision(after) == ["none (the pipelined body does more than wgmma gemms into register accumulators)"]


def test_the_pass_config_still_turns_it_off():
    _, after = _before_after(dequant_gemm(1024, 1024, 1024), config={"tl.disable_warp_specialized": True})
    assert _decision(after) == ["none (switched off (pass config tl.disable_warp_specialized or "
                                "TILELANG_CUDA_WARP_SPECIALIZE=0))"]


@needs_sass
def test_consumers_convert_then_multiply_between_their_named_barriers():
    art = build(dequant_gemm(1024, 1024, 1024))
    assert art.meta["kernels"][0]["threads"] == [384, 1, 1]
    consumer = _consumer_code(art.source)
    assert "__syncthreads" not in consumer
    loop = consumer[consumer.index("for (int k_1 = "):]
    # wait for the slot, a barrier (the previous iteration's gemm has read B_d), convert,
    # a barrier (B_d written), the gemm, release the slot
    wait = loop.index("tl::mbar_wait(&ring_full[")
    top = loop.index('bar.sync 1, 256;', wait)
    convert = loop.index("B_d[tl::sw128<128>(", top)
    before_gemm = loop.index('bar.sync 1, 256;', convert)
    gemm = loop.index("tl::wgmma_gemm_ss<", before_gemm)
    assert gemm < loop.index("tl::mbar_arrive(&ring_empty[")
    ops = sass_ops(art)
    assert ops["USETMAXREG"] == 2 and ops["UTMALDG"] > 0 and ops["HGMMA"] >= 4, ops
    assert ops["STL"] == 0 and ops["LDL"] == 0, ops


# GPU -------------------------------------------------------------------------------------

def _reference(a, b, s, bK):
    import torch
    lo = (b & 15).float() - 8
    hi = (b >> 4).float() - 8
    w = torch.stack([lo, hi], -1).reshape(b.shape[0], -1) * s.float().repeat_interleave(bK, 1)
    return a.float() @ w.T


@pytest.mark.gpu
@pytest.mark.parametrize("dtype,bM,threads,stages", [("float16", 128, 256, 2), ("bfloat16", 256, 256, 2),
                                                     ("float16", 64, 128, 3)])
@pytest.mark.parametrize("epilogue_tile", [True, False])
def test_dequant_gemm_matches_torch_gpu(dtype, bM, threads, stages, epilogue_tile):
    import torch
    M, N, K, bK = 512, 384, 1024, 64
    kern = tilelang.compile(dequant_gemm(M, N, K, bM=bM, threads=threads, stages=stages, dtype=dtype,
                                         epilogue_tile=epilogue_tile), target="cuda")
    assert "producer warpgroup" in kern.get_kernel_source()
    td = getattr(torch, dtype)
    torch.manual_seed(0)
    a = torch.randn(M, K, device="cuda", dtype=td)
    b = torch.randint(0, 256, (N, K // 2), device="cuda", dtype=torch.uint8)
    s = (2.0 ** torch.randint(-2, 2, (N, K // bK), device="cuda")).to(td)
    c = torch.empty(M, N, device="cuda", dtype=td)
    kern(a, b, s, c)
    ref = _reference(a, b, s, bK)
    torch.testing.assert_close(c.float(), ref, rtol=2e-2, atol=1.0)
