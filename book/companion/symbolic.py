"""Sympy checks of the algebra of the paper's Appendix A, one claim per check (:data:`CHECKS`).

A claim about a printed step reads "the printed form is right", so a typo comes out False and the
corrected form beside it True. Notation (the paper's, 1-based, i = query, j = key): a = e^√d,
b = e^{α√d}, D_j = a + (j − 1) b (Eqs. (25)–(26)); under the LLN ⟨y_k, y_l⟩ = d((1 − α)δ_kl + α);
g is the residual weight of y_j. "Equal" means sympy.cancel(lhs − rhs) == 0, for every pair
i > j ≤ N where the equation is indexed.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import NamedTuple

import numpy as np
import sympy as sp

from recency_lib import theory
from recency_lib.model import layer
from recency_lib.sampling import sigma_cholesky

N = 5  # tokens: the identities are checked for every pair i > j <= N
NUM_RTOL = 1e-12  # float64 closed form vs its 30-digit sympy value (good to ~1e-13)
a, b, d, alpha, g, c2 = sp.symbols("a b d alpha g c2", positive=True)  # c2 = c² of Eq. (6)
PAIRS = [(i, j) for i in range(2, N + 1) for j in range(1, i)]  # n >= i > j >= 1


@dataclass(frozen=True)
class AlgebraStep:
    """A claim about a step of Appendix A and its sympy verdict ``holds``."""

    key: str  # e.g. "eq7-printed"
    section: str  # "A.1", "A.2" or "A.3"
    equations: str  # the paper's numbers, e.g. "(7)"
    claim: str
    method: str
    holds: bool


def _zero(expr) -> bool:
    return sp.cancel(sp.together(expr)) == 0


def _zero_for_pairs(expr_of) -> bool:
    return all(_zero(expr_of(i, j)) for i, j in PAIRS)


def _close(value, ref) -> bool:
    return abs(float(value) / float(ref) - 1) < NUM_RTOL


def _positive_polynomial(expr, *gens) -> bool:
    """A non-zero polynomial in ``gens`` (all >= 0) with only positive coefficients?"""
    coeffs = sp.Poly(sp.expand(expr), *gens).coeffs()
    return bool(coeffs) and all(c.is_positive for c in coeffs)


def _mix(off, extra=0) -> sp.Matrix:
    """Layer-1 mixing C (x^(1) = C y): weight a on the key itself and ``off`` on each earlier key,
    normalized per row, plus ``extra`` on the diagonal (the residual)."""
    c = sp.zeros(N, N)
    for r in range(N):
        for k in range(r):
            c[r, k] = off / (a + r * off)
        c[r, r] = a / (a + r * off) + extra
    return c


# -- A.1: Theorem 1 --------------------------------------------------------------------------------


@cache
def _generic():
    """(X, G): X = C G Cᵀ = ⟨x_i, x_j⟩ for a generic symmetric Gram matrix G of the y's (no LLN)."""
    G = sp.Matrix(N, N, lambda k, l: sp.Symbol(f"G_{min(k, l) + 1}{max(k, l) + 1}"))
    return _mix(1) * G * _mix(1).T, G


def _eq7(printed: bool) -> bool:
    X, G = _generic()

    def weights(i):  # a y_i + sum_{k<i} y_k as a row of coefficients
        return sp.Matrix([[1] * (i - 1) + [a] + [0] * (N - i)])

    def expr(i, j):
        denominator = (a + i - 1) * (a + (i if printed else j) - 1)
        return (weights(i) * G * weights(j).T)[0] / denominator - X[i - 1, j - 1]

    return _zero_for_pairs(expr)


def _eq8(i, j):
    X, G = _generic()
    numerator = (
        a**2 * G[i - 1, j - 1]
        + a * sum(G[i - 1, l] for l in range(j - 1))
        + a * sum(G[j - 1, k] for k in range(i - 1))
        + sum(G[k, l] for k in range(i - 1) for l in range(j - 1))
    )
    return numerator / ((a + i - 1) * (a + j - 1)) - X[i - 1, j - 1]


def _gram_alpha0():
    """⟨x_i, x_j⟩ / d at α = 0 without residual: C I Cᵀ."""
    return _mix(1) * _mix(1).T


def _eq11(i, j):
    return sp.sqrt(d) * (a + j - 1) / sp.sqrt((a**2 + i - 1) * (a**2 + j - 1))


