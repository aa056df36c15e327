"""companion.verdicts: the one rule (every class of evidence gets its word), the checks a claim is
split into (every branch, on constructed results), what a check is about, and the tables of
verdicts."""

import dataclasses

import numpy as np
import pytest
from fake_results import thm

from companion import conventions, report, statistics, verdicts

A, O, U, X = verdicts.AS_CLAIMED, verdicts.ON_AVERAGE, verdicts.UNRESOLVED, verdicts.AGAINST


# -- the one rule ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "statuses, word, decisive",
    [
        ([A], "holds", 0),
        ([A, A, A], "holds", 0),
        ([O], "holds in part", 0),
        ([A, O], "holds in part", 1),
        ([A, U], "holds in part", 1),
        ([O, U], "holds in part", 0),
        ([U], "not resolved", 0),
        ([U, U], "not resolved", 0),
        ([X], "contradicted", 0),
        ([A, X], "contradicted", 1),
        ([O, U, X, X], "contradicted", 2),
    ],
)
def test_the_verdict_rule(statuses, word, decisive):
    assert verdicts.verdict_word(statuses) == (word, decisive)


def test_every_word_is_reachable_and_stated_once():
    words = {verdicts.verdict_word(s)[0] for s in ([A], [O], [U], [X])}
    assert (
        words == {"holds", "holds in part", "not resolved", "contradicted"} == set(verdicts.WORDS)
    )
    assert all(f"**{w}**" in verdicts.RULE_TEXT for w in words)
    level = report.percent(conventions.FAMILYWISE_LEVEL)
    assert f"stays under {level} (the {{term}}`family-wise error`)" in verdicts.RULE_TEXT


# -- the kinds of check ----------------------------------------------------------------------------


def test_order_check_classes():
    zc = conventions.z_for(2 * verdicts.comparisons_of_order(10))
    assert verdicts.order_check((thm(64, step=0.1), 2), zc).status == A  # every step resolved
    c = verdicts.order_check((thm(64, trend=2e-6, trend_se=2e-7), 2), zc)  # only the mean: 10 SE
    assert (
        c.status == O
        and c.text == "(2.00 ± 0.20) × 10⁻⁶"
        and "mean step" in c.what
        and "$d = 64$" in c.setting
    )
    assert verdicts.order_check((thm(64), 2), zc).status == U
    assert verdicts.order_check((thm(64, trend=-2e-6, trend_se=2e-7), 2), zc).status == X
    assert verdicts.order_check((thm(64, step=-0.1), 2), zc).status == X  # a step resolved negative
    # a mean step within float64's rounding of scores of size sqrt(d) decides nothing, even when
    # its standard error is smaller still (rows that are the same in every sample but for rounding)
    c = verdicts.order_check((thm(1024, trend=-6.7e-15, trend_se=1e-19), 2), zc)
    assert c.status == U and c.value == -6.7e-15
    # expected 0 (the paper says: no recency bias): every step a rise is against it, a fall is for
    # it
    assert verdicts.order_check((thm(64, step=0.1), 2), zc, expected=0).status == X
    assert verdicts.order_check((thm(64, step=-0.1), 2), zc, expected=0).status == A
    assert verdicts.order_check((thm(64), 2), zc, expected=0).status == U


def test_flat_value_direction_and_nonzero_checks():
    zc = 3.0
    assert verdicts.flat_check(thm(64), 2, zc).status == A


