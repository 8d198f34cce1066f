"""The second look at a document's kernels: each traced PrimFunc is lowered for the target
(the CUDA pass pipeline and kernel plan for an explicit arch, no GPU and no NVRTC; or the
CPU pipeline), which finds the errors that only lowering sees, and, on a GPU target, where
each buffer lives: the register layout of a fragment (which thread holds which elements)
or the shared-memory offset, stages, padding and swizzle of a shared buffer (the CUDA
backend's `KernelPlan`, backend/cuda/plan/kernel.py)."""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field

from tilelang.lsp.analysis import Diagnostic, _Analyzer
from tilelang.backend.cuda.layout import REGISTER_FRAGMENT_KINDS

DEFAULT_ARCH = "sm_90a"


@dataclass
class Lowered:
    target: str
    diagnostics: list = field(default_factory=list)
    layouts: list = field(default_factory=list)   # per kernel: {buffer name: markdown}

    def to_dict(self):
        from dataclasses import asdict
        return asdict(self)

    @staticmethod
    def from_dict(d):
        from tilelang.lsp.analysis import Range
        ds = [Diagnostic(Range(**x["range"]), x["message"], x["severity"], x["code"]) for x in d["diagnostics"]]
        return Lowered(d["target"], ds, d["layouts"])


def parse_target_name(name: str | None):
    """'cpu' | 'sm_90a' | 'sm_80' | 'cuda' | 'cuda -arch=sm_80' -> ('cpu', None) or ('cuda', arch)."""
    name = (name or DEFAULT_ARCH).strip()
    if name == "cpu":
        return "cpu", None
    if name.startswith("cuda"):
        arch = name.split("-arch=", 1)[1].split()[0] if "-arch=" in name else DEFAULT_ARCH
        return "cuda", arch
    if name.startswith("sm_"):
        return "cuda", name
    raise ValueError(f"target must be 'cpu', an arch such as 'sm_90a' or 'sm_80', or 'cuda -arch=sm_90a'; "
                     f"got {name!r}")


def lower_kernels(funcs, text, path, target_name=None) -> Lowered:
    """Lower every PrimFunc of a document's analysis for the target; their errors as
    diagnostics, their buffers' layouts as text."""
    kind, arch = parse_target_name(target_name)
    out = Lowered(target_name or DEFAULT_ARCH)
    an = _Analyzer(text, path)   # (positions and exception -> diagnostic)
    for pf in funcs:
        line = pf.source[2] if pf.source else 1
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                out.layouts.append(_lower_cuda(pf, arch) if kind == "cuda" else _lower_cpu(pf))
            except Exception as e:  # noqa: BLE001 - every lowering failure is the kernel's diagnostic
                an.add_exception(e, line)
                out.layouts.append({})
        for w in caught:   # the compiler's decisions the user should hear about (stages capped, ...)
            an.add(an.pos.range(line, an.pos.first_code_col(line)), f"{out.target}: {w.message}", "warning",
                   w.category.__name__)
    out.diagnostics = an.result.diagnostics
    return out


def _lower_cpu(pf):
    from tilelang.backend.registry import get_backend, parse_target
    from tilelang.transform.pass_manager import PassContext
    get_backend("cpu").lower(pf, parse_target("cpu"), PassContext(config={}))
    return {}   # one thread per block: fragments and shared buffers are plain arrays


def _lower_cuda(pf, arch):
    from tilelang.backend.registry import get_backend, parse_target
    from tilelang.backend.cuda.options import OPTIONS, CudaOptions
    from tilelang.backend.cuda.plan.plan_kernels import kernel_plan
    from tilelang.backend.cuda.plan.kernel import plan_kernel
    from tilelang.backend.cuda.emit.module import generate
    from tilelang.ir import stmt as S
    from tilelang.ir.visitor import walk
    from tilelang.transform.pass_manager import PassContext
    target = parse_target({"kind": "cuda", "arch": arch})
    ctx = PassContext(config={})
    options = ctx.config[OPTIONS] = CudaOptions.from_config(ctx.config, arch)
    lowered = get_backend("cuda").lower(pf, target, ctx)
    launches = []
    walk(lowered.body, lambda n: launches.append(n) if isinstance(n, S.KernelLaunch) else None)
    texts = {}
    for launch in launches:
        plan = kernel_plan(launch) or plan_kernel(launch, arch, options)   # the pass plan_kernels' plan
        decls = []
        walk(launch.body, lambda n: decls.append(n.buffer) if isinstance(n, S.DeclBuffer) else None)
        for b in decls:
            p = plan.placements.get(id(b))
            if p is not None and b.name not in texts:
                texts[b.name] = describe_placement(p, b, arch, plan.nthreads)
    generate(lowered, target, options)   # code generation's own checks (no device compile)
    return texts


def describe_placement(p, buf, arch, nthreads) -> str:
    """Markdown: where the CUDA backend puts `buf` (a Placement of its KernelPlan)."""
    if p.kind == "smem":
        parts = [f"shared memory at byte offset {p.offset}"]
        if p.stages > 1:
            parts.append(f"{p.stages} pipeline stages of {p.stage_bytes} B")
        elif p.stage_bytes:
            parts.append(f"{p.stage_bytes} B")
        if p.swizzle:
            parts.append("128-byte swizzle (`tl::sw128`, what wgmma and TMA read)")
        dense = buf.get_strides()
        if p.strides and list(p.strides) != [d if isinstance(d, int) else None for d in dense]:
            parts.append(f"rows padded: strides {list(p.strides)} (bank-conflict-free ldmatrix)")
        return f"On {arch}: " + ", ".join(parts) + "."
    if p.kind in REGISTER_FRAGMENT_KINDS and p.acc is not None:
        lay = p.acc
        name = lay.layout() if hasattr(lay, "layout") else type(lay).__name__
        what = {"acc": "the tensor-core accumulator pattern", "row": "one value per accumulator row",
                "col": "one value per accumulator column",
                "tile": "a thread tile of its T.Parallel loops"}[p.kind]
        lines = [f"On {arch}: registers, `{name}` ({what}); {getattr(lay, 'regs', '?')} registers per thread "
                 f"of {nthreads}."]
        lines += thread_map(lay)
        return "\n".join(lines)
    words = {"local": "per-thread registers (a local array)", "var": "one per-thread variable",
             "param": "global memory (a kernel parameter)", "view": "a view of another buffer's storage",
             "mbar": "mbarriers in shared memory", "workspace": "a global workspace"}
    return f"On {arch}: {words.get(p.kind, p.kind)}."


def thread_map(lay, threads=(0, 1, 2, 3, 32), regs=8) -> list[str]:
    """The first elements each of a few threads holds: `t0: r0→(0, 0) r1→(0, 1) ...`."""
    n = getattr(lay, "regs", 0)
    has_row, has_col = hasattr(lay, "row"), hasattr(lay, "col")
    if not n or not (has_row or has_col):
        return ["Every thread holds the whole value (replicated)."] if n else []
    out = ["", "thread → (register → element):", "```"]
    for t in threads:
        cells = []
        for r in range(min(n, regs)):
            idx = ((lay.row(t, r), lay.col(t, r)) if has_row and has_col else
                   (lay.row(t, r),) if has_row else (lay.col(t, r),))
            cells.append(f"r{r}→({', '.join(map(str, idx))})")
        out.append(f"t{t:<3d} " + " ".join(cells) + (" …" if n > regs else ""))
    out.append("```")
    return out
