"""Description -> kernel source: a standalone Python module with `import tilelang.language
as T`, one `@T.prim_func def main(...)` written with literal sizes, and a `__main__`
block that re-runs the check (`python file.py [cpu|cuda]`), so the file is its own repro.
The frontend reads kernel source with `inspect`, so this text is written to a file and
imported (run.load_kernel), never exec'd from a string."""
from __future__ import annotations

from tilelang.testing.fuzz import spec
from tilelang.testing.fuzz.spec import Binary, Cast, Const, Leaf, Param, Select, Unary


class Lines:
    def __init__(self):
        self.out, self.depth = [], 0

    def __call__(self, text):
        self.out.append("    " * self.depth + text)

    def indent(self):
        self.depth += 1

    def dedent(self):
        self.depth -= 1


# ------------------------------------------------------------------ expressions

def const(value, dtype):
    if dtype == "int32":
        return f"T.int32({int(value)})"
    return f"T.{dtype}({float(value)!r})"


_INFIX = {"add": "+", "sub": "-", "mul": "*", "floordiv": "//", "mod": "%"}


def expr(e, load) -> str:
    """Source of expression `e`; load(k) is the source of input k's element."""
    if isinstance(e, Leaf):
        return load(e.index)
    if isinstance(e, Param):
        return "alpha"
    if isinstance(e, Const):
        return const(e.value, e.dtype)
    if isinstance(e, Cast):
        return f'T.cast({expr(e.arg, load)}, "{e.dtype}")'
    if isinstance(e, Unary):
        a = expr(e.arg, load)
        return {"neg": f"(-{a})", "abs": f"T.abs({a})", "exp": f"T.exp({a})"}[e.op]
    if isinstance(e, Binary):
        a, b = expr(e.lhs, load), expr(e.rhs, load)
        if e.op in ("max", "min"):
            return f"T.{e.op}({a}, {b})"
        return f"({a} {_INFIX[e.op]} {b})"
    if isinstance(e, Select):
        a, b, t, o = (expr(x, load) for x in (e.a, e.b, e.then, e.other))
        return f"T.if_then_else({a} {e.cmp} {b}, {t}, {o})"
    raise spec.InvalidProgram(f"not an expression: {e!r}")


def stored_expr(e, inputs, out_dtype, load) -> str:
    src = expr(e, load)
    return src if spec.expr_dtype(e, inputs) == out_dtype else f'T.cast({src}, "{out_dtype}")'


# ------------------------------------------------------------------ modules

def _dim(d):
    return str(d)


def _params(p):
    out = []
    for name, shape, dtype, role in spec.signature(p):
        if shape is None:
            out.append(f"{name}: T.{dtype}")
        else:
            dims = ", ".join(_dim(d) for d in shape) + ("," if len(shape) == 1 else "")
            out.append(f'{name}: T.Tensor(({dims}), "{dtype}")')
    return ", ".join(out)


def _alloc(scope, shape, dtype):
    dims = ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "")
    return f'T.alloc_{scope}(({dims}), "{dtype}")'


def _region(buf, starts, extents, form):
    """`buf[s0, s1]` (start form) or `buf[s0:s0 + e0, s1:s1 + e1]` (slice form)."""
    if form == "start":
        return f"{buf}[{', '.join(starts)}]"
    return f"{buf}[{', '.join(f'{s}:{s} + {e}' for s, e in zip(starts, extents))}]"


def render(p) -> str:
    spec.validate(p)
    L = Lines()
    L(f'"""Fuzz program: {spec.family(p)} (seed {p.seed}), written by tilelang.testing.fuzz.')
    L(f'Check it: python <this file> [cpu|cuda]."""')
    L("import tilelang")
    L("import tilelang.language as T")
    L("")
    if getattr(p, "dyn_M", ()):
        L(f'M = T.{"dynamic" if p.seed % 2 else "symbolic"}("M")')
        L("")
    L("")
    L("@T.prim_func")
    L(f"def main({_params(p)}):")
    L.indent()
    BODIES[spec.family(p)](p, L)
    L.depth = 0
    L("")
    L("")
    L('if __name__ == "__main__":')
    L.indent()
    L("import sys")
    L("from tilelang.testing.fuzz import run, spec")
    L(f'PROGRAM = spec.parse("""{p!r}""")')
    L("sys.exit(run.check_repro(PROGRAM, main, sys.argv[1:]))")
    L.dedent()
    return "\n".join(L.out) + "\n"


def _M(p):
    return "M" if getattr(p, "dyn_M", ()) else str(p.M)


