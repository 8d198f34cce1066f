"""Consecutive bulk stores of shared tiles (plan/copy_forms.py `share_store_waits`, ops/tma_store.py
SHARED_WAIT): the attention backward's epilogue stores dV, then dK; the first leaves the wait for
its tile to be read to the second's (bulk groups complete in order), one wait instead of two.
TILELANG_CUDA_TMA_STORE_SHARED_WAIT=0 waits after each (A/B). The form is printed with the nest."""
import pytest
import torch

import tilelang
import tilelang.language as T


def two_stores(n=64, read_back=False):
    """C = A + 1 and D = B * 2 through two shared tiles, stored one after the other;
    `read_back`: the kernel then reads C (its store's writes are waited for)."""
    @T.prim_func
    def k(A: T.Tensor((n, n), "float16"), B: T.Tensor((n, n), "float16"),
          C: T.Tensor((n, n), "float16"), D: T.Tensor((n, n), "float16"), E: T.Tensor((n, n), "float16")):
        with T.Kernel(1, threads=128):
            S = T.alloc_shared((n, n), "float16")
            R = T.alloc_shared((n, n), "float16")
            T.copy(A, S)
            T.copy(B, R)
            for i, j in T.Parallel(n, n):
                S[i, j] = S[i, j] + T.cast(1, "float16")
                R[i, j] = R[i, j] * T.cast(2, "float16")
            T.copy(S, C[0:n, 0:n])
            T.copy(R, D[0:n, 0:n])
            if read_back:
                for i, j in T.Parallel(n, n):
                    E[i, j] = C[i, j]
    return k


def _src(func, monkeypatch, on):
    monkeypatch.setenv("TILELANG_CUDA_TMA_STORE_SHARED_WAIT", on)
    return tilelang.lower(func, target={"kind": "cuda", "arch": "sm_90a"}).kernel_source


def _stores(src):
    """[(the stored tensor, the wait that follows its store in thread 0's block, or None)]"""
    import re
    out = []
    for block in src.split("if (tl_tid == 0) {")[1:]:
        body = block.split("\n  }")[0]
        m = re.search(r"tl::tma_store(?:_bulk)?\(&?(\w+)", body)
        if m:
            wait = re.search(r"tl::tma_store_wait<0, (true|false)>", body)
            out.append((m.group(1), wait.group(0) if wait else None))
    return out


def test_the_first_of_two_stores_leaves_its_wait_to_the_second(monkeypatch):
    pytest.importorskip("cuda.bindings")
    stores = _stores(_src(two_stores(), monkeypatch, "1"))
    assert stores == [("C", None), ("D", "tl::tma_store_wait<0, true>")], stores


def test_switch_off_waits_after_each(monkeypatch):
    pytest.importorskip("cuda.bindings")
    stores = _stores(_src(two_stores(), monkeypatch, "0"))
    assert stores == [("C", "tl::tma_store_wait<0, true>"), ("D", "tl::tma_store_wait<0, true>")], stores


def test_a_store_the_kernel_reads_back_keeps_its_own_wait(monkeypatch):
    pytest.importorskip("cuda.bindings")
    stores = _stores(_src(two_stores(read_back=True), monkeypatch, "1"))
    assert stores[0] == ("C", "tl::tma_store_wait<0, false>"), stores


@pytest.mark.gpu
@pytest.mark.parametrize("on", ["1", "0"])
def test_two_stores_on_gpu(monkeypatch, on):
    monkeypatch.setenv("TILELANG_CUDA_TMA_STORE_SHARED_WAIT", on)
    k = tilelang.compile(two_stores(), target="cuda")
    a = torch.randn(64, 64, device="cuda").half()
    b = torch.randn(64, 64, device="cuda").half()
    c, d, e = (torch.zeros_like(a) for _ in range(3))
    k(a, b, c, d, e)
    torch.testing.assert_close(c, a + 1)
    torch.testing.assert_close(d, b * 2)
