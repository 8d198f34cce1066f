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


def test_process_func_records_latency_under_the_module_name():
    perf._RESULTS.clear()
    tilelang.testing.process_func(lambda: 1.5, "k")
    tilelang.testing.process_func(lambda scale: 2.0 * scale, scale=2)   # kwargs go to the function
    assert [(r.name, r.latency) for r in perf.results()] == [("k", 1.5), (__name__, 4.0)]


REGRESSION_MODULE = """
import tilelang.testing

def fake_example():
    return 0.25

fake_example.__module__ = "regression_example_fake"

def regression_first():
    tilelang.testing.process_func(fake_example)

def regression_second():
    tilelang.testing.process_func(lambda: 0.5, "second_case")

if __name__ == "__main__":
    tilelang.testing.regression()
"""


def test_regression_runs_the_cases_and_prints_the_json_protocol(tmp_path):
    import json
    import os
    import subprocess
    import sys
    f = tmp_path / "regression_fake.py"
    f.write_text(REGRESSION_MODULE)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, PYTHONPATH=root, TL_PERF_REGRESSION_FORMAT="json")
    out = subprocess.run([sys.executable, str(f)], capture_output=True, text=True, env=env, timeout=120)
    line = next(ln for ln in out.stdout.splitlines() if ln.startswith(perf.RESULTS_JSON_PREFIX))
    assert json.loads(line[len(perf.RESULTS_JSON_PREFIX):]) == [
        {"name": "example_fake", "latency": 0.25, "case": "first"},
        {"name": "second_case", "latency": 0.5, "case": "second"}]
    env["TL_PERF_REGRESSION_ONLY"] = "sec*"
    out = subprocess.run([sys.executable, str(f)], capture_output=True, text=True, env=env, timeout=120)
    line = next(ln for ln in out.stdout.splitlines() if ln.startswith(perf.RESULTS_JSON_PREFIX))
    assert [r["case"] for r in json.loads(line[len(perf.RESULTS_JSON_PREFIX):])] == ["second"]
