"""Tests of companion.closedforms: every closed form the book quotes, held to simulation.

* the registry: every entry evaluates, names a real simulated quantity, and its closed forms are
  the theory module's (and, for the steps, agree with 60-digit differences of the printed forms);
* the readers take the right entries of a SimResult (checked on hand-made arrays);
* the standard errors are honest: exact ones match the spread over independent seeds, bounds are
  not exceeded by it (chi-square tolerances stated where used);
* the verdict rules on hand-made cells;
* end to end: exact identities of the model come out "consistent", and two derived predictions
  beyond the LLN (the e^{1/2}-type factor of Eq. (10)'s drop and Prop. 1's d^{-3/2} rise) are met;
* bad input raises ValueError before any work; same seed -> identical table.
"""

import math

import mpmath as mp
import numpy as np
import pytest
from scipy import stats

from companion import closedforms as cf
from companion import conventions, report, statistics, verdicts
from recency_lib import SimConfig, simulate, theory
from recency_lib.result import ARRAY_FIELDS, SimResult, expected_shape

N = 10
DS = (16, 64, 256)


# -- the registry ----------------------------------------------------------------------------------


def test_registry_keys_unique_and_every_part_evaluates():
    keys = [f.key for f in cf.CLOSED_FORMS]
    assert len(keys) == len(set(keys))
    for f in cf.CLOSED_FORMS:
        assert f.settings and (f.level or f.step) and f.source in ("gram", "cosine")
        for s in f.settings:
            s.config(16, N, 100, 0)  # a valid simulation exists
            for part in (f.level, f.step):
                if part is None:
                    continue
                for d in DS:
                    v = part.form(s, d, N)
                    assert math.isfinite(v), (f.key, s, d)
                    # flat forms are exactly 0; the others are nonzero at these d (no underflow)
                    assert (v == 0.0) == part.flat, (f.key, s, d, v)
    assert cf.T in {s for f in cf.CLOSED_FORMS for s in f.settings}


def test_settings_are_the_rows_of_figure_1_and_counts_are_one_formula():
    from companion import settings

    rows = [cf.Setting(c.norm, c.alpha, c.gamma) for c in settings.fig1_configs()]
    assert rows == [cf.P, cf.T, cf.A, cf.AR]
    assert cf.R == cf.Setting("layernorm", 0.0, 1.0) and cf.RAW == cf.Setting("none", 0.5, 0.0)
    c = cf.Cell(64, 2.0, cf.Estimate(1.0, 0.5), 1000)
    assert c.samples_to_resolve == statistics.sequences_needed(0.5, 1000, 2.0, cf.Z_RESOLVE)


def test_select_and_row_lookup():
    assert cf.select(["eq10", "eq11"]) == (cf.BY_KEY["eq11"], cf.BY_KEY["eq10"])  # registry order
    assert cf.select(None) == cf.CLOSED_FORMS


def mp_eq11(i, j, d):
    sd = mp.sqrt(mp.mpf(d))
    a = mp.e**sd
    return sd * (a + j - 1) / mp.sqrt((a**2 + i - 1) * (a**2 + j - 1))


@pytest.mark.parametrize("d", [16, 64, 256, 4096])
def test_eq11_mean_step_matches_high_precision_differences(d):
    # The registry computes Eq. (11)'s mean step over all rows (the trend) from
    # theory.score2_step_corrected (no cancellation). Reference: 60-digit differences of the printed
    # Eq. (11), averaged over the (N - 1)(N - 2)/2 off-diagonal steps. Float64 rounding of a few
    # dozen operations: 1e-12 relative leaves a wide margin.
    mp.mp.dps = 60
    steps = [mp_eq11(i, j, d) - mp_eq11(i, j - 1, d) for i in range(3, N + 1) for j in range(2, i)]
    ref = mp.fsum(steps) / len(steps)
    got = cf.BY_KEY["eq11"].step.form(cf.T, d, N)
    assert abs(got - float(ref)) <= 1e-12 * abs(float(ref))


def test_off_diagonal_steps_are_the_trend_steps():
    i, j = cf.off_diagonal_steps(N)
    assert len(i) == (N - 1) * (N - 2) // 2 and np.all((2 <= j) & (j < i) & (i <= N))
    assert len(set(zip(i, j))) == len(i)


