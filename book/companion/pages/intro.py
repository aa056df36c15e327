"""Chapter 1 (``book/intro.ipynb``): its numbers."""

from __future__ import annotations

from recency_lib import theory

from .. import closedforms, conventions, report, statistics


def intro_numbers(
    *, configs, conv, conv_torch, d, layers, n, results, samples, thm1, tied, torch_eps
) -> dict[str, str]:
    """Chapter 1's numbers: the recency probabilities and squared norms of Figure 1's settings, the setting,
    and the float32 tie counts."""
    out = {}
    labels = [conventions.setting_label(c) for c in configs]
    out["intro-rp-data"] = report.download(
        "intro-recency-by-layer", report.result_columns(results, labels, matrices=False)
    )
    sq, sq_se = (
        results[0].sq_norm_mean[1],
        results[0].sq_norm_sem[1],
    )  # ||x_j^(1)||^2, no normalization
    out["intro-sq-first"] = report.pm(sq[0], sq_se[0])
    out["intro-sq-last"] = report.pm(sq[-1], sq_se[-1])
    out["intro-n"] = report.count(n)
    out["intro-d"] = report.count(d)
    out["intro-samples"] = report.count(samples)
    out["intro-a1-half"] = report.pm(conv["tie counts ½"][0][-1], conv["tie counts ½"][1][-1])
    out["intro-a1-strict"] = report.pm(conv["strict"][0][-1], conv["strict"][1][-1])
    out["intro-a1-f32"] = report.pm(conv["strict, float32"][0][-1], conv["strict, float32"][1][-1])
    out["intro-a1-f32-torch"] = report.pm(
        conv_torch["strict, float32"][0][-1], conv_torch["strict, float32"][1][-1]
    )
    out["intro-eps"] = report.num(tied.eps, 1)
    out["intro-eps-torch"] = report.num(torch_eps.eps, 1)
    out["intro-layers"] = report.count(layers)
    for key, res in zip(("none", "ln0", "ln5", "res"), results):
        out[f"intro-dir-{key}"] = statistics.direction(res, layers, family=len(results))
    # Theorem 1 at the paper's d: the derived step, Eq. (5)'s, the verdict (the landing page's) and what plain
    # averaging of the figure's LayerNorm run at alpha = 0 leaves of the mean step
    iso = results[1]
    form = theory.theorem1_trend(iso.config.d, n)
    out["intro-thm1-form"] = report.num(form, 2)
    out["intro-eq5-form"] = report.num(closedforms.eq5_trend(n, iso.config.d), 2)
    out["intro-thm1-word"] = thm1.word
    out["intro-thm1-plain-se"] = report.num(iso.trend_sem[1], 2)
    out["intro-thm1-ratio"] = report.num(iso.trend_sem[1] / form, 2)
    return out


def order_numbers(*, iso, changes) -> dict[str, str]:
    """Why LayerNorm's column barely moves at alpha = 0 (``iso``: Figure 1's second row; ``changes``:
    statistics.order_changes on its setting): the plain recency probability of every layer, the share of
    comparisons that differ from layer 1's in layer 2 and in the last layer, and how much smaller the
    control-variate SE of the last layer is than the plain one."""
    L = iso.config.layers
    plain = [
        report.pm(iso.recency_probability[l], iso.recency_probability_sem[l]) for l in range(L)
    ]
    _, se_cv = statistics.rp(iso, L)
    return {
        "intro-ln0-plain": report.listing(plain, str),
        "intro-flip-2": report.percent(float(changes.mean[1, 0])),
        "intro-flip-L": report.percent(float(changes.mean[L - 1, 0])),
        "intro-flip-samples": report.count(changes.samples),
        "intro-leak": report.num(conventions.leak(iso.config.alpha, iso.config.d), 2),
        "intro-cv-cut": report.num(iso.recency_probability_sem[L - 1] / se_cv, 2),
    }
