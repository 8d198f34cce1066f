"""The autotuner's argument records and its result."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from tilelang.profiler.supply import TensorSupplyType


@dataclass
class CompileArgs:
    out_idx: Any = None
    target: Any = "auto"
    execution_backend: str = "auto"
    target_host: Any = None
    verbose: bool = False
    pass_configs: dict | None = None
    compile_flags: Any = None

    def as_kwargs(self, pass_configs=None):
        pc = dict(self.pass_configs or {})
        pc.update(pass_configs or {})
        return dict(out_idx=self.out_idx, target=self.target, execution_backend=self.execution_backend,
                    verbose=self.verbose, pass_configs=pc or None, compile_flags=self.compile_flags)

    def identity(self):
        """What the tuning cache key needs from these arguments."""
        from tilelang.backend.registry import parse_target
        t = parse_target(self.target)
        return (repr(self.out_idx), t.key(), sorted((k, repr(v)) for k, v in (self.pass_configs or {}).items()),
                repr(self.compile_flags))


@dataclass
class ProfileArgs:
    warmup: int = 25
    rep: int = 100
    timeout: float = 30
    supply_type: TensorSupplyType = TensorSupplyType.Auto
    ref_prog: Callable | None = None
    supply_prog: Callable | None = None
    rtol: float = 1e-2
    atol: float = 1e-2
    max_mismatched_ratio: float = 0.01
    skip_check: bool = False
    manual_check_prog: Callable | None = None
    cache_input_tensors: bool = False
    backend: str = "event"


@dataclass
class TuneRecord:
    """One row of the tuning table."""
    index: int
    config: dict
    # pending (not chosen by the search strategy) | ok | compile_error | compile_timeout | wrong |
    # bench_error | bench_timeout
    status: str = "pending"
    latency: float | None = None   # ms
    compile_time: float | None = None
    error: str = ""
    device: Any = None
    warmup: int | None = None      # the fidelity `latency` was measured at (successive halving
    rep: int | None = None         # times most configs with fewer iterations)

    @property
    def ok(self):
        return self.status == "ok"


@dataclass
class AutotuneResult:
    latency: float | None = None
    config: dict | None = None
    ref_latency: float | None = None
    libcode: str | None = None
    func: Any = None
    kernel: Any = None
    records: list = field(default_factory=list)
    from_cache: bool = False
    # how the configs were searched: strategy, budget, evaluations (config x fidelity pairs
    # compiled/checked/timed), timed_iterations (warm-up + timed runs over all evaluations)
    search: dict | None = None

    @property
    def table(self):
        return self.records

    def table_str(self):
        rows = [("#", "status", "latency(ms)", "config")]
        for r in sorted(self.records, key=lambda r: (r.latency is None, r.latency or 0.0, r.index)):
            lat = f"{r.latency:.4f}" if r.latency is not None else "-"
            mark = " *" if self.config is not None and r.config == self.config else ""
            rows.append((str(r.index), r.status + mark, lat, repr(r.config)))
        w = [max(len(row[i]) for row in rows) for i in range(3)]
        return "\n".join(f"{a:>{w[0]}}  {b:<{w[1]}}  {c:>{w[2]}}  {d}" for a, b, c, d in rows)

    def __repr__(self):
        return (f"AutotuneResult(latency={self.latency}, config={self.config}, ref_latency={self.ref_latency}, "
                f"{sum(r.ok for r in self.records)}/{len(self.records)} configs ok, from_cache={self.from_cache})")
