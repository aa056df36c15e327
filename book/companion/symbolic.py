"""Symbolic (sympy) checks of the algebra in the paper's Appendix A, one claim per check.

Each check function returns a :class:`Check`: which equations, the claim in words, how it was
checked, and ``holds`` (True/False, computed by sympy when the function runs). A claim about a
printed equation is phrased as "the printed form is right", so a typo shows up as ``False`` and
the corrected form next to it as ``True``. Nothing is hard-coded: the book page
(``book/appendix_a.ipynb``) shows the verdicts live, and ``tests/book/test_appendix_checks.py`` pins
them, so a regression in :mod:`recency_lib.theory` or here fails CI.

Notation (the paper's, 1-based indices, i = query, j = key):

* a = e^{sqrt d}, b = e^{alpha sqrt d}: the layer-1 softmax weights of the diagonal and of an
  off-diagonal key under the law of large numbers (LLN), D_j = a + (j - 1) b (Eqs. (25)-(26));
* <y_k, y_l> = d ((1 - alpha) delta_kl + alpha): the LLN Gram matrix of the normalized tokens
  (Eq. (23) with its scale fixed); alpha = 0 in Theorem 1;
* g: the weight of y_j in the residual term (printed as sqrt(d) gamma ||x||, d gamma, gamma;
  correctly gamma ||x_j^(0)|| / sqrt(d), see :func:`recency_lib.theory.residual_coefficient`).

"Equal" means ``sympy.cancel(lhs - rhs) == 0`` for rational expressions in the positive symbols
(a, b, d, alpha, g, ...), checked for every pair i > j up to n = 5 tokens where the equation is
indexed; identities in a symbolic index are stated as such. Checks that tie a closed form in
:mod:`recency_lib.theory` to the derivation evaluate both at several points to 30 digits; checks
of a scale (Eqs. (17), (22), (40)) also hold the formula against the simulator itself
(:func:`recency_lib.model.layer`, :func:`recency_lib.sampling.sigma_cholesky`), so they fail if
either side is wrong.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import sympy as sp

from recency_lib.model import layer
from recency_lib.sampling import sigma_cholesky
from recency_lib.theory import (
    h_eq41,
    prop1_attention_corrected,
    prop1_score_corrected,
    residual_coefficient,
    sq_norm_corrected,
    sq_norm_eq36,
    theorem1_score,
)
from recency_lib.validation import check_int

N_TOKENS = 5  # sequence length of the symbolic checks (identities are checked for all i > j <= 5)
NUM_RTOL = (
    1e-12  # float64 closed form vs 30-digit sympy value (the closed forms are good to ~1e-13)
)


@dataclass(frozen=True)
class Check:
    key: str  # short id, e.g. "eq7-printed"
    section: str  # "A.1" (Theorem 1), "A.2" (Proposition 1), "A.3" (Propositions 2 and 3)
    equations: str  # the paper's equation numbers, e.g. "(7)"
    claim: str  # what is claimed (True = the claim holds)
    method: str  # how it was checked
    holds: bool  # the verdict, computed when the check ran

    def as_row(self) -> dict:
        return {
            "key": self.key,
            "section": self.section,
            "equations": self.equations,
            "claim": self.claim,
            "method": self.method,
            "holds": self.holds,
        }


def _zero(expr) -> bool:
    return sp.cancel(sp.together(expr)) == 0


def _all_zero(exprs) -> bool:
    return all(_zero(e) for e in exprs)


@lru_cache(maxsize=1)
def _sym():
    a, b, d, alpha, g = sp.symbols("a b d alpha g", positive=True)
    return a, b, d, alpha, g


def _pairs(n=N_TOKENS):
    """(i, j) with n >= i > j >= 1 (1-based)."""
    return [(i, j) for i in range(2, n + 1) for j in range(1, i)]


# -- the LLN Gram matrix of layer 1, symbolically ----------------------------------------------------


def symbolic_layer1_gram(n: int, residual: bool = True):
    """Gram matrix of x^(1) divided by d, symbolically, under the paper's LLN assumptions.

    Assumes <y_k, y_k> = d and <y_k, y_l> = d alpha (k != l) (Eq. (23) with its scale fixed),
    layer-1 weights A_jj = a / D_j, A_jk = b / D_j (k < j), D_j = a + (j - 1) b (Eqs. (25)-(26);
    a = e^{sqrt d}, b = e^{alpha sqrt d}), and x_j^(1) = sum_k A_jk y_k + g y_j (g = 0 without
    residual). The checks below use it for Eqs. (9)-(10), (28)-(36), term by term.

    Returns (G, symbols) with G an (n, n) sympy Matrix and symbols a dict of the sympy symbols
    "a", "b", "alpha", "g".
    """
    n = check_int("n", n, 1)
    a, b, alpha, g = sp.symbols("a b alpha g", positive=True)
    gg = g if residual else sp.Integer(0)
    c = sp.zeros(n, n)  # x^(1) = C Y
    for row in range(n):
        denom = a + row * b
        for col in range(row):
            c[row, col] = b / denom
        c[row, row] = a / denom + gg
    gram_y = (1 - alpha) * sp.eye(n) + alpha * sp.ones(n, n)  # <y_k, y_l> / d
    return c * gram_y * c.T, {"a": a, "b": b, "alpha": alpha, "g": g}


# -- A.1: Theorem 1 -------------------------------------------------------------------------------


@lru_cache(maxsize=1)
def _generic_layer1(n=N_TOKENS):
    """<x_i^(1), x_j^(1)> for a GENERIC symmetric Gram matrix G of the y's (no LLN), weights of Eq. (4).

    Returns (X, G, a): X = C G C^T with C_ii = a / (a + i - 1), C_ik = 1 / (a + i - 1) (k < i).
    """
    a = _sym()[0]
    G = sp.Matrix(n, n, lambda k, l: sp.Symbol(f"G_{min(k, l) + 1}{max(k, l) + 1}"))
    C = sp.zeros(n, n)
    for r in range(n):
        for c in range(r):
            C[r, c] = 1 / (a + r)
        C[r, r] = a / (a + r)
    return C * G * C.T, G, a


def _eq7_numerator(G, a, i, j):
    """(a y_i + sum_{k<i} y_k) . (a y_j + sum_{l<j} y_l) for the Gram matrix G (1-based i, j)."""
    left = {i - 1: a, **{k: 1 for k in range(i - 1)}}
    right = {j - 1: a, **{l: 1 for l in range(j - 1)}}
    return sum(cl * cr * G[k, l] for k, cl in left.items() for l, cr in right.items())


def check_eq7_printed() -> Check:
    X, G, a = _generic_layer1()
    ok = _all_zero(
        _eq7_numerator(G, a, i, j) / ((a + i - 1) * (a + i - 1)) - X[i - 1, j - 1]
        for i, j in _pairs()
    )
    return Check(
        "eq7-printed",
        "A.1",
        "(7)",
        "Eq. (7) as printed, denominator (e^√d+i−1)(e^√d+i−1), equals ⟨x_i, x_j⟩ for i > j",
        "sympy, generic Gram matrix of the y's, all i > j ≤ 5",
        ok,
    )


def check_eq7_fixed() -> Check:
    X, G, a = _generic_layer1()
    ok = _all_zero(
        _eq7_numerator(G, a, i, j) / ((a + i - 1) * (a + j - 1)) - X[i - 1, j - 1]
        for i, j in _pairs()
    )
    return Check(
        "eq7-fixed",
        "A.1",
        "(7)",
        "Eq. (7) with denominator (e^√d+i−1)(e^√d+j−1) equals ⟨x_i, x_j⟩ for i > j",
        "sympy, generic Gram matrix of the y's, all i > j ≤ 5",
        ok,
    )


def check_eq8() -> Check:
    X, G, a = _generic_layer1()
    exprs = []
    for i, j in _pairs():
        num = (
            a**2 * G[i - 1, j - 1]
            + a * sum(G[i - 1, l] for l in range(j - 1))
            + a * sum(G[j - 1, k] for k in range(i - 1))
            + sum(G[k, l] for k in range(i - 1) for l in range(j - 1))
        )
        exprs.append(num / ((a + i - 1) * (a + j - 1)) - X[i - 1, j - 1])
    return Check(
        "eq8",
        "A.1",
        "(8)",
        "Eq. (8) is the expansion of ⟨x_i, x_j⟩ (no approximation yet)",
        "sympy, generic Gram matrix of the y's, all i > j ≤ 5",
        _all_zero(exprs),
    )


def _lln_gram_alpha0():
    """LLN Gram of x^(1) / d at alpha = 0, no residual (from :func:`symbolic_layer1_gram`)."""

    gram, s = symbolic_layer1_gram(N_TOKENS, residual=False)
    a = _sym()[0]
    return gram.subs({s["alpha"]: 0, s["b"]: 1}).subs(s["a"], a), a


def check_eq9() -> Check:
    gram, a = _lln_gram_alpha0()
    ok = _all_zero(
        gram[i - 1, j - 1] - (a + j - 1) / ((a + i - 1) * (a + j - 1)) for i, j in _pairs()
    )
    return Check(
        "eq9",
        "A.1",
        "(9)",
        "⟨x_i, x_j⟩ = d(e^√d+j−1)/((e^√d+i−1)(e^√d+j−1)) under ⟨y_k, y_l⟩ = d δ_kl",
        "sympy: C (d I) Cᵀ, all i > j ≤ 5",
        ok,
    )


def check_eq10() -> Check:
    gram, a = _lln_gram_alpha0()
    ok = _all_zero(
        gram[i - 1, i - 1] - (a**2 + i - 1) / (a + i - 1) ** 2 for i in range(1, N_TOKENS + 1)
    )
    return Check(
        "eq10",
        "A.1",
        "(10)",
        "‖x_i‖² = d(e^{2√d}+i−1)/(e^√d+i−1)² under ⟨y_k, y_l⟩ = d δ_kl",
        "sympy: C (d I) Cᵀ, all i ≤ 5",
        ok,
    )


def _eq11(a, d, i, j):
    return sp.sqrt(d) * (a + j - 1) / sp.sqrt((a**2 + i - 1) * (a**2 + j - 1))


def check_eq11_from_9_10() -> Check:
    a, _, d, _, _ = _sym()
    exprs = []
    for i, j in _pairs():
        ip = d * (a + j - 1) / ((a + i - 1) * (a + j - 1))  # Eq. (9)
        ni, nj = (d * (a**2 + k - 1) / (a + k - 1) ** 2 for k in (i, j))  # Eq. (10)
        s = d * ip / (sp.sqrt(d) * sp.sqrt(ni) * sp.sqrt(nj))  # middle of Eq. (11)
        exprs.append(s**2 - _eq11(a, d, i, j) ** 2)  # both sides positive
    return Check(
        "eq11-from-9-10",
        "A.1",
        "(9)–(11), (5)",
        "S⁽²⁾_ij = √d⟨x_i,x_j⟩/(‖x_i‖‖x_j‖) with (9), (10) gives Eq. (11) = Eq. (5)",
        "sympy (squares of positive sides), all i > j ≤ 5",
        _all_zero(exprs),
    )


def _positive_polynomial(expr, *gens) -> bool:
    """True if expr is a non-zero polynomial in gens (all >= 0) with positive coefficients only."""
    poly = sp.Poly(sp.expand(expr), *gens)
    coeffs = poly.coeffs()
    return bool(coeffs) and all(c.is_positive for c in coeffs)


def check_eq11_increasing() -> Check:
    """d/dj log S = 1/(a+j-1) - 1/(2(a^2+j-1)) = (2a^2 + j - 1 - a) / (2 (a+j-1)(a^2+j-1)).

    With a = 1 + u (u > 0 for d > 0) and j = 1 + m (m >= 0, real) numerator and denominator are
    polynomials with positive coefficients, so S strictly increases in j.
    """
    a, _, d, _, _ = _sym()
    i, j = sp.symbols("i j", positive=True)
    u, m = sp.symbols("u m", nonnegative=True)
    s = _eq11(a, d, i, j)
    num, den = sp.fraction(sp.together(sp.simplify(sp.diff(sp.log(s), j))))
    num = sp.expand(num.subs(a, 1 + u).subs(j, 1 + m))
    den = sp.expand(den.subs(a, 1 + u).subs(j, 1 + m))
    ok = (
        _positive_polynomial(num, u, m)
        and _positive_polynomial(den, u, m)
        and sp.Poly(num, u, m).coeff_monomial(1) != 0
    )
    return Check(
        "eq11-increasing",
        "A.1",
        "(11)",
        "Eq. (11) strictly increases in j for fixed i (any d > 0)",
        "sympy: ∂_j log S as a ratio of polynomials in u = e^√d − 1 > 0, m = j − 1 ≥ 0 with "
        "positive coefficients",
        ok,
    )


def check_eq11_diagonal_step() -> Check:
    """S_ii = sqrt(d) > S_{i,i-1}: (a + i - 2)^2 < (a^2 + i - 1)(a^2 + i - 2) for a > 1, i >= 2."""
    a = _sym()[0]
    u, m = sp.symbols("u m", nonnegative=True)
    i = 2 + m
    gap = (a**2 + i - 1) * (a**2 + i - 2) - (a + i - 2) ** 2
    ok = _positive_polynomial(gap.subs(a, 1 + u), u, m)
    return Check(
        "eq11-diagonal",
        "A.1",
        "(5), (11)",
        "S⁽²⁾_ii = √d exceeds S⁽²⁾_{i,i−1} (the last step of Definition 1)",
        "sympy: (S_ii² − S_{i,i−1}²)·(positive) is a polynomial in u = e^√d − 1 > 0, m = i − 2 ≥ 0 "
        "with positive coefficients",
        ok,
    )


def check_eq11_theory() -> Check:

    a, _, d, _, _ = _sym()
    ok = True
    for dv in (4, 64, 400):
        for i, j in _pairs():
            ref = _eq11(a, d, i, j).subs({a: sp.exp(sp.sqrt(dv)), d: dv}).evalf(30)
            ok &= abs(float(theorem1_score(i, j, dv)) / float(ref) - 1) < NUM_RTOL
    return Check(
        "eq11-theory",
        "A.1",
        "(11)",
        "theory.theorem1_score evaluates Eq. (11)",
        "30-digit sympy value vs float64 at d ∈ {4, 64, 400}, all i > j ≤ 5",
        bool(ok),
    )


# -- A.2: Proposition 1 -----------------------------------------------------------------------------


def _expect_quadratic(expr, variances):
    """E[expr] for a quadratic form expr in independent zero-mean variables with the given variances."""
    poly = sp.Poly(sp.expand(expr), *variances)
    out = sp.Integer(0)
    for powers, coeff in poly.terms():
        if sum(powers) != 2:
            raise ValueError(f"expr={expr!r} is not a quadratic form in {list(variances)}")
        if 2 in powers:  # a square: its variance
            out += coeff * variances[list(variances)[powers.index(2)]]
        # a product of two different independent zero-mean variables has expectation 0
    return out


@lru_cache(maxsize=1)
def _token_moments():
    """E<x_i, x_j> for x = eps + c v, eps, v ~ N(0, I_d / d) (Eq. (6)): d times the per-coordinate moment.

    Returns (same, other, c2): E<x_i, x_i>, E<x_i, x_j> (i != j) as expressions in d and c2 = c^2.
    """
    d = _sym()[2]
    c2 = sp.Symbol("c2", positive=True)
    e1, e2, v = sp.symbols("e1 e2 v")  # one coordinate of eps_i, eps_j, v
    var = {e1: 1 / d, e2: 1 / d, v: 1 / d}
    c = sp.sqrt(c2)
    same = sp.simplify(d * _expect_quadratic((e1 + c * v) ** 2, var))
    other = sp.simplify(d * _expect_quadratic((e1 + c * v) * (e2 + c * v), var))
    return same, other, c2


def check_eq14_printed() -> Check:
    same, _, c2 = _token_moments()
    d = _sym()[2]
    return Check(
        "eq14-printed",
        "A.2",
        "(14)",
        "⟨x_i, x_i⟩ → √d for x_i ~ N(0, I_d/d) (as printed)",
        "sympy: E⟨x_i, x_i⟩ = d·E[x_it²] (independent Gaussian coordinates)",
        _zero(same.subs(c2, 0) - sp.sqrt(d)),
    )


def check_eq14_fixed() -> Check:
    same, other, c2 = _token_moments()
    alpha = _sym()[3]
    c2a = alpha / (1 - alpha)
    ok = (
        _zero(same.subs(c2, 0) - 1)
        and _zero(same.subs(c2, c2a) - 1 / (1 - alpha))
        and _zero(other.subs(c2, 0))
    )
    return Check(
        "eq14-fixed",
        "A.2",
        "(14)",
        "⟨x_i, x_i⟩ → 1 (1/(1−α) with anisotropy), ⟨x_i, x_j⟩ → 0 for i ≠ j",
        "sympy: E⟨x_i, x_j⟩ = d·E[x_it x_jt] (independent Gaussian coordinates)",
        ok,
    )


def _softmax_diag(score_diag, score_off, i):
    return sp.exp(score_diag) / (sp.exp(score_diag) + (i - 1) * sp.exp(score_off))


def check_eq15_printed() -> Check:
    """Eq. (15) from Eq. (13) with the printed Eq. (14): diagonal score sqrt(d)/sqrt(d) = 1, not sqrt(d)."""
    d = _sym()[2]
    ok = all(
        _zero(
            _softmax_diag(sp.sqrt(d) / sp.sqrt(d), 0, i)
            - sp.exp(sp.sqrt(d)) / (sp.exp(sp.sqrt(d)) + i - 1)
        )
        for i in range(2, N_TOKENS + 1)
    )
    return Check(
        "eq15-printed",
        "A.2",
        "(13)–(15)",
        "Eq. (15) follows from Eq. (13) with the printed Eq. (14) (⟨x_i, x_i⟩ = √d)",
        "sympy: softmax of the scores ⟨x_i,x_k⟩/√d, i ≤ 5",
        ok,
    )


def check_eq15_fixed() -> Check:

    d = _sym()[2]
    a = sp.exp(1 / sp.sqrt(d))
    ok = all(
        _zero(_softmax_diag(1 / sp.sqrt(d), 0, i) - a / (a + i - 1)) for i in range(2, N_TOKENS + 1)
    )
    for dv in (4, 64, 1024):
        for i in range(1, N_TOKENS + 1):
            for j in range(1, i + 1):
                s = 1 / sp.sqrt(sp.Integer(dv))
                ref = (sp.exp(s) if i == j else 1) / (sp.exp(s) + i - 1)
                ok &= (
                    abs(float(prop1_attention_corrected(i, j, dv)) / float(ref.evalf(30)) - 1)
                    < NUM_RTOL
                )
    return Check(
        "eq15-fixed",
        "A.2",
        "(15)",
        "with ⟨x_i, x_i⟩ = 1: A_ii = a/(a+i−1), A_ij = 1/(a+i−1), a = e^{1/√d} "
        "(theory.prop1_attention_corrected)",
        "sympy softmax; 30-digit values vs float64 at d ∈ {4, 64, 1024}",
        bool(ok),
    )


def _prop1_layer2(n=N_TOKENS):
    """<x_i^(1), x_j^(1)> without normalization for <x_k, x_l> = u delta_kl + w and weights (a, 1) / (a + i - 1)."""
    a = sp.Symbol("A", positive=True)  # the diagonal softmax weight, whatever its value
    u, w = sp.symbols("u w", nonnegative=True)
    C = sp.zeros(n, n)
    for r in range(n):
        for c in range(r):
            C[r, c] = 1 / (a + r)
        C[r, r] = a / (a + r)
    gram = C * (u * sp.eye(n) + w * sp.ones(n, n)) * C.T
    return gram, a, u, w


def _model_layers(gram0: np.ndarray, d: float, norm: str):
    """The simulator's layer (:func:`recency_lib.model.layer`) applied twice to tokens whose Gram
    matrix is exactly ``gram0`` (its Cholesky factor as coordinates); returns x^(1) (n, n) and the
    second layer's scores S^(2) (n, n)."""
    x0 = np.linalg.cholesky(gram0)[None]  # (1, n, n), rows' Gram = gram0
    x1, *_ = layer(x0, norm=norm, d=d, gamma=0.0, eps=0.0, centred=True)
    _, s2, _, _ = layer(x1, norm=norm, d=d, gamma=0.0, eps=0.0, centred=True)
    return x1[0], s2[0]


