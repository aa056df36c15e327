"""Chapter 4 (``book/residual.ipynb``): its numbers, table rows and longer figures."""

import math

from recency_lib import theory
from recency_lib.result import SimResult

from .. import closedforms, conventions, plotting, report, statistics
from ..report import count, num, pm, z_text


def residual_numbers(*, alpha, iso, gamma, ln0, ln_a, n, res0, res_a, samples, verdict) -> dict:
    """The settings, Definition 1 and the trends with the residual, the verdict, the figure's data;
    ``iso``: gamma -> the first-order statistic at alpha = 0."""
    runs = (ln0, ln_a, res_a, res0)
    labels = [conventions.setting_label(r.config) for r in runs]
    out = {
        "residual-samples": count(samples),
        "residual-n": count(n),
        "residual-alpha": num(alpha),
        "residual-samples-iso": count(iso[gamma].samples),
        "residual-fig-data": report.download("proposition-2", report.result_columns(runs, labels)),
        "residual-def1-iso1": statistics.definition1(iso[gamma], 2, family=2),
        "residual-v": verdict.word,
        "residual-v-zc": num(verdict.numbers["z_threshold"], 3),
        "residual-v-status": verdict.decisive.status,
        "residual-v-a-status": verdict.checks[1].status,
        "residual-v-a": verdict.checks[1].text,
        "residual-v-a-z": z_text(verdict.checks[1].z),
    }
    for key, res in (("a5g0", ln_a), ("a5g1", res_a)):
        out[f"residual-def1-{key}"] = statistics.definition1(res, 2, family=2)
        out[f"residual-rp-{key}"] = pm(*statistics.rp(res, 2))
        out[f"residual-s-{key}"] = pm(res.score_mean[1, n - 1, 0], res.score_sem[1, n - 1, 0])
        out[f"residual-hrise-{key}"] = pm(*statistics.h_rise(res))
    return out


def closed_form_numbers(*, alpha, closed, d, gamma) -> dict[str, str]:
    """Eq. (41), corrected, against the Gram engine (``closed``): the step ratio per d, the
    residual coefficient g, gamma and d gamma."""
    steps = closed.row("eq41-corrected", "step", closedforms.AR).cells
    ratios = [pm(c.ratio, c.ratio_se) if c.resolved else "unresolved" for c in steps]
    return {
        "residual-h-step": report.listing(ratios, str),
        "residual-h-ds": report.listing([c.d for c in steps]),
        "residual-gtrue": num(theory.residual_coefficient(alpha, gamma, d), 3),
        "residual-gamma": num(gamma),
        "residual-dgamma": num(d * gamma),
    }


def settings_rows(settings) -> list[dict]:
    """Per result (SimResult or estimator statistic): the setting, the estimator, Definition 1 of
    layer 2 (one family) and the trend of S^(2) with its z."""
    rows = []
    for r in settings:
        trend = statistics.s2_order(r)[1:]
        rows.append(
            {
                "model": conventions.variant_short(r.config),
                "α": num(r.config.alpha),
                "layers": count(r.config.layers),
                "sequences": count(r.config.samples),
                "estimator": "layer-1 CV" if isinstance(r, SimResult) else "first-order CV",
                "Definition 1": statistics.definition1(r, 2, family=len(settings)),
                "trend of $S^{(2)}$": pm(*trend),
                "$z$": z_text(report.zscore(*trend)),
            }
        )
    return rows


def weakening_rows(without: SimResult, with_residual: SimResult) -> list[dict]:
    """Per layer from 2 on, how much the residual lowers the RP (SEs combined as if independent:
    the runs share their tokens, so the z is conservative) and the share of the excess over 1/2 it
    keeps."""
    rows = []
    for layer in range(2, without.config.layers + 1):
        (a, sa), (b, sb) = statistics.rp(without, layer), statistics.rp(with_residual, layer)
        se = math.hypot(sa, sb)
        rows.append(
            {
                "layer": count(layer),
                "RP without − with": pm(a - b, se),
                "$z$": z_text(report.zscore(a - b, se)),
                "share of the excess over 0.5 kept": report.percent(
                    (b - 0.5) / (a - 0.5) if a != 0.5 else math.nan
                ),
            }
        )
    return rows


def size_rows(*, d, sizes) -> list[dict]:
    """Per alpha (``sizes``: alpha -> (without, with residual)): the leak t, sqrt(d) t^2,
    sqrt(d) alpha (1 - alpha) t and the two trends of S^(2)."""
    rows = []
    for a, (r0, r1) in sorted(sizes.items()):
        t = conventions.leak(a, d)
        rows.append(
            {
                "α": num(a),
                "$t$": num(t, 2),
                "$\\sqrt d\\,t^2$": num(math.sqrt(d) * t**2, 2),
                "$\\sqrt d\\,\\alpha(1-\\alpha)\\,t$": num(math.sqrt(d) * a * (1 - a) * t, 2),
                "trend, no residual": pm(*statistics.s2_order(r0)[1:]),
                f"trend, {conventions.variant_short(r1.config)}": pm(*statistics.s2_order(r1)[1:]),
            }
        )
    return rows


def residual_figure(*, ln0, ln_a, res_a, res0, n) -> None:
    """Figure ``residual-fig``: the last row of the mean S^(2), and the RP of every layer."""
    fig, (left, right) = plotting.subplots(1, 2, height_ratio=0.42)
    for res in (ln_a, res_a):
        style = conventions.variant_style(res.config)
        label = conventions.variant_short(res.config)
        plotting.row_profile(res.score_mean[1], res.score_sem[1], n, left, label=label, **style)
    left.set_ylabel(f"mean $S^{{(2)}}_{{{n},j}}$")
    left.legend(loc="upper left")
    for res in (ln0, ln_a, res_a, res0):
        style = conventions.variant_style(res.config)
        label = conventions.setting_label(res.config)
        plotting.recency_by_layer(*statistics.rp_layers(res), right, label=label, **style)
    right.set_ylim(0.45, None)
    right.legend(loc="upper left")
    plotting.glue_figure("residual-fig", fig)
