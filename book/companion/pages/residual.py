"""Chapter 4 (``book/residual.ipynb``): its numbers, table rows and longer figures."""

from __future__ import annotations

import math
from dataclasses import dataclass

from recency_lib import theory
from recency_lib.result import SimResult

from .. import closedforms, conventions, plotting, report, statistics


def residual_numbers(
    *, alpha, iso, gamma, ln0, ln_a, n, res0, res_a, samples, verdict
) -> dict[str, str]:
    """Chapter 4's numbers: the settings and sample sizes, Definition 1 and the trends of the residual
    model, and the figure's data; ``iso`` maps gamma (0 and ``gamma``) to the first-order control variate's
    statistic at alpha = 0 (two layers)."""
    out = {}
    last = n - 1
    out["residual-samples"] = report.count(samples)
    out["residual-n"] = report.count(n)
    out["residual-alpha"] = report.num(alpha)
    out["residual-samples-iso"] = report.count(iso[gamma].samples)
    out["residual-fig-data"] = report.download(
        "proposition-2",
        report.result_columns(
            [ln0, ln_a, res_a, res0],
            [conventions.setting_label(r.config) for r in (ln0, ln_a, res_a, res0)],
        ),
    )
    for key, res in (("a5g0", ln_a), ("a5g1", res_a)):
        out[f"residual-def1-{key}"] = statistics.definition1(res, 2, family=2)
        out[f"residual-rp-{key}"] = report.pm(*statistics.rp(res, 2))
        out[f"residual-s-{key}"] = report.pm(res.score_mean[1, last, 0], res.score_sem[1, last, 0])
        out[f"residual-hrise-{key}"] = report.pm(*statistics.h_rise(res))
    out["residual-def1-iso1"] = statistics.definition1(iso[gamma], 2, family=2)
    out["residual-v"] = verdict.word
    out["residual-v-value"] = verdict.value
    out["residual-v-z"] = report.z_text(verdict.decisive.z)
    out["residual-v-zc"] = report.num(verdict.numbers["z_threshold"], 3)
    out["residual-v-status"] = verdict.decisive.status
    out["residual-v-a-status"] = verdict.checks[1].status
    out["residual-v-a"] = verdict.checks[1].text
    out["residual-v-a-z"] = report.z_text(verdict.checks[1].z)
    return out


def closed_form_numbers(*, alpha, closed, d, gamma) -> dict[str, str]:
    """Eq. (41), corrected, against the exact engine with the residual (``closed``): the step ratio per d
    ("unresolved" where not resolved), the residual coefficient g and the weights gamma and d gamma."""
    steps = closed.row("eq41-corrected", "step", closedforms.AR).cells
    return {
        "residual-h-step": report.listing(
            [report.pm(c.ratio, c.ratio_se) if c.resolved else "unresolved" for c in steps], str
        ),
        "residual-h-ds": report.listing([c.d for c in steps]),
        "residual-gtrue": report.num(theory.residual_coefficient(alpha, gamma, d), 3),
        "residual-gamma": report.num(gamma),
        "residual-dgamma": report.num(d * gamma),
    }


# -- what the residual costs ------------------------------------------------------------------------


@dataclass(frozen=True)
class Weakening:
    """How much the residual weakens the order in one layer (:func:`residual_weakening`): the
    recency probability without minus with the residual, its SE (the two runs' SEs combined as if
    independent), the z of the difference, and the share of the excess over 1/2 that the residual
    keeps, (RP_with - 1/2) / (RP_without - 1/2)."""

    layer: int
    difference: float
    se: float
    z: float
    kept: float