def _grid2(p, L, bm, bn):
    L(f"with T.Kernel(T.ceildiv({p.N}, {bn}), T.ceildiv({_M(p)}, {bm}), threads={p.threads}) as (bx, by):")
    L.indent()


def _k_loop(p, L, extent, step):
    """The loop over K tiles: `T.Pipelined` with the description's stages, or `T.serial`."""
    n = f"T.ceildiv({extent}, {step})"
    L(f"for k in T.Pipelined({n}, num_stages={p.num_stages}):" if p.loop == "pipelined" else f"for k in T.serial({n}):")


def body_elementwise(p, L):
    _grid2(p, L, p.bm, p.bn)
    M, gi, gj = _M(p), f"by * {p.bm} + i", f"bx * {p.bn} + j"
    inb = f"{gi} < {M} and {gj} < {p.N}"
    if p.guard == "copy":
        for k, (dt, sc) in enumerate(zip(p.inputs, p.scopes)):
            L(f"S{k} = {_alloc(sc, (p.bm, p.bn), dt)}")
        L(f"Yf = {_alloc('fragment', (p.bm, p.bn), p.out_dtype)}")
        for k in range(len(p.inputs)):
            L(f"T.copy({_region(f'X{k}', (f'by * {p.bm}', f'bx * {p.bn}'), (p.bm, p.bn), p.copy_form)}, S{k})")
        L(f"for i, j in T.Parallel({p.bm}, {p.bn}):")
        L.indent()
        L(f"Yf[i, j] = {stored_expr(p.expr, p.inputs, p.out_dtype, lambda k: f'S{k}[i, j]')}")
        L.dedent()
        L(f"T.copy(Yf, {_region('Y', (f'by * {p.bm}', f'bx * {p.bn}'), (p.bm, p.bn), p.copy_form)})")
        return
    L(f"for i, j in T.Parallel({p.bm}, {p.bn}):")
    L.indent()
    value = stored_expr(p.expr, p.inputs, p.out_dtype, lambda k: f"X{k}[{gi}, {gj}]")
    if p.guard == "if":
        L(f"if {inb}:")
        L.indent()
        L(f"Y[{gi}, {gj}] = {value}")
        L.dedent()
    else:
        L(f"Y[{gi}, {gj}] = T.if_then_else({inb}, {value}, {const(0, p.out_dtype)})")
    L.dedent()


def body_copy(p, L):
    _grid2(p, L, p.bm, p.bn)
    L(f"X1 = {_alloc(p.scope1, (p.bm, p.bn), p.dtype1)}")
    L(f"X2 = {_alloc(p.scope2, (p.h, p.w), p.dtype2)}")
    L(f"T.copy({_region('X', (f'by * {p.bm}', f'bx * {p.bn}'), (p.bm, p.bn), p.form_in)}, X1)")
    L(f"T.copy(X1[{p.r0}:{p.r0 + p.h}, {p.c0}:{p.c0 + p.w}], X2)")
    L(f"T.copy(X2, {_region('Y', (f'by * {p.bm} + {p.r0}', f'bx * {p.bn} + {p.c0}'), (p.h, p.w), p.form_out)})")


_REDUCE = {"sum": "reduce_sum", "max": "reduce_max", "min": "reduce_min", "abssum": "reduce_abssum",
           "absmax": "reduce_absmax"}


def body_reduce(p, L):
    _grid2(p, L, p.R, p.C)
    L(f"X = {_alloc(p.scope, (p.R, p.C), p.dtype)}")
    L(f"T.copy(A[by * {p.R}, bx * {p.C}], X)")
    for k, op in enumerate(p.ops):
        if op.dim % 2 == 1:
            L(f"Y{k} = {_alloc('fragment', (p.R,), p.dtype)}")
            win = f"[bx, by * {p.R}:(by + 1) * {p.R}]"
        else:
            L(f"Y{k} = {_alloc('fragment', (p.C,), p.dtype)}")
            win = f"[by * {p.R}, bx * {p.C}:(bx + 1) * {p.C}]"
        L(f"T.copy(I{k}{win}, Y{k})")
        L(f"T.{_REDUCE[op.kind]}(X, Y{k}, dim={op.dim}, clear={op.clear})")
        L(f"T.copy(Y{k}, O{k}{win})")


