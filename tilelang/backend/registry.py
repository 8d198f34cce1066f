"""Backend registry. A backend is a package `tilelang.backend.<name>` with the same
skeleton: `target.py` (parse a target spec), `pipeline.py` (its pass list),
`codegen.py` (IR -> source), `compiler.py` (source -> binary), `runtime.py`
(load and launch). It registers a `Backend` object here."""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field

_BACKENDS: dict = {}
_KNOWN = {"cpu": "tilelang.backend.cpu", "c": "tilelang.backend.cpu", "llvm": "tilelang.backend.cpu",
          "cuda": "tilelang.backend.cuda", "hip": "tilelang.backend.hip", "rocm": "tilelang.backend.hip"}


@dataclass
class Target:
    kind: str                 # backend name: "cpu", "cuda", "hip"
    arch: str | None = None   # e.g. "sm_90a", "gfx90a"
    options: dict = field(default_factory=dict)

    def key(self):
        return f"{self.kind}:{self.arch or ''}:{sorted(self.options.items())}"

    def __str__(self):
        return self.kind + (f" -arch={self.arch}" if self.arch else "")


def register(name, backend):
    _BACKENDS[name] = backend


def get_backend(kind):
    if kind not in _BACKENDS:
        mod = _KNOWN.get(kind)
        if mod is None:
            import difflib
            from tilelang.ir.errors import located
            known = sorted(set(_KNOWN))
            close = difflib.get_close_matches(str(kind), known, n=1)
            raise located(ValueError, f"unknown target kind {kind!r}; known: {known}",
                          hint=f"did you mean {close[0]!r}?" if close else
                          "use 'auto' (the GPU if present, else the CPU), 'cpu' or 'cuda'")
        importlib.import_module(mod)
    return _BACKENDS[_KNOWN.get(kind, kind).rsplit(".", 1)[-1]] if kind not in _BACKENDS else _BACKENDS[kind]


def cuda_available() -> bool:
    try:
        b = get_backend("cuda")
    except Exception:  # noqa: BLE001 - any failure means no usable GPU
        return False
    try:
        return bool(b.device_available())
    except Exception:  # noqa: BLE001
        return False


def hip_available() -> bool:
    """An AMD GPU that the HIP runtime sees (libamdhip64 loads and counts a device)."""
    try:
        return bool(get_backend("hip").device_available())
    except Exception:  # noqa: BLE001 - any failure means no usable GPU
        return False


_target_stack: list = []


def push_target(t):
    """`with tvm.target.Target(...)`: what `target="auto"` means until the matching pop."""
    _target_stack.append(t)


def pop_target():
    _target_stack.pop()


def current_target():
    return _target_stack[-1] if _target_stack else None


def known_kinds():
    return set(_KNOWN) | set(_BACKENDS)


def parse_target(spec) -> Target:
    """'auto' | 'cpu' | 'cuda' | 'cuda -arch=sm_80' | 'hip -arch=gfx940' | {'kind': 'cuda', 'arch': 'sm_90a'} |
    Target. 'auto': the CUDA GPU if present, else an AMD GPU, else the CPU."""
    import os
    if isinstance(spec, Target):
        return spec
    if spec is None:
        env = os.environ.get("TILELANG_DEFAULT_TARGET", "auto")
        return parse_target("auto") if env == "auto" else _from_environment(env)
    if isinstance(spec, dict):
        d = dict(spec)
        kind = d.pop("kind")
        arch = d.pop("arch", None)
        return get_backend(kind).parse_target(kind, arch, d)
    if hasattr(spec, "resolved"):   # our tvm.target.Target
        return spec.resolved()
    if hasattr(spec, "kind") and hasattr(spec.kind, "name"):  # a tvm.target.Target-like object
        spec = str(spec)
    spec = str(spec).strip()
    if spec == "auto":
        if _target_stack:   # inside `with tvm.target.Target(...)`
            return parse_target(_target_stack[-1])
        env = os.environ.get("TILELANG_DEFAULT_TARGET")
        if env and env != "auto":
            return _from_environment(env)
        return parse_target("cuda" if cuda_available() else "hip" if hip_available() else "cpu")
    parts = spec.split()
    kind = parts[0]
    arch, opts = None, {}
    for p in parts[1:]:
        if p.startswith("-arch="):
            arch = p.split("=", 1)[1]
        elif p.startswith("-") and "=" in p:
            k, v = p[1:].split("=", 1)
            opts[k] = v
    return get_backend(kind).parse_target(kind, arch, opts)


def _from_environment(spec):
    """TILELANG_DEFAULT_TARGET, with the variable named in any error about it."""
    from tilelang.ir.errors import TileLangError
    try:
        return parse_target(spec)
    except (ValueError, TileLangError) as e:
        raise TileLangError(f"TILELANG_DEFAULT_TARGET={spec!r} is not a target: {getattr(e, 'message', e)}",
                            span=None, hint="set it to 'auto', 'cpu', 'cuda' or 'cuda -arch=sm_90a', "
                                            "or unset it") from None
