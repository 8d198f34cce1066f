"""The kernel cache across processes and hosts: concurrent writers, and the Redis
tier (a real `redis-server` on 127.0.0.1; skipped where it is not installed)."""
import os
import shutil
import socket
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import tilelang
from tilelang.autotuner import AutoTuner
from tilelang.jit import cache, cache_remote
from tests.kernels import add_func

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory):
    exe = shutil.which("redis-server")
    if exe is None:
        pytest.skip("redis-server is not installed")
    pytest.importorskip("redis")
    port = _free_port()
    d = tmp_path_factory.mktemp("redis")
    proc = subprocess.Popen([exe, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                             "--dir", str(d)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    import redis
    client = redis.Redis(host="127.0.0.1", port=port)
    for _ in range(100):
        try:
            client.ping()
            break
        except redis.exceptions.ConnectionError:
            time.sleep(0.05)
    else:
        proc.kill()
        pytest.skip("redis-server did not start")
    yield f"redis://127.0.0.1:{port}"
    proc.terminate()
    proc.wait(timeout=10)


@pytest.fixture
def local(tmp_path, monkeypatch):
    monkeypatch.setenv("TILELANG_CACHE_DIR", str(tmp_path / "local"))
    monkeypatch.delenv("TILELANG_REMOTE_CACHE", raising=False)
    monkeypatch.delenv("TILELANG_REMOTE_CACHE_SECRET", raising=False)
    cache.clear_cache()
    cache_remote.reset()
    yield tmp_path
    cache.clear_cache()
    cache_remote.reset()


@pytest.fixture
def remote(local, redis_url, monkeypatch):
    monkeypatch.setenv("TILELANG_REMOTE_CACHE", redis_url)
    import redis
    client = redis.Redis.from_url(redis_url)
    client.flushall()
    return client


def _entries(d, ns="kernels"):
    out = []
    for root, _, files in os.walk(os.path.join(d, ns)):
        out += [os.path.join(root, f) for f in files]
    return out


def _run(code, cache_dir, **env):
    e = dict(os.environ, PYTHONPATH=ROOT, TILELANG_CACHE_DIR=str(cache_dir), TILELANG_AUTO_TUNING_PROGRESS="0")
    e.update(env)
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=e,
                         cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout.split()


# concurrency -----------------------------------------------------------------------
COMPILE = """
    import sys, numpy as np, tilelang
    from tests.kernels import add_func
    k = tilelang.compile(add_func(N=1234), out_idx=[-1], target="cpu")
    if sys.argv[1:] == ["run"]:
        a = np.arange(1234, dtype="float32")
        print(k.cache_hit, float(k(a, a).sum()))
    else:
        print("compiled")
"""


def test_concurrent_processes_compile_the_same_kernel(local):
    d = local / "shared"
    env = dict(os.environ, PYTHONPATH=ROOT, TILELANG_CACHE_DIR=str(d))
    procs = [subprocess.Popen([sys.executable, "-c", textwrap.dedent(COMPILE)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT) for _ in range(4)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1][-2000:] for o in outs]
    assert {o[0].strip() for o in outs} == {"compiled"}
    files = _entries(d)
    tlk = [f for f in files if f.endswith(".tlk")]
    assert len(tlk) == 1 and not [f for f in files if f.endswith(".tmp")]
    assert cache._decode(open(tlk[0], "rb").read(), key=os.path.basename(tlk[0])[:-4]) is not None
    # and the entry serves a later process
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(COMPILE), "run"], capture_output=True, text=True,
                         env=env, cwd=ROOT, timeout=300)
    assert out.stdout.split() == ["True", str(float(2 * sum(range(1234))))], out.stderr[-2000:]


BUILD_ONCE = """
    import os, time
    from tilelang.jit import cache
    def build():
        with open(os.environ["BUILD_LOG"], "a") as f:
            f.write("built\\n")
        time.sleep(0.5)
        return {"artifact": 42}
    art, hit = cache.get_or_build("0123456789abcdef" * 4, build)
    print(art["artifact"], hit)
"""


