"""Chapter 5 (``book/input_distribution.ipynb``): its numbers, table rows and longer figures."""

from __future__ import annotations

import numpy as np

from recency_lib import inputs

from .. import closedforms, conventions, plotting, report, statistics
from ..statistics import StepEstimate


def proposition3_numbers(*, alphas, by, rp_by, gamma, p3, ratio, samples, zc) -> dict[str, str]:
    """Chapter 5's Proposition 3 against alpha: the sample sizes, the verdicts, the alphas where every
    step is resolved, the smallest alpha's trend and the figure's data (``by``: gamma -> alpha -> the
    steps' source, at alpha = 0 the first-order control variate's statistic; ``rp_by`` the same with
    SimResults at alpha = 0, for the recency probability)."""
    out = {}
    amin = min(alphas)
    out["inputdist-samples"] = report.count(samples)
    out["inputdist-samples-iso"] = report.count(by[0.0][0.0].samples)
    out["inputdist-samples-rp0"] = report.count(rp_by[0.0][0.0].config.samples)
    out["inputdist-fig-alpha-data"] = report.download(
        "proposition-3",
        report.curve_columns(
            {
                **{f"trend, gamma = {g:g}": statistics.trends(r) for g, r in by.items()},
                **{f"RP, gamma = {g:g}": statistics.rps(r) for g, r in rp_by.items()},
            },
            "alpha",
        ),
    )
    for g, key in ((0.0, "g0"), (gamma, "res")):
        out[f"inputdist-holds-{key}"] = report.listing(
            [a for a in sorted(by[g]) if StepEstimate.of(by[g][a]).decision(zc).word == "holds"]
        )
        out[f"inputdist-r0-{key}"] = ratio[g][0.0]
    out["inputdist-p3-word"] = p3[0.0].word
    out["inputdist-p3-zc"] = report.num(zc, 3)
    out["inputdist-amin"] = f"{amin:g}"
    out["inputdist-tmin-g0"] = report.pm(*statistics.s2_order(by[0.0][amin])[1:])
    return out


def eq6_numbers(*, cos, cos_ds, d, n, samples_cosine) -> dict[str, str]:
    """The mean cosine of two tokens of Eq. (6) (``cos``: d -> alpha -> (mean, SE)): the figure's data; at
    the page's d, the alphas whose shortfall from alpha is resolved (tested together), the largest one
    and the second-order prediction there, and how far the points sit from that prediction."""
    out = {}
    dev = {a: (m - a, s) for a, (m, s) in cos[d].items() if not report.is_exact(m, s)}
    zc = conventions.z_for(max(1, len(dev)))
    eq6_alpha = max(dev, key=lambda a: abs(dev[a][0]))
    eq6_second = {
        a: (m - a - inputs.cosine_bias_second_order(a, d)) / s
        for a, (m, s) in cos[d].items()
        if s > 0
    }
    out["inputdist-n"] = report.count(n)
    out["inputdist-d"] = report.count(d)
    out["inputdist-cos-samples"] = report.count(samples_cosine)
    out["inputdist-fig-cos-data"] = report.download(
        "eq6-cosine",
        report.curve_columns(
            {
                f"d = {dd}": (
                    sorted(cos[dd]),
                    [cos[dd][a][0] for a in sorted(cos[dd])],
                    [cos[dd][a][1] for a in sorted(cos[dd])],
                )
                for dd in cos_ds
            },
            "alpha",
        ),
    )
    out["inputdist-eq6-zc"] = report.num(zc, 3)
    out["inputdist-eq6-value"] = report.pm(*dev[eq6_alpha])
    out["inputdist-eq6-alpha"] = f"{eq6_alpha:g}"
    out["inputdist-eq6-z"] = report.z_text(report.zscore(*dev[eq6_alpha]))
    out["inputdist-eq6-pred"] = f"{inputs.cosine_bias_second_order(eq6_alpha, d):.4f}".replace(
        "-", "−"
    )
    out["inputdist-eq6-pred-z"] = report.num(abs(eq6_second[eq6_alpha]), 2)
    out["inputdist-eq6-maxz"] = report.num(max(abs(z) for z in eq6_second.values()), 3)
    out["inputdist-eq6-noisy"] = report.count(len(eq6_second))
    out["inputdist-eq6-against"] = report.count(
        sum(abs(report.zscore(m, s)) > zc for m, s in dev.values())
    )
    return out


def tail_numbers(*, alphas, by, tail) -> dict[str, str]:
    """Beyond the grid toward alpha = 1 (``tail``: 0.99 and 0.999 -> result): the mean step of S^(2) at
    the grid's largest alpha and at both, over 1 - alpha, their direction (two tested together) and z."""
    out = {}
    amax = max(alphas)
    out["inputdist-amax"] = f"{amax:g}"
    out["inputdist-tmax-g0"] = report.pm(*statistics.s2_order(by[0.0][amax])[1:])
    for a, key in ((0.99, "99"), (0.999, "999")):
        _, m, s = statistics.s2_order(tail[a])
        out[f"inputdist-t{key}"] = report.pm(m, s)
        out[f"inputdist-q{key}"] = report.pm(m / (1 - a), s / (1 - a))
    out["inputdist-dir-tail"] = report.listing(
        sorted(
            {
                statistics.order_word(*statistics.s2_order(r)[1:], conventions.z_for(2))
                for r in tail.values()
            }
        ),
        str,
    )
    out["inputdist-z-tail"] = report.listing(
        [report.z_text(report.zscore(*statistics.s2_order(tail[a])[1:])) for a in tail], str
    )
    return out


