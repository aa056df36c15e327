"""companion.claims, the helpers behind the pages of Figures 1-5 (chapter 6, Appendix B, the setting
template): verdict tables over heatmap grids, step counts, the key factor h(j), closed-form ratios.

Small simulations with fixed seeds; the statistical checks compare with the library's own primitives
(exact identities), so no tolerance is needed beyond float rounding."""
import math

import numpy as np
import pytest

from recency_lib import SimConfig, simulate_many, theory
from companion import claims, closedforms, conventions as cv, report
from companion.grid import simulated_h


@pytest.fixture(scope="module")
def grid_results():
    """LayerNorm at alpha = 0.5 without and with the residual, and no normalization: n = 6, d = 16."""
    cfgs = [SimConfig(alpha=0.5, gamma=0.0, n=6, d=16, layers=3, samples=4000, seed=3),
            SimConfig(alpha=0.5, gamma=1.0, n=6, d=16, layers=3, samples=4000, seed=3),
            SimConfig(alpha=0.0, gamma=0.0, norm="none", n=6, d=16, layers=3, samples=4000, seed=3)]
    return simulate_many(cfgs)


def test_feature_and_estimator_words():
    assert [claims.feature_word(v) for v in (True, False, None)] == ["reproduced", "contradicted", "not resolved"]
    assert claims.estimator_name() == "control variates" and claims.estimator_name("plain") == "plain means"
    with pytest.raises(ValueError, match="value=1 is not allowed"):
        claims.feature_word(1)
    with pytest.raises(ValueError, match="estimator='dense' is not allowed"):
        claims.estimator_name("dense")


def test_definition1_takes_the_estimator(grid_results):
    res = grid_results[0]
    z = cv.z_for(2 * cv.adjacent_pairs(6))
    for est in ("cv", "plain"):
        assert [claims.definition1_with(res, l, 2, est) for l in (1, 2, 3)] == list(res.definition1_at(z, est))
    assert [claims.definition1(res, l, 2) for l in (1, 2, 3)] == list(res.definition1_at(z, "cv"))


def test_verdict_grid_rows_and_tally_use_one_family(grid_results):
    rows = claims.verdict_grid_rows(grid_results, ["a", "b", "c"])
    assert [r["setting"] for r in rows] == ["a", "b", "c"]
    assert list(rows[0]) == ["setting", "layer 1", "layer 2", "layer 3"]
    k = 9                                                         # 3 results x 3 layers
    for r, row in zip(grid_results, rows):
        for l in (1, 2, 3):
            number, badge = row[f"layer {l}"].split("<br>")
            assert number == report.pm(*claims.rp(r, l)).replace(" ", "\u00a0")     # one line in the cell
            assert badge == report.badge(claims.definition1(r, l, k))
    tally = claims.definition1_tally(grid_results)
    words = [claims.definition1(r, l, k) for r in grid_results for l in (2, 3)]
    assert tally == {"holds": words.count("holds"), "violated": words.count("violated"),
                     "undecided": words.count("undecided"), "matrices": 6}
    assert tally["holds"] >= 2               # alpha = 0.5 without residual: recency tens of SE above zero at d = 16
    with pytest.raises(ValueError, match="labels has length 1"):
        claims.verdict_grid_rows(grid_results, ["a"])


def test_step_counts_partition_the_steps_and_agree_with_definition1(grid_results):
    for res in grid_results:
        for l in (1, 2, 3):
            c = claims.step_counts(res, l, family=3)
            assert sum(c.values()) == cv.adjacent_pairs(6)
            word = claims.definition1(res, l, 3)
            assert (word == "holds") == (c["steps up"] == cv.adjacent_pairs(6))
            if c["steps down"]:
                assert word == "violated"


def test_first_key_excess_rp_gap_and_residual_costs(grid_results):
    ln, res, none = grid_results
    m, e = claims.first_key_excess(none, 3)
    assert m == pytest.approx(6 * none.attn_mean[2, 5, 0] - 1) and e == pytest.approx(6 * none.attn_sem[2, 5, 0])
    gap, se = claims.rp_gap(ln, res, 3)
    assert gap == pytest.approx(ln.recency_probability[2] - res.recency_probability[2])
    assert se == pytest.approx(math.hypot(ln.recency_probability_sem[2], res.recency_probability_sem[2]))
    assert claims.residual_costs({0.5: ln, 0.2: none}, {0.5: res, 0.8: res}, 3) == {0.5: (gap, se)}
    assert claims.rp_cv(ln, 2) == (ln.recency_probability_cv[1], ln.recency_probability_cv_sem[1])