def _model_scores_match(prefactor, norm: str) -> bool:
    """Do the simulator's layer-2 scores equal prefactor(d) <x_i, x_j> / (norms) for i >= j, at
    d in {4, 64, 1024} and anisotropy alpha in {0, 1/2} (LLN Gram (1 - alpha) I + alpha 11^T)?
    The norms are ||x_i|| ||x_j|| with normalization, 1 without."""
    ok = True
    for dv in (4.0, 64.0, 1024.0):
        for alpha in (0.0, 0.5):
            gram0 = (1 - alpha) * np.eye(N_TOKENS) + alpha
            x1, s2 = _model_layers(gram0, dv, norm)
            inner = x1 @ x1.T
            norms = np.sqrt(np.outer(np.diag(inner), np.diag(inner))) if norm != "none" else 1.0
            lower = np.tril_indices(N_TOKENS)
            ok &= bool(
                np.allclose((prefactor(dv) * inner / norms)[lower], s2[lower], rtol=1e-12, atol=0)
            )
    return ok


def check_eq17_scale() -> Check:
    """Eq. (17) writes S^(2) = <x_i^(1), x_j^(1)>; the model's scores (Eq. (12)) divide by sqrt(d)."""
    return Check(
        "eq17-scale",
        "A.2",
        "(12), (17)",
        "S⁽²⁾_ij = ⟨x_i⁽¹⁾, x_j⁽¹⁾⟩ without the 1/√d of Eq. (12) (as printed in (17))",
        "the simulator's layer (recency_lib.model.layer, no normalization) run twice on tokens with "
        "Gram matrix (1−α)I + α11ᵀ, d ∈ {4, 64, 1024}, α ∈ {0, ½}: its S⁽²⁾ vs ⟨x_i⁽¹⁾, x_j⁽¹⁾⟩",
        _model_scores_match(lambda d: 1.0, "none"),
    )


