"""`tilelang.lower`: a PrimFunc through a backend's passes and code generator, without
running its compiler -- the generated source and the lowered IR, e.g. to read what a
kernel becomes for an arch this machine has no GPU for."""
from __future__ import annotations

from dataclasses import dataclass, field

from tilelang.ir.errors import TileLangError


@dataclass
class CompiledArtifact:
    """What `tilelang.lower` returns. `host_mod` and `device_mod` are the lowered
    PrimFunc (one IR for host and device here; `.script()` prints it)."""
    host_mod: object
    device_mod: object
    params: list
    kernel_source: str
    rt_mod: object = None
    meta: dict = field(default_factory=dict)


def lower(func_or_mod, target="auto", target_host=None, runtime_only=False, enable_host_codegen=False,
          enable_device_compile=False, pass_configs=None):
    from tilelang.backend.registry import parse_target, get_backend
    from tilelang.ir.function import PrimFunc
    from tilelang.transform.pass_keys import check_pass_configs
    from tilelang.transform.pass_manager import PassContext, current_pass_configs
    func = func_or_mod
    if isinstance(func, dict):      # an IRModule-like {name: PrimFunc}
        funcs = [f for f in func.values() if isinstance(f, PrimFunc)]
        func = funcs[0] if len(funcs) == 1 else None
    if not isinstance(func, PrimFunc):
        raise TileLangError(f"tilelang.lower expects a @T.prim_func, got {type(func_or_mod).__name__}")
    tgt = parse_target(target)
    backend = get_backend(tgt.kind)
    check_pass_configs(pass_configs)
    config = current_pass_configs()
    config.update({getattr(k, "value", k): v for k, v in (pass_configs or {}).items()})
    from tilelang.tools import trace as lower_trace
    from tilelang.transform.pass_manager import print_profile
    ctx = PassContext(config=config, target=tgt)
    try:
        lowered, source, meta = backend.generate(func, tgt, ctx)
    except TileLangError as e:
        raise e.with_traceback(None) from None
    finally:   # the lower trace, also of a compile that failed half way
        lower_trace.finish(ctx)
    print_profile(ctx.timings, config, title=f"pass timings ({func.name}, {tgt.kind})")
    return CompiledArtifact(lowered, lowered, list(func.params), source, None, meta)
