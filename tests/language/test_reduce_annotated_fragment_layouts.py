"""Reductions of fragments whose annotated layouts the published package rejects
(partial-block participants: 48 threads, a base of thread 16 that is not warp-aligned,
two groups of warps 128 threads apart). A fragment's layout is a placement hint here:
the compiler chooses its own, so these reduce correctly (README "Where we differ")."""
import pytest
import torch

import tilelang
import tilelang.language as T


def _reduce_kernel(rows, width, x_layout, out_layout, replicate, threads=128):
    @T.prim_func
    def k(x: T.Tensor((rows, width), "float32"), out: T.Tensor((rows,), "float32")):
        with T.Kernel(1, threads=threads):
            x_frag = T.alloc_fragment((rows, width), "float32")
            s = T.alloc_fragment((rows,), "float32")
            T.annotate_layout({x_frag: T.Fragment(x_frag.shape, forward_fn=x_layout),
                               s: T.Fragment(s.shape, forward_fn=out_layout, replicate=replicate)})
            for i, j in T.Parallel(rows, width):
                x_frag[i, j] = x[i, j]
            T.reduce_sum(x_frag, s, dim=1)
            for i in T.Parallel(rows):
                out[i] = s[i]
    return k


CASES = {
    # 48 participating threads (not a power of two)
    "width48": (1, 384, lambda i, j: (j // 8, j % 8), lambda i, rep: (rep, 0), 48, 128),
    # participants [16, 80): not warp-aligned
    "base16": (1, 512, lambda i, j: (16 + j // 8, j % 8), lambda i, rep: (16 + rep, 0), 64, 128),
    # two 64-thread groups 128 threads apart in a 256-thread block
    "stride128": (2, 512, lambda i, j: (i * 128 + j // 8, j % 8), lambda i, rep: (i * 128 + rep, 0), 64, 256),
}


@pytest.mark.parametrize("target", ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
@pytest.mark.parametrize("case", list(CASES))
def test_reduce_with_a_layout_the_published_package_rejects(target, case):
    rows, width, xl, ol, rep, threads = CASES[case]
    k = tilelang.compile(_reduce_kernel(rows, width, xl, ol, rep, threads), out_idx=-1, target=target)
    torch.manual_seed(0)
    x = torch.rand(rows, width, device=target)
    torch.testing.assert_close(k(x), x.sum(1), rtol=1e-5, atol=1e-4)
