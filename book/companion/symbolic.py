"""Sympy checks of the algebra of the paper's Appendix A, one claim per check (:data:`CHECKS`).

A claim about a printed step reads "the printed form is right", so a typo comes out False and the
corrected form beside it True; each claim's words are in ``assets/sympy_checks.toml``, by key.
Notation (the paper's, 1-based, i = query, j = key): a = e^√d, b = e^{α√d},
D_j = a + (j − 1) b (Eqs. (25)–(26)); under the LLN ⟨y_k, y_l⟩ = d((1 − α)δ_kl + α);
g is the residual weight of y_j. "Equal" means sympy.cancel(lhs − rhs) == 0, for every pair
i > j ≤ N where the equation is indexed.
"""

from __future__ import annotations

import time
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from itertools import product
from pathlib import Path

import numpy as np
import sympy as sp

from recency_lib import theory
from recency_lib.model import already_centred, layer
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
    """(X, G): X = C G Cᵀ = ⟨x_i, x_j⟩, G a generic symmetric Gram matrix of y's (no LLN)."""
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
    """∂_j log S as a ratio of polynomials in u = a − 1 > 0, m = j − 1 >= 0, with
    coefficients > 0."""
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
    """S_ii = √d > S_{i,i−1}: (a+i−2)² < (a²+i−1)(a²+i−2) for a > 1, i >= 2."""
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
    """(E⟨x_i, x_i⟩, E⟨x_i, x_j⟩) in d and c2 for x = ε + c v, ε, v ~ N(0, I/d)
    (Eq. (6))."""
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


def _diagonal_weight_is(score, e) -> bool:
    """Is row i's diagonal weight e/(e + i − 1) if it scores ``score``, earlier keys 0?"""
    weight = sp.exp(score)
    return all(_zero(weight / (weight + i - 1) - e / (e + i - 1)) for i in range(2, N + 1))


def _eq15_fixed() -> bool:
    ok = _diagonal_weight_is(1 / sp.sqrt(d), sp.exp(1 / sp.sqrt(d)))
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
    """⟨x_i^(1), x_j^(1)⟩, no normalization, ⟨x_k, x_l⟩ = u δ_kl + w (self-weight a)."""
    return _mix(1) * (U * sp.eye(N) + W * sp.ones(N, N)) * _mix(1).T


def _model_scores_match(prefactor, norm: str) -> bool:
    """The simulator's layer (model.layer) run twice on tokens with Gram matrix
    (1 − α)I + α11ᵀ: are its S^(2)_ij (i >= j) prefactor(d) ⟨x_i, x_j⟩ /
    (‖x_i‖ ‖x_j‖), the norms 1 without normalization?"""
    ok = True
    lower = np.tril_indices(N)
    for dv, av in product((4.0, 64.0, 1024.0), (0.0, 0.5)):
        x0 = np.linalg.cholesky((1 - av) * np.eye(N) + av)[None]  # (1, n, n)
        x1, *_ = layer(x0, norm=norm, d=dv, gamma=0.0, eps=0.0, centre=already_centred)
        _, s2, _, _ = layer(x1, norm=norm, d=dv, gamma=0.0, eps=0.0, centre=already_centred)
        inner = x1[0] @ x1[0].T
        norms = np.sqrt(np.outer(np.diag(inner), np.diag(inner))) if norm != "none" else 1.0
        want = (prefactor(dv) * inner / norms)[lower]
        ok &= bool(np.allclose(want, s2[0][lower], rtol=1e-12, atol=0))
    return ok


def _eq19_fixed() -> bool:
    gram = _prop1_gram()
    ok = _zero_for_pairs(lambda i, j: (gram[i - 1, j - 1] - (U / (a + i - 1) + W)) / sp.sqrt(d))
    for dv, av, (i, j) in product((4, 64, 1024), (sp.Integer(0), sp.Rational(1, 2)), PAIRS):
        e = sp.exp(1 / sp.sqrt(sp.Integer(dv)))
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
    """⟨y_i, y_j⟩ = d ⟨x_i, x_j⟩ / ‖x‖² in the LLN (y = √d x/‖x‖),
    c² = α/(1 − α)."""
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
    for dv, av in product((4, 64, 4096), (0.0, 0.5)):
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
    for dv, av, gv, j in product((4, 64, 1024), (0.0, 0.5, 0.8), (0.0, 1.0), (1, 2, 5)):
        e36 = dv * _q(a + (j - 1) * b).subs(_lln_values(dv, av))
        ok &= _close(theory.sq_norm_eq36(j, av, gv, dv), e36.subs(g, gv).evalf(30))
        gc = float(theory.residual_coefficient(av, gv, dv, "layernorm"))  # γ -> g
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
    for dv, av, gv, j in product((4, 64, 1024), (0.0, 0.5), (0.0, 1.0), (1, 3, 7)):
        ref = h41.subs({**_lln_values(dv, av, j), g: gv}).evalf(30)
        ok &= _close(theory.h_eq41(j, av, gv, dv), ref)
    return bool(ok)


# -- the registry ----------------------------------------------------------------------------------


