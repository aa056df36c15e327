"""Block kernels of the gram engine: one block of Gram coordinates in, per-feature moments out.

Input: R of shape (n, m, B), batch last, row i zero beyond column i (see
:func:`recency_lib.sampling.gram_block`). Output: the mean and the sum of squared deviations
(M2) over the B samples of every per-sample feature of every layer, shape (layers, F), in the
order of :func:`feature_layout` (packed lower triangles, row-major like ``np.tril_indices``).

Two implementations of the same arithmetic:

* :func:`block_moments_numpy`, the reference: plain numpy on (…, B) arrays.
* :func:`block_moments_numba`, the fast path (used when numba imports): one compiled loop
  nest whose innermost loops run over the contiguous batch axis (so they vectorise), that skips
  the zeros of the lower-trapezoidal coordinates and of the causal mask (only the n(n+1)/2
  visible scores are exponentiated), counts the recency triples on the fly, and reduces every
  feature to its moments while it is still in L1 cache (no (B, layers, F) feature array).

Both agree to float rounding (~1e-15 relative) on the same input; each is deterministic
(fixed summation order, no fast-math), so results are bitwise reproducible for a given path.
"""
from __future__ import annotations

import math
import os
import threading
from functools import lru_cache

import numpy as np

from .features import TIE_RTOL, n_triples, order_fraction

NORM_CODES = {"none": 0, "layernorm": 1, "rms": 1}   # both normalise R's rows (R is already centred)


def feature_layout(n: int) -> dict[str, slice]:
    """Where each per-sample quantity sits in the feature vector of one layer."""
    t = n * (n + 1) // 2
    sizes = {"score": t, "attn": t, "diff": t - n, "rp": 1, "sq_norm": n}
    out, start = {}, 0
    for name, size in sizes.items():
        out[name] = slice(start, start + size)
        start += size
    return out


def n_features(n: int) -> int:
    return feature_layout(n)["sq_norm"].stop


@lru_cache(maxsize=64)
def _packed(n: int):
    """Index arrays on the packed lower triangle p(i, j) = i (i + 1) / 2 + j, j <= i."""
    rows, cols = np.tril_indices(n)
    starts = (np.arange(n) * (np.arange(n) + 1)) // 2                 # p(i, 0)
    later = np.flatnonzero(cols >= 1)                                  # p(i, j), j >= 1
    ik, ij = [], []                                                    # triples j < k < i
    for i in range(2, n):
        for k in range(1, i):
            for j in range(k):
                ik.append(starts[i] + k), ij.append(starts[i] + j)
    return rows, cols, starts, later, np.array(ik, dtype=np.intp), np.array(ij, dtype=np.intp)


# -- numpy reference ----------------------------------------------------------------------------

def block_moments_numpy(r: np.ndarray, *, d: int, norm: str, gamma: float, eps: float,
                        layers: int) -> tuple[np.ndarray, np.ndarray]:
    """Reference kernel: (mean, M2), each (layers, F), of one block of coordinates R (n, m, B)."""
    return moments_of(block_features_numpy(r, d=d, norm=norm, gamma=gamma, eps=eps, layers=layers))


