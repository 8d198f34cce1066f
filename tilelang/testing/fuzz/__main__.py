"""`python -m tilelang.testing.fuzz --target cpu|cuda --count N --seed S [--compile-only]
[--arch sm_90a] [--jobs J] [--out DIR] [--families A,B] [--minimize K]`: generate N random
programs from seed S, check each on the target (CUDA with --compile-only: NVRTC for the
arch, no GPU needed), print a summary per family, and write every failing program as a
standalone repro .py file under DIR (the first K of them minimized as well). Exit status
1 when any program failed."""
from __future__ import annotations

import argparse
import os
import sys
import time

from tilelang.testing.fuzz import generate, report
from tilelang.testing.fuzz.minimize import minimize
from tilelang.testing.fuzz.pool import Pool


def parse_args(argv=None):
    ap = argparse.ArgumentParser(prog="python -m tilelang.testing.fuzz", description=__doc__.split("\n\n")[0])
    ap.add_argument("--target", choices=("cpu", "cuda"), default="cpu")
    ap.add_argument("--count", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--start", type=int, default=0, help="index of the first program (to resume or to replay one)")
    ap.add_argument("--compile-only", action="store_true", help="CUDA: compile with NVRTC, do not run")
    ap.add_argument("--arch", default="sm_90a", help="arch of --compile-only CUDA builds")
    ap.add_argument("--jobs", type=int, default=None,
                    help="worker processes (default: the number of cores, at most 16)")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds a program may take")
    ap.add_argument("--budget", type=float, default=None,
                    help="seconds for running the programs: none starts later")
    ap.add_argument("--families", default="", help="comma-separated families (default: all): "
                    + ", ".join(generate.FAMILY_WEIGHTS))
    ap.add_argument("--out", default="", help="folder for summary.md/json and the repro files")
    ap.add_argument("--minimize", type=int, default=3, help="minimize at most this many failures (0: none)")
    ap.add_argument("--minimize-tries", type=int, default=60)
    ap.add_argument("--minimize-budget", type=float, default=120.0, help="seconds for all minimizations")
    ap.add_argument("--include-known", action="store_true",
                    help="also generate the constructs of generate.KNOWN_FAILURES (left out by default)")
    ap.add_argument("--quiet", action="store_true")
    return ap.parse_args(argv)


def main(argv=None):
    a = parse_args(argv)
    if a.target == "cpu" and a.compile_only:
        sys.exit("--compile-only is for --target cuda")
    jobs = a.jobs if a.jobs is not None else min(16, os.cpu_count() or 1)
    families = [f for f in a.families.split(",") if f] or None
    t0 = time.perf_counter()
    progs = [generate.generate(generate.program_seed(a.seed, a.start + i), families, a.include_known)
             for i in range(a.count)]
    meta = dict(target=a.target, compile_only=a.compile_only, arch=a.arch, seed=a.seed, start=a.start,
                count=a.count, jobs=jobs)
    what = f"cuda {a.arch}, compile only" if a.compile_only else a.target
    print(f"tilelang fuzz: {a.count} programs from seed {a.seed} on {what}, {jobs} jobs", flush=True)
    if not a.include_known:
        for name in generate.KNOWN_FAILURES:
            print(f"  left out (known failure, --include-known to test it): {name}", flush=True)
    meta["known_failures_left_out"] = [] if a.include_known else list(generate.KNOWN_FAILURES)
    finished = [0]

    def on_result(i, r):
        finished[0] += 1
        if not r.ok:
            print(f"  FAIL #{a.start + i} {r.headline()}", flush=True)
        elif not a.quiet and (finished[0] % max(1, a.count // 10) == 0):
            print(f"  {finished[0]}/{a.count} done ({time.perf_counter() - t0:.0f} s)", flush=True)

    minimized = []
    deadline = time.monotonic() + a.budget if a.budget else None
    with Pool(a.target, a.compile_only, a.arch, jobs, a.timeout) as pool:
        results = pool.run(progs, on_result, deadline)
        skipped = sum(r is None for r in results)
        if skipped:
            print(f"  the time budget ran out: {skipped} programs not run", flush=True)
        elapsed = time.perf_counter() - t0
        failures = [(a.start + i, r) for i, r in enumerate(results) if r is not None and not r.ok]
        results = [r for r in results if r is not None]
        if a.out:
            for index, r in failures:
                report.write_repro(r, a.out, report.repro_name(index, r), what)
        min_deadline = time.monotonic() + a.minimize_budget
        # a flaky failure (a sticky CUDA error neither program shows again) cannot be minimized
        for index, r in [f for f in failures if f[1].status != "flaky"][:a.minimize]:
            if time.monotonic() > min_deadline:
                break

            def fails(p, status=r.status):
                res = pool.run([p], deadline=min_deadline)[0]
                return res is not None and res.status == status
            small, tries = minimize(r.program, fails, a.minimize_tries)
            small_result = pool.run([small])[0] if small != r.program else r
            line = f"#{index} {r.family} {r.status}: minimized in {tries} tries"
            if a.out:
                path = report.write_repro(small_result, a.out, report.repro_name(index, r, "min"), what,
                                          note=f"minimized from program #{index} (seed {a.seed})")
                line += f" -> {os.path.basename(path)}"
            minimized.append(line)
            print("  " + line, flush=True)
    meta["seconds"] = round(elapsed, 1)
    meta["not_run"] = skipped
    print(report.table(results))
    print(f"{len(results)} programs in {elapsed:.1f} s ({elapsed / max(1, len(results)):.2f} s each): "
          f"{len(results) - len(failures)} ok, {len(failures)} failed")
    if a.out:
        print("summary:", report.write_summary(results, a.out, meta, minimized))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
