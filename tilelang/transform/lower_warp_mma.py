"""Warp-level mma ops (`ir/warp_ops.py`) -> loops: their reference semantics, for
backends that run a whole block in one thread (the CPU).

The per-thread register arrays these ops use become block-wide arrays with one row
per thread (`X[thread, slot]`), so every thread's registers exist at once; each op
then moves exactly the elements `layout/mma_tiling.py` assigns to (thread, slot):

- load:  X[t, slot] = tile[element(t, slot)] for every warp, atom, lane and slot;
- mma:   per warp, gather the A, B and C atoms into dense tiles, `T.gemm`, scatter C;
- store: tile[element(t, slot)] = X[t, slot].

`T.clear` / `T.fill` of such an array fills every thread's row. Any other access to
it (user code indexing a thread's registers) needs real threads and is rejected."""
from __future__ import annotations

from tilelang.ir import expr as E
from tilelang.ir import stmt as S
from tilelang.ir import tile_ops as TO
from tilelang.ir import warp_ops as W
from tilelang.ir.buffer import Buffer, BufferRegion
from tilelang.ir.errors import LoweringError
from tilelang.ir.visitor import Mutator, walk
from tilelang.arith.simplify import simplify
from tilelang.transform.pass_manager import function_pass


def _serial(names_exts, body_fn):
    """Nested serial loops; body_fn receives the loop variables."""
    vars_ = [E.Var(n) for n, _ in names_exts]
    body = body_fn(*vars_)
    for v, (_, ext) in reversed(list(zip(vars_, names_exts))):
        body = S.For(v, E.IntImm(0), E.IntImm(ext), S.SERIAL, body)
    return body


def _at(region, rows_cols):
    """Indices into a region's buffer: its start plus (row, col) on the last two dims."""
    idx = list(region.starts)
    idx[-2] = simplify(idx[-2] + rows_cols[0])
    idx[-1] = simplify(idx[-1] + rows_cols[1])
    return idx


