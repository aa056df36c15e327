"""Checks behind the book page "Appendix A, checked" (book/appendix_a.ipynb).

* The sympy verdicts of companion.symbolic are pinned: a typo in the paper is a check that must
  stay False, a correct (or corrected) step one that must stay True. A regression in
  recency_lib.theory (whose closed forms several checks evaluate) fails here.
* The corrected closed forms added for the page (residual_coefficient, sq_norm_first_token_exact,
  drop_ratio_first_order, drop_ratio_gaussian, score2_step_corrected) against the existing ones and
  against simulation, with z-score tolerances on the Monte-Carlo SEM.

Equation numbers are the paper's; indices 1-based as in the paper. Runtime: ~15 s for the sympy
checks, a few seconds of simulation (small sample counts; the gram engine's cost does not depend
on d, so large d is cheap).
"""

import math

import numpy as np
import pytest

from companion import symbolic
from recency_lib import SimConfig, simulate, theory

# -- sympy verdicts --------------------------------------------------------------------------------

EXPECTED = {
    # A.1
    "eq7-printed": False,
    "eq7-fixed": True,
    "eq8": True,
    "eq9": True,
    "eq10": True,
    "eq11-from-9-10": True,
    "eq11-increasing": True,
    "eq11-diagonal": True,
    "eq11-theory": True,
    # A.2
    "eq14-printed": False,
    "eq14-fixed": True,
    "eq15-printed": False,
    "eq15-fixed": True,
    "eq17-scale": False,
    "eq18-printed": False,
    "eq19-form": True,
    "eq19-fixed": True,
    # A.3
    "eq22-printed": False,
    "eq22-fixed": True,
    "eq23-printed": False,
    "eq23-fixed": True,
    "residual-printed": False,
    "residual-fixed": True,
    "eq28-32": True,
    "eq32-flat": True,
    "eq33": True,
    "eq34-printed": False,
    "eq34-fixed": True,
    "eq35": True,
    "eq36": True,
    "eq36-theory": True,
    "eq38": True,
    "eq39-printed": False,
    "eq39-fixed": True,
    "eq39-sign": True,
    "eq40-printed": False,
    "eq40-fixed": True,
    "eq41": True,
}


@pytest.fixture(scope="module")
def timed_checks():
    return symbolic.run_all_timed()


@pytest.fixture(scope="module")
def checks(timed_checks):
    return {c.key: c for c in timed_checks[0]}


def test_registry_is_complete_and_well_formed(checks, timed_checks):
    assert timed_checks[1] > 0 and [c.key for c in timed_checks[0]] == list(checks)
    assert len(checks) == sum(map(len, symbolic.CHECKS.values()))  # keys are unique
    assert set(checks) == set(EXPECTED) and list(symbolic.TEXTS) == list(checks)  # texts by key
    for c in checks.values():
        assert c.section in ("A.1", "A.2", "A.3")
        assert c.equations.startswith("(") and c.claim and c.method
        assert isinstance(c.holds, bool)


@pytest.mark.parametrize("key", sorted(EXPECTED))
def test_symbolic_verdict(checks, key):
    assert checks[key].holds is EXPECTED[key], checks[key]


def test_cached_checks_are_the_checks_and_run_only_when_their_source_changes(
    timed_checks, tmp_path, monkeypatch
):
    """errata.sympy_checks (the page's call) stores the verdicts keyed by the source of symbolic and
    what it imports: the second call reads them back unchanged; an edit of that
    source runs again."""
    from companion import errata
    from recency_lib import cache

    steps, seconds = timed_checks
    runs = []
    rows = {"holds": {c.key: c.holds for c in steps}, "seconds": seconds}
    monkeypatch.setattr(errata, "_run_checks", lambda: runs.append(1) or rows)
    assert errata.sympy_checks(cache=tmp_path) == (steps, seconds, False)
    assert errata.sympy_checks(cache=tmp_path) == (steps, seconds, True)
    assert len(runs) == 1
    real = cache._hash_files  # an edit of symbolic.py (or of the simulator) is in the key
    monkeypatch.setattr(
        cache,
        "_hash_files",
        lambda named: real(named) + "edited" if "companion.symbolic" in named else real(named),
    )
    assert errata.sympy_checks(cache=tmp_path)[2] is False and len(runs) == 2


# -- new closed forms: exact identities ------------------------------------------------------------


