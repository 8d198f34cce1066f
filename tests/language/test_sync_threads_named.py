"""`T.sync_threads(barrier_id, arrive_count)`: a named barrier of only the threads
that reach it (`bar.sync id, count`), usable inside a branch some warps take. Spelled `tl::__sync_thread_partial(id[, count])`
(include/tl_cuda/common.h), the published name; a barrier id may be any int expression."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang.backend.cuda.host.nvrtc import nvrtc_available
from tilelang.ir.errors import TileLangError


def _scan_kernel():
    @T.prim_func
    def k(X: T.Tensor((64,), "int32"), Y: T.Tensor((64,), "int32")):
        with T.Kernel(1, threads=128) as bx:
            tx = T.get_thread_binding()
            s = T.alloc_shared((64,), "int32")
            v = T.alloc_var(T.int32)
            if tx < 64:
                s[tx] = X[tx]
                for i in T.serial(6):
                    T.sync_threads(1, 64)
                    if tx >= (1 << i):
                        v = s[tx] + s[tx - (1 << i)]
                    T.sync_threads(1, 64)
                    if tx >= (1 << i):
                        s[tx] = v
                Y[tx] = s[tx]
            T.sync_threads()
    return k


@pytest.mark.skipif(not nvrtc_available(), reason="NVRTC not installed")
def test_named_barrier_in_a_branch_is_bar_sync_with_count():
    src = tilelang.compile(_scan_kernel(), target="cuda -arch=sm_90a").get_kernel_source()
    body = src[src.index("if ((tx < 64))"):]
    branch = body[:body.index("__syncthreads();")]   # the plain barrier after the branch
    assert branch.count("tl::__sync_thread_partial((int)(1), (int)(64));") == 2   # bar.sync 1, 64
    assert "__syncthreads" not in branch   # no block-wide barrier where only 2 warps run


def test_printed_ir_keeps_the_barrier_arguments():
    # the printed form is the structural hash: a named barrier must not look like a plain one
    from tilelang.ir.printer import Printer
    text = Printer().func(_scan_kernel())
    assert "T.sync_threads(1, 64)" in text and "T.sync_threads()" in text


@pytest.mark.gpu
def test_named_barrier_scan_on_gpu():
    import torch
    kern = tilelang.compile(_scan_kernel(), target="cuda")
    x = torch.arange(64, dtype=torch.int32, device="cuda")
    y = torch.zeros_like(x)
    kern(x, y)
    np.testing.assert_array_equal(y.cpu().numpy(), np.cumsum(np.arange(64)))


@pytest.mark.parametrize("args,msg", [((1, 48), "multiple of 32"), ((16, 64), "0..15"),
                                      ((None, 64), "needs a barrier_id")])
def test_bad_named_barriers(args, msg):
    with pytest.raises(TileLangError, match=msg):
        @T.prim_func
        def k(X: T.Tensor((64,), "int32")):
            with T.Kernel(1, threads=128) as bx:
                T.sync_threads(*args)


@pytest.mark.skipif(not nvrtc_available(), reason="NVRTC not installed")
def test_barrier_id_from_a_variable_or_an_expression():
    @T.prim_func
    def k(A: T.Tensor((256,), "float32")):
        with T.Kernel(1, threads=256) as (bx,):
            tx = T.get_thread_binding()
            bid = T.int32(1)
            T.sync_threads(bid)
            T.sync_threads(bid, 128)
            T.sync_threads(tx % 4 + 1, 256)
            A[tx] = 1.0
    src = tilelang.compile(k, target="cuda -arch=sm_90a").get_kernel_source()
    assert "tl::__sync_thread_partial((int)(1));" in src
    assert "tl::__sync_thread_partial((int)(1), (int)(128));" in src
    assert src.count("tl::__sync_thread_partial(") == 3
