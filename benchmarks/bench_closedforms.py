"""Cost of the closed-form table (recency_lib.closedforms.measure) built from nothing.

    python benchmarks/bench_closedforms.py [--samples 100000] [--runs 3] [--serial] [--table]

Each run builds the whole table (every closed form, d in {16, 64, 256}) with an empty, temporary
results cache, so every simulation runs: on a ProcessPoolExecutor(2) (the book's 2 cores), and
with --serial also in-process. Reported per run: wall seconds of the simulations and of the cosine
entries, the CPU seconds of this process and its pool workers, and the load average before and
after (other work on the machine inflates wall times; on an idle 2-core machine the 2-worker wall
time is about CPU / 2). --table prints the table itself (verdicts and ratios).
"""
from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor


def cpu_seconds() -> float:
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def one_run(samples: int, workers: int | None):
    from recency_lib import closedforms

    load0 = os.getloadavg()[0]
    cpu0 = cpu_seconds()
    with tempfile.TemporaryDirectory() as cache:
        if workers:
            with ProcessPoolExecutor(workers) as ex:
                table = closedforms.measure(samples=samples, executor=ex, cache=cache)
        else:
            table = closedforms.measure(samples=samples, cache=cache)
    return table, cpu_seconds() - cpu0, load0, os.getloadavg()[0]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=100_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--serial", action="store_true", help="also time an in-process run")
    ap.add_argument("--table", action="store_true", help="print the table of the last run")
    args = ap.parse_args(argv)

    from recency_lib import closedforms
    from recency_lib.engines import warm_up

    t0 = time.perf_counter()
    warm_up()                                        # loads the C kernel; a no-op without it
    print(f"import + kernel load: {time.perf_counter() - t0:.1f} s")
    modes = [("2 workers", 2)] + ([("serial", None)] if args.serial else [])
    walls = {name: [] for name, _ in modes}
    table = None
    for run in range(args.runs):
        for name, workers in modes:                  # interleaved, so load drifts hit both alike
            table, cpu, l0, l1 = one_run(args.samples, workers)
            c = table.cost
            walls[name].append(c.wall_seconds)
            print(f"run {run + 1} {name:9s}: wall {c.wall_seconds:6.1f} s (cosine {c.cosine_seconds:.1f} s), "
                  f"CPU {cpu:6.1f} s, {c.configs} configs, {c.samples:,} sequences, load {l0:.1f} -> {l1:.1f}")
    for name, values in walls.items():
        print(f"median wall, {name}: {statistics.median(values):.1f} s")
    if args.table:
        for r in table.rows:
            cells = " | ".join(c.text() for c in r.cells)
            print(f"{r.form.key:16s} {r.setting.label:27s} {r.part:5s} | {cells} | {r.verdict} {r.trend}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
