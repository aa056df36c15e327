"""Appendix A (``book/appendix_a.ipynb``): its figures and their data, and its prose's numbers."""

from __future__ import annotations

import math

import numpy as np

from recency_lib import theory

from .. import closedforms, conventions, plotting, report
from ..errata import BEYOND, BIAS, PRINTED, summary, summary_text
from ..report import Markdown, count, listing, num, percent
from ..theorem1 import statistic_points
from ..verdicts import AGAINST, AS_CLAIMED, ON_AVERAGE, UNRESOLVED


def _glue_figure(key: str, fig, stem: str, series: dict, x_name: str) -> None:
    """Glue ``fig`` as ``key`` and its data (report.curve_columns of ``series``) as ``key``-data."""
    plotting.glue_figure(key, fig)
    data = report.download(stem, report.curve_columns(series, x_name))
    report.glue_numbers({f"{key}-data": data})


def lln_figure(*, table) -> None:
    """Figure ``aa-fig-lln``: simulated / LLN form against d of h(j) (size and j-dependence, each α
    of conventions.H_ALPHAS) and of the layer-1 attention."""
    fig, (ax_size, ax_step) = plotting.subplots(1, 2, height_ratio=0.5, sharey=True)
    series = {}
    for alpha in conventions.H_ALPHAS:
        setting = closedforms.Setting("layernorm", alpha, 0.0)
        style = dict(color=conventions.alpha_colour(alpha), marker="o")
        for ax, part in ((ax_size, "level"), (ax_step, "step")):
            data = table.row("fig2", part, setting).series()
            label = conventions.alpha_label(alpha) if part == "step" else None
            plotting.ratio_by_d(*data, ax, label=label, **style)
            series[f"h(j) {part}, {conventions.alpha_label(alpha)}"] = data
        limit = float(theory.drop_ratio_gaussian(alpha, float("inf")))
        ax_step.axhline(limit, color=style["color"], linestyle=":", linewidth=1.0)
    for setting in (closedforms.T, closedforms.A):
        data = table.row("eq4-attention", "level", setting).series()
        label = f"attention, {conventions.alpha_label(setting.alpha)}"
        colour = conventions.alpha_colour(setting.alpha)
        plotting.ratio_by_d(*data, ax_size, color=colour, marker="s", label=label)
        series[f"layer-1 attention, {conventions.alpha_label(setting.alpha)}"] = data
    for ax, title in ((ax_size, "size"), (ax_step, "$j$-dependence")):
        plotting.d_axis(ax, table.ds)
        ax.set_title(title)
    ax_step.set_ylabel("")
    ax_size.legend(loc="upper left")
    handles = ax_step.get_legend_handles_labels()
    fig.legend(*handles, loc="outside lower center", ncol=len(conventions.H_ALPHAS))
    _glue_figure("aa-fig-lln", fig, "appendix-a-lln", series, "d")


def theorem1_figure(*, table, eq5) -> None:
    """Figure ``aa-fig-thm1``. Left: the drop of ‖x_j^(1)‖² simulated / Eq. (10) against d
    beside its first-order form and e^(1/2); right: S^(2)'s size and mean step / Eq. (5) (``eq5``:
    claims.eq5_claim)."""
    fig, (ax_norm, ax_score) = plotting.subplots(1, 2, height_ratio=0.45)
    t_style = dict(color=conventions.alpha_colour(0.0))
    drop = table.row("eq10", "step").series()
    plotting.ratio_by_d(*drop, ax_norm, label="simulated", marker="o", linestyle="none", **t_style)
    grid = np.geomspace(table.ds[0], table.ds[-1], 60)
    first_order = theory.drop_ratio_first_order(grid)
    ax_norm.plot(grid, first_order, label="first order", **conventions.CORRECTED, **t_style)
    limit = float(theory.drop_ratio_gaussian(0.0, float("inf")))
    ax_norm.axhline(limit, label="$e^{1/2}$", **conventions.REFERENCE)
    level, step = table.row("eq11", "level").series(), ratio_by_d(eq5)
    plotting.ratio_by_d(
        *level, ax_score, label="size", marker="D", markerfacecolor="white", **t_style
    )
    plotting.ratio_by_d(*step, ax_score, label="mean step", marker="D", **t_style)
    for ax, title, ticks in (
        (ax_norm, "drop of $\\Vert x_j^{(1)}\\Vert^2$, Eq. (10)", table.ds),
        (ax_score, "$S^{(2)}$, Eq. (5)", sorted({*table.ds, *step[0].astype(int)})),
    ):
        plotting.d_axis(ax, ticks)
        ax.set_title(title)
        ax.legend(loc="best")
    ax_score.set_ylabel("")
    series = {
        "drop of ||x_j||^2 / Eq. (10)": drop,
        "S2 size / Eq. (5)": level,
        "S2 mean step / Eq. (5)": step,
    }
    _glue_figure("aa-fig-thm1", fig, "appendix-a-theorem-1", series, "d")


