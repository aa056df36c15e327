"""Chapter 3 (``book/layernorm.ipynb``): its numbers, table rows and longer figures."""

import math

import numpy as np

from recency_lib import theory
from recency_lib.features import adjacent_index
from recency_lib.rounding import resolution

from .. import closedforms, plotting, report, significance, statistics, theorem1
from ..claims import THEOREM1_FORM_ACCURACY
from ..report import count, num, pm, z_text
from ..statistics import StepEstimate


def theorem1_numbers(*, th, reach, one_by_one, n, samples, zc1) -> dict[str, str]:
    """Layer-1 control variates (``th``: d -> SimResult; ``reach``: theorem1.theorem1_reach), the
    sequences of ``one_by_one`` (statistics.ordered_rows) that satisfy Definition 1, and Theorem 1's
    ``zc1``; keyed by d (``layernorm-up-16``) for every d given."""
    cost = theorem1.cost_per_sequence(th.values())
    grid, form_grid = theorem1.trend_grids(max(th))
    curves = {
        "control variates": theorem1.series(reach, lambda r: (r.trend, r.trend_se)),
        "plain": theorem1.series(reach, lambda r: (r.plain, r.plain_se)),
        "Eq. (5)": (grid, closedforms.eq5_trend(n, grid), None),
        "corrected Theorem 1": (form_grid, theory.theorem1_trend(form_grid, n), None),
    }
    ordered = [count(round(one_by_one.mean[l, 0] * one_by_one.samples)) for l in (1, 0)]
    d1 = one_by_one.config.d
    data = report.curve_columns(curves, "d")
    out = {
        "layernorm-samples": count(samples),
        "layernorm-settle-z": num(statistics.SETTLE_Z),
        "layernorm-m-off": count((n - 1) * (n - 2) // 2),
        "layernorm-m-all": count(significance.adjacent_pairs(n)),
        "layernorm-fig-trend-data": report.download("theorem-1-trend", data),
        "layernorm-dmax-resolved": report.listing([r.d for r in reach if r.resolved][-1:]),
        f"layernorm-sorted-{d1}": ordered[0],
        f"layernorm-sorted-{d1}-l1": ordered[1],
        "layernorm-accuracy": report.percent(THEOREM1_FORM_ACCURACY),
    }
    for d, res in th.items():
        tally = statistics.step_tally(res, 2, zc1)
        out[f"layernorm-samples-d{d}"] = count(res.config.samples)
        out[f"layernorm-up-{d}"] = count(tally.up)
        out[f"layernorm-s{d}-z"] = z_text(tally.smallest.z)
        out[f"layernorm-rpz-{d}"] = z_text(statistics.rp_z(res, 2))
        out[f"layernorm-step-se-{d}"] = num(statistics.typical_step_se(res, 2), 2)
        if d >= theorem1.FORM_MIN_D:  # every step resolved, the corrected Theorem 1's the effects
            need_all = closedforms.definition1_samples(res, zc1, theorem1=True)[0]
            out[f"layernorm-need-all-{d}"] = num(need_all, 2)
            out[f"layernorm-time-all-{d}"] = report.duration(need_all * cost)
    for r in reach:
        out[f"layernorm-vr-{r.d}"] = num(r.vr_trend, 2)
        out[f"layernorm-plain-z{r.d}"] = z_text(r.plain_z)
    return out


def first_order_numbers(*, first, v1, th, n) -> dict[str, str]:
    """Theorem 1's verdict ``v1`` on ``first`` (d -> first-order statistic): per d its steps, their
    SE and compute, the gain over ``th``'s layer-1 control variates; the d where float64 stops."""
    zc1 = v1.numbers["z_threshold"]
    words = {"holds": "holds", "violated": "is violated", "undecided": "is undecided"}
    ii, jj = adjacent_index(n)
    off = jj < ii
    out = {
        "layernorm-v1": v1.word,
        "layernorm-zc1": num(zc1, 3),
        "layernorm-fo-ds": report.listing(sorted(first)),
        "layernorm-fo-samples": count(next(iter(first.values())).samples),
    }
    for d, stat in first.items():
        est = StepEstimate.of(stat)
        zs = est.z()
        s, step_se = est.smallest(), float(np.median(est.sem[off]))
        out[f"layernorm-fo-up-{d}"] = count(int(np.sum(zs > zc1)))
        out[f"layernorm-fo-def1-{d}"] = words[est.decision(zc1).word]
        out[f"layernorm-fo-at-{d}"] = f"row {s.i}, key {s.j}"
        out[f"layernorm-fo-diag-z{d}"] = z_text(float(zs[~off].min()))
        out[f"layernorm-fo-step-se-{d}"] = num(step_se, 2)
        out[f"layernorm-fo-cpu-{d}"] = report.duration(stat.elapsed_seconds)
        if d in th:
            cv_var = statistics.typical_step_se(th[d], 2) ** 2 * th[d].config.samples
            gain = cv_var / (step_se**2 * stat.samples)
            out[f"layernorm-fo-gain-{d}"] = num(float(f"{gain:.2g}"), 2)  # 33108 -> "33000"
    grid = np.arange(64, 1025)
    below = [int(d) for d in grid if theory.theorem1_trend(d, n) < resolution(math.sqrt(d))]
    out["layernorm-round-d"] = count(below[0]) if below else "none"
    return out


def second_order_numbers(*, second, n) -> dict[str, str]:
    """The second-order coefficient (``second``: d -> estimators.second_order_steps): the least z
    of its steps, and per d its mean over q(d)^2."""
    out = {
        "layernorm-so-ds": report.listing(sorted(second)),
        "layernorm-so-dmax": count(max(second)),
        "layernorm-so-samples": count(next(iter(second.values())).samples),
    }
    zmin = []
    for d, stat in second.items():
        m, e = stat.mean[1], stat.sem[1]
        zmin.append(min(report.zscore(a, b) for a, b in zip(m[:-1], e[:-1])))
        q2 = float(theory.q_factor(d)) ** 2
        out[f"layernorm-so-q{d}"] = pm(m[-1] / q2, e[-1] / q2)
    out["layernorm-so-zmin"] = z_text(min(zmin))
    return out


def proposition1_numbers(
    *, controlled, first_pred, n, none, p1, rise_d, samples_prop1, vp1
) -> dict[str, str]:
    """Proposition 1: the figure's data, the verdict ``vp1`` and its checks, the first step of row
    n (``controlled``) against its derived value, and K_n."""
    d, last, keys = none.config.d, n - 1, np.arange(1, n)
    k_n = 2 * (sum(1 / k for k in range(1, n + 1)) + 1 / n - 2) / ((n - 1) * (n - 2))
    rise = f"d {rise_d}: rise over key 1 / level"
    curves = {
        "row n, simulated": (keys, none.score_mean[1, last, :last], none.score_sem[1, last, :last]),
        "row n, Eq. (19) corrected": (keys, theory.prop1_score_corrected(n, keys, d), None),
        "row n, Eq. (19) printed": (keys, theory.prop1_score(n, keys, d), None),
        f"{rise}, simulated": theorem1.row_rise(p1[rise_d]),
        f"{rise}, derived": (*theorem1.derived_row_rise(n, rise_d), None),
    }
    data = report.curve_columns(curves, "j")
    out = {
        "layernorm-samples-prop1": count(samples_prop1),
        "layernorm-n": count(n),
        "layernorm-rise-d": count(rise_d),
        "layernorm-fig-prop1-data": report.download("proposition-1", data),
        "layernorm-none-sq": pm(none.sq_norm_mean[0, last], none.sq_norm_sem[0, last]),
        "layernorm-a-eq14": num(math.e / (math.e + n - 1), 3),
        "layernorm-vp1": vp1.word,
        "layernorm-p1-zc": num(vp1.numbers["z_threshold"], 3),
        "layernorm-kn": num(k_n, 4),
    }
    for c in vp1.checks:
        out[f"layernorm-p1-s{c.d}"] = pm(c.value, c.se)
        out[f"layernorm-p1-sz{c.d}"] = z_text(c.z)
    for d, x in controlled.items():
        out[f"layernorm-p1-first{d}"] = pm(*theorem1.first_step(x))
        out[f"layernorm-p1-first{d}-pred"] = num(first_pred[d], 3)
    return out


def size_numbers(*, ln_points, n, none_points, vc) -> dict[str, str]:
    """The size of Theorem 1's effect: the figure's data, the verdict ``vc``, the form's factors."""
    columns = report.curve_columns(theorem1.size_columns(ln_points, none_points), "d")
    out = {
        "layernorm-fig-size-data": report.download("theorem-1-size", columns),
        "layernorm-vc": vc.word,
    }
    for d in (c.d for c in vc.checks):
        lead = math.e * math.sqrt(d) * math.exp(-2 * math.sqrt(d))
        out[f"layernorm-q{d}"] = num(theory.q_factor(d) ** 2 / math.e, 3)
        out[f"layernorm-lead{d}"] = num(theory.theorem1_trend(d, n) / lead, 3)
    return out


def crossover_numbers(*, controlled, dstar, first, ln_points, n, none, none_points) -> dict:
    """The crossover: d* for the mean and smallest step, the two trends against each other where
    both ran, the RP of every layer without normalization (``none``), the figure's data."""
    grid = np.geomspace(theorem1.FORM_MIN_D, max(p.d for p in none_points), 80)
    curves = {
        "LayerNorm, corrected Theorem 1": (grid, theory.theorem1_trend(grid, n), None),
        "no normalization, derived": (grid, theory.proposition1_trend(grid, n), None),
        "LayerNorm, simulated": theorem1.series(ln_points, lambda p: (p.trend, p.se)),
        "no normalization, simulated": theorem1.series(none_points, lambda p: (p.trend, p.se)),
    }
    data = report.curve_columns(curves, "d")
    out = {
        "layernorm-dstar": num(dstar, 4),
        "layernorm-dstar-min": num(theorem1.smallest_step_crossover(n), 2),
        "layernorm-fig-cross-data": report.download("theorem-1-crossover", data),
    }
    for d in controlled.keys() & first.keys():
        a, b = StepEstimate.of(controlled[d]), StepEstimate.of(first[d])
        z = report.zdiff(a.trend, a.trend_se, b.trend, b.trend_se)
        out[f"layernorm-p1-vs-t1-{d}"] = z_text(z)
    for layer in range(1, none.config.layers + 1):
        out[f"layernorm-none-rp{layer}"] = pm(*statistics.rp(none, layer))
        out[f"layernorm-none-dir{layer}"] = statistics.direction(none, layer)
    return out


def reach_rows(*, reach, th) -> list[dict]:
    """Theorem 1's reach per d (theorem1.Reach; † where the effect is the derived one)."""
    settle = num(statistics.SETTLE_Z)
    rows = []
    for r in reach:
        sequences = num(r.need_cv, 2) if np.isfinite(r.need_cv) else "—"
        rows.append(
            {
                "$d$": count(r.d),
                "trend of $S^{(2)}$": pm(r.trend, r.trend_se),
                "$z$": z_text(r.z),
                "plain $z$": z_text(r.plain_z),
                "SE cut": num(r.vr_trend, 2),
                "RP $z$, control variates": z_text(statistics.rp_z(th[r.d], 2)),
                f"for $z = {settle}$": sequences + (" †" if r.source == "derived" else ""),
            }
        )
    return rows


def prop1_beyond_rows(*, controlled, first_pred, none_points) -> list[dict]:
    """Proposition 1 carried further, per d: the trend and the first step (theorem1.first_step)."""
    return [
        {
            "$d$": count(p.d),
            "trend of $S^{(2)}$": pm(p.trend, p.se),
            "$z$": z_text(p.z),
            "÷ derived": pm(*p.ratio(p.derived)),
            "first step ÷ level": pm(*theorem1.first_step(controlled[p.d])),
            "derived": num(first_pred[p.d], 2),
        }
        for p in none_points
    ]


def scale_rows(*, n, none) -> list[dict]:
    """The scales of Proposition 1's proof (the input's squared norm, A_nn of layer 1, S^(2)_n1)
    under Eq. (14), Eqs. (15) and (19), corrected and simulated (``none``)."""
    d, last = none.config.d, n - 1
    columns = ("quantity", "with Eq. (14)", "Eqs. (15), (19)", "corrected", "simulated")
    attention = (theory.prop1_attention(n, n, d), theory.prop1_attention_corrected(n, n, d))
    score = (theory.prop1_score(n, 1, d), theory.prop1_score_corrected(n, 1, d))
    rows = [
        ("$\\lVert x_{n}\\rVert^2$, input", num(np.sqrt(d)), num(d), "1"),
        ("$A^{(1)}_{n,n}$", num(math.e / (math.e + n - 1)), *map(num, attention)),
        ("$S^{(2)}_{n,1}$", "—", *map(num, score)),
    ]
    simulated = [
        pm(none.sq_norm_mean[0, last], none.sq_norm_sem[0, last]),
        pm(none.attn_mean[0, last, last], none.attn_sem[0, last, last]),
        pm(none.score_mean[1, last, 0], none.score_sem[1, last, 0]),
    ]
    return [dict(zip(columns, (*row, sim))) for row, sim in zip(rows, simulated)]


def size_rows(ln_points) -> list[dict]:
    """The size of Theorem 1's effect per d: the trend over the corrected form and over Eq. (5)."""
    return [
        {
            "$d$": count(p.d),
            "sequences": count(p.samples),
            "trend of $S^{(2)}$": pm(p.trend, p.se),
            "$z$": z_text(p.z),
            "÷ corrected Theorem 1": pm(*p.corrected_ratio),
            "÷ Eq. (5)": pm(*p.ratio(p.eq5)),
        }
        for p in ln_points
    ]


def prop1_figure(*, none, p1, n, rise_d) -> None:
    """Figure ``layernorm-fig-prop1``. Left: the last row of the mean S^(2) without normalization
    (Figure 1's first row) against Eq. (19) as printed and corrected; right: the row at ``rise_d``
    relative to its level (:func:`theorem1.rise_panel`)."""
    fig, (ax, right) = plotting.subplots(1, 2, height_ratio=0.45)
    keys, d = np.arange(1, n), none.config.d
    plotting.row_profile(none.score_mean[1], none.score_sem[1], n, ax, label="simulated")
    for kind, form in (
        ("corrected", theory.prop1_score_corrected),
        ("printed", theory.prop1_score),
    ):
        label = f"Eq. (19), {kind}"
        plotting.closed_form(keys, form(n, keys, d), ax, kind=kind, color="black", label=label)
    ax.set(ylabel=f"mean $S^{{(2)}}_{{{n},j}}$", title="$d = 64$")
    ax.legend(loc="center right")
    theorem1.rise_panel(p1[rise_d], right)
    right.set_title(f"$d = {rise_d}$, relative to the level")
    right.legend(loc="center right", bbox_to_anchor=(1.0, 0.35))
    plotting.glue_figure("layernorm-fig-prop1", fig)
