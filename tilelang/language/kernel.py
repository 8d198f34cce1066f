"""`T.Kernel`: a launch of a grid of blocks; the body runs once per block."""
from __future__ import annotations

from tilelang.ir import builder as B
from tilelang.ir import stmt as S
from tilelang.ir.expr import Var, convert, PrimExpr
from tilelang.ir.errors import TileLangError, located


def _grid_extent(g):
    if isinstance(g, float) or (isinstance(g, PrimExpr) and not g.dtype.is_int):
        raise located(TypeError, f"T.Kernel: a grid extent must be an integer, got {g!r}",
                      hint="use T.ceildiv(n, block) or // for the number of blocks")
    return convert(g)


class KernelFrame(B.Frame):
    def __init__(self, *grid, threads=128, prelude=None, cluster_dims=None, is_cpu=False, **kwargs):
        if not grid:   # `T.Kernel(threads=n)`: one block
            grid = (1,)
        if len(grid) > 3:
            raise TileLangError(f"T.Kernel takes 1 to 3 grid dimensions, got {len(grid)}")
        given = 1 if threads is None or isinstance(threads, (int, PrimExpr)) else len(list(threads))
        threads = _normalize_threads(threads)[:max(1, given)]   # the axes the user named
        self.grid = [_grid_extent(g) for g in grid]
        self.threads = threads
        self.annotations = {}
        cluster_dims = normalize_cluster_dims(cluster_dims)
        if cluster_dims is not None:
            self.annotations["cluster_dims"] = cluster_dims
        self.is_cpu = is_cpu

    def __enter__(self):
        b = B.require("T.Kernel")
        names = B.source_names("with") or []
        defaults = ["bx", "by", "bz"]
        self.block_vars = [Var(names[i] if i < len(names) else defaults[i]) for i in range(len(self.grid))]
        self.thread_vars = [Var(n) for n in ("tx", "ty", "tz")[:len(self.threads)]]
        b.push()
        self.body_level = len(b.stack) - 1   # where kernel-wide declarations go (T.rng_init)
        b.kernel_depth += 1
        b.kernel_frames.append(self)
        b.block_scopes.append(self)
        return self.block_vars[0] if len(self.block_vars) == 1 else tuple(self.block_vars)

    def __exit__(self, et, ev, tb):
        b = B.current()
        b.kernel_depth -= 1
        b.kernel_frames.pop()
        b.block_scopes.pop()
        body = b.pop()
        if et is None:
            b.emit(S.KernelLaunch(self.grid, self.threads, self.block_vars, self.thread_vars, body,
                                  self.annotations))
        return False


Kernel = KernelFrame


def _normalize_threads(threads):
    """`threads=` of T.Kernel as [x, y, z]: None is 128 threads; each extent a positive
    compile-time int."""
    if threads is None:
        threads = 128
    if isinstance(threads, (int, PrimExpr)):
        threads = [threads]
    threads = list(threads)
    if not 1 <= len(threads) <= 3:
        raise located(ValueError, f"`threads` takes 1 to 3 dimensions, got {len(threads)}")
    out = []
    for t in threads:
        from tilelang.ir.expr import const_int_value
        v = const_int_value(t)
        if v is None:
            raise located(ValueError, f"threads must be compile-time ints, got {t}")
        if v <= 0:
            raise located(ValueError, f"threads must be positive, got {list(threads)}")
        out.append(v)
    return out + [1] * (3 - len(out))


