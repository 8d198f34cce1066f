"""Run the published examples' `run_regression_perf` entry points and write the CUDA source of
every kernel they build to OUT/<example>/<n>_<kernel>.cu: under whichever `tilelang` is first on
PYTHONPATH (ours or the published package), so the two packages' code for the same kernel can be
read side by side. Usage:

  python benchmarks/dump_kernel_sources.py --examples .pub/examples --out DIR blocksparse_gemm/example_blocksparse_gemm ...

Without a GPU (ours, `TILELANG_DEFAULT_TARGET=cuda`: sm_90a), `--fake-cuda` makes the tensors the
entry points ask for on "cuda" CPU tensors, so each kernel compiles (and is written); its calls do
nothing. The published package (Python 3.12 with torch, its unpacked wheels on
PYTHONPATH) cannot build without a GPU and nvcc: `--lower-only` has its JITKernel only lower the
function to sm_90a CUDA source (`tilelang.lower` inside the target's context), which is written,
and its calls do nothing:

  PYTHONPATH=<published> python3.12 benchmarks/dump_kernel_sources.py --fake-cuda \
      --lower-only --examples .pub/examples --out DIR deepseek_v32/sparse_mla_fwd

To see which kernels a change touches, dump before and after and `diff -r` the two folders. The
script in another checkout (`git worktree add /tmp/base HEAD~1`) still imports the package the
environment installed (this repository, editable), unless PYTHONPATH names that checkout:

  PYTHONPATH=/tmp/base TILELANG_DEFAULT_TARGET=cuda python /tmp/base/benchmarks/dump_kernel_sources.py \
      --fake-cuda --examples .pub/examples --out /tmp/before <modules>

(the first line it prints says which `tilelang` it imported).
"""
from __future__ import annotations

import argparse
import importlib
import os
import sys
import traceback


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--examples", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--fake-cuda", action="store_true", help="tensors asked for on cuda made on the CPU")
    ap.add_argument("--lower-only", action="store_true", help="lower to sm_90a source, do not build (published package)")
    ap.add_argument("modules", nargs="+", help="folder/module of an example, e.g. convolution/example_convolution")
    args = ap.parse_args(argv)
    if args.fake_cuda:
        _fake_cuda()
    import tilelang
    from tilelang.jit.kernel import JITKernel
    state = {"dir": args.out, "n": 0}
    init = _lowering_init if args.lower_only else JITKernel.__init__

    def recording_init(self, *a, **k):
        init(self, *a, **k)
        try:
            src = self.get_kernel_source()
        except Exception as e:  # noqa: BLE001 - a kernel without source is still noted
            src = f"// no source: {e}"
        state["n"] += 1
        name = getattr(getattr(self, "prim_func", None), "name", None) or "kernel"
        os.makedirs(state["dir"], exist_ok=True)
        with open(os.path.join(state["dir"], f"{state['n']:02d}_{name}.cu"), "w") as f:
            f.write(src)

    JITKernel.__init__ = recording_init
    if args.fake_cuda and not args.lower_only:
        # a call does nothing (its tensors are on the CPU): entry points that pass their
        # outputs in go on to build their next kernels
        JITKernel.__call__ = lambda self, *a, **k: None
    print("tilelang from", tilelang.__file__)
    for mod in args.modules:
        folder, name = mod.split("/")
        path = os.path.join(args.examples, folder)
        sys.path.insert(0, path)
        state["dir"], state["n"] = os.path.join(args.out, name), 0
        argv, sys.argv = sys.argv, [name]   # entry points that parse arguments see none
        try:
            m = importlib.import_module(name)
            r = m.run_regression_perf()
            print(f"{mod}: {r}", flush=True)
        except BaseException:  # noqa: BLE001 - SystemExit included: report, go on with the next
            traceback.print_exc()
        finally:
            sys.argv = argv
        sys.path.remove(path)


def _lowering_init(self, func=None, *a, pass_configs=None, **k):
    """A JITKernel that only lowers `func` to sm_90a CUDA source (get_kernel_source)."""
    import tilelang
    import tvm
    from tvm.target import Target
    target = Target({"kind": "cuda", "arch": "sm_90a"})
    self.prim_func = func
    with target, tvm.transform.PassContext(opt_level=3, config=dict(pass_configs or {})):
        art = tilelang.lower(func, target=target)
    self.get_kernel_source = lambda *a, **k: art.kernel_source
    # a call does nothing (the published JITKernel calls torch_function): an entry point that
    # passes its outputs in goes on to build its next kernels
    self.torch_function = lambda *a, **k: None


class _Stub:
    """Anything: attributes and calls give a stub, a decorated function stays itself."""

    def __getattr__(self, name):
        return _Stub()

    def __call__(self, *a, **k):
        return a[0] if len(a) == 1 and callable(a[0]) and not k else _Stub()


def _stub_triton():
    """Examples that import triton (a reference or a baseline they do not run here) import a
    stub where triton is not installed."""
    import importlib.util
    import types
    if importlib.util.find_spec("triton") is not None:
        return
    for name in ("triton", "triton.language", "triton.testing"):
        mod = types.ModuleType(name)
        mod.__getattr__ = lambda attr: _Stub()
        sys.modules[name] = mod
    sys.modules["triton"].language = sys.modules["triton.language"]
    sys.modules["triton"].testing = sys.modules["triton.testing"]


def _fake_cuda():
    """torch's factories and moves with a cuda device make CPU tensors instead (no GPU here)."""
    import functools
    import torch
    _stub_triton()

    def cpu(d):
        return "cpu" if (isinstance(d, str) and d.startswith("cuda")) or \
            (isinstance(d, torch.device) and d.type == "cuda") else d

    def moved(f):
        @functools.wraps(f)
        def g(*a, **k):
            if "device" in k:
                k["device"] = cpu(k["device"])
            return f(*[cpu(x) for x in a], **k) if f is torch.Tensor.to else f(*a, **k)
        return g
    for name in ("randn", "rand", "zeros", "ones", "empty", "full", "arange", "randint", "tensor", "randperm",
                 "linspace", "randn_like", "rand_like", "zeros_like", "ones_like", "empty_like", "full_like",
                 "empty_strided", "as_tensor", "eye", "normal"):
        if hasattr(torch, name):
            setattr(torch, name, moved(getattr(torch, name)))
    torch.Tensor.to = moved(torch.Tensor.to)
    import tilelang.profiler.bench as bench   # one call of the benchmarked function: its kernels compile
    import tilelang.profiler as profiler
    bench.do_bench = profiler.do_bench = lambda fn, *a, **k: (fn(), 0.0)[1]
    torch.Tensor.cuda = lambda self, *a, **k: self
    torch.cuda.is_available = lambda: True
    for name in ("synchronize", "manual_seed", "manual_seed_all", "empty_cache", "set_device"):
        setattr(torch.cuda, name, lambda *a, **k: None)
    torch.cuda.current_device = lambda: 0   # an H200 to packages that ask which GPU this is
    torch.cuda.get_device_capability = lambda *a, **k: (9, 0)
    torch.cuda.get_device_name = lambda *a, **k: "NVIDIA H200"


if __name__ == "__main__":
    main()
