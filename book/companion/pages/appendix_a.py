"""The figures of ``book/appendix_a.ipynb``, each with its data download: each function takes what the
page computed (the closed-form table, the verdicts' runs) and glues a figure and its data. Nothing here
simulates; the page's numbers come from :func:`companion.errata.page_numbers`."""
from __future__ import annotations

import numpy as np
from recency_lib import theory

from .. import closedforms, conventions, errata, plotting, report


def _glue_data(key: str, data: str) -> None:
    from myst_nb import glue

    glue(key, data, display=False)


def lln_figure(*, table) -> None:
    """Figure ``aa-fig-lln`` and its data: the large-d forms of h(j) (size and j-dependence, each α of
    :data:`conventions.H_ALPHAS`) and of the layer-1 attention, simulated / closed form against d."""
    fig, (ax_size, ax_step) = plotting.subplots(1, 2, height_ratio=0.5, sharey=True)
    series = {}
    for alpha in conventions.H_ALPHAS:
        setting = closedforms.Setting("layernorm", alpha, 0.0)
        style = dict(color=conventions.alpha_colour(alpha), marker="o")
        for ax, part in ((ax_size, "level"), (ax_step, "step")):
            data = table.row("fig2", part, setting).series()
            plotting.ratio_by_d(*data, ax, label=conventions.alpha_label(alpha) if part == "step" else None, **style)
            series[f"h(j) {part}, {conventions.alpha_label(alpha)}"] = data
        ax_step.axhline(float(theory.drop_ratio_gaussian(alpha, float("inf"))), color=style["color"], linestyle=":", linewidth=1.0)
    for setting in (closedforms.T, closedforms.A):
        data = table.row("eq4-attention", "level", setting).series()
        plotting.ratio_by_d(*data, ax_size, color=conventions.alpha_colour(setting.alpha), marker="s",
                            label=f"attention, {conventions.alpha_label(setting.alpha)}")
        series[f"layer-1 attention, {conventions.alpha_label(setting.alpha)}"] = data
    for ax, title in ((ax_size, "size"), (ax_step, "$j$-dependence")):
        plotting.d_axis(ax, table.ds)
        ax.set_title(title)
    ax_step.set_ylabel("")
    ax_size.legend(loc="upper left")
    fig.legend(*ax_step.get_legend_handles_labels(), loc="outside lower center", ncol=len(conventions.H_ALPHAS))
    plotting.glue_figure("aa-fig-lln", fig)
    _glue_data("aa-fig-lln-data", report.download("appendix-a-lln", report.curve_columns(series, "d")))


def theorem1_figure(*, table, eq5) -> None:
    """Figure ``aa-fig-thm1`` and its data. Left: the drop of ||x_j^(1)||^2 simulated / Eq. (10) against
    d beside its first-order form and e^(1/2); right: S^(2)'s size and mean step / Eq. (5)
    (``eq5``: claims.eq5_claim of Theorem 1's runs)."""
    fig, (ax_norm, ax_score) = plotting.subplots(1, 2, height_ratio=0.45)
    t_style = dict(color=conventions.alpha_colour(0.0))
    drop = table.row("eq10", "step").series()
    plotting.ratio_by_d(*drop, ax_norm, label="simulated", marker="o", linestyle="none", **t_style)
    grid = np.geomspace(table.ds[0], table.ds[-1], 60)
    ax_norm.plot(grid, theory.drop_ratio_first_order(grid), label="first order", **conventions.CORRECTED, **t_style)
    ax_norm.axhline(float(theory.drop_ratio_gaussian(0.0, float("inf"))), label="$e^{1/2}$", **conventions.REFERENCE)
    level, step = table.row("eq11", "level").series(), errata.ratio_series(eq5)
    plotting.ratio_by_d(*level, ax_score, label="size", marker="D", markerfacecolor="white", **t_style)
    plotting.ratio_by_d(*step, ax_score, label="mean step", marker="D", **t_style)
    for ax, title, ticks in ((ax_norm, "drop of $\\Vert x_j^{(1)}\\Vert^2$, Eq. (10)", table.ds),
                             (ax_score, "$S^{(2)}$, Eq. (5)", sorted({*table.ds, *step[0].astype(int)}))):
        plotting.d_axis(ax, ticks)
        ax.set_title(title)
        ax.legend(loc="best")
    ax_score.set_ylabel("")
    plotting.glue_figure("aa-fig-thm1", fig)
    _glue_data("aa-fig-thm1-data", report.download("appendix-a-theorem-1", report.curve_columns(
        {"drop of ||x_j||^2 / Eq. (10)": drop, "S2 size / Eq. (5)": level, "S2 mean step / Eq. (5)": step}, "d")))


def prop1_figure(*, dip, n) -> None:
    """Figure ``aa-fig-prop1`` and its data: the last row of S^(2) without normalization relative to its
    mean (``dip``: closedforms.prop1_dip) beside the next order beyond the law of large numbers."""
    fig, ax = plotting.subplots(height_ratio=0.45)
    p_style = dict(color=conventions.alpha_colour(0.0))
    plotting.errorbar_points(dip["j"], dip["sim"], dip["se"], ax, label="simulated", **p_style)
    ax.plot(dip["j"], dip["predicted"], label="next order beyond the LLN", **conventions.CORRECTED, **p_style)
    ax.axhline(0.0, label="LLN: flat (corrected Eq. (19))", **conventions.REFERENCE)
    ax.set_xticks(dip["j"])
    ax.set_xlabel("key $j$")
    ax.set_ylabel(f"$S^{{(2)}}_{{{n},j}}$ / row mean $-$ 1")
    ax.legend(loc="lower right")
    plotting.glue_figure("aa-fig-prop1", fig)
    _glue_data("aa-fig-prop1-data", report.download("appendix-a-proposition-1", report.curve_columns(
        {"simulated": (dip["j"], dip["sim"], dip["se"]), "next order": (dip["j"], dip["predicted"], None)}, "j")))


def fig5_figure(*, fig5_results, n, d_fig5) -> None:
    """Figure ``aa-fig-fig5`` and its data: the growth of h(j) with the residual at each α of
    :data:`conventions.H_ALPHAS` (``fig5_results``: α -> SimResult at d = ``d_fig5``) beside Eq. (41) as
    printed and corrected."""
    j = np.arange(1, n + 1)
    fig, ax = plotting.subplots(height_ratio=0.5)
    curves = {}
    for alpha in conventions.H_ALPHAS:
        colour = conventions.alpha_colour(alpha)
        plotting.h_curve(j, theory.h_corrected(j, alpha, 1.0, d_fig5), ax, kind="corrected", color=colour,
                         label=conventions.alpha_label(alpha))
        plotting.h_curve(j, theory.h_eq41(j, alpha, 1.0, d_fig5), ax, kind="printed", color=colour)
        growth, bound = closedforms.h_growth(fig5_results[alpha])
        plotting.errorbar_points(j, growth, bound, ax, color=colour)
        curves[f"simulated, {conventions.alpha_label(alpha)}"] = (j, growth, bound)
    ax.set_xticks(j)
    ax.legend(loc="upper left", ncol=2)
    plotting.glue_figure("aa-fig-fig5", fig)
    _glue_data("aa-fig-fig5-data", report.download("appendix-a-figure-5", report.curve_columns(curves, "j")))
