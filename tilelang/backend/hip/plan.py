"""Where each buffer of one T.Kernel lives on a CDNA GPU, decided before printing:

- a fragment that is the accumulator of a T.gemm: registers, in the MFMA accumulator
  layout of its `MfmaTiling` (tilelang/layout/mfma.py: each lane holds part of one row);
- other fragments whose every use fits a layout derived from those accumulators
  (`register_layouts.py`): a tile of the accumulator's shape used elementwise with it
  (the softmax's P, a cast copy, the register A operand of the next gemm) in the same
  layout; a vector of the accumulator's rows (softmax statistics) one register per tile row;
- every other fragment and every shared buffer: LDS (a fragment there is visible to the
  whole block, so its uses need no layout);
- LDS tiles read by MFMA along their rows (A, or B stored N x K): a padded row pitch
  (`padded_pitch`) so that the 16 or 32 lanes reading one column of rows hit distinct banks;
- local / var buffers: per-thread registers."""
from __future__ import annotations

from dataclasses import dataclass, field

from tilelang.ir import expr as E
from tilelang.ir import stmt as S
from tilelang.ir import tile_ops as TO
from tilelang.ir.errors import LoweringError, TargetFeatureError
from tilelang.ir.visitor import walk
from tilelang.layout.mfma import choose_tiling, padded_pitch, shapes_for, WAVE
from tilelang.backend.hip.target import LDS_BYTES


