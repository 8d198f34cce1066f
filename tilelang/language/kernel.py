"""`T.Kernel`: a launch of a grid of blocks; the body runs once per block."""
from __future__ import annotations

from tilelang.frontend import builder as B
from tilelang.ir import stmt as S
from tilelang.ir.expr import Var, convert, PrimExpr
from tilelang.ir.errors import TileLangError


class KernelFrame:
    def __init__(self, *grid, threads=128, prelude=None, cluster_dims=None, is_cpu=False, **kwargs):
        if not grid:
            raise TileLangError("T.Kernel needs at least one grid dimension",
                                hint="write e.g. `with T.Kernel(T.ceildiv(N, 128), threads=128) as bx:`")
        if len(grid) > 3:
            raise TileLangError(f"T.Kernel takes 1 to 3 grid dimensions, got {len(grid)}")
        if threads is None:
            threads = 128
        if isinstance(threads, (int, PrimExpr)):
            threads = [threads]
        threads = list(threads)
        if len(threads) > 3:
            raise TileLangError(f"`threads` takes 1 to 3 dimensions, got {len(threads)}")
        self.grid = [convert(g) for g in grid]
        self.threads = [int(t) for t in threads]
        self.annotations = {}
        if cluster_dims is not None:
            self.annotations["cluster_dims"] = cluster_dims
        self.is_cpu = is_cpu

    def __enter__(self):
        b = B.require("T.Kernel")
        names = B.source_names("with") or []
        defaults = ["bx", "by", "bz"]
        self.block_vars = [Var(names[i] if i < len(names) else defaults[i]) for i in range(len(self.grid))]
        self.thread_vars = [Var(n) for n in ("tx", "ty", "tz")[:len(self.threads)]]
        b.push()
        b.kernel_depth += 1
        b.kernel_frames.append(self)
        return self.block_vars[0] if len(self.block_vars) == 1 else tuple(self.block_vars)

    def __exit__(self, et, ev, tb):
        b = B.current()
        b.kernel_depth -= 1
        b.kernel_frames.pop()
        body = b.pop()
        if et is None:
            b.emit(S.KernelLaunch(self.grid, self.threads, self.block_vars, self.thread_vars, body,
                                  self.annotations))
        return False


Kernel = KernelFrame


def _frame():
    b = B.require("thread bindings")
    if not b.kernel_frames:
        raise TileLangError("this can only be used inside `with T.Kernel(...)`")
    return b.kernel_frames[-1]


def get_thread_binding(dim: int = 0):
    return _frame().thread_vars[dim]


def get_thread_bindings():
    return list(_frame().thread_vars)


def get_block_binding(dim: int = 0):
    return _frame().block_vars[dim]


def get_block_bindings():
    return list(_frame().block_vars)


def get_thread_extent(dim: int = 0):
    return _frame().threads[dim]


def use_swizzle(panel_size: int = 10, order: str = "row", enable: bool = True):
    """Block rasterization hint (better L2 reuse on GPUs); no effect on results."""
    f = _frame()
    if enable:
        f.annotations["swizzle"] = (panel_size, order)


def get_lane_idx(warp_size: int = 32):
    """The thread's lane within its warp (GPU backends)."""
    return get_thread_binding(0) % warp_size


def get_warp_idx(warp_size: int = 32):
    return get_thread_binding(0) // warp_size


def get_warp_group_idx(warp_size: int = 32, warps_per_group: int = 4):
    return get_thread_binding(0) // (warp_size * warps_per_group)
