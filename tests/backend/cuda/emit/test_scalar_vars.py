"""T.alloc_var is one C scalar on CUDA (`float v{}` / `int v = 5;`), and fp8 arithmetic is
computed in float and rounded once (the fp8 types have no C++ operators: `v + x[i]` on
float8_e4m3fn did not compile)."""
import pytest
import torch

import tilelang
import tilelang.language as T
from tests.backend.cuda.conftest import needs_nvrtc
from tests.backend.cuda.helpers import build

DTYPES = ["float16", "bfloat16", "float8_e4m3fn", "int32", "float32", "int64"]


def _accumulate(dt):
    @T.prim_func
    def k(x: T.Tensor((4,), dt), y: T.Tensor((2,), dt)):
        with T.Kernel(1, threads=32):
            v = T.alloc_var(dt)
            w = T.alloc_var(dt, 1)
            for i in T.serial(4):
                v = v + x[i]
            y[0] = v
            y[1] = w
    return k


@needs_nvrtc
@pytest.mark.parametrize("dt", DTYPES)
def test_vars_are_scalars_and_compile(dt):
    src = build(_accumulate(dt)).source
    assert " v{};" in src and " w = " in src and "v[" not in src and "w[" not in src


@pytest.mark.parametrize("target", ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
@pytest.mark.parametrize("dt", DTYPES)
def test_vars_accumulate_alike_on_both_backends(target, dt):
    x = torch.tensor([0.5, 1.5, 2.0, 4.0]).to(getattr(torch, dt)).to(target)
    y = torch.zeros(2, dtype=getattr(torch, dt), device=target)
    tilelang.compile(_accumulate(dt), target=target)(x, y)
    ref = torch.zeros((), dtype=getattr(torch, dt))
    for v in x.cpu():
        ref = (ref.float() + v.float()).to(getattr(torch, dt))
    assert y[0].cpu().float().item() == ref.float().item() and y[1].cpu().float().item() == 1.0
