"""Tuning on a local Ray cluster (`ray start --head` plus a second node on this machine,
CPU target): every config is compiled and measured by cluster tasks, a worker killed
mid-run has its task retried elsewhere, and no candidate is lost or measured twice."""
import glob
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

import pytest
import torch

from tilelang.autotuner import AutoTuner
from tilelang.jit import cache
from tests.autotuner.gemm_factories import gemm_factory, gemm_ref

ray = pytest.importorskip("ray", reason="needs Ray: pip install 'tilelang[ray]'")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
M = N = 128
K = 64


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ray_cmd(*args):
    return [sys.executable, "-c", "import sys; from ray.scripts.scripts import main; sys.exit(main())", "start",
            "--block", "--disable-usage-stats", "--node-ip-address=127.0.0.1", *args]


@pytest.fixture(scope="module")
def cluster():
    """A head node and a worker node, each with one CPU slot; the processes are ended by
    their own process groups at the end."""
    tmp = tempfile.mkdtemp(prefix="rt", dir="/tmp")       # short: Ray's socket paths have a length limit
    cache_dir = os.path.join(tmp, "cache")
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
               TILELANG_CACHE_DIR=cache_dir, TILELANG_AUTO_TUNING_PROGRESS="0", RAY_USAGE_STATS_ENABLED="0",
               RAY_AUTH_MODE="disabled")   # a private cluster on 127.0.0.1; nodes and driver agree on no token
    port = _free_port()
    procs = [subprocess.Popen(_ray_cmd("--head", f"--port={port}", "--num-cpus=1", "--include-dashboard=false",
                                       f"--temp-dir={tmp}"), env=env, start_new_session=True,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL),
             subprocess.Popen(_ray_cmd(f"--address=127.0.0.1:{port}", "--num-cpus=1"), env=env,
                              start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    saved = {k: os.environ.get(k) for k in ("TILELANG_CACHE_DIR", "TILELANG_AUTO_TUNING_PROGRESS", "RAY_AUTH_MODE")}
    os.environ.update(TILELANG_CACHE_DIR=cache_dir, TILELANG_AUTO_TUNING_PROGRESS="0", RAY_AUTH_MODE="disabled")
    address = f"127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:   # the driver connects once the head is up; then wait for the second node
            try:
                ray.init(address=address, log_to_driver=False)
                break
            except Exception:  # noqa: BLE001 - not up yet
                if time.monotonic() > deadline:
                    raise
                time.sleep(1)
        while len([n for n in ray.nodes() if n["Alive"]]) < 2:
            assert time.monotonic() < deadline, "the second Ray node did not join"
            time.sleep(0.5)
        ray.shutdown()   # the executor connects by itself (and passes TILELANG_* to the workers)
        yield dict(address=address, cache_dir=cache_dir, tmp=tmp)
    finally:
        ray.shutdown()
        _end_groups(procs)
        shutil.rmtree(tmp, ignore_errors=True)
        for k, v in saved.items():
            os.environ.pop(k, None) if v is None else os.environ.__setitem__(k, v)


def _end_groups(procs):
    """SIGKILL the process groups the fixture started (each `ray start` and what it spawned)."""
    for p in procs:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    for p in procs:
        p.wait(10)


@pytest.fixture(autouse=True)
def fresh():
    cache.clear_cache()
    AutoTuner._memory_cache.clear()
    yield


def _tuner(configs, **profile):
    t = AutoTuner.from_kernel(gemm_factory, configs).set_kernel_parameters((M, N, K))
    t.set_compile_args(out_idx=[-1], target="cpu")
    return t.set_profile_args(warmup=1, rep=3, timeout=200, **profile)


def test_tuning_on_the_cluster_survives_a_killed_worker(cluster):
    """Three configs (one computes a wrong result). The worker running the first
    measurement is killed mid-benchmark: Ray retries its task on another worker; every
    config is measured exactly once and the best is a correct one."""
    log_path = os.path.join(cluster["tmp"], "measured.log")
    marker = os.path.join(cluster["tmp"], "killed")
    killed = {}

    def killer():
        deadline = time.monotonic() + 150
        while not os.path.exists(marker + ".pid") and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(0.5)
        with open(marker + ".pid") as f:
            killed["pid"] = int(f.read())
        open(marker, "w").close()
        os.kill(killed["pid"], signal.SIGKILL)
    t = threading.Thread(target=killer, daemon=True)
    t.start()
    configs = [dict(bm=32, bn=32), dict(bm=64, bn=64), dict(bm=64, bn=32, skip_last_k=True)]
    res = _tuner(configs, ref_prog=gemm_ref, supply_prog=_supply(log_path, marker)).run(
        executor="ray", ray_address=cluster["address"])
    t.join(5)
    assert "pid" in killed, "the first measurement never started"
    assert [r.status for r in res.records] == ["ok", "ok", "wrong"], res.table_str()
    with open(log_path) as f:
        pids = [int(x) for x in f.read().split()]
    # one interrupted attempt (the killed worker), then exactly one measurement per config
    assert pids.count(killed["pid"]) == 1 and len(pids) == 4
    assert all(r.device and r.device.endswith(":cpu") for r in res.records)
    assert res.config in configs[:2] and res.latency == min(r.latency for r in res.records[:2])
    a = torch.randn(M, K, dtype=torch.float16)
    b = torch.randn(K, N, dtype=torch.float16)
    torch.testing.assert_close(res.kernel(a, b), gemm_ref(a, b), atol=1e-2, rtol=1e-2)
    # the compiled kernels went into the shared cache, the results under their run's keys
    assert len(_entries(cluster, "kernels")) >= 3
    assert len(_entries(cluster, "autotuner-results")) == 3


def _entries(cluster, namespace):
    return glob.glob(os.path.join(cluster["cache_dir"], namespace, "*", "*.tlk"))


def _supply(log_path, kill_marker):
    """supply_prog: called once per measurement. The first call (of any node) announces
    its pid and waits to be killed; every other call goes on."""
    def supply(params):
        with open(log_path, "a") as f:
            f.write(f"{os.getpid()}\n")
        if not os.path.exists(kill_marker):
            try:
                with open(kill_marker + ".pid", "x") as f:
                    f.write(str(os.getpid()))
            except FileExistsError:
                pass
            else:
                time.sleep(150)
        g = torch.Generator().manual_seed(0)
        return [torch.randn(M, K, generator=g).half(), torch.randn(K, N, generator=g).half()]
    return supply


def test_a_repeated_benchmark_task_returns_the_stored_result(tmp_path, monkeypatch):
    """What a retry after a finished measurement sees: the idempotent result key."""
    from tilelang.autotuner import compile_pool
    from tilelang.autotuner.param import ProfileArgs
    from tilelang.autotuner.ray_executor import bench_task
    import pickle
    monkeypatch.setenv("TILELANG_CACHE_DIR", str(tmp_path / "cache"))
    log_path, marker = str(tmp_path / "log"), str(tmp_path / "marker")
    open(marker, "w").close()
    pf = gemm_factory(M, N, K, bm=32, bn=32)
    kw = dict(out_idx=[-1], target="cpu")
    payload = pickle.dumps(pf)
    compiled = compile_pool._task(0, payload, kw, 60)[1:]
    args = ("run-x-key", 0, dict(bm=32, bn=32), compiled, payload, kw,
            ProfileArgs(supply_prog=_supply(log_path, marker)), 1, 3, 60, None, "cpu")
    first = bench_task(*args)
    again = bench_task(*args)
    assert first["status"] == "ok" and not first["reused"]
    assert again["reused"] and again["latency"] == first["latency"]
    with open(log_path) as f:
        assert len(f.read().split()) == 1


def test_without_ray_the_error_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(ImportError, match=r"pip install 'tilelang\[ray\]'"):
        _tuner([dict(bm=32, bn=32)], ref_prog=gemm_ref).run(executor="ray")


def test_benchmark_devices_do_not_apply_to_the_cluster():
    for kw in (dict(benchmark_devices=[0]), dict(benchmark_multi_gpu=False)):
        with pytest.raises(ValueError, match="benchmark_devices / benchmark_multi_gpu do not apply to executor='ray'"):
            _tuner([dict(bm=32, bn=32)], ref_prog=gemm_ref).run(executor="ray", **kw)


def test_local_workers_import_this_tilelang():
    """Without RAY_ADDRESS the executor starts a local Ray instance whose workers get this
    package's folder on PYTHONPATH (found on the H200: the helper named an unimported module)."""
    import tilelang
    from tilelang.autotuner.ray_executor import _package_root
    assert os.path.join(_package_root(), "tilelang") == os.path.dirname(os.path.abspath(tilelang.__file__))
