"""The law-of-large-numbers limit of the whole model: the deterministic recursion the paper's proofs
approximate, for any number of layers, norm, alpha and gamma (the reference the closed forms of
:mod:`recency_lib.theory.printed` and :mod:`recency_lib.theory.corrected` are tested against).
"""

from __future__ import annotations

import math

import numpy as np

from ..model import causal_softmax
from ..norms import NORMS
from ..placements import PLACEMENTS, check_pairing
from ..validation import (
    alpha_array,
    bounded_array,
    check_choice,
    check_int,
    d_array,
    gamma_array,
    scalar,
)
from ._common import check_norm


def lln_limit(alpha, gamma, d, n, layers, norm="layernorm", eps=0.0, placement="pre"):
    """Deterministic law-of-large-numbers recursion through ``layers`` layers (Eqs. (1)-(2), (20)),
    with the norm where ``placement`` puts it (:mod:`recency_lib.placements`).

    Every inner product is replaced by its LLN value and the layer is applied to the Gram matrix:

        G^(0) = rho (I + c^2 11^T)          (c^2 = alpha / (1 - alpha); 11^T at alpha = 1)
        per layer:  N   = diag(1 / sqrt(diag(G) / d + eps))   (identity for norm "none")
                    S   = N G N / sqrt(d), masked above the diagonal
                    A   = causal row softmax of S (row max subtracted: finite for any d)
                    M   = A N + gamma I                          (X' = A Y + gamma X = M X)
                    G  <- M G M^T

    rho = (d - 1) / d for LayerNorm (it sees the centred state). Layer 2 reproduces Eq. (5)/(11),
    :func:`prop1_score_corrected` and :func:`score2_corrected`; the O(1) fluctuations of the
    off-diagonal scores are neglected. Elsewhere placed, a norm is again a diagonal N of the LLN
    norms, so X' stays M X; where the raw state reaches the scores, LayerNorm's tokens keep their
    feature means too, with Gram (I + c^2 11^T) / d, which every norm zeroes. Returns a dict with
        "scores":    (layers, n, n) S^(l), NaN above the diagonal
        "attention": (layers, n, n) A^(l), 0 above the diagonal
        "sq_norms":  (layers, n)    ||x_j^(l-1)||^2 of the state fed to layer l (||P x||^2 for LN)
        "gram":      (layers + 1, n, n) Gram matrix of the state fed to each layer, and the output
    """
    norm = check_norm(norm)
    where = PLACEMENTS[check_choice("placement", placement, tuple(PLACEMENTS))]
    alpha = float(alpha_array(scalar("alpha", alpha)))
    gamma = float(gamma_array(scalar("gamma", gamma)))
    d = float(d_array(scalar("d", d), 1.0, strict=NORMS[norm].centres))
    n = check_int("n", n, 1)
    layers = check_int("layers", layers, 1)
    eps = float(
        bounded_array("eps", scalar("eps", eps), lo=0.0, allowed="a finite real number >= 0")
    )

    check_pairing(where.name, norm)
    spec = NORMS[norm]
    rho = spec.sees(d)
    ones = np.ones((n, n))
    sigma = ones if alpha == 1.0 else np.eye(n) + alpha / (1.0 - alpha) * ones
    g = rho * sigma  # (n, n) the part the norm sees
    means = sigma / d if spec.centres else np.zeros((n, n))  # the feature means' Gram (LN)
    sd = math.sqrt(d)
    lower, eye = np.tri(n, dtype=bool), np.eye(n)

    def scale_of(gram):  # (n,) the diagonal N of Norm on a state with this Gram matrix
        out = 1.0 / np.sqrt(np.diag(gram) / d + eps)
        return out * spec.gain(d) if spec.scale_to is not None else out

    scores = np.empty((layers, n, n))
    attention = np.empty((layers, n, n))
    sq_norms = np.empty((layers, n))
    grams = np.empty((layers + 1, n, n))
    for layer in range(layers):
        grams[layer] = g
        sq_norms[layer] = np.diag(g)
        scale = scale_of(g) if spec.scales else np.ones(n)  # (n,) N
        if where.norm_scores:
            s = scale[:, None] * g * scale[None, :] / sd  # (n, n)
        else:
            s = (g + means) / sd
        a = causal_softmax(s)  # (n, n)
        scores[layer] = np.where(lower, s, np.nan)
        attention[layer] = a
        m = a * scale[None, :] if where.norm_values else a  # (n, n) X -> A V
        means_map = a if not where.norm_values else np.zeros((n, n))
        if where.output == "sublayer":
            m = scale_of(m @ g @ m.T)[:, None] * m  # Norm(A V)
            means_map = np.zeros((n, n))
        m, means_map = m + gamma * eye, means_map + gamma * eye  # + gamma X
        if where.output == "sum":
            m = scale_of(m @ g @ m.T)[:, None] * m  # Norm(A V + gamma X)
            means_map = np.zeros((n, n))
        g = m @ g @ m.T
        g = 0.5 * (g + g.T)  # keep it exactly symmetric
        means = means_map @ means @ means_map.T
    grams[layers] = g
    return {"scores": scores, "attention": attention, "sq_norms": sq_norms, "gram": grams}
