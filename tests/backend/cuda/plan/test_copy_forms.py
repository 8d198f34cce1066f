"""plan/copy_forms.py: the pass that decides how each copy runs on CUDA and records it
on the copy nest (printed in the IR); the T.copy arguments that steer it
(disable_tma, coalesced_width, eviction_policy, loop_layout)."""
import re

import pytest

import tilelang
import tilelang.language as T
from tilelang.backend.registry import parse_target
from tilelang.backend.cuda import pipeline as P
from tilelang.backend.cuda.plan.copy_forms import plan_copy_forms
from tilelang.ir.errors import LoweringError
from tilelang.ir.printer import func_str
from tilelang.transform.pass_manager import PassContext, run_passes
from tests.backend.cuda.conftest import needs_nvrtc, needs_sass
from tests.backend.cuda.helpers import build


def _before_after(func, arch="sm_90a"):
    """The printed IR before and after plan_copy_forms (a pass of the CUDA pipeline)."""
    ctx = PassContext(config={"_keep_tile_ops": P.KEEP_TILE_OPS})
    ctx.target = parse_target({"kind": "cuda", "arch": arch})
    # (the pass annotates the nests of this tree in place)
    before = run_passes(func, P.PASSES[:P.PASSES.index(plan_copy_forms)], ctx)
    return func_str(before), func_str(plan_copy_forms(before, ctx))


def _notes(text):
    """The copy notes of the printed IR, in order: `# copy -> ...` / `# T.copy(...) -> ...`."""
    return re.findall(r"T\.Parallel\([^\n]*\):  # (.*)", text)


def _cp_async(src, nbytes):
    return len(re.findall(rf"tl::cp_async_gs(?:_conditional)?<{nbytes}>\(", src))


def _src(func, arch="sm_90a"):
    return tilelang.lower(func, target={"kind": "cuda", "arch": arch}).kernel_source