def prop1_figure(*, dip, n) -> None:
    """Figure ``aa-fig-prop1``: row n of S^(2) without normalization over its mean (``dip``:
    closedforms.prop1_dip) beside the next order beyond the LLN."""
    fig, ax = plotting.subplots(height_ratio=0.45)
    p_style = dict(color=conventions.alpha_colour(0.0))
    plotting.errorbar_points(dip["j"], dip["sim"], dip["se"], ax, label="simulated", **p_style)
    label = "next order beyond the LLN"
    ax.plot(dip["j"], dip["predicted"], label=label, **conventions.CORRECTED, **p_style)
    ax.axhline(0.0, label="LLN: flat (corrected Eq. (19))", **conventions.REFERENCE)
    ax.set_xticks(dip["j"])
    ax.set_xlabel("key $j$")
    ax.set_ylabel(f"$S^{{(2)}}_{{{n},j}}$ / row mean $-$ 1")
    ax.legend(loc="lower right")
    series = {
        "simulated": (dip["j"], dip["sim"], dip["se"]),
        "next order": (dip["j"], dip["predicted"], None),
    }
    _glue_figure("aa-fig-prop1", fig, "appendix-a-proposition-1", series, "j")


def fig5_figure(*, fig5_results, n, d_fig5) -> None:
    """Figure ``aa-fig-fig5``: the growth of h(j) with the residual at each α of
    conventions.H_ALPHAS (``fig5_results``: α -> SimResult at d = ``d_fig5``) beside Eq. (41)
    as printed and corrected."""
    j = np.arange(1, n + 1)
    fig, ax = plotting.subplots(height_ratio=0.5)
    curves = {}
    for alpha in conventions.H_ALPHAS:
        colour, label = conventions.alpha_colour(alpha), conventions.alpha_label(alpha)
        corrected = theory.h_corrected(j, alpha, 1.0, d_fig5)
        plotting.h_curve(j, corrected, ax, kind="corrected", color=colour, label=label)
        plotting.h_curve(j, theory.h_eq41(j, alpha, 1.0, d_fig5), ax, kind="printed", color=colour)
        growth, bound = closedforms.h_growth(fig5_results[alpha])
        plotting.errorbar_points(j, growth, bound, ax, color=colour)
        curves[f"simulated, {label}"] = (j, growth, bound)
    ax.set_xticks(j)
    ax.legend(loc="upper left", ncol=2)
    _glue_figure("aa-fig-fig5", fig, "appendix-a-figure-5", curves, "j")


# -- the numbers the prose cites ------------------------------------------------------------------


def checks_by_d(verdict) -> dict[int, object]:
    """d -> check of a verdict of one check per hidden size (e.g. claims.eq5_claim), by d."""
    return {c.d: c for c in sorted(verdict.checks, key=lambda c: c.d)}


def ratio_by_d(verdict) -> tuple:
    """(d, ratio, SE) of a verdict's resolved checks per hidden size, sorted by d: a figure's."""
    got = [c for c in checks_by_d(verdict).values() if c.status != UNRESOLVED]
    return tuple(np.array([getattr(c, f) for c in got], float) for f in ("d", "value", "se"))


def order_reach(verdict) -> str:
    """What Theorem 1's order checks resolve at each d: "every adjacent step at $d$ = 16; the mean
    step only at $d$ = 64"."""
    words = {
        AS_CLAIMED: "every adjacent step",
        ON_AVERAGE: "the mean step only",
        UNRESOLVED: "neither every step nor the mean step",
        AGAINST: "a step or the mean against the claim",
    }
    by = checks_by_d(verdict)
    parts = [
        f"{word} at $d$ = {listing([d for d, c in by.items() if c.status == status])}"
        for status, word in words.items()
        if any(c.status == status for c in by.values())
    ]
    return "; ".join(parts)