def closed_form_numbers(*, by, closed, ratio) -> dict[str, str]:
    """Eq. (40), corrected, against the exact engine at alpha = 0.5 (``closed``, closedforms.measure's table):
    the level and step ratios per d and their sample size; the grid's step over its line (``ratio``)."""
    levels = closed.row("eq40-corrected", "level", closedforms.A).cells
    steps = closed.row("eq40-corrected", "step", closedforms.A).cells
    return {
        "inputdist-level-ratio": report.listing([c.text() for c in levels], str),
        "inputdist-step-ratio": report.listing([c.text() for c in steps], str),
        "inputdist-step-ds": report.listing([c.d for c in steps]),
        "inputdist-cf-samples": report.count(closed.samples_of(closedforms.A)),
        "inputdist-acc-g0": report.listing([ratio[0.0][a] for a in sorted(by[0.0])], str),
        "inputdist-acc-alphas": report.listing(sorted(by[0.0])),
    }


# -- the rows of the page's tables -------------------------------------------------------------------


def step_ratios(*, by, d, n, zc) -> dict:
    """gamma -> alpha -> the mean step of S^(2) over its large-d line (closedforms.predicted_trend) as
    "m ± s", or "unresolved" where the step's |z| is at most ``zc``."""
    return {
        g: {
            a: closedforms.trend_over_line(r, closedforms.predicted_trend(n, d, a, g), zc)
            for a, r in results.items()
        }
        for g, results in by.items()
    }


def alpha_rows(*, by, gamma, ratio, zc) -> list[dict]:
    """Proposition 3's table, one row per alpha: Definition 1 and the mean step of S^(2) (over its line,
    ``ratio``) without the residual and with weight ``gamma``."""
    res_name = conventions.variant_short(by[gamma][0.0].config)

    def step(g, a):
        return f"{report.nowrap(report.pm(*statistics.s2_order(by[g][a])[1:]))}<br>({report.nowrap(ratio[g][a])})"

    return [
        {
            "α": report.num(a),
            "Definition 1": StepEstimate.of(by[0.0][a]).decision(zc).word,
            "mean step of $S^{(2)}$ (÷ large-$d$ line)": step(0.0, a),
            f"{res_name}: Definition 1": StepEstimate.of(by[gamma][a]).decision(zc).word,
            "mean step (÷ line)": step(gamma, a),
        }
        for a in sorted(by[0.0])
    ]


# -- figures -------------------------------------------------------------------------------------------


def cosine_figure(*, cos, cos_ds, d) -> None:
    """Figure ``inputdist-fig-cos``. Left: the mean cosine of two raw tokens against α at each d of
    ``cos_ds`` (``cos``: d -> α -> the estimate); right: d × its deviation from α beside the
    second-order bias -α(1-α²)/2."""
    fig, (left, right) = plotting.subplots(1, 2, height_ratio=0.45)
    left.plot([0, 1], [0, 1], color="black", linewidth=1.0, label="$y = \\alpha$")
    fine = np.linspace(0, 1, 101)
    for k, dd in enumerate(cos_ds):
        a, dev, se = statistics.cosine_deviations(cos[dd])
        plotting.errorbar_points(a, a + dev, se, left, label=f"d = {dd}", color=f"C{k}")
        plotting.errorbar_points(a, dd * dev, dd * se, right, label=f"d = {dd}", color=f"C{k}")
    plotting.closed_form(
        fine,
        d * inputs.cosine_bias_second_order(fine, d),
        right,
        color="black",
        label="$-\\alpha(1-\\alpha^2)/2$",
    )
    plotting.reference_line(right, 0.0)
    left.set_xlabel("α")
    left.set_ylabel("mean cosine of two tokens")
    left.legend(loc="upper left")
    right.set_xlabel("α")
    right.set_ylabel("d × (mean cosine − α)")
    right.legend(loc="lower left")
    plotting.glue_figure("inputdist-fig-cos", fig)


def alpha_figure(*, by, rp_by, alphas, n, d) -> None:
    """Figure ``inputdist-fig-alpha``: for each residual weight of ``by`` (γ -> α -> the steps' source), the
    mean step of S^(2) against α with its predicted line (left, log scale) and the recency probability of
    S^(2) (right, from ``rp_by``: γ -> α -> SimResult)."""
    fig, (left, right) = plotting.subplots(1, 2, height_ratio=0.45)
    fine = np.linspace(0, max(alphas), 60)
    for k, (g, results) in enumerate(by.items()):
        style = {
            **conventions.variant_style(results[0.0].config),
            "color": f"C{k}",
            "linestyle": "none",
        }  # points; the line is the prediction
        plotting.errorbar_points(
            *statistics.trends(results),
            left,
            label=conventions.variant_short(results[0.0].config),
            **style,
        )
        plotting.closed_form(
            fine, [closedforms.predicted_trend(n, d, a, g) for a in fine], left, color=f"C{k}"
        )
        plotting.errorbar_points(
            *statistics.rps(rp_by[g]),
            right,
            label=conventions.variant_short(results[0.0].config),
            **style,
        )
    left.set_yscale("log")
    left.set_xlabel("α")
    left.set_ylabel("mean step of $S^{(2)}$")
    left.legend(loc="lower center")
    plotting.reference_line(right, 0.5, label="no order")
    right.set_xlabel("α")
    right.set_ylabel("RP of $S^{(2)}$")
    right.legend(loc="upper left")
    plotting.glue_figure("inputdist-fig-alpha", fig)
