"""Per-sample features (recency_lib.features) against brute-force loops, and the recency count:
the compiled routine and the numpy reference count the same triples as a naive loop, with ties,
NaNs, and at every length from 1 to 70 tokens."""

import math
import os

import numpy as np
import pytest

from recency_lib import kernels
from recency_lib.features import (
    control_means,
    control_slice,
    feature_layout,
    later_and_tied_counts,
    later_and_tied_counts_numpy,
    layer_features,
    n_features,
    recency_fraction,
    tie_tolerance,
)
from recency_lib.model import layer


def _brute_features(s, a, sq):
    """One sample's feature vector by explicit loops over (i, j), in the layout's order."""
    n = s.shape[0]
    out = []
    out += [s[i, j] for i in range(n) for j in range(i + 1)]  # score
    out += [a[i, j] for i in range(n) for j in range(i + 1)]  # attn
    out += list(sq)  # sq_norm
    out += [s[i, i] - s[i, i - 1] for i in range(1, n)]  # diag_step
    steps = [s[i, j] - s[i, j - 1] for i in range(2, n) for j in range(1, i)]
    out += steps  # step
    out += [np.mean([s[i, j] - s[i, j - 1] for j in range(1, i)]) for i in range(2, n)]  # row_trend
    out += [np.mean(steps) if steps else np.nan]  # trend
    later = [
        1.0 if s[i, k] > s[i, j] else 0.5 if s[i, k] == s[i, j] else 0.0
        for i in range(2, n)
        for k in range(i)
        for j in range(k)
    ]
    out += [np.mean(later) if later else np.nan]  # rp
    return np.array(out)


@pytest.mark.parametrize("n", [1, 2, 3, 4, 9])
def test_layer_features_equal_brute_force_loops(n):
    x = np.random.default_rng(n).standard_normal((5, n, 6))
    _, s, a, sq = layer(x, norm="layernorm", d=6, gamma=0.0, eps=1e-12)
    got = layer_features(s, a, sq)
    assert got.shape == (5, n_features(n))
    for b in range(5):
        np.testing.assert_allclose(
            got[b], _brute_features(s[b], a[b], sq[b]), rtol=1e-12, atol=1e-15
        )


def test_layout_and_controls():
    lay = feature_layout(10)
    sizes = {k: v.stop - v.start for k, v in lay.items()}
    assert sizes == {
        "score": 55,
        "attn": 55,
        "sq_norm": 10,
        "diag_step": 9,
        "step": 36,
        "row_trend": 8,
        "trend": 1,
        "rp": 1,
    }
    assert n_features(10) == 175 and list(lay) == sorted(lay, key=lambda k: lay[k].start)
    c = control_slice(10)
    assert (c.start, c.stop) == (lay["step"].start, n_features(10))
    mu = control_means(10)
    assert mu.shape == (46,) and mu[-1] == 0.5 and not mu[:-1].any()
    assert n_features(1) == 1 + 1 + 1 + 0 + 0 + 0 + 1 + 1


def _brute_later_and_tied(s, tol):
    later = np.zeros(s.shape[0], dtype=np.int64)
    tied = np.zeros(s.shape[0], dtype=np.int64)
    for b in range(s.shape[0]):
        for i in range(2, s.shape[1]):
            for k in range(i):
                for j in range(k):
                    hi, lo = s[b, i, k] - tol[b], s[b, i, k] + tol[b]
                    later[b] += s[b, i, j] < hi
                    tied[b] += hi <= s[b, i, j] <= lo
    return later, tied


