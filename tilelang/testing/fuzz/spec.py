"""Program descriptions: frozen dataclasses that say everything about one random tile
program (its family, sizes, dtypes, the expression it computes and the seed of its
input data). `render` turns one into kernel source, `reference` into the numpy result,
`minimize` into smaller ones; `repr(program)` is valid Python that `parse` reads back."""
from __future__ import annotations

from dataclasses import dataclass, fields

FLOATS = ("float32", "float16", "bfloat16")
DTYPES = FLOATS + ("int32",)
THREADS = (32, 64, 128, 256)
REDUCE_KINDS = ("sum", "max", "min", "abssum", "absmax")


class InvalidProgram(ValueError):
    """A description that breaks a rule of its family (the minimizer drops such candidates)."""


# ------------------------------------------------------------------ expressions
# An expression computes one element from the inputs at the same (row, column);
# every node has one dtype, binary operands share it (the generator inserts casts).

@dataclass(frozen=True)
class Leaf:
    index: int                       # input tensor `X{index}` at the current element


@dataclass(frozen=True)
class Param:
    pass                             # the scalar parameter `alpha: T.float32`


@dataclass(frozen=True)
class Const:
    value: float
    dtype: str


@dataclass(frozen=True)
class Cast:
    dtype: str
    arg: object


@dataclass(frozen=True)
class Unary:
    op: str                          # neg, abs, exp
    arg: object


@dataclass(frozen=True)
class Binary:
    op: str                          # add, sub, mul, max, min, floordiv, mod (int, by a Const)
    lhs: object
    rhs: object


@dataclass(frozen=True)
class Select:
    """T.if_then_else(a <cmp> b, then, other); a and b are exact (leaves, constants)."""
    cmp: str
    a: object
    b: object
    then: object
    other: object


EXPR_TYPES = (Leaf, Param, Const, Cast, Unary, Binary, Select)


def expr_dtype(e, inputs) -> str:
    if isinstance(e, Leaf):
        return inputs[e.index]
    if isinstance(e, Param):
        return "float32"
    if isinstance(e, (Const, Cast)):
        return e.dtype
    if isinstance(e, Unary):
        return expr_dtype(e.arg, inputs)
    if isinstance(e, Binary):
        return expr_dtype(e.lhs, inputs)
    if isinstance(e, Select):
        return expr_dtype(e.then, inputs)
    raise InvalidProgram(f"not an expression: {e!r}")


def children(e):
    if isinstance(e, (Cast, Unary)):
        return (e.arg,)
    if isinstance(e, Binary):
        return (e.lhs, e.rhs)
    if isinstance(e, Select):
        return (e.a, e.b, e.then, e.other)
    return ()


def expr_size(e) -> int:
    return 1 + sum(expr_size(c) for c in children(e))


def leaves(e):
    if isinstance(e, Leaf):
        yield e.index
    for c in children(e):
        yield from leaves(c)


def check_expr(e, inputs):
    """Raise InvalidProgram unless `e` is well typed over `inputs`."""
    if isinstance(e, Leaf):
        if not 0 <= e.index < len(inputs):
            raise InvalidProgram(f"leaf X{e.index} of {len(inputs)} inputs")
        return
    for c in children(e):
        check_expr(c, inputs)
    dt = expr_dtype(e, inputs)
    if dt not in DTYPES:
        raise InvalidProgram(f"dtype {dt}")
    if isinstance(e, Cast) and e.dtype == "int32" and expr_dtype(e.arg, inputs) in FLOATS \
            and not isinstance(e.arg, Leaf):
        raise InvalidProgram("float -> int casts take an exact value (a leaf)")
    if isinstance(e, Unary) and e.op == "exp" and dt == "int32":
        raise InvalidProgram("exp of an integer")
    if isinstance(e, Binary):
        if expr_dtype(e.rhs, inputs) != dt:
            raise InvalidProgram(f"{e.op} of {dt} and {expr_dtype(e.rhs, inputs)}")
        if e.op in ("floordiv", "mod") and not (dt == "int32" and isinstance(e.rhs, Const) and e.rhs.value > 0):
            raise InvalidProgram(f"{e.op} needs an int32 lhs and a positive constant")
    if isinstance(e, Select):
        if expr_dtype(e.other, inputs) != dt:
            raise InvalidProgram("select branches differ in dtype")
        if expr_dtype(e.a, inputs) != expr_dtype(e.b, inputs):
            raise InvalidProgram("select compares different dtypes")
        if not all(isinstance(x, (Leaf, Const)) for x in (e.a, e.b)):
            raise InvalidProgram("select compares exact values only")