def test_prop1_trend_is_the_mean_of_the_predicted_steps():
    # Brute force: E S_ij = c_i (1 + rise(j)) for j < i; the mean over all off-diagonal steps.
    for d in (16, 64):
        steps = [
            theory.prop1_score_corrected(i, 1, d)
            * (cf.prop1_row_rise(j, d) - cf.prop1_row_rise(j - 1, d))
            for i, j in zip(*cf.off_diagonal_steps(N))
        ]
        assert cf.prop1_trend(d, N) == pytest.approx(np.mean(steps), rel=1e-12)
        assert cf.BY_KEY["prop1-beyond-lln"].step.form(cf.P, d, N) == cf.prop1_trend(d, N)


def test_registry_forms_are_the_theory_forms():
    d, j, k = 64, np.arange(1, N + 1), np.arange(1, N)
    by = cf.BY_KEY
    assert by["eq11"].level.form(cf.T, d, N) == pytest.approx(
        np.mean(theory.theorem1_score(N, k, d)), rel=1e-14
    )
    q = theory.sq_norm_eq36(j, 0.0, 0.0, d)
    assert by["eq10"].step.form(cf.T, d, N) == pytest.approx((q[-1] - q[0]) / (N - 1), rel=1e-12)
    # Eq. (4)'s layer-1 weight at alpha = 0 is the printed Eq. (15) off-diagonal weight
    assert by["eq4-attention"].level.form(cf.T, d, N) == pytest.approx(
        theory.prop1_attention(N, 1, d), rel=1e-14
    )
    # and with alpha it is the LLN layer-1 attention (Eqs. (25)-(26))
    lln = theory.lln_limit(0.5, 0.0, d, N, 1)["attention"][0][N - 1, 0]
    assert by["eq4-attention"].level.form(cf.A, d, N) == pytest.approx(lln, rel=1e-12)
    ii, jj = cf.off_diagonal_steps(N)
    s2 = theory.score2_corrected(ii, jj, 0.5, 1.0, d) - theory.score2_corrected(
        ii, jj - 1, 0.5, 1.0, d
    )
    assert by["eq40-corrected"].step.form(cf.AR, d, N) == pytest.approx(np.mean(s2), rel=1e-9)
    fig = by["fig5-printed"].level.form(cf.Setting("layernorm", 0.4, 1.0), d, N)
    assert fig == pytest.approx(math.sqrt(d) * np.mean(theory.h_eq41(j, 0.4, 1.0, d)), rel=1e-14)
    assert by["eq15-corrected"].level.form(cf.P, d, N) == pytest.approx(
        theory.prop1_attention_corrected(N, N, d)
    )


def test_prop1_row_rise_shape():
    assert cf.prop1_row_rise(1, 16) == 0.0
    assert cf.prop1_row_rise(2, 16) == pytest.approx(0.5 / 64)
    assert np.all(
        np.diff(cf.prop1_row_rise(np.arange(1, 20), 64)) > 0
    )  # rises with j, key 1 lowest


# -- reading a SimResult ---------------------------------------------------------------------------


def fake_result(n=4, d=16, seed=1):
    """A SimResult with distinct, known numbers in every array (no simulation)."""
    rng = np.random.default_rng(seed)
    cfg = SimConfig(n=n, d=d, layers=2, samples=100)
    arrays = {name: rng.uniform(0.5, 2.0, expected_shape(cfg, name)) for name in ARRAY_FIELDS}
    arrays.update(
        recency_probability=np.full(2, 0.5),
        recency_probability_sem=np.zeros(2),
        sq_norm_mean=rng.uniform(1, 2, (2, n)),
        sq_norm_sem=rng.uniform(0.01, 0.02, (2, n)),
    )
    return SimResult(config=cfg, engine="gram", block_size=16, library_version="test", **arrays)


def test_profile_level_and_step():
    one = cf.profile_level([2.0], [0.1])
    assert (one.value, one.se, one.bound) == (2.0, 0.1, False)
    lvl = cf.profile_level([1.0, 2.0, 6.0], [0.1, 0.2, 0.3])
    assert (lvl.value, lvl.se, lvl.bound) == (3.0, pytest.approx(0.2), True)
    st = cf.profile_step([1.0, 2.0, 6.0], [0.1, 0.2, 0.3])
    assert (st.value, st.se, st.bound) == (2.5, pytest.approx(0.2), True)  # (0.1 + 0.3) / 2


