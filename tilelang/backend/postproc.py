"""User hooks on generated source: `fn(code, target) -> code`, applied by a backend
after codegen and before its compiler (published as
`tilelang.engine.register_cuda_postproc` and friends). A registered hook is part of
the backend's identity, so kernels cached before it was registered are not reused."""
from __future__ import annotations

_HOOKS: dict = {}   # source language ("cuda", "c", "hip", "metal") -> callable


def register(lang, fn, override=True):
    if not callable(fn):
        raise TypeError(f"a {lang} post-processing hook must be callable, got {type(fn).__name__}")
    if not override and lang in _HOOKS:
        raise ValueError(f"a {lang} post-processing hook is already registered (pass override=True to replace it)")
    _HOOKS[lang] = fn


def unregister(lang):
    _HOOKS.pop(lang, None)


def apply(lang, code, target):
    fn = _HOOKS.get(lang)
    if fn is None:
        return code
    out = fn(code, target)
    if not isinstance(out, str):
        raise TypeError(f"the {lang} post-processing hook `{getattr(fn, '__name__', fn)}` must return the "
                        f"source as a str, returned {type(out).__name__}")
    return out


def identity(lang):
    """A stable description of the hook (its source and captured values), for cache keys."""
    fn = _HOOKS.get(lang)
    if fn is None:
        return ""
    from tilelang.identity import callable_identity
    return repr(callable_identity(fn))
