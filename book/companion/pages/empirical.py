"""Chapter 6 (``book/empirical.ipynb``): its numbers, table rows and longer figures."""

import math

from .. import closedforms, conventions, depth, plotting, report, statistics
from ..report import count, num, pm, z_text
from ..verdicts import STATUSES, elsewhere_note, layer2_isotropic, verdict_grid_rows


def figure1_table(*, results, names, p1_verdict, th_verdict) -> None:
    """Glue the table under Figure 1 (verdicts.verdict_grid_rows) with a * on layer 2 at α = 0
    where its estimator leaves Definition 1 undecided, and the note of what chapter 3's stronger
    estimators decide there (Proposition 1's and Theorem 1's verdicts)."""
    rows = verdict_grid_rows(results, names, elsewhere=layer2_isotropic)
    decided = (
        "{doc}`layernorm` decides layer 2 at α = 0 with stronger estimators: without "
        f"normalization Proposition 1 *{p1_verdict.word}*: {p1_verdict.value}; with LayerNorm "
        f"Theorem 1 *{th_verdict.word}*: {th_verdict.value}."
    )
    note = elsewhere_note(rows, results[0].config.samples, decided)
    report.show("empirical-fig1-table", report.table(rows))
    report.glue_numbers({"empirical-fig1-note": report.Markdown(note)})


def figure2_numbers(
    *, alpha, by_d, curves, d, ds, forms, layers, n, results, samples, samples_dsweep, verdicts
) -> dict[str, str]:
    """Figures 1 and 2: the four models (``results``), the d sweep (``by_d``: d -> the four), the
    closed forms (``forms``: closedforms.measure), the ``verdicts`` on both figures, their data."""
    quote = 0.2  # the alpha of Figure 2 quoted in the prose
    none, iso, ln5, res = results
    v2 = verdicts[1]
    table, h_zc = v2.numbers["table"], v2.numbers["z_threshold"]
    quoted = closedforms.Setting("layernorm", quote, 0.0)
    step = forms.row("fig2", "step", quoted)
    sized = closedforms.size_ratios(table, "printed")
    lo, hi = min(sized, key=lambda a: sized[a][0]), max(sized, key=lambda a: sized[a][0])

    def ratios(row) -> str:
        return report.listing(closedforms.ratio_texts(row), fmt=str)

    flats = [c for c in verdicts[0].checks if c.kind == "flat"]  # the figure as drawn
    none_flat = next(c for c in flats if c.norm == none.config.norm)
    iso_flat = max((c for c in flats if c.norm != none.config.norm), key=lambda c: c.value)
    primacy = [
        dd for dd in ds if statistics.direction(by_d[dd][0], layers, family=len(ds)) == "primacy"
    ]
    out = {
        # Figure 1
        "empirical-none-levels": none_flat.text,
        "empirical-iso-levels": iso_flat.text,
        "empirical-iso-levels-layer": str(iso_flat.layer),
        "empirical-n": count(n),
        "empirical-d": count(d),
        "empirical-layers": count(layers),
        "empirical-samples": count(samples),
        "empirical-estimator": statistics.estimator_name(),
        "empirical-matrices": count(len(results) * layers),
        "empirical-v1": verdicts[0].word,
        "empirical-level": report.percent(conventions.FAMILYWISE_LEVEL),
        "empirical-none-rp2": pm(*statistics.rp(none, 2)),
        "empirical-none-rpL": pm(*statistics.rp(none, layers)),
        "empirical-none-excess": pm(*statistics.first_key_excess(none, layers)),
        "empirical-iso-rp2": pm(*statistics.rp(iso, 2)),
        "empirical-iso-pred": num(closedforms.eq5_smallest_step(n, d), 2),
        "empirical-iso-se-plain": num(statistics.typical_step_se(iso, 2, "plain"), 2),
        "empirical-iso-se-cv": num(statistics.typical_step_se(iso, 2, "cv"), 2),
        "empirical-iso-trend-z": z_text(report.zscore(*statistics.s2_order(iso)[1:])),
        "empirical-ln5-rp2": pm(*statistics.rp(ln5, 2)),
        "empirical-ln5-rpL": pm(*statistics.rp(ln5, layers)),
        "empirical-res-cost2": pm(*statistics.rp_gap(ln5, res, 2)),
        "empirical-res-cost": pm(*statistics.rp_gap(ln5, res, layers)),
        # Figure 1 at other hidden sizes
        "empirical-ds": report.listing(ds),
        "empirical-samples-dsweep": count(samples_dsweep),
        "empirical-none-primacy": report.listing(primacy),
        "empirical-eq10": ratios(forms.row("eq10", "level")),
        "empirical-eq4-a0": ratios(forms.row("eq4-attention", "level", closedforms.T)),
        "empirical-eq4-a5": ratios(forms.row("eq4-attention", "level", closedforms.A)),
        "empirical-eq4-a0-limit": num(math.exp(0.5), 4),
        "empirical-eq4-a5-limit": num(math.exp((1 - closedforms.A.alpha**2) ** 2 / 2), 4),
        "empirical-cf-samples": count(samples),
        "empirical-cf-samples-t": count(forms.samples_of(closedforms.T)),
        # Figure 2
        "empirical-v2": v2.word,
        "empirical-h-order": "reproduced" if v2.numbers["same_order"] else "contradicted",
        "empirical-quote": f"{quote:g}",
        "empirical-fig2-level": ratios(forms.row("fig2", "level", quoted)),
        "empirical-fig2-step": ratios(step),
        "empirical-fig2-trend": closedforms.trend_words(step),
        "empirical-v2-value": v2.value,
        "empirical-v2-alpha": f"{v2.decisive.alpha:g}",
        "empirical-v2-zc": num(h_zc, 3),
        "empirical-v2-z": z_text(v2.decisive.z),
        "empirical-v2-count": count(len(v2.checks)),
        "empirical-v2-min": pm(*sized[lo]),
        "empirical-v2-min-alpha": f"{lo:g}",
        "empirical-v2-max": pm(*sized[hi]),
        "empirical-v2-max-alpha": f"{hi:g}",
    }
    for end, dd in (("first", ds[0]), ("last", ds[-1])):
        out[f"empirical-d-{end}"] = count(dd)
        out[f"empirical-ln5-rp2-{end}"] = pm(*statistics.rp(by_d[dd][2], 2))
        out[f"empirical-leak-{end}"] = num(conventions.leak(alpha, dd), 2)
    downloads = closedforms.h_downloads("figure-2", curves, forms, "fig2")
    out["empirical-fig2-data"], out["empirical-fig2-ratio-data"] = downloads
    return out