def normalize_cluster_dims(cluster_dims):
    """`cluster_dims` as [x, y, z] (an int n: [n, 1, 1]; missing axes: 1), or None for
    a cluster of one block (an ordinary launch), as published."""
    if cluster_dims is None:
        return None
    if isinstance(cluster_dims, int) and not isinstance(cluster_dims, bool):
        dims = [cluster_dims]
    elif isinstance(cluster_dims, (list, tuple)) and 1 <= len(cluster_dims) <= 3:
        dims = list(cluster_dims)
    else:
        raise TileLangError(f"cluster_dims must be an int or a tuple of 1 to 3 ints, got {cluster_dims!r}",
                            hint="e.g. T.Kernel(gx, gy, threads=128, cluster_dims=(2, 1, 1))")
    out = []
    for d in dims:
        v = d if isinstance(d, int) else None
        if v is None and isinstance(d, PrimExpr):
            from tilelang.ir.expr import const_int_value
            v = const_int_value(d)
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise TileLangError(f"cluster_dims must be positive compile-time ints, got {cluster_dims!r}")
        out.append(v)
    out += [1] * (3 - len(out))
    return None if out == [1, 1, 1] else out


def _frame():
    b = B.require("thread bindings")
    if not b.kernel_frames:
        raise TileLangError("this can only be used inside `with T.Kernel(...)`")
    return b.kernel_frames[-1]


def CUDASourceCodeKernel(*grid, threads=128, source_code_or_path, entry_name="main_kernel"):  # noqa: N802
    """A launch of CUDA source you wrote: the `__global__` function `entry_name` of
    `source_code_or_path` (the text, or the path of a .cu file) runs on this grid with
    `threads` threads a block, called with the kernel's tensors, then its integer scalars
    and dynamic dimensions, then its float scalars (the parameter order of our kernels)."""
    import os
    import re
    if isinstance(source_code_or_path, os.PathLike) or (
            isinstance(source_code_or_path, str) and "\n" not in source_code_or_path
            and os.path.isfile(os.path.expanduser(source_code_or_path))):
        with open(os.path.expanduser(os.fspath(source_code_or_path)), encoding="utf-8") as f:
            source = f.read()
    elif isinstance(source_code_or_path, str):
        source = source_code_or_path
    else:
        raise located(TypeError, f"T.CUDASourceCodeKernel: source_code_or_path must be CUDA source text or a "
                                 f"path, got {type(source_code_or_path).__name__}")
    if not isinstance(entry_name, str) or not entry_name.strip():
        raise located(ValueError, "T.CUDASourceCodeKernel: entry_name must be a non-empty string")
    entries = re.findall(r"__global__\s+(?:void\s+)?(?:__launch_bounds__\([^)]*\)\s*)?(?:void\s+)?(\w+)\s*\(",
                         source)
    if entry_name not in entries:
        raise located(ValueError, f"T.CUDASourceCodeKernel: no __global__ function `{entry_name}` in the source. "
                                  f"Available entries: {', '.join(entries) or 'none'}")
    if not re.search(r'extern\s+"C"[^;{}]*\b' + re.escape(entry_name) + r"\s*\(", source):
        raise located(ValueError, f"T.CUDASourceCodeKernel: declare `{entry_name}` extern \"C\" (its C++ name "
                                  f"is mangled otherwise, and the launcher looks it up by name)")
    frame = KernelFrame(*grid, threads=threads)
    frame.annotations["cuda_source"] = source
    frame.annotations["cuda_source_entry"] = entry_name
    frame.__enter__()
    frame.__exit__(None, None, None)


def get_thread_binding(dim: int = 0):
    return _frame().thread_vars[dim]


def launch_thread(thread, extent=None):
    """TVM's `T.launch_thread("threadIdx.x", n)` inside T.Kernel: the index of that thread
    (or block) axis, whose extent must be the kernel's."""
    axes = {"threadIdx.x": ("thread_vars", "threads", 0), "threadIdx.y": ("thread_vars", "threads", 1),
            "threadIdx.z": ("thread_vars", "threads", 2), "blockIdx.x": ("block_vars", "grid", 0),
            "blockIdx.y": ("block_vars", "grid", 1), "blockIdx.z": ("block_vars", "grid", 2)}
    if thread not in axes:
        raise located(ValueError, f"T.launch_thread takes one of {', '.join(axes)}, got {thread!r}")
    f = _frame()
    vs, exts, d = axes[thread]
    if d >= len(getattr(f, vs)):
        raise TileLangError(f"T.launch_thread({thread!r}): the kernel has no such axis")
    from tilelang.ir.expr import const_int_value
    if extent is not None and const_int_value(extent) is not None and \
            const_int_value(getattr(f, exts)[d]) not in (None, const_int_value(extent)):
        raise TileLangError(f"T.launch_thread({thread!r}, {extent}): the kernel launches "
                            f"{getattr(f, exts)[d]} along that axis")
    return getattr(f, vs)[d]


