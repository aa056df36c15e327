"""Shared helpers of the benchmarks: a workload in a fresh interpreter, the memory of its process
tree, the machine's load, a fixed calibration workload. Not a benchmark itself.

A child is this interpreter running ``script --child JSON``; it prints one JSON line (its
measurements). The parent samples, while the child runs, the resident memory of the child and all
its pool workers: the RSS sum every 20 ms (pages shared between forked processes count once per
process, so it overstates) and the PSS sum (shared pages split between their users: the memory
actually used) about once a second, since reading PSS costs ~4 ms per process.

Only what a child needs is imported with this module (a child's start is part of what it measures:
figure1_script.py); the parent's tools are imported where they are used.
"""

from __future__ import annotations

import json
import os
import sys
import time

MB = 1024 * 1024


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


def run_child(script: str, spec: dict, env: dict | None = None, python: str | None = None) -> dict:
    """Run ``script --child JSON(spec)`` in a fresh interpreter (this one, or ``python``); its JSON
    output plus the peak memory of its process tree (``peak_rss_mb``, ``peak_pss_mb``), its wall
    time seen from here (``process_wall_s``: interpreter start to exit) and the load average before
    and after."""
    import subprocess
    import threading

    import psutil

    load0 = os.getloadavg()[0]
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [python or sys.executable, script, "--child", json.dumps(spec)],
        stdout=subprocess.PIPE,
        text=True,
        env=None if env is None else {**os.environ, **env},
    )
    peak = [0, 0]  # RSS sum, PSS sum

    def sample():
        last_pss = 0.0
        try:
            root = psutil.Process(proc.pid)
            while proc.poll() is None:
                procs = [root, *root.children(recursive=True)]
                rss = _total(procs, lambda p: p.memory_info().rss)
                now = time.perf_counter()
                if now - last_pss > 1.0 or (rss > peak[0] and now - last_pss > 0.2):
                    peak[1], last_pss = (
                        max(peak[1], _total(procs, lambda p: p.memory_full_info().pss)),
                        now,
                    )
                peak[0] = max(peak[0], rss)
                time.sleep(0.02)
        except psutil.Error:
            pass

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    stdout, _ = proc.communicate()
    wall = time.perf_counter() - t0
    sampler.join()
    if proc.returncode:
        raise SystemExit(f"child failed ({proc.returncode}) for {spec}")
    out = json.loads(stdout.strip().splitlines()[-1])
    out.update(
        peak_rss_mb=peak[0] / MB,
        peak_pss_mb=peak[1] / MB,
        process_wall_s=wall,
        load_before=load0,
        load_after=os.getloadavg()[0],
    )
    return out


def child_main(argv, run) -> bool:
    """If ``argv`` is ``--child JSON``, print ``run(spec)`` as JSON and return True."""
    if len(argv) >= 2 and argv[0] == "--child":
        print(json.dumps(run(json.loads(argv[1]))))
        return True
    return False


def max_rss_mb() -> float:
    """This process's peak resident memory so far (what /usr/bin/time -v reports as its maximum
    resident set size), MB."""
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def cpu_seconds() -> float:
    """CPU seconds of this process and of its reaped children (pool workers)."""
    import resource

    me, kids = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def summary(values) -> str:
    """'median m (min a, max b, k runs)' of a list of seconds."""
    import statistics

    return (
        f"median {statistics.median(values):.3f} s (min {min(values):.3f}, max {max(values):.3f}, "
        f"{len(values)} runs)"
    )


def load_kernel(path: str | None) -> None:
    """Another build of the C kernel (a ``_kernel*.so`` file) in place of the installed one, in this
    process, before anything simulates; None: the installed build."""
    if not path:
        return
    import importlib.util

    from recency_lib import kernels

    spec = importlib.util.spec_from_file_location("_kernel", path)
    kernels._kernel = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(kernels._kernel)


V3_FLAGS = {
    "avx",
    "avx2",
    "bmi1",
    "bmi2",
    "f16c",
    "fma",
    "abm",
    "movbe",
    "xsave",
}  # what x86-64-v3 needs


def cpu_flags() -> set[str]:
    """The CPU's feature flags (/proc/cpuinfo), or an empty set where that cannot be read."""
    from pathlib import Path

    try:
        return set(
            next(
                line
                for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("flags")
            )
            .split(":", 1)[1]
            .split()
        )
    except (OSError, StopIteration):
        return set()


def compile_kernel(repo, out, march: str) -> str | None:
    """``repo``'s C kernel (recency_lib/_kernel.c) compiled with that checkout's own setup.py flags
    (its ``BASE`` list) and ``-march=march`` in place of -march=native, into the file ``out``, with
    the source's sha256 as setup.py records it (without it recency_lib takes the build for a stale
    one and runs the numpy path). Returns None on success, else why not (no compiler, the CPU cannot
    run x86-64-v3 code, a compiler error)."""
    import ast
    import hashlib
    import shutil
    import subprocess
    import sysconfig
    from pathlib import Path

    repo = Path(repo)
    source = repo / "recency_lib" / "_kernel.c"
    if march == "x86-64-v3" and not V3_FLAGS <= cpu_flags():
        return "this CPU does not run x86-64-v3 code"
    cc_var = sysconfig.get_config_var("CC")
    cc = shutil.which(cc_var.split()[0] if cc_var else "cc")
    if cc is None:
        return "no C compiler"
    base = next(
        ast.literal_eval(node.value)
        for node in ast.parse((repo / "setup.py").read_text()).body
        if isinstance(node, ast.Assign)
        and [getattr(t, "id", None) for t in node.targets] == ["BASE"]
    )
    done = subprocess.run(
        [
            cc,
            *base,
            f"-march={march}",
            f'-DKERNEL_SOURCE_SHA256="{hashlib.sha256(source.read_bytes()).hexdigest()}"',
            "-fPIC",
            "-shared",
            f"-I{sysconfig.get_paths()['include']}",
            str(source),
            "-o",
            str(out),
        ],
        capture_output=True,
        text=True,
    )
    return (
        f"the kernel did not compile with -march={march}: {done.stderr.strip()[-300:]}"
        if done.returncode
        else None
    )


def calibration() -> str:
    """Two fixed reference workloads, so numbers from different moments (or machines) compare:
    a pure-Python loop and a numpy matmul. (On a shared VM both vary by up to ~2x over time.)"""
    import numpy as np

    t = time.perf_counter()
    x = 0
    for i in range(10**7):
        x += i
    py = time.perf_counter() - t
    a = np.random.default_rng(0).standard_normal((512, 512))
    t = time.perf_counter()
    for _ in range(20):
        a @ a
    mm = time.perf_counter() - t
    return (
        f"calibration: python loop 1e7 {py:.2f} s, numpy 512^3 matmul x20 {mm:.2f} s; "
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
    )


def kernel_of(checkout) -> str:
    """Which kernel runs in ``checkout`` ("c", or "numpy" when its build is missing or stale)."""
    import subprocess

    code = "from recency_lib.kernels import kernel_name; print(kernel_name())"
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    return done.stdout.strip() or f"none ({done.stderr.strip()[-300:]})"
