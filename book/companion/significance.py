"""The book's one decision level and the z-scores it is applied to, in a module of their own: a
cached statistic's key hashes companion.statistics and its imports, and none of the book's prose."""

from __future__ import annotations

import math

from recency_lib.metrics import LEVEL as FAMILYWISE_LEVEL
from recency_lib.metrics import familywise_z


def z_for(comparisons: int = 1) -> float:
    """The Bonferroni z of ``comparisons`` two-sided tests at :data:`FAMILYWISE_LEVEL`."""
    return familywise_z(comparisons, FAMILYWISE_LEVEL)


def adjacent_pairs(n: int) -> int:
    """The adjacent differences S_ij - S_i,j-1 (1 < j <= i <= n) Definition 1 tests: n(n-1)/2."""
    return n * (n - 1) // 2


def zscore(value, se, ref: float = 0.0) -> float:
    """(value - ref) / se; a zero ``se`` gives ±inf (0 when value == ref)."""
    dev = float(value) - float(ref)
    if se > 0:
        return dev / float(se)
    return 0.0 if dev == 0 else math.copysign(math.inf, dev)