def norm_versus_scores(table, eq5) -> str:
    """At each d of both, the simulated trend of S^(2) over Eq. (5)'s (``eq5``'s check) against
    the drop of ‖x_j^(1)‖² over Eq. (10)'s (the table): "1.84 ± 0.02 against 1.0940 ± 0.0004
    at $d$ = 16, ..."."""
    by = checks_by_d(eq5)
    parts = [
        f"{by[d].text} against {table.cell('eq10', 'step', d).text()} at $d$ = {d}"
        for d in table.ds
        if d in by
    ]
    return listing(parts, fmt=str, empty="—")


def steps_below_one(table, key: str = "fig2", z: float = closedforms.Z_ERRATUM) -> str:
    """Where the simulated step of closed form ``key`` (one row per α) is resolved more than ``z``
    SE below its LLN value: "at $d$ = 16 for α = 0.2 and 0.4, at $d$ = 64 for α = 0.8"."""
    rows = sorted(
        (r for r in table.rows if r.form.key == key and r.part == "step"),
        key=lambda r: r.setting.alpha,
    )
    parts = []
    for d in table.ds:
        alphas = [
            r.setting.alpha
            for r in rows
            for c in r.cells
            if c.d == d and c.resolved and c.deviation < -z
        ]
        if alphas:
            parts.append(f"at $d$ = {d} for α = {listing(alphas)}")
    return listing(parts, fmt=str, empty="nowhere")


