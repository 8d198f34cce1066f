"""`register_<lang>_postproc(fn)` and the decorator forms
`@register_<lang>_postproc_callback`, `@register_<lang>_postproc_callback()`,
`@register_<lang>_postproc_callback(override=False)`. `fn(code, target) -> code`."""
from __future__ import annotations

from tilelang.backend import postproc


def _registrar(lang):
    def register_postproc(func, override=True):
        postproc.register(lang, func, override)
    register_postproc.__name__ = f"register_{lang}_postproc"
    return register_postproc


def _decorator(register_postproc):
    def register_postproc_callback(func=None, override=True):
        if callable(func):
            register_postproc(func, override)
            return func
        if func is None or isinstance(func, bool):
            flag = func if isinstance(func, bool) else override

            def deco(fn):
                register_postproc(fn, flag)
                return fn
            return deco
        raise TypeError(f"{register_postproc.__name__}_callback decorates a function (optionally called with "
                        f"override=...), got {type(func).__name__}")
    register_postproc_callback.__name__ = register_postproc.__name__ + "_callback"
    return register_postproc_callback


register_cuda_postproc = _registrar("cuda")
register_hip_postproc = _registrar("hip")
register_c_postproc = _registrar("c")
register_metal_postproc = _registrar("metal")
register_cuda_postproc_callback = _decorator(register_cuda_postproc)
register_hip_postproc_callback = _decorator(register_hip_postproc)
register_c_postproc_callback = _decorator(register_c_postproc)
register_metal_postproc_callback = _decorator(register_metal_postproc)
