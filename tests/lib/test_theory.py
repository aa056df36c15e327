"""Tests of recency_lib.theory: accuracy against high-precision evaluation of the printed
formulas, stability up to d = 1e6, the paper's monotonicity claims, agreement (and the measured
disagreement) between printed closed forms and the LLN recursion, and input validation. The
symbolic (sympy) checks of the Appendix A algebra are companion.symbolic's, pinned by
tests/book/test_appendix_checks.py.

Equation numbers refer to the paper (Kim et al., "LayerNorm Induces Recency Bias in Transformer
Decoders"). Indices are 1-based, as in the paper.
"""

import math

import mpmath as mp
import numpy as np
import pytest

from recency_lib import theory

DS = [1, 4, 64, 1024, 1e4, 1e6]
ALPHAS = [0.0, 0.2, 0.4, 0.6, 0.8, 0.999, 1.0]
GAMMAS = [0.0, 0.5, 1.0]
IDX = [1, 2, 3, 10, 100]

# Float64 vs 60-digit reference. Each closed form is a few dozen roundings (<= 1.1e-16 each) plus
# exp(-(1 - alpha) sqrt(d)), whose relative error is about |argument| * 1.1e-16 <= 1.1e-13 at
# d = 1e6 (sqrt(d) = 1000). 1e-12 leaves a margin of ~10 over that worst case.
RTOL = 1e-12
TINY = 1e-300  # reference values below this underflow in float64; the code must give ~0 too

mp.mp.dps = 60


def assert_close_to_reference(got, ref):
    got, ref = float(got), float(ref)
    if abs(ref) < TINY:
        assert abs(got) < TINY, (got, ref)
    else:
        assert abs(got - ref) <= RTOL * abs(ref), (got, ref, abs(got / ref - 1))


# -- literal high-precision transcriptions of the printed equations -------------------------------


def mp_eq11(i, j, d):
    sd = mp.sqrt(mp.mpf(d))
    a = mp.e**sd
    return sd * (a + j - 1) / mp.sqrt((a**2 + i - 1) * (a**2 + j - 1))


def mp_eq15(i, j, d):
    a = mp.e ** mp.sqrt(mp.mpf(d))
    if i == j:
        return a / (a + i - 1)
    return 1 / (a + i - 1) if i > j else mp.mpf(0)


def mp_eq19(i, d):
    return 1 / (mp.e ** mp.sqrt(mp.mpf(d)) + i - 1)


def _mp_eq36_parts(j, alpha, gamma, d):
    """sqrt(d), D_j and the bracket of Eqs. (36) and (41), in mpmath."""
    alpha, gamma, d = mp.mpf(alpha), mp.mpf(gamma), mp.mpf(d)
    sd = mp.sqrt(d)
    dj = mp.e**sd + mp.e ** (alpha * sd) * (j - 1)
    top = (
        dj**2 * (gamma**2 + 2 * alpha * gamma + alpha)
        + dj * (1 - alpha) * (2 * gamma * mp.e**sd + mp.e ** (alpha * sd))
        + (1 - alpha) * (mp.e ** (2 * sd) - mp.e ** (sd + sd * alpha))
    )
    return sd, dj, top


def mp_eq36(j, alpha, gamma, d):
    _sd, dj, top = _mp_eq36_parts(j, alpha, gamma, d)
    return mp.mpf(d) * top / dj**2


def mp_eq41(j, alpha, gamma, d):
    sd, dj, inner = _mp_eq36_parts(j, alpha, gamma, d)
    return dj / (sd * mp.sqrt(inner))


def mp_layer1_gram(n, alpha, g, d):
    """Gram of x^(1) by brute force in mpmath: C Gy C^T with the weights of Eqs. (25)-(26)."""
    alpha, d = mp.mpf(alpha), mp.mpf(d)
    sd = mp.sqrt(d)
    a, b = mp.e**sd, mp.e ** (alpha * sd)
    c = mp.zeros(n, n)
    for row in range(n):
        den = a + row * b
        for col in range(row):
            c[row, col] = b / den
        c[row, row] = a / den + g
    gy = mp.matrix([[d * (1 if k == m else alpha) for m in range(n)] for k in range(n)])
    return c * gy * c.T


# -- accuracy against the printed equations, all d ------------------------------------------------


