"""Run many programs: in this process (jobs <= 1), or in worker processes that each
check one program at a time. A worker that runs past the time limit is killed and
reported as `timeout`; one that dies (a kernel that crashes the process) as `crash`; a
fresh worker takes its place. Results come back in program order.

A sticky CUDA error (an illegal instruction or address, a launch failure) leaves the
worker's context unusable and may surface in a later program than the one that caused it,
so the worker is replaced and the program checked again on another worker: a failure there
is its own; a pass means it was the victim, and the broken worker's previous program is
checked again (a failure there is recorded as that program's). When neither fails
again, the first program is recorded as `flaky`, naming the previous one."""
from __future__ import annotations

import collections
import multiprocessing
import os
import re
import time
from multiprocessing.connection import wait

from tilelang.testing.fuzz.run import Result, check


_STICKY = re.compile(r"illegal (instruction|memory access|address)|misaligned address|"
                     r"unspecified launch failure|CUDA_ERROR_(ILLEGAL|LAUNCH_FAILED|MISALIGNED)")


def sticky_cuda_error(res) -> bool:
    """Whether a result's error leaves the CUDA context of its process unusable."""
    return res.status == "runtime_error" and bool(_STICKY.search(res.detail))


def _flaky(program, first, previous):
    after = f" (after seed={previous.seed} on the same worker)" if previous is not None else ""
    return Result(program, "flaky", f"a sticky CUDA error{after} that neither program shows again on "
                  "another worker:\n" + first.detail, first.seconds, first.path)


def _worker(conn, options, omp_threads, checker=check):
    os.environ.setdefault("OMP_NUM_THREADS", str(omp_threads))
    while True:
        msg = conn.recv()
        if msg is None:
            return
        index, program = msg
        conn.send((index, checker(program, **options)))


class _Worker:
    def __init__(self, ctx, options, omp_threads, checker):
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_worker, args=(child, options, omp_threads, checker), daemon=True)
        self.proc.start()
        child.close()
        self.task = None
        self.started = 0.0
        self.previous = None    # (index, program) of the last program this worker finished

    def give(self, task):
        self.task, self.started = task, time.monotonic()
        self.conn.send(task)

    def stop(self, kill=False):
        if kill:
            self.proc.kill()
        else:
            try:
                self.conn.send(None)
            except OSError:
                pass
        self.proc.join(timeout=10)
        self.conn.close()


class Pool:
    """Worker processes that check programs (in this process when jobs <= 1); reuse one
    for several batches (the minimizer checks one variant at a time). `checker(program,
    target=, compile_only=, arch=)` -> Result is `run.check` unless a test gives another
    (a module-level function: workers are spawned)."""

    def __init__(self, target="cpu", compile_only=False, arch="sm_90a", jobs=1, timeout=300.0, checker=check):
        self.options = dict(target=target, compile_only=compile_only, arch=arch)
        self.jobs, self.timeout, self.checker = jobs, timeout, checker
        self.ctx = multiprocessing.get_context("spawn")
        self.omp = max(1, (os.cpu_count() or 1) // max(1, jobs))
        self.workers = []

    def _spawn(self):
        return _Worker(self.ctx, self.options, self.omp, self.checker)

    def run(self, programs, on_result=None, deadline=None):
        """Check every program; `on_result(index, result)` is called as each one finishes.
        No program starts after `deadline` (time.monotonic()); those left are None."""
        results = [None] * len(programs)

        def late():
            return deadline is not None and time.monotonic() > deadline

        def done(i, res):
            results[i] = res
            if on_result is not None:
                on_result(i, res)

        if self.jobs <= 1:
            for i, p in enumerate(programs):
                if late():
                    break
                done(i, self.checker(p, **self.options))
            return results
        while len(self.workers) < min(self.jobs, len(programs)):
            self.workers.append(self._spawn())
        workers = self.workers
        pending = collections.deque(enumerate(programs))
        first_failure = {}      # index -> (result on the broken worker, previous program there)
        rechecked = {}          # previous program of a broken worker -> (index, program, first result)
        while pending or any(w.task for w in workers):
            if late():
                pending.clear()
            for w in workers:
                if w.task is None and pending:
                    w.give(pending.popleft())
            ready = wait([w.conn for w in workers if w.task is not None], timeout=1.0)
            for k, w in enumerate(workers):
                if w.task is None:
                    continue
                i, p = w.task
                if w.conn in ready:
                    try:
                        _, res = w.conn.recv()
                        w.task = None
                    except (EOFError, OSError):
                        w.proc.join(timeout=10)
                        res = Result(p, "crash", f"the worker process died (exit code {w.proc.exitcode})",
                                     time.monotonic() - w.started)
                        w.stop(kill=True)
                        workers[k] = self._spawn()
                        done(i, res)
                        continue
                    previous, w.previous = w.previous, (i, p)
                    if sticky_cuda_error(res):
                        w.stop(kill=True)
                        workers[k] = self._spawn()
                        if i not in first_failure and i not in rechecked:
                            first_failure[i] = (res, previous)
                            pending.appendleft((i, p))      # again, on another worker
                            continue
                    if i in rechecked:
                        victim, victim_program, first = rechecked.pop(i)
                        w.stop(kill=True)                   # it may have broken this worker again
                        workers[k] = self._spawn()
                        if not res.ok:                      # the cause of a later program's error
                            res.detail = ("(found when a later program on the same worker hit a sticky "
                                          "CUDA error; it fails again on another worker)\n" + res.detail)
                            done(i, res)
                        else:
                            done(victim, _flaky(victim_program, first, p))
                        continue
                    if i in first_failure and res.ok:
                        first, prev = first_failure.pop(i)
                        if prev is not None and results[prev[0]] is not None and results[prev[0]].ok:
                            rechecked[prev[0]] = (i, p, first)
                            pending.appendleft(prev)
                        else:
                            res = _flaky(p, first, prev[1] if prev else None)
                    first_failure.pop(i, None)
                    done(i, res)
                elif time.monotonic() - w.started > self.timeout:
                    w.stop(kill=True)
                    workers[k] = self._spawn()
                    done(i, Result(p, "timeout", f"no result after {self.timeout:.0f} s", self.timeout))
        return results

    def close(self):
        for w in self.workers:
            w.stop(kill=w.task is not None)
        self.workers = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def run_all(programs, target="cpu", compile_only=False, arch="sm_90a", jobs=1, timeout=300.0, on_result=None):
    """Check every program (see Pool.run)."""
    with Pool(target, compile_only, arch, jobs, timeout) as pool:
        return pool.run(programs, on_result)
