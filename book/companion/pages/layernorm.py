"""The numbers the prose of ``book/layernorm.ipynb`` cites and the rows of its tables: each function takes
what the page computed and returns glue key -> text, which the page glues, or a table's rows, which
the page shows (``report.table``); the ``*_figure`` functions draw and glue the page's larger figures.
Nothing here simulates."""
from __future__ import annotations

import math

import numpy as np
from recency_lib import theory

from .. import claims, plotting, report, theorem1


def proposition1_numbers(*, beyond, checkp1, d, first_pred, keys, last, n, none, p1, rise_d, samples_prop1,
                            vp1) -> dict[str, str]:
    """Chapter 3's Proposition 1: the figure's data, the verdict and its checks per d, the first step
    against its derived value and K_n; ``beyond`` is claims.prop1_beyond's records, ``d`` the hidden size of
    ``none`` (Figure 1's first row)."""
    out = {}
    by = {b.d: b for b in beyond}
    k_n = 2 * (sum(1 / k for k in range(1, n + 1)) + 1 / n - 2) / ((n - 1) * (n - 2))
    out["layernorm-samples-prop1"] = report.count(samples_prop1)
    out["layernorm-n"] = report.count(n)
    out["layernorm-rise-d"] = report.count(rise_d)
    out["layernorm-fig-prop1-data"] = report.download("proposition-1", report.curve_columns(
        {"row n, simulated": (keys, none.score_mean[1, last, :last], none.score_sem[1, last, :last]),
         "row n, Eq. (19) corrected": (keys, theory.prop1_score_corrected(n, keys, d), None),
         "row n, Eq. (19) printed": (keys, theory.prop1_score(n, keys, d), None),
         f"d {rise_d}: rise over key 1 / level, simulated": theorem1.row_rise(p1[rise_d]),
         f"d {rise_d}: rise over key 1 / level, derived": (*theorem1.derived_row_rise(n, rise_d), None)}, "j"))
    out["layernorm-none-sq"] = report.pm(none.sq_norm_mean[0, last], none.sq_norm_sem[0, last])
    out["layernorm-a-eq14"] = report.num(math.e / (math.e + n - 1), 3)
    out["layernorm-vp1"] = vp1.word
    out["layernorm-p1-zc"] = report.num(vp1.numbers["z_threshold"], 3)
    for d in (16, 64, 256):
        out[f"layernorm-p1-t{d}"] = checkp1[d].text
        out[f"layernorm-p1-z{d}"] = report.z_text(checkp1[d].z)
    out["layernorm-p1-first16"] = report.pm(by[16].first, by[16].first_se)
    out["layernorm-p1-first16-pred"] = report.num(first_pred[16], 3)
    out["layernorm-kn"] = report.num(k_n, 4)
    return out

def size_numbers(*, first, ln_points, n, need, none_points, samples_first_order, vc) -> dict[str, str]:
    """Chapter 3's size of Theorem 1's effect: the figure's data, the corrected Theorem 1's verdict and
    factors, and the first-order control variate at d = 64 and 128."""
    out = {}
    fo = {p.d: p for p in theorem1.first_order_points(first)}
    q2e = {d: theory.q_factor(d) ** 2 / math.e for d in (16, 64)}
    lead = {d: theory.theorem1_trend(d, n) / (math.e * math.sqrt(d) * math.exp(-2 * math.sqrt(d))) for d in (16, 64)}
    out["layernorm-fig-size-data"] = report.download("theorem-1-size", report.curve_columns(
        theorem1.size_columns(ln_points, none_points), "d"))
    out["layernorm-vc"] = vc.word
    out["layernorm-vc-value"] = vc.value
    out["layernorm-q16"] = report.num(q2e[16], 3)
    out["layernorm-q64"] = report.num(q2e[64], 3)
    out["layernorm-lead16"] = report.num(lead[16], 3)
    out["layernorm-lead64"] = report.num(lead[64], 3)
    out["layernorm-need-plain-128"] = report.num(need[128].plain, 2)
    out["layernorm-fo-samples"] = report.count(samples_first_order)
    out["layernorm-fo-128"] = report.pm(fo[128].trend, fo[128].se)
    out["layernorm-fo-z128"] = report.z_text(fo[128].z)
    out["layernorm-fo-cpu-128"] = report.duration(first[128].elapsed_seconds)
    out["layernorm-fo-64"] = report.pm(fo[64].trend, fo[64].se)
    return out

def crossover_numbers(*, checkp1, dstar, ln_points, n, none, none_points, p1, v1) -> dict[str, str]:
    """Chapter 3's crossover: d* and the smallest-step crossover, Proposition 1 against Theorem 1 at d = 64,
    the no-normalization primacy and the figure's data."""
    out = {}
    check1 = dict(zip(v1.numbers["ds"], v1.checks))
    cross_grid = np.geomspace(theorem1.FORM_MIN_D, max(p1), 80)
    out["layernorm-dstar"] = report.num(dstar, 4)
    out["layernorm-dstar-min"] = report.num(theorem1.smallest_step_crossover(n), 2)
    out["layernorm-p1-vs-t1"] = report.z_text(report.zdiff(checkp1[64].value, checkp1[64].se, check1[64].value,
                                                          check1[64].se))
    out["layernorm-none-rp3"] = report.pm(*claims.rp(none, 3))
    out["layernorm-none-rp4"] = report.pm(*claims.rp(none, 4))
    out["layernorm-none-dir4"] = claims.direction(none, 4)
    out["layernorm-fig-cross-data"] = report.download("theorem-1-crossover", report.curve_columns(
        {"LayerNorm, corrected Theorem 1": (cross_grid, theory.theorem1_trend(cross_grid, n), None),
         "no normalization, derived": (cross_grid, theory.proposition1_trend(cross_grid, n), None),
         "LayerNorm, simulated": ([p.d for p in ln_points], [p.trend for p in ln_points], [p.se for p in ln_points]),
         "no normalization, simulated": ([p.d for p in none_points], [p.trend for p in none_points],
                                         [p.se for p in none_points])}, "d"))
    return out


