"""What each placement of the norm costs on the Gram engine, against the paper's pre-norm.

    python benchmarks/bench_placements.py [--runs 5] [--no-avx2]

Setting: the issue's, 10^5 sequences, n = 10, 4 layers, alpha = 0.5, gamma = 1, in this process on
one core (``simulate`` without an executor), LayerNorm and RMSNorm, d = 64 and 1024 (the engine's
cost is free of d). Each placement's median wall time over ``--runs`` rounds (placements interleaved
within a round, so that a slow minute of a shared machine falls on all of them), and its ratio to
pre-norm's median of the same norm and d. Two columns: the installed kernel (setup.py:
-march=native) and an AVX2 build of the same source (-march=x86-64-v3, what a Zen 3 or
Haswell-class CPU runs), measured alternately; the AVX2 column is left out with --no-avx2, without
a C compiler or on a CPU without AVX2. The calibration loop is printed before and after.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _measure import calibration, compile_kernel, load_kernel

from recency_lib import SimConfig, kernels, simulate
from recency_lib.engines import warm_up
from recency_lib.placements import NAMES

REPO = Path(__file__).resolve().parents[1]
SETTING = dict(alpha=0.5, gamma=1.0, n=10, layers=4, samples=100_000)


def medians(builds: dict, runs: int) -> dict:
    """{(build, norm, d, placement): median seconds} over ``runs`` interleaved rounds."""
    cases = [(norm, d, p) for norm in ("layernorm", "rms") for d in (64, 1024) for p in NAMES]
    times = {(b, *c): [] for b in builds for c in cases}
    for _ in range(runs):
        for b, module in builds.items():
            kernels._kernel = module
            for norm, d, p in cases:
                cfg = SimConfig(norm=norm, d=d, placement=p, **SETTING)
                start = time.perf_counter()
                simulate(cfg, progress=False)
                times[b, norm, d, p].append(time.perf_counter() - start)
    return {k: statistics.median(v) for k, v in times.items()}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--no-avx2", action="store_true", help="measure the installed build only")
    args = ap.parse_args(argv)
    if kernels.load() is None:
        print("the C kernel was not built (or RECENCY_LIB_KERNEL=numpy): nothing to measure")
        return 0
    warm_up()
    print(calibration())
    builds = {"installed": kernels._kernel}
    with tempfile.TemporaryDirectory() as tmp:
        if not args.no_avx2:
            out = Path(tmp) / f"_kernel{sysconfig.get_config_var('EXT_SUFFIX')}"
            why = compile_kernel(REPO, out, "x86-64-v3")
            if why:
                print(f"(no AVX2 column: {why})")
            else:
                load_kernel(str(out))
                builds["AVX2 (v3)"] = kernels._kernel
        try:
            best = medians(builds, args.runs)
        finally:
            kernels._kernel = builds["installed"]
    print(f"\nmedian s of {SETTING['samples']:,} sequences (ratio to pre-norm), {args.runs} runs")
    print(f"{'norm':10s} {'d':>5s} {'placement':10s}" + "".join(f"{b:>22s}" for b in builds))
    for norm in ("layernorm", "rms"):
        for d in (64, 1024):
            for p in NAMES:
                ratios = [(best[b, norm, d, p], best[b, norm, d, p] / best[b, norm, d, "pre"])
                          for b in builds]  # fmt: skip
                cells = [f"{t:.3f} ({r:.2f}×)" for t, r in ratios]
                print(f"{norm:10s} {d:5d} {p:10s}" + "".join(f"{c:>22s}" for c in cells))
    print(calibration())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
