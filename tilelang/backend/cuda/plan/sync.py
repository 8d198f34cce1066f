"""Barrier insertion. The block-level program is a sequence of units (a T.Parallel
nest, a tile op, a scalar statement); a `__syncthreads()` goes before a unit when it
touches block-visible memory (shared, global) that a unit since the last barrier
wrote (or writes what one read), unless both ran on the same single thread (scalar
stores run on thread 0). Loop bodies are analysed twice so that accesses carried
from one iteration to the next are seen (once for a loop of one iteration: the chunk loops of
a row kernel whose chunk is the whole row carry nothing).

Global memory between two statements the user wrote per thread (indexed by the thread
index) is the user's to order, as in CUDA and in the published package (which syncs
for shared memory only): a copy loop `B[row, tx] = A[row, tx]` gets no barrier per
iteration. Tile ops and T.Parallel nests, whose elements we hand out to threads, are
still ordered against everything else.

A T.Parallel nest hands each element to the same thread every time it runs (its mapping
depends on the nest only), so where every access of the nest to a buffer indexes it by the
nest's own loop variables, one per dimension (`acc[i, j] += x[i, k * 4 + j]` in a serial
loop over k, the shared-memory fragment of a row statistic), an iteration reads only what
the same thread wrote in the previous one: that buffer needs no barrier between two runs
of the nest (`_private_to_threads`). Per-thread code whose index into a shared buffer names
the thread (analysis/thread_owned.py: `S[(i * 2048 + tx * 8 + v) // 128, ...]`) touches
elements no other thread does: it needs no barrier against its own other iterations. A serial
loop whose iterations touch a shared buffer at different elements (analysis/iteration_disjoint.py:
`is_kv_valid[stage, r * 16 + (tx - 256) // 8]` in a loop over r) carries nothing through it from
one iteration to the next (opt-in: TILELANG_CUDA_ITERATION_DISJOINT=1)."""
from __future__ import annotations

from tilelang.ir import expr as E
from tilelang.ir import stmt as S
from tilelang.ir import tile_ops as TO
from tilelang.backend.cuda.analysis.block_level import body_block
from tilelang.backend.cuda.analysis.facts import accesses
from tilelang.backend.cuda.analysis.thread_owned import owned_buffers
from tilelang.backend.cuda.analysis.iteration_disjoint import disjoint_across_iterations
from tilelang.transform.mark_per_thread import is_per_thread
from tilelang.backend.cuda.ops.reduce import orders_block
from tilelang.ir.mbarrier import every_thread_call
from tilelang.transform.pass_manager import function_pass
from tilelang.backend.cuda.layout import REGISTER_FRAGMENT_KINDS
from tilelang.ir.buffer import storage_root

REGISTER_KINDS = ("local", "var") + REGISTER_FRAGMENT_KINDS
# mbarriers order what the user hands over with them; they are not data the planner tracks
UNTRACKED_KINDS = REGISTER_KINDS + ("mbar",)
HOISTED = " (hoisted out of the loop)"


