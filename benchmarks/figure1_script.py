"""The Figure-1 set as a reader's own script runs it, for bench_torch.py to time from outside.

    python figure1_script.py --child JSON

JSON: ``configs`` (SimConfig fields, the four settings of Figure 1), ``threads`` (1: one core;
more: ``simulate_many`` on a ``ThreadPoolExecutor``, the kernel releases the GIL) and optionally
``kernel_path`` (another build of the C kernel loaded in place of the installed one). Besides the
benchmarks' ``_measure`` (json, os, sys and time on import) it imports what such a script imports,
recency_lib and, for threads, concurrent.futures, and nothing of the book, so the interpreter it
runs in decides what its start costs: an editable checkout's venv, or one where ``pip install .``
put recency_lib, as a reader installs it. Prints one JSON line: its imports' and its workload's
seconds, CPU seconds and peak memory.
"""

import sys
import time

from _measure import child_main, cpu_seconds, load_kernel, max_rss_mb


def main(spec: dict) -> dict:
    t0 = time.perf_counter()
    threads = spec.get("threads", 1)
    if threads > 1:  # a one-core script has no executor to import
        from concurrent.futures import ThreadPoolExecutor
    from recency_lib import SimConfig, simulate_many
    from recency_lib.kernels import kernel_name

    load_kernel(spec.get("kernel_path"))  # an AVX2 build, say, in place of the installed kernel
    configs = [SimConfig(**c) for c in spec["configs"]]
    ready = time.perf_counter()
    wall, cpu = time.perf_counter(), cpu_seconds()
    if threads > 1:
        with ThreadPoolExecutor(threads) as pool:
            results = simulate_many(configs, executor=pool)
    else:
        results = simulate_many(configs)
    return {
        "import_s": ready - t0,
        "wall": time.perf_counter() - wall,
        "cpu": cpu_seconds() - cpu,
        "rp": [round(float(r.recency_probability_cv[-1]), 4) for r in results],
        "max_rss_mb": max_rss_mb(),
        "version": kernel_name(),
    }


if __name__ == "__main__":
    child_main(sys.argv[1:], main)
