"""The numbers the prose of ``book/residual.ipynb`` cites: each function takes what the page
computed and returns glue key -> text, which the page glues. Nothing here simulates."""
from __future__ import annotations

from .. import claims, conventions, report


def residual_numbers(*, alpha, big, gamma, ln0, ln_a, n, res0, res_a, samples, samples_isotropic,
                        verdict) -> dict[str, str]:
    """Chapter 5's numbers: the settings and sample sizes, Definition 1 and the trends of the residual
    model, and the figure's data."""
    out = {}
    last = n - 1
    out["residual-samples"] = report.count(samples)
    out["residual-n"] = report.count(n)
    out["residual-alpha"] = report.num(alpha)
    out["residual-samples-iso"] = report.count(samples_isotropic)
    out["residual-settle-z"] = report.num(claims.SETTLE_Z)
    out["residual-fig-data"] = report.download("proposition-2", report.result_columns(
        [ln0, ln_a, res_a, res0], [conventions.setting_label(r.config) for r in (ln0, ln_a, res_a, res0)]))
    for key, res in (("a5g0", ln_a), ("a5g1", res_a)):
        out[f"residual-def1-{key}"] = claims.definition1(res, 2, family=2)
        out[f"residual-rp-{key}"] = report.pm(*claims.rp(res, 2))
        out[f"residual-s-{key}"] = report.pm(res.score_mean[1, last, 0], res.score_sem[1, last, 0])
        out[f"residual-hrise-{key}"] = report.pm(*claims.h_rise(res))
    for key, res in (("iso0", big[0.0]), ("iso1", big[gamma])):
        out[f"residual-t-{key}"] = report.pm(*claims.s2_order(res)[1:])
        out[f"residual-z-{key}"] = report.z_text(report.zscore(*claims.s2_order(res)[1:]))
    out["residual-def1-iso1"] = claims.definition1(big[gamma], 2, family=2)
    out["residual-plainz-iso1"] = report.z_text(report.zscore(big[gamma].trend_mean[1], big[gamma].trend_sem[1]))
    out["residual-need-plain"] = report.num(claims.sequences_needed(big[gamma].trend_sem[1], samples_isotropic,
                                                                    big[gamma].trend_cv_mean[1]), 2)
    out["residual-v"] = verdict.word
    out["residual-v-value"] = verdict.value
    out["residual-v-z"] = report.z_text(verdict.decisive.z)
    out["residual-v-zc"] = report.num(verdict.numbers["z_threshold"], 3)
    out["residual-v-status"] = verdict.decisive.status
    out["residual-v-a-status"] = verdict.checks[1].status
    out["residual-v-a"] = verdict.checks[1].text
    out["residual-v-a-z"] = report.z_text(verdict.checks[1].z)
    return out
