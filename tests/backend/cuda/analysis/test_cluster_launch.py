"""Thread-block clusters, the grid barrier and programmatic dependent launch on the
CUDA backend without a GPU: the generated source and SASS for sm_90a, the launch
metadata (analysis/launch_config.py), the errors, and the runtime's launch calls against a
fake driver (cuLaunchKernelEx's config and attributes as the C side sees them)."""
import ctypes
import inspect
import shutil
import subprocess

import pytest
import torch

import tilelang
from tilelang.ir.errors import TileLangError
from tests.backend.cuda import cluster_kernels as CK
from tests.backend.cuda.conftest import needs_nvrtc, needs_sass

pytestmark = needs_nvrtc
SM90 = "cuda -arch=sm_90a"


def _compile(func, target=SM90, **kw):
    return tilelang.compile(func, target=target, **kw)


def _sass(kernel):
    from tilelang.backend.cuda.host.nvrtc import sass
    return sass(kernel.artifact.binary)


def _kernels(kernel):
    return kernel.launcher.meta["kernels"]


# source and metadata ------------------------------------------------------------------
@pytest.mark.parametrize("published_form", [True, False])
def test_cluster_dims_are_compiled_into_the_kernel(published_form):
    k = _compile(CK.cluster_rank(published_form=published_form))
    src = k.get_kernel_source()
    assert '__global__ void __cluster_dims__(4, 1, 1) __launch_bounds__(128, 1) main_kernel(' in src
    for call in ("tl::cluster_arrive();", "tl::cluster_wait();", "tl::cluster_sync();", "tl::block_rank_in_cluster()"):
        assert call in src
    (m,) = _kernels(k)
    assert m["cluster"] == [4, 1, 1] and not m["cooperative"] and not m["pdl"]
    assert ".reqnctapercluster 4, 1, 1" in k.artifact.meta["ptx"]


def test_two_dimensional_clusters():
    k = _compile(CK.cluster_rank((8, 4), (2, 2, 1)))
    assert "__cluster_dims__(2, 2, 1)" in k.get_kernel_source()
    assert _kernels(k)[0]["cluster"] == [2, 2, 1]


def test_a_cluster_of_one_block_is_an_ordinary_kernel():
    k = _compile(CK.cluster_rank((8, 1), (1, 1, 1)))
    assert "__cluster_dims__" not in k.get_kernel_source()
    assert _kernels(k)[0]["cluster"] is None


def test_kernels_without_the_new_features_need_nothing_from_the_launch():
    from tests.backend.cuda import kernels as K
    from tilelang.backend.cuda.host.runtime import launch_attributes
    k = _compile(K.gemm(128, 128, 64))
    (m,) = _kernels(k)
    assert (m["cluster"], m["cooperative"], m["pdl"]) == (None, False, False)
    assert launch_attributes(m) == []
    assert "cooperative_groups" not in k.get_kernel_source()


@needs_sass
def test_cluster_barrier_and_rank_sass():
    s = _sass(_compile(CK.cluster_rank()))
    assert "UCGABAR_ARV" in s and "UCGABAR_WAIT" in s


@needs_sass
def test_remote_arrive_on_a_cluster_barrier():
    k = _compile(CK.remote_arrive())
    src = k.get_kernel_source()
    assert "tl::mbar_arrive_cluster(&mbar[0], 0);" in src
    assert "tl::mbar_init(&mbar[0], 512);" in src and "tl::mbar_wait_cluster(&mbar[0], 0);" in src
    ptx = k.artifact.meta["ptx"]
    assert "mapa.shared::cluster.u32" in ptx
    assert "mbarrier.arrive.release.cluster.shared::cluster.b64" in ptx
    assert "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64" in ptx
    assert "SYNCS.ARRIVE.TRANS64.RED" in _sass(k)


@needs_sass
def test_copy_cluster_with_a_barrier_is_one_bulk_copy():
    k = _compile(CK.dsmem_swap(mode="bulk"))
    src = k.get_kernel_source()
    body = src[src.index("tl::cluster_sync();"):]
    # the writers fence toward the async proxy, a block barrier, then one thread copies
    fence = body.index("tl::fence_proxy_async();")
    assert body.index("__syncthreads();", fence) < body.index("if (tl_tid == 0) { tl::bulk_copy_cluster(")
    assert "tl::bulk_copy_cluster(&s_dst[0], &s_src[0], 1024, (tl::block_rank_in_cluster() ^ 1), &bar[0]);" in src
    assert "cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes" in k.artifact.meta["ptx"]
    assert "UBLKCP.S.S" in _sass(k)