def check_eq18_printed() -> Check:
    """Eq. (18) from (17) with <x_k, x_l> = s delta_kl: the numerator is s (E + j - 1), printed (E + j - 1)."""
    gram, A, u, w = _prop1_layer2()
    d = _sym()[2]
    s_printed = sp.sqrt(d)  # Eq. (14) as printed
    ok = all(
        _zero(
            gram[i - 1, j - 1].subs({u: s_printed, w: 0})
            - (A + j - 1) / ((A + i - 1) * (A + j - 1))
        )
        for i, j in _pairs()
    )
    return Check(
        "eq18-printed",
        "A.2",
        "(17)–(18)",
        "Eq. (18) follows from (17) with the printed ⟨x_k, x_k⟩ = √d",
        "sympy, all i > j ≤ 5",
        ok,
    )


def check_eq19_slips_cancel() -> Check:
    gram, A, u, w = _prop1_layer2()
    d = _sym()[2]
    ok = all(
        _zero(gram[i - 1, j - 1].subs({u: sp.sqrt(d), w: 0}) / sp.sqrt(d) - 1 / (A + i - 1))
        for i, j in _pairs()
    )
    return Check(
        "eq19-form",
        "A.2",
        "(14), (17)–(19)",
        "with the printed (14) and the 1/√d restored, S⁽²⁾_ij = 1/(E+i−1) as (19) prints "
        "(the two slips cancel in form)",
        "sympy, all i > j ≤ 5",
        ok,
    )


