"""How much the control variates buy: plain SE / cv SE, and what settling Theorem 1 costs.

    python benchmarks/variance_reduction.py [--samples 200000] [--workers 2]

Setting of Theorem 1: alpha = 0, LayerNorm, no residual, n = 10, two layers. For each d in
{4, 8, 16, 64, 256} it prints the layer-2 trend (the mean off-diagonal step of S^(2)) and the
layer-2 recency probability, plain and with control variates, with their standard errors and the
variance-reduction factor (plain SE / cv SE). Then, for d = 16 and 64, the number of sequences the
cv estimator needs for the sign of the trend at z >= 5 with 95% probability (z ~ N(mu / SE, 1)
and SE falls as 1/sqrt(N): N = N_0 ((5 + 1.645) / z_0)^2 from the first run), runs that many on
``--workers`` processes, and reports the z reached, the wall time of that run (imports and kernel
load excluded, reported separately) and the same projection from the larger run.
"""

from __future__ import annotations

import argparse
import math
import time
from concurrent.futures import ProcessPoolExecutor

t_import = time.perf_counter()
from recency_lib import SimConfig, simulate_many  # noqa: E402
from recency_lib.engines import warm_up  # noqa: E402

warm_up()
t_import = time.perf_counter() - t_import

THEOREM1 = dict(alpha=0.0, gamma=0.0, norm="layernorm", n=10, layers=2)
Z_TARGET = 5.0
Z_POWER = 1.645  # one-sided 95%: aim the expected z this far above the target


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=200_000, help="sequences per d for the factors")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    print(
        f"import + kernel load: {t_import:.2f} s; {args.samples:,} sequences per d, {args.workers} "
        "workers"
    )
    ds = (4, 8, 16, 64, 256)
    with ProcessPoolExecutor(args.workers) as pool:
        res = simulate_many(
            [SimConfig(d=d, samples=args.samples, seed=args.seed, **THEOREM1) for d in ds],
            executor=pool,
        )
        print("| d | trend plain | trend cv | factor | RP plain | RP cv | factor |")
        print("|---:|---|---|---:|---|---|---:|")
        for d, r in zip(ds, res):
            print(
                f"| {d} | {r.trend_mean[1]:.3e} ± {r.trend_sem[1]:.1e} | {r.trend_cv_mean[1]:.3e} "
                f"± {r.trend_cv_sem[1]:.1e} | {r.trend_sem[1] / r.trend_cv_sem[1]:.3g} | "
                f"{r.recency_probability[1]:.6f} ± {r.recency_probability_sem[1]:.1e} | "
                f"{r.recency_probability_cv[1]:.6f} ± {r.recency_probability_cv_sem[1]:.1e} | "
                f"{r.recency_probability_sem[1] / r.recency_probability_cv_sem[1]:.3g} |"
            )
        for d, r in zip(ds, res):
            if d not in (16, 64):
                continue
            z = r.trend_cv_mean[1] / r.trend_cv_sem[1]
            if r.trend_cv_mean[1] <= 0:
                print(
                    f"d = {d}: the trend is not positive at {args.samples:,} sequences (z = "
                    f"{z:.1f}); no projection"
                )
                continue
            need = max(2 * 512, math.ceil(args.samples * ((Z_TARGET + Z_POWER) / z) ** 2))
            t = time.perf_counter()
            (big,) = simulate_many(
                [SimConfig(d=d, samples=need, seed=args.seed + 1, **THEOREM1)], executor=pool
            )
            wall = time.perf_counter() - t
            z_big = big.trend_cv_mean[1] / big.trend_cv_sem[1]
            again = (
                math.ceil(need * ((Z_TARGET + Z_POWER) / z_big) ** 2) if z_big > 0 else float("nan")
            )
            print(
                f"d = {d}: {need:,} sequences for z >= {Z_TARGET:g} at 95% (plain averaging would "
                f"need {need * (r.trend_sem[1] / r.trend_cv_sem[1]) ** 2:.2g}); ran: trend "
                f"{big.trend_cv_mean[1]:.3e} ± {big.trend_cv_sem[1]:.1e}, z = {z_big:.1f}, "
                f"{wall:.1f} s wall on {args.workers} workers; projected again from this run: "
                f"{again:,} sequences"
            )


if __name__ == "__main__":
    main()
