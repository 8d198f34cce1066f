"""A T.Parallel loop over a leading window of a register accumulator
(`T.copy(acc_o[:valid_block_H, :], O_shared)` of the published GQA decode: 4 of the tile's
64 rows) keeps the accumulator in registers, each thread running the elements of the
window it holds (layout/fragment.py window_of). It sent the accumulator, and the row
vectors that meet it, to shared memory, with a round trip and two barriers per iteration."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tests.backend.cuda.conftest import needs_nvrtc, needs_sass
from tests.backend.cuda.helpers import build
from tests.backend.cuda.plan.test_pipeline import _plan

M, N, K, ROWS, COLS = 64, 64, 64, 4, 48


def window_store(cols=N):
    @T.prim_func
    def k(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((ROWS, cols), "float16")):
        with T.Kernel(1, threads=128):
            a = T.alloc_shared((M, K), "float16")
            b = T.alloc_shared((K, N), "float16")
            acc = T.alloc_fragment((M, N), "float32")
            rowsum = T.alloc_fragment((M,), "float32")
            out = T.alloc_shared((ROWS, cols), "float16")
            T.copy(A, a)
            T.copy(B, b)
            T.gemm(a, b, acc, clear_accum=True)
            T.reduce_sum(acc, rowsum, dim=1)
            for i, j in T.Parallel(M, N):
                acc[i, j] = acc[i, j] - rowsum[i] / N
            T.copy(acc[:ROWS, :cols], out)
            T.copy(out, C)
    return k


def _reference(a, b, cols):
    acc = a.astype(np.float32) @ b.astype(np.float32)
    return (acc - acc.sum(1, keepdims=True) / N)[:ROWS, :cols]


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("cols", [N, COLS])
def test_a_window_keeps_the_accumulator_and_its_rows_in_registers(arch, cols):
    plan, text = _plan(window_store(cols), arch)
    placed = {ln.split()[0]: ln for ln in text.splitlines() if "local.fragment" in ln}
    assert "registers (acc)" in placed["acc"] and "registers (row)" in placed["rowsum"], placed
    assert [ln for ln in text.splitlines() if "acc -> out" in ln][0].endswith("registers")


@needs_nvrtc
def test_the_window_skips_the_slots_outside_it():
    src = build(window_store(COLS), arch="sm_90a").source
    assert "* acc = reinterpret_cast" not in src
    assert f">= {ROWS} ||" in src and f">= {COLS}) continue;" in src


@needs_sass
def test_the_gqa_decode_form_has_no_shared_accumulator_round_trip():
    from tilelang.backend.cuda.host.nvrtc import sass
    text = sass(build(window_store(), arch="sm_90a").binary)
    assert "HGMMA" in text and "STL" not in text


def test_window_on_cpu():
    kern = tilelang.compile(window_store(COLS), target="cpu")
    a = np.random.rand(M, K).astype(np.float16)
    b = np.random.rand(K, N).astype(np.float16)
    c = np.zeros((ROWS, COLS), np.float16)
    kern(a, b, c)
    np.testing.assert_allclose(c.astype(np.float32), _reference(a, b, COLS), rtol=2e-2, atol=2e-2)


@pytest.mark.gpu
@pytest.mark.parametrize("cols", [N, COLS])
def test_window_on_gpu(cols):
    import torch
    kern = tilelang.compile(window_store(cols), target="cuda")
    a = torch.rand(M, K, device="cuda", dtype=torch.float16)
    b = torch.rand(K, N, device="cuda", dtype=torch.float16)
    c = torch.zeros(ROWS, cols, device="cuda", dtype=torch.float16)
    kern(a, b, c)
    ref = torch.from_numpy(_reference(a.cpu().numpy(), b.cpu().numpy(), cols)).cuda()
    torch.testing.assert_close(c.float(), ref, rtol=2e-2, atol=2e-2)
