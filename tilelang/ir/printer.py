"""A printer whose output reads like the kernel the user wrote (TileLang syntax)."""
from __future__ import annotations

import math

from tilelang.ir import expr as E
from tilelang.ir import stmt as S
from tilelang.ir import tile_ops as TO
from tilelang.ir.buffer import Buffer, BufferRegion
from tilelang.ir.pipeline_spec import PIPELINE, pipeline_spec

_PREC = {"||": 1, "&&": 2, "|": 3, "^": 4, "&": 5, "==": 6, "!=": 6, "<": 7, "<=": 7, ">": 7,
         ">=": 7, "<<": 8, ">>": 8, "+": 9, "-": 9, "*": 10, "/": 10, "//": 10, "%": 10}
_PYOP = {"&&": "and", "||": "or"}
# cp.async groups (ir/mbarrier.py), as the T functions that make them (language/sync.py)
_T_NAMES = {"tl.cp_async_commit": "ptx_commit_group", "tl.cp_async_wait": "ptx_wait_group"}


class Namer:
    """Stable, unique names for variables and buffers (by identity)."""

    def __init__(self):
        self.names = {}
        self.used = {}

    def __call__(self, obj, base):
        key = id(obj)
        if key not in self.names:
            n = self.used.get(base, 0)
            self.used[base] = n + 1
            self.names[key] = base if n == 0 else f"{base}_{n}"
        return self.names[key]


