"""The C launch extension on a GPU (the lead runs these on the H200): results against
torch with the extension and with ctypes (TILELANG_CUDA_C_LAUNCH=0), on torch's current
stream, from several threads at once (the extension's slots need no lock), and for a
kernel with TMA descriptors (their updates stay under the launcher's lock)."""
import threading

import pytest

import tilelang
import tilelang.language as T
from tilelang.backend.cuda.host import c_launch
from tests.backend.cuda import kernels as K

pytestmark = pytest.mark.gpu


def _add():
    n = T.dynamic("n")

    @T.prim_func
    def add(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32"), alpha: T.float32, reps: T.int32,
            C: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, 256), threads=256) as bx:
            for i in T.Parallel(256):
                if bx * 256 + i < n:
                    C[bx * 256 + i] = A[bx * 256 + i] + B[bx * 256 + i] * alpha * reps
    return add


@pytest.fixture(params=[True, False], ids=["c_launch", "ctypes"])
def c_call(request, monkeypatch):
    monkeypatch.setenv("TILELANG_CUDA_C_LAUNCH", "1" if request.param else "0")
    c_launch.reset()
    if request.param and c_launch.extension() is None:
        pytest.skip(f"no C launch extension here: {c_launch.reason()}")
    yield request.param
    monkeypatch.delenv("TILELANG_CUDA_C_LAUNCH")
    c_launch.reset()


def test_results_streams_and_threads(c_call):
    import torch
    k = tilelang.compile(_add(), out_idx=[-1], target="cuda")
    x, y = torch.randn(1000, device="cuda"), torch.randn(1000, device="cuda")
    for _ in range(3):
        torch.testing.assert_close(k(x, y, 0.5, 3), x + y * 1.5)
    assert ("C0(" in k.launcher._fast.source) == c_call
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):   # the launch goes to the current stream
        x2, y2 = x * 2, y * 2
        out = k(x2, y2, 1.0, 2)
    s.synchronize()
    torch.testing.assert_close(out, x * 2 + y * 4)
    errors = []

    def worker(seed):
        try:
            g = torch.Generator(device="cuda").manual_seed(seed)
            st = torch.cuda.Stream()
            with torch.cuda.stream(st):
                for it in range(200):
                    n = 513 + 97 * ((seed + it) % 7)
                    a = torch.randn(n, device="cuda", generator=g)
                    b = torch.randn(n, device="cuda", generator=g)
                    got = k(a, b, float(it % 3), seed)
                    torch.testing.assert_close(got, a + b * float(it % 3) * seed)
            st.synchronize()
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)
    ts = [threading.Thread(target=worker, args=(s,)) for s in range(1, 5)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors, errors[0]


def test_tma_gemm_alternating_tensors(c_call):
    import torch
    k = tilelang.compile(K.gemm(256, 256, 256, bk=64), out_idx=[-1], target="cuda")
    if torch.cuda.get_device_capability() >= (9, 0):
        assert any(kk.get("tmaps") for kk in k.launcher.meta["kernels"]), "the sm_90 GEMM loads by TMA"
    pairs = [(torch.randn(256, 256, device="cuda", dtype=torch.float16),
              torch.randn(256, 256, device="cuda", dtype=torch.float16)) for _ in range(2)]
    for _ in range(3):
        for a, b in pairs:   # the tensor maps are encoded again for each pair
            torch.testing.assert_close(k(a, b), (a.float() @ b.float()).half(), rtol=2e-2, atol=2e-1)
