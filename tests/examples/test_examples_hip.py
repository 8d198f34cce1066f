"""The repository's examples compiled for AMD CDNA (gfx90a, gfx940) with hipcc, no GPU
needed: the ISA of every GEMM / attention kernel has MFMA instructions, and no kernel
spills (VGPR/SGPR spill counts and ScratchSize are 0). All example files are built in one
hipcc run per arch (a translation unit of every kernel) to keep the test fast.

Sizes differ from the CUDA list where CDNA differs: the LDS of a block is 64 KiB, so
MLA decode at 64-head blocks and 512 latent columns takes its AMD form (Q and P in
registers: tests/backend/hip/kernels.py; the example's Q tile alone is 64 KiB in LDS);
flash decoding with a whole wavefront (threads=64; the example picks 32 threads for its
16-head block). Whether they compute the right values is
checked on the CPU backend by each example's own test (tests/examples/test_<name>.py)."""
import pytest

from tests.examples.test_examples_cuda import _example
from tests.backend.hip.helpers import needs_hipcc, hip_source
from tests.backend.hip import kernels as HK

# (folder, file, factory, args, kwargs, uses matrix cores)
KERNELS = [
    ("gemm", None, "matmul", (256, 256, 256, 128, 128, 32), {}, True),
    ("gemm", None, "matmul", (256, 256, 256, 64, 64, 32), dict(trans_B=True, relu=True, dtype="bfloat16"), True),
    ("quickstart", None, "matmul_relu", (256, 256, 256, 128, 128, 32), {}, True),
    ("flash_attention", None, "flash_attention", (1, 2, 256, 256, 64), {}, True),
    ("flash_attention", None, "flash_attention", (1, 2, 256, 256, 64), dict(is_causal=True), True),
    # register fragments (P, the softmax statistics), 256 threads; d128 reuses Q's LDS for O
    ("flash_attention", None, "flash_attention", (1, 2, 256, 256, 64), dict(threads=256), True),
    ("flash_attention", None, "flash_attention", (1, 2, 256, 256, 128), dict(threads=256), True),
    ("flash_attention", None, "flash_attention", (1, 2, 256, 256, 128), dict(block_M=128, threads=256), True),
    (None, None, "mla_decode_registers", (1, 64, 256, 512, 64), dict(block_H=64, block_N=32), True),
    ("flash_decoding", None, "flash_decoding", (1, 8, 2, 256, 64), dict(threads=64), True),
    ("deepseek_mla", "mla_decode", "mla_decode", (1, 64, 256, 512, 64), dict(block_H=16, block_N=16, threads=64),
     True),
    ("gemm_splitk", None, "matmul_splitk", (256, 256, 512), {}, True),
    ("implicit_gemm", None, "matmul_implicit", (256, 256, 256), {}, True),
    ("elementwise", None, "elementwise_add", (256, 256), {}, False),
    ("softmax", None, "softmax", (256, 256), {}, False),
    ("rms_norm", None, "rms_norm", (256, 256), {}, False),
    ("layer_norm", None, "layer_norm", (256, 256), {}, False),
    ("reduce", None, "row_sum", (256, 256), {}, False),
    ("gemv", None, "gemv", (256, 256), {}, False),
]
IDS = [f"{k[0] or k[2]}_{i}" for i, k in enumerate(KERNELS)]


@pytest.fixture(scope="module", params=["gfx90a", "gfx940"])
def built(request):
    from tilelang.backend.hip.compiler import compile_many
    arch = request.param
    sources = {}
    for tag, (folder, file, factory, args, kwargs, _) in zip(IDS, KERNELS):
        fn = getattr(_example(folder, file) if folder else HK, factory)
        func = fn.get_tir(*args, **kwargs) if hasattr(fn, "get_tir") else fn(*args, **kwargs)
        sources[tag] = hip_source(func, arch)[1]
    asm, resources, owners = compile_many(sources, arch)
    return arch, asm, resources, owners


@needs_hipcc
def test_examples_compile_for_cdna(built):
    from tilelang.backend.hip.compiler import mfma_instructions, scratch_sizes
    arch, asm, resources, owners = built
    for tag, (folder, *_rest, tc) in zip(IDS, KERNELS):
        text = asm[tag]
        assert text, f"{tag}: no function in the assembly"
        if tc:
            assert mfma_instructions(text), f"{tag} ({arch}): no v_mfma instruction"
        assert all(s == 0 for s in scratch_sizes(text)), f"{tag} ({arch}): scratch memory (spills)"
    assert len(resources) == len(owners) >= len(KERNELS)
    for name, info in resources.items():
        # (an SGPR spill goes to a VGPR lane, a register move, not memory: not counted)
        assert info.get("vgpr_spill_count", 0) == 0, (name, info)
        assert info.get("private_segment_fixed_size", 0) == 0, (name, info)