def get_thread_bindings():
    return list(_frame().thread_vars)


def get_block_binding(dim: int = 0):
    return _frame().block_vars[dim]


def get_block_bindings():
    return list(_frame().block_vars)


def get_thread_extent(dim: int = 0):
    return _frame().threads[dim]


def get_thread_extents():
    """The block's thread extents, one per dimension."""
    return list(_frame().threads)


def get_block_extent(dim: int = 0):
    """The grid's extent along `dim`."""
    return _frame().grid[dim]


def get_block_extents():
    return list(_frame().grid)


def annotate_min_blocks_per_sm(n: int):
    """Ask the CUDA compiler to fit at least `n` blocks per SM (the second argument of
    `__launch_bounds__`: it caps registers per thread accordingly)."""
    if not isinstance(n, int) or n < 1:
        raise TileLangError(f"T.annotate_min_blocks_per_sm takes a positive int, got {n!r}")
    _frame().annotations["min_blocks_per_sm"] = n


def use_swizzle(panel_size: int = 10, order: str = "row", enable: bool = True):
    """Block rasterization hint (better L2 reuse on GPUs); no effect on results."""
    f = _frame()
    if enable:
        f.annotations["swizzle"] = (panel_size, order)


def _linear_thread():
    """The thread's index in its block, x fastest (what warps are cut from)."""
    f = _frame()
    idx, stride = None, 1
    for v, n in zip(f.thread_vars, f.threads):
        term = v if stride == 1 else v * stride
        idx = term if idx is None else idx + term
        stride = stride * n
    return idx


def _warp(warp_size):
    if warp_size is None:
        return 32
    if isinstance(warp_size, bool) or not isinstance(warp_size, int) or warp_size <= 0:
        raise located(ValueError, f"warp_size must be a positive int, got {warp_size!r}")
    return warp_size


def get_lane_idx(warp_size: int | None = None):
    """The thread's lane within its warp (32 lanes unless `warp_size` says otherwise)."""
    return _linear_thread() % _warp(warp_size)


def get_warp_idx(warp_size: int | None = None):
    return _linear_thread() // _warp(warp_size)


def get_warp_idx_sync(warp_size: int | None = None):
    """The warp index (the published form makes it provably warp-uniform; ours is already
    computed as `thread // warp_size`)."""
    return get_warp_idx(warp_size)


def get_warp_group_idx(warp_size: int | None = None, warps_per_group: int | None = None):
    if warps_per_group is None:
        warps_per_group = 4
    if isinstance(warps_per_group, bool) or not isinstance(warps_per_group, int) or warps_per_group <= 0:
        raise located(ValueError, f"warps_per_group must be a positive int, got {warps_per_group!r}")
    return _linear_thread() // (_warp(warp_size) * warps_per_group)


_THREAD_TAGS = {"threadIdx.x": ("thread", 0), "threadIdx.y": ("thread", 1), "threadIdx.z": ("thread", 2),
                "blockIdx.x": ("block", 0), "blockIdx.y": ("block", 1), "blockIdx.z": ("block", 2)}