def _eq11_from_9_10(i, j):
    inner = d * (a + j - 1) / ((a + i - 1) * (a + j - 1))  # Eq. (9)
    ni, nj = (d * (a**2 + k - 1) / (a + k - 1) ** 2 for k in (i, j))  # Eq. (10)
    s = d * inner / (sp.sqrt(d) * sp.sqrt(ni) * sp.sqrt(nj))  # middle of Eq. (11)
    return s**2 - _eq11(i, j) ** 2  # both sides positive


def _eq11_increasing() -> bool:
    """∂_j log S as a ratio of polynomials in u = a − 1 > 0, m = j − 1 >= 0, coefficients > 0."""
    i, j = sp.symbols("i j", positive=True)
    u, m = sp.symbols("u m", nonnegative=True)
    num, den = sp.fraction(sp.together(sp.simplify(sp.diff(sp.log(_eq11(i, j)), j))))
    num, den = (sp.expand(x.subs(a, 1 + u).subs(j, 1 + m)) for x in (num, den))
    return (
        _positive_polynomial(num, u, m)
        and _positive_polynomial(den, u, m)
        and sp.Poly(num, u, m).coeff_monomial(1) != 0
    )


def _eq11_diagonal() -> bool:
    """S_ii = √d > S_{i,i−1}: (a + i − 2)² < (a² + i − 1)(a² + i − 2) for a > 1, i >= 2."""
    u, m = sp.symbols("u m", nonnegative=True)
    i = 2 + m
    gap = (a**2 + i - 1) * (a**2 + i - 2) - (a + i - 2) ** 2
    return _positive_polynomial(gap.subs(a, 1 + u), u, m)


def _eq11_theory() -> bool:
    return all(
        _close(
            theory.theorem1_score(i, j, dv),
            _eq11(i, j).subs({a: sp.exp(sp.sqrt(dv)), d: dv}).evalf(30),
        )
        for dv in (4, 64, 400)
        for i, j in PAIRS
    )


# -- A.2: Proposition 1 ----------------------------------------------------------------------------


@cache
def _token_moments():
    """(E⟨x_i, x_i⟩, E⟨x_i, x_j⟩) in d and c2 for x = ε + c v, ε, v ~ N(0, I/d) (Eq. (6))."""
    e1, e2, v = sp.symbols("e1 e2 v")  # one coordinate of ε_i, ε_j, v: independent, variance 1/d

    def d_times_mean(quadratic):  # only the squares have a mean (1/d each)
        terms = sp.Poly(sp.expand(quadratic), e1, e2, v).terms()
        return sp.simplify(d * sum(coeff / d for powers, coeff in terms if 2 in powers))

    c = sp.sqrt(c2)
    return d_times_mean((e1 + c * v) ** 2), d_times_mean((e1 + c * v) * (e2 + c * v))


def _eq14_fixed() -> bool:
    same, other = _token_moments()
    anisotropic = same.subs(c2, alpha / (1 - alpha)) - 1 / (1 - alpha)
    return _zero(same.subs(c2, 0) - 1) and _zero(anisotropic) and _zero(other.subs(c2, 0))


def _softmax_diag(score_diag, i):
    """The diagonal weight of row i when every earlier key scores 0."""
    return sp.exp(score_diag) / (sp.exp(score_diag) + i - 1)


def _eq15_printed() -> bool:
    """The printed Eq. (14) gives the diagonal score √d/√d = 1, not √d."""
    e = sp.exp(sp.sqrt(d))
    rows = range(2, N + 1)
    return all(_zero(_softmax_diag(sp.sqrt(d) / sp.sqrt(d), i) - e / (e + i - 1)) for i in rows)


def _eq15_fixed() -> bool:
    e = sp.exp(1 / sp.sqrt(d))
    ok = all(_zero(_softmax_diag(1 / sp.sqrt(d), i) - e / (e + i - 1)) for i in range(2, N + 1))
    for dv in (4, 64, 1024):
        for i in range(1, N + 1):
            for j in range(1, i + 1):
                s = 1 / sp.sqrt(sp.Integer(dv))
                ref = (sp.exp(s) if i == j else 1) / (sp.exp(s) + i - 1)
                ok &= _close(theory.prop1_attention_corrected(i, j, dv), ref.evalf(30))
    return bool(ok)


U, W = sp.symbols("u w", nonnegative=True)


