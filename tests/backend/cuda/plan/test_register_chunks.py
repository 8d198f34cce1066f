"""plan/register_chunks.py: the pass that decides how the chunks of a register-tile loop run
where no vector copy moves them (two-lane conversions, vector atomic adds, shared loads
hoisted to one vector a chunk) and records it on the nest. Checked on the printed IR before
and after the pass; the code generator only prints the record (without the pass, none of
the three forms appears)."""
import re

import tilelang.language as T
from tilelang.backend.registry import get_backend, parse_target
from tilelang.backend.cuda import pipeline as P
from tilelang.backend.cuda.plan.register_chunks import plan_register_chunks
from tilelang.ir.printer import func_str
from tilelang.transform.pass_manager import PassContext, run_passes


def _before_after(func, arch="sm_90a"):
    """The printed IR before and after plan_register_chunks."""
    ctx = PassContext(config={"_keep_tile_ops": P.KEEP_TILE_OPS})
    ctx.target = parse_target({"kind": "cuda", "arch": arch})
    before = run_passes(func, P.PASSES[:P.PASSES.index(plan_register_chunks)], ctx)
    text = func_str(before)   # (the pass annotates the nests of this tree in place)
    return text, func_str(plan_register_chunks(before, ctx))


def _notes(text):
    """The notes of the printed IR's T.Parallel nests, in order."""
    return re.findall(r"T\.Parallel\([^\n]*\):  # (.*)", text)


def cast_through_registers(M=1024, s="float32", d="float16"):
    @T.prim_func
    def main(A: T.Tensor((M,), s), B: T.Tensor((M,), d)):
        with T.Kernel(1, threads=128):
            A_local = T.alloc_fragment((M,), s)
            B_local = T.alloc_fragment((M,), d)
            T.copy(A, A_local)
            for i in T.Parallel(M):
                B_local[i] = A_local[i]
            T.copy(B_local, B)
    return main


def atomic_from_registers(dt="float32"):
    @T.prim_func
    def k(A: T.Tensor((128, 128), dt), C: T.Tensor((128, 128), dt)):
        with T.Kernel(2, threads=128) as bx:
            A_local = T.alloc_fragment((64, 64), dt)
            T.copy(A[bx * 64:bx * 64 + 64, 0:64], A_local)
            T.atomic_add(C[bx * 64:bx * 64 + 64, 0:64], A_local)
    return k


def add_shared_tiles(transposed=False):
    @T.prim_func
    def k(A: T.Tensor((256, 256), "float16"), B: T.Tensor((256, 256), "float16"), C: T.Tensor((256, 256), "float16")):
        with T.Kernel(8, 4, threads=128) as (bx, by):
            As = T.alloc_shared((32, 64), "float16")
            Bs = T.alloc_shared((64, 64) if transposed else (32, 64), "float16")
            Cl = T.alloc_fragment((32, 64), "float16")
            T.copy(A[bx * 32, by * 64], As)
            T.copy(B[bx * 32, by * 64], Bs)
            for i, j in T.Parallel(32, 64):
                if transposed:
                    Cl[i, j] = As[i, j] + Bs[j, i]
                else:
                    Cl[i, j] = As[i, j] + Bs[i, j]
            T.copy(Cl, C[bx * 32, by * 64])
    return k


def test_a_cast_between_register_tiles_converts_pairs():
    before, after = _before_after(cast_through_registers())
    assert "chunks" not in before
    assert _notes(after) == ["copy -> registers x8 (32 B)",
                             "copy -> registers, chunks: cast pairs (two-lane conversions)",
                             "copy -> registers x8 (16 B)"]


def test_a_cast_without_a_two_lane_conversion_runs_element_by_element():
    before, after = _before_after(cast_through_registers(s="int32", d="float32"))
    assert before == after and "chunks" not in after


def test_an_atomic_add_of_a_register_tile_is_vector_atomics():
    before, after = _before_after(atomic_from_registers("float32"))
    assert "chunks" not in before
    assert _notes(after)[-1] == "loop -> chunks: atomic add x4"
    assert _notes(_before_after(atomic_from_registers("bfloat16"))[1])[-1] == "loop -> chunks: atomic add x2"


def test_float_vector_atomics_need_sm90():
    before, after = _before_after(atomic_from_registers("float32"), "sm_80")
    assert before == after and "chunks" not in after


def test_shared_tiles_read_at_the_loops_own_index_are_hoisted():
    before, after = _before_after(add_shared_tiles())
    assert "chunks" not in before
    assert "loop -> chunks: shared loads hoisted (As, Bs; one vector a chunk)" in _notes(after)


def test_a_shared_tile_read_transposed_is_not_hoisted():
    _, after = _before_after(add_shared_tiles(transposed=True))
    assert "loop -> chunks: shared loads hoisted (As; one vector a chunk)" in _notes(after)


def _source(func, monkeypatch=None, without_pass=False):
    if without_pass:
        monkeypatch.setattr(P, "PASSES", [p for p in P.PASSES if p is not plan_register_chunks])
    return get_backend("cuda").generate(func, {"kind": "cuda", "arch": "sm_90a"})[1]


def test_the_printer_only_prints_the_record(monkeypatch):
    """Without the pass the code generator chooses none of the three forms itself."""
    cases = [(cast_through_registers(), r"__float22half2_rn|__floats2half2_rn"),
             (atomic_from_registers("float32"), r"AtomicAddx4\("),
             (add_shared_tiles(), r"\btl_h\w*\[1\];")]
    with_pass = [_source(f) for f, _ in cases]
    for src, (_, pattern) in zip(with_pass, cases):
        assert re.search(pattern, src), src
    for f, pattern in cases:
        assert not re.search(pattern, _source(f, monkeypatch, without_pass=True))