def check_eq19_fixed() -> Check:

    gram, A, u, w = _prop1_layer2()
    d = _sym()[2]
    ok = True
    for i, j in _pairs():
        s = gram[i - 1, j - 1] / sp.sqrt(d)
        ok &= _zero(s - (u / (A + i - 1) + w) / sp.sqrt(d))  # flat in j
    for dv in (4, 64, 1024):
        for alpha in (sp.Integer(0), sp.Rational(1, 2)):
            av = sp.exp(1 / sp.sqrt(sp.Integer(dv)))
            for i, j in _pairs():
                ref = (1 / (av + i - 1) + alpha / (1 - alpha)) / sp.sqrt(dv)
                got = float(prop1_score_corrected(i, j, dv, float(alpha)))
                ok &= abs(got / float(ref.evalf(30)) - 1) < NUM_RTOL
    return Check(
        "eq19-fixed",
        "A.2",
        "(19)",
        "corrected S⁽²⁾_ij = (1/(a+i−1) + c²)/√d, a = e^{1/√d}, the same for every j < i "
        "(theory.prop1_score_corrected)",
        "sympy with ⟨x_k, x_l⟩ = δ_kl + c²; 30-digit values vs float64, d ∈ {4, 64, 1024}, α ∈ {0, ½}",
        bool(ok),
    )


