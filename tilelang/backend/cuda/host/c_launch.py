"""The launch as one C call: `c_launch.c` built with the system C compiler into a small
Python extension, once per machine and Python version (kept in the kernel cache
directory), as Triton builds its launcher. A ctypes call of cuLaunchKernel costs ~1 us
of Python and libffi work a launch (its eleven arguments converted one by one, its
pointer slots set through ctypes objects under a lock); the extension's `Launch` object
takes the grid, the stream and the parameter values in one vectorcall and writes them
into its own kernelParams slots.

Optional: without a C compiler or Python's headers (or with TILELANG_CUDA_C_LAUNCH=0,
or on a Python without the GIL, which the lock-free slots rely on) `extension()` is None
and the launcher keeps its ctypes call. `reason()` says why."""
from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import threading

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "c_launch.c")
MODULE = "_tl_c_launch"

_lock = threading.Lock()
_state = {}   # "module": the loaded extension or None, "reason": why not


def _compiler():
    for c in (os.environ.get("CC"), "cc", "gcc", "clang"):
        if c and shutil.which(c):
            return shutil.which(c)
    return None


def _build(cc, include, path):
    """Compile the extension to `path` (written to a temporary name, then renamed: another
    process building the same file at the same time is harmless)."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd, tmp = tempfile.mkstemp(suffix=".so", dir=os.path.dirname(path))
    os.close(fd)
    try:
        r = subprocess.run([cc, "-O2", "-shared", "-fPIC", f"-I{include}", SOURCE, "-o", tmp],
                           capture_output=True, text=True)
        if r.returncode:
            raise OSError(f"{cc} failed: {r.stderr.strip()[-500:]}")
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _load():
    from tilelang.backend.cuda.options import read_switches
    if not read_switches()["TILELANG_CUDA_C_LAUNCH"]:
        return None, "TILELANG_CUDA_C_LAUNCH=0"
    if sysconfig.get_config_var("Py_GIL_DISABLED"):
        return None, "a free-threaded Python (the extension's slots rely on the GIL)"
    include = sysconfig.get_paths().get("include")
    if not include or not os.path.exists(os.path.join(include, "Python.h")):
        return None, "Python's headers (Python.h) are not installed"
    cc = _compiler()
    if cc is None:
        return None, "no C compiler (cc, gcc or clang; or set CC)"
    from tilelang import env
    with open(SOURCE, "rb") as f:
        key = hashlib.sha256(f.read() + sys.version.encode() + include.encode() + cc.encode()).hexdigest()[:16]
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    path = os.path.join(env.cache_dir(), "c_launch", f"{MODULE}_{key}{suffix}")
    try:
        if not os.path.exists(path):
            _build(cc, include, path)
        loader = importlib.machinery.ExtensionFileLoader(MODULE, path)
        spec = importlib.util.spec_from_file_location(MODULE, path, loader=loader)
        mod = importlib.util.module_from_spec(spec)
        loader.exec_module(mod)
    except (OSError, ImportError) as e:
        return None, f"building or loading {path} failed: {e}"
    return mod, None


def extension():
    """The built extension module (its `Launch` type), or None (see `reason()`)."""
    if "module" not in _state:
        with _lock:
            if "module" not in _state:
                _state["module"], _state["reason"] = _load()
    return _state["module"]


def reason():
    """Why `extension()` is None (None when it is not)."""
    extension()
    return _state.get("reason")


def reset():
    """Forget the loaded state (tests switch TILELANG_CUDA_C_LAUNCH)."""
    with _lock:
        _state.clear()


# the C type of each parameter dtype, as the extension's kind codes (struct-module letters)
KINDS = {"int8": "b", "uint8": "B", "int16": "h", "uint16": "H", "int32": "i", "uint32": "I", "int64": "q",
         "uint64": "Q", "bool": "?", "float32": "f", "float64": "d", "handle": "Q"}
