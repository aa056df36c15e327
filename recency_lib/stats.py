"""Streaming means and standard errors, and control variates with known means.

Each block yields :class:`Moments` (count, mean, M2 of every feature, and each control feature's
co-moment with layer 1's), merged by Chan, Golub and LeVeque's update (1979) in block order, so
chunks and workers never change a bit. Control variates (:func:`control_variate`): x - beta (c -
mu), c layer 1's value of the feature with known mean mu, keeps x's mean for a fixed beta; beta is
fitted on the other half of the blocks (even against odd: cross-fitting), so the estimate stays
unbiased and its standard error honest.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .rounding import is_exact


@dataclass
class Moments:
    count: int
    mean: np.ndarray  # (..., features)
    m2: np.ndarray  # (..., features) sum of squared deviations from the mean
    cross: np.ndarray | None = None  # (layers, controls): sum of (x_l - mean_l)(x_1 - mean_1)
    single: bool = False  # one finite sample: m2 and cross are zeros (not pickled, not added)

    @classmethod
    def of(cls, x: np.ndarray, controls: slice | None = None) -> Moments:
        """Two-pass moments over axis 0 (the samples); with ``controls``, ``x`` is (B, layers, F)
        and those last columns' co-moments with layer 1 are kept too."""
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
    def from_sums(cls, count, shift, s1, s2, sc, controls: slice) -> Moments:
        """Moments from the kernel's shifted sums s1 = sum (x - shift), s2 = sum (x - shift)^2,
        sc = sum (x_l - shift_l)(x_1 - shift_1) (shift: a sample, so little is cancelled); arrays
        (layers, F), or (blocks, layers, F) for blocks of ``count`` samples (:meth:`unstack`)."""
        d1 = s1 / count
        m2 = np.maximum(s2 - s1 * d1, 0.0)
        cross = sc - s1[..., controls] * d1[..., :1, controls]
        return cls(count, shift + d1, m2, cross)

    def unstack(self) -> list[Moments]:
        """Moments of blocks stacked on a first axis -> one Moments per block (views)."""
        cross = [None] * len(self.mean) if self.cross is None else self.cross
        return [Moments(self.count, *a) for a in zip(self.mean, self.m2, cross)]

    def merge(self, other: Moments) -> Moments:
        """Chan et al.'s merge into a new object (:meth:`merge_into`: in place, the same bits)."""
        return self.copy().merge_into(other)

    def merge_into(self, other: Moments) -> Moments:
        """Merge ``other`` into this object's arrays (no allocation per block): mean + delta n_b / n
        and (m2_a + m2_b) + delta^2 n_a n_b / n, in that order. Returns self."""
        n_a, n_b = self.count, other.count
        n = n_a + n_b
        delta = np.subtract(other.mean, self.mean)  # (..., features)
        if not other.single:  # (adding a single sample's zeros could flip the sign of a zero)
            self.m2 += other.m2
        if self.cross is not None:
            c = slice(self.mean.shape[-1] - self.cross.shape[-1], None)  # the last columns
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
        cross = None if self.cross is None else self.cross.copy()
        return Moments(self.count, self.mean.copy(), self.m2.copy(), cross, self.single)

    def __getstate__(self) -> dict:
        """Pickled without a single sample's zeros (most of a block's bytes at n = 512)."""
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
    """The moments of all samples of ``groups`` (Moments or None), merged in order."""
    out = None
    for g in groups:
        if g is not None:
            out = g.copy() if out is None else out.merge_into(g)
    return out


