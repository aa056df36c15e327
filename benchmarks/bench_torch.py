"""How long does the Figure-1 workload take the way the authors compute it (PyTorch,
dense), beside recency_lib?

    python benchmarks/bench_torch.py [--runs 3] [--samples 100000] [--threads 2]
                                     [--torch-python PATH] [--lib-python PATH] [--no-avx2]

The authors' public simulation (github.com/starmpcc/layernorm_recency_bias,
concept/simulation.ipynb) draws the whole batch of literal (B, n, d) float32 embeddings at once with
torch.randn, runs the layer as dense batched matrix products (LayerNorm without affine parameters,
eps 1e-12; scores Y Y^T / sqrt(d) plus an additive -inf mask; softmax; A Y; x added for the
residual), keeps every layer's scores, and computes the recency probability by comparing all
(B, n, n, n) key pairs. This file does the same computation, written here from that description,
for the four Figure-1 settings (n = 10, d = 64, 4 layers, 10^5 sequences each, mean scores and
recency probability of every layer), on the CPU with ``--threads`` intra-op threads.

Side by side, in one run: each round starts, one after the other and each in a fresh interpreter,
the authors' way (torch, from ``--torch-python``: an interpreter with torch installed, by default
this one) and recency_lib's Figure-1 run as a reader's script runs it (``figure1_script.py``:
``simulate_many`` of the same four settings with the recency probability and the control variates,
importing recency_lib, nothing of the book and of these scripts only ``_measure``'s child
helpers (json, os, sys and time on import), from ``--lib-python``, by
default this interpreter; a venv where ``pip install .`` put recency_lib starts without an editable
checkout's import finders) on one core and on as many threads as torch has
(``simulate_many(..., executor=ThreadPoolExecutor(threads))``: the kernel releases the GIL, and the
results are bit for bit those of one core), each with the installed kernel and with an AVX2
build of it (setup.py's flags and -march=x86-64-v3, compiled here into a temporary folder and loaded
by the child in place of the installed one; left out with --no-avx2 or where the CPU lacks AVX2).
Each child's whole life is timed from here (interpreter start to exit: imports and kernel load
included), and the child reports its workload's own wall and CPU time and its peak resident memory
(getrusage's maximum RSS, as /usr/bin/time -v gives it). Medians over ``--runs`` rounds; the ratios
are the authors' whole process over recency_lib's. (A small run of each side first, not counted,
brings their files into the page cache, and writes recency_lib's bytecode: the children run with
PYTHONPYCACHEPREFIX in a temporary folder and without PYTHONDONTWRITEBYTECODE, so an editable
checkout imports from .pyc files as torch's and numpy's pip-installed files do, instead of compiling
its sources in every process, ~0.05 s here.) Skips (exit 0) if no interpreter with torch is
found; torch is not a dependency.
"""

from __future__ import annotations

import argparse
import math
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _measure import calibration, child_main, cpu_seconds, max_rss_mb, run_child

USER_SCRIPT = str(Path(__file__).with_name("figure1_script.py"))  # recency_lib's side


def dense_float32(torch, alpha, gamma, norm, n, d, layers, batch, generator):
    """Mean scores (layers, n, n) and recency probability (layers,) of one setting,
    whole batch at once."""
    c = math.sqrt(alpha / (1 - alpha)) if alpha < 1 else None
    tokens = torch.randn(batch, n, d, generator=generator)
    if alpha > 0:
        shared = torch.randn(batch, 1, d, generator=generator)
        tokens = shared.expand(-1, n, -1).clone() if c is None else tokens + c * shared
    x = tokens / math.sqrt(d)
    mask = torch.full((n, n), float("-inf")).triu(1)
    i, j, k = (
        torch.arange(n).view(n, 1, 1),
        torch.arange(n).view(1, n, 1),
        torch.arange(n).view(1, 1, n),
    )
    pairs = (j < k) & (k < i)  # [i, j, k]: j < k < i
    means, rps = [], []
    for _ in range(layers):
        y = torch.nn.functional.layer_norm(x, (d,), eps=1e-12) if norm == "layernorm" else x
        s = y @ y.transpose(-1, -2) / math.sqrt(d) + mask  # (B, n, n)
        a = torch.softmax(s, dim=-1)
        out = a @ y
        if gamma:
            out = out + gamma * x
        x = out
        means.append(s.masked_fill(torch.isinf(s), float("nan")).nanmean(dim=0))
        up = s.unsqueeze(3) < s.unsqueeze(2)  # [b, i, j, k]: S_ij < S_ik
        rps.append(float((up & pairs).sum()) / (batch * math.comb(n, 3)))
    return torch.stack(means), rps


