"""Load a compiled shared object with ctypes and call its entry point."""
from __future__ import annotations

import ctypes
import hashlib
import os
import tempfile

from tilelang.ir.errors import TileLangError


def _so_dir():
    from tilelang.env import cache_dir
    d = os.path.join(cache_dir(), "so")
    os.makedirs(d, exist_ok=True)
    return d


class CPULauncher:
    def __init__(self, artifact):
        digest = hashlib.sha256(artifact.binary).hexdigest()[:32]
        path = os.path.join(_so_dir(), f"{digest}.so")
        if not os.path.exists(path):
            fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".so.tmp")
            with os.fdopen(fd, "wb") as f:
                f.write(artifact.binary)
            os.replace(tmp, path)
        self.lib = ctypes.CDLL(path)
        self.fn = getattr(self.lib, artifact.entry)
        self.fn.restype = ctypes.c_int
        self.fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
        self.err = getattr(self.lib, artifact.entry + "_last_error")
        self.err.restype = ctypes.c_char_p
        self.nb = artifact.meta["num_buffers"]

    def __call__(self, buffers, ints, floats):
        bufs = (ctypes.c_void_p * max(1, len(buffers)))(*[_ptr(b) for b in buffers])
        iv = (ctypes.c_int64 * max(1, len(ints)))(*ints)
        fv = (ctypes.c_double * max(1, len(floats)))(*floats)
        rc = self.fn(bufs, iv, fv)
        if rc != 0:
            raise TileLangError(self.err().decode(errors="replace"))


def _ptr(x):
    if hasattr(x, "data_ptr"):
        return x.data_ptr()
    if hasattr(x, "ctypes"):
        return x.ctypes.data
    raise TypeError(f"cannot pass {type(x).__name__} to a CPU kernel")