def body_gemm(p, L):
    _grid2(p, L, p.bm, p.bn)
    a_sh = (p.bk, p.bm) if p.trans_A else (p.bm, p.bk)
    b_sh = (p.bn, p.bk) if p.trans_B else (p.bk, p.bn)
    L(f"A_s = {_alloc('shared', a_sh, p.in_dtype)}")
    L(f"B_s = {_alloc('shared', b_sh, p.in_dtype)}")
    L(f"C_f = {_alloc('fragment', (p.bm, p.bn), p.accum_dtype)}")
    if p.a_frag:
        L(f"A_f = {_alloc('fragment', a_sh, p.in_dtype)}")
    L("T.clear(C_f)")
    _k_loop(p, L, p.K, p.bk)
    L.indent()
    L(f"T.copy(A[k * {p.bk}, by * {p.bm}], A_s)" if p.trans_A else f"T.copy(A[by * {p.bm}, k * {p.bk}], A_s)")
    L(f"T.copy(B[bx * {p.bn}, k * {p.bk}], B_s)" if p.trans_B else f"T.copy(B[k * {p.bk}, bx * {p.bn}], B_s)")
    if p.a_frag:
        L("T.copy(A_s, A_f)")
    policy = "" if p.policy == "Square" else f", policy=T.GemmWarpPolicy.{p.policy}"
    L(f"T.gemm({'A_f' if p.a_frag else 'A_s'}, B_s, C_f, transpose_A={p.trans_A}, transpose_B={p.trans_B}{policy})")
    L.dedent()
    if p.epilogue != "none":
        L(f"for i, j in T.Parallel({p.bm}, {p.bn}):")
        L.indent()
        if p.epilogue == "relu":
            L(f"C_f[i, j] = T.max(C_f[i, j], {const(0, p.accum_dtype)})")
        else:
            L(f"C_f[i, j] = C_f[i, j] * {const(0.5, p.accum_dtype)}")
        L.dedent()
    if p.reduce:
        L(f"r = {_alloc('fragment', (p.bm,), p.accum_dtype)}")
        L(f"T.{_REDUCE[p.reduce]}(C_f, r, dim=1)")
        L(f"T.copy(r, R[bx, by * {p.bm}:(by + 1) * {p.bm}])")
    if p.via_shared:
        L(f"C_s = {_alloc('shared', (p.bm, p.bn), p.out_dtype)}")
        L("T.copy(C_f, C_s)")
        L(f"T.copy(C_s, C[by * {p.bm}, bx * {p.bn}])")
    else:
        L(f"T.copy(C_f, C[by * {p.bm}, bx * {p.bn}])")


def branch_cond(p, gi, gj):
    """Source of the Branch family's condition."""
    if p.cond == "elem":
        return f"X{p.cond_input}[{gi}, {gj}] {p.cmp} {const(p.threshold, p.inputs[p.cond_input])}"
    if p.cond == "index":
        return f"{gi} + {gj} {p.cmp} s"
    if p.cond == "flag":
        return f"F[by % {spec.BRANCH_FLAGS}] {p.cmp} 0"
    return f"s {p.cmp} {int(p.threshold)}"


def body_branch(p, L):
    _grid2(p, L, p.bm, p.bn)
    gi, gj = f"by * {p.bm} + i", f"bx * {p.bn} + j"
    inb = f"{gi} < {p.M} and {gj} < {p.N}"

    def store(e):
        return f"Y[{gi}, {gj}] = {stored_expr(e, p.inputs, p.out_dtype, lambda k: f'X{k}[{gi}, {gj}]')}"

    def loop(stmts):
        L(f"for i, j in T.Parallel({p.bm}, {p.bn}):")
        L.indent()
        L(f"if {inb}:")
        L.indent()
        stmts()
        L.dedent()
        L.dedent()

    if p.cond in ("elem", "index"):
        def both():
            L(f"if {branch_cond(p, gi, gj)}:")
            L.indent()
            L(store(p.then))
            L.dedent()
            L("else:")
            L.indent()
            L(store(p.other))
            L.dedent()
        loop(both)
        return
    L(f"if {branch_cond(p, gi, gj)}:")
    L.indent()
    loop(lambda: L(store(p.then)))
    L.dedent()
    L("else:")
    L.indent()
    loop(lambda: L(store(p.other)))
    L.dedent()


def index_map(m, n, tx="tx"):
    kind, k = m
    return {"id": tx, "shift": f"({tx} + {k}) % {n}", "rev": f"{n - 1} - {tx}", "xor": f"{tx} ^ {k}"}[kind]


def _combine(op, a, b):
    return f"T.{op}({a}, {b})" if op in ("max", "min") else f"({a} {_INFIX[op]} {b})"


