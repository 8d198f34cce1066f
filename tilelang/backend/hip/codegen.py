"""HIP C++ from the lowered tile IR, one `__global__` function per T.Kernel.

Decisions are taken before printing (`plan.py`: where buffers live, MFMA tilings, LDS
pitches); this file prints:

- block-level statements run by every thread; a block-level store to global memory or
  LDS by thread 0 only (as on the CUDA backend);
- `__syncthreads()` where a block-level statement touches LDS that the statements since
  the last barrier used (`barriers.py`: read after write, write after read or write), so a
  T.Pipelined loop (a serial loop here) and every producer/consumer pair are ordered;
- a T.Parallel nest spread over the block: by the MFMA accumulator layout when it touches
  a register fragment (`parallel.py`), else round-robin over the flattened iterations;
- T.gemm on MFMA (`gemm.py`), reductions with `__shfl_xor` over wavefront lanes
  (`reduce.py`)."""
from __future__ import annotations

from tilelang.ir import expr as E
from tilelang.ir import stmt as S
from tilelang.ir.errors import LoweringError, TargetFeatureError
from tilelang.ir.visitor import walk
from tilelang.ir.extern import is_import_source
from tilelang.arith.divisibility import assumed_divisors
from tilelang.backend.c.launch import LaunchABI, py_expr, top_level
from tilelang.backend.hip.expr import HipExprPrinter, hip_names, ctype
from tilelang.backend.hip.plan import plan_kernel
from tilelang.backend.hip import parallel as _parallel, gemm as _gemm, reduce as _reduce
from tilelang.backend.hip.barriers import BarrierPlanner
from tilelang.backend.hip import pipeline_regs as _pipeline_regs

_THREAD_DIMS = ("threadIdx.x", "threadIdx.y", "threadIdx.z")
_BLOCK_DIMS = ("blockIdx.x", "blockIdx.y", "blockIdx.z")


