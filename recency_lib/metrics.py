"""Summaries of simulated score matrices: Definition 1 with Monte-Carlo error, the family-wise z,
the relativity and long-row helpers. The per-sample quantities they summarise (adjacent steps, the
recency fraction) live in :mod:`recency_lib.features` and are re-exported here.

Indices are 0-based in code and 1-based in the book and in the paper.
"""
from __future__ import annotations

import math

import numpy as np

from .features import (TIE_RTOL, adjacent_differences, adjacent_index, later_and_tied_counts, n_triples,  # noqa: F401
                       order_fraction, recency_fraction, tril_index)
from .stats import familywise_z  # noqa: F401  (re-exported)
from .validation import check_int, check_z

VERDICTS = ("holds", "violated", "undecided")


# -- Definition 1 ---------------------------------------------------------------------------------

def definition1_matrix(s: np.ndarray) -> bool:
    """Definition 1 on one (n, n) matrix: S[i, j] > S[i, k] for all i >= j > k."""
    s = np.asarray(s, dtype=float)
    if s.ndim != 2 or s.shape[0] != s.shape[1]:
        raise ValueError(f"s must be a square matrix; got shape {s.shape}")
    return bool(np.all(adjacent_differences(s) > 0))


def definition1_verdict(diff_mean: np.ndarray, diff_sem: np.ndarray, z: float = 3.0,
                        scale: float = 1.0, samples: int | None = None) -> str:
    """Definition 1 with Monte-Carlo error, from the adjacent differences' means and SEMs.

    "holds" when every mean difference is > 0 by more than z standard errors; "violated" when
    some is < 0 by more than z standard errors, or when some difference is *tied in every sample*
    (Definition 1 asks for a strict increase, and a tie is not one: e.g. alpha = 1, where all
    tokens are equal and every score of a row is the same); "undecided" otherwise (also when there
    is no pair, n = 1). A difference within ``tol = TIE_RTOL * max(1, |scale|)`` of zero is float
    rounding, not order: it counts as tied in every sample when its per-sample spread,
    ``sem * sqrt(samples)``, is within ``tol`` too (this needs ``samples``; without it a tiny mean
    is only "undecided"). A real but tiny step cannot be taken for a tie: its per-sample spread is
    of order one even where its mean is e^{-2 sqrt d}.
    """
    z = check_z(z)
    m = np.asarray(diff_mean, dtype=float)
    e = np.asarray(diff_sem, dtype=float)
    m, e = m[np.isfinite(m)], e[np.isfinite(m)]
    if m.size == 0:
        return "undecided"
    tol = TIE_RTOL * max(1.0, abs(scale))
    margin = z * e + tol
    tied = (np.abs(m) <= tol) & (e * math.sqrt(samples) <= tol) if samples is not None else np.zeros(m.shape, bool)
    if np.any(m < -margin) or np.any(tied):
        return "violated"
    if np.all(m > margin):
        return "holds"
    return "undecided"


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
    return gap, (gap / se if se > 0 else (0.0 if gap == 0 else math.inf)), int(i[hi]) + 1, int(i[lo]) + 1


def rp_direction(rp: float, sem: float, z: float = 3.0) -> str:
    """"recency" if the recency probability exceeds 0.5 by more than z standard errors, "primacy"
    if it falls short by as much, else "none" (no order resolved at this error)."""
    z = check_z(z)
    dev = float(rp) - 0.5
    return "recency" if dev > z * sem else ("primacy" if dev < -z * sem else "none")


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
        raise ValueError(f"score_mean and score_sem must both be (n, n); got {s.shape} and {e.shape}")
    i = check_int("i", i, 2, n)
    bins = check_int("bins", bins, 1)
    keys = i - 1
    bins = min(int(bins), keys)
    pos = np.arange(1, keys + 1) / i                                 # relative position of key j
    which = np.minimum((np.arange(keys) * bins) // keys, bins - 1)   # equal-count bins in key order
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
