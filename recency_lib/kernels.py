"""Compiled (numba) twins of the numpy code: the gram engine's block kernel, the recency count, GELU.

Imported only when the compiled path is wanted (:func:`recency_lib.features.compiled_kernels`):
numba costs ~0.3 s to import, and every caller has a numpy path. Functions are compiled on first
use and cached on disk (``cache=True``), so a new process loads them instead of compiling.

:func:`gram_block` is the one optimised twin of the paper's layer (:func:`recency_lib.model.layer`
plus :func:`recency_lib.features.layer_features`): it runs one block of samples, given as the raw
draws of :func:`recency_lib.sampling.gram_draws`, through every layer and reduces each per-sample
feature to sums on the fly. The samples are the innermost, contiguous axis of every array, so each
innermost loop runs over samples and vectorises (AVX2: four doubles); the block is cut into tiles of
``tile`` samples whose working set stays in the L2 cache. Zeros are skipped: row i of the Gram
coordinates is zero beyond column i (the layer keeps that shape), and only the n(n + 1)/2 visible
scores are exponentiated.

Rounding: multiply-adds may be fused (``fastmath={"contract"}``: one rounding instead of two) and
the sums over samples are vectorised (``"reassoc"``), so results differ from the numpy reference
by float rounding (~1e-15 relative) but are bitwise reproducible on one machine: the summation
order is fixed by the compiled code, never by the data, the tiling or the number of threads.
"""
from __future__ import annotations

import math

import numba
import numpy as np

_JIT = dict(cache=True, nogil=True, error_model="numpy")
_FMA = dict(_JIT, fastmath={"contract"})                  # fused multiply-add
_SUMS = dict(_JIT, fastmath={"reassoc", "contract"})      # vectorised reductions over samples

# exp(v) for v <= 0 without libm, vectorisable (see _softmax_row): v = k ln2 + r with a two-part
# ln2 (|r| <= ln2 / 2), e^r by its Taylor polynomial of degree 13 (truncation < 5e-18 relative),
# 2^k written into the exponent bits. Adding 1.5 * 2^52 to v / ln2 rounds it to the integer k,
# which then sits in the low bits of the sum. k < -1020 (results near or below the smallest normal)
# is scaled in two steps so that subnormals and underflow to 0 come out right. Measured against
# np.exp over [-745, 0]: < 5e-16 relative.
_ROUND = 6755399441055744.0            # 1.5 * 2^52
_ROUND_BITS = 0x4338000000000000       # its bit pattern
_LOG2E = 1.4426950408889634
_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10
_TWO_M64 = 5.421010862427522e-20       # 2^-64


# -- the recency count, shared by the gram kernel and the dense engine ---------------------------

@numba.njit(**_JIT)
def count_pairs(n, packed, tol, out):
    """Recency count of the score matrices of W samples at once (samples last).

    ``packed`` (n(n+1)/2, W): the lower triangles, row i starting at i(i+1)/2; ``tol`` (W,) the tie
    tolerances. Writes ``out[0, b]``, the number of triples j < k < i with S_ij < S_ik - tol (the
    later key scores higher), and ``out[1, b]``, the number with S_ij <= S_ik + tol (higher or
    tied). A NaN score fails both comparisons. The naive triple loop, in the order that vectorises:
    over the samples when there are several (the gram kernel; counters one per key j, so no update
    waits for the one before), over the earlier keys j of a row when there is one sample (the dense
    engine at long n, which calls it sample by sample). Both counts share one integer (the second
    in the upper 32 bits: a key's counts stay below n^2 < 2^32).
    """
    w = packed.shape[1]
    if w == 1:
        _count_one(n, packed.reshape(-1), tol[0], out)
        return
    counts = np.zeros((n, w), dtype=np.int64)                  # per key j: up | not_down << 32
    hi = np.empty(w)
    lo = np.empty(w)
    for i in range(2, n):
        p = i * (i + 1) // 2
        for k in range(1, i):
            for b in range(w):
                hi[b] = packed[p + k, b] - tol[b]
                lo[b] = packed[p + k, b] + tol[b]
            for j in range(k):
                for b in range(w):
                    v = packed[p + j, b]
                    counts[j, b] += np.int64(v < hi[b]) + (np.int64(v <= lo[b]) << 32)
    for b in range(w):
        out[0, b] = 0
        out[1, b] = 0
    for j in range(n):
        for b in range(w):
            out[0, b] += counts[j, b] & 0xFFFFFFFF
            out[1, b] += counts[j, b] >> 32


