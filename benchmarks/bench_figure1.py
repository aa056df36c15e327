"""How long does the paper's Figure-1 workload take, warm and from a cold start?

    python benchmarks/bench_figure1.py [--runs 5] [--samples 100000] [--no-avx2]

The workload: the four settings of Figure 1 (alpha = 0 without normalization; alpha = 0 and 0.5
with LayerNorm; alpha = 0.5 with LayerNorm and gamma = 1), n = 10, d = 64, 4 layers, 10^5 sequences
each, with the recency probability and the control-variate estimates (what every simulation
computes). Three measurements, each in fresh interpreters:

* warm, one core: recency_lib imported and the compiled kernel loaded, then the workload
  ``--runs`` times in the same process, serially (``simulate_many`` without an executor): the
  compute time; median, min and max, wall and CPU.
* cold start, one core: a fresh interpreter that imports recency_lib, loads the C kernel (a shared
  library built by ``pip install -e .``) and runs the workload once; its whole life as seen from
  the parent (interpreter start to exit), ``--runs`` times; the import + kernel load part beside it.
* cold start, two workers: the same with a ``ProcessPoolExecutor(2)`` (pool start included), and
  with two threads (``ThreadPoolExecutor(2)``: the kernel releases the GIL). The child imports only
  recency_lib (the configs come from the parent), as a user's script would.
* warm, one core, AVX2 build: the first measurement with the kernel compiled for AVX2 (setup.py's
  flags and -march=x86-64-v3, into a temporary folder; bench_kernel.avx2_build) and loaded in place
  of the installed one: what a reader's AVX2 machine runs (left out with --no-avx2 or without AVX2).

Targets: compute <= 0.35 s warm on one core, <= 1 s in a fresh process. Peak memory is
the PSS of the whole process tree. ``kernel=`` in the output says which kernel ran ("c", or "numpy"
when the C kernel was not built).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _measure import calibration, child_main, cpu_seconds, load_kernel, run_child, summary


def _child(spec: dict) -> dict:
    t0 = time.perf_counter()
    from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

    from recency_lib import SimConfig, simulate_many
    from recency_lib.engines import warm_up
    from recency_lib.kernels import kernel_name

    load_kernel(spec.get("kernel_path"))
    warm_up()
    out = {"import_s": time.perf_counter() - t0, "kernel": kernel_name()}
    cfgs = [SimConfig(**c) for c in spec["configs"]]  # the book's Figure 1 (a user's imports only)
    walls, cpus = [], []
    for _ in range(spec["runs"]):
        w, c = time.perf_counter(), cpu_seconds()
        if spec.get("threads"):  # the kernel releases the GIL: one process, two cores
            with ThreadPoolExecutor(spec["threads"]) as pool:
                res = simulate_many(cfgs, executor=pool)
        elif spec["workers"] > 1:
            with ProcessPoolExecutor(spec["workers"]) as pool:
                res = simulate_many(cfgs, executor=pool)
        else:
            res = simulate_many(cfgs)
        walls.append(time.perf_counter() - w)
        cpus.append(cpu_seconds() - c)
    out.update(
        walls=walls, cpus=cpus, rp=[round(float(r.recency_probability_cv[-1]), 4) for r in res]
    )
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--samples", type=int, default=100_000)
    ap.add_argument("--no-avx2", action="store_true", help="the installed kernel only")
    args = ap.parse_args(argv)
    script = str(Path(__file__).resolve())
    from companion.settings import fig1_configs  # the paper's n = 10, d = 64, 4 layers

    configs = [c.to_dict() for c in fig1_configs(args.samples)]
    print(calibration(), flush=True)
    warm = run_child(script, dict(configs=configs, samples=args.samples, runs=args.runs, workers=1))
    print(
        f"warm, one core: wall {summary(warm['walls'])}; CPU {summary(warm['cpus'])}; "
        f"kernel={warm['kernel']}; peak PSS {warm['peak_pss_mb']:.0f} MB",
        flush=True,
    )
    if not args.no_avx2:
        import tempfile

        from bench_kernel import avx2_build

        with tempfile.TemporaryDirectory(prefix="bench_figure1_") as tmp:
            if avx2_build(tmp) is not None:
                path = str(next(Path(tmp).glob("_kernel*")))
                avx2 = run_child(
                    script,
                    dict(configs=configs, runs=args.runs, workers=1, kernel_path=path),
                )
                print(
                    f"warm, one core, AVX2 build: wall {summary(avx2['walls'])}; CPU "
                    f"{summary(avx2['cpus'])}; CPU ratio AVX2 / installed "
                    f"{statistics.median(avx2['cpus']) / statistics.median(warm['cpus']):.2f}",
                    flush=True,
                )
                assert avx2["rp"] == warm["rp"], (
                    avx2["rp"],
                    warm["rp"],
                )  # the same bits on both builds
    for workers, threads, what in ((1, 0, "1 worker"), (2, 0, "2 workers"), (1, 2, "2 threads")):
        cold = [
            run_child(
                script,
                dict(
                    configs=configs, samples=args.samples, runs=1, workers=workers, threads=threads
                ),
            )
            for _ in range(args.runs)
        ]
        print(
            f"cold start, {what}: whole process "
            f"{summary([c['process_wall_s'] for c in cold])}, of which import + kernel load "
            f"{statistics.median(c['import_s'] for c in cold):.2f} s and the workload "
            f"{statistics.median(c['walls'][0] for c in cold):.2f} s (medians); peak PSS "
            f"{max(c['peak_pss_mb'] for c in cold):.0f} MB",
            flush=True,
        )
    compute = statistics.median(warm["walls"])
    print(
        f"headline: Figure 1 (4 x {args.samples:.0e} sequences, n = 10, d = 64, 4 layers) "
        f"{compute:.2f} s of compute on one core after warm-up (target 0.35 s); cold start as "
        f"above (target 1 s). Layer-4 recency probabilities {warm['rp']}. {calibration()}"
    )
    return 0


if __name__ == "__main__":
    if not child_main(sys.argv[1:], _child):
        sys.exit(main())