@pytest.mark.parametrize("d", DS)
def test_theorem1_score_matches_eq11_high_precision(d):
    for i in IDX:
        for j in range(1, i):
            assert_close_to_reference(theory.theorem1_score(i, j, d), mp_eq11(i, j, d))


@pytest.mark.parametrize("d", DS)
def test_prop1_printed_match_eqs_15_and_19(d):
    for i in IDX:
        for j in range(1, i + 2):
            assert_close_to_reference(theory.prop1_attention(i, j, d), mp_eq15(i, j, d))
        for j in range(1, i):
            assert_close_to_reference(theory.prop1_score(i, j, d), mp_eq19(i, d))


@pytest.mark.parametrize("d", DS)
def test_sq_norm_eq36_and_h_eq41_match_printed(d):
    for alpha in ALPHAS:
        for gamma in GAMMAS:
            for j in [1, 2, 3, 10, 100, 10**6]:
                assert_close_to_reference(
                    theory.sq_norm_eq36(j, alpha, gamma, d), mp_eq36(j, alpha, gamma, d)
                )
                assert_close_to_reference(
                    theory.h_eq41(j, alpha, gamma, d), mp_eq41(j, alpha, gamma, d)
                )


@pytest.mark.parametrize("d", [1, 4, 64, 1024])
def test_direct_float64_evaluation_where_it_is_safe(d):
    # Up to d = 1024, e^{2 sqrt d} <= e^64 does not overflow; Eq. (11) has no subtraction and
    # Eq. (36) subtracts e^{sqrt d + alpha sqrt d} from e^{2 sqrt d}, which loses at most
    # log2(1 / (1 - e^{-0.2 sqrt d})) < 3 bits for alpha <= 0.8, d >= 1.  Hence 1e-12 again.
    a = math.exp(math.sqrt(d))
    for i in IDX:
        for j in range(1, i):
            direct = math.sqrt(d) * (a + j - 1) / math.sqrt((a * a + i - 1) * (a * a + j - 1))
            assert theory.theorem1_score(i, j, d) == pytest.approx(direct, rel=RTOL)
    for alpha in [0.0, 0.2, 0.5, 0.8]:
        b = math.exp(alpha * math.sqrt(d))
        for gamma in [0.0, 1.0]:
            for j in [1, 2, 10, 100]:
                dj = a + b * (j - 1)
                direct = (
                    d
                    * (
                        dj**2 * (gamma**2 + 2 * alpha * gamma + alpha)
                        + dj * (1 - alpha) * (2 * gamma * a + b)
                        + (1 - alpha) * (a * a - a * b)
                    )
                    / dj**2
                )
                assert theory.sq_norm_eq36(j, alpha, gamma, d) == pytest.approx(direct, rel=RTOL)


@pytest.mark.parametrize("d", DS)
def test_corrected_forms_match_brute_force_gram(d):
    # score2_corrected and sq_norm_corrected are closed forms of the layer-1 Gram matrix; compare
    # with the 60-digit matrix product C Gy C^T (rms: no (d - 1)/d factor).
    n = 6
    for alpha in [0.0, 0.3, 0.8]:
        for gamma in [0.0, 1.0]:
            g = mp.mpf(gamma) * mp.sqrt(1 / ((1 - mp.mpf(alpha)) * mp.mpf(d)))
            gram = mp_layer1_gram(n, alpha, g, d)
            for i in range(1, n + 1):
                assert_close_to_reference(
                    theory.sq_norm_corrected(i, alpha, gamma, d, "rms"), gram[i - 1, i - 1]
                )
                for j in range(1, i):
                    ref = (
                        mp.sqrt(d)
                        * gram[i - 1, j - 1]
                        / mp.sqrt(gram[i - 1, i - 1] * gram[j - 1, j - 1])
                    )
                    assert_close_to_reference(
                        theory.score2_corrected(i, j, alpha, gamma, d, "rms"), ref
                    )


