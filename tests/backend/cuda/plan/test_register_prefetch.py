"""plan/register_prefetch.py (`prefetch_serial_loads`, TILELANG_CUDA_REGISTER_PREFETCH): a serial
loop that starts by copying global tiles into fragments loads the next iteration's tiles into
staging fragments (the source's dtype) before the current iteration's work. The IR after the
pass; results unchanged (the rewritten tile program run on the CPU backend against numpy);
loops left alone (a source the kernel writes, one iteration, staging over the register budget,
the switch off); the SASS of a chunked softmax issues the next chunk's loads before the
reduction's barrier. GPU results against torch: tests/backend/cuda/test_memory_bound.py."""
import re

import numpy as np

import tilelang
import tilelang.language as T
from tilelang.backend.registry import parse_target
from tilelang.backend.cuda.options import OPTIONS, CudaOptions
from tilelang.backend.cuda.plan.register_prefetch import prefetch_serial_loads
from tilelang.ir.printer import func_str
from tilelang.transform.pass_manager import PassContext
from tests.backend.cuda.conftest import needs_sass
from tests.backend.cuda.helpers import load_example


ON = {"TILELANG_CUDA_REGISTER_PREFETCH": "1"}   # opt-in (measured slower on the H200: README)


def _prefetched(func, env=None, arch="sm_90a"):
    ctx = PassContext(config={OPTIONS: CudaOptions.from_config(None, arch, env or ON)})
    ctx.target = parse_target({"kind": "cuda", "arch": arch})
    return prefetch_serial_loads(func, ctx)


def row_sum_sq(M=8, N=256, block_M=2, block_N=64, threads=32, write_x=False):
    """Sum of squares of each row, walking the row in chunks (RMSNorm's first pass)."""
    @T.prim_func
    def kernel(X: T.Tensor((M, N), "float16"), S: T.Tensor((M,), "float32")):
        with T.Kernel(M // block_M, threads=threads) as bx:
            x = T.alloc_fragment((block_M, block_N), "float32")
            acc = T.alloc_fragment((block_M,), "float32")
            T.clear(acc)
            for k in T.serial(N // block_N):
                T.copy(X[bx * block_M, k * block_N], x)
                for i, j in T.Parallel(block_M, block_N):
                    x[i, j] = x[i, j] * x[i, j]
                T.reduce_sum(x, acc, dim=1, clear=False)
                if write_x:
                    X[bx * block_M, k * block_N] = T.float16(0)
            T.copy(acc, S[bx * block_M])
    return kernel


def test_the_next_chunk_is_loaded_into_a_staging_fragment():
    text = func_str(_prefetched(row_sum_sq()))
    assert 'x_next = T.alloc_fragment((2, 64), "float16")' in text
    prologue, loop = text.split("for k in T.serial(4):")
    assert "T.copy(X[bx * 2:bx * 2 + 2, 0:64], x_next" in prologue
    body = [ln.strip() for ln in loop.splitlines() if ln.strip()]
    assert body[0] == "T.copy(x_next, x)"
    assert body[1] == "if k + 1 < 4:"
    assert body[2] == "T.copy(X[bx * 2:bx * 2 + 2, (k + 1) * 64:(k + 1) * 64 + 64], x_next)"
    assert "T.copy(X[bx * 2:bx * 2 + 2, k * 64" not in loop   # the loop's own load is gone


def test_results_unchanged_on_the_reference_backend():
    func = _prefetched(row_sum_sq())
    assert "x_next" in func_str(func)
    X = np.random.default_rng(0).standard_normal((8, 256)).astype(np.float16)
    out = tilelang.compile(func, out_idx=[-1], target="cpu")(X)
    np.testing.assert_allclose(out, (X.astype(np.float32) ** 2).sum(1), rtol=1e-5)


def test_loops_left_alone():
    assert "x_next" not in func_str(_prefetched(row_sum_sq(write_x=True)))          # X written in the kernel
    assert "x_next" not in func_str(_prefetched(row_sum_sq(block_N=256)))           # one iteration
    assert "x_next" not in func_str(_prefetched(row_sum_sq(M=16, block_M=16, block_N=128)))  # 128 B a thread
    assert "x_next" not in func_str(_prefetched(row_sum_sq(), {"TILELANG_CUDA_REGISTER_PREFETCH": "0"}))
    assert "x_next" not in func_str(_prefetched(row_sum_sq(), {"TILELANG_CUDA_PAD_ATOMIC_STAGING": "1"}))  # default: off


@needs_sass
def test_chunked_softmax_loads_the_next_chunk_before_the_reduction(monkeypatch):
    monkeypatch.setenv("TILELANG_CUDA_REGISTER_PREFETCH", "1")
    from tilelang.backend.cuda.host.nvrtc import compile_cuda, sass, resource_usage
    sm = load_example("softmax", "register_prefetch")
    func = sm.softmax.get_tir(64, 4096, dtype=T.float16, block_M=4, block_N=1024, threads=256)
    src = tilelang.compile(func, out_idx=[-1], target="cuda -arch=sm_90a").get_kernel_source()
    cubin = compile_cuda(src, "sm_90a").cubin
    code = sass(cubin)
    first_loop = code[:code.index("STG")]
    # the prologue's two 16-byte loads, then the loop's predicated loads of chunk k + 1 ahead of its barriers
    lines = [ln for ln in first_loop.splitlines() if re.search(r"\bLDG|BAR\.SYNC", ln)]
    kinds = ["BAR" if "BAR" in ln else ("PLDG" if re.search(r"@!?P\d+\s+LDG", ln) else "LDG") for ln in lines]
    assert kinds[:5] == ["LDG", "LDG", "PLDG", "PLDG", "BAR"], kinds
    assert all("LDG.E.128" in ln for ln in lines if "LDG" in ln)
    assert not re.search(r"\b(STL|LDL)\b", code)
    assert int(re.search(r"REG:(\d+)", resource_usage(cubin)).group(1)) <= 64   # 4 blocks of 256 threads an SM


def test_a_loop_with_a_step_is_left_alone():
    """`T.serial(0, n, 2)`: its step is an expression (comparing it with `in` once raised)."""
    @T.prim_func
    def kernel(X: T.Tensor((8, 256), "float16"), S: T.Tensor((8,), "float32")):
        with T.Kernel(4, threads=32) as bx:
            x = T.alloc_fragment((2, 64), "float32")
            acc = T.alloc_fragment((2,), "float32")
            T.clear(acc)
            for k in T.serial(0, 4, 2):
                T.copy(X[bx * 2, k * 64], x)
                T.reduce_sum(x, acc, dim=1, clear=False)
            T.copy(acc, S[bx * 2])
    assert "x_next" not in func_str(_prefetched(kernel))
