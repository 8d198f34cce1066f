"""`T.tma_copy(src, dst, barrier=bar, cluster_mask=m)`: every block of the cluster whose
rank is in `m` receives the tile that the lowest-ranked block of `m` addresses, and each
announces the tile's bytes on its own `bar` (the published package issues one TMA
multicast from that block; blocks outside `m` load their own tile). When `src` is the
same region in every block of the kernel, each block's own load puts the same tile in its
shared memory and announces the same bytes, so the mask may be dropped: this pass checks
that. Where, besides, the destination and the barrier are the same in every block and the
copy runs in every block alike (no enclosing branch or loop whose condition or bounds may
differ between blocks), the multicast lands where each receiver's own load would: the mask
is kept as `multicast_mask` (tile_ops.MULTICAST_MASK), for a backend that issues the
multicast (the CUDA backend, plan/copy_forms.py); otherwise it is dropped and each block
loads its tile. A source that may differ between blocks (it reads the block index, a
thread index, memory or a call), a mask with ranks outside the cluster, or a kernel
without clusters is an error naming cluster_mask."""
from __future__ import annotations

from tilelang.ir import expr as E
from tilelang.ir import stmt as S
from tilelang.ir import tile_ops as TO
from tilelang.ir.errors import LoweringError
from tilelang.ir.visitor import Mutator, _keep, walk
from tilelang.transform.pass_manager import function_pass


class _Lower(Mutator):
    def __init__(self, params):
        # variables whose value is the same in every block: the kernel's scalar parameters
        # and the loop / let variables bound by such values
        self.uniform = {id(p) for p in params if isinstance(p, E.Var)}
        self.cluster = None   # the enclosing kernel's cluster_dims
        self.divergent = 0    # enclosing branches / loops that may run differently in different blocks

    def is_uniform(self, e) -> bool:
        ok = [True]

        def check(n):
            if isinstance(n, E.Var) and id(n) not in self.uniform:
                ok[0] = False
            elif isinstance(n, (E.BufferLoad, E.Call)):
                ok[0] = False
        walk(e, check)
        return ok[0]

    def _under(self, uniform, visit, n):
        self.divergent += not uniform
        try:
            return visit(n)
        finally:
            self.divergent -= not uniform

    def visit_KernelLaunch(self, n):
        outer, self.cluster = self.cluster, n.annotations.get("cluster_dims")
        try:
            return self.generic_visit(n)
        finally:
            self.cluster = outer

    def visit_For(self, n):
        parts = [n.min, n.extent] + ([n.step] if n.step is not None else [])
        uniform = all(self.is_uniform(p) for p in parts)
        if uniform:
            self.uniform.add(id(n.var))
        return self._under(uniform, self.generic_visit, n)

    def visit_IfThenElse(self, n):
        return self._under(self.is_uniform(n.cond), self.generic_visit, n)

    def visit_While(self, n):
        return self._under(False, self.generic_visit, n)

    def visit_LetStmt(self, n):
        if self.is_uniform(n.value):
            self.uniform.add(id(n.var))
        return self.generic_visit(n)

    def visit_Copy(self, n):
        mask = n.annotations.get(TO.CLUSTER_MASK)
        if mask is None:
            return self.generic_visit(n)
        span = getattr(n, "span", None)
        size = 1
        for d in self.cluster or []:
            size *= d
        if size == 1:
            raise LoweringError(f"T.tma_copy: cluster_mask={mask:#b} needs a kernel of clusters",
                                span=span, hint="launch with T.Kernel(..., cluster_dims=(2, 1, 1)) or "
                                                "T.ClusterKernel")
        if mask >> size:
            raise LoweringError(f"T.tma_copy: cluster_mask={mask:#b} names ranks outside the cluster of {size} "
                                f"blocks (cluster_dims={tuple(self.cluster)})", span=span)
        if not all(self.is_uniform(x) for r in n.src.ranges for x in r):
            raise LoweringError("T.tma_copy: cluster_mask with a source region that may differ between the blocks "
                                f"of a cluster ({n.src}) is not supported: the receivers of the multicast would get "
                                "the issuing block's tile instead of their own", span=span,
                                hint="address the source with loop variables and kernel parameters only, or drop "
                                     "cluster_mask and load each block's own tile")
        ann = {k: v for k, v in n.annotations.items() if k != TO.CLUSTER_MASK}
        bar = n.annotations.get("tma_barrier")
        if not self.divergent and all(self.is_uniform(x) for r in n.dst.ranges for x in r) and \
                isinstance(bar, E.BufferLoad) and all(self.is_uniform(i) for i in bar.indices):
            ann[TO.MULTICAST_MASK] = mask
        return _keep(TO.Copy(n.src, n.dst, ann), n)


@function_pass("lower_cluster_mask")
def lower_cluster_mask(func):
    found = []
    walk(func.body, lambda n: found.append(n) if isinstance(n, TO.Copy) and TO.CLUSTER_MASK in n.annotations
         else None)
    if not found:
        return func
    return func.with_body(_Lower(func.params).visit(func.body))
