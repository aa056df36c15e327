"""One layer of the paper's simplified decoder, Eqs. (1)-(2) and (20)-(21), written once.

    Y = Norm(X);  S = Causal(Y Y^T / sqrt(d));  A = Softmax(S) row-wise;  X' = A Y + gamma X

Single head, no learnable weights, no feed-forward block: exactly the paper's simulation (the
parts of Sec. 2.1's full layer that the paper leaves out are in :mod:`recency_lib.extensions`).
All functions are pure and batched over a leading axis; the last axis holds coordinates (the
d features for the dense engine, m <= n Gram coordinates for the gram engine). ``d`` is always
the *model's* hidden size, which sets the scale (the 1/sqrt(d) in the scores, the /d in the
variance), whatever the width of the array.
"""

from __future__ import annotations

import math

import numpy as np

from .norms import NORMS


def center(x: np.ndarray) -> np.ndarray:
    """Remove each token's mean over features (LayerNorm's first step); (..., n, w)."""
    return x - x.mean(axis=-1, keepdims=True)


def normalize(x: np.ndarray, norm: str, d: int, eps: float) -> np.ndarray:
    """Eq. (2)/(21) on already-centred rows (for LayerNorm) or raw rows (for "rms").

    LayerNorm without affine parameters is P x / sqrt(||P x||^2 / d + eps) with P the centring
    projection; pass ``x = P x`` (use :func:`center`, or gram coordinates, which are centred by
    construction). "rms" is x / sqrt(||x||^2 / d + eps), the paper's sqrt(d) x / ||x|| (Eq. (21)).
    """
    if not NORMS[norm].scales:
        return x
    ms = np.einsum("...i,...i->...", x, x)[..., None] / d  # (..., n, 1) mean square
    return x / np.sqrt(ms + eps)


def causal_scores(y: np.ndarray, d: int) -> np.ndarray:
    """S = Y Y^T / sqrt(d), Eq. (1); full (..., n, n) matrix (the mask is applied by the softmax)."""
    return (y @ np.swapaxes(y, -1, -2)) / math.sqrt(d)


def causal_softmax(s: np.ndarray) -> np.ndarray:
    """Row-wise softmax over keys j <= i, Eq. (3); zero above the diagonal; (..., n, n)."""
    n = s.shape[-1]
    mask = np.tri(n, dtype=bool)  # (n, n) lower triangle
    z = np.where(mask, s, -np.inf)
    z -= z.max(axis=-1, keepdims=True)
    e = np.exp(z, out=np.zeros_like(z), where=mask)  # only the visible half is exponentiated
    e /= e.sum(axis=-1, keepdims=True)
    return e


def layer(x: np.ndarray, *, norm: str, d: int, gamma: float, eps: float, centred: bool = False):
    """One layer f(X) = Softmax(Causal(Y Y^T / sqrt(d))) Y + gamma X with Y = Norm(X), Eq. (20).

    ``x``: (..., n, w). ``centred`` says whether ``x`` is already the centred part that LayerNorm
    sees (gram engine) or the literal state (dense engine). Returns (x_next, scores, attention,
    sq_norms), where sq_norms (..., n) are ||x_j||^2 of what the normalization sees (||P x_j||^2
    for LayerNorm), the quantity of Eq. (36). The layer of Sec. 2.1 with the parts the paper
    leaves out (weights, heads, RoPE, FFN, post-LN) is :func:`recency_lib.extensions.layer`.
    """
    seen = center(x) if (NORMS[norm].centres and not centred) else x
    sq_norms = np.einsum("...i,...i->...", seen, seen)  # (..., n)
    y = normalize(seen, norm, d, eps)  # (..., n, w)
    s = causal_scores(y, d)  # (..., n, n)
    a = causal_softmax(s)  # (..., n, n)
    x_next = a @ y  # (..., n, w)
    if gamma != 0.0:
        x_next = x_next + gamma * x
    return x_next, s, a, sq_norms
