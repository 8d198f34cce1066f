"""Run the published examples' `run_regression_perf` entry points and write the CUDA source of
every kernel they build to OUT/<example>/<n>_<kernel>.cu: under whichever `tilelang` is first on
PYTHONPATH (ours or the published package), so the two packages' code for the same kernel can be
read side by side. Usage:

  python benchmarks/dump_kernel_sources.py --examples .pub/examples --out DIR blocksparse_gemm/example_blocksparse_gemm ...
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
    ap.add_argument("modules", nargs="+", help="folder/module of an example, e.g. convolution/example_convolution")
    args = ap.parse_args(argv)
    import tilelang
    from tilelang.jit.kernel import JITKernel
    state = {"dir": args.out, "n": 0}
    init = JITKernel.__init__

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


if __name__ == "__main__":
    main()