# -- A.3: Propositions 2 and 3 ------------------------------------------------------------------------


def _eq22_holds(claimed) -> bool:
    """E||x_i^(0)||^2 = claimed(d, alpha), derived from Eq. (6) in sympy AND read off the sampler the
    gram engine uses (sigma_cholesky: L L^T = Sigma, whose diagonal is E||x_i||^2) at d in
    {4, 64, 1024} and alpha in {0.3, 0.5, 0.8}?"""
    same, _, c2 = _token_moments()
    d, alpha = _sym()[2], _sym()[3]
    ok = _zero(same.subs(c2, alpha / (1 - alpha)) - claimed(d, alpha))
    for av in (0.3, 0.5, 0.8):
        chol = sigma_cholesky(N_TOKENS, float(np.sqrt(av / (1 - av))))
        for dv in (4, 64, 1024):
            want = float(claimed(sp.Integer(dv), sp.Rational(str(av))))
            ok &= bool(np.allclose(np.diag(chol @ chol.T), want, rtol=1e-12, atol=0))
    return bool(ok)


def check_eq22_printed() -> Check:
    return Check(
        "eq22-printed",
        "A.3",
        "(22)",
        "‖x_i‖² → √d/(1−α) (as printed)",
        "sympy: E‖x_i‖² = d·E[x_it²], c² = α/(1−α); and the sampler's Σ_ii (sampling.sigma_cholesky) "
        "at d ∈ {4, 64, 1024}, α ∈ {0.3, ½, 0.8}",
        _eq22_holds(lambda d, a: sp.sqrt(d) / (1 - a)),
    )


def check_eq22_fixed() -> Check:
    return Check(
        "eq22-fixed",
        "A.3",
        "(22)",
        "‖x_i⁽⁰⁾‖² → 1/(1−α)",
        "sympy: E‖x_i‖² = d·E[x_it²], c² = α/(1−α); and the sampler's Σ_ii (sampling.sigma_cholesky) "
        "at d ∈ {4, 64, 1024}, α ∈ {0.3, ½, 0.8}",
        _eq22_holds(lambda d, a: 1 / (1 - a)),
    )


def _y_inner(c2):
    """<y_i, y_j> = d <x_i, x_j> / ||x||^2 in the LLN (y = sqrt(d) x / ||x||)."""
    same, other, c2s = _token_moments()
    d = _sym()[2]
    return d * other.subs(c2s, c2) / same.subs(c2s, c2)


def check_eq23_printed() -> Check:
    d, alpha = _sym()[2], _sym()[3]
    return Check(
        "eq23-printed",
        "A.3",
        "(23)",
        "⟨y_i, y_j⟩ → √d·α for i ≠ j (as printed)",
        "sympy: LLN values of ⟨x_i, x_j⟩, y = √d x/‖x‖",
        _zero(_y_inner(alpha / (1 - alpha)) - sp.sqrt(d) * alpha),
    )


def check_eq23_fixed() -> Check:
    d, alpha = _sym()[2], _sym()[3]
    ok = _zero(_y_inner(alpha / (1 - alpha)) - d * alpha)
    # ... which is the scale Eq. (25) uses: off-diagonal score <y_i, y_j>/sqrt(d) = sqrt(d) alpha, weight e^{alpha sqrt d}
    ok &= _zero(_y_inner(alpha / (1 - alpha)) / sp.sqrt(d) - sp.sqrt(d) * alpha)
    return Check(
        "eq23-fixed",
        "A.3",
        "(23), (25)",
        "⟨y_i, y_j⟩ → dα, i.e. off-diagonal score √d·α: the weight e^{√dα} that (25) uses",
        "sympy: LLN values of ⟨x_i, x_j⟩, y = √d x/‖x‖",
        bool(ok),
    )


