"""Decisions and summaries of simulated score matrices, with their Monte-Carlo error.

:func:`definition1` is the one rule that decides Definition 1 everywhere (``SimResult``, the command
line, the book, its explorer): every adjacent step of a layer's mean score matrix is tested at the
Bonferroni z that keeps the chance of any false call at ``level`` (5 % by default) for the ``family``
of matrices decided together. A step is never decided on a standard error of zero or below float64's
resolution of the scores (:func:`resolution`): at large d the true steps (about sqrt(d) e^{-2 sqrt d})
are far below what float64 can represent beside scores of size sqrt(d), and there the word is
"undecided", with the reason. :func:`direction` decides the recency probability at the same level.

Indices are 0-based in code and 1-based in the book and in the paper.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .features import adjacent_differences, adjacent_index, recency_fraction, tril_index  # noqa: F401
from .validation import check_int, check_level

LEVEL = 0.05  # the family-wise error level of every decision
VERDICTS = ("holds", "violated", "undecided")
ROUNDING_ULPS = (
    64  # a step below this many float64 epsilons of the scores' size is rounding, not order
)


def familywise_z(comparisons: int, level: float = LEVEL) -> float:
    """Bonferroni z for ``comparisons`` two-sided tests at family-wise error ``level``: 3.26 for the 45
    steps of one n = 10 matrix at 5 % (at z = 3 such a matrix with no order is called "violated" 6 % of
    the time)."""
    from scipy.special import ndtri  # (scipy.stats takes ~1 s to import)

    comparisons = check_int("comparisons", comparisons, 1)
    return float(-ndtri(check_level(level) / (2 * comparisons)))


def resolution(scale: float) -> float:
    """The smallest mean step that float64 resolves between scores of size ``scale``:
    ROUNDING_ULPS epsilons of max(1, |scale|). A smaller step, or a smaller bias, is rounding."""
    return ROUNDING_ULPS * np.finfo(np.float64).eps * max(1.0, abs(float(scale)))


@dataclass(frozen=True)
class Decision:
    """Definition 1 on one mean score matrix: the ``word`` ("holds", "violated" or "undecided"), the
    family-wise ``z`` each step was tested at, the counts of steps resolved up and down, below float64's
    resolution, and tied in every sample, the least-resolved step's z, and the ``reason`` in words."""

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
    mean,
    sem,
    *,
    scale: float,
    spread=None,
    level: float = LEVEL,
    family: int = 1,
    z: float | None = None,
    estimator: str = "control variates",
) -> Decision:
    """Definition 1 (S_ij > S_ik for all i >= j > k) on a mean score matrix, from its adjacent steps'
    means and standard errors (any shape; NaN entries are not steps).

    "holds" when every step is resolved positive; "violated" when some step is resolved negative, or
    is tied in every sample (``spread``, the per-sample standard deviation of each step, within the
    resolution: alpha = 1, where all tokens are equal); "undecided" otherwise. Resolved means beyond
    ``z`` standard errors, z the Bonferroni z of all the steps of ``family`` matrices at ``level``, and
    beyond :func:`resolution` of ``scale`` (the size of the scores); a caller that decides other
    comparisons together with these (a claim's family) passes its family-wise ``z``. A step whose standard
    error is 0 or below the resolution is never decided."""
    m = np.asarray(mean, dtype=float)
    keep = np.isfinite(m)
    m, e = m[keep], np.asarray(sem, dtype=float)[keep]
    steps = int(m.size)
    if steps == 0:
        return Decision("undecided", math.nan, 0, 0, 0, 0, 0, math.nan, "no step (n < 2)")
    if z is None:
        z = familywise_z(steps * check_int("family", family, 1), level)
    elif not (isinstance(z, (int, float)) and math.isfinite(z) and z > 0):
        raise ValueError(f"z={z!r} is out of range; allowed: a finite number > 0")
    floor = resolution(scale)
    tied = (
        np.zeros(steps, bool)
        if spread is None
        else (np.asarray(spread, float)[keep] <= floor) & (np.abs(m) <= floor)
    )
    below = ~tied & ((e <= 0) | ((np.abs(m) <= floor) & (z * e <= floor)))
    usable = ~tied & ~below
    up = usable & (m > z * e) & (m > floor)
    down = usable & (m < -z * e) & (-m > floor)
    zs = np.where(usable, m / np.where(e > 0, e, 1.0), np.inf)
    smallest = float(zs.min()) if usable.any() else math.nan
    where = f"at the family-wise z = {z:.2f} ({estimator})"
    if down.any():
        word, reason = "violated", f"{down.sum()} of {steps} steps resolved negative {where}"
    elif tied.any():
        word, reason = (
            "violated",
            f"{tied.sum()} of {steps} steps are tied in every sample (no strict increase)",
        )
    elif up.all():
        word, reason = (
            "holds",
            f"every step resolved positive {where}; the least at z = {smallest:.1f}",
        )
    elif below.any():
        word, reason = (
            "undecided",
            (
                f"{below.sum()} of {steps} steps are below float64's resolution of scores of "
                f"size {abs(scale):.3g} ({floor:.1e}): not decided"
            ),
        )
    else:
        word, reason = (
            "undecided",
            f"{steps - up.sum()} of {steps} steps not resolved {where}; the least at z = {smallest:.1f}",
        )
    return Decision(
        word,
        z,
        steps,
        int(up.sum()),
        int(down.sum()),
        int(below.sum()),
        int(tied.sum()),
        smallest,
        reason,
    )