class KernelCodegen:
    """Prints one T.Kernel as `extern "C" __global__ void <entry>(params)`."""

    def __init__(self, func, launch, abi, entry, arch, names):
        self.func, self.launch, self.abi, self.entry, self.arch = func, launch, abi, entry, arch
        self.names = names.child()
        self.printer = HipExprPrinter(self.names, self.access)
        self.plan = plan_kernel(launch, arch)
        self.lines = []
        self.ind = 1
        self.in_thread = False      # inside per-thread code (a T.Parallel body)
        self.slots = {}             # id(register fragment) -> (loop vars, C lvalue of the current slot)
        self.arena_declared = False
        self.store_guard = None     # C condition on stores to memory (one replica of a row vector stores)
        self.storage = {}           # id(buffer) -> buffer whose storage it reads (a reduce's LDS staging)
        self.staging = {}           # id(register fragment) -> its LDS copy for reductions
        self.top = []               # declarations at the top of the kernel (the staging copies)
        self.barriers = BarrierPlanner(self)
        # T.assume(n % d == 0) promises about parameters: {id(var): d} (vector alignment)
        params = {id(p) for p in func.params} | {id(v) for v in func.dynamic_vars()}
        self.divisors = assumed_divisors(func.body, lambda v: id(v) in params)

    # expressions ------------------------------------------------------------------
    def expr(self, e):
        return self.printer(e)

    def bname(self, b):
        return self.names.name(b, b.name)

    def access(self, load):
        return self.elem(load.buffer, load.indices, getattr(load, "span", None))

    def strides(self, b):
        st = b.get_strides()
        p = self.plan.pitches.get(id(b))
        if p is not None:   # padded LDS rows: [rows][pitch]
            st = [1] * len(b.shape)
            st[-2] = p
        return st

    def offset(self, b, indices):
        terms = []
        for i, s in zip(indices, self.strides(b)):
            if E.const_int_value(i) == 0:
                continue
            idx = self.expr(i)
            cs = E.const_int_value(s)
            if cs == 1:
                terms.append(f"({idx})")
            else:
                terms.append(f"({idx}) * {self.expr(E.convert(s)) if cs is None else cs}")
        return " + ".join(terms) if terms else "0"

    def elem(self, b, indices, span=None):
        """The C lvalue of element `indices` of buffer `b`."""
        b = self.storage.get(id(b), b)
        if self.plan.in_registers(b):
            bound = self.slots.get(id(b))
            if bound is None or len(indices) != len(bound[0]) or \
                    any(i is not v for i, v in zip(indices, bound[0])):
                raise LoweringError(
                    f"the HIP backend keeps the gemm accumulator `{b.name}` in registers (MFMA layout) and reads "
                    f"it only in a T.Parallel loop over its whole shape indexed by the loop variables",
                    span=span or self.launch.span,
                    hint=f"write `for i, j in T.Parallel(...): ... {b.name}[i, j] ...` or T.copy it to a "
                         f"shared buffer first")
            return bound[1]
        if b.scope == "local.fragment" and E.const_int_value(b.numel()) == 1:
            return f"{self.bname(b)}[0]"   # one value for the block (as on the CPU backend)
        return f"{self.bname(b)}[{self.offset(b, indices)}]"

    # output -------------------------------------------------------------------------
    def emit(self, line):
        self.lines.append("  " * self.ind + line)

    def sync(self):
        """A barrier the printing of an op needs inside itself (a reduction's staging)."""
        self.barriers.sync()

    # the kernel ---------------------------------------------------------------------
    def generate(self):
        L = self.launch
        if len(L.threads) > 3 or len(L.grid) > 3:
            raise LoweringError("T.Kernel has at most 3 grid and 3 thread dimensions", span=L.span)
        params = []
        for cls, obj in self.abi.slots():
            if cls == "buffer":
                params.append(f"{ctype(obj.dtype)}* __restrict__ {self.names.name(obj, obj.name)}")
            else:
                params.append(f"{ctype(obj.dtype)} {self.names.name(obj, obj.name)}")
        for v, d in zip(L.block_vars, _BLOCK_DIMS):
            self.names.alias(v, f"((int){d})")
        for v, d in zip(L.thread_vars, _THREAD_DIMS):
            self.names.alias(v, f"((int){d})")
        tid = "(int)threadIdx.x"
        if len(L.threads) > 1:
            tid = "(int)(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z))"
        self.names.reserve("tl_tid")
        self.emit(f"const int tl_tid = {tid};")
        self.stmt(L.body)
        self.lines[1:1] = ["  " + t for t in self.top]
        head = [f'extern "C" __global__ void __launch_bounds__({self.plan.threads}) {self.entry}(',
                "    " + ",\n    ".join(params) + ") {"]
        return "\n".join(head + self.lines + ["}"])

    # statements ---------------------------------------------------------------------
    def stmt(self, s):
        if s is None:
            return
        m = getattr(self, "s_" + type(s).__name__, None)
        if m is None:
            raise LoweringError(f"the HIP backend cannot generate code for {type(s).__name__}",
                                span=getattr(s, "span", None))
        m(s)

    def block_leaf(self, s, emit):
        """A statement: at block level, after the barrier its LDS accesses need."""
        if self.in_thread:
            emit()
            return
        acc = self.barriers.before(s)
        emit()
        self.barriers.after(acc)

    def s_SeqStmt(self, s):
        for x in s.stmts:
            self.stmt(x)

    def s_DeclBuffer(self, s):
        b = s.buffer
        base = getattr(b, "alias_of", None)
        if base is not None:
            t = ctype(b.dtype)
            self.emit(f"{t}* {self.bname(b)} = ({t}*){self.bname(base)};")
            return
        if getattr(b, "data_ptr", None) is not None:
            raise LoweringError("T.make_tensor at an address is not supported by the HIP backend", span=s.span)
        t = ctype(b.dtype)
        name = self.bname(b)
        if self.plan.in_registers(b):
            lay = self.plan.regs[id(b)]
            tl = lay.tiling
            mfma = f"MFMA {tl.shape.m}x{tl.shape.n}x{tl.shape.k}"
            if lay.kind == "acc":
                self.emit(f"tl::floatx{tl.shape.c_regs} {name}[{tl.MT * tl.NT}];   "
                          f"// {b.name}: {mfma} accumulator, waves {tl.WM}x{tl.WN}")
            elif lay.kind == "tile":
                self.emit(f"{t} {name}[{tl.MT * tl.NT * tl.shape.c_regs}];   "
                          f"// {b.name}: registers in the {mfma} accumulator layout")
            else:
                self.emit(f"{t} {name}[{tl.MT}];   // {b.name}: the rows this lane holds ({mfma} layout)")
        elif self.plan.in_lds(b):
            pitch = self.plan.pitches.get(id(b))
            note = f"   // row pitch {pitch} (padded: no LDS bank conflicts for MFMA reads)" if pitch else ""
            off = self.plan.lds_offsets.get(id(b))
            if off is not None:   # one arena, bytes shared by buffers never live together (lds_reuse.py)
                if not self.arena_declared:
                    self.top.append(f"__shared__ __attribute__((aligned(16))) char tl_lds[{self.plan.lds_arena}];"
                                    f"   // LDS shared by buffers whose live ranges do not overlap")
                    self.arena_declared = True
                self.emit(f"{t}* {name} = ({t}*)(tl_lds + {off});   // {self.plan.numel(b)} elements{note}")
            else:
                self.emit(f"__shared__ __attribute__((aligned(16))) {t} {name}[{self.plan.numel(b)}];{note}")
        elif b.scope == "local.var":
            init = self.expr(E.cast(b.init, b.dtype)) if b.init is not None else f"{t}(0)"
            self.emit(f"{t} {name}[1] = {{{init}}};")
        elif b.scope == "local":
            self.emit(f"{t} {name}[{self.plan.numel(b)}];")
        else:
            raise LoweringError(f"buffer `{b.name}` of scope {b.scope} inside a kernel", span=s.span)

    def s_BufferStore(self, s):
        lhs = self.elem(s.buffer, s.indices, s.span)
        line = f"{lhs} = {self.expr(s.value)};"
        store_once = not self.in_thread and s.buffer.scope in ("global", "shared", "local.fragment") \
            and not self.plan.in_registers(s.buffer)
        if self.in_thread and self.store_guard and s.buffer.scope in ("global", "shared", "local.fragment") \
                and not self.plan.in_registers(s.buffer):
            line = f"if {self.store_guard} {line}"
        self.block_leaf(s, lambda: self.emit(f"if (tl_tid == 0) {line}" if store_once else line))

    def s_Evaluate(self, s):
        v = s.value
        if is_import_source(s):
            raise TargetFeatureError("T.import_source brings CUDA device code; the HIP backend cannot compile it",
                                     s.span)
        if isinstance(v, E.Call) and v.name in ("tl.sync_threads", "tl_sync_threads", "__syncthreads"):
            self.barriers.sync()
            return
        text = f"(void)({self.expr(v)});"
        has_atomic = []
        walk(v, lambda n: has_atomic.append(n) if isinstance(n, E.Call) and n.name.startswith("atomic_") else None)
        once = has_atomic and not self.in_thread
        self.block_leaf(s, lambda: self.emit(f"if (tl_tid == 0) {text}" if once else text))

    def s_Barrier(self, s):
        if s.kind not in ("block", None):
            raise TargetFeatureError(f"a {s.kind} barrier has no HIP equivalent", s.span)
        self.barriers.sync()

    def s_For(self, s):
        if s.kind == S.PARALLEL and not self.in_thread:
            self.block_leaf(s, lambda: _parallel.emit_nest(self, s))
            return
        if s.kind == S.PIPELINED and not self.in_thread:
            planned = _pipeline_regs.plan(self, s)
            if planned is not None:
                _pipeline_regs.emit(self, s, planned)
                return
        v = self.names.name(s.var, s.var.name)
        t = ctype(s.var.dtype)
        lo, ext = self.expr(s.min), self.expr(s.extent)
        head = []
        if s.kind == S.UNROLL or (self.in_thread and E.const_int_value(s.extent) is not None
                                  and E.const_int_value(s.extent) <= 8):
            head.append("#pragma unroll")
        step = "1" if s.step is None else self.expr(s.step)
        if s.step is None:
            head.append(f"for ({t} {v} = {lo}; {v} < {lo} + {ext}; ++{v}) {{" if lo != "0" else
                        f"for ({t} {v} = 0; {v} < {ext}; ++{v}) {{")
        else:
            k = self.names.fresh(f"{v}_k")
            head.append(f"for ({t} {k} = 0; {k} < {ext}; ++{k}) {{")
            head.append(f"  const {t} {v} = {lo} + {k} * ({step});")
        self.body_of_loop(s, lambda: [self.emit(h) for h in head])

    def body_of_loop(self, s, open_loop):
        def body():
            open_loop()
            self.ind += 1
            self.stmt(s.body)
            self.ind -= 1
            self.emit("}")
        if self.in_thread:
            body()
        else:
            self.barriers.loop(s, body)

    def s_IfThenElse(self, s):
        def then():
            self.emit(f"if ({self.expr(s.cond)}) {{")
            self.ind += 1
            self.stmt(s.then_body)
            self.ind -= 1

        def other():
            self.emit("} else {")
            self.ind += 1
            self.stmt(s.else_body)
            self.ind -= 1
        if self.in_thread:
            then()
            if s.else_body is not None:
                other()
        else:
            self.barriers.branch(then, other if s.else_body is not None else None)
        self.emit("}")

    def s_While(self, s):
        self.body_of_loop(s, lambda: self.emit(f"while ({self.expr(s.cond)}) {{"))

    def s_Break(self, s):
        self.emit("break;")

    def s_Continue(self, s):
        self.emit("continue;")

    def s_LetStmt(self, s):
        self.emit(f"const {ctype(s.var.dtype)} {self.names.name(s.var, s.var.name)} = {self.expr(s.value)};")
        self.stmt(s.body)

    def s_Assume(self, s):
        pass   # a promise the passes used

    def s_Assert(self, s):
        self.emit(f"if (!({self.expr(s.cond)})) __builtin_trap();")

    def s_Gemm(self, g):
        self.block_leaf(g, lambda: _gemm.emit_gemm(self, g))

    def s_Reduce(self, r):
        self.block_leaf(r, lambda: _reduce.emit_reduce(self, r))

    def s_ThreadAllReduce(self, s):
        raise LoweringError("a thread all-reduce (T.alloc_reducer / warp reductions) is not supported by the HIP "
                            "backend yet", span=s.span, hint="use T.reduce_* on a fragment")