# --------------------------------------------------------------------- programs

@dataclass(frozen=True)
class Elementwise:
    """Y = expr(X0, X1, ...) over (M, N) in (bm, bn) tiles of a T.Parallel loop; the
    ragged edge is guarded by `if`, by `T.if_then_else` into a padded Y, or by staging
    the tiles through shared/fragment buffers with T.copy (predicated)."""
    seed: int
    M: int
    N: int
    bm: int
    bn: int
    threads: int
    inputs: tuple                   # dtypes of X0, X1, ...
    out_dtype: str
    expr: object
    guard: str = "if"               # if | if_then_else | copy
    scopes: tuple = ()              # guard == copy: shared | fragment per input
    copy_form: str = "start"        # start | slice
    dyn_M: tuple = ()               # call-time sizes of a T.dynamic M (empty: static M)


@dataclass(frozen=True)
class CopyChain:
    """global (bm, bn) tile -> X1 (scope1, dtype1) -> window X1[r0:r0+h, c0:c0+w] ->
    X2 (scope2, dtype2) -> the same window of Y (dtype out); the rest of Y keeps its
    initial values."""
    seed: int
    M: int
    N: int
    bm: int
    bn: int
    threads: int
    src_dtype: str
    scope1: str
    dtype1: str
    scope2: str
    dtype2: str
    out_dtype: str
    r0: int
    c0: int
    h: int
    w: int
    form_in: str = "start"          # start | slice
    form_out: str = "start"
    dyn_M: tuple = ()


@dataclass(frozen=True)
class ReduceOp:
    kind: str
    dim: int
    clear: bool


@dataclass(frozen=True)
class Reduce:
    """Each (R, C) tile of A (zero-padded at the ragged edge) is copied into a shared or
    fragment buffer and reduced along `dim` by each op into a fragment that starts from
    the matching slice of I{k}; the result goes to O{k}."""
    seed: int
    M: int
    N: int
    R: int
    C: int
    threads: int
    dtype: str
    scope: str
    ops: tuple
    dyn_M: tuple = ()


@dataclass(frozen=True)
class Gemm:
    """C = epilogue(op(A) @ op(B)) with a (bm, bn) fragment accumulator over a K loop of
    bk steps (T.Pipelined with num_stages, or T.serial)."""
    seed: int
    M: int
    N: int
    K: int
    bm: int
    bn: int
    bk: int
    threads: int
    trans_A: bool
    trans_B: bool
    in_dtype: str
    accum_dtype: str
    out_dtype: str
    num_stages: int = 2
    loop: str = "pipelined"         # pipelined | serial
    epilogue: str = "none"          # none | relu | scale
    via_shared: bool = False        # C_f -> C_s -> C
    dyn_M: tuple = ()
    reduce: str = ""                # a reduction kind: R[bx, rows] = reduce(C_f, dim=1) after the epilogue
    a_frag: bool = False            # A_s -> A_f (fragment) as the gemm's A operand
    policy: str = "Square"          # T.GemmWarpPolicy


