"""Which attention-style pipelined bodies a producer warpgroup may feed (the decision
only; plan/warp_specialize.py asks it, plan/warp_specialized_ring.py writes the two roles into
the IR, as for a GEMM loop).

An attention loop (FlashAttention: `S = Q K^T; softmax; O += P V`, MLA decode: the same
with a latent and a rope part and P staged in shared memory) runs its gemms with register
work between them. On the single-role TMA ring (plan/tma_ring_pipeline.py) the warp whose
release completes a slot issues the next loads itself, on the consumers' critical path
(nine bulk copies per MLA iteration), and the consumers are bound by one launch bound.
Specialized, an elected producer thread waits for the released slot and issues the loads
while the consumers compute; with two consumer warpgroups the registers split 24 / 240
(`setmaxnreg`).

Nothing of the body changes: the consumers run it statement by statement on the slot that
arrived and release the slot after it; the block barriers it needs (a cross-warpgroup
reduction's scratch, P staged in shared memory, ring_mode "barrier") are printed as the
consumers' named barrier (KernelCodegen.sync). What qualifies, besides what
plan/warp_specialize.py asks of every loop:

- the ring issues at least RING_BOXES_FOR_PRODUCER bulk copies (boxes) per iteration, or the
  switch TILELANG_CUDA_WS_ATTENTION=1 (=0: never); and not TILELANG_CUDA_OVERLAP_GEMM=1
  (plan/overlap.py's schedule, on two TMA rings, takes it). Measured on the H200
  (benchmarks/attention_switches.py, 2026-12-02): MLA decode, 9 boxes an iteration, 0.357 ->
  0.295 ms specialized; FlashAttention d128 (4 boxes) 0.91 -> 0.87 of cuDNN, causal 0.90 ->
  0.78, d64 (2 boxes) 1.05 -> 0.98: the producer pays where the consumers issue many copies;
- the body runs at least two wgmma gemms into register accumulators (a loop with one gemm
  and register work is not attention: it keeps its in-flight schedule,
  ops/wgmma_deferred_wait.py);
- no user barrier of its own (plan/warp_specialize.py `_consumers_only` says why)."""
from __future__ import annotations

from tilelang.ir import tile_ops as TO
from tilelang.ir.visitor import walk
from tilelang.backend.cuda.plan.kernel import wgmma_into_registers


def _gemms(body):
    out = []
    for s in body:
        walk(s, lambda n: out.append(n) if isinstance(n, TO.Gemm) else None)
    return out


RING_BOXES_FOR_PRODUCER = 8
NOT_GEMM_ONLY = "the pipelined body does more than wgmma gemms into register accumulators"


def _ring_boxes(info, plan):
    """Bulk tensor copies (boxes) the ring issues per iteration (ops/tma.py), 0 if a copy
    is not a TMA tile."""
    from tilelang.backend.cuda.analysis.facts import accesses
    from tilelang.backend.cuda.ops.tma import match_tma
    n = 0
    for c in info.copies:
        params = {id(b) for b in accesses(c)[0] if b.scope == "global"}
        t = match_tma(c, plan, params)
        if t is None:
            return 0
        n += len(t.boxes())
    return n


def attention_body_why(body, info, plan, options) -> str:
    """"" when the pipelined body `body` (PipelineInfo `info`'s statements besides its
    ring copies) is an attention-style body a producer warpgroup may feed, else why not."""
    chosen = getattr(options, "ws_attention", None)
    if chosen is False:
        return NOT_GEMM_ONLY
    if getattr(options, "overlap_gemm", False):
        return "the overlapped attention schedule takes the loop (TILELANG_CUDA_OVERLAP_GEMM=1, plan/overlap.py)"
    gemms = _gemms(body)
    if len(gemms) < 2:   # (unless asked for, a loop that is no attention body hears the GEMM rule's reason)
        return NOT_GEMM_ONLY if chosen is None else \
            "the pipelined body runs one gemm besides its register work (not an attention body)"
    if not all(wgmma_into_registers(plan, g) for g in gemms):
        return NOT_GEMM_ONLY if chosen is None else \
            "an attention-style body whose gemms are not all wgmma into register accumulators"
    if chosen is None:
        boxes = _ring_boxes(info, plan)
        if boxes < RING_BOXES_FOR_PRODUCER:
            return (f"an attention-style body whose ring issues {boxes} boxes an iteration (a producer "
                    f"warpgroup pays from {RING_BOXES_FOR_PRODUCER}; TILELANG_CUDA_WS_ATTENTION=1 forces it)")
    return ""


__all__ = ["attention_body_why"]
