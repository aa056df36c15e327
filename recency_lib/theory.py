"""Closed forms of the paper's Appendix A, as printed and as corrected, plus a general reference.

Paper: "LayerNorm Induces Recency Bias in Transformer Decoders" (Kim et al.). Equation numbers
below are the paper's. Indices i (query) and j (key) are 1-based, as in the paper.

The model (Eqs. (1)-(2), (6), (20)-(21)): tokens x_i = eps_i + c v with eps_i, v ~ N(0, I_d / d)
and c^2 = alpha / (1 - alpha); one layer is

    Y = Norm(X);  S = Causal(Y Y^T / sqrt(d));  A = Softmax(S) row-wise;  X' = A Y + gamma X.

The paper's proofs replace every inner product by its law-of-large-numbers (LLN) value. Done
consistently this gives, for the input Gram matrix, <x_i, x_j> -> delta_ij + c^2, so
||x_i||^2 -> 1 / (1 - alpha) and, after normalization to squared norm d,
<y_i, y_i> = d and <y_i, y_j> = d alpha (i != j).

Three groups of functions:

* ``*_eq<N>`` / ``theorem1_score`` / ``prop1_*``: the printed formulas, unchanged.
* ``*_corrected`` / ``score2_corrected``: the same quantities derived carefully under the same
  LLN assumptions. They differ from the printed ones where the paper slips in scale:
  Eq. (14) (<x_i, x_i> is 1, not sqrt(d)) and Eqs. (25)/(26)/(33) (the residual adds
  gamma x_j^(0) = gamma ||x_j^(0)|| y_j / sqrt(d), not gamma y_j).
* :func:`lln_limit`: the LLN recursion itself, any number of layers, any norm, alpha, gamma.
  It is the reference the closed forms are tested against.

What the LLN leaves out (true of the printed and the corrected forms alike): an off-diagonal
score <y_i, y_j> / sqrt(d) is sqrt(d) alpha plus a fluctuation of order 1 that does NOT vanish
as d grows (only its size relative to sqrt(d) does). Inside the softmax it multiplies the weight
by a random factor e^Z. So these forms are the leading-order, deterministic skeleton of the
simulation, not its exact mean at finite d.

Numerics: wherever e^{sqrt(d)} appears we factor it out and work with
t = e^{-(1 - alpha) sqrt(d)} in (0, 1] and r_j = 1 / (1 + (j - 1) t) in (0, 1] (log-space in
effect: the huge exponential is never formed). Every function is finite for d up to 1e6 and
beyond; values whose true size is below ~1e-308 underflow to 0, which is their correct
rounding. All functions broadcast over their array arguments (numpy rules).
"""
from __future__ import annotations

import math

import numpy as np

from .validation import (alpha_array, check_choice, check_int, d_array, first_bad, gamma_array,
                         index_array, real_array, scalar)

NORMS = ("layernorm", "rms", "none")


# -- input validation (recency_lib.validation) ---------------------------------------------------

_check_index = index_array
_check_d = d_array
_check_alpha = alpha_array
_check_gamma = gamma_array
_scalar = scalar


def _check_norm(norm, allowed=NORMS) -> str:
    return check_choice("norm", norm, allowed)


def _scalar_or_array(x: np.ndarray):
    """0-d results come back as numpy scalars, others as arrays."""
    return x[()] if x.ndim == 0 else x


# -- shared pieces of the layer-1 algebra ----------------------------------------------------------

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
    rho = (d - 1.0) / d if norm == "layernorm" else 1.0
    sq0 = 1.0 / np.where(alpha < 1.0, 1.0 - alpha, 1.0)           # ||x_j^(0)||^2 / rho
    return gamma * np.sqrt(rho * sq0 / d)