def figure1_numbers(*, fig1_verdict, names, results) -> dict[str, str]:
    """Figure 1's data, and the features its verdict checks and how they came out."""
    status = [c.status for c in fig1_verdict.checks]
    counts = [f"{count(status.count(s))} {s}" for s in STATUSES if s in status]
    return {
        "empirical-fig1-data": report.download("figure-1", report.result_columns(results, names)),
        "empirical-fig1-nchecks": count(len(status)),
        "empirical-fig1-zc": num(fig1_verdict.numbers["z_threshold"], 3),
        "empirical-fig1-counts": report.listing(counts, str),
        "empirical-fig1-value": fig1_verdict.value,
        "empirical-fig1-setting": fig1_verdict.decisive.setting.replace("$", ""),
    }


def dsweep_numbers(*, alpha, by_d, configs, ds, n) -> dict[str, str]:
    """Figure 1 at other d: the data; at the largest d the third model's mean step of S^(2), its z,
    order and ratio to the large-d line."""
    results = [r for dd in ds for r in by_d[dd]]
    labels = [f"{conventions.setting_label(c)}, d = {dd}" for dd in ds for c in configs]
    data = report.result_columns(results, labels, matrices=False)
    last = by_d[ds[-1]][2]
    _, m, s = statistics.s2_order(last)
    line = closedforms.predicted_trend(n, ds[-1], alpha)
    return {
        "empirical-dsweep-data": report.download("figure-1-hidden-sizes", data),
        "empirical-last-trend": pm(m, s),
        "empirical-last-trend-z": z_text(report.zscore(m, s)),
        "empirical-last-dir": statistics.order_word(m, s, conventions.z_for(1)),
        "empirical-last-trend-lln": closedforms.trend_over_line(last, line, conventions.z_for(1)),
    }


