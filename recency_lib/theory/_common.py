"""Shared pieces of the closed forms: input checks, and the layer-1 algebra of Eqs. (25)-(26),
(33)-(36).

Notation (1-based indices, as in the paper): t = e^{-(1 - alpha) sqrt(d)} is the off-diagonal
layer-1 softmax weight relative to the diagonal one, r_j = 1 / (1 + (j - 1) t) the layer-1
attention on the diagonal, q_j = ||x_j^(1)||^2 / d, and g the weight of y_j in the residual term.
"""

from __future__ import annotations

import numpy as np

from ..norms import NAMES, NORMS
from ..validation import check_choice

#: The normalizations the corrected closed forms cover (:data:`recency_lib.norms.NORMS`).
CLOSED_FORM = tuple(name for name, spec in NORMS.items() if spec.closed_form)


def check_norm(norm, allowed=NAMES) -> str:
    return check_choice("norm", norm, allowed)


def scalar_or_array(x: np.ndarray):
    """0-d results come back as numpy scalars, others as arrays."""
    return x[()] if x.ndim == 0 else x


def _t(alpha: np.ndarray, d: np.ndarray) -> np.ndarray:
    """t = e^{-(1 - alpha) sqrt(d)}: layer 1's off-diagonal softmax weight over the diagonal one."""
    return np.exp(-(1.0 - alpha) * np.sqrt(d))


def _r(m: np.ndarray, t: np.ndarray) -> np.ndarray:
    """r = 1 / (1 + m t), m = j - 1: layer 1's attention on the diagonal (Eqs. (25)-(26))."""
    return 1.0 / (1.0 + m * t)


def _q_layer1(m, alpha, g, t):
    """||x_j^(1)||^2 / d = (1 - alpha) [(g + r)^2 + t r (1 - r)] + alpha (1 + g)^2: Eq. (36) over d
    as a sum of non-negative terms (1 - r = m t r, never a subtraction)."""
    r = _r(m, t)
    one_minus_r = m * t * r
    return (1.0 - alpha) * ((g + r) ** 2 + t * r * one_minus_r) + alpha * (1.0 + g) ** 2


def _residual_coefficient(alpha, gamma, d, norm):
    """g with gamma x_j^(0) = g y_j^(1) in the LLN limit: gamma sqrt(rho / (d (1 - alpha))), rho the
    share the norm sees (corrects Eqs. (25)/(26)/(33))."""
    rho = NORMS[norm].sees(d)
    sq0 = 1.0 / np.where(alpha < 1.0, 1.0 - alpha, 1.0)  # ||x_j^(0)||^2 / rho
    return gamma * np.sqrt(rho * sq0 / d)
