"""before / expected for broadcast_block_effects, and the frontend binding an effect once:
`old = T.atomic_add(C[0], 1, return_prev=True)` ran the atomic at every use of `old`
(twice for `B[0] = old; B[1] = old + 1`), and on the GPU once per thread when its value
went to a register (64 atomics in a 64-thread block); the published compaction kernel
(test_atomic_add_return_prev_materialized_once) counted each element twice."""
import pytest
import torch

import tilelang
import tilelang.language as T
from tilelang.ir import expr as E
from tilelang.ir.visitor import walk
from tilelang.transform.broadcast_block_effects import broadcast_block_effects


def _atomics(node):
    out = []
    walk(node, lambda n: out.append(n) if isinstance(n, E.Call) and n.name.startswith("atomic_") else None)
    return out


def _block_level():
    @T.prim_func
    def f(Dst: T.Tensor((2,), "float32"), Prev: T.Tensor((2,), "float32")):
        with T.Kernel(1, threads=64):
            old = T.atomic_add(Dst[0], 10.0, return_prev=True)
            Prev[0] = old
            Prev[1] = old + 1
    return f


def _compaction(n, block):
    @T.prim_func
    def f(x: T.Tensor((n,), "float32"), out: T.Tensor((n,), "int32"), counter: T.Tensor((1,), "int32")):
        with T.Kernel(T.ceildiv(n, block), threads=block) as bx:
            tx = T.get_thread_binding()
            i = bx * block + tx
            if i < n and x[i] > 0:
                pos = T.atomic_add(counter[0], 1, return_prev=True)
                if pos < n:
                    out[pos] = i
    return f


def test_an_effect_bound_to_a_name_runs_once():
    assert len(_atomics(_block_level().body)) == 1
    assert len(_atomics(_compaction(256, 64).body)) == 1


def test_block_level_effect_into_a_register_goes_through_one_thread():
    before = _block_level().script()
    after = broadcast_block_effects(_block_level()).script()
    assert "old_once" not in before
    assert 'old_once = T.alloc_shared((1,), "float32")' in after
    lines = after.splitlines()
    effect = next(i for i, ln in enumerate(lines) if "old_once[0] = T.atomic_add" in ln)
    share = next(i for i, ln in enumerate(lines) if "old[0] = old_once[0]" in ln)
    assert effect < share


def test_thread_dependent_effects_stay_per_thread():
    f = _compaction(256, 64)
    assert broadcast_block_effects(f).script() == f.script()


@pytest.mark.parametrize("target", ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
def test_block_level_atomic_result_on_both_backends(target):
    k = tilelang.compile(_block_level(), target=target)
    dst, prev = torch.tensor([1.0, 2.0], device=target), torch.zeros(2, device=target)
    k(dst, prev)
    assert dst.tolist() == [11.0, 2.0] and prev.tolist() == [1.0, 2.0]


@pytest.mark.parametrize("target", ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
def test_compaction_counts_each_element_once(target):
    n = 1024
    k = tilelang.compile(_compaction(n, 128), target=target)
    x = torch.ones(n, device=target)
    out = torch.full((n,), -1, dtype=torch.int32, device=target)
    counter = torch.zeros(1, dtype=torch.int32, device=target)
    k(x, out, counter)
    assert counter.item() == n
    assert torch.equal(out.sort().values.long().cpu(), torch.arange(n))


def _block_level_lanes():
    @T.prim_func
    def f(Dst: T.Tensor((4,), "float32"), Prev: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=64):
            Prev[0:4] = T.atomic_addx4(Dst[0:4], 1.0, return_prev=True)
    return f


def test_block_level_vector_effect_stays_one_lane_loop():
    # T.atomic_addx4(..., return_prev=True): the lanes' effects stay one vectorized loop
    # (one vector atomic on the GPU) into a shared tile, then every thread reads the lanes
    after = broadcast_block_effects(_block_level_lanes()).script()
    assert 'atomic_addx4_prev_once = T.alloc_shared((4,), "float32")' in after
    assert "for lane in T.vectorized(4):" in after
    assert "atomic_addx4_prev_once[lane] = T.atomic_add(Dst[" in after
    for t in range(4):
        assert f"atomic_addx4_prev[{t}] = atomic_addx4_prev_once[{t}]" in after
    assert len(_atomics(broadcast_block_effects(_block_level_lanes()).body)) == 1


@pytest.mark.parametrize("target", ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
def test_block_level_vector_effect_runs_once(target):
    dst = torch.arange(4, dtype=torch.float32, device=target)
    prev = torch.zeros(4, device=target)
    tilelang.compile(_block_level_lanes(), target=target)(dst, prev)
    torch.testing.assert_close(prev.cpu(), torch.arange(4, dtype=torch.float32))
    torch.testing.assert_close(dst.cpu(), torch.arange(4, dtype=torch.float32) + 1)