def _child(spec: dict) -> dict:
    """The authors' side: torch imported, the four settings (``spec["models"]``) the dense way."""
    t0 = time.perf_counter()
    import torch

    torch.set_num_threads(spec["threads"])
    g = torch.Generator().manual_seed(0)
    ready = time.perf_counter()
    w, c = time.perf_counter(), cpu_seconds()
    res = [
        dense_float32(torch, n=10, d=64, layers=4, batch=spec["samples"], generator=g, **s)
        for s in spec["models"]
    ]
    return {
        "import_s": ready - t0,
        "wall": time.perf_counter() - w,
        "cpu": cpu_seconds() - c,
        "rp": [round(r[1][-1], 4) for r in res],
        "max_rss_mb": max_rss_mb(),
        "version": torch.__version__,
    }


def _avx2_kernel(workdir: str) -> str | None:
    from bench_kernel import avx2_build

    return None if avx2_build(workdir) is None else str(next(Path(workdir).glob("_kernel*")))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--samples", type=int, default=100_000)
    ap.add_argument(
        "--threads",
        type=int,
        default=2,
        help="torch's intra-op threads (its default here: the cores)",
    )
    ap.add_argument(
        "--torch-python", default=sys.executable, help="an interpreter with torch installed"
    )
    ap.add_argument(
        "--lib-python",
        default=sys.executable,
        help="the interpreter of recency_lib's side (e.g. a venv where `pip install .` put it)",
    )
    ap.add_argument(
        "--no-avx2", action="store_true", help="recency_lib with the installed kernel only"
    )
    args = ap.parse_args(argv)
    from companion.settings import fig1_configs  # the paper's n = 10, d = 64, 4 layers

    def settings(samples: int) -> dict:  # what each side's child is given
        cfgs = fig1_configs(samples)
        models = [{k: getattr(c, k) for k in ("alpha", "gamma", "norm")} for c in cfgs]
        return dict(samples=samples, models=models, configs=[c.to_dict() for c in cfgs])

    if subprocess.run([args.torch_python, "-c", "import torch"], capture_output=True).returncode:
        print(
            f"torch is not installed for {args.torch_python}: "
            "nothing to measure (pip install torch to compare)"
        )
        return 0
    scripts = {
        "torch": (str(Path(__file__).resolve()), args.torch_python),
        "recency_lib": (USER_SCRIPT, args.lib_python),
    }
    print(calibration(), flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        sides = {"torch": dict(who="torch", threads=args.threads)}
        avx2 = None if args.no_avx2 else _avx2_kernel(tmp)
        for build, path in [("", None), (", AVX2 build", avx2)][: 2 if avx2 else 1]:
            sides[f"recency_lib{build}"] = dict(who="recency_lib", kernel_path=path)
            if args.threads > 1:
                sides[f"recency_lib{build}, {args.threads} threads"] = dict(
                    who="recency_lib", kernel_path=path, threads=args.threads
                )
        # bytecode written once, by the runs not counted, as pip writes it for an installed package
        env = {"PYTHONPYCACHEPREFIX": str(Path(tmp) / "pycache"), "PYTHONDONTWRITEBYTECODE": ""}
        got = {k: [] for k in sides}
        for k in sides:  # a small run of each first, not counted: the files in the page cache
            script, python = scripts[sides[k]["who"]]
            run_child(script, {**settings(1000), **sides[k]}, env=env, python=python)
        for r in range(args.runs):
            order = list(sides) if r % 2 == 0 else list(sides)[::-1]
            for k in order:
                script, python = scripts[sides[k]["who"]]
                spec = {**settings(args.samples), **sides[k]}
                got[k].append(run_child(script, spec, env=env, python=python))
    med = {
        k: {
            f: statistics.median(c[f] for c in v)
            for f in ("process_wall_s", "import_s", "wall", "cpu", "max_rss_mb")
        }
        for k, v in got.items()
    }
    for k, m in med.items():
        label = (
            f"PyTorch {got[k][0]['version']}, CPU, float32, full batch, {args.threads} thread(s)"
            if k == "torch"
            else f"{k} (kernel {got[k][0]['version']})" + ("" if "threads" in k else ", one core")
        )
        walls = [c["process_wall_s"] for c in got[k]]
        print(
            f"{label}: whole process median {m['process_wall_s']:.2f} s (min {min(walls):.2f}, max "
            f"{max(walls):.2f}, {len(walls)} runs), of which import {m['import_s']:.2f} s, "
            f"workload wall {m['wall']:.2f} s / CPU {m['cpu']:.2f} s; peak RSS "
            f"{max(c['max_rss_mb'] for c in got[k]):.0f} MB; layer-4 recency probabilities "
            f"{got[k][0]['rp']}",
            flush=True,
        )
    for k in sides:
        if k != "torch":
            rss = max(c["max_rss_mb"] for c in got["torch"]) / max(c["max_rss_mb"] for c in got[k])
            print(
                f"ratio torch / {k}: whole process "
                f"{med['torch']['process_wall_s'] / med[k]['process_wall_s']:.1f}x, workload wall "
                f"{med['torch']['wall'] / med[k]['wall']:.1f}x, peak RSS {rss:.0f}x"
            )
    print(calibration())
    return 0


if __name__ == "__main__":
    if not child_main(sys.argv[1:], _child):
        sys.exit(main())