def test_h_curves_normalized_and_raw(grid_results):
    ln, res, none = grid_results
    c = claims.h_curves(res)
    h, se = simulated_h(res)
    np.testing.assert_array_equal(c.sim, h)
    np.testing.assert_array_equal(c.sim_se, se)
    j = np.arange(1, 7)
    np.testing.assert_allclose(c.printed, theory.h_eq41(j, 0.5, 1.0, 16) / theory.h_eq41(1, 0.5, 1.0, 16))
    np.testing.assert_allclose(c.corrected, theory.h_corrected(j, 0.5, 1.0, 16) / theory.h_corrected(1, 0.5, 1.0, 16))
    assert c.normalized and c.printed[0] == c.corrected[0] == c.sim[0] == 1.0
    raw = claims.h_curves(res, normalize=False)
    np.testing.assert_allclose(raw.sim, np.sqrt(16 / res.sq_norm_mean[1]))
    np.testing.assert_allclose(raw.printed, 4.0 * theory.h_eq41(j, 0.5, 1.0, 16))
    assert not raw.normalized and raw.sim_se[0] > 0          # the raw first point has its own error
    bare = claims.h_curves(none)
    assert bare.printed is None and bare.corrected is None
    assert set(bare.columns("x")) == {"x: simulation"}
    assert set(c.columns("y")) == {"y: simulation", "y: Eq. (41) as printed", "y: corrected"}
    report.curve_columns(c.columns("y"), x_name="j")           # a valid download
    with pytest.raises(ValueError, match="layers=1 is out of range"):
        claims.h_curves(simulate_many([SimConfig(n=4, d=8, layers=1, samples=50)])[0])


def test_step_scale_of_theorem1(grid_results):
    n, d = 6, 16
    i, j = np.meshgrid(np.arange(1, n + 1), np.arange(1, n + 1), indexing="ij")
    s2 = np.where(i > j, theory.score2_corrected(i, j, 0.0, 0.0, d), np.nan)
    # the smallest step between earlier keys, without cancellation, against plain differences (d = 16:
    # the steps are far above float rounding)
    assert claims.eq5_smallest_step(n, d) == pytest.approx(np.nanmin(np.diff(s2, axis=1)), rel=1e-6)
    res = grid_results[0]
    plain, cvar = claims.typical_step_se(res, 2, "plain"), claims.typical_step_se(res, 2)
    assert 0 < cvar < plain                                   # the control variates shrink the error
    with pytest.raises(ValueError, match="n=2 is out of range"):
        claims.eq5_smallest_step(2, d)


def _row(key, alpha, part, ratios, d=(16, 64, 256)):
    """A closedforms.Row whose cells have the given simulated/closed ratios (SE 1 % of the value)."""
    setting = closedforms.Setting("layernorm", alpha, 0.0)
    cells = tuple(closedforms.Cell(dd, 1.0, closedforms.Estimate(r, 0.01 * abs(r) if r else 1.0, "test"), 1000)
                  for dd, r in zip(d, ratios))
    return closedforms.Row(closedforms.BY_KEY[key], setting, part, cells, *closedforms.judge(cells))


def test_ratio_series_texts_and_trend():
    rows = (_row("fig2", 0.2, "level", [0.99, 1.0, 1.0]), _row("fig2", 0.2, "step", [0.92, 1.3, 1.45]),
            _row("fig2", 0.4, "step", [0.8, 1.1, 0.0]))
    table = closedforms.Table(rows, (16, 64, 256), 10, 1000, 0, None)
    series = claims.ratio_series(table, "fig2", "step")
    assert list(series) == [0.2, 0.4]
    d, ratio, se = series[0.4]
    np.testing.assert_array_equal(d, [16, 64, 256])
    assert ratio[:2].tolist() == [0.8, 1.1] and math.isnan(ratio[2]) and math.isnan(se[2])   # 0 is unresolved
    assert claims.ratio_texts(rows[1]) == ["0.920 ± 0.009", "1.300 ± 0.013", "1.450 ± 0.014"]
    assert claims.ratio_texts(rows[2])[2] == "unresolved"
    assert claims.trend_words(rows[1]) == "grows"
    with pytest.raises(ValueError, match="is not in the table"):
        claims.ratio_series(table, "eq10", "level")
    twice = closedforms.Table(rows + (_row("fig2", 0.4, "step", [1, 1, 1]),), (16, 64, 256), 10, 1000, 0, None)
    with pytest.raises(ValueError, match="several settings with alpha = 0.4"):
        claims.ratio_series(twice, "fig2", "step")