class SyncPlanner:
    def __init__(self, plan, launch=None):
        self.plan = plan
        # the thread indices' extents, the block indices and the loops being visited: what
        # tells whether per-thread code's index names its thread (analysis/thread_owned.py)
        self.thread_ranges = {id(v): (0, int(n)) for v, n in zip(launch.thread_vars, launch.threads)} \
            if launch is not None else {}
        self.uniform = {id(v) for v in launch.block_vars} if launch is not None else set()
        self.loop_ranges = {}
        self.before = set()   # id(stmt) that needs a barrier before it
        self.reasons = {}     # id(stmt) -> the buffers the barrier orders (printed with it)
        self.buffer_names = {}   # root id -> buffer name
        # byte ranges of shared buffers: two buffers whose lifetimes do not overlap may
        # share storage (plan.py), so an access to one conflicts with the other
        self.ranges = {k: (p.offset, p.offset + p.stage_bytes * p.stages)
                       for k, p in plan.placements.items() if p.kind == "smem"}
        self.global_ids = set()   # root ids of global buffers seen
        # TILELANG_CUDA_COVERED_BARRIERS: cross-warp reductions' barriers count (ops/reduce.py
        # orders_block), and which pipelined loops carry nothing their body leaves unordered
        self.covered = getattr(plan.options, "covered_barriers", True) if plan.options is not None else True
        self.carried_ordered = set()   # id(loop)
        self.disjoint = {}   # id(loop) -> root ids its iterations touch at different elements

    def _visible(self, buf):
        p = self.plan.placements.get(id(buf))
        if p is not None and p.kind == "view":
            return self._visible(buf.alias_of)
        return p is None or p.kind not in UNTRACKED_KINDS

    @staticmethod
    def _root(buf):
        """Views share their base buffer's storage: track them as the base."""
        while getattr(buf, "alias_of", None) is not None:
            buf = buf.alias_of
        return id(buf)

    def unit_accesses(self, stmt, executor):
        reads, writes = accesses(stmt)
        atomic = _atomic_only(stmt) if not isinstance(stmt, TO.TileOp) else {}
        out = set()
        for mode, bufs in (("r", reads), ("w", writes)):
            for b in bufs:
                if self._visible(b):
                    out.add((self._root(b), atomic.get(id(b), mode), executor))
                    self.buffer_names.setdefault(self._root(b), storage_root(b).name)
                    if b.scope == "global":
                        self.global_ids.add(self._root(b))
        return out

    def _same_storage(self, b, b2):
        if b == b2:
            return True
        r, r2 = self.ranges.get(b), self.ranges.get(b2)
        return r is not None and r2 is not None and r[0] < r2[1] and r2[0] < r[1]

    def _conflict(self, acc, pending):
        """The names of the buffers whose accesses in `acc` need a barrier after `pending`
        (a non-empty string), or "" when none does."""
        found = []
        for b, m, ex in sorted(acc, key=lambda a: self.buffer_names.get(a[0], "")):
            for b2, m2, ex2 in pending:
                if m == m2 == "r" or ex == ex2 == "t0":
                    continue
                if m == m2 and m.startswith("atomic") and (ex == ex2 == "tid" or not m.endswith("returned")):
                    continue   # read-modify-writes of one kind: any order is one of theirs
                if ex == ex2 and isinstance(ex, tuple):
                    continue   # the same elements on the same threads (_private_to_threads)
                if ex == ex2 == "tid" and b in self.global_ids:
                    continue   # per-thread code on global memory: ordered by the user
                if self._same_storage(b, b2):
                    names = [self.buffer_names.get(x, "?") for x in (b, b2)]
                    name = names[0] if b == b2 else f"{names[0]} (shares storage with {names[1]})"
                    if name not in found:
                        found.append(name)
        return ", ".join(found)

    def _barrier(self, stmt, why):
        self.before.add(id(stmt))
        self.reasons[id(stmt)] = why

    def unit(self, stmt, acc, pending):
        why = self._conflict(acc, pending) if acc else ""
        if why:
            self._barrier(stmt, why)
            pending = set()
        return pending | acc

    def run(self, body):
        self.visit(body, set())
        return self.before

    def visit(self, st, pending):
        if isinstance(st, S.For):
            lo, ext = E.const_int_value(st.min), E.const_int_value(st.extent)
            saved = self.loop_ranges.get(id(st.var))
            if lo is not None and ext is not None and st.step is None:
                self.loop_ranges[id(st.var)] = (lo, ext)
            try:
                return self._visit(st, pending)
            finally:
                self.loop_ranges.pop(id(st.var), None)
                if saved is not None:
                    self.loop_ranges[id(st.var)] = saved
        return self._visit(st, pending)

    def _visit(self, st, pending):
        plan = self.plan
        if st is None:
            return pending
        if isinstance(st, S.SeqStmt):
            for s in st.stmts:
                pending = self.visit(s, pending)
            return pending
        if isinstance(st, S.Barrier):
            # a named barrier of some threads orders nothing for the others; one of as many
            # threads as run here (`T.sync_threads(3, 256)` under `if tx < 256`) orders them all
            return pending if st.is_partial and not self._whole_range(st) else set()
        if isinstance(st, S.DeclBuffer):
            return pending
        if isinstance(st, S.For) and st.kind == S.PARALLEL:
            private = _private_to_threads(st)
            acc = {(b, m, ("nest", id(st), b) if b in private else ex)
                   for b, m, ex in self.unit_accesses(st, "all")}
            return self.unit(st, acc, pending)
        if isinstance(st, S.For) and id(st) in plan.pipelines and plan.pipelines[id(st)].issue_after_use:
            return self.prefetch_loop(st, plan.pipelines[id(st)])
        if isinstance(st, S.For) and id(st) in plan.pipelines:
            # the codegen puts a barrier before the prologue and at the top of every
            # iteration; the async copies write slots that the rest of the body does not read
            info = plan.pipelines[id(st)]
            ring = {(id(b), "w", "all") for b in info.bufs}
            self.buffer_names.update((id(b), b.name) for b in info.bufs)
            inner = set()
            for s in info.rest:
                inner = self.visit(s, inner)
            if self.covered and self._carries_nothing_unordered(info, inner):
                self.carried_ordered.add(id(st))
            return ring | inner
        if isinstance(st, TO.Reduce) and self.covered and orders_block(plan, st):
            # its own barrier orders what came before; its shared accesses come after it
            return self.unit_accesses(st, "all")
        if isinstance(st, TO.TileOp):
            return self.unit(st, self.unit_accesses(st, "all"), pending)
        if isinstance(st, S.IfThenElse) and id(st) in plan.regions.branches:
            # a warp-specialized branch: its ranges order their own accesses (named
            # barriers of the range) and hand data to each other through the user's
            # mbarriers; what came before is ordered by a barrier of all of its threads
            self.visit(st.then_body, set())
            self.visit(st.else_body, set())
            return self.unit(st, self.unit_accesses(st, "all"), pending)
        # control flow whose body stays at block level (analysis/block_level.py); a T.vectorized
        # loop is one vector access a thread, a unit: a barrier can go before it, never between
        # its lanes (_insert), so the planner must not count on one there (the published
        # hadamard example's exchange loop lost its loop-carried barrier that way)
        uniform_ctrl = isinstance(st, (S.For, S.IfThenElse, S.While, S.LetStmt)) and \
            not (isinstance(st, S.For) and st.kind == S.VECTORIZED) and body_block(plan, st, True)
        if uniform_ctrl:
            head = {S.For: lambda s: S.Evaluate(s.extent), S.IfThenElse: lambda s: S.Evaluate(s.cond),
                    S.While: lambda s: S.Evaluate(s.cond), S.LetStmt: lambda s: S.Evaluate(s.value)}[type(st)](st)
            hacc = self.unit_accesses(head, "all")
            why = self._conflict(hacc, pending) if hacc else ""
            if why:
                self._barrier(st, why)   # barrier before the whole statement
                pending = set()
            pending = pending | hacc
            if isinstance(st, S.IfThenElse):
                return self.visit(st.then_body, pending) | self.visit(st.else_body, pending)
            if isinstance(st, S.For) and E.const_int_value(st.extent) == 1:
                return self.visit(st.body, pending)   # runs once: nothing carried to a next iteration
            if isinstance(st, (S.For, S.While)):
                saved = set(self.before)
                first = self.visit(st.body, pending)
                second = self.visit(st.body, pending | self._carried(st, first) | hacc)
                if pending and self.before - saved:
                    # a barrier that only orders the loop after what came before it runs
                    # once before the loop instead of once per iteration
                    inside, self.before = self.before, set(saved)
                    first = self.visit(st.body, hacc)
                    second = self.visit(st.body, self._carried(st, first) | hacc)
                    if len(self.before - saved) < len(inside - saved):
                        why = sorted({self.reasons[i].removesuffix(HOISTED) for i in inside - saved})
                        self._barrier(st, ", ".join(why) + HOISTED)
                        return hacc | first | second
                    self.before = inside
                return pending | second
            return self.visit(st.body, pending)
        if self.single_thread(st):
            return self.unit(st, self.unit_accesses(st, "t0"), pending)
        if self.thread_dependent(st):
            return self.unit(st, self.per_thread_accesses(st), pending)
        return self.unit(st, self.unit_accesses(st, "all"), pending)

    def _carried(self, loop, acc):
        """`acc`, the accesses one iteration of `loop` leaves unordered, less those of buffers
        that the next iteration touches at other elements (analysis/iteration_disjoint.py)."""
        if not isinstance(loop, S.For) or not getattr(self.plan.options, "iteration_disjoint", False):
            return acc
        if id(loop) not in self.disjoint:
            self.disjoint[id(loop)] = self._iteration_disjoint(loop)
        apart = self.disjoint[id(loop)]
        return {a for a in acc if a[0] not in apart} if apart else acc

    def _iteration_disjoint(self, loop):
        from tilelang.ir.visitor import walk
        if not self.thread_ranges:
            return set()
        bufs = {}
        walk(loop.body, lambda n: bufs.setdefault(self._root(n.buffer), n.buffer)
             if isinstance(n, (E.BufferLoad, S.BufferStore)) and self._visible(n.buffer) else None)
        candidates = {}
        for k, b in bufs.items():
            p = self.plan.placements.get(k)
            if p is None or p.kind != "smem" or p.stages != 1 or getattr(b, "alias_of", None) is not None:
                continue
            if any(k2 != k and self._same_storage(k, k2) for k2 in bufs):
                continue   # storage shared with another buffer of the body: its elements are not b's
            candidates[k] = b
        if not candidates:
            return set()
        threads = dict(self.thread_ranges)
        if self.plan.regions is not None and len(threads) == 1:   # a warp-specialized branch's threads
            r = self.plan.regions.range_of(loop)
            threads = {k: (r.lo, r.size) for k in threads}
        return disjoint_across_iterations(loop, candidates, threads, self.uniform)

    def _whole_range(self, barrier):
        n = E.const_int_value(barrier.arrive_count) if barrier.arrive_count is not None else None
        return barrier.kind != "warp" and n is not None and n == self.plan.threads_of(barrier)

    def per_thread_accesses(self, st):
        """The accesses of per-thread statement `st`: by "tid", but a shared buffer it reaches
        only through an index naming the thread by (the statement, the buffer), which
        conflicts with no other run of the statement (analysis/thread_owned.py)."""
        acc = self.unit_accesses(st, "tid")
        reads, writes = accesses(st)
        candidates = {}
        for b in reads + writes:
            p = self.plan.placements.get(id(b))
            if p is not None and p.kind == "smem" and p.stages == 1 and getattr(b, "alias_of", None) is None:
                candidates[id(b)] = b
        if not candidates or not self.thread_ranges:
            return acc
        threads = dict(self.thread_ranges)
        if self.plan.regions is not None and len(threads) == 1:   # a warp-specialized branch's threads
            r = self.plan.regions.range_of(st)
            threads = {k: (r.lo, r.size) for k in threads}
        owned = owned_buffers(st, candidates, set(threads), {**self.loop_ranges, **threads}, self.uniform)
        return {(b, m, ("owned", id(st), b) if b in owned else ex) for b, m, ex in acc}

    def _carries_nothing_unordered(self, info, last):
        """Whether a second pass over the pipelined body, after `last` (the accesses since
        its last barrier), would want no barrier that the first pass did not place: then
        the barriers inside the body order what one iteration leaves to the next (the ring
        slots aside: their readers and the refills meet at the ring's mbarriers)."""
        saved, reasons = set(self.before), dict(self.reasons)
        pending = set(last)
        for s in info.rest:
            pending = self.visit(s, pending)
        ok = self.before == saved
        self.before, self.reasons = saved, reasons
        return ok

    def prefetch_loop(self, loop, info):
        """A num_stages=1 pipeline (plan/pipeline.py): no barrier at the top of its iterations;
        the body is analysed twice as a loop's, its markers as units. The copies of a group
        write their buffers where they are issued (after the last reader: a barrier orders
        the reads first) and where they have landed (before the first reader: a barrier
        orders the writes first), as one asynchronous writer, which needs no barrier between
        the two. The schedule puts a barrier before the prologue, which issues iteration lo."""
        from tilelang.backend.cuda.plan.pipeline import prefetch_marker
        self.buffer_names.update((id(b), b.name) for b in info.bufs)
        ex = ("async copies", id(loop))
        group_writes = [{(self._root(c_buf), "w", ex) for c_buf in _group_bufs(info, g)}
                        for g in range(len(info.groups))]

        def body(pending):
            for s in info.rest:
                m = prefetch_marker(s)
                pending = self.unit(s, group_writes[m[1]], pending) if m is not None else self.visit(s, pending)
            return pending
        start = set().union(*group_writes)
        first = body(start)
        return body(first | start)

    def single_thread(self, st):
        """A block-level scalar statement that must happen once per block (a store to
        shared/global memory, an atomic, a print): codegen runs it on thread 0."""
        if isinstance(st, S.BufferStore) and not self._visible(st.buffer):
            return False
        if isinstance(st, S.Evaluate) and self._addresses_registers(st):
            return False   # an extern call on the thread's own registers (T.access_ptr)
        if isinstance(st, S.Evaluate) and every_thread_call(st.value):
            return False   # mbarrier arrivals count threads
        return isinstance(st, (S.BufferStore, S.Evaluate, S.Print)) and not self.thread_dependent(st)

    def _addresses_registers(self, st):
        from tilelang.ir.visitor import walk
        from tilelang.ir import expr as E
        found = []

        def f(n):
            ld = E.addressed_load(n)
            if ld is not None and not self._visible(ld.buffer):
                found.append(ld)
        walk(st, f)
        return bool(found)

    def thread_dependent(self, st):
        from tilelang.ir.visitor import walk
        from tilelang.ir import expr as E
        found = []

        def f(n):
            if isinstance(n, E.Var) and id(n) in self.plan.td_vars:
                found.append(n)
            elif isinstance(n, E.BufferLoad) and id(n.buffer) in self.plan.td_bufs:
                found.append(n)
            elif is_per_thread(n):   # named a thread index as written (transform/mark_per_thread.py)
                found.append(n)
        walk(st, f)
        return bool(found)


