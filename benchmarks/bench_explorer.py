"""What the explorer page (book/explorer.ipynb) costs a build: its 240-setting grid cold
(empty results cache) and warm (every setting cached), the payload, the HTML and its weight.

    python benchmarks/bench_explorer.py [--samples 10000] [--runs 3] [--workers 2]

Each run is a fresh child interpreter (imports, the kernel's load and the process pool are inside
the numbers) with a new, empty cache directory for the cold pass, which the warm pass then reuses.
Reported: median wall seconds per stage, CPU seconds of all processes, the recency probability's
largest and median SE (what the samples buy), the page weight, and the load average (other work on
the machine slows wall times; CPU seconds suffer far less).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time


def _child(samples: int, workers: int, cache: str) -> dict:
    import resource

    def cpu():
        me, kids = (
            resource.getrusage(resource.RUSAGE_SELF),
            resource.getrusage(resource.RUSAGE_CHILDREN),
        )
        return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime

    t0, c0 = time.perf_counter(), cpu()
    from concurrent.futures import ProcessPoolExecutor

    from companion import explorer
    from recency_lib.cache import cached_simulate_many
    from recency_lib.engines import warm_up

    warm_up()
    out = {"import_s": time.perf_counter() - t0}
    configs = explorer.grid_configs(samples)
    for name in ("cold", "warm"):
        t, c = time.perf_counter(), cpu()
        with ProcessPoolExecutor(workers) as pool:
            results = cached_simulate_many(configs, cache=cache, executor=pool)
        out[f"{name}_s"], out[f"{name}_cpu_s"] = time.perf_counter() - t, cpu() - c
    t = time.perf_counter()
    data = explorer.explorer_data(results)
    out["data_s"] = time.perf_counter() - t
    t = time.perf_counter()
    page = explorer.page_html(data)
    out["html_s"] = time.perf_counter() - t
    out.update(
        total_s=time.perf_counter() - t0,
        total_cpu_s=cpu() - c0,
        weight=explorer.page_weight(page),
        rp_se_max=data["meta"]["rp_se_max"],
        rp_se_median=data["meta"]["rp_se_median"],
    )
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--samples",
        type=int,
        default=None,
        help="per setting (default: the page's DEFAULT_SAMPLES)",
    )
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--cache", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        print(json.dumps(_child(args.samples, args.workers, args.cache)))
        return 0
    if args.samples is None:
        from companion.explorer import DEFAULT_SAMPLES

        args.samples = DEFAULT_SAMPLES
    load0 = os.getloadavg()
    runs = []
    for _ in range(args.runs):
        with tempfile.TemporaryDirectory(prefix="bench-explorer-") as cache:
            cmd = [
                sys.executable,
                __file__,
                "--child",
                "--samples",
                str(args.samples),
                "--workers",
                str(args.workers),
                "--cache",
                cache,
            ]
            runs.append(
                json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
            )
    med = {k: statistics.median(r[k] for r in runs) for k in runs[0] if k.endswith("_s")}
    w = runs[0]["weight"]
    print(
        f"explorer grid: 240 settings x {args.samples:,} samples, "
        f"ProcessPoolExecutor({args.workers}), {args.runs} runs (median); load average "
        f"{load0[0]:.1f} -> {os.getloadavg()[0]:.1f}"
    )
    print(f"  import + kernel load   {med['import_s']:6.2f} s")
    print(
        f"  grid, cold cache       {med['cold_s']:6.2f} s wall, {med['cold_cpu_s']:6.1f} s CPU "
        f"(runs: {', '.join(format(r['cold_s'], '.1f') for r in runs)} s)"
    )
    print(f"  grid, warm cache       {med['warm_s']:6.2f} s wall, {med['warm_cpu_s']:6.1f} s CPU")
    print(f"  payload / HTML         {med['data_s']:6.2f} s / {med['html_s']:.2f} s")
    print(f"  whole child            {med['total_s']:6.2f} s wall, {med['total_cpu_s']:6.1f} s CPU")
    print(
        f"  RP standard error      max {runs[0]['rp_se_max']:.2g}, "
        f"median {runs[0]['rp_se_median']:.2g}"
    )
    print(
        f"  page weight            {w['total'] / 1000:.0f} kB (data {w['data'] / 1000:.0f} kB, "
        f"script {w['script'] / 1000:.1f} kB, style {w['style'] / 1000:.1f} kB)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
