"""The compiled kernel: the gram engine's block kernel and the recency count, written in C.

The C source is ``_kernel.c`` next to this file; ``pip install -e .`` compiles it (setup.py) into
the extension module ``recency_lib._kernel``, which records the sha256 of the source it was built from.
Importing this module fails with ImportError when that module was not built (no C compiler at install
time) or was built from another ``_kernel.c``; every caller then takes the numpy path
(:func:`recency_lib.features.compiled_kernels`, :func:`recency_lib.engines.kernel_name`).

:func:`gram_block` is the one optimised twin of the paper's layer (:func:`recency_lib.model.layer`
plus :func:`recency_lib.features.layer_features`): it runs one block of samples, given as the raw
draws of :func:`recency_lib.sampling.gram_draws`, through every layer and reduces each per-sample
feature to sums on the fly. It walks the block in groups of eight samples where the CPU has
AVX-512, else four, one sample per lane of a vector, so every operation works on a group at once;
the results are bitwise the same on every machine and build (its sums have one order whatever the
group size: the C file's header says how) and differ from the numpy path by float rounding only.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np

from . import _kernel

SOURCE = Path(__file__).with_name("_kernel.c")
if getattr(_kernel, "source_sha256", None) != hashlib.sha256(SOURCE.read_bytes()).hexdigest():
    raise ImportError(
        f"the compiled kernel {Path(_kernel.__file__).name} was built from another {SOURCE.name}; "
        f"rebuild it with `pip install -e .` (or `python setup.py build_ext --inplace`)"
    )

MODES = {"plain": 0, "cholesky": 1, "rank_one": 2}  # coordinates: T, L T, or one column (alpha = 1)


def count_pairs(n: int, packed: np.ndarray, tol: np.ndarray, out: np.ndarray) -> None:
    """Recency count of the score matrices of W samples at once (samples last).

    ``packed`` (n(n+1)/2, W): the lower triangles, row i starting at i(i+1)/2; ``tol`` (W,) the tie
    tolerances. Writes ``out[0, b]``, the number of triples j < k < i with S_ij < S_ik - tol (the
    later key scores higher), and ``out[1, b]``, the number with S_ij <= S_ik + tol (higher or
    tied). A NaN score fails both comparisons. The naive triple loop, vectorised over the samples
    when there are several, over a row's earlier keys when there is one.
    """
    _kernel.count_pairs(n, packed.shape[1], packed, tol, out)


def causal_softmax(s: np.ndarray) -> np.ndarray:
    """:func:`recency_lib.model.causal_softmax` of score matrices s (..., n, n): the row softmax over
    keys j <= i, 0 above the diagonal, NaN rows as numpy makes them; with the kernel's exp and a
    fixed sum order (same bits on every build, within ~1e-16 relative of numpy's)."""
    s = np.ascontiguousarray(s, dtype=np.float64)
    n = s.shape[-1]
    if s.ndim < 2 or s.shape[-2] != n:
        raise ValueError(f"causal_softmax: s has shape {s.shape}; allowed: (..., n, n)")
    out = np.empty_like(s)
    _kernel.causal_softmax(s.size // (n * n) if n else 0, n, s, out)
    return out


def gelu(x: np.ndarray) -> np.ndarray:
    """GELU(x) = x Phi(x) of every element (float64; a new array of x's shape): erfc by a Chebyshev
    series of degree 36 and the kernel's exp, within 1e-14 relative of the exact value (the C file's
    GELU section; coefficients from tests/lib/test_gelu.py)."""
    x = np.ascontiguousarray(x, dtype=np.float64)
    out = np.empty_like(x)
    _kernel.gelu(x.size, x, out)
    return out


def gram_draws(
    key: tuple[int, int, int], nb: int, m: int, dof: int, chi2: np.ndarray, normals: np.ndarray
) -> None:
    """The random numbers of a gram block (:func:`recency_lib.sampling.gram_draws`), written into
    ``chi2`` (m, nb), row i with ``dof`` - i degrees of freedom, and ``normals`` (q, nb); the same
    bits as :func:`recency_lib.streams.draw_block`, a few nanoseconds per number."""
    if not (
        1 <= m <= dof and chi2.shape == (m, nb) and normals.ndim == 2 and normals.shape[1] == nb
    ):
        raise ValueError(
            f"gram_draws: chi2 {chi2.shape}, normals {normals.shape} do not fit m={m}, nb={nb}, dof={dof}"
        )
    _kernel.gram_draws(*key, nb, m, dof, normals.shape[0], chi2, normals)


def gram_block(
    chi2: np.ndarray,
    normals: np.ndarray,
    chol: np.ndarray,
    mode: str,
    d: float,
    normalize: bool,
    gamma: float,
    eps: float,
    layers: int,
    tie_rtol: float,
    offs: np.ndarray,
    shift: np.ndarray,
    s1: np.ndarray,
    s2: np.ndarray,
    sc: np.ndarray,
    feats: np.ndarray | None,
) -> None:
    """One block of the gram engine: draws in, shifted sums of every per-sample feature out.

    ``chi2`` (m, B) and ``normals`` (q, B) are the block's draws (:func:`recency_lib.sampling.
    gram_draws`, C-contiguous float64); ``chol`` (n, n) the Cholesky factor of Sigma (read if
    ``mode`` is "cholesky"); ``mode`` "plain" (alpha = 0), "cholesky" (0 < alpha < 1) or "rank_one"
    (alpha = 1). ``offs`` = (attn, sq_norm, diag_step, step, row_trend, trend, rp, F) offsets of
    :func:`recency_lib.features.feature_layout` (int64). Writes, per layer l and feature r:
    ``shift[l, r]`` (the block's first sample's value), ``s1``/``s2`` the sums of (x - shift) and
    its square, and ``sc[l, c]`` the sum of (x_l - shift_l)(x_1 - shift_1) over the control
    features c (from ``step`` on); with ``feats`` (layers, F, B), also every feature.
    """
    n = chol.shape[0]
    width = 1 if mode == "rank_one" else chi2.shape[0]
    _kernel.gram_block(
        n,
        width,
        chi2.shape[1],
        chi2,
        normals,
        chol,
        MODES[mode],
        bool(normalize),
        float(d),
        float(gamma),
        float(eps),
        float(tie_rtol),
        int(layers),
        offs,
        shift,
        s1,
        s2,
        sc,
        np.empty(0) if feats is None else feats,
        feats is not None,
    )