@pytest.mark.parametrize("d", DS)
def test_prop1_corrected_high_precision(d):
    for alpha in [0.0, 0.5, 0.999]:
        al = mp.mpf(alpha)
        u, w = mp.mpf(1), al / (1 - al)
        sd = mp.sqrt(mp.mpf(d))
        a = mp.e ** (u / sd)
        for i in IDX:
            assert_close_to_reference(
                theory.prop1_attention_corrected(i, i, d, alpha), a / (a + i - 1)
            )
            assert_close_to_reference(
                theory.prop1_score_corrected(i, i, d, alpha),
                (u * (a * a + i - 1) / (a + i - 1) ** 2 + w) / sd,
            )
            for j in range(1, i):
                assert_close_to_reference(
                    theory.prop1_attention_corrected(i, j, d, alpha), 1 / (a + i - 1)
                )
                assert_close_to_reference(
                    theory.prop1_score_corrected(i, j, d, alpha), (u / (a + i - 1) + w) / sd
                )


# -- stability -------------------------------------------------------------------------------------


@pytest.mark.parametrize("d", DS)
def test_everything_finite(d):
    i = np.arange(1, 51)[:, None]
    j = np.arange(1, 51)[None, :]
    lower = np.broadcast_to(i >= j, (50, 50))
    for f in (
        theory.theorem1_score,
        theory.prop1_score,
        theory.prop1_attention,
        theory.prop1_attention_corrected,
        theory.prop1_score_corrected,
    ):
        v = f(i, j, d)
        assert np.all(np.isfinite(v[i > j]) if f is theory.prop1_score else np.isfinite(v[lower]))
    for alpha in ALPHAS:
        for gamma in GAMMAS:
            jj = np.arange(1, 51)
            for f in (theory.sq_norm_eq36, theory.h_eq41):
                assert np.all(np.isfinite(f(jj, alpha, gamma, d)))
            if d > 1:
                for norm in ("layernorm", "rms"):
                    assert np.all(np.isfinite(theory.h_corrected(jj, alpha, gamma, d, norm)))
                    s2 = theory.score2_corrected(i, j, alpha, gamma, d, norm)
                    assert np.all(np.isfinite(s2[lower]))
                    assert np.all(np.isnan(s2[~lower]))


@pytest.mark.parametrize("norm", ["layernorm", "rms", "none"])
@pytest.mark.parametrize("gamma", [0.0, 1.0])
@pytest.mark.parametrize("alpha", [0.0, 0.5, 1.0])
def test_lln_limit_finite_at_large_d(norm, gamma, alpha):
    out = theory.lln_limit(alpha, gamma, 1e6, 12, 5, norm)
    lower = np.tri(12, dtype=bool)
    assert out["scores"].shape == (5, 12, 12) and out["attention"].shape == (5, 12, 12)
    assert out["sq_norms"].shape == (5, 12) and out["gram"].shape == (6, 12, 12)
    assert np.all(np.isfinite(out["scores"][:, lower]))
    assert np.all(np.isnan(out["scores"][:, ~lower]))
    assert np.all(np.isfinite(out["sq_norms"])) and np.all(out["sq_norms"] > 0)
    assert np.all(out["attention"][:, ~lower] == 0)
    # rows of a softmax sum to 1 up to n roundings
    np.testing.assert_allclose(out["attention"].sum(-1), 1.0, rtol=0, atol=1e-14)


# -- shapes, broadcasting, diagonal conventions ---------------------------------------------------


def test_broadcasting_and_masking():
    n, d = 7, 64.0
    i, j = np.arange(1, n + 1)[:, None], np.arange(1, n + 1)[None, :]
    s = theory.theorem1_score(i, j, d)
    assert s.shape == (n, n)
    assert np.all(np.isnan(s[np.triu_indices(n, 1)]))
    np.testing.assert_array_equal(np.diag(s), math.sqrt(d))
    assert isinstance(theory.theorem1_score(3, 2, d), np.floating)
    assert theory.h_eq41(np.arange(1, 5), [[0.0], [0.5]], 1.0, d).shape == (2, 4)
    a = theory.prop1_attention(i, j, d)
    np.testing.assert_allclose(a.sum(1), 1.0, rtol=1e-15)
    assert np.all(np.isnan(np.diag(theory.prop1_score(i, j, d))))


# -- monotonicity (the paper's claims) ------------------------------------------------------------


