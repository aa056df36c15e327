"""Streaming means and standard errors, and control variates with known means.

Each sample block yields :class:`Moments`: the count, the mean and M2 (sum of squared deviations
from the mean) of every feature, and the co-moment of each control feature of every layer with
the same feature of the first layer. Blocks are merged with the parallel update of Chan, Golub
and LeVeque (1979), always in block order, so the result does not depend on how blocks were
grouped into chunks or spread over workers.

Control variates (:func:`control_variate`). For a feature x of layer l and its control c (the same
feature in layer 1, whose mean mu is known exactly, see :func:`recency_lib.features.
control_means`), x - beta (c - mu) has the mean of x for any fixed beta, and the smallest variance
at beta = Cov(x, c) / Var(c). Fitting beta on the same samples would bias the estimate by O(1/N)
and make its standard error optimistic, so the samples are split in two groups by block parity
(even and odd blocks, independent random streams) and each group is corrected with the beta fitted
on the other (cross-fitting): the estimate is exactly unbiased, and its standard error is the
group's own spread of x - beta c. The two group estimates are combined with weights proportional
to their sample counts; their covariance, O(1/N^2) through the betas, is neglected.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass
class Moments:
    count: int
    mean: np.ndarray  # (..., features)
    m2: np.ndarray  # (..., features) sum of squared deviations from the mean
    cross: np.ndarray | None = None  # (layers, controls): sum of (x_l - mean_l)(x_1 - mean_1)
    single: bool = (
        False  # one finite sample: m2 and cross are zeros (not pickled; skipped in merges)
    )

    @classmethod
    def of(cls, x: np.ndarray, controls: slice | None = None) -> Moments:
        """Two-pass moments over axis 0 (the samples); NaNs propagate (used for 'undefined').
        With ``controls``, ``x`` is (B, layers, F) and the co-moments of those feature columns (the
        last ones) with layer 1 are kept too."""
        if x.shape[0] == 1 and np.isfinite(x).all():  # one sample (long sequences): no spread
            zero = np.zeros(x.shape[1:])
            if controls is None:
                return cls(1, x[0].copy(), zero, single=True)
            return cls(1, x[0].copy(), zero, np.zeros(x[0][:, controls].shape), single=True)
        mean = x.mean(axis=0)
        dev = x - mean
        m2 = np.einsum("b...,b...->...", dev, dev)
        if controls is None:
            return cls(x.shape[0], mean, m2)
        cross = np.einsum("blc,bc->lc", dev[:, :, controls], dev[:, 0, controls])
        return cls(x.shape[0], mean, m2, cross)

    @classmethod
    def from_sums(
        cls,
        count: int,
        shift: np.ndarray,
        s1: np.ndarray,
        s2: np.ndarray,
        sc: np.ndarray,
        controls: slice,
    ) -> Moments:
        """Moments from shifted sums: s1 = sum (x - shift), s2 = sum (x - shift)^2 and
        sc = sum (x_l - shift_l)(x_1 - shift_1) over the controls. With the shift a sample of the
        same data (the compiled kernel uses the block's first), s1 / count is of the size of a
        standard deviation and the subtractions below lose no more than a few digits of 16.
        Arrays (layers, F), or (blocks, layers, F) for several blocks of ``count`` samples at once
        (:meth:`unstack` splits them; the same numbers, element by element)."""
        d1 = s1 / count
        m2 = np.maximum(s2 - s1 * d1, 0.0)
        cross = sc - s1[..., controls] * d1[..., :1, controls]
        return cls(count, shift + d1, m2, cross)

    def unstack(self) -> list[Moments]:
        """Moments of blocks stacked on a first axis -> one Moments per block (views)."""
        return [
            Moments(
                self.count, self.mean[b], self.m2[b], None if self.cross is None else self.cross[b]
            )
            for b in range(self.mean.shape[0])
        ]

    def merge(self, other: Moments) -> Moments:
        """Chan et al. merge: exact in real arithmetic, stable in floating point. A new object; see
        :meth:`merge_into` for the in-place form (the same numbers, bit for bit)."""
        return self.copy().merge_into(other)

    def merge_into(self, other: Moments) -> Moments:
        """:meth:`merge` that overwrites this object's arrays (no new arrays of the features' size:
        at n = 512 a block's moments are ~30 MB, and allocating them anew per block costs more than
        the arithmetic). The operations and their order are those of the textbook formulas
        mean + delta n_b / n and (m2_a + m2_b) + delta^2 n_a n_b / n, so the result is bitwise that
        of :meth:`merge`. Returns self."""
        n_a, n_b = self.count, other.count
        n = n_a + n_b
        delta = np.subtract(other.mean, self.mean)  # (..., features)
        if not other.single:  # a single sample's m2 and cross are zeros: adding them changes at
            self.m2 += other.m2  # most the sign of a zero (-0.0 + 0.0 = +0.0), so they are skipped
        if self.cross is not None:
            c = slice(
                self.mean.shape[-1] - self.cross.shape[-1], None
            )  # the controls are the last columns
            if not other.single:
                self.cross += other.cross
            self.cross += delta[:, c] * delta[:1, c] * (n_a * n_b / n)
        self.mean += delta * (n_b / n)
        delta *= delta
        delta *= n_a * n_b / n
        self.m2 += delta
        self.count = n
        self.single = False
        return self

    def copy(self) -> Moments:
        return Moments(
            self.count,
            self.mean.copy(),
            self.m2.copy(),
            None if self.cross is None else self.cross.copy(),
            self.single,
        )

    def __getstate__(self) -> dict:
        """Pickled without the zeros of a single sample (at n = 512 that is 20 of a block's 33 MB,
        sent from a worker process to the main one for every sample)."""
        state = dict(self.__dict__)
        if self.single:
            state["m2"] = self.m2.shape
            state["cross"] = None if self.cross is None else self.cross.shape
        return state

    def __setstate__(self, state: dict) -> None:
        if state.get("single"):
            state = dict(state)
            state["m2"] = np.zeros(state["m2"])
            state["cross"] = None if state["cross"] is None else np.zeros(state["cross"])
        self.__dict__.update(state)

    @property
    def sem(self) -> np.ndarray:
        """Standard error of the mean: sample std (ddof = 1) / sqrt(count)."""
        return np.sqrt(self.m2 / (self.count - 1) / self.count)


def merged(groups) -> Moments:
    """The moments of all samples of ``groups`` (a list of Moments or None, merged in list order)."""
    out = None
    for g in groups:
        if g is not None:
            out = g.copy() if out is None else out.merge_into(g)
    return out


def control_variate(groups, mu: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Cross-fitted control-variate estimates and standard errors of the controls, (layers, controls).

    ``groups``: the two :class:`Moments` of the even and odd blocks (either may be None: a run of
    one block); ``mu``: the exact layer-1 means of the controls. For group B with the coefficient
    beta_A = C_A / M2_A[layer 1] of group A (0 where M2_A[layer 1] = 0, e.g. at alpha = 1):

        theta_B = mean_B[l] - beta_A (mean_B[1] - mu),
        se_B^2  = (M2_B[l] - 2 beta_A C_B[l] + beta_A^2 M2_B[1]) / ((N_B - 1) N_B),

    and the two are combined as (N_A theta_A + N_B theta_B) / N with se^2 = (N_A^2 se_A^2 +
    N_B^2 se_B^2) / N^2. With one group only (or one of fewer than 2 samples), beta = 0: the plain
    mean and standard error of all samples. Layer 1 itself gets its plain estimate (its corrected
    estimate would be mu exactly, which teaches nothing).
    """
    nc = mu.shape[0]
    plain = merged(groups)
    present = [g for g in groups if g is not None and g.count >= 2]
    if len(present) < 2:
        return plain.mean[:, -nc:].copy(), plain.sem[:, -nc:].copy()
    total = sum(g.count for g in present)
    est = np.zeros_like(present[0].mean[:, -nc:])
    var = np.zeros_like(est)
    for g, other in ((present[0], present[1]), (present[1], present[0])):
        beta = _beta(other, nc)  # (layers, controls)
        x, c = g.mean[:, -nc:], g.mean[:1, -nc:]
        theta = x - beta * (c - mu)
        m2_x, m2_c, cross = g.m2[:, -nc:], g.m2[:1, -nc:], g.cross
        v = np.maximum(m2_x - 2 * beta * cross + beta * beta * m2_c, 0.0) / (
            (g.count - 1) * g.count
        )
        w = g.count / total
        est += w * theta
        var += w * w * v
    est[0], var[0] = plain.mean[0, -nc:], plain.sem[0, -nc:] ** 2  # layer 1: plain (see docstring)
    return est, np.sqrt(var)


def _beta(g: Moments, nc: int) -> np.ndarray:
    """Cov / Var of each control of every layer with layer 1 in group g; 0 where Var = 0."""
    var_c = g.m2[:1, -nc:]
    with np.errstate(invalid="ignore", divide="ignore"):
        beta = np.where(var_c > 0, g.cross / np.where(var_c > 0, var_c, 1.0), 0.0)
    return np.where(np.isfinite(beta), beta, 0.0)


def pm(value: float, se: float) -> str:
    """ "0.6031 ± 0.0012": a value with its standard error, to the SE's two significant digits."""
    if not (math.isfinite(value) and math.isfinite(se)) or se <= 0:
        return f"{value:.6g} (SE 0)" if math.isfinite(value) and se == 0 else f"{value:.4g}"
    digits = max(0, 1 - int(math.floor(math.log10(se))))
    return f"{value:.{digits}f} ± {se:.{digits}f}"
