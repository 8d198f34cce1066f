"""backend/c/printer.py: the C expression printer both backends derive from. The shared
forms print the same in every dialect; the spellings a backend overrides differ."""
import pytest

from tilelang.ir import expr as E
from tilelang.ir.buffer import Buffer
from tilelang.ir.dtypes import DataType
from tilelang.ir.errors import LoweringError
from tilelang.backend.c.names import CNames
from tilelang.backend.c.printer import CExprPrinter
from tilelang.backend.cpu.expr import CpuExprPrinter, cpu_names
from tilelang.backend.cuda.emit.expr import ExprPrinter as CudaExprPrinter
from tilelang.backend.cuda.emit.kernel import Names as CudaNames

i32, i8, i64, f32, f16 = (DataType(n) for n in ("int32", "int8", "int64", "float32", "float16"))


class Plain(CExprPrinter):
    """The smallest backend: C99 spellings, to test what the base prints by itself."""
    target_name = target_phrase = "plain C"

    def ctype(self, dt):
        return {"int32": "int", "int8": "signed char", "int64": "long long", "float32": "float",
                "bool": "bool"}[dt.name]

    def float_literal(self, v, dt):
        return repr(v) + "f"

    def cast(self, src, dst, s):
        return f"(({self.ctype(dst)})({s}))"

    def floor_div_mod(self, op, e, a, b):
        return f"floor_{'div' if op == '//' else 'mod'}({a}, {b})"


def _access(load):
    return f"{load.buffer.name}[{', '.join(str(getattr(i, 'value', i)) for i in load.indices)}]"


def _printers(*vars_):
    """(plain, cpu, cuda) printers with `vars_` named in each."""
    out = []
    for cls, names in ((Plain, CNames()), (CpuExprPrinter, cpu_names()), (CudaExprPrinter, CudaNames())):
        for v in vars_:
            names.new(v, v.name)
        out.append(cls(names, _access))
    return out


def test_shared_forms_print_the_same_in_every_dialect():
    x, y = E.Var("x"), E.Var("y")
    buf = Buffer("A", (4,), "float32")
    exprs = [
        (E.BinOp("+", x, y), "(x + y)"),
        (E.BinOp("<", x, E.IntImm(3)), "(x < 3)"),
        (E.Not(E.BinOp("==", x, y)), "(!(x == y))"),
        (E.Select(E.BinOp(">", x, E.IntImm(0)), x, E.IntImm(-2 ** 31)), "((x > 0) ? x : (-2147483647 - 1))"),
        (E.IntImm(1, "bool"), "true"),
        (E.StringImm('say "hi"\\'), '"say \\"hi\\"\\\\"'),
        (E.BufferLoad(buf, [E.IntImm(2)]), "A[2]"),
        (E.Call(E.ACCESS_PTR, [E.BufferLoad(buf, [E.IntImm(1)])], "handle"), "(&A[1])"),
        (E.Call("my_extern_fn", [x, E.IntImm(7)], "int32"), "my_extern_fn(x, 7)"),
        (E.Call("tl.dp4a", [x, y, E.IntImm(0)], "int32"), "tl::dp4a(x, y, 0)"),
        (5, "5"), (True, "1"),
    ]
    for e, want in exprs:
        got = [p(e) for p in _printers(x, y)]
        assert got == [want] * 3, (e, got)


def test_narrow_integers_wrap_to_their_width_in_every_dialect():
    a, b = E.Var("a", i8), E.Var("b", i8)
    plain, cpu, cuda = _printers(a, b)
    e = E.BinOp("*", a, b)
    assert plain(e) == "((signed char)(a * b))"
    assert cpu(e) == "((int8_t)(a * b))"
    assert cuda(e) == "((signed char)(a * b))"
    # division wraps too on the CPU (its narrow_wrap_ops), plain C keeps the base's set
    d = E.BinOp("/", a, b)
    assert plain(d) == "(a / b)" and cpu(d) == "((int8_t)(a / b))"


