"""The strongest sound estimators of the steps of E S^(2) (Theorem 1, Propositions 1-3):
per-sequence statistics of a two-layer run, (B, 2, n, n) -> (B, 2, k): row 2 the second layer's
steps minus a control of mean exactly 0 (then their trend), row 1 the first layer's own steps.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from recency_lib.config import SimConfig
from recency_lib.features import adjacent_differences as _steps  # every S_ij - S_i,j-1, j <= i
from recency_lib.features import adjacent_index
from recency_lib.trajectories import sample_trajectories


def _with_trend(steps: np.ndarray, n: int) -> np.ndarray:
    """``steps`` (..., n(n-1)/2) and, after them, their mean between earlier keys."""
    i, j = adjacent_index(n)
    return np.concatenate([steps, steps[..., j < i].mean(axis=-1, keepdims=True)], axis=-1)


def _layer1(scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The first layer's scores Z, symmetric (B, n, n), and cosines C = Z / Z_ii."""
    z = np.nan_to_num(scores[:, 0], nan=0.0)
    z = np.tril(z) + np.swapaxes(np.tril(z, -1), -1, -2)
    return z, z / np.diagonal(z, axis1=-2, axis2=-1)[..., :1, None]


def first_order_steps(scores, attention, *, d: int, gamma: float = 0.0, sq_norms=None):
    """LayerNorm at alpha = 0 (Theorem 1, Propositions 2-3): S^(2) = sqrt(d) cos(v_i, v_j) with
    v_i = e_i + eps_i sum_{k<i} W_ik e_k, W = tril(e^Z, -1), eps_i = e^{-sqrt d} / (1 + gamma
    ||P x_i|| / sqrt d) the row's leak. The control, Z and the first-order term sqrt(d) (H - C (h_i
    + h_j) / 2) with H = E W C + (E W C)^T, h = diag H, has mean step 0 between earlier keys (a
    key's terms are exchangeable with its neighbour's); diagonal steps are taken plainly."""
    root, n = math.sqrt(d), scores.shape[-1]
    z, c = _layer1(scores)
    if gamma:
        leak = math.exp(-root) / (1.0 + gamma * np.sqrt(sq_norms[:, 0]) / root)
    else:
        leak = np.full(z.shape[:2], math.exp(-root))
    ewc = (leak[..., :, None] * np.tril(np.exp(z), -1)) @ c  # (B, n, n) E W C
    h = ewc + np.swapaxes(ewc, -1, -2)
    hd = np.diagonal(h, axis1=-2, axis2=-1)
    first = root * (h - c * (hd[..., :, None] + hd[..., None, :]) / 2.0)
    s2 = np.nan_to_num(scores[:, 1], nan=0.0)
    i, j = adjacent_index(n)
    y = _steps(s2) - np.where(j < i, _steps(z) + _steps(first), 0.0)
    return np.stack([_with_trend(_steps(z), n), _with_trend(y, n)], axis=1)


def second_order_steps(scores: np.ndarray, attention: np.ndarray) -> np.ndarray:
    """Theorem 1 at any d: the eps^2 coefficient of the steps of S^(2) / sqrt(d) between earlier
    keys, from the first layer's scores alone (the steps themselves, about sqrt(d) eps^2, are
    below float64's rounding of scores of size sqrt(d) from d ~ 300). (B, 2, earlier steps + 1)."""
    n = scores.shape[-1]
    z, c = _layer1(scores)
    w = np.tril(np.exp(z), -1)
    wc = w @ c
    n1 = wc + np.swapaxes(wc, -1, -2)  # <v_i, v_j> at order eps
    a = 2.0 * np.diagonal(wc, axis1=-2, axis2=-1)  # |v_i|^2 at order eps
    wcw = wc @ np.swapaxes(w, -1, -2)  # <v_i, v_j> at order eps^2
    b = np.diagonal(wcw, axis1=-2, axis2=-1)  # |v_i|^2 at order eps^2
    ai, aj, bi, bj = a[..., :, None], a[..., None, :], b[..., :, None], b[..., None, :]
    norms = 3.0 * (ai**2 + aj**2) / 8.0 - (bi + bj) / 2.0 + ai * aj / 4.0
    x2 = wcw - n1 * (ai + aj) / 2.0 + c * norms
    i, j = adjacent_index(n)
    keep = np.r_[j < i, True]
    return np.stack(
        [_with_trend(_steps(z), n)[..., keep], _with_trend(_steps(x2), n)[..., keep]], 1
    )


def gram_controlled_steps(scores: np.ndarray, attention: np.ndarray, *, beta, mu) -> np.ndarray:
    """No normalization (Proposition 1): the steps of S^(2) and their trend minus (G - mu) beta,
    G the first layer's scores (lower triangle), mu = E G, beta fitted."""
    n = scores.shape[-1]
    rows, cols = np.tril_indices(n)
    g = scores[:, 0][:, rows, cols]  # (B, n(n+1)/2)
    s1, s2 = np.nan_to_num(scores[:, 0], nan=0.0), np.nan_to_num(scores[:, 1], nan=0.0)
    y = _with_trend(_steps(s2), n) - (g - np.asarray(mu)) @ np.asarray(beta)
    return np.stack([_with_trend(_steps(s1), n), y], axis=1)


def fit_gram_controls(cfg: SimConfig, samples: int = 40_000) -> dict:
    """{"beta", "mu"} for ``cfg``: beta a least-squares fit on a pilot run of seed
    ``cfg.seed + 1`` (independent: no bias), mu = (delta_ij + alpha / (1 - alpha)) / sqrt d."""
    n = cfg.n
    rows, cols = np.tril_indices(n)
    s, _ = sample_trajectories(cfg.replace(seed=cfg.seed + 1, samples=samples))
    g = s[:, 0][:, rows, cols]
    y = _with_trend(_steps(np.nan_to_num(s[:, 1], nan=0.0)), n)
    beta = np.linalg.lstsq(g - g.mean(axis=0), y - y.mean(axis=0), rcond=None)[0]
    mu = ((rows == cols) + cfg.alpha / (1.0 - cfg.alpha)) / math.sqrt(cfg.d)
    return {"beta": beta.tolist(), "mu": mu.tolist()}


def first_order(d: int, gamma: float = 0.0):
    """The cache-keyable :func:`first_order_steps` at ``d`` and residual weight ``gamma``."""
    return functools.partial(first_order_steps, d=int(d), gamma=float(gamma))


def gram_controlled(cfg: SimConfig, pilot: int = 40_000, *, cache=None):
    """The cache-keyable :func:`gram_controlled_steps`, fitted once per setting and source."""
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