@pytest.mark.parametrize("d", [1, 4, 16, 64, 256])
def test_theorem1_score_increasing_in_j(d):
    # Up to d = 256 the increments (order e^{-2 sqrt d} relative, >= 1e-14) exceed float spacing.
    n = 40
    i, j = np.arange(1, n + 1)[:, None], np.arange(1, n + 1)[None, :]
    s = theory.theorem1_score(i, j, d)
    for row in range(1, n):
        assert np.all(np.diff(s[row, : row + 1]) > 0), row  # includes the diagonal step


@pytest.mark.parametrize("d", [1, 4, 16, 64])
@pytest.mark.parametrize("gamma", [0.0, 1.0])
def test_h_increasing_in_j(d, gamma):
    # Eqs. (37)-(39): ||x_j^(1)|| strictly decreases in j for alpha < 1, gamma >= 0.
    j = np.arange(1, 60)
    for alpha in [0.0, 0.2, 0.4, 0.6, 0.8]:
        assert np.all(np.diff(theory.h_eq41(j, alpha, gamma, d)) > 0)
        if d > 1:
            assert np.all(np.diff(theory.h_corrected(j, alpha, gamma, d)) > 0)


def test_prop1_corrected_is_flat_in_j():
    # Prop. 1's conclusion survives the correction: no dependence on j for i > j.
    for d in [4, 64, 1024]:
        s = theory.prop1_score_corrected(10, np.arange(1, 10), d, 0.3)
        assert np.ptp(s) == 0.0


# -- known limits ----------------------------------------------------------------------------------


def test_theorem1_large_d_limit():
    # Eq. (5) = sqrt(d) e^{-sqrt d} (1 + (j-1) t) / sqrt((1 + (i-1) t^2)(1 + (j-1) t^2)),
    # t = e^{-sqrt d}: the ratio to sqrt(d) e^{-sqrt d} is within (j - 1) t of 1 (plus rounding).
    i, j = 10, 9
    for d in [16, 64, 1024, 1e4]:
        t = math.exp(-math.sqrt(d))
        ratio = theory.theorem1_score(i, j, d) / (math.sqrt(d) * t)
        assert abs(ratio - 1) <= (j - 1) * t + 4e-16
    assert theory.theorem1_score(10, 9, 1e6) == 0.0  # sqrt(d) e^{-sqrt d} ~ 1e-431: underflow


def test_theorem1_d1_value():
    e = math.e
    assert theory.theorem1_score(3, 2, 1) == pytest.approx(
        (e + 1) / math.sqrt((e * e + 2) * (e * e + 1)), rel=1e-15
    )


def test_eq36_special_values():
    # j = 1: only the diagonal term, ||x_1||^2 = d (1 + gamma)^2 for every alpha.
    # alpha = 1: all tokens equal, ||x_j||^2 = d (1 + gamma)^2 for every j.
    # j -> infinity (alpha < 1): d ((1 - alpha) gamma^2 + alpha (1 + gamma)^2).
    for d in [1, 64, 1e6]:
        for gamma in GAMMAS:
            for alpha in ALPHAS:
                assert theory.sq_norm_eq36(1, alpha, gamma, d) == pytest.approx(
                    d * (1 + gamma) ** 2, rel=1e-15
                )
            assert theory.sq_norm_eq36(np.arange(1, 9), 1.0, gamma, d) == pytest.approx(
                d * (1 + gamma) ** 2, rel=1e-15
            )
            far = theory.sq_norm_eq36(1e300, 0.5, gamma, 4.0)
            assert far == pytest.approx(4.0 * (0.5 * gamma**2 + 0.5 * (1 + gamma) ** 2), rel=1e-14)


def test_h_flat_at_huge_d():
    # t = e^{-(1 - alpha) sqrt d} underflows at d = 1e6 (alpha <= 0.8):
    # h(j) = 1 / (sqrt(d) (1 + gamma)).
    for alpha in [0.0, 0.4, 0.8]:
        for gamma in [0.0, 1.0]:
            h = theory.h_eq41(np.arange(1, 20), alpha, gamma, 1e6)
            np.testing.assert_allclose(h, 1 / (1000 * (1 + gamma)), rtol=1e-15)


def test_prop1_corrected_tends_to_uniform():
    # a = e^{1/sqrt d} = 1 + 1/sqrt d + ..., so A_ij = 1/i + O(1/(i sqrt d));
    # at d = 1e6 within 1e-3/i.
    for i in [2, 5, 10]:
        a = theory.prop1_attention_corrected(i, np.arange(1, i + 1), 1e6)
        assert np.all(np.abs(a - 1 / i) <= 1.01e-3 / i)


