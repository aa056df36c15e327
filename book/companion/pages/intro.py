"""Chapter 1 (``book/intro.ipynb``): its numbers."""
from __future__ import annotations

from recency_lib import theory

from .. import closedforms, conventions, landing, report, statistics


def intro_numbers(*, configs, conv, conv_torch, d, layers, n, results, samples, th, thm1, tied,
                     torch_eps) -> dict[str, str]:
    """Chapter 1's numbers: the recency probabilities and squared norms of Figure 1's settings, the setting,
    and the float32 tie counts."""
    out = {}
    labels = [conventions.setting_label(c) for c in configs]
    out["intro-rp-data"] = report.download("intro-recency-by-layer", report.result_columns(results, labels, matrices=False))
    sq, sq_se = results[0].sq_norm_mean[1], results[0].sq_norm_sem[1]     # ||x_j^(1)||^2, no normalization
    out["intro-sq-first"] = report.pm(sq[0], sq_se[0])
    out["intro-sq-last"] = report.pm(sq[-1], sq_se[-1])
    out["intro-n"] = report.count(n)
    out["intro-d"] = report.count(d)
    out["intro-samples"] = report.count(samples)
    out["intro-a1-half"] = report.pm(conv["tie counts ½"][0][-1], conv["tie counts ½"][1][-1])
    out["intro-a1-strict"] = report.pm(conv["strict"][0][-1], conv["strict"][1][-1])
    out["intro-a1-f32"] = report.pm(conv["strict, float32"][0][-1], conv["strict, float32"][1][-1])
    out["intro-a1-f32-torch"] = report.pm(conv_torch["strict, float32"][0][-1], conv_torch["strict, float32"][1][-1])
    out["intro-eps"] = report.num(tied.eps, 1)
    out["intro-eps-torch"] = report.num(torch_eps.eps, 1)
    out["intro-layers"] = report.count(layers)
    for key, res in zip(("none", "ln0", "ln5", "res"), results):
        out[f"intro-dir-{key}"] = statistics.direction(res, layers, family=len(results))
    # Theorem 1 at the paper's d: the derived step, Eq. (5)'s, and the simulated one (the landing page's number)
    big = th[conventions.PAPER_D]
    check = landing.check_at(thm1, conventions.PAPER_D)
    out["intro-thm1-form"] = report.num(theory.theorem1_trend(conventions.PAPER_D, n), 2)
    out["intro-eq5-form"] = report.num(closedforms.eq5_trend(n, conventions.PAPER_D), 2)
    out["intro-thm1-sim"] = check.text
    out["intro-thm1-word"] = thm1.word
    out["intro-thm1-samples"] = report.count(big.config.samples)
    out["intro-thm1-plain-se"] = report.num(big.trend_sem[1], 2)
    out["intro-thm1-cv-se"] = report.num(big.trend_cv_sem[1], 2)
    out["intro-thm1-ratio"] = report.num(big.trend_sem[1] / theory.theorem1_trend(conventions.PAPER_D, n), 2)
    return out
