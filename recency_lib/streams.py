"""The gram engine's random numbers in numpy: the twin of the compiled generator, bit for bit.

A block's draws are a fixed function of its key (three 32-bit words of ``SeedSequence(seed,
spawn_key=(block,))``) and of each number's place (sample b, coordinate row i, try t), so they do
not depend on how samples are grouped into vector lanes. Three steps, each one IEEE operation at a
time so that numpy and C round alike:

1. bits: Philox4x32-10 (Salmon et al., SC 2011), 128 bits of a counter (t, b, row, key2) under a
   64-bit key; row i for the chi-square of coordinate row i, :data:`NORMAL_ROW` for the normals;
2. normals: Box-Muller on 52-bit uniforms, log, sin and cos as polynomials;
3. chi-squares: 2 Gamma(k / 2) by Marsaglia and Tsang (ACM TOMS 26, 2000); at k = 1 a squared
   normal.
"""

from __future__ import annotations

import math

import numpy as np

NORMAL_ROW = 0xFFFFFFFF  #: the counter's row word for the standard normals
MAX_PAIRS = 0x7FFFFFFF  #: pairs of tries per chi-square (never reached: a try fails with p < 0.05)
_M32 = np.uint64(0xFFFFFFFF)
_ONE_BITS = np.uint64(0x3FF0000000000000)
_PHILOX_M = (np.uint64(0xD2511F53), np.uint64(0xCD9E8D57))
_PHILOX_W = (0x9E3779B9, 0xBB67AE85)
_HALF_PI = 1.5707963267948966
_LN2 = 0.6931471805599453
_SQRT2 = 1.4142135623730951
_SIN = tuple((-1) ** (k + 1) / math.factorial(2 * k + 3) for k in range(8))  # sin x = x + x z P(z)
_COS = tuple((-1) ** (k + 1) / math.factorial(2 * k + 2) for k in range(8))  # cos x = 1 + z P(z)
_LOG = tuple(1.0 / j for j in range(3, 24, 2))  # atanh s = s (1 + z (c0 + c1 z + ...)), z = s^2


def _poly8(z, z2, z4, c):
    """c0 + c1 z + ... + c7 z^7 by Estrin's scheme, as the kernel's ``poly8`` rounds it."""
    return ((c[0] + c[1] * z) + z2 * (c[2] + c[3] * z)) + z4 * (
        (c[4] + c[5] * z) + z2 * (c[6] + c[7] * z)
    )


def block_key(seed: int, block: int) -> tuple[int, int, int]:
    """The three 32-bit key words of block ``block`` of a run with root seed ``seed``."""
    words = np.random.SeedSequence(seed, spawn_key=(block,)).generate_state(3, np.uint32)
    return int(words[0]), int(words[1]), int(words[2])


def philox(counter, key: tuple[int, int]) -> list[np.ndarray]:
    """Philox4x32-10 of ``counter`` (four uint64 arrays of 32-bit words, broadcastable) under
    ``key`` (two 32-bit words); returns the four output words (uint64 arrays, values < 2^32)."""
    c = [np.asarray(w, dtype=np.uint64) for w in counter]
    k0, k1 = key
    for _ in range(10):
        p0, p1 = (c[0] & _M32) * _PHILOX_M[0], (c[2] & _M32) * _PHILOX_M[1]
        c = [
            (p1 >> np.uint64(32)) ^ c[1] ^ np.uint64(k0),
            p1 & _M32,
            (p0 >> np.uint64(32)) ^ c[3] ^ np.uint64(k1),
            p0 & _M32,
        ]
        k0, k1 = (k0 + _PHILOX_W[0]) & 0xFFFFFFFF, (k1 + _PHILOX_W[1]) & 0xFFFFFFFF
    return c


def uniform52(hi: np.ndarray, lo: np.ndarray) -> np.ndarray:
    """[0, 1): the top 52 of the 64 bits hi:lo as a double (mantissa bits of [1, 2), minus 1)."""
    return ((((hi << np.uint64(32)) | lo) >> np.uint64(12)) | _ONE_BITS).view(np.float64) - 1.0


def log(u: np.ndarray) -> np.ndarray:
    """log u (u > 0 normal): u = 2^e m, log m = 2 atanh((m - 1) / (m + 1)) by its series to degree
    23 (truncation < 1e-18), Estrin's scheme: the kernel's ``vlog`` op for op."""
    bits = np.ascontiguousarray(u, dtype=np.float64).view(np.int64)
    e = ((bits >> 52) - 1023).astype(np.float64)
    m = ((bits & 0x000FFFFFFFFFFFFF) | 0x3FF0000000000000).view(np.float64)
    big = m > _SQRT2
    m = np.where(big, m * 0.5, m)
    e = np.where(big, e + 1.0, e)
    f = m - 1.0
    s = f / (2.0 + f)
    z = s * s
    z2 = z * z
    z4 = z2 * z2
    p = _poly8(z, z2, z4, _LOG) + (z4 * z4) * ((_LOG[8] + _LOG[9] * z) + z2 * _LOG[10])
    s2 = s + s
    return e * _LN2 + (s2 + s2 * (z * p))


