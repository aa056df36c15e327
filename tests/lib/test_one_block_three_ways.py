"""One block, three ways: the paper's dense layer (model.layer) on tokens whose Gram matrix is the
block's, the Gram engine's numpy reference (engines.gram_features) and the C kernel agree, wherever
the norm sits."""

import numpy as np
import pytest
from blocks import gram_block

from recency_lib import SimConfig, kernels, placements
from recency_lib.engines import gram_features
from recency_lib.features import layer_features, n_features
from recency_lib.model import layer
from recency_lib.norms import NORMS
from recency_lib.placements import mean_column
from recency_lib.sampling import gram_assemble, gram_draws
from recency_lib.streams import block_key


def tokens_with_the_gram_of(cfg, r):
    """Tokens X (B, n, d) with X X^T = R R^T, inside the subspace the normalization sees (orthogonal
    to the all-ones vector for LayerNorm, so centring leaves X as it is), and the means' column of
    the coordinates (if any: placements.mean_column) along the all-ones vector."""
    d, extra = cfg.d, int(mean_column(cfg))
    m = r.shape[-1] - extra
    basis = np.linalg.qr(np.random.default_rng(0).standard_normal((d, d)))[0]
    if NORMS[cfg.norm].centres:  # an orthonormal basis of the complement of 1, then +-1 / sqrt(d)
        ones = np.ones((d, 1)) / np.sqrt(d)
        basis = np.linalg.qr(np.hstack([ones, basis[:, : d - 1]]))[0]
        basis = np.hstack([basis[:, 1:], np.sign(basis[0, 0]) * basis[:, :1]])
    x = r[..., :m] @ basis[:, :m].T
    return x + r[..., m:] @ basis[:, -1:].T if extra else x


#: Every normalization before attention, and LayerNorm and RMSNorm at every other placement.
CASES = [(norm, "pre") for norm in NORMS] + [
    (norm, where) for norm in ("layernorm", "rms") for where in placements.NAMES[1:]
]


@pytest.mark.parametrize("norm, where", CASES)
@pytest.mark.parametrize("alpha, gamma", [(0.0, 0.0), (0.5, 1.0), (0.3, 0.5), (1.0, 1.0)])
def test_dense_layer_gram_reference_and_kernel_agree(norm, where, alpha, gamma):
    cfg = SimConfig(alpha=alpha, gamma=gamma, norm=norm, placement=where, n=7, d=16, layers=3)
    draws = gram_draws(cfg, block_key(5, 0), 64)
    reference = gram_features(cfg, *draws)  # (B, layers, F)
    x = tokens_with_the_gram_of(cfg, gram_assemble(cfg, *draws))
    dense = np.empty((64, cfg.layers, n_features(cfg.n)))
    for l in range(cfg.layers):
        x, s, a, sq = layer(x, norm=norm, d=cfg.d, gamma=gamma, eps=cfg.eps, placement=where)
        dense[:, l] = layer_features(s, a, sq)
    scale = np.abs(reference).max()
    np.testing.assert_allclose(dense, reference, rtol=0, atol=1e-11 * scale)
    if kernels.load() is not None:
        _, compiled = gram_block(cfg, *draws, "c")
        np.testing.assert_allclose(compiled, reference, rtol=0, atol=1e-12 * scale)


def test_a_normalization_is_its_registry_entry(monkeypatch):
    """ScaleNorm (y = g x / ||x||, here g = 1) added as one registry entry runs on every path: the
    config takes it, the dense layer, the Gram reference and the kernel agree, and simulate runs."""
    from recency_lib import norms, simulate

    scale = norms.Norm("scale", "ScaleNorm", "Scale", centres=False, scales=True, scale_to=1.0)
    monkeypatch.setitem(norms.NORMS, "scale", scale)
    test_dense_layer_gram_reference_and_kernel_agree("scale", "pre", 0.5, 1.0)
    res = simulate(SimConfig(norm="scale", n=6, d=32, layers=2, samples=2000))
    assert np.allclose(np.diagonal(res.score_mean[0]), 1 / np.sqrt(32))  # ||y||^2 / sqrt(d)
