"""Cost of Appendix A's computation (book/appendix_a.ipynb) built from nothing.

    python benchmarks/bench_closedforms.py [--samples 20000] [--boost 8] [--cosine-samples 5000]
                                           [--runs 3] [--serial] [--sympy] [--warm] [--table]

Each run builds the closed-form table (companion.closedforms.measure: every closed form,
d in {16, 64, 256}) with an empty, temporary results cache, so every simulation runs, on a
2-process pool (recency_lib.workers.worker_pool, the book's 2 cores) as the page does; with
--serial also in-process. With --sympy the run also does what the page does beside the
simulations: the sympy checks of companion.symbolic, submitted to the same pool first. The
defaults are the page's parameters. (The page's Eq. (5) verdict reads Theorem 1's settings at the
paper's sample count from the results cache that the landing page fills in a book build; it is not
part of this cost.)

Reported per run: wall seconds of the whole, the summed compute of the simulations (as the engines
time them) and of the cosine draws, the sympy seconds, the CPU seconds of this process and its
pool workers, and the load average before and after (other work on the machine inflates wall
times; on an idle 2-core machine the 2-worker wall time is about CPU / 2). Modes are interleaved
so that load drifts hit them alike. --table prints the table of the last run.

With --warm, a further mode times what a rebuild of the page costs when the library did not change:
one untimed run fills a temporary cache, then each timed run reads every simulation and cosine draw
from it and, with --sympy, the sympy checks' verdicts too (companion.errata.sympy_checks, cached
by the source of companion.symbolic); its "sympy" column is then 0 when the verdicts came from the
cache, and its "simulations" and "cosines" columns are the compute stored with the cached results,
not spent in the run.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import tempfile
import time


def cpu_seconds() -> float:
    own, kids = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def one_run(args, workers: int | None, warm_cache: str | None = None):
    from companion import closedforms, errata, symbolic
    from recency_lib.workers import worker_pool

    load0 = os.getloadavg()[0]
    cpu0 = cpu_seconds()
    t0 = time.perf_counter()
    kw = dict(samples=args.samples, boost=args.boost, cosine_samples=args.cosine_samples)
    sympy_seconds = 0.0
    with tempfile.TemporaryDirectory() as empty:
        cache = warm_cache or empty
        if warm_cache:
            with worker_pool(workers or 1) as pool:
                job = pool.submit(errata.sympy_checks, warm_cache) if args.sympy else None
                table = closedforms.measure(executor=pool, cache=cache, **kw)
                if job is not None:
                    _, ran, hit = job.result()
                    sympy_seconds = 0.0 if hit else ran
        elif workers:
            with worker_pool(workers) as pool:
                job = pool.submit(symbolic.run_all_timed) if args.sympy else None
                table = closedforms.measure(executor=pool, cache=cache, **kw)
                if job is not None:
                    sympy_seconds = job.result()[1]
        else:
            table = closedforms.measure(cache=cache, **kw)
            if args.sympy:
                sympy_seconds = symbolic.run_all_timed()[1]
    return (
        table,
        time.perf_counter() - t0,
        sympy_seconds,
        cpu_seconds() - cpu0,
        load0,
        os.getloadavg()[0],
    )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=20_000)
    ap.add_argument("--boost", type=int, default=8)
    ap.add_argument("--cosine-samples", type=int, default=5_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--serial", action="store_true", help="also time an in-process run")
    ap.add_argument(
        "--sympy", action="store_true", help="also run the sympy checks beside the simulations"
    )
    ap.add_argument(
        "--warm",
        action="store_true",
        help="also time runs that read everything from a filled cache",
    )
    ap.add_argument("--table", action="store_true", help="print the table of the last run")
    args = ap.parse_args(argv)

    from recency_lib.engines import warm_up

    t0 = time.perf_counter()
    warm_up()  # loads the C kernel; a no-op without it
    print(f"import + kernel load: {time.perf_counter() - t0:.1f} s")
    modes = (
        [("2 workers", 2)]
        + ([("serial", None)] if args.serial else [])
        + ([("warm", 2)] if args.warm else [])
    )
    walls = {name: [] for name, _ in modes}
    table = None
    with tempfile.TemporaryDirectory() as warm_cache:
        if args.warm:
            one_run(args, 2, warm_cache)  # fills the cache; not timed
        for run in range(args.runs):
            for name, workers in modes:  # interleaved, so load drifts hit them alike
                table, wall, sympy_s, cpu, l0, l1 = one_run(
                    args, workers, warm_cache if name == "warm" else None
                )
                c = table.cost
                walls[name].append(wall)
                print(
                    f"run {run + 1} {name:9s}: wall {wall:6.1f} s; compute: simulations "
                    f"{c.compute_seconds:.1f} s, cosines {c.cosine_seconds:.1f} s, sympy "
                    f"{sympy_s:.1f} s; CPU {cpu:6.1f} s; {c.configs} configs, {c.samples:,} "
                    f"sequences; load {l0:.1f} -> {l1:.1f}"
                )
    for name, values in walls.items():
        print(f"median wall, {name}: {statistics.median(values):.1f} s")
    if args.table:
        for r in table.rows:
            cells = " | ".join(c.text() for c in r.cells)
            print(
                f"{r.form.key:16s} {r.setting.short:24s} {r.part:5s} | {cells} | {r.verdict} "
                f"{r.trend}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