@pytest.mark.parametrize("mode", ["simt", "simt_barrier", "arrive"])
def test_copy_cluster_element_stores(mode):
    k = _compile(CK.dsmem_swap(mode=mode))
    src = k.get_kernel_source()
    assert "tl::st_cluster(" in src and "bulk_copy_cluster" not in src
    assert "st.shared::cluster.u32" in k.artifact.meta["ptx"]
    if mode == "simt_barrier":
        # all stores done (block barrier), then one arrival for the block
        tail = src[src.rindex("tl::st_cluster("):]
        assert tail.index("__syncthreads();") < tail.index("if (tl_tid == 0) { tl::mbar_arrive_cluster(&bar[0], ")


def test_sync_grid_uses_cooperative_groups_and_a_cooperative_launch():
    k = _compile(CK.grid_sync_published())
    src = k.get_kernel_source()
    assert "#include <cooperative_groups.h>" in src
    assert src.count("cooperative_groups::this_grid().sync()") == 2   # as the published test checks
    (m,) = _kernels(k)
    assert m["cooperative"] and not m["pdl"] and m["cluster"] is None


def test_pdl_sync_asks_for_programmatic_stream_serialization():
    from tilelang.backend.cuda.host.runtime import (CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION,
                                               launch_attributes)
    k = _compile(CK.pdl_pair())
    first, second = _kernels(k)
    assert not first["pdl"] and second["pdl"]   # the kernel that waits may start early
    assert launch_attributes(first) == []
    assert launch_attributes(second) == [(CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION, 1)]
    ptx = k.artifact.meta["ptx"]
    assert "griddepcontrol.launch_dependents;" in ptx and "griddepcontrol.wait;" in ptx


def test_pdl_before_sm90_launches_plainly():
    # T.pdl_sync compiles to nothing there: the kernel must wait for the one before it
    k = _compile(CK.pdl_pair(), target="cuda -arch=sm_80")
    assert [m["pdl"] for m in _kernels(k)] == [False, False]


@needs_sass
def test_every_gpu_test_kernel_compiles_for_sm90a():
    for f in (CK.cluster_rank_dynamic(), CK.grid_two_phase(), CK.grid_sync_dynamic(),
              CK.dsmem_swap(mode="simt_barrier"), CK.dsmem_swap(mode="arrive")):
        assert _compile(f).artifact.binary


# errors ---------------------------------------------------------------------------------
def _line_of(func, text):
    lines, first = inspect.getsourcelines(func)
    return first + next(k for k, ln in enumerate(lines) if text in ln)


def test_a_grid_that_is_not_a_whole_number_of_clusters_is_refused_at_the_kernel():
    with pytest.raises(TileLangError, match=r"grid \(6, 1\) is not a whole number of clusters \(4, 1, 1\): "
                                            r"6 blocks along x is not a multiple of 4") as e:
        _compile(CK.cluster_rank((6, 1), (4, 1, 1)))
    assert e.value.span is not None and e.value.span.file == CK.__file__
    assert e.value.span.line == _line_of(CK.cluster_rank, "with kernel(")


def test_a_cluster_along_an_axis_the_grid_lacks_is_refused():
    with pytest.raises(TileLangError, match="along y is not a multiple of 2"):
        _compile(CK.cluster_rank((8, 1), (1, 2, 1)))


def test_clusters_need_sm90():
    with pytest.raises(TileLangError, match="need sm_90 or newer; the target is sm_80"):
        _compile(CK.cluster_rank(), target="cuda -arch=sm_80")


def test_clusters_of_more_than_16_blocks_are_refused():
    with pytest.raises(TileLangError, match="has 32 blocks"):
        _compile(CK.cluster_rank((128, 1), (32, 1, 1)))


def test_clusters_of_16_blocks_compile():
    k = _compile(CK.cluster_rank((128, 1), (16, 1, 1)))
    assert _kernels(k)[0]["cluster"] == [16, 1, 1]


# the runtime against a fake driver ---------------------------------------------------
class FakeCudaTensor:
    """A CPU tensor that claims to be on the GPU at a given address."""

    def __init__(self, t, ptr=1 << 20):
        self.t, self.ptr = t, ptr
        self.is_cuda = True

    def data_ptr(self):
        return self.ptr

    def get_device(self):
        return 0


def _fake(k, launch=None, launch_ex=None, caps=None):
    from tilelang.backend.cuda.host import runtime as rt
    L = k.launcher
    general = []
    L._constants()
    if caps is not None:
        L._caps = caps
    L._general = lambda b, i=(), f=(): general.append((list(b), tuple(i), tuple(f)))
    L._funcs = [0] * len(L.meta["kernels"])
    L._fast = L._build_fast(launch or (lambda *a: 0), L._funcs, lambda dev: 0x1000, launch_ex or (lambda *a: 0))
    return L, general


