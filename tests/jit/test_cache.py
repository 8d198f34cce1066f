import os
import subprocess
import sys
import time

import numpy as np
import pytest

import tilelang
from tilelang.jit import cache
from tests.kernels import add_func

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TILELANG_CACHE_DIR", str(tmp_path))
    cache.clear_cache()
    yield tmp_path
    cache.clear_cache()


def _entries(d):
    out = []
    for root, _, files in os.walk(os.path.join(d, "kernels")):
        out += [os.path.join(root, f) for f in files if f.endswith(".tlk")]
    return out


def test_memory_hit_is_fast(fresh_cache):
    k1 = tilelang.compile(add_func(N=333), out_idx=[-1], target="cpu")
    assert not k1.cache_hit
    t = time.perf_counter()
    k2 = tilelang.compile(add_func(N=333), out_idx=[-1], target="cpu")
    assert k2.cache_hit
    assert time.perf_counter() - t < 0.05


def test_disk_hit_from_another_process(fresh_cache):
    tilelang.compile(add_func(N=444), out_idx=[-1], target="cpu")
    assert len(_entries(fresh_cache)) == 1
    code = ("import tilelang, numpy as np; from tests.kernels import add_func;"
            "k = tilelang.compile(add_func(N=444), out_idx=[-1], target='cpu');"
            "a = np.ones(444, 'float32'); print(k.cache_hit, float(k(a, a).sum()))")
    env = dict(os.environ, PYTHONPATH=ROOT, TILELANG_CACHE_DIR=str(fresh_cache))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "888.0"]