def _residual_coefficients():
    """(correct g, printed ones) for gamma x_j = coefficient * y_j with y = sqrt(d) x / ||x||."""
    d, alpha = _sym()[2], _sym()[3]
    gamma, nx = sp.symbols("gamma nx", positive=True)  # nx = ||x_j^(0)||
    # gamma x = k y = k sqrt(d) x / ||x||  <=>  gamma = k sqrt(d) / ||x||
    k = sp.Symbol("k")
    g = sp.solve(sp.Eq(gamma, k * sp.sqrt(d) / nx), k)[0]
    printed = {"(25)": sp.sqrt(d) * gamma * nx, "(26)–(32)": d * gamma, "(33)–(36)": gamma}
    return g, printed, gamma, nx, d, alpha


def check_residual_printed() -> Check:
    g, printed, gamma, nx, d, alpha = _residual_coefficients()
    ok = any(_zero(p - g) for p in printed.values())
    return Check(
        "residual-printed",
        "A.3",
        "(25), (26), (33)",
        "a printed residual weight of y_j (√dγ‖x‖, dγ or γ) is right",
        "sympy: solve γ x_j = k y_j with y_j = √d x_j/‖x_j‖",
        bool(ok),
    )


def check_residual_fixed() -> Check:

    g, printed, gamma, nx, d, alpha = _residual_coefficients()
    target = gamma / sp.sqrt(d * (1 - alpha))
    ok = _zero(g.subs(nx, 1 / sp.sqrt(1 - alpha)) - target)
    for dv in (4, 64, 4096):
        for av in (0.0, 0.5):
            ref = target.subs({gamma: 1, d: dv, alpha: sp.Rational(str(av))}).evalf(30)
            ok &= abs(float(residual_coefficient(av, 1.0, dv, "rms")) / float(ref) - 1) < NUM_RTOL
            ok &= (
                abs(
                    float(residual_coefficient(av, 1.0, dv, "layernorm"))
                    / float(ref * sp.sqrt(sp.Rational(dv - 1, dv)))
                    - 1
                )
                < NUM_RTOL
            )
    return Check(
        "residual-fixed",
        "A.3",
        "(25), (26), (33)",
        "the residual weight of y_j is g = γ‖x_j⁽⁰⁾‖/√d = γ/√(d(1−α)) (× √((d−1)/d) for LayerNorm; "
        "theory.residual_coefficient)",
        "sympy; 30-digit values vs float64, d ∈ {4, 64, 4096}",
        bool(ok),
    )


@lru_cache(maxsize=1)
def _lln_gram_residual():
    """LLN Gram of x^(1) / d with residual weight g (:func:`symbolic_layer1_gram`), symbols unified."""

    gram, s = symbolic_layer1_gram(N_TOKENS, residual=True)
    a, b, _, alpha, g = _sym()
    return gram.subs({s["a"]: a, s["b"]: b, s["alpha"]: alpha, s["g"]: g})


def _offdiag_steps(i, j):
    """The printed right-hand sides of Eqs. (28)-(32) divided by d, with d gamma -> g."""
    a, b, _, alpha, g = _sym()
    di, dj = a + (i - 1) * b, a + (j - 1) * b
    gi, gj = g * di + a, g * dj + a
    eq28 = (
        alpha * gi * gj
        + alpha * b * gi * (j - 1)
        + alpha * b * gj * (i - 2)
        + b * gj
        + b**2 * (j - 1)
        + alpha * b**2 * (i - 2) * (j - 1)
    ) / (di * dj)
    eq29 = (
        (j - 1) * (alpha * b * gi + b**2 + alpha * b**2 * (i - 2))
        + gj * (alpha * gi + alpha * b * (i - 2) + b)
    ) / (di * dj)
    eq30 = (b * (j - 1) + g * dj + a) * (alpha * gi + b + alpha * b * (i - 2)) / (di * dj)
    eq31 = dj * (1 + g) * (alpha * gi + b + alpha * b * (i - 2)) / (di * dj)
    eq32 = (1 + g) * (alpha * gi + b + alpha * b * (i - 2)) / di
    return {"(28)": eq28, "(29)": eq29, "(30)": eq30, "(31)": eq31, "(32)": eq32}


def check_eqs28_to_32() -> Check:
    gram = _lln_gram_residual()
    ok = all(
        _zero(expr - gram[i - 1, j - 1])
        for i, j in _pairs()
        for expr in _offdiag_steps(i, j).values()
    )
    return Check(
        "eq28-32",
        "A.3",
        "(27)–(32)",
        "each of Eqs. (28)–(32) equals ⟨x_i, x_j⟩/d for i > j (reading dγ as the residual weight g)",
        "sympy vs C Gy Cᵀ, ⟨y_k,y_l⟩ = d((1−α)δ_kl + α), all i > j ≤ 5",
        ok,
    )


def check_eq32_free_of_j() -> Check:
    gram = _lln_gram_residual()
    ok = all(_zero(gram[i - 1, j - 1] - gram[i - 1, 0]) for i, j in _pairs())
    return Check(
        "eq32-flat",
        "A.3",
        "(32)",
        "⟨x_i, x_j⟩ does not depend on j < i (so only ‖x_j‖ orders a row)",
        "sympy, all i > j ≤ 5",
        ok,
    )


def _eq34_to_36(m, g, dd):
    """Printed right-hand sides of Eqs. (34), (35), (36) / d, and (34) without its stray d's (m = j - 1)."""
    a, b, _, alpha, _ = _sym()
    D = a + m * b
    eq34 = (
        (g * D + a) ** 2
        + 2 * dd * alpha * (g * D + a) * dd * b * m
        + b**2 * m
        + dd * alpha * b**2 * (m - 1) * m
    ) / D**2
    eq34_fixed = (
        (g * D + a) ** 2 + 2 * alpha * (g * D + a) * b * m + b**2 * m + alpha * b**2 * (m - 1) * m
    ) / D**2
    eq35 = (
        (g * D + a) ** 2
        + 2 * (g * D + a) * alpha * (D - a)
        + b * (D - a)
        + alpha * (D - a - b) * (D - a)
    ) / D**2
    eq36 = (
        D**2 * (g**2 + 2 * alpha * g + alpha)
        + D * (1 - alpha) * (2 * g * a + b)
        + (1 - alpha) * (a**2 - a * b)
    ) / D**2
    return {"(34)": eq34, "(34) fixed": eq34_fixed, "(35)": eq35, "(36)": eq36}


