"""CUDA lowering of T.tvm_thread_allreduce and T.finalize_reducer: the reduction plan
replayed in Python over every thread, the generated code, and (GPU) the results."""
import itertools
import os
import re
import sys

import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang.backend.cuda.ops.thread_allreduce import plan_allreduce
from tests.backend.cuda.conftest import needs_nvrtc, sass_tools

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "language"))
from test_thread_reduce import _allreduce, _reducer_gemv  # noqa: E402


def _replay(plan, dims, vals):
    """What every thread holds after the generated code (sum as the operator)."""
    nt = len(vals)
    v = list(vals)
    for off in plan.offsets:
        assert all((t ^ off) < nt and (t ^ off) // 32 == t // 32 for t in range(nt)), "shuffle leaves the warp"
        v = [v[t] + v[t ^ off] for t in range(nt)]
    if not plan.shared:
        return v
    out = []
    for t in range(nt):
        base = t - sum(i * s for i, (s, _, _) in zip(plan.index(t, dims), plan.axes))
        if len(plan.axes) == 1:
            s, e, _ = plan.axes[0]
            out.append(sum(v[base + j * s * plan.in_warp] for j in range(e // plan.in_warp)))
        else:
            ranges = [range(e) for _, e, _ in plan.axes]
            out.append(sum(v[base + sum(j * s for j, (s, _, _) in zip(js, plan.axes))]
                           for js in itertools.product(*ranges)))
    return out


SHAPES = [(32,), (128,), (24,), (16,), (2, 32), (32, 4), (4, 8), (8, 4, 2), (3, 32), (64, 2), (2, 2, 64), (6, 5)]


@pytest.mark.parametrize("dims", SHAPES)
def test_every_thread_gets_its_groups_result(dims):
    full = list(dims) + [1] * (3 - len(dims))
    nt = int(np.prod(full))
    rng = np.random.default_rng(0)
    vals = [int(x) for x in rng.integers(-100, 100, nt)]
    coords = [(t % full[0], (t // full[0]) % full[1], t // (full[0] * full[1])) for t in range(nt)]
    for k in range(1, len(dims) + 1):
        for reduced in itertools.combinations(range(len(dims)), k):
            plan = plan_allreduce(dims, reduced, nt)
            got = _replay(plan, full, vals)
            for t in range(nt):
                key = tuple(c for d, c in enumerate(coords[t]) if d not in reduced)
                want = sum(vals[u] for u in range(nt)
                           if tuple(c for d, c in enumerate(coords[u]) if d not in reduced) == key)
                assert got[t] == want, (dims, reduced, t)


def test_plans_use_shuffles_within_a_warp_and_shared_memory_across_warps():
    p = plan_allreduce((32, 4), [0], 128)          # threadIdx.x: one warp per group
    assert p.offsets == [16, 8, 4, 2, 1] and not p.shared
    p = plan_allreduce((2, 32), [1], 64)           # threadIdx.y, stride 2: 16 members per warp
    assert p.offsets == [16, 8, 4, 2] and p.shared and p.in_warp == 16
    p = plan_allreduce((3, 32), [1], 96)           # stride 3: shared memory only
    assert p.offsets == [] and p.shared


@needs_nvrtc
def test_generated_allreduce():
    k = tilelang.compile(_allreduce(), target="cuda -arch=sm_90a")
    src = k.get_kernel_source()
    for off in (16, 8, 4, 2):
        assert f"__shfl_xor_sync(0xffffffffu, tl_red, {off})" in src
    assert "tl_red_smem[tl_tid] = tl_red;" in src and "threadIdx.y * 2" in src
    if sass_tools():
        assert "SHFL.BFLY" in k.get_sass()


@needs_nvrtc
def test_generated_allreduce_with_a_condition_and_max():
    f = _allreduce(threads=(32, 2), reduce_dim=0, op=lambda x, y: T.max(x, y), ident=-1e30,
                   cond=lambda: T.get_thread_binding(0) < 0)
    src = tilelang.compile(f, target="cuda -arch=sm_90a").get_kernel_source()
    assert "if (!((tx < 0))) tl_red = -1.000000000e+30f;" in src
    assert "tl_red = tl::max(tl_red, tl_red_other);" in src


def _butterfly(src):
    """The xor offsets of the finalize butterfly, in order."""
    return [int(m) for m in re.findall(r"tl::shfl_xor\(tl_v\w*, (\d+)\)", src)]


@needs_nvrtc
def test_generated_finalize_reducer_within_a_warp():
    # a 128 x 64 fp32 tile over 256 threads, 4 elements each: a row's copies sit on 16 lanes
    src = tilelang.compile(_reducer_gemv(256, 256, 128, 64, 256), target="cuda -arch=sm_90a").get_kernel_source()
    assert _butterfly(src) == [8, 4, 2, 1]
    assert "tl_w0" not in src


@needs_nvrtc
def test_generated_finalize_reducer_across_warps():
    # a 2 x 1024 fp32 tile over 256 threads: a row's copies span all 256 threads (8 warps)
    src = tilelang.compile(_reducer_gemv(4, 1024, 2, 1024, 256), target="cuda -arch=sm_90a").get_kernel_source()
    assert _butterfly(src) == [16, 8, 4, 2, 1]
    assert re.search(r"const int tl_w0\w* = \(tl_tid / 256\) \* 256;", src) and "< 8; ++tl_w" in src


def test_cpu_reference_of_the_wide_reducer():
    k = tilelang.compile(_reducer_gemv(4, 1024, 2, 1024, 256), target="cpu")
    a = np.random.rand(4, 1024).astype(np.float32)
    x = np.random.rand(1024).astype(np.float32)
    o = np.zeros(4, np.float32)
    k(a, x, o)
    np.testing.assert_allclose(o, a @ x, rtol=1e-5)


@pytest.mark.gpu
@pytest.mark.parametrize("threads, dim", [((2, 32), 1), ((32, 4), 0), ((3, 32), 1), ((8, 8), 1)])
def test_allreduce_on_the_gpu(threads, dim):
    import torch
    nt = threads[0] * threads[1]
    k = tilelang.compile(_allreduce(threads=threads, reduce_dim=dim), target="cuda")
    a = torch.zeros(128, device="cuda")
    a[:nt] = torch.randint(-8, 8, (nt,), device="cuda").float()
    c = torch.zeros(128, device="cuda")
    k(a, c)
    grid = a[:nt].reshape(threads[1], threads[0])
    ref = grid.sum(dim=1 - dim, keepdim=True).expand_as(grid).reshape(-1)
    torch.testing.assert_close(c[:nt], ref)


@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(256, 256, 128, 64, 256), (256, 256, 128, 128, 256), (4, 1024, 2, 1024, 256)])
@pytest.mark.parametrize("op", ["sum", "max"])
def test_finalize_reducer_on_the_gpu(shape, op):
    import torch
    M, N = shape[:2]
    k = tilelang.compile(_reducer_gemv(*shape, op=op), target="cuda")
    a = torch.rand(M, N, device="cuda")
    x = torch.rand(N, device="cuda")
    o = torch.zeros(M, device="cuda")
    k(a, x, o)
    ref = a @ x if op == "sum" else (a * x).amax(-1)
    torch.testing.assert_close(o, ref, rtol=1e-4, atol=1e-4)
