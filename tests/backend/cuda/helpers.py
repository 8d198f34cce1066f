"""Build helpers for the CUDA backend tests."""
import collections
import re

from tilelang.backend.registry import get_backend, parse_target
from tilelang.backend.cuda.host.nvrtc import sass


def build(func, arch="sm_90a", config=None):
    return get_backend("cuda").build(func, parse_target({"kind": "cuda", "arch": arch}), dict(config or {}) or None)


def plan_of(func, arch="sm_90a"):
    """(KernelPlan, KernelLaunch) of the (first) kernel of `func` after the CUDA passes up to
    plan_kernels: what the plan decided, without generating code."""
    from tilelang.backend.cuda import pipeline as P
    from tilelang.backend.cuda.plan.plan_kernels import plan_kernels, kernel_plan
    from tilelang.ir import stmt as S
    from tilelang.ir.visitor import walk
    from tilelang.transform.pass_manager import PassContext, run_passes
    ctx = PassContext(config={"_keep_tile_ops": P.KEEP_TILE_OPS})
    ctx.target = parse_target({"kind": "cuda", "arch": arch})
    out = run_passes(func, P.PASSES[:P.PASSES.index(plan_kernels) + 1], ctx)
    launches = []
    walk(out.body, lambda n: launches.append(n) if isinstance(n, S.KernelLaunch) else None)
    return kernel_plan(launches[0]), launches[0]


def sass_ops(artifact):
    """Opcode -> count in the cubin's SASS."""
    text = sass(artifact.binary)
    return collections.Counter(re.findall(r"\b([A-Z][A-Z0-9]+)(?:\.[A-Za-z0-9_.]+)*\s", text))


def load_example(name, tag):
    """examples/<name>/example_<name>.py as a module of its own (`tag` keeps the
    module names of different test files apart)."""
    import importlib.util
    import pathlib
    import sys
    path = pathlib.Path(__file__).resolve().parents[3] / "examples" / name / f"example_{name}.py"
    spec = importlib.util.spec_from_file_location(f"example_{name}_{tag}", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def check_flash_attention(fa, kern, b, h, sq, skv, d, causal):
    """Run a compiled examples/flash_attention kernel on random fp16 inputs on the GPU
    and compare it with the example's torch reference."""
    import torch
    torch.manual_seed(0)
    q = torch.randn(b, h, sq, d, device="cuda", dtype=torch.float16)
    k = torch.randn(b, h, skv, d, device="cuda", dtype=torch.float16)
    v = torch.randn(b, h, skv, d, device="cuda", dtype=torch.float16)
    out = kern(q, k, v)
    ref = fa.ref_program(q.float(), k.float(), v.float(), causal)
    torch.testing.assert_close(out.float(), ref.float(), rtol=1e-2, atol=1e-2)
