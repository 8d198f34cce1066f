"""Load a compiled shared object with ctypes and call its entry point."""
from __future__ import annotations

import contextlib
import ctypes
import hashlib
import os
import tempfile

from tilelang.ir.errors import TileLangError


_private_dir = None


def _private_so_dir():
    """A directory of this process's own, removed at exit: where shared objects go when
    the cache is disabled or its directory is not writable."""
    global _private_dir
    if _private_dir is None:
        import atexit
        import shutil
        _private_dir = tempfile.mkdtemp(prefix="tilelang_so_")
        atexit.register(shutil.rmtree, _private_dir, True)
    return _private_dir


def _so_dirs():
    """Where to write a shared object: the cache's `so/` folder, then a private one."""
    from tilelang.env import cache_dir, cache_disabled
    if not cache_disabled():
        yield os.path.join(cache_dir(), "so")
    yield _private_so_dir()


def _file_digest(path):
    h = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
    except OSError:
        return None
    return h.hexdigest()


def shared_object_path(binary: bytes) -> str:
    """A file holding `binary`, named by its sha256. An existing file is loaded only
    when its content has that hash (a truncated or overwritten one would crash the
    process in the loader or run other code); otherwise it is rewritten atomically."""
    digest = hashlib.sha256(binary).hexdigest()
    last_error = None
    for d in _so_dirs():
        path = os.path.join(d, f"{digest[:32]}.so")
        if _file_digest(path) == digest:
            return path
        try:
            os.makedirs(d, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=d, suffix=".so.tmp")
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(binary)
                os.replace(tmp, path)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.remove(tmp)
                raise
            return path
        except OSError as e:   # a read-only cache: the private directory next
            last_error = e
    raise TileLangError(f"cannot write the compiled kernel to disk to load it: {last_error}")


class CPULauncher:
    def __init__(self, artifact):
        path = shared_object_path(artifact.binary)
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
