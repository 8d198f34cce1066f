"""The language server's analysis of a document, without the protocol: kernels found and
traced (factories with `# tilelang:` values or defaults, module-level prim_funcs, eager
kernels), their buffers and loops with the positions of their hints, and diagnostics at the
user's exact range; kernels are never compiled or run."""
import pathlib
import textwrap

import pytest

from tilelang.lsp.analysis import analyze

PATH = str(pathlib.Path(__file__).resolve().parent / "documents" / "doc_under_test.py")

GEMM = textwrap.dedent('''\
    import tilelang
    import tilelang.language as T


    # tilelang: M=256, N=512
    @tilelang.jit(out_idx=[-1])
    def matmul(M, N, K=128, block_M=128, block_N=128, block_K=32, dtype="float16"):
        @T.prim_func
        def gemm(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), dtype)):
            with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
                A_shared = T.alloc_shared((block_M, block_K), dtype)
                B_shared = T.alloc_shared((block_K, block_N), dtype)
                C_local = T.alloc_fragment((block_M, block_N), "float")
                T.clear(C_local)
                for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=2):
                    T.copy(A[by * block_M, k * block_K], A_shared)
                    T.copy(B[k * block_K, bx * block_N], B_shared)
                    T.gemm(A_shared, B_shared, C_local)
                for i, j in T.Parallel(block_M, block_N):
                    C_local[i, j] = T.max(C_local[i, j], 0)
                T.copy(C_local, C[by * block_M, bx * block_N])
        return gemm
    ''')


def _lines(text):
    return text.splitlines()


def test_factory_buffers_loops_and_hint_positions():
    an = analyze(GEMM, PATH)
    assert an.diagnostics == []
    [k] = an.kernels
    assert (k.name, k.first_line, k.last_line) == ("gemm", 7, 20)
    assert k.params == {"M": "256", "N": "512", "K": "128", "block_M": "128", "block_N": "128", "block_K": "32",
                        "dtype": "'float16'"}
    got = {b.name: (b.kind, b.label()) for b in k.buffers}
    assert got == {"A": ("parameter", "global float16[256, 128]"), "B": ("parameter", "global float16[128, 512]"),
                   "C": ("parameter", "global float16[256, 512]"),
                   "A_shared": ("alloc", "shared float16[128, 32]"), "B_shared": ("alloc", "shared float16[32, 128]"),
                   "C_local": ("alloc", "fragment float32[128, 128]")}
    lines = _lines(GEMM)
    for b in k.buffers:   # the hint sits right after the name (alloc) or the annotation (parameter)
        line, col = b.hint_at
        before = lines[line][:col]
        assert before.endswith(b.name if b.kind == "alloc" else "dtype)"), (b.name, before)
    assert [(lp.kind, lp.label()) for lp in k.loops] == [("pipelined", "4 iterations, 2 stages"),
                                                        ("parallel", "128 × 128")]
    assert lines[k.loops[1].hint_at[0]][:k.loops[1].hint_at[1]].endswith("T.Parallel(block_M, block_N)")


def test_kernels_are_never_compiled(monkeypatch, tmp_path):
    from tilelang.jit.kernel import JITKernel
    built = []
    monkeypatch.setattr(JITKernel, "_build", lambda self: built.append(self) or (None, False))
    init = JITKernel.__init__
    marker = tmp_path / "ran"
    doc = GEMM.replace("# tilelang: M=256, N=512\n", "") + textwrap.dedent(f'''
        kernel = matmul(64, 64)          # compiles at module level: stopped, the kernel still shown
        open({str(marker)!r} + "_after", "w").close()   # the statements after it run

        if __name__ == "__main__":
            open({str(marker)!r}, "w").close()
        ''')
    an = analyze(doc, PATH)
    assert an.diagnostics == [] and built == [] and JITKernel.__init__ is init
    assert not marker.exists() and (tmp_path / "ran_after").exists()
    [k] = an.kernels
    assert k.buffer("A").shape == ["64", "128"]


def test_module_prim_func_and_eager_kernel():
    doc = textwrap.dedent('''\
        import tilelang
        import tilelang.language as T

        @T.prim_func
        def add(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32")):
            with T.Kernel(1, threads=64) as bx:
                for i in T.Parallel(64):
                    B[i] = A[i] + 1.0

        # tilelang: M=32, N=16
        @tilelang.jit
        def scale(X, s: float = 2.0):
            M, N = T.const("M N")
            X: T.Tensor((M, N), "float16")
            Y = T.empty((M, N), "float16")
            with T.Kernel(1, threads=128) as bx:
                t = T.alloc_fragment((M, N), "float16")
                T.copy(X, t)
                T.copy(t, Y)
            return Y
        ''')
    an = analyze(doc, PATH)
    assert an.diagnostics == []
    assert [k.name for k in an.kernels] == ["add", "scale"]
    add, scale = an.kernels
    assert [(lp.label(), lp.hint_at[0]) for lp in add.loops] == [("64", 6)]
    got = {b.name: (b.kind, b.label(), b.hint_at[0] if b.hint_at else None) for b in scale.buffers}
    assert got["X"] == ("parameter", "global float16[32, 16]", 13)
    assert got["Y"] == ("output", "global float16[32, 16]", 14)
    assert got["t"] == ("alloc", "fragment float16[32, 16]", 16)


