"""Autotuning: `@tilelang.autotune`, `AutoTuner`, `set_autotune_inputs`."""
from tilelang.autotuner.capture import set_autotune_inputs, get_autotune_inputs
from tilelang.autotuner.decorator import autotune, AutoTuneImpl
from tilelang.autotuner.param import AutotuneResult, CompileArgs, ProfileArgs, TuneRecord
from tilelang.autotuner.tuner import AutoTuner

__all__ = ["autotune", "AutoTuneImpl", "AutoTuner", "AutotuneResult", "CompileArgs", "ProfileArgs", "TuneRecord",
           "set_autotune_inputs", "get_autotune_inputs"]
