"""The law-of-large-numbers limit of the whole model: the deterministic recursion the paper's proofs
approximate, for any number of layers, norm, alpha and gamma (the reference the closed forms of
:mod:`recency_lib.theory.printed` and :mod:`recency_lib.theory.corrected` are tested against).
"""

from __future__ import annotations

import math

import numpy as np

from ..model import causal_softmax
from ..norms import NORMS
from ..validation import alpha_array, bounded_array, check_int, d_array, gamma_array, scalar
from ._common import check_norm


def lln_limit(alpha, gamma, d, n, layers, norm="layernorm", eps=0.0):
    """Deterministic law-of-large-numbers recursion through ``layers`` layers (Eqs. (1)-(2), (20)).

    Every inner product is replaced by its LLN value and the layer is applied to the Gram matrix:

        G^(0) = rho (I + c^2 11^T)          (c^2 = alpha / (1 - alpha); 11^T at alpha = 1)
        per layer:  N   = diag(1 / sqrt(diag(G) / d + eps))   (identity for norm "none")
                    S   = N G N / sqrt(d), masked above the diagonal
                    A   = causal row softmax of S (row max subtracted: finite for any d)
                    M   = A N + gamma I                          (X' = A Y + gamma X = M X)
                    G  <- M G M^T

    rho = (d - 1) / d for LayerNorm (it sees the centred state). Layer 2 reproduces Eq. (5)/(11),
    :func:`prop1_score_corrected` and :func:`score2_corrected`; the O(1) fluctuations of the
    off-diagonal scores are neglected. Returns a dict with
        "scores":    (layers, n, n) S^(l), NaN above the diagonal
        "attention": (layers, n, n) A^(l), 0 above the diagonal
        "sq_norms":  (layers, n)    ||x_j^(l-1)||^2 of the state fed to layer l (||P x||^2 for LN)
        "gram":      (layers + 1, n, n) Gram matrix of the state fed to each layer, and the output
    """
    norm = check_norm(norm)
    alpha = float(alpha_array(scalar("alpha", alpha)))
    gamma = float(gamma_array(scalar("gamma", gamma)))
    d = float(d_array(scalar("d", d), 1.0, strict=NORMS[norm].centres))
    n = check_int("n", n, 1)
    layers = check_int("layers", layers, 1)
    eps = float(
        bounded_array("eps", scalar("eps", eps), lo=0.0, allowed="a finite real number >= 0")
    )

    rho = NORMS[norm].sees(d)
    ones = np.ones((n, n))
    g = rho * (ones if alpha == 1.0 else np.eye(n) + alpha / (1.0 - alpha) * ones)  # (n, n)
    sd = math.sqrt(d)
    lower = np.tri(n, dtype=bool)

    scores = np.empty((layers, n, n))
    attention = np.empty((layers, n, n))
    sq_norms = np.empty((layers, n))
    grams = np.empty((layers + 1, n, n))
    for layer in range(layers):
        grams[layer] = g
        sq = np.diag(g).copy()  # (n,)
        sq_norms[layer] = sq
        spec = NORMS[norm]
        scale = np.ones(n) if not spec.scales else 1.0 / np.sqrt(sq / d + eps)  # (n,) N
        if spec.scale_to is not None:
            scale = scale * spec.gain(d)
        s = scale[:, None] * g * scale[None, :] / sd  # (n, n)
        a = causal_softmax(s)  # (n, n)
        scores[layer] = np.where(lower, s, np.nan)
        attention[layer] = a
        m = a * scale[None, :] + gamma * np.eye(n)  # (n, n)  A N + gamma I
        g = m @ g @ m.T
        g = 0.5 * (g + g.T)  # keep it exactly symmetric
    grams[layers] = g
    return {"scores": scores, "attention": attention, "sq_norms": sq_norms, "gram": grams}
