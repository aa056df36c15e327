"""Where does the time of a gram block go? (one core, in-process)

    python benchmarks/bench_kernel.py [--rounds 30]

Setting: alpha = 0.5, gamma = 1, LayerNorm, n = 10, d = 64, 4 layers, blocks of 512 sequences (the
Figure-1 block). Each line is the minimum over ``--rounds`` interleaved rounds of CPU (process)
time, which other load on a shared machine inflates least, in ns per sequence and layer:

1. a whole block: seeding, draws, the compiled kernel (and the same through the numpy path);
2. the kernel's stages on one tile (coordinates, the layer with its exp, steps and trends, the
   recency count, the moment sums), called one by one (each call adds ~1 us of dispatch);
3. the kernel's tile size (samples walked together; a whole block is 512).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _measure import calibration  # noqa: E402

from recency_lib import SimConfig, engines  # noqa: E402
from recency_lib.engines import _offsets, gram_block_moments, tile_size, warm_up  # noqa: E402
from recency_lib.features import compiled_kernels, n_features  # noqa: E402
from recency_lib.sampling import gram_draws, sigma_cholesky  # noqa: E402

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


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=30)
    args = ap.parse_args(argv)
    kernels = compiled_kernels()
    if kernels is None:
        print("numba is not installed: no compiled kernel to measure")
        return 0
    warm_up()
    print(calibration())
    L = CFG.layers
    draws = gram_draws(CFG, np.random.default_rng(0), B)
    seed = lambda: np.random.default_rng(np.random.SeedSequence(0, spawn_key=(7,)))      # noqa: E731
    print(f"\n1. one block (ns per sequence-layer; {CFG.layers} layers, B = {B}, tile = {tile_size(CFG)})")
    for k, v in best_of({
        "seeding (SeedSequence + Generator)": (seed, B * L),
        "draws (chi-square and normals)": (lambda: gram_draws(CFG, seed(), B), B * L),
        "compiled kernel (draws -> moments)": (lambda: gram_block_moments(CFG, *draws, kernel="numba"), B * L),
        "numpy path (model.layer + features)": (lambda: gram_block_moments(CFG, *draws, kernel="numpy"), B * L),
    }, max(3, args.rounds // 3)).items():
        print(f"   {v:8.1f}  {k}")

    tile = tile_size(CFG)
    n, w = CFG.n, CFG.n
    offs, nf = _offsets(n), n_features(n)
    start = offs[3]
    chol = sigma_cholesky(n, CFG.c)
    x0, x, xn = (np.zeros((n, w, tile)) for _ in range(3))
    f, first = np.empty((nf, tile)), np.empty((nf - start, tile))
    inv, scratch, out = np.empty((n, tile)), np.empty((3, tile)), np.empty((2, tile), np.int64)
    shift, s1, s2, sc = np.zeros(nf), np.zeros(nf), np.zeros(nf), np.zeros(nf - start)
    kernels._coordinates(*draws, chol, True, False, 64.0, 0, tile, x0, xn)

    def layer():
        x[:] = x0                                                   # the layer normalises x in place
        kernels._layer(x, xn, f, 64.0, True, 1.0, 1e-12, offs, True, inv, scratch)

    stages = best_of({
        "copy of the state (subtract from the layer)": (lambda: x.__setitem__(slice(None), x0), tile),
        "coordinates from the draws (per layer)": (
            lambda: kernels._coordinates(*draws, chol, True, False, 64.0, 0, tile, x, xn), tile * L),
        "layer: norms, scores, softmax (55 exp), next state": (layer, tile),
        "steps, row trends, trend, recency count": (lambda: kernels._steps(f, n, offs, 1e-10, scratch[2], out), tile),
        "   of which the recency count (120 triples)": (lambda: kernels.count_pairs(n, f[:55], scratch[2], out), tile),
        "moment sums (175 features)": (lambda: kernels._accumulate(f, tile, shift, s1, s2), tile),
        "co-moments with layer 1 (46 controls)": (
            lambda: kernels._accumulate_cross(f, first, tile, start, shift, shift, sc), tile),
    }, args.rounds)
    print(f"\n2. the kernel's stages on one tile of {tile} (ns per sequence-layer)")
    for k, v in stages.items():
        print(f"   {v:8.1f}  {k}")

    print("\n3. tile size (whole kernel, ns per sequence-layer)")
    orig = engines.tile_size
    fns = {}
    for t in (32, 64, 128, 256, 512):
        def run(t=t):
            engines.tile_size = lambda c: t
            gram_block_moments(CFG, *draws, kernel="numba")
        fns[f"tile {t}"] = (run, B * L)
    for k, v in best_of(fns, max(3, args.rounds // 3)).items():
        print(f"   {v:8.1f}  {k}")
    engines.tile_size = orig
    return 0


if __name__ == "__main__":
    sys.exit(main())