def test_residual_coefficient_is_the_g_of_sq_norm_corrected():
    # At j = 1 there is no mixing: ||x_1^(1)||^2 = d (1 + g)^2 in the LLN
    # (Eq. (36) with gamma -> g).
    for norm in ("layernorm", "rms"):
        for d in (4, 64, 4096):
            for alpha in (0.0, 0.5, 1.0):
                for gamma in (0.0, 1.0, 2.5):
                    g = theory.residual_coefficient(alpha, gamma, d, norm)
                    assert theory.sq_norm_corrected(1, alpha, gamma, d, norm) == pytest.approx(
                        d * (1 + g) ** 2, rel=1e-14
                    )
    assert theory.residual_coefficient(0.5, 1.0, 64, "rms") == pytest.approx(
        1 / math.sqrt(32), rel=1e-15
    )
    assert theory.residual_coefficient(0.5, 1.0, 64) == pytest.approx(
        math.sqrt(63 / 64) / math.sqrt(32), rel=1e-15
    )


def test_first_token_exact_limits():
    # "none": x_1^(1) = (1 + gamma) x_1, E||x||^2 = 1 / (1 - alpha) exactly.
    assert theory.sq_norm_first_token_exact(0.5, 1.0, 64, "none") == pytest.approx(
        4 * 2.0, rel=1e-15
    )
    # gamma = 0: ||y_1||^2 = d exactly.
    assert theory.sq_norm_first_token_exact(0.3, 0.0, 64) == pytest.approx(64.0, rel=1e-15)
    # Large d: E||P x|| -> sqrt(E||P x||^2) (Jensen gap O(1/d)), so exact -> LLN d (1 + g)^2.
    for d in (1e4, 1e6):
        exact = theory.sq_norm_first_token_exact(0.5, 1.0, d)
        lln = theory.sq_norm_corrected(1, 0.5, 1.0, d)
        assert abs(exact / lln - 1) < 2 / d
    # Jensen: E||P x|| < sqrt(E||P x||^2), so exact < LLN for gamma > 0.
    assert theory.sq_norm_first_token_exact(0.5, 1.0, 64) < theory.sq_norm_corrected(
        1, 0.5, 1.0, 64
    )


def test_drop_ratios_limits():
    # Z -> N(0, 1): R(d) -> e^{1/2} (1 - 1/sqrt(d)), the Gaussian formula at alpha = 0.
    for d in (1e4, 1e6):
        gauss = math.exp(0.5) * (1 - 1 / math.sqrt(d))
        assert theory.drop_ratio_first_order(d) == pytest.approx(gauss, rel=2 / math.sqrt(d))
        assert theory.drop_ratio_gaussian(0.0, d) == pytest.approx(gauss, rel=1e-15)
    assert theory.drop_ratio_gaussian(0.5, np.inf) == pytest.approx(
        math.exp(0.75**2 / 2), rel=1e-15
    )
    # increasing in d towards the limit (the LLN's relative error does not vanish)
    r = theory.drop_ratio_first_order([16, 64, 256, 1024, 4096, 16384])
    assert np.all(np.diff(r) > 0) and r[-1] < math.exp(0.5)


