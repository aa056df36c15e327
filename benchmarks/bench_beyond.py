"""Where does chapter 8 ("Beyond the paper") spend its time on a cold build?

    python benchmarks/bench_beyond.py [--workers 2] [--samples 10000] [--long-samples 64]

In a fresh interpreter with an empty results cache, with the page's default settings
(:mod:`companion.beyond`): the component study (20 settings) and the length sweep (16 settings),
each on ``--workers`` processes (timed apart here to show where the time goes), then the rest of the
page (papermill on the warm cache: imports, loading the results, figures, tables). Prints the wall
time of each part and the compute seconds of every setting (summed over workers, from
``SimResult.elapsed_seconds``), most expensive first, and what a sequence of each costs. Timings on
a shared machine vary: compare runs made together.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _measure import calibration, child_main, run_child

ROOT = Path(__file__).resolve().parents[1]


def _child(spec: dict) -> dict:
    import os

    os.environ["RECENCY_LIB_CACHE"] = spec["cache"]
    t0 = time.perf_counter()
    from companion import beyond
    from recency_lib import engines
    from recency_lib.cache import cached_simulate_many
    from recency_lib.workers import worker_pool

    engines.warm_up()
    import_s = time.perf_counter() - t0
    out = {"import_s": import_s, "parts": {}, "settings": []}
    studies = {
        "component study": beyond.component_configs(spec["samples"], 0),
        "length sweep": beyond.length_configs(spec["lengths"], spec["long_samples"], 0),
    }
    for part, cfgs in studies.items():
        t = time.perf_counter()
        with worker_pool(spec["workers"]) as pool:
            results = cached_simulate_many(cfgs.values(), executor=pool)
        out["parts"][part] = time.perf_counter() - t
        for key, r in zip(cfgs, results):
            out["settings"].append(
                {
                    "part": part,
                    "key": [str(k) for k in key],
                    "engine": r.engine,
                    "samples": r.config.samples,
                    "n": r.config.n,
                    "seconds": r.elapsed_seconds,
                }
            )
    return out


def _page(cache: str, workers: int) -> float:
    """Wall seconds of the whole page under papermill with a warm results cache."""
    import os

    import papermill as pm

    os.environ["RECENCY_LIB_CACHE"] = cache
    with tempfile.TemporaryDirectory() as out:
        t = time.perf_counter()
        pm.execute_notebook(
            str(ROOT / "book" / "beyond.ipynb"),
            str(Path(out) / "beyond.ipynb"),
            parameters={"workers": workers},
            kernel_name="python3",
            cwd=str(ROOT / "book"),
            progress_bar=False,
        )
        return time.perf_counter() - t


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--samples", type=int, default=10_000)
    ap.add_argument("--long-samples", type=int, default=64)
    ap.add_argument("--lengths", type=int, nargs="+", default=[10, 32, 128, 512])
    args = ap.parse_args(argv)
    print(calibration(), flush=True)
    with tempfile.TemporaryDirectory() as cache:
        r = run_child(
            str(Path(__file__).resolve()),
            {
                "cache": cache,
                "workers": args.workers,
                "samples": args.samples,
                "long_samples": args.long_samples,
                "lengths": args.lengths,
            },
        )
        print(
            f"imports and kernel load: {r['import_s']:.1f} s; peak PSS {r['peak_pss_mb']:.0f} MB; "
            f"load average {r['load_before']:.1f} -> {r['load_after']:.1f}"
        )
        for part, wall in r["parts"].items():
            compute = sum(s["seconds"] for s in r["settings"] if s["part"] == part)
            print(
                f"{part}: {wall:.1f} s wall on {args.workers} workers ({compute:.1f} s of compute)"
            )
        print("settings, most expensive first (compute seconds summed over workers):")
        for s in sorted(r["settings"], key=lambda s: -s["seconds"]):
            per = 1e3 * s["seconds"] / s["samples"]
            print(
                f"  {s['part']:15s} {' / '.join(s['key']):22s} {s['engine']:5s} n={s['n']:<4d} "
                f"{s['samples']:>6d} seq {s['seconds']:7.2f} s  ({per:.2f} ms per sequence)"
            )
        warm = _page(cache, args.workers)
        print(
            "the page on a warm results cache (papermill: kernel start, imports, figures, "
            f"tables): {warm:.1f} s"
        )
    return 0


if __name__ == "__main__":
    if not child_main(sys.argv[1:], _child):
        sys.exit(main())
