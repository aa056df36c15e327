"""recency_lib.theory.trends: Theorem 1's and Proposition 1's trends beyond the LLN, against their
limits, their own structure and control-variate simulations."""

from __future__ import annotations

import math

import numpy as np
import pytest

from recency_lib import SimConfig, simulate, theory

# the derivation's stated accuracy (recency_lib/theory/trends.py): relative error of the form
ACCURACY = {"layernorm": 0.005, "none": 0.005}


def test_the_leading_term_is_e_sqrt_d_exp_minus_2_sqrt_d():
    d = np.array([400.0, 2500.0, 10000.0])
    lead = math.e * np.sqrt(d) * np.exp(-2 * np.sqrt(d))
    ratio = theory.theorem1_trend(d, 10) / lead
    # q^2 / e = 1 - 7/(2d) + O(d^-2): no 1/sqrt(d) term
    np.testing.assert_allclose((1 - ratio) * d, 3.5, rtol=0.02)


def eq5_trend(n, d):
    """Eq. (5)'s mean step between earlier keys (the printed closed form)."""
    steps = [
        theory.theorem1_score(i, j, d) - theory.theorem1_score(i, j - 1, d)
        for i in range(3, n + 1)
        for j in range(2, i)
    ]
    return np.mean(steps, axis=0)


def test_eq5_misses_the_factor_e_of_the_fluctuation_weights():
    d = np.array([64.0, 256.0, 1024.0])
    assert np.all(
        np.diff(theory.theorem1_trend(d, 10) / eq5_trend(10, d)) > 0
    )  # the ratio grows with d
    assert theory.theorem1_trend(1024.0, 10) / eq5_trend(10, 1024.0) == pytest.approx(
        math.e, rel=0.01
    )


def test_proposition1_steps_are_positive_and_fall_like_d_squared():
    for d in (4.0, 16.0, 64.0, 1024.0):
        steps = [theory.proposition1_step(i, j, d) for i in range(3, 11) for j in range(2, i)]
        assert min(steps) > 0
    n = 10
    k_n = 2 * (sum(1 / k for k in range(1, n + 1)) + 1 / n - 2) / ((n - 1) * (n - 2))
    assert theory.proposition1_trend(1e6, n) * 1e12 == pytest.approx(k_n, rel=1e-3)


def test_the_crossover():
    assert theory.crossover_d(10) == pytest.approx(51.65, abs=0.01)
    ds = [theory.crossover_d(n) for n in (3, 5, 10, 20)]
    assert ds == sorted(ds)  # later crossover for longer rows
    d = theory.crossover_d(10)
    assert theory.theorem1_trend(d - 1, 10) > theory.proposition1_trend(d - 1, 10)
    assert theory.theorem1_trend(d + 1, 10) < theory.proposition1_trend(d + 1, 10)


def test_the_mean_of_the_pair_steps_is_the_trend():
    d = 32.0
    steps = [theory.theorem1_step(i, j, d) for i in range(3, 11) for j in range(2, i)]
    assert np.mean(steps) == pytest.approx(theory.theorem1_trend(d, 10), rel=1e-12)
    steps = [theory.proposition1_step(i, j, d) for i in range(3, 11) for j in range(2, i)]
    assert np.mean(steps) == pytest.approx(theory.proposition1_trend(d, 10), rel=1e-12)


@pytest.mark.parametrize(
    "call",
    [
        lambda: theory.theorem1_trend(2.0),
        lambda: theory.proposition1_trend(16, n=2),
        lambda: theory.theorem1_step(3, 3, 16),
        lambda: theory.crossover_d(10, lo=60),
    ],
)
def test_bad_arguments_are_clear_errors(call):
    with pytest.raises(ValueError, match="allowed"):
        call()


@pytest.mark.slow
@pytest.mark.parametrize(
    "norm, d, samples",
    [
        ("layernorm", 24, 1_000_000),
        ("layernorm", 64, 4_000_000),
        ("none", 16, 1_000_000),
        ("none", 64, 4_000_000),
    ],
)
def test_the_forms_against_a_control_variate_simulation(norm, d, samples):
    res = simulate(
        SimConfig(alpha=0.0, gamma=0.0, norm=norm, n=10, d=d, layers=2, samples=samples, seed=24)
    )
    form = theory.theorem1_trend(d, 10) if norm == "layernorm" else theory.proposition1_trend(d, 10)
    sim, se = float(res.trend_cv_mean[1]), float(res.trend_cv_sem[1])
    assert abs(sim - form) <= 3 * se + ACCURACY[norm] * form, (sim, se, form)


@pytest.mark.parametrize("d", [16, 64.0, 200.5])
def test_every_pair_at_once_is_the_pair_by_pair_number(d):
    """theorem1_steps: the same floats as theorem1_step one pair at a time."""
    i, j, steps = theory.theorem1_steps(10, d)
    assert len(steps) == 36 and np.all(j < i) and np.all(j >= 2)
    assert steps.tolist() == [theory.theorem1_step(int(a), int(b), d) for a, b in zip(i, j)]


@pytest.mark.parametrize("bad", [[16, 64], "x", 2.0, float("nan"), True])
def test_every_pair_at_once_takes_one_d(bad):
    with pytest.raises(ValueError, match=r"^d=.*allowed: one finite real number >= 4"):
        theory.theorem1_steps(10, bad)
