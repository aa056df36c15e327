"""The book's one decision level and the z-scores it is applied to, in a module of their own: the
conventions and the number formatting quote them (:mod:`companion.conventions`, :mod:`companion.report`),
and so do the statistics (:mod:`companion.statistics`), without any of them bringing the others' imports
into a page's dependencies or a cached statistic's key.

One family-wise error level for every decision the book draws from Monte Carlo, and the z it implies
for a family of ``k`` comparisons decided together (Bonferroni). A single comparison is a family of one.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from recency_lib.metrics import familywise_z
from recency_lib.validation import check_int

#: Family-wise error level of every Monte-Carlo decision in the book: a verdict (a family of k
#: comparisons tested together) is wrong by chance with probability at most 5 %.
FAMILYWISE_LEVEL = 0.05


def z_for(comparisons: int = 1) -> float:
    """The z a deviation must exceed when ``comparisons`` two-sided tests are decided together at
    :data:`FAMILYWISE_LEVEL` (Bonferroni): 1.96 for one, 3.26 for the 45 adjacent differences of
    Definition 1 at n = 10."""
    return familywise_z(comparisons, FAMILYWISE_LEVEL)


def adjacent_pairs(n: int) -> int:
    """Number of adjacent differences S_ij - S_i,j-1 (1 < j <= i <= n) that Definition 1 tests: n(n-1)/2."""
    n = check_int("n", n, 1)
    return n * (n - 1) // 2


def zscore(value, se, ref: float = 0.0) -> float:
    """(value - ref) / se; a zero error gives ±inf (or 0 when value == ref)."""
    value, se, ref = real("value", value), real("se", se), real("ref", ref)
    if se < 0:
        raise ValueError(f"se={se!r} is out of range; allowed: a standard error >= 0")
    if se > 0:
        return (value - ref) / se
    return 0.0 if value == ref else math.copysign(math.inf, value - ref)


def real(name: str, x) -> float:
    """``x`` as a float; a ValueError naming ``name`` unless it is a real number (not a bool)."""
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, numbers.Real):
        raise ValueError(f"{name}={x!r} is not a number; allowed: a real number")
    return float(x)
