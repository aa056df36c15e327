"""The gram engine as it was in recency_lib 0.1.0 (commit 1a528e6), frozen for benchmarks only.

Batch-first (B, n, m) coordinates (symmetric square root of Sigma, full Bartlett factor),
``recency_lib.model.layer`` on full n x n matrices (masked softmax), features gathered with fancy
indexing into a (B, layers, F) array, ``Moments.of`` per block, blocks merged in order. Serial.
It is the "before" of the benchmark tables; it is never used by the library.
"""
from __future__ import annotations

import math

import numpy as np

from recency_lib.config import SimConfig
from recency_lib.engines import layer_features, layer_steps
from recency_lib.sampling import degrees_of_freedom, sqrt_sigma_shift
from recency_lib.stats import Moments


def gram_coordinates_v010(cfg: SimConfig, rng: np.random.Generator, batch: int) -> np.ndarray:
    n, d = cfg.n, cfg.d
    k = degrees_of_freedom(cfg)
    scale = 1.0 / math.sqrt(d)
    if cfg.alpha == 1.0:
        r = np.sqrt(rng.chisquare(k, size=(batch, 1, 1)) / d)
        return np.repeat(r, n, axis=1)
    if n <= k:
        t = np.zeros((batch, n, n))
        rows, cols = np.tril_indices(n, -1)
        t[:, rows, cols] = rng.standard_normal((batch, rows.size)) * scale
        diag = np.arange(n)
        t[:, diag, diag] = np.sqrt(rng.chisquare(k - diag, size=(batch, n)) / d)
    else:
        t = rng.standard_normal((batch, n, k)) * scale
    if cfg.alpha == 0.0:
        return t
    s = sqrt_sigma_shift(n, cfg.c)
    return t + s * t.sum(axis=1, keepdims=True)


def block_size_v010(cfg: SimConfig) -> int:
    width = 1 if cfg.alpha == 1.0 else min(cfg.n, degrees_of_freedom(cfg))
    per_sample = cfg.n * max(cfg.n, width)
    b = 2 ** int(math.floor(math.log2(max(1, 2 ** 17 // per_sample))))
    return int(min(4096, max(16, b)))


def block_moments_v010(cfg: SimConfig, block: int, size: int) -> Moments:
    rng = np.random.default_rng(np.random.SeedSequence(cfg.seed, spawn_key=(block,)))
    x = gram_coordinates_v010(cfg, rng, size)
    steps = layer_steps(x, norm=cfg.norm, d=cfg.d, gamma=cfg.gamma, eps=cfg.eps, layers=cfg.layers, centred=True)
    return Moments.of(layer_features(steps, cfg.n, cfg.layers, size))


def simulate_v010(cfg: SimConfig) -> Moments:
    """Serial 0.1.0 gram simulation of ``cfg``: the merged moments (layers, F)."""
    bsize = block_size_v010(cfg)
    full, rest = divmod(cfg.samples, bsize)
    acc = None
    for k, size in [(k, bsize) for k in range(full)] + ([(full, rest)] if rest else []):
        m = block_moments_v010(cfg, k, size)
        acc = m if acc is None else acc.merge(m)
    return acc
