"""The paper's claims and the book's verdict on each, one function per claim (checks of
:mod:`companion.verdicts`, most important first, one family); :func:`verdict_table` runs the
chapters' settings through the results cache."""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from recency_lib import theory
from recency_lib.result import SimResult
from recency_lib.rounding import is_exact

from . import conventions, report, settings, verdicts
from .closedforms import eq5_trend
from .statistics import FAR, StepEstimate, distance_contrasts, distance_profiles, h_rise, rp, rp_gap
from .verdicts import AGAINST, AS_CLAIMED, Check, Verdict, about, decide, setting_text

#: The stated accuracy of the corrected Theorem 1 (theory.theorem1_trend) for d >= 16, n <= 10.
THEOREM1_FORM_ACCURACY = 0.005


def _paper_d_first(ds, results: dict) -> list:
    """The d of ``ds`` that ``results`` holds (else all of its own), the paper's d first."""
    found = sorted((d for d in ds if d in results), key=lambda d: (d != conventions.PAPER_D, d))
    return found or sorted(results)


#: The order of LayerNorm's effect on isotropic tokens (the corrected Theorem 1:
#: √d e^{-2√d} q(d)²), said beside a step that decides a claim made for large d.
ISOTROPIC_ORDER = "second order in $e^{-\\sqrt d}$"


def _order_claim(claim: str, target, items, expected: int = +1, **numbers) -> Verdict:
    """Definition 1 on E S^(2) of each of ``items`` (results or statistics), one family; a step
    of LayerNorm on isotropic tokens that decides as claimed says its order (ISOTROPIC_ORDER)."""
    ests = [StepEstimate.of(x) for x in items]
    zc = conventions.z_for(len(ests) * verdicts.comparisons_of_order(ests[0].config.n))
    checks = [verdicts.order_check(est, zc, expected=expected) for est in ests]
    checks = [
        dataclasses.replace(c, text=f"{c.text}, {ISOTROPIC_ORDER}")
        if c.status == AS_CLAIMED and c.norm == "layernorm" and c.alpha == 0 and expected == 1
        else c
        for c in checks
    ]
    return decide(claim, checks, target, {"z_threshold": zc, **numbers})


def theorem1_claim(results: dict, ds=settings.THEOREM1_VERDICT_DS) -> Verdict:
    """Theorem 1 (LayerNorm, isotropic tokens: recency bias for d >> 1) at the d of ``ds``."""
    items = [results[d] for d in _paper_d_first(ds, results)]
    return _order_claim("Theorem 1", ("prf:ref", "thm-1"), items)


def proposition1_claim(results: dict, ds=settings.PROP1_DS) -> Verdict:
    """Proposition 1 (no normalization: no recency bias) at the d of ``ds``; a check against the
    claim gives its smallest step as a share of its row's level (the corrected Eq. (19)): the order
    beyond the law of large numbers at which the conclusion fails."""
    items = [results[d] for d in _paper_d_first(ds, results)]
    v = _order_claim("Proposition 1", ("prf:ref", "prop-1"), items, expected=0)
    checks = [_share_of_level(c, x) if c.status == AGAINST else c for c, x in zip(v.checks, items)]
    return decide(v.claim, checks, v.target, v.numbers)


def _share_of_level(check: Check, item) -> Check:
    """``check`` with its smallest step also as a share of the level of the row it sits in."""
    s, cfg = StepEstimate.of(item).smallest(), item.config
    level = float(theory.prop1_score_corrected(s.i, s.j - 1, cfg.d, cfg.alpha))
    share = report.pm(s.mean / level, s.se / level)
    text = f"{check.text}, {share} of its row's level: beyond the law of large numbers"
    return dataclasses.replace(check, text=text)


def proposition2_claim(isotropic, with_order: SimResult) -> Verdict:
    """Proposition 2 (the residual keeps the bias) at alpha = 0 (``isotropic``) and 0.5."""
    return _order_claim("Proposition 2", ("prf:ref", "prop-2"), [isotropic, with_order])


def proposition3_claim(results: dict) -> Verdict:
    """Proposition 3 (any alpha < 1: recency bias) at each alpha < 1, the smallest first."""
    alphas = sorted(a for a in results if a < 1.0)
    items = [results[a] for a in alphas]
    return _order_claim("Proposition 3", ("prf:ref", "prop-3"), items, alphas=alphas)


