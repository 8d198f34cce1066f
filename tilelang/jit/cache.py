"""The kernel cache: an in-memory dict and a content-addressed disk cache.

Keys hash the IR's structural form, the target, pass configs, compile flags, the
backend's toolchain identity and our version. Entries are written atomically
(temp file + rename), carry a checksum of their payload, and are recompiled when
they fail to load or verify (corrupt or truncated files are never used)."""
from __future__ import annotations

import hashlib
import os
import pickle
import tempfile
import threading

from tilelang import env

_memory: dict = {}
_lock = threading.Lock()
_enabled = True
MAGIC = b"TLK1"


def disable_cache():
    global _enabled
    _enabled = False


def enable_cache():
    global _enabled
    _enabled = True


def is_cache_enabled():
    return _enabled and not env.cache_disabled()


def clear_cache(disk=False):
    _memory.clear()
    if disk:
        import shutil
        shutil.rmtree(os.path.join(env.cache_dir(), "kernels"), ignore_errors=True)


def make_key(*parts) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(repr(p).encode())
        h.update(b"\x00")
    return h.hexdigest()


def _path(key):
    return os.path.join(env.cache_dir(), "kernels", key[:2], key + ".tlk")


def load(key):
    if not is_cache_enabled():
        return None
    with _lock:
        art = _memory.get(key)
    if art is not None:
        return art
    path = _path(key)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    art = _decode(data)
    if art is None:  # corrupt or truncated: drop it, the caller recompiles
        try:
            os.remove(path)
        except OSError:
            pass
        return None
    with _lock:
        _memory[key] = art
    return art


def _decode(data: bytes):
    if len(data) < 4 + 32 or data[:4] != MAGIC:
        return None
    digest, payload = data[4:36], data[36:]
    if hashlib.sha256(payload).digest() != digest:
        return None
    try:
        return pickle.loads(payload)
    except Exception:  # noqa: BLE001 - any unpickling failure means a bad entry
        return None


def store(key, artifact):
    if not is_cache_enabled():
        return
    with _lock:
        _memory[key] = artifact
    payload = pickle.dumps(artifact, protocol=pickle.HIGHEST_PROTOCOL)
    data = MAGIC + hashlib.sha256(payload).digest() + payload
    path = _path(key)
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except OSError:
        pass  # a read-only or full cache directory only costs recompiles
