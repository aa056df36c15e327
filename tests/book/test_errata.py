"""Tests of companion.errata: which errata a run shows is decided by its evidence,
never by the list.

* hand-made tables (rows with chosen ratios, judged by closedforms.judge) and hand-made sympy
  verdicts: an entry appears exactly when a check of it fails or one of its rows has an evidence
  verdict; an evidence row no entry claims gets an erratum of its own; the factor shown is the
  representative row's at its largest resolved d;
* the table builders: columns, counts that add up, the download columns;
* the residual coefficient's first-token test on a simulation (z-score tolerance);
* the registry is well formed (its checks and closed forms exist).
"""

import math

from companion import closedforms as cf
from companion import errata, report, symbolic, verdicts
from companion.pages import appendix_a as pages_appendix_a
from recency_lib import SimConfig, simulate

DS = (16, 64, 256)


def row(key, setting, part, ratios, ses=(1e-3,) * 3, closed=1.0):
    """A measured row of closed form ``key`` whose ratios simulated / closed form are ``ratios``."""
    flat = (cf.BY_KEY[key].level if part == "level" else cf.BY_KEY[key].step).flat
    cells = tuple(
        cf.Cell(
            d,
            0.0 if flat else closed,
            cf.Estimate(r * (1.0 if flat else closed), s),
            1000,
            flat,
        )
        for d, r, s in zip(DS, ratios, ses)
    )
    return cf.Row(cf.BY_KEY[key], setting, part, cells, *cf.judge(cells))


def table(rows):
    cost = cf.Cost(1, 1, 1, 0.0, 0.0, 0.0)
    return cf.Table(tuple(rows), DS, 10, 1000, 0, cost)


def check(key, holds, section="A.1"):
    return symbolic.AlgebraStep(key, section, "(7)", "claim", "method", holds)


GROWS = (1.2, 1.4, 1.6)  # off at every d, error growing: verdict "off, not shrinking"
SHRINKS = (1.1, 1.01, 1.001)  # off at every d, shrinking: "finite-d error" (SE 1e-5 below)
RIGHT = (1.0, 1.0005, 0.9995)  # "consistent"


def test_registry_names_real_forms():
    for e in errata.ERRATA:
        assert set(e.forms) <= set(cf.BY_KEY), e.key
        assert e.prefer in e.parts and e.printed and e.right and e.equations
        assert set(e.parts) <= {"level", "step"}
    assert len({e.key for e in errata.ERRATA}) == len(errata.ERRATA)
    assert list(errata.KIND_WORDS) == list(errata.KINDS)  # every kind named, in order


def test_registry_checks_exist_in_symbolic():
    # the keys of symbolic's registry (read, not run: sympy is slow)
    keys = {key for checks in symbolic.CHECKS.values() for key in checks}
    for e in errata.ERRATA:
        assert set(e.checks) <= keys, e.key


def test_an_entry_needs_evidence():
    rows = [row("eq14-printed", cf.P, "level", GROWS), row("eq10", cf.T, "step", RIGHT)]
    found = errata.find(table(rows), [check("eq7-printed", True), check("eq14-printed", True)])
    assert [f.erratum.key for f in found] == ["eq14"]  # eq7 holds: not shown
    assert found[0].rows == (rows[0],) and not found[0].failed
    found = errata.find(table(rows[1:]), [check("eq7-printed", False)])
    assert [f.erratum.key for f in found] == ["eq7"]  # algebra only
    assert found[0].representative is None
    assert errata.errata_rows(found)[0]["measured"] == "exact algebra"


def test_finite_d_errors_are_not_errata_and_are_listed_apart():
    shrinking = row("eq10", cf.T, "level", SHRINKS, ses=(1e-5,) * 3)
    assert shrinking.verdict == errata.FINITE_D
    assert errata.find(table([shrinking]), []) == []
    listed = errata.finite_d_rows(table([shrinking]))
    assert len(listed) == 1
    assert listed[0]["error $\\propto d^{-p}$, $p$"] == report.num(cf.trend(shrinking.cells)[1], 2)