# -- LLN recursion vs the closed forms ------------------------------------------------------------

ALL_IJ = (np.arange(1, 11)[:, None], np.arange(1, 11)[None, :])


@pytest.mark.parametrize("norm", ["layernorm", "rms"])
@pytest.mark.parametrize("d", [4, 64, 1024])
def test_lln_layer2_equals_eq5(norm, d):
    # Eq. (5)/(11) is exactly the LLN limit at alpha = gamma = 0 (for LayerNorm the (d-1)/d
    # centring factor cancels without a residual). The recursion sums positive terms only,
    # so agreement to ~10 roundings: 1e-13.
    out = theory.lln_limit(0.0, 0.0, d, 10, 2, norm)
    eq5 = theory.theorem1_score(*ALL_IJ, d)
    lower = np.tri(10, dtype=bool)
    np.testing.assert_allclose(out["scores"][1][lower], eq5[lower], rtol=1e-13)


@pytest.mark.parametrize("d", [4, 64, 1024])
def test_lln_none_matches_prop1_corrected(d):
    out = theory.lln_limit(0.3, 0.0, d, 10, 2, "none")
    lower = np.tri(10, dtype=bool)
    np.testing.assert_allclose(
        out["attention"][0],
        theory.prop1_attention_corrected(*ALL_IJ, d, 0.3),
        rtol=1e-13,
        atol=1e-16,
    )
    np.testing.assert_allclose(
        out["scores"][1][lower], theory.prop1_score_corrected(*ALL_IJ, d, 0.3)[lower], rtol=1e-13
    )


@pytest.mark.parametrize("d", [64, 1024])
def test_printed_prop1_disagrees_with_lln(d):
    # The printed Eq. (15) puts ~all weight on the diagonal (e^{sqrt d} >= e^8); the LLN puts
    # ~1/i everywhere (e^{1/sqrt d} <= e^{1/8}).
    strict = np.tri(10, k=-1, dtype=bool)
    out0 = theory.lln_limit(0.0, 0.0, d, 10, 2, "none")
    printed = theory.prop1_attention(*ALL_IJ, d)
    assert np.all(np.diag(printed) > 0.99)
    assert np.all(np.diag(out0["attention"][0])[1:] < 0.6)
    # Eq. (19) vs the LLN off-diagonal layer-2 score: the ratio is
    # (e^{sqrt d} + i - 1) / (sqrt(d) (e^{1/sqrt d} + i - 1)) >= e^8 / (8 * 10.2) > 36 for i <= 10.
    ratio = out0["scores"][1][strict] / theory.prop1_score(*ALL_IJ, d)[strict]
    assert np.all(ratio > 36)


@pytest.mark.parametrize("norm", ["layernorm", "rms"])
@pytest.mark.parametrize("d", [4, 64, 1024])
def test_lln_layer1_sq_norms_and_scores_match_corrected(norm, d):
    j = np.arange(1, 11)
    lower = np.tri(10, dtype=bool)
    for alpha in [0.0, 0.2, 0.5, 0.8, 1.0]:
        for gamma in [0.0, 1.0, 2.5]:
            out = theory.lln_limit(alpha, gamma, d, 10, 2, norm)
            np.testing.assert_allclose(
                out["sq_norms"][1], theory.sq_norm_corrected(j, alpha, gamma, d, norm), rtol=1e-13
            )
            np.testing.assert_allclose(
                out["scores"][1][lower],
                theory.score2_corrected(*ALL_IJ, alpha, gamma, d, norm)[lower],
                rtol=1e-13,
            )


