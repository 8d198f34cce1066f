"""`tilelang.carver.arch`: what the current GPU offers (`CUDA`, `driver`,
`auto_infer_current_arch`)."""
from tilelang.carver.arch import driver  # noqa: F401
from tilelang.carver.arch.cuda import CUDA, auto_infer_current_arch, is_hopper_arch, is_ampere_arch  # noqa: F401


class CDNA:  # published name; AMD GPUs are not supported
    def __init__(self, *a, **k):
        raise RuntimeError("AMD CDNA targets are not supported by this implementation")