def direction(
    rp: float, sem: float, level: float = LEVEL, family: int = 1, z: float | None = None
) -> str:
    """ "recency" if the recency probability exceeds 1/2 by more than the family-wise z (of ``family``
    comparisons at ``level``, or the ``z`` given) standard errors, "primacy" if it falls short by as much,
    else "none". The recency fraction counts a pair within rounding of a tie as a tie (one half), so a
    standard error of 0 with a fraction away from 1/2 (every sequence ordered alike) is a resolved order."""
    z, dev = familywise_z(family, level) if z is None else z, float(rp) - 0.5
    return "recency" if dev > z * sem else ("primacy" if dev < -z * sem else "none")


# -- relativity ---------------------------------------------------------------------------------


def relative_offset_table(score_mean: np.ndarray, score_sem: np.ndarray, offset: int):
    """Mean scores S[i, i - offset] along one sub-diagonal, with their SEMs and query indices.

    If the induced bias were relative (a function of i - j only), every entry along a
    sub-diagonal would be equal. Returns (i, mean, sem) with 0-based query indices.
    """
    n = score_mean.shape[-1]
    offset = check_int("offset", offset, 0)
    if not offset < n:
        raise ValueError(f"offset={offset} is out of range; allowed: 0 <= offset < n = {n}")
    i = np.arange(offset, n)
    return i, score_mean[..., i, i - offset], score_sem[..., i, i - offset]


def offset_spread(score_mean: np.ndarray, score_sem: np.ndarray, offset: int):
    """Largest minus smallest mean score along the sub-diagonal j = i - offset of one (n, n) matrix,
    and that gap in units of the two entries' combined standard error (a relative bias gives ~0).

    Returns (gap, gap / SE, i_max, i_min) with 1-based query indices of the two entries.
    """
    i, m, e = relative_offset_table(np.asarray(score_mean), np.asarray(score_sem), offset)
    hi, lo = int(np.argmax(m)), int(np.argmin(m))
    gap = float(m[hi] - m[lo])
    se = float(np.hypot(e[hi], e[lo]))
    return (
        gap,
        (gap / se if se > 0 else (0.0 if gap == 0 else math.inf)),
        int(i[hi]) + 1,
        int(i[lo]) + 1,
    )


# -- long rows -------------------------------------------------------------------------------------


def binned_row(score_mean: np.ndarray, score_sem: np.ndarray, i: int, bins: int):
    """The mean scores of query row i (1-based) against its keys j < i, averaged over ``bins``
    consecutive bins of (nearly) equal size in key order, i.e. of relative position j / i, for
    comparing rows of different lengths.

    Returns (centers, means, sem_bound), each (bins',) with bins' = min(bins, i - 1), where
    ``sem_bound`` is the average of the entries' standard errors: an upper bound on the standard
    error of the bin's mean (Minkowski: sd of an average <= average of the sds, whatever the
    correlations between the entries, which a SimResult does not store).
    """
    s, e = np.asarray(score_mean, dtype=float), np.asarray(score_sem, dtype=float)
    n = s.shape[-1]
    if s.shape != (n, n) or e.shape != s.shape:
        raise ValueError(
            f"score_mean and score_sem must both be (n, n); got {s.shape} and {e.shape}"
        )
    i = check_int("i", i, 2, n)
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
    """Mean score of the last quarter of row i's keys minus that of the first quarter (1-based query i,
    keys j < i), and an upper bound on its standard error (sum of the two quarters' bounds from
    :func:`binned_row`). Positive: later keys score higher."""
    _, means, bound = binned_row(score_mean, score_sem, i, 4)
    return float(means[-1] - means[0]), float(bound[-1] + bound[0])
