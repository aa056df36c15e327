"""Decisions on simulated score matrices, at the book's one family-wise level.

:func:`definition1` is the one rule for Definition 1 everywhere (``SimResult``, the command line,
the book, its explorer): every adjacent step of a mean score matrix is tested at the Bonferroni z
that keeps the chance of any false call at :data:`LEVEL` for the matrices decided together. A step
below float64's resolution of the scores (:func:`recency_lib.rounding.resolution`) is never decided:
at large d the true steps (about sqrt(d) e^{-2 sqrt d}) are. :func:`sign` decides any other
estimate. This module is outside the results cache's key: changing the level recomputes no
simulation."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .rounding import resolution, undecidable
from .validation import check_int, check_level

LEVEL = 0.05  # the family-wise error level of every decision
VERDICTS = ("holds", "violated", "undecided")


def familywise_z(comparisons: int, level: float = LEVEL) -> float:
    """Bonferroni z of ``comparisons`` two-sided tests at family-wise error ``level``."""
    from scipy.special import ndtri  # (scipy.stats takes ~1 s to import)

    comparisons = check_int("comparisons", comparisons, 1)
    return float(-ndtri(check_level(level) / (2 * comparisons)))


def sign(value: float, se: float, z: float, reference: float = 0.0) -> int:
    """+1 when ``value`` exceeds ``reference`` by more than ``z`` standard errors, -1 when it falls
    short by as much, else 0 (a zero error resolves any difference)."""
    gap = float(value) - reference
    return 1 if gap > z * se else -1 if gap < -z * se else 0


@dataclass(frozen=True)
class Decision:
    """Definition 1 on one matrix: the ``word``, the ``z`` of each step, the numbers of steps up,
    down, below the resolution and tied in every sample, the least-resolved z and the ``reason``."""

    word: str
    z: float
    steps: int
    up: int
    down: int
    below: int
    tied: int
    smallest_z: float
    reason: str

    def __str__(self) -> str:
        return self.word


def definition1(
    mean, sem, *, scale, spread=None, level=LEVEL, family=1, z=None, estimator="control variates"
):
    """Definition 1 (S_ij > S_ik for all i >= j > k) from the adjacent steps' means and standard
    errors (any shape; NaN entries are no steps): "holds" when every step is resolved positive,
    "violated" when one is resolved negative or is tied in every sample (``spread``, each step's
    per-sample standard deviation, within the resolution of ``scale``: alpha = 1), else "undecided".
    Resolved: beyond ``z`` (default: the Bonferroni z of ``family`` matrices' steps) standard errors
    and beyond the resolution of scores of size ``scale``."""
    m = np.asarray(mean, dtype=float)
    keep = np.isfinite(m)
    m, e = m[keep], np.asarray(sem, dtype=float)[keep]
    steps = int(m.size)
    if steps == 0:
        return Decision("undecided", math.nan, 0, 0, 0, 0, 0, math.nan, "no step (n < 2)")
    if z is None:
        z = familywise_z(steps * check_int("family", family, 1), level)
    elif not (isinstance(z, int | float) and math.isfinite(z) and z > 0):
        raise ValueError(f"z={z!r} is out of range; allowed: a finite number > 0")
    floor = resolution(scale)
    tied = np.zeros(steps, bool)
    if spread is not None:
        tied = (np.asarray(spread, float)[keep] <= floor) & (np.abs(m) <= floor)
    below = ~tied & undecidable(m, e, z, scale)
    usable = ~tied & ~below
    up = usable & (m > z * e) & (m > floor)
    down = usable & (m < -z * e) & (-m > floor)
    zs = np.where(usable, m / np.where(e > 0, e, 1.0), np.inf)
    least = float(zs.min()) if usable.any() else math.nan
    where = f"at the family-wise z = {z:.2f} ({estimator})"
    if down.any():
        word, reason = "violated", f"{down.sum()} of {steps} steps resolved negative {where}"
    elif tied.any():
        word = "violated"
        reason = f"{tied.sum()} of {steps} steps are tied in every sample (no strict increase)"
    elif up.all():
        word = "holds"
        reason = f"every step resolved positive {where}; the least at z = {least:.1f}"
    elif below.any():
        word = "undecided"
        reason = (
            f"{below.sum()} of {steps} steps are below float64's resolution of scores of "
            f"size {abs(scale):.3g} ({floor:.1e}): not decided"
        )
    else:
        word = "undecided"
        open_steps = steps - up.sum()
        reason = f"{open_steps} of {steps} steps not resolved {where}; the least at z = {least:.1f}"
    counts = (int(up.sum()), int(down.sum()), int(below.sum()), int(tied.sum()))
    return Decision(word, z, steps, *counts, least, reason)


def direction(rp: float, sem: float, level=LEVEL, family=1, z=None) -> str:
    """ "recency", "primacy" or "none": the recency probability against 1/2 at the family-wise z of
    ``family`` comparisons (or ``z``). Ties count 1/2, so a zero error away from 1/2 resolves."""
    z = familywise_z(family, level) if z is None else z
    return {1: "recency", -1: "primacy", 0: "none"}[sign(rp, sem, z, 0.5)]


# -- long rows -------------------------------------------------------------------------------------


def binned_row(score_mean: np.ndarray, score_sem: np.ndarray, i: int, bins: int):
    """Row i's (1-based) mean scores over its keys j < i in ``bins`` equal-count bins of relative
    position j / i: (centers, means, bounds), each (min(bins, i - 1),); a bound, the mean of the
    entries' standard errors, bounds the bin's (whatever their correlations)."""
    s, e = np.asarray(score_mean, dtype=float), np.asarray(score_sem, dtype=float)
    i = check_int("i", i, 2, s.shape[-1])
    bins = check_int("bins", bins, 1)
    keys = i - 1
    bins = min(int(bins), keys)
    pos = np.arange(1, keys + 1) / i  # relative position of key j
    which = np.minimum((np.arange(keys) * bins) // keys, bins - 1)  # equal-count bins in key order
    count = np.bincount(which, minlength=bins)
    centers = np.bincount(which, pos, bins) / count
    means = np.bincount(which, s[i - 1, :keys], bins) / count
    bound = np.bincount(which, e[i - 1, :keys], bins) / count
    return centers, means, bound


def late_minus_early(score_mean: np.ndarray, score_sem: np.ndarray, i: int) -> tuple[float, float]:
    """Row i's last quarter of keys minus its first (1-based; positive: later keys score higher),
    and a bound on its standard error (the two quarters' bounds added)."""
    _, means, bound = binned_row(score_mean, score_sem, i, 4)
    return float(means[-1] - means[0]), float(bound[-1] + bound[0])
