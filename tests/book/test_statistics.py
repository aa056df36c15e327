"""companion.statistics: the per-sequence statistics through the results cache
(recency_lib.cache.cached_statistic: computed once, read back bit for bit, keyed by what shapes them
and nothing else), and the statistics of simulated results that the pages quote."""

from __future__ import annotations

import functools
import json
import math

import numpy as np
import pytest
from fake_results import thm

from companion import conventions, estimators, report, settings, statistics, verdicts
from recency_lib import SimConfig, cache, simulate, simulate_many
from recency_lib.features import adjacent_index
from recency_lib.trajectories import sequence_statistic

CFG = SimConfig(alpha=0.5, n=7, d=16, layers=3, samples=1_500, seed=4)


def test_computed_once_and_read_back_as_computed(tmp_path):
    direct = sequence_statistic(CFG, statistics.distance_contrasts, control_mean=0.0)
    first = cache.cached_statistic(
        CFG, statistics.distance_contrasts, control_mean=0.0, cache=tmp_path
    )
    again = cache.cached_statistic(
        CFG, statistics.distance_contrasts, control_mean=0.0, cache=tmp_path
    )
    for name in ("mean", "sem", "cv_mean", "cv_sem"):
        assert np.array_equal(getattr(first, name), getattr(direct, name))
        assert np.array_equal(getattr(again, name), getattr(direct, name))
    assert again.samples == CFG.samples and again.config == CFG
    assert len(list(tmp_path.glob("statistic-*.json"))) == 1


def test_the_key_follows_config_samples_control_and_the_statistic(tmp_path):
    cache.cached_statistic(CFG, statistics.distance_contrasts, control_mean=0.0, cache=tmp_path)
    cache.cached_statistic(CFG, statistics.distance_contrasts, cache=tmp_path)  # no control
    cache.cached_statistic(
        CFG, statistics.distance_contrasts, samples=600, cache=tmp_path
    )  # fewer sequences
    cache.cached_statistic(CFG.replace(seed=5), statistics.distance_contrasts, cache=tmp_path)
    cache.cached_statistic(
        CFG, statistics.trend_steps, control_mean=0.0, cache=tmp_path
    )  # another statistic
    assert len(list(tmp_path.glob("statistic-*.json"))) == 5
    two = SimConfig(alpha=0.0, n=6, d=16, layers=2, samples=400, seed=1)
    a = cache.cached_statistic(two, estimators.first_order(16), cache=tmp_path)
    b = cache.cached_statistic(
        two, estimators.first_order(25), cache=tmp_path
    )  # its keyword: a key
    assert a.mean[1, -1] != b.mean[1, -1] and len(list(tmp_path.glob("statistic-*.json"))) == 7


def test_its_module_imports_nothing_of_the_books_style_or_text():
    import ast

    tree = ast.parse(cache.module_files("companion.statistics")["companion.statistics"].read_text())
    book = {
        n.module
        for n in ast.walk(tree)
        if isinstance(n, ast.ImportFrom) and (n.level or "companion" in (n.module or ""))
    }
    assert book <= {"significance"}, book  # the book's number formatting and style stay out


@pytest.mark.parametrize(
    "statistic",
    [
        lambda s, a: s[:, :, :1, 0],
        functools.partial(estimators.first_order_steps, 1, d=16),
        "trend",
    ],
)
def test_only_a_keyable_statistic(tmp_path, statistic):
    with pytest.raises(ValueError, match="allowed: a module-level function"):
        cache.cached_statistic(CFG, statistic, cache=tmp_path)
    assert not list(tmp_path.glob("statistic-*"))


def test_an_entry_of_another_key_is_recomputed(tmp_path):
    first = cache.cached_statistic(CFG, statistics.distance_contrasts, cache=tmp_path)
    entry = next(tmp_path.glob("statistic-*.json"))
    stored = json.loads(entry.read_text())
    stored["value"]["mean"][0][0] = 99.0
    stored["key"]["params"]["samples"] = 7  # a key this build never makes
    entry.write_text(json.dumps(stored))
    again = cache.cached_statistic(CFG, statistics.distance_contrasts, cache=tmp_path)
    assert np.array_equal(again.mean, first.mean)


# -- statistics of simulated results ---------------------------------------------------------------


@pytest.fixture(scope="module")
def fig1():
    # 20,000 sequences: the features of Figure 1 are resolved by tens of SE; layer 1 has no order by
    # symmetry.
    return simulate_many(settings.fig1_configs(20_000, 3))


def test_sequences_needed():
    # SE 1e-6 at 100 sequences, effect 2e-6: expected z = 2 now; z = 5 needs (5 / 2)^2 = 6.25 times
    # more
    assert statistics.sequences_needed(1e-6, 100, 2e-6, 5.0) == pytest.approx(625.0)
    assert statistics.sequences_needed(1e-6, 100, -2e-6, 2.0) == pytest.approx(
        100.0
    )  # the sign does not matter
    assert statistics.sequences_needed(1e-6, 100, 0.0) == math.inf
    assert statistics.sequences_needed(0.0, 100, 1e-6) == 0.0