# -- Theorem 1 -----------------------------------------------------------------------------------

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
    i, j, d = np.broadcast_arrays(_check_index("i", i), _check_index("j", j), _check_d(d))
    t = np.exp(-np.sqrt(d))
    t2 = t * t
    off = np.sqrt(d) * t * (1.0 + (j - 1) * t) / np.sqrt((1.0 + (i - 1) * t2) * (1.0 + (j - 1) * t2))
    out = np.where(i > j, off, np.where(i == j, np.sqrt(d), np.nan))
    return _scalar_or_array(out)


# -- Proposition 1 (no normalization): as printed ------------------------------------------------

def prop1_attention(i, j, d):
    """First-layer attention without normalization, Eq. (15) as printed.

        A^(1)_ii = e^{sqrt d} / (e^{sqrt d} + i - 1),  A^(1)_ij = 1 / (e^{sqrt d} + i - 1) (i > j),
        0 (i < j).

    It rests on Eq. (14), <x_i, x_i> = sqrt(d), which is wrong in scale: with
    x ~ N(0, I_d / d), <x_i, x_i> -> 1. See :func:`prop1_attention_corrected`.

    i, j: token indices (integers >= 1); d: hidden size (real >= 1). Broadcasts.
    """
    i, j, d = np.broadcast_arrays(_check_index("i", i), _check_index("j", j), _check_d(d))
    t = np.exp(-np.sqrt(d))
    denom = 1.0 + (i - 1) * t                 # (e^{sqrt d} + i - 1) / e^{sqrt d}
    out = np.where(i == j, 1.0 / denom, np.where(i > j, t / denom, 0.0))
    return _scalar_or_array(out)


def prop1_score(i, j, d):
    """Second-layer score without normalization, Eq. (19) as printed: 1 / (e^{sqrt d} + i - 1), i > j.

    NaN on and above the diagonal: the paper prints no diagonal value. (Under its own Eq. (14)
    the diagonal would be (e^{2 sqrt d} + i - 1) / (e^{sqrt d} + i - 1)^2.) Eq. (17) drops the
    1/sqrt(d) of the scores and Eq. (18) drops the factor <x_k, x_k> = sqrt(d) of Eq. (14); the two
    slips cancel, so Eq. (19) is consistent with Eq. (14), but Eq. (14) itself is wrong in scale.
    See :func:`prop1_score_corrected`.

    i, j: token indices (integers >= 1); d: hidden size (real >= 1). Broadcasts.
    """
    i, j, d = np.broadcast_arrays(_check_index("i", i), _check_index("j", j), _check_d(d))
    t = np.exp(-np.sqrt(d))
    out = np.where(i > j, t / (1.0 + (i - 1) * t), np.nan)
    return _scalar_or_array(out)