def thread_binding(start, stop=None, thread=None, *, annotations=None):
    """`T.thread_binding(0, n, thread="threadIdx.x")`: the kernel's index along that
    thread (or block) axis, whose extent must be n. Assigned (`tx = ...`) or iterated
    (`for tx in ...`, one iteration per thread), as in TVM script."""
    if thread is None and isinstance(stop, str):
        start, stop, thread = 0, start, stop
    if stop is None:
        start, stop = 0, start
    if thread not in _THREAD_TAGS:
        raise TileLangError(f"T.thread_binding: thread={thread!r} must be one of {', '.join(_THREAD_TAGS)}")
    b = B.current()
    if b is not None and not b.kernel_frames or (b is not None and getattr(b.kernel_frames[-1], "implicit", False)):
        return LaunchAxis(thread, start, stop)   # TVM's launch by bound loops, without T.Kernel
    f = _frame()
    kind, axis = _THREAD_TAGS[thread]
    extents = f.threads if kind == "thread" else f.grid
    vars_ = f.thread_vars if kind == "thread" else f.block_vars
    if axis >= len(vars_):
        raise TileLangError(f"T.thread_binding({thread!r}): the kernel has {len(vars_)} {kind} dimension(s)",
                            hint="give T.Kernel(..., threads=(x, y, z)) that many dimensions")
    from tilelang.arith.simplify import simplify
    from tilelang.ir.expr import const_int_value
    ext = simplify(convert(stop) - convert(start))
    have = simplify(convert(extents[axis]))
    if const_int_value(start) != 0 or const_int_value(simplify(ext - have)) != 0:
        raise TileLangError(f"T.thread_binding({start}, {stop}, thread={thread!r}) does not match the kernel's "
                            f"extent {have} along {thread}",
                            hint="bind the whole axis: T.thread_binding(0, <extent>, thread=...)")
    return vars_[axis]


class LaunchAxis:
    """`for bx in T.thread_binding(n, thread="blockIdx.x"):` outside T.Kernel (TVM script's
    way to launch): the outermost bound loop opens a kernel, each bound loop inside it sets
    one grid or thread axis; the statements inside the innermost one are the kernel body."""

    def __init__(self, thread, start, stop):
        from tilelang.ir.expr import const_int_value
        if const_int_value(start) != 0:
            raise TileLangError(f"T.thread_binding({start}, {stop}, thread={thread!r}): a launch axis starts at 0")
        self.thread, self.extent = thread, convert(stop)

    def iterate(self):
        b = B.require("T.thread_binding")
        kind, axis = _THREAD_TAGS[self.thread]
        outer = not b.kernel_frames
        if outer:
            if kind != "block" or axis != 0:
                raise TileLangError(f"a launch by bound loops starts with blockIdx.x, got {self.thread}",
                                    hint="write `for bx in T.thread_binding(n, thread=\"blockIdx.x\")` outermost, "
                                         "or use `with T.Kernel(...)`")
            frame = KernelFrame(self.extent, threads=1)
            frame.implicit = True
            var = frame.__enter__()
            try:
                yield var
            finally:
                frame.implicit = False
                frame.__exit__(None, None, None)
            return
        frame = b.kernel_frames[-1]
        from tilelang.ir.expr import const_int_value
        if kind == "block":
            if axis != len(frame.grid):
                raise TileLangError(f"bound loops must give blockIdx.x, .y, .z in order; got {self.thread}")
            frame.grid.append(self.extent)
            frame.block_vars.append(Var(B.source_names("for")[0] if B.source_names("for") else "byz"[axis - 1]))
            yield frame.block_vars[-1]
            return
        n = const_int_value(self.extent)
        if n is None or n <= 0:
            raise TileLangError(f"T.thread_binding: the extent of {self.thread} must be a positive constant, "
                                f"got {self.extent}")
        if axis == 0 and frame.threads == [1]:
            frame.threads = [n]
        elif axis == len(frame.threads):
            frame.threads.append(n)
            frame.thread_vars.append(Var(("tx", "ty", "tz")[axis]))
        else:
            raise TileLangError(f"bound loops must give threadIdx.x, .y, .z in order; got {self.thread}")
        yield frame.thread_vars[axis]


def is_launch_index(v) -> bool:
    """Whether `v` is a thread or block index of the innermost T.Kernel."""
    b = B.current()
    if b is None or not b.kernel_frames or not isinstance(v, Var):
        return False
    f = b.kernel_frames[-1]
    return any(v is x for x in list(f.thread_vars) + list(f.block_vars))