def page_numbers(
    table,
    checks,
    found,
    *,
    theorem1,
    eq5,
    corrected,
    prop1,
    controlled: dict,
    th: dict,
    n: int,
    workers: int,
    sympy_seconds: float,
    sympy_cached: bool,
    wall_seconds: float,
) -> dict[str, object]:
    """glue key -> text (or Markdown) of every number Appendix A's prose cites: the table's, the
    sympy verdicts, the errata by kind, the book's verdicts (claims), Proposition 1's mean step by
    the Gram-matrix control variates (``controlled``), what Definition 1 at the paper's d would take
    (``th``: settings.theorem1_configs's results) and this build's cost."""
    ds = table.ds
    d0, d1, dmax = ds[0], ds[min(1, len(ds) - 1)], ds[-1]
    cell = table.cell
    points = {p.d: p for p in statistic_points(controlled)}  # the Gram-matrix control variates
    gram = {k: points[d] for k, d in enumerate((d0, d1))}
    d_def1 = conventions.PAPER_D if conventions.PAPER_D in th else max(th)
    z_def1 = conventions.definition1_z(n)
    need, def1_i, def1_j = closedforms.definition1_samples(th[d_def1], z_def1, theorem1=True)
    need_lln = closedforms.definition1_samples(th[d_def1], z_def1)[0]
    kinds = summary(found)
    cosines = table.row("eq6-cosine", "level").cells
    out = {
        "aa-ds": listing(ds),
        "aa-d0": str(d0),
        "aa-d1": str(d1),
        "aa-dmax": str(dmax),
        "aa-n-errata": count(len(found)),
        "aa-d-fig5": str(conventions.PAPER_D if conventions.PAPER_D in ds else d1),
        "aa-errata-counts": summary_text(kinds),
        "aa-n-printed": count(sum(kinds[k] for k in PRINTED)),
        "aa-n-biases": count(kinds[BIAS]),
        "aa-n-beyond": count(kinds[BEYOND]),
        # Theorem 1: the norm drop of Eq. (10), the score of Eq. (5) and the book's verdicts
        "aa-eq10-level-err": num(abs(cell("eq10", "level", dmax).ratio - 1.0), 2),
        "aa-eq10-step-max": cell("eq10", "step", dmax).text(),
        "aa-R-max": num(float(theory.drop_ratio_first_order(dmax)), 4),
        "aa-eq11-level-0": cell("eq11", "level", d0).text(),
        "aa-eq4-0": cell("eq4-attention", "level", dmax, closedforms.T).text(),
        "aa-eq4-5": cell("eq4-attention", "level", dmax, closedforms.A).text(),
        "aa-samples-t": count(table.samples_of(closedforms.T)),
        "aa-norm-vs-trend": Markdown(norm_versus_scores(table, eq5)),
        "aa-eq5-trends": Markdown(
            f"{listing([c.text for c in checks_by_d(eq5).values()], fmt=str)} "
            f"at $d$ = {listing(list(checks_by_d(eq5)))}"
        ),
        "aa-thm1-reach": Markdown(order_reach(theorem1)),
        "aa-steps-below": Markdown(steps_below_one(table)),
        # Definition 1 at the paper's d: what resolving every step would take
        "aa-n-pairs": count(conventions.adjacent_pairs(n)),
        "aa-z-def1": num(z_def1, 3),
        "aa-level": percent(conventions.FAMILYWISE_LEVEL),
        "aa-def1-d": str(d_def1),
        "aa-def1-samples": count(th[d_def1].config.samples),
        "aa-def1-need": num(need, 2),
        "aa-def1-lln": num(need_lln / need, 2) if math.isfinite(need) and need > 0 else "—",
        "aa-def1-i": str(def1_i),
        "aa-def1-j": str(def1_j),
        "aa-def1-j0": str(def1_j - 1),
        # Proposition 1
        "aa-eq14-max": cell("eq14-printed", "level", dmax).text(),
        "aa-eq15-max": cell("eq15-printed", "level", dmax).text(),
        "aa-eq19p-max": cell("eq19-printed", "level", dmax).text(),
        "aa-eq19c-max": cell("eq19-corrected", "level", dmax).text(),
        "aa-prop1-step-0": cell("eq19-corrected", "step", d0).text(),
        "aa-prop1-step-1": cell("eq19-corrected", "step", d1).text(),
        "aa-prop1-ratio-0": cell("prop1-beyond-lln", "step", d0).text(),
        **{f"aa-prop1-gram-{k}": report.pm(p.trend, p.se) for k, p in gram.items()},
        "aa-prop1-gram-ratio-0": report.pm(*gram[0].ratio(gram[0].derived)),
        "aa-samples-p": count(table.samples_of(closedforms.P)),
        # Propositions 2 and 3, the paper's Figure 5, Eq. (6)
        "aa-eq36p-max": cell("eq36-printed", "level", dmax, closedforms.AR).text(),
        "aa-eq41c-max": cell("eq41-corrected", "level", dmax, closedforms.AR).text(),
        "aa-eq41c-step-max": cell("eq41-corrected", "step", dmax, closedforms.AR).text(),
        "aa-eq6-verdict": table.row("eq6-cosine-2nd", "level").verdict,
        "aa-eq6-lln": listing([c.text() if c.resolved else "unresolved" for c in cosines], fmt=str),
        "aa-cosine-samples": count(table.cost.cosine_samples),
        # what this build cost
        "aa-z-resolve": num(closedforms.Z_RESOLVE),
        "aa-z-erratum": num(closedforms.Z_ERRATUM),
        "aa-n-sequences": count(table.cost.samples),
        "aa-n-configs": count(table.cost.configs),
        "aa-sim-seconds": f"{num(table.cost.compute_seconds, 2)} s",
        "aa-sympy-seconds": f"{num(sympy_seconds, 2)} s",
        "aa-n-checks": count(len(checks)),
        "aa-sympy-source": "read their verdicts from the cache" if sympy_cached else "ran them",
        "aa-workers": count(workers),
        "aa-wall-seconds": f"{num(wall_seconds, 2)} s",
        "aa-eq5-d": str(eq5.decisive.d),
    }
    for name, v in (("thm1", theorem1), ("eq5", eq5), ("corrected", corrected), ("prop1", prop1)):
        out[f"aa-{name}-word"], out[f"aa-{name}-value"] = v.word, v.value
        out[f"aa-{name}-measure"] = Markdown(v.measure)
    for k in range(3):
        out[f"aa-eq10-step-{k}"] = cell("eq10", "step", ds[min(k, len(ds) - 1)]).text()
    for c in checks:
        out[f"aa-chk-{c.key}"] = "✓ true" if c.holds else "✗ false"
    return out