def body_threads(p, L):
    n = p.threads
    L(f"with T.Kernel({p.blocks}, threads={n}) as bx:")
    L.indent()
    L("tx = T.get_thread_binding()")
    L(f"s = {_alloc('shared', (n,), p.dtype)}")
    L(f'v = T.alloc_var("{p.dtype}")')
    L("s[tx] = A[bx, tx]")
    L("T.sync_threads()")
    for r in p.rounds:
        if r.kind == "perm":
            L(f"v = {_combine(r.op, f's[{index_map(r.p, n)}]', f's[{index_map(r.q, n)}]')}")
            L("T.sync_threads()")
            L("s[tx] = v")
            L("T.sync_threads()")
        else:
            stride = n // 2
            while stride >= 1:
                L(f"if tx < {stride}:")
                L.indent()
                L(f"s[tx] = {_combine(r.op, 's[tx]', f's[tx + {stride}]')}")
                L.dedent()
                L("T.sync_threads()")
                stride //= 2
    L(f"B[bx, tx] = s[{index_map(p.final, n)}]")


def body_staging(p, L):
    n, lanes = p.threads, p.lanes

    def at(f):
        return f"S[{f}]" if p.split == "flat" else f"S[({f}) // {p.width}, ({f}) % {p.width}]"
    L(f"with T.Kernel({p.blocks}, threads={n}) as bx:")
    L.indent()
    L("tx = T.get_thread_binding()")
    L(f"S = {_alloc('shared', (p.total,) if p.split == 'flat' else (p.total // p.width, p.width), p.dtype)}")
    if p.bins:
        L(f"H = {_alloc('shared', (p.bins,), 'int32')}")
        L("T.fill(H, 0)")
    if p.exchange:
        L(f"prev = {_alloc('local', (lanes,), p.dtype)}")
    L(f"for r in T.serial({p.rounds}):")
    L.indent()
    if p.exchange:   # what thread perm(tx) wrote in round r - 1 (0 in round 0)
        L(f"for v in T.serial({lanes}):")
        L.indent()
        src = at(f"(T.max(r - 1, 0) * {n} + {index_map(p.exchange, n)}) * {lanes} + v")
        L(f"prev[v] = T.if_then_else(r > 0, {src}, {const(0, p.dtype)})")
        L.dedent()
    L(f"for v in T.{'vectorized' if p.vectorized else 'serial'}({lanes}):")
    L.indent()
    f = f"(r * {n} + tx) * {lanes} + v"
    L(f"{at(f)} = A[bx, {f}]" + (" + prev[v]" if p.exchange else ""))
    L.dedent()
    if p.bins:
        L(f"for v in T.serial({lanes}):")
        L.indent()
        L(f"T.atomic_add(H[(({f}) * {p.a} + {p.c}) % {p.bins}], 1)")
        L.dedent()
    L.dedent()
    L(f"for i in T.Parallel({p.total}):")
    L.indent()
    L(f"B[bx, i] = {at('i')}")
    L.dedent()
    if p.bins:
        L(f"for i in T.Parallel({p.bins}):")
        L.indent()
        L("O[bx, i] = H[i]")


def body_atomic_scalar(p, L):
    L(f"with T.Kernel({p.blocks}, threads={p.threads}) as bx:")
    L.indent()
    L(f"for i in T.{'serial' if p.loop == 'serial' else 'Parallel'}({p.per}):")
    L.indent()
    value = "A[bx, i]" if p.value == "elem" else const(1, p.dtype)
    L(f"T.atomic_{p.op}(O[(bx * {p.a} + i * {p.b} + {p.c}) % {p.slots}], {value})")


def body_atomic_tile(p, L):
    L(f"with T.Kernel(T.ceildiv({p.N}, {p.bn}), T.ceildiv({p.M}, {p.bm}), {p.splits}, threads={p.threads}) "
      f"as (bx, by, bz):")
    L.indent()
    L(f"X = {_alloc(p.scope, (p.bm, p.bn), p.dtype)}")
    L(f"T.copy(A[bz, by * {p.bm}:(by + 1) * {p.bm}, bx * {p.bn}:(bx + 1) * {p.bn}], X)")
    L(f"T.atomic_add({_region('O', (f'by * {p.bm}', f'bx * {p.bn}'), (p.bm, p.bn), p.form)}, X)")


