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