class Printer:
    def __init__(self, namer=None):
        self.namer = namer or Namer()
        self.lines = []

    # expressions -------------------------------------------------------------
    def var(self, v):
        return self.namer(v, v.name)

    def buf(self, b):
        return self.namer(b, b.name)

    def expr(self, e, prec=0):
        if isinstance(e, (int, float, bool)):
            return repr(e)
        if isinstance(e, Buffer):
            return self.buf(e)
        if isinstance(e, BufferRegion):
            return self.region(e)
        if isinstance(e, E.Var):
            return self.var(e)
        if isinstance(e, E.IntImm):
            if e.dtype.is_bool:
                return "True" if e.value else "False"
            if e.dtype.name in ("int32",):
                return str(e.value)
            return f'T.{e.dtype.name}({e.value})'
        if isinstance(e, E.FloatImm):
            v = e.value
            s = "T.infinity" if math.isinf(v) else repr(v)
            if math.isinf(v):
                s = f'{"-" if v < 0 else ""}T.infinity("{e.dtype}")'
                return s
            if math.isnan(v):
                return f'T.{e.dtype.name}(float("nan"))'
            return s if e.dtype.name == "float32" else f"T.{e.dtype.name}({s})"
        if isinstance(e, E.StringImm):
            return repr(e.value)
        if isinstance(e, E.BinOp):
            if e.op in ("min", "max"):
                return f"T.{e.op}({self.expr(e.a)}, {self.expr(e.b)})"
            p = _PREC[e.op]
            op = _PYOP.get(e.op, e.op)
            s = f"{self.expr(e.a, p)} {op} {self.expr(e.b, p + 1)}"
            return f"({s})" if p < prec else s
        if isinstance(e, E.Not):
            return f"not {self.expr(e.a, 11)}"
        if isinstance(e, E.Cast):
            return f'T.Cast("{e.dtype}", {self.expr(e.value)})'
        if isinstance(e, E.Select):
            return f"T.if_then_else({self.expr(e.cond)}, {self.expr(e.t)}, {self.expr(e.f)})"
        if isinstance(e, E.Call):
            return self.call(e)
        if isinstance(e, E.BufferLoad):
            return f"{self.buf(e.buffer)}[{', '.join(self.expr(i) for i in e.indices)}]"
        return repr(e)

    def call(self, e):
        """`T.<name>(args)` for the T namespace's intrinsics; the forms that carry a
        dtype or a string keep it (the structural hash is this text)."""
        args = ", ".join(self.expr(a) for a in e.args)
        if e.name == "reinterpret":
            return f'T.reinterpret({args}, "{e.dtype}")'
        if e.name == E.ACCESS_PTR:
            mask = {1: "r", 2: "w", 3: "rw"}.get(E.access_mask(e), "rw")
            return f'T.access_ptr({self.expr(e.args[0])}, "{mask}")'
        if e.name == E.SHUFFLE:   # lanes of vectors: the dtype follows from the operands
            vs, ix = E.shuffle_parts(e)
            return f"T.Shuffle([{', '.join(self.expr(v) for v in vs)}], [{', '.join(str(i.value) for i in ix)}])"
        if e.name in _T_NAMES:   # intrinsics kept under their `tl.` name, printed as the T call that makes them
            return f"T.{_T_NAMES[e.name]}({args})"
        import tilelang.language as T
        if "." in e.name or not hasattr(T, e.name):  # an extern function
            return f'T.call_extern("{e.dtype}", {e.name!r}{", " + args if args else ""})'
        return f"T.{e.name}({args})"

    def region(self, r: BufferRegion):
        if all(_is_zero(st) and _same(e, d) for (st, e), d in zip(r.ranges, r.buffer.shape)):
            return self.buf(r.buffer)
        parts = []
        for s, ext in r.ranges:
            if isinstance(ext, E.IntImm) and ext.value == 1:
                parts.append(self.expr(s))
            else:
                parts.append(f"{self.expr(s)}:{self.expr(E.BinOp('+', s, ext) if not _is_zero(s) else ext, 9)}")
        return f"{self.buf(r.buffer)}[{', '.join(parts)}]"

    def shape(self, shape):
        inner = ", ".join(self.expr(d) for d in shape)
        return f"({inner},)" if len(shape) == 1 else f"({inner})"

    # statements ------------------------------------------------------------------
    def emit(self, line, ind):
        self.lines.append("    " * ind + line)

    def stmt(self, s, ind):
        if s is None:
            return
        if isinstance(s, S.SeqStmt):
            if not s.stmts:
                self.emit("pass", ind)
            for x in s.stmts:
                self.stmt(x, ind)
        elif isinstance(s, S.Evaluate):
            self.emit(f"T.evaluate({self.expr(s.value)})", ind)
        elif isinstance(s, S.BufferStore):
            self.emit(f"{self.buf(s.buffer)}[{', '.join(self.expr(i) for i in s.indices)}] = "
                      f"{self.expr(s.value)}", ind)
        elif isinstance(s, S.DeclBuffer) and getattr(s.buffer, "data_ptr", None) is not None:
            b = s.buffer
            self.emit(f'{self.buf(b)} = T.make_tensor({self.expr(b.data_ptr)}, {self.shape(b.shape)}, "{b.dtype}")',
                      ind)
        elif isinstance(s, S.DeclBuffer) and getattr(s.buffer, "alias_of", None) is not None:
            b = s.buffer
            self.emit(f'{self.buf(b)} = T.view({self.buf(b.alias_of)}, {self.shape(b.shape)}, "{b.dtype}")', ind)
        elif isinstance(s, S.DeclBuffer):
            b = s.buffer
            fn = {"shared": "alloc_shared", "local.fragment": "alloc_fragment", "local": "alloc_local",
                  "local.var": "alloc_var", "global": "alloc_global"}.get(b.scope, "alloc_buffer")
            if b.scope == "local.var":
                init = f", init={self.expr(b.init)}" if b.init is not None else ""
                self.emit(f'{self.buf(b)} = T.alloc_var("{b.dtype}"{init})', ind)
            elif b.scope == "shared.barrier" and getattr(b, "arrive_counts", None):
                # mbarriers: their arrive counts, and whether other blocks of a cluster use them
                fn = "alloc_cluster_barrier" if getattr(b, "cluster_barrier", False) else "alloc_barrier"
                self.emit(f"{self.buf(b)} = T.{fn}({list(b.arrive_counts)})", ind)
            else:
                self.emit(f'{self.buf(b)} = T.{fn}({self.shape(b.shape)}, "{b.dtype}")', ind)
                lay = getattr(b, "layout", None)
                if lay is not None:   # T.annotate_layout may change the generated code: printed, hashed
                    self.emit(f"T.annotate_layout({{{self.buf(b)}: {_layout_digest(lay)!r}}})", ind)
        elif isinstance(s, S.For):
            self.stmt_for(s, ind)
        elif isinstance(s, S.IfThenElse):
            self.emit(f"if {self.expr(s.cond)}:", ind)
            self.body(s.then_body, ind + 1)
            if s.else_body is not None:
                self.emit("else:", ind)
                self.body(s.else_body, ind + 1)
        elif isinstance(s, S.While):
            self.emit(f"while {self.expr(s.cond)}:", ind)
            self.body(s.body, ind + 1)
        elif isinstance(s, S.Break):
            self.emit("break", ind)
        elif isinstance(s, S.Continue):
            self.emit("continue", ind)
        elif isinstance(s, S.LetStmt):
            self.emit(f"{self.var(s.var)} = {self.expr(s.value)}", ind)
            self.stmt(s.body, ind)
        elif isinstance(s, S.KernelLaunch):
            grid = ", ".join(self.expr(g) for g in s.grid)
            thr = s.threads[0] if len(s.threads) == 1 else "[" + ", ".join(map(str, s.threads)) + "]"
            names = ", ".join(self.var(v) for v in s.block_vars)
            names = names if len(s.block_vars) == 1 else f"({names})"
            cl = s.annotations.get("cluster_dims")
            cl = f", cluster_dims={cl!r}" if cl else ""
            self.emit(f"with T.Kernel({grid}, threads={thr}{cl}) as {names}:", ind)
            # launch annotations change the generated code: part of the printed (and hashed) form
            if s.annotations.get("swizzle"):
                panel, order = s.annotations["swizzle"]
                self.emit(f"T.use_swizzle({panel!r}, {order!r})", ind + 1)
            if s.annotations.get("block_remap"):   # rasterize_blocks: each block index from the hardware's
                remap = s.annotations["block_remap"]
                hw = ", ".join(self.var(v) for v in remap.hw_vars)
                self.emit(f"# launch order (T.use_swizzle), hardware indices ({hw}):", ind + 1)
                for v, e in remap.bindings(s.block_vars):
                    if e is not v:
                        self.emit(f"#   {self.var(v)} = {self.expr(e)}", ind + 1)
            self.safe_values(s, ind + 1)
            if s.annotations.get("min_blocks_per_sm"):
                self.emit(f"T.annotate_min_blocks_per_sm({s.annotations['min_blocks_per_sm']!r})", ind + 1)
            plan = s.annotations.get("kernel_plan")
            if plan is not None:   # a backend's plan of the kernel (cuda/plan/plan_kernels.py): comments
                for line in plan.describe(s).splitlines():
                    self.emit(f"# {line}", ind + 1)
            self.body(s.body, ind + 1)
        elif isinstance(s, S.SBlock):
            self.emit(f"with T.sblock({_quoted(s.name)}):", ind)
            for fn, regions in (("reads", s.reads), ("writes", s.writes)):
                if regions:
                    self.emit(f"T.{fn}({', '.join(self.region(r) for r in regions)})", ind + 1)
            self.safe_values(s, ind + 1)
            self.body(s.body, ind + 1)
        elif isinstance(s, S.Assert):
            self.emit(f"T.device_assert({self.expr(s.cond)}, {s.message!r})", ind)
        elif isinstance(s, S.Assume):
            self.emit(f"T.assume({self.expr(s.cond)})", ind)
        elif isinstance(s, S.Print):
            self.emit(f"T.print({self.expr(s.obj)}, msg={s.msg!r})", ind)
        elif isinstance(s, S.Barrier) and s.kind == "warp":
            self.emit(f"T.sync_warp({self.expr(s.mask) if s.mask is not None else ''})", ind)
        elif isinstance(s, S.Barrier):
            args = [a for a in (s.barrier_id, s.arrive_count) if a is not None]
            why = "" if getattr(s, "reason", None) is None else \
                f"  # inserted{', after a fence.proxy.async' if s.fence_async_proxy else ''}" \
                f"{' when ' + self.expr(s.fence_when) if s.fence_async_proxy and getattr(s, 'fence_when', None) is not None else ''}" \
                f": {s.reason}"
            self.emit(f"T.sync_threads({', '.join(self.expr(a) for a in args)}){why}", ind)
        elif isinstance(s, S.StageSlot):   # a software pipeline's ring slot (ir/stmt.py)
            bufs = ", ".join(self.buf(b) for b in s.buffers)
            self.emit(f"with T.stage_slot({bufs}, slot={self.expr(s.slot)}, stages={s.stages}):", ind)
            self.body(s.body, ind + 1)
        elif isinstance(s, S.ProducerWarpgroup):   # a warp-specialized loop's producer (ir/stmt.py)
            self.emit(f"with T.producer_warpgroup(threads={s.lo}):  # then leaves the kernel", ind)
            self.body(s.body, ind + 1)
        elif isinstance(s, S.ThreadAllReduce):
            fn = f"lambda {self.var(s.lhs)}, {self.var(s.rhs)}: {self.expr(s.combine)}"
            self.emit(f"with T.attr(T.comm_reducer({fn}, [{self.expr(s.identity)}]), \"reduce_scope\", 0):", ind)
            threads = ", ".join(self.var(v) for v in s.thread_vars)
            self.emit(f"T.evaluate(T.tvm_thread_allreduce(T.uint32(1), {self.expr(s.value)}, "
                      f"{self.expr(s.cond)}, {self.expr(s.dst)}, {threads}, dtype=\"handle\"))", ind + 1)
        elif isinstance(s, TO.Copy):
            bar = s.annotations.get("tma_barrier")
            if bar is not None:   # T.tma_copy: another lowering (a bulk copy on the barrier)
                form = s.annotations.get("copy_form")   # how a backend issues it (a comment: the text still parses)
                mask = s.annotations.get("cluster_mask", s.annotations.get("multicast_mask"))
                mask = f", cluster_mask={mask:#b}" if mask is not None else ""
                split = s.annotations.get("thread_split")   # its copy nest over the threads (cuda/plan/thread_splits.py)
                note = f"  # -> {form}" + (f"; {split}" if split is not None else "") if form is not None else ""
                self.emit(f"T.tma_copy({self.region(s.src)}, {self.region(s.dst)}, barrier={self.expr(bar)}{mask})"
                          + note, ind)
            else:
                args = "".join(f", {k}={_arg_text(s.annotations[k])}" for k in _COPY_ARG_NAMES
                               if s.annotations.get(k) is not None)
                self.emit(f"T.copy({self.region(s.src)}, {self.region(s.dst)}{args})", ind)
        elif isinstance(s, TO.Fill):
            self.emit(f"T.fill({self.region(s.dst)}, {self.expr(s.value)})", ind)
        elif isinstance(s, TO.Gemm):
            extra = ""
            if s.trans_A:
                extra += ", transpose_A=True"
            if s.trans_B:
                extra += ", transpose_B=True"
            if s.policy != "Square":
                extra += f", policy=T.GemmWarpPolicy.{s.policy}"
            if s.clear_accum is not False:
                extra += f", clear_accum={self.expr(s.clear_accum)}"
            note = "  # issued only: the wait for its group is a T.warpgroup_wait" \
                if s.annotations.get(TO.ISSUE_ONLY) else ""
            name = "T.wgmma_gemm" if s.annotations.get(TO.WGMMA) else "T.gemm"
            self.emit(f"{name}({self.region(s.A)}, {self.region(s.B)}, {self.region(s.C)}{extra}){note}", ind)
        elif isinstance(s, TO.Reduce):
            extra = (", nan_propagate=True" if s.nan_propagate else "") + (f", batch={s.batch}" if s.batch != 1 else "")
            form = s.annotations.get("reduce_form")   # how a backend runs it (a comment: cuda/plan/reduce_forms.py)
            self.emit(f"T.reduce_{s.kind}({self.region(s.src)}, {self.region(s.dst)}, dim={s.dim}, "
                      f"clear={s.clear}{extra})" + (f"  # -> {form}" if form is not None else ""), ind)
        elif isinstance(s, TO.CumSum):
            self.emit(f"T.cum{s.kind}({self.region(s.src)}, {self.region(s.dst)}, dim={s.dim}, "
                      f"reverse={s.reverse})", ind)
        elif isinstance(s, TO.FinalizeReducer):
            dst = f", {self.region(s.dst)}" if s.dst is not None else ""
            batch = f", batch={s.batch}" if s.batch != 1 else ""
            self.emit(f"T.finalize_reducer({self.buf(s.buffer)}{dst}{batch})  # {s.op}", ind)
        elif isinstance(s, TO.ReducerInit):
            init = f", {self.expr(s.init)}" if s.init is not None else ""
            self.emit(f"T.reducer_init({self.buf(s.buffer)}{init})", ind)
        elif isinstance(s, TO.ReducerUpdate):
            self.emit(f"T.reducer_update({self.buf(s.buffer)}[{', '.join(self.expr(i) for i in s.indices)}], "
                      f"{self.expr(s.value)})", ind)
        elif isinstance(s, TO.Atomic):
            mo = f", memory_order={s.memory_order!r}" if s.memory_order else ""
            mo += ", use_tma=True" if s.use_tma else ""
            form = getattr(s, "annotations", {}).get("copy_form")   # how a backend issues it (a comment)
            self.emit(f"T.atomic_{s.kind}({self.expr(s.dst)}, {self.expr(s.value)}{mo})"
                      + (f"  # -> {form}" if form is not None else ""), ind)
        elif hasattr(s, "print_with"):  # ops that print themselves (ir/operand_op.py)
            self.emit(s.print_with(self), ind)
        else:
            self.emit(f"<{type(s).__name__}>", ind)

    def safe_values(self, scope, ind):
        """A block scope's `T.annotate_safe_value`: what out-of-bounds loads read in it
        (changes the generated code: part of the printed, and hashed, form)."""
        from tilelang.ir.safe_values import scope_safe_values
        values = scope_safe_values(scope)
        if values:
            self.emit(f"T.annotate_safe_value({{{', '.join(f'{self.buf(b)}: {v!r}' for b, v in values.items())}}})",
                      ind)

    def body(self, s, ind):
        if s is None or (isinstance(s, S.SeqStmt) and not s.stmts):
            self.emit("pass", ind)
        else:
            self.stmt(s, ind)

    def stmt_for(self, s, ind):
        # re-fold nested parallel loops into one T.Parallel(...)
        if s.kind == S.PARALLEL:
            # a loop not starting at 0 prints its range as (start, stop)
            vars_, exts, cur = [], [], s
            while isinstance(cur, S.For) and cur.kind == S.PARALLEL:
                vars_.append(cur.var)
                if _is_zero(cur.min):
                    exts.append(self.expr(cur.extent))
                else:
                    from tilelang.ir.simplify import simplify
                    exts.append(f"({self.expr(cur.min)}, {self.expr(simplify(E.BinOp('+', cur.min, cur.extent)))})")
                cur = cur.body
            names = ", ".join(self.var(v) for v in vars_)
            self.emit(f"for {names} in T.Parallel({', '.join(exts)}):{_copy_note(s.annotations)}", ind)
            self.body(cur, ind + 1)
            return
        rng = self.expr(s.extent) if _is_zero(s.min) else \
            f"{self.expr(s.min)}, {self.expr(E.BinOp('+', s.min, s.extent))}"
        if s.step is not None:
            rng += f", {self.expr(s.step)}"
        fn = {S.SERIAL: "T.serial", S.UNROLL: "T.unroll", S.VECTORIZED: "T.vectorized",
              S.PIPELINED: "T.Pipelined"}[s.kind]
        extra = ""
        if s.kind == S.PIPELINED:
            kw = {**pipeline_spec(s).kwargs(), **{k: v for k, v in s.annotations.items() if k != PIPELINE}}
            extra = "".join(f", {k}={v!r}" for k, v in kw.items() if v is not None)
        note = _copy_note(s.annotations) if s.kind == S.VECTORIZED else ""   # a backend's vector width
        if s.annotations.get("rolled"):   # a backend keeps the loop rolled (cuda/plan/rolled_loops.py)
            note += f"  # rolled: {s.annotations['rolled']}"
        self.emit(f"for {self.var(s.var)} in {fn}({rng}{extra}):{note}", ind)
        self.body(s.body, ind + 1)

    def func(self, f):
        params = []
        for p in f.params:
            if isinstance(p, Buffer) and p.strides:   # strides change the generated code: printed, hashed
                params.append(f'{self.buf(p)}: T.StridedTensor({self.shape(p.shape)}, {self.shape(p.strides)}, '
                              f'"{p.dtype}")')
            elif isinstance(p, Buffer):
                params.append(f'{self.buf(p)}: T.Tensor({self.shape(p.shape)}, "{p.dtype}")')
            else:
                params.append(f"{self.var(p)}: T.{p.dtype}")
        self.emit("@T.prim_func", 0)
        self.emit(f"def {f.name}({', '.join(params)}):", 0)
        aliased = [self.buf(p) for p in f.params if isinstance(p, Buffer) and getattr(p, "may_alias", False)]
        if aliased:   # changes the generated code (no __restrict__): part of the printed form
            self.emit(f"T.annotate_restrict_buffers({', '.join(aliased)})", 1)
        self.body(f.body, 1)
        return "\n".join(self.lines) + "\n"