def _trend_claim(claim, target, results, ds, what, form, accuracy=0.0) -> Verdict:
    """The simulated trend of S^(2) at each d of ``ds`` over ``form(n, d)`` (± ``accuracy``)."""
    ds = _paper_d_first(ds, results)
    zc = conventions.z_for(len(ds))
    checks = []
    for d in ds:
        est = StepEstimate.of(results[d])
        p = form(est.config.n, d)
        se = math.hypot(est.trend_se, accuracy * p)
        setting = f"{setting_text(est.config, None)}, {est.estimator}"
        fields = dict(layer=2, **about(est.config))
        checks.append(verdicts.value_check(est.trend, se, p, zc, what, setting, **fields))
    return decide(claim, checks, target, {"z_threshold": zc})


def eq5_claim(results: dict, ds=settings.EQ5_DS) -> Verdict:
    """Eq. (5)'s mean step between earlier keys (closedforms.eq5_trend) against simulation."""
    what = "simulated ÷ Eq. (5), mean step of $S^{(2)}$"
    return _trend_claim("Eq. (5)", ("doc", "layernorm"), results, ds, what, eq5_trend)


def corrected_theorem1_claim(results: dict, ds=settings.EQ5_DS) -> Verdict:
    """The corrected Theorem 1 (theory.theorem1_trend) on :func:`eq5_claim`'s simulations."""
    what = "simulated ÷ corrected Theorem 1, mean step of $S^{(2)}$"
    form = lambda n, d: float(theory.theorem1_trend(d, n))  # noqa: E731
    target = ("prf:ref", "thm-1-corrected")
    accuracy = THEOREM1_FORM_ACCURACY
    return _trend_claim("Theorem 1, corrected", target, results, ds, what, form, accuracy)


def _rp_check(res: SimResult, layer: int, expected: int, zc: float, what: str, kind: str) -> Check:
    """The recency probability of 1-based ``layer`` against 1/2 (verdicts.direction_check)."""
    fields = dict(reference=0.5, kind=kind, layer=layer, **about(res))
    setting = setting_text(res, None)
    return verdicts.direction_check(*rp(res, layer), expected, zc, what, setting, **fields)


def _weakens(without: SimResult, with_: SimResult, layer: int, zc: float, what: str) -> Check:
    """The residual lowers the recency probability of 1-based ``layer``: RP without - with > 0."""
    gap, se = rp_gap(without, with_, layer)
    fields = dict(kind="residual weakens", layer=layer, **about(with_))
    return verdicts.direction_check(gap, se, +1, zc, what, setting_text(with_, None), **fields)


def figure1_claim(rows: list[SimResult]) -> Verdict:
    """Figure 1 as the paper reads it (Sec. 3), from settings.fig1_configs' results: rows rising
    from layer 2 at alpha = 0.5, no order in layer 1, flat then primacy without normalization, no
    visible order at alpha = 0, weaker with the residual."""
    none, iso, aniso, resid = rows
    L = aniso.config.layers
    later, deep = range(2, L + 1), range(3, L + 1)
    orders = len(later) * verdicts.comparisons_of_order(aniso.config.n)
    zc = conventions.z_for(orders + 4 + 1 + len(deep) + 2 * len(later))
    a5, g5 = f"{aniso.config.alpha:g}", f"{resid.config.gamma:g}"
    rise = "LayerNorm, α = {a}: the rows of $S^{{({l})}}$ rise"
    checks = [verdicts.order_check((aniso, l), zc, rise.format(a=a5, l=l)) for l in later]
    for r in rows:
        model = conventions.variant_short(r.config)
        what = f"{model}, α = {r.config.alpha:g}: no order in layer 1 (RP)"
        checks.append(_rp_check(r, 1, 0, zc, what, "no order"))
    what = "no normalization: the rows of $S^{(2)}$ look uniform off the diagonal"
    checks.append(verdicts.flat_check(none, 2, zc, what))
    for l in deep:
        what = f"no normalization: primacy in layer {l} (RP)"
        checks.append(_rp_check(none, l, -1, zc, what, "primacy"))
    for l in later:
        what = f"LayerNorm, α = 0: no visible order in layer {l}"
        checks.append(verdicts.flat_check(iso, l, zc, what))
    for l in later:
        what = f"the residual (γ = {g5}) weakens the order of layer {l} (RP without − with)"
        checks.append(_weakens(aniso, resid, l, zc, what))
    return decide("Figure 1", checks, ("doc", "empirical"), {"z_threshold": zc})


def _rise(h: np.ndarray) -> float:
    return float(h[-1] / h[0] - 1.0)


