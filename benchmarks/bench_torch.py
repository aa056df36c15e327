"""How long does the Figure-1 workload take the way the authors compute it (PyTorch, dense)?

    python benchmarks/bench_torch.py [--runs 3] [--samples 100000] [--threads 1 2]

The authors' public simulation (github.com/starmpcc/layernorm_recency_bias, concept/simulation.ipynb)
draws the whole batch of literal (B, n, d) float32 embeddings at once with torch.randn, runs the
layer as dense batched matrix products (LayerNorm without affine parameters, eps 1e-12; scores
Y Y^T / sqrt(d) plus an additive -inf mask; softmax; A Y; x added for the residual), keeps every
layer's scores, and computes the recency probability by comparing all (B, n, n, n) key pairs. This
file does the same computation, written here from that description, for the four Figure-1 settings
(n = 10, d = 64, 4 layers, 10^5 sequences each, mean scores and recency probability of every
layer), on the CPU with ``--threads`` intra-op threads, after one warm-up run, and reports the
median wall time beside recency_lib's (benchmarks/bench_figure1.py) so that the ratio in the
README is measured. Skips (exit 0) if torch is not installed; torch is not a dependency.
"""
from __future__ import annotations

import argparse
import math
import statistics
import sys
import time

FIG1 = [dict(alpha=0.0, gamma=0.0, norm="none"), dict(alpha=0.0, gamma=0.0, norm="layernorm"),
        dict(alpha=0.5, gamma=0.0, norm="layernorm"), dict(alpha=0.5, gamma=1.0, norm="layernorm")]


def dense_float32(torch, alpha, gamma, norm, n, d, layers, batch, generator):
    """Mean scores (layers, n, n) and recency probability (layers,) of one setting, whole batch at once."""
    c = math.sqrt(alpha / (1 - alpha)) if alpha < 1 else None
    tokens = torch.randn(batch, n, d, generator=generator)
    if alpha > 0:
        shared = torch.randn(batch, 1, d, generator=generator)
        tokens = shared.expand(-1, n, -1).clone() if c is None else tokens + c * shared
    x = tokens / math.sqrt(d)
    mask = torch.full((n, n), float("-inf")).triu(1)
    i, j, k = torch.arange(n).view(n, 1, 1), torch.arange(n).view(1, n, 1), torch.arange(n).view(1, 1, n)
    pairs = (j < k) & (k < i)                                               # [i, j, k]: j < k < i
    means, rps = [], []
    for _ in range(layers):
        y = torch.nn.functional.layer_norm(x, (d,), eps=1e-12) if norm == "layernorm" else x
        s = y @ y.transpose(-1, -2) / math.sqrt(d) + mask                   # (B, n, n)
        a = torch.softmax(s, dim=-1)
        out = a @ y
        if gamma:
            out = out + gamma * x
        x = out
        means.append(s.masked_fill(torch.isinf(s), float("nan")).nanmean(dim=0))
        up = s.unsqueeze(3) < s.unsqueeze(2)                                # [b, i, j, k]: S_ij < S_ik
        rps.append(float((up & pairs).sum()) / (batch * math.comb(n, 3)))
    return torch.stack(means), rps


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--samples", type=int, default=100_000)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    args = ap.parse_args(argv)
    try:
        import torch
    except ImportError:
        print("torch is not installed: nothing to measure (pip install torch to compare)")
        return 0
    g = torch.Generator().manual_seed(0)
    for threads in args.threads:
        torch.set_num_threads(threads)
        walls = []
        for run in range(args.runs + 1):                                    # run 0 warms up
            t = time.perf_counter()
            res = [dense_float32(torch, n=10, d=64, layers=4, batch=args.samples, generator=g, **s) for s in FIG1]
            if run:
                walls.append(time.perf_counter() - t)
        print(f"PyTorch {torch.__version__}, CPU, float32, full batch, {threads} thread(s): Figure 1 "
              f"(4 x {args.samples:.0e}, n = 10, d = 64, 4 layers, with the recency probability) median "
              f"{statistics.median(walls):.2f} s (min {min(walls):.2f}, {len(walls)} runs); layer-4 recency "
              f"probabilities {[round(r[1][-1], 4) for r in res]}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
