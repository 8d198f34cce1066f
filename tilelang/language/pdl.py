"""`T.pdl_trigger` / `T.pdl_sync`: programmatic dependent launch on sm_90+. A kernel
calls `T.pdl_trigger()` once what the next kernel reads is written, and the next one
calls `T.pdl_sync()` before it reads it. The CUDA runtime launches every kernel that
calls `T.pdl_sync()` with programmatic stream serialization (backend/cuda/
launch_config.py), so its prologue may run while the kernel before it in the stream
finishes; `T.pdl_sync()` then waits for that kernel's completion and results.
Elsewhere (the CPU, sm_80) both do nothing, which is always correct: kernels then
run one after another."""
from __future__ import annotations

from tilelang.ir.expr import call
from tilelang.language.warp import _at_call_site


def pdl_trigger():
    # every thread issues it, as a statement of its own (not a block-level one that
    # thread 0 runs alone): the same path as the warp collectives
    _at_call_site(call("tl.pdl_trigger", [], "int32"), "T.pdl_trigger")


def pdl_sync():
    _at_call_site(call("tl.pdl_sync", [], "int32"), "T.pdl_sync")