def _diag_check(which) -> bool:
    gram = _lln_gram_residual()
    g, d = _sym()[4], _sym()[2]
    ok = True
    for j in range(1, N_TOKENS + 1):
        ok &= _zero(_eq34_to_36(j - 1, g, d)[which] - gram[j - 1, j - 1])
    return bool(ok)


def check_eq33() -> Check:
    return Check(
        "eq33",
        "A.3",
        "(33)",
        "Eq. (33) is ‖x_j‖² with γ in the role of the residual weight g (internally consistent)",
        "sympy: (33) = C Gy Cᵀ diagonal, j ≤ 5",
        _diag_check("(34) fixed"),
    )


def check_eq34_printed() -> Check:
    return Check(
        "eq34-printed",
        "A.3",
        "(34)",
        "Eq. (34) as printed (factors d in 2dα(…)d e^{α√d} and dα e^{2α√d}) equals ‖x_j‖²/d",
        "sympy, j ≤ 5",
        _diag_check("(34)"),
    )


def check_eq34_fixed() -> Check:
    return Check(
        "eq34-fixed",
        "A.3",
        "(34)",
        "Eq. (34) without the stray factors d equals ‖x_j‖²/d",
        "sympy, j ≤ 5",
        _diag_check("(34) fixed"),
    )


def check_eq35() -> Check:
    return Check(
        "eq35", "A.3", "(35)", "Eq. (35) equals ‖x_j‖²/d", "sympy, j ≤ 5", _diag_check("(35)")
    )


def check_eq36() -> Check:
    a, b, d, alpha, g = _sym()
    m = sp.Symbol("m", nonnegative=True)
    ok = _diag_check("(36)") and _zero(_eq34_to_36(m, g, d)["(35)"] - _eq34_to_36(m, g, d)["(36)"])
    return Check(
        "eq36",
        "A.3",
        "(35)–(36)",
        "Eq. (36) equals ‖x_j‖²/d, and (35) = (36) for symbolic j",
        "sympy, j ≤ 5 and symbolic m = j − 1",
        bool(ok),
    )


def check_eq36_theory() -> Check:
    """theory.sq_norm_eq36 evaluates (36); theory.sq_norm_corrected is (36) with gamma -> g."""

    a, b, d, alpha, g = _sym()
    ok = True
    for dv in (4, 64, 1024):
        for av in (0.0, 0.5, 0.8):
            for gv in (0.0, 1.0):
                for j in (1, 2, 5):
                    al = sp.Rational(str(av))
                    sub = {a: sp.exp(sp.sqrt(dv)), b: sp.exp(al * sp.sqrt(dv)), alpha: al, d: dv}
                    e36 = dv * _eq34_to_36(j - 1, g, d)["(36)"].subs(sub)
                    ref = e36.subs(g, gv).evalf(30)
                    ok &= abs(float(sq_norm_eq36(j, av, gv, dv)) / float(ref) - 1) < NUM_RTOL
                    gc = float(residual_coefficient(av, gv, dv, "layernorm"))
                    ref = e36.subs(g, sp.Float(gc, 30)).evalf(30)
                    ok &= (
                        abs(float(sq_norm_corrected(j, av, gv, dv, "layernorm")) / float(ref) - 1)
                        < NUM_RTOL
                    )
    return Check(
        "eq36-theory",
        "A.3",
        "(36)",
        "theory.sq_norm_eq36 evaluates (36); theory.sq_norm_corrected is (36) with γ → g",
        "30-digit sympy values vs float64, d ∈ {4, 64, 1024}, α ∈ {0, ½, 0.8}, γ ∈ {0, 1}",
        bool(ok),
    )


def _q(D, g):
    """Eq. (36) / d as a function of D = D_j."""
    a, b, _, alpha, _ = _sym()
    return (
        D**2 * (g**2 + 2 * alpha * g + alpha)
        + D * (1 - alpha) * (2 * g * a + b)
        + (1 - alpha) * (a**2 - a * b)
    ) / D**2


def _eq39(Dj, g, first_factor):
    a, b, _, alpha, _ = _sym()
    Dn = Dj + b
    return (1 - alpha) * first_factor * (-b / (Dj * Dn)) + (1 - alpha) * (a**2 - a * b) * (
        -b * (2 * Dj + b) / (Dj**2 * Dn**2)
    )


def check_eq38() -> Check:
    a, b, _, alpha, g = _sym()
    Dj = sp.Symbol("D_j", positive=True)
    Dn = Dj + b
    eq38 = (1 - alpha) * (2 * g * a + b) * (1 / Dn - 1 / Dj) + (1 - alpha) * (a**2 - a * b) * (
        1 / Dn**2 - 1 / Dj**2
    )
    return Check(
        "eq38",
        "A.3",
        "(37)–(38)",
        "Eq. (38) (÷ d) equals ‖x_{j+1}‖² − ‖x_j‖² from (36), D_{j+1} = D_j + e^{α√d}",
        "sympy, symbolic D_j",
        _zero(_q(Dn, g) - _q(Dj, g) - eq38),
    )


def check_eq39_printed() -> Check:
    a, b, _, alpha, g = _sym()
    Dj = sp.Symbol("D_j", positive=True)
    e = sp.E
    ok = _zero(_q(Dj + b, g) - _q(Dj, g) - _eq39(Dj, g, 2 * g * e + b))
    return Check(
        "eq39-printed",
        "A.3",
        "(39)",
        "Eq. (39) as printed (first factor 2γe + e^{α√d}) equals ‖x_{j+1}‖² − ‖x_j‖² (÷ d)",
        "sympy, symbolic D_j",
        ok,
    )


