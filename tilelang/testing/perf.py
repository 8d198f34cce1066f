"""Performance-regression helpers under the published names and output protocol:
`process_func` records one latency, `regression()` runs a module's `regression_*`
functions and prints what they recorded.

- A result is named after the module of the function it timed (`example_mla_decode`
  for `example_mla_decode.run_regression_perf`), a leading `regression_` removed, unless
  a name is given; it also records the case (the `regression_*` function running).
- `TL_PERF_REGRESSION_ONLY`: a JSON list or comma-separated patterns (fnmatch, or a
  case-insensitive substring) selecting the cases to run.
- `TL_PERF_REGRESSION_FORMAT=json`: one line `__TILELANG_PERF_RESULTS_JSON__=<list>`
  (name, latency, case) that a collecting process can find among other prints;
  otherwise `name: latency` per line."""
from __future__ import annotations

import fnmatch
import inspect
import json
import logging
import os
import time
import warnings
from dataclasses import dataclass

RESULTS_JSON_PREFIX = "__TILELANG_PERF_RESULTS_JSON__="
_RETRIES = 5


@dataclass(frozen=True)
class PerfResult:
    name: str
    latency: float
    case: str | None = None


_RESULTS: list = []
_case: str | None = None


def _strip(name: str) -> str:
    return name[len("regression_"):] if name.startswith("regression_") else name


def process_func(func, name=None, /, **kwargs):
    """Call `func(**kwargs)` and record the latency it returns (a positive number; a
    non-positive one is retried, then reported with a warning and not recorded)."""
    result_name = _strip(getattr(func, "__module__", None) or "<unknown>" if name is None else name)
    latency = float(func(**kwargs))
    tries = 0
    while latency <= 0.0 and tries < _RETRIES:
        latency = float(func(**kwargs))
        tries += 1
    if latency <= 0.0:
        warnings.warn(f"{result_name} measured {latency} <= 0; check the profiling", RuntimeWarning, stacklevel=2)
        return
    _RESULTS.append(PerfResult(result_name, latency, _case))


def _filters() -> list:
    raw = os.environ.get("TL_PERF_REGRESSION_ONLY", "").strip()
    if not raw:
        return []
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        value = raw.split(",")
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        return []
    return [str(v).strip() for v in value if str(v).strip()]


def _selected(name: str, patterns) -> bool:
    if not patterns:
        return True
    for candidate in (name.lower(), _strip(name).lower()):
        for p in patterns:
            p = p.lower()
            if fnmatch.fnmatch(candidate, p) or p in candidate:
                return True
    return False


def results() -> list:
    """What has been recorded so far (PerfResult list)."""
    return list(_RESULTS)


def _emit():
    if os.environ.get("TL_PERF_REGRESSION_FORMAT", "text").strip().lower() == "json":
        items = [{"name": r.name, "latency": r.latency, **({"case": r.case} if r.case is not None else {})}
                 for r in _RESULTS]
        print(RESULTS_JSON_PREFIX + json.dumps(items, separators=(",", ":")))
        return
    for r in _RESULTS:
        print(f"{r.name}: {r.latency}")


def regression(prefixes=("regression_",), verbose=True):
    """Run the calling module's functions whose names start with one of `prefixes`
    (sorted by name, filtered by TL_PERF_REGRESSION_ONLY), then print the results."""
    global _case
    caller = inspect.currentframe().f_back.f_globals
    cases = sorted((n, f) for n, f in caller.items() if callable(f) and n.startswith(tuple(prefixes)))
    patterns = _filters()
    cases = [(n, f) for n, f in cases if _selected(n, patterns)]
    _RESULTS.clear()
    for k, (n, f) in enumerate(cases, 1):
        _case = _strip(n)
        if verbose:
            print(f"  ├─ [{k}/{len(cases)}] {_case}", end="", flush=True)
        start = time.perf_counter()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                logging.disable(logging.WARNING)
                try:
                    f()
                finally:
                    logging.disable(logging.NOTSET)
        finally:
            _case = None
        if verbose:
            print(f" ({time.perf_counter() - start:.2f}s)", flush=True)
    _emit()
    return results()
