"""The same quantities as :mod:`recency_lib.theory.printed`, derived again under the paper's own
law-of-large-numbers assumptions with its slips in scale fixed: Eq. (14) (<x_i, x_i> is 1, not
sqrt(d)) and Eqs. (25)/(26)/(33) (the residual adds gamma x_j^(0) = gamma ||x_j^(0)|| y_j / sqrt(d),
not gamma y_j). Each is checked against :func:`recency_lib.theory.lln_limit` in the tests.
"""

from __future__ import annotations

import numpy as np

from ..norms import NORMS
from ..validation import alpha_array, d_array, gamma_array, index_array
from ._common import (
    CLOSED_FORM,
    _q_layer1,
    _r,
    _residual_coefficient,
    _t,
    check_norm,
    scalar_or_array,
)


def _prop1_gram(alpha):
    """(u, w) with <x_k, x_l> -> u delta_kl + w for the raw inputs of Eq. (6).

    alpha < 1: u = 1, w = c^2 = alpha / (1 - alpha). alpha = 1: every token equals v, u = 0, w = 1.
    """
    below = alpha < 1.0
    safe = np.where(below, 1.0 - alpha, 1.0)
    u = np.where(below, 1.0, 0.0)
    w = np.where(below, alpha / safe, 1.0)
    return u, w


def prop1_attention_corrected(i, j, d, alpha=0.0):
    """First-layer attention without normalization: Eq. (15) with Eq. (14) corrected.

    With <x_k, x_l> -> u delta_kl + w (u = 1, w = alpha / (1 - alpha); u = 0, w = 1 at alpha = 1),
    the scores are (u delta_kl + w) / sqrt(d); the shared w cancels in the softmax, leaving

        A^(1)_ii = a / (a + i - 1),  A^(1)_ij = 1 / (a + i - 1) (i > j),  0 (i < j),

    with a = e^{u / sqrt(d)} = e^{1 / sqrt(d)} instead of the printed e^{sqrt(d)}. For large d,
    a -> 1: the first layer attends almost uniformly, the opposite of Eq. (15)'s near-identity.
    The result does not depend on alpha < 1.
    """
    i, j, d, alpha = np.broadcast_arrays(
        index_array("i", i), index_array("j", j), d_array(d), alpha_array(alpha)
    )
    u, _ = _prop1_gram(alpha)
    a = np.exp(u / np.sqrt(d))
    denom = a + i - 1
    out = np.where(i == j, a / denom, np.where(i > j, 1.0 / denom, 0.0))
    return scalar_or_array(out)


def prop1_score_corrected(i, j, d, alpha=0.0):
    """Second-layer score without normalization, Eqs. (16)-(19) redone with the corrected Eq. (14).

    x^(1) = A^(1) x^(0) with the attention of :func:`prop1_attention_corrected`
    (a = e^{u / sqrt d}); the rows of A^(1) sum to 1, so with <x_k, x_l> -> u delta_kl + w:

        S^(2)_ij = (u / (a + i - 1) + w) / sqrt(d)                       (i > j)
        S^(2)_ii = (u (a^2 + i - 1) / (a + i - 1)^2 + w) / sqrt(d)        (diagonal)

    NaN above the diagonal. Still constant in j for i > j (Prop. 1's conclusion stands: no
    recency bias), but of size ~1 / (sqrt(d) i), not the printed 1 / (e^{sqrt d} + i - 1).
    """
    i, j, d, alpha = np.broadcast_arrays(
        index_array("i", i), index_array("j", j), d_array(d), alpha_array(alpha)
    )
    u, w = _prop1_gram(alpha)
    sd = np.sqrt(d)
    a = np.exp(u / sd)
    off = (u / (a + i - 1) + w) / sd
    diag = (u * (a * a + i - 1) / (a + i - 1) ** 2 + w) / sd
    out = np.where(i > j, off, np.where(i == j, diag, np.nan))
    return scalar_or_array(out)


