"""The compiled causal softmax (the dense engine's extended layer, chapter 8)
against the numpy one."""

from __future__ import annotations

import numpy as np
import pytest

from recency_lib import kernels
from recency_lib.model import causal_softmax

pytestmark = pytest.mark.skipif(kernels.load() is None, reason="the C kernel was not built")


@pytest.mark.parametrize(
    "shape", [(1, 1), (3, 7, 7), (2, 4, 10, 10), (1, 2, 129, 129), (1, 512, 512)]
)
def test_the_compiled_softmax_is_numpys_to_rounding(shape):
    s = np.random.default_rng(sum(shape)).standard_normal(shape) * 8
    got, ref = kernels.load().causal_softmax(s), causal_softmax(s)
    assert got.shape == ref.shape
    np.testing.assert_allclose(got, ref, rtol=2e-15, atol=1e-300)
    assert np.array_equal(got == 0, ref == 0)  # zero above the diagonal, nowhere else
    np.testing.assert_allclose(got.sum(axis=-1), 1.0, rtol=4e-15)


def test_nan_and_infinite_scores_give_numpys_rows():
    s = np.array(
        [
            [
                [1.0, 5.0, 5.0, 0.0],
                [np.nan, 2.0, 0.0, 0.0],
                [-np.inf, 0.0, 3.0, 0.0],
                [-np.inf, np.inf, 1.0, 2.0],
            ]
        ]
    )
    with np.errstate(invalid="ignore"):
        ref = causal_softmax(s)
    got = kernels.load().causal_softmax(s)
    assert np.array_equal(np.isnan(got), np.isnan(ref))
    np.testing.assert_allclose(got[~np.isnan(got)], ref[~np.isnan(ref)], rtol=2e-15)
    assert got[0, 2, 0] == 0.0 and np.isnan(got[0, 1]).all()


def test_bad_shapes_are_refused():
    with pytest.raises(ValueError, match="expected"):
        kernels.load().causal_softmax(np.zeros((3, 4)))
