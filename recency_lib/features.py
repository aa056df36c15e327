"""Per-sample quantities of one layer: what every engine reduces to means and standard errors.

One sample of one layer gives its scores S (Eq. (1)), attention A (Eq. (3)) and the squared norms
the normalization sees (Eq. (36)). :func:`layer_features` lays them out in one flat vector
(:func:`feature_layout`): the causal triangles of S and A, the squared norms, the diagonal steps
S_ii - S_i,i-1, the other adjacent steps S_ij - S_i,j-1, the row trends, the trend (the mean
off-diagonal step) and the recency fraction (pairs j < k < i with S_ik > S_ij, a tie counting 1/2).
The last four have known layer-1 means (:func:`control_means`: its tokens are exchangeable), so
the engines use them as control variates. Indices are 0-based here, 1-based in the paper.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from . import kernels
from .rounding import TIE_RTOL

# -- layout of the feature vector ----------------------------------------------------------------


@lru_cache(maxsize=64)
def feature_layout(n: int) -> dict[str, slice]:
    """Where each per-sample quantity of one layer sits in its feature vector (n tokens)."""
    t = n * (n + 1) // 2
    sizes = {
        "score": t,
        "attn": t,
        "sq_norm": n,
        "diag_step": max(n - 1, 0),
        "step": (n - 1) * (n - 2) // 2 if n >= 2 else 0,
        "row_trend": max(n - 2, 0),
        "trend": 1,
        "rp": 1,
    }
    out, start = {}, 0
    for name, size in sizes.items():
        out[name] = slice(start, start + size)
        start += size
    return out


def n_features(n: int) -> int:
    """Length F of one layer's feature vector for n tokens."""
    return feature_layout(n)["rp"].stop


def control_slice(n: int) -> slice:
    """The features with a known first-layer mean (``step``, ``row_trend``, ``trend``, ``rp``)."""
    return slice(feature_layout(n)["step"].start, n_features(n))


def controls_valid(cfg) -> bool:
    """Whether layer 1's tokens are exchangeable (:func:`control_means` its exact means): not with
    RoPE, which rotates each token by its position (then the fields hold plain estimates)."""
    return not cfg.rope


@lru_cache(maxsize=64)
def kernel_offsets(n: int) -> np.ndarray:
    """The C kernel's view of :func:`feature_layout`: where attn .. rp start, then F."""
    lay = feature_layout(n)
    names = ("attn", "sq_norm", "diag_step", "step", "row_trend", "trend", "rp")
    out = np.array([lay[k].start for k in names] + [n_features(n)], dtype=np.int64)
    out.flags.writeable = False
    return out


@lru_cache(maxsize=64)
def control_means(n: int) -> np.ndarray:
    """Their exact first-layer means: 0 for every step and trend, 1/2 for the recency fraction."""
    lay, c = feature_layout(n), control_slice(n)
    mu = np.zeros(c.stop - c.start)
    mu[lay["rp"].start - c.start] = 0.5
    mu.flags.writeable = False
    return mu


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


@lru_cache(maxsize=64)
def _flat_index(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Positions in a row-major (n, n) matrix, for :func:`layer_features`' gathers (one index array
    instead of two): the causal triangle (:func:`tril_index`), the diagonal steps' later entries (i,
    i) for i >= 1 and the off-diagonal steps' (i, j) for 1 <= j < i, row-major as
    :func:`adjacent_index` orders them (the earlier entry is one before)."""
    rows, cols = tril_index(n)
    i, j = adjacent_index(n)
    diagonal = i == j
    out = (rows * n + cols, (i * n + j)[diagonal], (i * n + j)[~diagonal])
    for a in out:
        a.flags.writeable = False
    return out


def n_triples(n: int) -> int:
    """Number of (i, j, k) with j < k < i: C(n, 3)."""
    return math.comb(n, 3)


# -- per-sample quantities ---------------------------------------------------------------------


def adjacent_differences(s: np.ndarray) -> np.ndarray:
    """S[i, j] - S[i, j-1] for 1 <= j <= i (Definition 1 holds iff all are > 0); (..., n(n-1)/2)."""
    n = s.shape[-1]
    i, j = adjacent_index(n)
    return s[..., i, j] - s[..., i, j - 1]


def row_trends(s: np.ndarray) -> np.ndarray:
    """Mean off-diagonal step of each row i >= 2, (S[i, i-1] - S[i, 0]) / (i - 1); (..., n - 2)."""
    i = np.arange(2, s.shape[-1])
    return (s[..., i, i - 1] - s[..., i, 0]) / (i - 1)


def trend(s: np.ndarray) -> np.ndarray:
    """Mean of the off-diagonal steps S[i, j] - S[i, j-1], 1 <= j < i (a row's add up to S[i, i-1] -
    S[i, 0]); NaN if n < 3."""
    n = s.shape[-1]
    if n < 3:
        return np.full(s.shape[:-2], np.nan)
    i = np.arange(2, n)
    return (s[..., i, i - 1] - s[..., i, 0]).sum(axis=-1) / ((n - 1) * (n - 2) // 2)


def tie_tolerance(s: np.ndarray) -> np.ndarray:
    """Per sample, TIE_RTOL times the largest |score| of the causal triangle (at least TIE_RTOL):
    differences within it are float rounding, not order. ``s`` (batch, n, n) -> (batch,)."""
    rows, cols = tril_index(s.shape[-1])
    return _packed_tolerance(s[:, rows, cols])


def _packed_tolerance(packed: np.ndarray) -> np.ndarray:
    """:func:`tie_tolerance` from the causal triangles packed row after row, (batch, n(n+1)/2) (NaN
    where a score is NaN)."""
    return TIE_RTOL * np.maximum(1.0, np.abs(packed).max(axis=-1))


def later_and_tied_counts(s: np.ndarray, tol: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per sample (``s`` (batch, n, n), ``tol`` (batch,)), the triples j < k < i with S_ij < S_ik -
    tol (the later key higher) and those tied within tol; NaN is neither. The compiled count, or
    :func:`later_and_tied_counts_numpy`: the same comparisons, the same counts."""
    s = np.asarray(s, dtype=np.float64)
    tol = np.ascontiguousarray(tol, dtype=np.float64)
    compiled = kernels.load()
    if compiled is None:
        return later_and_tied_counts_numpy(s, tol)
    rows, cols = tril_index(s.shape[-1])
    return _packed_counts(compiled, s[:, rows, cols], s.shape[-1], tol)


