import importlib.util
import os

import pytest
import torch

os.environ.setdefault("TILELANG_DEFAULT_TARGET", "cpu")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_spec = importlib.util.spec_from_file_location(
    "example_mla_decode", os.path.join(ROOT, "examples", "deepseek_mla", "example_mla_decode.py"))
mla = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(mla)


@pytest.mark.parametrize("batch,heads,seqlen_kv,num_split", [(1, 16, 128, 2), (2, 32, 300, 3), (1, 16, 70, 4)])
def test_mla_decode_matches_reference(batch, heads, seqlen_kv, num_split):
    torch.manual_seed(0)
    dim, pe_dim = 64, 16
    k = mla.mla_decode(batch, heads, seqlen_kv, dim, pe_dim, block_H=16, block_N=32, num_split=num_split)
    ins = mla.make_inputs(batch, heads, seqlen_kv, dim, pe_dim)
    torch.testing.assert_close(k(*ins).float(), mla.ref_program(*ins).float(), atol=2e-2, rtol=2e-2)