def _h_checks(results: dict[float, SimResult], gamma: float) -> tuple[list[Check], float, dict]:
    """Sec. 3's reading of h(j): its rise h(n)/h(1) - 1 exceeds the smallest alpha's; per alpha
    the simulated rise (value, SE), Eq. (41)'s and the corrected."""
    tab = {}
    for a, res in sorted(results.items()):
        cfg = res.config
        j = np.arange(1, cfg.n + 1)
        tab[a] = {
            "sim": h_rise(res),
            "printed": _rise(theory.h_eq41(j, a, gamma, cfg.d)),
            "corrected": _rise(theory.h_corrected(j, a, gamma, cfg.d, cfg.norm)),
        }
    ref, *pos = sorted(tab)
    zc = conventions.z_for(len(pos))
    r0, e0 = tab[ref]["sim"]
    checks = []
    for a in pos:
        (r, e), res = tab[a]["sim"], results[a]
        what = f"$h(j)$ rises faster at α = {a:g} than at α = {ref:g} (rise of $h$, difference)"
        setting, fields = setting_text(res, None), dict(kind="h faster", **about(res))
        gap, se = r - r0, math.hypot(e, e0)
        checks.append(verdicts.direction_check(gap, se, +1, zc, what, setting, **fields))
    return checks, zc, tab


def figure2_claim(results: dict[float, SimResult]) -> Verdict:
    """The paper's Figure 2: h(j) without the residual grows slowly at alpha = 0, fast above."""
    checks, zc, tab = _h_checks(results, 0.0)
    by_sim = sorted(tab, key=lambda a: tab[a]["sim"][0])
    same_order = by_sim == sorted(tab, key=lambda a: tab[a]["printed"])
    numbers = {"table": tab, "same_order": same_order, "z_threshold": zc}
    return decide("Figure 2", checks, ("doc", "empirical"), numbers)


def figure5_claim(results: dict[float, SimResult]) -> Verdict:
    """The paper's Figure 5 (h(j) with the residual, the runs' one weight): Figure 2's reading."""
    gamma = float(next(iter(results.values())).config.gamma)
    checks, zc, tab = _h_checks(results, gamma)
    return decide("Figure 5", checks, ("doc", "appendix_b"), {"table": tab, "z_threshold": zc})


def _grid_checks(results: dict[float, SimResult], zc: float) -> list[Check]:
    """Figures 3 and 4: recency in every layer from 2 on at every alpha > 0, no order in layer 1."""
    items = sorted(results.items())
    L = items[0][1].config.layers
    checks = [
        _rp_check(r, l, +1, zc, f"α = {a:g}: recency in layer {l} (RP)", "recency")
        for a, r in items
        if a > 0
        for l in range(2, L + 1)
    ]
    flat = "α = {:g}: no order in layer 1 (RP)"
    checks += [_rp_check(r, 1, 0, zc, flat.format(a), "no order") for a, r in items]
    return checks


def figure3_claim(results: dict[float, SimResult]) -> Verdict:
    """Figure 3 (no residual): recency from layer 2 on at alpha > 0, none in layer 1."""
    L = next(iter(results.values())).config.layers
    zc = conventions.z_for(len(results) * L)
    return decide("Figure 3", _grid_checks(results, zc), ("doc", "appendix_b"), {"z_threshold": zc})


def figure4_claim(results: dict[float, SimResult], without_residual: dict) -> Verdict:
    """Figure 3's checks with the residual, which lowers the last layer's RP at each alpha > 0."""
    L = next(iter(results.values())).config.layers
    common = [a for a in sorted(results) if a > 0 and a in without_residual]
    zc = conventions.z_for(len(results) * L + len(common))
    checks = _grid_checks(results, zc)
    for a in common:
        what = f"α = {a:g}: the residual weakens layer {L} (RP without − with)"
        checks.append(_weakens(without_residual[a], results[a], L, zc, what))
    return decide("Figure 4", checks, ("doc", "appendix_b"), {"z_threshold": zc})


def not_relative_claim(stat) -> Verdict:
    """ "The bias is not relative" (Sec. 4): D_n - D_{FAR+1} (distance_contrasts) of each layer
    from the last to 2, resolved from 0."""
    prof = distance_profiles(stat)
    cfg = stat.config
    layers = list(range(cfg.layers, 1, -1))
    zc = conventions.z_for(len(layers))
    setting = setting_text(cfg.replace(samples=stat.samples))
    checks = []
    for l in layers:
        v, e = (float(x[l - 1]) for x in prof["D_change"])
        what = f"$D_n - D_{{{FAR + 1}}}$ of layer {l}"
        checks.append(verdicts.nonzero_check(v, e, zc, what, setting, layer=l, **about(cfg)))
    numbers = {"z_threshold": zc, "profiles": prof}
    return decide("the bias is not relative", checks, ("doc", "conclusion"), numbers)