@dataclass
class KernelPlan:
    threads: int
    tilings: dict = field(default_factory=dict)     # id(gemm accumulator) -> MfmaTiling
    regs: dict = field(default_factory=dict)        # id(register fragment) -> RegLayout (accumulators too)
    pitches: dict = field(default_factory=dict)     # id(LDS buffer) -> padded row pitch (elements)
    buffers: dict = field(default_factory=dict)     # id(buffer) -> buffer (every DeclBuffer of the kernel)
    lds_offsets: dict = field(default_factory=dict)  # id(LDS buffer) -> byte offset in one arena (lds_reuse.py)
    lds_arena: int = 0                               # the arena's bytes (0: one array per buffer)
    lds_keys: dict = field(default_factory=dict)     # id(LDS buffer) -> id shared by buffers with overlapping bytes

    def in_registers(self, b) -> bool:
        return id(b) in self.regs

    def in_lds(self, b) -> bool:
        return b.scope == "shared" or (b.scope == "local.fragment" and id(b) not in self.regs)

    def lds_key(self, b):
        root = getattr(b, "alias_of", None)
        k = id(root) if root is not None and id(root) in self.lds_keys else id(b)
        return self.lds_keys.get(k, k)

    def lds_sizes(self):
        return {k: self.numel(b) * max(1, b.dtype.bits // 8) for k, b in self.buffers.items()
                if self.in_lds(b) and getattr(b, "alias_of", None) is None}

    def lds_bytes(self) -> int:
        if self.lds_arena:
            return self.lds_arena
        total = 0
        for b in self.buffers.values():
            if self.in_lds(b) and getattr(b, "alias_of", None) is None:
                total += self.numel(b) * max(1, b.dtype.bits // 8)
        return total

    def numel(self, b) -> int:
        shape = [E.const_int_value(d) for d in b.shape]
        if any(d is None for d in shape):
            raise LoweringError(f"buffer `{b.name}` ({b.scope}) needs a constant shape on the HIP backend")
        p = self.pitches.get(id(b))
        if p is not None:
            shape[-1] = p
        n = 1
        for d in shape:
            n *= d
        return n


def _const(e, what, span):
    v = E.const_int_value(e)
    if v is None:
        raise LoweringError(f"{what} must be a compile-time constant on the HIP backend", span=span)
    return v


def plan_kernel(launch: S.KernelLaunch, arch: str) -> KernelPlan:
    threads = 1
    for t in launch.threads:
        threads *= _const(t, "T.Kernel's threads", launch.span)
    plan = KernelPlan(threads)
    gemms = []

    def visit(n):
        if isinstance(n, S.DeclBuffer):
            plan.buffers[id(n.buffer)] = n.buffer
        elif isinstance(n, TO.Gemm):
            gemms.append(n)
    walk(launch.body, visit)
    from tilelang.backend.hip.register_layouts import assign_register_layouts, joint_tilings
    joint = joint_tilings(launch.body, gemms, plan.threads, arch)
    for g in gemms:
        _plan_gemm(plan, g, arch, joint.get(id(g)))
    for b, t in plan.tilings.items():
        plan.regs[b] = RegLayout("acc", t)
    assign_register_layouts(plan, launch.body, gemms)
    used = plan.lds_bytes()
    if used > LDS_BYTES:
        used = _fit_lds(plan, launch.body, used)
    if used > LDS_BYTES:
        raise LoweringError(f"the kernel's shared buffers and non-accumulator fragments need {used} bytes of LDS; "
                            f"a CDNA block has {LDS_BYTES}", span=launch.span,
                            hint=f"largest: {_largest(plan)}; use smaller tiles, or keep a gemm's A operand in a "
                                 f"T.alloc_fragment (registers) instead of shared memory (LDS buffers live at the same "
                                 f"time cannot share bytes; fragments that no MFMA layout fits stay in LDS)")
    return plan


def _largest(plan, n=3):
    sizes = sorted(((v, plan.buffers[k].name) for k, v in plan.lds_sizes().items()), reverse=True)
    return ", ".join(f"`{name}` {v} bytes" for v, name in sizes[:n])


def _fit_lds(plan, body, used):
    """Over the LDS budget: share bytes between buffers never live together, and if that
    is not enough, drop the rows' padding (bank conflicts on the MFMA reads, but it runs)."""
    from tilelang.backend.hip.lds_reuse import plan_lds_reuse, overlap_classes
    for unpad in (False, True):
        if unpad:
            if not plan.pitches:
                break
            plan.pitches.clear()
            used = min(used, sum(plan.lds_sizes().values()))
            if used <= LDS_BYTES:
                plan.lds_offsets, plan.lds_arena, plan.lds_keys = {}, 0, {}
                return used
        sizes = plan.lds_sizes()
        offsets, arena = plan_lds_reuse(plan, body, sizes)
        if arena < sum(sizes.values()):
            plan.lds_offsets, plan.lds_arena = offsets, arena
            plan.lds_keys = overlap_classes(offsets, sizes)
            used = arena
        if used <= LDS_BYTES:
            return used
    return used


def gemm_dims(g):
    a, c = g.A.extents, g.C.extents
    M, N = (_const(x, "T.gemm's tile sizes", g.span) for x in c[-2:])
    K = _const(a[-2] if g.trans_A else a[-1], "T.gemm's K", g.span)
    return M, N, K


@dataclass(frozen=True)
class RegLayout:
    """A fragment in registers, laid out by `tiling` (the transposed MFMA accumulator):
    "acc" the accumulator itself (`floatx{c_regs}[MT*NT]`), "tile" a fragment of its
    shape, slot for slot (`T[MT*NT*c_regs]`), "rows" a vector of its rows (`T[MT]`: the
    row each lane holds in tile row mt, replicated over the lanes and waves sharing it)."""
    kind: str
    tiling: object


def policy_name(g):
    p = g.policy
    name = getattr(p, "name", p)
    return {"FullRow": "row", "FullCol": "col", 1: "row", 2: "col"}.get(name, "square")


def _plan_gemm(plan, g, arch, tiling=None):
    A, B, C = g.A.buffer, g.B.buffer, g.C.buffer
    if C.scope != "local.fragment":
        raise LoweringError(f"T.gemm accumulates into a fragment (T.alloc_fragment); `{C.name}` is {C.scope}",
                            span=g.span)
    if C.dtype.name != "float32":
        raise TargetFeatureError(f"T.gemm into `{C.name}` ({C.dtype}): CDNA's MFMA accumulates in float32 here",
                                 g.span, hint="allocate the accumulator as float32 and cast when storing")
    if A.dtype.name != B.dtype.name:
        raise TargetFeatureError(f"T.gemm of {A.dtype} by {B.dtype}: MFMA needs both operands of one dtype", g.span)
    if not shapes_for(A.dtype.name, arch):
        fp8 = A.dtype.name.startswith("float8")
        raise TargetFeatureError(
            f"T.gemm on {A.dtype} operands has no MFMA form on {arch} in the HIP backend", g.span,
            hint=("fp8 MFMA needs gfx940+ and the FNUZ formats (float8_e4m3fnuz / float8_e5m2fnuz)" if fp8 else
                  "use float16 or bfloat16 operands (float8_*fnuz on gfx940)"))
    for buf in (A, B):
        if buf.scope not in ("shared", "local.fragment") or id(buf) in plan.tilings:
            raise LoweringError(f"T.gemm operand `{buf.name}` must be a shared buffer or a fragment that is not a "
                                f"gemm accumulator on the HIP backend", span=g.span,
                                hint="copy it into a T.alloc_shared / T.alloc_fragment tile first")
    if len(C.shape) != 2 or any(E.const_int_value(s) != E.const_int_value(x) for s, x in zip(C.shape, g.C.extents)):
        raise LoweringError(f"T.gemm's accumulator must be a whole 2-D fragment (`{C.name}`)", span=g.span)
    M, N, K = gemm_dims(g)
    waves = plan.threads // WAVE
    if plan.threads % WAVE or waves == 0:
        raise LoweringError(f"T.gemm needs whole wavefronts: {plan.threads} threads is not a multiple of {WAVE}",
                            span=g.span, hint="use threads=64, 128, 256, ...")
    if tiling is None:
        tiling = choose_tiling(A.dtype.name, arch, M, N, K, waves, policy_name(g))
    if tiling is None:
        sizes = ", ".join(f"{s.m}x{s.n}x{s.k}" for s in shapes_for(A.dtype.name, arch))
        raise LoweringError(f"T.gemm {M}x{N}x{K} on {waves} wavefronts: no MFMA tiling ({sizes}) divides it",
                            span=g.span, hint="use tile sizes that are multiples of 16 (M, N) and of the MFMA K")
    old = plan.tilings.get(id(C))
    if old is not None and old != tiling:
        raise LoweringError(f"`{C.name}` accumulates two gemms with different MFMA tilings ({old} / {tiling})",
                            span=g.span)
    plan.tilings[id(C)] = tiling
    plan.buffers[id(C)] = C
    # operands read along their rows get a padded pitch (when the whole buffer is the operand)
    for buf, along_rows in ((A, not g.trans_A), (B, g.trans_B)):
        if along_rows and len(buf.shape) == 2 and getattr(buf, "alias_of", None) is None:
            rows, cols = (E.const_int_value(d) for d in buf.shape)
            if rows and cols:
                p = padded_pitch(rows, cols, max(1, buf.dtype.bits // 8), tiling.shape)
                if p != cols:
                    plan.pitches[id(buf)] = p
