"""Compile, run and compare one program: `check(p, target)` renders the description into
a module file, imports it, compiles its kernel (the CPU backend, or the CUDA backend: run
on the GPU, or with `compile_only` built by NVRTC for an arch such as sm_90a with no GPU),
calls it on the reference inputs and compares each output with the reference within its
per-dtype error bound. The outcome is a `Result` whose status says which stage failed."""
from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field

import numpy as np

from tilelang.testing.fuzz import numerics as nx
from tilelang.testing.fuzz import reference, spec
from tilelang.testing.fuzz.render import render

# what failed: the frontend rejected the rendered module; the compiler (passes, codegen,
# C++ compiler or NVRTC) failed; the call raised; an output is outside its bound; the
# program ran past its time limit or killed its worker process (pool.py)
STATUSES = ("ok", "mismatch", "frontend_error", "compile_error", "runtime_error", "timeout", "crash")


@dataclass
class Result:
    program: object
    status: str
    detail: str = ""
    seconds: float = 0.0
    path: str = ""
    mismatches: list = field(default_factory=list)

    @property
    def family(self):
        return spec.family(self.program)

    @property
    def ok(self):
        return self.status == "ok"

    def headline(self):
        first = self.detail.strip().splitlines()[0] if self.detail.strip() else ""
        return f"{self.family} seed={self.program.seed} {self.status}: {first[:300]}"


_WORKDIR = None


def workdir():
    global _WORKDIR
    if _WORKDIR is None:
        _WORKDIR = tempfile.mkdtemp(prefix="tl_fuzz_")
    return _WORKDIR


def module_name(p) -> str:
    digest = hashlib.sha1(repr(p).encode()).hexdigest()[:12]
    return f"tl_fuzz_{spec.family(p).lower()}_{p.seed}_{digest}"


def load_kernel(p, directory=None):
    """Write the rendered module to `directory` and import it; returns (prim_func, path)."""
    directory = directory or workdir()
    name = module_name(p)
    path = os.path.join(directory, name + ".py")
    with open(path, "w") as f:
        f.write(render(p))
    mspec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(mspec)
    sys.modules[name] = mod
    try:
        mspec.loader.exec_module(mod)
    finally:
        sys.modules.pop(name, None)
    return mod.main, path


def cuda_target(arch="sm_90a"):
    return f"cuda -arch={arch}"


def build(func, target, compile_only=False, arch="sm_90a"):
    """A callable kernel, or (compile_only on CUDA) the NVRTC artifact."""
    from tilelang.jit import compile as tl_compile
    if target == "cpu":
        return tl_compile(func, target="cpu")
    if compile_only:
        from tilelang.backend.registry import get_backend, parse_target
        return get_backend("cuda").build(func, parse_target(cuda_target(arch)))
    return tl_compile(func, target="cuda")


# ------------------------------------------------------------------ calling

def _to_device(x):
    import torch
    if not isinstance(x, np.ndarray):
        return x
    if x.dtype == nx.np_dtype("bfloat16"):
        return torch.from_numpy(x.view(np.int16)).view(torch.bfloat16).cuda()
    return torch.from_numpy(x).cuda()


def _to_host(t):
    import torch
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).cpu().numpy().view(nx.np_dtype("bfloat16"))
    return t.cpu().numpy()


def call_kernel(kernel, p, call, target):
    """Run one call on copies of its arguments; returns {output name: numpy array}."""
    outs = [name for name, _ in reference.outputs(p)]
    if target == "cpu":
        args = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in call.args.items()}
        kernel(*args.values())
        return {k: args[k] for k in outs}
    args = {k: _to_device(v) for k, v in call.args.items()}
    kernel(*args.values())
    return {k: _to_host(args[k]) for k in outs}


def compare(p, call, got):
    """The mismatches of one call's outputs (empty when all are within bounds)."""
    want = reference.expected(p, call)
    found = []
    for name, dtype in reference.outputs(p):
        m = nx.compare(name, got[name], want[name], dtype)
        if m is not None:
            found.append(m)
    return found


def _error_text(e):
    text = f"{type(e).__name__}: {e}"
    if not isinstance(e, Exception) or type(e).__module__.startswith("tilelang"):
        return text[:4000]
    tb = traceback.format_exception(type(e), e, e.__traceback__)
    return (text + "\n" + "".join(tb[-4:]))[:4000]


def check_func(p, func, target="cpu", compile_only=False, arch="sm_90a", hook=None):
    """(status, detail, mismatches) of an already loaded kernel function. `hook(name,
    array)` may change an output before the comparison (tests inject bugs with it)."""
    try:
        kernel = build(func, target, compile_only, arch)
    except Exception as e:  # noqa: BLE001 - every failure is a finding
        return "compile_error", _error_text(e), []
    if compile_only:
        return "ok", "", []
    mismatches = []
    for call in reference.calls(p):
        try:
            got = call_kernel(kernel, p, call, target)
        except Exception as e:  # noqa: BLE001
            return "runtime_error", _error_text(e), []
        if hook is not None:
            for name, arr in got.items():
                hook(name, arr)
        for m in compare(p, call, got):
            mismatches.append(m)
            if call.M is not None and getattr(p, "dyn_M", ()):
                m.name += f" (M={call.M})"
    if mismatches:
        return "mismatch", "\n".join(str(m) for m in mismatches), mismatches
    return "ok", "", []


def check(p, target="cpu", compile_only=False, arch="sm_90a", directory=None, hook=None) -> Result:
    """Render, import, compile, run and compare one program."""
    t0 = time.perf_counter()
    try:
        func, path = load_kernel(p, directory)
    except Exception as e:  # noqa: BLE001
        return Result(p, "frontend_error", _error_text(e), time.perf_counter() - t0)
    status, detail, mismatches = check_func(p, func, target, compile_only, arch, hook)
    return Result(p, status, detail, time.perf_counter() - t0, path, mismatches)


def check_repro(p, func, argv) -> int:
    """The `__main__` of a rendered module: `python file.py [cpu|cuda|sm_90a]`."""
    what = argv[0] if argv else "cpu"
    if what.startswith("sm_"):
        status, detail, _ = check_func(p, func, "cuda", True, what)
    else:
        status, detail, _ = check_func(p, func, what)
    print(f"{spec.family(p)} seed={p.seed} on {what}: {status}")
    if detail:
        print(detail)
    return 0 if status == "ok" else 1
