"""`python -m tilelang.lsp` / `tilelang-lsp`: the language server over stdio."""
from __future__ import annotations

import argparse
import logging
import sys


def main(argv=None):
    from tilelang.lsp.layouts import DEFAULT_ARCH, parse_target_name
    p = argparse.ArgumentParser(prog="tilelang-lsp", description="TileLang language server (LSP over stdio)")
    p.add_argument("--target", default=DEFAULT_ARCH,
                   help="where hover's layouts come from: 'cpu' or an arch such as sm_90a or sm_80 "
                        "(compiled without a GPU; default %(default)s)")
    p.add_argument("--debounce-ms", type=float, default=200, help="delay after an edit before diagnostics refresh")
    p.add_argument("--idle-ms", type=float, default=750, help="pause after which kernels are lowered for the target")
    p.add_argument("--time-limit", type=float, default=10.0, help="seconds a document's code may run")
    p.add_argument("--log-level", default="WARNING")
    p.add_argument("--check", metavar="FILE", help="print what the server shows for FILE (no LSP) and exit")
    p.add_argument("--layouts", action="store_true", help="with --check: lower for the target, print layouts")
    args = p.parse_args(argv)
    try:
        parse_target_name(args.target)
    except ValueError as e:
        p.error(f"--target: {e}")
    if args.check:
        sys.exit(check(args.check, args.target, args.layouts, args.time_limit))
    logging.basicConfig(stream=sys.stderr, level=args.log_level.upper())
    try:
        from tilelang.lsp.server import Options, make_server
    except ImportError as e:
        sys.exit(f"tilelang-lsp needs pygls and lsprotocol: pip install 'tilelang[lsp]' ({e})")
    server = make_server(Options(target=args.target, debounce=args.debounce_ms / 1e3, idle=args.idle_ms / 1e3,
                                 time_limit=args.time_limit))
    try:
        server.start_io()
    finally:
        server.worker.stop()


def check(path, target, layouts, time_limit, repeat=5) -> int:
    """The analysis of one file, printed: diagnostics, hints, (layouts), time. Exit status 1
    when there are errors."""
    import os
    import time
    from tilelang.lsp.analysis import analyze
    from tilelang.lsp.layouts import lower_kernels
    path = os.path.abspath(path)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    cpu = []
    for _ in range(repeat):   # the first run also imports what the document imports
        t0 = time.process_time()
        an = analyze(text, path, time_limit)
        cpu.append(time.process_time() - t0)
    diags = list(an.diagnostics)
    lowered = lower_kernels(an.funcs, text, path, target) if layouts else None
    if lowered is not None:
        diags += lowered.diagnostics
    for d in diags:
        print(f"{path}:{d.range.line + 1}:{d.range.col + 1}: {d.severity}: {d.message}")
    for i, k in enumerate(an.kernels):
        print(f"kernel {k.name} (lines {k.first_line + 1}-{k.last_line + 1})"
              + (f" traced with {', '.join(f'{n}={v}' for n, v in k.params.items())}" if k.params else ""))
        for b in k.buffers:
            print(f"  line {b.line + 1:4d}  {b.name}: {b.label()}")
            if lowered is not None and lowered.layouts[i].get(b.name):
                print("              " + lowered.layouts[i][b.name].replace("\n", "\n              "))
        for lp in k.loops:
            print(f"  line {lp.hint_at[0] + 1:4d}  T.{lp.kind.capitalize()}: {lp.label()}")
    print(f"analysis: {min(cpu) * 1e3:.0f} ms of CPU (best of {repeat})")
    return 1 if any(d.severity == "error" for d in diags) else 0


if __name__ == "__main__":
    main()
