"""Chapter 9 (``book/placements.ipynb``): where the norm sits. Its verdicts, numbers, tables and
figure, from results keyed (placement, norm, alpha, gamma, d)."""

import math

import numpy as np

from recency_lib import theory
from recency_lib.features import trend
from recency_lib.norms import NORMS
from recency_lib.placements import PLACEMENTS
from recency_lib.plot import heatmap_cmap
from recency_lib.rounding import resolution

from .. import conventions, plotting, report, verdicts
from ..report import count, num, pm
from ..statistics import StepEstimate, rp

LAYERS = (2, 3, 4)  # the layers whose order the chapter reports (layer 1 has none)


def _paper_first(key) -> tuple:
    """Checks in the order a reader weighs them: the paper's d, anisotropic tokens, no residual."""
    _, norm, alpha, gamma, d = key
    return (d != conventions.PAPER_D, norm != "layernorm", alpha == 0, gamma)


def claims(results: dict) -> dict[str, verdicts.Verdict]:
    """Per placement, Definition 1 on E S^(2) at every setting of ``results`` (both norms, both
    alphas, gammas and ds), one family: the book's rule with layer-1 control variates."""
    out = {}
    for where in [p for p in PLACEMENTS if any(key[0] == p for key in results)]:
        keys = sorted((k for k in results if k[0] == where), key=_paper_first)
        ests = [StepEstimate.of_result(results[k], 2) for k in keys]
        zc = conventions.z_for(len(ests) * verdicts.comparisons_of_order(ests[0].config.n))
        checks = [verdicts.order_check(e, zc) for e in ests]
        claim = f"Recency with {PLACEMENTS[where].label}"
        target = ("prf:ref", "conj-placements")
        out[where] = verdicts.decide(claim, checks, target, {"z_threshold": zc})
    return out


def verdict_rows(claims: dict) -> list[dict]:
    """The verdict table: per placement the word, the settings whose every step rises, and the
    deciding number."""
    return [
        {
            "placement": PLACEMENTS[where].label,
            "verdict": report.badge(v.word),
            "every step rises": f"{sum(c.status == verdicts.AS_CLAIMED for c in v.checks)} of "
            f"{len(v.checks)} settings",
            "deciding number": f"{v.value}<br><small>{v.measure}</small>",
        }
        for where, v in claims.items()
    ]


def rule_rows(placements) -> list[dict]:
    """Each placement's layer: what the scores and the values read, the next state, who uses it."""
    rows = []
    for where in placements:
        p = PLACEMENTS[where]
        v = "\\Norm(X)" if p.norm_values else "X"
        state = {
            "none": f"A{v} + \\gamma X",
            "sublayer": f"\\gamma X + \\Norm(A{v})",
            "sum": f"\\Norm(A{v} + \\gamma X)",
        }[p.output]
        rows.append(
            {
                "placement (used by)": f"{p.label}<br><small>{p.models}</small>",
                "scores from": "$\\Norm(X)$" if p.norm_scores else "$X$",
                "values": f"${v}$",
                "next state": f"${state}$",
            }
        )
    return rows


def detail_rows(results: dict) -> list[dict]:
    """Every setting: its RP and mean step (control variates) at layers 2-4."""
    rows = []
    for key in sorted(results, key=lambda k: (list(PLACEMENTS).index(k[0]), *_paper_first(k))):
        where, norm, alpha, gamma, d = key
        r = results[key]
        row = {
            "placement": PLACEMENTS[where].label,
            "norm": NORMS[norm].short,
            "α": num(alpha),
            "γ": num(gamma),
            "d": count(d),
        }
        for layer in LAYERS:
            row[f"RP, layer {layer}"] = report.nowrap(pm(*rp(r, layer)))
        for layer in LAYERS:
            t, te = r.trend_cv_mean[layer - 1], r.trend_cv_sem[layer - 1]
            row[f"mean step, layer {layer}"] = report.nowrap(pm(t, te))
        rows.append(row)
    return rows


