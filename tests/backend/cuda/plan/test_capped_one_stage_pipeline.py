"""A `T.Pipelined(..., num_stages=2)` loop whose ring does not fit in shared memory is capped
to one stage (plan/kernel.py) and then refills its one version of each tile right after the
tile's last reader (plan/pipeline.py `_issue_after_use`). Found wrong on the H200 with the
published `deepseek_mla/example_mla_decode_persistent.py` (a fifth of the output off):

- plan/wgmma_waits.py `hoist_wgmma` judged the loop by the depth asked for (2), hoisted the
  Q K^T gemms above the copies that fill their operands, and re-sorted the pipeline's
  statements so that its wait / refill markers all went to the end of the body: the gemms
  read tiles no wait had covered;
- the rope gemm, chained after the latent one into the same accumulator, stayed in flight
  past the refill of K_pe_shared that follows it (the cp.async overwrote a tile the tensor
  cores were reading).

Checked on the printed schedule (pipeline_cp_async) and, on a GPU, against torch."""
import pytest

import tilelang
import tilelang.language as T
from tests.backend.cuda.plan.test_cp_async_pipeline import _before_after, _schedule


def mla_scores(num_stages=2, H=64, D=512, P=64, N=64, S=1024):
    """MLA decode's loop body without the softmax: S = Q KV^T + Q_pe K_pe^T (two gemms into
    one accumulator), a statement that needs no score, S cast through shared memory, then
    O += S KV."""
    @T.prim_func
    def main(Q: T.Tensor((H, D), "float16"), Q_pe: T.Tensor((H, P), "float16"), KV: T.Tensor((S, D), "float16"),
             K_pe: T.Tensor((S, P), "float16"), O: T.Tensor((H, D), "float32")):
        with T.Kernel(1, threads=256):
            Q_shared = T.alloc_shared((H, D), "float16")
            Q_pe_shared = T.alloc_shared((H, P), "float16")
            KV_shared = T.alloc_shared((N, D), "float16")
            K_pe_shared = T.alloc_shared((N, P), "float16")
            S_shared = T.alloc_shared((H, N), "float16")
            acc_s = T.alloc_fragment((H, N), "float32")
            acc_s_cast = T.alloc_fragment((H, N), "float16")
            acc_o = T.alloc_fragment((H, D), "float32")
            steps = T.alloc_fragment((H,), "float32")
            T.copy(Q, Q_shared)
            T.copy(Q_pe, Q_pe_shared)
            T.clear(acc_o)
            T.clear(steps)
            for k in T.Pipelined(S // N, num_stages=num_stages):
                T.copy(KV[k * N:(k + 1) * N, :], KV_shared)
                T.copy(K_pe[k * N:(k + 1) * N, :], K_pe_shared)
                T.clear(acc_s)
                T.gemm(Q_shared, KV_shared, acc_s, transpose_B=True, policy=T.GemmWarpPolicy.FullCol)
                T.gemm(Q_pe_shared, K_pe_shared, acc_s, transpose_B=True, policy=T.GemmWarpPolicy.FullCol)
                for i in T.Parallel(H):   # needs no score: the group could stay in flight past it
                    steps[i] = steps[i] + 1.0
                T.copy(acc_s, S_shared)
                T.copy(S_shared, acc_s_cast)
                T.gemm(acc_s_cast, KV_shared, acc_o, policy=T.GemmWarpPolicy.FullCol)
            T.copy(acc_o, O)
    return main


def _loop(after):
    sched = _schedule(after)
    return sched[next(i for i, ln in enumerate(sched) if ln.startswith("for k_1")):]


def _at(lines, text):
    return next(i for i, ln in enumerate(lines) if text in ln)


def test_the_capped_loop_waits_before_its_gemms_and_refills_after_their_last_reader():
    _, after = _before_after(mla_scores(), arch="sm_90a")
    assert "pipeline stages capped at 1" in after
    loop = _loop(after)
    qk, rope, pv = _at(loop, "T.gemm(Q_shared"), _at(loop, "T.gemm(Q_pe_shared"), _at(loop, "T.gemm(acc_s_cast")
    waits = [i for i, ln in enumerate(loop) if "T.ptx_wait_group(" in ln]
    assert waits and waits[0] < qk < rope < pv, loop   # the first gemm reads landed tiles
    k_pe = _at(loop, "T.Parallel(64, 64):  # copy -> cp.async")
    kv = _at(loop, "T.Parallel(64, 512):  # copy -> cp.async")
    assert rope < k_pe < pv < kv, loop   # each tile refilled after its last reader


def test_the_gemm_chain_completes_before_its_tile_is_refilled():
    _, after = _before_after(mla_scores(), arch="sm_90a")
    report = [ln.strip() for ln in after.splitlines() if ln.strip().startswith("#   T.gemm(")]
    # the latent gemm's group stays in flight into the rope gemm (same accumulator), which
    # waits for both itself: K_pe_shared's refill comes right after it
    assert "in flight past it" in report[0] and "in flight" not in report[1], report


@pytest.mark.gpu
def test_the_capped_loop_computes_the_product_on_the_gpu(monkeypatch):
    torch = pytest.importorskip("torch")
    monkeypatch.setenv("TILELANG_DISABLE_CACHE", "1")
    kernel = tilelang.compile(mla_scores(), target="cuda")
    H, D, P, N, S = 64, 512, 64, 64, 1024
    q, q_pe = torch.randn(H, D, device="cuda").half(), torch.randn(H, P, device="cuda").half()
    kv, k_pe = torch.randn(S, D, device="cuda").half(), torch.randn(S, P, device="cuda").half()
    o = torch.full((H, D), float("nan"), device="cuda")
    kernel(q, q_pe, kv, k_pe, o)
    ref = torch.zeros(H, D, device="cuda")
    for k in range(S // N):
        blk = slice(k * N, (k + 1) * N)
        s = (q.float() @ kv[blk].float().T + q_pe.float() @ k_pe[blk].float().T).half().float()
        ref += s @ kv[blk].float()
    assert float((o - ref).norm() / ref.norm()) < 1e-3
