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
    args = p.parse_args(argv)
    try:
        parse_target_name(args.target)
    except ValueError as e:
        p.error(f"--target: {e}")
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


if __name__ == "__main__":
    main()
