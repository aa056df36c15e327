"""Chapter 5 (``book/input_distribution.ipynb``): its numbers, table rows and longer figures."""

import numpy as np

from recency_lib import inputs

from .. import closedforms, conventions, plotting, report, statistics
from ..report import count, num, pm, z_text
from ..statistics import StepEstimate


def _trend(x) -> tuple[float, float]:
    return statistics.s2_order(x)[1:]  # the mean step of S^(2) and its SE


def _def1(x, zc: float) -> str:
    return StepEstimate.of(x).decision(zc).word


def proposition3_numbers(*, alphas, by, rp_by, gamma, p3, ratio, samples, zc) -> dict[str, str]:
    """Proposition 3 against alpha (``by``, ``rp_by``: gamma -> alpha -> result): the sequences, the
    verdict, the alphas where Definition 1 holds, the smallest alpha's trend, the figure's data."""
    curves = {f"trend, gamma = {g:g}": statistics.trends(r) for g, r in by.items()}
    curves |= {f"RP, gamma = {g:g}": statistics.rps(r) for g, r in rp_by.items()}
    data = report.curve_columns(curves, "alpha")
    out = {
        "inputdist-samples": count(samples),
        "inputdist-samples-iso": count(by[0.0][0.0].samples),
        "inputdist-samples-rp0": count(rp_by[0.0][0.0].config.samples),
        "inputdist-fig-alpha-data": report.download("proposition-3", data),
        "inputdist-p3-word": p3[0.0].word,
        "inputdist-p3-zc": num(zc, 3),
        "inputdist-amin": f"{min(alphas):g}",
        "inputdist-grid": report.listing(sorted(by[0.0])),  # the alphas that ran, 0 included
        "inputdist-tmin-g0": pm(*_trend(by[0.0][min(alphas)])),
    }
    for g, key in ((0.0, "g0"), (gamma, "res")):
        holds = [a for a in sorted(by[g]) if _def1(by[g][a], zc) == "holds"]
        out[f"inputdist-holds-{key}"] = report.listing(holds)
        out[f"inputdist-r0-{key}"] = ratio[g][0.0]
    return out


def eq6_numbers(*, cos, cos_ds, d, n, samples_cosine) -> dict[str, str]:
    """Eq. (6)'s mean cosine of two tokens (``cos``: d -> alpha -> (mean, SE)): the data; at the
    page's d the largest resolved shortfall from alpha (one family) against the second order."""
    dev = {a: (m - a, s) for a, (m, s) in cos[d].items() if not report.is_exact(m, s)}
    zc = conventions.z_for(max(1, len(dev)))
    top = max(dev, key=lambda a: abs(dev[a][0]))
    second = {
        a: (m - a - inputs.cosine_bias_second_order(a, d)) / s
        for a, (m, s) in cos[d].items()
        if s > 0
    }
    # d -> (alphas, mean cosines, SEs)
    curves = {f"d = {dd}": zip(*[(a, *cos[dd][a]) for a in sorted(cos[dd])]) for dd in cos_ds}
    data = report.curve_columns(curves, "alpha")
    return {
        "inputdist-n": count(n),
        "inputdist-d": count(d),
        "inputdist-cos-samples": count(samples_cosine),
        "inputdist-fig-cos-data": report.download("eq6-cosine", data),
        "inputdist-eq6-zc": num(zc, 3),
        "inputdist-eq6-value": pm(*dev[top]),
        "inputdist-eq6-alpha": f"{top:g}",
        "inputdist-eq6-z": z_text(report.zscore(*dev[top])),
        "inputdist-eq6-pred": report.minus(f"{inputs.cosine_bias_second_order(top, d):.4f}"),
        "inputdist-eq6-pred-z": num(abs(second[top]), 2),
        "inputdist-eq6-maxz": num(max(abs(z) for z in second.values()), 3),
        "inputdist-eq6-noisy": count(len(second)),
        "inputdist-eq6-against": count(sum(abs(report.zscore(*v)) > zc for v in dev.values())),
    }


def tail_numbers(*, alphas, by, tail) -> dict[str, str]:
    """Toward alpha = 1 (``tail``: 0.99 and 0.999 -> result): the mean step of S^(2) at the grid's
    largest alpha and at both, over 1 - alpha, their order (one family) and z."""
    trends = [_trend(r) for r in tail.values()]
    orders = sorted({statistics.order_word(*t, conventions.z_for(2)) for t in trends})
    out = {
        "inputdist-amax": f"{max(alphas):g}",
        "inputdist-tmax-g0": pm(*_trend(by[0.0][max(alphas)])),
        "inputdist-dir-tail": report.listing(orders, str),
        "inputdist-z-tail": report.listing([z_text(report.zscore(*t)) for t in trends], str),
    }
    for a, key in ((0.99, "99"), (0.999, "999")):
        m, s = _trend(tail[a])
        out[f"inputdist-t{key}"] = pm(m, s)
        out[f"inputdist-q{key}"] = pm(m / (1 - a), s / (1 - a))
    return out