def test_rows_go_to_the_first_entry_that_claims_them():
    with_residual = row("eq36-printed", cf.AR, "step", GROWS)  # gamma != 0: the residual erratum
    without = row("eq36-printed", cf.A, "step", GROWS)  # gamma == 0: the LLN steps
    found = {f.erratum.key: f for f in errata.find(table([with_residual, without]), [])}
    assert found["residual"].rows == (with_residual,)
    assert found["lln-steps"].rows == (without,)


def test_an_unclaimed_evidence_row_becomes_its_own_erratum():
    odd = row("eq15-corrected", cf.P, "level", GROWS)  # no entry lists eq15-corrected
    found = errata.find(table([odd]), [])
    assert len(found) == 1 and found[0].erratum.forms == ("eq15-corrected",)
    assert "no description" in found[0].erratum.right


def test_representative_is_the_farthest_row_at_its_largest_resolved_d():
    near = row("fig2", cf.Setting("layernorm", 0.4, 0.0), "step", (1.1, 1.2, 1.3))
    far = row("eq10", cf.T, "step", GROWS)
    level = row("eq41-printed", cf.AR, "level", GROWS)
    found = {f.erratum.key: f for f in errata.find(table([near, far, level]), [])}
    assert found["lln-steps"].representative is far
    out = {r["Eq."]: r for r in errata.errata_rows(list(found.values()))}
    label = "(10), (41), the paper's Figure 2"  # from the rows
    assert out[label]["measured"].startswith("1.6000")  # factor at d = 256
    assert "$d$ = 256" in out[label]["measured"]


def test_a_flat_form_that_is_not_flat_shows_its_step_and_z():
    rising = row("eq19-corrected", cf.P, "step", (1e-4, 1e-6, 0.0), ses=(1e-5, 1e-6, 1e-6))
    assert rising.verdict == "not flat"
    found = errata.find(table([rising]), [])
    assert [f.erratum.key for f in found] == ["prop1-flat"]
    cell = errata.errata_rows(found)[0]["measured"]
    assert cell.startswith("step") and "+10" in cell and "$d$ = 16" in cell


def test_compact_equations():
    forms = [cf.BY_KEY[k] for k in ("eq10", "fig2", "eq40-corrected", "fig5-corrected")]
    assert errata.compact_equations(forms) == "(10), (32), (40), (41), the paper's Figures 2, 5"
    assert errata.compact_equations([cf.BY_KEY["eq4-attention"]]) == "(4), (25), (26)"
    assert errata.compact_equations([cf.BY_KEY["fig2"]]) == "(41), the paper's Figure 2"


def test_tables_add_up():
    rows = [
        row("eq14-printed", cf.P, "level", GROWS),
        row("eq10", cf.T, "level", SHRINKS, ses=(1e-5,) * 3),
        row("eq10", cf.T, "step", RIGHT),
        row("eq11", cf.T, "level", (0.1, 0.1, 0.1), ses=(1.0,) * 3),
    ]
    t = table(rows)
    checks = [check("eq7-printed", False), check("eq7-fixed", True)]
    found = errata.find(t, checks)
    counts = errata.verdict_counts(t)
    assert counts == {
        "consistent": 1,
        "finite-d error": 1,
        "off, not shrinking": 1,
        "unresolved": 1,
    }
    assert sum(int(r["rows"]) for r in errata.verdict_rows(t)) == len(rows)
    summary = {r["checked"]: r for r in errata.summary_rows(t, checks, found)}
    assert summary["algebra steps, by sympy"]["count"] == "2"
    errata_row = summary["the paper's errata (this page's tables)"]
    assert errata_row["count"] == "2"  # eq7 (algebra), eq14 (simulation)
    assert errata_row["outcome"].startswith(
        "1 typographical slip, 1 scale error, 0 model mismatches, 0 wrong "
        "mechanisms, 0 approximation biases and 0 effects beyond"
    )
    full = errata.ratio_rows(t)
    assert len(full) == len(rows) and {"$d$ = 16", "$d$ = 64", "$d$ = 256", "verdict"} <= set(
        full[0]
    )
    detail = errata.evidence_detail_rows(found, DS)
    assert len(detail) == 1 and detail[0]["setting"] == cf.P.label