def lower_entries(res: SimResult, name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(mean, SE, noiseless) of the ``name`` ("score", "attn") entries j <= i: (layers, entries)."""
    lower = np.tri(res.config.n, dtype=bool)
    mean, se = (getattr(res, f"{name}_{k}")[:, lower] for k in ("mean", "sem"))
    return mean, se, np.vectorize(is_exact, otypes=[bool])(mean, se)


def engines_agree(res_a: SimResult, res_b: SimResult) -> Verdict:
    """Two simulations of one setting: every mean score and attention weight as the z of the
    difference, one family; noiseless entries (e.g. a normalized diagonal) by their largest gap."""
    zs, gaps = [], []
    for name in ("score", "attn"):
        (m1, s1, exact1), (m2, s2, exact2) = lower_entries(res_a, name), lower_entries(res_b, name)
        exact = exact1 & exact2
        zs.append((m1 - m2)[~exact] / np.hypot(s1, s2)[~exact])
        gaps.append(np.abs(m1 - m2)[exact])
    z, gap = np.concatenate(zs), np.concatenate(gaps)
    zc = conventions.z_for(max(1, z.size))
    worst = float(np.max(np.abs(z))) if z.size else 0.0
    numbers = {
        "count": int(z.size),
        "max_abs_z": worst,
        "rms_z": float(np.sqrt(np.mean(z**2))) if z.size else 0.0,
        "beyond": int(np.sum(np.abs(z) > zc)),
        "z_threshold": zc,
        "exact_count": int(gap.size),
        "exact_gap": float(gap.max()) if gap.size else 0.0,
    }
    status = AS_CLAIMED if numbers["beyond"] == 0 else AGAINST
    what, setting = "largest |z| of a difference", setting_text(res_a, None)
    text = report.num(worst, 2)
    check = Check(what, setting, worst, 1.0, worst, status, text, "agree", **about(res_a))
    return decide("engines agree", [check], ("doc", "preliminaries"), numbers)


def verdict_table(
    samples: int = conventions.PAPER_SAMPLES, seed: int = 0, *, cache=None, executor=None
):
    """Every claim's verdict in STATEMENTS' order, by the chapters' calls through the cache."""
    from companion import estimators
    from recency_lib.cache import cached_simulate_many, cached_statistic

    cfgs = settings.study_configs(samples, seed)
    flat = list(dict.fromkeys([*cfgs["fig1"], *cfgs["alpha0"].values(), *cfgs["alpha1"].values()]))
    got = dict(zip(flat, cached_simulate_many(flat, cache=cache, executor=executor)))
    fig1 = [got[c] for c in cfgs["fig1"]]
    a0 = {a: got[c] for a, c in cfgs["alpha0"].items()}
    a1 = {a: got[c] for a, c in cfgs["alpha1"].items()}

    def stats(key, statistic):
        return {d: cached_statistic(c, statistic(c), cache=cache) for d, c in cfgs[key].items()}

    first = stats("first_order", lambda c: estimators.first_order(c.d))
    first1 = stats("first_order_residual", lambda c: estimators.first_order(c.d, c.gamma))
    p1 = stats("prop1", lambda c: estimators.gram_controlled(c, cache=cache))
    relative = cached_statistic(cfgs["relative"], distance_contrasts, control_mean=0.0, cache=cache)
    p3 = {**{a: a0[a] for a in settings.PROP3_ALPHAS if a > 0}, 0.0: first[conventions.PAPER_D]}
    residual = {a: a1[a] for a in settings.FIG4_ALPHAS}
    return [
        theorem1_claim(first),
        proposition1_claim(p1),
        proposition2_claim(first1[conventions.PAPER_D], fig1[3]),
        proposition3_claim(p3),
        eq5_claim(first),
        figure1_claim(fig1),
        figure2_claim({a: a0[a] for a in conventions.H_ALPHAS}),
        figure3_claim({a: a0[a] for a in settings.FIG3_ALPHAS}),
        figure4_claim(residual, a0),
        figure5_claim(residual),
        not_relative_claim(relative),
        corrected_theorem1_claim(first),
    ]