@dataclass(frozen=True)
class GemmChain:
    """The attention pattern without the softmax: for each bm-row block of Q (M x D), over the
    key tiles of bn rows of K and V (N x D): S = Q K^T (float32, cleared per tile), S *= scale,
    P = S cast to the input dtype (a fragment, as FlashAttention's P, or a shared tile),
    O += P V; O (float32 accumulator) -> out_dtype. Rows past N read 0 (nothing to mask)."""
    seed: int
    M: int
    N: int
    D: int
    bm: int
    bn: int
    threads: int
    in_dtype: str
    out_dtype: str
    scale: float = 0.125
    num_stages: int = 1
    loop: str = "pipelined"         # pipelined | serial
    p_scope: str = "fragment"       # fragment | shared
    policy: str = "FullRow"         # T.GemmWarpPolicy of both gemms


@dataclass(frozen=True)
class TileChain:
    """The softmax pattern on one (bm, bn) tile: X (scope) <- A tile; W = pre(X) in a
    fragment of `work` dtype; r = reduce(W, dim); Z = W <combine> r broadcast back; Z -> Y
    (converted by T.copy), r -> R."""
    seed: int
    M: int
    N: int
    bm: int
    bn: int
    threads: int
    dtype: str
    scope: str
    work: str
    pre: object                     # an expression over Leaf(0) (the tile element)
    kind: str
    dim: int
    combine: str                    # add | sub | mul | max | min
    out_dtype: str


@dataclass(frozen=True)
class LoopReduce:
    """Row reduction with a pipelined copy-only loop: for each (bm, bk) tile of a block's
    rows, acc = acc <acc_op> pre(tile) (loads past N read 0, so pre(0) counts); then R =
    reduce(acc, dim=1)."""
    seed: int
    M: int
    N: int
    bm: int
    bk: int
    threads: int
    dtype: str
    scope: str
    pre: object                     # an expression over Leaf(0), of dtype acc_dtype
    acc_dtype: str
    acc_op: str                     # add | max
    kind: str
    num_stages: int = 2
    loop: str = "pipelined"
    dyn_M: tuple = ()


@dataclass(frozen=True)
class Branch:
    """Y = then if <cond> else other, the condition decided at run time: on an input's
    value per element (`elem`), on the element's indices against the scalar `s`
    (`index`), on a flag tensor per block (`flag`) or on `s` per block (`scalar`)."""
    seed: int
    M: int
    N: int
    bm: int
    bn: int
    threads: int
    inputs: tuple
    out_dtype: str
    cond: str                       # elem | index | flag | scalar
    cmp: str
    cond_input: int
    threshold: float
    s: int
    alpha: float
    then: object
    other: object


@dataclass(frozen=True)
class Round:
    """One exchange between threads: `perm`: v = s[p(tx)] op s[q(tx)]; sync; s[tx] = v;
    `tree`: a halving tree reduction with op into s[0] (a barrier after each level)."""
    kind: str                       # perm | tree
    op: str                         # add | sub | max | min
    p: tuple = ("id", 0)            # index map: (id|shift|rev|xor, k)
    q: tuple = ("id", 0)


@dataclass(frozen=True)
class Threads:
    """Explicit thread indexing: tx = T.get_thread_binding(); s[tx] = A[bx, tx] into
    shared memory, rounds of barrier-separated exchanges, B[bx, tx] = s[final(tx)]."""
    seed: int
    blocks: int
    threads: int
    dtype: str
    rounds: tuple
    final: tuple = ("id", 0)


@dataclass(frozen=True)
class AtomicScalar:
    """blocks x per atomic adds (or max, min) of A[bx, i] (or 1) into
    O[(a*bx + b*i + c) % slots]."""
    seed: int
    blocks: int
    per: int
    threads: int
    dtype: str
    slots: int
    a: int
    b: int
    c: int
    loop: str = "serial"            # serial | parallel
    value: str = "elem"             # elem | one
    op: str = "add"                 # add | max | min