def residual_coefficient(alpha, gamma, d, norm="layernorm"):
    """Weight g of y_j in the residual term, gamma x_j^(0) = g y_j^(1), in the LLN limit.

    Corrects Eqs. (25)/(26)/(33), which print it as sqrt(d) gamma ||x_j||, d gamma and gamma:
    y = sqrt(d) x / ||x|| gives g = gamma ||x_j^(0)|| / sqrt(d) = gamma sqrt(rho / (d (1 - alpha)))
    (rho = (d - 1) / d for LayerNorm, else 1; gamma sqrt(rho / d) at alpha = 1). This is the g
    used by :func:`sq_norm_corrected` and :func:`score2_corrected`.
    """
    norm = check_norm(norm, CLOSED_FORM)
    alpha, gamma = alpha_array(alpha), gamma_array(gamma)
    d = d_array(d, 1.0, strict=NORMS[norm].centres)
    alpha, gamma, d = np.broadcast_arrays(alpha, gamma, d)
    return scalar_or_array(_residual_coefficient(alpha, gamma, d, norm))


def sq_norm_corrected(j, alpha, gamma, d, norm="layernorm"):
    """||x_j^(1)||^2 (the state fed to layer 2) in the LLN limit: Eq. (36) with the residual fixed.

    The residual adds gamma x_j^(0) = g y_j with g = gamma sqrt(rho / (d (1 - alpha)))
    (rho = (d - 1) / d for LayerNorm, whose input is the centred state; 1 for "rms"; at alpha = 1
    tokens equal v and g = gamma sqrt(rho / d)). Then ||x_j^(1)||^2 is Eq. (36) with gamma -> g:

        d [(1 - alpha)((g + r)^2 + t r (1 - r)) + alpha (1 + g)^2],
        t = e^{-(1 - alpha) sqrt d},  r = 1 / (1 + (j - 1) t).

    For LayerNorm this is ||P x_j^(1)||^2, what the next LayerNorm sees (P removes the feature
    mean). Equals ``lln_limit(...)["sq_norms"][1]``.
    """
    norm = check_norm(norm, CLOSED_FORM)
    j, alpha, gamma = index_array("j", j), alpha_array(alpha), gamma_array(gamma)
    d = d_array(d, 1.0, strict=NORMS[norm].centres)
    j, alpha, gamma, d = np.broadcast_arrays(j, alpha, gamma, d)
    g = _residual_coefficient(alpha, gamma, d, norm)
    q = _q_layer1(j - 1, alpha, g, _t(alpha, d))
    return scalar_or_array(d * q)


def h_corrected(j, alpha, gamma, d, norm="layernorm"):
    """Corrected h(j) = 1 / ||x_j^(1)|| (Eq. (40)'s key factor), from :func:`sq_norm_corrected`.

    Same as :func:`h_eq41` at gamma = 0 (up to LayerNorm's (d - 1)/d, which only enters through
    the residual). For gamma != 0 the residual's weight is gamma sqrt(rho / (d (1 - alpha))), not
    gamma, so at d = 64 the residual flattens h(j) far less than Eq. (41) says.
    """
    return scalar_or_array(1.0 / np.sqrt(np.asarray(sq_norm_corrected(j, alpha, gamma, d, norm))))


def _score2_inputs(i, j, alpha, gamma, d, norm):
    """Validated, broadcast inputs of the layer-2 score forms, with the residual weight g and t."""
    norm = check_norm(norm, CLOSED_FORM)
    i, j = index_array("i", i), index_array("j", j)
    alpha, gamma = alpha_array(alpha), gamma_array(gamma)
    d = d_array(d, 1.0, strict=NORMS[norm].centres)
    i, j, alpha, gamma, d = np.broadcast_arrays(i, j, alpha, gamma, d)
    return i, j, alpha, gamma, d, _residual_coefficient(alpha, gamma, d, norm), _t(alpha, d)


