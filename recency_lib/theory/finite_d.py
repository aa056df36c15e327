"""Finite-d results that need no law of large numbers: the exact first-token norm and the
first-order size of what the LLN drops (the fluctuation factor of the layer-1 softmax), used by
Appendix A."""

from __future__ import annotations

import numpy as np

from ..norms import NORMS
from ..validation import alpha_array, bounded_array, d_array, gamma_array
from ._common import CLOSED_FORM, check_norm, scalar_or_array


def sq_norm_first_token_exact(alpha, gamma, d, norm="layernorm"):
    """E ||x_1^(1)||^2 at finite d, EXACTLY (no law of large numbers; eps of the norm neglected).

    The first token attends only to itself, so P x_1^(1) = y_1 + gamma P x_1 and, with ||y_1||^2 =
    d, E = d + 2 gamma sqrt(d) E||P x_1|| + gamma^2 E||P x_1||^2, where ||P x_1||^2 = s^2 chi^2_k,
    s^2 = 1 / (d (1 - alpha)), k = d - 1 (LayerNorm) or d. Without a norm: (1 + gamma)^2 d s^2. It
    isolates the residual coefficient of Eqs. (25)/(26)/(33) from every approximation."""
    norm = check_norm(norm)
    alpha, gamma, d = alpha_array(alpha), gamma_array(gamma), d_array(d, 2.0)
    alpha, gamma, d = np.broadcast_arrays(alpha, gamma, d)
    s2 = 1.0 / (d * np.where(alpha < 1.0, 1.0 - alpha, 1.0))
    if not NORMS[norm].scales:
        return scalar_or_array((1.0 + gamma) ** 2 * d * s2)
    from scipy.special import gammaln  # lazy: scipy is slow to import

    k = d - 1.0 if NORMS[norm].centres else d
    mean_norm = np.sqrt(2.0 * s2) * np.exp(gammaln((k + 1.0) / 2.0) - gammaln(k / 2.0))
    y2 = NORMS[norm].sq_norm(d)  # ||y_1||^2: d for LayerNorm and RMSNorm
    return scalar_or_array(y2 + 2.0 * gamma * np.sqrt(y2) * mean_norm + gamma**2 * k * s2)


def drop_ratio_first_order(d, norm="layernorm"):
    """Simulated / LLN size of the drop ||x_1^(1)||^2 - ||x_j^(1)||^2 at alpha = gamma = 0, to first
    order.

    The LLN (Eqs. (9)-(10)) sets the off-diagonal layer-1 scores Z_jk = <y_j, y_k> / sqrt(d) to 0.
    They are not small: Z = sqrt(d) u with u the cosine of two independent uniform directions in m =
    d - 1 (LayerNorm) or d dimensions, so Z -> N(0, 1) and does not shrink with d. To first order in
    the off-diagonal weights w_k = e^{Z_jk - sqrt d},

        E ||x_j||^2 = d - 2 sum_k E[w_k (d - sqrt(d) Z_jk)],

    so the drop is 2 (j - 1) d e^{-sqrt d} R(d) with

        R(d) = E[e^Z] - E[Z e^Z] / sqrt(d) = 0F1(; m/2; d/4) - (sqrt(d) / m) 0F1(; m/2 + 1; d/4),

    (E[e^{t u}] = 0F1(; m/2; t^2/4) is the moment generating function of u) while the LLN drop is 2
    (j - 1) d e^{-sqrt d} (R = 1). R(d) -> e^{1/2} (1 - 1/sqrt(d)) -> e^{1/2}: the relative error of
    the LLN's j-dependence does NOT vanish as d grows. Neglected: terms of second order in (j - 1)
    e^{-sqrt d}, relative size ~ (j - 1) e^{2 - sqrt d} (small for d >= 64)."""
    norm = check_norm(norm, CLOSED_FORM)
    d = d_array(d, 4.0 if NORMS[norm].centres else 3.0)
    from scipy.special import hyp0f1  # lazy: as above

    m = d - 1.0 if NORMS[norm].centres else d
    return scalar_or_array(
        hyp0f1(m / 2.0, d / 4.0) - np.sqrt(d) / m * hyp0f1(m / 2.0 + 1.0, d / 4.0)
    )


def drop_ratio_gaussian(alpha, d):
    """Gaussian approximation of the same ratio for any alpha < 1 (see
    :func:`drop_ratio_first_order`).

    With S_jk = sqrt(d) alpha + xi (Eq. (23) corrected), first order in the off-diagonal weights
    gives E[drop] / LLN drop = E[e^xi] - E[xi e^xi] / (sqrt(d) (1 - alpha)). Approximating xi by
    N(0, sigma^2), sigma^2 = (1 - alpha^2)^2 (the large-d variance of sqrt(d) times a sample
    correlation coefficient with true correlation alpha):

        R(alpha, d) = e^{sigma^2 / 2} (1 - sigma^2 / (sqrt(d) (1 - alpha)))  (-> e^{sigma^2 / 2})

    d = inf gives the limit. An approximation (the O(1/sqrt(d)) bias of xi and higher orders in
    e^{-(1 - alpha) sqrt d} are neglected); the simulation is the reference.
    """
    alpha = bounded_array(
        "alpha", alpha, lo=0.0, hi=np.nextafter(1.0, 0.0), allowed="real numbers in [0, 1)"
    )
    d = bounded_array("d", d, lo=1.0, inf=True, allowed="real numbers >= 1, or inf")
    alpha, d = np.broadcast_arrays(alpha, d)
    s2 = (1.0 - alpha**2) ** 2
    return scalar_or_array(np.exp(s2 / 2.0) * (1.0 - s2 / (np.sqrt(d) * (1.0 - alpha))))