def depth_numbers(*, results: dict, growth: dict, zc: float, alpha, gamma, d) -> dict[str, str]:
    """The depth study (``results``: (norm, α, d, γ) -> SimResult; ``growth``; ``zc``) at the
    showcase settings ``alpha``, ``gamma``, ``d``."""
    c = {k: depth.cells(r, zc, growth.get(k)) for k, r in results.items()}
    s = {k: depth.summary(v) for k, v in c.items()}
    L = next(iter(results.values())).config.layers
    none_keys = [k for k in results if k[0] == "none" and k[3] == 0.0]
    ln_keys = [k for k in results if k[0] == "layernorm" and k[3] == 0.0]
    iso, show, res = [("layernorm", a, d, g) for a, g in ((0.0, 0.0), (alpha, 0.0), (alpha, gamma))]
    none = ("none", 0.0, d, 0.0)
    growth_z = [x.z for k in ln_keys for (what, _), x in c[k].items() if what == "growth"]
    if all(s[k].grows for k in ln_keys):
        ln_word = "grows in every setting"
    elif any(s[k].fades for k in ln_keys):
        ln_word = "fades somewhere"
    else:
        ln_word = "does not grow resolvably everywhere"
    runs = list(results.values())
    data = report.result_columns(runs, [depth.label(r.config) for r in runs], matrices=False)
    onsets = sorted({s[k].onset for k in none_keys}, key=str)
    none2 = sum(c[k][("trend", 2)].direction == "recency" for k in none_keys)
    res_word = "resolved positive" if s[res].grows else "not all resolved positive"
    paired = sorted({g.samples for k, g in growth.items() if k != iso})
    out = {
        "empirical-depth-L": count(L),
        "empirical-depth-zc": num(zc, 3),
        "empirical-depth-family": count(depth.family(results, growth)),
        "empirical-depth-onset": report.listing(onsets, str),
        "empirical-depth-none2": count(none2),
        "empirical-depth-nnone": count(len(none_keys)),
        "empirical-depth-none-rpL": num(max(c[k][("rp", L)].value + 0.5 for k in none_keys), 2),
        "empirical-depth-ln-word": ln_word,
        "empirical-depth-growth-zmin": z_text(min(growth_z)),
        "empirical-depth-nsteps": count(len(growth_z)),
        "empirical-depth-nup": count(sum(z > zc for z in growth_z)),
        "empirical-depth-ndown": count(sum(z < -zc for z in growth_z)),
        "empirical-depth-iso-rp": count(len(s[iso].rp_resolved)),
        "empirical-depth-nlayers": count(L - 1),
        "empirical-depth-none-t2": pm(*statistics.s2_order(results[none])[1:]),
        "empirical-depth-none-n": count(results[none].config.samples),
        "empirical-depth-paired-iso": count(growth[iso].samples),
        "empirical-depth-paired": report.listing(paired, count),
        "empirical-depth-res-word": res_word,
        "empirical-depth-res-onset": str(s[("none", alpha, d, gamma)].onset),
        "empirical-depth-data": report.download("depth-study", data),
    }
    for tag, l in (("2", 2), ("L", L)):
        out[f"empirical-depth-iso-t{tag}"] = pm(c[iso][("trend", l)].value, c[iso][("trend", l)].se)
        for name, key in (("iso", iso), ("show", show), ("res", res)):
            out[f"empirical-depth-{name}-rp{tag}"] = pm(*statistics.rp(results[key], l))
    return out


def h_rows(*, d, h_results, h_zc, n, table) -> list[dict]:
    """Figure 2's table per alpha: h(n)/h(1) - 1 against Eq. (41) (``table``), the mean step of
    S^(2) over its large-d line (at ``h_zc``)."""
    return [
        {
            "α": f"{a:g}",
            "simulated $h(n)/h(1) - 1$": pm(*t["sim"]),
            "Eq. (41)": num(t["printed"], 3),
            "simulated / Eq. (41)": pm(t["sim"][0] / t["printed"], t["sim"][1] / t["printed"]),
            "mean step of $S^{(2)}$: simulated / large-$d$": closedforms.trend_over_line(
                h_results[a], closedforms.predicted_trend(n, d, a), h_zc
            ),
        }
        for a, t in table.items()
    ]


def dsweep_figures(*, configs, ds, by_d, layers, labels) -> None:
    """Figures ``empirical-dsweep`` (RP against d) and ``empirical-dsweep-maps`` (setting x d)."""
    fig, axes = plotting.subplots(1, 2, height_ratio=0.42, sharey=True)
    for ax, layer in zip(axes, (2, layers)):
        for k, cfg in enumerate(configs):
            m, e = zip(*(statistics.rp(by_d[dd][k], layer) for dd in ds))
            kw = dict(label=conventions.setting_label(cfg), ylabel="recency probability")
            plotting.versus_d(ds, m, e, ax, reference=0.5, **kw, **conventions.variant_style(cfg))
        ax.set_title(f"layer {layer}")
    axes[1].set_ylabel("")
    fig.legend(*axes[0].get_legend_handles_labels(), loc="outside lower center", ncols=2)
    plotting.glue_figure("empirical-dsweep", fig)

    fig, axes = plotting.heatmap_subplots(len(configs), len(ds))
    rps = [[statistics.rp(by_d[dd][k], layers) for dd in ds] for k in range(len(configs))]
    plotting.score_grid(
        [[by_d[dd][k].score_mean[layers - 1] for dd in ds] for k in range(len(configs))],
        axes,
        recency_probabilities=[[m for m, _ in row] for row in rps],
        recency_sems=[[e for _, e in row] for row in rps],
        row_labels=labels,
        col_labels=[f"d = {dd}" for dd in ds],
    )
    plotting.glue_figure("empirical-dsweep-maps", fig)


def figure2_figures(*, curves, forms) -> None:
    """Figures ``empirical-fig2`` (h(j) / h(1)), ``-raw`` (h(j)) and ``-ratio`` (÷ Eq. (41))."""
    for key, normalized in (("empirical-fig2", True), ("empirical-fig2-raw", False)):
        fig, ax = plotting.subplots(height_ratio=0.5)
        for a, c in curves[normalized].items():
            colour, label = conventions.alpha_colour(a), conventions.alpha_label(a)
            plotting.h_panel(c, ax, corrected=False, color=colour, label=label)
        ax.legend(loc="center left", bbox_to_anchor=(1.0, 0.5))
        plotting.glue_figure(key, fig)
    series = {part: closedforms.ratio_series(forms, "fig2", part) for part in ("level", "step")}
    fig = plotting.level_and_step(series, ylabel="simulated / Eq. (41)")
    plotting.glue_figure("empirical-fig2-ratio", fig)
