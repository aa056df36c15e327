"""Shared pieces of the closed forms: input checks, and the layer-1 algebra of Eqs. (25)-(26), (33)-(36).

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
    """t = e^{alpha sqrt(d)} / e^{sqrt(d)} = e^{-(1 - alpha) sqrt(d)}, the off-diagonal softmax
    weight of layer 1 relative to the diagonal one (scores sqrt(d) alpha vs sqrt(d))."""
    return np.exp(-(1.0 - alpha) * np.sqrt(d))


def _r(m: np.ndarray, t: np.ndarray) -> np.ndarray:
    """r = e^{sqrt(d)} / D with D = e^{sqrt(d)} + e^{alpha sqrt(d)} m (Eqs. (25)-(26)), m = j - 1:
    the layer-1 attention on the diagonal."""
    return 1.0 / (1.0 + m * t)


def _q_layer1(m, alpha, g, t):
    """||x_j^(1)||^2 / d with x_j^(1) = sum_k A_jk y_k + g y_j, m = j - 1 (Eqs. (33)-(36)).

    With <y_k, y_l> = d ((1 - alpha) delta_kl + alpha), ||sum_k c_k y_k||^2 / d
    = (1 - alpha) sum_k c_k^2 + alpha (sum_k c_k)^2. Here c_j = g + r, c_k = t r (k < j) and
    sum_k c_k = 1 + g, so

        q = (1 - alpha) [(g + r)^2 + t r (1 - r)] + alpha (1 + g)^2,

    which is Eq. (36) divided by d, rearranged into a sum of non-negative terms (no
    cancellation; 1 - r = m t r is computed that way, never by subtraction).
    """
    r = _r(m, t)
    one_minus_r = m * t * r
    return (1.0 - alpha) * ((g + r) ** 2 + t * r * one_minus_r) + alpha * (1.0 + g) ** 2


def _residual_coefficient(alpha, gamma, d, norm):
    """g such that gamma x_j^(0) = g y_j^(1) in the LLN limit (corrects Eqs. (25)/(26)/(33)).

    y_j = sqrt(d) x_j / ||x_j||, so gamma x_j = gamma (||x_j|| / sqrt(d)) y_j with
    ||x_j^(0)||^2 -> rho / (1 - alpha). rho = (d - 1) / d for LayerNorm (the residual stream
    that LayerNorm sees is the centred P x, and E ||P x||^2 = (d - 1) / d E ||x||^2), else 1.
    At alpha = 1 every token equals v (the convention of the simulator), ||v||^2 -> 1.
    """
    rho = NORMS[norm].sees(d)
    sq0 = 1.0 / np.where(alpha < 1.0, 1.0 - alpha, 1.0)  # ||x_j^(0)||^2 / rho
    return gamma * np.sqrt(rho * sq0 / d)