@numba.njit(**_JIT)
def _count_one(n, packed, tol, out):
    """:func:`count_pairs` of one sample: for each later key k the earlier keys j < k of the row in
    one contiguous loop (two integer counters)."""
    up = 0
    not_down = 0
    for i in range(2, n):
        p = i * (i + 1) // 2
        for k in range(1, i):
            hi = packed[p + k] - tol
            lo = packed[p + k] + tol
            for j in range(k):
                v = packed[p + j]
                up += v < hi
                not_down += v <= lo
    out[0, 0] = up
    out[1, 0] = not_down


# -- the gram engine's block kernel ------------------------------------------------------------

@numba.njit(**_FMA)
def _coordinates(chi2, normals, chol, use_chol, rank_one, d, start, valid, x, tmp):
    """Gram coordinates of samples start .. start + valid - 1 into x (n, w, tile), as
    :func:`recency_lib.sampling.gram_assemble` builds them; lanes beyond ``valid`` repeat the last
    sample (they are computed and never counted)."""
    n, w, tile = x.shape
    rsd = 1.0 / math.sqrt(d)
    t = tmp if use_chol else x                                  # Bartlett factor T, then L T
    if rank_one:
        for i in range(n):
            for b in range(valid):
                x[i, 0, b] = math.sqrt(chi2[0, start + b] / d)
    else:
        q = 0
        for i in range(n):
            if i < w:
                for b in range(valid):
                    t[i, i, b] = math.sqrt(chi2[i, start + b] / d)
            for k in range(min(i, w)):
                for b in range(valid):
                    t[i, k, b] = normals[q, start + b] * rsd
                q += 1
        if use_chol:
            for i in range(n):
                for k in range(min(i + 1, w)):
                    for b in range(valid):
                        x[i, k, b] = chol[i, k] * t[k, k, b]
                    for j in range(k + 1, i + 1):
                        c = chol[i, j]
                        for b in range(valid):
                            x[i, k, b] += c * t[j, k, b]
    for i in range(n):
        for k in range(min(i + 1, w)):
            for b in range(valid, tile):
                x[i, k, b] = x[i, k, valid - 1]


@numba.njit(**_FMA)
def _softmax_row(f, p, i, o_attn, mx, total):
    """Attention of query row i into f[o_attn + p ..]: exp(S_ij - max_j S_ij) (see the note on
    _ROUND), normalised; the scores are at f[p .. p + i], their maximum in ``mx``."""
    tile = f.shape[1]
    for b in range(tile):
        total[b] = 0.0
    for j in range(i + 1):
        a = o_attn + p + j
        for b in range(tile):
            v = max(f[p + j, b] - mx[b], -745.5)
            e = v * _LOG2E + _ROUND
            kf = e - _ROUND
            r = (v - kf * _LN2_HI) - kf * _LN2_LO
            r2 = r * r
            r4 = r2 * r2
            q0 = (1.0 + r) + r2 * (0.5 + r * 0.16666666666666666)
            q1 = ((0.041666666666666664 + r * 0.008333333333333333)
                  + r2 * (0.001388888888888889 + r * 0.0001984126984126984))
            q2 = ((2.48015873015873e-05 + r * 2.7557319223985893e-06)
                  + r2 * (2.755731922398589e-07 + r * 2.505210838544172e-08))
            q3 = 2.08767569878681e-09 + r * 1.6059043836821613e-10
            k = np.float64(e).view(np.int64) - _ROUND_BITS
            tiny = k < -1020
            scale = np.int64(((k + 1087) if tiny else (k + 1023)) << 52).view(np.float64)
            val = ((q0 + r4 * q1) + (r4 * r4) * (q2 + r4 * q3)) * scale
            val = val * _TWO_M64 if tiny else val
            f[a, b] = val
            total[b] += val
    for b in range(tile):
        total[b] = 1.0 / total[b]
    for j in range(i + 1):
        for b in range(tile):
            f[o_attn + p + j, b] *= total[b]


