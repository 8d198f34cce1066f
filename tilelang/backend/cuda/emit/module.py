"""A lowered PrimFunc -> one CUDA C++ translation unit (one `__global__` function per
T.Kernel) plus the launch metadata the runtime needs. Per-kernel code generation is
in `emit/kernel.py`."""
from __future__ import annotations

from tilelang.ir import expr as E
from tilelang.ir import stmt as S
from tilelang.ir.errors import located
from tilelang.ir.buffer import is_packed
from tilelang.ir.extern import imported_sources
from tilelang.backend.c.launch import LaunchABI, py_expr, top_level
from tilelang.backend.cuda.emit.expr import ctype
from tilelang.backend.cuda.emit.kernel import KernelCodegen, Names
from tilelang.ir import mbarrier as M
from tilelang.backend.cuda.analysis.launch_config import COOPERATIVE_INCLUDE, called, launch_needs, with_cluster_dims
from tilelang.backend.cuda.options import CudaOptions
from tilelang.backend.cuda.ops.wgmma import instruction_wrappers

HEADER = '#include "tl_cuda/tl.h"\n'
# short type names that device code written for nvcc gets from the host's <sys/types.h>
# (NVRTC has no host headers); repeating a typedef of the same type is legal C++
IMPORT_PRELUDE = "typedef unsigned int uint;\ntypedef unsigned short ushort;\ntypedef unsigned char uchar;\n\n"


def _top_level(body):
    """(workspaces, launches) of the function body (backend/c/launch.py `top_level`);
    any other function-level statement is an error on CUDA."""
    workspaces, launches, rest = top_level(body)
    for s in rest:
        if isinstance(s, S.DeclBuffer):
            raise located(NotImplementedError, f"`{s.buffer.name}` ({s.buffer.scope}) is allocated outside "
                          "T.Kernel", span=s.span, hint="allocate it inside `with T.Kernel(...)`")
        raise located(NotImplementedError, "on CUDA, statements run inside `with T.Kernel(...)`; this one "
                      "is at function level", span=s.span,
                      hint="move it into the T.Kernel block (the CPU target runs function-level code "
                           "on the host, CUDA does not)")
    if not launches:
        raise NotImplementedError("the function has no T.Kernel (and no T.Parallel(..., 'SSR') loop)")
    return workspaces, launches


def scalar_class(dt):
    return "float" if dt.is_float else "int"


