"""The book's per-sequence statistics, one module with nothing but numpy and the simulator's features, so
that the results cache keys each by its own code (recency_lib.cache.cached_statistic hashes this module and
what it imports; an edit of the book's figures, tables or prose recomputes none of them).

Each takes one block of sequences, ``scores, attention`` of shape (B, layers, n, n) (scores NaN above the
diagonal), and returns (B, layers, k): k numbers per sequence and layer, for
``recency_lib.engines.sequence_statistic`` / ``recency_lib.cache.cached_statistic``:

* :func:`distance_contrasts` (chapter 7: position or distance), :func:`trend_steps` (chapter 6: depth),
  :func:`ordered_rows` (chapter 2: Definition 1 on single sequences), :func:`first_order` (chapter 3:
  Theorem 1's trend at large d, through :func:`first_order_trend`).
"""
from __future__ import annotations

import functools
import math

import numpy as np

from recency_lib.features import trend
from recency_lib.metrics import adjacent_index
from recency_lib.validation import check_int


#: The two distances of chapter 7's contrasts: D_i = S_{i,i-NEAR} - S_{i,i-FAR} (fixed distances) and
#: K_i = S_{i,FAR} - S_{i,1} (fixed key positions); at i = FAR + 1 they are the same two keys.
NEAR, FAR = 1, 4


def distance_contrasts(scores: np.ndarray, attention: np.ndarray) -> np.ndarray:
    """Chapter 7's per-sequence statistic (for recency_lib.engines.sequence_statistic, with control_mean 0:
    in layer 1 the earlier keys are exchangeable, so every within-row contrast of them has mean 0).

    For each query i = FAR + 1 .. n (1-based): D_i = S_{i,i-NEAR} - S_{i,i-FAR}, the preference for the
    nearer of two keys at fixed distances, and K_i = S_{i,FAR} - S_{i,1}, the preference between two keys
    at fixed positions; then D_n - D_{FAR+1} and K_n - K_{FAR+1}. A within-row difference is what the
    softmax sees (adding a constant to a row changes nothing), so a bias that depends on i - j alone
    keeps D_i constant in i, and one that depends on the keys' positions keeps K_i constant.
    Returns (B, layers, 2 (n - FAR) + 2): the D_i, the K_i, then the two differences."""
    n = scores.shape[-1]
    if n < FAR + 2:
        raise ValueError(f"n={n} is out of range; allowed: n >= {FAR + 2} (two queries past key {FAR})")
    i = np.arange(FAR, n)                                           # 0-based queries FAR+1 .. n
    dist = scores[..., i, i - NEAR] - scores[..., i, i - FAR]       # (B, layers, n - FAR)
    pos = scores[..., i, FAR - 1] - scores[..., i, 0]
    return np.concatenate([dist, pos, dist[..., -1:] - dist[..., :1], pos[..., -1:] - pos[..., :1]], axis=-1)


def trend_steps(scores: np.ndarray, attention: np.ndarray) -> np.ndarray:
    """Per sequence and layer (B, layers, 2): the trend of the layer's scores (features.trend: the mean
    step between two earlier keys) and its change from the layer before, trend(l) - trend(l - 1).
    Layer 1 repeats its own trend in the second column: it is the control, whose mean is 0 exactly
    (its earlier keys are exchangeable), so ``sequence_statistic(..., control_mean=0.0)`` uses it as
    the control variate of both columns of every layer."""
    B, L = scores.shape[:2]
    level = np.stack([trend(scores[:, l]) for l in range(L)], axis=1)          # (B, layers)
    step = np.concatenate([level[:, :1], np.diff(level, axis=1)], axis=1)
    return np.stack([level, step], axis=-1)