def test_readers_take_the_right_entries():
    res = fake_result()
    n = res.config.n
    row, sem = cf.last_row(res, "score", 1)
    assert np.array_equal(row, res.score_mean[1][n - 1, : n - 1]) and np.array_equal(
        sem, res.score_sem[1][n - 1, : n - 1]
    )
    st = cf.score_row_step(res, 1)  # the control-variate row trend: exact SE
    assert (st.value, st.se, st.bound) == (
        res.row_trend_cv_mean[1][n - 1],
        res.row_trend_cv_sem[1][n - 1],
        False,
    )
    tr = cf.score_trend(res, 1)
    assert (tr.value, tr.se, tr.bound) == (res.trend_cv_mean[1], res.trend_cv_sem[1], False)
    ps = cf.paired_step(res, 1, n, 2)
    assert (ps.value, ps.se, ps.bound) == (
        res.diff_cv_mean[1][n - 1, 1],
        res.diff_cv_sem[1][n - 1, 1],
        False,
    )
    h, hse = cf.h_profile(res, scale=4.0)
    m, mse = res.sq_norm_mean[1], res.sq_norm_sem[1]
    assert np.allclose(h, 4.0 / np.sqrt(m)) and np.allclose(hse, 4.0 * 0.5 * m**-1.5 * mse)
    diag = cf.BY_KEY["eq15-printed"].level.read(res)
    assert diag.value == res.attn_mean[0][n - 1, n - 1] and not diag.bound
    assert cf.BY_KEY["eq19-corrected"].step.read(res).value == res.trend_cv_mean[1]
    assert cf.BY_KEY["eq11"].step.read(res).value == res.trend_cv_mean[1]
    assert (
        cf.BY_KEY["eq23-corrected"].step.read(res).value == res.row_trend_cv_mean[0][n - 1]
    )  # layer 1
    lvl = cf.BY_KEY["eq23-corrected"].level.read(res)  # layer-1 scores
    assert lvl.value == pytest.approx(res.score_mean[0][n - 1, : n - 1].mean())
    assert cf.BY_KEY["eq14-corrected"].level.read(res).value == pytest.approx(
        res.sq_norm_mean[0].mean()
    )
    assert cf.BY_KEY["eq10"].level.read(res).value == pytest.approx(res.sq_norm_mean[1].mean())


# -- standard errors are honest --------------------------------------------------------------------

SEEDS = 30
# Over 30 independent seeds the sample variance of an estimate, divided by its true variance, is
# ~ chi2(29) / 29 (the estimates are means of 4096 samples: close to normal). A two-sided 99.9 %
# interval is [0.43, 2.02]; an exact SE must give a ratio inside it, a bound a ratio below 2.02.
CHI2_LO, CHI2_HI = (
    stats.chi2.ppf(0.0005, SEEDS - 1) / (SEEDS - 1),
    stats.chi2.ppf(0.9995, SEEDS - 1) / (SEEDS - 1),
)


def spread_ratio(estimates):
    values = np.array([e.value for e in estimates])
    return np.var(values, ddof=1) / np.mean([e.se**2 for e in estimates])


@pytest.mark.parametrize("setting", [cf.T, cf.P, cf.AR])
def test_standard_errors_match_or_bound_the_spread_over_seeds(setting):
    cfgs = [setting.config(16, N, 4096, seed) for seed in range(SEEDS)]
    results = [simulate(c) for c in cfgs]
    # the score steps are control-variate estimates (coefficients cross-fitted on independent block
    # groups): their SE is an estimate of the spread too, not a bound
    exact = [
        ("first step", [cf.paired_step(r, 1, N, 2) for r in results]),
        ("row step", [cf.score_row_step(r, 1) for r in results]),
        ("trend", [cf.score_trend(r, 1) for r in results]),
        ("diagonal attention", [cf.BY_KEY["eq15-printed"].level.read(r) for r in results]),
    ]
    for name, ests in exact:
        assert CHI2_LO < spread_ratio(ests) < CHI2_HI, name
    bounds = [
        ("row level", [cf.profile_level(*cf.last_row(r, "score", 1)) for r in results]),
        ("norm step", [cf.profile_step(*cf.sq_norms(r, 1)) for r in results]),
        ("norm level", [cf.profile_level(*cf.sq_norms(r, 1)) for r in results]),
    ]
    for name, ests in bounds:
        assert all(e.bound for e in ests)
        if all(e.se > 0 for e in ests):
            assert spread_ratio(ests) < CHI2_HI, name


