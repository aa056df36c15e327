"""Where does the time of a gram block go? (one core, in-process)

    python benchmarks/bench_kernel.py [--rounds 30]

Setting: alpha = 0.5, gamma = 1, LayerNorm, d = 64, 4 layers, blocks of 512 sequences (the Figure-1
block at n = 10). Each line is the minimum over ``--rounds`` interleaved rounds of CPU (process)
time, which other load on a shared machine inflates least, in ns per sequence and layer:

1. a whole block at n = 10: seeding (the block's key), draws (the compiled generator, its numpy twin,
   and for reference the same numbers of normals and chi-squares from numpy's own Generator, what
   the engine used before), the compiled C kernel (draws -> moments), the same through the numpy path
   (:func:`recency_lib.model.layer` + :mod:`recency_lib.features`), and the recency count alone (the
   kernel's count routine on the block's packed scores);
2. the kernel at other lengths: n = 10 runs code specialised for it (every loop unrolled), n = 9
   and 11 the general code, so their difference is what the specialisation buys; longer n shows
   how the cost per sequence grows (the layer ~ n^3 multiply-adds, the recency count ~ n^3 / 6).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _measure import calibration  # noqa: E402

from recency_lib import SimConfig  # noqa: E402
from recency_lib.engines import gram_block_moments, warm_up  # noqa: E402
from recency_lib.features import TIE_RTOL, compiled_kernels  # noqa: E402
from recency_lib.sampling import degrees_of_freedom, gram_draws  # noqa: E402
from recency_lib.streams import block_key  # noqa: E402

CFG = SimConfig(alpha=0.5, gamma=1.0, norm="layernorm", n=10, d=64, layers=4)
B = 512


def best_of(fns: dict, rounds: int) -> dict:
    """{name: min over rounds of CPU ns per sequence-layer}; fns: name -> (callable, sequence-layers per call)."""
    best = {k: float("inf") for k in fns}
    for fn, _ in fns.values():
        fn()
    for _ in range(rounds):
        for k, (fn, per) in fns.items():
            reps = max(1, 20_000 // per)
            t = time.process_time()
            for _ in range(reps):
                fn()
            best[k] = min(best[k], (time.process_time() - t) / reps / per * 1e9)
    return best


def numpy_generator_draws(cfg: SimConfig, size: int):
    """The same count of chi-squares (rows k, k - 1, ...) and normals from numpy's Generator
    (PCG64: standard_gamma, standard_normal), seeded as before the counter-based generator."""
    rng = np.random.default_rng(np.random.SeedSequence(0, spawn_key=(7,)))
    k, m = degrees_of_freedom(cfg), cfg.n
    chi2 = np.empty((m, size))
    for i in range(m):
        rng.standard_gamma((k - i) / 2.0, size=size, out=chi2[i])
    return 2.0 * chi2, rng.standard_normal((m * (m - 1) // 2, size))


def packed_scores(cfg: SimConfig, draws) -> tuple[np.ndarray, np.ndarray]:
    """The last layer's scores of a block as the count routine reads them: lower triangles packed
    row after row, samples last, (n(n+1)/2, B); and the tie tolerances (B,)."""
    _, f = gram_block_moments(cfg, *draws, kernel="c", features=True)     # (B, layers, F)
    t = cfg.n * (cfg.n + 1) // 2
    s = np.ascontiguousarray(f[:, -1, :t].T)
    return s, TIE_RTOL * np.maximum(1.0, np.abs(s).max(axis=0))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=30)
    args = ap.parse_args(argv)
    kernels = compiled_kernels()
    if kernels is None:
        print("the C kernel was not built (or RECENCY_LIB_KERNEL=numpy): no compiled kernel to measure")
        return 0
    warm_up()
    print(calibration())
    L = CFG.layers
    draws = gram_draws(CFG, block_key(0, 0), B)
    s, tol = packed_scores(CFG, draws)
    out = np.empty((2, B), dtype=np.int64)
    print(f"\n1. one block at n = {CFG.n} (ns per sequence-layer; {L} layers, B = {B})")
    for k, v in best_of({
        "seeding (the block's key from its SeedSequence)": (lambda: block_key(0, 7), B * L),
        "draws (chi-square and normals): the compiled generator": (lambda: gram_draws(CFG, block_key(0, 7), B), B * L),
        "draws: its numpy twin (the same bits)": (lambda: gram_draws(CFG, block_key(0, 7), B, kernel="numpy"), B * L),
        "draws: numpy's Generator, for reference": (lambda: numpy_generator_draws(CFG, B), B * L),
        "C kernel (draws -> moments of every feature)": (lambda: gram_block_moments(CFG, *draws, kernel="c"), B * L),
        "numpy path (model.layer + features)": (lambda: gram_block_moments(CFG, *draws, kernel="numpy"), B * L),
        "recency count alone (120 triples, one layer)": (lambda: kernels.count_pairs(CFG.n, s, tol, out), B),
    }, max(3, args.rounds // 3)).items():
        print(f"   {v:8.1f}  {k}")

    print("\n2. the C kernel at other lengths (ns per sequence-layer; n = 10 is the specialised code)")
    fns = {}
    for n in (9, 10, 11, 16, 32, 64):
        cfg = CFG.replace(n=n)
        d = gram_draws(cfg, block_key(n, 0), B)
        fns[f"n = {n}"] = (lambda cfg=cfg, d=d: gram_block_moments(cfg, *d, kernel="c"), B * L)
    for k, v in best_of(fns, max(3, args.rounds // 3)).items():
        print(f"   {v:8.1f}  {k}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