def test_check_rows_by_section():
    checks = [check("a", True, "A.1"), check("b", False, "A.2")]
    assert [r["verdict"] for r in errata.check_rows(checks, "A.2")] == ["✗ fails"]
    assert errata.check_rows(checks, "A.1")[0]["verdict"] == "✓ holds"


def test_residual_coefficient_rows_against_simulation():
    # The first token's E||x_1^(1)||^2 is exact (theory.sq_norm_first_token_exact): simulated /
    # exact within 4 SE (one comparison; P(|N(0,1)| > 4) = 6e-5). The printed
    # coefficients are far off.
    res = simulate(
        SimConfig(alpha=0.5, gamma=1.0, norm="layernorm", n=4, d=64, layers=2, samples=4000, seed=5)
    )
    rows = {
        r["prediction"]: r["simulated / prediction"] for r in errata.residual_coefficient_rows(res)
    }
    value, se = (
        float(x) for x in rows["exact mean, no approximation"].replace("\u2212", "-").split(" ± ")
    )
    assert abs(value - 1.0) < 4 * se
    gamma = rows["LLN with $\\gamma$ (Eq. (33))"]
    assert float(gamma.split(" ± ")[0]) < 0.5
    assert math.isfinite(value) and len(rows) == 5


# -- the kinds of erratum --------------------------------------------------------------------------


def test_every_entry_has_a_kind_and_the_summary_counts_them():
    assert {e.kind for e in errata.ERRATA} == set(errata.KINDS) - {errata.UNEXPLAINED}
    kinds = {e.key: e.kind for e in errata.ERRATA}
    assert kinds["prop1-flat"] == errata.BEYOND  # (19): beyond the LLN, not an error in print
    assert kinds["lln-attention"] == kinds["lln-steps"] == errata.BIAS
    by = lambda kind: sorted(k for k, v in kinds.items() if v == kind)  # noqa: E731
    assert by(errata.TYPO) == ["eq34", "eq39", "eq40", "eq7"]  # slips of the pen
    assert by(errata.SCALE) == ["eq14", "eq22", "eq23"]  # a wrong power of d
    assert by(errata.MISMATCH) == ["residual"]  # the residual on y_j, not gamma X
    assert by(errata.MECHANISM) == ["eq15", "eq19"]  # A_ii ~ 1 printed; nearly uniform
    assert sum(k in errata.PRINTED for k in kinds.values()) == 10
    rows = [
        row("eq14-printed", cf.P, "level", GROWS),
        row("eq10", cf.T, "step", GROWS),
        row("eq19-corrected", cf.P, "step", (1e-4, 1e-6, 0.0), ses=(1e-5, 1e-6, 1e-6)),
        row("eq15-corrected", cf.P, "level", GROWS),
    ]  # unclaimed: not yet explained
    found = errata.find(table(rows), [check("eq7-printed", False)])
    counts = errata.summary(found)
    zero = {k: 0 for k in errata.KINDS if k != errata.UNEXPLAINED}
    assert counts == {
        **zero,
        errata.TYPO: 1,
        errata.SCALE: 1,
        errata.BIAS: 1,
        errata.BEYOND: 1,
        errata.UNEXPLAINED: 1,
    }
    assert errata.summary_text(counts) == (
        "1 typographical slip, 1 scale error, 0 model mismatches, 0 wrong mechanisms, "
        "1 approximation bias, 1 effect beyond the approximation and 1 measured "
        "deviation not yet explained"
    )
    assert errata.summary(found[:1]) == {**zero, errata.TYPO: 1}
    printed = errata.errata_rows(found, errata.PRINTED)
    assert [r["kind"] for r in printed] == [
        "typographical slip",
        "scale error",
    ] and "kind" not in errata.errata_rows(found, errata.TYPO)[0]
    by_kind = {k: [r["Eq."] for r in errata.errata_rows(found, k)] for k in errata.KINDS}
    assert by_kind[errata.BEYOND] == ["(19)"] and by_kind[errata.BIAS] == ["(10)"]
    assert sum(map(len, by_kind.values())) == len(errata.errata_rows(found)) == len(found)