def body_tile_chain(p, L):
    _grid2(p, L, p.bm, p.bn)
    row = p.dim % 2 == 1
    L(f"X = {_alloc(p.scope, (p.bm, p.bn), p.dtype)}")
    L(f"W = {_alloc('fragment', (p.bm, p.bn), p.work)}")
    L(f"r = {_alloc('fragment', (p.bm,) if row else (p.bn,), p.work)}")
    L(f"T.copy(A[by * {p.bm}, bx * {p.bn}], X)")
    L(f"for i, j in T.Parallel({p.bm}, {p.bn}):")
    L.indent()
    L(f"W[i, j] = {expr(p.pre, lambda k: 'X[i, j]')}")
    L.dedent()
    L(f"T.{_REDUCE[p.kind]}(W, r, dim={p.dim}, clear=True)")
    L(f"for i, j in T.Parallel({p.bm}, {p.bn}):")
    L.indent()
    L(f"W[i, j] = {_combine(p.combine, 'W[i, j]', 'r[i]' if row else 'r[j]')}")
    L.dedent()
    L(f"T.copy(W, Y[by * {p.bm}, bx * {p.bn}])")
    if row:
        L(f"T.copy(r, R[bx, by * {p.bm}:(by + 1) * {p.bm}])")
    else:
        L(f"T.copy(r, R[by, bx * {p.bn}:(bx + 1) * {p.bn}])")


def body_loop_reduce(p, L):
    L(f"with T.Kernel(T.ceildiv({_M(p)}, {p.bm}), threads={p.threads}) as bx:")
    L.indent()
    L(f"S = {_alloc(p.scope, (p.bm, p.bk), p.dtype)}")
    L(f"acc = {_alloc('fragment', (p.bm, p.bk), p.acc_dtype)}")
    L(f"r = {_alloc('fragment', (p.bm,), p.acc_dtype)}")
    L("T.clear(acc)")
    _k_loop(p, L, p.N, p.bk)
    L.indent()
    L(f"T.copy(A[bx * {p.bm}, k * {p.bk}], S)")
    L(f"for i, j in T.Parallel({p.bm}, {p.bk}):")
    L.indent()
    L(f"acc[i, j] = {_combine(p.acc_op, 'acc[i, j]', expr(p.pre, lambda k: 'S[i, j]'))}")
    L.dedent()
    L.dedent()
    L(f"T.{_REDUCE[p.kind]}(acc, r, dim=1)")
    L(f"T.copy(r, R[bx * {p.bm}:(bx + 1) * {p.bm}])")


def body_gemm_chain(p, L):
    L(f"with T.Kernel(T.ceildiv({p.M}, {p.bm}), threads={p.threads}) as bx:")
    L.indent()
    policy = f"policy=T.GemmWarpPolicy.{p.policy}"
    L(f"Q_s = {_alloc('shared', (p.bm, p.D), p.in_dtype)}")
    L(f"K_s = {_alloc('shared', (p.bn, p.D), p.in_dtype)}")
    L(f"V_s = {_alloc('shared', (p.bn, p.D), p.in_dtype)}")
    L(f"S_f = {_alloc('fragment', (p.bm, p.bn), 'float32')}")
    L(f"P = {_alloc(p.p_scope, (p.bm, p.bn), p.in_dtype)}")
    L(f"O_f = {_alloc('fragment', (p.bm, p.D), 'float32')}")
    L(f"T.copy(Q[bx * {p.bm}, 0], Q_s)")
    L("T.clear(O_f)")
    _k_loop(p, L, p.N, p.bn)
    L.indent()
    L(f"T.copy(K[k * {p.bn}, 0], K_s)")
    L("T.clear(S_f)")
    L(f"T.gemm(Q_s, K_s, S_f, transpose_B=True, {policy})")
    L(f"for i, j in T.Parallel({p.bm}, {p.bn}):")
    L.indent()
    L(f"S_f[i, j] = S_f[i, j] * {const(p.scale, 'float32')}")
    L.dedent()
    L("T.copy(S_f, P)")
    L(f"T.copy(V[k * {p.bn}, 0], V_s)")
    L(f"T.gemm(P, V_s, O_f, {policy})")
    L.dedent()
    L(f"T.copy(O_f, O[bx * {p.bm}, 0])")


BODIES = {"Elementwise": body_elementwise, "CopyChain": body_copy, "Reduce": body_reduce, "Gemm": body_gemm,
          "Branch": body_branch, "Threads": body_threads, "AtomicScalar": body_atomic_scalar, "Staging": body_staging,
          "AtomicTile": body_atomic_tile, "TileChain": body_tile_chain, "LoopReduce": body_loop_reduce,
          "GemmChain": body_gemm_chain}