# -- verdicts --------------------------------------------------------------------------------------


def cells(ratios, ses, closed=1.0, ds=DS, flat=False):
    return tuple(
        cf.Cell(
            d,
            0.0 if flat else closed,
            cf.Estimate(r * (1.0 if flat else closed), s),
            1000,
            flat,
        )
        for d, r, s in zip(ds, ratios, ses)
    )


@pytest.mark.parametrize(
    "ratios, ses, verdict, trend, literal",
    [
        ((1.5, 1.6, 1.65), (0.01,) * 3, cf.OFF, "grows", True),
        ((1.3, 1.3, 1.3), (0.01,) * 3, cf.OFF, "stalls", True),
        ((1.1, 1.01, 1.001), (0.001, 0.0001, 0.00001), "finite-d error", "shrinks", True),
        ((1.0, 1.001, 0.999), (0.01,) * 3, "consistent", "", False),
        ((1.2, 1.01, 1.001), (0.01,) * 3, "converges", "shrinks", False),
        ((1.5, 0.0, 0.0), (0.01, 1.0, 1.0), "deviates", "", False),
        ((1.0, 1.5, 1.0), (0.01,) * 3, "mixed", "stalls", False),
        ((0.1, 0.1, 0.1), (1.0,) * 3, "unresolved", "", False),
    ],
)
def test_judge(ratios, ses, verdict, trend, literal):
    got = cf.judge(cells(ratios, ses))
    assert got == (verdict, trend) and (verdict in (cf.OFF, cf.FINITE_D)) == literal


def test_judge_flat_and_trend_exponent():
    assert cf.judge(cells((0.0, 1e-3, -1e-3), (1e-3,) * 3, flat=True))[0] == "flat"
    assert cf.judge(cells((0.0, 1.0, 0.0), (0.1,) * 3, flat=True)) == ("not flat", "")
    word, p = cf.trend(cells((1.1, 1.025, 1.00625), (1e-5,) * 3))  # |r - 1| ~ d^-1
    assert word == "shrinks" and p == pytest.approx(1.0)


def test_cell_resolution_and_ratio():
    c = cf.Cell(64, 2.0, cf.Estimate(3.0, 0.5), 1000)
    assert (
        c.resolved and c.z == 6.0 and c.ratio == 1.5 and c.ratio_se == 0.25 and c.deviation == 2.0
    )
    low = cf.Cell(64, 2.0, cf.Estimate(1.0, 0.5), 1000)
    assert not low.resolved and math.isnan(low.ratio) and "unresolved" in low.text()
    assert low.samples_to_resolve == pytest.approx(1000 * (3 * 0.5 / 2.0) ** 2)
    under = cf.Cell(64, 0.0, cf.Estimate(1.0, 0.5), 1000)
    assert under.underflow and not under.resolved and under.text() == "closed form underflows"


# -- end to end ------------------------------------------------------------------------------------


def records(table, key=None):
    """The rows of a table as text (its key, setting, part, cells, verdict),
    of closed form ``key``."""
    return [
        (r.form.key, r.setting, r.part, [c.text() for c in r.cells], r.verdict, r.trend)
        for r in table.rows
        if key in (None, r.form.key)
    ]


@pytest.fixture(scope="module")
def small_table(tmp_path_factory):
    cache = tmp_path_factory.mktemp("cache")
    return cf.measure(
        samples=10_000,
        cosine_samples=2_000,
        cache=cache,
        keys=["eq10", "eq14-corrected", "eq22-corrected", "eq4-attention", "eq6-cosine-2nd"],
    ), cache


def test_exact_identities_agree(small_table):
    table, _ = small_table
    # E ||x||^2 = 1 / (1 - alpha) exactly for the raw tokens of Eq. (6): any other verdict is a bug
    for key in ("eq14-corrected", "eq22-corrected"):
        assert table.row(key, "level").verdict == "consistent"
        assert table.row(key, "step").verdict == "flat"
    # layer-1 attention rows are exchangeable in the keys: their steps have mean exactly 0
    for s in (cf.T, cf.A):
        assert table.row("eq4-attention", "step", s).verdict == "flat"