@cache
def _prop1_gram():
    """⟨x_i^(1), x_j^(1)⟩ without normalization for ⟨x_k, x_l⟩ = u δ_kl + w (weight a on itself)."""
    return _mix(1) * (U * sp.eye(N) + W * sp.ones(N, N)) * _mix(1).T


def _model_scores_match(prefactor, norm: str) -> bool:
    """The simulator's layer (model.layer) run twice on tokens with Gram matrix (1 − α)I + α11ᵀ:
    are its S^(2)_ij (i >= j) prefactor(d) ⟨x_i, x_j⟩ / (‖x_i‖ ‖x_j‖), the norms 1 without
    normalization?"""
    ok = True
    lower = np.tril_indices(N)
    for dv in (4.0, 64.0, 1024.0):
        for av in (0.0, 0.5):
            x0 = np.linalg.cholesky((1 - av) * np.eye(N) + av)[None]  # (1, n, n)
            x1, *_ = layer(x0, norm=norm, d=dv, gamma=0.0, eps=0.0, centred=True)
            _, s2, _, _ = layer(x1, norm=norm, d=dv, gamma=0.0, eps=0.0, centred=True)
            inner = x1[0] @ x1[0].T
            norms = np.sqrt(np.outer(np.diag(inner), np.diag(inner))) if norm != "none" else 1.0
            want = (prefactor(dv) * inner / norms)[lower]
            ok &= bool(np.allclose(want, s2[0][lower], rtol=1e-12, atol=0))
    return ok


def _eq19_fixed() -> bool:
    gram = _prop1_gram()
    ok = _zero_for_pairs(lambda i, j: (gram[i - 1, j - 1] - (U / (a + i - 1) + W)) / sp.sqrt(d))
    for dv in (4, 64, 1024):
        for av in (sp.Integer(0), sp.Rational(1, 2)):
            e = sp.exp(1 / sp.sqrt(sp.Integer(dv)))
            for i, j in PAIRS:
                ref = (1 / (e + i - 1) + av / (1 - av)) / sp.sqrt(dv)
                ok &= _close(theory.prop1_score_corrected(i, j, dv, float(av)), ref.evalf(30))
    return bool(ok)


# -- A.3: Propositions 2 and 3 ---------------------------------------------------------------------


def _eq22_holds(claimed) -> bool:
    """E‖x_i^(0)‖² = claimed(d, α) in sympy, and as the diagonal of the sampler's Σ
    (sampling.sigma_cholesky: L Lᵀ = Σ) at d ∈ {4, 64, 1024}, α ∈ {0.3, 0.5, 0.8}?"""
    ok = _zero(_token_moments()[0].subs(c2, alpha / (1 - alpha)) - claimed(d, alpha))
    for av in (0.3, 0.5, 0.8):
        chol = sigma_cholesky(N, float(np.sqrt(av / (1 - av))))
        for dv in (4, 64, 1024):
            want = float(claimed(sp.Integer(dv), sp.Rational(str(av))))
            ok &= bool(np.allclose(np.diag(chol @ chol.T), want, rtol=1e-12, atol=0))
    return bool(ok)


def _y_inner():
    """⟨y_i, y_j⟩ = d ⟨x_i, x_j⟩ / ‖x‖² in the LLN (y = √d x/‖x‖), c² = α/(1 − α)."""
    same, other = _token_moments()
    return (d * other / same).subs(c2, alpha / (1 - alpha))


GAMMA, NX = sp.symbols("gamma nx", positive=True)  # nx = ‖x_j^(0)‖


def _residual_weight():
    """k with γ x_j = k y_j, y_j = √d x_j/‖x_j‖."""
    k = sp.Symbol("k")
    return sp.solve(sp.Eq(GAMMA, k * sp.sqrt(d) / NX), k)[0]


def _residual_printed() -> bool:
    printed = (sp.sqrt(d) * GAMMA * NX, d * GAMMA, GAMMA)  # Eqs. (25), (26)–(32), (33)–(36)
    return any(_zero(p - _residual_weight()) for p in printed)


def _residual_fixed() -> bool:
    target = GAMMA / sp.sqrt(d * (1 - alpha))
    ok = _zero(_residual_weight().subs(NX, 1 / sp.sqrt(1 - alpha)) - target)
    for dv in (4, 64, 4096):
        for av in (0.0, 0.5):
            ref = target.subs({GAMMA: 1, d: dv, alpha: sp.Rational(str(av))}).evalf(30)
            ok &= _close(theory.residual_coefficient(av, 1.0, dv, "rms"), ref)
            layernorm = ref * sp.sqrt(sp.Rational(dv - 1, dv))
            ok &= _close(theory.residual_coefficient(av, 1.0, dv, "layernorm"), layernorm)
    return bool(ok)


