"""The kernel cache: memory, then a content-addressed disk cache, then (optionally) a
Redis server shared between hosts (`cache_remote.py`).

Keys hash the IR's structural form, the target, pass configs, compile flags, the
backend's toolchain identity and our version. Every entry on disk or on the server
is framed as MAGIC + digest + pickled (key, payload): an entry whose digest does not
match (corrupt, truncated, or written by a host without the shared secret) or that
was stored under another key (a file copied or renamed into place) is deleted with a
one-line warning and the caller recompiles. The digest covers every artifact the
entry holds (the CPU shared object, the cubin); a shared object written out to load
is named by its own hash and checked against it before it is loaded (runtime.py).

A cache directory that cannot be created or written only costs recompiles (a
one-line warning, once); kernels that need files (the CPU shared object) use a
private temporary directory instead.

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
import logging
import os
import pickle
import tempfile
import threading
import time

from tilelang import env
from tilelang.jit import cache_remote as remote

log = logging.getLogger("tilelang")
_memory: dict = {}
_preloaded: dict = {}
_lock = threading.Lock()
_enabled = True
MAGIC = b"TLK2"   # TLK1 entries carried no key: they are simply rebuilt
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


def encode(obj, secret: bytes | None = None, key: str = "") -> bytes:
    payload = pickle.dumps((key, obj), protocol=pickle.HIGHEST_PROTOCOL)
    return MAGIC + _digest(payload, secret) + payload


def _decode(data: bytes, secret: bytes | None = None, key: str = ""):
    """The object in a framed entry, or None when it does not verify or was stored
    under another key."""
    if not data or len(data) < 4 + 32 or data[:4] != MAGIC:
        return None
    digest, payload = data[4:36], data[36:]
    if not hmac.compare_digest(_digest(payload, secret), digest):
        return None
    try:
        stored_key, obj = pickle.loads(payload)
    except Exception:  # noqa: BLE001 - any unpickling failure means a bad entry
        return None
    return obj if stored_key == key else None


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
    except OSError as e:
        _warn_unwritable(e)  # a read-only or full cache directory only costs recompiles
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.remove(tmp)


_warned_unwritable = False


def _warn_unwritable(err):
    global _warned_unwritable
    if not _warned_unwritable:
        _warned_unwritable = True
        log.warning("tilelang: the kernel cache directory %s is not writable (%s); kernels are compiled but "
                    "not cached (set TILELANG_CACHE_DIR to a writable directory)", env.cache_dir(),
                    err.strerror or err)


def _drop_disk(path):
    with contextlib.suppress(OSError):
        os.remove(path)


# tiers together ------------------------------------------------------------------
def _load_tiers(namespace, key):
    """Disk, then remote (a verified remote entry is copied to disk)."""
    path = _path(key, namespace)
    data = _read_disk(path)
    if data is not None:
        obj = _decode(data, key=key)
        if obj is not None:
            return obj
        log.warning("tilelang: cache entry %s is damaged or belongs to another kernel; rebuilding it", path)
        _drop_disk(path)
    data = remote.get(namespace, key)
    if data is None:
        return None
    obj = _decode(data, remote.secret(), key=key)
    if obj is None:
        log.warning("tilelang: remote cache entry %s/%s does not verify; rebuilding it", namespace, key)
        remote.delete(namespace, key)  # corrupt remote entry: nobody should use it
        return None
    _write_disk(path, encode(obj, key=key))
    return obj


def _store_tiers(namespace, key, obj):
    data = encode(obj, key=key)
    _write_disk(_path(key, namespace), data)
    if remote.url():
        sec = remote.secret()
        remote.put(namespace, key, data if sec is None else encode(obj, sec, key=key))


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
def lock_timeout() -> float:
    """Seconds a compile waits for another process building the same kernel
    (TILELANG_CACHE_LOCK_TIMEOUT, default 300)."""
    try:
        return float(os.environ.get("TILELANG_CACHE_LOCK_TIMEOUT", "300"))
    except ValueError:
        from tilelang.ir.errors import TileLangError
        raise TileLangError(f"TILELANG_CACHE_LOCK_TIMEOUT must be a number of seconds, got "
                            f"{os.environ['TILELANG_CACHE_LOCK_TIMEOUT']!r}") from None


@contextlib.contextmanager
def build_lock(key, timeout=None, namespace=KERNELS, notice_after=5.0):
    """Hold an exclusive advisory lock on `key` across processes (no-op where
    `fcntl` is missing or the cache directory is not writable). The holder writes its
    pid into the lock file; a waiter says whom it waits for after `notice_after`
    seconds and raises a TileLangError after `timeout` (lock_timeout()). The OS
    releases the lock of a process that dies, so only a live, stuck holder times out."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    timeout = lock_timeout() if timeout is None else timeout
    path = _path(key, namespace) + ".lock"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as e:
        _warn_unwritable(e)
        yield
        return
    try:
        start = time.monotonic()
        delay, noticed = 0.005, False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError:
                waited = time.monotonic() - start
                if waited >= timeout:
                    from tilelang.ir.errors import TileLangError
                    raise TileLangError(
                        f"timed out after {waited:.0f} s waiting for {_lock_holder(path)} to finish compiling "
                        f"the same kernel (lock file {path})",
                        hint="if that process is stuck, stop it; TILELANG_CACHE_LOCK_TIMEOUT sets the wait, "
                             "TILELANG_DISABLE_CACHE=1 compiles without the cache") from None
                if not noticed and waited >= notice_after:
                    noticed = True
                    log.warning("tilelang: waiting for %s, which is compiling the same kernel (lock file %s; "
                                "giving up after %.0f s)", _lock_holder(path), path, timeout)
                time.sleep(delay)
                delay = min(delay * 2, 0.1)
        with contextlib.suppress(OSError):   # say who holds it, for waiters' messages
            os.ftruncate(fd, 0)
            os.pwrite(fd, str(os.getpid()).encode(), 0)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def _lock_holder(path) -> str:
    try:
        with open(path) as f:
            pid = f.read().strip()
    except OSError:
        pid = ""
    return f"process {pid}" if pid.isdigit() else "another process"


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
