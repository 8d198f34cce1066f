"""How one cp.async (shared <- global, 4/8/16 bytes) is written in CUDA: the published
TileLang's helper names (include/tl_cuda/async.h), `tl::cp_async_gs<N>(dst, src)`, or
with a predicate `tl::cp_async_gs_conditional<N>(dst, src, pred)`: false zero-fills
the destination and reads nothing."""
from __future__ import annotations


def cp_async_line(nbytes: int, dst: str, src: str, pred: str | None) -> str:
    """The call (no `;`); `pred` None or "true": unconditional."""
    if pred is None or pred == "true":
        return f"tl::cp_async_gs<{nbytes}>({dst}, {src})"
    return f"tl::cp_async_gs_conditional<{nbytes}>({dst}, {src}, {pred})"


def cp_async_now(nbytes: int, dst: str, src: str, pred: str | None) -> str:
    """An expression: the copy, finished for this thread when it ends (T.ptx_cp_async
    outside kernels that wait for their copies themselves)."""
    return f"({cp_async_line(nbytes, dst, src, pred)}, tl::cp_async_commit(), tl::cp_async_wait<0>())"
