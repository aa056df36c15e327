"""Chapter 6 (``book/empirical.ipynb``): its numbers, table rows and longer figures."""

from __future__ import annotations

import math

from .. import closedforms, conventions, depth, plotting, report, statistics
from ..verdicts import STATUSES


def figure2_numbers(
    *,
    alpha,
    by_d,
    curves,
    d,
    ds,
    forms,
    h_zc,
    layers,
    n,
    results,
    samples,
    samples_dsweep,
    table,
    verdicts,
) -> dict[str, str]:
    """Every number chapter 6 cites about Figures 1 and 2, each with its Monte-Carlo error where it is
    simulated: Figure 1's four models (``results``: no norm, LayerNorm alpha = 0, ``alpha``, ``alpha`` +
    residual), the hidden-size sweep (``by_d``: d -> those four, at the d of ``ds``), the closed forms
    ``forms`` (closedforms.measure of "eq10", "eq4-attention", "fig2"), the verdicts on Figures 1 and 2
    (``verdicts``; ``table`` and ``h_zc``: Figure 2's numbers and z), and the figures' data."""
    quote = 0.2  # the alpha of Figure 2 quoted in the prose
    none, iso, ln5, res = results
    _, trend, trend_se = statistics.s2_order(iso)
    step = forms.row("fig2", "step", closedforms.Setting("layernorm", quote, 0.0))
    sized = {
        a: (t["sim"][0] / t["printed"], t["sim"][1] / abs(t["printed"]))
        for a, t in table.items()
        if a > 0
    }
    lo, hi = min(sized, key=lambda a: sized[a][0]), max(sized, key=lambda a: sized[a][0])

    def ratios(row) -> str:
        return report.listing(closedforms.ratio_texts(row), fmt=str)

    flats = [
        c for c in verdicts[0].checks if c.kind == "flat"
    ]  # the figure as drawn (verdicts.flat_check)
    none_flat = next(c for c in flats if c.norm == none.config.norm)
    iso_flat = max((c for c in flats if c.norm != none.config.norm), key=lambda c: c.value)
    out = {
        # Figure 1
        "empirical-none-levels": none_flat.text,
        "empirical-iso-levels": iso_flat.text,
        "empirical-iso-levels-layer": str(iso_flat.layer),
        "empirical-n": report.count(n),
        "empirical-d": report.count(d),
        "empirical-layers": report.count(layers),
        "empirical-samples": report.count(samples),
        "empirical-estimator": statistics.estimator_name(),
        "empirical-matrices": report.count(len(results) * layers),
        "empirical-v1": verdicts[0].word,
        "empirical-none-rp2": report.pm(*statistics.rp(none, 2)),
        "empirical-none-rpL": report.pm(*statistics.rp(none, layers)),
        "empirical-none-excess": report.pm(*statistics.first_key_excess(none, layers)),
        "empirical-iso-rp2": report.pm(*statistics.rp(iso, 2)),
        "empirical-iso-pred": report.num(closedforms.eq5_smallest_step(n, d), 2),
        "empirical-iso-se-plain": report.num(statistics.typical_step_se(iso, 2, "plain"), 2),
        "empirical-iso-se-cv": report.num(statistics.typical_step_se(iso, 2, "cv"), 2),
        "empirical-iso-trend-z": report.z_text(report.zscore(trend, trend_se)),
        "empirical-ln5-rp2": report.pm(*statistics.rp(ln5, 2)),
        "empirical-ln5-rpL": report.pm(*statistics.rp(ln5, layers)),
        "empirical-res-cost2": report.pm(*statistics.rp_gap(ln5, res, 2)),
        "empirical-res-cost": report.pm(*statistics.rp_gap(ln5, res, layers)),
        # Figure 1 at other hidden sizes
        "empirical-ds": report.listing(ds),
        "empirical-samples-dsweep": report.count(samples_dsweep),
        "empirical-d-first": report.count(ds[0]),
        "empirical-d-last": report.count(ds[-1]),
        "empirical-ln5-rp2-first": report.pm(*statistics.rp(by_d[ds[0]][2], 2)),
        "empirical-ln5-rp2-last": report.pm(*statistics.rp(by_d[ds[-1]][2], 2)),
        "empirical-leak-first": report.num(conventions.leak(alpha, ds[0]), 2),
        "empirical-leak-last": report.num(conventions.leak(alpha, ds[-1]), 2),
        "empirical-none-primacy": report.listing(
            [
                dd
                for dd in ds
                if statistics.direction(by_d[dd][0], layers, family=len(ds)) == "primacy"
            ]
        ),
        "empirical-eq10": ratios(forms.row("eq10", "level")),
        "empirical-eq4-a0": ratios(forms.row("eq4-attention", "level", closedforms.T)),
        "empirical-eq4-a5": ratios(forms.row("eq4-attention", "level", closedforms.A)),
        "empirical-eq4-a0-limit": report.num(math.exp(0.5), 4),
        "empirical-eq4-a5-limit": report.num(math.exp((1 - closedforms.A.alpha**2) ** 2 / 2), 4),
        "empirical-cf-samples": report.count(samples),
        "empirical-cf-samples-t": report.count(forms.samples_of(closedforms.T)),
        # Figure 2
        "empirical-v2": verdicts[1].word,
        "empirical-h-order": "reproduced" if verdicts[1].numbers["same_order"] else "contradicted",
        "empirical-quote": f"{quote:g}",
        "empirical-fig2-level": ratios(
            forms.row("fig2", "level", closedforms.Setting("layernorm", quote, 0.0))
        ),
        "empirical-fig2-step": ratios(step),
        "empirical-fig2-trend": closedforms.trend_words(step),
        "empirical-v2-value": verdicts[1].value,
        "empirical-v2-alpha": f"{verdicts[1].decisive.alpha:g}",
        "empirical-v2-zc": report.num(h_zc, 3),
        "empirical-v2-z": report.z_text(verdicts[1].decisive.z),
        "empirical-v2-count": report.count(len(verdicts[1].checks)),
        "empirical-v2-min": report.pm(*sized[lo]),
        "empirical-v2-min-alpha": f"{lo:g}",
        "empirical-v2-max": report.pm(*sized[hi]),
        "empirical-v2-max-alpha": f"{hi:g}",
    }
    out["empirical-fig2-data"], out["empirical-fig2-ratio-data"] = closedforms.h_downloads(
        "figure-2", curves, forms, "fig2"
    )
    return out


