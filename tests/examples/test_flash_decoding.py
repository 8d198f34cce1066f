import importlib.util
import os
import pathlib
import sys

os.environ["TILELANG_DEFAULT_TARGET"] = "cpu"

import pytest  # noqa: E402
import torch  # noqa: E402


def _load(name):
    path = pathlib.Path(__file__).resolve().parents[2] / "examples" / name / f"example_{name}.py"
    spec = importlib.util.spec_from_file_location(f"example_{name}", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


ex = _load("flash_decoding")

CASES = [
    # batch, heads, kv_heads, seqlen_kv, dim, num_split
    (1, 8, 2, 256, 64, 4),
    (2, 4, 4, 200, 64, 2),
    (1, 4, 1, 136, 64, 3),
    (2, 16, 2, 100, 64, 4),   # fewer keys than splits x block_N: the plan drops empty splits
    (1, 2, 1, 64, 64, 1),
]


@pytest.mark.parametrize("batch,heads,kv_heads,seqlen_kv,dim,num_split", CASES)
def test_flash_decoding(batch, heads, kv_heads, seqlen_kv, dim, num_split):
    torch.manual_seed(0)
    kernel = ex.flash_decoding(batch, heads, kv_heads, seqlen_kv, dim, num_split)
    q = torch.randn(batch, heads, dim).half()
    k = torch.randn(batch, seqlen_kv, kv_heads, dim).half()
    v = torch.randn(batch, seqlen_kv, kv_heads, dim).half()
    out = kernel(q, k, v)
    assert out.shape == (batch, heads, dim) and out.dtype == torch.float16
    torch.testing.assert_close(out, ex.ref_program(q, k, v), rtol=1e-2, atol=1e-2)


def test_flash_decoding_padded_head_block():
    # block_H much larger than the group: extra query rows are computed but never stored.
    torch.manual_seed(0)
    kernel = ex.flash_decoding(1, 4, 2, 200, 64, 2, block_H=32)
    q = torch.randn(1, 4, 64).half()
    k = torch.randn(1, 200, 2, 64).half()
    v = torch.randn(1, 200, 2, 64).half()
    torch.testing.assert_close(kernel(q, k, v), ex.ref_program(q, k, v), rtol=1e-2, atol=1e-2)


def test_split_plan():
    assert ex.split_plan(256, 4, 64) == (64, 4)
    assert ex.split_plan(100, 4, 64) == (64, 2)
    assert ex.split_plan(200, 2, 64) == (128, 2)


def test_flash_decoding_main():
    ex.main(batch=1, heads=4, kv_heads=2, seqlen_kv=192, dim=64, num_split=3, bench=True)