def residual_weakening(without: SimResult, with_residual: SimResult) -> list[Weakening]:
    """Layer by layer from 2 on, the drop of the recency probability that the residual causes.
    The runs share their seed, hence their input tokens: their errors are positively correlated,
    so the combined SE overstates the error of the difference (a conservative z)."""
    out = []
    for layer in range(2, without.config.layers + 1):
        (a, sa), (b, sb) = statistics.rp(without, layer), statistics.rp(with_residual, layer)
        se = math.hypot(sa, sb)
        out.append(
            Weakening(
                layer,
                a - b,
                se,
                report.zscore(a - b, se),
                (b - 0.5) / (a - 0.5) if a != 0.5 else math.nan,
            )
        )
    return out


# -- the rows of the page's tables -------------------------------------------------------------------


def settings_rows(settings) -> list[dict]:
    """One row per result of ``settings`` (SimResults, or statistics of companion.estimators): the model,
    alpha, the layers, the sequences, the estimator, Definition 1 of layer 2 (all of them one family) and
    the trend of S^(2) with its z."""
    return [
        {
            "model": conventions.variant_short(r.config),
            "α": report.num(r.config.alpha),
            "layers": report.count(r.config.layers),
            "sequences": report.count(r.config.samples),
            "estimator": "first-order CV" if not isinstance(r, SimResult) else "layer-1 CV",
            "Definition 1": statistics.definition1(r, 2, family=len(settings)),
            "trend of $S^{(2)}$": report.pm(*statistics.s2_order(r)[1:]),
            "$z$": report.z_text(report.zscore(*statistics.s2_order(r)[1:])),
        }
        for r in settings
    ]


def weakening_rows(without, with_residual) -> list[dict]:
    """Per layer, how much the residual weakens the recency probability (:func:`residual_weakening`):
    the difference with its z and the share of the excess over 1/2 kept."""
    return [
        {
            "layer": report.count(w.layer),
            "RP without − with": report.pm(w.difference, w.se),
            "$z$": report.z_text(w.z),
            "share of the excess over 0.5 kept": report.percent(w.kept),
        }
        for w in residual_weakening(without, with_residual)
    ]


def size_rows(*, d, sizes) -> list[dict]:
    """The sizes of chapter 5's argument per alpha (``sizes``: alpha -> (without, with residual)): the
    leak t, sqrt(d) t^2, sqrt(d) alpha (1 - alpha) t and the two trends of S^(2)."""
    return [
        {
            "α": report.num(a),
            "$t$": report.num(conventions.leak(a, d), 2),
            "$\\sqrt d\\,t^2$": report.num(math.sqrt(d) * conventions.leak(a, d) ** 2, 2),
            "$\\sqrt d\\,\\alpha(1-\\alpha)\\,t$": report.num(
                math.sqrt(d) * a * (1 - a) * conventions.leak(a, d), 2
            ),
            "trend, no residual": report.pm(*statistics.s2_order(r0)[1:]),
            f"trend, {conventions.variant_short(r1.config)}": report.pm(
                *statistics.s2_order(r1)[1:]
            ),
        }
        for a, (r0, r1) in sorted(sizes.items())
    ]


# -- figures -------------------------------------------------------------------------------------------


def residual_figure(*, ln0, ln_a, res_a, res0, n) -> None:
    """Figure ``residual-fig``. Left: the last row of the mean S^(2) of the anisotropic LayerNorm model
    without and with the residual; right: the recency probability of every layer of all four settings."""
    fig, (left, right) = plotting.subplots(1, 2, height_ratio=0.42)
    for res in (ln_a, res_a):
        plotting.row_profile(
            res.score_mean[1],
            res.score_sem[1],
            n,
            left,
            label=conventions.variant_short(res.config),
            **conventions.variant_style(res.config),
        )
    left.set_ylabel(f"mean $S^{{(2)}}_{{{n},j}}$")
    left.legend(loc="upper left")
    for res in (ln0, ln_a, res_a, res0):
        plotting.recency_by_layer(
            *statistics.rp_layers(res),
            right,
            label=conventions.setting_label(res.config),
            **conventions.variant_style(res.config),
        )
    right.set_ylim(0.45, None)
    right.legend(loc="upper left")
    plotting.glue_figure("residual-fig", fig)