def figure1_numbers(*, fig1_verdict, names, results) -> dict[str, str]:
    """The paper's Figure 1: the figure's data, how many of its features the verdict checks and how each
    came out, the family-wise z, the decisive value and setting."""
    status = [c.status for c in fig1_verdict.checks]
    return {
        "empirical-fig1-data": report.download("figure-1", report.result_columns(results, names)),
        "empirical-fig1-nchecks": report.count(len(status)),
        "empirical-fig1-zc": report.num(fig1_verdict.numbers["z_threshold"], 3),
        "empirical-fig1-counts": report.listing(
            [f"{report.count(status.count(s))} {s}" for s in STATUSES if s in status], str
        ),
        "empirical-fig1-value": fig1_verdict.value,
        "empirical-fig1-setting": fig1_verdict.decisive.setting.replace("$", ""),
    }


def dsweep_numbers(*, alpha, by_d, configs, ds, n) -> dict[str, str]:
    """Figure 1 at other hidden sizes: the sweep's data and, at the largest d, the third model's mean step
    of S^(2), its z, its direction and its ratio to the large-d line ("unresolved" where |z| is small)."""
    out = {
        "empirical-dsweep-data": report.download(
            "figure-1-hidden-sizes",
            report.result_columns(
                [r for dd in ds for r in by_d[dd]],
                [f"{conventions.setting_label(c)}, d = {dd}" for dd in ds for c in configs],
                matrices=False,
            ),
        )
    }
    last = by_d[ds[-1]][2]
    _, m, s = statistics.s2_order(last)
    out["empirical-last-trend"] = report.pm(m, s)
    out["empirical-last-trend-z"] = report.z_text(report.zscore(m, s))
    out["empirical-last-dir"] = statistics.order_word(m, s, conventions.z_for(1))
    out["empirical-last-trend-lln"] = closedforms.trend_over_line(
        last, closedforms.predicted_trend(n, ds[-1], alpha), conventions.z_for(1)
    )
    return out