def lln_trend(cfg, layer: int = 2) -> float:
    """The mean step of S^(layer) between earlier keys in the law-of-large-numbers recursion
    (:func:`recency_lib.theory.lln_limit`) of ``cfg``."""
    s = theory.lln_limit(
        cfg.alpha, cfg.gamma, cfg.d, cfg.n, layer, norm=cfg.norm, placement=cfg.placement
    )["scores"][layer - 1]
    return float(trend(s))


def raw_limit(n: int, gamma: float) -> float:
    """The d -> infinity limit of the mean step of S^(2) / sqrt(d) where the raw isotropic tokens
    reach the scores and a norm follows the sum (post-norm): S_ij / sqrt(d) -> cos(x_i, x_j) of
    x_i = m_i + gamma e_i, m_i the mean of the first i tokens (uniform attention), whose
    <x_i, x_j> = (1 + gamma) / i for j < i and ||x_i||^2 = (1 + 2 gamma) / i + gamma^2."""
    i = np.arange(1, n + 1)
    sq = (1 + 2 * gamma) / i + gamma**2  # (n,)
    cos = ((1 + gamma) / i)[:, None] / np.sqrt(np.outer(sq, sq))  # (n, n), row i's keys j < i
    return float(trend(cos))


def lln_rows(results: dict, alpha: float, norm: str = "layernorm") -> list[dict]:
    """Per placement, simulated / law-of-large-numbers mean step of S^(2) at ``alpha``, a column per
    residual weight and d ("—" where the recursion's step is below float64's resolution)."""
    rows = {}
    order = sorted(results, key=lambda k: (list(PLACEMENTS).index(k[0]), k[3], k[4]))
    for where, nm, a, gamma, d in order:
        if nm != norm or a != alpha:
            continue
        r = results[(where, nm, a, gamma, d)]
        lln = lln_trend(r.config)
        t, te = float(r.trend_cv_mean[1]), float(r.trend_cv_sem[1])
        row = rows.setdefault(where, {"placement": PLACEMENTS[where].label})
        ratio = pm(t / lln, te / abs(lln)) if abs(lln) > resolution(math.sqrt(d)) else "—"
        row[f"γ = {gamma:g}, d = {d}"] = report.nowrap(ratio)
    return list(rows.values())


def coincide(results: dict) -> dict[str, float]:
    """Without the residual, the sandwich is pre-norm and the output norm post-norm (a norm of a
    normalized token is the token): per such placement in ``results``, the largest difference of
    its mean scores from its twin's over all layers, in units of the scores' size (rounding)."""
    out = {}
    for a, b in (("sandwich", "pre"), ("output", "post")):
        pairs = [(k, (b, *k[1:])) for k in results if k[0] == a and k[3] == 0.0]
        diffs = [
            np.nanmax(np.abs(results[ka].score_mean - results[kb].score_mean))
            / np.nanmax(np.abs(results[kb].score_mean))
            for ka, kb in pairs
            if kb in results
        ]
        if diffs:
            out[a] = float(max(diffs))
    return out


#: What the prose quotes of a placement this run left out.
NOT_RUN = "not run here"


