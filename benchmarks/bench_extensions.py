"""How long do the decoder layouts beyond the paper take at long sequences?

    python benchmarks/bench_extensions.py [--full]

The common decoder layout (pre-RMSNorm, RoPE, 4 heads, FFN, residual, fixed random weights, 4
layers) on the dense engine with 2 workers, each in a fresh interpreter: n = 256, d = 256 with 10^3
sequences (``--full``: 10^4, ~10 min), then the cost per sequence at d = 64
for n = 10 ... 512. Wall time of the run (imports and kernel load reported beside it), peak PSS of
the process tree (memory is bounded by the block size, not the number of sequences).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _measure import calibration, child_main, run_child

COMBINED = dict(
    alpha=0.5,
    gamma=1.0,
    norm="rms",
    layers=4,
    heads=4,
    rope=True,
    ffn=True,
    weights="fixed",
    engine="dense",
)


def _child(spec: dict) -> dict:
    t0 = time.perf_counter()
    from concurrent.futures import ProcessPoolExecutor

    from recency_lib import SimConfig, simulate

    cfg = SimConfig(**spec["config"])
    import_s = time.perf_counter() - t0
    t = time.perf_counter()
    with ProcessPoolExecutor(2) as pool:
        r = simulate(cfg, executor=pool)
    return {
        "import_s": import_s,
        "wall_s": time.perf_counter() - t,
        "rp": [float(r.recency_probability[-1]), float(r.recency_probability_sem[-1])],
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--full", action="store_true", help="n = d = 256 with 10^4 sequences (~10 min)")
    args = ap.parse_args(argv)
    script = str(Path(__file__).resolve())
    print(calibration(), flush=True)
    samples = 10_000 if args.full else 1_000
    r = run_child(script, {"config": dict(COMBINED, n=256, d=256, samples=samples)})
    print(
        f"combined layout, n = 256, d = 256, {samples:.0e} sequences, 2 workers: "
        f"{r['wall_s']:.1f} s (+ {r['import_s']:.1f} s imports), "
        f"peak PSS {r['peak_pss_mb']:.0f} MB; "
        f"layer-4 recency probability {r['rp'][0]:.4f} ± {r['rp'][1]:.4f}",
        flush=True,
    )
    for n in (10, 64, 256, 512):
        s = max(16, 40_960 // n)
        r = run_child(script, {"config": dict(COMBINED, n=n, d=64, samples=s)})
        print(
            f"combined layout, n = {n}, d = 64, {s} sequences, 2 workers: {r['wall_s']:.2f} s, "
            f"{1e3 * r['wall_s'] / s:.1f} ms per sequence; peak PSS {r['peak_pss_mb']:.0f} MB",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    if not child_main(sys.argv[1:], _child):
        sys.exit(main())