class _Expand(Mutator):
    """Per kernel: register arrays -> [threads, slots] arrays, warp ops -> loops."""

    def __init__(self):
        self.regs = {}        # id(original buffer) -> expanded buffer
        self.threads = None

    def visit_KernelLaunch(self, k):
        ops = []
        walk(k.body, lambda n: ops.append(n) if isinstance(n, W.WarpOp) else None)
        if not ops:
            return k
        nthreads = 1
        for t in k.threads:
            nthreads *= int(t)
        for op in ops:
            if op.tiling.threads != nthreads:
                raise LoweringError(f"the mma emitter is built for {op.tiling.threads} threads "
                                    f"({op.tiling.block_row_warps} x {op.tiling.block_col_warps} warps) but the "
                                    f"kernel has {nthreads}", span=op.span,
                                    hint=f"use T.Kernel(..., threads={op.tiling.threads})")
        saved, self.threads, self.regs = (self.threads, self.regs), nthreads, {}
        for op in ops:
            for buf in _register_operands(op):
                if id(buf) not in self.regs:
                    n = E.const_int_value(buf.numel())
                    self.regs[id(buf)] = Buffer(buf.name, (nthreads, n), buf.dtype, "local")
        out = self.generic_visit(k)
        self.threads, self.regs = saved
        return out

    # register arrays ----------------------------------------------------------
    def visit_DeclBuffer(self, d):
        x = self.regs.get(id(d.buffer))
        return d if x is None else S.DeclBuffer(x)

    def _reject(self, buf, node):
        if id(buf) in self.regs:
            raise LoweringError(f"`{buf.name}` holds mma registers of every thread; the CPU backend "
                                f"cannot index one thread's registers", span=getattr(node, "span", None),
                                hint="touch it only through the emitter's ops and T.clear / T.fill")

    def visit_BufferLoad(self, n):
        self._reject(n.buffer, n)
        return self.generic_visit(n)

    def visit_BufferStore(self, n):
        self._reject(n.buffer, n)
        return self.generic_visit(n)

    def visit_Fill(self, f):
        x = self.regs.get(id(f.dst.buffer))
        if x is None:
            return self.generic_visit(f)
        r = f.dst
        whole = BufferRegion(x, [(E.IntImm(0), E.IntImm(self.threads))] + [(s, e) for s, e in r.ranges])
        return TO.Fill(whole, f.value)

    def visit_Copy(self, c):
        for r in (c.src, c.dst):
            self._reject(r.buffer, c)
        return self.generic_visit(c)

    # ops --------------------------------------------------------------------
    def visit_WarpMmaLoad(self, op):
        t, X = op.tiling, self.regs[id(op.dst)]
        src = self.visit_region(op.src)
        koff = self.visit(op.k_offset)
        if op.operand == "A":
            count, size, element, trans = t.warp_rows, t.local_size_a, t.a_element, t.a_transposed
        else:
            count, size, element, trans = t.warp_cols, t.local_size_b, t.b_element, not t.b_transposed

        def body(wm, wn, a, lane, s):
            mn, k = element(lane, wm if op.operand == "A" else wn, a, s)
            rc = (koff + k, mn) if trans else (mn, koff + k)
            tid = t.warp_base_thread(wm, wn) + lane
            val = E.cast(E.BufferLoad(src.buffer, _at(src, rc)), X.dtype)
            return S.BufferStore(X, val, [simplify(tid), simplify(a * size + s)])
        return _serial([("wm", t.block_row_warps), ("wn", t.block_col_warps), ("atom", count),
                        ("lane", 32), ("s", size)], body)

    def visit_WarpMma(self, op):
        t = op.tiling
        XA, XB, XC = (self.regs[id(b)] for b in (op.A, op.B, op.C))
        At = Buffer("mma_a", (t.warp_row_tiles, t.micro_k), XA.dtype, "local")
        Bt = Buffer("mma_b", (t.warp_col_tiles, t.micro_k), XB.dtype, "local")
        Ct = Buffer("mma_c", (t.warp_row_tiles, t.warp_col_tiles), XC.dtype, "local")

        def per_warp(wm, wn):
            base = t.warp_base_thread(wm, wn)

            def a(i, lane, s):
                m, k = t.a_element(lane, 0, i, s)
                return S.BufferStore(At, E.BufferLoad(XA, [simplify(base + lane), simplify(i * t.local_size_a + s)]),
                                     [simplify(m), simplify(k)])

            def b(j, lane, s):
                n, k = t.b_element(lane, 0, j, s)
                return S.BufferStore(Bt, E.BufferLoad(XB, [simplify(base + lane), simplify(j * t.local_size_b + s)]),
                                     [simplify(n), simplify(k)])

            def c_slot(i, j, s):
                return simplify((i * t.warp_cols + j) * t.local_size_c + s)

            def c_in(i, j, lane, s):
                m, n = t.c_element(lane, 0, 0, i, j, s)
                return S.BufferStore(Ct, E.BufferLoad(XC, [simplify(base + lane), c_slot(i, j, s)]),
                                     [simplify(m), simplify(n)])

            def c_out(i, j, lane, s):
                m, n = t.c_element(lane, 0, 0, i, j, s)
                return S.BufferStore(XC, E.BufferLoad(Ct, [simplify(m), simplify(n)]),
                                     [simplify(base + lane), c_slot(i, j, s)])
            if op.atom_m is None:
                atoms_c = [("i", t.warp_rows), ("j", t.warp_cols), ("lane", 32), ("s", t.local_size_c)]
                return S.seq([
                    _serial([("i", t.warp_rows), ("lane", 32), ("s", t.local_size_a)], a),
                    _serial([("j", t.warp_cols), ("lane", 32), ("s", t.local_size_b)], b),
                    _serial(atoms_c, c_in),
                    TO.Gemm(_whole(At), _whole(Bt), _whole(Ct), False, True),
                    _serial(atoms_c, c_out),
                ])
            # one atom (mma_atom): its A rows, B columns and C tile only
            i, j = self.visit(op.atom_m), self.visit(op.atom_n)
            rows = lambda buf, r0, n: BufferRegion(buf, [(simplify(r0 * n), E.IntImm(n)),  # noqa: E731
                                                         (E.IntImm(0), E.IntImm(buf.shape[1]))])
            Cr = BufferRegion(Ct, [(simplify(i * t.micro_m), E.IntImm(t.micro_m)),
                                   (simplify(j * t.micro_n), E.IntImm(t.micro_n))])
            return S.seq([
                _serial([("lane", 32), ("s", t.local_size_a)], lambda lane, s: a(i, lane, s)),
                _serial([("lane", 32), ("s", t.local_size_b)], lambda lane, s: b(j, lane, s)),
                _serial([("lane", 32), ("s", t.local_size_c)], lambda lane, s: c_in(i, j, lane, s)),
                TO.Gemm(rows(At, i, t.micro_m), rows(Bt, j, t.micro_n), Cr, False, True),
                _serial([("lane", 32), ("s", t.local_size_c)], lambda lane, s: c_out(i, j, lane, s)),
            ])
        return S.seq([S.DeclBuffer(At), S.DeclBuffer(Bt), S.DeclBuffer(Ct),
                      _serial([("wm", t.block_row_warps), ("wn", t.block_col_warps)], per_warp)])

    def visit_WarpMmaStore(self, op):
        t, X = op.tiling, self.regs[id(op.src)]
        dst = self.visit_buffer(op.dst)
        row0 = self.visit(op.row0) if op.row0 is not None else E.IntImm(0)
        col0 = self.visit(op.col0) if op.col0 is not None else E.IntImm(0)

        def body(wm, wn, i, j, lane, s):
            m, n = t.c_element(lane, wm, wn, i, j, s)
            val = E.cast(E.BufferLoad(X, [simplify(t.warp_base_thread(wm, wn) + lane),
                                          simplify((i * t.warp_cols + j) * t.local_size_c + s)]), dst.dtype)
            if dst.ndim == 4:
                idx = [m // t.micro_m, n // t.micro_n, m % t.micro_m, n % t.micro_n]
            else:
                idx = [row0 + m, col0 + n]
            return S.BufferStore(dst, val, [simplify(x) for x in idx])
        return _serial([("wm", t.block_row_warps), ("wn", t.block_col_warps), ("i", t.warp_rows),
                        ("j", t.warp_cols), ("lane", 32), ("s", t.local_size_c)], body)


def _whole(buf):
    return BufferRegion(buf, [(E.IntImm(0), E.IntImm(d)) for d in buf.shape])


def _register_operands(op):
    if isinstance(op, W.WarpMmaLoad):
        return [op.dst]
    if isinstance(op, W.WarpMma):
        return [op.A, op.B, op.C]
    return [op.src]


@function_pass("lower_warp_mma")
def lower_warp_mma(func):
    return func.with_body(_Expand().visit(func.body))