def test_ordinary_and_cluster_kernels_keep_the_plain_launch():
    plain, ex = [], []
    k = _compile(CK.cluster_rank())
    L, general = _fake(k, lambda *a: plain.append(a) or 0, lambda *a: ex.append(a) or 0)
    L([FakeCudaTensor(torch.zeros(128, dtype=torch.int32))])
    assert len(plain) == 1 and not ex and not general
    assert "launch(F0" in L._fast.source and "L0(" not in L._fast.source


def test_pdl_and_cooperative_kernels_take_cuLaunchKernelEx():
    plain, ex = [], []
    k = _compile(CK.pdl_pair())
    L, general = _fake(k, lambda *a: plain.append(a) or 0, lambda *a: ex.append(a) or 0)
    ts = [FakeCudaTensor(torch.zeros(4), ptr=4096 * (j + 1)) for j in range(4)]
    L(ts)
    L.positional()(*ts)
    assert len(plain) == 2 and len(ex) == 2 and not general   # kernel 0 plain, kernel 1 with attributes
    cfg = ex[0][0]._obj
    assert (cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ, cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ) == \
        (128, 1, 1, 256, 1, 1)
    assert cfg.hStream == 0x1000 and cfg.numAttrs == 1 and cfg.attrs[0].id == 6 and cfg.attrs[0].value.i == 1


def test_a_cooperative_grid_larger_than_the_gpu_holds_goes_to_the_general_path():
    from tilelang.backend.cuda.host import runtime as rt
    ex = []
    k = _compile(CK.grid_sync_dynamic())
    L, general = _fake(k, launch_ex=lambda *a: ex.append(a) or 0, caps=[(264, 2, 132)])
    a, b = FakeCudaTensor(torch.zeros(4)), FakeCudaTensor(torch.zeros(4), ptr=1 << 21)
    L([a, b], (264,))
    assert len(ex) == 1 and not general
    cfg = ex[0][0]._obj
    assert cfg.gridDimX == 264 and cfg.numAttrs == 1 and cfg.attrs[0].id == rt.CU_LAUNCH_ATTRIBUTE_COOPERATIVE
    L([a, b], (265,))
    assert len(ex) == 1 and len(general) == 1   # the general path explains it
    with pytest.raises(rt.CudaRuntimeError, match=r"uses T\.sync_grid\(\), so all of its blocks must run at "
                                                   r"once, but its grid \(265, 1, 1\) has 265 blocks and this "
                                                   r"GPU holds at most 264 \(2 per SM x 132 SMs"):
        rt.check_launch(_kernels(k)[0], [265, 1, 1], (264, 2, 132))


def test_a_dynamic_grid_of_partial_clusters_goes_to_the_general_path():
    from tilelang.backend.cuda.host import runtime as rt
    plain = []
    k = _compile(CK.cluster_rank_dynamic())
    L, general = _fake(k, lambda *a: plain.append(a) or 0)
    L([FakeCudaTensor(torch.zeros(8, dtype=torch.int32))], (8,))
    assert len(plain) == 1 and not general
    L([FakeCudaTensor(torch.zeros(7, dtype=torch.int32))], (7,))
    assert len(plain) == 1 and len(general) == 1
    with pytest.raises(rt.CudaRuntimeError, match=r"clusters of \(2, 1, 1\) blocks, but its grid \(7, 1, 1\) "
                                                   r"has 7 blocks along x, not a multiple of 2"):
        rt.check_launch(_kernels(k)[0], [7, 1, 1], None)



def test_a_grid_past_cudas_limit_along_y_is_explained():
    """gridDim.y and z hold at most 65535 blocks (a 1-row tile over 65536 rows): the launch is
    refused by the driver with a bare CUDA_ERROR_INVALID_VALUE; check_launch names the axis."""
    from tilelang.backend.cuda.host import runtime as rt
    k = _compile(CK.cluster_rank_dynamic())
    kern = dict(_kernels(k)[0], cluster=None)
    with pytest.raises(rt.CudaRuntimeError, match=r"grid of \(4, 65536, 1\) blocks, but CUDA allows at most 65535 "
                                                   r"blocks along y \(T\.Kernel's second extent\)"):
        rt.check_launch(kern, [4, 65536, 1], None)
    rt.check_launch(kern, [2 ** 20, 65535, 1], None)   # within the limits: nothing to say