def check_eq39_fixed() -> Check:
    a, b, _, alpha, g = _sym()
    Dj = sp.Symbol("D_j", positive=True)
    ok = _zero(_q(Dj + b, g) - _q(Dj, g) - _eq39(Dj, g, 2 * g * a + b))
    return Check(
        "eq39-fixed",
        "A.3",
        "(39)",
        "Eq. (39) with 2γe^{√d} + e^{α√d} equals ‖x_{j+1}‖² − ‖x_j‖² (÷ d)",
        "sympy, symbolic D_j",
        ok,
    )


def check_eq39_negative() -> Check:
    """Both terms of (39) are negative for 0 <= alpha < 1, g >= 0: substitute 1 - alpha = p > 0, a = b (1 + u)."""
    b = _sym()[1]
    p, u, Dj = sp.symbols("p u D_j", positive=True)
    g0 = sp.Symbol("g0", nonnegative=True)
    a = b * (1 + u)  # a > b  <=>  alpha < 1
    Dn = Dj + b
    t1 = p * (2 * g0 * a + b) * (-b / (Dj * Dn))
    t2 = p * (a**2 - a * b) * (-b * (2 * Dj + b) / (Dj**2 * Dn**2))
    ok = bool(sp.simplify(t1).is_negative) and bool(sp.factor(t2).is_negative)
    return Check(
        "eq39-sign",
        "A.3",
        "(39)",
        "both terms of (the fixed) Eq. (39) are < 0 for 0 ≤ α < 1 and residual weight ≥ 0, "
        "so ‖x_j‖ strictly decreases in j",
        "sympy sign with positive symbols: 1 − α = p > 0, e^√d = e^{α√d}(1 + u), u > 0",
        ok,
    )


_EQ40_METHOD = (
    "the simulator's layer (recency_lib.model.layer, y = √d x/‖x‖) run twice on tokens with Gram "
    "matrix (1−α)I + α11ᵀ, d ∈ {4, 64, 1024}, α ∈ {0, ½}: its S⁽²⁾ vs the formula on its x⁽¹⁾"
)


def check_eq40_printed() -> Check:
    return Check(
        "eq40-printed",
        "A.3",
        "(40)",
        "S⁽²⁾_ij = d⟨x_i,x_j⟩/(‖x_i‖‖x_j‖) (as printed in (40) and before (33))",
        _EQ40_METHOD,
        _model_scores_match(lambda d: d, "rms"),
    )


def check_eq40_fixed() -> Check:
    return Check(
        "eq40-fixed",
        "A.3",
        "(40), (11)",
        "S⁽²⁾_ij = √d⟨x_i,x_j⟩/(‖x_i‖‖x_j‖) (as in (11)); the prefactor is a row constant",
        _EQ40_METHOD,
        _model_scores_match(np.sqrt, "rms"),
    )


def check_eq41() -> Check:

    a, b, d, alpha, g = _sym()
    Dj = sp.Symbol("D_j", positive=True)
    inner = (
        Dj**2 * (g**2 + 2 * alpha * g + alpha)
        + Dj * (1 - alpha) * (2 * g * a + b)
        + (1 - alpha) * (a**2 - a * b)
    )
    h41 = Dj / (sp.sqrt(d) * sp.sqrt(inner))
    ok = _zero(h41**2 - 1 / (d * _q(Dj, g)))
    for dv in (4, 64, 1024):
        for av in (0.0, 0.5):
            for gv in (0.0, 1.0):
                for j in (1, 3, 7):
                    al = sp.Rational(str(av))
                    sub = {
                        a: sp.exp(sp.sqrt(dv)),
                        b: sp.exp(al * sp.sqrt(dv)),
                        alpha: al,
                        d: dv,
                        g: gv,
                        Dj: sp.exp(sp.sqrt(dv)) + (j - 1) * sp.exp(al * sp.sqrt(dv)),
                    }
                    ok &= (
                        abs(float(h_eq41(j, av, gv, dv)) / float(h41.subs(sub).evalf(30)) - 1)
                        < NUM_RTOL
                    )
    return Check(
        "eq41",
        "A.3",
        "(40)–(41)",
        "h(j) of Eq. (41) is 1/‖x_j‖ = (Eq. (36))^{−1/2} (theory.h_eq41)",
        "sympy; 30-digit values vs float64, d ∈ {4, 64, 1024}",
        bool(ok),
    )


# -- registry -----------------------------------------------------------------------------------

CHECKS = (
    check_eq7_printed,
    check_eq7_fixed,
    check_eq8,
    check_eq9,
    check_eq10,
    check_eq11_from_9_10,
    check_eq11_increasing,
    check_eq11_diagonal_step,
    check_eq11_theory,
    check_eq14_printed,
    check_eq14_fixed,
    check_eq15_printed,
    check_eq15_fixed,
    check_eq17_scale,
    check_eq18_printed,
    check_eq19_slips_cancel,
    check_eq19_fixed,
    check_eq22_printed,
    check_eq22_fixed,
    check_eq23_printed,
    check_eq23_fixed,
    check_residual_printed,
    check_residual_fixed,
    check_eqs28_to_32,
    check_eq32_free_of_j,
    check_eq33,
    check_eq34_printed,
    check_eq34_fixed,
    check_eq35,
    check_eq36,
    check_eq36_theory,
    check_eq38,
    check_eq39_printed,
    check_eq39_fixed,
    check_eq39_negative,
    check_eq40_printed,
    check_eq40_fixed,
    check_eq41,
)


def run_all() -> list[Check]:
    """Run every check (a few seconds); the list is in the order of the appendix."""
    return [f() for f in CHECKS]


def run_all_timed() -> tuple[list[Check], float]:
    """:func:`run_all` and the seconds it took (module level, so a process pool can run it beside
    the simulations)."""
    t0 = time.perf_counter()
    checks = run_all()
    return checks, time.perf_counter() - t0


def by_key(checks) -> dict[str, Check]:
    return {c.key: c for c in checks}
