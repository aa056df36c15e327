"""Does Proposition 1's flat row hold beyond the LLN, and how do ties count at
alpha = 1? Prints a report.

    python benchmarks/prop1_and_ties.py [--samples 4000000] [--seed 11] [--quick]

1. Proposition 1 (no normalization, alpha = 0): the corrected LLN row of S^(2) is exactly flat;
   the model's mean row rises with the key index at relative order d^{-3/2}
   (closedforms.prop1_row_rise). Per d: the row n profile relative to its first key, the first
   paired step S_{n,2} - S_{n,1} (exact SE) relative to the row level and its z, the dip of key 1
   below keys 2..n-1, and the prediction.
2. alpha = 1 (every token equal): the book's recency probability (a tie counts 1/2) and the count
   of strict "later key higher" over the same triples, from per-sample float64 scores of the
   simulator, and from a float32 transcription of the paper's pipeline (numpy; the authors' code
   runs PyTorch, whose float32 kernels may round differently); Definition 1's verdict as
   recency_lib computes it today.
"""

from __future__ import annotations

import argparse
import math
import sys

import numpy as np

from companion import closedforms
from recency_lib import SimConfig, sample_trajectories, simulate, theory


def prop1_dip(d: int, n: int, samples: int, seed: int) -> dict:
    res = simulate(closedforms.P.config(d, n, samples, seed))
    row, _sem = closedforms.last_row(res, "score", 1)
    level = float(theory.prop1_score_corrected(n, 1, d))
    first = closedforms.paired_step(res, 1, n, 2)
    return {
        "d": d,
        "samples": samples,
        "profile": row / row[0] - 1.0,
        "predicted profile": closedforms.prop1_row_rise(np.arange(1, n), d),
        "first step / level": first.value / level,
        "its SE": first.se / level,
        "z": first.value / first.se,
        "predicted": float(closedforms.prop1_row_rise(2, d)),
        "key 1 / mean of keys 2..n-1": row[0] / row[1:].mean(),
        "row / corrected Eq. (19)": row.mean() / level,
        "RP": (res.recency_probability[1], res.recency_probability_sem[1]),
        "Definition 1": res.definition1[1],
    }


def strict_and_tied(scores: np.ndarray) -> tuple[float, float]:
    """Fractions of triples j < k < i with S_ik > S_ij exactly and with S_ik == S_ij exactly;
    (batch, n, n)."""
    later = tied = total = 0
    for i in range(2, scores.shape[-1]):
        keys = scores[:, i, :i]  # (batch, i): keys before the diagonal
        diff = (keys[:, None, :] - keys[:, :, None])[
            :, np.triu(np.ones((i, i), bool), 1)
        ]  # S_ik - S_ij, j < k
        later, tied, total = (
            later + np.count_nonzero(diff > 0),
            tied + np.count_nonzero(diff == 0),
            total + diff.size,
        )
    return later / total, tied / total


def float32_pipeline(
    d: int, n: int, layers: int, batch: int, seed: int
) -> list[tuple[float, float]]:
    """alpha = 1 through the paper's model in float32 (LayerNorm eps 1e-12, scores Y Y^T / sqrt(d),
    causal softmax, A Y; no residual): per layer the strict and tied fractions of the scores."""
    f = np.float32
    rng = np.random.default_rng(seed)
    x = np.repeat((rng.standard_normal((batch, 1, d)) / math.sqrt(d)).astype(f), n, axis=1)
    above = np.triu(np.ones((n, n), bool), 1)
    out = []
    for _ in range(layers):
        xc = x - x.mean(-1, keepdims=True, dtype=f)
        y = (xc / np.sqrt((xc * xc).mean(-1, keepdims=True, dtype=f) + f(1e-12))).astype(f)
        s = ((y @ np.swapaxes(y, -1, -2)) / f(math.sqrt(d))).astype(f)
        out.append(strict_and_tied(s))
        z = np.where(above, f(-np.inf), s)
        e = np.exp(z - z.max(-1, keepdims=True))
        x = ((e / e.sum(-1, keepdims=True)).astype(f) @ y).astype(f)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--samples", type=int, default=4_000_000)
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--quick", action="store_true", help="200,000 samples (a smoke run)")
    args = ap.parse_args(argv)
    samples = 200_000 if args.quick else args.samples
    n = 10

    print("1. Proposition 1: the model's second-layer row without normalization (alpha = 0)")
    for d in (16, 64, 256):
        r = prop1_dip(d, n, samples, args.seed)
        print(
            f"  d = {d} ({samples:,} samples): first step / level = {r['first step / level']:.3e} "
            f"± {r['its SE']:.1e} (z = {r['z']:.1f}); predicted d^-3/2 / 2 = {r['predicted']:.3e}; "
            f"key 1 / mean(keys 2..{n - 1}) = {r['key 1 / mean of keys 2..n-1']:.5f}; row / "
            f"corrected Eq. (19) = {r['row / corrected Eq. (19)']:.5f}; RP = {r['RP'][0]:.5f} ± "
            f"{r['RP'][1]:.5f}; Definition 1: {r['Definition 1']}"
        )
        print("    S_nj / S_n1 - 1, j = 1..n-1:", np.array2string(r["profile"], precision=5))
        print(
            "    prediction d^-3/2 (1 - 1/j):  ",
            np.array2string(r["predicted profile"], precision=5),
        )

    print("2. alpha = 1 (every token equals v), LayerNorm, 4 layers")
    cfg = SimConfig(alpha=1.0, n=n, d=64, layers=4, samples=20_000, seed=args.seed)
    res = simulate(cfg)
    scores, _ = sample_trajectories(cfg, samples=20_000)
    f32 = float32_pipeline(64, n, 4, 20_000, args.seed)
    for layer in range(4):
        strict, tied = strict_and_tied(scores[:, layer])
        s32, t32 = f32[layer]
        print(
            f"  layer {layer + 1}: book RP (tie = 1/2) {res.recency_probability[layer]:.4f} ± "
            f"{res.recency_probability_sem[layer]:.4f}; Definition 1 today: "
            f"{res.definition1[layer]}; float64 exact compare: strict {strict:.4f}, tied "
            f"{tied:.4f}; float32 paper pipeline: strict {s32:.4f}, tied {t32:.4f}, tie = 1/2 "
            f"{s32 + t32 / 2:.4f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
