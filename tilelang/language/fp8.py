"""`tilelang.language.fp8`: which 8-bit float types the current platform uses.

NVIDIA GPUs (and our CPU backend) use the OCP types `float8_e4m3fn` / `float8_e5m2`.
ROCm builds of torch (`torch.version.hip`) use the `fnuz` variants, except on gfx950."""
from __future__ import annotations

from tilelang.ir.dtypes import DataType

_FORMATS = ("e4m3", "e5m2")


def _check(fp8_format):
    if fp8_format not in _FORMATS:
        raise ValueError(f"unsupported FP8 format {fp8_format!r}; use 'e4m3' or 'e5m2'")


def _rocm_arch():
    """The gfx name of ROCm device 0, or None on CUDA / CPU-only torch (or no torch)."""
    try:
        import torch
    except ImportError:
        return None
    if getattr(torch.version, "hip", None) is None:
        return None
    try:
        return getattr(torch.cuda.get_device_properties(0), "gcnArchName", "") or ""
    except (RuntimeError, AssertionError, AttributeError):
        return ""


def determine_fp8_type(fp8_format: str = "e4m3") -> DataType:
    """The fp8 dtype (`T.float8_e4m3fn`, `T.float8_e5m2`, or a `fnuz` one on ROCm)."""
    _check(fp8_format)
    arch = _rocm_arch()
    ocp = arch is None or arch.startswith("gfx950")
    ocp_names = {"e4m3": "float8_e4m3fn", "e5m2": "float8_e5m2"}
    fnuz_names = {"e4m3": "float8_e4m3fnuz", "e5m2": "float8_e5m2fnuz"}
    return DataType((ocp_names if ocp else fnuz_names)[fp8_format])


def determine_torch_fp8_type(fp8_format: str = "e4m3"):
    """The torch dtype of `determine_fp8_type(fp8_format)`."""
    import torch
    name = determine_fp8_type(fp8_format).name
    if not hasattr(torch, name):
        raise RuntimeError(f"this torch build has no dtype {name}")
    return getattr(torch, name)
