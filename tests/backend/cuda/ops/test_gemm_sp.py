"""`T.gemm_sp` on CUDA (no GPU needed): the decompressed tile feeds the tensor-core
gemm; on a GPU the result matches the dense product."""
import numpy as np
import pytest

from tests.backend.cuda.conftest import needs_sass
from tests.backend.cuda.helpers import build, sass_ops
from tests.language.test_gemm_sp import sp_kernel, sparse_dense, compress


@needs_sass
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_dense_part_on_tensor_cores(arch):
    art = build(sp_kernel(256, 256, 256, "float16", "float32", "int16", bm=128, bn=128, bk=64), arch)
    ops = sass_ops(art)
    # sm_90a: the dense 128 x 128 tile on one warpgroup is wgmma over two 64-row slabs
    assert ops["HGMMA" if arch == "sm_90a" else "HMMA"] > 0 and ops["LDL"] == 0 and ops["STL"] == 0, ops


@pytest.mark.gpu
def test_gpu_matches_dense():
    import torch
    import tilelang
    M = N = K = 256
    rng = np.random.default_rng(0)
    a = sparse_dense(M, K, "float16", rng).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    vals, e = compress(a.astype(np.float64), "float16", "int16")
    k = tilelang.compile(sp_kernel(M, N, K, "float16", "float32", "int16", bm=128, bn=128), target="cuda")
    c = torch.zeros(M, N, device="cuda")
    k(torch.from_numpy(vals.astype(np.float16)).cuda(), torch.from_numpy(e).cuda(), torch.from_numpy(b).cuda(), c)
    np.testing.assert_allclose(c.cpu().numpy(), a.astype(np.float32) @ b.astype(np.float32), rtol=1e-2, atol=1e-2)
