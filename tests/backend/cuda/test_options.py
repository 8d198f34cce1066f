"""options.py: the CUDA backend's switches, typed and read once."""
import pathlib
import re

from tilelang.backend.cuda.options import CudaOptions


def test_defaults_and_environment():
    assert CudaOptions.from_config(None, "sm_90a", env={}) == CudaOptions()
    o = CudaOptions.from_config(None, "sm_90a", env={"TILELANG_CUDA_TMA": "0", "TILELANG_CUDA_PINGPONG": "1",
                                                     "TILELANG_CUDA_TMA_REFILL": "wait"})
    assert (o.tma, o.pingpong, o.tma_refill_wait, o.wgmma_rs) == (False, True, True, True)
    assert o.describe() == "tma=False, bulk_tiles=False, tma_refill_wait=True, pingpong=True"
    assert CudaOptions().describe() == "defaults"


def test_tma_needs_sm90a_and_follows_the_pass_config():
    assert not CudaOptions.from_config(None, "sm_80", env={}).tma
    assert not CudaOptions.from_config({"tl.disable_tma_lower": True}, "sm_90a", env={}).tma
    assert CudaOptions.from_config({"tl.disable_tma_lower": False}, "sm_90a", env={}).tma


def test_bulk_tile_copies_need_sm90_only():
    assert CudaOptions.from_config(None, "sm_90", env={}).bulk_tiles
    assert not CudaOptions.from_config(None, "sm_90", env={}).tma   # wgmma pipelines need sm_90a
    assert not CudaOptions.from_config(None, "sm_80", env={}).bulk_tiles
    assert not CudaOptions.from_config({"tl.disable_tma_lower": True}, "sm_90a", env={}).bulk_tiles


def test_only_options_py_reads_the_switches():
    # the cache key (__init__.py) lists them; every decision reads plan.options / cg.options
    root = pathlib.Path(__file__).resolve().parents[3] / "tilelang" / "backend" / "cuda"
    readers = sorted(p.name for p in root.glob("*.py")
                     if re.search(r"environ[^\n]*TILELANG_CUDA_|TILELANG_CUDA_[A-Z_]*\"\)", p.read_text())
                     and p.name not in ("options.py", "__init__.py"))
    assert readers == []
