"""The numbers the prose of ``book/input_distribution.ipynb`` cites: each function takes what the page
computed and returns glue key -> text, which the page glues. Nothing here simulates."""
from __future__ import annotations

from recency_lib import theory

from .. import claims, report


def proposition3_numbers(*, alphas, by, d, gamma, n, p3, ratio, samples, samples_isotropic,
                            zc) -> dict[str, str]:
    """Chapter 4's Proposition 3 and Theorem 1 against alpha: the sample sizes, the verdicts, the smallest
    alpha resolved and the figure's data."""
    out = {}
    amin = min(alphas)
    out["inputdist-samples"] = report.count(samples)
    out["inputdist-samples-iso"] = report.count(samples_isotropic)
    out["inputdist-fig-alpha-data"] = report.download("proposition-3", report.curve_columns(
        {**{f"trend, gamma = {g:g}": claims.trends(r) for g, r in by.items()},
         **{f"RP, gamma = {g:g}": claims.rps(r) for g, r in by.items()}}, "alpha"))
    for g, key in ((0.0, "g0"), (gamma, "res")):
        out[f"inputdist-holds-{key}"] = report.listing([a for a in sorted(by[g]) if
                                                       by[g][a].definition1_at(zc)[1] == "holds"])
        out[f"inputdist-t0-{key}"] = report.pm(*claims.s2_order(by[g][0.0])[1:])
        out[f"inputdist-z0-{key}"] = report.z_text(report.zscore(*claims.s2_order(by[g][0.0])[1:]))
        out[f"inputdist-r0-{key}"] = ratio[g][0.0]
    out["inputdist-p3-word"] = p3[0.0].word
    out["inputdist-p3-value"] = p3[0.0].value
    out["inputdist-p3-zc"] = report.num(zc, 3)
    out["inputdist-thm1c"] = report.pm(claims.s2_order(by[0.0][0.0])[1] / theory.theorem1_trend(d, n),
                                      claims.s2_order(by[0.0][0.0])[2] / theory.theorem1_trend(d, n))
    out["inputdist-amin"] = f"{amin:g}"
    out["inputdist-tmin-g0"] = report.pm(*claims.s2_order(by[0.0][amin])[1:])
    return out
