import tilelang.testing
from tilelang.testing import perf


@tilelang.testing.requires_cuda
def test_requires_cuda_skips_without_gpu():
    import torch
    assert torch.cuda.is_available()


@tilelang.testing.requires_cuda_compute_version_ge(9, 0)
def test_compute_version_marker():
    assert tilelang.testing.cuda_compute_version() >= (9, 0)


@tilelang.testing.requires_package("numpy")
def test_requires_present_package_runs():
    assert True


@tilelang.testing.requires_package("surely_not_a_package_xyz")
def test_requires_missing_package_is_skipped():
    raise AssertionError("must be skipped")


def test_set_random_seed_is_reproducible():
    import numpy as np
    tilelang.testing.set_random_seed(3)
    a = np.random.rand(3)
    tilelang.testing.set_random_seed(3)
    assert (a == np.random.rand(3)).all()


def test_process_func_records_latency():
    perf._RESULTS.clear()
    assert tilelang.testing.process_func(lambda: 1.5, name="k") == 1.5
    assert perf._RESULTS == [("k", 1.5)]
