"""Where the norm sits (recency_lib.placements): one registry, read by the config, both engines, the
kernel and the CLI; the Gram engine runs every placement exactly (the dense engine agrees in
distribution: tests/lib/test_engines.py's grid)."""

import math

import numpy as np
import pytest
from blocks import gram_block

from recency_lib import SimConfig, kernels, placements, simulate
from recency_lib.engines import gram_features, resolve_engine, stream_key
from recency_lib.features import layer_features
from recency_lib.model import layer
from recency_lib.placements import PLACEMENTS, mean_column
from recency_lib.sampling import gram_assemble, gram_draws
from recency_lib.streams import block_key

CASES = [(norm, where) for norm in ("layernorm", "rms") for where in placements.NAMES]


def tokens_with_the_gram_of(cfg, r):
    """Tokens X (B, n, d) whose Gram matrix is the coordinates' R R^T: the centred part in the
    complement of the all-ones vector for LayerNorm, and the means' column (if any) along it."""
    d, extra = cfg.d, int(mean_column(cfg))
    m = r.shape[-1] - extra
    basis = np.linalg.qr(np.random.default_rng(0).standard_normal((d, d)))[0]
    if cfg.norm == "layernorm":
        ones = np.ones((d, 1)) / math.sqrt(d)
        basis = np.linalg.qr(np.hstack([ones, basis[:, : d - 1]]))[0]  # column 0: +-ones
        basis = np.hstack([basis[:, 1:], np.sign(basis[0, 0]) * basis[:, :1]])
    x = r[..., :m] @ basis[:, :m].T
    return x + r[..., m:] @ basis[:, -1:].T if extra else x


@pytest.mark.parametrize("norm, where", CASES)
@pytest.mark.parametrize("alpha, gamma", [(0.0, 0.0), (0.5, 1.0), (0.3, 0.5), (1.0, 1.0)])
def test_the_dense_layer_the_gram_reference_and_the_kernel_agree(norm, where, alpha, gamma):
    """One block three ways, per placement: model.layer on tokens with the block's Gram matrix, the
    Gram engine's numpy reference and the compiled kernel (to rounding)."""
    cfg = SimConfig(alpha=alpha, gamma=gamma, norm=norm, placement=where, n=7, d=16, layers=3)
    draws = gram_draws(cfg, block_key(5, 0), 37)
    reference = gram_features(cfg, *draws)  # (B, layers, F)
    x = tokens_with_the_gram_of(cfg, gram_assemble(cfg, *draws))
    dense = np.empty_like(reference)
    for l in range(cfg.layers):
        x, s, a, sq = layer(x, norm=norm, d=cfg.d, gamma=gamma, eps=cfg.eps, placement=where)
        dense[:, l] = layer_features(s, a, sq)
    scale = np.abs(reference).max()
    np.testing.assert_allclose(dense, reference, rtol=0, atol=1e-11 * scale)
    if kernels.load() is not None:
        _, compiled = gram_block(cfg, *draws, "c")
        np.testing.assert_allclose(compiled, reference, rtol=0, atol=1e-12 * scale)


def test_each_placement_is_the_layer_its_registry_entry_says():
    """The literal layers of the issue's table, written out with numpy, against model.layer."""
    rng = np.random.default_rng(3)
    x, d, g = rng.normal(size=(4, 5, 8)), 8, 0.7

    def ln(z):
        z = z - z.mean(-1, keepdims=True)
        return z / np.sqrt((z * z).mean(-1, keepdims=True) + 1e-12)

    def attn(q):
        s = q @ np.swapaxes(q, -1, -2) / math.sqrt(d)
        s = np.where(np.tri(5, dtype=bool), s, -np.inf)
        e = np.exp(s - s.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)

    y = ln(x)
    expected = {
        "pre": attn(y) @ y + g * x,
        "post": ln(attn(x) @ x + g * x),
        "sandwich": g * x + ln(attn(y) @ y),
        "output": g * x + ln(attn(x) @ x),
        "qk": attn(y) @ x + g * x,
        "qk_output": g * x + ln(attn(y) @ x),
    }
    assert set(expected) == set(PLACEMENTS)
    for where, want in expected.items():
        got = layer(x, norm="layernorm", d=d, gamma=g, eps=1e-12, placement=where)[0]
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12, err_msg=where)


def test_a_placement_is_a_field_of_the_paper_model_on_the_gram_engine():
    for where in placements.NAMES:
        cfg = SimConfig(placement=where)
        assert not cfg.extended and resolve_engine(cfg) == "gram"
    assert SimConfig(placement="post", rope=True).extensions == ("rope",)


@pytest.mark.parametrize(
    "kw, needle",
    [
        (dict(placement="middle"), "placement='middle'"),
        (dict(placement=None), "placement=None"),
        (dict(placement="post", norm="none"), "placement='post' is not allowed with norm='none'"),
    ],
)
def test_bad_placements_are_refused_by_name(kw, needle):
    with pytest.raises(ValueError, match="allowed") as err:
        SimConfig(**kw)
    assert needle in str(err.value)


def test_the_draws_are_shared_unless_the_means_are_read():
    """Placements whose scores never see the raw state draw what pre-norm draws (one team in
    simulate_many); LayerNorm's post and output norms draw the means too (n more normals)."""
    base = SimConfig(alpha=0.5, gamma=1.0)
    for where in placements.NAMES:
        cfg = base.replace(placement=where)
        same = stream_key(cfg) == stream_key(base)
        assert same == (not mean_column(cfg)), where
        assert stream_key(cfg.replace(norm="rms")) == stream_key(base.replace(norm="rms"))
    pre, post = (gram_draws(base.replace(placement=p), (1, 2, 3), 16) for p in ("pre", "post"))
    np.testing.assert_array_equal(pre[0], post[0])
    np.testing.assert_array_equal(pre[1], post[1][: pre[1].shape[0]])  # then the means' n
    assert post[1].shape[0] == pre[1].shape[0] + base.n


def test_the_means_column_is_what_the_raw_scores_see():
    """LayerNorm's post-norm at layer 1 reads the raw tokens, whose squared norm has mean 1 + c^2
    (Eq. (6)); pre-norm's diagonal score is sqrt(d) ||y||^2 / d = sqrt(d) whatever the input."""
    cfg = SimConfig(alpha=0.5, gamma=1.0, placement="post", n=6, d=32, layers=2, samples=40_000)
    res = simulate(cfg)
    diag = np.diagonal(res.score_mean[0]) * math.sqrt(cfg.d)  # E ||x_i||^2, layer 1
    sem = np.diagonal(res.score_sem[0]) * math.sqrt(cfg.d)
    assert np.all(np.abs(diag - (1 + cfg.c**2)) < 5 * sem), (diag, sem)
