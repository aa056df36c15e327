"""The quantities the book quotes on several pages, each glued under one ``q-`` key from the same
cached run, so every page shows the same text."""

from __future__ import annotations

from . import report
from .statistics import StepEstimate

#: The quantities of a setting's steps at one d: (name, suffix) -> q-{setting}-{name}-{d}{suffix}.
STEPS = (("trend", ""), ("trend", "-z"), ("step-min", ""), ("step-min", "-z"), ("samples", ""))

#: Every quantity as (name, suffix): glued as q-{name}-{d}{suffix}.
QUANTITIES = (
    *((f"{s}-{name}", sfx) for s in ("theorem1", "prop1", "prop2") for name, sfx in STEPS),
    ("eq5-ratio", ""),
    ("corrected-ratio", ""),
)


def key(name: str, d: int, suffix: str = "") -> str:
    """The glue key of quantity ``name`` at hidden size ``d``: ``q-theorem1-trend-64-z``."""
    return f"q-{name}-{d}{suffix}"


def at(values: dict[str, str], d: int, prefix: str) -> dict[str, str]:
    """The quantities of ``values`` at ``d`` also under a page's own keys, for a page whose d is a
    parameter: ``q-theorem1-trend-64-z`` -> ``{prefix}-theorem1-trend-z``."""
    own = {key(name, d, suffix): f"{prefix}-{name}{suffix}" for name, suffix in QUANTITIES}
    return {own[k]: text for k, text in values.items() if k in own}


def _steps(setting: str, stats: dict) -> dict[str, str]:
    out = {}
    for d, stat in stats.items():
        est = StepEstimate.of(stat)
        s = est.smallest()
        texts = (
            report.pm(est.trend, est.trend_se),
            report.z_text(report.zscore(est.trend, est.trend_se)),
            report.pm(s.mean, s.se),
            report.z_text(s.z),
            report.count(est.config.samples),
        )
        out |= {key(f"{setting}-{name}", d, sfx): t for (name, sfx), t in zip(STEPS, texts)}
    return out


def theorem1(first: dict) -> dict[str, str]:
    """Theorem 1 at each d of ``first`` (first-order statistics): the trend, the smallest step,
    their z, the sequences, and the ratios of claims.eq5_claim and corrected_theorem1_claim."""
    from .claims import corrected_theorem1_claim, eq5_claim

    out = _steps("theorem1", first)
    for name, claim in (("eq5-ratio", eq5_claim), ("corrected-ratio", corrected_theorem1_claim)):
        out |= {key(name, c.d): c.text for c in claim(first, tuple(first)).checks}
    return out


def proposition1(controlled: dict) -> dict[str, str]:
    """Proposition 1 at each d of ``controlled`` (the Gram-controlled statistic): as Theorem 1's."""
    return _steps("prop1", controlled)


def proposition2(first_residual: dict) -> dict[str, str]:
    """Proposition 2 at each d of ``first_residual`` (the first-order statistic, residual)."""
    return _steps("prop2", first_residual)