def depth_numbers(
    *, results: dict, growth: dict, zc: float, alpha: float, gamma: float, d: int
) -> dict[str, str]:
    """Glue key -> text of every number chapter 6's depth section cites: the study's ``results``
    ((norm, α, d, γ) -> SimResult), its ``growth`` runs and the family-wise ``zc``; ``alpha``, ``gamma``
    and ``d`` name the showcase settings (LayerNorm at α = 0 and at ``alpha``, the residual at ``gamma``)."""
    c = {k: depth.cells(r, zc, growth.get(k)) for k, r in results.items()}
    s = {k: depth.summary(v) for k, v in c.items()}
    L = next(iter(results.values())).config.layers
    none_keys = [k for k in results if k[0] == "none" and k[3] == 0.0]
    ln_keys = [k for k in results if k[0] == "layernorm" and k[3] == 0.0]
    iso, show, res, none = (
        ("layernorm", 0.0, d, 0.0),
        ("layernorm", alpha, d, 0.0),
        ("layernorm", alpha, d, gamma),
        ("none", 0.0, d, 0.0),
    )
    growth_z = [x.z for k in ln_keys for (what, _), x in c[k].items() if what == "growth"]
    if all(s[k].grows for k in ln_keys):
        ln_word = "grows in every setting"
    else:
        ln_word = (
            "fades somewhere"
            if any(s[k].fades for k in ln_keys)
            else "does not grow resolvably everywhere"
        )
    return {
        "empirical-depth-L": report.count(L),
        "empirical-depth-zc": report.num(zc, 3),
        "empirical-depth-family": report.count(depth.family(results, growth)),
        "empirical-depth-onset": report.listing(
            sorted({s[k].onset for k in none_keys}, key=str), str
        ),
        "empirical-depth-none2": report.count(
            sum(c[k][("trend", 2)].direction == "recency" for k in none_keys)
        ),
        "empirical-depth-nnone": report.count(len(none_keys)),
        "empirical-depth-none-rpL": report.num(
            max(c[k][("rp", L)].value + 0.5 for k in none_keys), 2
        ),
        "empirical-depth-ln-word": ln_word,
        "empirical-depth-growth-zmin": report.z_text(min(growth_z)),
        "empirical-depth-nsteps": report.count(len(growth_z)),
        "empirical-depth-nup": report.count(sum(z > zc for z in growth_z)),
        "empirical-depth-ndown": report.count(sum(z < -zc for z in growth_z)),
        "empirical-depth-iso-t2": report.pm(c[iso][("trend", 2)].value, c[iso][("trend", 2)].se),
        "empirical-depth-iso-tL": report.pm(c[iso][("trend", L)].value, c[iso][("trend", L)].se),
        "empirical-depth-iso-rp": report.count(len(s[iso].rp_resolved)),
        "empirical-depth-nlayers": report.count(L - 1),
        "empirical-depth-iso-rp2": report.pm(*statistics.rp(results[iso], 2)),
        "empirical-depth-iso-rpL": report.pm(*statistics.rp(results[iso], L)),
        "empirical-depth-show-rp2": report.pm(*statistics.rp(results[show], 2)),
        "empirical-depth-show-rpL": report.pm(*statistics.rp(results[show], L)),
        "empirical-depth-none-t2": report.pm(*statistics.s2_order(results[none])[1:]),
        "empirical-depth-none-n": report.count(results[none].config.samples),
        "empirical-depth-paired-iso": report.count(growth[iso].samples),
        "empirical-depth-paired": report.listing(
            sorted({g.samples for k, g in growth.items() if k != iso}), report.count
        ),
        "empirical-depth-res-rp2": report.pm(*statistics.rp(results[res], 2)),
        "empirical-depth-res-rpL": report.pm(*statistics.rp(results[res], L)),
        "empirical-depth-res-word": "resolved positive"
        if s[res].grows
        else "not all resolved positive",
        "empirical-depth-res-onset": str(s[("none", alpha, d, gamma)].onset),
        "empirical-depth-data": report.download(
            "depth-study",
            report.result_columns(
                list(results.values()),
                [depth.label(r.config) for r in results.values()],
                matrices=False,
            ),
        ),
    }


