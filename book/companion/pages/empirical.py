"""The numbers the prose of ``book/empirical.ipynb`` cites and the rows of its tables: each function takes
what the page computed and returns glue key -> text, which the page glues, or a table's rows, which
the page shows (``report.table``); the ``*_figure`` functions draw and glue the page's larger figures.
Nothing here simulates."""
from __future__ import annotations

import numpy as np

from .. import claims, conventions, plotting, report


def figure2_numbers(*, alpha, by_d, curves, d, ds, forms, h_zc, layers, n, results, samples, samples_dsweep,
                       table, verdicts) -> dict[str, str]:
    """Chapter 6's Figure 2: the verdict's decisive value and setting, the family-wise z, the ratio range,
    the figures' data and the d sweep."""
    out = {}
    v2_ratios = [c.value for c in verdicts[1].checks]
    numbers = {**claims.empirical_numbers(results, by_d, forms, verdicts, n=n, d=d, layers=layers, samples=samples,
                                          samples_dsweep=samples_dsweep),
               "empirical-leak-first": report.num(conventions.leak(alpha, ds[0]), 2),
               "empirical-leak-last": report.num(conventions.leak(alpha, ds[-1]), 2)}
    for key, text in numbers.items():
        out[key] = text
    out["empirical-v2-value"] = verdicts[1].value
    out["empirical-v2-alpha"] = next(f"{a:g}" for a in table if verdicts[1].decisive.what.endswith(f"α = {a:g}"))
    out["empirical-v2-zc"] = report.num(h_zc, 3)
    out["empirical-v2-count"] = report.count(len(v2_ratios))
    out["empirical-v2-min"] = verdicts[1].checks[int(np.argmin(v2_ratios))].text
    out["empirical-v2-max"] = verdicts[1].checks[int(np.argmax(v2_ratios))].text
    out["empirical-fig2-data"], out["empirical-fig2-ratio-data"] = claims.h_downloads("figure-2", curves, forms, "fig2")
    return out


def figure1_numbers(*, fig1_verdict, names, results) -> dict[str, str]:
    """The paper's Figure 1: the figure's data, how many of its features the verdict checks and how each
    came out, the family-wise z, the decisive value and setting."""
    status = [c.status for c in fig1_verdict.checks]
    return {"empirical-fig1-data": report.download("figure-1", report.result_columns(results, names)),
            "empirical-fig1-nchecks": report.count(len(status)),
            "empirical-fig1-zc": report.num(fig1_verdict.numbers["z_threshold"], 3),
            "empirical-fig1-counts": report.listing([f"{report.count(status.count(s))} {s}" for s in claims.STATUSES
                                                     if s in status], str),
            "empirical-fig1-value": fig1_verdict.value,
            "empirical-fig1-setting": fig1_verdict.decisive.setting.replace("$", "")}


def dsweep_numbers(*, alpha, by_d, configs, ds, n) -> dict[str, str]:
    """Figure 1 at other hidden sizes: the sweep's data and, at the largest d, the third model's mean step
    of S^(2), its z, its direction and its ratio to the large-d line ("unresolved" where |z| is small)."""
    out = {"empirical-dsweep-data": report.download("figure-1-hidden-sizes", report.result_columns(
        [r for dd in ds for r in by_d[dd]], [f"{conventions.setting_label(c)}, d = {dd}" for dd in ds for c in configs],
        matrices=False))}
    last = by_d[ds[-1]][2]
    _, m, s = claims.s2_order(last)
    out["empirical-last-trend"] = report.pm(m, s)
    out["empirical-last-trend-z"] = report.z_text(report.zscore(m, s))
    out["empirical-last-dir"] = claims.order_word(m, s, conventions.z_for(1))
    out["empirical-last-trend-lln"] = claims.trend_over_line(last, claims.predicted_trend(n, ds[-1], alpha),
                                                            conventions.z_for(1))
    return out


# -- the rows of the page's tables -------------------------------------------------------------------

def h_rows(*, d, h_results, h_zc, n, table) -> list[dict]:
    """Figure 2's table, one row per alpha: the simulated h(n)/h(1) - 1 against Eq. (41) (``table``, the
    verdict's numbers) and the mean step of S^(2) over its large-d line, "unresolved" where its |z| is
    at most ``h_zc``."""
    return [{"α": f"{a:g}", "simulated $h(n)/h(1) - 1$": report.pm(*t["sim"]), "Eq. (41)": report.num(t["printed"], 3),
             "simulated / Eq. (41)": report.pm(t["sim"][0] / t["printed"], t["sim"][1] / t["printed"]),
             "mean step of $S^{(2)}$: simulated / large-$d$":
                 claims.trend_over_line(h_results[a], claims.predicted_trend(n, d, a), h_zc)}
            for a, t in table.items()]


# -- figures -------------------------------------------------------------------------------------------

def dsweep_figures(*, configs, ds, by_d, layers, labels) -> None:
    """Figures ``empirical-dsweep`` (the recency probability of layer 2 and of the last layer against d,
    one line per setting of ``configs``) and ``empirical-dsweep-maps`` (the last layer's mean scores,
    one row per setting, one column per d). ``by_d``: d -> the results in the order of ``configs``."""
    fig, axes = plotting.subplots(1, 2, height_ratio=0.42, sharey=True)
    for ax, layer in zip(axes, (2, layers)):
        for k, cfg in enumerate(configs):
            rps = [claims.rp(by_d[dd][k], layer) for dd in ds]
            plotting.versus_d(ds, [m for m, _ in rps], [e for _, e in rps], ax, reference=0.5,
                              label=conventions.setting_label(cfg), ylabel="recency probability",
                              **conventions.variant_style(cfg))
        ax.set_title(f"layer {layer}")
    axes[1].set_ylabel("")
    fig.legend(*axes[0].get_legend_handles_labels(), loc="outside lower center", ncols=2)
    plotting.glue_figure("empirical-dsweep", fig)

    fig, axes = plotting.heatmap_subplots(len(configs), len(ds))
    plotting.score_grid([[by_d[dd][k].score_mean[layers - 1] for dd in ds] for k in range(len(configs))], axes,
                        recency_probabilities=[[by_d[dd][k].recency_probability[layers - 1] for dd in ds]
                                               for k in range(len(configs))],
                        recency_sems=[[by_d[dd][k].recency_probability_sem[layers - 1] for dd in ds]
                                      for k in range(len(configs))],
                        row_labels=labels, col_labels=[f"d = {dd}" for dd in ds])
    plotting.glue_figure("empirical-dsweep-maps", fig)


def figure2_figures(*, curves, forms) -> None:
    """Figures ``empirical-fig2`` and ``empirical-fig2-raw`` (the simulated h(j) of each α beside
    Eq. (41), normalized to j = 1 and raw; ``curves``: normalized -> α -> claims.h_curves) and
    ``empirical-fig2-ratio`` (simulated / Eq. (41) for the level and the step against d)."""
    for key, normalized in (("empirical-fig2", True), ("empirical-fig2-raw", False)):
        fig, ax = plotting.subplots(height_ratio=0.5)
        for a, c in curves[normalized].items():
            plotting.h_panel(c, ax, corrected=False, color=conventions.alpha_colour(a), label=conventions.alpha_label(a))
        ax.legend(loc="center left", bbox_to_anchor=(1.0, 0.5))
        plotting.glue_figure(key, fig)

    fig = plotting.level_and_step({part: claims.ratio_series(forms, "fig2", part) for part in ("level", "step")},
                                  ylabel="simulated / Eq. (41)")
    plotting.glue_figure("empirical-fig2-ratio", fig)
