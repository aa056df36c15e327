"""The compiled kernel (``_kernel.c``), its Python face, and the choice between it and numpy.

``pip install -e .`` compiles ``_kernel.c`` into ``recency_lib._kernel`` (setup.py), which records
the sha256 of the source it was built from. :func:`load` gives this module when that kernel runs
here, else None: every caller then takes its numpy twin (the same numbers up to rounding, about 30
times slower). The kernel walks a block V samples at a time, one per vector lane (V = 8 with
AVX-512, else 4), and its sums have one order whatever V: the same bits on every machine.
"""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

import numpy as np

from .norms import NORMS
from .placements import OUTPUTS, PLACEMENTS, mean_column
from .rounding import TIE_RTOL
from .validation import brief

try:
    from . import _kernel
except ImportError:  # not built (no compiler at install time)
    _kernel = None

SOURCE = Path(__file__).with_name("_kernel.c")
#: The kernel was built from another ``_kernel.c`` (an edit or a pull without a rebuild).
SOURCE_SHA256 = hashlib.sha256(SOURCE.read_bytes()).hexdigest()
STALE = _kernel is not None and _kernel.source_sha256 != SOURCE_SHA256
MODES = {"plain": 0, "cholesky": 1, "rank_one": 2}  # coordinates: T, L T, or one column
_said: set = set()


def load(kernel: str | None = None):
    """This module if the compiled kernel runs: ``kernel`` "c" (RuntimeError if it cannot), None
    (when built, unless ``RECENCY_LIB_KERNEL=numpy``); None for "numpy" or when it cannot run."""
    if kernel not in ("c", "numpy", None):
        raise ValueError(f"kernel={brief(kernel)} is not allowed; allowed: 'c', 'numpy' or None")
    choice = os.environ.get("RECENCY_LIB_KERNEL", "")
    if choice not in ("", "c", "numpy"):
        raise ValueError(
            f"RECENCY_LIB_KERNEL={brief(choice)} is not allowed; allowed: 'c', 'numpy' or unset"
        )
    if STALE and "stale" not in _said:
        _said.add("stale")
        stale = f"the compiled kernel was built from another {SOURCE.name}"
        print(f"recency_lib: {stale}; the numpy path runs (`pip install -e .`)", file=sys.stderr)
    runs = _kernel is not None and not STALE and choice != "numpy"
    if kernel == "c" and not runs:
        raise RuntimeError(
            "the compiled kernel is not available (not built, stale, or numpy chosen)"
        )
    return sys.modules[__name__] if runs and kernel != "numpy" else None


def kernel_name() -> str:
    """ "c" when the compiled kernel runs, else "numpy"."""
    return "numpy" if load() is None else "c"


def count_pairs(n: int, packed: np.ndarray, tol: np.ndarray, out: np.ndarray) -> None:
    """The recency count of W score matrices, packed lower triangles (n(n+1)/2, W): out[0, b]
    counts j < k < i with S_ij < S_ik - tol[b], out[1, b] those with S_ij <= S_ik + tol[b]."""
    _kernel.count_pairs(n, packed.shape[1], packed, tol, out)


def causal_softmax(s: np.ndarray) -> np.ndarray:
    """:func:`recency_lib.model.causal_softmax` with the kernel's exp (within ~1e-16 of numpy's)."""
    s = np.ascontiguousarray(s, dtype=np.float64)
    n = s.shape[-1]
    out = np.empty_like(s)
    _kernel.causal_softmax(s.size // (n * n) if n else 0, n, s, out)
    return out


def gelu(x: np.ndarray) -> np.ndarray:
    """GELU(x) = x Phi(x), within 1e-14 relative (erfc by a Chebyshev series, ``_kernel.c``)."""
    x = np.ascontiguousarray(x, dtype=np.float64)
    out = np.empty_like(x)
    _kernel.gelu(x.size, x, out)
    return out


def gram_draws(key, nb: int, m: int, dof: int, chi2: np.ndarray, normals: np.ndarray) -> None:
    """A gram block's random numbers into chi2 (m, nb) and normals (q, nb): the same bits as
    :func:`recency_lib.streams.draw_block`."""
    _kernel.gram_draws(*key, nb, m, dof, normals.shape[0], chi2, normals)


def gram_block(cfg, chi2, normals, chol, offsets, shift, s1, s2, sc, feats=None) -> None:
    """One gram block of ``cfg`` through every layer, the twin of
    :func:`recency_lib.engines.gram_features` on the same draws; ``chol``: the Cholesky factor of
    Sigma, ``offsets``: :func:`recency_lib.features.kernel_offsets`. Writes, per layer l and feature
    r, ``shift[l, r]`` (the block's first sample), ``s1``/``s2`` the sums of (x - shift) and its
    square, ``sc[l, c]`` the sums of (x_l - shift_l)(x_1 - shift_1) over the controls c, and every
    feature into ``feats`` (layers, F, B) if given."""
    mode = "rank_one" if cfg.alpha == 1.0 else "plain" if cfg.alpha == 0.0 else "cholesky"
    norm, where = NORMS[cfg.norm], PLACEMENTS[cfg.placement]
    width = 1 if mode == "rank_one" else chi2.shape[0]
    sizes = (cfg.n, width, chi2.shape[1])
    placement = (not where.norm_scores, not where.norm_values, OUTPUTS.index(where.output))
    setting = (chol, MODES[mode], norm.scales, *placement, mean_column(cfg), norm.gain(cfg.d))
    setting += (float(cfg.d), float(cfg.gamma))
    setting += (float(cfg.eps), TIE_RTOL, cfg.layers, offsets)
    out = (shift, s1, s2, sc, np.empty(0) if feats is None else feats, feats is not None)
    _kernel.gram_block(*sizes, chi2, normals, *setting, *out)
