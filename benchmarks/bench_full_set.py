"""Does the authors' later full set fit in 2 minutes and 300 MB on 2 workers?

    python benchmarks/bench_full_set.py [--samples 10000000] [--workers 2]

The set: d in {16, 64, 256, 1024} x the four Figure-1 settings (n = 10, 4 layers), 10^7 sequences
each (as the authors' later code runs them), with the recency probability and the control-variate
estimates, on a ProcessPoolExecutor(--workers), in a fresh interpreter: the whole process's wall
time (imports and kernel load included, and reported beside it), CPU time of all processes, and
the peak memory (PSS and RSS) of the process tree. The compute seconds of each config show that the
cost does not depend on d (the gram engine). Targets: <= 120 s, <= 300 MB.
``--samples 1000000`` gives a 10x shorter run.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _measure import calibration, child_main, cpu_seconds, run_child

from companion.settings import fig1_configs

DS = (16, 64, 256, 1024)


def _child(spec: dict) -> dict:
    t0 = time.perf_counter()
    from concurrent.futures import ProcessPoolExecutor

    from recency_lib import simulate_many
    from recency_lib.engines import warm_up

    warm_up()
    import_s = time.perf_counter() - t0
    cfgs = [c for d in DS for c in fig1_configs(spec["samples"], d=d)]
    w, c = time.perf_counter(), cpu_seconds()
    with ProcessPoolExecutor(spec["workers"]) as pool:
        res = simulate_many(cfgs, executor=pool)
    return {
        "import_s": import_s,
        "wall_s": time.perf_counter() - w,
        "cpu_s": cpu_seconds() - c,
        "per_config_s": [r.elapsed_seconds for r in res],
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=10_000_000)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args(argv)
    print(calibration(), flush=True)
    r = run_child(str(Path(__file__).resolve()), dict(samples=args.samples, workers=args.workers))
    per = r["per_config_s"]
    models = len(fig1_configs())
    by_d = {d: sum(per[i * models : (i + 1) * models]) for i, d in enumerate(DS)}
    print(
        f"full set (d in {DS} x 4 settings x {args.samples:.0e}, {args.workers} workers): whole "
        f"process {r['process_wall_s']:.1f} s wall (of which import + kernel load "
        f"{r['import_s']:.1f} s), CPU {r['cpu_s']:.1f} s in all processes; peak PSS "
        f"{r['peak_pss_mb']:.0f} MB (RSS {r['peak_rss_mb']:.0f} MB); targets 120 s, 300 MB; load "
        f"{r['load_before']:.1f} -> {r['load_after']:.1f}"
    )
    print(
        "compute seconds per d (4 settings, summed over workers): "
        + ", ".join(f"d={d}: {s:.1f}" for d, s in by_d.items())
    )
    return 0


if __name__ == "__main__":
    if not child_main(sys.argv[1:], _child):
        sys.exit(main())
