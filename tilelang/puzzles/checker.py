"""`python -m tilelang.puzzles check N`: import a learner's file, compile its kernel once with the
puzzle's sizes symbolic (`T.dynamic`), run it on several random ragged shapes and compare with a
numpy reference. Every failure is reported as text a learner can act on, never as a crash."""
from __future__ import annotations

import importlib.util
import itertools
import os
import traceback

import numpy as np

from tilelang.puzzles.catalog import Puzzle
from tilelang.puzzles.mismatch import describe

_module_ids = itertools.count()


class NotSolved(Exception):
    """The learner's file cannot be checked yet; the message says why and what to do."""


def default_device():
    try:
        import torch
        return "cuda" if torch.cuda.is_available() else "cpu"
    except ImportError:
        return "cpu"


def load(path, puzzle: Puzzle):
    """The factory `puzzle.entry` defined in the file at `path`."""
    if not os.path.exists(path):
        raise NotSolved(f"{path} does not exist; `python -m tilelang.puzzles start {puzzle.number}` "
                        f"copies the exercise there")
    spec = importlib.util.spec_from_file_location(f"tilelang_puzzle_{next(_module_ids)}", path)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as e:  # noqa: BLE001 - any error in the learner's file is reported, not raised
        raise NotSolved(f"importing {path} failed:\n{_user_frames(e, path)}") from None
    fn = getattr(module, puzzle.entry, None)
    if fn is None:
        raise NotSolved(f"{path} defines no `{puzzle.entry}`: puzzle {puzzle.number} checks a function of "
                        f"that name (see `python -m tilelang.puzzles show {puzzle.number}`)")
    return fn


def _user_frames(e, path):
    """The exception with the traceback frames of the learner's file only."""
    frames = [f for f in traceback.extract_tb(e.__traceback__) if os.path.abspath(f.filename) == os.path.abspath(path)]
    text = "".join(traceback.format_list(frames)) if frames else ""
    return text + f"{type(e).__name__}: {e}"


def build(fn, puzzle: Puzzle, target, path):
    """Call the factory with symbolic sizes and compile its prim_func for `target`."""
    import tilelang
    import tilelang.language as T
    from tilelang.ir.errors import TileLangError
    from tilelang.ir.function import PrimFunc
    from tilelang.jit import JITImpl

    sizes = {name: T.dynamic(name) for name in puzzle.sizes}
    try:
        func = fn.get_tir(**sizes, **puzzle.params) if isinstance(fn, JITImpl) else fn(**sizes, **puzzle.params)
    except NotImplementedError as e:
        raise NotSolved(f"puzzle {puzzle.number} is not solved yet: `{puzzle.entry}` still raises "
                        f"NotImplementedError ({e}).\nReplace that line with your kernel; "
                        f"`python -m tilelang.puzzles show {puzzle.number}` prints the exercise again") from None
    except TileLangError as e:
        raise NotSolved(f"`{puzzle.entry}` does not trace:\n{e}") from None
    except Exception as e:  # noqa: BLE001
        raise NotSolved(f"calling `{puzzle.entry}({_args(puzzle)})` failed:\n{_user_frames(e, path)}") from None
    if not isinstance(func, PrimFunc):
        raise NotSolved(f"`{puzzle.entry}` must return the @T.prim_func it defines, it returned "
                        f"{type(func).__name__}")
    try:
        return tilelang.compile(func, target=target)
    except TileLangError as e:
        raise NotSolved(f"your kernel does not compile for {target}:\n{e}") from None


def _args(puzzle):
    return ", ".join([f"{n}=<size>" for n in puzzle.sizes] + [f"{k}={v!r}" for k, v in puzzle.params.items()])


def run_case(kernel, puzzle: Puzzle, inputs, sizes, device):
    """The kernel's output for one shape; the output starts as NaN so that elements the
    kernel never writes show up."""
    expected = puzzle.reference(inputs, sizes, puzzle.params)
    out = np.full(expected.shape, np.nan, dtype=puzzle.out_dtype)
    if device == "cpu":
        kernel(*inputs, out)
        return out, expected
    import torch
    args = [torch.from_numpy(np.ascontiguousarray(x)).to(device) for x in inputs + [out]]
    kernel(*args)
    torch.cuda.synchronize()
    return args[-1].cpu().numpy(), expected


def check(puzzle: Puzzle, path, device=None, shapes=3, seed=0, out=print) -> bool:
    """Check the learner's file; prints a report through `out` and returns whether it passed."""
    device = device or default_device()
    target = "cuda" if device.startswith("cuda") else "cpu"
    out(f"puzzle {puzzle.number}: {puzzle.title} — checking `{puzzle.entry}` in {path} on {device}")
    try:
        fn = load(path, puzzle)
        kernel = build(fn, puzzle, target, path)
    except NotSolved as e:
        out(str(e))
        return False
    rng = np.random.default_rng(seed)
    ok = True
    for case in range(shapes):
        sizes = puzzle.draw_sizes(rng, ragged=case < shapes - 1 or shapes == 1)
        label = ", ".join(f"{k}={v}" for k, v in sizes.items())
        inputs = puzzle.inputs(rng, sizes, puzzle.params)
        try:
            got, expected = run_case(kernel, puzzle, inputs, sizes, device)
        except Exception as e:  # noqa: BLE001
            out(f"  shape {label}: running the kernel failed: {type(e).__name__}: {e}")
            ok = False
            continue
        if got.shape != expected.shape:
            out(f"  shape {label}: the output has shape {got.shape}, expected {expected.shape}")
            ok = False
            continue
        lines = describe("out", got, expected, puzzle.out_tile(puzzle.params), puzzle.atol, puzzle.rtol)
        if lines:
            ok = False
            out(f"  shape {label}: WRONG")
            for line in lines:
                out("  " + line)
        else:
            out(f"  shape {label}: ok")
    out(f"puzzle {puzzle.number}: {'PASSED' if ok else 'not yet'}")
    return ok