def _same(a, b):
    from tilelang.ir.expr import const_int_value
    ca, cb = const_int_value(a), const_int_value(b)
    if ca is not None and cb is not None:
        return ca == cb
    return a is b


def _is_zero(e):
    return isinstance(e, E.IntImm) and e.value == 0


def expr_str(e):
    return Printer().expr(e)


def region_str(r):
    return Printer().region(r)


def stmt_str(s):
    p = Printer()
    p.stmt(s, 0)
    return "\n".join(p.lines)


def func_str(f):
    return Printer().func(f)


class _SpanPrinter(Printer):
    """A printer that also notes which user source line each printed line came from."""

    def __init__(self):
        super().__init__()
        self.spans = {}

    def stmt(self, s, ind):
        first = len(self.lines)
        super().stmt(s, ind)
        span = getattr(s, "span", None)
        if span is not None:   # inner statements claimed their own lines first
            for i in range(first, len(self.lines)):
                self.spans.setdefault(i, span)


def func_str_with_spans(f):
    """(the printed function, {0-based line: Span of the statement it prints}) for the
    lower trace's links back to the user's source."""
    p = _SpanPrinter()
    text = p.func(f)
    if f.span is not None:
        p.spans.setdefault(1, f.span)   # the `def` line
    return text, p.spans