def test_no_row_verdict_says_erratum():
    # the book's corrected forms can be "off, not shrinking" too (they keep the LLN):
    # no row is an "erratum"
    assert "erratum" not in cf.VERDICTS and cf.OFF in errata.EVIDENCE_VERDICTS
    assert set(errata.VERDICT_MEANINGS) == set(cf.VERDICTS)
    corrected = row("fig5-corrected", cf.Setting("layernorm", 0.6, 1.0), "step", GROWS)
    assert corrected.verdict == cf.OFF
    assert [f.erratum.kind for f in errata.find(table([corrected]), [])] == [errata.BIAS]


def test_live_sentences_of_the_page():
    rows = [
        row("fig2", cf.Setting("layernorm", 0.2, 0.0), "step", (0.9, 1.3, 1.4)),
        row("fig2", cf.Setting("layernorm", 0.8, 0.0), "step", (0.97, 0.96, 1.0001)),
    ]
    text = pages_appendix_a.steps_below_one(table(rows))
    assert text == "at $d$ = 16 for α = 0.2 and 0.8 and at $d$ = 64 for α = 0.8"
    assert pages_appendix_a.steps_below_one(table(rows[:1]), z=1e9) == "nowhere"


def verdict(claim, by_d):
    """A verdict with one check per d (d -> (status, value, text)), the paper's d first as
    claims orders them."""
    ds = sorted(by_d, key=lambda d: (d != 64, d))
    checks = [
        verdicts.Check("what", f"d = {d}", by_d[d][1], 0.1, 5.0, by_d[d][0], by_d[d][2], d=d)
        for d in ds
    ]
    return verdicts.decide(claim, checks, ("doc", "x"))


def test_verdict_sentences_read_the_checks_by_d():
    v = verdict(
        "Theorem 1", {64: (verdicts.ON_AVERAGE, 2e-6, "a"), 16: (verdicts.AS_CLAIMED, 1e-4, "b")}
    )
    assert list(pages_appendix_a.checks_by_d(v)) == [16, 64]
    assert (
        pages_appendix_a.order_reach(v)
        == "every adjacent step at $d$ = 16; the mean step only at $d$ = 64"
    )
    eq5 = verdict(
        "Eq. (5)",
        {
            64: (verdicts.AGAINST, 2.66, "2.66 ± 0.25"),
            16: (verdicts.AGAINST, 1.83, "1.83 ± 0.01"),
            32: (verdicts.UNRESOLVED, 2.4, "2.4 ± 1"),
        },
    )
    d, ratio, _se = pages_appendix_a.ratio_by_d(eq5)
    assert d.tolist() == [16.0, 64.0] and ratio.tolist() == [1.83, 2.66]
    rows = [row("eq10", cf.T, "step", (1.09, 1.44, 1.55))]
    text = pages_appendix_a.norm_versus_scores(table(rows), eq5)
    assert text.startswith("1.83 ± 0.01 against 1.0900") and text.endswith("at $d$ = 64")


def test_paper_errata_defaults_are_appendix_a_defaults():
    """errata.paper_errata (for the landing page's counts) finds what Appendix A shows: its defaults
    are the page's parameters."""
    import ast
    import inspect
    from pathlib import Path

    import papermill

    page = Path(__file__).resolve().parents[2] / "book" / "appendix_a.ipynb"
    info = papermill.inspect_notebook(str(page))
    sig = inspect.signature(errata.paper_errata).parameters
    for name, param in (
        ("samples", "samples"),
        ("seed", "seed"),
        ("n", "n"),
        ("ds", "ds"),
        ("boost", "boost"),
        ("cosine_samples", "samples_cosine"),
    ):
        default = ast.literal_eval(info[param]["default"])
        assert (
            list(sig[name].default) == default if name == "ds" else sig[name].default == default
        ), name


def test_paper_errata_is_find_on_the_table(tmp_path):
    checks = [check("eq7-printed", False), check("eq34-printed", True)]
    counts, found = errata.paper_errata(
        samples=2000, ds=(16, 64), cosine_samples=200, checks=checks, cache=tmp_path
    )
    table = cf.measure((16, 64), samples=2000, cosine_samples=200, cache=tmp_path)
    assert [f.erratum.key for f in found] == [f.erratum.key for f in errata.find(table, checks)]
    assert counts == errata.summary(found) and counts[errata.TYPO] >= 1