def _eq9_form(i, j):
    """⟨x_i, x_j⟩ / d of Eqs. (9) and (18)."""
    return (a + j - 1) / ((a + i - 1) * (a + j - 1))


def _prop1_printed(i, j):
    """⟨x_i^(1), x_j^(1)⟩, no normalization, from Eq. (14)'s printed ⟨x_k, x_k⟩ = √d."""
    return _prop1_gram()[i - 1, j - 1].subs({U: sp.sqrt(d), W: 0})


#: Section of the appendix -> check key -> the derivation that decides its claim. What each check
#: claims and how, as the book prints it: ``assets/sympy_checks.toml``, by key (:data:`TEXTS`).
CHECKS: dict[str, dict[str, Callable[[], bool]]] = {
    "A.1": {  # Theorem 1
        "eq7-printed": lambda: _eq7(printed=True),
        "eq7-fixed": lambda: _eq7(printed=False),
        "eq8": lambda: _zero_for_pairs(_eq8),
        "eq9": lambda: _zero_for_pairs(lambda i, j: _gram_alpha0()[i - 1, j - 1] - _eq9_form(i, j)),
        "eq10": lambda: all(
            _zero(_gram_alpha0()[i - 1, i - 1] - (a**2 + i - 1) / (a + i - 1) ** 2)
            for i in range(1, N + 1)
        ),
        "eq11-from-9-10": lambda: _zero_for_pairs(_eq11_from_9_10),
        "eq11-increasing": _eq11_increasing,
        "eq11-diagonal": _eq11_diagonal,
        "eq11-theory": _eq11_theory,
    },
    "A.2": {  # Proposition 1
        "eq14-printed": lambda: _zero(_token_moments()[0].subs(c2, 0) - sp.sqrt(d)),
        "eq14-fixed": _eq14_fixed,
        # the printed Eq. (14) gives the diagonal score √d/√d = 1, not √d
        "eq15-printed": lambda: _diagonal_weight_is(sp.sqrt(d) / sp.sqrt(d), sp.exp(sp.sqrt(d))),
        "eq15-fixed": _eq15_fixed,
        "eq17-scale": lambda: _model_scores_match(lambda dv: 1.0, "none"),
        "eq18-printed": lambda: _zero_for_pairs(
            lambda i, j: _prop1_printed(i, j) - _eq9_form(i, j)
        ),
        "eq19-form": lambda: _zero_for_pairs(
            lambda i, j: _prop1_printed(i, j) / sp.sqrt(d) - 1 / (a + i - 1)
        ),
        "eq19-fixed": _eq19_fixed,
    },
    "A.3": {  # Propositions 2 and 3
        "eq22-printed": lambda: _eq22_holds(lambda dd, al: sp.sqrt(dd) / (1 - al)),
        "eq22-fixed": lambda: _eq22_holds(lambda dd, al: 1 / (1 - al)),
        "eq23-printed": lambda: _zero(_y_inner() - sp.sqrt(d) * alpha),
        "eq23-fixed": lambda: (
            _zero(_y_inner() - d * alpha) and _zero(_y_inner() / sp.sqrt(d) - sp.sqrt(d) * alpha)
        ),
        "residual-printed": _residual_printed,
        "residual-fixed": _residual_fixed,
        "eq28-32": lambda: all(
            _zero(step - _gram_residual()[i - 1, j - 1])
            for i, j in PAIRS
            for step in _eqs28_to_32(i, j)
        ),
        "eq32-flat": lambda: _zero_for_pairs(
            lambda i, j: _gram_residual()[i - 1, j - 1] - _gram_residual()[i - 1, 0]
        ),
        "eq33": lambda: _is_diagonal("(34) fixed"),
        "eq34-printed": lambda: _is_diagonal("(34)"),
        "eq34-fixed": lambda: _is_diagonal("(34) fixed"),
        "eq35": lambda: _is_diagonal("(35)"),
        "eq36": _eq36,
        "eq36-theory": _eq36_theory,
        "eq38": _eq38,
        "eq39-printed": lambda: _eq39(2 * g * sp.E + b),
        "eq39-fixed": lambda: _eq39(2 * g * a + b),
        "eq39-sign": _eq39_negative,
        "eq40-printed": lambda: _model_scores_match(lambda dv: dv, "rms"),
        "eq40-fixed": lambda: _model_scores_match(np.sqrt, "rms"),
        "eq41": _eq41,
    },
}
TEXTS = tomllib.loads((Path(__file__).parent / "assets" / "sympy_checks.toml").read_text("utf-8"))


def steps(holds: dict[str, bool]) -> list[AlgebraStep]:
    """The checks with their verdicts ``holds`` (key -> bool), in the order of the appendix."""
    return [
        AlgebraStep(key, section, **TEXTS[key], holds=holds[key])
        for section, checks in CHECKS.items()
        for key in checks
    ]


def run_all_timed() -> tuple[list[AlgebraStep], float]:
    """Every check, in the order of the appendix, and the seconds they took."""
    t0 = time.perf_counter()
    holds = {key: bool(decide()) for checks in CHECKS.values() for key, decide in checks.items()}
    return steps(holds), time.perf_counter() - t0