@cache
def _gram_residual():
    """⟨x_i, x_j⟩ / d under the LLN with residual weight g: C Gy Cᵀ."""
    gram_y = (1 - alpha) * sp.eye(N) + alpha * sp.ones(N, N)
    return _mix(b, g) * gram_y * _mix(b, g).T


def _eqs28_to_32(i, j):
    """The printed right-hand sides of Eqs. (28)–(32) / d, reading dγ as g."""
    di, dj = a + (i - 1) * b, a + (j - 1) * b
    gi, gj = g * di + a, g * dj + a
    last = alpha * gi + b + alpha * b * (i - 2)
    return (
        (
            alpha * gi * gj
            + alpha * b * gi * (j - 1)
            + alpha * b * gj * (i - 2)
            + b * gj
            + b**2 * (j - 1)
            + alpha * b**2 * (i - 2) * (j - 1)
        )
        / (di * dj),
        (
            (j - 1) * (alpha * b * gi + b**2 + alpha * b**2 * (i - 2))
            + gj * (alpha * gi + alpha * b * (i - 2) + b)
        )
        / (di * dj),
        (b * (j - 1) + g * dj + a) * last / (di * dj),
        dj * (1 + g) * last / (di * dj),
        (1 + g) * last / di,
    )


def _eq36_bracket(D):
    """The numerator of Eq. (36) / d (the radicand of Eq. (41)) at D = D_j."""
    return (
        D**2 * (g**2 + 2 * alpha * g + alpha)
        + D * (1 - alpha) * (2 * g * a + b)
        + (1 - alpha) * (a**2 - a * b)
    )


def _q(D):
    """Eq. (36) / d at D = D_j."""
    return _eq36_bracket(D) / D**2


def _norm_steps(m) -> dict:
    """The printed Eqs. (34), (35), (36) / d, and (34) without its stray d's (m = j − 1)."""
    D = a + m * b
    return {
        "(34)": (
            (g * D + a) ** 2
            + 2 * d * alpha * (g * D + a) * d * b * m
            + b**2 * m
            + d * alpha * b**2 * (m - 1) * m
        )
        / D**2,
        "(34) fixed": (
            (g * D + a) ** 2
            + 2 * alpha * (g * D + a) * b * m
            + b**2 * m
            + alpha * b**2 * (m - 1) * m
        )
        / D**2,
        "(35)": (
            (g * D + a) ** 2
            + 2 * (g * D + a) * alpha * (D - a)
            + b * (D - a)
            + alpha * (D - a - b) * (D - a)
        )
        / D**2,
        "(36)": _q(D),
    }


def _is_diagonal(which: str) -> bool:
    """Is the step ``which`` of :func:`_norm_steps` ‖x_j‖²/d for every j <= N?"""
    gram = _gram_residual()
    return all(_zero(_norm_steps(j - 1)[which] - gram[j - 1, j - 1]) for j in range(1, N + 1))


def _eq36() -> bool:
    m = sp.Symbol("m", nonnegative=True)
    return _is_diagonal("(36)") and _zero(_norm_steps(m)["(35)"] - _norm_steps(m)["(36)"])


def _lln_values(dv, av, j=None) -> dict:
    """Substitutions of a, b, α, d (and D_j for key j) at hidden size dv and anisotropy av."""
    al = sp.Rational(str(av))
    out = {a: sp.exp(sp.sqrt(dv)), b: sp.exp(al * sp.sqrt(dv)), alpha: al, d: dv}
    return out if j is None else {**out, D_J: out[a] + (j - 1) * out[b]}


def _eq36_theory() -> bool:
    ok = True
    for dv in (4, 64, 1024):
        for av in (0.0, 0.5, 0.8):
            for gv in (0.0, 1.0):
                for j in (1, 2, 5):
                    e36 = dv * _q(a + (j - 1) * b).subs(_lln_values(dv, av))
                    ok &= _close(theory.sq_norm_eq36(j, av, gv, dv), e36.subs(g, gv).evalf(30))
                    gc = float(theory.residual_coefficient(av, gv, dv, "layernorm"))
                    ref = e36.subs(g, sp.Float(gc, 30)).evalf(30)
                    ok &= _close(theory.sq_norm_corrected(j, av, gv, dv, "layernorm"), ref)
    return bool(ok)


