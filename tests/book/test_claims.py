"""companion.claims: one function per claim of the paper, on constructed results (every word) and on
simulations.

Simulations use fixed seeds, so each test is deterministic; the effects they rely on are tens of
standard errors away from the thresholds (noted where used)."""

import numpy as np
import pytest
from fake_results import fake, thm

from companion import claims, closedforms, report, settings, statistics, verdicts
from companion.statistics import StepEstimate
from recency_lib import SimConfig, simulate, simulate_many, theory


def valid(word: str) -> bool:
    return word in ("holds", "holds in part", "not resolved", "contradicted")


# -- the claims: the same evidence, the same word --------------------------------------------------


def test_theorem1():
    v = claims.theorem1_claim({16: thm(16, step=0.1), 64: thm(64, trend=2e-6, trend_se=2e-7)})
    assert (
        v.word == "holds in part" and v.value == "(2.00 ± 0.20) × 10⁻⁶" and "$d = 64$" in v.measure
    )
    assert "{prf:ref}`Theorem 1 <thm-1>`" in verdicts.table([v]).text
    held = claims.theorem1_claim({16: thm(16, step=0.1), 64: thm(64, step=0.1)})
    assert held.word == "holds" and held.value.endswith(", second order in $e^{-\\sqrt d}$")
    assert claims.theorem1_claim({16: thm(16), 64: thm(64)}).word == "not resolved"
    assert (
        claims.theorem1_claim({16: thm(16, step=0.1), 64: thm(64, trend=-2e-6, trend_se=2e-7)}).word
        == "contradicted"
    )


def test_proposition1_is_definition1_with_no_recency_expected():
    none = SimConfig(norm="none", layers=2)
    flat = {d: fake(none.replace(d=d)) for d in (16, 64)}
    assert (
        claims.proposition1_claim(flat).word == "not resolved"
    )  # no run can show rows exactly flat
    # a resolved mean step is not enough: Definition 1 asks for every step
    mean_only = {d: fake(none.replace(d=d), trend=1e-4, trend_se=1e-5) for d in (16, 64)}
    assert claims.proposition1_claim(mean_only).word == "not resolved"
    rising = {16: fake(none.replace(d=16), step=0.1), 64: fake(none.replace(d=64), step=0.004)}
    v = claims.proposition1_claim(rising)
    assert (
        v.word == "contradicted"
        and "$d = 64$" in v.measure
        and v.value.startswith("0.0040 ± 0.0010 (smallest step), ")
    )
    # the step as a share of its row's level (the corrected Eq. (19)): the order it fails at
    s = StepEstimate.of(rising[64]).smallest()
    level = float(theory.prop1_score_corrected(s.i, s.j - 1, 64))
    share = report.pm(s.mean / level, s.se / level)
    assert v.value.endswith(f", {share} of its row's level: beyond the law of large numbers")
    falling = {d: fake(none.replace(d=d), step=-0.1) for d in (16, 64)}
    assert claims.proposition1_claim(falling).word == "holds"


def test_propositions_2_and_3_get_the_theorem_1_word_for_the_same_evidence():
    mk = lambda a, g, **kw: fake(SimConfig(alpha=a, gamma=g, layers=2), **kw)  # noqa: E731
    v = claims.proposition2_claim(mk(0.0, 1.0, trend=2e-6, trend_se=2e-7), mk(0.5, 1.0, step=0.1))
    assert v.word == "holds in part" and "α = 0" in v.measure  # about alpha = 0, its number too
    assert claims.proposition2_claim(mk(0.0, 1.0, step=0.1), mk(0.5, 1.0, step=0.1)).word == "holds"
    got = claims.proposition3_claim(
        {0.0: mk(0.0, 0.0, trend=2e-6, trend_se=2e-7), 0.5: mk(0.5, 0.0, step=0.1)}
    )
    assert got.word == "holds in part" and "α = 0," in got.measure
    assert claims.proposition3_claim({0.5: mk(0.5, 0.0, step=-0.1)}).word == "contradicted"


