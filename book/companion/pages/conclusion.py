"""Chapter 7 (``book/conclusion.ipynb``): its numbers."""

from __future__ import annotations

from .. import conventions, position, report
from ..claims import not_relative_claim
from ..verdicts import setting_text


def contrast_numbers(*, layers, n, samples, stat, verdict) -> dict[str, str]:
    """Chapter 7's verdict on 'not relative': the within-row contrast D_n - D_5, its z, the setting and the
    sample sizes."""
    out = {}
    out["concl-verdict"] = verdict.word
    out["concl-value"] = verdict.value
    out["concl-value-z"] = report.z_text(verdict.decisive.z)
    out["concl-setting"] = report.Markdown(setting_text(stat.config))
    out["concl-fig-contrasts-data"] = report.download(
        "conclusion-contrasts", position.columns([stat])
    )
    out["concl-layers"] = report.count(layers)
    out["concl-samples"] = report.count(samples)
    out["concl-n"] = report.count(n)
    out["concl-level"] = report.percent(conventions.FAMILYWISE_LEVEL)
    out["concl-zc"] = report.num(verdict.numbers["z_threshold"], 3)
    zc = verdict.numbers["z_threshold"]
    out["concl-k-word"] = position.change_word(stat, "K", zc)
    out["concl-k-change"] = report.pm(*position.change(stat, "K"))
    out["concl-k-share"] = _share(stat)
    return out


def _share(stat, layer: int | None = None) -> str:
    """|K_n - K_5| as a share of |D_n - D_5| at ``layer`` (default the last), as a percentage."""
    (k, _), (dv, _) = position.change(stat, "K", layer), position.change(stat, "D", layer)
    return report.percent(abs(k / dv))


def position_numbers(*, alpha, long, long_n, long_samples, pos, short) -> dict[str, str]:
    """Chapter 7's position-or-distance section: the within-row contrasts at n and at the long length, their
    changes with z, the family-wise z and the verdict's words."""
    out = {}
    ln, res, none = (pos[c] for c in long)
    long_verdict = not_relative_claim(ln)
    family = position.family(pos.values())
    out["concl-long-verdict"] = long_verdict.word
    out["concl-long-n"] = report.count(long_n)
    out["concl-long-samples"] = report.count(long_samples)
    counts = [f"{report.count(c.samples)} ({conventions.variant_name(c)})" for c in short]
    out["concl-short-samples"] = report.listing(counts, fmt=str)
    out["concl-alpha"] = f"{alpha:g}"
    out["concl-pos-d5"] = report.pm(*position.value_at(ln, "D", 5))
    out["concl-pos-dlong"] = report.pm(*position.value_at(ln, "D", long_n))
    out["concl-pos-klong"] = report.pm(*position.value_at(ln, "K", long_n))
    k_change = position.change(ln, "K")
    out["concl-pos-kchange"] = report.pm(*k_change)
    out["concl-pos-kchange-z"] = report.z_text(report.zscore(*k_change))
    out["concl-pos-dchange"] = report.pm(*position.change(ln, "D"))
    out["concl-pos-kshare"] = _share(ln)
    out["concl-res-d5"] = report.pm(*position.value_at(res, "D", 5))
    out["concl-res-dlong"] = report.pm(*position.value_at(res, "D", long_n))
    out["concl-res-klong"] = report.pm(*position.value_at(res, "K", long_n))
    out["concl-none-d5"] = report.pm(*position.value_at(none, "D", 5))
    out["concl-none-dlong"] = report.pm(*position.value_at(none, "D", long_n))
    out["concl-none-klong"] = report.pm(*position.value_at(none, "K", long_n))
    out["concl-pos-family"] = report.count(family)
    out["concl-pos-zc"] = report.num(conventions.z_for(family), 3)
    position_data = report.download("conclusion-position", position.columns(pos.values()))
    out["concl-fig-position-data"] = position_data
    return out