D_J = sp.Symbol("D_j", positive=True)
D_NEXT = D_J + b  # D_{j+1}


def _eq38() -> bool:
    eq38 = (1 - alpha) * (2 * g * a + b) * (1 / D_NEXT - 1 / D_J) + (1 - alpha) * (a**2 - a * b) * (
        1 / D_NEXT**2 - 1 / D_J**2
    )
    return _zero(_q(D_NEXT) - _q(D_J) - eq38)


def _eq39(first_factor) -> bool:
    """Eq. (39) / d with ``first_factor`` equals ‖x_{j+1}‖² − ‖x_j‖² / d?"""
    eq39 = (1 - alpha) * first_factor * (-b / (D_J * D_NEXT)) + (1 - alpha) * (a**2 - a * b) * (
        -b * (2 * D_J + b) / (D_J**2 * D_NEXT**2)
    )
    return _zero(_q(D_NEXT) - _q(D_J) - eq39)


def _eq39_negative() -> bool:
    """Both terms of (39) < 0 for 0 <= α < 1, g >= 0: 1 − α = p > 0, a = b (1 + u), u > 0."""
    p, u = sp.symbols("p u", positive=True)
    g0 = sp.Symbol("g0", nonnegative=True)
    a_ = b * (1 + u)
    t1 = p * (2 * g0 * a_ + b) * (-b / (D_J * D_NEXT))
    t2 = p * (a_**2 - a_ * b) * (-b * (2 * D_J + b) / (D_J**2 * D_NEXT**2))
    return bool(sp.simplify(t1).is_negative) and bool(sp.factor(t2).is_negative)


def _eq41() -> bool:
    h41 = D_J / (sp.sqrt(d) * sp.sqrt(_eq36_bracket(D_J)))
    ok = _zero(h41**2 - 1 / (d * _q(D_J)))
    for dv in (4, 64, 1024):
        for av in (0.0, 0.5):
            for gv in (0.0, 1.0):
                for j in (1, 3, 7):
                    ref = h41.subs({**_lln_values(dv, av, j), g: gv}).evalf(30)
                    ok &= _close(theory.h_eq41(j, av, gv, dv), ref)
    return bool(ok)


# -- the registry ----------------------------------------------------------------------------------


class Derivation(NamedTuple):
    """A sympy derivation that decides the claim of an :class:`AlgebraStep` (``decide()``)."""

    key: str
    equations: str
    claim: str
    method: str
    decide: Callable[[], bool]

    def run(self, section: str) -> AlgebraStep:
        return AlgebraStep(self.key, section, *self[1:4], bool(self.decide()))


GENERIC = "sympy, generic Gram matrix of the y's, all i > j ≤ 5"
ALL_PAIRS = "sympy, all i > j ≤ 5"
MOMENTS = "sympy: LLN values of ⟨x_i, x_j⟩, y = √d x/‖x‖"
EQ22 = (
    "sympy: E‖x_i‖² = d·E[x_it²], c² = α/(1−α); and the sampler's Σ_ii (sampling.sigma_cholesky) "
    "at d ∈ {4, 64, 1024}, α ∈ {0.3, ½, 0.8}"
)
RESIDUAL = "sympy: solve γ x_j = k y_j with y_j = √d x_j/‖x_j‖"
DIAGONAL = "sympy, j ≤ 5"
SYMBOLIC_D = "sympy, symbolic D_j"
MODEL = (
    "the simulator's layer (recency_lib.model.layer{}) run twice on tokens with Gram matrix "
    "(1−α)I + α11ᵀ, d ∈ {{4, 64, 1024}}, α ∈ {{0, ½}}: its S⁽²⁾ vs {}"
)
EQ40 = MODEL.format(", y = √d x/‖x‖", "the formula on its x⁽¹⁾")

