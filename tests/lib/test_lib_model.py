"""The layer's pieces, and the exactness of running it on Gram coordinates."""

import math

import numpy as np
import pytest

from recency_lib import placements
from recency_lib.config import SimConfig
from recency_lib.model import causal_scores, causal_softmax, center, layer, normalize
from recency_lib.placements import mean_column
from recency_lib.sampling import gram_centre


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


def test_layernorm_matches_definition(rng):
    x = rng.normal(size=(3, 5, 16))
    y = normalize(center(x), "layernorm", d=16, eps=0.0)
    ref = (x - x.mean(-1, keepdims=True)) / x.std(-1, keepdims=True)  # biased variance
    np.testing.assert_allclose(y, ref, rtol=1e-12)


def test_rms_is_sqrt_d_x_over_norm(rng):
    x = rng.normal(size=(4, 6, 9))
    y = normalize(x, "rms", d=9, eps=0.0)
    np.testing.assert_allclose(
        y, math.sqrt(9) * x / np.linalg.norm(x, axis=-1, keepdims=True), rtol=1e-12
    )
    assert normalize(x, "none", d=9, eps=0.0) is x


def test_normalised_diagonal_scores_are_sqrt_d(rng):
    for norm in ("layernorm", "rms"):
        x = rng.normal(size=(2, 7, 32)) / math.sqrt(32)
        seen = center(x) if norm == "layernorm" else x
        s = causal_scores(normalize(seen, norm, 32, 1e-12), 32)
        # ||y||^2 / sqrt(d) = d * ms / (ms + eps) / sqrt(d): sqrt(d) up to the eps
        # term (~1e-11 relative)
        np.testing.assert_allclose(np.diagonal(s, axis1=-2, axis2=-1), math.sqrt(32), rtol=1e-9)


def test_causal_softmax_rows(rng):
    s = rng.normal(size=(3, 6, 6)) * 50
    a = causal_softmax(s)
    np.testing.assert_allclose(a.sum(-1), 1.0, rtol=1e-12)
    assert np.all(a[:, np.triu_indices(6, 1)[0], np.triu_indices(6, 1)[1]] == 0)
    assert np.all(a[:, 0, 0] == 1.0)
    # matches a direct softmax over the visible keys of the last row
    row = s[0, 5]
    np.testing.assert_allclose(
        a[0, 5], np.exp(row - row.max()) / np.exp(row - row.max()).sum(), rtol=1e-12
    )
    # huge scores stay finite (max subtraction)
    assert np.all(np.isfinite(causal_softmax(s * 1e6)))


PAIRS = [("none", "pre")] + [(n, p) for n in ("layernorm", "rms") for p in placements.NAMES]


@pytest.mark.parametrize("norm, placement", PAIRS)
@pytest.mark.parametrize("gamma", [0.0, 1.0, -0.7])
def test_gram_coordinates_reproduce_dense_trajectory(rng, norm, placement, gamma):
    """Any R with R R^T equal to the Gram matrix the model sees gives the same scores, every layer,
    wherever the norm sits: LayerNorm's centred part, and its means where the scores read them."""
    n, d, layers = 6, 20, 4
    x = rng.normal(size=(1, n, d)) / math.sqrt(d) + 0.4 * rng.normal(size=(1, 1, d))
    seen = center(x) if norm == "layernorm" else x
    r = np.linalg.cholesky(seen[0] @ seen[0].T)[None]  # (1, n, n) with R R^T = gram
    cfg = SimConfig(norm=norm, placement=placement, d=d)
    if mean_column(cfg):  # the tokens' means <x_i, 1> / sqrt(d) as one more column
        r = np.concatenate([r, x.sum(axis=-1, keepdims=True) / math.sqrt(d)], axis=-1)
    xd, xr = x, r
    args = dict(norm=norm, d=d, gamma=gamma, eps=1e-12, placement=placement)
    for _ in range(layers):
        xd, sd, ad, qd = layer(xd, **args)
        xr, sr, ar, qr = layer(xr, **args, centre=gram_centre(cfg))
        np.testing.assert_allclose(sr, sd, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(ar, ad, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(qr, qd, rtol=1e-9)


def test_layer_shapes_and_residual(rng):
    x = rng.normal(size=(5, 4, 8))
    x1, s, a, q = layer(x, norm="rms", d=8, gamma=0.0, eps=0.0)
    x2, *_ = layer(x, norm="rms", d=8, gamma=1.0, eps=0.0)
    assert x1.shape == x.shape and s.shape == a.shape == (5, 4, 4) and q.shape == (5, 4)
    np.testing.assert_allclose(x2 - x1, x, atol=1e-12)
