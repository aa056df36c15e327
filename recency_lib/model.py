"""One layer of the paper's decoder, Eqs. (1)-(2) and (20)-(21), written once:

    Y = Norm(X);  S = Causal(Y Y^T / sqrt(d));  A = Softmax(S) row-wise;  X' = A Y + gamma X

The norm can sit elsewhere (:mod:`recency_lib.placements`). Single head, no weights, no feed-forward
block (those are :mod:`recency_lib.extensions`). Batched over leading axes; the last axis holds
coordinates (d features, or the Gram engine's coordinates). ``d`` is always the model's hidden
size: it sets the 1/sqrt(d) and the /d.
"""

from __future__ import annotations

import math

import numpy as np

from .norms import NORMS
from .placements import PLACEMENTS


def center(x: np.ndarray) -> np.ndarray:
    """Remove each token's mean over features (LayerNorm's first step); (..., n, w)."""
    return x - x.mean(axis=-1, keepdims=True)


def already_centred(x: np.ndarray) -> np.ndarray:
    """The ``centre`` of :func:`layer` for coordinates that are LayerNorm's centred part already
    (the Gram engine's, :mod:`recency_lib.sampling`): nothing to remove."""
    return x


def normalize(x: np.ndarray, norm: str, d: int, eps: float) -> np.ndarray:
    """Eq. (2)/(21) on rows already centred where the norm centres (:mod:`recency_lib.norms`)."""
    spec = NORMS[norm]
    if not spec.scales:
        return x
    ms = np.einsum("...i,...i->...", x, x)[..., None] / d  # (..., n, 1) mean square
    y = x / np.sqrt(ms + eps)
    return y if spec.scale_to is None else y * spec.gain(d)


def causal_scores(y: np.ndarray, d: int) -> np.ndarray:
    """S = Y Y^T / sqrt(d), Eq. (1); the full (..., n, n) matrix (the softmax masks it)."""
    return (y @ np.swapaxes(y, -1, -2)) / math.sqrt(d)


def causal_softmax(s: np.ndarray) -> np.ndarray:
    """Row-wise softmax over keys j <= i, Eq. (3); zero above the diagonal; (..., n, n)."""
    mask = np.tri(s.shape[-1], dtype=bool)  # (n, n) lower triangle
    z = np.where(mask, s, -np.inf)
    z -= z.max(axis=-1, keepdims=True)
    e = np.exp(z, out=np.zeros_like(z), where=mask)  # only the visible half
    e /= e.sum(axis=-1, keepdims=True)
    return e


def layer(
    x: np.ndarray,
    *,
    norm: str,
    d: int,
    gamma: float,
    eps: float,
    placement: str = "pre",
    centre=center,
):
    """One layer with the norm where ``placement`` puts it (:mod:`recency_lib.placements`); the
    paper's pre-norm is Eq. (20): X' = Softmax(Causal(Y Y^T / sqrt(d))) Y + gamma X, Y = Norm(X).

    ``x`` (..., n, w): the literal state, or the Gram engine's coordinates with its own ``centre``
    (what LayerNorm's centring does to them). Returns (x_next, scores, attention, sq_norms),
    sq_norms (..., n) the ||P x_j||^2 of the layer's input that a LayerNorm sees (||x_j||^2 for the
    other norms), the quantity of Eq. (36).
    """
    spec, where = NORMS[norm], PLACEMENTS[placement]

    def norm_of(z):  # Norm(z), Eq. (2)/(21)
        return normalize(centre(z) if spec.centres else z, norm, d, eps)

    seen = centre(x) if spec.centres else x
    sq_norms = np.einsum("...i,...i->...", seen, seen)  # (..., n)
    y = normalize(seen, norm, d, eps) if where.norm_scores or where.norm_values else None
    s = causal_scores(y if where.norm_scores else x, d)  # (..., n, n)
    a = causal_softmax(s)  # (..., n, n)
    x_next = a @ (y if where.norm_values else x)  # (..., n, w)
    if where.output == "sublayer":
        x_next = norm_of(x_next)
    if gamma != 0.0:
        x_next = x_next + gamma * x
    if where.output == "sum":
        x_next = norm_of(x_next)
    return x_next, s, a, sq_norms
