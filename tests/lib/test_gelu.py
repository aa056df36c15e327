"""The compiled GELU (chapter 8's feed-forward block): its coefficients,
its accuracy, its edge cases.

The kernel evaluates erfc(t) = exp(-t^2) E(t) with E a Chebyshev series in w = 1 / (1 + t); this
file generates the series (:func:`erfcx_chebyshev`, the provenance of the table in ``_kernel.c``)
and holds the result to the exact GELU computed by mpmath.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import mpmath as mp
import numpy as np
import pytest

from recency_lib import kernels
from recency_lib.extensions import gelu, gelu_reference

KERNEL_C = Path(__file__).resolve().parents[2] / "recency_lib" / "_kernel.c"
needs_c = pytest.mark.skipif(kernels.load() is None, reason="the C kernel was not built")


def erfcx_chebyshev(deg: int = 36, tmax: float = 27.0) -> list[float]:
    """Chebyshev coefficients c_0..c_deg of E(t) = exp(t^2) erfc(t) as a function of w = 1 / (1 + t)
    on t in [0, tmax], i.e. w in [1 / (1 + tmax), 1] mapped to [-1, 1]: the interpolant at the
    deg + 1 Chebyshev nodes, computed with mpmath at 50 digits and rounded to doubles
    (E ~ sum' c_k T_k)."""
    with mp.workdps(50):
        count = deg + 1
        lo, hi = 1 / mp.mpf(1 + tmax), mp.mpf(1)
        nodes = [mp.cos(mp.pi * (j + mp.mpf(1) / 2) / count) for j in range(count)]

        def e_of_w(w):
            t = (1 - w) / w
            return mp.exp(t * t) * mp.erfc(t)

        values = [e_of_w((x + 1) / 2 * (hi - lo) + lo) for x in nodes]
        return [
            float(
                2
                * mp.fsum(
                    values[j] * mp.cos(mp.pi * k * (j + mp.mpf(1) / 2) / count)
                    for j in range(count)
                )
                / count
            )
            for k in range(count)
        ]


def _exact(x: np.ndarray) -> np.ndarray:
    with mp.workdps(40):
        return np.array([float(mp.mpf(v) * mp.ncdf(mp.mpf(v))) for v in x])


def test_the_kernels_table_is_the_chebyshev_interpolant():
    """The coefficients in _kernel.c are those :func:`erfcx_chebyshev` computes
    (to the last bit)."""
    src = KERNEL_C.read_text()
    deg = int(re.search(r"#define ERFCX_DEG (\d+)", src).group(1))
    tmax = float(re.search(r"#define ERFCX_TMAX ([0-9.]+)", src).group(1))
    body = re.search(
        r"static const double ERFCX_C\[ERFCX_DEG \+ 1\] = \{(.*?)\};", src, re.S
    ).group(1)
    table = [float(v) for v in body.replace("\n", " ").split(",") if v.strip()]
    assert table == erfcx_chebyshev(deg, tmax)


@needs_c
def test_gelu_is_within_1e_14_of_the_exact_value():
    """Relative error against mpmath over [-37.5, 38] (|GELU| down to 1e-301) and at random points;
    the scipy form loses ~1e-8 relative in the far negative tail (1 + erf cancels),
    this does not."""
    x = np.concatenate(
        [np.linspace(-37.5, 38, 3021), np.random.default_rng(1).standard_normal(2000) * 3]
    )
    exact = _exact(x)
    rel = np.abs(gelu(x) - exact) / np.abs(np.where(exact == 0, 1.0, exact))
    assert rel.max() < 1e-14
    near = (x > -2) & (x < 5)  # where scipy's erf form is accurate
    np.testing.assert_allclose(gelu(x[near]), gelu_reference(x[near]), rtol=1e-14, atol=1e-300)


@needs_c
def test_gelu_edge_values_and_shapes():
    x = np.array(
        [0.0, -0.0, 1e-300, -1e-300, np.inf, -np.inf, np.nan, 38.19, -38.19, 1e308, -1e308]
    )
    y = gelu(x)
    assert y[0] == 0.0 and y[1] == 0.0
    np.testing.assert_allclose(
        y[2:4], [5e-301, -5e-301], rtol=4e-16, atol=0
    )  # Phi(+-0) = 1/2 to an ulp
    assert y[4] == np.inf and np.isnan(y[5]) and np.isnan(y[6])  # -inf * Phi(-inf) = -inf * 0
    assert y[7] == 38.19 and y[8] == 0.0
    assert y[9] == 1e308 and y[10] == 0.0
    with np.errstate(invalid="ignore"):  # -inf * 0 in the reference too
        ref = gelu_reference(x)
    assert np.array_equal(np.isnan(y), np.isnan(ref))
    # any shape, strides and length (the kernel works in runs of 8 vectors; the tail is padded)
    z = np.random.default_rng(2).standard_normal((7, 5, 13))
    whole = gelu(z)
    assert whole.shape == z.shape
    assert np.array_equal(gelu(z[:, ::2, 1::3]), whole[:, ::2, 1::3])
    for n in (1, 3, 31, 32, 33, 65):
        assert np.array_equal(gelu(z.ravel()[:n]), whole.ravel()[:n])


def test_gelu_reference_is_the_erf_form():
    x = np.linspace(-6, 6, 101)
    np.testing.assert_allclose(
        gelu_reference(x),
        [v * 0.5 * math.erfc(-v / math.sqrt(2)) for v in x],
        rtol=1e-12,
        atol=1e-15,
    )
