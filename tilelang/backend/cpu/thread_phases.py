"""Kernels whose threads talk through shared memory, barriers or thread all-reduces, on
the CPU: the block's code is cut into phases at every point where threads may wait for
each other, and each phase runs as a loop over the threads (the way MCUDA and POCL run
CUDA/OpenCL work-groups on a CPU core).

- Cut points: explicit barriers, thread all-reduces, and between statements of a
  thread-uniform sequence that touch block storage (shared buffers, fragments): a cut
  where the GPU has no barrier is one more barrier, which changes nothing for a
  race-free kernel. Sequences are cut only where every thread runs them alike: inside
  `for`/`while` loops and branches whose bounds and conditions do not depend on the
  thread (a `break`/`continue` every thread takes alike stays outside the phases), and
  lets whose values do (pure expressions) are re-evaluated in every phase under them.
- Per-thread storage (`T.alloc_local`, `T.alloc_var`) outlives a phase: it gets one
  copy per thread, indexed by the linear thread index `tl_tid`; a `T.alloc_var` every
  thread sets alike (a loop counter around barriers) gets one copy for the block, its
  stores run once and conditions that read it are uniform (uniform_vars.py).
- Block-level statements (`T.Parallel` loops of tile ops, `T.gemm`) that name no
  thread run once, outside the thread loops, as in kernels without thread indices.
- A thread all-reduce is two phases: every thread stores its contribution, then every
  thread combines its group's (the threads differing only in the reduced indices).

What cannot be cut (a barrier under a thread-dependent branch, warp shuffles, mbarriers)
keeps the typed error of codegen.py."""
from __future__ import annotations

from tilelang.ir import expr as E
from tilelang.ir import stmt as S
from tilelang.ir.errors import LoweringError
from tilelang.ir.visitor import walk

THREAD_PRIVATE_SCOPES = ("local", "local.var")
BLOCK_SCOPES = ("shared", "shared.dyn", "local.fragment")
_UNSUPPORTED_CALLS = ("shfl", "shuffle", "ballot", "activemask", "any_sync", "all_sync", "match_", "mbarrier",
                      "cp_async", "tma", "warp")


def phase_violation(kernel: S.KernelLaunch):
    """None when thread phases can run the kernel, else (reason, node)."""
    found = []

    def f(n):
        if found:
            return
        if isinstance(n, E.Call) and any(w in n.name.lower() for w in _UNSUPPORTED_CALLS):
            found.append((f"it calls `{n.name}`, which exchanges values with other threads without a block barrier", n))
        elif isinstance(n, S.Barrier) and n.is_partial and n.kind != "warp":   # a warp barrier: a full cut
            found.append(("it synchronizes part of the block on a named barrier", n))
        elif isinstance(n, S.DeclBuffer) and getattr(n.buffer, "alias_of", None) is not None and \
                n.buffer.alias_of.scope in THREAD_PRIVATE_SCOPES:
            found.append((f"it views the per-thread buffer `{n.buffer.alias_of.name}` under another name", n))
    walk(kernel.body, f)
    return found[0] if found else None


def _children(st):
    if isinstance(st, S.SeqStmt):
        return st.stmts
    return [c for c in (getattr(st, "body", None), getattr(st, "then_body", None), getattr(st, "else_body", None))
            if isinstance(c, S.Stmt)]


def _escaping_jump(s, depth=0):
    """A `break`/`continue` in `s` that leaves a loop enclosing `s`, or None."""
    if isinstance(s, (S.Break, S.Continue)) and depth == 0:
        return s
    for c in _children(s):
        hit = _escaping_jump(c, depth + isinstance(s, (S.For, S.While)))
        if hit is not None:
            return hit
    return None


def thread_private_buffers(kernel):
    out = []
    walk(kernel.body, lambda n: out.append(n.buffer) if isinstance(n, S.DeclBuffer) and
         n.buffer.scope in THREAD_PRIVATE_SCOPES and getattr(n.buffer, "alias_of", None) is None else None)
    return out