def _atomic_only(stmt):
    """{id(buffer): mode} of the buffers `stmt` touches only as the target of atomic calls of
    one kind: mode "atomic <name>", "... returned" where a call's old value is used. Two such
    accesses need no barrier between them in per-thread code (the order of read-modify-writes is
    the threads' own), nor between block-level statements whose values are not used."""
    from tilelang.ir.visitor import walk
    statement_calls, kinds, plain, targets = set(), {}, set(), set()

    def f(n):
        if isinstance(n, S.Evaluate) and isinstance(n.value, E.Call):
            statement_calls.add(id(n.value))
        if isinstance(n, E.Call) and n.name.startswith("atomic_") and n.args and isinstance(n.args[0], E.BufferLoad):
            ld = n.args[0]
            targets.add(id(ld))
            kinds.setdefault(id(ld.buffer), set()).add(
                f"atomic {n.name}" + ("" if id(n) in statement_calls else " returned"))
        elif isinstance(n, E.Call) and E.addressed_load(n) is not None:
            plain.add(id(E.addressed_load(n).buffer))
        elif isinstance(n, (E.BufferLoad, S.BufferStore)) and id(n) not in targets:
            plain.add(id(n.buffer))
    walk(stmt, f)
    return {b: next(iter(k)) for b, k in kinds.items() if len(k) == 1 and b not in plain}


