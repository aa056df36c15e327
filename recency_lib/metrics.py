"""Recency metrics on score matrices: Definition 1, the recency probability, and helpers.

Indices are 0-based in code and 1-based in the book and in the paper.
"""
from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from .validation import check_int, check_level, check_z

VERDICTS = ("holds", "violated", "undecided")
TIE_RTOL = 1e-10   # differences below this (relative to the matrix's scale) are float rounding, not order


# -- index sets -----------------------------------------------------------------------------

@lru_cache(maxsize=64)
def tril_index(n: int) -> tuple[np.ndarray, np.ndarray]:
    """(rows, cols) of the causal (lower) triangle including the diagonal."""
    return np.tril_indices(n)


@lru_cache(maxsize=64)
def adjacent_index(n: int) -> tuple[np.ndarray, np.ndarray]:
    """(i, j) with 1 <= j <= i: the pairs of the adjacent differences S[i, j] - S[i, j-1]."""
    rows, cols = np.tril_indices(n)
    keep = cols >= 1
    return rows[keep], cols[keep]


@lru_cache(maxsize=16)
def triple_index(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Flat indices (i*n + j, i*n + k) of all triples k > j with i > k (diagonal excluded)."""
    i, j, k = [], [], []
    for q in range(2, n):
        jj, kk = np.triu_indices(q, 1)                             # j < k < q
        i.append(np.full(jj.size, q)), j.append(jj), k.append(kk)
    if not i:
        return np.empty(0, dtype=np.intp), np.empty(0, dtype=np.intp)
    i, j, k = (np.concatenate(a) for a in (i, j, k))
    return i * n + j, i * n + k


def n_triples(n: int) -> int:
    """Number of (i, j, k) with j < k < i: C(n, 3)."""
    return math.comb(n, 3)


# -- per-sample quantities --------------------------------------------------------------------

def adjacent_differences(s: np.ndarray) -> np.ndarray:
    """S[i, j] - S[i, j-1] for 1 <= j <= i (Definition 1 holds iff all are > 0); (..., n(n-1)/2)."""
    n = s.shape[-1]
    i, j = adjacent_index(n)
    return s[..., i, j] - s[..., i, j - 1]


def order_fraction(diff: np.ndarray, tol, axis: int = -1) -> np.ndarray:
    """Along ``axis`` of ``diff`` (later-key score minus earlier-key score, one entry per pair): the
    fraction with diff > tol, a tie (|diff| <= tol) counting one half, NaN counting as neither.
    ``tol`` broadcasts against ``diff``. The recency probability's rule, shared by every numpy path."""
    later = np.count_nonzero(diff > tol, axis=axis)
    tied = np.count_nonzero(np.abs(diff) <= tol, axis=axis)
    return (later + 0.5 * tied) / diff.shape[axis]


_TRIPLE_LIMIT = 400_000   # without numba: above this many triples, count row by row, not with index arrays
_INDEX_MAX_N = 12         # with numba: index arrays up to this n, the compiled count above (measured faster)


def recency_fraction(s: np.ndarray) -> np.ndarray:
    """Per sample, P(S[i, k] > S[i, j]) + P(tie) / 2 over the triples j < k < i; (batch,).

    The fraction of key pairs in which the later key scores higher, a tie counting one half (the
    Mann-Whitney convention), so 0.5 = no order, also when every score is tied; 1 = perfect recency,
    0 = perfect primacy; the diagonal is excluded. A tie is a difference within ``TIE_RTOL`` times
    the sample's largest |score| (float rounding cannot order it); a NaN difference counts as
    neither. NaN when n < 3 (no triple exists). ``s`` is (batch, n, n).
    """
    batch, n = s.shape[0], s.shape[-1]
    total = n_triples(n)
    if total == 0:
        return np.full(batch, np.nan)
    visible = np.where(np.tri(n, dtype=bool), np.abs(s), 0.0)        # causal part only (NaN-safe)
    tol = TIE_RTOL * np.maximum(1.0, visible.max(axis=(-1, -2)))      # (batch,)
    if total <= _TRIPLE_LIMIT and (n <= _INDEX_MAX_N or not _compiled_count()):
        ij, ik = triple_index(n)
        flat = s.reshape(batch, n * n)
        return order_fraction(flat[:, ik] - flat[:, ij], tol[:, None], axis=1)   # (batch, triples)
    later, tied = later_and_tied_counts(s, tol)
    return (later + 0.5 * tied) / total


def _compiled_count() -> bool:
    from .kernels import pair_count_kernel

    return pair_count_kernel() is not None


def later_and_tied_counts(s: np.ndarray, tol: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per sample, the numbers of triples j < k < i with S[i, k] - S[i, j] > tol (later key higher)
    and with |S[i, k] - S[i, j]| <= tol (tied); two (batch,) int64 arrays. NaN pairs are neither.

    The compiled O(n^2 log n) count of :func:`recency_lib.kernels.pair_count_kernel` when numba
    is available, else row by row in numpy (O(n^3) time, O(n^2) memory). ``s`` is (batch, n, n),
    ``tol`` (batch,). The two agree exactly except for differences within one rounding of ``tol``.
    """
    from .kernels import pair_count_kernel

    kern = pair_count_kernel()
    if kern is not None:
        out = np.empty((s.shape[0], 2), dtype=np.int64)
        kern(np.ascontiguousarray(s, dtype=np.float64), np.ascontiguousarray(tol, dtype=np.float64), out)
        return out[:, 0], out[:, 1]
    later = np.zeros(s.shape[0], dtype=np.int64)
    tied = np.zeros(s.shape[0], dtype=np.int64)
    for q in range(2, s.shape[-1]):
        p = s[:, q, :q]                                              # (batch, q) keys before the diagonal
        diff = p[:, None, :] - p[:, :, None]                         # [b, j, k] = S_qk - S_qj
        up = np.triu(np.ones((q, q), dtype=bool), 1)
        later += np.count_nonzero((diff > tol[:, None, None]) & up, axis=(1, 2))
        tied += np.count_nonzero((np.abs(diff) <= tol[:, None, None]) & up, axis=(1, 2))
    return later, tied


# -- Definition 1 ---------------------------------------------------------------------------------

def definition1_matrix(s: np.ndarray) -> bool:
    """Definition 1 on one (n, n) matrix: S[i, j] > S[i, k] for all i >= j > k."""
    s = np.asarray(s, dtype=float)
    if s.ndim != 2 or s.shape[0] != s.shape[1]:
        raise ValueError(f"s must be a square matrix; got shape {s.shape}")
    return bool(np.all(adjacent_differences(s) > 0))


def definition1_verdict(diff_mean: np.ndarray, diff_sem: np.ndarray, z: float = 3.0,
                        scale: float = 1.0) -> str:
    """Definition 1 with Monte-Carlo error, from the adjacent differences' means and SEMs.

    "holds" when every mean difference is > 0 by more than z standard errors, "violated" when
    some is < 0 by more than z standard errors, "undecided" otherwise (also when there is no
    pair, n = 1). A difference within ``TIE_RTOL * scale`` of zero counts as a tie (float
    rounding cannot resolve it), whatever its standard error.
    """
    z = check_z(z)
    m = np.asarray(diff_mean, dtype=float)
    e = np.asarray(diff_sem, dtype=float)
    m, e = m[np.isfinite(m)], e[np.isfinite(m)]
    if m.size == 0:
        return "undecided"
    margin = z * e + TIE_RTOL * max(1.0, abs(scale))
    if np.any(m < -margin):
        return "violated"
    if np.all(m > margin):
        return "holds"
    return "undecided"


def familywise_z(comparisons: int, level: float = 0.05) -> float:
    """Bonferroni z for ``comparisons`` two-sided tests at family-wise error ``level``.

    With n = 10 a score matrix has 45 adjacent differences; at z = 3 a matrix with no order at
    all is called "violated" about 6% of the time. ``familywise_z(45)`` = 3.26 keeps that at 5%.
    """
    from scipy.stats import norm

    comparisons = check_int("comparisons", comparisons, 1)
    level = check_level(level)
    return float(norm.isf(level / (2 * comparisons)))


# -- relativity ---------------------------------------------------------------------------------

def relative_offset_table(score_mean: np.ndarray, score_sem: np.ndarray, offset: int):
    """Mean scores S[i, i - offset] along one sub-diagonal, with their SEMs and query indices.

    If the induced bias were relative (a function of i - j only), every entry along a
    sub-diagonal would be equal. Returns (i, mean, sem) with 0-based query indices.
    """
    n = score_mean.shape[-1]
    if not 0 <= offset < n:
        raise ValueError(f"offset={offset!r} is out of range; allowed: 0 <= offset < n = {n}")
    i = np.arange(offset, n)
    return i, score_mean[..., i, i - offset], score_sem[..., i, i - offset]


def relativity_chi2(score_mean: np.ndarray, score_sem: np.ndarray, offset: int):
    """Chi-square test that a sub-diagonal is constant (relative bias); returns (chi2, dof, p).

    Uses the inverse-variance weighted mean; entries are treated as independent (they come from
    different rows of the same samples, so this is approximate; it is a screen, not a proof).
    """
    from scipy import stats

    _, m, e = relative_offset_table(score_mean, score_sem, offset)
    w = 1.0 / np.maximum(e, 1e-300) ** 2
    mu = np.sum(w * m) / np.sum(w)
    chi2 = float(np.sum(w * (m - mu) ** 2))
    dof = m.size - 1
    p = float(stats.chi2.sf(chi2, dof)) if dof > 0 else float("nan")
    return chi2, dof, p


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
