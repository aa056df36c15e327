"""Streaming means and standard errors with a numerically sound merge.

Each sample block yields (count, mean, M2) per feature, M2 being the sum of squared deviations
from the block mean. Blocks are merged with the parallel-variance update of Chan, Golub and
LeVeque (1979), always in block order, so the result does not depend on how blocks were grouped
into chunks or spread over workers.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Moments:
    count: int
    mean: np.ndarray        # (..., features)
    m2: np.ndarray          # (..., features) sum of squared deviations

    @classmethod
    def of(cls, x: np.ndarray) -> "Moments":
        """Moments over axis 0 (the samples of one block); NaNs propagate (used for 'undefined')."""
        mean = x.mean(axis=0)
        dev = x - mean
        return cls(x.shape[0], mean, np.einsum("b...,b...->...", dev, dev))

    def merge(self, other: "Moments") -> "Moments":
        """Chan et al. merge: exact in real arithmetic, stable in floating point."""
        n_a, n_b = self.count, other.count
        n = n_a + n_b
        delta = other.mean - self.mean
        mean = self.mean + delta * (n_b / n)
        m2 = self.m2 + other.m2 + delta * delta * (n_a * n_b / n)
        return Moments(n, mean, m2)

    @property
    def sem(self) -> np.ndarray:
        """Standard error of the mean: sample std (ddof = 1) / sqrt(count)."""
        return np.sqrt(self.m2 / (self.count - 1) / self.count)
