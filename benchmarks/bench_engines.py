"""Benchmarks of the simulator: the issue's performance targets and the single-core baselines.

    python benchmarks/bench_engines.py --quick        # ~1-2 minutes
    python benchmarks/bench_engines.py --full         # adds target 2 (16 x 1e7 samples), ~5-10 min
    python benchmarks/bench_engines.py --quick --markdown   # also print a README-ready table

Every measurement runs in a fresh child interpreter (``--child``), so imports, numba's cache
load and process-pool start-up are inside the numbers where they belong, and peak memory is
that workload's alone. Reported per measurement:

* wall seconds: the median over ``--runs`` repetitions (each with a new ProcessPoolExecutor(2)
  for the 2-core numbers), plus the first ("cold") repetition separately; "import" is the time
  to import recency_lib and load (or, with ``--cold-jit``, compile) the numba kernel;
* peak memory of the child and all its pool workers together, sampled with psutil: the RSS sum
  every 20 ms (pages shared between the forked processes count once per process, so it
  overstates) and the PSS sum about once a second (shared pages split between their users: the
  memory actually used; reading it costs ~4 ms per process, so it is not read more often); and
  the largest single process (``getrusage`` ru_maxrss, child and reaped workers);
* CPU seconds of all processes (median), which other load on the machine inflates far less than
  wall time: on an idle 2-core machine the 2-worker wall time is about CPU / 2;
* the machine's load average before and after (other work on the machine slows wall times).

Targets (issue #3): (1) the four Figure-1 settings, n = 10, d = 64, 4 layers, 1e5 samples each,
with the recency probability: <= 1 s and <= 300 MB on 2 cores; (2) d in {16, 64, 256, 1024} x the
same four settings x 1e7 samples: <= 10 min and <= 1 GB; (3) 1e6 samples at d = 16 and at
d = 4096 within 1.5x of each other. Issue #7 ("ext"): the common decoder layout (pre-RMSNorm,
RoPE, 4 heads, FFN, residual, fixed weights) at n = 256, d = 256, 4 layers, 1e4 samples ("in
minutes, memory bounded by chunking"; --full; --quick runs 1e3), and its cost per sample at
n = 10 ... 512; "rp": the exact recency count, compiled vs numpy.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
FIG1 = [dict(alpha=0.0, gamma=0.0, norm="none"), dict(alpha=0.0, gamma=0.0, norm="layernorm"),
        dict(alpha=0.5, gamma=0.0, norm="layernorm"), dict(alpha=0.5, gamma=1.0, norm="layernorm")]
MB = 1024 * 1024


# -- child: one workload in a fresh interpreter ----------------------------------------------------

def _child(spec: dict) -> dict:
    import resource

    t0 = time.perf_counter()
    if spec.get("kernel") == "numpy":
        os.environ["RECENCY_LIB_KERNEL"] = "numpy"
    sys.path.insert(0, str(HERE))
    from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

    from recency_lib import SimConfig, simulate_many
    from recency_lib.kernels import kernel_name, warm_up

    warm_up()                                           # numba: load from cache (or compile)
    t_import = time.perf_counter() - t0
    kind, samples, runs = spec["kind"], spec["samples"], spec["runs"]
    out = {"spec": spec, "import_s": t_import, "kernel": kernel_name()}

    def configs(d, engine="auto"):
        return [SimConfig(n=10, d=d, layers=4, samples=samples, engine=engine, **s) for s in FIG1]

    def cpu_all():                                      # this process + reaped pool workers
        me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime

    def timed(fn):
        walls, cpus = [], []
        for _ in range(runs):
            w, c = time.perf_counter(), cpu_all()
            res = fn()
            walls.append(time.perf_counter() - w)
            cpus.append(cpu_all() - c)
        return walls, cpus, res

    def pooled(cfgs):
        kind_of_pool = ThreadPoolExecutor if spec.get("executor") == "threads" else ProcessPoolExecutor

        def run():
            with kind_of_pool(2) as pool:
                return simulate_many(cfgs, executor=pool)
        return run

    if kind == "pool":                                  # targets 1-3: ProcessPoolExecutor(2)
        cfgs = [c for d in spec["d"] for c in configs(d)]
        walls, cpus, res = timed(pooled(cfgs))
        out["rp_last_layer"] = [float(r.recency_probability[-1]) for r in res]
    elif kind == "ext":                                 # issue #7: explicit (extended) configs, 2 workers
        cfgs = [SimConfig(**c) for c in spec["configs"]]
        walls, cpus, res = timed(pooled(cfgs))
        out["rp_last_layer"] = [float(r.recency_probability[-1]) for r in res]
        out["rp_last_layer_sem"] = [float(r.recency_probability_sem[-1]) for r in res]
    elif kind == "single":                              # single-core baselines, in-process
        engine = spec["engine"]
        if engine == "v010":
            from baseline_v010 import simulate_v010
            cfgs = configs(spec["d"][0], "gram")
            walls, cpus, res = timed(lambda: [simulate_v010(c) for c in cfgs])
        else:
            cfgs = configs(spec["d"][0], engine)
            walls, cpus, res = timed(lambda: simulate_many(cfgs))
    else:
        raise SystemExit(f"unknown kind {kind!r}")
    out.update(walls=walls, cpus=cpus, total_samples=sum(c.samples for c in cfgs),
               maxrss_self_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
               maxrss_children_mb=resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)
    return out


# -- parent: spawn, sample memory, summarise -------------------------------------------------------

def _total(procs, read) -> int:
    """Sum of ``read(p)`` over processes, skipping those that exited meanwhile."""
    import psutil

    out = 0
    for p in procs:
        try:
            out += read(p)
        except psutil.Error:
            pass
    return out


def measure(spec: dict, env: dict | None = None) -> dict:
    import psutil

    load0 = os.getloadavg()[0]
    proc = subprocess.Popen([sys.executable, __file__, "--child", json.dumps(spec)],
                            stdout=subprocess.PIPE, text=True, env=env)
    peak = [0, 0]                                          # RSS sum, PSS sum

    def sample():
        # RSS is cheap to read (every 20 ms); PSS needs /proc/<pid>/smaps_rollup, ~4 ms per process
        # here, so it is read once a second (and at a new RSS peak, at most every 0.2 s), keeping
        # the sampler's own CPU use to a few percent of one core.
        last_pss = 0.0
        try:
            root = psutil.Process(proc.pid)
            while proc.poll() is None:
                procs = [root, *root.children(recursive=True)]
                rss = _total(procs, lambda p: p.memory_info().rss)
                now = time.perf_counter()
                if now - last_pss > 1.0 or (rss > peak[0] and now - last_pss > 0.2):
                    peak[1], last_pss = max(peak[1], _total(procs, lambda p: p.memory_full_info().pss)), now
                peak[0] = max(peak[0], rss)
                time.sleep(0.02)
        except psutil.Error:
            pass

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    stdout, _ = proc.communicate()
    sampler.join()
    if proc.returncode:
        raise SystemExit(f"child failed ({proc.returncode}) for {spec}")
    out = json.loads(stdout.strip().splitlines()[-1])
    out["peak_tree_rss_mb"], out["peak_tree_pss_mb"] = peak[0] / MB, peak[1] / MB
    out["load_before"], out["load_after"] = load0, os.getloadavg()[0]
    walls = out["walls"]
    out["cold_s"] = walls[0]
    out["median_s"] = statistics.median(walls[1:] if len(walls) > 1 else walls)
    out["median_cpu_s"] = statistics.median(out["cpus"][1:] if len(walls) > 1 else out["cpus"])
    return out


EXT_COMBINED = dict(alpha=0.5, gamma=1.0, norm="rms", layers=4, heads=4, rope=True, ffn=True,
                   weights="fixed", engine="dense")


def rp_count_comparison() -> None:
    """Exact recency count per (n, n) matrix: compiled O(n^2 log n) count vs the numpy row loop
    (O(n^3)) and, where it fits, the all-triples index arrays; medians of 3 timings, in-process."""
    import numpy as np

    from recency_lib import kernels, metrics

    if kernels.pair_count_kernel() is None:
        print("[rp] numba is not available: no compiled count to compare", flush=True)
        return

    def med(fn, reps=3):
        ts = []
        for _ in range(reps):
            t = time.perf_counter()
            fn()
            ts.append(time.perf_counter() - t)
        return statistics.median(ts)

    rng = np.random.default_rng(0)
    for n in (64, 128, 256, 512):
        s = rng.standard_normal((4, n, n))
        tol = np.full(4, 1e-9)
        metrics.later_and_tied_counts(s[:1], tol[:1])                  # compile / load once
        fast = med(lambda: metrics.later_and_tied_counts(s, tol)) / 4
        saved, kernels._PAIRS = kernels._PAIRS, False
        try:
            loop = med(lambda: metrics.later_and_tied_counts(s, tol), reps=1 if n >= 256 else 3) / 4
        finally:
            kernels._PAIRS = saved
        print(f"[rp] exact recency count, n={n}: compiled {1e3 * fast:.2f} ms per matrix, numpy row loop "
              f"{1e3 * loop:.1f} ms ({loop / fast:.0f}x)", flush=True)


def calibration() -> str:
    """Two fixed reference workloads, so numbers from different moments (or machines) compare:
    a pure-Python loop and a numpy matmul. (On this shared VM both vary by up to ~2x over time.)"""
    import numpy as np

    t = time.perf_counter()
    x = 0
    for i in range(10 ** 7):
        x += i
    py = time.perf_counter() - t
    a = np.random.default_rng(0).standard_normal((512, 512))
    t = time.perf_counter()
    for _ in range(20):
        a @ a
    mm = time.perf_counter() - t
    return f"calibration: python loop 1e7 {py:.2f} s, numpy 512^3 matmul x20 {mm:.2f} s"


def describe(name: str, r: dict) -> str:
    per = r["median_s"] / r["total_samples"] * 1e6
    return (f"{name}: median {r['median_s']:.3f} s (cold run {r['cold_s']:.3f} s, import+kernel load "
            f"{r['import_s']:.2f} s; {per:.2f} us/sample wall; CPU {r['median_cpu_s']:.2f} s in all processes; "
            f"kernel={r['kernel']}); peak memory of all processes: RSS {r['peak_tree_rss_mb']:.0f} MB, "
            f"PSS {r['peak_tree_pss_mb']:.0f} MB; largest process {_largest(r):.0f} MB; "
            f"load {r['load_before']:.1f}->{r['load_after']:.1f}")


def _largest(r):
    return max(r["maxrss_self_mb"], r["maxrss_children_mb"])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="Benchmarks of issue #3's targets (see module docstring).")
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="targets 1 and 3 (reduced) and baselines (default)")
    mode.add_argument("--full", action="store_true", help="all targets at full size, baselines at 1e5")
    mode.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--markdown", action="store_true", help="print a README-ready markdown table")
    ap.add_argument("--runs", type=int, default=None, help="repetitions per measurement (default 4 quick, 5 full)")
    ap.add_argument("--cold-jit", action="store_true",
                    help="also measure the first-ever numba compile (empty NUMBA_CACHE_DIR)")
    ap.add_argument("--only", default=None, help="comma list among: t1,t2,t3,base,jit,ext,rp")
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(_child(json.loads(args.child))))
        return 0

    full = bool(args.full)
    runs = args.runs or (5 if full else 4)
    only = set(args.only.split(",")) if args.only else {"t1", "t2", "t3", "base", "jit", "ext", "rp"}
    if not full:
        only.discard("t2")
    if not args.cold_jit:
        only.discard("jit")
    rows = []                                              # (target, workload, result, goal text, ok)

    def add(target, workload, r, goal="", ok=None):
        rows.append((target, workload, r, goal, ok))
        print(describe(f"[{target}] {workload}", r), flush=True)

    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, mode {'full' if full else 'quick'}, "
          f"{runs} runs per measurement; {calibration()}", flush=True)
    if "t1" in only:
        r = measure(dict(kind="pool", d=[64], samples=100_000, runs=runs))
        add("1", "Figure 1: 4 settings x 1e5, d=64, 2 workers", r, "<= 1 s, <= 300 MB",
            r["median_s"] <= 1.0 and r["peak_tree_pss_mb"] <= 300)
    if "t1" in only:
        r = measure(dict(kind="pool", d=[64], samples=100_000, runs=runs, executor="threads"))
        add("1", "Figure 1, ThreadPoolExecutor(2) instead (kernel releases the GIL)", r, "(alternative)")
    if "jit" in only:
        with tempfile.TemporaryDirectory() as cache:
            r = measure(dict(kind="pool", d=[64], samples=100_000, runs=2),
                        env=dict(os.environ, NUMBA_CACHE_DIR=cache))
        add("1", "Figure 1, first-ever run (numba compiles, empty cache)", r, "(cold build)")
    if "t3" in only:
        s3 = 1_000_000 if full else 250_000
        r16 = measure(dict(kind="pool", d=[16], samples=s3 // 4, runs=runs))
        r4k = measure(dict(kind="pool", d=[4096], samples=s3 // 4, runs=runs))
        ratio = max(r16["median_s"], r4k["median_s"]) / min(r16["median_s"], r4k["median_s"])
        add("3", f"{s3:.0e} samples (4 settings), d=16, 2 workers", r16)
        add("3", f"{s3:.0e} samples (4 settings), d=4096, 2 workers", r4k,
            f"within 1.5x of d=16: ratio {ratio:.2f}", ratio <= 1.5)
    if "t2" in only:
        r = measure(dict(kind="pool", d=[16, 64, 256, 1024], samples=10_000_000, runs=1))
        add("2", "d in {16,64,256,1024} x 4 settings x 1e7, 2 workers", r, "<= 600 s, <= 1 GB",
            r["median_s"] <= 600 and r["peak_tree_pss_mb"] <= 1024)
    if "base" in only:
        sb = 100_000 if full else 20_000
        base = {}
        for engine, label in [("v010", "gram engine of v0.1.0 (numpy, batch first)"),
                              ("dense", "dense engine (literal n x d, numpy)"),
                              ("gram-numpy", "gram engine, numpy reference kernel"),
                              ("gram-numba", "gram engine, numba kernel")]:
            spec = dict(kind="single", d=[64], samples=sb, runs=max(2, runs - 1),
                        engine="gram" if engine.startswith("gram") else engine,
                        kernel="numpy" if engine == "gram-numpy" else None)
            base[engine] = r = measure(spec)
            add("base", f"1 core, Figure 1: {label}, 4 x {sb:.0e}", r)
        numba_us = base["gram-numba"]["median_cpu_s"]
        print("ratios (CPU time, same run): "
              + ", ".join(f"{k} / gram-numba = {base[k]['median_cpu_s'] / numba_us:.1f}x"
                          for k in ("v010", "dense", "gram-numpy")), flush=True)
    if "ext" in only:                                     # issue #7: the common decoder layout
        ext_samples = 10_000 if full else 1_000
        cfg = dict(EXT_COMBINED, n=256, d=256, samples=ext_samples)
        r = measure(dict(kind="ext", configs=[cfg], samples=ext_samples, runs=1 if full else 2))
        add("7", f"combined layout, n=256, d=256, 4 layers, {ext_samples:.0e} samples, 2 workers", r,
            "minutes, memory bounded" if full else "(reduced; --full runs 1e4)")
        for n in (10, 64, 256, 512):
            s = max(16, 40_960 // n)
            r = measure(dict(kind="ext", configs=[dict(EXT_COMBINED, n=n, d=64, samples=s)], samples=s,
                             runs=2))
            add("7", f"combined layout, n={n}, d=64, {s} samples, 2 workers "
                     f"({1e3 * r['median_s'] / s:.1f} ms per sample)", r)
    if "rp" in only:
        rp_count_comparison()
    print(calibration(), flush=True)
    if args.markdown:
        print()
        print(markdown(rows))
    return 0 if all(ok is not False for *_, ok in rows) else 1


def markdown(rows) -> str:
    lines = ["| target | workload | median wall | CPU (all processes) | cold run | import + kernel load "
             "| peak PSS / RSS (all processes) | largest process | goal | met |",
             "|---|---|---:|---:|---:|---:|---:|---:|---|---|"]
    for target, workload, r, goal, ok in rows:
        lines.append(f"| {target} | {workload} | {r['median_s']:.2f} s | {r['median_cpu_s']:.2f} s | "
                     f"{r['cold_s']:.2f} s | {r['import_s']:.2f} s | {r['peak_tree_pss_mb']:.0f} / "
                     f"{r['peak_tree_rss_mb']:.0f} MB | {_largest(r):.0f} MB | {goal} | "
                     f"{'' if ok is None else ('yes' if ok else 'no')} |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
