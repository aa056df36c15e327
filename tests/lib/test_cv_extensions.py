"""Control variates on the decoder layouts beyond the paper (chapter 8).

The engines correct every layer's steps, row trends, trend and recency probability with the same
features of layer 1, whose means are taken as known: 0 for the steps and trends, 1/2 for the
recency probability (``features.control_means``). Those means follow from the exchangeability of
layer 1's earlier keys: for a query i, swapping the tokens at two earlier positions j, k < i swaps
S_ij and S_ik and changes nothing else. RoPE breaks it (a key is rotated by its own position; the
engines then report plain estimates, ``features.controls_valid``, tested in
tests/lib/test_control_variates.py). Fixed or per-sample projections, several heads, the FFN (it
acts after layer 1's scores) and post-LN apply one map to every token alike and keep it: checked
here on simulations, together with what a valid control must do, stay
within a few SE of the plain mean.
"""

from __future__ import annotations

import pytest

from recency_lib import SimConfig, simulate
from recency_lib.features import controls_valid

BASE = dict(alpha=0.5, n=8, d=32, layers=2, samples=4_000, seed=2)
KEEP = {
    "fixed weights": dict(weights="fixed"),
    "random weights": dict(weights="per_sample"),
    "heads and FFN": dict(heads=4, ffn=True),
    "post-LN": dict(placement="post"),
}
# 4 settings x 2 quantities tested at |z| < 4: a false alarm has probability ~5e-4.
Z_LAYER1 = 4.0
# A valid control moves the estimate by at most about one SE of the plain mean:
# theta_cv - theta_plain = -beta (c_bar - mu), and beta^2 Var(c) = rho^2 Var(x) <= Var(x).
# 5 SE: a false alarm has probability < 1e-6 per comparison.
SHIFT_Z = 5.0


@pytest.fixture(scope="module")
def runs():
    return {name: simulate(SimConfig(**BASE, **ext)) for name, ext in KEEP.items()}


def test_extensions_without_rope_keep_the_layer1_means(runs):
    for name, res in runs.items():
        assert controls_valid(res.config), name
        rp, se = (float(res.recency_probability[0]), float(res.recency_probability_sem[0]))
        assert abs(rp - 0.5) / se < Z_LAYER1, name
        assert abs(res.trend_mean[0]) / res.trend_sem[0] < Z_LAYER1, name


def test_their_corrected_estimates_stay_near_the_plain_ones(runs):
    for name, res in runs.items():
        for cv_mean, plain, plain_se in (
            (
                res.recency_probability_cv[1],
                res.recency_probability[1],
                res.recency_probability_sem[1],
            ),
            (res.trend_cv_mean[1], res.trend_mean[1], res.trend_sem[1]),
        ):
            assert abs(cv_mean - plain) / plain_se < SHIFT_Z, name
        assert res.recency_probability_cv_sem[1] <= res.recency_probability_sem[1] * 1.05, name


def test_with_rope_and_alpha_above_zero_layer1_has_an_order():
    """Why RoPE gets no controls: layer 1 itself prefers nearby keys (its recency probability is
    tens of SE above 1/2 here, measured ~60), so the assumed mean 1/2 would bias
    every later layer."""
    res = simulate(SimConfig(**{**BASE, "samples": 2_000}, rope=True))
    rp, se = (float(res.recency_probability[0]), float(res.recency_probability_sem[0]))
    assert (rp - 0.5) / se > 10
    assert not controls_valid(res.config)
    assert res.recency_probability_cv[1] == res.recency_probability[1]