def test_each_dialect_spells_its_own_literals_casts_and_math():
    x = E.Var("x", f32)
    plain, cpu, cuda = _printers(x)
    assert [p(E.IntImm(5, i64)) for p in (plain, cpu, cuda)] == ["((long long)5)", "(int64_t)5LL", "5LL"]
    c = E.Cast(i32, x)
    assert (plain(c), cpu(c), cuda(c)) == ("((int)(x))", "tl::cast<int32_t, float>(x)", "((int)(x))")
    h = E.Cast(f16, x)
    assert (cpu(h), cuda(h)) == ("tl::cast<tl::half_t, float>(x)", "((half)(x))")
    m = E.BinOp("max", x, E.FloatImm(0.5))
    assert (plain(m), cpu(m), cuda(m)) == ("tl::max(x, 0.5f)", "tl::max<float>(x, 0.5f)", "tl::max(x, 0.5f)")
    ex = E.Call("exp", [x], "float32")
    assert (plain(ex), cpu(ex), cuda(ex)) == ("exp(x)", "tl::exp<float>(x)", "expf(x)")
    fd = E.BinOp("//", E.Var("n"), E.IntImm(8))
    n = fd.a
    plain, cpu, cuda = _printers(n)
    assert plain(fd) == "floor_div(n, 8)"
    assert cuda(fd) == "((n) >> 3)"   # a power of two: an arithmetic shift
    assert cpu(fd) == "(n / 8)"   # a non-negative index: C's division is the floor
    neg = E.BinOp("//", E.BinOp("-", n, E.IntImm(100)), E.IntImm(8))
    assert cpu(neg) == "tl::floordiv<int32_t>((n - 100), 8)"
    assert cuda(neg) == "(((n - 100)) >> 3)"


def test_cpu_names_a_variable_where_it_is_first_printed_cuda_requires_it_bound():
    v = E.Var("late")
    cpu = CpuExprPrinter(cpu_names(), _access)
    assert cpu(E.BinOp("+", v, v)) == "(late + late)"
    cuda = CudaExprPrinter(CudaNames(), _access)
    with pytest.raises(NotImplementedError, match="CUDA codegen: variable `late` is not bound here"):
        cuda(v)
    names = CudaNames()
    names.new(v, "late")
    cuda = CudaExprPrinter(names, _access)
    with names.bound(v, "(late + 1)"):
        assert cuda(E.BinOp("*", v, E.IntImm(3))) == "((late + 1) * 3)"
    assert cuda(v) == "late"


def test_unsupported_expressions_name_the_backend():
    class Odd(E.PrimExpr):
        pass
    odd = Odd.__new__(Odd)
    plain, cpu, cuda = _printers()
    with pytest.raises(NotImplementedError, match="plain C codegen: unsupported expression Odd"):
        plain(odd)
    with pytest.raises(LoweringError, match="CPU codegen: unsupported expression Odd"):
        cpu(odd)
    with pytest.raises(NotImplementedError, match="CUDA codegen: unsupported expression Odd"):
        cuda(odd)


def test_rounded_casts_are_rejected_with_the_target_named():
    x = E.Var("x", f32)
    call = E.Call("tl.cast_rounded", [x, E.StringImm("rz"), E.IntImm(0)], "float16")
    plain, cpu, cuda = _printers(x)
    for p, where in ((plain, "plain C"), (cpu, "the CPU"), (cuda, "CUDA")):
        with pytest.raises(Exception, match=f"not lowered for {where}"):
            p(call)


def test_vector_shuffles_share_one_form_with_each_dialects_lane_types():
    a, b = E.Var("a", f16), E.Var("b", f16)
    plain, cpu, cuda = _printers(a, b)
    pair = E.Shuffle([a, b], [0, 1])
    assert cpu(pair) == "tl::vec<tl::half_t, 2>(a, b)"
    assert cuda(pair) == "tl::vec<half, 2>(a, b)"
    v = E.Var("v", DataType("float16x2"))
    plain, cpu, cuda = _printers(v)
    lane = E.Shuffle([v], [1])
    assert cpu(lane) == "tl::half_t((v).v[1])"
    assert cuda(lane) == "half_t((v).v[1])"   # the published kernels' spelling of one fp16 lane