def _layout_digest(layout):
    """A short digest of where a layout puts every element (its type name if it cannot
    be evaluated)."""
    try:
        import hashlib
        import numpy as np
        return "layout " + hashlib.sha1(np.ascontiguousarray(layout.offsets(), dtype=np.int64).tobytes()).hexdigest()[:12]
    except Exception:  # noqa: BLE001 - symbolic shapes, fragments
        return type(layout).__name__


# T.copy arguments that change the generated code: printed (and hashed) with the copy
_COPY_ARG_NAMES = ("disable_tma", "coalesced_width", "eviction_policy", "loop_layout")


def _arg_text(v):
    """A T.copy argument as Python text (a layout: the quoted digest of where it puts
    every element, so that the printed form still parses)."""
    return repr(v) if isinstance(v, (bool, int, str)) else repr(_layout_digest(v))


def _copy_note(ann):
    """`  # T.copy(coalesced_width=8) -> cp.async x8 (16 B)`: the arguments of the T.copy a
    parallel nest was lowered from and the form a backend chose for it (a comment: the
    text still parses)."""
    args, form = ann.get("copy_args"), ann.get("copy_form")
    chunks = ann.get("register_chunks")   # how a register-tile loop's chunks run (cuda/plan/register_chunks.py)
    if not args and form is None:
        return f"  # loop -> {chunks}" if chunks is not None else ""
    subject = getattr(form, "subject", "copy")   # a backend's form of a fill, an element-wise loop ...
    note = "  # T.copy(" + ", ".join(f"{k}={_arg_text(v)}" for k, v in args.items()) + ")" if args else \
        f"  # {subject}"
    staged = ann.get("tl.staged_copy")   # a pipelined converting copy split in two (cuda/plan/cp_async_pipeline.py)
    staged = f", {'loads into' if staged[0] in ('load', 'reload') else 'stores from'} registers" \
        if staged else ""
    chunks = f", {chunks}" if chunks is not None else ""
    split = ann.get("thread_split")   # how a backend shares the nest out over the threads (cuda/plan/thread_splits.py)
    split = f"; {split}" if split is not None else ""
    return note + (f" -> {form}{staged}{chunks}{split}" if form is not None else chunks)


def _quoted(name):
    """A name as a double-quoted Python string (the quotes the rest of the printed IR uses)."""
    import json
    return json.dumps(name)