@pytest.mark.parametrize("d", [64, 1024])
def test_eq36_agrees_with_lln_only_without_residual(d):
    j = np.arange(1, 11)
    for alpha in [0.0, 0.2, 0.4, 0.6, 0.8]:
        out0 = theory.lln_limit(alpha, 0.0, d, 10, 2, "rms")
        np.testing.assert_allclose(
            out0["sq_norms"][1], theory.sq_norm_eq36(j, alpha, 0.0, d), rtol=1e-13
        )
        out1 = theory.lln_limit(alpha, 1.0, d, 10, 2, "rms")
        printed = theory.sq_norm_eq36(j, alpha, 1.0, d)
        # Eq. (36) at gamma = 1 is ~4 d (residual weight 1); the model's residual weight is
        # 1 / sqrt(d (1 - alpha)), so the true value is ~d: more than 60 % off
        # (d >= 64, alpha <= 0.8).
        assert np.all(np.abs(printed / out1["sq_norms"][1] - 1) > 0.6)
        # ... and the difference is exactly the substitution gamma -> gamma / sqrt(d (1 - alpha)).
        g = 1.0 / math.sqrt(d * (1 - alpha))
        np.testing.assert_allclose(
            out1["sq_norms"][1], theory.sq_norm_eq36(j, alpha, g, d), rtol=1e-13
        )


def test_lln_alpha_one_all_tokens_equal():
    out = theory.lln_limit(1.0, 0.0, 64, 6, 3, "layernorm")
    lower = np.tri(6, dtype=bool)
    np.testing.assert_allclose(out["scores"][:, lower], 8.0, rtol=1e-15)
    np.testing.assert_allclose(
        out["attention"][0][lower], (1 / np.arange(1, 7))[:, None].repeat(6, 1)[lower], rtol=1e-15
    )


def test_lln_none_first_layer_diagonal_is_one_over_sqrt_d():
    # The corrected Eq. (14): <x_i, x_i> -> 1 (alpha = 0), so S^(1)_ii = 1 / sqrt(d), not sqrt(d).
    for d in [64, 1024, 1e6]:
        out = theory.lln_limit(0.0, 0.0, d, 5, 1, "none")
        np.testing.assert_allclose(np.diag(out["scores"][0]), 1 / math.sqrt(d), rtol=1e-15)


def test_lln_layernorm_centring_and_eps():
    d = 64
    out = theory.lln_limit(0.5, 0.0, d, 4, 1, "layernorm")
    np.testing.assert_allclose(out["sq_norms"][0], (d - 1) / d / (1 - 0.5), rtol=1e-15)
    eps = 0.01
    out = theory.lln_limit(0.0, 0.0, d, 4, 1, "layernorm", eps=eps)
    sq = (d - 1) / d
    np.testing.assert_allclose(
        np.diag(out["scores"][0]), sq / (sq / d + eps) / math.sqrt(d), rtol=1e-14
    )


def test_lln_recency_in_later_layers():
    # The recursion's later layers keep Definition 1 for alpha = 0.5 (the paper's Fig. 1 row 3).
    out = theory.lln_limit(0.5, 0.0, 64, 10, 4, "layernorm")
    for layer in range(1, 4):
        s = out["scores"][layer]
        for row in range(1, 10):
            assert np.all(np.diff(s[row, : row + 1]) > 0)


