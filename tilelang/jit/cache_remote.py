"""The remote tier of the kernel cache: a Redis server shared by several hosts.

TILELANG_REMOTE_CACHE          redis://host:port[/db] (also rediss://, unix://); unset = off
TILELANG_REMOTE_CACHE_TIMEOUT  connect timeout in seconds (default 0.5)
TILELANG_REMOTE_CACHE_SECRET   optional key: entries are signed with HMAC-SHA256 instead of
                               a plain SHA-256, so only hosts that share the secret can
                               write entries the others accept
TILELANG_REMOTE_CACHE_TTL      optional expiry of remote entries, in seconds

Every failure (no redis-py, server down, timeout, protocol error) makes the remote
tier silently unavailable for a while (`RETRY_S`) and the local cache carries on; a
warning is printed once per process. Entries are only ever used after their checksum
verifies. Unpickling runs on verified bytes, so the server must be trusted (or a
secret set) as anyone who can write to it could otherwise plant code.
"""
from __future__ import annotations

import os
import sys
import threading
import time

PREFIX = "tilelang:"
RETRY_S = 30.0

_lock = threading.Lock()
_state = {"url": None, "client": None, "down_until": 0.0, "warned": False}


def url() -> str | None:
    u = os.environ.get("TILELANG_REMOTE_CACHE", "").strip()
    return u or None


def secret() -> bytes | None:
    s = os.environ.get("TILELANG_REMOTE_CACHE_SECRET")
    return s.encode() if s else None


def _warn(msg):
    if not _state["warned"]:
        _state["warned"] = True
        print(f"[tilelang] remote cache: {msg}; using the local cache only", file=sys.stderr)


def _mark_down(err):
    _state["down_until"] = time.monotonic() + RETRY_S
    _state["client"] = None
    _warn(f"{url()} unavailable ({type(err).__name__}: {err})")


def _client():
    u = url()
    if u is None:
        return None
    with _lock:
        if _state["url"] != u:  # the variable changed (tests, long-lived processes)
            _state.update(url=u, client=None, down_until=0.0, warned=False)
        if time.monotonic() < _state["down_until"]:
            return None
        if _state["client"] is not None:
            return _state["client"]
        if not u.startswith(("redis://", "rediss://", "unix://")):
            _state["down_until"] = float("inf")
            _warn(f"unsupported URL {u!r} (expected redis://host:port)")
            return None
        try:
            import redis
        except ImportError:
            _state["down_until"] = float("inf")
            _warn("the `redis` package is not installed (pip install redis)")
            return None
        timeout = float(os.environ.get("TILELANG_REMOTE_CACHE_TIMEOUT", "0.5"))
        try:
            c = redis.Redis.from_url(u, socket_connect_timeout=timeout, socket_timeout=max(2.0, 4 * timeout))
            c.ping()
        except Exception as e:  # noqa: BLE001 - any failure: fall back to local
            _mark_down(e)
            return None
        _state["client"] = c
        return c


def _name(namespace, key):
    return f"{PREFIX}{namespace}:{key}"


def get(namespace: str, key: str) -> bytes | None:
    c = _client()
    if c is None:
        return None
    try:
        return c.get(_name(namespace, key))
    except Exception as e:  # noqa: BLE001
        _mark_down(e)
        return None


def put(namespace: str, key: str, data: bytes) -> bool:
    c = _client()
    if c is None:
        return False
    ttl = os.environ.get("TILELANG_REMOTE_CACHE_TTL")
    try:
        c.set(_name(namespace, key), data, ex=int(ttl) if ttl else None)
        return True
    except Exception as e:  # noqa: BLE001
        _mark_down(e)
        return False


def delete(namespace: str, key: str):
    c = _client()
    if c is None:
        return
    try:
        c.delete(_name(namespace, key))
    except Exception as e:  # noqa: BLE001
        _mark_down(e)


def reset():
    """Forget the connection and the 'server down' state (tests)."""
    with _lock:
        _state.update(url=None, client=None, down_until=0.0, warned=False)
