"""`JITKernel`: a compiled PrimFunc, callable with arrays. Checks every argument
against the signature, binds dynamic dimensions, allocates `out_idx` outputs."""
from __future__ import annotations

import os
import sys
import time

import numpy as np

from tilelang.version import __version__
from tilelang.backend.registry import parse_target, get_backend
from tilelang.ir.buffer import Buffer
from tilelang.ir.expr import Var, const_int_value, PrimExpr
from tilelang.ir.errors import ArgumentError, TileLangError, located
from tilelang.ir.structural_hash import structural_hash
from tilelang.ir.span import Span
from tilelang.jit import cache
from tilelang import arrays
from tilelang.jit.binding import shape_text
from tilelang.transform.pass_manager import PassContext


_OBSERVERS = ("tl.lower_trace", "tl.pass_profile", "tl.pass_profile_threshold_ms")


def _caller_span(depth=2):
    from tilelang.ir.span import caller_span
    return caller_span(depth + 1)


def _normalize_out_idx(out_idx, n):
    if out_idx is None:
        return []
    if isinstance(out_idx, int):
        out_idx = [out_idx]
    out = []
    for i in out_idx:
        j = i + n if i < 0 else i
        if not 0 <= j < n:
            raise TileLangError(f"out_idx {i} is out of range for a function with {n} parameters")
        out.append(j)
    return out