_FAKE_EX_C = r"""
#include <stdint.h>
typedef unsigned int u;
typedef struct { int id; char pad[4]; union { char raw[64]; int i; uint64_t align; } value; } Attr;
typedef struct { u gx, gy, gz, bx, by, bz, smem; void* stream; Attr* attrs; u n; } Config;
uint64_t rec[16];
int cuLaunchKernelEx(const Config* c, void* f, void** params, void** extra) {
    rec[0] = c->gx; rec[1] = c->gy; rec[2] = c->gz; rec[3] = c->bx; rec[4] = c->by; rec[5] = c->bz;
    rec[6] = c->smem; rec[7] = (uint64_t)c->stream; rec[8] = c->n;
    rec[9] = c->n > 0 ? (uint64_t)c->attrs[0].id : 99; rec[10] = c->n > 0 ? (uint64_t)c->attrs[0].value.i : 99;
    rec[11] = (uint64_t)f; rec[12] = (uint64_t)*(void**)params[0]; rec[13] = (uint64_t)extra;
    return 0;
}
"""


def test_cuLaunchKernelEx_config_as_the_c_driver_sees_it(tmp_path):
    """cuda.h's CUlaunchConfig / CUlaunchAttribute layout, through the same ctypes call
    as with libcuda (no argtypes)."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    (tmp_path / "fake.c").write_text(_FAKE_EX_C)
    so = tmp_path / "libfakecudaex.so"
    subprocess.run([cc, "-O1", "-shared", "-fPIC", "-o", str(so), str(tmp_path / "fake.c")], check=True)
    lib = ctypes.CDLL(str(so))
    fn = lib.cuLaunchKernelEx
    fn.restype = ctypes.c_int
    k = _compile(CK.grid_two_phase(blocks=64))
    L, general = _fake(k, launch_ex=fn)
    ts = [FakeCudaTensor(torch.zeros(4), ptr=0x10000 * (j + 1)) for j in range(3)]
    L(ts)
    assert not general
    rec = (ctypes.c_uint64 * 16).in_dll(lib, "rec")
    assert list(rec[0:7]) == [64, 1, 1, 128, 1, 1, _kernels(k)[0]["smem"]]
    assert rec[7] == 0x1000 and rec[8] == 1 and rec[9] == 2 and rec[10] == 1   # CU_LAUNCH_ATTRIBUTE_COOPERATIVE
    assert rec[12] == 0x10000 and rec[13] == 0


def test_launch_attribute_ids_match_the_driver_bindings():
    from cuda.bindings import driver as drv
    from tilelang.backend.cuda.host import runtime as rt
    ids = drv.CUlaunchAttributeID
    assert rt.CU_LAUNCH_ATTRIBUTE_COOPERATIVE == int(ids.CU_LAUNCH_ATTRIBUTE_COOPERATIVE)
    assert rt.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION == \
        int(ids.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION)
    assert ctypes.sizeof(rt._LaunchAttribute) == 72 and ctypes.sizeof(rt._LaunchConfig) == 56
    # the general path's cuda-bindings form of the same attributes
    a = rt._driver_attribute(drv, rt.CU_LAUNCH_ATTRIBUTE_COOPERATIVE, 1)
    assert int(a.id) == 2 and a.value.cooperative == 1
    b = rt._driver_attribute(drv, rt.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION, 1)
    assert int(b.id) == 6 and b.value.programmaticStreamSerializationAllowed == 1


def _gemm_tile_exchange(remote_barrier):
    import tilelang.language as T

    @T.prim_func
    def main(A: T.Tensor((128, 64), "float16"), B: T.Tensor((64, 64), "float16"), C: T.Tensor((128, 64), "float32")):
        with T.Kernel(2, threads=128, cluster_dims=2) as bx:
            A_s = T.alloc_shared((64, 64), "float16")
            A_peer = T.alloc_shared((64, 64), "float16")
            B_s = T.alloc_shared((64, 64), "float16")
            acc = T.alloc_fragment((64, 64), "float32")
            bar = T.alloc_cluster_barrier([1])
            T.cluster_sync()
            T.copy(A[bx * 64, 0], A_s)
            T.copy(B, B_s)
            T.copy_cluster(A_s, A_peer, dst_block=bx ^ 1, remote_barrier=bar[0] if remote_barrier else None)
            if remote_barrier:
                T.mbarrier_wait_parity(bar[0], 0)
            else:
                T.cluster_sync()
            T.clear(acc)
            T.gemm(A_s, B_s, acc)
            T.gemm(A_peer, B_s, acc)
            T.copy(acc, C[bx * 64, 0])
            T.cluster_sync()
    return main


def test_bulk_copy_cluster_of_a_swizzled_tile_is_refused():
    k = _compile(_gemm_tile_exchange(False))   # element stores follow the layout
    assert "tl::st_cluster(" in k.get_kernel_source()
    src = k.get_kernel_source()
    if "tl::sw128" not in src:
        pytest.skip("the gemm operands are not swizzled here")
    with pytest.raises(TileLangError, match="swizzled or padded shared layout"):
        _compile(_gemm_tile_exchange(True))