def test_eq10_drop_ratio_meets_the_first_order_prediction(small_table):
    # theory.drop_ratio_first_order predicts simulated / Eq. (10) for the drop of ||x_j^(1)||^2; it
    # neglects terms of relative size ~ (j - 1) e^{2 - sqrt d}: 0.02 at d = 64, 2e-6 at d = 256.
    table, _ = small_table
    row = table.row("eq10", "step")
    for c in row.cells[1:]:
        model = float(theory.drop_ratio_first_order(c.d))
        assert c.resolved
        assert abs(c.ratio - model) <= 5 * c.ratio_se + 9 * math.exp(2 - math.sqrt(c.d)) * model, (
            c.d,
            c.ratio,
            model,
        )
    assert row.verdict == cf.OFF == "off, not shrinking"


def test_cost_and_determinism(small_table, tmp_path):
    table, cache = small_table
    settings = {
        s
        for f in cf.select(["eq10", "eq14-corrected", "eq22-corrected", "eq4-attention"])
        for s in f.settings
    }
    assert table.cost.configs == len(settings) * len(DS)
    assert table.cost.samples == sum(table.samples_of(s) for s in settings) * len(DS)
    assert table.samples_of(cf.T) == cf.DEFAULT_BOOST * 10_000 and table.samples_of(cf.A) == 10_000
    assert table.cell("eq10", "step", 64) is table.row("eq10", "step").cells[1]
    again = cf.measure(
        samples=10_000,
        cosine_samples=2_000,
        cache=cache,
        keys=["eq10", "eq14-corrected", "eq22-corrected", "eq4-attention", "eq6-cosine-2nd"],
    )
    assert records(again) == records(table)  # from the cache
    fresh = cf.measure(
        samples=10_000, cosine_samples=2_000, cache=tmp_path, keys=["eq22-corrected"]
    )
    assert records(fresh) == records(table, "eq22-corrected")  # recomputed


@pytest.mark.slow
def test_prop1_rise_beyond_the_lln(tmp_path):
    # prop1_row_rise predicts the mean off-diagonal step of a no-norm S^(2) (prop1_trend) to
    # relative order d^{-1/2} (the next term is O(d^-2)): 25 % at d = 16. 1.6e6 samples give a ratio
    # SE of ~0.03 (control-variate trend), so a factor 2 either way fails the test.
    res = simulate(cf.P.config(16, N, 1_600_000, 3))
    c = cf.Cell(
        16, cf.BY_KEY["prop1-beyond-lln"].step.form(cf.P, 16, N), cf.score_trend(res, 1), 1_600_000
    )
    assert c.resolved and abs(c.ratio - 1.0) <= 5 * c.ratio_se + 0.25, (c.ratio, c.ratio_se)


def test_cosines_on_an_executor_match_the_inline_ones(small_table, tmp_path):
    # measure() draws the Eq. (6) cosines on the executor beside the simulations: same numbers
    # (drawn again: another, empty cache folder).
    from concurrent.futures import ThreadPoolExecutor

    table, _ = small_table
    with ThreadPoolExecutor(2) as pool:
        again = cf.measure(
            samples=10_000,
            cosine_samples=2_000,
            cache=tmp_path,
            keys=["eq6-cosine-2nd"],
            executor=pool,
        )
    assert records(again) == records(table, "eq6-cosine-2nd")
    assert again.cost.cosine_seconds > 0


def test_cosines_are_drawn_once_per_setting(small_table, monkeypatch):
    # The cosine draws go through the cache like the simulations: the same arguments read the
    # stored numbers (bit for bit), another seed draws again.
    table, cache = small_table
    calls = []
    real = cf.inputs.input_cosine_similarity
    monkeypatch.setattr(
        cf.inputs, "input_cosine_similarity", lambda *a: calls.append(a) or real(*a)
    )
    again = cf.measure(samples=10_000, cosine_samples=2_000, cache=cache, keys=["eq6-cosine-2nd"])
    assert calls == [] and records(again) == records(table, "eq6-cosine-2nd")
    assert again.cost.cosine_seconds == table.cost.cosine_seconds
    cf.measure(
        ds=[16], samples=10_000, cosine_samples=2_000, seed=1, cache=cache, keys=["eq6-cosine-2nd"]
    )
    assert calls and {seed for _, _, seed in calls} == {1}


