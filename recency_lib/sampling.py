"""Random inputs of the paper's model.

Two exact ways to draw the same distribution of attention scores:

* :func:`dense_tokens` draws the literal embeddings of Eq. (6), an (n, d) matrix per sample.
* :func:`gram_draws` / :func:`gram_assemble` draw an (n, m) matrix R, m = min(n, k) <= n, whose
  Gram matrix R R^T has the same law as the Gram matrix of what the normalization sees (the
  centred embeddings X P for LayerNorm, X itself otherwise). The layer only ever uses inner
  products, so running it on R gives the same scores and attention as running it on X (see
  ``design`` in the README and the book's Preliminaries chapter). The raw draws are batch last,
  the layout of the compiled kernel (:mod:`recency_lib.kernels`), which builds the coordinates
  itself; :func:`gram_assemble` builds them batch first for the numpy path.

Why it works: feature t of all n tokens, (x_1t, ..., x_nt), is N(0, Sigma / d) with
Sigma = I + c^2 11^T and c^2 = alpha / (1 - alpha), independently over t. Hence X = Sigma^{1/2} G
with G iid N(0, 1/d), and X X^T = Sigma^{1/2} (G G^T) Sigma^{1/2} with G G^T ~ Wishart_n(k, I / d),
k = d (or k = d - 1 after LayerNorm's centring, which projects every row onto a (d-1)-dim
subspace). Bartlett's decomposition samples the Wishart matrix as T T^T with T lower triangular;
any square root of Sigma may replace Sigma^{1/2} (Wishart(I) is rotation invariant), and its
Cholesky factor L keeps R = L T lower triangular.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from . import streams
from .config import SimConfig
from .features import kernels_for
from .norms import NORMS


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
    """Dimension of the space the normalization sees: d - 1 after centring, else d."""
    return cfg.d - 1 if NORMS[cfg.norm].centres else cfg.d


@lru_cache(maxsize=64)
def sigma_cholesky(n: int, c: float) -> np.ndarray:
    """Lower-triangular L with L L^T = Sigma = I + c^2 11^T (n x n), in closed form.

    With p_j = 1 + j c^2: L_jj = sqrt(p_{j+1} / p_j), L_ij = c^2 / sqrt(p_j p_{j+1}) (i > j).
    Check: sum_{k<j} c^4 / (p_k p_{k+1}) = c^2 (1 - 1 / p_j) telescopes, so every entry of
    L L^T is 1 + c^2 on the diagonal and c^2 off it.
    """
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


@lru_cache(maxsize=64)
def trapezoid_index(n: int, m: int) -> tuple[np.ndarray, np.ndarray]:
    """(rows, cols) of the strictly-lower entries j < min(i, m) of an n x m matrix, row-major."""
    return np.tril_indices(n, -1, m)


def gram_draws(
    cfg: SimConfig, key: tuple[int, int, int], batch: int, kernel: str | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The raw random numbers of one block of Gram coordinates, batch last: (chi2, normals).

    * chi2 (m, batch): chi-square draws with k - i degrees of freedom in row i (k = degrees of
      freedom, m = :func:`gram_width`); for alpha = 1 one row with k degrees of freedom.
    * normals (count, batch): standard normals for the strictly-lower entries j < min(i, m),
      rows in the row-major order of :func:`trapezoid_index` (count = 0 for alpha = 1).

    ``key``: the block's three 32-bit key words (:func:`recency_lib.streams.block_key`); every
    number is a fixed function of the key and of its place (sample, row, index), made by the
    counter-based generator of :mod:`recency_lib.streams`. ``kernel`` "c" draws them in the compiled
    kernel, "numpy" with the numpy twin, None with the kernel when it was built: the same bits
    either way (tested), so a block's stream does not depend on the machine.
    """
    n = cfg.n
    k = degrees_of_freedom(cfg)
    m = 1 if cfg.alpha == 1.0 else min(n, k)
    count = 0 if cfg.alpha == 1.0 else trapezoid_index(n, m)[0].size
    kernels = kernels_for(kernel)
    if kernels is None:
        return streams.draw_block(key, batch, m, k, count)
    chi2, normals = np.empty((m, batch)), np.empty((count, batch))
    kernels.gram_draws(key, batch, m, k, chi2, normals)
    return chi2, normals


def gram_assemble(cfg: SimConfig, chi2: np.ndarray, normals: np.ndarray) -> np.ndarray:
    """Gram coordinates R (batch, n, m) from :func:`gram_draws`; row i is zero beyond column i.

    R R^T (per sample) has the law of the Gram matrix the normalization sees (module docstring):

    * alpha = 1: every token is v, so R is one column, sqrt(chi^2_k / d) in every row.
    * otherwise R = L T with L the Cholesky factor of Sigma (:func:`sigma_cholesky`) and T the
      n x m lower-trapezoidal Bartlett factor of Wishart_n(k, I / d): T_ii = sqrt(chi^2_{k-i} / d)
      (0-based i < m), T_ij ~ N(0, 1/d) for j < min(i, m). For n <= k this is Bartlett's
      decomposition; for n > k it is the LQ decomposition of an n x k Gaussian matrix G (its
      first k rows are T_k Q with T_k Bartlett's factor and Q a Haar rotation; the other n - k
      rows times Q^T stay iid Gaussian, independent of T_k). L W L^T has the law of
      Sigma^{1/2} W Sigma^{1/2} because Wishart(I) is invariant under rotations and
      L = Sigma^{1/2} O with O orthogonal. The Cholesky factor keeps R lower-trapezoidal, and so
      does every layer (causal attention mixes row i only with rows j <= i); the kernel uses that.
    """
    n, d = cfg.n, cfg.d
    batch = chi2.shape[-1]
    if cfg.alpha == 1.0:
        return np.broadcast_to(np.sqrt(chi2[0] / d)[:, None, None], (batch, n, 1)).copy()
    m = chi2.shape[0]
    out = np.zeros((batch, n, m))
    diag = np.arange(m)
    out[:, diag, diag] = np.sqrt(chi2.T / d)
    rows, cols = trapezoid_index(n, m)
    if rows.size:
        out[:, rows, cols] = normals.T * (1.0 / math.sqrt(d))
    if cfg.alpha == 0.0:
        return out
    return sigma_cholesky(n, cfg.c) @ out  # (n, n) @ (batch, n, m)


def gram_coordinates(cfg: SimConfig, key: tuple[int, int, int], batch: int) -> np.ndarray:
    """The Gram coordinates (batch, n, m) of one block: :func:`gram_assemble` of :func:`gram_draws`."""
    return gram_assemble(cfg, *gram_draws(cfg, key, batch))
