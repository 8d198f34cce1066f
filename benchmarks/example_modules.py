"""Loading this repository's examples (and the published ones) as modules, for the benchmark
scripts: `examples/<name>/example_<file or name>.py` under a module name of the caller's own
(`prefix`), so that two scripts, or a fresh copy of one file, never share a jit cache."""
from __future__ import annotations

import importlib.util
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]


def load_module(path, name):
    """The Python file `path` imported as module `name` (registered in sys.modules)."""
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def load_example(name, file=None, prefix="example"):
    """examples/<name>/example_<file or name>.py as the module `<prefix>_<file or name>`."""
    return load_module(ROOT / "examples" / name / f"example_{file or name}.py", f"{prefix}_{file or name}")
