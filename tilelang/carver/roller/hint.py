"""`Hint`: one recommended schedule of a computation (tile sizes, warps, K step, pipeline
depth, block order), the published record that autotuning examples read fields from."""
from __future__ import annotations

import math

from tilelang.carver.roller.rasterization import NoRasterization


class IntrinInfo:
    """The matrix instruction a tensor-core hint is for: operand and accumulator dtypes and
    whether B is stored N x K. The transform kinds (published: layout pre-transforms of A / B,
    0 none, 1 interleave, 2 smooth) are recorded, not acted on here."""

    def __init__(self, in_dtype: str, out_dtype: str, trans_b: bool,
                 input_transform_kind: int = 0, weight_transform_kind: int = 0):
        self.in_dtype = str(in_dtype)
        self.out_dtype = str(out_dtype)
        self.trans_a = False
        self.trans_b = bool(trans_b)
        self.input_transform_kind = int(input_transform_kind)
        self.weight_transform_kind = int(weight_transform_kind)

    def is_input_8bit(self) -> bool:
        from tilelang.ir.dtypes import as_dtype
        return as_dtype(self.in_dtype).bits == 8

    @property
    def smooth_a(self) -> bool:
        return self.input_transform_kind >= 2

    @property
    def smooth_b(self) -> bool:
        return self.weight_transform_kind >= 2

    @property
    def inter_transform_a(self) -> bool:
        return self.input_transform_kind >= 1

    @property
    def inter_transform_b(self) -> bool:
        return self.weight_transform_kind >= 1

    def __repr__(self):
        return (f"<IntrinInfo in_dtype={self.in_dtype} out_dtype={self.out_dtype} "
                f"trans_b={self.trans_b} input_transform_kind={self.input_transform_kind} "
                f"weight_transform_kind={self.weight_transform_kind}>")


class Hint:
    """A schedule. For a tensor-core hint (`use_tc`): `block` = [block_M, block_N] output
    tile of a block, `warp` = [warp_M, warp_N] tile of one warp (threads =
    block_M*block_N / (warp_M*warp_N) * warp_size), `rstep` = [block_K]. For a SIMT hint:
    `block` = output tile per spatial axis, `thread` = threads per spatial axis, `rstep` =
    reduction elements per step per reduction axis, `reduce_thread` = threads per reduction
    axis. `pipeline_stage` is the depth of the copy pipeline (1: none). `smem_usage` and
    `score` are what the recommender computed (ours; not in the published record)."""

    def __init__(self):
        self.arch = None
        self.use_tc = None
        self.block: list[int] = []
        self.thread: list[int] = []
        self.warp: list[int] = []
        self.rstep: list[int] = []
        self.reduce_thread: list[int] = []
        self.rasterization_plan = NoRasterization()
        self.cached_tensors: list = []
        self.output_strides: dict = {}
        self.schedule_stages = None
        self.block_reduction_depth = None
        self.split_k_factor: int = 1
        self._raxis_order: list[int] = []
        self._step: list[int] = []
        self.vectorize: dict[str, int] = {}
        self.pipeline_stage: int = 1
        self.use_async: bool = False
        self.opt_shapes: dict[str, int] = {}
        self.intrin_info = IntrinInfo("float16", "float16", True)
        self.shared_scope: str = "shared"
        self.pass_context: dict = {}
        self.smem_usage: int = 0
        self.score: float = 0.0

    @property
    def threads(self) -> int:
        """Threads per block the hint asks for."""
        if self.use_tc:
            warps = math.prod(self.block) // math.prod(self.warp)
            return warps * (getattr(self.arch, "warp_size", 32) or 32)
        return math.prod(self.thread) * math.prod(self.reduce_thread or [1])

    @property
    def raxis_order(self) -> list[int]:
        return self._raxis_order or list(range(len(self.rstep)))

    @property
    def step(self) -> list[int]:
        return self._step or [1] * len(self.block)

    def tensorcore_legalization(self):
        """Keep the two innermost (M, N) axes of a batched tensor-core tile."""
        self.warp = self.warp[-2:]
        self.block = self.block[-2:]
        return self

    def to_dict(self) -> dict:
        d = {"block": self.block}
        if self.use_tc:
            d["warp"] = self.warp
        else:
            d["thread"] = self.thread
        d["rstep"] = self.rstep
        if math.prod(self.reduce_thread or [1]) > 1:
            d["reduce_thread"] = self.reduce_thread
        if self.use_tc:
            d["use_tc"] = self.use_tc
        if self._raxis_order:
            d["raxis_order"] = self._raxis_order
        if self.vectorize:
            d["vectorize"] = self.vectorize
        if self.pipeline_stage != 1:
            d["pipeline_stage"] = self.pipeline_stage
        if self.block_reduction_depth is not None:
            d["block_reduction_depth"] = self.block_reduction_depth
        if not isinstance(self.rasterization_plan, NoRasterization):
            d["rasterization_plan"] = self.rasterization_plan
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "Hint":
        h = cls()
        for k, v in d.items():
            if not hasattr(h, k) and k not in ("raxis_order", "step"):
                raise ValueError(f"Hint.from_dict: unknown field {k!r}")
            setattr(h, "_" + k if k in ("raxis_order", "step") else k, v)
        return h

    def __repr__(self):
        return str(self.to_dict())
