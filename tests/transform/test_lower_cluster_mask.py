"""lower_cluster_mask: `T.tma_copy(..., cluster_mask=m)` (published
test_tilelang_language_tma_copy.py test_tma_copy_cluster_mask_multicast) runs as each block's
own load where the source region is the same in every block; otherwise, and for masks that
do not fit the cluster, a clear error naming cluster_mask."""
import pytest

import tilelang.language as T
from tilelang.ir import tile_ops as TO
from tilelang.ir.errors import LoweringError, TileLangError
from tilelang.ir.visitor import walk
from tilelang.transform.lower_cluster_mask import lower_cluster_mask


def multicast_ring(source="k", mask=0b11, cluster_dims=(2, 1, 1), iters=8, slots=4, tile=64, dtype="float32",
                   slot_of="k", branch=False):
    """The published kernel: a ring of `slots` barriers cycled `iters` times (`mask=None`:
    no cluster_mask; `slot_of="pid"`: each block its own slot; `branch`: the copy under a
    branch on the block index)."""
    @T.prim_func
    def main(A: T.Tensor((iters, tile, tile), dtype), B: T.Tensor((2, iters, tile, tile), dtype)):
        with T.Kernel(2, threads=128, cluster_dims=cluster_dims) as pid:
            a_shared = T.alloc_shared((slots, tile, tile), dtype=dtype)
            mbars = T.alloc_barrier([128] * slots)
            for k in T.serial(iters):
                slot = k % slots if slot_of == "k" else pid
                row = k if source == "k" else pid
                if branch:
                    if pid < 2:
                        T.tma_copy(A[row, :, :], a_shared[slot, :, :], barrier=mbars[slot], cluster_mask=mask)
                elif mask is None:
                    T.tma_copy(A[row, :, :], a_shared[slot, :, :], barrier=mbars[slot])
                else:
                    T.tma_copy(A[row, :, :], a_shared[slot, :, :], barrier=mbars[slot], cluster_mask=mask)
                T.mbarrier_arrive(mbarrier=mbars[slot])
                T.mbarrier_wait_parity(mbarrier=mbars[slot], parity=(k // slots) % 2)
                T.copy(a_shared[slot, :, :], B[pid, k, :, :])
    return main


def _masks(f):
    out = []
    walk(f.body, lambda n: out.append(n.annotations.get(TO.CLUSTER_MASK)) if isinstance(n, TO.Copy) and
         n.annotations.get(TO.IS_TMA_COPY) else None)
    return out


def _multicast_masks(f):
    out = []
    walk(f.body, lambda n: out.append(n.annotations.get(TO.MULTICAST_MASK)) if isinstance(n, TO.Copy) and
         n.annotations.get(TO.IS_TMA_COPY) else None)
    return out


def test_a_copy_the_same_in_every_block_may_be_multicast():
    f = multicast_ring()
    assert "cluster_mask=0b11" in f.script()   # printed, so the cache key sees it
    assert _masks(f) == [0b11]
    out = lower_cluster_mask(f)
    assert _masks(out) == [None] and _multicast_masks(out) == [0b11]
    assert "cluster_mask=0b11" in out.script()   # (still printed)


@pytest.mark.parametrize("kwargs", [dict(slot_of="pid"), dict(branch=True)])
def test_a_copy_that_may_land_elsewhere_in_each_block_runs_as_each_blocks_own_load(kwargs):
    out = lower_cluster_mask(multicast_ring(**kwargs))
    assert _masks(out) == [None] and _multicast_masks(out) == [None]


@pytest.mark.parametrize("kwargs, message", [
    (dict(source="pid"), "source region that may differ between the blocks"),
    (dict(mask=0b100), "names ranks outside the cluster of 2 blocks"),
    (dict(cluster_dims=None), "needs a kernel of clusters"),
])
def test_what_cannot_run_without_multicast_is_a_clear_error(kwargs, message):
    with pytest.raises(LoweringError, match=message) as info:
        lower_cluster_mask(multicast_ring(**kwargs))
    assert "cluster_mask" in str(info.value) and info.value.span is not None


def test_the_argument_is_checked_where_it_is_written():
    with pytest.raises(ValueError, match="cluster_mask must be a positive int bitmask"):
        multicast_ring(mask=0)

    with pytest.raises(TileLangError, match="cluster_mask multicasts a load"):
        @T.prim_func
        def store(A: T.Tensor((64,), T.float32)):
            with T.Kernel(2, threads=128, cluster_dims=2):
                s = T.alloc_shared((64,), T.float32)
                T.tma_copy(s, A, cluster_mask=0b11)
