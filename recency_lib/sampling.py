"""Random inputs of the paper's model, two exact ways.

:func:`dense_tokens` draws the embeddings of Eq. (6), (n, d) per sample. :func:`gram_draws` and
:func:`gram_assemble` draw R (n, m), m <= n, whose Gram matrix R R^T has the law of the Gram matrix
the normalization sees; the layer uses inner products only, so R gives the same scores. Why: feature
t of the n tokens is N(0, Sigma / d), Sigma = I + c^2 11^T, c^2 = alpha / (1 - alpha), independently
over t; so X X^T = Sigma^{1/2} W Sigma^{1/2} with W ~ Wishart_n(k, I / d), k = d (d - 1 after
centring). Bartlett's decomposition draws W = T T^T, T lower triangular; the Cholesky factor L of
Sigma may replace Sigma^{1/2} (Wishart(I) is rotation invariant), keeping R = L T lower triangular.

LayerNorm sees the centred tokens only, and with the norm before the scores nothing else matters.
Where the scores read the raw state (:func:`mean_column`), the Gram engine keeps one more column:
each token's feature mean, a_i = <x_i, 1> / sqrt(d). Rotating the features so that 1 / sqrt(d) is
the first axis shows a = L g / sqrt(d), g ~ N(0, I_n), independent of the centred part's T (d - 1
degrees of freedom); then X X^T = R R^T + a a^T and LayerNorm's centring zeroes the column.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from . import kernels, streams
from .config import SimConfig
from .model import already_centred
from .norms import NORMS
from .placements import mean_column


def dense_tokens(cfg: SimConfig, rng: np.random.Generator, batch: int) -> np.ndarray:
    """Eq. (6): x_i = eps_i + c v with eps_i, v ~ N(0, I_d / d); returns (batch, n, d).

    alpha = 1 is the limit in which every token equals v.
    """
    n, d = cfg.n, cfg.d
    scale = 1.0 / math.sqrt(d)
    if cfg.alpha == 1.0:
        v = rng.standard_normal((batch, 1, d)) * scale  # (batch, 1, d)
        return np.repeat(v, n, axis=1)  # (batch, n, d)
    eps = rng.standard_normal((batch, n, d)) * scale  # (batch, n, d)
    if cfg.alpha == 0.0:
        return eps
    v = rng.standard_normal((batch, 1, d)) * scale  # (batch, 1, d)
    return eps + cfg.c * v


def degrees_of_freedom(cfg: SimConfig) -> int:
    """Dimension of the space the normalization sees (:meth:`recency_lib.norms.Norm.dof`)."""
    return NORMS[cfg.norm].dof(cfg.d)


@lru_cache(maxsize=64)
def sigma_cholesky(n: int, c: float) -> np.ndarray:
    """Lower-triangular L with L L^T = I + c^2 11^T (n x n), in closed form: with p_j = 1 + j c^2,
    L_jj = sqrt(p_{j+1} / p_j) and L_ij = c^2 / sqrt(p_j p_{j+1}) (i > j); the sums telescope."""
    c2 = c * c
    p = 1.0 + c2 * np.arange(n + 1, dtype=np.float64)
    low = c2 / np.sqrt(p[:-1] * p[1:])  # column j's sub-diagonal value
    out = np.tril(np.broadcast_to(low, (n, n)), -1)
    out[np.diag_indices(n)] = np.sqrt(p[1:] / p[:-1])
    out.flags.writeable = False  # cached: shared by every block
    return out


def gram_width(cfg: SimConfig) -> int:
    """Columns of the Gram coordinates: m = min(n, degrees of freedom); 1 when alpha = 1."""
    return 1 if cfg.alpha == 1.0 else min(cfg.n, degrees_of_freedom(cfg))


def gram_centre(cfg: SimConfig):
    """What LayerNorm's centring does to the Gram coordinates (:func:`recency_lib.model.layer`'s
    ``centre``): nothing (they are the centred part), or the mean column zeroed."""
    if not mean_column(cfg):
        return already_centred

    def centre(x):
        out = x.copy()
        out[..., -1] = 0.0
        return out

    return centre


@lru_cache(maxsize=64)
def trapezoid_index(n: int, m: int) -> tuple[np.ndarray, np.ndarray]:
    """(rows, cols) of the strictly-lower entries j < min(i, m) of an n x m matrix, row-major."""
    return np.tril_indices(n, -1, m)


def gram_draws(cfg: SimConfig, key: tuple[int, int, int], batch: int, kernel: str | None = None):
    """The random numbers of one block, batch last: chi2 (m, batch), row i with k - i degrees of
    freedom (k = :func:`degrees_of_freedom`; one row at alpha = 1), and the standard normals
    (count, batch) of the strictly-lower entries in :func:`trapezoid_index` order. Each number is a
    fixed function of the block's ``key`` and its place (:mod:`recency_lib.streams`), drawn by the
    compiled kernel or its numpy twin: the same bits either way. With :func:`mean_column` the
    normals go on with the n of the means (one at alpha = 1)."""
    n = cfg.n
    k = degrees_of_freedom(cfg)
    m = gram_width(cfg)
    count = 0 if cfg.alpha == 1.0 else trapezoid_index(n, m)[0].size
    if mean_column(cfg):
        count += 1 if cfg.alpha == 1.0 else n
    compiled = kernels.load(kernel)
    if compiled is None:
        return streams.draw_block(key, batch, m, k, count)
    chi2, normals = np.empty((m, batch)), np.empty((count, batch))
    compiled.gram_draws(key, batch, m, k, chi2, normals)
    return chi2, normals


def gram_assemble(cfg: SimConfig, chi2: np.ndarray, normals: np.ndarray) -> np.ndarray:
    """Gram coordinates R = L T (batch, n, m) from :func:`gram_draws`: T is the lower-trapezoidal
    Bartlett factor of Wishart_n(k, I / d), T_ii = sqrt(chi^2_{k-i} / d), T_ij ~ N(0, 1/d) (for
    n > k, the LQ factor of an n x k Gaussian matrix); L = :func:`sigma_cholesky`. At alpha = 1
    every token is v: one column, sqrt(chi^2_k / d). Row i is zero beyond column i. With
    :func:`mean_column`, one more column: the means a = L g / sqrt(d) (at alpha = 1, one g)."""
    n, d = cfg.n, cfg.d
    batch, rsd, extra = chi2.shape[-1], 1.0 / math.sqrt(d), int(mean_column(cfg))
    if cfg.alpha == 1.0:
        out = np.empty((batch, n, 1 + extra))  # every token is v
        out[:] = np.sqrt(chi2[0] / d)[:, None, None]
        if extra:
            out[:, :, 1] = (normals[0] * rsd)[:, None]
        return out
    m = chi2.shape[0]
    out = np.zeros((batch, n, m + extra))  # (batch, n, m) T, then the means' g / sqrt(d)
    diag = np.arange(m)
    out[:, diag, diag] = np.sqrt(chi2.T / d)
    rows, cols = trapezoid_index(n, m)
    if rows.size:
        out[:, rows, cols] = normals[: rows.size].T * rsd
    if extra:
        out[:, :, m] = normals[rows.size :].T * rsd
    if cfg.alpha == 0.0:
        return out
    return sigma_cholesky(n, cfg.c) @ out  # (n, n) @ (batch, n, m)


def gram_coordinates(cfg: SimConfig, key: tuple[int, int, int], batch: int) -> np.ndarray:
    """The Gram coordinates (batch, n, m) of one block: :func:`gram_assemble` of its draws."""
    return gram_assemble(cfg, *gram_draws(cfg, key, batch))
