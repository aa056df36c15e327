"""The paper's closed forms exactly as printed: Theorem 1 (Eqs. (5)/(11)), Proposition 1 (Eqs. (15),
(19)), Propositions 2-3 (Eqs. (36), (41)). Where a printed form slips in scale, its docstring says so
and names the corrected form in :mod:`recency_lib.theory.corrected`.
"""

from __future__ import annotations

import numpy as np

from ..validation import alpha_array, d_array, gamma_array, index_array
from ._common import _q_layer1, _t, scalar_or_array


def theorem1_score(i, j, d):
    """Second-layer score S^(2)_ij with LayerNorm, alpha = 0, gamma = 0: Eq. (5) = Eq. (11).

        S^(2)_ij = sqrt(d) (e^{sqrt d} + j - 1) / sqrt((e^{2 sqrt d} + i - 1)(e^{2 sqrt d} + j - 1))

    for i > j; sqrt(d) on the diagonal (normalized rows have squared norm d); NaN for j > i
    (masked). Eq. (11) is the correct LLN limit: it agrees with :func:`lln_limit` layer 2 and
    :func:`score2_corrected` at alpha = gamma = 0.

    Evaluated as sqrt(d) t (1 + (j-1) t) / sqrt((1 + (i-1) t^2)(1 + (j-1) t^2)), t = e^{-sqrt d},
    i.e. with e^{sqrt d} factored out; underflows to 0 (its correct rounding) once
    sqrt(d) > ~745.

    i, j: token indices (integers >= 1); d: hidden size (real >= 1). Broadcasts.
    """
    i, j, d = np.broadcast_arrays(index_array("i", i), index_array("j", j), d_array(d))
    t = np.exp(-np.sqrt(d))
    t2 = t * t
    off = (
        np.sqrt(d) * t * (1.0 + (j - 1) * t) / np.sqrt((1.0 + (i - 1) * t2) * (1.0 + (j - 1) * t2))
    )
    out = np.where(i > j, off, np.where(i == j, np.sqrt(d), np.nan))
    return scalar_or_array(out)


def prop1_attention(i, j, d):
    """First-layer attention without normalization, Eq. (15) as printed.

        A^(1)_ii = e^{sqrt d} / (e^{sqrt d} + i - 1),  A^(1)_ij = 1 / (e^{sqrt d} + i - 1) (i > j),
        0 (i < j).

    It rests on Eq. (14), <x_i, x_i> = sqrt(d), which is wrong in scale: with
    x ~ N(0, I_d / d), <x_i, x_i> -> 1. See :func:`prop1_attention_corrected`.

    i, j: token indices (integers >= 1); d: hidden size (real >= 1). Broadcasts.
    """
    i, j, d = np.broadcast_arrays(index_array("i", i), index_array("j", j), d_array(d))
    t = np.exp(-np.sqrt(d))
    denom = 1.0 + (i - 1) * t  # (e^{sqrt d} + i - 1) / e^{sqrt d}
    out = np.where(i == j, 1.0 / denom, np.where(i > j, t / denom, 0.0))
    return scalar_or_array(out)


def prop1_score(i, j, d):
    """Second-layer score without normalization, Eq. (19) as printed: 1 / (e^{sqrt d} + i - 1), i > j.

    NaN on and above the diagonal: the paper prints no diagonal value. (Under its own Eq. (14)
    the diagonal would be (e^{2 sqrt d} + i - 1) / (e^{sqrt d} + i - 1)^2.) Eq. (17) drops the
    1/sqrt(d) of the scores and Eq. (18) drops the factor <x_k, x_k> = sqrt(d) of Eq. (14); the two
    slips cancel, so Eq. (19) is consistent with Eq. (14), but Eq. (14) itself is wrong in scale.
    See :func:`prop1_score_corrected`.

    i, j: token indices (integers >= 1); d: hidden size (real >= 1). Broadcasts.
    """
    i, j, d = np.broadcast_arrays(index_array("i", i), index_array("j", j), d_array(d))
    t = np.exp(-np.sqrt(d))
    out = np.where(i > j, t / (1.0 + (i - 1) * t), np.nan)
    return scalar_or_array(out)


def sq_norm_eq36(j, alpha, gamma, d):
    """||x_j^(1)||^2 as printed in Eq. (36), with D_j = e^{sqrt d} + e^{alpha sqrt d} (j - 1):

        d [D_j^2 (gamma^2 + 2 alpha gamma + alpha) + D_j (1 - alpha)(2 gamma e^{sqrt d} + e^{alpha sqrt d})
           + (1 - alpha)(e^{2 sqrt d} - e^{sqrt d + alpha sqrt d})] / D_j^2

    Eq. (36) is the correct expansion of Eq. (35), and Eq. (35) of Eq. (33) (Eq. (34) has stray
    factors of d; see the tests). But Eq. (33) writes the residual as gamma y_j, where the model
    adds gamma x_j^(0) = gamma ||x_j^(0)|| y_j / sqrt(d): gamma here stands for what is really
    gamma / sqrt(d (1 - alpha)). At gamma = 0 the formula is the correct LLN limit; for
    gamma != 0 see :func:`sq_norm_corrected`.

    Evaluated as d [(1 - alpha)((gamma + r)^2 + t r (1 - r)) + alpha (1 + gamma)^2] with
    t = e^{-(1 - alpha) sqrt d}, r = 1 / (1 + (j - 1) t): the same expression, rearranged so that
    nothing overflows and nothing cancels. alpha = 1 needs no special case (t = 1, the (1 - alpha)
    terms vanish; the value is d (1 + gamma)^2).

    j: key index (integers >= 1); alpha in [0, 1]; gamma: finite real; d: real >= 1. Broadcasts.
    """
    j, alpha, gamma, d = np.broadcast_arrays(
        index_array("j", j), alpha_array(alpha), gamma_array(gamma), d_array(d)
    )
    q = _q_layer1(j - 1, alpha, gamma, _t(alpha, d))
    return scalar_or_array(d * q)


def h_eq41(j, alpha, gamma, d):
    """h(j) of Eq. (41) as printed, = 1 / sqrt(Eq. (36)) = 1 / ||x_j^(1)||: what Figs. 2 and 5 plot.

        h(j) = D_j / (sqrt(d) sqrt(D_j^2 (gamma^2 + 2 alpha gamma + alpha)
                                    + D_j (1 - alpha)(2 gamma e^{sqrt d} + e^{alpha sqrt d})
                                    + (1 - alpha)(e^{2 sqrt d} - e^{sqrt d + sqrt d alpha})))

    S^(2)_ij = g(i) h(j) for i > j (Eq. (40)). Same caveat as :func:`sq_norm_eq36` for gamma != 0;
    the corrected curve is :func:`h_corrected`.

    j: key index (integers >= 1); alpha in [0, 1]; gamma: finite real; d: real >= 1. Broadcasts.
    """
    return scalar_or_array(1.0 / np.sqrt(np.asarray(sq_norm_eq36(j, alpha, gamma, d))))
