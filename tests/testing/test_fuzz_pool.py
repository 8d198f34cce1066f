"""The fuzz pool's handling of sticky CUDA errors, with a checker that imitates them: a
program that breaks its worker's (imagined) CUDA context and one that always fails."""
import time

from tilelang.testing.fuzz import generate
from tilelang.testing.fuzz.pool import Pool, sticky_cuda_error
from tilelang.testing.fuzz.run import Result

STICKY = "AcceleratorError: CUDA error: an illegal instruction was encountered"
_broken = False       # per worker process: its context was broken by an earlier program


def imitated_check(program, target, compile_only, arch):
    """seed % 100 == 1: breaks the context but passes; == 2: always fails on its own."""
    global _broken
    if _broken:
        return Result(program, "runtime_error", STICKY)
    if program.seed % 100 == 2:
        _broken = True
        return Result(program, "runtime_error", STICKY)
    if program.seed % 100 == 1:
        _broken = True
        return Result(program, "ok")
    time.sleep(0.3)   # so that the other worker gets a program after the breaking one
    return Result(program, "ok")


def _programs(seeds):
    progs = []
    for s in seeds:
        p = generate.generate(generate.program_seed(1, 0), None, False)
        progs.append(type(p)(**{**p.__dict__, "seed": s}))
    return progs


def test_sticky_error_detected():
    assert sticky_cuda_error(Result(None, "runtime_error", STICKY))
    assert not sticky_cuda_error(Result(None, "runtime_error", "ValueError: bad shape"))
    assert not sticky_cuda_error(Result(None, "mismatch", STICKY))


def test_sticky_errors_are_attributed():
    with Pool(jobs=2, checker=imitated_check) as pool:
        # 201 breaks its worker but passes; the next program there fails, passes again
        # elsewhere, and is recorded as flaky naming 201 (201 passes again too)
        res = pool.run(_programs([100, 201, 300, 400, 500, 600]))
        bad = [r for r in res if not r.ok]
        assert len(bad) == 1 and bad[0].status == "flaky", [r.headline() for r in res]
        assert "after seed=201" in bad[0].detail
        # 202 fails on its own: reported once, the programs after it are not blamed
        res = pool.run(_programs([100, 202, 300, 400, 500, 600]))
        bad = [r for r in res if not r.ok]
        assert [(r.program.seed, r.status) for r in bad] == [(202, "runtime_error")]