def closed_form_numbers(*, by, closed, ratio) -> dict[str, str]:
    """Eq. (40), corrected, against the Gram engine (``closed``): level and step ratios per d, the
    sequences; the grid's steps over their line (``ratio``)."""
    levels = closed.row("eq40-corrected", "level", closedforms.A).cells
    steps = closed.row("eq40-corrected", "step", closedforms.A).cells
    return {
        "inputdist-level-ratio": report.listing([c.text() for c in levels], str),
        "inputdist-step-ratio": report.listing([c.text() for c in steps], str),
        "inputdist-step-ds": report.listing([c.d for c in steps]),
        "inputdist-cf-samples": count(closed.samples_of(closedforms.A)),
        "inputdist-acc-g0": report.listing([ratio[0.0][a] for a in sorted(by[0.0])], str),
        "inputdist-acc-alphas": report.listing(sorted(by[0.0])),
    }


def step_ratios(*, by, d, n, zc) -> dict:
    """gamma -> alpha -> the mean step of S^(2) over its large-d line (or "unresolved")."""
    return {
        g: {
            a: closedforms.trend_over_line(r, closedforms.predicted_trend(n, d, a, g), zc)
            for a, r in results.items()
        }
        for g, results in by.items()
    }


def alpha_rows(*, by, gamma, ratio, zc) -> list[dict]:
    """Proposition 3's table per alpha: Definition 1 and the mean step of S^(2) (over its line,
    ``ratio``) without and with the residual."""
    res_name = conventions.variant_short(by[gamma][0.0].config)

    def step(g, a):
        return f"{report.nowrap(pm(*_trend(by[g][a])))}<br>({report.nowrap(ratio[g][a])})"

    return [
        {
            "α": num(a),
            "Definition 1": _def1(by[0.0][a], zc),
            "mean step of $S^{(2)}$ (÷ large-$d$ line)": step(0.0, a),
            f"{res_name}: Definition 1": _def1(by[gamma][a], zc),
            "mean step (÷ line)": step(gamma, a),
        }
        for a in sorted(by[0.0])
    ]


def cosine_figure(*, cos, cos_ds, d) -> None:
    """Figure ``inputdist-fig-cos``: two tokens' mean cosine, and d × its deviation from α."""
    fig, (left, right) = plotting.subplots(1, 2, height_ratio=0.45)
    left.plot([0, 1], [0, 1], color="black", linewidth=1.0, label="$y = \\alpha$")
    fine = np.linspace(0, 1, 101)
    for k, dd in enumerate(cos_ds):
        a, dev, se = statistics.cosine_deviations(cos[dd])
        plotting.errorbar_points(a, a + dev, se, left, label=f"d = {dd}", color=f"C{k}")
        plotting.errorbar_points(a, dd * dev, dd * se, right, label=f"d = {dd}", color=f"C{k}")
    bias = d * inputs.cosine_bias_second_order(fine, d)
    label = "$-\\alpha(1-\\alpha^2)/2$"
    plotting.closed_form(fine, bias, right, color="black", label=label)
    plotting.reference_line(right, 0.0)
    for ax, ylabel, loc in (
        (left, "mean cosine of two tokens", "upper left"),
        (right, "d × (mean cosine − α)", "lower left"),
    ):
        ax.set(xlabel="α", ylabel=ylabel)
        ax.legend(loc=loc)
    plotting.glue_figure("inputdist-fig-cos", fig)


def alpha_figure(*, by, rp_by, alphas, n, d) -> None:
    """Figure ``inputdist-fig-alpha``: the mean step (``by``) and the RP (``rp_by``) against α."""
    fig, (left, right) = plotting.subplots(1, 2, height_ratio=0.45)
    fine = np.linspace(0, max(alphas), 60)
    for k, (g, results) in enumerate(by.items()):
        cfg = results[0.0].config  # points; the line is the prediction
        style = {**conventions.variant_style(cfg), "color": f"C{k}", "linestyle": "none"}
        label = conventions.variant_short(cfg)
        plotting.errorbar_points(*statistics.trends(results), left, label=label, **style)
        line = [closedforms.predicted_trend(n, d, a, g) for a in fine]
        plotting.closed_form(fine, line, left, color=f"C{k}")
        plotting.errorbar_points(*statistics.rps(rp_by[g]), right, label=label, **style)
    left.set(yscale="log", xlabel="α", ylabel="mean step of $S^{(2)}$")
    left.legend(loc="lower center")
    plotting.reference_line(right, 0.5, label="no order")
    right.set(xlabel="α", ylabel="RP of $S^{(2)}$")
    right.legend(loc="upper left")
    plotting.glue_figure("inputdist-fig-alpha", fig)
