"""The paper's closed forms exactly as printed: Theorem 1 (Eqs. (5)/(11)), Proposition 1 (Eqs. (15),
(19)), Propositions 2-3 (Eqs. (36), (41)). Where a printed form slips in scale, its docstring says
so and names the corrected form in :mod:`recency_lib.theory.corrected`."""

from __future__ import annotations

import numpy as np

from ..validation import alpha_array, d_array, gamma_array, index_array
from ._common import _q_layer1, _t, scalar_or_array


def theorem1_score(i, j, d):
    """Second-layer score S^(2)_ij with LayerNorm, alpha = 0, gamma = 0: Eq. (5) = Eq. (11).

        S^(2)_ij = sqrt(d) (e^{sqrt d} + j - 1) / sqrt((e^{2 sqrt d} + i - 1)(e^{2 sqrt d} + j - 1))

    for i > j, sqrt(d) on the diagonal, NaN above: the correct LLN limit (:func:`lln_limit`).
    Evaluated with e^{sqrt d} factored out (t = e^{-sqrt d}); it underflows to 0 past d ~ 5.5e5.
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
    """
    i, j, d = np.broadcast_arrays(index_array("i", i), index_array("j", j), d_array(d))
    t = np.exp(-np.sqrt(d))
    denom = 1.0 + (i - 1) * t  # (e^{sqrt d} + i - 1) / e^{sqrt d}
    out = np.where(i == j, 1.0 / denom, np.where(i > j, t / denom, 0.0))
    return scalar_or_array(out)


def prop1_score(i, j, d):
    """Second-layer score without normalization, Eq. (19) as printed: 1 / (e^{sqrt d} + i - 1) for
    i > j, NaN elsewhere (no diagonal is printed). Eqs. (17)-(18) drop two factors that cancel, but
    it rests on Eq. (14), wrong in scale: see :func:`prop1_score_corrected`."""
    i, j, d = np.broadcast_arrays(index_array("i", i), index_array("j", j), d_array(d))
    t = np.exp(-np.sqrt(d))
    out = np.where(i > j, t / (1.0 + (i - 1) * t), np.nan)
    return scalar_or_array(out)


def sq_norm_eq36(j, alpha, gamma, d):
    """||x_j^(1)||^2 as printed in Eq. (36), with D_j = e^{sqrt d} + e^{alpha sqrt d} (j - 1):

        d [D_j^2 (gamma^2 + 2 alpha gamma + alpha)
           + D_j (1 - alpha)(2 gamma e^{sqrt d} + e^{alpha sqrt d})
           + (1 - alpha)(e^{2 sqrt d} - e^{sqrt d + alpha sqrt d})] / D_j^2

    Right at gamma = 0; but Eq. (33) writes the residual as gamma y_j where the model adds gamma
    ||x_j^(0)|| y_j / sqrt(d) (see :func:`sq_norm_corrected`). Evaluated without overflow or
    cancellation as d [(1 - alpha)((gamma + r)^2 + t r (1 - r)) + alpha (1 + gamma)^2]."""
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
    """
    return scalar_or_array(1.0 / np.sqrt(np.asarray(sq_norm_eq36(j, alpha, gamma, d))))
