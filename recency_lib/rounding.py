"""What float64 cannot order: the book's tolerances for rounding, each defined once.

Scores of size s carry rounding of about s * 2.2e-16 per operation. A step (a difference of two
mean scores) below :func:`resolution` is rounding, never a decision (recency_lib.metrics); two
scores of one sample within :data:`TIE_RTOL` of the matrix's size are a tie in the recency count
(the kernel counts with it, so it is part of the simulation); a standard error within
:data:`EXACT_RTOL` of its value is rounding too: the quantity is exact (e.g. sqrt(d)).
"""

import numpy as np

TIE_RTOL = 1e-10  # two scores of a sample closer than this times max(1, max |S|) tie
ROUNDING_ULPS = 64  # a mean step below this many epsilons of the scores' size is rounding
EXACT_RTOL = 1e-12  # a standard error below this fraction of max(1, |value|) is rounding


def resolution(scale: float) -> float:
    """The smallest difference float64 resolves between numbers of size ``scale``."""
    return ROUNDING_ULPS * np.finfo(np.float64).eps * max(1.0, abs(float(scale)))


def undecidable(value, se, z: float, scale: float):
    """Whether a difference ``value`` (error ``se``; numbers or arrays) is never decided at ``z``: a
    zero error, or the difference and its z-error both within the :func:`resolution` of scale."""
    floor = resolution(scale)
    return (se <= 0) | ((np.abs(value) <= floor) & (z * se <= floor))


def is_exact(value, se) -> bool:
    """Whether ``se`` is zero or rounding: a quantity without sampling noise."""
    return float(se) <= EXACT_RTOL * max(1.0, abs(float(value)))
