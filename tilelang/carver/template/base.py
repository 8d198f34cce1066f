"""`BaseTemplate`: a computation described by its sizes and dtypes, that knows its reference
kernel (`equivalent_function()`, a `T.prim_func`) and ranks schedules for a device
(`recommend_hints(topk)`). Subclasses are dataclasses of the published field names."""
from __future__ import annotations

from dataclasses import dataclass, field

from tilelang.carver.arch import (TileDevice, auto_infer_current_arch, is_ampere_arch,
                                  is_cdna_arch, is_rdna_arch, is_volta_arch)
from tilelang.ir.errors import TileLangError
from tilelang.ir.span import caller_span


class TemplateParameterError(TileLangError, ValueError, AssertionError):
    """A template built with a size or dtype it cannot describe (the published templates
    assert on these: AssertionError; ValueError for the rest)."""


@dataclass
class BaseTemplate:
    _arch: TileDevice = field(default=None, init=False, repr=False)
    _func: object = field(default=None, init=False, repr=False)
    _output_nodes: list = field(default=None, init=False, repr=False)

    # -- what a subclass provides -------------------------------------------------------
    def check_parameters(self) -> None:
        """Raise TemplateParameterError naming the first parameter that is wrong."""

    def initialize_function(self):
        """The `T.prim_func` computing the template's operation."""
        raise NotImplementedError(f"{type(self).__name__}.initialize_function")

    def get_hardware_aware_configs(self, arch: TileDevice = None, topk: int = 10) -> list:
        raise NotImplementedError(f"{type(self).__name__}.get_hardware_aware_configs")

    # -- the published interface ----------------------------------------------------------
    def __post_init__(self):
        self.check_parameters()

    def with_arch(self, arch: TileDevice) -> "BaseTemplate":
        if not isinstance(arch, TileDevice):
            raise TemplateParameterError(
                f"{type(self).__name__}.with_arch: arch must be a device description such as "
                f"tilelang.carver.arch.CUDA('cuda'), got {arch!r}", caller_span())
        self._arch = arch
        return self

    def has_arch(self) -> bool:
        return self._arch is not None

    @property
    def arch(self) -> TileDevice:
        if self._arch is None:
            self._arch = auto_infer_current_arch()
        return self._arch

    def is_volta_arch(self) -> bool:
        return is_volta_arch(self.arch)

    def is_ampere_arch(self) -> bool:
        return is_ampere_arch(self.arch)

    def is_cdna_arch(self) -> bool:
        return is_cdna_arch(self.arch)

    def is_rdna_arch(self) -> bool:
        return is_rdna_arch(self.arch)

    def equivalent_function(self):
        """The operation as a kernel of this package (built once, on first use)."""
        if self._func is None:
            self._func = self.initialize_function()
        return self._func

    def set_function(self, func) -> "BaseTemplate":
        self._func = func
        return self

    def set_output_nodes(self, output_nodes) -> "BaseTemplate":
        self._output_nodes = output_nodes
        return self

    @property
    def output_nodes(self):
        return self._output_nodes

    def recommend_hints(self, topk: int = 10) -> list:
        """The `topk` best schedules for the template's device, best first."""
        if isinstance(topk, bool) or not isinstance(topk, int) or topk < 1:
            raise TemplateParameterError(
                f"{type(self).__name__}.recommend_hints: topk must be a positive int, got {topk!r}",
                caller_span())
        return self.get_hardware_aware_configs(self.arch, topk)

    def params_as_dict(self) -> dict:
        return {k: getattr(self, k) for k in self.__dataclass_fields__ if not k.startswith("_")}

    @property
    def class_attributes(self) -> dict:
        return self.params_as_dict()

    def __repr__(self):
        fields = ", ".join(f"{k}={v!r}" for k, v in self.params_as_dict().items())
        return f"{type(self).__name__}({fields})"


# -- parameter checks shared by the templates --------------------------------------------
def _fail(template, name, message):
    raise TemplateParameterError(f"{type(template).__name__}: parameter `{name}` {message}",
                                 caller_span())


def check_positive_ints(template, *names, allow_zero=()):
    for name in names:
        v = getattr(template, name)
        low = 0 if name in allow_zero else 1
        if isinstance(v, bool) or not isinstance(v, int):
            _fail(template, name, f"must be an int, got {v!r}")
        if v < low:
            _fail(template, name, f"must be {'>= 0' if low == 0 else 'positive'}, got {v}")


def check_dtypes(template, *names):
    """Normalise each named field to a DataType (kept as the published str value)."""
    from tilelang.ir.dtypes import as_dtype
    for name in names:
        v = getattr(template, name)
        try:
            dt = as_dtype(v)
        except (ValueError, TypeError) as e:
            msg = getattr(e, "message", str(e))
            hint = getattr(e, "hint", None)
            raise TemplateParameterError(
                f"{type(template).__name__}: parameter `{name}`: {msg}", caller_span(), hint) from None
        setattr(template, name, dt)
