"""recency_lib.inputs: the pairwise cosine similarity of Eq. (6) tokens tends to alpha.

Statistical tests compare the Monte-Carlo mean with its target in units of its standard error
(z-scores). The target is alpha only up to a finite-d bias, -alpha (1 - alpha^2) / (2 d) + O(d^-2)
(second-order expansion, see the module docstring): its size is at most 1 / (3 sqrt(3) d)
~ 0.19 / d. So the test against alpha allows z <= 5 plus that bound, and the test of the expansion
itself uses d large enough that the O(d^-2) remainder (~1/d^2 ~ 1.5e-5 at d = 256) is far below the
standard error (~2e-4).
"""

import math

import numpy as np
import pytest

from recency_lib import SimConfig
from recency_lib.inputs import cosine_bias_second_order, input_cosine_similarity

# the largest |second-order bias| over alpha: alpha (1 - alpha^2) / 2 peaks at 1 / sqrt(3)
MAX_BIAS_TIMES_D = 1.0 / (3.0 * np.sqrt(3.0))

Z = 5.0  # |z| above this has probability ~6e-7 per test under the null


@pytest.mark.parametrize("alpha", [0.0, 0.2, 0.5, 0.8, 0.95])
def test_mean_cosine_tends_to_alpha(alpha):
    d = 512
    mean, sem = input_cosine_similarity(SimConfig(alpha=alpha, n=6, d=d), samples=4000, seed=11)
    assert sem > 0
    tol = Z * sem + MAX_BIAS_TIMES_D / d
    assert abs(mean - alpha) < tol, (mean, sem, tol)


@pytest.mark.parametrize("alpha", [0.3, 0.6, 0.9])
def test_second_order_bias_is_resolved_and_right(alpha):
    """At d = 64 the bias is several standard errors (so a test against alpha alone would fail),
    and the second-order term removes it."""
    d = 64
    mean, sem = input_cosine_similarity(SimConfig(alpha=alpha, n=10, d=d), samples=20_000, seed=3)
    bias = float(cosine_bias_second_order(alpha, d))
    assert abs(bias) > 4 * sem  # the effect is visible...
    assert abs(mean - (alpha + bias)) < Z * sem + 4.0 / d**2, (
        mean,
        alpha + bias,
        sem,
    )  # ...and explained


def test_alpha_zero_is_centred_and_alpha_one_is_exact():
    m0, s0 = input_cosine_similarity(SimConfig(alpha=0.0, n=4, d=32), samples=5000, seed=0)
    assert abs(m0) < Z * s0  # cos is symmetric about 0
    m1, s1 = input_cosine_similarity(SimConfig(alpha=1.0, n=4, d=32), samples=50, seed=0)
    assert m1 == pytest.approx(1.0, abs=1e-12) and s1 < 1e-12  # every token equals v


def test_sem_shrinks_like_one_over_sqrt_samples():
    cfg = SimConfig(alpha=0.5, n=5, d=16)
    _, s1 = input_cosine_similarity(cfg, samples=2000, seed=1)
    _, s2 = input_cosine_similarity(cfg, samples=8000, seed=1)
    assert 0.35 < s2 / s1 < 0.65  # ~0.5, with slack for noise in the SEM


def test_deterministic_and_block_independent():
    cfg = SimConfig(alpha=0.4, n=3, d=4096)  # several blocks of the sampler
    a = input_cosine_similarity(cfg, samples=300, seed=5)
    b = input_cosine_similarity(cfg, samples=300, seed=5)
    assert a == b
    c = input_cosine_similarity(cfg, samples=300, seed=6)
    assert a != c


def test_bias_formula_values():
    assert cosine_bias_second_order(0.0, 10) == 0.0
    assert cosine_bias_second_order(1.0, 10) == 0.0
    peak = cosine_bias_second_order(1 / math.sqrt(3), 1.0)
    assert peak == pytest.approx(-MAX_BIAS_TIMES_D)
    grid = cosine_bias_second_order(np.linspace(0, 1, 101), 1.0)
    assert np.all(grid <= 0) and np.min(grid) >= -MAX_BIAS_TIMES_D - 1e-15


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(samples=1, seed=0), "samples"),
        (dict(samples=2.5, seed=0), "samples"),
        (dict(samples=True, seed=0), "samples"),
        (dict(samples=10, seed=-1), "seed"),
        (dict(samples=10, seed="0"), "seed"),
    ],
)
def test_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        input_cosine_similarity(SimConfig(n=3, d=8), **kwargs)


def test_bad_config():
    with pytest.raises(ValueError, match="SimConfig"):
        input_cosine_similarity({"alpha": 0.5}, samples=10, seed=0)
    with pytest.raises(ValueError, match="n"):
        input_cosine_similarity(SimConfig(n=1, d=8), samples=10, seed=0)
    with pytest.raises(ValueError, match="alpha"):
        cosine_bias_second_order(1.5, 10)
    with pytest.raises(ValueError, match="d"):
        cosine_bias_second_order(0.5, 0)