def box_muller(w: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Two standard normals from one Philox output: r = sqrt(-2 log(1 - U1)) times cos and sin of
    2 pi U2, split exactly into quarter turns and phi in [-pi/4, pi/4]."""
    u1 = 1.0 - uniform52(w[0], w[1])  # (0, 1]
    t = uniform52(w[2], w[3]) * 4.0  # exact
    r = np.sqrt(-2.0 * log(u1))
    q1, q2, q3, q4 = (t >= 0.5), (t >= 1.5), (t >= 2.5), (t >= 3.5)
    qf = (
        q1.astype(np.float64)
        + q2.astype(np.float64)
        + q3.astype(np.float64)
        + q4.astype(np.float64)
    )
    phi = (t - qf) * _HALF_PI
    z = phi * phi
    z2 = z * z
    z4 = z2 * z2
    ps, pc = _poly8(z, z2, z4, _SIN), _poly8(z, z2, z4, _COS)
    sn, cs = phi + phi * (z * ps), 1.0 + z * pc  # sin phi, cos phi
    a, b, d = q1 & ~q2, q2 & ~q3, q3 & ~q4  # quarter turns 1, 2, 3 (4 is 0)
    cos_t = np.where(a, -sn, np.where(b, -cs, np.where(d, sn, cs)))
    sin_t = np.where(a, cs, np.where(b, -sn, np.where(d, -cs, sn)))
    return r * cos_t, r * sin_t


def _counter(t, b: np.ndarray, row, key2: int) -> list:
    """Philox counter words (t, sample, row, key2), each a scalar or an array of uint64."""
    return [
        np.uint64(t) if np.isscalar(t) else t,
        b,
        np.uint64(row) if np.isscalar(row) else row,
        np.uint64(key2),
    ]


def _gamma_try(x, u, dm, cc):
    """One Marsaglia-Tsang try per sample: (accepted, 2 dm v) (the kernel's ``gamma_try``)."""
    v = 1.0 + cc * x
    v = v * v * v
    x2 = x * x
    pos = v > 1e-300
    ok = pos & (u < 1.0 - 0.0331 * (x2 * x2))
    g = np.where(pos, v, 1.0)
    bound = 0.5 * x2 + dm - dm * g + dm * log(g)
    ok |= pos & (log(u) < bound)
    return ok, (2.0 * dm) * v


def chi_squares(dofs: np.ndarray, b: np.ndarray, key: tuple[int, int, int]) -> np.ndarray:
    """chi^2 draws (len(dofs), len(b)), row i with ``dofs[i]`` degrees of freedom, for the samples
    ``b``: Marsaglia-Tsang tries in pairs (Philox call 2t: the normals of tries 2t and 2t + 1, call
    2t + 1 their uniforms), each sample keeping its first accepted try, as the kernel's
    ``gamma_pair`` (the squared first normal at dof = 1)."""
    dofs = np.asarray(dofs, dtype=np.int64)
    rows = np.broadcast_to(
        np.arange(dofs.size, dtype=np.uint64)[:, None], (dofs.size, b.size)
    ).ravel()
    cols = np.broadcast_to(b[None, :], (dofs.size, b.size)).ravel()
    dof = np.repeat(dofs, b.size)
    out = np.zeros(dof.size)
    one = dof == 1
    if one.any():
        z0, _ = box_muller(philox(_counter(0, cols[one], rows[one], key[2]), key[:2]))
        out[one] = z0 * z0
    dm = 0.5 * dof.astype(np.float64) - 1.0 / 3
    cc = 1.0 / np.sqrt(9.0 * dm)
    todo = ~one
    for t in range(MAX_PAIRS):
        if not todo.any():
            break
        idx = np.flatnonzero(todo)
        z = box_muller(philox(_counter(2 * t, cols[idx], rows[idx], key[2]), key[:2]))
        w = philox(_counter(2 * t + 1, cols[idx], rows[idx], key[2]), key[:2])
        for x, u in zip(z, (1.0 - uniform52(w[0], w[1]), 1.0 - uniform52(w[2], w[3]))):
            ok, value = _gamma_try(x, u, dm[idx], cc[idx])
            ok &= todo[idx]
            out[idx[ok]] = value[ok]
            todo[idx[ok]] = False
    return out.reshape(dofs.size, b.size)


def draw_block(
    key: tuple[int, int, int], nb: int, m: int, dof0: int, q: int
) -> tuple[np.ndarray, np.ndarray]:
    """The draws of a block of ``nb`` samples, samples last: chi2 (m, nb), row i with dof0 - i
    degrees of freedom, and q standard normals (q, nb), normal 2p and 2p + 1 from pair p."""
    b = np.arange(nb, dtype=np.uint64)
    chi2 = chi_squares(dof0 - np.arange(m), b, key)
    normals = np.empty((q, nb))
    pairs = (q + 1) // 2
    if pairs:
        t = np.arange(pairs, dtype=np.uint64)[:, None]  # (pairs, 1)
        z0, z1 = box_muller(philox(_counter(t, b[None, :], NORMAL_ROW, key[2]), key[:2]))
        normals[0::2] = z0
        normals[1::2] = z1[: q // 2]
    return chi2, normals