A1 = (  # A.1: Theorem 1
    Derivation(
        "eq7-printed",
        "(7)",
        "Eq. (7) as printed, denominator (e^√d+i−1)(e^√d+i−1), equals ⟨x_i, x_j⟩ for i > j",
        GENERIC,
        lambda: _eq7(printed=True),
    ),
    Derivation(
        "eq7-fixed",
        "(7)",
        "Eq. (7) with denominator (e^√d+i−1)(e^√d+j−1) equals ⟨x_i, x_j⟩ for i > j",
        GENERIC,
        lambda: _eq7(printed=False),
    ),
    Derivation(
        "eq8",
        "(8)",
        "Eq. (8) is the expansion of ⟨x_i, x_j⟩ (no approximation yet)",
        GENERIC,
        lambda: _zero_for_pairs(_eq8),
    ),
    Derivation(
        "eq9",
        "(9)",
        "⟨x_i, x_j⟩ = d(e^√d+j−1)/((e^√d+i−1)(e^√d+j−1)) under ⟨y_k, y_l⟩ = d δ_kl",
        "sympy: C (d I) Cᵀ, all i > j ≤ 5",
        lambda: _zero_for_pairs(
            lambda i, j: _gram_alpha0()[i - 1, j - 1] - (a + j - 1) / ((a + i - 1) * (a + j - 1))
        ),
    ),
    Derivation(
        "eq10",
        "(10)",
        "‖x_i‖² = d(e^{2√d}+i−1)/(e^√d+i−1)² under ⟨y_k, y_l⟩ = d δ_kl",
        "sympy: C (d I) Cᵀ, all i ≤ 5",
        lambda: all(
            _zero(_gram_alpha0()[i - 1, i - 1] - (a**2 + i - 1) / (a + i - 1) ** 2)
            for i in range(1, N + 1)
        ),
    ),
    Derivation(
        "eq11-from-9-10",
        "(9)–(11), (5)",
        "S⁽²⁾_ij = √d⟨x_i,x_j⟩/(‖x_i‖‖x_j‖) with (9), (10) gives Eq. (11) = Eq. (5)",
        "sympy (squares of positive sides), all i > j ≤ 5",
        lambda: _zero_for_pairs(_eq11_from_9_10),
    ),
    Derivation(
        "eq11-increasing",
        "(11)",
        "Eq. (11) strictly increases in j for fixed i (any d > 0)",
        "sympy: ∂_j log S as a ratio of polynomials in u = e^√d − 1 > 0, m = j − 1 ≥ 0 with "
        "positive coefficients",
        _eq11_increasing,
    ),
    Derivation(
        "eq11-diagonal",
        "(5), (11)",
        "S⁽²⁾_ii = √d exceeds S⁽²⁾_{i,i−1} (the last step of Definition 1)",
        "sympy: (S_ii² − S_{i,i−1}²)·(positive) is a polynomial in u = e^√d − 1 > 0, m = i − 2 ≥ 0 "
        "with positive coefficients",
        _eq11_diagonal,
    ),
    Derivation(
        "eq11-theory",
        "(11)",
        "theory.theorem1_score evaluates Eq. (11)",
        "30-digit sympy value vs float64 at d ∈ {4, 64, 400}, all i > j ≤ 5",
        _eq11_theory,
    ),
)