def test_sign_is_the_one_decision_of_a_sign():
    assert statistics.sign(0.6, 0.01, 3.0, 0.5) == 1 and statistics.sign(0.4, 0.01, 3.0, 0.5) == -1
    assert statistics.sign(0.52, 0.01, 3.0, 0.5) == 0 and statistics.sign(0.52, 0.01, 1.0, 0.5) == 1
    assert statistics.sign(1e-9, 0.0, 5.0) == 1 and statistics.sign(0.0, 0.0, 5.0) == 0  # SE 0


def test_order_word():
    assert (
        statistics.order_word(6e-6, 1e-6) == "recency"
        and statistics.order_word(-6e-6, 1e-6) == "primacy"
    )
    assert (
        statistics.order_word(4e-6, 1e-6) == "no order resolved"
        and statistics.order_word(4e-6, 1e-6, z=3) == "recency"
    )


def test_rp_conventions_at_alpha_one_and_below():
    # alpha = 1: every score of a row ties. The book's RP is exactly 1/2, strict counting gives
    # exactly 0; float32 rounding makes the layer-1 outputs differ, so from layer 2 strict float32
    # counts ~12 %
    cfg = SimConfig(alpha=1.0, n=6, d=16, layers=3, samples=2_000, seed=1)
    got = statistics.rp_conventions(cfg)
    assert set(got) == set(statistics.RP_CONVENTIONS)
    half, strict, f32 = (got[k] for k in statistics.RP_CONVENTIONS)
    assert np.all(half[0] == 0.5) and np.all(half[1] == 0) and np.all(strict[0] == 0)
    assert f32[0][0] == 0 and np.all(f32[0][1:] > 0.02) and np.all(f32[0][1:] < 0.5)
    # alpha = 0.5: no ties, so strict = tie-half exactly; the float32 run (its own tokens) agrees
    # with them within 5 combined SE
    got = statistics.rp_conventions(cfg.replace(alpha=0.5))
    half, strict, f32 = (got[k] for k in statistics.RP_CONVENTIONS)
    np.testing.assert_array_equal(half[0], strict[0])
    assert np.all(np.abs(half[0] - f32[0]) < 5 * np.hypot(half[1], f32[1]))


def test_distance_contrasts_on_constructed_scores():
    n = 8
    i, j = np.indices((n, n))
    # a bias of the distance alone, and one of the key's position alone (not linear: a linear
    # profile is both, up to a constant per row, which the softmax ignores)
    relative = np.where(i >= j, np.exp(-(i - j) / 2), np.nan)[None, None].repeat(
        2, 1
    )  # (1, 2 layers, n, n)
    positional = np.where(i >= j, 0.1 * j**2, np.nan)[None, None].repeat(2, 1)
    m = n - statistics.FAR
    rel, pos = (
        statistics.distance_contrasts(relative, None)[0, 0],
        statistics.distance_contrasts(positional, None)[0, 0],
    )
    np.testing.assert_allclose(rel[:m], np.exp(-0.5) - np.exp(-2)) and np.testing.assert_allclose(
        rel[-2], 0.0, atol=1e-12
    )
    np.testing.assert_allclose(pos[m : 2 * m], 0.1 * (9 - 0)) and np.testing.assert_allclose(
        pos[-1], 0.0, atol=1e-12
    )
    assert abs(rel[-1]) > 0.05 and abs(pos[-2]) > 0.05  # each keeps only its own quantity constant
    with pytest.raises(ValueError, match="n >= 6"):
        statistics.distance_contrasts(relative[..., :5, :5], None)


def test_directions_and_pairing_on_figure1(fig1):
    assert (
        statistics.direction(fig1[0], 4) == "primacy"
        and statistics.direction(fig1[2], 4) == "recency"
    )
    assert statistics.direction(fig1[2], 1) == "no order resolved"
    assert 1 < statistics.pairing_gain(fig1[2], 2) < math.inf


def test_cosine_deviations_trends_and_rps():
    al, dev, se = statistics.cosine_deviations({0.5: (0.49, 0.01), 0.0: (0.001, 0.002)})
    assert (
        list(al) == [0.0, 0.5]
        and dev == pytest.approx([0.001, -0.01])
        and list(se) == [0.002, 0.01]
    )
    k, m, e = statistics.trends(
        {0.5: thm(16, trend=3e-3, trend_se=1e-4), 0.0: thm(16, trend=2e-6, trend_se=2e-7)}
    )
    assert list(k) == [0.0, 0.5] and list(m) == [2e-6, 3e-3] and list(e) == [2e-7, 1e-4]
    k, m, e = statistics.rps({0.5: thm(16, rp=0.7), 0.0: thm(16, rp=0.5, rp_se=2e-3)})
    assert list(k) == [0.0, 0.5] and list(m) == [0.5, 0.7] and list(e) == [2e-3, 1e-3]