def numbers(*, results: dict, claims: dict, samples: int, alpha, gamma, d) -> dict[str, str]:
    """The page's glued numbers: settings, verdict words, the raw scores' size against pre-norm's,
    post-norm's limit, the coinciding placements (:data:`NOT_RUN` where a placement is left out)."""
    first = next(iter(claims.values()))
    out = {
        "placements-samples": count(samples),
        "placements-alpha": num(alpha),
        "placements-gamma": num(gamma),
        "placements-d": count(d),
        "placements-paper-d": count(conventions.PAPER_D),
        "placements-level": report.percent(conventions.FAMILYWISE_LEVEL),
        "placements-settings": count(len(first.checks)),
        "placements-zc": num(first.numbers["z_threshold"], 3),
        "placements-checks": count(sum(len(v.checks) for v in claims.values())),
        "placements-against": count(
            sum(c.status == verdicts.AGAINST for v in claims.values() for c in v.checks)
        ),
        "placements-limit": num(raw_limit(conventions.PAPER_N, 0.0), 4),
    }
    shown = figure_keys(results, conventions.PAPER_D)
    labels = [conventions.setting_label(results[k].config) for k in shown]
    out["placements-fig-data"] = report.download(
        "placements", report.result_columns([results[k] for k in shown], labels)
    )
    step = {}
    for where in ("pre", "post"):
        r = results.get((where, "layernorm", float(alpha), 0.0, conventions.PAPER_D))
        step[where] = None if r is None else (r.trend_cv_mean[1], r.trend_cv_sem[1])
        out[f"placements-step-{where}"] = NOT_RUN if r is None else pm(*step[where])
    both = step["pre"] and step["post"]
    out["placements-ratio"] = num(step["post"][0] / step["pre"][0], 2) if both else NOT_RUN
    for name, dd in (("64", conventions.PAPER_D), ("big", int(d))):
        r = results.get(("post", "layernorm", 0.0, 0.0, dd))
        scale = math.sqrt(dd) * raw_limit(conventions.PAPER_N, 0.0)
        ratio = None if r is None else pm(r.trend_cv_mean[1] / scale, r.trend_cv_sem[1] / scale)
        out[f"placements-limit-ratio-{name}"] = ratio or NOT_RUN
    same = coincide(results)
    for where in ("sandwich", "output"):
        out[f"placements-same-{where}"] = num(same[where], 2) if where in same else NOT_RUN
    return out


def figure_keys(results: dict, d: int, norm: str = "layernorm") -> list:
    """The keys of :func:`rp_figure`'s settings, placements in the registry's order."""
    keys = [k for k in results if k[1] == norm and k[4] == d]
    return sorted(keys, key=lambda k: (list(PLACEMENTS).index(k[0]), k[2], k[3]))


def rp_figure(results: dict, *, d: int, norm: str = "layernorm") -> None:
    """Placements x layers, the recency probability of each layer on one colour scale (1/2: no
    order, 1: every later key scores higher), one panel per (alpha, gamma) at hidden size ``d``."""
    keys = figure_keys(results, d, norm)
    places = list(dict.fromkeys(k[0] for k in keys))
    settings = sorted({(k[2], k[3]) for k in keys})
    fig, axes = plotting.panels(len(settings), max_cols=2, panel_ratio=0.75 * len(places) / 4)
    layers = np.arange(1, results[keys[0]].config.layers + 1)
    for ax, (alpha, gamma) in zip(axes, settings):
        grid = np.array(
            [[rp(results[(w, norm, alpha, gamma, d)], l)[0] for l in layers] for w in places]
        )
        mesh = ax.pcolormesh(grid, cmap=heatmap_cmap(), vmin=0.5, vmax=1.0)
        for (row, col), value in np.ndenumerate(grid):
            ink = conventions.ink_on(mesh.cmap(mesh.norm(value)))
            at = dict(ha="center", va="center", fontsize=conventions.SMALL_PT, color=ink)
            ax.text(col + 0.5, row + 0.5, f"{value:.2f}", **at)
        ax.set_xticks(layers - 0.5, [str(l) for l in layers])
        ax.set_yticks(np.arange(len(places)) + 0.5, [PLACEMENTS[w].label for w in places])
        ax.invert_yaxis()
        ax.tick_params(length=0)
        ax.spines[:].set_visible(False)
        ax.set_xlabel("layer")
        ax.set_title(f"{conventions.alpha_label(alpha)}, γ = {gamma:g}")
    for ax in axes[1::2]:
        ax.set_yticklabels([])
    bar = plotting._colourbar(mesh, axes[-1], axes=axes)  # the book's slim bar under the panels
    bar.set_label("recency probability", fontsize=conventions.SMALL_PT)
    plotting.glue_figure("placements-fig", fig)
