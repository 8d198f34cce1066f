"""C++ from the lowered tile-level IR. One CPU thread runs one block; blocks of a
`T.Kernel` run in parallel with OpenMP. Shared and fragment buffers become
per-thread heap arrays; `T.gemm` calls `tl::gemm` from `include/tl_cpu.h`."""
from __future__ import annotations

from tilelang.ir import expr as E
from tilelang.ir import stmt as S
from tilelang.ir import tile_ops as TO
from tilelang.ir.buffer import is_packed, Buffer
from tilelang.ir.visitor import walk
from tilelang.ir.errors import LoweringError
from tilelang.ir.extern import is_import_source
from tilelang.transform.legalize_safe_memory_access import over_indexed_fragments
from tilelang.ir.mbarrier import BULK_COPY_CLUSTER, SYNC_GRID, every_thread_call
from tilelang.transform.rasterize_blocks import BLOCK_REMAP
from tilelang.ir.tensor_core_calls import TENSOR_CORE_CALLS
from tilelang.backend.c.launch import LaunchABI, c_entry_unpack
from tilelang.backend.cpu.expr import CpuExprPrinter, cpu_names, ctype
from tilelang.transform.mark_per_thread import is_per_thread


class CodegenCPU:
    ctype = staticmethod(ctype)   # C type of a dtype, for the emitters that work through this object

    def __init__(self, func):
        self.func = func
        self.names = cpu_names()
        self.printer = CpuExprPrinter(self.names, self.access, lambda: self.cur_lane)
        self.lines = []
        self.ind = 1
        self.kernel_id = 0
        self.thread_copies = {}   # id(per-thread buffer) -> its size, in kernels run in thread phases
        self.block_scalars = set()   # ids of uniform T.alloc_var scalars there (one copy, up front)

    # names and expressions (expr.py) ----------------------------------------------
    def vname(self, v):
        return self.names.name(v, v.name)

    def bname(self, b):
        return self.names.name(b, b.name)

    def expr(self, e):
        return self.printer(e)

    cur_lane = "0"   # the thread index a block's code runs as (thread loops bind it)

    def access(self, e):
        """The C lvalue of the element BufferLoad `e` reads."""
        if is_packed(e.buffer):
            return f"tl::load4<{ctype(e.buffer.dtype)}>({self.bname(e.buffer)}, {self.offset(e.buffer, e.indices)})"
        return f"{self.bname(e.buffer)}[{self.offset(e.buffer, e.indices)}]"

    def offset(self, buf, indices):
        n = self.thread_copies.get(id(buf))
        if n is not None:   # this thread's copy (thread_phases.py)
            rest = self._offset(buf, indices)
            return f"tl_tid * (int64_t)({n})" + ("" if rest == "0" else f" + {rest}")
        return self._offset(buf, indices)

    def _offset(self, buf, indices):
        if buf.scope == "local.fragment" and E.const_int_value(buf.numel()) == 1:
            # a one-element fragment is one value replicated over the block's threads:
            # every index reads it (as on the GPU), e.g. `frag[i]` in a T.Parallel loop
            return "0"
        strides = buf.get_strides()
        terms = []
        for i, s in zip(indices, strides):
            ci, cs = E.const_int_value(i), E.const_int_value(s)
            if ci == 0:
                continue
            idx = self.expr(i)
            if cs == 1:
                terms.append(f"(int64_t)({idx})")
            else:
                terms.append(f"(int64_t)({idx}) * {self.expr(E.convert(s)) if not isinstance(s, int) else s}")
        return " + ".join(terms) if terms else "0"

    # statements ------------------------------------------------------------------
    def emit(self, line):
        self.lines.append("  " * self.ind + line)

    def stmt(self, s):
        if s is None:
            return
        m = getattr(self, "s_" + type(s).__name__, None)
        if m is None:
            raise LoweringError(f"the CPU backend cannot generate code for {type(s).__name__}", span=s.span)
        m(s)

    def s_SeqStmt(self, s):
        for x in s.stmts:
            self.stmt(x)

    def s_Evaluate(self, s):
        if isinstance(s.value, E.Call) and s.value.name == SYNC_GRID:
            self._check_sync_grid(s)
        if isinstance(s.value, E.Call) and s.value.name == BULK_COPY_CLUSTER:
            # T.copy_cluster in a cluster of one block: into the block's own buffer
            a = s.value.args
            self.emit(f"std::memmove(&{self.expr(a[0])}, &{self.expr(a[1])}, {self.expr(a[2])});")
            return
        if is_import_source(s):
            raise LoweringError("T.import_source brings CUDA device code, which the CPU backend cannot compile",
                                span=s.span, hint="compile this kernel for a CUDA target")
        if isinstance(s.value, E.Call) and s.value.name in TENSOR_CORE_CALLS:
            # warp-collective: lanes exchange register fragments, which one CPU thread
            # running a block's threads one after another cannot do
            raise LoweringError(f"{s.value.name.replace('tl.', 'T.')} is a warp-collective tensor-core "
                                f"instruction on the threads' registers; it needs the CUDA backend",
                                span=s.value.span or s.span,
                                hint="compile this kernel for a CUDA target, or write the GEMM with T.gemm")
        if every_thread_call(s.value):
            # one CPU thread runs the block in program order: barriers, register
            # reallocation and proxy fences have nothing to order (kernels whose
            # thread ranges wait on each other are refused in s_KernelLaunch)
            return
        self.emit(f"(void)({self.expr(s.value)});")

    cur_grid = ()

    def _check_sync_grid(self, s):
        """T.sync_grid: one block at a time cannot wait for the others; a grid of one
        block has nothing to wait for."""
        sizes = [E.const_int_value(g) for g in self.cur_grid]
        if any(v != 1 for v in sizes):
            raise LoweringError("T.sync_grid() waits for every block of the grid, but the CPU backend runs the "
                                "blocks one after another", span=s.span,
                                hint="split the kernel at the grid barrier into two T.Kernel launches (they run "
                                     "in order), or compile for a CUDA target")

    def s_BufferStore(self, s):
        if is_packed(s.buffer):
            t = ctype(s.buffer.dtype)
            self.emit(f"tl::store4<{t}>({self.bname(s.buffer)}, {self.offset(s.buffer, s.indices)}, "
                      f"({t})({self.expr(s.value)}));")
            return
        self.emit(f"{self.bname(s.buffer)}[{self.offset(s.buffer, s.indices)}] = {self.expr(s.value)};")

    def s_DeclBuffer(self, s):
        b = s.buffer
        base = getattr(b, "alias_of", None)
        if base is not None:  # T.reshape / T.view: another name for the same bytes
            self.emit(f"{ctype(b.dtype)}* {self.bname(b)} = ({ctype(b.dtype)}*){self.bname(base)};")
            return
        if getattr(b, "data_ptr", None) is not None:   # T.make_tensor at an address
            t = "uint8_t" if is_packed(b) else ctype(b.dtype)
            self.emit(f"{t}* {self.bname(b)} = ({t}*)(intptr_t)({self.expr(b.data_ptr)});")
            return
        if b.scope == "local.var" and (id(b) in self.thread_copies or id(b) in self.block_scalars):
            # allocated up front (per thread, or once for the block)
            init = self.expr(E.cast(b.init, b.dtype)) if b.init is not None else f"{ctype(b.dtype)}(0)"
            self.emit(f"{self.bname(b)}[{self.offset(b, [0])}] = {init};")
            return
        if b.scope == "local.var":
            init = f" = {self.expr(E.cast(b.init, b.dtype))}" if b.init is not None else "{}"
            self.emit(f"{ctype(b.dtype)} {self.bname(b)}[1];")
            if b.init is not None:
                self.emit(f"{self.bname(b)}[0]{init};")
            else:
                self.emit(f"{self.bname(b)}[0] = {ctype(b.dtype)}(0);")
        # other scopes are allocated up front (see kernel / function prologue)

    def s_For(self, s, body=None):
        """`body`: how to emit the loop body (default: as statements; thread_phases.py
        emits phases there)."""
        v = self.vname(s.var)
        t = ctype(s.var.dtype)
        lo, ext = self.expr(s.min), self.expr(s.extent)
        if s.step is None:
            end = f"{v}_end"
            if E.const_int_value(s.min) == 0:
                self.emit(f"for ({t} {v} = 0, {end} = {ext}; {v} < {end}; ++{v}) {{")
            else:
                self.emit(f"for ({t} {v} = {lo}, {end} = {lo} + {ext}; {v} < {end}; ++{v}) {{")
        else:
            k = f"{v}_k"
            self.emit(f"for (int64_t {k} = 0, {k}_end = {ext}; {k} < {k}_end; ++{k}) {{")
            self.ind += 1
            self.emit(f"const {t} {v} = ({t})({lo} + {k} * ({self.expr(s.step)}));")
            self.ind -= 1
        self.ind += 1
        (body or self.stmt)(s.body)
        self.ind -= 1
        self.emit("}")

    def s_IfThenElse(self, s, body=None):
        body = body or self.stmt
        self.emit(f"if ({self.expr(s.cond)}) {{")
        self.ind += 1
        body(s.then_body)
        self.ind -= 1
        if s.else_body is not None:
            self.emit("} else {")
            self.ind += 1
            body(s.else_body)
            self.ind -= 1
        self.emit("}")

    def s_While(self, s, body=None):
        self.emit(f"while ({self.expr(s.cond)}) {{")
        self.ind += 1
        (body or self.stmt)(s.body)
        self.ind -= 1
        self.emit("}")

    def s_Break(self, s):
        self.emit("break;")

    def s_Continue(self, s):
        self.emit("continue;")

    def s_LetStmt(self, s, body=None):
        self.emit(f"const {ctype(s.var.dtype)} {self.vname(s.var)} = {self.expr(s.value)};")
        (body or self.stmt)(s.body)

    def s_Barrier(self, s):
        pass  # one thread per block: nothing to wait for

    def s_Assert(self, s):
        where = f"{s.span.file}:{s.span.line}" if s.span else "kernel"
        msg = f"{where}: device assertion failed: {s.message}".replace("\\", "/").replace('"', "'")
        self.emit(f"if (!({self.expr(s.cond)})) tl::report_error(\"{msg}\");")

    def s_Assume(self, s):
        pass   # a promise the passes used (legalize_safe_memory_access); nothing to run

    def s_Print(self, s):
        msg = (s.msg or "").replace('"', "'").replace("%", "%%")
        where = self._block_fmt()
        if isinstance(s.obj, Buffer):
            b = s.obj
            n = self.expr(E.convert(b.numel())) if not isinstance(b.numel(), int) else b.numel()
            self.emit(f"for (int64_t tl_p = 0; tl_p < {n}; ++tl_p) "
                      f"std::printf(\"{msg} {where}buffer={b.name} index=%lld value=%g\\n\"{self._block_args()}, "
                      f"(long long)tl_p, tl::to_double({self.bname(b)}[tl_p]));")
        else:
            self.emit(f"std::printf(\"{msg} {where}dtype={s.obj.dtype} value=%g\\n\"{self._block_args()}, "
                      f"tl::to_double({self.expr(s.obj)}));")

    def _block_fmt(self):
        return "".join(f"{self.vname(v)}=%d " for v in self.cur_block_vars) if self.cur_block_vars else ""

    def _block_args(self):
        return "".join(f", (int){self.vname(v)}" for v in self.cur_block_vars)

    cur_block_vars = ()

    def s_Gemm(self, g):
        def view(r):
            buf = r.buffer
            strides = buf.get_strides()
            nd = len(r.extents)
            ptr = f"({self.bname(buf)} + {self.offset(buf, r.starts)})"
            if E.const_int_value(strides[-1]) != 1:
                raise LoweringError("T.gemm operands must be contiguous in their last dimension", span=g.span)
            ld = strides[nd - 2]
            return ptr, self.expr(E.convert(ld)), [r.extents[nd - 2], r.extents[nd - 1]]
        pa, lda, ea = view(g.A)
        pb, ldb, eb = view(g.B)
        pc, ldc, ec = view(g.C)
        M, N = self.expr(ec[0]), self.expr(ec[1])
        K = self.expr(ea[0] if g.trans_A else ea[1])
        ta, tb, tc = ctype(g.A.buffer.dtype), ctype(g.B.buffer.dtype), ctype(g.C.buffer.dtype)
        self.emit(f"tl::gemm<{ta}, {tb}, {tc}, {str(g.trans_A).lower()}, {str(g.trans_B).lower()}>"
                  f"({M}, {N}, {K}, {pa}, {lda}, {pb}, {ldb}, {pc}, {ldc});")

    def _tile_op(self, s):
        raise LoweringError(f"tile op {type(s).__name__} reached CPU codegen unlowered", span=s.span)

    s_Copy = s_Fill = s_Reduce = s_CumSum = s_Atomic = _tile_op

    def s_KernelLaunch(self, k):
        if "cuda_source" in k.annotations:
            raise LoweringError(f"T.CUDASourceCodeKernel runs CUDA source (`{k.annotations['cuda_source_entry']}`); "
                                f"the CPU backend cannot run it", span=k.span, hint="compile for a CUDA target")
        cl = k.annotations.get("cluster_dims")
        if cl:
            raise LoweringError(f"thread-block clusters (cluster_dims={tuple(cl)}) run on the CUDA backend (sm_90); "
                                f"the CPU backend runs one block at a time", span=k.span,
                                hint="compile for a CUDA target, or drop cluster_dims (clusters of one block "
                                     "make the cluster calls no-ops here)")
        self.cur_grid = list(k.grid)
        kid = self.kernel_id
        self.kernel_id += 1
        uses_threads = []
        tv = {id(v) for v in k.thread_vars}
        # a statement written with the thread index is per-thread code even where simplifying
        # its index took the index out (transform/mark_per_thread.py)
        walk(k.body, lambda n: uses_threads.append(n) if isinstance(n, E.Var) and id(n) in tv or is_per_thread(n)
             else None)
        thread_loops = []
        phases = None
        if uses_threads:  # threads one after another, when nothing can tell (thread_loops.py)
            from tilelang.backend.cpu.thread_loops import thread_private_violation, thread_loop_headers
            why = thread_private_violation(k)
            if why is None:
                thread_loops = thread_loop_headers(k, self.vname)
                self.cur_lane = self.vname(k.thread_vars[0])
            else:   # threads in phases between the points where they may wait (thread_phases.py)
                from tilelang.backend.cpu.thread_phases import ThreadPhases, phase_violation
                why2 = phase_violation(k)
                if why2 is not None:
                    raise LoweringError(f"this kernel indexes threads explicitly (T.get_thread_binding) and "
                                        f"{why2[0]}; the CPU backend runs a block's threads one after another "
                                        "between block barriers", span=getattr(why2[1], "span", None) or k.span,
                                        hint="write the per-thread work as T.Parallel loops over tiles, or compile "
                                             "for a CUDA target")
                phases = ThreadPhases(self, k)
        private = phases.private if phases is not None else set()
        uniform = phases.uniform if phases is not None else set()
        self.thread_copies = {}
        self.block_scalars = uniform   # allocated up front, visible to every phase
        bufs = []
        walk(k.body, lambda n: bufs.append(n.buffer) if isinstance(n, S.DeclBuffer) and
             (n.buffer.scope not in ("local.var", "global") or id(n.buffer) in private or
              id(n.buffer) in uniform) and
             getattr(n.buffer, "alias_of", None) is None else None)
        grid = [self.expr(g) for g in k.grid] + ["1"] * (3 - len(k.grid))
        bv = list(k.block_vars)
        self.emit(f"{{  // kernel {kid}: grid ({', '.join(grid)})")
        self.ind += 1
        self.emit(f"const int64_t tl_gx = {grid[0]}, tl_gy = {grid[1]}, tl_gz = {grid[2]};")
        self.emit("#pragma omp parallel if (tl_gx * tl_gy * tl_gz > 1)")
        self.emit("{")
        self.ind += 1
        over = over_indexed_fragments(k.body)
        for b in bufs:
            n = b.numel()
            if id(b) in over and isinstance(E.const_int_value(n), int):
                n = max(E.const_int_value(n), over[id(b)])
            n = self.expr(E.convert(n)) if not isinstance(n, int) else str(n)
            if id(b) in private:   # one copy per thread, at tl_tid * numel
                self.thread_copies[id(b)] = n
                n = f"({n}) * {phases.nthreads}"
            self.emit(f"{ctype(b.dtype)}* __restrict__ {self.bname(b)} = "
                      f"({ctype(b.dtype)}*)tl::alloc(sizeof({ctype(b.dtype)}) * (size_t)({n}));")
        self.emit("#pragma omp for collapse(3) schedule(dynamic, 1)")
        self.emit("for (int64_t tl_bz = 0; tl_bz < tl_gz; ++tl_bz)")
        self.emit("for (int64_t tl_by = 0; tl_by < tl_gy; ++tl_by)")
        self.emit("for (int64_t tl_bx = 0; tl_bx < tl_gx; ++tl_bx) {")
        self.ind += 1
        remap = k.annotations.get(BLOCK_REMAP)   # T.use_swizzle: the block indices from the launch order
        for v, src in zip(remap.hw_vars if remap else bv, ("tl_bx", "tl_by", "tl_bz")):
            self.emit(f"const {ctype(v.dtype)} {self.vname(v)} = ({ctype(v.dtype)}){src};")
        for v, e in (remap.bindings(bv) if remap else ()):
            if e is not v:
                self.emit(f"const {ctype(v.dtype)} {self.vname(v)} = {self.expr(e)};")
        prev = self.cur_block_vars
        self.cur_block_vars = bv
        for line in thread_loops:
            self.emit(line)
            self.ind += 1
        if phases is not None:
            for line in phases.scratch_decls():
                self.emit(line)
            phases.emit_body(k.body)
        else:
            self.stmt(k.body)
        for _ in thread_loops:
            self.ind -= 1
            self.emit("}")
        self.thread_copies = {}
        self.cur_block_vars = prev
        self.cur_lane = "0"
        self.ind -= 1
        self.emit("}")
        for b in bufs:
            self.emit(f"std::free({self.bname(b)});")
        self.ind -= 1
        self.emit("}")
        self.ind -= 1
        self.emit("}")

    # function --------------------------------------------------------------------
    def generate(self, entry="tl_entry"):
        f = self.func
        out = ['#include "tl_cpu.h"', "", f'extern "C" const char* {entry}_last_error() '
               "{ return tl::error_buffer(); }", "",
               f'extern "C" int {entry}(void** tl_bufs, const int64_t* tl_ints, const double* tl_floats) {{']
        self.lines = []
        abi = LaunchABI.of(f)
        for line in c_entry_unpack(abi, f.params, ctype, lambda o: self.names.name(o, o.name),
                                   lambda b: "" if getattr(b, "may_alias", False) else " __restrict__",
                                   lambda b: "uint8_t" if is_packed(b) else ctype(b.dtype)):   # 4-bit: packed bytes
            self.emit(line)
        self.emit("tl::error_flag() = 0;")
        # function-level workspaces (T.alloc_global) and scalars outside kernels
        glob = []
        walk(f.body, lambda n: glob.append(n.buffer) if isinstance(n, S.DeclBuffer) and
             n.buffer.scope == "global" and getattr(n.buffer, "alias_of", None) is None and
             getattr(n.buffer, "data_ptr", None) is None else None)
        for b in glob:
            n = b.numel()
            n = self.expr(E.convert(n)) if not isinstance(n, int) else str(n)
            self.emit(f"{ctype(b.dtype)}* __restrict__ {self.bname(b)} = "
                      f"({ctype(b.dtype)}*)tl::alloc(sizeof({ctype(b.dtype)}) * (size_t)({n}));")
        self.stmt(f.body)
        for b in glob:
            self.emit(f"std::free({self.bname(b)});")
        self.emit("return tl::error_flag();")
        return "\n".join(out + self.lines + ["}", ""])


def generate(func, entry="tl_entry"):
    return CodegenCPU(func).generate(entry)

