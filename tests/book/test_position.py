"""companion.position: chapter 7's position-or-distance study, read from sequence statistics.

Constructed statistics check every reading exactly (a bias set by distance, one set by key
position); small simulations with fixed seeds check the link to statistics.distance_contrasts and
the causality check."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pytest

from companion import claims, position, report, statistics, verdicts
from recency_lib import SimConfig, sample_trajectories
from recency_lib.trajectories import SequenceStatistic, sequence_statistic


def _stat(cfg, D, K, se=1e-3, cv=True):
    """A SequenceStatistic whose every layer has the D_i and K_i given (arrays over i = 5..n)."""
    D, K = np.asarray(D, dtype=float), np.asarray(K, dtype=float)
    row = np.concatenate([D, K, [D[-1] - D[0], K[-1] - K[0]]])
    mean = np.tile(row, (cfg.layers, 1))
    sem = np.full_like(mean, se)
    return SequenceStatistic(cfg, cfg.samples, mean, sem, mean if cv else None, sem if cv else None)


CFG = SimConfig(alpha=0.5, n=9, d=16, layers=3, samples=1000)


def test_a_bias_by_distance_and_one_by_key_position_are_told_apart():
    q = np.arange(5, 10)
    relative = _stat(CFG, D=np.full(5, 0.4), K=0.4 - 0.05 * (q - 5))  # D flat: relative
    absolute = _stat(CFG, D=0.4 / (q - 4.0), K=np.full(5, 0.4))  # K flat: key position
    assert position.change(relative, "D") == (0.0, 1e-3)
    assert position.change(absolute, "K") == (0.0, 1e-3)
    zc = 3.0
    assert position.change_word(relative, "D", zc) == "does not change resolvably"
    assert position.change_word(relative, "K", zc) == "falls"
    assert position.change_word(absolute, "D", zc) == "falls"
    assert (
        position.change_word(_stat(CFG, D=[0.1] * 5, K=[0.1, 0.2, 0.3, 0.4, 0.5]), "K", zc)
        == "rises"
    )
    assert position.value_at(absolute, "D", 9) == pytest.approx((0.08, 1e-3))
    assert position.value_at(absolute, "K", 5, layer=2) == (0.4, 1e-3)
    assert claims.not_relative_claim(relative).word == verdicts.NOT_RESOLVED
    assert claims.not_relative_claim(absolute).word == verdicts.HOLDS


def test_plain_estimates_are_used_without_control_variates():
    s = _stat(CFG, [0.1] * 5, [0.2] * 5, cv=False)
    assert statistics.distance_profiles(s)["estimator"] == "plain"
    assert statistics.distance_profiles(_stat(CFG, [0.1] * 5, [0.2] * 5))["estimator"] == "cv"
    assert position.value_at(s, "K", 7) == (0.2, 1e-3)


def test_tables_family_and_download():
    a = _stat(CFG, [0.4] * 5, [0.4, 0.41, 0.42, 0.43, 0.44])
    b = _stat(CFG.replace(n=12, norm="none"), np.linspace(0.4, 0.0, 8), [0.4] * 8)
    rows = position.change_rows([a, b])
    assert len(rows) == 2 * 2 and [r["layer"] for r in rows] == ["2", "3"] * 2
    assert list(rows[0]) == [
        "model",
        "$n$",
        "layer",
        "$D_5 = K_5$",
        "$D_n$",
        "$K_n$",
        "$D_n - D_5$ (z)",
        "$K_n - K_5$ (z)",
    ]
    assert rows[2]["model"] == "no normalization" and rows[2]["$n$"] == "12"
    assert rows[0]["$K_n - K_5$ (z)"] == f"{report.pm(0.04, 1e-3)} (+40)"
    last = position.change_rows([a, b], last_layer_only=True)
    assert [r["layer"] for r in last] == ["3", "3"]
    assert position.family([a, b]) == 8
    cols = position.columns([a, b])
    assert len(cols["mean"]) == 3 * 2 * 5 + 3 * 2 * 8 and set(cols["quantity"]) == {"D", "K"}
    assert set(cols["estimator"]) == {"cv"} and report.download("t", cols).text.count("data:") == 2
    v = claims.not_relative_claim(b)
    checks = position.check_rows(v, b)
    assert [r["layer"] for r in checks] == ["3", "2"] and checks[0]["found"] == verdicts.AS_CLAIMED


def test_panels_draw_two_lines_and_a_band_per_layer():
    s = _stat(CFG, np.linspace(0.4, 0.1, 5), [0.4] * 5)
    _, ax = plt.subplots()
    assert position.contrast_panel(s, ax) is ax
    assert len(ax.lines) == 2 * 2 + 1 and ax.get_xscale() == "log"  # layers 2-3, K and D; zero line
    assert [l.get_linestyle() for l in ax.lines[:2]] == ["-", "--"]
    assert position.overlay_points(s, ax) is ax
    handles = position.legend_handles(3, points="n = 10")
    assert [h.get_label() for h in handles][2:] == ["layer 2", "layer 3", "n = 10"]
    _, ax2 = plt.subplots()
    position.contrast_panel(s, ax2, log=False, first_layer=1)
    assert len(ax2.lines) == 3 * 2 + 1 and ax2.get_xscale() == "linear"
    plt.close("all")


def test_same_rows_and_the_causality_of_the_simulator():
    short = SimConfig(alpha=0.5, n=6, d=16, layers=3, samples=16, seed=4)
    for norm, gamma in (("layernorm", 0.0), ("layernorm", 1.0), ("none", 0.0)):
        s = short.replace(norm=norm, gamma=gamma)
        a = sample_trajectories(s)[0]
        b = sample_trajectories(s.replace(n=13))[0]
        assert position.same_rows(a, b) == 0.0
    assert position.same_rows(a, b + 1.0) == 1.0
    nan = b.copy()
    nan[0, 0, 3, 1] = np.nan
    assert position.same_rows(a, nan) == float("inf")


def test_on_a_simulation_the_profiles_are_the_contrasts_of_the_scores():
    cfg = SimConfig(alpha=0.5, n=7, d=16, layers=2, samples=300, seed=2)
    st = sequence_statistic(cfg, statistics.distance_contrasts, control_mean=0.0)
    s, _ = sample_trajectories(cfg)
    d7 = (s[:, 1, 6, 5] - s[:, 1, 6, 2]).mean()
    assert (
        statistics.distance_profiles(st)["D"][0][1, -1] != d7
    )  # control variates, not the plain mean
    plain = statistics.distance_profiles(st, "plain")
    assert plain["D"][0][1, -1] == pytest.approx(d7, rel=1e-12)
    m, e = position.change(st, "K", layer=2)
    assert np.isfinite(m) and e > 0
