"""Inputs: Eq. (6) embeddings and the exact Gram-space sampler agree in law."""

import math

import numpy as np
import pytest

from recency_lib import SimConfig
from recency_lib.sampling import dense_tokens, gram_coordinates
from recency_lib.streams import block_key


@pytest.mark.parametrize("alpha", [0.0, 0.5, 1.0])
def test_dense_token_covariance(alpha):
    cfg = SimConfig(alpha=alpha, n=3, d=8)
    x = dense_tokens(cfg, np.random.default_rng(1), 40_000)  # (B, n, d)
    g = np.einsum("bid,bjd->bij", x, x)  # Gram per sample
    c2 = math.inf if alpha == 1 else alpha / (1 - alpha)
    expect_off = 1.0 if alpha == 1 else c2  # E<x_i, x_j> = c^2 (i != j)
    expect_diag = 1.0 if alpha == 1 else 1 + c2
    mean, sem = g.mean(0), g.std(0, ddof=1) / math.sqrt(g.shape[0])
    assert np.all(
        np.abs(mean - np.where(np.eye(3, dtype=bool), expect_diag, expect_off)) < 5 * sem + 1e-12
    )


@pytest.mark.parametrize("norm", ["layernorm", "rms"])
@pytest.mark.parametrize("alpha", [0.0, 0.5, 0.9])
@pytest.mark.parametrize("n,d", [(4, 16), (6, 4)])  # n <= dof, n > dof
def test_gram_sampler_matches_dense_gram_moments(norm, alpha, n, d):
    """First two moments of every Gram entry agree between the samplers (z < 5 on 60k samples)."""
    cfg = SimConfig(alpha=alpha, norm=norm, n=n, d=d)
    b = 60_000
    x = dense_tokens(cfg, np.random.default_rng(2), b)
    if norm == "layernorm":
        x = x - x.mean(-1, keepdims=True)
    r = gram_coordinates(cfg, block_key(3, 0), b)
    assert r.shape == (b, n, min(n, d - (norm == "layernorm")))
    for f in (lambda g: g, lambda g: g * g):
        gd = f(np.einsum("bid,bjd->bij", x, x))
        gr = f(np.einsum("bid,bjd->bij", r, r))
        diff = gd.mean(0) - gr.mean(0)
        se = np.sqrt(gd.var(0, ddof=1) / b + gr.var(0, ddof=1) / b)
        assert np.all(np.abs(diff) < 5 * se), np.max(np.abs(diff) / se)


def test_alpha_one_is_rank_one():
    cfg = SimConfig(alpha=1.0, n=5, d=9)
    r = gram_coordinates(cfg, block_key(0, 0), 10)
    assert r.shape == (10, 5, 1) and np.all(r == r[:, :1])
    x = dense_tokens(cfg, np.random.default_rng(0), 10)
    assert np.all(x == x[:, :1])
