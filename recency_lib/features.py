"""Per-sample quantities of one score matrix: the adjacent steps of Definition 1 and the recency
fraction, with the tie rule every path shares. Below the kernels and the engines (summaries of
many samples are in :mod:`recency_lib.metrics`).

Indices are 0-based in code and 1-based in the book and in the paper.
"""
from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

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