@numba.njit(**_FMA)
def _layer(x, xn, f, d, normalize, gamma, eps, offs, next_state, inv, scratch):
    """One layer, Eqs. (1)-(2), (20), on the coordinates x (n, w, tile): squared norms, scores and
    attention into the feature rows f (F, tile) (:func:`recency_lib.features.feature_layout`,
    offsets ``offs``), and, if ``next_state``, x' = A y + gamma x into xn.

    x is normalised in place (it holds y = Norm(x) afterwards; ``inv`` (n, tile) keeps each row's
    factor, so the residual gamma x_i is (gamma / inv_i) y_i): two state arrays instead of three.
    """
    n, w, tile = x.shape
    o_attn, o_sq = offs[0], offs[1]
    rsd = 1.0 / math.sqrt(d)
    mx = scratch[0]
    for i in range(n):                                          # ||x_i||^2 and y_i = Norm(x_i)
        kmax = min(i + 1, w)
        for b in range(tile):
            f[o_sq + i, b] = x[i, 0, b] * x[i, 0, b]
        for k in range(1, kmax):
            for b in range(tile):
                f[o_sq + i, b] += x[i, k, b] * x[i, k, b]
        if normalize:
            for b in range(tile):
                inv[i, b] = 1.0 / math.sqrt(f[o_sq + i, b] / d + eps)
            for k in range(kmax):
                for b in range(tile):
                    x[i, k, b] *= inv[i, b]
        else:
            for b in range(tile):
                inv[i, b] = 1.0
    for i in range(n):                                          # S_ij = <y_i, y_j> / sqrt(d), j <= i
        p = i * (i + 1) // 2
        for j in range(i + 1):
            kmax = min(j + 1, w)
            for b in range(tile):
                f[p + j, b] = x[i, 0, b] * x[j, 0, b]
            for k in range(1, kmax - 1, 2):                     # two coordinates per pass
                for b in range(tile):
                    f[p + j, b] += x[i, k, b] * x[j, k, b] + x[i, k + 1, b] * x[j, k + 1, b]
            if kmax % 2 == 0:
                for b in range(tile):
                    f[p + j, b] += x[i, kmax - 1, b] * x[j, kmax - 1, b]
            if j == 0:
                for b in range(tile):
                    f[p, b] *= rsd
                    mx[b] = f[p, b]
            else:
                for b in range(tile):
                    f[p + j, b] *= rsd
                    mx[b] = max(mx[b], f[p + j, b])
        _softmax_row(f, p, i, o_attn, mx, scratch[1])
    if next_state:                                              # x'_i = sum_j A_ij y_j + gamma x_i
        for i in range(n):
            p = o_attn + i * (i + 1) // 2
            for b in range(tile):
                scratch[1, b] = gamma / inv[i, b]
            for k in range(min(i + 1, w)):
                for b in range(tile):
                    xn[i, k, b] = scratch[1, b] * x[i, k, b] + f[p + k, b] * x[k, k, b]
                for j in range(k + 1, i, 2):                    # two keys per pass
                    for b in range(tile):
                        xn[i, k, b] += f[p + j, b] * x[j, k, b] + f[p + j + 1, b] * x[j + 1, k, b]
                if (i - k) % 2 == 1:
                    for b in range(tile):
                        xn[i, k, b] += f[p + i, b] * x[i, k, b]


