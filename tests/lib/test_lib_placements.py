"""Where the norm sits (recency_lib.placements): one registry, read by the config, both engines, the
kernel and the CLI; the Gram engine runs every placement exactly (one block three ways:
tests/lib/test_one_block_three_ways.py; the dense engine agrees in distribution:
tests/lib/test_engines.py's grid)."""

import math

import numpy as np
import pytest

from recency_lib import SimConfig, placements, simulate
from recency_lib.engines import resolve_engine, stream_key
from recency_lib.model import layer
from recency_lib.placements import PLACEMENTS, mean_column
from recency_lib.sampling import gram_draws


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


def test_a_placement_that_lets_the_raw_state_into_the_scores_normalizes_an_output():
    """What the kernel's means rely on (they reach the next state through the residual alone): a
    layer with no norm on the scores, the values and the output would be no normalization at all."""
    for p in PLACEMENTS.values():
        assert p.output in placements.OUTPUTS
        assert p.norm_scores or p.output != "none", p.name


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


def test_the_cli_says_what_ran_and_the_word_the_api_and_the_page_say(tmp_path):
    """``simulate --placement post`` names the placement in its first line; its layer-2 word is the
    API's (SimResult.decision on the result it wrote; the chapter's checks: tests/book)."""
    import subprocess
    import sys

    from recency_lib import SimResult

    out = tmp_path / "post.json"
    args = ["--placement", "post", "--alpha", "0.5", "--samples", "4000", "--out", str(out)]
    p = subprocess.run(
        [sys.executable, "-m", "recency_lib", "simulate", *args], capture_output=True, text=True
    )
    assert p.returncode == 0, p.stderr
    first, layer2 = p.stdout.splitlines()[0], p.stdout.splitlines()[2]
    assert "norm=layernorm placement=post n=10" in first
    res = SimResult.load(out)
    word = res.decision(2).word
    assert f"Definition 1 {word}:" in layer2 and word == "holds"