A2 = (  # A.2: Proposition 1
    Derivation(
        "eq14-printed",
        "(14)",
        "⟨x_i, x_i⟩ → √d for x_i ~ N(0, I_d/d) (as printed)",
        "sympy: E⟨x_i, x_i⟩ = d·E[x_it²] (independent Gaussian coordinates)",
        lambda: _zero(_token_moments()[0].subs(c2, 0) - sp.sqrt(d)),
    ),
    Derivation(
        "eq14-fixed",
        "(14)",
        "⟨x_i, x_i⟩ → 1 (1/(1−α) with anisotropy), ⟨x_i, x_j⟩ → 0 for i ≠ j",
        "sympy: E⟨x_i, x_j⟩ = d·E[x_it x_jt] (independent Gaussian coordinates)",
        _eq14_fixed,
    ),
    Derivation(
        "eq15-printed",
        "(13)–(15)",
        "Eq. (15) follows from Eq. (13) with the printed Eq. (14) (⟨x_i, x_i⟩ = √d)",
        "sympy: softmax of the scores ⟨x_i,x_k⟩/√d, i ≤ 5",
        _eq15_printed,
    ),
    Derivation(
        "eq15-fixed",
        "(15)",
        "with ⟨x_i, x_i⟩ = 1: A_ii = a/(a+i−1), A_ij = 1/(a+i−1), a = e^{1/√d} "
        "(theory.prop1_attention_corrected)",
        "sympy softmax; 30-digit values vs float64 at d ∈ {4, 64, 1024}",
        _eq15_fixed,
    ),
    Derivation(
        "eq17-scale",
        "(12), (17)",
        "S⁽²⁾_ij = ⟨x_i⁽¹⁾, x_j⁽¹⁾⟩ without the 1/√d of Eq. (12) (as printed in (17))",
        MODEL.format(", no normalization", "⟨x_i⁽¹⁾, x_j⁽¹⁾⟩"),
        lambda: _model_scores_match(lambda dv: 1.0, "none"),
    ),
    Derivation(
        "eq18-printed",
        "(17)–(18)",
        "Eq. (18) follows from (17) with the printed ⟨x_k, x_k⟩ = √d",
        ALL_PAIRS,
        lambda: _zero_for_pairs(
            lambda i, j: (
                _prop1_gram()[i - 1, j - 1].subs({U: sp.sqrt(d), W: 0})
                - (a + j - 1) / ((a + i - 1) * (a + j - 1))
            )
        ),
    ),
    Derivation(
        "eq19-form",
        "(14), (17)–(19)",
        "with the printed (14) and the 1/√d restored, S⁽²⁾_ij = 1/(E+i−1) as (19) prints "
        "(the two slips cancel in form)",
        ALL_PAIRS,
        lambda: _zero_for_pairs(
            lambda i, j: (
                _prop1_gram()[i - 1, j - 1].subs({U: sp.sqrt(d), W: 0}) / sp.sqrt(d)
                - 1 / (a + i - 1)
            )
        ),
    ),
    Derivation(
        "eq19-fixed",
        "(19)",
        "corrected S⁽²⁾_ij = (1/(a+i−1) + c²)/√d, a = e^{1/√d}, the same for every j < i "
        "(theory.prop1_score_corrected)",
        "sympy with ⟨x_k, x_l⟩ = δ_kl + c²; 30-digit values vs float64, d ∈ {4, 64, 1024}, "
        "α ∈ {0, ½}",
        _eq19_fixed,
    ),
)