def _group_bufs(info, g):
    """The shared buffers the copies of group `g` of a num_stages=1 pipeline fill."""
    ids = {id(c) for c in info.groups[g]}
    return [b for c, b in zip(info.copies, info.bufs) if id(c) in ids]


def _private_to_threads(nest):
    """Root ids of the buffers that every access in the T.Parallel `nest` indexes by the
    nest's loop variables exactly, one per dimension, the same way in every access: each
    element is touched by one iteration, hence by one thread, the same one each time the nest runs
    (the loops' bounds are constants, so the split over the threads is too)."""
    from tilelang.ir.visitor import walk
    from tilelang.ir import expr as E
    loop_vars, st = [], nest
    while isinstance(st, S.For) and st.kind == S.PARALLEL:
        if E.const_int_value(st.min) is None or E.const_int_value(st.extent) is None:
            return set()   # the split over the threads would change with the extents
        loop_vars.append(st.var)
        st = st.body
    ids = [id(v) for v in loop_vars]
    seen, bad = {}, set()

    def f(n):
        if not isinstance(n, (E.BufferLoad, S.BufferStore)):
            return
        key = SyncPlanner._root(n.buffer)
        idx = [i if isinstance(i, E.Var) else None for i in n.indices]
        own = [id(i) if i is not None else None for i in idx]
        if getattr(n.buffer, "alias_of", None) is not None or None in own or len(set(own)) != len(own) or \
                sorted(own) != sorted(ids) or seen.setdefault(key, own) != own:
            bad.add(key)
    walk(nest, f)
    return set(seen) - bad