def test_definition1_samples_scales_with_the_standard_errors():
    res = fake_result(n=5)
    i, j = cf.off_diagonal_steps(5)
    need, wi, wj = cf.definition1_samples(res, 3.0)
    cfg = res.config
    step = theory.score2_step_corrected(i, j, cfg.alpha, cfg.gamma, cfg.d, cfg.norm)
    expected = cfg.samples * (3.0 * res.diff_cv_sem[1][i - 1, j - 1] / step) ** 2
    assert need == pytest.approx(expected.max()) and (wi, wj) in set(zip(i, j))
    assert cf.definition1_samples(res, 6.0)[0] == pytest.approx(4 * need)


def test_h_growth_and_prop1_dip_read_the_right_entries():
    res = fake_result(n=5)
    growth, bound = cf.h_growth(res)
    m, se = res.sq_norm_mean[1], res.sq_norm_sem[1]
    assert np.allclose(growth, np.sqrt(m[0] / m)) and bound[0] == 0.0
    assert np.allclose(bound[1:], 0.5 * growth[1:] * (se[0] / m[0] + se[1:] / m[1:]))
    dip = cf.prop1_dip(res)
    row = res.score_mean[1][4, :4]
    assert np.allclose(dip["sim"], row / row.mean() - 1) and abs(dip["predicted"].mean()) < 1e-15
    assert np.array_equal(dip["j"], [1, 2, 3, 4])


def test_setting_names_are_the_books():
    assert cf.AR.label == "LN + residual, α = 0.5"


def test_cell_text_marks_bounds_and_keeps_numbers_together():
    c = cf.Cell(64, 2.0, cf.Estimate(3.0, 0.5, bound=True), 1000)
    assert c.text() == "1.50\u00a0±\u00a00.25" + cf.BOUND_MARK
    flat = cf.Cell(64, 0.0, cf.Estimate(1e-5, 2e-6), 1000, flat=True)
    assert flat.text().endswith("(z\u00a0=\u00a0+5.0)")


# -- bad input -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"ds": [16, 2]}, "d"),
        ({"ds": [16.5]}, "d"),
        ({"n": 2}, "n"),
        ({"samples": 1}, "samples"),
        ({"seed": -1}, "seed"),
        ({"cosine_samples": 0}, "cosine_samples"),
        ({"keys": ["nope"]}, "keys"),
        ({"keys": []}, "keys"),
        ({"boost": 0}, "boost"),
    ],
)
def test_bad_input_raises_before_any_work(kwargs, name, tmp_path):
    cache = tmp_path / "cache"
    with pytest.raises(ValueError, match=rf"\b{name}="):
        cf.measure(cache=cache, **kwargs)
    assert not cache.exists()


def test_row_lookup_errors(small_table):
    table, _ = small_table
    with pytest.raises(ValueError, match="key="):
        table.row("eq4-attention", "level")  # two settings: ambiguous
    with pytest.raises(ValueError, match="key="):
        table.row("eq11", "level")  # not in this table
    with pytest.raises(ValueError, match="d="):
        table.cell("eq10", "level", 32)


# -- the settings that are other pages' runs -------------------------------------------------------


def test_proposition1_setting_is_the_run_of_its_verdict():
    """Proposition 1's setting is exactly settings.prop1_configs (no normalization, PROP1_FACTOR x
    samples, the default engine), so the table and the verdict on Proposition 1 share one run per d;
    Theorem 1's setting keeps boost x samples on the gram engine (the closed-form tables of
    chapters 3 and 6)."""
    from companion import settings

    got = cf.configs((16, 64), n=5, samples=300, seed=2, boost=3, keys=["eq19-corrected", "eq10"])
    assert {d: got[(cf.P, d)] for d in (16, 64)} == settings.prop1_configs(300, 2, ds=(16, 64), n=5)
    assert got[(cf.T, 16)] == cf.T.config(16, 5, 900, 2) and got[(cf.T, 16)].engine == "gram"
    assert cf.setting_samples(cf.P, 300, 3) == 3000 and cf.setting_samples(cf.T, 300, 3) == 900
    assert cf.setting_samples(cf.A, 300, 3) == 300


