"""The kernel cache: memory, then a content-addressed disk cache, then (optionally) a
Redis server shared between hosts (`cache_remote.py`).

Keys hash the IR's structural form, the target, pass configs, compile flags, the
backend's toolchain identity and our version. Every entry on disk or on the server
is framed as MAGIC + digest + pickled payload; an entry whose digest does not match
(corrupt, truncated, or written by a host without the shared secret) is deleted and
the caller recompiles.

Concurrency: several processes may compile and store the same key at once. Writes
go to a private temp file that is renamed over the entry (atomic on POSIX), so a
reader sees either no entry or a complete one. `build_lock(key)` (an advisory
`fcntl` lock file next to the entry) lets processes agree that only one of them
compiles a key while the others wait and then read its result: `get_or_build`.

Besides kernels, the same tiers hold small "blobs" in other namespaces (the
autotuner's best configs): `load_blob` / `store_blob`.
"""
from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import pickle
import tempfile
import threading
import time

from tilelang import env
from tilelang.jit import cache_remote as remote

_memory: dict = {}
_preloaded: dict = {}
_lock = threading.Lock()
_enabled = True
MAGIC = b"TLK1"
KERNELS = "kernels"


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
        for ns in (KERNELS, "autotuner"):
            shutil.rmtree(os.path.join(env.cache_dir(), ns), ignore_errors=True)


_FINGERPRINT = None


def code_fingerprint() -> str:
    """A digest of this package's own source (Python files and CUDA/C++ headers), so
    that kernels cached by another build of the compiler are never reused even when
    the version string did not change. Computed once per process (a few ms)."""
    global _FINGERPRINT
    if _FINGERPRINT is None:
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        h = hashlib.sha256()
        for d, dirs, files in sorted(os.walk(root)):
            dirs.sort()
            for f in sorted(files):
                if f.endswith((".py", ".h")):
                    p = os.path.join(d, f)
                    h.update(os.path.relpath(p, root).encode())
                    with open(p, "rb") as fh:
                        h.update(fh.read())
        _FINGERPRINT = h.hexdigest()[:16]
    return _FINGERPRINT


def make_key(*parts) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(repr(p).encode())
        h.update(b"\x00")
    return h.hexdigest()


# framing ------------------------------------------------------------------------
def _digest(payload: bytes, key: bytes | None) -> bytes:
    if key:
        return hmac.new(key, payload, hashlib.sha256).digest()
    return hashlib.sha256(payload).digest()


def encode(obj, secret: bytes | None = None) -> bytes:
    payload = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    return MAGIC + _digest(payload, secret) + payload


def _decode(data: bytes, secret: bytes | None = None):
    """The object in a framed entry, or None when it does not verify."""
    if not data or len(data) < 4 + 32 or data[:4] != MAGIC:
        return None
    digest, payload = data[4:36], data[36:]
    if not hmac.compare_digest(_digest(payload, secret), digest):
        return None
    try:
        return pickle.loads(payload)
    except Exception:  # noqa: BLE001 - any unpickling failure means a bad entry
        return None


# disk tier -----------------------------------------------------------------------
def _path(key, namespace=KERNELS):
    return os.path.join(env.cache_dir(), namespace, key[:2], key + ".tlk")


def _read_disk(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return None


def _write_disk(path, data: bytes):
    tmp = None
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".", suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        tmp = None
    except OSError:
        pass  # a read-only or full cache directory only costs recompiles
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.remove(tmp)


def _drop_disk(path):
    with contextlib.suppress(OSError):
        os.remove(path)


# tiers together ------------------------------------------------------------------
def _load_tiers(namespace, key):
    """Disk, then remote (a verified remote entry is copied to disk)."""
    path = _path(key, namespace)
    data = _read_disk(path)
    if data is not None:
        obj = _decode(data)
        if obj is not None:
            return obj
        _drop_disk(path)  # corrupt or truncated: drop it, the caller recompiles
    data = remote.get(namespace, key)
    if data is None:
        return None
    obj = _decode(data, remote.secret())
    if obj is None:
        remote.delete(namespace, key)  # corrupt remote entry: nobody should use it
        return None
    _write_disk(path, encode(obj))
    return obj


def _store_tiers(namespace, key, obj):
    data = encode(obj)
    _write_disk(_path(key, namespace), data)
    if remote.url():
        sec = remote.secret()
        remote.put(namespace, key, data if sec is None else encode(obj, sec))


def load(key):
    """The artifact stored under `key`, or None (the caller compiles)."""
    with _lock:
        art = _preloaded.get(key)
    if art is not None:
        return art
    if not is_cache_enabled():
        return None
    with _lock:
        art = _memory.get(key)
    if art is not None:
        return art
    art = _load_tiers(KERNELS, key)
    if art is not None:
        with _lock:
            _memory[key] = art
    return art


def store(key, artifact):
    if not is_cache_enabled():
        return
    with _lock:
        _memory[key] = artifact
    _store_tiers(KERNELS, key, artifact)


def load_blob(namespace: str, key: str):
    if not is_cache_enabled():
        return None
    return _load_tiers(namespace, key)


def store_blob(namespace: str, key: str, obj):
    if is_cache_enabled():
        _store_tiers(namespace, key, obj)


@contextlib.contextmanager
def preloaded(entries: dict):
    """Make `load` return these artifacts (key -> Artifact) inside the block, even
    with the cache disabled: how artifacts compiled in worker processes are adopted."""
    with _lock:
        _preloaded.update(entries)
    try:
        yield
    finally:
        with _lock:
            for k in entries:
                _preloaded.pop(k, None)


# cross-process build lock -----------------------------------------------------------
@contextlib.contextmanager
def build_lock(key, timeout=600.0, namespace=KERNELS):
    """Hold an exclusive advisory lock on `key` across processes (no-op where
    `fcntl` is missing). After `timeout` seconds the caller proceeds without it, so
    a stuck holder only costs a duplicate compile. The OS releases the lock of a
    process that dies."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    path = _path(key, namespace) + ".lock"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError:
        yield
        return
    try:
        deadline = time.monotonic() + timeout
        delay = 0.005
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError:
                if time.monotonic() >= deadline:
                    break
                time.sleep(delay)
                delay = min(delay * 2, 0.1)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def get_or_build(key, build):
    """The artifact for `key`: from the cache, else built by exactly one of the
    processes asking at once. Returns (artifact, cache_hit)."""
    art = load(key)
    if art is not None:
        return art, True
    if not is_cache_enabled():
        return build(), False
    with build_lock(key):
        art = load(key)  # another process may have built it while we waited
        if art is not None:
            return art, True
        art = build()
        store(key, art)
    return art, False
