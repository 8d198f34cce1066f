"""The pass that refuses what AMD GPUs do not have: TMA copies and stores, wgmma and
mma.sync/ldmatrix calls, mbarriers, cp.async, thread-block clusters. Each is a
TargetFeatureError at the user's line (file, line, caret), raised before any lowering
so that the message names the construct the user wrote."""
from __future__ import annotations

from tilelang.ir import expr as E
from tilelang.ir import stmt as S
from tilelang.ir import tile_ops as TO
from tilelang.ir import mbarrier as MB
from tilelang.ir import tensor_core_calls as TC
from tilelang.ir.async_copy import PTX_CP_ASYNC, PTX_CP_ASYNC_LANE
from tilelang.ir.cluster import CLUSTER_DEVICE_CALLS
from tilelang.ir.errors import TargetFeatureError
from tilelang.ir.visitor import walk
from tilelang.transform.pass_manager import function_pass

_HINT = "on AMD GPUs write the kernel with T.copy and T.gemm (the HIP backend lowers them to vector loads, " \
        "LDS and MFMA), or compile it for a CUDA target"


def _nvidia_calls():
    names = {v for k, v in vars(MB).items() if k.isupper() and isinstance(v, str) and v.startswith("tl.")}
    names |= {v for k, v in vars(TC).items() if k.isupper() and isinstance(v, str) and v.startswith("tl.")}
    names |= {PTX_CP_ASYNC, PTX_CP_ASYNC_LANE} | set(CLUSTER_DEVICE_CALLS)
    return names - {MB.PDL_TRIGGER, MB.PDL_SYNC}


def _what(n):
    """What NVIDIA-only feature node `n` is, or None."""
    if isinstance(n, S.KernelLaunch) and n.annotations.get("cluster_dims"):
        return "thread-block clusters (T.Kernel(..., cluster_dims=...))"
    if isinstance(n, TO.Copy):
        from tilelang.transform.lower_tile_ops import PREFER_TMA
        if n.annotations.get("tma_barrier") is not None or n.annotations.get(PREFER_TMA):
            return "a TMA copy (T.tma_copy / T.copy(..., prefer_instruction='tma'))"
    if isinstance(n, TO.Atomic) and n.use_tma:
        return "a TMA reduction (T.atomic_add(..., use_tma=True))"
    if isinstance(n, E.Call) and n.name in _NVIDIA:
        return f"`{n.name.replace('tl.', 'T.')}` (TMA, wgmma, mma.sync, ldmatrix, mbarriers, cp.async, clusters)"
    return None


_NVIDIA = _nvidia_calls()


@function_pass("hip_reject_nvidia_features")
def reject_nvidia_features(func):
    last_span = [None]

    def check(n):
        if isinstance(n, S.Stmt) and getattr(n, "span", None) is not None:
            last_span[0] = n.span
        what = _what(n)
        if what is not None:
            span = getattr(n, "span", None) or last_span[0]
            raise TargetFeatureError(f"{what} is an NVIDIA feature; AMD GPUs (target 'hip') have no equivalent",
                                     span, hint=_HINT)
    walk(func.body, check)
    return func
