"""The strongest sound estimators of the steps of E S^(2), the numbers Theorem 1 and Propositions 1-3 rest on.

Each is a per-sequence statistic for ``recency_lib.engines.sequence_statistic`` (through
``recency_lib.cache.cached_statistic``): it takes one block of sequences, the scores and attention
(B, layers, n, n) of a two-layer run, and returns (B, 2, k): for every adjacent step
S_ij - S_i,j-1 (1 <= j <= i, 0-based, in ``recency_lib.metrics.adjacent_index`` order) then the trend
(the mean of the steps between earlier keys), one value per sequence whose mean is that step of the
second layer (row 2 of the output; row 1 holds the first layer's own steps). Each subtracts from the
second layer's step a control whose mean step is exactly 0, so the plain mean and standard error of
row 2 estimate the step without bias, with far less noise:

* :func:`first_order_steps` (LayerNorm, alpha = 0, with or without the residual: Theorem 1 and
  Propositions 2 and 3 at alpha = 0): with eps = e^{-sqrt d}, the first layer's cosines C = Z / sqrt d
  and W = tril(e^Z, -1), the second layer's scores are S^(2) = sqrt(d) cos(v_i, v_j) with
  v_i = e_i + eps_i sum_{k<i} W_ik e_k, where eps_i = eps / (1 + gamma ||P x_i|| / sqrt d) is the row's
  leak (the residual adds gamma ||P x_i|| e_i to the query's own weight). Their expansion in eps starts
  with Z itself and the first-order term sqrt(d) (H - C (h_i + h_j) / 2), H = E W C + (E W C)^T,
  E = diag(eps_i), h = diag H. Both have mean step exactly 0 between earlier keys: a key's own terms are
  exchangeable with its neighbour's, and every other term carries a cosine of mean 0 with a token that
  nothing else in it depends on (eps_i depends on ||P x_i|| only, which is independent of the
  directions). The diagonal steps S_ii - S_i,i-1 (about sqrt d) are taken plainly.
* :func:`second_order_steps` (Theorem 1 at any d): the coefficient of eps^2 in the same expansion,
  computed from the first layer's scores alone, without the cancellation that leaves float64 nothing
  to resolve at large d (the steps themselves are about sqrt(d) eps^2, below the rounding of scores of
  size sqrt d from d ~ 300). Its steps' means times sqrt(d) eps^2 are the steps of E S^(2) up to a
  remainder of relative order eps.
* :func:`gram_controlled_steps` (no normalization: Proposition 1): without a normalization every score
  is a function of the tokens' Gram matrix, whose entries are the first layer's scores times sqrt d and
  have exactly known means; the second layer's steps minus a linear combination of all of them
  (coefficients fitted on an independent pilot run, :func:`fit_gram_controls`) keep their mean.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from recency_lib.config import SimConfig
from recency_lib.engines import sample_trajectories
from recency_lib.metrics import adjacent_index
from recency_lib.validation import check_int, check_real


def _steps(s: np.ndarray) -> np.ndarray:
    """Every adjacent step S_ij - S_i,j-1 (1 <= j <= i) of (..., n, n) matrices, adjacent_index order."""
    i, j = adjacent_index(s.shape[-1])
    return s[..., i, j] - s[..., i, j - 1]


def _with_trend(steps: np.ndarray, n: int) -> np.ndarray:
    """``steps`` (..., n(n-1)/2) and their trend (the mean of the steps between earlier keys) after them."""
    i, j = adjacent_index(n)
    return np.concatenate([steps, steps[..., j < i].mean(axis=-1, keepdims=True)], axis=-1)


def _layer1(scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The first layer's scores Z, symmetric (B, n, n), and their cosines C = Z / Z_ii (LayerNorm: Z_ii = sqrt d)."""
    if scores.shape[1] != 2:
        raise ValueError(
            f"layers={scores.shape[1]} is not allowed; allowed: 2 (the second layer's scores)"
        )
    z = np.nan_to_num(scores[:, 0], nan=0.0)
    z = np.tril(z) + np.swapaxes(np.tril(z, -1), -1, -2)
    return z, z / np.diagonal(z, axis1=-2, axis2=-1)[..., :1, None]


def first_order_steps(
    scores: np.ndarray,
    attention: np.ndarray,
    *,
    d: int,
    gamma: float = 0.0,
    sq_norms: np.ndarray | None = None,
) -> np.ndarray:
    """The steps of S^(2) minus their first-order control (module docstring); (B, 2, steps + 1)."""
    root, n = math.sqrt(d), scores.shape[-1]
    z, c = _layer1(scores)
    leak = (
        math.exp(-root) / (1.0 + gamma * np.sqrt(sq_norms[:, 0]) / root)
        if gamma
        else np.full(z.shape[:2], math.exp(-root))
    )
    ewc = (leak[..., :, None] * np.tril(np.exp(z), -1)) @ c  # (B, n, n) E W C
    h = ewc + np.swapaxes(ewc, -1, -2)
    hd = np.diagonal(h, axis1=-2, axis2=-1)
    first = root * (h - c * (hd[..., :, None] + hd[..., None, :]) / 2.0)
    s2 = np.nan_to_num(scores[:, 1], nan=0.0)
    i, j = adjacent_index(n)
    y = _steps(s2) - np.where(j < i, _steps(z) + _steps(first), 0.0)  # diagonal steps: plainly
    return np.stack([_with_trend(_steps(z), n), _with_trend(y, n)], axis=1)


