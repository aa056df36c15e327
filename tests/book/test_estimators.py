"""companion.estimators: each estimator unbiased (its control has mean 0, so it estimates what plain
means estimate), with honest standard errors (the spread over independent seeds), and the
second-order coefficient consistent with the first-order estimate where both resolve. Tolerances
come from the Monte-Carlo standard errors: a family-wise z at 0.1 % over the numbers tested
together."""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest

from companion import estimators
from recency_lib import SimConfig
from recency_lib.metrics import familywise_z
from recency_lib.trajectories import sequence_statistic

LEVEL = 1e-3


def ln(d, gamma=0.0, n=6, samples=20_000, seed=1):
    return SimConfig(
        alpha=0.0, gamma=gamma, norm="layernorm", n=n, d=d, layers=2, samples=samples, seed=seed
    )


def first_order_control(scores, attention, *, d, gamma, sq_norms):
    """Plain steps of layer 2 (and their trend) minus the first-order estimator's: the control it
    subtracts."""
    fo = estimators.first_order_steps(scores, attention, d=d, gamma=gamma, sq_norms=sq_norms)
    plain = estimators._with_trend(
        estimators._steps(np.nan_to_num(scores[:, 1], nan=0.0)), scores.shape[-1]
    )
    return np.stack([fo[:, 0], plain - fo[:, 1]], axis=1)


def gram_control(scores, attention, *, beta, mu):
    g = estimators.gram_controlled_steps(scores, attention, beta=beta, mu=mu)
    plain = estimators._with_trend(
        estimators._steps(np.nan_to_num(scores[:, 1], nan=0.0)), scores.shape[-1]
    )
    return np.stack([g[:, 0], plain - g[:, 1]], axis=1)


def _z(stat):
    m, e = stat.mean[1], stat.sem[1]
    keep = e > 0
    return m[keep] / e[keep]


@pytest.mark.parametrize("gamma", [0.0, 1.0])
def test_the_first_order_control_has_mean_zero(gamma):
    """What first_order_steps subtracts (the first layer's steps and the first-order term, with each
    row's leak under the residual) has mean 0 in every step: the estimator has the plain means'
    expectation."""
    stat = sequence_statistic(
        ln(16, gamma), functools.partial(first_order_control, d=16, gamma=gamma)
    )
    z = _z(stat)
    assert z.size == 6 * 5 // 2 + 1 - 5  # the 10 earlier-key steps and the trend (diagonal: plain)
    assert np.max(np.abs(z)) < familywise_z(z.size, LEVEL), z


def test_the_residual_leak_is_what_cuts_the_noise():
    """Any leak that depends on the query's norm alone keeps the control's mean 0; the row's own
    leak e^{-sqrt d} / (1 + gamma ||P x_i|| / sqrt d) is the one that matches the residual model,
    and cuts the standard error of the trend far more than the leak without the residual (d = 64: by
    a factor near 30)."""
    cfg = ln(64, 1.0)
    right = sequence_statistic(cfg, estimators.first_order(64, 1.0))
    plain_leak = sequence_statistic(cfg, estimators.first_order(64, 0.0))
    assert plain_leak.sem[1, -1] > 10 * right.sem[1, -1]
    zc = familywise_z(1, LEVEL)  # both unbiased: the trends agree (same sequences)
    assert abs(right.mean[1, -1] - plain_leak.mean[1, -1]) < zc * plain_leak.sem[1, -1]


def test_the_gram_control_has_mean_zero():
    """Without normalization: the regression on the first layer's scores, fitted on a pilot of
    another seed, subtracts a term of mean 0 (the scores' exact means)."""
    cfg = SimConfig(alpha=0.0, gamma=0.0, norm="none", n=6, d=16, layers=2, samples=20_000, seed=1)
    fit = estimators.fit_gram_controls(cfg, 5_000)
    z = _z(sequence_statistic(cfg, functools.partial(gram_control, **fit)))
    assert np.max(np.abs(z)) < familywise_z(z.size, LEVEL), z


def test_the_standard_errors_match_the_spread_over_seeds():
    """Eight independent seeds: the spread of each estimate around their mean matches its reported
    SE (pooled over the 16 numbers of layer 2; the pooled ratio of variances has about 112 degrees
    of freedom)."""
    stats = [
        sequence_statistic(ln(16, samples=3_000, seed=s), estimators.first_order(16))
        for s in range(10, 18)
    ]
    means = np.array([s.mean[1] for s in stats])  # (seeds, steps + 1)
    ses = np.array([s.sem[1] for s in stats])
    ratio = float(np.mean(means.var(axis=0, ddof=1) / np.mean(ses**2, axis=0)))
    assert 0.6 < ratio < 1.5, ratio


def test_the_second_order_coefficient_is_the_step_at_large_d():
    """At d = 64 the eps^2 coefficient times sqrt(d) eps^2 is the first-order estimate of the trend
    (up to a relative O(eps) = 3e-4), and its mean is q(d)^2 of the corrected Theorem 1."""
    from recency_lib import theory

    d, n = 64, 10
    fo = sequence_statistic(ln(d, n=n, samples=40_000, seed=2), estimators.first_order(d))
    so = sequence_statistic(ln(d, n=n, samples=20_000, seed=3), estimators.second_order_steps)
    scale = math.sqrt(d) * math.exp(-2 * math.sqrt(d))
    a, ae = fo.mean[1, -1], fo.sem[1, -1]
    b, be = scale * so.mean[1, -1], scale * so.sem[1, -1]
    zc = familywise_z(2, LEVEL)
    assert abs(a - b) < zc * math.hypot(ae, be) + 1e-3 * abs(a)
    q2 = float(theory.q_factor(d)) ** 2
    assert abs(so.mean[1, -1] - q2) < zc * so.sem[1, -1] + 1e-3 * q2
    assert np.all(so.mean[1, :-1] / so.sem[1, :-1] > 5)  # every coefficient resolved positive