class JITKernel:
    def __init__(self, func, out_idx=None, target="auto", execution_backend="auto", verbose=False,
                 pass_configs=None, compile_flags=None, target_host=None):
        self.prim_func = func
        self.func = func
        self.target = parse_target(target)
        self.backend = get_backend(self.target.kind)
        attr_out = func.attrs.get("tilelang_out_idx")
        if attr_out is not None and out_idx is not None:
            raise located(ValueError, f"Out index conflict: kernel `{func.name}` returns its T.empty outputs "
                                      f"(out_idx {list(attr_out)}); do not pass out_idx={out_idx} as well")
        self.out_idx = _normalize_out_idx(out_idx if attr_out is None else list(attr_out), len(func.params))
        from tilelang.transform.pass_keys import check_pass_configs
        check_pass_configs(pass_configs)
        # PassConfigKey members hash as enum members, not as their strings: use the strings;
        # a surrounding `tvm.transform.PassContext` gives defaults
        from tilelang.transform.pass_manager import current_pass_configs
        self.pass_configs = current_pass_configs()
        self.pass_configs.update(func.attrs.get("tilelang_pass_configs", {}))   # T.annotate_pass_configs
        self.pass_configs.update({getattr(k, "value", k): v for k, v in (pass_configs or {}).items()})
        if isinstance(compile_flags, str):
            compile_flags = compile_flags.split()
        self.compile_flags = list(func.attrs.get("tilelang_compile_flags", [])) + list(compile_flags or [])
        extra = self.pass_configs.get("tl.device_compile_flags")
        if extra:
            self.compile_flags += extra.split() if isinstance(extra, str) else list(extra)
        self.verbose = verbose
        t0 = time.perf_counter()
        self.artifact, self.cache_hit = self._build()
        self.compile_time = time.perf_counter() - t0
        self.launcher = self.backend.load(self.artifact)
        self._prepare_signature()
        self.host_assumes = _host_assumes(func)
        self._prepare_aligned_variant()
        if verbose:
            print(f"[tilelang] {func.name}: {'cache hit' if self.cache_hit else 'compiled'} for "
                  f"{self.target} in {self.compile_time * 1e3:.1f} ms", file=sys.stderr)

    # compile ------------------------------------------------------------------
    def cache_key(self):
        ident = getattr(self.backend, "identity", lambda: "")()
        # the debug switches change what is printed, not the kernel
        cfg = sorted((k, repr(v)) for k, v in self.pass_configs.items() if k not in _OBSERVERS)
        return cache.make_key("tilelang", __version__, cache.code_fingerprint(), structural_hash(self.prim_func), self.target.key(),
                              cfg, self.compile_flags, ident)

    def _build(self):
        from tilelang.transform.pass_manager import trace_dir, print_profile
        from tilelang.tools import trace as lower_trace
        ctx = PassContext(config=dict(self.pass_configs), target=self.target)
        if self.compile_flags:
            ctx.config["compile_flags"] = self.compile_flags
        key = self.cache_key()

        def build():
            try:
                art = self.backend.build(self.prim_func, self.target, ctx)
            finally:   # the trace of a failed compile is the one worth reading
                lower_trace.finish(ctx)
            art.meta["pass_timings"] = list(ctx.timings)   # printed again on a cache hit
            return art
        if trace_dir(ctx):  # a trace was asked for: always run the passes
            art, hit = build(), False
            cache.store(key, art)
        else:
            art, hit = cache.get_or_build(key, build)
        self.pass_timings = art.meta.get("pass_timings", [])
        print_profile(self.pass_timings, self.pass_configs, title=f"pass timings ({self.prim_func.name}, "
                      f"{self.target.kind})", cached=hit)
        return art, hit

    # signature ------------------------------------------------------------------
    def _prepare_signature(self):
        f = self.prim_func
        self.params = f.params
        self.in_idx = [i for i in range(len(f.params)) if i not in self.out_idx]
        self.dyn_vars = f.dynamic_vars()
        dyn_ids = {id(v): k for k, v in enumerate(self.dyn_vars)}
        # where each dynamic variable can be read from: (param index, dim, is_stride)
        self.dyn_source = {}
        for i, p in enumerate(f.params):
            if isinstance(p, Buffer) and i not in self.out_idx:
                for d, s in enumerate(p.shape):
                    if isinstance(s, Var) and id(s) in dyn_ids and id(s) not in self.dyn_source:
                        self.dyn_source[id(s)] = (i, d)
        from tilelang.jit.binding import Binder, pack_factor
        self.binder = Binder(f, self.in_idx)
        for v in self.binder.solvable():
            raise TileLangError(f"dynamic dimension `{v.name}` only appears in outputs; it cannot be "
                                f"inferred from the inputs", hint="make it a scalar parameter instead")
        # calls the generated fast path cannot take: expression dimensions, declared strides,
        # packed sub-byte tensors
        self._needs_binder = not self.binder.simple or any(
            isinstance(p, Buffer) and (p.strides is not None or pack_factor(p.dtype) > 1) for p in f.params)
        # outputs whose shapes are expressions (of dimensions or scalar arguments)
        self._outputs_need_env = any(not isinstance(s, (int, Var)) and const_int_value(s) is None
                                     for i in self.out_idx for s in f.params[i].shape)

    def _check(self, i, p, x, dyn, span):
        name = p.name
        if not arrays.is_array(x):
            raise ArgumentError(f"argument `{name}` must be a tensor of shape {shape_text(p.shape)} and dtype "
                                f"{p.dtype}, got {type(x).__name__}", span)
        from tilelang.jit.binding import pack_factor, STORAGE_DTYPES, logical_shape
        try:
            dt = arrays.array_dtype(x)
        except ValueError:
            raise ArgumentError(f"argument `{name}` has dtype {x.dtype}, which tilelang has no type for; the "
                                f"kernel expects {p.dtype}", span) from None
        packed = pack_factor(p.dtype) > 1
        if packed and dt.name not in STORAGE_DTYPES and dt != p.dtype:
            raise ArgumentError(f"argument `{name}` has dtype {dt}, the kernel expects {p.dtype} packed two per "
                                f"byte in an int8 or uint8 tensor", span)
        if not packed and dt != p.dtype:
            raise ArgumentError(f"argument `{name}` has dtype {dt}, the kernel expects {p.dtype}", span,
                                hint=f"convert it, e.g. x.to({_torch_name(p.dtype)})")
        dev = arrays.device_type(x)
        want = "cpu" if self.target.kind == "cpu" else "cuda"
        if dev != want:
            from tilelang.backend.registry import cuda_available
            hint = f"move it with .to('{want}')" if want == "cpu" or cuda_available() else \
                "no CUDA GPU is visible here: compile with target='cpu' to run the kernel on this machine"
            raise ArgumentError(f"argument `{name}` is on device '{dev}', the kernel was compiled for "
                                f"'{self.target.kind}'", span, hint=hint)
        shape = tuple(int(s) for s in x.shape)
        if packed and dt.name in STORAGE_DTYPES:
            shape = logical_shape(p.dtype, shape)[0]
        if len(shape) != len(p.shape):
            raise ArgumentError(f"argument `{name}` has {len(shape)} dimensions {tuple(shape)}, the kernel "
                                f"expects {len(p.shape)}: {shape_text(p.shape)}", span)
        for d, (want_d, got) in enumerate(zip(p.shape, shape)):
            c = const_int_value(want_d) if not isinstance(want_d, Var) else None
            if isinstance(want_d, Var):
                k = id(want_d)
                if k in dyn and dyn[k] != got:
                    raise ArgumentError(f"argument `{name}` dimension {d} is {got}, but `{want_d.name}` was "
                                        f"bound to {dyn[k]} by an earlier argument", span)
                dyn[k] = got
            elif c is not None and c != got:
                raise ArgumentError(f"argument `{name}` has shape {tuple(shape)}, the kernel expects "
                                    f"{shape_text(p.shape)} (dimension {d}: {got} != {c})", span,
                                    hint="pass a tensor of that shape, or build the kernel for this one (a "
                                         "T.dynamic / T.symbolic dimension accepts any size)")
        if p.strides is None and not arrays.is_contiguous(x):
            raise ArgumentError(f"argument `{name}` is not contiguous", span, hint="pass x.contiguous()")

    def _out_shape(self, p, dyn):
        """An output's shape from the bound dimensions and scalar arguments (`dyn` holds
        both by variable id)."""
        if all(isinstance(s, int) for s in p.shape):
            return p.shape
        from tilelang.ir.visitor import substitute, collect_vars
        from tilelang.arith.simplify import simplify
        out = []
        for s in p.shape:
            if isinstance(s, int):
                out.append(s)
                continue
            env = {k: E_int(dyn[id(k)], k.dtype) for k in collect_vars(s) if id(k) in dyn}
            cv = const_int_value(simplify(substitute(s, env)))
            if cv is None:
                raise ArgumentError(f"cannot infer the shape of output `{p.name}` ({s})")
            out.append(cv)
        return out

    # dynamic dimensions: a variant for dimensions that divide (jit/divisibility.py) ----------
    def _prepare_aligned_variant(self):
        from tilelang.jit.divisibility import alignment
        self._align = None
        self._aligned_kernel = None
        if self.target.kind != "cuda" or not self.dyn_vars or getattr(self.prim_func, "aligned_from", None):
            return
        a = alignment(self.pass_configs)
        srcs = [self.dyn_source.get(id(v)) for v in self.dyn_vars]
        if a is None or any(src is None for src in srcs):
            return
        from tilelang.jit.divisibility import has_source_kernel
        if has_source_kernel(self.prim_func):   # no variant of user source (divisibility.py)
            return
        # where each dimension is read, for calls with the inputs only and with every argument
        self._align = (a, [(self.in_idx.index(i), i, d) for i, d in srcs])

    def _aligned_for(self, args):
        """The variant for dimensions that all divide, when `args` have such dimensions."""
        a, srcs = self._align
        every = len(args) == len(self.params)
        for pos, i, d in srcs:
            x = args[i if every else pos] if (every or len(args) == len(self.in_idx)) else None
            shape = getattr(x, "shape", None)
            if shape is None or len(shape) <= d or shape[d] % a:
                return None
        if self._aligned_kernel is None:
            from tilelang.jit.divisibility import aligned_variant
            import warnings
            variant = aligned_variant(self.prim_func, a)
            variant.aligned_from = a
            try:
                self._aligned_kernel = JITKernel(
                    variant, out_idx=None if "tilelang_out_idx" in variant.attrs else self.out_idx,
                    target=self.target, pass_configs=self.pass_configs, compile_flags=self.compile_flags)
            except TileLangError as e:   # keep running the generic kernel
                warnings.warn(f"{self.prim_func.name}: the variant for dimensions divisible by {a} did "
                              f"not compile ({e.message}); the generic kernel runs", stacklevel=3)
                self._align = None
                return None
        return self._aligned_kernel

    def __call__(self, *args, stream=None, **kwargs):
        # `_fast` is, after the first call, a function generated for this signature
        # (see `_build_fast`); anything it does not accept goes to `_slow`, which
        # checks every argument and explains what is wrong.
        try:
            if kwargs:
                args = self._positional(args, kwargs)
            if self._align is not None:
                k = self._aligned_for(args)
                if k is not None:
                    return k._fast(args)
            return self._fast(args)
        except TileLangError as e:
            if e.span is None:
                e.span = _caller_span()
            raise e.with_traceback(None) from None

    def _positional(self, args, kwargs):
        """Arguments given by parameter name, in the kernel's order (the inputs; with every
        output named too, the outputs as well)."""
        names = [p.name for p in self.params]
        unknown = [k for k in kwargs if k not in names]
        if unknown:
            raise ArgumentError(f"kernel `{self.prim_func.name}` has no parameter `{unknown[0]}`; its parameters "
                                f"are {', '.join(names)}")
        with_outputs = all(self.params[i].name in kwargs for i in self.out_idx) and self.out_idx
        order = list(range(len(self.params))) if with_outputs else list(self.in_idx)
        out = list(args)
        for i in order[len(args):]:
            n = self.params[i].name
            if n not in kwargs:
                raise ArgumentError(f"kernel `{self.prim_func.name}`: argument `{n}` is missing")
            out.append(kwargs.pop(n))
        if kwargs:
            raise ArgumentError(f"kernel `{self.prim_func.name}`: `{next(iter(kwargs))}` is given twice or is "
                                f"an output (name every output, or none)")
        return tuple(out)

    def _fast(self, args):
        """Until the first successful call, and while torch is not imported, every call
        takes the slow path; then the per-signature fast path is built (an instance
        attribute that shadows this method from then on). After a successful call the
        launcher is loaded, so the fast path can bind its positional entry."""
        if not self._called or sys.modules.get("torch") is None:
            out = self._slow(args)
            self._called = True
            return out
        fast = self._build_fast()
        self._fast = fast or self._slow
        return self._fast(args)

    _called = False
    _written = None   # ids of the tensor parameters the kernel writes (jit/aliasing.py)
    _align = None     # (alignment, dimension sources) when a divisible-shape variant applies
    _aligned_kernel = None

    @property
    def launcher(self):
        return self._launcher

    @launcher.setter
    def launcher(self, launcher):
        self._launcher = launcher
        self.__dict__.pop("_fast", None)  # the fast path binds the launcher: rebuild it
        self._called = False

    def _slow(self, args):
        n_in = len(self.in_idx)
        if len(args) == len(self.params) and self.out_idx:
            # the outputs passed too: checked like inputs, written in place and returned
            given = [args[i] for i in self.out_idx]
            return self._call([a for i, a in enumerate(args) if i not in self.out_idx], given)
        if len(args) != n_in:
            names = [self.params[i].name for i in self.in_idx]
            raise ArgumentError(f"kernel `{self.prim_func.name}` takes {n_in} argument(s) ({', '.join(names)}), "
                                f"got {len(args)}", _caller_span()).with_traceback(None)
        return self._call(args)

    def _build_fast(self):
        """Generate `fast(args)` for this signature: torch tensors of the right dtype,
        device, shape and contiguity, Python ints/floats for scalars; everything else
        (numpy arrays, outputs passed in, wrong arguments) goes to `_slow`. Returns
        None when no such path applies (no tensor input, a dtype torch lacks)."""
        torch = sys.modules.get("torch")
        if torch is None or self.host_assumes or self._needs_binder or self._outputs_need_env:
            # the slow path checks and binds those
            return None
        params, out_idx = self.params, self.out_idx
        in_bufs = [i for i in self.in_idx if isinstance(params[i], Buffer)]
        if not in_bufs:
            return None
        for i, p in enumerate(params):
            if isinstance(p, Buffer) and not _has_torch_dtype(p.dtype):
                return None
            if not isinstance(p, (Buffer, Var)):
                return None
        want = "is_cpu" if self.target.kind == "cpu" else "is_cuda"
        g = {"__name__": "tilelang.jit._fast_call", "slow": self._slow, "K": self, "empty": torch.empty,
             "empty_like": torch.empty_like, "TileLangError": TileLangError}
        in_dims = {}        # a contiguous input's dimensions (their source text) -> its local name
        names = {}          # param index -> local name
        dyn_name = {}       # id(Var) -> local name of its bound value
        n_in = len(self.in_idx)
        lines = ["def fast(args):",
                 f"    if len(args) != {n_in}: return slow(args)"]
        locs = []
        for k, i in enumerate(self.in_idx):
            names[i] = f"a{k}" if isinstance(params[i], Buffer) else f"s{k}"
            locs.append(names[i])
        if locs:
            lines.append(f"    {', '.join(locs)}, = args")
        lines.append("    try:")
        for i in in_bufs:
            p, a = params[i], names[i]
            g[f"D{i}"] = p.dtype.as_torch()
            cond = f"{a}.dtype is not D{i} or not {a}.{want}"
            if p.strides is None:
                cond += f" or not {a}.is_contiguous()"
            lines.append(f"        if {cond}: return slow(args)")
            shape = list(p.shape)
            static = [const_int_value(s) if not isinstance(s, Var) else None for s in shape]
            if all(isinstance(s, int) for s in static):
                g[f"S{i}"] = tuple(static)
                lines.append(f"        if {a}.shape != S{i}: return slow(args)")
                if p.strides is None:
                    in_dims.setdefault(tuple(map(str, static)), i)
                continue
            lines.append(f"        sh = {a}.shape")
            conds = [f"len(sh) != {len(shape)}"]
            binds = []
            for d, s in enumerate(shape):
                if isinstance(s, Var):
                    if id(s) in dyn_name:
                        conds.append(f"sh[{d}] != {dyn_name[id(s)]}")
                    else:
                        dyn_name[id(s)] = f"d{len(dyn_name)}"
                        binds.append(f"{dyn_name[id(s)]} = sh[{d}]")
                elif static[d] is not None:
                    conds.append(f"sh[{d}] != {static[d]}")
                # other expressions are not checked (as in `_check`)
            lines.append(f"        if {' or '.join(conds)}: return slow(args)")
            for b in binds:
                lines.append(f"        {b}")
            if p.strides is None and all(isinstance(s, Var) or c is not None for s, c in zip(shape, static)):
                in_dims.setdefault(tuple(dyn_name[id(s)] if isinstance(s, Var) else str(c)
                                         for s, c in zip(shape, static)), i)
        # tensors the kernel writes must not overlap another tensor argument (jit/aliasing.py):
        # contiguous here, so a tensor spans [data_ptr, data_ptr + numel * itemsize)
        from tilelang.jit import aliasing
        if self._written is None:
            self._written = aliasing.written_params(self.prim_func)
        tracked = [i for i in in_bufs if not getattr(params[i], "may_alias", False)]
        pairs = [(i, j) for x, i in enumerate(tracked) for j in tracked[x + 1:]
                 if id(params[i]) in self._written or id(params[j]) in self._written]
        for i in sorted({k for pair in pairs for k in pair}):
            lines.append(f"        p{i} = {names[i]}.data_ptr(); n{i} = {names[i]}.numel() * "
                         f"{params[i].dtype.itemsize}")
        for i, j in pairs:
            lines.append(f"        if p{i} < p{j} + n{j} and p{j} < p{i} + n{i}: return slow(args)")
        lines.append("    except AttributeError:")
        lines.append("        return slow(args)")
        for i in self.in_idx:
            p = params[i]
            if isinstance(p, Buffer):
                continue
            s = names[i]
            if p.dtype.is_float:
                lines.append(f"    if type({s}) is not float and type({s}) is not int: return slow(args)")
            else:
                bits = p.dtype.bits
                lo, hi = (0, 2 ** bits - 1) if p.dtype.kind == "uint" else (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
                lines.append(f"    if type({s}) is not int or not {lo} <= {s} <= {hi}: return slow(args)")
        for v in self.dyn_vars:
            if id(v) not in dyn_name:
                return None
        dev = f"{names[in_bufs[0]]}.device"
        outs = []
        for i in out_idx:
            p = params[i]
            o = names[i] = f"o{i}"
            g[f"D{i}"] = p.dtype.as_torch()
            dims = []
            for s in p.shape:
                c = const_int_value(s) if not isinstance(s, Var) else None
                if c is not None:
                    dims.append(str(c))
                elif isinstance(s, Var) and id(s) in dyn_name:
                    dims.append(dyn_name[id(s)])
                else:
                    dims = None
                    break
            like = in_dims.get(tuple(dims)) if dims is not None else None
            if like is not None:
                # the shape of a contiguous input (checked above): empty_like parses fewer
                # arguments than empty(shape, dtype=, device=), ~1 us a call less
                same = params[like].dtype == p.dtype
                lines.append(f"    {o} = empty_like({names[like]}{'' if same else f', dtype=D{i}'})")
                outs.append(o)
                continue
            if dims is not None:
                shape_src = "(" + "".join(d + ", " for d in dims) + ")"
            else:  # an expression of dynamic dimensions: the general evaluator
                g[f"P{i}"] = p
                dyn_src = "{" + ", ".join(f"{id(v)}: {dyn_name[id(v)]}" for v in self.dyn_vars) + "}"
                shape_src = f"tuple(K._out_shape(P{i}, {dyn_src}))"
            lines.append(f"    {o} = empty({shape_src}, dtype=D{i}, device={dev})")
            outs.append(o)
        bufs = [names[i] for i, p in enumerate(params) if isinstance(p, Buffer)]
        ints = [names[i] for i in self.in_idx if not isinstance(params[i], Buffer) and not params[i].dtype.is_float]
        ints += [dyn_name[id(v)] for v in self.dyn_vars]
        floats = [names[i] for i in self.in_idx if not isinstance(params[i], Buffer) and params[i].dtype.is_float]

        def tup(xs):
            return "(" + "".join(x + ", " for x in xs) + ")"
        positional = getattr(self.launcher, "positional", None)
        checked = getattr(self.launcher, "positional_checked", None) if want == "is_cuda" else None
        if checked is not None:   # every tensor is a CUDA tensor: inputs checked above, outputs beside them
            g["L"] = checked()
            lines.append(f"    L({', '.join(bufs + ints + floats)})")
        elif positional is not None:  # the launcher's entry for a fixed signature, bound now
            g["L"] = positional()
            lines.append(f"    L({', '.join(bufs + ints + floats)})")
        else:
            g["LL"] = self.launcher   # bound now (setting `launcher` rebuilds this path): no property read a call
            lines.append(f"    LL([{', '.join(bufs)}], {tup(ints)}, {tup(floats)})")
        if len(outs) == 1:
            lines.append(f"    return {outs[0]}")
        elif outs:
            lines.append(f"    return [{', '.join(outs)}]")
        src = "\n".join(lines) + "\n"
        exec(compile(src, f"<tilelang call {self.prim_func.name}>", "exec"), g)  # noqa: S102 - our own code
        fast = g["fast"]
        fast.source = src
        return fast

    def _fast_specs(self):
        """Per input: what a valid argument looks like, checked cheaply on each call."""
        import sys
        torch = sys.modules.get("torch")  # only when the caller uses torch: importing it costs seconds
        specs = []
        for i in self.in_idx:
            p = self.params[i]
            if not isinstance(p, Buffer):
                specs.append((i, p, None))
                continue
            tdt = p.dtype.as_torch() if torch is not None and _has_torch_dtype(p.dtype) else None
            try:
                from tilelang.ir.dtypes import numpy_dtype
                ndt = numpy_dtype(p.dtype)
            except Exception:  # noqa: BLE001
                ndt = None
            static = tuple((d, const_int_value(s)) for d, s in enumerate(p.shape) if not isinstance(s, Var))
            dyn = tuple((d, id(s)) for d, s in enumerate(p.shape) if isinstance(s, Var))
            specs.append((i, p, (tdt, ndt, len(p.shape), static, dyn, p.strides is None)))
        self._specs = specs
        self._want_cuda = self.target.kind != "cpu"
        return specs

    def _call(self, args, given_outputs=None):
        specs = getattr(self, "_specs", None) or self._fast_specs()
        full = [None] * len(self.params)
        dyn = {}
        like = None
        want_cuda = self._want_cuda
        for (i, p, spec), a in zip(specs, args):
            full[i] = a
            if like is None and arrays.is_torch(a):   # outputs come back as the inputs' kind
                like = a
            if spec is None:
                if p.dtype.name != "handle":
                    full[i] = _scalar_arg(p, a)
                continue
            tdt, ndt, ndim, static, dvars, need_contig = spec
            ok = False
            try:
                dt = a.dtype
                if dt is tdt:   # torch
                    ok = (a.is_cuda if want_cuda else a.is_cpu) and (not need_contig or a.is_contiguous())
                    if like is None:
                        like = a
                elif ndt is not None and dt == ndt and not want_cuda:  # numpy
                    ok = (not need_contig) or a.flags.c_contiguous
                if ok:
                    shape = a.shape
                    if len(shape) != ndim:
                        ok = False
                    else:
                        for d, want in static:
                            if shape[d] != want:
                                ok = False
                                break
                        for d, vid in dvars:
                            got = int(shape[d])
                            if dyn.setdefault(vid, got) != got:
                                ok = False
            except AttributeError:
                ok = False
            if not ok:  # the slow path explains what is wrong
                self._check(i, p, a, dyn, None)
        if self._needs_binder or self._outputs_need_env:
            self._bind(full, dyn)
        outs = []
        if like is None and not want_cuda and self.out_idx and not any(arrays.is_array(a) for a in args):
            like = arrays.torch_if_available()   # no arrays given: torch tensors, as the published package
        for k, i in enumerate(self.out_idx):
            p = self.params[i]
            if given_outputs is not None:
                o = given_outputs[k]
                self._check(i, p, o, dyn, None)
                if isinstance(o, np.ndarray) and not o.flags.writeable:
                    raise ArgumentError(f"output `{p.name}` is a read-only array", hint="pass a writeable array")
            else:
                o = arrays.empty(self._out_shape(p, dyn), p.dtype, like=like, device="cuda" if want_cuda else "cpu")
            full[i] = o
            outs.append(o)
        buffers, ints, floats = [], [], []
        for p, a in zip(self.params, full):
            if isinstance(p, Buffer):
                buffers.append(a)
            elif p.dtype.is_float:
                floats.append(float(a))
            elif p.dtype.name == "handle":   # T.ptr: a tensor's data pointer, or an address
                ints.append(_address(a, p))
            else:
                ints.append(int(a))
        for v in self.dyn_vars:
            ints.append(dyn[id(v)])
        if self.host_assumes:
            self._check_assumes(full, dyn)
        from tilelang.jit import aliasing
        if self._written is None:
            self._written = aliasing.written_params(self.prim_func)
        for p, a in zip(self.params, full):
            if isinstance(a, np.ndarray) and not a.flags.writeable and id(p) in self._written:
                raise ArgumentError(f"argument `{p.name}` is a read-only array, and the kernel writes it",
                                    hint="pass a writeable copy (np.array(x))")
        if len(buffers) > 1:
            aliasing.check(self.params, full, self._written)
        self.launcher(buffers, ints, floats)
        if not outs:
            return None
        return outs[0] if len(outs) == 1 else outs

    def _bind(self, full, dyn):
        """Expression dimensions, strides and packed tensors: solve and check every
        constraint (binding.py)."""
        from tilelang.jit.binding import logical_shape
        runtime = {}
        for i in self.in_idx:
            p, a = self.params[i], full[i]
            if isinstance(p, Buffer):
                dt = arrays.array_dtype(a)
                shape, strides = tuple(int(s) for s in a.shape), arrays.array_strides(a)
                runtime[i] = logical_shape(p.dtype, shape, strides) if dt != p.dtype else (shape, strides)
        for p, a in zip(self.params, full):
            if isinstance(p, Var) and not p.dtype.is_float:
                dyn[id(p)] = int(a)
        self.binder.bind(self.params, runtime, dyn)

    def _check_assumes(self, args, dyn):
        """`T.assume(c)` with `c` over scalar parameters and dynamic dimensions only:
        checked before each launch."""
        from tilelang.ir.visitor import substitute
        from tilelang.arith.simplify import simplify
        env = {k: E_int(dyn[id(k)]) for k in self.dyn_vars if id(k) in dyn}
        for p, a in zip(self.params, args):
            if isinstance(p, Var) and not p.dtype.is_float:
                env[p] = E_int(int(a))
        for cond in self.host_assumes:
            v = const_int_value(simplify(substitute(cond, env)))
            if v is not None and not v:
                raise RuntimeError(f"kernel `{self.prim_func.name}`: Assume: {cond} does not hold for these "
                                   f"arguments")

    # introspection ----------------------------------------------------------------
    def get_kernel_source(self, kernel_only=True):
        return self.artifact.source

    def get_host_source(self):
        return self.artifact.source

    def get_profiler(self, tensor_supply_type=None):
        from tilelang.profiler import Profiler, TensorSupplyType
        return Profiler(self, tensor_supply_type or TensorSupplyType.Auto)

    def show_source(self, which="kernel"):
        """Print the generated source: "kernel", "host" or "both"."""
        if which == "kernel":
            print(self.get_kernel_source())
        elif which == "host":
            print(self.get_host_source())
        elif which == "both":
            print("===== Kernel Source =====")
            print(self.get_kernel_source())
            print("===== Host Source =====")
            print(self.get_host_source())
        else:
            raise ValueError(f"show_source: `which` must be 'kernel', 'host' or 'both', got {which!r}")

    def export_sources(self, kernel_path=None, host_path=None):
        """Write the kernel and/or host source to files (directories are created)."""
        if kernel_path is None and host_path is None:
            raise ValueError("export_sources: give kernel_path or host_path")
        for path, text in ((kernel_path, self.get_kernel_source), (host_path, self.get_host_source)):
            if path is not None:
                os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
                with open(path, "w") as f:
                    f.write(text())

    def print_source_code(self, which="kernel", file=None):
        """The published package's older name: prints the source, or writes the kernel
        source to `file`."""
        if file is not None:
            self.export_sources(kernel_path=file)
        else:
            self.show_source(which)

    def run_once(self, func=None):
        return self.get_profiler().run_once(func)

    @property
    def kernel_source(self):
        return self.artifact.source

    def __repr__(self):
        return f"JITKernel({self.prim_func.name}, target={self.target})"

    # CUDA extras (the cuda backend fills artifact.meta with ptx / sass readers)
    def show_ptx(self):
        print(self.get_ptx())

    def get_ptx(self):
        ptx = self.artifact.meta.get("ptx")
        if ptx is None:
            raise TileLangError(f"no PTX for target {self.target}")
        return ptx

    def export_ptx(self, path):
        with open(path, "w") as f:
            f.write(self.get_ptx())

    def get_asm(self):
        """The device assembly: AMDGPU ISA for target 'hip' (the SASS for 'cuda')."""
        fn = getattr(self.backend, "asm", None) or getattr(self.backend, "sass", None)
        if fn is None:
            raise TileLangError(f"no device assembly for target {self.target}")
        return fn(self.artifact)

    def get_sass(self):
        fn = getattr(self.backend, "sass", None)
        if fn is None:
            raise TileLangError(f"no SASS for target {self.target}")
        return fn(self.artifact)

    def show_sass(self):
        print(self.get_sass())

    def export_sass(self, path):
        with open(path, "w") as f:
            f.write(self.get_sass())


def _scalar_arg(p, a):
    """A scalar argument as the Python number the launcher passes, checked: an integer
    parameter takes integral values that fit its type (2.7 is not truncated, 2**32 + 3 does
    not wrap), a float parameter any real number; anything else names the parameter."""
    import numbers
    if arrays.is_array(a):
        if getattr(a, "ndim", None) == 0 or getattr(a, "shape", None) == ():
            a = a.item()   # a 0-d array / tensor holds one number
        else:
            raise ArgumentError(f"argument `{p.name}` is a scalar ({p.dtype}), got an array of shape "
                                f"{list(a.shape)}")
    if p.dtype.is_float:
        if isinstance(a, numbers.Real):
            return float(a)
        raise ArgumentError(f"argument `{p.name}` is a {p.dtype} scalar, got {type(a).__name__} {a!r}",
                            hint="pass a Python int or float")
    if isinstance(a, bool) or isinstance(a, numbers.Integral):
        v = int(a)
    elif isinstance(a, numbers.Real) and float(a).is_integer():
        v = int(a)
    else:
        raise ArgumentError(f"argument `{p.name}` is an integer scalar ({p.dtype}), got {type(a).__name__} {a!r}",
                            hint="pass an int (round it yourself if that is what you mean)")
    bits = p.dtype.bits
    lo, hi = (0, 2 ** bits - 1) if p.dtype.kind in ("uint", "bool") else (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    if p.dtype.kind == "bool":
        lo, hi = 0, 1
    if not lo <= v <= hi:
        raise ArgumentError(f"argument `{p.name}` = {v} does not fit {p.dtype} ({lo} .. {hi})")
    return v


def _has_torch_dtype(dt):
    try:
        dt.as_torch()
        return True
    except (TypeError, AttributeError):
        return False


def _address(a, p):
    """The address a `T.ptr` parameter receives."""
    if arrays.is_torch(a):
        return int(a.data_ptr())
    if isinstance(a, np.ndarray):
        return int(a.ctypes.data)
    try:
        return int(a)
    except (TypeError, ValueError):
        raise ArgumentError(f"argument `{p.name}` is an address (T.ptr): pass a tensor or an int, "
                            f"got {type(a).__name__}") from None


def _torch_name(dt):
    try:
        return str(dt.as_torch())
    except TypeError:
        return repr(str(dt))


def E_int(v, dtype=None):
    from tilelang.ir.expr import IntImm
    return IntImm(v) if dtype is None else IntImm(v, dtype)


def _host_assumes(func):
    """The `T.assume` conditions over scalar parameters and dynamic dimensions alone."""
    from tilelang.ir import stmt as S
    from tilelang.ir.visitor import walk
    from tilelang.ir.expr import BufferLoad
    known = {id(p) for p in func.params if isinstance(p, Var)} | {id(v) for v in func.dynamic_vars()}
    out = []

    def f(n):
        if isinstance(n, S.Assume):
            names, other = [], []
            walk(n.cond, lambda x: (names if isinstance(x, Var) and id(x) in known else other).append(x)
                 if isinstance(x, (Var, BufferLoad)) else None)
            if names and not other:
                out.append(n.cond)
    walk(func.body, f)
    return out