def _top_level(func):
    """(workspaces, launches): the function-level global buffers (the launcher allocates
    them) and the T.Kernel launches, in order."""
    workspaces, launches, rest = top_level(func.body)   # (backend/c/launch.py)
    for s in rest:
        if not (isinstance(s, S.Assume) or s is None):
            raise LoweringError(f"{type(s).__name__} outside T.Kernel: on the HIP backend statements run inside "
                                f"`with T.Kernel(...)`", span=getattr(s, "span", None),
                                hint="move it into the T.Kernel block")
    if not launches:
        raise LoweringError(f"`{func.name}` has no T.Kernel to run on the GPU", span=func.span)
    return workspaces, launches


HEADER = '#include "tl_hip.h"\n'


def generate(func, arch):
    """(HIP source, meta): one `__global__` function per T.Kernel; meta lists each
    kernel's entry, grid (Python over `ints`) and threads, and the parameter classes."""
    workspaces, launches = _top_level(func)
    abi = LaunchABI.of(func, workspaces)
    names = hip_names()
    parts, kernels = [HEADER], []
    env = abi.int_env()
    for k, launch in enumerate(launches):
        entry = f"{func.name}_kernel" + (f"_{k}" if k else "")
        cg = KernelCodegen(func, launch, abi, entry, arch, names)
        parts.append(cg.generate())
        grid = [py_expr(g, env) for g in launch.grid] + ["1"] * (3 - len(launch.grid))
        threads = [E.const_int_value(t) for t in launch.threads] + [1] * (3 - len(launch.threads))
        kernels.append({"entry": entry, "grid": grid, "threads": threads, "lds": cg.plan.lds_bytes(),
                        "mfma": sorted({f"{t.shape.m}x{t.shape.n}x{t.shape.k}" for t in cg.plan.tilings.values()})})
    meta = {"kernels": kernels, "arch": arch,
            "workspaces": [{"shape": [py_expr(E.convert(d), env) for d in w.shape], "dtype": w.dtype.name}
                           for w in workspaces], "param_types": [(c, str(o.dtype)) for c, o in abi.slots()],
            **abi.counts()}
    return "\n\n".join(parts) + "\n", meta
