"""The Figure-1 set as a reader's own script runs it, for bench_torch.py to time from outside.

    python figure1_script.py --child JSON

JSON: ``configs`` (SimConfig fields, the four settings of Figure 1), ``threads`` (1: one core;
more: ``simulate_many`` on a ``ThreadPoolExecutor``, the kernel releases the GIL) and optionally
``kernel_path`` (another build of the C kernel loaded in place of the installed one). It imports
what such a script imports (recency_lib and, for threads, concurrent.futures) and nothing of the
book or the benchmarks, so the interpreter it runs in decides what its start costs: an editable
checkout's venv, or one where ``pip install .`` put recency_lib, as a reader installs it. Prints
one JSON line: its imports' and its workload's seconds, CPU seconds and peak memory.
"""

import json
import resource
import sys
import time


def _cpu() -> float:
    me = resource.getrusage(resource.RUSAGE_SELF)
    return me.ru_utime + me.ru_stime


def main(spec: dict) -> dict:
    t0 = time.perf_counter()
    from concurrent.futures import ThreadPoolExecutor

    from recency_lib import SimConfig, simulate_many
    from recency_lib.kernels import kernel_name

    if spec.get("kernel_path"):  # an AVX2 build, say, in place of the installed kernel
        import importlib.util

        from recency_lib import kernels

        module = importlib.util.spec_from_file_location("_kernel", spec["kernel_path"])
        kernels._kernel = importlib.util.module_from_spec(module)
        module.loader.exec_module(kernels._kernel)
    configs = [SimConfig(**c) for c in spec["configs"]]
    ready = time.perf_counter()
    wall, cpu = time.perf_counter(), _cpu()
    if spec.get("threads", 1) > 1:
        with ThreadPoolExecutor(spec["threads"]) as pool:
            results = simulate_many(configs, executor=pool)
    else:
        results = simulate_many(configs)
    return {
        "import_s": ready - t0,
        "wall": time.perf_counter() - wall,
        "cpu": _cpu() - cpu,
        "rp": [round(float(r.recency_probability_cv[-1]), 4) for r in results],
        "max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "version": kernel_name(),
    }


if __name__ == "__main__":
    assert sys.argv[1] == "--child", sys.argv
    print(json.dumps(main(json.loads(sys.argv[2]))))