A3 = (  # A.3: Propositions 2 and 3
    Derivation(
        "eq22-printed",
        "(22)",
        "‖x_i‖² → √d/(1−α) (as printed)",
        EQ22,
        lambda: _eq22_holds(lambda dd, al: sp.sqrt(dd) / (1 - al)),
    ),
    Derivation(
        "eq22-fixed",
        "(22)",
        "‖x_i⁽⁰⁾‖² → 1/(1−α)",
        EQ22,
        lambda: _eq22_holds(lambda dd, al: 1 / (1 - al)),
    ),
    Derivation(
        "eq23-printed",
        "(23)",
        "⟨y_i, y_j⟩ → √d·α for i ≠ j (as printed)",
        MOMENTS,
        lambda: _zero(_y_inner() - sp.sqrt(d) * alpha),
    ),
    Derivation(
        "eq23-fixed",
        "(23), (25)",
        "⟨y_i, y_j⟩ → dα, i.e. off-diagonal score √d·α: the weight e^{√dα} that (25) uses",
        MOMENTS,
        lambda: (
            _zero(_y_inner() - d * alpha) and _zero(_y_inner() / sp.sqrt(d) - sp.sqrt(d) * alpha)
        ),
    ),
    Derivation(
        "residual-printed",
        "(25), (26), (33)",
        "a printed residual weight of y_j (√dγ‖x‖, dγ or γ) is right",
        RESIDUAL,
        _residual_printed,
    ),
    Derivation(
        "residual-fixed",
        "(25), (26), (33)",
        "the residual weight of y_j is g = γ‖x_j⁽⁰⁾‖/√d = γ/√(d(1−α)) (× √((d−1)/d) for LayerNorm; "
        "theory.residual_coefficient)",
        "sympy; 30-digit values vs float64, d ∈ {4, 64, 4096}",
        _residual_fixed,
    ),
    Derivation(
        "eq28-32",
        "(27)–(32)",
        "each of Eqs. (28)–(32) equals ⟨x_i, x_j⟩/d for i > j "
        "(reading dγ as the residual weight g)",
        "sympy vs C Gy Cᵀ, ⟨y_k,y_l⟩ = d((1−α)δ_kl + α), all i > j ≤ 5",
        lambda: all(
            _zero(step - _gram_residual()[i - 1, j - 1])
            for i, j in PAIRS
            for step in _eqs28_to_32(i, j)
        ),
    ),
    Derivation(
        "eq32-flat",
        "(32)",
        "⟨x_i, x_j⟩ does not depend on j < i (so only ‖x_j‖ orders a row)",
        ALL_PAIRS,
        lambda: _zero_for_pairs(
            lambda i, j: _gram_residual()[i - 1, j - 1] - _gram_residual()[i - 1, 0]
        ),
    ),
    Derivation(
        "eq33",
        "(33)",
        "Eq. (33) is ‖x_j‖² with γ in the role of the residual weight g (internally consistent)",
        "sympy: (33) = C Gy Cᵀ diagonal, j ≤ 5",
        lambda: _is_diagonal("(34) fixed"),
    ),
    Derivation(
        "eq34-printed",
        "(34)",
        "Eq. (34) as printed (factors d in 2dα(…)d e^{α√d} and dα e^{2α√d}) equals ‖x_j‖²/d",
        DIAGONAL,
        lambda: _is_diagonal("(34)"),
    ),
    Derivation(
        "eq34-fixed",
        "(34)",
        "Eq. (34) without the stray factors d equals ‖x_j‖²/d",
        DIAGONAL,
        lambda: _is_diagonal("(34) fixed"),
    ),
    Derivation("eq35", "(35)", "Eq. (35) equals ‖x_j‖²/d", DIAGONAL, lambda: _is_diagonal("(35)")),
    Derivation(
        "eq36",
        "(35)–(36)",
        "Eq. (36) equals ‖x_j‖²/d, and (35) = (36) for symbolic j",
        "sympy, j ≤ 5 and symbolic m = j − 1",
        _eq36,
    ),
    Derivation(
        "eq36-theory",
        "(36)",
        "theory.sq_norm_eq36 evaluates (36); theory.sq_norm_corrected is (36) with γ → g",
        "30-digit sympy values vs float64, d ∈ {4, 64, 1024}, α ∈ {0, ½, 0.8}, γ ∈ {0, 1}",
        _eq36_theory,
    ),
    Derivation(
        "eq38",
        "(37)–(38)",
        "Eq. (38) (÷ d) equals ‖x_{j+1}‖² − ‖x_j‖² from (36), D_{j+1} = D_j + e^{α√d}",
        SYMBOLIC_D,
        _eq38,
    ),
    Derivation(
        "eq39-printed",
        "(39)",
        "Eq. (39) as printed (first factor 2γe + e^{α√d}) equals ‖x_{j+1}‖² − ‖x_j‖² (÷ d)",
        SYMBOLIC_D,
        lambda: _eq39(2 * g * sp.E + b),
    ),
    Derivation(
        "eq39-fixed",
        "(39)",
        "Eq. (39) with 2γe^{√d} + e^{α√d} equals ‖x_{j+1}‖² − ‖x_j‖² (÷ d)",
        SYMBOLIC_D,
        lambda: _eq39(2 * g * a + b),
    ),
    Derivation(
        "eq39-sign",
        "(39)",
        "both terms of (the fixed) Eq. (39) are < 0 for 0 ≤ α < 1 and residual weight ≥ 0, "
        "so ‖x_j‖ strictly decreases in j",
        "sympy sign with positive symbols: 1 − α = p > 0, e^√d = e^{α√d}(1 + u), u > 0",
        _eq39_negative,
    ),
    Derivation(
        "eq40-printed",
        "(40)",
        "S⁽²⁾_ij = d⟨x_i,x_j⟩/(‖x_i‖‖x_j‖) (as printed in (40) and before (33))",
        EQ40,
        lambda: _model_scores_match(lambda dv: dv, "rms"),
    ),
    Derivation(
        "eq40-fixed",
        "(40), (11)",
        "S⁽²⁾_ij = √d⟨x_i,x_j⟩/(‖x_i‖‖x_j‖) (as in (11)); the prefactor is a row constant",
        EQ40,
        lambda: _model_scores_match(np.sqrt, "rms"),
    ),
    Derivation(
        "eq41",
        "(40)–(41)",
        "h(j) of Eq. (41) is 1/‖x_j‖ = (Eq. (36))^{−1/2} (theory.h_eq41)",
        "sympy; 30-digit values vs float64, d ∈ {4, 64, 1024}",
        _eq41,
    ),
)

CHECKS: dict[str, tuple[Derivation, ...]] = {"A.1": A1, "A.2": A2, "A.3": A3}


def run_all_timed() -> tuple[list[AlgebraStep], float]:
    """Every check, in the order of the appendix, and the seconds they took."""
    t0 = time.perf_counter()
    steps = [c.run(section) for section, checks in CHECKS.items() for c in checks]
    return steps, time.perf_counter() - t0