def test_the_forms_are_held_at_other_settings_when_asked():
    """Appendix B's closed-form section once stayed at alpha = 0 ... 0.8, gamma = 1, d = 16/64/256
    whatever grid ran: ``settings`` holds the forms at a grid's settings instead, and the book's
    grid gives the book's runs."""
    grid = [cf.Setting("layernorm", a, 0.5) for a in (0.1, 0.3)]
    got = cf.configs(
        (16, 128), n=4, samples=400, seed=1, keys=["fig5-printed", "fig5-corrected"], settings=grid
    )
    assert set(got) == {(s, d) for s in grid for d in (16, 128)}
    assert got[(grid[1], 128)] == SimConfig(
        alpha=0.3,
        gamma=0.5,
        norm="layernorm",
        n=4,
        d=128,
        layers=2,
        samples=400,
        seed=1,
        engine="gram",
    )
    sims = {k: simulate(c) for k, c in got.items()}
    table = cf.measure(
        (16, 128),
        n=4,
        samples=400,
        seed=1,
        keys=["fig5-printed", "fig5-corrected"],
        results=sims,
        settings=grid,
    )
    assert {(r.form.key, r.setting) for r in table.rows} == {
        (k, s) for k in ("fig5-printed", "fig5-corrected") for s in grid
    }
    assert table.ds == (16, 128)
    book = [cf.Setting("layernorm", a, 1.0) for a in conventions.H_ALPHAS]
    assert cf.configs(keys=["fig5-corrected"], settings=book) == cf.configs(keys=["fig5-corrected"])


def test_definition1_samples_with_the_corrected_theorem1():
    """theorem1=True takes the corrected Theorem 1's steps (theory.theorem1_step), larger than
    Eq. (5)'s by about q(d)^2 ~ e at d = 64: with the same standard errors the count shrinks by the
    square of the step ratio (between its smallest and largest over the pairs)."""
    cfg = SimConfig(
        alpha=0.0, gamma=0.0, norm="layernorm", n=6, d=64, layers=2, samples=2000, seed=0
    )
    res = simulate(cfg)
    lln = cf.definition1_samples(res, 3.0)[0]
    corr = cf.definition1_samples(res, 3.0, theorem1=True)[0]
    i, j = cf.off_diagonal_steps(6)
    r2 = [
        (
            theory.theorem1_step(int(a), int(b), 64)
            / float(theory.score2_step_corrected(a, b, 0.0, 0.0, 64))
        )
        ** 2
        for a, b in zip(i, j)
    ]
    assert min(r2) * (1 - 1e-9) <= lln / corr <= max(r2) * (1 + 1e-9)
    assert 4.0 < min(r2) and max(r2) < 9.0


def test_figure_labels_name_the_papers_figures():
    labels = [f.equation for f in cf.CLOSED_FORMS]
    assert not [x for x in labels if "Fig." in x]
    assert (
        "the paper's Figure 2 (Eq. (41))" in labels and "the paper's Figure 5 (Eq. (41))" in labels
    )


# -- closed forms against one result ---------------------------------------------------------------


def test_eq5_trend_is_the_mean_step_of_eq5():
    from recency_lib import theory

    n, d = 6, 4.0  # steps large enough for plain differences
    s = theory.theorem1_score(np.arange(1, n + 1)[:, None], np.arange(1, n + 1)[None, :], d)
    steps = [s[i, j] - s[i, j - 1] for i in range(n) for j in range(1, i)]
    assert cf.eq5_trend(n, d) == pytest.approx(np.mean(steps), rel=1e-9)
    assert 0 < cf.eq5_trend(10, 256) < cf.eq5_trend(10, 64) < cf.eq5_trend(10, 16)


def test_predicted_trend_is_the_mean_corrected_step():
    from recency_lib import theory

    assert cf.predicted_trend(10, 64) == cf.eq5_trend(10, 64)
    n, d, a, g = 5, 9.0, 0.5, 1.0
    s = theory.score2_corrected(np.arange(1, n + 1)[:, None], np.arange(1, n + 1)[None, :], a, g, d)
    steps = [s[i, j] - s[i, j - 1] for i in range(n) for j in range(1, i)]
    assert cf.predicted_trend(n, d, a, g) == pytest.approx(np.mean(steps), rel=1e-9)
    assert cf.predicted_trend(n, np.array([d, d]), a, g).shape == (2,)


def test_trend_over_line_is_the_ratio_or_unresolved():
    res = simulate(SimConfig(alpha=0.5, n=5, d=16, layers=2, samples=3000, seed=2))
    _, m, s = statistics.s2_order(res)
    line = cf.predicted_trend(5, 16, 0.5)
    assert cf.trend_over_line(res, line, 1.0) == report.pm(m / line, s / line)
    assert cf.trend_over_line(res, -line, 1.0) == report.pm(-m / line, s / line)  # an SE stays >= 0
    assert cf.trend_over_line(res, line, abs(m / s) + 1) == verdicts.UNRESOLVED