class ThreadPhases:
    """Emits a kernel body as thread phases through the CPU code generator `cg`."""

    def __init__(self, cg, kernel):
        self.cg, self.k = cg, kernel
        self.tvars = {id(v) for v in kernel.thread_vars}
        from tilelang.backend.cpu.uniform_vars import uniform_vars
        private = thread_private_buffers(kernel)
        self.private = {id(b) for b in private}
        # counters every thread sets alike: one copy for the block, stores run once (uniform_vars.py)
        self.uniform = uniform_vars(kernel.body, self.tvars, self.private, {id(b): b for b in private})
        self.private -= self.uniform
        self.dep_vars = set(self.tvars)     # thread vars and lets bound to thread-dependent values
        self.lets = []                      # thread-dependent lets to re-evaluate in each phase
        self.nthreads = 1
        for t in kernel.threads:
            self.nthreads *= int(E.const_int_value(t))
        self.reductions = []
        walk(kernel.body, lambda n: self.reductions.append(n) if isinstance(n, S.ThreadAllReduce) else None)

    # analysis ---------------------------------------------------------------------
    def _scan(self, node):
        """(thread-dependent, touches block storage, has a cut point) for a subtree."""
        from tilelang.ir.tile_ops import Gemm
        dep = block = cut = False
        private, dep_vars, uniform = self.private, self.dep_vars, self.uniform

        def f(n):
            nonlocal dep, block, cut
            if isinstance(n, E.Var) and id(n) in dep_vars:
                dep = True
            elif isinstance(n, (E.BufferLoad, S.BufferStore)):
                if id(n.buffer) in private:
                    dep = True
                elif n.buffer.scope in BLOCK_SCOPES or (isinstance(n, S.BufferStore) and id(n.buffer) in uniform):
                    block = True
            elif isinstance(n, (S.Barrier, S.ThreadAllReduce)):
                cut = True
            elif isinstance(n, S.DeclBuffer) and id(n.buffer) in private:
                dep = True
            elif isinstance(n, Gemm):
                block = True
        walk(node, f)
        return dep, block, cut

    def _uniform(self, e):
        return not self._scan(e)[0]

    @staticmethod
    def _pure(e):
        loads = []
        walk(e, lambda n: loads.append(n) if isinstance(n, E.BufferLoad) else None)
        return not loads

    def _block_level(self, s):
        """Work the block does once whichever thread runs it: T.Parallel loops (tile
        ops lowered to them), T.gemm, and stores to uniform variables."""
        from tilelang.ir.tile_ops import Gemm
        if isinstance(s, S.SeqStmt):
            return all(self._block_level(x) for x in s.stmts)
        return isinstance(s, Gemm) or (isinstance(s, S.For) and s.kind == S.PARALLEL) or \
            (isinstance(s, S.BufferStore) and id(s.buffer) in self.uniform)

    def _cuttable(self, s):
        """A compound statement every thread runs alike: phases may start inside it."""
        if isinstance(s, S.SeqStmt):
            return True
        if isinstance(s, S.For):
            return all(self._uniform(x) for x in (s.min, s.extent, s.step) if x is not None)
        if isinstance(s, (S.IfThenElse, S.While)):
            return self._uniform(s.cond)
        if isinstance(s, S.LetStmt):
            return self._uniform(s.value) or self._pure(s.value)
        return False

    # emission -----------------------------------------------------------------------
    def emit_body(self, body):
        self._emit(body)

    def _emit(self, s):
        dep, block, cut = self._scan(s)
        if isinstance(s, S.Barrier):
            return None
        if isinstance(s, (S.Break, S.Continue)):   # of a uniform loop around phases
            return self.cg.stmt(s)
        if isinstance(s, S.ThreadAllReduce):
            return self._allreduce(s)
        if not dep and not cut and self._block_level(s):   # a tile op: once for the block
            return self._leaf(s, dep)
        if (cut or block or _escaping_jump(s) is not None) and self._cuttable(s):
            if isinstance(s, S.SeqStmt):
                return self._seq(s.stmts)
            if isinstance(s, S.LetStmt):
                return self._let(s)
            return self._compound(s)
        if cut:
            raise LoweringError("a barrier or thread all-reduce is reached under a condition or loop that depends "
                                "on the thread index; the CPU backend runs a block's threads in phases between "
                                "barriers that every thread reaches", span=s.span or self.k.span,
                                hint="make the loop bounds and branch conditions around the barrier the same for "
                                     "every thread of the block, or compile for a CUDA target")
        return self._leaf(s, dep)

    def _seq(self, stmts):
        """Consecutive statements share a phase while at most one of them touches block
        storage (two could talk to each other); cut points, block-level work and
        compound statements that need cutting inside get their own."""
        group, group_block, group_dep = [], False, False

        def flush():
            nonlocal group, group_block, group_dep
            if group:
                self._leaf(S.seq(group), group_dep)
            group, group_block, group_dep = [], False, False
        for x in stmts:
            dep, block, cut = self._scan(x)
            view = isinstance(x, S.DeclBuffer) and getattr(x.buffer, "alias_of", None) is not None
            jumps = _escaping_jump(x) is not None and self._cuttable(x)   # a uniform exit: outside the phases
            if view or cut or jumps or (not dep and self._block_level(x)) or (block and self._cuttable(x)):
                flush()
                if view:   # declared once, visible to the phases after it
                    self.cg.stmt(x)
                else:
                    self._emit(x)
                continue
            if block and group_block:
                flush()
            group.append(x)
            group_block = group_block or block
            group_dep = group_dep or dep
        flush()

    def _let(self, s):
        if self._uniform(s.value):
            return self.cg.s_LetStmt(s, body=self._emit)
        # thread-dependent and pure: evaluated again at the top of every phase under it
        self.dep_vars.add(id(s.var))
        self.lets.append(s)
        self._emit(s.body)
        self.lets.pop()
        return None

    def _compound(self, s):
        """A uniform loop or branch around phases: the code generator's header at block
        level (a while loop's condition is evaluated there each time), phases inside."""
        getattr(self.cg, "s_" + type(s).__name__)(s, body=self._emit)

    def _leaf(self, s, dep):
        """`s` in one phase: once for the block when it is block-level work naming no
        thread (T.Parallel loops of tile ops, T.gemm), else in a loop over the threads
        (every thread runs it, as on the GPU)."""
        if not dep and (self._block_level(s) or not self._effects_per_thread(s)):
            # work that names no thread is the same in every thread: on the GPU each thread
            # applies it to its own replica (a fragment element outside T.Parallel), here it
            # runs once on the block's copy (128 runs of `acc[0] = a * acc[0] + b` would
            # compound)
            self.cg.stmt(s)
            return
        self._no_block_work_inside(s)
        self._no_jump_out_of(s)
        self._thread_loop(lambda: self.cg.stmt(s))

    @staticmethod
    def _effects_per_thread(s):
        """Whether running `s` once differs from every thread running it alike: atomics and
        other calls with effects (each thread's call counts), and jumps."""
        hit = []

        def f(n):
            if isinstance(n, E.Call) and (n.name.startswith(("atomic_", "tl.")) or n.dtype.name == "handle"):
                hit.append(n)
            elif isinstance(n, (S.Break, S.Continue, S.Evaluate)):
                hit.append(n)
        walk(s, f)
        return bool(hit)

    def _no_jump_out_of(self, s):
        """A `break`/`continue` of a loop outside the phase would leave the loop over
        the threads instead: refuse it (one every thread takes alike is emitted outside)."""
        hit = _escaping_jump(s)
        if hit is not None:
            raise LoweringError("a `break` or `continue` depends on the thread index around code the block's "
                                "threads share (barriers or shared memory); the CPU backend runs those threads "
                                "in phases and cannot leave the loop for some of them", span=hit.span or s.span or
                                self.k.span, hint="make the loop's exit the same for every thread, or compile for a "
                                                  "CUDA target")

    def _no_block_work_inside(self, s):
        """Block-level work (a tile op naming no thread) under thread-dependent control
        would run once per thread here (a T.gemm would accumulate that many times): refuse."""
        from tilelang.ir.tile_ops import Gemm
        bad = []

        def f(n):
            if not bad and (isinstance(n, Gemm) or (isinstance(n, S.For) and n.kind == S.PARALLEL)) and \
                    not self._scan(n)[0]:
                bad.append(n)
        walk(s, f)
        if bad:
            raise LoweringError("a tile operation (T.copy, T.gemm, T.Parallel, ...) runs under a condition that "
                                "depends on the thread index next to code the block's threads share; the CPU "
                                "backend cannot run it once for those threads", span=bad[0].span or s.span or
                                self.k.span, hint="move the tile operation out of the thread-dependent branch, or "
                                                  "compile for a CUDA target")

    def _thread_loop(self, body):
        cg, k = self.cg, self.k
        names = [cg.vname(v) for v in k.thread_vars]
        exts = [int(E.const_int_value(t)) for t in k.threads]
        for n, ext in reversed(list(zip(names, exts))):
            cg.emit(f"for (int32_t {n} = 0; {n} < {ext}; ++{n}) {{")
            cg.ind += 1
        tid, stride = [], 1
        for n, ext in zip(names, exts):
            tid.append(f"(int64_t){n} * {stride}" if stride != 1 else f"(int64_t){n}")
            stride *= ext
        cg.emit(f"const int64_t tl_tid = {' + '.join(tid)};")
        cg.emit("(void)tl_tid;")
        for let in self.lets:
            cg.emit(f"const {self.cg.ctype(let.var.dtype)} {cg.vname(let.var)} = {cg.expr(let.value)};")
        prev = cg.cur_lane
        cg.cur_lane = names[0]
        body()
        cg.cur_lane = prev
        for _ in names:
            cg.ind -= 1
            cg.emit("}")

    def _allreduce(self, r):
        """Phase 1: each thread's contribution into the scratch row; phase 2: each
        thread combines the contributions of its group into its `dst`."""
        cg, k = self.cg, self.k
        n = self.reductions.index(r)
        scratch = f"tl_red{n}"
        t = self.cg.ctype(r.value.dtype)
        ident = cg.expr(E.cast(r.identity, r.value.dtype))
        self._thread_loop(lambda: cg.emit(f"{scratch}[tl_tid] = ({cg.expr(r.cond)}) ? ({t})({cg.expr(r.value)}) "
                                          f": ({t})({ident});"))
        reduced = {id(v) for v in r.thread_vars}
        names = [cg.vname(v) for v in k.thread_vars]
        exts = [int(E.const_int_value(x)) for x in k.threads]

        def combine():
            cg.emit(f"{t} tl_acc = ({t})({ident});")
            inner = []
            for v, nm, ext in zip(k.thread_vars, names, exts):
                if id(v) in reduced:
                    cg.emit(f"for (int32_t {nm}_r = 0; {nm}_r < {ext}; ++{nm}_r) {{")
                    cg.ind += 1
                    inner.append(f"{nm}_r")
                else:
                    inner.append(nm)
            idx, stride = [], 1
            for nm, ext in zip(inner, exts):
                idx.append(f"(int64_t){nm} * {stride}" if stride != 1 else f"(int64_t){nm}")
                stride *= ext
            cg.emit(f"const {t} {cg.vname(r.lhs)} = tl_acc;")
            cg.emit(f"const {t} {cg.vname(r.rhs)} = {scratch}[{' + '.join(idx)}];")
            cg.emit(f"tl_acc = ({t})({cg.expr(r.combine)});")
            for _ in reduced:
                cg.ind -= 1
                cg.emit("}")
            dst = r.dst
            cg.emit(f"{cg.bname(dst.buffer)}[{cg.offset(dst.buffer, dst.indices)}] = "
                    f"({self.cg.ctype(dst.buffer.dtype)})tl_acc;")
        self._thread_loop(combine)

    def scratch_decls(self):
        """The all-reduce scratch rows, one value per thread (block prologue)."""
        return [f"{self.cg.ctype(r.value.dtype)} tl_red{i}[{self.nthreads}];" for i, r in enumerate(self.reductions)]
