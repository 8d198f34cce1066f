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


ex = _load("flash_attention")

SHAPES = [
    # batch, heads, seq_q, seq_kv, dim
    (1, 2, 128, 128, 64),
    (2, 1, 200, 200, 64),
    (1, 1, 100, 228, 64),
    (1, 1, 256, 256, 64),
]


@pytest.mark.parametrize("layout", ["bhsd", "bshd"])
@pytest.mark.parametrize("is_causal", [False, True])
@pytest.mark.parametrize("batch,heads,seq_q,seq_kv,dim", SHAPES)
def test_flash_attention(batch, heads, seq_q, seq_kv, dim, is_causal, layout):
    torch.manual_seed(0)
    kernel = ex.flash_attention(batch, heads, seq_q, seq_kv, dim, is_causal, layout)
    q, k, v = ex.make_inputs(batch, heads, seq_q, seq_kv, dim, layout, device="cpu")
    out = kernel(q, k, v)
    assert out.shape == q.shape and out.dtype == torch.float16
    ref = ex.ref_program(q, k, v, is_causal, layout)
    torch.testing.assert_close(out, ref, rtol=1e-2, atol=1e-2)


def test_flash_attention_layouts_agree():
    torch.manual_seed(0)
    q, k, v = ex.make_inputs(1, 2, 136, 136, 64, "bhsd", device="cpu")
    out_bhsd = ex.flash_attention(1, 2, 136, 136, 64, True, "bhsd")(q, k, v)
    qt, kt, vt = (t.transpose(1, 2).contiguous() for t in (q, k, v))
    out_bshd = ex.flash_attention(1, 2, 136, 136, 64, True, "bshd")(qt, kt, vt)
    torch.testing.assert_close(out_bshd.transpose(1, 2), out_bhsd, rtol=1e-3, atol=1e-3)


# threads = 2 * block_M gives each warp 16 whole query rows (needed by GPU layouts).
@pytest.mark.parametrize("block_M,block_N,threads", [(32, 64, 64), (64, 32, 128), (128, 64, 256)])
def test_flash_attention_blocks(block_M, block_N, threads):
    torch.manual_seed(0)
    kernel = ex.flash_attention(1, 1, 160, 160, 64, True, "bhsd", block_M=block_M, block_N=block_N,
                                threads=threads)
    q, k, v = ex.make_inputs(1, 1, 160, 160, 64, "bhsd", device="cpu")
    torch.testing.assert_close(kernel(q, k, v), ex.ref_program(q, k, v, True, "bhsd"), rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("layout", ["bhsd", "bshd"])
def test_flash_attention_main(layout):
    ex.main(batch=1, heads=1, seq_q=128, seq_kv=128, dim=64, is_causal=True, layout=layout, bench=True)