def test_corrupt_entry_is_recompiled(fresh_cache):
    tilelang.compile(add_func(N=555), out_idx=[-1], target="cpu")
    [path] = _entries(fresh_cache)
    data = open(path, "rb").read()
    with open(path, "wb") as f:
        f.write(data[: len(data) // 2])  # truncated
    cache.clear_cache()  # forget the in-memory copy
    k = tilelang.compile(add_func(N=555), out_idx=[-1], target="cpu")
    assert not k.cache_hit
    a = np.arange(555, dtype="float32")
    np.testing.assert_allclose(k(a, a), 2 * a)
    assert cache.load(k.cache_key()) is not None  # rewritten intact


def test_flipped_byte_is_detected(fresh_cache):
    tilelang.compile(add_func(N=556), out_idx=[-1], target="cpu")
    [path] = _entries(fresh_cache)
    data = bytearray(open(path, "rb").read())
    data[-10] ^= 0xFF
    open(path, "wb").write(bytes(data))
    cache.clear_cache()
    assert not tilelang.compile(add_func(N=556), out_idx=[-1], target="cpu").cache_hit


def test_disable_cache(fresh_cache):
    tilelang.disable_cache()
    try:
        tilelang.compile(add_func(N=666), out_idx=[-1], target="cpu")
        assert not tilelang.compile(add_func(N=666), out_idx=[-1], target="cpu").cache_hit
        assert _entries(fresh_cache) == []
    finally:
        tilelang.enable_cache()


def test_key_depends_on_pass_configs_and_flags(fresh_cache):
    a = tilelang.compile(add_func(N=777), out_idx=[-1], target="cpu")
    b = tilelang.compile(add_func(N=777), out_idx=[-1], target="cpu", compile_flags=["-DTL_X=1"])
    c = tilelang.compile(add_func(N=777), out_idx=[-1], target="cpu", pass_configs={"tl.disable_fast_math": True})
    assert len({a.cache_key(), b.cache_key(), c.cache_key()}) == 3


def test_cache_keys_depend_on_the_compiler_source():
    # kernels cached by another build of the compiler (same version string) are not reused
    from tilelang.jit import cache
    fp = cache.code_fingerprint()
    assert len(fp) == 16 and fp == cache.code_fingerprint()


def _so_files(d):
    so = os.path.join(d, "so")
    return [os.path.join(so, f) for f in os.listdir(so) if f.endswith(".so")] if os.path.isdir(so) else []


RUN_ADD = ("import tilelang, numpy as np; from tests.kernels import add_func;"
           "k = tilelang.compile(add_func(N={n}), out_idx=[-1], target='cpu');"
           "a = np.ones({n}, 'float32'); print(k.cache_hit, float(k(a, a).sum()))")


def _run(code, cache_dir, **extra):
    env = dict(os.environ, PYTHONPATH=ROOT, TILELANG_CACHE_DIR=str(cache_dir), **extra)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT,
                          timeout=300)


@pytest.mark.parametrize("damage", ["truncated", "empty", "garbage"])
def test_damaged_shared_object_is_rewritten(fresh_cache, damage):
    n = {"truncated": 1201, "empty": 1202, "garbage": 1203}[damage]
    tilelang.compile(add_func(N=n), out_idx=[-1], target="cpu")
    [so] = _so_files(fresh_cache)
    data = open(so, "rb").read()
    bad = {"truncated": data[: len(data) // 3], "empty": b"", "garbage": os.urandom(len(data))}[damage]
    # damage it the way a crash or a full disk leaves it, for the next process; replaced,
    # not written in place: this process has the file mapped (truncating a mapped file
    # would make this process die of SIGBUS)
    tmp = so + ".damaged"
    open(tmp, "wb").write(bad)
    os.replace(tmp, so)
    out = _run(RUN_ADD.format(n=n), fresh_cache)   # a new process: the loader maps the file
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["True", f"{2.0 * n}"]
    assert open(so, "rb").read() == data


def test_entry_stored_under_another_key_is_not_used(fresh_cache, caplog):
    k_small = tilelang.compile(add_func(N=1301), out_idx=[-1], target="cpu")
    k_other = tilelang.compile(add_func(N=1302, dtype="float32", block=64), out_idx=[-1], target="cpu")
    paths = {os.path.basename(p)[:-4]: p for p in _entries(fresh_cache)}
    victim, intruder = paths[k_small.cache_key()], paths[k_other.cache_key()]
    with open(victim, "wb") as f:   # a valid entry of another kernel under this kernel's name
        f.write(open(intruder, "rb").read())
    cache.clear_cache()
    with caplog.at_level("WARNING", logger="tilelang"):
        k = tilelang.compile(add_func(N=1301), out_idx=[-1], target="cpu")
    assert not k.cache_hit
    assert any("belongs to another kernel" in r.getMessage() for r in caplog.records)
    a = np.ones(1301, "float32")
    assert k(a, a).shape == (1301,) and float(k(a, a).sum()) == 2 * 1301


def test_cache_directory_that_cannot_be_created(tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a directory")
    for extra in ({}, {"TILELANG_DISABLE_CACHE": "1"}):
        out = _run(RUN_ADD.format(n=1401), blocker / "cache", **extra)
        assert out.returncode == 0, out.stderr[-2000:]
        assert out.stdout.split() == ["False", f"{2.0 * 1401}"]
    assert "not writable" in _run(RUN_ADD.format(n=1401), blocker / "cache").stderr


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only directories")
def test_read_only_cache_directory(tmp_path):
    d = tmp_path / "ro"
    d.mkdir()
    d.chmod(0o555)
    try:
        out = _run(RUN_ADD.format(n=1402), d)
        assert out.returncode == 0, out.stderr[-2000:]
        assert out.stdout.split() == ["False", f"{2.0 * 1402}"]
    finally:
        d.chmod(0o755)


def test_held_build_lock_says_who_holds_it_and_times_out(fresh_cache, caplog):
    import fcntl
    from tilelang.ir.errors import TileLangError
    key = cache.make_key("held lock")
    with cache.build_lock(key):   # hold it through another open file: flock locks conflict
        path = cache._path(key) + ".lock"
        assert open(path).read() == str(os.getpid())
        fd = os.open(path, os.O_RDWR)
        try:
            with pytest.raises(OSError):
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        finally:
            os.close(fd)
        t = time.monotonic()
        with caplog.at_level("WARNING", logger="tilelang"), \
                pytest.raises(TileLangError, match=f"timed out .* waiting for process {os.getpid()}"):
            with cache.build_lock(key, timeout=0.6, notice_after=0.2):
                pass
        assert time.monotonic() - t < 5
    assert any(f"waiting for process {os.getpid()}" in r.getMessage() for r in caplog.records)
    with cache.build_lock(key, timeout=0.5):   # released: taken at once
        pass