# -- Proposition 1: corrected --------------------------------------------------------------------

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

    i, j: token indices (integers >= 1); d: hidden size (real >= 1); alpha in [0, 1]. Broadcasts.
    """
    i, j, d, alpha = np.broadcast_arrays(_check_index("i", i), _check_index("j", j), _check_d(d),
                                         _check_alpha(alpha))
    u, _ = _prop1_gram(alpha)
    a = np.exp(u / np.sqrt(d))
    denom = a + i - 1
    out = np.where(i == j, a / denom, np.where(i > j, 1.0 / denom, 0.0))
    return _scalar_or_array(out)


def prop1_score_corrected(i, j, d, alpha=0.0):
    """Second-layer score without normalization, Eqs. (16)-(19) redone with the corrected Eq. (14).

    x^(1) = A^(1) x^(0) with the attention of :func:`prop1_attention_corrected`
    (a = e^{u / sqrt d}); the rows of A^(1) sum to 1, so with <x_k, x_l> -> u delta_kl + w:

        S^(2)_ij = (u / (a + i - 1) + w) / sqrt(d)                       (i > j)
        S^(2)_ii = (u (a^2 + i - 1) / (a + i - 1)^2 + w) / sqrt(d)        (diagonal)

    NaN above the diagonal. Still constant in j for i > j (Prop. 1's conclusion stands: no
    recency bias), but of size ~1 / (sqrt(d) i), not the printed 1 / (e^{sqrt d} + i - 1).

    i, j: token indices (integers >= 1); d: hidden size (real >= 1); alpha in [0, 1]. Broadcasts.
    """
    i, j, d, alpha = np.broadcast_arrays(_check_index("i", i), _check_index("j", j), _check_d(d),
                                         _check_alpha(alpha))
    u, w = _prop1_gram(alpha)
    sd = np.sqrt(d)
    a = np.exp(u / sd)
    off = (u / (a + i - 1) + w) / sd
    diag = (u * (a * a + i - 1) / (a + i - 1) ** 2 + w) / sd
    out = np.where(i > j, off, np.where(i == j, diag, np.nan))
    return _scalar_or_array(out)


# -- Propositions 2 and 3: Eq. (36) / (41) as printed ---------------------------------------------

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
    j, alpha, gamma, d = np.broadcast_arrays(_check_index("j", j), _check_alpha(alpha),
                                             _check_gamma(gamma), _check_d(d))
    q = _q_layer1(j - 1, alpha, gamma, _t(alpha, d))
    return _scalar_or_array(d * q)


def h_eq41(j, alpha, gamma, d):
    """h(j) of Eq. (41) as printed, = 1 / sqrt(Eq. (36)) = 1 / ||x_j^(1)||: what Figs. 2 and 5 plot.

        h(j) = D_j / (sqrt(d) sqrt(D_j^2 (gamma^2 + 2 alpha gamma + alpha)
                                    + D_j (1 - alpha)(2 gamma e^{sqrt d} + e^{alpha sqrt d})
                                    + (1 - alpha)(e^{2 sqrt d} - e^{sqrt d + sqrt d alpha})))

    S^(2)_ij = g(i) h(j) for i > j (Eq. (40)). Same caveat as :func:`sq_norm_eq36` for gamma != 0;
    the corrected curve is :func:`h_corrected`.

    j: key index (integers >= 1); alpha in [0, 1]; gamma: finite real; d: real >= 1. Broadcasts.
    """
    return _scalar_or_array(1.0 / np.sqrt(np.asarray(sq_norm_eq36(j, alpha, gamma, d))))


# -- Propositions 2 and 3: corrected --------------------------------------------------------------

def sq_norm_corrected(j, alpha, gamma, d, norm="layernorm"):
    """||x_j^(1)||^2 (the state fed to layer 2) in the LLN limit: Eq. (36) with the residual fixed.

    The residual adds gamma x_j^(0) = g y_j with g = gamma sqrt(rho / (d (1 - alpha)))
    (rho = (d - 1) / d for LayerNorm, whose input is the centred state; 1 for "rms"; at alpha = 1
    tokens equal v and g = gamma sqrt(rho / d)). Then ||x_j^(1)||^2 is Eq. (36) with gamma -> g:

        d [(1 - alpha)((g + r)^2 + t r (1 - r)) + alpha (1 + g)^2],
        t = e^{-(1 - alpha) sqrt d},  r = 1 / (1 + (j - 1) t).

    For LayerNorm this is ||P x_j^(1)||^2, what the next LayerNorm sees (P removes the feature
    mean). Equals ``lln_limit(...)["sq_norms"][1]``.

    j: key index (integers >= 1); alpha in [0, 1]; gamma: finite real; d: real >= 1 (> 1 for
    LayerNorm); norm: "layernorm" or "rms". Broadcasts.
    """
    norm = _check_norm(norm, ("layernorm", "rms"))
    j, alpha, gamma = _check_index("j", j), _check_alpha(alpha), _check_gamma(gamma)
    d = _check_d(d, 1.0, strict=(norm == "layernorm"))
    j, alpha, gamma, d = np.broadcast_arrays(j, alpha, gamma, d)
    g = _residual_coefficient(alpha, gamma, d, norm)
    q = _q_layer1(j - 1, alpha, g, _t(alpha, d))
    return _scalar_or_array(d * q)


def h_corrected(j, alpha, gamma, d, norm="layernorm"):
    """Corrected h(j) = 1 / ||x_j^(1)|| (Eq. (40)'s key factor), from :func:`sq_norm_corrected`.

    Same as :func:`h_eq41` at gamma = 0 (up to LayerNorm's (d - 1)/d, which only enters through
    the residual). For gamma != 0 the residual's weight is gamma sqrt(rho / (d (1 - alpha))), not
    gamma, so at d = 64 the residual flattens h(j) far less than Eq. (41) says.

    j: key index (integers >= 1); alpha in [0, 1]; gamma: finite real; d: real >= 1 (> 1 for
    LayerNorm); norm: "layernorm" or "rms". Broadcasts.
    """
    return _scalar_or_array(1.0 / np.sqrt(np.asarray(sq_norm_corrected(j, alpha, gamma, d, norm))))


def _score2_inputs(i, j, alpha, gamma, d, norm):
    """Validated, broadcast inputs of the layer-2 score forms, with the residual weight g and t."""
    norm = _check_norm(norm, ("layernorm", "rms"))
    i, j = _check_index("i", i), _check_index("j", j)
    alpha, gamma = _check_alpha(alpha), _check_gamma(gamma)
    d = _check_d(d, 1.0, strict=(norm == "layernorm"))
    i, j, alpha, gamma, d = np.broadcast_arrays(i, j, alpha, gamma, d)
    return i, j, alpha, gamma, d, _residual_coefficient(alpha, gamma, d, norm), _t(alpha, d)


def score2_corrected(i, j, alpha, gamma, d, norm="layernorm"):
    """Second-layer score S^(2)_ij for any alpha, gamma in the LLN limit (corrected Eqs. (28)-(32), (40)).

    With the layer-1 weights of Eqs. (25)-(26) and the residual weight g of
    :func:`sq_norm_corrected`, the inner product (i > j) does not depend on j (as Eq. (32) says):

        <x_i^(1), x_j^(1)> / d = (1 + g) [(1 - alpha) t r_i + alpha (1 + g)],

    and S^(2)_ij = sqrt(d) <x_i, x_j> / (||x_i|| ||x_j||) = g(i) h(j) (Eq. (40)). sqrt(d) on the
    diagonal, NaN above it. At alpha = gamma = 0 this is Eq. (11).

    i, j: token indices (integers >= 1); alpha in [0, 1]; gamma: finite real; d: real >= 1
    (> 1 for LayerNorm); norm: "layernorm" or "rms". Broadcasts.
    """
    i, j, alpha, gamma, d, g, t = _score2_inputs(i, j, alpha, gamma, d, norm)
    inner = (1.0 + g) * ((1.0 - alpha) * t * _r(i - 1, t) + alpha * (1.0 + g))
    q_i, q_j = _q_layer1(i - 1, alpha, g, t), _q_layer1(j - 1, alpha, g, t)
    off = np.sqrt(d) * inner / np.sqrt(q_i * q_j)
    out = np.where(i > j, off, np.where(i == j, np.sqrt(d), np.nan))
    return _scalar_or_array(out)


# -- general LLN reference -----------------------------------------------------------------------

def _causal_softmax(s: np.ndarray) -> np.ndarray:
    """Row softmax over keys j <= i, shifted by the row max (finite for any d); (n, n)."""
    n = s.shape[-1]
    z = np.where(np.tri(n, dtype=bool), s, -np.inf)
    z = z - z.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def lln_limit(alpha, gamma, d, n, layers, norm="layernorm", eps=0.0):
    """Deterministic law-of-large-numbers recursion through ``layers`` layers (Eqs. (1)-(2), (20)).

    Every inner product is replaced by its LLN value and the layer is applied to the Gram matrix:

        G^(0) = rho (I + c^2 11^T)          (c^2 = alpha / (1 - alpha); 11^T at alpha = 1)
        per layer:  N   = diag(1 / sqrt(diag(G) / d + eps))   (identity for norm "none")
                    S   = N G N / sqrt(d), masked above the diagonal
                    A   = causal row softmax of S (row max subtracted: finite for any d)
                    M   = A N + gamma I                          (X' = A Y + gamma X = M X)
                    G  <- M G M^T

    rho = (d - 1) / d for "layernorm", else 1. LayerNorm sees the centred state P x; the
    centring removes the feature mean, an O(1/d) part of ||x||^2, so in the limit LayerNorm is the
    RMS map sqrt(d) x / ||x|| of Eq. (21). The recursion tracks the centred Gram exactly in
    expectation (Y is centred, so P x' = A Y + gamma P x), which is where rho comes from; it only
    matters through the residual and eps.

    It is the consistent version of the paper's approximations: layer 2 reproduces Eq. (5)/(11)
    (LayerNorm, alpha = gamma = 0), :func:`prop1_score_corrected` (norm "none", gamma = 0) and
    :func:`sq_norm_corrected` / :func:`score2_corrected` (any alpha, gamma). It neglects the O(1)
    fluctuations of the off-diagonal scores (see the module docstring).

    Args:
        alpha: anisotropy in [0, 1] (Eq. (6)); alpha = 1 means every token equals v.
        gamma: residual weight (finite real; Eq. (20)).
        d: hidden size, real >= 1 (> 1 for LayerNorm, whose centring zeroes a single feature).
        n: tokens, integer >= 1.  layers: integer >= 1.
        norm: "layernorm", "rms" or "none".  eps: >= 0, added to the mean square (as in LayerNorm).

    Returns dict with
        "scores":    (layers, n, n) S^(l), NaN above the diagonal
        "attention": (layers, n, n) A^(l), 0 above the diagonal
        "sq_norms":  (layers, n)    ||x_j^(l-1)||^2 of the state fed to layer l (||P x||^2 for LN)
        "gram":      (layers + 1, n, n) Gram matrix of the state fed to each layer, and the output
    """
    norm = _check_norm(norm)
    alpha = float(_check_alpha(_scalar("alpha", alpha)))
    gamma = float(_check_gamma(_scalar("gamma", gamma)))
    d = float(_check_d(_scalar("d", d), 1.0, strict=(norm == "layernorm")))
    n = check_int("n", n, 1)
    layers = check_int("layers", layers, 1)
    eps = float(real_array("eps", _scalar("eps", eps)))
    if not (math.isfinite(eps) and eps >= 0):
        raise ValueError(f"eps={eps!r} is out of range; allowed: a finite real number >= 0")

    rho = (d - 1.0) / d if norm == "layernorm" else 1.0
    ones = np.ones((n, n))
    g = rho * (ones if alpha == 1.0 else np.eye(n) + alpha / (1.0 - alpha) * ones)   # (n, n)
    sd = math.sqrt(d)
    lower = np.tri(n, dtype=bool)

    scores = np.empty((layers, n, n))
    attention = np.empty((layers, n, n))
    sq_norms = np.empty((layers, n))
    grams = np.empty((layers + 1, n, n))
    for layer in range(layers):
        grams[layer] = g
        sq = np.diag(g).copy()                                     # (n,)
        sq_norms[layer] = sq
        scale = np.ones(n) if norm == "none" else 1.0 / np.sqrt(sq / d + eps)   # (n,) N
        s = scale[:, None] * g * scale[None, :] / sd               # (n, n)
        a = _causal_softmax(s)                                     # (n, n)
        scores[layer] = np.where(lower, s, np.nan)
        attention[layer] = a
        m = a * scale[None, :] + gamma * np.eye(n)                 # (n, n)  A N + gamma I
        g = m @ g @ m.T
        g = 0.5 * (g + g.T)                                        # keep it exactly symmetric
    grams[layers] = g
    return {"scores": scores, "attention": attention, "sq_norms": sq_norms, "gram": grams}


# -- symbolic helper (sympy imported lazily) ---------------------------------------------------------

def symbolic_layer1_gram(n: int, residual: bool = True):
    """Gram matrix of x^(1) divided by d, symbolically, under the paper's LLN assumptions.

    Assumes <y_k, y_k> = d and <y_k, y_l> = d alpha (k != l) (Eq. (23) with its scale fixed),
    layer-1 weights A_jj = a / D_j, A_jk = b / D_j (k < j), D_j = a + (j - 1) b (Eqs. (25)-(26);
    a = e^{sqrt d}, b = e^{alpha sqrt d}), and x_j^(1) = sum_k A_jk y_k + g y_j (g = 0 without
    residual). Used by the tests to check Eqs. (9)-(10), (28)-(36) term by term.

    Returns (G, symbols) with G an (n, n) sympy Matrix and symbols a dict of the sympy symbols
    "a", "b", "alpha", "g".
    """
    import sympy as sp

    n = check_int("n", n, 1)
    a, b, alpha, g = sp.symbols("a b alpha g", positive=True)
    gg = g if residual else sp.Integer(0)
    c = sp.zeros(n, n)                                             # x^(1) = C Y
    for row in range(n):
        denom = a + row * b
        for col in range(row):
            c[row, col] = b / denom
        c[row, row] = a / denom + gg
    gram_y = (1 - alpha) * sp.eye(n) + alpha * sp.ones(n, n)       # <y_k, y_l> / d
    return c * gram_y * c.T, {"a": a, "b": b, "alpha": alpha, "g": g}


# -- Appendix A checks: exact first-token norm, fluctuation factor of the LLN (book page appendix_a) --

def residual_coefficient(alpha, gamma, d, norm="layernorm"):
    """Weight g of y_j in the residual term, gamma x_j^(0) = g y_j^(1), in the LLN limit.

    Corrects Eqs. (25)/(26)/(33), which print it as sqrt(d) gamma ||x_j||, d gamma and gamma:
    y = sqrt(d) x / ||x|| gives g = gamma ||x_j^(0)|| / sqrt(d) = gamma sqrt(rho / (d (1 - alpha)))
    (rho = (d - 1) / d for LayerNorm, else 1; gamma sqrt(rho / d) at alpha = 1). This is the g
    used by :func:`sq_norm_corrected` and :func:`score2_corrected`.

    alpha in [0, 1]; gamma: finite real; d: real >= 1 (> 1 for LayerNorm); norm: "layernorm" or
    "rms". Broadcasts.
    """
    norm = _check_norm(norm, ("layernorm", "rms"))
    alpha, gamma = _check_alpha(alpha), _check_gamma(gamma)
    d = _check_d(d, 1.0, strict=(norm == "layernorm"))
    alpha, gamma, d = np.broadcast_arrays(alpha, gamma, d)
    return _scalar_or_array(_residual_coefficient(alpha, gamma, d, norm))


def sq_norm_first_token_exact(alpha, gamma, d, norm="layernorm"):
    """E ||x_1^(1)||^2 at finite d, EXACTLY (no law of large numbers; eps of the norm neglected).

    The first token attends only to itself (A_11 = 1), so x_1^(1) = y_1 + gamma x_1^(0) and what
    the next normalization sees is P x_1^(1) = y_1 + gamma P x_1 (P = centring for LayerNorm,
    identity otherwise). With y_1 = sqrt(d) P x_1 / ||P x_1||:

        ||P x_1^(1)||^2 = (sqrt(d) + gamma ||P x_1||)^2,
        E = d + 2 gamma sqrt(d) E||P x_1|| + gamma^2 E||P x_1||^2.

    Each token of Eq. (6) is N(0, s^2 I_d) with s^2 = 1 / (d (1 - alpha)) (s^2 = 1/d at
    alpha = 1, where the token is v), so ||P x_1||^2 = s^2 chi^2_k with k = d - 1 (LayerNorm) or
    d, and E||P x_1|| = s sqrt(2) Gamma((k + 1)/2) / Gamma(k/2). For norm "none" there is no y:
    x_1^(1) = (1 + gamma) x_1 and E = (1 + gamma)^2 d s^2.

    This isolates the residual coefficient of Eqs. (25)/(26)/(33) from every approximation: in the
    LLN it is d (1 + g)^2 with g = :func:`residual_coefficient`; the printed coefficients give
    d (1 + kappa)^2 with kappa = sqrt(d) gamma ||x||, d gamma or gamma.

    alpha in [0, 1]; gamma: finite real; d: real >= 2; norm: "layernorm", "rms" or "none".
    Broadcasts.
    """
    norm = _check_norm(norm)
    alpha, gamma, d = _check_alpha(alpha), _check_gamma(gamma), _check_d(d, 2.0)
    alpha, gamma, d = np.broadcast_arrays(alpha, gamma, d)
    s2 = 1.0 / (d * np.where(alpha < 1.0, 1.0 - alpha, 1.0))
    if norm == "none":
        return _scalar_or_array((1.0 + gamma) ** 2 * d * s2)
    from scipy.special import gammaln

    k = d - 1.0 if norm == "layernorm" else d
    mean_norm = np.sqrt(2.0 * s2) * np.exp(gammaln((k + 1.0) / 2.0) - gammaln(k / 2.0))
    return _scalar_or_array(d + 2.0 * gamma * np.sqrt(d) * mean_norm + gamma ** 2 * k * s2)


def drop_ratio_first_order(d, norm="layernorm"):
    """Simulated / LLN size of the drop ||x_1^(1)||^2 - ||x_j^(1)||^2 at alpha = gamma = 0, to first order.

    The LLN (Eqs. (9)-(10)) sets the off-diagonal layer-1 scores Z_jk = <y_j, y_k> / sqrt(d) to 0.
    They are not small: Z = sqrt(d) u with u the cosine of two independent uniform directions in
    m = d - 1 (LayerNorm) or d dimensions, so Z -> N(0, 1) and does not shrink with d. To first order
    in the off-diagonal weights w_k = e^{Z_jk - sqrt d},

        E ||x_j||^2 = d - 2 sum_k E[w_k (d - sqrt(d) Z_jk)],

    so the drop is 2 (j - 1) d e^{-sqrt d} R(d) with

        R(d) = E[e^Z] - E[Z e^Z] / sqrt(d) = 0F1(; m/2; d/4) - (sqrt(d) / m) 0F1(; m/2 + 1; d/4),

    (E[e^{t u}] = 0F1(; m/2; t^2/4) is the moment generating function of u) while the LLN drop is
    2 (j - 1) d e^{-sqrt d} (R = 1). R(d) -> e^{1/2} (1 - 1/sqrt(d)) -> e^{1/2}: the relative error
    of the LLN's j-dependence does NOT vanish as d grows. Neglected: terms of second order in
    (j - 1) e^{-sqrt d}, relative size ~ (j - 1) e^{2 - sqrt d} (small for d >= 64).

    d: real >= 3 (>= 4 for LayerNorm); norm: "layernorm" or "rms". Broadcasts.
    """
    norm = _check_norm(norm, ("layernorm", "rms"))
    d = _check_d(d, 4.0 if norm == "layernorm" else 3.0)
    from scipy.special import hyp0f1

    m = d - 1.0 if norm == "layernorm" else d
    return _scalar_or_array(hyp0f1(m / 2.0, d / 4.0) - np.sqrt(d) / m * hyp0f1(m / 2.0 + 1.0, d / 4.0))


def drop_ratio_gaussian(alpha, d):
    """Gaussian approximation of the same ratio for any alpha < 1 (see :func:`drop_ratio_first_order`).

    With S_jk = sqrt(d) alpha + xi (Eq. (23) corrected), first order in the off-diagonal weights
    gives E[drop] / LLN drop = E[e^xi] - E[xi e^xi] / (sqrt(d) (1 - alpha)). Approximating xi by
    N(0, sigma^2), sigma^2 = (1 - alpha^2)^2 (the large-d variance of sqrt(d) times a sample
    correlation coefficient with true correlation alpha):

        R(alpha, d) = e^{sigma^2 / 2} (1 - sigma^2 / (sqrt(d) (1 - alpha)))  ->  e^{(1 - alpha^2)^2 / 2}.

    d = inf gives the limit. An approximation (the O(1/sqrt(d)) bias of xi and higher orders in
    e^{-(1 - alpha) sqrt d} are neglected); the simulation is the reference.

    alpha in [0, 1); d: real >= 1 or inf. Broadcasts.
    """
    alpha = _check_alpha(alpha)
    if np.any(alpha >= 1.0):
        raise ValueError(f"alpha={first_bad(alpha, alpha >= 1.0)!r} is out of range; allowed: real numbers in [0, 1)")
    d = real_array("d", d)
    bad = np.isnan(d) | (d < 1) | (d == -np.inf)
    if np.any(bad):
        raise ValueError(f"d={first_bad(d, bad)!r} is out of range; allowed: real numbers >= 1, or inf")
    alpha, d = np.broadcast_arrays(alpha, d)
    s2 = (1.0 - alpha ** 2) ** 2
    return _scalar_or_array(np.exp(s2 / 2.0) * (1.0 - s2 / (np.sqrt(d) * (1.0 - alpha))))


def score2_step_corrected(i, j, alpha, gamma, d, norm="layernorm"):
    """Adjacent difference S^(2)_ij - S^(2)_i,j-1 of :func:`score2_corrected`, without cancellation.

    The smallest of these steps is the recency effect that Definition 1 needs to resolve. Taking
    the difference of two :func:`score2_corrected` values loses every digit once the step is below
    ~1e-16 of the score (d >~ 1500 at alpha = 0); here it is computed from

        S_ij = sqrt(d) inner_i / sqrt(q_i q_j)   (i > j; inner_i = <x_i, x_j> / d, free of j, Eq. (32))
        q_{j-1} - q_j = (1 - alpha) t r_j r_{j-1} [2 g + t + (1 - t)(r_j + r_{j-1})]   (all terms >= 0)

    (q = ||x^(1)||^2 / d, t and r as in :func:`sq_norm_corrected`), so for 2 <= j < i

        S_ij - S_i,j-1 = sqrt(d) inner_i / sqrt(q_i) * (q_{j-1} - q_j) / (sqrt(q_j q_{j-1}) (sqrt(q_j) + sqrt(q_{j-1}))),

    and for j = i the diagonal step sqrt(d) - S_i,i-1 (no cancellation: S_ii = sqrt(d) dominates).
    NaN for j < 2 or j > i. Positive for alpha < 1, gamma >= 0 (Eqs. (37)-(39)).

    i, j: token indices (integers >= 1); alpha in [0, 1]; gamma: finite real; d: real >= 1 (> 1 for
    LayerNorm); norm: "layernorm" or "rms". Broadcasts.
    """
    i, j, alpha, gamma, d, g, t = _score2_inputs(i, j, alpha, gamma, d, norm)
    one_minus_t = -np.expm1(-(1.0 - alpha) * np.sqrt(d))
    inner = (1.0 + g) * ((1.0 - alpha) * t * _r(i - 1, t) + alpha * (1.0 + g))
    q_i = _q_layer1(i - 1, alpha, g, t)
    jm = np.maximum(j, 2.0)                               # keep the formula finite where it is masked
    q_j, q_p = _q_layer1(jm - 1, alpha, g, t), _q_layer1(jm - 2, alpha, g, t)
    r_j, r_p = _r(jm - 1, t), _r(jm - 2, t)
    dq = (1.0 - alpha) * t * r_j * r_p * (2.0 * g + t + one_minus_t * (r_j + r_p))
    sd = np.sqrt(d)
    off = sd * inner / np.sqrt(q_i) * dq / (np.sqrt(q_j * q_p) * (np.sqrt(q_j) + np.sqrt(q_p)))
    diag = sd - sd * inner / np.sqrt(q_i * q_p)
    out = np.where((j >= 2) & (j < i), off, np.where((j >= 2) & (j == i), diag, np.nan))
    return _scalar_or_array(out)