def moments_of(feats: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(mean, M2) over the last (sample) axis of (layers, F, B) features.

    The mean is a plain sum in sample order divided by B: numpy's axis-0 reduction of the
    (B, layers, F) array, which is also what the compiled kernel computes (same bits for the same
    features), and what a per-sample check such as ``scores.mean(0)`` computes.
    """
    by_sample = np.ascontiguousarray(np.moveaxis(feats, -1, 0))      # (B, layers, F)
    mean = by_sample.mean(axis=0)
    dev = by_sample - mean
    return mean, np.einsum("blf,blf->lf", dev, dev)


def block_features_numpy(r: np.ndarray, *, d: int, norm: str, gamma: float, eps: float,
                         layers: int) -> np.ndarray:
    """Per-sample features (layers, F, B) of one block of coordinates R (n, m, B).

    Batch last, a Python loop over query rows i, contiguous slices only; sums over coordinates
    stop at the lower-trapezoidal zeros (k <= i); the softmax sees only the i + 1 visible keys.
    """
    n, m, size = r.shape
    rows, cols, starts, later, ik, ij = _packed(n)
    lay = feature_layout(n)
    feats = np.empty((layers, n_features(n), size))                 # (layers, F, B)
    rsd, total, x = 1.0 / math.sqrt(d), n_triples(n), r
    for l in range(layers):
        f = feats[l]
        sq = f[lay["sq_norm"]]                                       # (n, B) ||x_i||^2 as seen
        np.einsum("iwb,iwb->ib", x, x, out=sq)
        y = x * (1.0 / np.sqrt(sq / d + eps))[:, None, :] if NORM_CODES[norm] else x
        s = f[lay["score"]]                                          # (T, B) packed scores
        a = f[lay["attn"]]                                           # (T, B) packed attention
        x_next = np.zeros_like(x)
        for i in range(n):
            p, kmax = starts[i], min(i + 1, m)
            si, ai = s[p:p + i + 1], a[p:p + i + 1]
            np.einsum("kb,jkb->jb", y[i, :kmax], y[:i + 1, :kmax], out=si)
            si *= rsd
            np.subtract(si, si.max(axis=0), out=ai)
            np.exp(ai, out=ai)
            ai *= 1.0 / ai.sum(axis=0)
            if l + 1 < layers:
                np.einsum("jb,jkb->kb", ai, y[:i + 1, :kmax], out=x_next[i, :kmax])
        np.subtract(s[later], s[later - 1], out=f[lay["diff"]])
        if total:
            tol = TIE_RTOL * np.maximum(1.0, np.abs(s).max(axis=0))   # (B,) per-sample tie tolerance
            f[lay["rp"].start] = order_fraction(s[ik] - s[ij], tol, axis=0)   # (triples, B)
        else:
            f[lay["rp"].start] = np.nan
        if l + 1 < layers:
            if gamma != 0.0:
                x_next += gamma * x
            x = x_next
    return feats


# -- numba fast path ------------------------------------------------------------------------------

# exp(v) for v <= 0, vectorisable: v = k ln2 + r (Cody-Waite split of ln2, |r| <= ln2 / 2), e^r by
# its Taylor polynomial of degree 13 (truncation < 5e-18 relative) in Estrin form (short dependency
# chains), 2^k built in the exponent bits; k < -1020 (results near or below the smallest normal)
# is scaled in two steps so subnormals and underflow to 0 come out right. Max error measured
# against np.exp over [-745, 0]: 4.3e-16 relative (~2 ulp). Plain IEEE operations only, so the
# result is the same on every machine (unlike libm's exp, which may differ between versions).


def _kernel(chi2, normals, chol, use_chol, rank_one, n, d, normalize, gamma, eps, layers,
            tie_rtol, mean, m2, feats, work3, work2):  # pragma: no cover - compiled by numba
    """The loop nest compiled by numba (plain Python semantics; it also runs, slowly, as Python).

    Builds the coordinates from the raw draws of :func:`recency_lib.sampling.gram_draws` (as
    :func:`recency_lib.sampling.gram_assemble` does) and writes mean and m2, each (layers, F);
    if ``feats`` is not empty, also every per-sample feature into it, (layers, F, B).
    ``work3`` (3, n, w, B) and ``work2`` (F + 4, B) are scratch space, reused from call to call
    (see :func:`_workspace`): every entry the kernel reads it has written first in this call.
    Every innermost loop runs over the contiguous batch axis b. Row i of the state has nonzeros
    in columns k <= min(i, w - 1) only, and keeps that shape (causal mixing), so sums over k
    stop at min(j, w - 1) and sums over keys j start at k. Summation orders are fixed.
    """
    nb = chi2.shape[1]
    w = 1 if rank_one else chi2.shape[0]
    t = n * (n + 1) // 2
    nf = 3 * t + 1
    o_a, o_d, o_rp, o_sq = t, 2 * t, 3 * t - n, 3 * t - n + 1
    total = n * (n - 1) * (n - 2) // 6
    rsd = 1.0 / np.sqrt(d)
    scale = 1.0 / np.sqrt(d)
    x = work3[0]                                # (n, w, B) state; rows zero beyond column i
    xn = work3[1]                               # next state
    y = work3[2]                                # normalised state
    fb = work2[:nf]                             # this layer's features, batch last
    tmp = work2[nf]
    mx = work2[nf + 1]
    eb = work2[nf + 2]                          # exp: k + 1.5 * 2^52 (bits hold k)
    sb = work2[nf + 3]                          # exp: 2^k (or 2^(k + 64))
    ebi = eb.view(np.int64)
    sbi = sb.view(np.int64)

    # -- coordinates from the raw draws (lower trapezoid; Cholesky factor of Sigma applied)
    if rank_one:
        for b in range(nb):
            tmp[b] = np.sqrt(chi2[0, b] / d)
        for i in range(n):
            for b in range(nb):
                x[i, 0, b] = tmp[b]
    else:
        tt = xn if use_chol else x
        q = 0
        for i in range(n):
            if i < w:
                for b in range(nb):
                    tt[i, i, b] = np.sqrt(chi2[i, b] / d)
            for k in range(min(i, w)):
                for b in range(nb):
                    tt[i, k, b] = normals[q, b] * scale
                q += 1
        if use_chol:
            for i in range(n):
                for k in range(min(i + 1, w)):
                    c = chol[i, k]
                    for b in range(nb):
                        x[i, k, b] = c * tt[k, k, b]
                    for j in range(k + 1, i + 1):
                        c = chol[i, j]
                        for b in range(nb):
                            x[i, k, b] += c * tt[j, k, b]

    for l in range(layers):
        # -- squared norms (features) and normalised rows y
        for i in range(n):
            sq = fb[o_sq + i]
            kmax = min(i + 1, w)
            for b in range(nb):
                sq[b] = x[i, 0, b] * x[i, 0, b]
            for k in range(1, kmax):
                for b in range(nb):
                    sq[b] += x[i, k, b] * x[i, k, b]
            if normalize:
                for b in range(nb):
                    tmp[b] = 1.0 / np.sqrt(sq[b] / d + eps)
                for k in range(kmax):
                    for b in range(nb):
                        y[i, k, b] = x[i, k, b] * tmp[b]
            else:
                for k in range(kmax):
                    for b in range(nb):
                        y[i, k, b] = x[i, k, b]
        # -- packed scores, softmax over the visible keys, adjacent differences; row by row
        for i in range(n):
            pi = i * (i + 1) // 2
            for j in range(i + 1):
                s = fb[pi + j]
                kmax = min(j + 1, w)
                for b in range(nb):
                    s[b] = y[i, 0, b] * y[j, 0, b]
                k = 1
                while k + 1 < kmax:                      # two terms per pass, same order
                    for b in range(nb):
                        s[b] = (s[b] + y[i, k, b] * y[j, k, b]) + y[i, k + 1, b] * y[j, k + 1, b]
                    k += 2
                if k < kmax:
                    for b in range(nb):
                        s[b] += y[i, k, b] * y[j, k, b]
                for b in range(nb):
                    s[b] *= rsd
            for b in range(nb):
                mx[b] = fb[pi, b]
            for j in range(1, i + 1):
                s = fb[pi + j]
                for b in range(nb):
                    mx[b] = max(mx[b], s[b])
            for b in range(nb):
                tmp[b] = 0.0
            for j in range(i + 1):
                s = fb[pi + j]
                a = fb[o_a + pi + j]
                for b in range(nb):                      # exp(s - max), see the note above _kernel
                    v = s[b] - mx[b]
                    v = -745.5 if v < -745.5 else v
                    e = v * 1.4426950408889634 + 6755399441055744.0
                    kf = e - 6755399441055744.0
                    r = (v - kf * 6.93147180369123816490e-01) - kf * 1.90821492927058770002e-10
                    r2 = r * r
                    r4 = r2 * r2
                    q0 = (1.0 + r) + r2 * (0.5 + r * 0.16666666666666666)
                    q1 = ((0.041666666666666664 + r * 0.008333333333333333)
                          + r2 * (0.001388888888888889 + r * 0.0001984126984126984))
                    q2 = ((2.48015873015873e-05 + r * 2.7557319223985893e-06)
                          + r2 * (2.755731922398589e-07 + r * 2.505210838544172e-08))
                    q3 = 2.08767569878681e-09 + r * 1.6059043836821613e-10
                    a[b] = (q0 + r4 * q1) + (r4 * r4) * (q2 + r4 * q3)
                    eb[b] = e
                for b in range(nb):
                    kb = ebi[b] - 0x4338000000000000
                    sbi[b] = ((kb + 1087) if kb < -1020 else (kb + 1023)) << 52
                for b in range(nb):
                    kb = ebi[b] - 0x4338000000000000
                    val = a[b] * sb[b]
                    val = val * 5.421010862427522e-20 if kb < -1020 else val
                    a[b] = val
                    tmp[b] += val
            for b in range(nb):
                tmp[b] = 1.0 / tmp[b]
            for j in range(i + 1):
                a = fb[o_a + pi + j]
                for b in range(nb):
                    a[b] *= tmp[b]
            for j in range(1, i + 1):
                dd = fb[o_d + pi - i + j - 1]
                s1 = fb[pi + j]
                s0 = fb[pi + j - 1]
                for b in range(nb):
                    dd[b] = s1[b] - s0[b]
        # -- recency fraction: triples j < k < i with S_ik - S_ij > tol, plus half the tied ones
        #    (|S_ik - S_ij| <= tol; per-sample tie tolerance); NaN differences count as neither
        cnt = fb[o_rp]
        if total > 0:
            for b in range(nb):
                mx[b] = 1.0
            for p in range(t):
                s = fb[p]
                for b in range(nb):
                    mx[b] = max(mx[b], abs(s[b]))
            for b in range(nb):
                mx[b] *= tie_rtol
                cnt[b] = 0.0
            for i in range(2, n):
                pi = i * (i + 1) // 2
                for k in range(1, i):
                    sk = fb[pi + k]
                    for j in range(k):
                        sj = fb[pi + j]
                        for b in range(nb):
                            dk = sk[b] - sj[b]
                            cnt[b] += 1.0 if dk > mx[b] else (0.5 if dk >= -mx[b] else 0.0)
            for b in range(nb):
                cnt[b] /= total
        else:
            for b in range(nb):
                cnt[b] = np.nan
        # -- next state x' = A y + gamma x (row i, column k: keys j = k..i)
        if l + 1 < layers:
            for i in range(n):
                pi = i * (i + 1) // 2
                for k in range(min(i + 1, w)):
                    a = fb[o_a + pi + k]
                    for b in range(nb):
                        xn[i, k, b] = a[b] * y[k, k, b]
                    j = k + 1
                    while j + 1 <= i:                    # two keys per pass, same order
                        a = fb[o_a + pi + j]
                        a1 = fb[o_a + pi + j + 1]
                        for b in range(nb):
                            xn[i, k, b] = (xn[i, k, b] + a[b] * y[j, k, b]) + a1[b] * y[j + 1, k, b]
                        j += 2
                    if j <= i:
                        a = fb[o_a + pi + j]
                        for b in range(nb):
                            xn[i, k, b] += a[b] * y[j, k, b]
                    if gamma != 0.0:
                        for b in range(nb):
                            xn[i, k, b] += gamma * x[i, k, b]
            x, xn = xn, x
        if feats.shape[0] > 0:
            for f in range(nf):
                for b in range(nb):
                    feats[l, f, b] = fb[f, b]
        # -- moments of every feature: plain sums in sample order (as numpy's axis-0 mean of a
        # (B, ...) array: bitwise the same mean), four features at a time for instruction-level
        # parallelism; then the sum of squared deviations from that mean
        for f0 in range(0, nf, 4):
            f1 = min(f0 + 1, nf - 1)
            f2 = min(f0 + 2, nf - 1)
            f3 = min(f0 + 3, nf - 1)
            v0 = fb[f0]
            v1 = fb[f1]
            v2 = fb[f2]
            v3 = fb[f3]
            a0 = 0.0
            a1_ = 0.0
            a2 = 0.0
            a3 = 0.0
            for b in range(nb):
                a0 += v0[b]
                a1_ += v1[b]
                a2 += v2[b]
                a3 += v3[b]
            u0 = a0 / nb
            u1 = a1_ / nb
            u2 = a2 / nb
            u3 = a3 / nb
            a0 = 0.0
            a1_ = 0.0
            a2 = 0.0
            a3 = 0.0
            for b in range(nb):
                e0 = v0[b] - u0
                e1 = v1[b] - u1
                e2 = v2[b] - u2
                e3 = v3[b] - u3
                a0 += e0 * e0
                a1_ += e1 * e1
                a2 += e2 * e2
                a3 += e3 * e3
            mean[l, f0] = u0
            m2[l, f0] = a0
            mean[l, f1] = u1              # f1..f3 repeat f0's last feature at the end: same values
            m2[l, f1] = a1_
            mean[l, f2] = u2
            m2[l, f2] = a2
            mean[l, f3] = u3
            m2[l, f3] = a3


# -- the recency count at large n: O(n^2 log n) per matrix -------------------------------------------

def _later_pairs(s, tol, out):  # pragma: no cover - compiled by numba
    """out[b] = (#later, #tied) over the triples j < k < i of s[b] (batch, n, n): later when
    S_ik - S_ij > tol[b], tied when |S_ik - S_ij| <= tol[b].

    Row i's keys 0..i-1 are ranked once (a stable sort), then scanned left to right with a Fenwick
    tree over the ranks: at key k, the keys j < k already in the tree with S_ij < S_ik - tol hold
    the ranks before ``searchsorted(sorted_row, S_ik - tol)`` and those with S_ij <= S_ik + tol
    the ranks before ``searchsorted(sorted_row, S_ik + tol, "right")``; two prefix queries count
    both (the second only in rows where two sorted neighbours lie within tol: a tie needs one).
    NaN scores are never counted (NaN sorts last and is skipped as k).
    """
    batch, n = s.shape[0], s.shape[2]
    tree = np.zeros(n + 1, dtype=np.int64)
    rank = np.empty(n, dtype=np.int64)
    for b in range(batch):
        t = tol[b]
        later = 0
        tied = 0
        for i in range(2, n):
            v = s[b, i, :i]
            order = np.argsort(v, kind="mergesort")
            u = v[order]
            near = False                                       # any two scores within tol? (else no ties)
            for r in range(i):
                rank[order[r]] = r
                tree[r + 1] = 0
                if r > 0 and u[r] - u[r - 1] <= t:
                    near = True
            for k in range(i):
                x = v[k]
                if x != x:                                     # NaN: no order either way
                    continue
                below = 0                                      # j < k with S_ij < S_ik - tol
                p = np.searchsorted(u, x - t)
                while p > 0:
                    below += tree[p]
                    p -= p & -p
                upto = below                                   # j < k with S_ij <= S_ik + tol
                if near:
                    upto = 0
                    p = np.searchsorted(u, x + t, side="right")
                    while p > 0:
                        upto += tree[p]
                        p -= p & -p
                later += below
                tied += upto - below
                p = rank[k] + 1
                while p <= i:
                    tree[p] += 1
                    p += p & -p
        out[b, 0] = later
        out[b, 1] = tied


def _gelu(x):  # pragma: no cover - compiled by numba
    """GELU(x) = x Phi(x) in the exact erf form (scalar; vectorised by numba)."""
    return 0.5 * x * (1.0 + math.erf(x * 0.7071067811865476))


def _compiled(func, vectorize: bool = False, **opts):
    """``func`` compiled by numba (or loaded from its on-disk cache), or False when numba does not
    import or ``RECENCY_LIB_KERNEL=numpy`` asks for the numpy reference paths."""
    if os.environ.get("RECENCY_LIB_KERNEL", "").lower() == "numpy":
        return False
    try:
        import numba
    except ImportError:
        return False
    if vectorize:
        return numba.vectorize(["float64(float64)"], cache=True)(func)
    return numba.njit(cache=True, nogil=True, **opts)(func)


_PAIRS = None          # the compiled :func:`_later_pairs`, or False
_GELU = None           # the compiled :func:`_gelu` ufunc, or False


def pair_count_kernel():
    """The compiled :func:`_later_pairs`, or None without numba / with ``RECENCY_LIB_KERNEL=numpy``."""
    global _PAIRS
    if _PAIRS is None:
        _PAIRS = _compiled(_later_pairs)
    return _PAIRS or None


def gelu_kernel():
    """The compiled GELU ufunc, or None without numba / with ``RECENCY_LIB_KERNEL=numpy``."""
    global _GELU
    if _GELU is None:
        _GELU = _compiled(_gelu, vectorize=True)
    return _GELU or None

_WORK = threading.local()


def _workspace(n: int, w: int, size: int) -> tuple[np.ndarray, np.ndarray]:
    """Scratch arrays of the compiled kernel, kept per thread and reused while the shape repeats.

    Allocating the ~2 MB of a block's scratch afresh in every call cost ~430 page faults per
    block on the benchmark VM (glibc maps large blocks fresh and unmaps them on free), which
    doubled the kernel's time; reusing them removes that.
    """
    key = (n, w, size)
    if getattr(_WORK, "key", None) != key:
        _WORK.key = key
        _WORK.arrays = (np.empty((3, n, w, size)), np.empty((n_features(n) + 4, size)))
    return _WORK.arrays


_NUMBA = None          # the compiled kernel, or False when numba is unavailable / disabled


def numba_kernel():
    """The compiled :func:`_kernel` (compiled, or loaded from numba's on-disk cache, on first
    use), or None when numba does not import. ``RECENCY_LIB_KERNEL=numpy`` forces the reference.
    """
    global _NUMBA
    if _NUMBA is None:
        _NUMBA = _compiled(_kernel, error_model="numpy")
    return _NUMBA or None


def warm_up() -> None:
    """Compile (or load from numba's cache) the kernel now, on a tiny block; no-op without numba."""
    if numba_kernel() is None:
        return
    from .config import SimConfig
    from .sampling import gram_draws

    cfg = SimConfig(alpha=0.5, gamma=1.0, n=3, d=4, layers=2, samples=4)
    gram_block_moments(cfg, *gram_draws(cfg, np.random.default_rng(0), 4), kernel="numba")


def kernel_name() -> str:
    """"numba" when the compiled kernel runs, else "numpy"."""
    return "numba" if numba_kernel() is not None else "numpy"


def gram_block_moments(cfg, chi2: np.ndarray, normals: np.ndarray, kernel: str | None = None,
                       features: bool = False):
    """(mean, M2), each (layers, F), of one block from its raw draws (see sampling.gram_draws).

    ``kernel``: "numba", "numpy" or None (numba when available). Same draws -> same numbers up
    to float rounding (~1e-15 relative) on either path. ``features=True`` also returns the
    per-sample features (layers, F, B) the moments were taken of, as a third item.
    """
    from .sampling import gram_assemble, sigma_cholesky

    kernel = kernel or kernel_name()
    if kernel == "numpy":
        feats = block_features_numpy(gram_assemble(cfg, chi2, normals), d=cfg.d, norm=cfg.norm,
                                     gamma=cfg.gamma, eps=cfg.eps, layers=cfg.layers)
        out = moments_of(feats)
        return (*out, feats) if features else out
    if kernel != "numba":
        raise ValueError(f"kernel={kernel!r} is not allowed; allowed: 'numba', 'numpy' or None")
    kern = numba_kernel()
    if kern is None:
        raise RuntimeError("the numba kernel is not available (numba missing or RECENCY_LIB_KERNEL=numpy)")
    n, size = cfg.n, chi2.shape[-1]
    mean = np.empty((cfg.layers, n_features(n)))
    m2 = np.empty_like(mean)
    feats = np.empty((cfg.layers, n_features(n), size) if features else (0, 0, 0))
    use_chol = 0.0 < cfg.alpha < 1.0
    chol = sigma_cholesky(n, cfg.c) if use_chol else np.zeros((n, n))
    kern(np.ascontiguousarray(chi2, dtype=np.float64), np.ascontiguousarray(normals, dtype=np.float64),
         chol, use_chol, cfg.alpha == 1.0, n, float(cfg.d), bool(NORM_CODES[cfg.norm]),
         float(cfg.gamma), float(cfg.eps), int(cfg.layers), TIE_RTOL, mean, m2, feats,
         *_workspace(n, 1 if cfg.alpha == 1.0 else chi2.shape[0], size))
    return (mean, m2, feats) if features else (mean, m2)
