"""What float64 cannot order: the book's tolerances for rounding, each defined once.

Scores of size s carry rounding of about s * 2.2e-16 per operation. A step (a difference of two
mean scores) below :func:`resolution` is rounding, never a decision (recency_lib.metrics); two
scores of one sample within :data:`TIE_RTOL` of the matrix's size are a tie in the recency count
(the kernel counts with it, so it is part of the simulation); a standard error below
:func:`resolution` of its value is exact (a quantity without sampling noise, e.g. sqrt(d)).
"""

import numpy as np

TIE_RTOL = 1e-10  # two scores of a sample closer than this times max(1, max |S|) tie
ROUNDING_ULPS = 64  # a mean step below this many epsilons of the scores' size is rounding


def resolution(scale: float) -> float:
    """The smallest difference float64 resolves between numbers of size ``scale``."""
    return ROUNDING_ULPS * np.finfo(np.float64).eps * max(1.0, abs(float(scale)))