def test_h_curves_normalized_and_raw(grid_results):
    _ln, res, none = grid_results
    c = cf.h_curves(res)
    h, se = statistics.simulated_h(res)
    np.testing.assert_array_equal(c.sim, h)
    np.testing.assert_array_equal(c.sim_se, se)
    j = np.arange(1, 7)
    np.testing.assert_allclose(
        c.printed, theory.h_eq41(j, 0.5, 1.0, 16) / theory.h_eq41(1, 0.5, 1.0, 16)
    )
    np.testing.assert_allclose(
        c.corrected, theory.h_corrected(j, 0.5, 1.0, 16) / theory.h_corrected(1, 0.5, 1.0, 16)
    )
    assert c.normalized and c.printed[0] == c.corrected[0] == c.sim[0] == 1.0
    raw = cf.h_curves(res, normalize=False)
    np.testing.assert_allclose(raw.sim, np.sqrt(16 / res.sq_norm_mean[1]))
    np.testing.assert_allclose(raw.printed, 4.0 * theory.h_eq41(j, 0.5, 1.0, 16))
    assert not raw.normalized and raw.sim_se[0] > 0  # the raw first point has its own error
    bare = cf.h_curves(none)
    assert bare.printed is None and bare.corrected is None
    assert set(bare.columns("x")) == {"x: simulation"}
    assert set(c.columns("y")) == {"y: simulation", "y: Eq. (41) as printed", "y: corrected"}
    report.curve_columns(c.columns("y"), x_name="j")  # a valid download


def test_step_scale_of_theorem1(grid_results):
    n, d = 6, 16
    i, j = np.meshgrid(np.arange(1, n + 1), np.arange(1, n + 1), indexing="ij")
    s2 = np.where(i > j, theory.score2_corrected(i, j, 0.0, 0.0, d), np.nan)
    # the smallest step between earlier keys, without cancellation, against plain differences
    # (d = 16: the steps are far above float rounding)
    assert cf.eq5_smallest_step(n, d) == pytest.approx(np.nanmin(np.diff(s2, axis=1)), rel=1e-6)
    res = grid_results[0]
    plain, cvar = statistics.typical_step_se(res, 2, "plain"), statistics.typical_step_se(res, 2)
    assert 0 < cvar < plain  # the control variates shrink the error


def _row(key, alpha, part, ratios, d=(16, 64, 256)):
    """A cf.Row whose cells have the given simulated/closed ratios (SE 1 % of the value)."""
    setting = cf.Setting("layernorm", alpha, 0.0)
    cells = tuple(
        cf.Cell(dd, 1.0, cf.Estimate(r, 0.01 * abs(r) if r else 1.0), 1000)
        for dd, r in zip(d, ratios)
    )
    return cf.Row(cf.BY_KEY[key], setting, part, cells, *cf.judge(cells))


def test_ratio_series_texts_and_trend():
    rows = (
        _row("fig2", 0.2, "level", [0.99, 1.0, 1.0]),
        _row("fig2", 0.2, "step", [0.92, 1.3, 1.45]),
        _row("fig2", 0.4, "step", [0.8, 1.1, 0.0]),
    )
    table = cf.Table(rows, (16, 64, 256), 10, 1000, 0, None)
    series = cf.ratio_series(table, "fig2", "step")
    assert list(series) == [0.2, 0.4]
    d, ratio, se = series[0.4]
    np.testing.assert_array_equal(d, [16, 64, 256])
    assert (
        ratio[:2].tolist() == [0.8, 1.1] and math.isnan(ratio[2]) and math.isnan(se[2])
    )  # 0 is unresolved
    assert cf.ratio_texts(rows[1]) == ["0.920 ± 0.009", "1.300 ± 0.013", "1.450 ± 0.014"]
    assert cf.ratio_texts(rows[2])[2] == "unresolved"
    assert cf.trend_words(rows[1]) == "grows"
    twice = cf.Table(
        (*rows, _row("fig2", 0.4, "step", [1, 1, 1])), (16, 64, 256), 10, 1000, 0, None
    )
    with pytest.raises(ValueError, match=r"several settings with alpha = 0\.4"):
        cf.ratio_series(twice, "fig2", "step")