@dataclass(frozen=True)
class AtomicTile:
    """split-K style: each of `splits` blocks per tile adds its (bm, bn) tile of A[z]
    (staged in a shared or fragment buffer) into O with one tile atomic_add."""
    seed: int
    M: int
    N: int
    bm: int
    bn: int
    splits: int
    threads: int
    dtype: str
    scope: str
    form: str = "start"             # start | slice


@dataclass(frozen=True)
class Staging:
    """Per-thread code staging A through shared memory in rounds (the dequantizing GEMMs' tile,
    a warp-specialized producer's copies): in round r thread tx writes the `lanes` elements of S
    at offsets f = (r * threads + tx) * lanes + v (`split`: S flat, or f // width, f % width over
    rows of `width`), A's element plus, with `exchange`, what thread perm(tx) wrote in round
    r - 1 (read just before); with `bins`, a histogram of (f * a + c) % bins counted into H with
    per-thread atomics; then B = S and O = H read back by block-level copies."""
    seed: int
    blocks: int
    threads: int
    dtype: str                      # float32 | int32
    rounds: int
    lanes: int
    split: str = "flat"             # flat | rowcol
    width: int = 64
    vectorized: bool = False
    exchange: tuple = ()            # an index map over the threads, or () for none
    bins: int = 0
    a: int = 1
    c: int = 0

    @property
    def total(self):
        return self.rounds * self.threads * self.lanes


FAMILIES = {c.__name__: c for c in (Elementwise, CopyChain, Reduce, Gemm, Branch, Threads, AtomicScalar,
                                    AtomicTile, TileChain, LoopReduce, GemmChain, Staging)}


def family(p) -> str:
    return type(p).__name__


def parse(text: str):
    """The description that `repr(description)` printed."""
    names = {c.__name__: c for c in EXPR_TYPES + (ReduceOp, Round) + tuple(FAMILIES.values())}
    return eval(text, {"__builtins__": {}}, names)  # noqa: S307 - our own repr


def size(p) -> int:
    """A rough measure of a description's size (the minimizer makes it smaller)."""
    total = 0
    for f in fields(p):
        v = getattr(p, f.name)
        if f.name == "seed":
            continue
        if isinstance(v, bool):
            total += int(v)
        elif isinstance(v, int):
            total += max(0, v).bit_length()
        elif isinstance(v, tuple):
            total += len(v) * 4
        elif isinstance(v, EXPR_TYPES):
            total += 4 * expr_size(v)
        elif isinstance(v, str):
            total += 0
    return total


# ------------------------------------------------------------------ signatures