# -- bad inputs ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: theory.theorem1_score(2, 1, 0.5), r"d=0\.5 .*>= 1"),
        (lambda: theory.theorem1_score(2, 1, np.inf), r"d=inf"),
        (lambda: theory.theorem1_score(2, 1, [64, np.nan]), r"d=nan"),
        (lambda: theory.theorem1_score(0, 1, 64), r"i=0\.0 .*integers >= 1"),
        (lambda: theory.theorem1_score(2, 1.5, 64), r"j=1\.5 .*integers >= 1"),
        (lambda: theory.theorem1_score("two", 1, 64), r"i='two' is not a number"),
        (lambda: theory.theorem1_score(True, 1, 64), r"i=True is not a number"),
        (lambda: theory.prop1_attention(2, -1, 64), r"j=-1\.0"),
        (lambda: theory.prop1_score(2, 1, -3), r"d=-3\.0"),
        (lambda: theory.prop1_attention_corrected(2, 1, 64, alpha=1.5), r"alpha=1\.5 .*\[0, 1\]"),
        (lambda: theory.prop1_score_corrected(2, 1, 64, alpha=-0.1), r"alpha=-0\.1"),
        (lambda: theory.sq_norm_eq36(1, 0.5, np.inf, 64), r"gamma=inf .*finite"),
        (lambda: theory.h_eq41(1, 0.5, 1.0, 0.0), r"d=0\.0"),
        (lambda: theory.h_corrected(1, 0.5, 1.0, 1.0), r"d=1\.0 .*> 1"),
        (lambda: theory.h_corrected(1, 0.5, 1.0, 64, norm="none"), r"norm='none'"),
        (lambda: theory.score2_corrected(3, 1, 0.5, 1.0, 64, norm="batch"), r"norm='batch'"),
        (lambda: theory.lln_limit(0.5, 0.0, 64, 0, 2), r"n=0 .*>= 1"),
        (lambda: theory.lln_limit(0.5, 0.0, 64, 4.0, 2), r"n=4\.0 is not an integer"),
        (lambda: theory.lln_limit(0.5, 0.0, 64, 4, 0), r"layers=0"),
        (lambda: theory.lln_limit([0.1, 0.2], 0.0, 64, 4, 2), r"alpha=\[0\.1, 0\.2\] has shape"),
        (lambda: theory.lln_limit(0.5, 0.0, 1, 4, 2), r"d=1\.0 .*> 1"),
        (lambda: theory.lln_limit(0.5, 0.0, 64, 4, 2, eps=-1), r"eps=-1"),
        (lambda: theory.lln_limit(0.5, 0.0, 64, 4, 2, norm="LN"), r"norm='LN'"),
    ],
)
def test_bad_inputs(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_d_equal_one_allowed_where_it_makes_sense():
    assert np.isfinite(theory.theorem1_score(2, 1, 1))
    assert np.isfinite(theory.h_corrected(2, 0.5, 1.0, 1.0, norm="rms"))
    assert np.all(np.isfinite(theory.lln_limit(0.5, 1.0, 1, 4, 2, "rms")["sq_norms"]))


@pytest.mark.parametrize("where", ["pre", "post", "sandwich", "output", "qk", "qk_output"])
@pytest.mark.parametrize("alpha, gamma", [(0.0, 0.0), (0.5, 1.0), (0.3, -0.4)])
def test_lln_limit_is_the_layer_on_tokens_with_its_gram_matrix(where, alpha, gamma):
    """Without centring the LLN recursion is exact for tokens whose Gram matrix is its own (the
    weightless layer reads inner products only): RMSNorm placed anywhere, every layer."""
    from recency_lib.model import layer

    n, d, layers = 6, 64, 4
    lln = theory.lln_limit(alpha, gamma, d, n, layers, norm="rms", placement=where)
    x = np.linalg.cholesky(lln["gram"][0])[None]  # (1, n, n) tokens with Gram G^(0)
    for l in range(layers):
        x, s, _, sq = layer(x, norm="rms", d=d, gamma=gamma, eps=0.0, placement=where)
        low = np.tri(n, dtype=bool)
        np.testing.assert_allclose(s[0][low], lln["scores"][l][low], rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(sq[0], lln["sq_norms"][l], rtol=1e-10)


def test_lln_limit_of_layernorm_where_the_raw_state_reaches_the_scores():
    """LayerNorm's post-norm reads the raw tokens at layer 1: E <x_i, x_j> = Sigma_ij (the centred
    part's (d - 1) / d and the means' 1 / d). Without the residual the output norm is post-norm
    (Norm(A X) either way) and the sandwich is pre-norm (a norm of a normalized token) at every
    layer; QK-norm with and without the output norm share layer 2 only (then the values differ)."""
    d, n = 64, 5
    sigma = np.eye(n) + 1.0 * np.ones((n, n))  # alpha = 0.5
    post = theory.lln_limit(0.5, 1.0, d, n, 3, placement="post")
    np.testing.assert_allclose(np.tril(post["scores"][0]), np.tril(sigma) / math.sqrt(d))
    for a, b, same in (("output", "post", 4), ("sandwich", "pre", 4), ("qk_output", "qk", 2)):
        x, y = (theory.lln_limit(0.5, 0.0, d, n, 4, placement=p)["scores"] for p in (a, b))
        np.testing.assert_allclose(x[:same], y[:same], rtol=1e-12, equal_nan=True)
        assert same == 4 or np.nanmax(np.abs(x[same:] - y[same:])) > 1e-3
    with pytest.raises(ValueError, match="placement='post' is not allowed with norm='none'"):
        theory.lln_limit(0.5, 1.0, d, n, 2, norm="none", placement="post")
    with pytest.raises(ValueError, match="placement='mid'"):
        theory.lln_limit(0.5, 1.0, d, n, 2, placement="mid")
