"""T.PersistentTileScheduler: every tile once, by worker linear % workers, in the
documented order (column/row major, L2 panels, clusters along M)."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tests.backend.cuda.conftest import needs_nvrtc


def walk_kernel(mt, nt, workers, **kw):
    @T.prim_func
    def k(Owner: T.Tensor((mt, nt), "int32"), Step: T.Tensor((mt, nt), "int32")):
        with T.Kernel(workers, threads=32) as bid:
            sched = T.PersistentTileScheduler(mt, nt, num_workers=workers, **kw)
            sched.init(bid)
            while sched.valid():
                Owner[sched.m_idx, sched.n_idx] = bid
                Step[sched.m_idx, sched.n_idx] = sched.current_iter
                sched.next_tile()
    return k


def model(mt, nt, workers, swizzle_size=1, column_major=True):
    """tile (m, n) -> linear index, straight from the definition of the walk."""
    fast, slow = (mt, nt) if column_major else (nt, mt)
    where = {}
    for t in range(mt * nt):
        group, first = t // (fast * swizzle_size), t // (fast * swizzle_size) * swizzle_size
        width = max(1, min(swizzle_size, slow - first))
        off = t - group * fast * swizzle_size
        f, s = off // width, first + off % width
        where[(f, s) if column_major else (s, f)] = t
    return where


@pytest.mark.parametrize("mt,nt,workers,swz,cm", [(5, 4, 3, 1, True), (5, 4, 3, 2, True), (6, 7, 4, 3, False),
                                                   (3, 5, 16, 2, False)])
def test_walk_on_cpu(mt, nt, workers, swz, cm):
    owner = np.full((mt, nt), -1, np.int32)
    step = np.full((mt, nt), -1, np.int32)
    tilelang.compile(walk_kernel(mt, nt, workers, swizzle_size=swz, column_major=cm), target="cpu")(owner, step)
    where = model(mt, nt, workers, swz, cm)
    assert len(where) == mt * nt
    for (m, n), t in where.items():
        assert owner[m, n] == t % workers and step[m, n] == t // workers


def test_clusters_count_rows_of_clusters():
    # 6 tile rows in clusters of 2: the scheduler walks 3 cluster rows
    k = walk_kernel(6, 4, 5, cluster_size=2)
    o = np.full((6, 4), -1, np.int32)
    s = np.full((6, 4), -1, np.int32)
    tilelang.compile(k, target="cpu")(o, s)
    assert (o[:3] >= 0).all() and (o[3:] == -1).all()   # cluster rows 0..2 only


def test_stateless_coord():
    @T.prim_func
    def k(M: T.Tensor((12,), "int32"), N: T.Tensor((12,), "int32")):
        with T.Kernel(1, threads=32):
            sched = T.PersistentTileScheduler(3, 4, num_workers=1, swizzle_size=2, stateful=False)
            for t in T.serial(12):
                m, n = sched.coord(t)
                M[t] = m
                N[t] = n
    m = np.zeros(12, np.int32)
    n = np.zeros(12, np.int32)
    tilelang.compile(k, target="cpu")(m, n)
    where = model(3, 4, 1, 2, True)
    assert {(int(a), int(b)): t for t, (a, b) in enumerate(zip(m, n))} == where


def test_stateless_has_no_state():
    with pytest.raises(tilelang.TileLangError, match="stateful=False"):
        @T.prim_func
        def k(A: T.Tensor((4,), "int32")):
            with T.Kernel(1, threads=32):
                sched = T.PersistentTileScheduler(2, 2, num_workers=1, stateful=False)
                A[0] = sched.m_idx


@needs_nvrtc
def test_walk_compiles_for_cuda():
    src = tilelang.compile(walk_kernel(5, 4, 3, swizzle_size=2), target="cuda -arch=sm_90a").get_kernel_source()
    assert "while" in src


@pytest.mark.gpu
def test_walk_on_gpu():
    import torch
    mt, nt, workers = 7, 5, 4
    owner = torch.full((mt, nt), -1, dtype=torch.int32, device="cuda")
    step = torch.full((mt, nt), -1, dtype=torch.int32, device="cuda")
    tilelang.compile(walk_kernel(mt, nt, workers, swizzle_size=3), target="cuda")(owner, step)
    for (m, n), t in model(mt, nt, workers, 3, True).items():
        assert int(owner[m, n]) == t % workers and int(step[m, n]) == t // workers