@pytest.mark.parametrize("path", ["compiled", "numpy"])
@pytest.mark.parametrize("n", [1, 2, 3, 5, 11, 70])
def test_recency_count_equals_a_naive_loop(path, n, monkeypatch):
    if path == "numpy":
        monkeypatch.setenv("RECENCY_LIB_KERNEL", "numpy")
    elif kernels.load() is None and not os.environ.get("CI"):  # CI builds the C kernel
        pytest.skip("the C kernel was not built")
    rng = np.random.default_rng(n)
    s = rng.standard_normal((7, n, n))
    s[1] = np.round(s[1])  # many exact ties
    s[2] = 1.5  # all tied: no order
    s[3] = np.round(2 * s[3]) / 2
    if n > 2:
        s[4, n - 1, 0] = np.nan  # a NaN is never ordered nor tied
    s[5] = np.tile(np.arange(n, dtype=float), (n, 1))  # perfect recency: C(n, 3) pairs
    s[6] = s[6] * 1e-12  # everything within the tolerance
    tol = np.array([1e-9, 1e-9, 1e-9, 0.6, 1e-9, 1e-9, 1e-9])  # row 3: differences of 0.5 are ties
    later, tied = later_and_tied_counts(s, tol)
    ref_later, ref_tied = _brute_later_and_tied(s, tol)
    np.testing.assert_array_equal(later, ref_later)
    np.testing.assert_array_equal(tied, ref_tied)
    total = math.comb(n, 3)
    assert later[2] == 0 and tied[2] == total
    assert later[5] == total and tied[5] == 0 and tied[6] == total


def test_numpy_reference_and_dispatch_agree_with_rounded_ties():
    s = np.random.default_rng(5).normal(size=(8, 30, 30))
    s[0] = np.round(s[0])
    tol = tie_tolerance(s)
    a = later_and_tied_counts(s, tol)
    b = later_and_tied_counts_numpy(s, tol)
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
    np.testing.assert_allclose(
        recency_fraction(s), (a[0] + 0.5 * a[1]) / math.comb(30, 3), rtol=0, atol=0
    )


def test_tie_tolerance_is_relative_to_the_largest_visible_score():
    s = np.zeros((2, 3, 3))
    s[0, 2, 1] = -5e3  # visible: counts
    s[1, 0, 2] = 7e9  # above the diagonal: masked
    np.testing.assert_allclose(tie_tolerance(s), [5e3 * 1e-10, 1e-10])


@pytest.mark.parametrize("path", ["c", "numpy"])
@pytest.mark.parametrize("n", [1, 2, 3, 10, 31, 32, 40])
def test_layer_features_are_the_named_functions_bit_for_bit(path, n, monkeypatch):
    """layer_features gathers by flat positions and counts from the packed triangle (faster at long
    n); every column is byte for byte what the per-feature functions give on the (batch, n, n)
    matrices: with ties, a NaN, an infinity, a matrix that is not C-contiguous, both count paths."""
    from recency_lib.features import (
        adjacent_differences,
        adjacent_index,
        row_trends,
        trend,
        tril_index,
    )

    if path == "c" and kernels.load() is None:
        pytest.skip("the C kernel was not built")
    if path == "numpy":
        monkeypatch.setenv("RECENCY_LIB_KERNEL", "numpy")
    rng = np.random.default_rng(n)
    lay = feature_layout(n)
    rows, cols = tril_index(n)
    diagonal = adjacent_index(n)[0] == adjacent_index(n)[1]
    for kind in ("plain", "ties", "nan", "inf", "fortran"):
        s = rng.standard_normal((3, n, n)) * 10.0 ** rng.integers(-3, 4)
        if kind == "ties":
            s = np.round(s, 1)
        if kind == "nan" and n > 1:
            s[0, n - 1, 0] = np.nan
        if kind == "inf" and n > 1:
            s[2, 1, 1] = np.inf
        if kind == "fortran":
            s = np.asfortranarray(s)
        a, sq = rng.random((3, n, n)), rng.random((3, n))
        got = layer_features(s, a, sq)
        steps = adjacent_differences(s)
        want = {
            "score": s[:, rows, cols],
            "attn": a[:, rows, cols],
            "sq_norm": sq,
            "diag_step": steps[:, diagonal],
            "step": steps[:, ~diagonal],
            "row_trend": row_trends(s),
            "trend": trend(s)[:, None],
            "rp": recency_fraction(s)[:, None],
        }
        assert set(want) == set(lay)
        for name, cols_ in lay.items():
            assert got[:, cols_].tobytes() == np.ascontiguousarray(want[name]).tobytes(), (
                kind,
                name,
            )