def gemm(M=512, N=512, K=512, bm=128, bn=256, bk=64, stages=4, threads=256, **copy_args):
    @T.prim_func
    def matmul(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float16")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=threads) as (bx, by):
            As = T.alloc_shared((bm, bk), "float16")
            Bs = T.alloc_shared((bk, bn), "float16")
            Cf = T.alloc_fragment((bm, bn), "float32")
            T.clear(Cf)
            for k in T.Pipelined(T.ceildiv(K, bk), num_stages=stages):
                T.copy(A[by * bm, k * bk], As, **copy_args)
                T.copy(B[k * bk, bx * bn], Bs, **copy_args)
                T.gemm(As, Bs, Cf)
            T.copy(Cf, C[by * bm, bx * bn])
    return matmul


def tile_copy(M=256, N=256, dtype="float16", load=None, store=None, transpose=False):
    """G -> shared tile -> H, each copy with its own T.copy arguments."""
    load, store = load or {}, store or {}

    @T.prim_func
    def k(G: T.Tensor((M, N), dtype), H: T.Tensor((N, M) if transpose else (M, N), dtype)):
        with T.Kernel(N // 64, M // 64, threads=128) as (bx, by):
            S = T.alloc_shared((64, 64), dtype)
            T.copy(G[by * 64, bx * 64], S, **load)
            if transpose:
                for i, j in T.Parallel(64, 64):
                    H[bx * 64 + j, by * 64 + i] = S[i, j]
            else:
                T.copy(S, H[by * 64, bx * 64], **store)
    return k


# the four forms -------------------------------------------------------------------------

def test_gemm_copies_ride_the_tma_ring_on_sm90a():
    before, after = _before_after(gemm())
    assert _notes(before) == []
    # the epilogue: the accumulator into a staged shared tile, then one TMA store (plan/stage_epilogue.py)
    assert _notes(after) == ["copy -> TMA ring (pipelined)", "copy -> TMA ring (pipelined)", "copy -> registers x2 (4 B)",
                             "copy -> TMA store"]
    assert "tl::tma_load" in _src(gemm())


def test_pipelined_copies_are_cp_async_on_sm80():
    before, after = _before_after(gemm(stages=3), "sm_80")
    assert _notes(before) == []
    assert _notes(after)[:2] == ["copy -> cp.async x8 (16 B)"] * 2
    src = _src(gemm(stages=3), "sm_80")
    assert _cp_async(src, 16) == 4 and "tma_load" not in src   # two copies, prologue and loop


def test_vector_copy_and_tma_store():
    before, after = _before_after(tile_copy())
    assert _notes(before) == []
    assert _notes(after) == ["copy -> vector x8 (16 B)", "copy -> TMA store"]
    src = _src(tile_copy())
    assert "*reinterpret_cast<const uint4*>(&G[" in src and "tl::tma_store" in src


def test_scalar_fallback_says_why():
    _, after = _before_after(tile_copy(transpose=True))
    assert _notes(after) == ["copy -> vector x8 (16 B)",
                             "copy -> scalar (no vector width fits the dtypes, alignment and bounds checks)"]
    src = _src(tile_copy(transpose=True))
    assert re.search(r"H\[[^\]]*\] = S\[", src)   # element by element


def test_the_form_is_in_the_lower_trace(tmp_path, monkeypatch):
    monkeypatch.setenv("TL_LOWER_TRACE", str(tmp_path))
    _src(tile_copy())
    pages = sorted(p.name for p in tmp_path.iterdir() if "plan_copy_forms" in p.name)
    assert pages, sorted(p.name for p in tmp_path.iterdir())
    assert "# copy -> TMA store" in (tmp_path / pages[-1]).read_text()
    plan = [p for p in tmp_path.iterdir() if "_cuda_plan_" in p.name]
    text = plan[0].read_text()
    assert re.search(r"copies:\n  G -> S \(line \d+\): vector x8 \(16 B\)\n"
                     r"  S -> H \(line \d+\): TMA store\n", text), text


# disable_tma --------------------------------------------------------------------------------

def test_disable_tma_store_becomes_a_vector_copy():
    _, after = _before_after(tile_copy(store={"disable_tma": True}))
    assert _notes(after) == ["copy -> vector x8 (16 B)", "T.copy(disable_tma=True) -> vector x8 (16 B)"]
    assert "tma_store" not in _src(tile_copy(store={"disable_tma": True}))


def test_disable_tma_keeps_a_pipelined_gemm_on_cp_async():
    _, after = _before_after(gemm(disable_tma=True))
    assert _notes(after)[:2] == ["T.copy(disable_tma=True) -> cp.async x8 (16 B)"] * 2
    src = _src(gemm(disable_tma=True))
    assert "tma_load" not in src and "CUtensorMap" not in src and _cp_async(src, 16) == 4


# coalesced_width ----------------------------------------------------------------------------

def test_coalesced_width_sets_the_vector_width():
    _, after = _before_after(tile_copy(load={"coalesced_width": 4}))
    assert _notes(after)[0] == "T.copy(coalesced_width=4) -> vector x4 (8 B)"
    src = _src(tile_copy(load={"coalesced_width": 4}))
    assert "*reinterpret_cast<const uint2*>(&G[" in src and "uint4" not in src.split("tl::tma_store")[0]


def test_coalesced_width_of_pipelined_copies():
    _, after = _before_after(gemm(coalesced_width=4, stages=3), "sm_80")
    assert _notes(after)[:2] == ["T.copy(coalesced_width=4) -> cp.async x4 (8 B)"] * 2
    assert _cp_async(_src(gemm(coalesced_width=4, stages=3), "sm_80"), 8) == 4


def test_coalesced_width_one_is_scalar():
    _, after = _before_after(tile_copy(load={"coalesced_width": 1}))
    assert _notes(after)[0] == "T.copy(coalesced_width=1) -> scalar (coalesced_width=1)"


@pytest.mark.parametrize("width, why", [(16, "32 bytes, not 2, 4, 8 or 16"), (3, "power of two")])
def test_illegal_coalesced_width_is_a_located_error(width, why):
    with pytest.raises(LoweringError, match=f"coalesced_width={width}.*{why}") as e:
        _src(tile_copy(load={"coalesced_width": width}))
    assert "test_copy_forms.py" in str(e.value)   # points at the T.copy line


def test_coalesced_width_too_narrow_for_cp_async():
    with pytest.raises(LoweringError, match=r"coalesced_width=1\): a cp.async copy moves 4, 8 or 16 bytes"):
        _src(gemm(coalesced_width=1, stages=3), "sm_80")


def test_coalesced_width_of_a_fragment_copy_is_an_error():
    @T.prim_func
    def k(G: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128):
            F = T.alloc_fragment((64, 64), "float32")
            T.fill(F, 1)
            T.copy(F, G, coalesced_width=4)
    with pytest.raises(LoweringError, match="coalesced_width=4\\): this copy reads or writes the register "
                                            "fragment `F`"):
        _src(k)


def test_coalesced_width_checks_its_type():
    with pytest.raises(ValueError, match="coalesced_width must be a positive int"):
        _src(tile_copy(load={"coalesced_width": "8"}))


# eviction_policy ----------------------------------------------------------------------------

def test_eviction_policy_on_vector_loads_and_stores():
    k = tile_copy(load={"eviction_policy": "evict_first"}, store={"eviction_policy": "evict_last", "disable_tma": True})
    _, after = _before_after(k)
    assert _notes(after) == ["T.copy(eviction_policy='evict_first') -> vector x8 (16 B), evict_first",
                             "T.copy(disable_tma=True, eviction_policy='evict_last') -> vector x8 (16 B), evict_last"]
    src = _src(k)
    assert "tl::ld_global_hint<uint4, 1>(" in src and "tl::st_global_hint<uint4, 2>(" in src


def test_eviction_policy_on_whole_tile_tma_copies():
    k = tile_copy(load={"eviction_policy": "evict_first", "prefer_instruction": "tma"},
                  store={"eviction_policy": "evict_last"})
    _, after = _before_after(k)
    assert _notes(after) == ["T.copy(eviction_policy='evict_first') -> TMA load, evict_first",
                             "T.copy(eviction_policy='evict_last') -> TMA store, evict_last"]
    src = _src(k)
    assert "tl::tma_load_hint<1>(S, &G_desc, tl_copy_bar, (bx * 64), (by * 64));" in src
    assert "tl::tma_store_hint<2>(&H_desc, S, (bx * 64), (by * 64));" in src
    # a contiguous run (full rows): the plain bulk copies
    k = tile_copy(64, 64, load={"eviction_policy": "evict_last", "prefer_instruction": "tma"},
                  store={"eviction_policy": "evict_first"})
    src = _src(k)
    assert "tl::tma_load_bulk_hint<2>(" in src and "tl::tma_store_bulk_hint<1>(" in src


def test_eviction_policy_keeps_a_pipelined_loop_off_the_tma_ring():
    _, after = _before_after(gemm(eviction_policy="evict_first"))
    assert _notes(after)[:2] == ["T.copy(eviction_policy='evict_first') -> cp.async x8 (16 B), evict_first"] * 2


def test_eviction_policy_on_scalar_and_cp_async_copies():
    k = tile_copy(load={"eviction_policy": "evict_first", "coalesced_width": 1})
    assert "tl::ld_global_hint<unsigned short, 1>(" in _src(k)
    src = _src(gemm(eviction_policy="evict_last", stages=3), "sm_80")
    assert src.count("tl::cp_async_hint<16, 2>(") == 4 and _cp_async(src, 16) == 0


def test_eviction_policy_is_checked():
    with pytest.raises(ValueError, match="eviction_policy must be one of"):
        _src(tile_copy(load={"eviction_policy": "evict_sometimes"}))


@needs_nvrtc
def test_eviction_policy_ptx():
    k = tile_copy(load={"eviction_policy": "evict_first"}, store={"eviction_policy": "evict_last", "disable_tma": True})
    ptx = build(k).meta["ptx"]
    assert "createpolicy.fractional.L2::evict_first" in ptx and "createpolicy.fractional.L2::evict_last" in ptx
    assert "ld.global.L2::cache_hint.v4.u32" in ptx and "st.global.L2::cache_hint.v4.u32" in ptx
    ptx = build(gemm(eviction_policy="evict_last", stages=3), "sm_80").meta["ptx"]
    assert "cp.async.cg.shared.global.L2::cache_hint" in ptx
    for M in (256, 64):   # tensor-map boxes; contiguous runs
        ptx = build(tile_copy(M, M, load={"eviction_policy": "evict_first", "prefer_instruction": "tma"},
                              store={"eviction_policy": "evict_last"})).meta["ptx"]
        assert re.search(r"cp\.async\.bulk\.(tensor\.2d\.)?shared::cluster\.global\.\S*L2::cache_hint", ptx)
        assert re.search(r"cp\.async\.bulk\.(tensor\.2d\.)?global\.shared::cta\.\S*L2::cache_hint", ptx)


@needs_sass
def test_eviction_policy_sass():
    """The hint travels in the access's memory descriptor: the 128-bit loads and stores
    stay, and their descriptor is no longer the kernel's default one."""
    from tilelang.backend.cuda.host.nvrtc import sass
    plain = sass(build(tile_copy(store={"disable_tma": True})).binary)
    hinted = sass(build(tile_copy(load={"eviction_policy": "evict_first"},
                                  store={"disable_tma": True, "eviction_policy": "evict_first"})).binary)
    for text in (plain, hinted):
        assert "LDG.E.128" in text and "STG.E.128" in text and "LDL" not in text and "STL" not in text
    assert plain != hinted


# loop_layout --------------------------------------------------------------------------------

def test_arguments_print_with_the_copy():
    from tilelang.ir.printer import func_str
    text = func_str(tile_copy(load={"coalesced_width": 4, "eviction_policy": "evict_last"},
                              store={"disable_tma": True}))
    assert "T.copy(G[by * 64:by * 64 + 64, bx * 64:bx * 64 + 64], S, coalesced_width=4, eviction_policy='evict_last')" \
        in text
    assert "disable_tma=True)" in text


def test_loop_layout_is_a_located_error():
    with pytest.raises(LoweringError, match="loop_layout=...\\) is not supported") as e:
        _src(tile_copy(load={"loop_layout": object()}))
    assert "test_copy_forms.py" in str(e.value)


# on the GPU ---------------------------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("load, store", [
    ({}, {}),
    ({"disable_tma": True}, {"disable_tma": True}),
    ({"coalesced_width": 2}, {"coalesced_width": 4, "disable_tma": True}),
    ({"coalesced_width": 1, "eviction_policy": "evict_first"}, {"eviction_policy": "evict_last"}),
    ({"eviction_policy": "evict_normal"}, {"eviction_policy": "evict_first", "coalesced_width": 8}),
    ({"eviction_policy": "evict_first", "prefer_instruction": "tma"}, {"eviction_policy": "evict_last"}),
])
@pytest.mark.parametrize("M", [256, 64])   # 64: whole rows, the bulk copies without a tensor map
def test_tile_copy_runs(M, load, store):
    import torch
    kern = tilelang.compile(tile_copy(M, M, load=load, store=store), target="cuda")
    g = torch.randn(M, M, device="cuda", dtype=torch.float16)
    h = torch.zeros_like(g)
    kern(g, h)
    torch.testing.assert_close(h, g, rtol=0, atol=0)