def control_variate(groups, mu: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Cross-fitted control-variate estimates and standard errors, (layers, controls).

    ``groups``: the even and odd blocks' :class:`Moments`; ``mu``: layer 1's exact means. Group B,
    corrected with group A's beta_A = C_A / M2_A[layer 1]:

        theta_B = mean_B[l] - beta_A (mean_B[1] - mu),
        se_B^2  = (M2_B[l] - 2 beta_A C_B[l] + beta_A^2 M2_B[1]) / ((N_B - 1) N_B),

    combined in proportion to N_A and N_B. One group only: the plain estimates; layer 1: plain.
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
        spread = np.maximum(m2_x - 2 * beta * cross + beta * beta * m2_c, 0.0)
        v = spread / ((g.count - 1) * g.count)
        w = g.count / total
        est += w * theta
        var += w * w * v
    est[0], var[0] = plain.mean[0, -nc:], plain.sem[0, -nc:] ** 2  # layer 1: plain
    return est, np.sqrt(var)


def _beta(g: Moments, nc: int) -> np.ndarray:
    """Cov / Var of each control of every layer with layer 1 in group g; 0 where Var = 0."""
    var_c = g.m2[:1, -nc:]
    with np.errstate(invalid="ignore", divide="ignore"):
        beta = np.where(var_c > 0, g.cross / np.where(var_c > 0, var_c, 1.0), 0.0)
    return np.where(np.isfinite(beta), beta, 0.0)


# -- the one format of a number, and of an estimate with its error -------------------------------

MINUS, PM = "\u2212", "\u00b1"
_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")
SCI_BELOW, SCI_FROM = 1e-3, 1e5  # magnitudes outside [SCI_BELOW, SCI_FROM) get a power of ten


def minus(text: str) -> str:
    """``text`` with the typographic minus sign."""
    return text.replace("-", MINUS)


def power_of_ten(k: int) -> str:
    """ "10⁻⁵" for k = -5."""
    return "10" + str(int(k)).translate(_SUPERSCRIPT)


def _decimals(se: float) -> int:
    """Decimal places that show ``se`` to one or two significant digits (the Particle Data Group's
    rule: two when its leading digits are 100-354, one for 355-949, 950-999 rounds up to 1.0)."""
    mantissa, exp = f"{se:.2e}".split("e")
    lead = int(mantissa.replace(".", ""))
    digits = 2 if lead < 355 or lead >= 950 else 1
    return digits - 1 - int(exp) - (1 if lead >= 950 else 0)


def pm(mean, se, *, min_places: int = 0) -> str:
    """An estimate and its standard error, the error to one or two significant digits and the mean
    to the same places (at least ``min_places``), a shared power of ten outside [10⁻³, 10⁵):
    "0.5231 ± 0.0012", "(7.2 ± 0.8) × 10⁻⁵"; an exact value (:func:`is_exact`) alone."""
    mean, se = float(mean), float(se)
    if not math.isfinite(mean):
        return num(mean)
    if math.isnan(se) or math.isinf(se):
        return f"{num(mean)} {PM} {'?' if math.isnan(se) else '∞'}"
    if is_exact(mean, se):
        return num(mean)
    big = max(abs(mean), se)
    if SCI_BELOW <= big < SCI_FROM:
        places = max(min_places, _decimals(se), 0)
        return minus(f"{mean:.{places}f} {PM} {se:.{places}f}")
    k = math.floor(math.log10(big))
    m, s = mean / 10**k, se / 10**k
    places = max(_decimals(s), 0)
    return minus(f"({m:.{places}f} {PM} {s:.{places}f}) × ") + power_of_ten(k)


def num(x, sig: int = 3) -> str:
    """A number to ``sig`` significant digits: "0.0312", "1.2 × 10⁻⁷", "64" (an integer as
    such)."""
    x = float(x)
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return ("" if x > 0 else MINUS) + "∞"
    if x == 0:
        return "0"
    if SCI_BELOW <= abs(x) < SCI_FROM:
        if x == round(x) and abs(x) >= 10 ** (sig - 1):
            return minus(f"{x:.0f}")
        text = f"{x:.{sig}g}"
        return minus(f"{x:.0f}" if "e" in text else text)  # 1.2e+04 from :g, written out
    mant, exp = f"{x:.{sig - 1}e}".split("e")
    return minus(mant) + " × " + power_of_ten(int(exp))