def is_inserted_barrier(st) -> bool:
    """Whether `st` is a block barrier that `insert_barriers` put into the IR."""
    return isinstance(st, S.Barrier) and getattr(st, "reason", None) is not None


def _insert(st, planner):
    """Put a barrier node before every statement under `st` that the planner chose, in
    place (the plan names the statements around them by identity); returns
    {id(statement): its barrier}."""
    made = {}

    def barrier(s):
        made[id(s)] = S.Barrier("block", reason=planner.reasons[id(s)])
        return made[id(s)]

    def walk_(s):
        if isinstance(s, S.SeqStmt):
            out = []
            for x in s.stmts:
                walk_(x)
                if id(x) in planner.before:
                    out.append(barrier(x))
                out.append(x)
            s.stmts[:] = out
        elif isinstance(s, S.For) and s.kind == S.VECTORIZED:
            return   # one vector access per thread: its lanes are never ordered against each other
        elif isinstance(s, (S.For, S.While, S.LetStmt)):
            s.body = wrap(s.body)
        elif isinstance(s, S.IfThenElse):
            s.then_body = wrap(s.then_body)
            s.else_body = wrap(s.else_body)

    def wrap(body):
        if body is None:
            return None
        walk_(body)
        return S.SeqStmt([barrier(body), body]) if id(body) in planner.before else body
    walk_(st)
    return made