def score2_corrected(i, j, alpha, gamma, d, norm="layernorm"):
    """Second-layer score S^(2)_ij for any alpha, gamma in the LLN limit (corrected Eqs. (28)-(32),
    (40)).

    With the layer-1 weights of Eqs. (25)-(26) and the residual weight g of
    :func:`sq_norm_corrected`, the inner product (i > j) does not depend on j (as Eq. (32) says):

        <x_i^(1), x_j^(1)> / d = (1 + g) [(1 - alpha) t r_i + alpha (1 + g)],

    and S^(2)_ij = sqrt(d) <x_i, x_j> / (||x_i|| ||x_j||) = g(i) h(j) (Eq. (40)). sqrt(d) on the
    diagonal, NaN above it. At alpha = gamma = 0 this is Eq. (11).
    """
    i, j, alpha, gamma, d, g, t = _score2_inputs(i, j, alpha, gamma, d, norm)
    inner = (1.0 + g) * ((1.0 - alpha) * t * _r(i - 1, t) + alpha * (1.0 + g))
    q_i, q_j = _q_layer1(i - 1, alpha, g, t), _q_layer1(j - 1, alpha, g, t)
    off = np.sqrt(d) * inner / np.sqrt(q_i * q_j)
    out = np.where(i > j, off, np.where(i == j, np.sqrt(d), np.nan))
    return scalar_or_array(out)


def score2_step_corrected(i, j, alpha, gamma, d, norm="layernorm"):
    """Adjacent difference S^(2)_ij - S^(2)_i,j-1 of :func:`score2_corrected`, without cancellation.

    A difference of two :func:`score2_corrected` values loses every digit from d ~ 1500; here

        S_ij = sqrt(d) inner_i / sqrt(q_i q_j)   (i > j; inner_i = <x_i, x_j> / d: free of j)
        q_{j-1} - q_j = (1 - alpha) t r_j r_{j-1} [2 g + t + (1 - t)(r_j + r_{j-1})]   (terms >= 0)

    (q = ||x^(1)||^2 / d, t and r as in :func:`sq_norm_corrected`), so for 2 <= j < i

        S_ij - S_i,j-1 = sqrt(d) inner_i / sqrt(q_i) * (q_{j-1} - q_j)
                         / (sqrt(q_j q_{j-1}) (sqrt(q_j) + sqrt(q_{j-1}))),

    and for j = i the diagonal step sqrt(d) - S_i,i-1; NaN for j < 2 or j > i. Positive for
    alpha < 1, gamma >= 0 (Eqs. (37)-(39))."""
    i, j, alpha, gamma, d, g, t = _score2_inputs(i, j, alpha, gamma, d, norm)
    one_minus_t = -np.expm1(-(1.0 - alpha) * np.sqrt(d))
    inner = (1.0 + g) * ((1.0 - alpha) * t * _r(i - 1, t) + alpha * (1.0 + g))
    q_i = _q_layer1(i - 1, alpha, g, t)
    jm = np.maximum(j, 2.0)  # keep the formula finite where it is masked
    q_j, q_p = _q_layer1(jm - 1, alpha, g, t), _q_layer1(jm - 2, alpha, g, t)
    r_j, r_p = _r(jm - 1, t), _r(jm - 2, t)
    dq = (1.0 - alpha) * t * r_j * r_p * (2.0 * g + t + one_minus_t * (r_j + r_p))
    sd = np.sqrt(d)
    off = sd * inner / np.sqrt(q_i) * dq / (np.sqrt(q_j * q_p) * (np.sqrt(q_j) + np.sqrt(q_p)))
    diag = sd - sd * inner / np.sqrt(q_i * q_p)
    out = np.where((j >= 2) & (j < i), off, np.where((j >= 2) & (j == i), diag, np.nan))
    return scalar_or_array(out)