def _packed_counts(compiled, packed: np.ndarray, n: int, tol: np.ndarray):
    """:func:`later_and_tied_counts` of packed triangles (batch, n(n+1)/2), by the kernel: all
    samples at once for short rows, sample by sample (along a row's keys) from n = 32."""
    batch = packed.shape[0]
    out = np.empty((2, batch), dtype=np.int64)
    if n < 32:
        compiled.count_pairs(n, np.ascontiguousarray(packed.T), tol, out)  # (n(n+1)/2, batch)
    else:
        one = np.empty((2, 1), dtype=np.int64)
        for b in range(batch):
            compiled.count_pairs(n, np.ascontiguousarray(packed[b][:, None]), tol[b : b + 1], one)
            out[:, b] = one[:, 0]
    return out[0], out[1] - out[0]


def later_and_tied_counts_numpy(s: np.ndarray, tol: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The numpy reference of :func:`later_and_tied_counts`: row by row, (batch, i, i) at a time."""
    later = np.zeros(s.shape[0], dtype=np.int64)
    tied = np.zeros(s.shape[0], dtype=np.int64)
    t = tol[:, None, None]
    for i in range(2, s.shape[-1]):
        keys = s[:, i, :i]  # (batch, i) keys before the diagonal
        earlier, later_key = keys[:, :, None], keys[:, None, :]  # [b, j, k] = S_ij, S_ik
        pair = np.triu(np.ones((i, i), dtype=bool), 1)  # j < k
        up = (earlier < later_key - t) & pair
        not_down = (earlier <= later_key + t) & pair
        later += np.count_nonzero(up, axis=(1, 2))
        tied += np.count_nonzero(not_down, axis=(1, 2)) - np.count_nonzero(up, axis=(1, 2))
    return later, tied


def recency_fraction(s: np.ndarray) -> np.ndarray:
    """Per sample, the share of triples j < k < i with S[i, k] > S[i, j], a tie (within
    :func:`tie_tolerance`) counting 1/2: 0.5 no order, 1 perfect recency; NaN if n < 3; (batch,)."""
    return _recency(s, None)


def _recency(s: np.ndarray, packed: np.ndarray | None) -> np.ndarray:
    """:func:`recency_fraction` of ``s``; ``packed``: its causal triangles packed row after row,
    (batch, n(n+1)/2), where the caller has them (else gathered here for the compiled count)."""
    n = s.shape[-1]
    total = n_triples(n)
    if total == 0:
        return np.full(s.shape[0], np.nan)
    compiled = kernels.load()
    if compiled is None:
        later, tied = later_and_tied_counts_numpy(s, tie_tolerance(s))
    else:
        if packed is None:
            rows, cols = tril_index(n)
            packed = s[:, rows, cols]
        tol = np.ascontiguousarray(_packed_tolerance(packed))
        later, tied = _packed_counts(compiled, packed, n, tol)
    return (later + 0.5 * tied) / total


def layer_features(s: np.ndarray, a: np.ndarray, sq_norms: np.ndarray) -> np.ndarray:
    """The feature vectors (batch, F) of one layer (module docstring, :func:`feature_layout`) from
    its scores ``s`` and attention ``a`` (batch, n, n) and squared norms (batch, n). The one numpy
    statement of what the compiled kernel computes on the fly."""
    batch, n = s.shape[0], s.shape[-1]
    lay = feature_layout(n)
    tri, diag, off = _flat_index(n)
    flat_s = s.reshape(batch, n * n)  # (batch, n^2): gathers by one index
    out = np.empty((batch, n_features(n)))  # (batch, F)
    scores = out[:, lay["score"]]
    np.take(flat_s, tri, axis=1, out=scores)  # S[i, j], j <= i, row-major
    np.take(a.reshape(batch, n * n), tri, axis=1, out=out[:, lay["attn"]])
    out[:, lay["sq_norm"]] = sq_norms
    # adjacent_differences(s), split into the diagonal steps and the others: the same subtractions
    np.subtract(flat_s[:, diag], flat_s[:, diag - 1], out=out[:, lay["diag_step"]])
    np.subtract(flat_s[:, off], flat_s[:, off - 1], out=out[:, lay["step"]])
    out[:, lay["row_trend"]] = row_trends(s)
    out[:, lay["trend"].start] = trend(s)
    out[:, lay["rp"].start] = _recency(s, scores)
    return out
