"""Chapter 1 (``book/intro.ipynb``): its numbers."""

from recency_lib import theory

from .. import closedforms, conventions, report, statistics
from ..report import count, num, pm


def intro_numbers(*, results, conv, conv_torch, thm1, tied, torch_eps) -> dict[str, str]:
    """Figure 1's settings (``results``): the data, the squared norms without normalization, the
    orders; the tie conventions at alpha = 1 (``conv``, ``conv_torch``); Theorem 1 at the paper's
    d against plain averaging's SE."""
    labels = [conventions.setting_label(r.config) for r in results]
    iso, cfg = results[1], results[0].config
    sq, sq_se = results[0].sq_norm_mean[1], results[0].sq_norm_sem[1]  # ||x_j^(1)||^2, no norm
    form = theory.theorem1_trend(iso.config.d, cfg.n)
    data = report.result_columns(results, labels, matrices=False)
    out = {
        "intro-rp-data": report.download("intro-recency-by-layer", data),
        "intro-sq-first": pm(sq[0], sq_se[0]),
        "intro-sq-last": pm(sq[-1], sq_se[-1]),
        "intro-n": count(cfg.n),
        "intro-d": count(cfg.d),
        "intro-samples": count(cfg.samples),
        "intro-eps": num(tied.eps, 1),
        "intro-eps-torch": num(torch_eps.eps, 1),
        "intro-layers": count(cfg.layers),
        "intro-thm1-form": num(form, 2),
        "intro-eq5-form": num(closedforms.eq5_trend(cfg.n, iso.config.d), 2),
        "intro-thm1-word": thm1.word,
        "intro-thm1-plain-se": num(iso.trend_sem[1], 2),
        "intro-thm1-ratio": num(iso.trend_sem[1] / form, 2),
    }
    ties = {"half": (conv, "tie counts ½"), "strict": (conv, "strict")}
    ties |= {"f32": (conv, "strict, float32"), "f32-torch": (conv_torch, "strict, float32")}
    for key, (c, way) in ties.items():
        out[f"intro-a1-{key}"] = pm(c[way][0][-1], c[way][1][-1])
    for key, res in zip(("none", "ln0", "ln5", "res"), results):
        out[f"intro-dir-{key}"] = statistics.direction(res, cfg.layers, family=len(results))
    return out


def order_numbers(*, iso, changes) -> dict[str, str]:
    """Why LayerNorm's column barely moves at alpha = 0 (``iso``): the plain RP per layer, the
    comparisons that differ from layer 1's (``changes``), the control variates' cut of the SE."""
    L = iso.config.layers
    plain = [pm(iso.recency_probability[l], iso.recency_probability_sem[l]) for l in range(L)]
    return {
        "intro-ln0-plain": report.listing(plain, str),
        "intro-flip-2": report.percent(float(changes.mean[1, 0])),
        "intro-flip-L": report.percent(float(changes.mean[L - 1, 0])),
        "intro-flip-samples": count(changes.samples),
        "intro-leak": num(conventions.leak(iso.config.alpha, iso.config.d), 2),
        "intro-cv-cut": num(iso.recency_probability_sem[L - 1] / statistics.rp(iso, L)[1], 2),
    }
