"""companion.depth: the settings of the depth study, its per-sequence statistic (against simulate's
own estimates, on the same streams), the cells, findings, tables and figure.

Simulations are small, with fixed seeds; the effects the findings rely on (primacy from layer 3
without normalization, LayerNorm's growing recency at alpha = 0.5) are tens of standard errors
from the thresholds at these sizes."""

import math

import numpy as np
import pytest

from companion import conventions, depth, report, statistics
from recency_lib import SimConfig, simulate
from recency_lib.features import trend
from recency_lib.trajectories import sequence_statistic


def test_settings_scale_the_plan_and_merge_coinciding_settings():
    plan = depth.settings(0.5, 1.0, 64, 20_000)
    assert len(plan) == len(depth.PLAN)
    assert plan[("layernorm", 0.0, 64, 0.0)] == (1_000_000, 300_000)
    assert plan[("none", 0.0, 64, 0.0)] == (1_000_000, 0)
    assert plan[("none", 0.0, 16, 0.0)] == (40_000, 0)
    assert plan[("layernorm", 0.5, 64, 1.0)] == (20_000, 5_000)
    assert plan[("none", 0.5, 64, 1.0)][1] == 0  # growth runs: LayerNorm only
    assert all(m == 0 for (norm, *_), (_, m) in plan.items() if norm == "none")
    # at d = 16 the two isotropic sizes coincide: one setting, the larger counts
    small = depth.settings(0.3, 0.5, 16, 1_000)
    assert small[("layernorm", 0.0, 16, 0.0)] == (50_000, 15_000)
    assert len(small) == len(depth.PLAN) - 2
    # a growth run has at least 2 sequences
    assert depth.settings(0.5, 1.0, 64, 4)[("layernorm", 0.5, 64, 0.0)] == (4, 2)


def test_trend_steps_levels_and_paired_differences():
    rng = np.random.default_rng(1)
    s = np.tril(rng.normal(size=(7, 4, 6, 6)))
    s[:, :, ~np.tri(6, dtype=bool)] = np.nan
    out = statistics.trend_steps(s, np.zeros_like(s))
    assert out.shape == (7, 4, 2)
    levels = np.stack([trend(s[:, l]) for l in range(4)], axis=1)
    np.testing.assert_array_equal(out[..., 0], levels)
    np.testing.assert_array_equal(out[:, 0, 1], levels[:, 0])  # layer 1: the control itself
    np.testing.assert_allclose(out[:, 1:, 1], levels[:, 1:] - levels[:, :-1])


@pytest.fixture(scope="module")
def small():
    """Two settings of the study, 6 layers, small: LayerNorm at alpha = 0.5 and no normalization."""
    cfgs = {
        ("layernorm", 0.5, 64, 0.0): SimConfig(
            alpha=0.5, gamma=0, norm="layernorm", n=10, d=64, layers=6, samples=4096, seed=3
        ),
        ("none", 0.5, 64, 0.0): SimConfig(
            alpha=0.5, gamma=0, norm="none", n=10, d=64, layers=6, samples=4096, seed=3
        ),
    }
    results = {k: simulate(c) for k, c in cfgs.items()}
    k = ("layernorm", 0.5, 64, 0.0)
    growth = {
        k: sequence_statistic(cfgs[k], statistics.trend_steps, samples=2048, control_mean=0.0)
    }
    return results, growth


def test_the_statistic_reproduces_simulates_trend_on_the_same_streams(small):
    results, _ = small
    res = results[("layernorm", 0.5, 64, 0.0)]
    stat = sequence_statistic(res.config, statistics.trend_steps, control_mean=0.0)
    np.testing.assert_allclose(stat.cv_mean[:, 0], res.trend_cv_mean, rtol=0, atol=1e-14)
    np.testing.assert_allclose(stat.cv_sem[:, 0], res.trend_cv_sem, rtol=1e-10)
    np.testing.assert_allclose(stat.mean[:, 0], res.trend_mean, rtol=0, atol=1e-14)
    # the growth column is the paired difference of the levels: its mean is the difference of theirs
    np.testing.assert_allclose(stat.mean[1:, 1], np.diff(res.trend_mean), rtol=0, atol=1e-14)


def test_cells_and_findings(small):
    results, growth = small
    zc = conventions.z_for(depth.family(results, growth))
    assert depth.family(results, growth) == 2 * 2 * 5 + 4
    ln = depth.cells(results[("layernorm", 0.5, 64, 0.0)], zc, growth[("layernorm", 0.5, 64, 0.0)])
    none = depth.cells(results[("none", 0.5, 64, 0.0)], zc)
    assert {w for w, _ in ln} == {"trend", "rp", "growth"} and {w for w, _ in none} == {
        "trend",
        "rp",
    }
    assert sorted(l for w, l in ln if w == "growth") == [3, 4, 5, 6]
    s_ln, s_none = depth.summary(ln), depth.summary(none)
    assert s_ln.onset is None and s_ln.grows and not s_ln.fades and s_ln.recency == (2, 3, 4, 5, 6)
    assert s_none.onset == 3 and not s_none.grows
    assert depth.finding(s_ln, 6) == "recency, grows at every layer"
    assert depth.finding(s_none, 6) == "primacy from layer 3"
    c = ln[("rp", 2)]
    assert c.value == pytest.approx(
        results[("layernorm", 0.5, 64, 0.0)].recency_probability_cv[1] - 0.5
    )
    assert c.direction == "recency" and c.resolved and c.z > zc


def test_a_cell_with_no_spread_is_resolved_by_its_sign():
    assert report.zscore(0.0, 0.0) == 0.0 and report.zscore(-0.5, 0.0) == -math.inf
    assert depth._cell("rp", -0.5, 0.0, 3.0).direction == "primacy"
    assert depth._cell("growth", 0.0, 0.0, 3.0).direction == "none"


def test_tables(small):
    results, growth = small
    zc = conventions.z_for(depth.family(results, growth))
    full = depth.rows(results, growth, zc)
    assert len(full) == 2 * 5
    assert [r["layer"] for r in full[:5]] == ["2", "3", "4", "5", "6"]
    assert (
        full[0]["trend − layer before, paired"] == ""
        and "2,048" in full[1]["trend − layer before, paired"]
    )
    compact = depth.summary_rows(results, growth, zc)
    assert [r["finding"] for r in compact] == [
        "recency, grows at every layer",
        "primacy from layer 3",
    ]
    assert compact[0]["setting"] == "LayerNorm, α = 0.5, d = 64"
    assert "<br>→" in compact[0]["RP, layer 2 → 6"]


def test_figure_marks_resolved_values_filled(small):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    results, growth = small
    zc = conventions.z_for(depth.family(results, growth))
    fig = depth.depth_figure(results, zc)
    try:
        assert len(fig.axes) == 2
        for ax in fig.axes:
            assert ax.get_yscale() == "symlog"
            assert list(ax.get_xticks()) == [2, 3, 4, 5, 6]
        # no normalization, layer 2: the RP is not resolved at 4,096 sequences (an open marker)
        faces = [
            l.get_markerfacecolor() for l in fig.axes[0].get_lines() if l.get_linestyle() == "None"
        ]
        assert any(f == "white" for f in faces) and any(f != "white" for f in faces)
        handles = depth.legend_handles(results)
        assert [h.get_label() for h in handles] == [
            "LayerNorm, α = 0.5, d = 64",
            "no normalization, α = 0.5, d = 64",
        ]
    finally:
        plt.close(fig)