@function_pass("insert_barriers")
def insert_barriers(func, ctx=None):
    """Every `__syncthreads()` the kernel needs, as a barrier node in the IR (printed
    `T.sync_threads()  # inserted: <the buffers it orders>`), where the planner above
    decides; the code generator prints them. A T.Pipelined loop's statements in the plan
    (PipelineInfo.rest) list them too, for the schedules that print the body themselves."""
    import dataclasses
    from tilelang.backend.cuda.plan.plan_kernels import kernel_plan, with_launches, with_plan
    stmts = func.body.stmts if isinstance(func.body, S.SeqStmt) else [func.body]
    out = []
    for launch in stmts:
        plan = kernel_plan(launch) if isinstance(launch, S.KernelLaunch) else None
        if plan is not None:
            planner = SyncPlanner(plan, launch)
            planner.run(launch.body)
            made = _insert(launch.body, planner)
            # the markers of a num_stages=1 pipeline are in its plan only: their barriers too
            made.update((id(s), S.Barrier("block", reason=planner.reasons[id(s)]))
                        for info in plan.pipelines.values() for s in info.rest
                        if id(s) in planner.before and id(s) not in made)
            if made or planner.carried_ordered:
                pipelines = {k: dataclasses.replace(info, rest=[x for s in info.rest for x in
                                                                ([made[id(s)]] if id(s) in made else []) + [s]],
                                                    carried_ordered=k in planner.carried_ordered)
                             for k, info in plan.pipelines.items()}
                launch = with_plan(launch, dataclasses.replace(plan, pipelines=pipelines))
        out.append(launch)
    return with_launches(func, out)