def test_eq5_and_the_corrected_theorem1_on_the_trend():
    d = 64
    form = float(__import__("recency_lib").theory.theorem1_trend(d, 10))
    eq5 = closedforms.eq5_trend(10, d)
    on_form = {d: thm(d, trend=form, trend_se=form / 50)}
    assert claims.eq5_claim(on_form).word == "contradicted"  # the form is ~2.6 x Eq. (5)
    assert claims.corrected_theorem1_claim(on_form).word == "holds"
    on_eq5 = {d: thm(d, trend=eq5, trend_se=eq5 / 50)}
    assert (
        claims.eq5_claim(on_eq5).word == "holds"
        and claims.corrected_theorem1_claim(on_eq5).word == "contradicted"
    )
    assert claims.eq5_claim({d: thm(d, trend=0.0, trend_se=1.0)}).word == "not resolved"


# -- on simulations --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def fig1():
    # 20,000 sequences: the features of Figure 1 are resolved by tens of SE (row 3's smallest step
    # of S^(2) is ~5 SE, every RP in rows 3-4 > 20 SE from 0.5); layer 1 has no order by symmetry.
    return simulate_many(settings.fig1_configs(20_000, 3))


def test_figure1_reproduced(fig1):
    v = claims.figure1_claim(fig1)
    assert v.word == "holds", [(c.what, c.status) for c in v.checks]
    assert v.decisive.what.startswith("LayerNorm, α = 0.5: the rows of $S^{(2)}$ rise")


def test_engines_agree():
    cfg = SimConfig(alpha=0.5, gamma=1.0, n=5, d=16, layers=2, samples=4_000, seed=2)
    dense, gram = (
        simulate(cfg.replace(engine="dense")),
        simulate(cfg.replace(engine="gram", seed=3)),
    )
    v = claims.engines_agree(dense, gram)
    assert v.word == "holds" and v.numbers["count"] > 20 and v.numbers["exact_count"] >= 5
    off = fake(cfg.replace(engine="gram"), score=50.0)
    assert claims.engines_agree(off, fake(cfg.replace(engine="dense"))).word == "contradicted"


def test_verdict_table_covers_every_claim(tmp_path):
    got = claims.verdict_table(200, 0, cache=tmp_path)
    assert [v.claim for v in got] == list(verdicts.STATEMENTS)
    assert all(valid(v.word) for v in got), [v.word for v in got]
    table = verdicts.table(got).text.splitlines()[3:-1]  # inside the {table} directive
    assert len(table) == 2 + len(got) and "{bdg-" in table[2]
    assert (
        table[2].startswith("| {prf:ref}`Theorem 1 <thm-1>` |")
        and "{doc}`the paper's Figure 1 <empirical>`" in table[7]
    )
    # 4 (Figure 1) + 5 + 5 (the alpha grids without the two Figure-1 settings) simulated once each;
    # the rest are sequence statistics: the first-order control variate at d = 16, 32, 64, 128 and
    # with the residual at 64, the Gram controls at d = 16, 64, 256, chapter 7's contrasts
    assert len(list(tmp_path.glob("*.npz"))) == 14
    assert len(list(tmp_path.glob("statistic-*.json"))) == 4 + 1 + 3 + 1
    assert (
        len(list(tmp_path.glob("gram-controls-*.json"))) == 3
    )  # the pilots' fits, in the same cache


# -- the relativity check (chapter 7) --------------------------------------------------------------


def test_not_relative_on_what_the_softmax_sees():
    from recency_lib.trajectories import sequence_statistic

    cfg = settings.relative_config(20_000, 4)
    v = claims.not_relative_claim(
        sequence_statistic(cfg, statistics.distance_contrasts, control_mean=0.0)
    )
    assert v.word == "holds" and v.decisive.what.endswith("layer 4")
    prof = v.numbers["profiles"]
    assert list(prof["queries"]) == list(range(statistics.FAR + 1, cfg.n + 1))
    np.testing.assert_allclose(
        prof["D"][0][:, 0], prof["K"][0][:, 0]
    )  # at i = FAR + 1: the same two keys