def second_order_steps(scores: np.ndarray, attention: np.ndarray) -> np.ndarray:
    """The eps^2 coefficient of the steps of S^(2)/sqrt(d) between earlier keys (module docstring), from the
    first layer's scores alone; (B, 2, earlier steps + 1): row 2 the coefficient's steps and their mean,
    row 1 the first layer's steps (mean 0)."""
    n = scores.shape[-1]
    z, c = _layer1(scores)
    w = np.tril(np.exp(z), -1)
    wc = w @ c
    n1 = wc + np.swapaxes(wc, -1, -2)  # <v_i, v_j> at order eps
    a = 2.0 * np.diagonal(wc, axis1=-2, axis2=-1)  # |v_i|^2 at order eps
    wcw = wc @ np.swapaxes(w, -1, -2)  # <v_i, v_j> at order eps^2
    b = np.diagonal(wcw, axis1=-2, axis2=-1)  # |v_i|^2 at order eps^2
    ai, aj, bi, bj = a[..., :, None], a[..., None, :], b[..., :, None], b[..., None, :]
    x2 = (
        wcw
        - n1 * (ai + aj) / 2.0
        + c * (3.0 * (ai**2 + aj**2) / 8.0 - (bi + bj) / 2.0 + ai * aj / 4.0)
    )
    i, j = adjacent_index(n)
    off = j < i
    return np.stack(
        [
            _with_trend(_steps(z), n)[..., np.r_[off, True]],
            _with_trend(_steps(x2), n)[..., np.r_[off, True]],
        ],
        axis=1,
    )


def gram_controlled_steps(scores: np.ndarray, attention: np.ndarray, *, beta, mu) -> np.ndarray:
    """The steps of S^(2) (and their trend) minus (G - E G) beta, G the first layer's scores (the Gram
    matrix / sqrt d, lower triangle with the diagonal), ``mu`` = E G and ``beta`` (n(n+1)/2, steps + 1)
    from :func:`fit_gram_controls`; (B, 2, steps + 1), row 1 the plain steps of the first layer."""
    n = scores.shape[-1]
    rows, cols = np.tril_indices(n)
    g = scores[:, 0][:, rows, cols]  # (B, n(n+1)/2)
    s1, s2 = np.nan_to_num(scores[:, 0], nan=0.0), np.nan_to_num(scores[:, 1], nan=0.0)
    y = _with_trend(_steps(s2), n) - (g - np.asarray(mu)) @ np.asarray(beta)
    return np.stack([_with_trend(_steps(s1), n), y], axis=1)


def fit_gram_controls(cfg: SimConfig, samples: int = 40_000) -> dict:
    """The coefficients of :func:`gram_controlled_steps` for ``cfg`` (no normalization, two layers): a
    least-squares fit of the second layer's steps on the first layer's scores over ``samples`` sequences
    of a pilot run with the seed ``cfg.seed + 1`` (independent of ``cfg``'s, so the estimate stays
    unbiased), and the scores' exact means, E <x_i, x_j> / sqrt d = (delta_ij + alpha / (1 - alpha)) / sqrt d.
    Returns {"beta": ..., "mu": ...} as lists (keyword arguments of a cached statistic)."""
    if cfg.norm != "none" or cfg.layers != 2 or cfg.alpha >= 1.0:
        raise ValueError(f"cfg={cfg!r} is not allowed; allowed: norm='none', layers=2, alpha < 1")
    samples = check_int("samples", samples, 100)
    n = cfg.n
    rows, cols = np.tril_indices(n)
    s, _ = sample_trajectories(cfg.replace(seed=cfg.seed + 1, samples=samples))
    g = s[:, 0][:, rows, cols]
    y = _with_trend(_steps(np.nan_to_num(s[:, 1], nan=0.0)), n)
    beta = np.linalg.lstsq(g - g.mean(axis=0), y - y.mean(axis=0), rcond=None)[0]
    mu = ((rows == cols) + cfg.alpha / (1.0 - cfg.alpha)) / math.sqrt(cfg.d)
    return {"beta": beta.tolist(), "mu": mu.tolist()}


def first_order(d: int, gamma: float = 0.0):
    """:func:`first_order_steps` for hidden size ``d`` and residual weight ``gamma``, as a statistic the
    results cache can key (a functools.partial of a module-level function)."""
    return functools.partial(
        first_order_steps,
        d=check_int("d", d, 2),
        gamma=check_real("gamma", gamma, lo=0.0, allowed="a number >= 0"),
    )


def gram_controlled(cfg: SimConfig, pilot: int = 40_000, *, cache=None):
    """:func:`gram_controlled_steps` with its coefficients fitted for ``cfg`` (:func:`fit_gram_controls`,
    through the results cache ``cache``, default recency_lib's: the pilot runs once per setting and source)."""
    from recency_lib.cache import cached_value

    fit, _ = cached_value(
        "gram-controls",
        lambda: fit_gram_controls(cfg, pilot),
        ("companion.estimators",),
        params={"config": cfg.to_dict(), "pilot": pilot},
        packages=("numpy",),
        cache=cache,
    )
    return functools.partial(gram_controlled_steps, **fit)
