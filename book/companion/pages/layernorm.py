"""Chapter 3 (``book/layernorm.ipynb``): its numbers, table rows and longer figures."""

from __future__ import annotations

import math

import numpy as np

from recency_lib import theory
from recency_lib.metrics import adjacent_index, resolution

from .. import closedforms, plotting, report, significance, statistics, theorem1
from ..statistics import StepEstimate


def theorem1_numbers(*, th, reach, need, one_by_one, n, samples, zc1) -> dict[str, str]:
    """Chapter 3's layer-1 control variates: the runs (``th``: d -> SimResult of Theorem 1's setting),
    ``reach`` (theorem1.theorem1_reach), ``need`` (theorem1.needs), ``one_by_one`` (statistics.ordered_rows
    at one d), ``n``, the page's ``samples`` and Theorem 1's family-wise ``zc1``. The numbers of a hidden
    size are keyed by it (``layernorm-up-16``), for every d the inputs hold."""
    cost = theorem1.cost_per_sequence(th.values())
    grid, form_grid = theorem1.trend_grids(max(th))
    out = {
        "layernorm-samples": report.count(samples),
        "layernorm-settle-z": report.num(statistics.SETTLE_Z),
        "layernorm-m-off": report.count((n - 1) * (n - 2) // 2),
        "layernorm-m-all": report.count(significance.adjacent_pairs(n)),
        "layernorm-fig-trend-data": report.download(
            "theorem-1-trend",
            report.curve_columns(
                {
                    "control variates": (
                        [r.d for r in reach],
                        [r.trend for r in reach],
                        [r.trend_se for r in reach],
                    ),
                    "plain": (
                        [r.d for r in reach],
                        [r.plain for r in reach],
                        [r.plain_se for r in reach],
                    ),
                    "Eq. (5)": (grid, closedforms.eq5_trend(n, grid), None),
                    "corrected Theorem 1": (form_grid, theory.theorem1_trend(form_grid, n), None),
                },
                "d",
            ),
        ),
        "layernorm-dmax-resolved": report.listing(
            [r.d for r in reach if r.resolved][-1:], empty="none"
        ),
        "layernorm-cost": report.num(cost * 1e6, 2) + " µs",
        f"layernorm-sorted-{one_by_one.config.d}": report.count(
            round(one_by_one.mean[1, 0] * one_by_one.samples)
        ),
        f"layernorm-sorted-{one_by_one.config.d}-l1": report.count(
            round(one_by_one.mean[0, 0] * one_by_one.samples)
        ),
    }
    for d, res in th.items():
        tally = statistics.step_tally(res, 2, zc1)
        out[f"layernorm-samples-d{d}"] = report.count(res.config.samples)
        out[f"layernorm-up-{d}"] = report.count(tally.up)
        out[f"layernorm-s{d}-z"] = report.z_text(tally.smallest.z)
        out[f"layernorm-cpu-{d}"] = report.duration(res.elapsed_seconds)
        out[f"layernorm-rpz-{d}"] = report.z_text(report.zscore(*statistics.rp(res, 2), 0.5))
        out[f"layernorm-step-se-{d}"] = report.num(statistics.typical_step_se(res, 2), 2)
        need_all, step_min = theorem1.every_step_need(res, zc1)
        if math.isfinite(need_all):
            out[f"layernorm-step-min-{d}"] = report.num(step_min, 2)
            out[f"layernorm-need-all-{d}"] = report.num(need_all, 2)
            out[f"layernorm-time-all-{d}"] = report.duration(need_all * cost)
    for r in reach:
        out[f"layernorm-cv{r.d}"] = report.pm(r.trend, r.trend_se)
        out[f"layernorm-cv-z{r.d}"] = report.z_text(report.zscore(r.trend, r.trend_se))
        out[f"layernorm-vr-{r.d}"] = report.num(r.vr_trend, 2)
        out[f"layernorm-plain-z{r.d}"] = report.z_text(r.plain_z)
    for d, nd in need.items():
        if d >= theorem1.FORM_MIN_D:
            out[f"layernorm-derived-{d}"] = report.num(theory.theorem1_trend(d, n), 3)
        for est in ("cv", "plain"):
            count = getattr(nd, est)
            if math.isfinite(count):
                suffix = "" if est == "cv" else "-plain"
                out[f"layernorm-need{suffix}-{d}"] = report.num(count, 2)
                out[f"layernorm-time{suffix}-{d}"] = report.duration(count * cost)
    return out


def first_order_numbers(*, first, v1, th, n) -> dict[str, str]:
    """Chapter 3's verdict on Theorem 1 (``v1``, claims.theorem1_claim on ``first``: d -> the first-order
    control variate's statistic): per d, the steps resolved up at the claim's z, Definition 1's word, the
    least resolved diagonal step, the median SE of a step between earlier keys and the compute; at each d
    that ``th`` (layer-1 control variates) also ran, how many times fewer sequences the first-order
    estimator needs for the same SE of a step; where float64 stops resolving the steps (the corrected
    Theorem 1's step against recency_lib.metrics.resolution of scores of size sqrt d)."""
    zc1 = v1.numbers["z_threshold"]
    words = {"holds": "holds", "violated": "is violated", "undecided": "is undecided"}
    ii, jj = adjacent_index(n)
    out = {
        "layernorm-v1": v1.word,
        "layernorm-zc1": report.num(zc1, 3),
        "layernorm-fo-ds": report.listing(sorted(first)),
        "layernorm-fo-samples": report.count(next(iter(first.values())).samples),
    }
    for d, stat in first.items():
        est = StepEstimate.of(stat)
        zs = np.array([report.zscore(m, e) for m, e in zip(est.mean, est.sem)])
        off = jj < ii
        s = est.smallest()
        out[f"layernorm-fo-up-{d}"] = report.count(int(np.sum(zs > zc1)))
        out[f"layernorm-fo-def1-{d}"] = words[est.decision(zc1).word]
        out[f"layernorm-fo-at-{d}"] = f"row {s.i}, key {s.j}"
        out[f"layernorm-fo-diag-z{d}"] = report.z_text(float(zs[~off].min()))
        out[f"layernorm-fo-off-z{d}"] = report.z_text(float(zs[off].min()))
        out[f"layernorm-fo-step-se-{d}"] = report.num(float(np.median(est.sem[off])), 2)
        out[f"layernorm-fo-cpu-{d}"] = report.duration(stat.elapsed_seconds)
        if d in th:
            ref = th[d]
            cv_var = statistics.typical_step_se(ref, 2) ** 2 * ref.config.samples
            gain = cv_var / (float(np.median(est.sem[off])) ** 2 * stat.samples)
            out[f"layernorm-fo-gain-{d}"] = report.num(float(f"{gain:.2g}"), 2)  # 33108 -> "33000"
    grid = np.arange(64, 1025)
    below = [int(d) for d in grid if theory.theorem1_trend(d, n) < resolution(math.sqrt(d))]
    out["layernorm-round-d"] = report.count(below[0]) if below else "none"
    return out


def second_order_numbers(*, second, n) -> dict[str, str]:
    """Chapter 3's reach of the second-order coefficient (``second``: d -> statistics of
    companion.estimators.second_order_steps): per d the least z of its steps between earlier keys and its
    mean over q(d)^2 (the corrected Theorem 1's leading coefficient), the hidden sizes and sequences."""
    out = {
        "layernorm-so-ds": report.listing(sorted(second)),
        "layernorm-so-dmax": report.count(max(second)),
        "layernorm-so-samples": report.count(next(iter(second.values())).samples),
    }
    zmin = []
    for d, stat in second.items():
        m, e = stat.mean[1], stat.sem[1]
        z = min(report.zscore(a, b) for a, b in zip(m[:-1], e[:-1]))
        zmin.append(z)
        q2 = float(theory.q_factor(d)) ** 2
        out[f"layernorm-so-z{d}"] = report.z_text(z)
        out[f"layernorm-so-q{d}"] = report.pm(m[-1] / q2, e[-1] / q2)
    out["layernorm-so-zmin"] = report.z_text(min(zmin))
    return out


def proposition1_numbers(
    *, beyond, checkp1, d, first_pred, keys, last, n, none, p1, rise_d, samples_prop1, vp1
) -> dict[str, str]:
    """Chapter 3's Proposition 1: the figure's data, the verdict and its checks per d, the first step
    against its derived value and K_n; ``beyond`` is theorem1.prop1_beyond's records, ``d`` the hidden size of
    ``none`` (Figure 1's first row)."""
    out = {}
    k_n = 2 * (sum(1 / k for k in range(1, n + 1)) + 1 / n - 2) / ((n - 1) * (n - 2))
    out["layernorm-samples-prop1"] = report.count(samples_prop1)
    out["layernorm-n"] = report.count(n)
    out["layernorm-rise-d"] = report.count(rise_d)
    out["layernorm-fig-prop1-data"] = report.download(
        "proposition-1",
        report.curve_columns(
            {
                "row n, simulated": (
                    keys,
                    none.score_mean[1, last, :last],
                    none.score_sem[1, last, :last],
                ),
                "row n, Eq. (19) corrected": (keys, theory.prop1_score_corrected(n, keys, d), None),
                "row n, Eq. (19) printed": (keys, theory.prop1_score(n, keys, d), None),
                f"d {rise_d}: rise over key 1 / level, simulated": theorem1.row_rise(p1[rise_d]),
                f"d {rise_d}: rise over key 1 / level, derived": (
                    *theorem1.derived_row_rise(n, rise_d),
                    None,
                ),
            },
            "j",
        ),
    )
    out["layernorm-none-sq"] = report.pm(none.sq_norm_mean[0, last], none.sq_norm_sem[0, last])
    out["layernorm-a-eq14"] = report.num(math.e / (math.e + n - 1), 3)
    out["layernorm-vp1"] = vp1.word
    out["layernorm-p1-zc"] = report.num(vp1.numbers["z_threshold"], 3)
    for d, check in checkp1.items():
        out[f"layernorm-p1-s{d}"] = report.pm(check.value, check.se)
        out[f"layernorm-p1-sz{d}"] = report.z_text(check.z)
    for b in beyond:
        out[f"layernorm-p1-first{b.d}"] = report.pm(b.first, b.first_se)
        out[f"layernorm-p1-first{b.d}-pred"] = report.num(first_pred[b.d], 3)
    out["layernorm-kn"] = report.num(k_n, 4)
    return out


def size_numbers(*, ln_points, n, none_points, vc) -> dict[str, str]:
    """Chapter 3's size of Theorem 1's effect: the figure's data, the corrected Theorem 1's verdict and, at
    each d of its checks, the factors of the form."""
    out = {}
    out["layernorm-fig-size-data"] = report.download(
        "theorem-1-size", report.curve_columns(theorem1.size_columns(ln_points, none_points), "d")
    )
    out["layernorm-vc"] = vc.word
    for d in (c.d for c in vc.checks):
        out[f"layernorm-q{d}"] = report.num(theory.q_factor(d) ** 2 / math.e, 3)
        out[f"layernorm-lead{d}"] = report.num(
            theory.theorem1_trend(d, n) / (math.e * math.sqrt(d) * math.exp(-2 * math.sqrt(d))), 3
        )
    return out


def crossover_numbers(
    *, controlled, dstar, first, ln_points, n, none, none_points
) -> dict[str, str]:
    """Chapter 3's crossover: d* and the smallest-step crossover, the trend without normalization
    (``controlled``: d -> Gram-controlled statistic) against Theorem 1's (``first``: d -> first-order
    statistic) at each d both hold, the recency probability of every layer without normalization
    (``none``) and the figure's data."""
    out = {}
    cross_grid = np.geomspace(theorem1.FORM_MIN_D, max(p.d for p in none_points), 80)
    out["layernorm-dstar"] = report.num(dstar, 4)
    out["layernorm-dstar-min"] = report.num(theorem1.smallest_step_crossover(n), 2)
    for d in controlled.keys() & first.keys():
        a, b = StepEstimate.of(controlled[d]), StepEstimate.of(first[d])
        out[f"layernorm-p1-vs-t1-{d}"] = report.z_text(
            report.zdiff(a.trend, a.trend_se, b.trend, b.trend_se)
        )
    for layer in range(1, none.config.layers + 1):
        out[f"layernorm-none-rp{layer}"] = report.pm(*statistics.rp(none, layer))
        out[f"layernorm-none-dir{layer}"] = statistics.direction(none, layer)
    out["layernorm-fig-cross-data"] = report.download(
        "theorem-1-crossover",
        report.curve_columns(
            {
                "LayerNorm, corrected Theorem 1": (
                    cross_grid,
                    theory.theorem1_trend(cross_grid, n),
                    None,
                ),
                "no normalization, derived": (
                    cross_grid,
                    theory.proposition1_trend(cross_grid, n),
                    None,
                ),
                "LayerNorm, simulated": (
                    [p.d for p in ln_points],
                    [p.trend for p in ln_points],
                    [p.se for p in ln_points],
                ),
                "no normalization, simulated": (
                    [p.d for p in none_points],
                    [p.trend for p in none_points],
                    [p.se for p in none_points],
                ),
            },
            "d",
        ),
    )
    return out


# -- the rows of the page's tables -------------------------------------------------------------------


def reach_rows(*, need, reach, th) -> list[dict]:
    """Theorem 1's reach at each d: the trend of S^(2) with its z (control variates) and plain z, the
    standard-error cut, the RP's z and the sequences a z of statistics.SETTLE_Z needs († where derived)."""
    settle = report.num(statistics.SETTLE_Z)
    return [
        {
            "$d$": report.count(r.d),
            "trend of $S^{(2)}$": report.pm(r.trend, r.trend_se),
            "$z$": report.z_text(r.z),
            "plain $z$": report.z_text(r.plain_z),
            "SE cut": report.num(r.vr_trend, 2),
            "RP $z$, control variates": report.z_text(
                report.zscore(*statistics.rp(th[r.d], 2), 0.5)
            ),
            f"for $z = {settle}$": (
                report.num(need[r.d].cv, 2) if np.isfinite(need[r.d].cv) else "—"
            )
            + (" †" if need[r.d].source == "derived" else ""),
        }
        for r in reach
    ]


def prop1_beyond_rows(*, beyond, first_pred, none_points) -> list[dict]:
    """Proposition 1 carried further, per d: the trend of S^(2), its ratio to the derived step and the
    first step over the level beside its derived value ``first_pred``."""
    return [
        {
            "$d$": report.count(b.d),
            "trend of $S^{(2)}$": report.pm(b.trend, b.trend_se),
            "$z$": report.z_text(b.z),
            "÷ derived": report.pm(*p.ratio(p.derived)),
            "first step ÷ level": report.pm(b.first, b.first_se),
            "derived": report.num(first_pred[b.d], 2),
        }
        for b, p in zip(beyond, none_points)
    ]


def scale_rows(*, n, none) -> list[dict]:
    """The scales of Proposition 1's proof without normalization (``none``, its first row): the input's
    squared norm, A_nn of layer 1 and S^(2)_n1 under Eq. (14), Eqs. (15) and (19), corrected and simulated."""
    d, last = none.config.d, n - 1
    return [
        {
            "quantity": "$\\lVert x_{n}\\rVert^2$, input",
            "with Eq. (14)": report.num(np.sqrt(d)),
            "Eqs. (15), (19)": report.num(d),
            "corrected": "1",
            "simulated": report.pm(none.sq_norm_mean[0, last], none.sq_norm_sem[0, last]),
        },
        {
            "quantity": "$A^{(1)}_{n,n}$",
            "with Eq. (14)": report.num(math.e / (math.e + n - 1)),
            "Eqs. (15), (19)": report.num(theory.prop1_attention(n, n, d)),
            "corrected": report.num(theory.prop1_attention_corrected(n, n, d)),
            "simulated": report.pm(none.attn_mean[0, last, last], none.attn_sem[0, last, last]),
        },
        {
            "quantity": "$S^{(2)}_{n,1}$",
            "with Eq. (14)": "—",
            "Eqs. (15), (19)": report.num(theory.prop1_score(n, 1, d)),
            "corrected": report.num(theory.prop1_score_corrected(n, 1, d)),
            "simulated": report.pm(none.score_mean[1, last, 0], none.score_sem[1, last, 0]),
        },
    ]


def size_rows(ln_points) -> list[dict]:
    """The size of Theorem 1's effect per d (one estimator, the caption's): the trend of S^(2) with its z and
    its ratios to the corrected Theorem 1 and to Eq. (5)."""
    return [
        {
            "$d$": report.count(p.d),
            "sequences": report.count(p.samples),
            "trend of $S^{(2)}$": report.pm(p.trend, p.se),
            "$z$": report.z_text(p.z),
            "÷ corrected Theorem 1": report.pm(*p.corrected_ratio),
            "÷ Eq. (5)": report.pm(*p.ratio(p.eq5)),
        }
        for p in ln_points
    ]


# -- figures -------------------------------------------------------------------------------------------


def prop1_figure(*, none, p1, n, keys, rise_d) -> None:
    """Figure ``layernorm-fig-prop1``. Left: the last row of the mean S^(2) without normalization
    (Figure 1's first row, d = 64) against Eq. (19) as printed and corrected; right: the row of the
    smallest d of Proposition 1's runs relative to its level (:func:`theorem1.rise_panel`)."""
    fig, (ax, right) = plotting.subplots(1, 2, height_ratio=0.45)
    plotting.row_profile(none.score_mean[1], none.score_sem[1], n, ax, label="simulated")
    plotting.closed_form(
        keys,
        theory.prop1_score_corrected(n, keys, none.config.d),
        ax,
        kind="corrected",
        color="black",
        label="Eq. (19), corrected",
    )
    plotting.closed_form(
        keys,
        theory.prop1_score(n, keys, none.config.d),
        ax,
        kind="printed",
        color="black",
        label="Eq. (19), printed",
    )
    ax.set_ylabel(f"mean $S^{{(2)}}_{{{n},j}}$")
    ax.set_title("$d = 64$")
    ax.legend(loc="center right")
    theorem1.rise_panel(p1[rise_d], right)
    right.set_title(f"$d = {rise_d}$, relative to the level")
    right.legend(loc="center right", bbox_to_anchor=(1.0, 0.35))
    plotting.glue_figure("layernorm-fig-prop1", fig)
