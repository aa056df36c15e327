"""The quantities the book quotes on more than one page, each with one value from one source: the page
that quotes one glues it under its ``q-`` key from the function here, fed by the same cached run (the
settings of :mod:`companion.settings`), so a key reads the same on every page
(tests/book/test_quantities.py collects them from the built book and checks it).

* :func:`theorem1` (d -> first-order control-variate statistic, companion.estimators.first_order):
  Theorem 1's trend and smallest step, Eq. (5)'s and the corrected Theorem 1's ratios at each d;
* :func:`proposition1` (d -> Gram-controlled statistic): the trend and smallest step without normalization;
* :func:`proposition2` (d -> first-order statistic with the residual): the same with the residual.
"""

from __future__ import annotations

from . import report
from .statistics import StepEstimate


def at(values: dict[str, str], d: int, prefix: str) -> dict[str, str]:
    """The quantities of ``values`` at hidden size ``d`` also under a page's own keys, for a page whose d is a
    parameter (its prose cannot name a key with the d in it): ``q-theorem1-trend-64-z`` ->
    ``{prefix}-theorem1-trend-z``. The same texts: each is still glued under its ``q-`` key too."""
    out = {}
    for key, text in values.items():
        parts = key.split("-")
        if str(d) in parts[1:]:
            parts.remove(str(d))
            out["-".join([prefix, *parts[1:]])] = text
    return out


def _steps(prefix: str, stats: dict) -> dict[str, str]:
    out = {}
    for d, stat in stats.items():
        est = StepEstimate.of(stat)
        s = est.smallest()
        out[f"q-{prefix}-trend-{d}"] = report.pm(est.trend, est.trend_se)
        out[f"q-{prefix}-trend-{d}-z"] = report.z_text(report.zscore(est.trend, est.trend_se))
        out[f"q-{prefix}-step-min-{d}"] = report.pm(s.mean, s.se)
        out[f"q-{prefix}-step-min-{d}-z"] = report.z_text(s.z)
        out[f"q-{prefix}-samples-{d}"] = report.count(est.config.samples)
    return out


def theorem1(first: dict) -> dict[str, str]:
    """Theorem 1 at each d of ``first`` (LayerNorm, alpha = gamma = 0, two layers; the first-order control
    variate): ``q-theorem1-trend-{d}`` (the mean step between earlier keys of E S^(2)), its ``...-z``, the
    smallest step ``q-theorem1-step-min-{d}``, the sequences, and simulated / Eq. (5)
    ``q-eq5-ratio-{d}`` and simulated / corrected Theorem 1 ``q-corrected-ratio-{d}`` (claims.eq5_claim's and
    claims.corrected_theorem1_claim's numbers)."""
    from .claims import corrected_theorem1_claim, eq5_claim

    out = _steps("theorem1", first)
    ds = tuple(first)
    out.update({f"q-eq5-ratio-{c.d}": c.text for c in eq5_claim(first, ds).checks})
    out.update(
        {f"q-corrected-ratio-{c.d}": c.text for c in corrected_theorem1_claim(first, ds).checks}
    )
    return out


def proposition1(controlled: dict) -> dict[str, str]:
    """Proposition 1 at each d of ``controlled`` (no normalization, alpha = 0, two layers; the Gram-matrix
    control variates): ``q-prop1-trend-{d}``, ``q-prop1-step-min-{d}`` and their z, the sequences."""
    return _steps("prop1", controlled)


def proposition2(first_residual: dict) -> dict[str, str]:
    """Proposition 2 at each d of ``first_residual`` (LayerNorm, alpha = 0, gamma > 0, two layers; the
    first-order control variate with the row's leak): ``q-prop2-trend-{d}``, ``q-prop2-step-min-{d}`` and
    their z, the sequences."""
    return _steps("prop2", first_residual)
