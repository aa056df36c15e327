"""The input distribution of Eq. (6): how anisotropic the sampled token embeddings are.

The paper models anisotropic embeddings (Sec. 2.4, Eq. (6)) as

    x_i = eps_i + sqrt(alpha / (1 - alpha)) v,     eps_i, v ~ N(0, I_d / d) independent,

and calls alpha the anisotropy level because the cosine similarity of two different tokens,
cos(x_i, x_j) = <x_i, x_j> / (||x_i|| ||x_j||), tends to alpha as d grows: with c^2 = alpha / (1 - alpha),
<x_i, x_j> -> c^2 and ||x_i||^2 -> 1 + c^2 by the law of large numbers, and c^2 / (1 + c^2) = alpha.

A second-order (delta-method) expansion in 1/d gives the finite-d mean

    E cos(x_i, x_j) = alpha - alpha (1 - alpha^2) / (2 d) + O(d^-2),

so the bias is negative and at most 1 / (3 sqrt(3) d) ~ 0.19 / d in size (largest at
alpha = 1 / sqrt(3)); it vanishes at alpha = 0 (cos is then symmetric about 0) and at alpha = 1
(every token equals v, cos = 1 exactly). :func:`cosine_bias_second_order` evaluates the term.
"""

from __future__ import annotations

import math

import numpy as np

from .config import SimConfig
from .sampling import dense_tokens
from .stats import Moments
from .validation import check_int, short

_BLOCK_FLOATS = 2**20  # largest (batch, n, d) token array drawn at once (~8 MB of float64)


def input_cosine_similarity(cfg: SimConfig, samples: int, seed: int) -> tuple[float, float]:
    """Mean pairwise cosine similarity of the raw input tokens of Eq. (6), with its standard error.

    Draws ``samples`` independent sequences of ``cfg.n`` tokens of size ``cfg.d`` with anisotropy
    ``cfg.alpha`` (the literal embeddings of :func:`recency_lib.sampling.dense_tokens`; ``gamma``,
    ``norm``, ``layers``, ``samples`` and ``seed`` of ``cfg`` are not used). Per sequence, the
    cosine similarity is averaged over its n (n - 1) / 2 pairs i < j; the result is the mean of
    these per-sequence averages over the sequences and its standard error (sample std / sqrt(samples)).
    Pairs within one sequence share v and are correlated; sequences are independent, which is
    what the standard error assumes.

    The cosine is that of the raw embeddings x_i (not of LayerNorm's centred P x_i): it is what
    "anisotropy" describes. For large d the mean tends to alpha (module docstring).

    Args:
        cfg: a :class:`SimConfig` with n >= 2 (a pair must exist).
        samples: independent sequences, integer >= 2.
        seed: integer >= 0; the stream is ``numpy.random.default_rng(seed)``, drawn in blocks.

    Returns:
        (mean, sem) as Python floats.
    """
    if not isinstance(cfg, SimConfig):
        raise ValueError(f"cfg={short(cfg)} is not a SimConfig; allowed: a recency_lib.SimConfig")
    if cfg.n < 2:
        raise ValueError(
            f"cfg.n={cfg.n} is out of range; allowed: n >= 2 (a pair of tokens must exist)"
        )
    samples = check_int("samples", samples, 2)
    seed = check_int("seed", seed, 0)

    rng = np.random.default_rng(seed)
    rows, cols = np.triu_indices(cfg.n, 1)
    batch = max(1, _BLOCK_FLOATS // (cfg.n * cfg.d))
    acc: Moments | None = None
    done = 0
    while done < samples:
        size = min(batch, samples - done)
        x = dense_tokens(cfg, rng, size)  # (size, n, d)
        unit = x / np.linalg.norm(x, axis=-1, keepdims=True)  # (size, n, d)
        cos = np.einsum("bid,bjd->bij", unit, unit)[:, rows, cols]  # (size, pairs)
        m = Moments.of(cos.mean(axis=1)[:, None])  # per-sequence average
        acc = m if acc is None else acc.merge(m)
        done += size
    return float(acc.mean[0]), float(acc.sem[0])


def cosine_bias_second_order(alpha, d):
    """The O(1/d) term of the mean input cosine: E cos - alpha ~ -alpha (1 - alpha^2) / (2 d).

    alpha in [0, 1], d > 0 (real); broadcasts. See the module docstring.
    """
    a = np.asarray(alpha, dtype=float)
    dd = np.asarray(d, dtype=float)
    if np.any(~np.isfinite(a) | (a < 0) | (a > 1)):
        raise ValueError(f"alpha={short(alpha)} is out of range; allowed: real numbers in [0, 1]")
    if np.any(~np.isfinite(dd) | (dd <= 0)):
        raise ValueError(f"d={short(d)} is out of range; allowed: real numbers > 0")
    out = -a * (1.0 - a * a) / (2.0 * dd)
    return out[()] if out.ndim == 0 else out