def ceildiv(a: int, b: int) -> int:
    return -(-a // b)


def signature(p):
    """The kernel's parameters in order: (name, shape, dtype, role) with role `in`,
    `out` (initialised by the caller, compared afterwards) or `scalar` (shape None). A
    dimension spelled "M" is the T.dynamic one."""
    f = family(p)
    Md = "M" if getattr(p, "dyn_M", ()) else p.M if hasattr(p, "M") else None
    if f == "Elementwise":
        out_shape = (ceildiv(p.M, p.bm) * p.bm, ceildiv(p.N, p.bn) * p.bn) if p.guard == "if_then_else" else (Md, p.N)
        return [(f"X{k}", (Md, p.N), dt, "in") for k, dt in enumerate(p.inputs)] + \
            [("Y", out_shape, p.out_dtype, "out")]
    if f == "CopyChain":
        return [("X", (Md, p.N), p.src_dtype, "in"), ("Y", (Md, p.N), p.out_dtype, "out")]
    if f == "Reduce":
        sig = [("A", (Md, p.N), p.dtype, "in")]
        for k, op in enumerate(p.ops):
            shape = (ceildiv(p.N, p.C), Md) if op.dim % 2 == 1 else (Md, p.N)
            sig.append((f"I{k}", shape, p.dtype, "in"))
        for k, op in enumerate(p.ops):
            shape = (ceildiv(p.N, p.C), Md) if op.dim % 2 == 1 else (Md, p.N)
            sig.append((f"O{k}", shape, p.dtype, "out"))
        return sig
    if f == "Gemm":
        a = (p.K, Md) if p.trans_A else (Md, p.K)
        b = (p.N, p.K) if p.trans_B else (p.K, p.N)
        sig = [("A", a, p.in_dtype, "in"), ("B", b, p.in_dtype, "in"), ("C", (Md, p.N), p.out_dtype, "out")]
        if p.reduce:
            sig.append(("R", (ceildiv(p.N, p.bn), Md), p.accum_dtype, "out"))
        return sig
    if f == "GemmChain":
        return [("Q", (p.M, p.D), p.in_dtype, "in"), ("K", (p.N, p.D), p.in_dtype, "in"),
                ("V", (p.N, p.D), p.in_dtype, "in"), ("O", (p.M, p.D), p.out_dtype, "out")]
    if f == "TileChain":
        r = (ceildiv(p.N, p.bn), p.M) if p.dim % 2 == 1 else (ceildiv(p.M, p.bm), p.N)
        return [("A", (p.M, p.N), p.dtype, "in"), ("Y", (p.M, p.N), p.out_dtype, "out"), ("R", r, p.work, "out")]
    if f == "LoopReduce":
        return [("A", (Md, p.N), p.dtype, "in"), ("R", (Md,), p.acc_dtype, "out")]
    if f == "Branch":
        return [(f"X{k}", (p.M, p.N), dt, "in") for k, dt in enumerate(p.inputs)] + [
            ("F", (BRANCH_FLAGS,), "int32", "in"), ("s", None, "int32", "scalar"),
            ("alpha", None, "float32", "scalar"), ("Y", (p.M, p.N), p.out_dtype, "out")]
    if f == "Threads":
        return [("A", (p.blocks, p.threads), p.dtype, "in"), ("B", (p.blocks, p.threads), p.dtype, "out")]
    if f == "AtomicScalar":
        return [("A", (p.blocks, p.per), p.dtype, "in"), ("O", (p.slots,), p.dtype, "out")]
    if f == "AtomicTile":
        return [("A", (p.splits, p.M, p.N), p.dtype, "in"), ("O", (p.M, p.N), p.dtype, "out")]
    if f == "Staging":
        sig = [("A", (p.blocks, p.total), p.dtype, "in"), ("B", (p.blocks, p.total), p.dtype, "out")]
        return sig + ([("O", (p.blocks, p.bins), "int32", "out")] if p.bins else [])
    raise InvalidProgram(f"unknown family {f}")


BRANCH_FLAGS = 3          # length of the Branch family's flag tensor F


# ------------------------------------------------------------------ validation

def _require(cond, msg):
    if not cond:
        raise InvalidProgram(msg)


def _pow2(x, lo, hi):
    return lo <= x <= hi and x & (x - 1) == 0


def _index_map_ok(m, n):
    kind, k = m
    return (kind in ("id", "rev") and k == 0) or (kind in ("shift", "xor") and 0 < k < n)


def validate(p):
    """Raise InvalidProgram unless `p` follows its family's rules (a valid TileLang
    program whose reference is well defined)."""
    f = family(p)
    _require(f in FAMILIES, f"unknown family {f}")
    if hasattr(p, "dyn_M"):
        _require(all(m >= 1 for m in p.dyn_M), "dynamic sizes are positive")
    if hasattr(p, "threads") and f not in ("Threads", "Staging"):
        _require(p.threads in THREADS, f"threads={p.threads}")
    if f in ("Elementwise", "Branch"):
        _require(p.M >= 1 and p.N >= 1 and _pow2(p.bm, 1, 256) and _pow2(p.bn, 1, 256), "sizes")
        _require(1 <= len(p.inputs) <= 4 and all(d in DTYPES for d in p.inputs), "inputs")
        _require(p.out_dtype in DTYPES, "out dtype")
    if f == "Elementwise":
        check_expr(p.expr, p.inputs)
        _require(not (p.out_dtype == "int32" and expr_dtype(p.expr, p.inputs) != "int32"),
                 "an int32 output takes an int32 expression")
        _require(p.guard in ("if", "if_then_else", "copy"), "guard")
        _require(p.copy_form in ("start", "slice"), "copy form")
        _require(p.guard != "copy" or (len(p.scopes) == len(p.inputs)
                                       and all(s in ("shared", "fragment") for s in p.scopes)), "scopes")
        _require(p.guard != "if_then_else" or not p.dyn_M, "T.if_then_else into a padded Y is static")
        _require(set(leaves(p.expr)) == set(range(len(p.inputs))), "every input is used")
    elif f == "CopyChain":
        _require(p.M >= 1 and p.N >= 1 and _pow2(p.bm, 1, 256) and _pow2(p.bn, 1, 256), "sizes")
        _require(0 <= p.r0 and p.h >= 1 and p.r0 + p.h <= p.bm, "row window")
        _require(0 <= p.c0 and p.w >= 1 and p.c0 + p.w <= p.bn, "column window")
        dts = (p.src_dtype, p.dtype1, p.dtype2, p.out_dtype)
        _require(all(d in FLOATS for d in dts) or all(d == "int32" for d in dts), "dtype chain")
        _require(p.scope1 in ("shared", "fragment") and p.scope2 in ("shared", "fragment"), "scopes")
        _require(p.form_in in ("start", "slice") and p.form_out in ("start", "slice"), "forms")
    elif f == "Reduce":
        _require(p.M >= 1 and p.N >= 1 and _pow2(p.R, 1, 256) and _pow2(p.C, 1, 256), "sizes")
        _require(p.dtype in DTYPES and p.scope in ("shared", "fragment"), "dtype/scope")
        _require(1 <= len(p.ops) <= 4, "ops")
        for op in p.ops:
            _require(op.kind in REDUCE_KINDS and op.dim in (0, 1, -1), f"op {op}")
    elif f == "Gemm":
        _require(all(x >= 16 and x % 16 == 0 for x in (p.M, p.N, p.K)), "M, N, K multiples of 16")
        _require(p.bm in (16, 32, 64, 128) and p.bn in (16, 32, 64, 128) and p.bk in (16, 32, 64), "blocks")
        _require(p.threads in (128, 256), "threads")
        _require(p.in_dtype in ("float16", "bfloat16"), "inputs")
        _require(p.accum_dtype == "float32" or (p.accum_dtype == "float16" and p.in_dtype == "float16"), "accum")
        _require(p.out_dtype in FLOATS, "output")
        _require(0 <= p.num_stages <= 3 and p.loop in ("pipelined", "serial"), "loop")
        _require(p.epilogue in ("none", "relu", "scale"), "epilogue")
        _require(all(m % 16 == 0 for m in p.dyn_M), "dynamic M multiple of 16")
        _require(p.reduce in ("",) + REDUCE_KINDS, "reduce")
        _require(p.policy in ("Square", "FullRow", "FullCol"), "policy")
    elif f == "GemmChain":
        _require(p.M >= 1 and p.N >= 1 and p.D in (32, 64, 128), "sizes")
        _require(p.bm in (32, 64, 128) and p.bn in (32, 64, 128) and p.threads in (128, 256), "blocks")
        _require(p.in_dtype in ("float16", "bfloat16") and p.out_dtype in ("float32", p.in_dtype), "dtypes")
        _require(p.scale in (1.0, 0.5, 0.25, 0.125, 0.0625), "a power-of-two scale (exact)")
        _require(0 <= p.num_stages <= 3 and p.loop in ("pipelined", "serial"), "loop")
        _require(p.p_scope in ("fragment", "shared") and p.policy in ("Square", "FullRow"), "P scope / policy")
    elif f == "TileChain":
        _require(p.M >= 1 and p.N >= 1 and _pow2(p.bm, 1, 256) and _pow2(p.bn, 1, 256), "sizes")
        _require(p.dtype in DTYPES and p.work in DTYPES and p.out_dtype in DTYPES, "dtypes")
        _require(p.scope in ("shared", "fragment") and p.kind in REDUCE_KINDS and p.dim in (0, 1, -1), "op")
        _require(p.combine in ("add", "sub", "mul", "max", "min"), "combine")
        check_expr(p.pre, (p.dtype,))
        _require(expr_dtype(p.pre, (p.dtype,)) == p.work, "pre computes the work dtype")
        _require((p.work == "int32") == (p.out_dtype == "int32"), "int outputs from int work")
    elif f == "LoopReduce":
        _require(p.M >= 1 and p.N >= 1 and _pow2(p.bm, 1, 256) and _pow2(p.bk, 1, 256), "sizes")
        _require(p.dtype in DTYPES and p.acc_dtype in DTYPES and p.scope in ("shared", "fragment"), "dtypes")
        _require(p.acc_op in ("add", "max") and p.kind in REDUCE_KINDS, "ops")
        _require(0 <= p.num_stages <= 3 and p.loop in ("pipelined", "serial"), "loop")
        check_expr(p.pre, (p.dtype,))
        _require(expr_dtype(p.pre, (p.dtype,)) == p.acc_dtype, "pre computes the accumulator dtype")
    elif f == "Branch":
        check_expr(p.then, p.inputs)
        check_expr(p.other, p.inputs)
        _require(p.cond in ("elem", "index", "flag", "scalar") and p.cmp in ("<", ">", "<=", ">="), "cond")
        _require(0 <= p.cond_input < len(p.inputs), "cond input")
        _require(p.out_dtype != "int32" or expr_dtype(p.then, p.inputs) == expr_dtype(p.other, p.inputs) == "int32",
                 "an int32 output takes int32 expressions")
    elif f == "Threads":
        _require(p.threads in THREADS and 1 <= p.blocks <= 64, "launch")
        _require(p.dtype in ("float32", "int32"), "dtype")
        _require(len(p.rounds) <= 6 and _index_map_ok(p.final, p.threads), "rounds")
        for r in p.rounds:
            _require(r.kind in ("perm", "tree") and r.op in ("add", "sub", "max", "min"), f"round {r}")
            _require(_index_map_ok(r.p, p.threads) and _index_map_ok(r.q, p.threads), f"round {r}")
    elif f == "AtomicScalar":
        _require(p.blocks >= 1 and p.per >= 1 and p.slots >= 1 and p.dtype in ("float32", "int32"), "sizes")
        _require(p.a >= 0 and p.b >= 0 and p.c >= 0 and p.loop in ("serial", "parallel")
                 and p.value in ("elem", "one") and p.op in ("add", "max", "min"), "indexing")
    elif f == "AtomicTile":
        _require(p.M >= 1 and p.N >= 1 and _pow2(p.bm, 1, 128) and _pow2(p.bn, 1, 128) and p.splits >= 1, "sizes")
        _require(p.dtype in ("float32", "int32") and p.scope in ("shared", "fragment")
                 and p.form in ("start", "slice"), "dtype/scope/form")
    elif f == "Staging":
        _require(p.threads in THREADS and 1 <= p.blocks <= 16 and 1 <= p.rounds <= 4, "launch")
        _require(p.dtype in ("float32", "int32") and p.lanes in (1, 2, 4, 8), "dtype / lanes")
        _require(p.split in ("flat", "rowcol") and _pow2(p.width, 1, 1024) and p.total % p.width == 0, "split")
        _require(p.exchange == () or _index_map_ok(p.exchange, p.threads), "exchange")
        _require(0 <= p.bins <= 64 and p.a >= 0 and p.c >= 0, "histogram")
    return p