# -- the rows of the page's tables -------------------------------------------------------------------

def reach_rows(*, need, reach, th) -> list[dict]:
    """Theorem 1's reach at each d: the trend of S^(2) with its z (control variates) and plain z, the
    standard-error cut, the RP's z and the sequences a z of claims.SETTLE_Z needs († where derived)."""
    settle = report.num(claims.SETTLE_Z)
    return [{"$d$": report.count(r.d), "trend of $S^{(2)}$": report.pm(r.trend, r.trend_se), "$z$": report.z_text(r.z),
             "plain $z$": report.z_text(r.plain_z), "SE cut": report.num(r.vr_trend, 2),
             "RP $z$, control variates": report.z_text(report.zscore(*claims.rp_cv(th[r.d], 2), 0.5)),
             f"for $z = {settle}$": (report.num(need[r.d].cv, 2) if np.isfinite(need[r.d].cv) else "—")
             + (" †" if need[r.d].source == "derived" else "")} for r in reach]


def prop1_beyond_rows(*, beyond, first_pred, none_points) -> list[dict]:
    """Proposition 1 carried further, per d: the trend of S^(2), its ratio to the derived step and the
    first step over the level beside its derived value ``first_pred``."""
    return [{"$d$": report.count(b.d), "trend of $S^{(2)}$": report.pm(b.trend, b.trend_se), "$z$": report.z_text(b.z),
             "÷ derived": report.pm(*p.ratio(p.derived)), "first step ÷ level": report.pm(b.first, b.first_se),
             "derived": report.num(first_pred[b.d], 2)} for b, p in zip(beyond, none_points)]


def scale_rows(*, n, none) -> list[dict]:
    """The scales of Proposition 1's proof without normalization (``none``, its first row): the input's
    squared norm, A_nn of layer 1 and S^(2)_n1 under Eq. (14), Eqs. (15) and (19), corrected and simulated."""
    d, last = none.config.d, n - 1
    return [{"quantity": "$\\lVert x_{n}\\rVert^2$, input", "with Eq. (14)": report.num(np.sqrt(d)),
             "Eqs. (15), (19)": report.num(d), "corrected": "1",
             "simulated": report.pm(none.sq_norm_mean[0, last], none.sq_norm_sem[0, last])},
            {"quantity": "$A^{(1)}_{n,n}$", "with Eq. (14)": report.num(math.e / (math.e + n - 1)),
             "Eqs. (15), (19)": report.num(theory.prop1_attention(n, n, d)),
             "corrected": report.num(theory.prop1_attention_corrected(n, n, d)),
             "simulated": report.pm(none.attn_mean[0, last, last], none.attn_sem[0, last, last])},
            {"quantity": "$S^{(2)}_{n,1}$", "with Eq. (14)": "—", "Eqs. (15), (19)": report.num(theory.prop1_score(n, 1, d)),
             "corrected": report.num(theory.prop1_score_corrected(n, 1, d)),
             "simulated": report.pm(none.score_mean[1, last, 0], none.score_sem[1, last, 0])}]


def size_rows(ln_points) -> list[dict]:
    """The size of Theorem 1's effect per d and estimator: the trend of S^(2) with its z and its ratios to
    the corrected Theorem 1 and to Eq. (5)."""
    return [{"$d$": report.count(p.d), "estimator": p.estimator, "sequences": report.count(p.samples),
             "trend of $S^{(2)}$": report.pm(p.trend, p.se), "$z$": report.z_text(p.z),
             "÷ corrected Theorem 1": report.pm(*p.corrected_ratio), "÷ Eq. (5)": report.pm(*p.ratio(p.eq5))}
            for p in ln_points]


# -- figures -------------------------------------------------------------------------------------------

def prop1_figure(*, none, p1, n, keys, rise_d) -> None:
    """Figure ``layernorm-fig-prop1``. Left: the last row of the mean S^(2) without normalization
    (Figure 1's first row, d = 64) against Eq. (19) as printed and corrected; right: the row of the
    smallest d of Proposition 1's runs relative to its level (:func:`theorem1.rise_panel`)."""
    fig, (ax, right) = plotting.subplots(1, 2, height_ratio=0.45)
    plotting.row_profile(none.score_mean[1], none.score_sem[1], n, ax, label="simulated")
    plotting.closed_form(keys, theory.prop1_score_corrected(n, keys, none.config.d), ax, kind="corrected",
                         color="black", label="Eq. (19), corrected")
    plotting.closed_form(keys, theory.prop1_score(n, keys, none.config.d), ax, kind="printed",
                         color="black", label="Eq. (19), printed")
    ax.set_ylabel(f"mean $S^{{(2)}}_{{{n},j}}$")
    ax.set_title("$d = 64$")
    ax.legend(loc="center right")
    theorem1.rise_panel(p1[rise_d], right)
    right.set_title(f"$d = {rise_d}$, relative to the level")
    right.legend(loc="center right", bbox_to_anchor=(1.0, 0.35))
    plotting.glue_figure("layernorm-fig-prop1", fig)
