"""A pure-Python implementation of TileLang: `import tilelang; import tilelang.language as T`."""
from tilelang.version import __version__  # noqa: E402,F401

from tilelang import language  # noqa: E402
from tilelang.jit import jit, compile, par_compile, JITKernel, lazy_jit  # noqa: E402,A004
from tilelang.jit.cache import disable_cache, enable_cache, is_cache_enabled, clear_cache  # noqa: E402
from tilelang.profiler import Profiler, TensorSupplyType  # noqa: E402
from tilelang.autotuner import autotune, AutoTuner  # noqa: E402
from tilelang.ir.errors import TileLangError  # noqa: E402
from tilelang.transform.pass_keys import PassConfigKey  # noqa: E402
from tilelang.backend.registry import parse_target as determine_target  # noqa: E402
from tilelang.ir.dtypes import DataType  # noqa: E402
from tilelang.compat import tvm, install_tvm_alias  # noqa: E402
install_tvm_alias()  # `import tvm` -> our shim when no real TVM is installed
from tilelang.math import cdiv, next_power_of_2  # noqa: E402
from tilelang import engine  # noqa: E402
from tilelang.engine import register_cuda_postproc, register_hip_postproc, register_c_postproc  # noqa: E402
from tilelang.engine.lower import lower  # noqa: E402


def set_log_level(level):
    """Level of the `tilelang` logger: a name ("DEBUG", "INFO", ...) or a number."""
    import logging
    if isinstance(level, str):
        level = getattr(logging, level.upper(), logging.INFO)
    logging.getLogger("tilelang").setLevel(level)