def generate(func, target, options=None):
    """(source, meta) for a lowered function, with this compile's CudaOptions."""
    if options is None:
        options = CudaOptions.from_config(None, target.arch)
    workspaces, launches = _top_level(func.body)
    names = Names()
    params = []          # (class, obj, C declaration)
    abi = LaunchABI.of(func, workspaces)   # the kernels' parameters: tensors and workspaces, ints, floats
    bufs = abi.buffers[:len(abi.buffers) - len(workspaces)]
    # a kernel that waits with T.pdl_sync starts while the kernel before it still
    # writes: its loads must not go through the non-coherent read-only path that
    # __restrict__ lets the compiler choose
    pdl_waits = any(M.PDL_SYNC in called(launch.body) for launch in launches)
    for cls, obj in abi.slots():
        if cls == "buffer":
            restrict = "" if getattr(obj, "may_alias", False) or pdl_waits else " __restrict__"
            t = "unsigned char" if is_packed(obj) else ctype(obj.dtype)   # 4-bit elements: packed bytes
            params.append(("buffer", obj, f"{t}*{restrict} {names.new(obj, obj.name)}"))
        else:
            params.append((cls, obj, f"{ctype(obj.dtype)} {names.new(obj, obj.name)}"))
    env = abi.int_env()
    kernels, sources, plan_pages, wgmma_configs = [], [], [], []
    for k, launch in enumerate(launches):
        if "cuda_source" in launch.annotations:   # T.CUDASourceCodeKernel: the user's own source
            m = {"entry": launch.annotations["cuda_source_entry"], "grid": launch.grid,
                 "threads": [E.const_int_value(E.convert(t)) for t in launch.threads] + [1] * (3 - len(launch.threads)),
                 "smem": 0, "aligned": {}, "cluster": None, "cooperative": False, "pdl": False, "tmaps": []}
            m["grid"] = [py_expr(g, env) for g in m["grid"]] + ["1"] * (3 - len(m["grid"]))
            kernels.append(m)
            sources.append(launch.annotations["cuda_source"].strip() + "\n")
            continue
        entry = f"{func.name}_kernel" if len(launches) == 1 else f"{func.name}_kernel_{k}"
        kc = KernelCodegen(launch, entry, target, params, names.child(), options, {id(b) for b in bufs})
        src, m = kc.emit()
        wgmma_configs += m.pop("wgmma_configs")
        if options.lower_trace:   # the kernel's backend decisions: a page of the lower trace
            from tilelang.backend.cuda.plan.report import format_plan, layout_records
            plan_pages.append((entry, format_plan(entry, launch, kc.plan), layout_records(launch, kc.plan)))
        m.update(launch_needs(launch, target, entry))   # cluster / cooperative / pdl (analysis/launch_config.py)
        src = with_cluster_dims(src, entry, m["cluster"])
        m["grid"] = [py_expr(g, env) for g in m["grid"]] + ["1"] * (3 - len(m["grid"]))
        # tensor maps of the kernel's bulk tensor copies: extra trailing parameters
        m["tmaps"] = [tensor_map_spec(t, bufs, env) for t in kc.tmaps]
        kernels.append(m)
        sources.append(src)
    meta = {
        "kernels": kernels,
        "workspaces": [{"shape": [py_expr(E.convert(d), env) for d in w.shape], "dtype": w.dtype.name}
                       for w in workspaces],
        "param_types": [(cls, obj.dtype.name) for cls, obj, _ in params],
        "param_names": [obj.name for _, obj, _ in params],
        **abi.counts(), "n_buffers": len(bufs),   # the caller's tensors (the launcher allocates workspaces)
        "plan_pages": plan_pages,   # [(entry, text, layouts)] under the lower trace (the backend takes them out)
    }
    # T.import_source texts: after our header, before the kernels that call into them
    imported = "".join(t.rstrip() + "\n\n" for t in imported_sources(func.body))
    if imported:
        imported = IMPORT_PRELUDE + imported
    header = HEADER + (COOPERATIVE_INCLUDE if any(k["cooperative"] for k in kernels) else "")
    if options.wgmma_uniform_wg:   # tl_cuda/wgmma.h: the warpgroup index broadcast from lane 0 (opt-in)
        header = "#define TL_WGMMA_UNIFORM_WG 1\n" + header
    # one specialization of tl::WgmmaSS / WgmmaRS per instruction shape for all kernels of the module
    # (two kernels using the same shape must not define it twice)
    wrappers = instruction_wrappers(wgmma_configs)
    return header + "\n" + imported + wrappers + "\n\n".join(sources) + "\n", meta


def tensor_map_spec(t, bufs, env):
    """What the launcher needs to encode the tensor map of TmaCopy `t` (tma.py): the
    source's extents and byte strides, innermost first, and the box (64 columns (t.width), the
    tile's rows along its row dimension, 1 elsewhere). Other maps describe themselves."""
    if hasattr(t, "spec"):   # tma_reduce.TmaReduce
        return t.spec(bufs, env)
    shape, es = t.src.shape, t.src.dtype.itemsize
    n = len(shape)
    strides, acc = [], es
    for d in range(n - 1, 0, -1):
        acc *= E.const_int_value(shape[d])
        strides.append(acc)
    box = [t.box_rows if d == t.row_dim else 1 for d in range(n)]
    box[n - 1] = t.width
    spec = {"buffer": bufs.index(t.src), "dims": [py_expr(E.convert(shape[d]), env) for d in range(n - 1, -1, -1)],
            "strides": strides, "box": box[::-1], "elem_bytes": es}
    if getattr(t, "slab_view", False):   # a slab_row tile in one box (tma.py TmaCopy.slab_view_map)
        extra, row_strides, extra_box = t.slab_view_map()
        spec["dims"][1] = py_expr(E.binop("-", E.convert(shape[0]), E.convert(t.rows - 16)), env)
        spec["dims"] += [str(d) for d in extra]
        spec["strides"] += [r * strides[0] for r in row_strides]
        spec["box"] += extra_box
    if t.plain or t.swizzle_bytes != 128:   # 64B / 32B / no swizzle (the launcher's default is 128B)
        spec["swizzle"] = t.swizzle_code
    return spec
