"""`T.pdl_trigger` / `T.pdl_sync`: programmatic dependent launch on sm_90+. A kernel
calls `T.pdl_trigger()` once what the next kernel reads is written, and the next one
calls `T.pdl_sync()` before it reads it. The CUDA runtime launches every kernel that
calls `T.pdl_sync()` with programmatic stream serialization (backend/cuda/
analysis/launch_config.py), so its prologue may run while the kernel before it in the stream
finishes; `T.pdl_sync()` then waits for that kernel's completion and results.
Elsewhere (the CPU, sm_80) both do nothing, which is always correct: kernels then
run one after another."""
from __future__ import annotations

from tilelang.ir import builder as B
from tilelang.ir import stmt as S
from tilelang.ir import mbarrier as M


def pdl_trigger():
    # a statement every thread issues (M.EVERY_THREAD_CALLS: not a block-level
    # statement that thread 0 runs alone)
    B.require("T.pdl_trigger").emit(S.Evaluate(M.call(M.PDL_TRIGGER)))


def pdl_sync():
    B.require("T.pdl_sync").emit(S.Evaluate(M.call(M.PDL_SYNC)))