@pytest.mark.gpu
@pytest.mark.parametrize("args", [{}, {"disable_tma": True}, {"coalesced_width": 4},
                                  {"eviction_policy": "evict_last"}])
def test_gemm_runs(args):
    import torch
    kern = tilelang.compile(gemm(**args), target="cuda")
    a = torch.randn(512, 512, device="cuda", dtype=torch.float16)
    b = torch.randn(512, 512, device="cuda", dtype=torch.float16)
    c = torch.empty(512, 512, device="cuda", dtype=torch.float16)
    kern(a, b, c)
    torch.testing.assert_close(c.float(), (a.float() @ b.float()), rtol=2e-2, atol=2e-1)


def test_the_plan_is_made_once(monkeypatch):
    """The copy forms and the code generator read the kernel plan the pass plan_kernels made."""
    import tilelang.backend.cuda.plan.kernel as plan_mod
    import tilelang.backend.cuda.plan.plan_kernels as pass_mod
    calls = []
    real = plan_mod.plan_kernel

    def counting(*a, **kw):
        calls.append(1)
        return real(*a, **kw)
    monkeypatch.setattr(plan_mod, "plan_kernel", counting)
    monkeypatch.setattr(pass_mod, "plan_kernel", counting)
    _src(gemm())
    assert len(calls) == 1


def test_no_bulk_copy_no_async_proxy_fence():
    """The fences that order shared tiles with bulk copies follow the chosen forms: a
    store kept off TMA by its arguments needs none."""
    k = tile_copy(load={"eviction_policy": "evict_first"}, store={"coalesced_width": 8})
    assert "fence_proxy_async" not in _src(k)
    assert "fence_proxy_async" in _src(tile_copy())


def test_the_cpu_reference_runs_them_as_plain_copies():
    """The arguments steer how a copy runs on the GPU, not what it computes: the CPU
    backend (the reference semantics) copies alike with them."""
    import numpy as np
    k = tile_copy(load={"coalesced_width": 4, "eviction_policy": "evict_first"},
                  store={"disable_tma": True, "eviction_policy": "evict_last"})
    kern = tilelang.compile(k, target="cpu")
    g = np.random.default_rng(0).standard_normal((256, 256)).astype(np.float16)
    h = np.zeros_like(g)
    kern(g, h)
    np.testing.assert_array_equal(h, g)