def test_get_or_build_builds_once_across_processes(local):
    log = local / "builds.txt"
    env = dict(os.environ, PYTHONPATH=ROOT, TILELANG_CACHE_DIR=str(local / "shared"), BUILD_LOG=str(log))
    procs = [subprocess.Popen([sys.executable, "-c", textwrap.dedent(BUILD_ONCE)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT) for _ in range(4)]
    outs = [p.communicate(timeout=120)[0].split() for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert open(log).read().count("built") == 1
    assert sorted(o[1] for o in outs) == ["False", "True", "True", "True"]


# remote tier -----------------------------------------------------------------------
def test_remote_hit_from_a_second_process(remote, local, redis_url):
    k = tilelang.compile(add_func(N=2345), out_idx=[-1], target="cpu")
    assert not k.cache_hit
    assert remote.exists("tilelang:kernels:" + k.cache_key())
    code = """
        import numpy as np, tilelang
        from tests.kernels import add_func
        k = tilelang.compile(add_func(N=2345), out_idx=[-1], target="cpu")
        a = np.ones(2345, dtype="float32")
        print(k.cache_hit, float(k(a, a).sum()))
    """
    empty = local / "other_host"
    assert _run(code, empty, TILELANG_REMOTE_CACHE=redis_url) == ["True", "4690.0"]
    assert len([f for f in _entries(empty) if f.endswith(".tlk")]) == 1  # copied to the local tier


def test_corrupt_remote_entry_is_recompiled(remote, local, monkeypatch):
    k = tilelang.compile(add_func(N=3456), out_idx=[-1], target="cpu")
    name = "tilelang:kernels:" + k.cache_key()
    data = bytearray(remote.get(name))
    data[-20] ^= 0xFF
    remote.set(name, bytes(data))
    monkeypatch.setenv("TILELANG_CACHE_DIR", str(local / "fresh"))
    cache.clear_cache()
    k2 = tilelang.compile(add_func(N=3456), out_idx=[-1], target="cpu")
    assert not k2.cache_hit
    a = np.arange(3456, dtype="float32")
    np.testing.assert_allclose(k2(a, a), 2 * a)
    assert cache._decode(remote.get(name), key=k.cache_key()) is not None  # rewritten intact


def test_truncated_remote_entry_is_ignored(remote, local, monkeypatch):
    k = tilelang.compile(add_func(N=3457), out_idx=[-1], target="cpu")
    name = "tilelang:kernels:" + k.cache_key()
    remote.set(name, remote.get(name)[:100])
    monkeypatch.setenv("TILELANG_CACHE_DIR", str(local / "fresh"))
    cache.clear_cache()
    assert cache.load(k.cache_key()) is None
    assert not remote.exists(name)  # dropped so nobody else trips on it


def test_secret_rejects_unsigned_entries(remote, local, monkeypatch):
    k = tilelang.compile(add_func(N=4567), out_idx=[-1], target="cpu")  # stored unsigned
    monkeypatch.setenv("TILELANG_CACHE_DIR", str(local / "fresh"))
    monkeypatch.setenv("TILELANG_REMOTE_CACHE_SECRET", "s3cret")
    cache.clear_cache()
    assert not tilelang.compile(add_func(N=4567), out_idx=[-1], target="cpu").cache_hit
    monkeypatch.setenv("TILELANG_CACHE_DIR", str(local / "fresh2"))
    cache.clear_cache()
    assert tilelang.compile(add_func(N=4567), out_idx=[-1], target="cpu").cache_hit  # now signed
    assert k.cache_key()


def test_fallback_when_the_server_is_down(local, monkeypatch):
    monkeypatch.setenv("TILELANG_REMOTE_CACHE", f"redis://127.0.0.1:{_free_port()}")
    t = time.perf_counter()
    k = tilelang.compile(add_func(N=5678), out_idx=[-1], target="cpu")
    assert not k.cache_hit
    cache.clear_cache()  # memory only: the local disk tier must still serve it
    assert tilelang.compile(add_func(N=5678), out_idx=[-1], target="cpu").cache_hit
    assert time.perf_counter() - t < 20
    a = np.ones(5678, dtype="float32")
    np.testing.assert_allclose(k(a, a), 2 * a)


def test_fallback_when_the_host_does_not_answer(local, monkeypatch):
    # a non-routable address: the short connect timeout must bound the wait
    monkeypatch.setenv("TILELANG_REMOTE_CACHE", "redis://10.255.255.1:6379")
    monkeypatch.setenv("TILELANG_REMOTE_CACHE_TIMEOUT", "0.2")
    t = time.perf_counter()
    assert cache.load("ff" * 32) is None
    assert cache.load("fe" * 32) is None  # the server is remembered as down: no second wait
    assert time.perf_counter() - t < 2


TUNE = """
    import tilelang
    from tests.autotuner.gemm_factories import gemm_factory, gemm_ref
    matmul = tilelang.autotune(configs={"bm": [32, 64]}, warmup=2, rep=5, ref_prog=gemm_ref)(
        tilelang.jit(out_idx=[-1], target="cpu")(gemm_factory))
    k = matmul(128, 128, 64)
    print(matmul.last_result.from_cache, k.cache_hit, k.config["bm"])
"""


def test_tuning_result_shared_through_the_remote(remote, local, redis_url):
    first = _run(TUNE, local / "host_a", TILELANG_REMOTE_CACHE=redis_url)
    assert first[0] == "False"
    assert remote.keys("tilelang:autotuner:*")
    second = _run(TUNE, local / "host_b", TILELANG_REMOTE_CACHE=redis_url)
    assert second == ["True", "True", first[2]]  # no tuning and no compiling on host b