def test_flat_is_judged_on_the_colour_scale_the_figure_draws():
    """The change along a row, (n - 2) mean steps, in the 256 levels of the panel's colour scale
    (its range, diagonal included): as claimed below one level, against above, unresolved at it;
    more sequences (a smaller SE) never turn a step too small to be drawn against the claim."""
    zc = 3.0

    def panel(trend, trend_se, diagonal=1.0 + 2.56):  # off-diagonal 1.0: range 2.56, a level 0.01
        res = thm(64, trend=trend, trend_se=trend_se)
        s = res.score_mean.copy()
        for layer in s:
            np.fill_diagonal(layer, diagonal)
        return dataclasses.replace(res, score_mean=s)

    steps = panel(0, 1).config.n - 2
    c = verdicts.flat_check(panel(3 * 0.01 / steps, 1e-6), 2, zc)  # 3 levels along a row: visible
    assert (c.status, c.value) == (X, pytest.approx(3.0)) and "colour levels" in c.what
    assert (
        verdicts.flat_check(panel(0.1 * 0.01 / steps, 1e-6), 2, zc).status == A
    )  # a tenth of a level
    assert (
        verdicts.flat_check(panel(0.1 * 0.01 / steps, 1e-9), 2, zc).status == A
    )  # the same, 1000x sharper
    assert verdicts.flat_check(panel(-0.1 * 0.01 / steps, 1e-6), 2, zc).status == A  # either sign
    assert verdicts.flat_check(panel(0.01 / steps, 1e-5), 2, zc).status == U  # at one level
    assert (
        verdicts.flat_check(panel(0.1 * 0.01 / steps, 0.01), 2, zc).status == U
    )  # too noisy to say
    assert verdicts.value_check(2.0, 0.01, 2.0, zc, "r", "s").status == A
    c = verdicts.value_check(2.66, 0.25, 1.0, zc, "r", "s")
    assert c.status == X and c.text == "2.66 ± 0.25"
    assert verdicts.value_check(1e-7, 1e-6, 1.0, zc, "r", "s").status == U  # nothing to divide
    assert verdicts.direction_check(0.6, 0.01, +1, zc, "w", "s", reference=0.5).status == A
    assert verdicts.direction_check(0.4, 0.01, +1, zc, "w", "s", reference=0.5).status == X
    assert verdicts.direction_check(0.5, 0.01, +1, zc, "w", "s", reference=0.5).status == U
    assert verdicts.direction_check(0.5, 0.01, 0, zc, "w", "s", reference=0.5).status == A
    assert verdicts.direction_check(0.6, 0.01, 0, zc, "w", "s", reference=0.5).status == X
    assert verdicts.nonzero_check(0.1, 0.01, zc, "w", "s").status == A
    assert verdicts.nonzero_check(0.01, 0.01, zc, "w", "s").status == U


def test_a_check_says_what_it_is_about_in_fields():
    c = verdicts.order_check((thm(64, step=0.1), 2), 3.0)
    assert (c.kind, c.layer, c.norm, c.alpha, c.gamma, c.d) == (
        "rise",
        2,
        "layernorm",
        0.0,
        0.0,
        64,
    )
    assert verdicts.flat_check(thm(16), 2, 3.0).kind == "flat"
    c = verdicts.value_check(2.0, 0.01, 2.0, 3.0, "r", "s", layer=2, **verdicts.about(thm(16)))
    assert (c.kind, c.layer, c.d) == ("value", 2, 16)
    c = verdicts.direction_check(
        0.6, 0.01, +1, 3.0, "w", "s", reference=0.5, kind="recency", layer=3, alpha=0.4
    )
    assert (c.kind, c.layer, c.alpha, c.d) == ("recency", 3, 0.4, None)
    assert verdicts.nonzero_check(0.1, 0.01, 3.0, "w", "s", layer=4).kind == "nonzero"


# -- tables ----------------------------------------------------------------------------------------


def test_verdict_grid_rows_and_tally_use_one_family(grid_results):
    rows = verdicts.verdict_grid_rows(grid_results, ["a", "b", "c"])
    assert [r["setting"] for r in rows] == ["a", "b", "c"]
    assert list(rows[0]) == ["setting", "layer 1", "layer 2", "layer 3"]
    k = 9  # 3 results x 3 layers
    for r, row in zip(grid_results, rows):
        for l in (1, 2, 3):
            number, badge = row[f"layer {l}"].split("<br>")
            assert number == report.pm(*statistics.rp(r, l)).replace(
                " ", "\u00a0"
            )  # one line in the cell
            assert badge == report.badge(statistics.definition1(r, l, k))
    tally = statistics.definition1_tally(grid_results)
    words = [statistics.definition1(r, l, k) for r in grid_results for l in (2, 3)]
    assert tally == {
        "holds": words.count("holds"),
        "violated": words.count("violated"),
        "undecided": words.count("undecided"),
        "matrices": 6,
    }
    assert (
        tally["holds"] >= 2
    )  # alpha = 0.5 without residual: recency tens of SE above zero at d = 16
