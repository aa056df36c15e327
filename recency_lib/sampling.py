"""Random inputs of the paper's model.

Two exact ways to draw the same distribution of attention scores:

* :func:`dense_tokens` draws the literal embeddings of Eq. (6), an (n, d) matrix per sample.
* :func:`gram_coordinates` draws an (n, m) matrix R, m <= n, whose Gram matrix R R^T has the
  same law as the Gram matrix of what the normalization sees (the centred embeddings X P for
  LayerNorm, X itself otherwise). The layer only ever uses inner products, so running it on R
  gives the same scores and attention as running it on X (see ``design`` in the README and the
  book's Preliminaries chapter).

Why it works: feature t of all n tokens, (x_1t, ..., x_nt), is N(0, Sigma / d) with
Sigma = I + c^2 11^T and c^2 = alpha / (1 - alpha), independently over t. Hence X = Sigma^{1/2} G
with G iid N(0, 1/d), and X X^T = Sigma^{1/2} (G G^T) Sigma^{1/2} with G G^T ~ Wishart_n(k, I / d),
k = d (or k = d - 1 after LayerNorm's centring, which projects every row onto a (d-1)-dim
subspace). Bartlett's decomposition samples the Wishart matrix as T T^T with T lower triangular.
"""
from __future__ import annotations

import math

import numpy as np

from .config import SimConfig


def dense_tokens(cfg: SimConfig, rng: np.random.Generator, batch: int) -> np.ndarray:
    """Eq. (6): x_i = eps_i + c v with eps_i, v ~ N(0, I_d / d); returns (batch, n, d).

    alpha = 1 is the limit in which every token equals v.
    """
    n, d = cfg.n, cfg.d
    scale = 1.0 / math.sqrt(d)
    if cfg.alpha == 1.0:
        v = rng.standard_normal((batch, 1, d)) * scale             # (batch, 1, d)
        return np.repeat(v, n, axis=1)                             # (batch, n, d)
    eps = rng.standard_normal((batch, n, d)) * scale               # (batch, n, d)
    if cfg.alpha == 0.0:
        return eps
    v = rng.standard_normal((batch, 1, d)) * scale                 # (batch, 1, d)
    return eps + cfg.c * v


def degrees_of_freedom(cfg: SimConfig) -> int:
    """Dimension of the space the normalization sees: d - 1 after centring, else d."""
    return cfg.d - 1 if cfg.norm == "layernorm" else cfg.d


def sqrt_sigma_shift(n: int, c: float) -> float:
    """s such that Sigma^{1/2} = I + s 11^T for Sigma = I + c^2 11^T (n x n).

    (I + s 11^T)^2 = I + (2 s + n s^2) 11^T, so s solves n s^2 + 2 s - c^2 = 0; the form
    c^2 / (1 + sqrt(1 + n c^2)) avoids cancellation for small c.
    """
    c2 = c * c
    return c2 / (1.0 + math.sqrt(1.0 + n * c2))


def gram_coordinates(cfg: SimConfig, rng: np.random.Generator, batch: int) -> np.ndarray:
    """Coordinates R with R R^T equal in law to the Gram matrix the model sees; (batch, n, m).

    * alpha = 1: every token is v, so R is one column, sqrt(chi^2_k / d) in every row.
    * n <= k: Bartlett, W = T T^T, T_ii = sqrt(chi^2_{k-i+1} / d), T_ij ~ N(0, 1/d) (i > j);
      R = Sigma^{1/2} T = T + s 1 (1^T T).
    * n > k: R = Sigma^{1/2} G with G (n x k) iid N(0, 1/d) (already narrower than n x d).
    """
    n, d = cfg.n, cfg.d
    k = degrees_of_freedom(cfg)
    scale = 1.0 / math.sqrt(d)
    if cfg.alpha == 1.0:
        r = np.sqrt(rng.chisquare(k, size=(batch, 1, 1)) / d)      # (batch, 1, 1)
        return np.repeat(r, n, axis=1)                             # (batch, n, 1)
    if n <= k:
        t = np.zeros((batch, n, n))
        rows, cols = np.tril_indices(n, -1)
        t[:, rows, cols] = rng.standard_normal((batch, rows.size)) * scale
        diag = np.arange(n)
        t[:, diag, diag] = np.sqrt(rng.chisquare(k - diag, size=(batch, n)) / d)
    else:
        t = rng.standard_normal((batch, n, k)) * scale             # (batch, n, k)
    if cfg.alpha == 0.0:
        return t
    s = sqrt_sigma_shift(n, cfg.c)
    return t + s * t.sum(axis=1, keepdims=True)                    # Sigma^{1/2} T
