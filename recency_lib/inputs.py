"""The input distribution of Eq. (6), x_i = eps_i + sqrt(alpha / (1 - alpha)) v: its anisotropy.

The paper calls alpha the anisotropy because cos(x_i, x_j) -> alpha as d grows (<x_i, x_j> -> c^2,
||x_i||^2 -> 1 + c^2). At finite d (delta method) E cos = alpha - alpha (1 - alpha^2) / (2 d)
+ O(d^-2): a negative bias, at most 1 / (3 sqrt(3) d), zero at alpha = 0 and 1.
"""

from __future__ import annotations

import numpy as np

from .config import SimConfig
from .sampling import dense_tokens
from .stats import Moments
from .validation import brief, check_int

_BLOCK_FLOATS = 2**20  # largest (batch, n, d) token array drawn at once (~8 MB of float64)


def input_cosine_similarity(cfg: SimConfig, samples: int, seed: int) -> tuple[float, float]:
    """The mean cosine of two raw tokens of Eq. (6) (``cfg``'s n, d and alpha; not LayerNorm's
    centred ones) and its standard error: each of ``samples`` sequences averages its pairs, the
    sequences (independent, from ``default_rng(seed)``) give the mean and its standard error."""
    if not isinstance(cfg, SimConfig):
        raise ValueError(f"cfg={brief(cfg)} is not a SimConfig; allowed: a recency_lib.SimConfig")
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
        raise ValueError(f"alpha={brief(alpha)} is out of range; allowed: real numbers in [0, 1]")
    if np.any(~np.isfinite(dd) | (dd <= 0)):
        raise ValueError(f"d={brief(d)} is out of range; allowed: real numbers > 0")
    out = -a * (1.0 - a * a) / (2.0 * dd)
    return out[()] if out.ndim == 0 else out
