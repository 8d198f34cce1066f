"""Configuration spaces and the identity of a tuning problem (its cache key)."""
from __future__ import annotations

import hashlib
import inspect
import itertools

from tilelang.identity import callable_identity, normalize  # noqa: F401 (re-exported)

PASS_CONFIGS = "pass_configs"   # a config key that is not a kernel argument


def expand_configs(configs, args=(), kwargs=None):
    """A list of dicts from a list of dicts, a dict of lists (the cartesian
    product, in key order) or a callable taking the problem arguments."""
    if callable(configs) and not isinstance(configs, (list, tuple, dict)):
        configs = _call_space(configs, args, dict(kwargs or {}))
    if isinstance(configs, dict):
        keys = list(configs)
        values = [v if isinstance(v, (list, tuple, range)) else [v] for v in configs.values()]
        return [dict(zip(keys, combo)) for combo in itertools.product(*values)]
    out = []
    for c in configs or ():
        if not isinstance(c, dict):
            raise TypeError(f"a tuning config must be a dict of parameter values, got {type(c).__name__}: {c!r}")
        out.append(dict(c))
    return out


def _call_space(fn, args, kwargs):
    """Call a config-space function with the problem arguments it accepts."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return fn(*args, **kwargs)
    if any(p.kind == p.VAR_KEYWORD for p in params.values()):
        return fn(*args, **kwargs)
    positional = [p for p in params.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if not any(p.kind == p.VAR_POSITIONAL for p in params.values()):
        args = args[:len(positional)]
    taken = {p.name for p in positional[:len(args)]}
    return fn(*args, **{k: v for k, v in kwargs.items() if k in params and k not in taken})


def check_config_keys(configs, fn):
    """Every key of every config must name a parameter of `fn`."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return
    if any(p.kind == p.VAR_KEYWORD for p in params.values()):
        return
    for c in configs:
        unknown = set(c) - set(params) - {PASS_CONFIGS}
        if unknown:
            raise ValueError(f"config {c} has keys {sorted(unknown)} that are not parameters of "
                             f"`{getattr(fn, '__name__', fn)}` (its parameters: {list(params)})")


def split_config(config):
    """(kernel keyword arguments, per-config pass_configs)."""
    kw = {k: v for k, v in config.items() if k != PASS_CONFIGS}
    return kw, config.get(PASS_CONFIGS)


def device_identity(target):
    """What a timing depends on besides the kernel: the GPU model or the host CPU."""
    from tilelang.backend.registry import get_backend, parse_target
    t = parse_target(target)
    if t.kind == "cuda":
        try:
            import torch
            if torch.cuda.is_available():
                names = sorted({torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())})
                return (t.key(), tuple(names))
        except Exception:  # noqa: BLE001
            pass
        return (t.key(),)
    ident = getattr(get_backend(t.kind), "identity", lambda: "")()
    return (t.key(), hashlib.sha256(repr(ident).encode()).hexdigest())


def tuning_key(fn, args, kwargs, configs, compile_args, profile_args) -> str:
    from tilelang.version import __version__
    p = profile_args
    parts = (
        "tilelang-autotune", __version__, callable_identity(fn), normalize(list(args)), normalize(kwargs or {}),
        normalize(configs), compile_args.identity(), device_identity(compile_args.target),
        (p.warmup, p.rep, str(p.supply_type), p.rtol, p.atol, p.max_mismatched_ratio, p.skip_check,
         p.backend, callable_identity(p.ref_prog), callable_identity(p.supply_prog),
         callable_identity(p.manual_check_prog)),
    )
    return hashlib.sha256(repr(parts).encode()).hexdigest()