def ordered_rows(scores: np.ndarray, attention: np.ndarray) -> np.ndarray:
    """A per-sequence statistic for ``recency_lib.engines.sequence_statistic``: for each layer, 1 when the
    sequence's own score matrix satisfies Definition 1 (every row strictly increasing up to the diagonal),
    then for each query i = 1..n, 1 when row i is strictly increasing; else 0. Returns (B, layers, n + 1)."""
    s = np.asarray(scores, dtype=float)
    if s.ndim != 4 or s.shape[-1] != s.shape[-2]:
        raise ValueError(f"scores has shape {s.shape}; allowed: (B, layers, n, n)")
    n = s.shape[-1]
    ii, jj = adjacent_index(n)
    up = s[..., ii, jj] > s[..., ii, jj - 1]                         # (B, layers, steps)
    rows = np.ones(s.shape[:2] + (n,), dtype=bool)
    for i in range(1, n):
        rows[..., i] = np.all(up[..., ii == i], axis=-1)
    return np.concatenate([np.all(rows, axis=-1, keepdims=True), rows], axis=-1).astype(float)


def _mean_step(s: np.ndarray) -> np.ndarray:
    """The mean step S_ij - S_i,j-1 between earlier keys (2 <= j < i, 1-based) of (..., n, n) matrices."""
    n = s.shape[-1]
    i, j = _step_index(n)
    return (s[..., i, j] - s[..., i, j - 1]).mean(axis=-1)


def _step_index(n: int):
    i, j = np.nonzero(np.tril(np.ones((n, n), dtype=bool), -1) & (np.arange(n)[None, :] >= 1))
    return i, j


def first_order_trend(d: int):
    """:func:`first_order` for hidden size ``d``: a statistic the results cache can key
    (recency_lib.cache.cached_statistic; a functools.partial of a module-level function)."""
    return functools.partial(first_order, d=check_int("d", d, 16))



def first_order(scores: np.ndarray, attention: np.ndarray, *, d: int) -> np.ndarray:
    """A per-sequence statistic for recency_lib.engines.sequence_statistic in Theorem 1's setting (LayerNorm,
    alpha = gamma = 0, two layers) whose layer-2 mean is the trend of S^(2), with a far smaller variance
    than the trend itself: the plain mean and SE of layer 2's value estimate Theorem 1's trend.

    With eps = e^{-sqrt d} and the layer-1 scores Z (their cosines C = Z / sqrt(d)), S^(2) = sqrt(d) cos(v_i,
    v_j) with v_i = e_i + eps sum_{k<i} e^{Z_ik} e_k (recency_lib.theory.trends). Its expansion in eps
    starts with Z itself and the first-order term S1 = sqrt(d) (H1 - C (h1_i + h1_j) / 2), H1 = W C + (W C)^T,
    W = tril(e^Z, -1), h1 = diag H1; both have mean step exactly 0 (exchangeability; every first-order term
    carries a factor of mean 0). So layer 2's value, trend(S^(2)) - trend(Z) - eps trend(S1), has the trend's
    mean and a spread of order sqrt(d) eps^2 (the trend's own size) instead of order 1. Layer 1's value is
    trend(Z). Taken per sequence and as one number (not a regression, whose variance formula would lose
    every digit to cancellation here). Returns (B, 2, 1)."""
    root = math.sqrt(d)
    eps = math.exp(-root)
    if scores.shape[1] != 2:
        raise ValueError(f"layers={scores.shape[1]} is not allowed; allowed: 2 (Theorem 1's setting)")
    z = np.nan_to_num(scores[:, 0], nan=0.0)                          # (B, n, n) layer 1, lower triangle
    z = np.tril(z) + np.swapaxes(np.tril(z, -1), -1, -2)             # symmetric
    c = z / root
    w = np.tril(np.exp(z), -1)
    wc = w @ c
    h1 = wc + np.swapaxes(wc, -1, -2)
    diag = np.diagonal(h1, axis1=-2, axis2=-1)
    s1 = root * (h1 - c * (diag[..., :, None] + diag[..., None, :]) / 2.0)
    s2 = np.nan_to_num(scores[:, 1], nan=0.0)
    n = s2.shape[-1]
    i, j = _step_index(n)
    second = ((s2[..., i, j] - s2[..., i, j - 1]) - (z[..., i, j] - z[..., i, j - 1])).mean(axis=-1)
    return np.stack([_mean_step(z), second - eps * _mean_step(s1)], axis=1)[..., None]