def test_eager_kernel_without_sizes_says_which():
    doc = textwrap.dedent('''\
        import tilelang
        import tilelang.language as T

        @tilelang.jit
        def copy(X):
            M, N = T.const("M, N")
            X: T.Tensor((M, N), "float16")
            Y = T.empty((M, N), "float16")
            with T.Kernel(1, threads=128) as bx:
                T.copy(X, Y)
            return Y
        ''')
    an = analyze(doc, PATH)
    [d] = an.diagnostics
    assert (d.severity, d.code) == ("information", "MissingParameters") and "no value for M, N" in d.message
    an = analyze("# tilelang: M=64, N=32\n" + doc, PATH)
    assert an.diagnostics == [] and an.kernels[0].buffer("Y").label() == "global float16[64, 32]"


def _one(an, severity="error"):
    ds = [d for d in an.diagnostics if d.severity == severity]
    assert len(ds) == 1, an.diagnostics
    return ds[0]


def _range_text(text, r):
    assert r.line == r.end_line
    return _lines(text)[r.line][r.col:r.end_col]


@pytest.mark.parametrize("old, new, code, message, at", [
    ("T.copy(A[by * block_M, k * block_K], A_shared)", "T.copy(A, A_shared)", "ShapeMismatchError",
     "T.copy shapes do not match", "T.copy(A, A_shared)"),
    ("T.clear(C_local)", "T.clear(C_locl)", "UnknownNameError", "C_locl", "C_locl"),
    ("T.clear(C_local)", "del bx", "UnsupportedConstructError", "`del` is not supported", "del bx"),
    ("T.clear(C_local)", "T.clear(C_local[0, 0, 0])", "IndexArityError", "has 2 dimension(s) but is indexed with 3",
     "C_local[0, 0, 0]"),
    ("B_shared = T.alloc_shared((block_K, block_N), dtype)", "B_shared = T.alloc_shared((block_K, block_N), 'int8')",
     "DTypeMismatchError", "T.gemm operands have different dtypes", "T.gemm(A_shared, B_shared, C_local)"),
    ('"float")', '"flaot")', "UnknownDTypeError", "did you mean 'float'",
     'T.alloc_fragment((block_M, block_N), "flaot")'),
])
def test_compiler_errors_at_their_exact_range(old, new, code, message, at):
    doc = GEMM.replace(old, new)
    an = analyze(doc, PATH)
    assert an.kernels == []
    d = _one(an)
    assert d.code == code and message in d.message
    assert _range_text(doc, d.range) == at


def test_syntax_error():
    doc = GEMM.replace("T.clear(C_local)", "T.clear(C_local")
    an = analyze(doc, PATH)
    d = _one(an)
    assert d.code == "SyntaxError" and an.kernels == []


def test_module_level_failure_is_one_warning_and_no_cascade():
    doc = GEMM.replace("import tilelang\n", "import tilelang\nimport not_a_module_anywhere as nm\n") + \
        "\nx = nm.thing()\n"
    an = analyze(doc, PATH)
    d = _one(an, "warning")
    assert d.code == "ModuleNotFoundError" and d.range.line == 1    # `x = nm.thing()` is not reported again
    assert [k.name for k in an.kernels] == ["gemm"]                  # the rest of the document still runs


def test_missing_parameters_and_bad_comment():
    doc = GEMM.replace("# tilelang: M=256, N=512", "# tilelang: M=256, N=")
    an = analyze(doc, PATH)
    bad = _one(an)
    assert bad.code == "ParameterComment" and bad.range.line == 4
    info = _one(an, "information")
    assert info.code == "MissingParameters" and "no value for M, N" in info.message
    assert _range_text(doc, info.range) == "matmul"
    assert an.kernels == []


def test_document_that_runs_forever_is_stopped_at_its_line():
    doc = "import tilelang\n\nn = 0\nwhile True:\n    n += 1\n"
    an = analyze(doc, PATH, time_limit=0.3)
    d = _one(an)
    assert d.code == "AnalysisTimeout" and d.range.line in (3, 4)


def test_columns_are_characters():
    """Ranges count characters (the server converts them to the client's encoding)."""
    doc = GEMM.replace("T.clear(C_local)", 'note = "é🙂"; T.clear(C_locl)')
    d = _one(analyze(doc, PATH))
    assert _range_text(doc, d.range) == "C_locl"


def test_imports_do_not_count_against_the_time_limit(tmp_path):
    """A module interrupted half-imported (torch takes seconds to import on a loaded machine)
    would break every later analysis in the process: imports get extra time."""
    (tmp_path / "slow_import_for_lsp_test.py").write_text("import time\ntime.sleep(0.6)\nVALUE = 3\n")
    doc = "import slow_import_for_lsp_test as m\nx = m.VALUE\nwhile x:\n    pass\n"
    an = analyze(doc, str(tmp_path / "doc.py"), time_limit=0.3)
    [d] = an.diagnostics
    assert d.code == "AnalysisTimeout" and d.range.line in (2, 3)   # the loop, not the import