# -- the rows of the page's tables -------------------------------------------------------------------


def h_rows(*, d, h_results, h_zc, n, table) -> list[dict]:
    """Figure 2's table, one row per alpha: the simulated h(n)/h(1) - 1 against Eq. (41) (``table``, the
    verdict's numbers) and the mean step of S^(2) over its large-d line, "unresolved" where its |z| is
    at most ``h_zc``."""
    return [
        {
            "α": f"{a:g}",
            "simulated $h(n)/h(1) - 1$": report.pm(*t["sim"]),
            "Eq. (41)": report.num(t["printed"], 3),
            "simulated / Eq. (41)": report.pm(
                t["sim"][0] / t["printed"], t["sim"][1] / t["printed"]
            ),
            "mean step of $S^{(2)}$: simulated / large-$d$": closedforms.trend_over_line(
                h_results[a], closedforms.predicted_trend(n, d, a), h_zc
            ),
        }
        for a, t in table.items()
    ]


# -- figures -------------------------------------------------------------------------------------------


def dsweep_figures(*, configs, ds, by_d, layers, labels) -> None:
    """Figures ``empirical-dsweep`` (the recency probability of layer 2 and of the last layer against d,
    one line per setting of ``configs``) and ``empirical-dsweep-maps`` (the last layer's mean scores,
    one row per setting, one column per d). ``by_d``: d -> the results in the order of ``configs``."""
    fig, axes = plotting.subplots(1, 2, height_ratio=0.42, sharey=True)
    for ax, layer in zip(axes, (2, layers)):
        for k, cfg in enumerate(configs):
            rps = [statistics.rp(by_d[dd][k], layer) for dd in ds]
            plotting.versus_d(
                ds,
                [m for m, _ in rps],
                [e for _, e in rps],
                ax,
                reference=0.5,
                label=conventions.setting_label(cfg),
                ylabel="recency probability",
                **conventions.variant_style(cfg),
            )
        ax.set_title(f"layer {layer}")
    axes[1].set_ylabel("")
    fig.legend(*axes[0].get_legend_handles_labels(), loc="outside lower center", ncols=2)
    plotting.glue_figure("empirical-dsweep", fig)

    fig, axes = plotting.heatmap_subplots(len(configs), len(ds))
    plotting.score_grid(
        [[by_d[dd][k].score_mean[layers - 1] for dd in ds] for k in range(len(configs))],
        axes,
        recency_probabilities=[
            [statistics.rp(by_d[dd][k], layers)[0] for dd in ds] for k in range(len(configs))
        ],
        recency_sems=[
            [statistics.rp(by_d[dd][k], layers)[1] for dd in ds] for k in range(len(configs))
        ],
        row_labels=labels,
        col_labels=[f"d = {dd}" for dd in ds],
    )
    plotting.glue_figure("empirical-dsweep-maps", fig)


def figure2_figures(*, curves, forms) -> None:
    """Figures ``empirical-fig2`` and ``empirical-fig2-raw`` (the simulated h(j) of each α beside
    Eq. (41), normalized to j = 1 and raw; ``curves``: normalized -> α -> closedforms.h_curves) and
    ``empirical-fig2-ratio`` (simulated / Eq. (41) for the level and the step against d)."""
    for key, normalized in (("empirical-fig2", True), ("empirical-fig2-raw", False)):
        fig, ax = plotting.subplots(height_ratio=0.5)
        for a, c in curves[normalized].items():
            plotting.h_panel(
                c,
                ax,
                corrected=False,
                color=conventions.alpha_colour(a),
                label=conventions.alpha_label(a),
            )
        ax.legend(loc="center left", bbox_to_anchor=(1.0, 0.5))
        plotting.glue_figure(key, fig)

    fig = plotting.level_and_step(
        {part: closedforms.ratio_series(forms, "fig2", part) for part in ("level", "step")},
        ylabel="simulated / Eq. (41)",
    )
    plotting.glue_figure("empirical-fig2-ratio", fig)