def test_definition1_takes_the_estimator(grid_results):
    res = grid_results[0]
    for est in ("cv", "plain"):  # recency_lib's one rule, a family of two matrices
        assert [statistics.definition1(res, l, 2, est) for l in (1, 2, 3)] == [
            res.decision(l, family=2, estimator=est).word for l in (1, 2, 3)
        ]
    assert res.decision(2, family=2).z == conventions.z_for(2 * conventions.adjacent_pairs(6))


def test_step_counts_partition_the_steps_and_agree_with_definition1(grid_results):
    for res in grid_results:
        for l in (1, 2, 3):
            c = statistics.step_counts(res, l, family=3)
            assert sum(c.values()) == conventions.adjacent_pairs(6)
            word = statistics.definition1(res, l, 3)
            assert (word == "holds") == (c["steps up"] == conventions.adjacent_pairs(6))
            if c["steps down"]:
                assert word == "violated"


def test_first_key_excess_rp_gap_and_rp(grid_results):
    ln, res, none = grid_results
    m, e = statistics.first_key_excess(none, 3)
    assert m == pytest.approx(6 * none.attn_mean[2, 5, 0] - 1) and e == pytest.approx(
        6 * none.attn_sem[2, 5, 0]
    )
    gap, se = statistics.rp_gap(ln, res, 3)
    (a, sa, _), (b, sb, _) = ln.rp(3), res.rp(3)
    assert gap == pytest.approx(a - b) and se == pytest.approx(math.hypot(sa, sb))
    assert statistics.rp(ln, 2) == ln.rp(2)[:2]  # the book's RP is the simulator's


def test_simulated_h_delta_method():
    from recency_lib import SimConfig, simulate

    res = simulate(SimConfig(alpha=0.5, gamma=1.0, n=5, d=16, layers=2, samples=500))
    h, sem = statistics.simulated_h(res)
    m, s = res.sq_norm_mean[1], res.sq_norm_sem[1]
    assert h[0] == 1.0 and sem[0] == 0.0
    np.testing.assert_allclose(h, np.sqrt(m[0] / m))
    np.testing.assert_allclose(sem[1:], h[1:] / 2 * np.hypot(s[0] / m[0], s[1:] / m[1:]))


def test_estimator_names():
    assert (
        statistics.estimator_name() == "control variates"
        and statistics.estimator_name("plain") == "plain means"
    )
    with pytest.raises(ValueError, match="estimator='dense' is not allowed"):
        statistics.estimator_name("dense")


# -- the steps of Definition 1 ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def aniso():
    # alpha = 0.5, d = 16: layer 2's steps are ~10 SE positive at 20,000 sequences; many blocks, so
    # the control variates are cross-fitted
    return simulate(
        SimConfig(alpha=0.5, norm="layernorm", n=5, d=16, layers=2, samples=20_000, seed=3)
    )


def test_step_tally_counts_the_control_variate_steps():
    res = thm(16, step=1.0, step_se=0.1)
    t = statistics.step_tally(res, 2, 3.0)
    assert (t.up, t.down, t.unresolved) == (45, 0, 0) and t.smallest.z == pytest.approx(10.0)
    res.diff_cv_mean[1][9, 3] = -1.0
    res.diff_cv_mean[1][9, 4] = 0.1
    t = statistics.step_tally(res, 2, 3.0)
    assert (t.up, t.down, t.unresolved) == (43, 1, 1) and t.smallest.z == pytest.approx(-10.0)
    with pytest.raises(ValueError, match="layer"):
        statistics.step_tally(res, 3, 3.0)


def test_smallest_step_uses_the_verdicts_estimator(aniso):
    zc = conventions.z_for(verdicts.comparisons_of_order(aniso.config.n))
    verdict_check = verdicts.order_check((aniso, 2), zc)
    assert verdict_check.status == verdicts.AS_CLAIMED  # smallest step ~ +10 SE
    step = statistics.smallest_step(aniso, 2)
    assert verdict_check.text == f"{report.pm(step.mean, step.se)} (smallest step)"
    plain = statistics.smallest_step(aniso, 2, "plain")
    ii, jj = adjacent_index(aniso.config.n)
    z = aniso.diff_mean[1][ii, jj] / aniso.diff_sem[1][ii, jj]
    assert (
        plain.z == pytest.approx(z.min())
        and plain.mean == aniso.diff_mean[1][plain.i - 1, plain.j - 1]
    )
    assert 2 <= step.j <= step.i <= aniso.config.n
    with pytest.raises(ValueError, match="estimator"):
        statistics.smallest_step(aniso, 2, "bootstrap")
    with pytest.raises(ValueError, match="layer"):
        statistics.smallest_step(aniso, 3)


def test_control_variates_cut_the_error_and_keep_the_mean(aniso):
    assert statistics.cv_gain(aniso, 1) == 1.0  # layer 1 is the control
    assert statistics.cv_gain(aniso, 2) > 2.0
    gap = statistics.estimator_gap(aniso, 2)
    assert 0.0 < gap < 4.0  # the same mean, within errors
    assert statistics.estimator_gap(aniso, 1) == 0.0