def test_score2_step_corrected_matches_differences_and_is_positive():
    n = 10
    ii, jj = np.meshgrid(np.arange(1, n + 1), np.arange(1, n + 1), indexing="ij")
    for norm in ("layernorm", "rms"):
        for d in (4, 16, 64):
            for alpha in (0.0, 0.5, 0.9):
                for gamma in (0.0, 1.0):
                    s = theory.score2_corrected(ii, jj, alpha, gamma, d, norm)
                    step = theory.score2_step_corrected(ii, jj, alpha, gamma, d, norm)
                    diff = np.full((n, n), np.nan)
                    diff[:, 1:] = s[:, 1:] - s[:, :-1]
                    mask = ~np.isnan(step)
                    assert np.array_equal(mask, (jj >= 2) & (jj <= ii))
                    # the direct difference loses ~|s| * 1e-16 / |step| relative;
                    # d <= 64 keeps that < 1e-11
                    np.testing.assert_allclose(step[mask], diff[mask], rtol=1e-11)
                    assert np.all(step[mask] > 0)  # Eqs. (37)-(39)
    # alpha = gamma = 0 is Eq. (11): compare with theorem1_score's differences
    # (d small: no cancellation)
    s11 = theory.theorem1_score(ii, jj, 4)
    np.testing.assert_allclose(
        theory.score2_step_corrected(ii, jj, 0, 0, 4, "rms")[:, 1:],
        np.diff(s11, axis=1),
        rtol=1e-12,
    )
    # where the direct difference is 0 in float64 the stable one is still positive and finite
    far = theory.score2_step_corrected(10, np.arange(2, 10), 0.0, 0.0, 16384)
    assert np.all(far > 0) and np.all(np.isfinite(far))


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: theory.residual_coefficient(1.5, 1.0, 64), r"alpha=1\.5"),
        (lambda: theory.residual_coefficient(0.5, 1.0, 64, norm="none"), r"norm='none'"),
        (lambda: theory.sq_norm_first_token_exact(0.5, 1.0, 1), r"d=1\.0 .*>= 2"),
        (lambda: theory.sq_norm_first_token_exact(0.5, np.nan, 64), r"gamma=nan"),
        (lambda: theory.drop_ratio_first_order(3), r"d=3\.0 .*>= 4"),
        (lambda: theory.drop_ratio_first_order(64, "none"), r"norm='none'"),
        (lambda: theory.drop_ratio_gaussian(1.0, 64), r"alpha=1\.0 .*\[0, 1\)"),
        (lambda: theory.drop_ratio_gaussian(0.5, 0.5), r"d=0\.5"),
        (lambda: theory.score2_step_corrected(3, 2, 0.5, 1.0, 1.0), r"d=1\.0 .*> 1"),
        (lambda: theory.score2_step_corrected(0, 2, 0.5, 1.0, 64), r"i=0\.0"),
    ],
)
def test_bad_inputs(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# -- against simulation ----------------------------------------------------------------------------

SAMPLES = 4000  # per setting; ~0.2-0.4 s each with the gram engine
Z = 4.0  # z-score tolerance: ~20 comparisons below, P(|N(0,1)| > 4) = 6e-5 each


def sim(**kw):
    base = dict(
        alpha=0.0, gamma=0.0, norm="layernorm", n=10, d=64, layers=2, samples=SAMPLES, seed=11
    )
    return simulate(SimConfig(**{**base, **kw}))


@pytest.mark.parametrize("d", [64, 4096])
def test_eq14_eq22_token_norms(d):
    # E||x^(0)||^2 is EXACT (no LLN): 1 / (1 - alpha) raw, (d - 1) / (d (1 - alpha))
    # centred. Pure z test.
    r = sim(norm="none", d=d, layers=1)
    m, e = r.sq_norm_mean[0][0], r.sq_norm_sem[0][0]
    assert abs(m - 1.0) < Z * e
    assert (math.sqrt(d) - m) / e > 100  # printed Eq. (14): sqrt(d)
    r = sim(alpha=0.5, d=d, layers=1)
    m, e = r.sq_norm_mean[0][0], r.sq_norm_sem[0][0]
    assert abs(m - (d - 1) / d / 0.5) < Z * e
    assert (math.sqrt(d) / 0.5 - m) / e > 100  # printed Eq. (22)


@pytest.mark.parametrize("norm", ["layernorm", "rms", "none"])
@pytest.mark.parametrize("alpha", [0.0, 0.5])
def test_residual_first_token_exact(norm, alpha):
    # The first token attends only to itself: E||x_1^(1)||^2 is known exactly at finite d
    # (theory.sq_norm_first_token_exact; eps = 1e-12 changes it by ~d^2 1e-12, far below the SEM),
    # so a pure z-score test applies at any d, including very large ones.
    for d in (16, 4096):
        r = sim(alpha=alpha, gamma=1.0, norm=norm, d=d, layers=2)
        m, e = r.sq_norm_mean[1][0], r.sq_norm_sem[1][0]  # state fed to layer 2, first token
        exact = theory.sq_norm_first_token_exact(alpha, 1.0, d, norm)
        assert abs(m - exact) < Z * e, (m, e, exact)
        if norm != "none":
            # the printed coefficients (gamma in Eq. (33), d gamma in Eq. (26)) predict
            # d (1 + kappa)^2, hundreds of SEM away (the closest, kappa = gamma at d = 16,
            # alpha = 0.5, is ~800 SEM)
            for kappa in (1.0, d * 1.0):
                assert abs(m - d * (1 + kappa) ** 2) / e > 100


def test_eq15_and_eq19_corrected_without_normalization():
    # Without normalization the layer-1 scores deviate from the LLN by O(1/d)
    # (<x_j, x_k> ~ N(0, 1/d)), so the corrected Eq. (15) is exact up to O(1/d^2) relative,
    # far below the SEM: pure z test.
    d, n = 1024, 10
    r = sim(norm="none", d=d)
    a, ae = r.attn_mean[0][n - 1, n - 1], r.attn_sem[0][n - 1, n - 1]
    assert abs(a - theory.prop1_attention_corrected(n, n, d)) < Z * ae
    assert (theory.prop1_attention(n, n, d) - a) / ae > 1000  # printed Eq. (15): ~1
    # Eq. (19): the LLN misses relative corrections of order 1/sqrt(d) (measured on the page with
    # 40k samples: +1.9e-3 at d = 64, +2.4e-4 at d = 1024); allow 4 SEM plus a 0.5 % LLN
    # bound, ~20x the bias at this d.
    row, row_e = r.score_mean[1][n - 1, : n - 1], r.score_sem[1][n - 1, : n - 1]
    fix = theory.prop1_score_corrected(n, 1, d)
    assert np.all(np.abs(row - fix) < Z * row_e + 0.005 * fix)
    assert np.all(row / theory.prop1_score(n, 1, d) > 1e10)  # printed Eq. (19): e^{-32}-small
    # flat in j (Prop. 1): the largest gap between two keys is within 4 combined SEM
    hi, lo = np.argmax(row), np.argmin(row)
    assert row[hi] - row[lo] < Z * math.hypot(row_e[hi], row_e[lo])


def test_eq23_score_scale_and_score_fluctuations():
    d, n = 4096, 10
    r = sim(alpha=0.5, d=d, layers=1)
    m, e = r.score_mean[0][n - 1, 0], r.score_sem[0][n - 1, 0]
    target = math.sqrt(d) * 0.5  # <y_i, y_j> = d alpha
    # bias of a correlation estimate: E[cos] = alpha - alpha (1 - alpha^2) / (2 d) + O(d^-2) (delta
    # method); allow twice that on top of 4 SEM
    assert abs(m - target) < Z * e + 2 * target * (1 - 0.25) / (2 * d)
    assert (target - 0.5) / e > 1000  # printed Eq. (23): score alpha
    # LLN step: off-diagonal scores fluctuate by O(1) at every d. For LayerNorm at alpha = 0,
    # Z = sqrt(d) cos(theta) in d - 1 dimensions has variance d / (d - 1) exactly.
    r0 = sim(alpha=0.0, d=d, layers=1)
    sd = r0.score_sem[0][n - 1, 0] * math.sqrt(SAMPLES)
    se_sd = sd / math.sqrt(2 * (SAMPLES - 1))  # SE of a sample SD (near-Gaussian data)
    assert abs(sd - math.sqrt(d / (d - 1))) < Z * se_sd


def test_eq10_drop_ratio_first_order():
    # alpha = gamma = 0, d = 256: the simulated drop ||x_1||^2 - ||x_n||^2 is R(d) times Eq. (10)'s,
    # R = theory.drop_ratio_first_order (second-order terms ~ (n - 1) e^{2 - sqrt d} ~ 1e-5,
    # negligible).
    d, n = 256, 10
    r = sim(d=d)
    q, qe = r.sq_norm_mean[1], r.sq_norm_sem[1]
    lln = theory.lln_limit(0.0, 0.0, d, n, 2, "layernorm", eps=r.config.eps)["sq_norms"][1]
    ratio = (q[0] - q[-1]) / (lln[0] - lln[-1])
    se = (qe[0] + qe[-1]) / (lln[0] - lln[-1])  # upper bound on the SE
    assert abs(ratio - theory.drop_ratio_first_order(d)) < Z * se
    assert (ratio - 1.0) / se > 10  # the LLN is off by a factor


def test_prop3_recency_visible_at_small_d():
    # alpha = 0.5: predicted steps ~ e^{-(1 - alpha) sqrt d} are resolvable at d = 16, 64: the
    # recency probability of layer 2 is far above 0.5 (> 10 SEM; the page measures ~60-130
    # SEM at 10k samples).
    for d in (16, 64):
        r = sim(alpha=0.5, d=d)
        assert (r.recency_probability[1] - 0.5) / r.recency_probability_sem[1] > 10
