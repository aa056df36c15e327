"""Where does the time of a gram block go? (one core, in-process)

    python benchmarks/bench_kernel.py [--rounds 30]

Setting: alpha = 0.5, gamma = 1, LayerNorm, d = 64, 4 layers, blocks of 512 sequences (the Figure-1
block at n = 10). Each line is the minimum over ``--rounds`` interleaved rounds of CPU (process)
time, which other load on a shared machine inflates least, in ns per sequence and layer:

1. a whole block at n = 10: seeding (the block's key), draws (the compiled generator, its numpy
   twin, and for reference the same numbers of normals and chi-squares from numpy's own Generator,
   what the engine used before), the compiled C kernel (draws -> moments), the same through the
   numpy path (:func:`recency_lib.model.layer` + :mod:`recency_lib.features`), and the recency count
   alone (the kernel's count routine on the block's packed scores);
2. the kernel at other lengths: n = 10 runs code specialised for it (every loop unrolled), n = 9
   and 11 the general code, so their difference is what the specialisation buys; longer n shows
   how the cost per sequence grows (the layer ~ n^3 multiply-adds, the recency count ~ n^3 / 6).

Every line has two columns: the installed build (setup.py: -march=native, 8 lanes where the CPU has
AVX-512) and an AVX2 build of the same source that this script compiles with setup.py's flags and
-march=x86-64-v3 (4 lanes, FMA, no AVX-512: what a Zen 3 or Haswell-class CPU runs), both measured
in the same rounds, alternately. (Both give the same bits: tests/test_kernel_builds.py.) The AVX2
column is left out with --no-avx2, where there is no C compiler, or where the CPU lacks AVX2.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _measure import calibration, compile_kernel

from recency_lib import SimConfig, kernels
from recency_lib.engines import gram_block_moments, kernel_block, kernel_sums, warm_up
from recency_lib.features import n_features
from recency_lib.rounding import TIE_RTOL
from recency_lib.sampling import degrees_of_freedom, gram_draws
from recency_lib.streams import block_key

CFG = SimConfig(alpha=0.5, gamma=1.0, norm="layernorm", n=10, d=64, layers=4)
B = 512
REPO = Path(__file__).resolve().parents[1]


def avx2_build(workdir: str):
    """The kernel compiled with setup.py's BASE flags and -march=x86-64-v3, loaded as a module; or
    None (with the reason printed) where that cannot be built or run here."""
    out = Path(workdir) / f"_kernel{sysconfig.get_config_var('EXT_SUFFIX')}"
    why = compile_kernel(REPO, out, "x86-64-v3")
    if why:
        print(f"(no AVX2 column: {why})")
        return None
    spec = importlib.util.spec_from_file_location("_kernel", out)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def on(module, fn):
    """fn with ``module`` as the compiled kernel that recency_lib calls."""

    def run():
        kernels._kernel = module
        return fn()

    return run


def best_of(fns: dict, rounds: int) -> dict:
    """{name: min over rounds of CPU ns per sequence-layer}; fns: name -> (callable,
    sequence-layers per call)."""
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
    f = np.empty((cfg.layers, n_features(cfg.n), draws[0].shape[-1]))  # (layers, F, B)
    kernel_block(cfg, *draws, [a[0] for a in kernel_sums(cfg, 1)], f)
    t = cfg.n * (cfg.n + 1) // 2
    s = np.ascontiguousarray(f[-1, :t])
    return s, TIE_RTOL * np.maximum(1.0, np.abs(s).max(axis=0))


def table(rows: dict, builds: dict, rounds: int) -> None:
    """rows: label -> (fn, per, compiled?); a compiled row is measured once per build,
    the others once."""
    fns = {}
    for label, (fn, per, compiled) in rows.items():
        for b, module in (
            builds.items() if compiled else [(next(iter(builds)), builds[next(iter(builds))])]
        ):
            fns[label, b] = (on(module, fn), per)
    best = best_of(fns, rounds)
    print("   " + "".join(f"{b:>12s}" for b in builds))
    for label in rows:
        cells = [best[label, b] if (label, b) in best else None for b in builds]
        print(
            "   "
            + "".join(f"{c:12.1f}" if c is not None else f"{'':12s}" for c in cells)
            + f"  {label}"
        )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--no-avx2", action="store_true", help="measure the installed build only")
    args = ap.parse_args(argv)
    if kernels.load() is None:
        print(
            "the C kernel was not built (or RECENCY_LIB_KERNEL=numpy): "
            "no compiled kernel to measure"
        )
        return 0
    warm_up()
    print(calibration())
    with tempfile.TemporaryDirectory() as tmp:
        builds = {"installed": kernels._kernel}
        avx2 = None if args.no_avx2 else avx2_build(tmp)
        if avx2 is not None:
            builds["AVX2 (v3)"] = avx2
        try:
            run(builds, max(3, args.rounds // 3))
        finally:
            kernels._kernel = builds["installed"]
    print(calibration())
    return 0


def run(builds: dict, rounds: int) -> None:
    L = CFG.layers
    draws = gram_draws(CFG, block_key(0, 0), B)
    s, tol = packed_scores(CFG, draws)
    out = np.empty((2, B), dtype=np.int64)
    print(f"\n1. one block at n = {CFG.n} (ns per sequence-layer; {L} layers, B = {B})")
    table(
        {
            "seeding (the block's key from its SeedSequence)": (
                lambda: block_key(0, 7),
                B * L,
                False,
            ),
            "draws (chi-square and normals): the compiled generator": (
                lambda: gram_draws(CFG, block_key(0, 7), B),
                B * L,
                True,
            ),
            "draws: its numpy twin (the same bits)": (
                lambda: gram_draws(CFG, block_key(0, 7), B, kernel="numpy"),
                B * L,
                False,
            ),
            "draws: numpy's Generator, for reference": (
                lambda: numpy_generator_draws(CFG, B),
                B * L,
                False,
            ),
            "C kernel (draws -> moments of every feature)": (
                lambda: gram_block_moments(CFG, *draws, kernel="c"),
                B * L,
                True,
            ),
            "numpy path (model.layer + features)": (
                lambda: gram_block_moments(CFG, *draws, kernel="numpy"),
                B * L,
                False,
            ),
            "recency count alone (120 triples, one layer)": (
                lambda: kernels.count_pairs(CFG.n, s, tol, out),
                B,
                True,
            ),
        },
        builds,
        rounds,
    )

    print(
        "\n2. the C kernel at other lengths (ns per sequence-layer; n = 10 is the specialised code)"
    )
    rows = {}
    for n in (9, 10, 11, 16, 32, 64):
        cfg = CFG.replace(n=n)
        d = gram_draws(cfg, block_key(n, 0), B)
        rows[f"n = {n}"] = (
            lambda cfg=cfg, d=d: gram_block_moments(cfg, *d, kernel="c"),
            B * L,
            True,
        )
    table(rows, builds, rounds)


if __name__ == "__main__":
    sys.exit(main())
