"""A user's `T.annotate_layout({frag: T.Fragment(...)})` on a fragment no gemm constrains
is its register layout (layout/annotated.py): the plan places the fragment by the user's
Fragment and says "honoured"; the printed loops walk each thread's registers by a closed
form of the Fragment's owner table; a fragment another use cannot follow goes to shared
memory and the plan report and a warning say why; a gemm's accumulator keeps the gemm's
layout (report + warning). The CPU backend ignores fragment layouts, so its results with
and without the annotation are the reference the GPU test compares with too."""
import warnings

import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang.layout import Fragment
from tests.backend.cuda.conftest import needs_sass

M, N, THREADS, BLOCKS = 64, 32, 128, 2

LAYOUTS = {
    # row i on threads 2i and 2i + 1, 16 columns each
    "rows": lambda: Fragment([M, N], forward_thread_fn=lambda i, j: i * 2 + j // 16,
                             forward_index_fn=lambda i, j: j % 16),
    # column j on threads 4j .. 4j + 3, 16 rows each (transposed)
    "transposed": lambda: Fragment([M, N], forward_thread_fn=lambda i, j: j * 4 + i // 16,
                                   forward_index_fn=lambda i, j: i % 16),
    # element f = i N + j on thread f % 128, register f / 128 (interleaved)
    "interleaved": lambda: Fragment([M, N], forward_thread_fn=lambda i, j: (i * N + j) % THREADS,
                                    forward_index_fn=lambda i, j: (i * N + j) // THREADS),
    # the rows layout with threads XOR-swizzled by the column
    "xor": lambda: Fragment([M, N], forward_thread_fn=lambda i, j: (i * 2 + j // 16) ^ (j % 8),
                            forward_index_fn=lambda i, j: j % 16),
    # only threads 0 .. 63 hold elements (the others skip every register)
    "half_threads": lambda: Fragment([M, N], forward_thread_fn=lambda i, j: (i * N + j) % 64,
                                     forward_index_fn=lambda i, j: (i * N + j) // 64),
    # register r's threads XOR-scrambled by a constant that is no linear function of r
    # (printed register by register)
    "scrambled": lambda: Fragment([M, N], forward_thread_fn=lambda i, j: ((i * N + j) % THREADS) ^
                                  ((i * N + j) // THREADS * 37 % THREADS),
                                  forward_index_fn=lambda i, j: (i * N + j) // THREADS),
    # every element on two threads (64 + replica)
    "replicated": lambda: Fragment([M, N], forward_thread_fn=lambda i, j, r: (i * N + j) % 64 + 64 * r,
                                   forward_index_fn=lambda i, j: (i * N + j) // 64, replicate=2),
}


def kernel(frag=None, mix=False, reduce=False):
    """B = 2 A + 1 (+ R[i] with `mix`: a length-M fragment of another layout in the nest;
    + max_j A[i, j] with `reduce`), block bx doing rows [bx M, bx M + M)."""
    @T.prim_func
    def k(A: T.Tensor((BLOCKS * M, N), "float32"), R: T.Tensor((BLOCKS * M,), "float32"),
          B: T.Tensor((BLOCKS * M, N), "float32")):
        with T.Kernel(BLOCKS, threads=THREADS) as bx:
            a = T.alloc_fragment((M, N), "float32")
            b = T.alloc_fragment((M, N), "float32")
            r = T.alloc_fragment((M,), "float32")
            if frag is not None:
                T.annotate_layout({a: frag})
            T.copy(A[bx * M, 0], a)
            T.copy(R[bx * M], r)
            if reduce:
                T.reduce_max(a, r, dim=1, clear=False)
            for i, j in T.Parallel(M, N):
                if mix or reduce:
                    b[i, j] = a[i, j] * 2.0 + 1.0 + r[i]
                else:
                    b[i, j] = a[i, j] * 2.0 + 1.0
            T.copy(b, B[bx * M, 0])
    return k


def reference(a, r, mix=False, reduce=False):
    if reduce:
        r = np.maximum(r, a.max(axis=1))
    return a * 2 + 1 + (r[:, None] if mix or reduce else 0)


def _plan(func):
    """(plan, {name: buffer}) of the kernel's one launch on sm_90a."""
    from tilelang.backend.cuda.plan.kernel import plan_kernel
    from tilelang.ir import stmt as S
    from tilelang.ir.visitor import walk
    launches, decls = [], {}
    walk(func.body, lambda n: launches.append(n) if isinstance(n, S.KernelLaunch) else None)
    walk(func.body, lambda n: decls.setdefault(n.buffer.name, n.buffer) if isinstance(n, S.DeclBuffer) else None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        plan = plan_kernel(launches[0], "sm_90a")
    return plan, decls, [str(w.message) for w in caught]


def _inputs(seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((BLOCKS * M, N)).astype(np.float32),
            rng.standard_normal(BLOCKS * M).astype(np.float32))


@pytest.mark.parametrize("name", list(LAYOUTS))
def test_the_users_fragment_is_the_register_layout(name):
    from tilelang.backend.cuda.layout.annotated import AnnotatedTile
    user = LAYOUTS[name]()
    plan, bufs, warned = _plan(kernel(user))
    pa, pb = plan.placements[id(bufs["a"])], plan.placements[id(bufs["b"])]
    assert pa.kind == "tile" and isinstance(pa.acc, AnnotatedTile) and pa.acc.fragment() is user
    assert "honoured" in pa.annotated and "not honoured" not in pa.annotated
    assert pb.acc == pa.acc       # b follows a through the element-wise nest
    assert not warned


@pytest.mark.parametrize("name", list(LAYOUTS))
def test_the_closed_form_walks_the_fragments_registers(name):
    """The printed expression of each register's element (layout/annotated.py `schedule`),
    evaluated for every thread, is the Fragment's owner table."""
    from tilelang.backend.cuda.layout.annotated import AnnotatedTile
    L = AnnotatedTile.of(LAYOUTS[name](), [M, N], THREADS)
    how = L.schedule
    assert how[0] == ("unrolled" if name == "scrambled" else "loop")
    for t in range(THREADS):
        for r in range(L.regs):
            if how[0] == "loop":
                _, guard, expr, shift = how
                got = eval(expr, {"tl_k": (r << shift) + t})
            else:
                guard, expr = how[1][r]
                got = eval(expr, {"tl_tid": t})
            want = L.flat[t, r]
            assert (guard is not None and t >= guard and want < 0) or got == want


def test_a_fragment_without_closed_form_stays_in_shared_memory_and_says_so():
    """t -> t + 2 t^2 (mod 128) permutes the threads but is no bit-linear map: no closed
    form for the printed loop, so the fragment goes to shared memory, reported."""
    from tilelang.backend.cuda.layout.annotated import AnnotatedTile

    def thread(i, j):
        t = (i * N + j) % THREADS
        return (t + 2 * t * t) % THREADS
    odd = Fragment([M, N], forward_thread_fn=thread, forward_index_fn=lambda i, j: (i * N + j) // THREADS)
    why = AnnotatedTile.of(odd, [M, N], THREADS)
    assert isinstance(why, str) and "bit-linear" in why
    plan, bufs, warned = _plan(kernel(odd))
    pa = plan.placements[id(bufs["a"])]
    assert pa.kind == "tile" and type(pa.acc).__name__ == "ThreadTile"    # the compiler's layout
    assert "not honoured: the element each register holds is no bit-linear" in pa.annotated and warned


@pytest.mark.parametrize("name", ["transposed", "replicated"])
def test_cpu_results_equal_with_and_without_the_annotation(name):
    a, r = _inputs()
    for frag in (None, LAYOUTS[name]()):
        out = np.zeros_like(a)
        tilelang.compile(kernel(frag), target="cpu")(a, r, out)
        np.testing.assert_allclose(out, reference(a, r), rtol=1e-6)


def test_a_fragment_of_another_layout_in_the_nest_goes_to_shared_memory():
    plan, bufs, warned = _plan(kernel(LAYOUTS["rows"](), mix=True))
    assert "honoured" in plan.placements[id(bufs["a"])].annotated
    assert plan.placements[id(bufs["r"])].kind == "smem"
    assert not warned


def test_a_reduction_keeps_the_compilers_layout_and_says_so():
    plan, bufs, warned = _plan(kernel(LAYOUTS["rows"](), reduce=True))
    pa = plan.placements[id(bufs["a"])]
    assert pa.kind == "tile" and type(pa.acc).__name__ == "ThreadTile"
    assert "not honoured: a reduction over it" in pa.annotated
    assert any("`a` (line" in w and "not honoured" in w for w in warned)


def test_a_gemm_accumulator_keeps_the_gemms_layout_and_says_so():
    @T.prim_func
    def k(A: T.Tensor((64, 64), "float16"), B: T.Tensor((64, 64), "float16"), C: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128):
            a = T.alloc_shared((64, 64), "float16")
            b = T.alloc_shared((64, 64), "float16")
            c = T.alloc_fragment((64, 64), "float32")
            T.annotate_layout({c: Fragment([64, 64], forward_thread_fn=lambda i, j: i * 2 + j // 32,
                                           forward_index_fn=lambda i, j: j % 32)})
            T.copy(A, a)
            T.copy(B, b)
            T.gemm(a, b, c, clear_accum=True)
            T.copy(c, C)
    plan, bufs, warned = _plan(k)
    pc = plan.placements[id(bufs["c"])]
    assert pc.kind == "acc" and "not honoured: a T.gemm fixes its register layout" in pc.annotated
    assert any("`c`" in w and "T.gemm fixes" in w for w in warned)


@needs_sass
@pytest.mark.parametrize("name", ["transposed", "xor", "scrambled", "replicated"])
def test_compiles_for_sm_90a_without_spills(name):
    from tests.backend.cuda.helpers import build, sass_ops
    ops = sass_ops(build(kernel(LAYOUTS[name](), mix=True)))
    assert ops["LDG"] > 0 and ops["STG"] > 0
    assert ops["STL"] == 0 and ops["LDL"] == 0


@pytest.mark.gpu
@pytest.mark.parametrize("mix", [False, True])
@pytest.mark.parametrize("name", list(LAYOUTS) + [None])
def test_annotated_fragments_gpu(name, mix):
    import torch
    a, r = _inputs(2)
    k = tilelang.compile(kernel(LAYOUTS[name]() if name else None, mix=mix), target="cuda")
    ta, tr = torch.from_numpy(a).cuda(), torch.from_numpy(r).cuda()
    out = torch.zeros_like(ta)
    k(ta, tr, out)
    torch.testing.assert_close(out.cpu(), torch.from_numpy(reference(a, r, mix)), rtol=1e-6, atol=1e-6)


def vector_kernel(shape, frag=None):
    """B = A + 1 over a fragment of `shape` (1-D, or 3-D), one block."""
    @T.prim_func
    def k(A: T.Tensor(shape, "float32"), B: T.Tensor(shape, "float32")):
        with T.Kernel(1, threads=THREADS):
            a = T.alloc_fragment(shape, "float32")
            if frag is not None:
                T.annotate_layout({a: frag})
            T.copy(A, a)
            if len(shape) == 1:
                for j in T.Parallel(shape[0]):
                    a[j] = a[j] + 1.0
            else:
                for b, i, j in T.Parallel(*shape):
                    a[b, i, j] = a[b, i, j] + 1.0
            T.copy(a, B)
    return k


OTHER_SHAPES = {
    "vector": ((512,), lambda: Fragment([512], forward_thread_fn=lambda j: j // 4 % THREADS,
                                        forward_index_fn=lambda j: j // 512 * 4 + j % 4)),
    "three_d": ((4, 16, 32), lambda: Fragment([4, 16, 32], forward_thread_fn=lambda b, i, j: j * 4 + b,
                                              forward_index_fn=lambda b, i, j: i)),
}


@pytest.mark.parametrize("name", list(OTHER_SHAPES))
def test_one_and_three_dimensional_fragments(name):
    shape, make = OTHER_SHAPES[name]
    user = make()
    plan, bufs, warned = _plan(vector_kernel(shape, user))
    pa = plan.placements[id(bufs["a"])]
    assert pa.kind == "tile" and pa.acc.fragment() is user and "honoured" in pa.annotated and not warned


@pytest.mark.gpu
@pytest.mark.parametrize("name", list(OTHER_SHAPES))
def test_one_and_three_dimensional_fragments_gpu(name):
    import torch
    shape, make = OTHER_SHAPES[name]
    a = torch.randn(*shape, device="cuda")
    b = torch.zeros_like(a)
    tilelang.compile(vector_kernel(shape, make()), target="cuda")(a, b)
    torch.testing.assert_close(b, a + 1)


def test_the_plan_page_says_honoured_at_the_users_line(tmp_path, monkeypatch):
    import inspect
    import os
    lines, first = inspect.getsourcelines(kernel)
    line = first + next(k for k, ln in enumerate(lines) if "T.annotate_layout({a: frag})" in ln)
    monkeypatch.setenv("TL_LOWER_TRACE", str(tmp_path))
    tilelang.lower(kernel(LAYOUTS["transposed"]()), target={"kind": "cuda", "arch": "sm_90a"})
    (page,) = [p for p in os.listdir(tmp_path) if "_cuda_plan_" in p]
    row = next(ln for ln in (tmp_path / page).read_text().splitlines() if ln.strip().startswith("a "))
    assert "registers (tile): annotated Fragment[64, 32]" in row
    assert f"annotated Fragment (line {line}) honoured" in row