@numba.njit(**_FMA)
def _steps(f, n, offs, tie_rtol, tol, out):
    """Adjacent steps, row trends, the trend and the recency fraction from the scores in f. A row's
    off-diagonal steps add up to S_i,i-1 - S_i0, so the row trends and the trend come from those."""
    tile = f.shape[1]
    o_diag, o_step, o_row, o_trend, o_rp = offs[2], offs[3], offs[4], offs[5], offs[6]
    for b in range(tile):
        f[o_trend, b] = 0.0
    q = o_step
    for i in range(1, n):
        p = i * (i + 1) // 2
        for b in range(tile):
            f[o_diag + i - 1, b] = f[p + i, b] - f[p + i - 1, b]
        for j in range(1, i):
            for b in range(tile):
                f[q, b] = f[p + j, b] - f[p + j - 1, b]
            q += 1
        if i >= 2:
            for b in range(tile):
                f[o_trend, b] += f[p + i - 1, b] - f[p, b]
                f[o_row + i - 2, b] = (f[p + i - 1, b] - f[p, b]) / (i - 1)
    triples = n * (n - 1) * (n - 2) // 6
    if triples == 0:
        for b in range(tile):
            f[o_trend, b] = np.nan
            f[o_rp, b] = np.nan
        return
    steps = (n - 1) * (n - 2) // 2
    for b in range(tile):
        f[o_trend, b] /= steps
        tol[b] = 1.0
    for p in range(n * (n + 1) // 2):
        for b in range(tile):
            tol[b] = max(tol[b], abs(f[p, b]))
    for b in range(tile):
        tol[b] *= tie_rtol
    count_pairs(n, f[:n * (n + 1) // 2], tol, out)
    for b in range(tile):
        f[o_rp, b] = (out[0, b] + out[1, b]) * (0.5 / triples)


@numba.njit(**_SUMS)
def _accumulate(f, valid, shift, s1, s2):
    """s1 += sum over the valid lanes of (f - shift), s2 += of its square; per feature row."""
    for r in range(f.shape[0]):
        k = shift[r]
        u = 0.0
        v = 0.0
        for b in range(valid):
            e = f[r, b] - k
            u += e
            v += e * e
        s1[r] += u
        s2[r] += v


@numba.njit(**_SUMS)
def _accumulate_cross(f, first, valid, start, shift, shift0, sc):
    """sc += sum over the valid lanes of (f - shift)(first - shift0) for the control rows from
    ``start`` on; ``first`` (controls, tile) holds the same rows of layer 1."""
    for c in range(first.shape[0]):
        k = shift[start + c]
        k0 = shift0[start + c]
        u = 0.0
        for b in range(valid):
            u += (f[start + c, b] - k) * (first[c, b] - k0)
        sc[c] += u


@numba.njit(**_JIT)
def gram_block(chi2, normals, chol, use_chol, rank_one, d, normalize, gamma, eps, layers, tie_rtol,
               offs, tile, shift, s1, s2, sc, feats):
    """One block of the gram engine: draws in, shifted sums of every per-sample feature out.

    ``chi2`` (m, B) and ``normals`` (q, B) are the block's draws (:func:`recency_lib.sampling.
    gram_draws`); ``chol`` the Cholesky factor of Sigma (used if ``use_chol``); ``rank_one`` for
    alpha = 1. ``offs`` = (attn, sq_norm, diag_step, step, row_trend, trend, rp, F) offsets of
    :func:`recency_lib.features.feature_layout`. Writes, per layer l and feature r: ``shift[l, r]``
    (the block's first sample's value), ``s1``/``s2`` the sums of (x - shift) and its square, and
    ``sc[l, c]`` the sum of (x_l - shift_l)(x_1 - shift_1) over the control features c (the
    features from ``step`` on). If ``feats`` is not empty, also every feature, (layers, F, B).
    """
    n = chol.shape[0]
    nb = chi2.shape[1]
    w = 1 if rank_one else chi2.shape[0]
    nf, start = offs[7], offs[3]
    x = np.zeros((n, w, tile))
    xn = np.zeros((n, w, tile))
    f = np.empty((nf, tile))
    first = np.empty((nf - start, tile))
    inv = np.empty((n, tile))
    scratch = np.empty((3, tile))
    out = np.empty((2, tile), dtype=np.int64)
    s1[:] = 0.0
    s2[:] = 0.0
    sc[:] = 0.0
    for t0 in range(0, nb, tile):
        valid = min(tile, nb - t0)
        _coordinates(chi2, normals, chol, use_chol, rank_one, d, t0, valid, x, xn)
        for l in range(layers):
            _layer(x, xn, f, d, normalize, gamma, eps, offs, l + 1 < layers, inv, scratch)
            _steps(f, n, offs, tie_rtol, scratch[2], out)
            if t0 == 0:
                shift[l] = f[:, 0]
            if l == 0:
                first[:] = f[start:]
            _accumulate(f, valid, shift[l], s1[l], s2[l])
            _accumulate_cross(f, first, valid, start, shift[l], shift[0], sc[l])
            if feats.shape[0] > 0:
                feats[l, :, t0:t0 + valid] = f[:, :valid]
            x, xn = xn, x


# -- GELU (extensions) ----------------------------------------------------------------------------

@numba.njit(**_JIT)
def gelu(x):
    """GELU(x) = x Phi(x) in the exact erf form, elementwise, of a C-contiguous array. (A compiled
    loop rather than a numba ufunc: a ufunc is built when the module is imported, ~0.8 s.)"""
    out = np.empty_like(x)
    flat, res = x.reshape(-1), out.reshape(-1)
    for t in range(flat.size):
        res[t] = 0.5 * flat[t] * (1.0 + math.erf(flat[t] * 0.7071067811865476))
    return out
