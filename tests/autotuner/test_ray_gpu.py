"""Tuning through Ray on this host's GPUs (a local Ray instance: `ray.init()` sees every
GPU): one benchmark task per GPU at a time (`num_gpus=1`), candidates spread over the
GPUs, the winner runs on the caller's device."""
import os

import pytest
import torch

from tilelang.autotuner import AutoTuner
from tests.autotuner.gemm_factories import gemm_factory, gemm_ref

ray = pytest.importorskip("ray", reason="needs Ray: pip install 'tilelang[ray]'")


@pytest.mark.gpu
def test_tune_gemm_on_local_gpus_through_ray(monkeypatch, tmp_path):
    monkeypatch.setenv("TILELANG_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("TILELANG_AUTO_TUNING_PROGRESS", "0")
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    # the local Ray workers import tests.autotuner (ref_prog), and ray itself where it is on the path
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p))
    ray.shutdown()
    configs = {"bm": [64, 128], "bn": [64, 128], "bk": [32, 64]}
    t = AutoTuner.from_kernel(gemm_factory, configs).set_kernel_parameters((1024, 1024, 512))
    t.set_compile_args(out_idx=[-1], target="cuda").set_profile_args(warmup=5, rep=20, ref_prog=gemm_ref)
    try:
        res = t.run(executor="ray")
        gpus = int(ray.cluster_resources().get("GPU", 0))
    finally:
        ray.shutdown()
    assert all(r.status == "ok" for r in res.records), res.table_str()
    devices = {r.device for r in res.records}
    assert all(":cuda" in d and "," not in d for d in devices)      # one GPU per benchmark task
    if gpus > 1:
        assert len(devices) > 1
    a = torch.randn(1024, 512, dtype=torch.float16, device="cuda")
    b = torch.randn(512, 1024, dtype=torch.float16, device="cuda")
    torch.testing.assert_close(res.kernel(a, b), gemm_ref(a, b), atol=1e-2, rtol=1e-2)
