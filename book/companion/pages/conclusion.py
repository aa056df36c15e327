"""Chapter 7 (``book/conclusion.ipynb``): its numbers."""

from .. import conventions, position, report
from ..claims import not_relative_claim
from ..report import count, num, pm
from ..verdicts import setting_text


def _share(stat) -> str:
    """|K_n - K_5| as a percentage of |D_n - D_5| in the last layer."""
    (k, _), (dv, _) = position.change(stat, "K"), position.change(stat, "D")
    return report.percent(abs(k / dv))


def contrast_numbers(*, stat, verdict) -> dict[str, str]:
    """The verdict on "not relative" (``verdict`` on ``stat``), its setting, and K beside D."""
    cfg, zc = stat.config, verdict.numbers["z_threshold"]
    data = position.columns([stat])
    return {
        "concl-verdict": verdict.word,
        "concl-value": verdict.value,
        "concl-value-z": report.z_text(verdict.decisive.z),
        "concl-setting": report.Markdown(setting_text(cfg)),
        "concl-fig-contrasts-data": report.download("conclusion-contrasts", data),
        "concl-layers": count(cfg.layers),
        "concl-samples": count(cfg.samples),
        "concl-n": count(cfg.n),
        "concl-level": report.percent(conventions.FAMILYWISE_LEVEL),
        "concl-zc": num(zc, 3),
        "concl-k-word": position.change_word(stat, "K", zc),
        "concl-k-change": pm(*position.change(stat, "K")),
        "concl-k-share": _share(stat),
    }


def position_numbers(*, alpha, long, long_n, long_samples, pos, short) -> dict[str, str]:
    """Position or distance: the contrasts at n and ``long_n`` (``pos``: config -> statistic;
    ``long``: LayerNorm, + residual, no normalization), their changes and the verdict's word."""
    ln = pos[long[0]]
    family = position.family(pos.values())
    k_change = position.change(ln, "K")
    data = position.columns(pos.values())
    short_samples = [f"{count(c.samples)} ({conventions.variant_name(c)})" for c in short]
    out = {
        "concl-long-verdict": not_relative_claim(ln).word,
        "concl-long-n": count(long_n),
        "concl-long-samples": count(long_samples),
        "concl-short-samples": report.listing(short_samples, fmt=str),
        "concl-alpha": f"{alpha:g}",
        "concl-pos-kchange": pm(*k_change),
        "concl-pos-kchange-z": report.z_text(report.zscore(*k_change)),
        "concl-pos-dchange": pm(*position.change(ln, "D")),
        "concl-pos-kshare": _share(ln),
        "concl-pos-family": count(family),
        "concl-pos-zc": num(conventions.z_for(family), 3),
        "concl-fig-position-data": report.download("conclusion-position", data),
    }
    for name, cfg in zip(("pos", "res", "none"), long):
        out[f"concl-{name}-d5"] = pm(*position.value_at(pos[cfg], "D", 5))
        out[f"concl-{name}-dlong"] = pm(*position.value_at(pos[cfg], "D", long_n))
        out[f"concl-{name}-klong"] = pm(*position.value_at(pos[cfg], "K", long_n))
    return out
