"""Every closed form the book quotes, held to simulation.

Appendix A's closed forms (:mod:`recency_lib.theory`, as printed and corrected) replace random inner
products by their large-d (LLN) values. Each entry of :data:`CLOSED_FORMS` says which simulated
number it predicts and how to read it off a SimResult; :func:`measure` reports simulated / closed
form at several d, for the **level** (the size of the quantity) and the **step** (its mean adjacent
step along the keys j, what orders them), and :func:`judge` gives each row a verdict. A SimResult
stores SEs, not covariances, so the SE of a mean over entries or of a difference of two is a
Minkowski bound (``bound``, marked †); the score steps are per-sample features with exact SEs.
Indices are 1-based (the paper's) in names and docstrings.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from functools import partial

import numpy as np

from recency_lib import inputs, theory
from recency_lib.cache import cached_simulate_many, cached_value
from recency_lib.config import SimConfig
from recency_lib.norms import NORMS
from recency_lib.result import SimResult
from recency_lib.validation import check_int

from . import conventions
from . import settings as book_settings
from .conventions import H_ALPHAS, alpha_label, variant_short
from .report import Html, curve_columns, download, is_exact, nowrap, num, pm, z_text, zscore
from .statistics import earlier_steps, s2_order, sequences_needed, simulated_h
from .verdicts import UNRESOLVED

LAYERS = 2  # every closed form here is about layer 1 or layer 2
BOUND_MARK = "\u2020"  # "†": the printed SE is an upper bound (Minkowski), not an estimate
DEFAULT_DS = (16, 64, 256)
DEFAULT_BOOST = 8  # Theorem 1's setting gets boost × samples: its scores are e^{-√d} small
Z_RESOLVE = 3.0  # a ratio is reported where the simulated value is this many SE from 0
Z_ERRATUM = 5.0  # a ratio more than this many SE from 1 is off


@dataclass(frozen=True)
class Setting:
    """The model a closed form describes: normalization, anisotropy α (Eq. (6)), residual γ."""

    norm: str
    alpha: float
    gamma: float

    @property
    def label(self) -> str:
        """The setting's name for narrow places: "LN + residual, α = 0.5"."""
        return f"{variant_short(self.config(16, 3, 2, 0))}, {alpha_label(self.alpha)}"

    def config(self, d: int, n: int, samples: int, seed: int) -> SimConfig:
        """The two-layer simulation of this setting (gram engine, exact for the paper's model)."""
        return SimConfig(
            **asdict(self), n=n, d=d, layers=LAYERS, samples=samples, seed=seed, engine="gram"
        )


# The paper's Figure 1, row by row: Proposition 1, Theorem 1, Proposition 3, Propositions 2 + 3
P, T, A, AR = (Setting(c.norm, c.alpha, c.gamma) for c in book_settings.fig1_configs())
R = replace(T, gamma=AR.gamma)  # Proposition 2: Theorem 1's setting with the residual
RAW = replace(P, alpha=A.alpha)  # the raw anisotropic tokens of Eqs. (6), (22)


@dataclass(frozen=True)
class Estimate:
    """A simulated number with its SE; ``bound``: the SE is an upper bound (Minkowski)."""

    value: float
    se: float
    bound: bool = False


@dataclass(frozen=True)
class Part:
    """One number a closed form predicts: ``form(setting, d, n)`` against ``read(measured)`` (an
    Estimate; ``measured`` is a SimResult, or an Estimate for the cosine forms). ``flat``: the form
    says 0 (no dependence on j), tested as a z-score against 0."""

    form: Callable[[Setting, float, int], float]
    read: Callable[[object], Estimate]
    flat: bool = False


@dataclass(frozen=True)
class ClosedForm:
    """A closed form the book quotes, the settings it describes and the numbers it predicts."""

    key: str
    equation: str  # its label, e.g. "Eq. (5) = Eq. (11)"
    version: str  # "as printed", "corrected", ...
    settings: tuple[Setting, ...]
    numbers: tuple[int, ...]  # the paper's equations it stands for
    level: Part | None
    step: Part | None
    figures: tuple[int, ...] = ()  # the paper's figures it draws
    source: str = "gram"  # "gram": a SimResult; "cosine": inputs.input_cosine_similarity


# -- reading simulated numbers --------------------------------------------------------------------


def profile_level(values, sems) -> Estimate:
    """The mean of a profile; of several entries with an SE bounded by their mean SE."""
    values, sems = np.asarray(values, float), np.asarray(sems, float)
    if values.size == 1:
        return Estimate(float(values[0]), float(sems[0]))
    return Estimate(float(values.mean()), float(sems.mean()), bound=True)


def profile_step(values, sems) -> Estimate:
    """The mean adjacent step (last − first)/(m − 1) of a profile, SE bounded by the ends'
    SEs."""
    values, sems = np.asarray(values, float), np.asarray(sems, float)
    m = values.size
    step = float(values[-1] - values[0]) / (m - 1)
    return Estimate(step, float(sems[0] + sems[-1]) / (m - 1), bound=True)


def last_row(res, which: str, layer: int):
    """Row n of a (layers, n, n) field ("score", "attn") over the keys j < n: (means, SEs)."""
    n = res.config.n
    mean, sem = getattr(res, f"{which}_mean")[layer], getattr(res, f"{which}_sem")[layer]
    return mean[n - 1, : n - 1], sem[n - 1, : n - 1]


def sq_norms(res, layer: int):
    """E‖x_j‖² of the state fed to ``layer`` (0: the inputs; centred for LayerNorm),
    j = 1..n."""
    return res.sq_norm_mean[layer], res.sq_norm_sem[layer]


def h_profile(res, scale: float = 1.0):
    """h(j) = 1/‖x_j^(1)‖ (Eq. (40)) as scale / √(E‖x_j^(1)‖²), with delta-method SEs."""
    m, se = sq_norms(res, 1)
    return scale * m**-0.5, scale * 0.5 * m**-1.5 * se


def h_growth(res) -> tuple[np.ndarray, np.ndarray]:
    """h(j)/h(1) = √(E‖x_1^(1)‖² / E‖x_j^(1)‖²), j = 1..n (the paper's Figure 5), with
    an SE bound (the two norms' relative errors added)."""
    m, se = sq_norms(res, 1)
    ratio = np.sqrt(m[0] / m)
    bound = 0.5 * ratio * (se[0] / m[0] + se / m)
    bound[0] = 0.0
    return ratio, bound


def prop1_dip(res) -> dict[str, np.ndarray]:
    """Row n of S^(2) without normalization over its mean, minus 1 (``sim``, ``se``; the row mean's
    own error left out), beside the next order beyond the LLN (``predicted``, :func:`prop1_row_rise`
    less its mean; the LLN says 0), at the keys ``j`` < n."""
    values, sems = last_row(res, "score", 1)
    j = np.arange(1, res.config.n)
    rise = prop1_row_rise(j, res.config.d)
    mean = values.mean()
    return {
        "j": j,
        "sim": values / mean - 1.0,
        "se": sems / abs(mean),
        "predicted": rise - rise.mean(),
    }


def score_row_step(res, layer: int) -> Estimate:
    """The mean adjacent step of row n of S^(layer+1) over the keys j < n (control variates)."""
    n = res.config.n
    return Estimate(
        float(res.row_trend_cv_mean[layer][n - 1]), float(res.row_trend_cv_sem[layer][n - 1])
    )


def score_trend(res, layer: int) -> Estimate:
    """The trend of S^(layer+1), its mean step S_ij − S_i,j−1, 2 <= j < i (control variates)."""
    return Estimate(float(res.trend_cv_mean[layer]), float(res.trend_cv_sem[layer]))


def paired_step(res, layer: int, i: int, j: int) -> Estimate:
    """One step S_ij − S_i,j−1 of S^(layer+1) (control variates; plain for j = i)."""
    return Estimate(
        float(res.diff_cv_mean[layer][i - 1, j - 1]), float(res.diff_cv_sem[layer][i - 1, j - 1])
    )


# -- closed forms that theory does not provide ----------------------------------------------------


def layer1_offdiag_weight(alpha, d, n: int):
    """A^(1)_nj, j < n, in the LLN (Eqs. (4), (25)-(26)): t / (1 + (n − 1) t),
    t = e^{-(1−α)√d}."""
    t = np.exp(-(1.0 - np.asarray(alpha, float)) * np.sqrt(np.asarray(d, float)))
    return t / (1.0 + (n - 1) * t)


def prop1_row_rise(j, d):
    """Relative rise of a mean second-layer row without normalization beyond the LLN (α = γ = 0):
    E S^(2)_ij = c_i (1 + d^{-3/2} (1 − 1/j) + O(d^-2)), j < i, c_i the corrected Eq. (19), from
    the correlation of query j's layer-1 weights with the inner products they multiply."""
    return np.asarray(d, float) ** -1.5 * (1.0 - 1.0 / np.asarray(j, float))


def off_diagonal_steps(n: int) -> tuple[np.ndarray, np.ndarray]:
    """1-based (i, j) of the steps S_ij − S_i,j−1, 2 <= j < i <= n, row by row (the trend's)."""
    i, j = earlier_steps(n)
    return i + 1, j + 1


def prop1_trend(d, n: int) -> float:
    """The mean off-diagonal step of E S^(2) without normalization by :func:`prop1_row_rise`:
    row i's steps add up to c_i rise(i − 1), c_i the corrected Eq. (19)."""
    i = np.arange(3, n + 1)
    c = theory.prop1_score_corrected(i, 1, d)
    return float(np.sum(c * prop1_row_rise(i - 1, d)) / ((n - 1) * (n - 2) // 2))


def definition1_samples(res, z: float, theorem1: bool = False) -> tuple[float, int, int]:
    """Sequences that would put every step S_ij − S_i,j−1 (2 <= j < i) of S^(2) ``z`` SE above 0
    at once, with the control-variate SEs of ``res``, taking as the truth the LLN's steps
    (theory.score2_step_corrected) or, with ``theorem1``, the corrected Theorem 1's (its setting
    only; NaN where its series is not positive, d < 16). Returns (sequences, i, j) of the hardest
    step."""
    cfg = res.config
    i, j = off_diagonal_steps(cfg.n)
    if theorem1:
        step = theory.theorem1_steps(cfg.n, cfg.d)[2]  # the same pairs, in the same order
        if not np.all(np.isfinite(step) & (step > 0)):
            return math.nan, 0, 0
    else:
        step = theory.score2_step_corrected(i, j, cfg.alpha, cfg.gamma, cfg.d, cfg.norm)
    sems = res.diff_cv_sem[1][i - 1, j - 1]
    need = [sequences_needed(se, cfg.samples, s, z) for se, s in zip(sems, step)]
    k = int(np.argmax(need))
    return float(need[k]), int(i[k]), int(j[k])


# -- the registry ---------------------------------------------------------------------------------


def _tokens(n):
    return np.arange(1, n + 1)  # j = 1..n


def _keys(n):
    return np.arange(1, n)  # the keys j < n of query n


def _level(profile, simulated) -> Part:
    """The mean of a closed-form profile(s, d, n) against that of a simulated one (means, SEs)."""
    return Part(
        lambda s, d, n: float(np.mean(profile(s, d, n))), lambda r: profile_level(*simulated(r))
    )


def _step(profile, simulated) -> Part:
    """The mean adjacent step of a closed-form profile against that of a simulated one."""

    def form(s, d, n):
        p = np.asarray(profile(s, d, n), float)
        return float(p[-1] - p[0]) / (p.size - 1)

    return Part(form, lambda r: profile_step(*simulated(r)))


def _flat(read) -> Part:
    return Part(lambda s, d, n: 0.0, read, flat=True)


def _score_row(layer):
    return lambda r: last_row(r, "score", layer)


def _attn_row(r):
    return last_row(r, "attn", 0)


def _norms(layer):
    return lambda r: sq_norms(r, layer)


def _h(scale_of_d):
    return lambda r: h_profile(r, scale_of_d(r.config.d))


def _trend(r):
    return score_trend(r, 1)


def _diagonal_attention(r):  # A^(1)_nn
    return Estimate(float(r.attn_mean[0][-1, -1]), float(r.attn_sem[0][-1, -1]))


def _registry() -> tuple[ClosedForm, ...]:
    def sized(profile, simulated):  # the level and the step of a profile
        return _level(profile, simulated), _step(profile, simulated)

    def constant(value, simulated, step, m=0):  # value(s, d) at n - m entries, flat in j
        return _level(lambda s, d, n: np.full(n - m, value(s, d)), simulated), _flat(step)

    def tokens(f, scale=None):  # [scale(d) ×] f(j, alpha, gamma, d) at j = 1..n
        if scale is None:
            return lambda s, d, n: f(_tokens(n), s.alpha, s.gamma, d)
        return lambda s, d, n: scale(d) * f(_tokens(n), s.alpha, s.gamma, d)

    # the trend of S^(2) in the LLN: the mean of its corrected steps between earlier keys
    trend = Part(
        lambda s, d, n: float(
            np.mean(theory.score2_step_corrected(*off_diagonal_steps(n), s.alpha, s.gamma, d))
        ),
        _trend,
    )
    flat, flat_attention = _flat(_trend), _flat(lambda r: profile_step(*_attn_row(r)))
    flat_norms = lambda r: profile_step(*sq_norms(r, 0))  # noqa: E731
    flat_row = lambda r: score_row_step(r, 0)  # noqa: E731
    # a profile over the keys j < n of row n: level against that row, step as given
    eq4 = _level(lambda s, d, n: layer1_offdiag_weight(s.alpha, d, n), _attn_row), flat_attention
    eq11 = _level(lambda s, d, n: theory.theorem1_score(n, _keys(n), d), _score_row(1)), trend
    eq10 = sized(lambda s, d, n: theory.sq_norm_eq36(_tokens(n), 0.0, 0.0, d), _norms(1))
    eq14p = constant(lambda s, d: math.sqrt(d), _norms(0), flat_norms)
    eq14c = constant(lambda s, d: 1.0, _norms(0), flat_norms)
    eq15p = Part(lambda s, d, n: float(theory.prop1_attention(n, n, d)), _diagonal_attention)
    eq15c = Part(
        lambda s, d, n: float(theory.prop1_attention_corrected(n, n, d, s.alpha)),
        _diagonal_attention,
    )
    eq19p = _level(lambda s, d, n: theory.prop1_score(n, _keys(n), d), _score_row(1))
    eq19c = _level(
        lambda s, d, n: theory.prop1_score_corrected(n, _keys(n), d, s.alpha), _score_row(1)
    )
    beyond = Part(lambda s, d, n: prop1_trend(d, n), _trend)
    eq22p = constant(lambda s, d: math.sqrt(d) / (1 - s.alpha), _norms(0), flat_norms)
    eq22c = constant(lambda s, d: 1.0 / (1 - s.alpha), _norms(0), flat_norms)
    eq23p = constant(lambda s, d: s.alpha, _score_row(0), flat_row, m=1)
    eq23c = constant(lambda s, d: math.sqrt(d) * s.alpha, _score_row(0), flat_row, m=1)
    eq36p = sized(tokens(theory.sq_norm_eq36), _norms(1))
    eq36c = sized(tokens(theory.sq_norm_corrected), _norms(1))
    eq41p = sized(tokens(theory.h_eq41), _h(lambda d: 1.0))
    eq41c = sized(tokens(theory.h_corrected), _h(lambda d: 1.0))
    eq40 = _level(
        lambda s, d, n: theory.score2_corrected(n, _keys(n), s.alpha, s.gamma, d), _score_row(1)
    )
    fig_p = sized(tokens(theory.h_eq41, math.sqrt), _h(math.sqrt))
    fig_c = sized(tokens(theory.h_corrected, math.sqrt), _h(math.sqrt))
    fig2 = tuple(Setting("layernorm", a, 0.0) for a in H_ALPHAS)  # the paper's Figures 2 and 5
    fig5 = tuple(Setting("layernorm", a, 1.0) for a in H_ALPHAS)
    # the mean pairwise cosine of a sequence's raw tokens (inputs.input_cosine_similarity)
    cos = Part(lambda s, d, n: s.alpha, lambda estimate: estimate)
    cos2 = Part(
        lambda s, d, n: s.alpha + float(inputs.cosine_bias_second_order(s.alpha, d)),
        lambda estimate: estimate,
    )
    lln, printed, corrected = "as printed (= LLN)", "as printed", "corrected"
    next_order, score2 = "this module (prop1_row_rise)", "corrected (theory.score2_corrected)"
    v_cos, v_cos2 = "LLN: cos -> alpha", "second order (inputs.cosine_bias_second_order)"
    fig2_label, fig5_label = (f"the paper's Figure {k} (Eq. (41))" for k in (2, 5))
    return (
        ClosedForm("eq4-attention", "Eqs. (4), (25)-(26)", lln, (T, A), (4, 25, 26), *eq4),
        ClosedForm("eq11", "Eq. (5) = Eq. (11)", lln, (T,), (5, 11), *eq11),
        ClosedForm("eq10", "Eq. (10)", lln, (T,), (10,), *eq10),
        ClosedForm("eq14-printed", "Eq. (14)", printed, (P,), (14,), *eq14p),
        ClosedForm("eq14-corrected", "Eq. (14)", corrected, (P,), (14,), *eq14c),
        ClosedForm("eq15-printed", "Eq. (15)", printed, (P,), (15,), eq15p, flat_attention),
        ClosedForm("eq15-corrected", "Eq. (15)", corrected, (P,), (15,), eq15c, flat_attention),
        ClosedForm("eq19-printed", "Eqs. (17)-(19)", printed, (P,), (17, 18, 19), eq19p, flat),
        ClosedForm("eq19-corrected", "Eqs. (17)-(19)", corrected, (P,), (17, 18, 19), eq19c, flat),
        ClosedForm(
            "prop1-beyond-lln", "Prop. 1, next order", next_order, (P,), (19,), None, beyond
        ),
        ClosedForm("eq22-printed", "Eq. (22)", printed, (RAW,), (22,), *eq22p),
        ClosedForm("eq22-corrected", "Eq. (22)", corrected, (RAW,), (22,), *eq22c),
        ClosedForm("eq23-printed", "Eq. (23)", printed, (A,), (23,), *eq23p),
        ClosedForm("eq23-corrected", "Eq. (23)", corrected, (A,), (23,), *eq23c),
        ClosedForm("eq36-printed", "Eq. (36)", printed, (R, A, AR), (36,), *eq36p),
        ClosedForm("eq36-corrected", "Eq. (36)", corrected, (R, AR), (36,), *eq36c),
        ClosedForm("eq41-printed", "Eq. (41)", printed, (R, A, AR), (41,), *eq41p),
        ClosedForm("eq41-corrected", "Eq. (41)", corrected, (R, AR), (41,), *eq41c),
        ClosedForm("eq40-corrected", "Eqs. (32), (40)", score2, (R, A, AR), (32, 40), eq40, trend),
        ClosedForm("fig2", fig2_label, "as plotted", fig2, (41,), *fig_p, figures=(2,)),
        ClosedForm("fig5-printed", fig5_label, "as plotted", fig5, (41,), *fig_p, figures=(5,)),
        ClosedForm(
            "fig5-corrected", fig5_label, "corrected (γ → g)", fig5, (41,), *fig_c, figures=(5,)
        ),
        ClosedForm("eq6-cosine", "Eq. (6)", v_cos, (RAW,), (6,), cos, None, source="cosine"),
        ClosedForm("eq6-cosine-2nd", "Eq. (6)", v_cos2, (RAW,), (6,), cos2, None, source="cosine"),
    )


CLOSED_FORMS: tuple[ClosedForm, ...] = _registry()
BY_KEY = {f.key: f for f in CLOSED_FORMS}


# -- measuring ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Cell:
    """One closed form, one part, one d: the closed-form value and the simulated estimate."""

    d: int
    closed: float
    sim: Estimate
    samples: int
    flat: bool = False

    @property
    def z(self) -> float:
        return zscore(self.sim.value, self.sim.se)

    @property
    def underflow(self) -> bool:
        """The form is nonzero in exact arithmetic but 0 (or not finite) in float64."""
        return not self.flat and (self.closed == 0.0 or not math.isfinite(self.closed))

    @property
    def resolved(self) -> bool:
        """A ratio is reported: the form is nonzero and the simulation >= Z_RESOLVE SE from 0."""
        return not self.flat and not self.underflow and abs(self.z) >= Z_RESOLVE

    @property
    def ratio(self) -> float:
        return self.sim.value / self.closed if self.resolved else math.nan

    @property
    def ratio_se(self) -> float:
        return self.sim.se / abs(self.closed) if self.resolved else math.nan

    @property
    def deviation(self) -> float:
        """(ratio − 1) in SEs of the ratio (NaN where no ratio is reported)."""
        return zscore(self.ratio, self.ratio_se, 1.0) if self.resolved else math.nan

    @property
    def samples_to_resolve(self) -> float:
        """Sequences to put the closed-form value Z_RESOLVE SE from 0 with this estimator."""
        if self.flat or self.underflow:
            return math.nan
        return sequences_needed(self.sim.se, self.samples, abs(self.closed), Z_RESOLVE)

    def text(self) -> str:
        """The cell as printed: ratio ± SE, or a flat form's value and z (†: an SE bound)."""
        mark = BOUND_MARK if self.sim.bound else ""
        z = nowrap(f"z = {z_text(self.z)}")
        if self.flat:
            return f"{nowrap(pm(self.sim.value, self.sim.se))}{mark} ({z})"
        if self.underflow:
            return "closed form underflows"
        if not self.resolved:
            return f"unresolved ({z}; ≈ {nowrap(num(self.samples_to_resolve, 2))} sequences)"
        if 0 < self.ratio_se and is_exact(self.ratio, self.ratio_se):  # SE below float rounding
            return f"{self.ratio:.9f} (SE < 10⁻⁹){mark}"
        return f"{nowrap(pm(self.ratio, self.ratio_se))}{mark}"


@dataclass(frozen=True)
class Row:
    """One closed form in one setting, one part ("level" or "step"), at every d: its verdict and
    how its error moves as d grows (:func:`judge`)."""

    form: ClosedForm
    setting: Setting
    part: str
    cells: tuple[Cell, ...]
    verdict: str
    trend: str

    def series(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(d, ratio, SE of the ratio) of the resolved cells: what a figure plots."""
        cells = [c for c in self.cells if c.resolved]
        return tuple(
            np.array([getattr(c, f) for c in cells], float) for f in ("d", "ratio", "ratio_se")
        )


#: Off at every d and not shrinking as d grows: the form misses a factor (an error in print, or the
#: LLN's bias, which the book's corrected forms keep too).
OFF = "off, not shrinking"
#: Off at every d, but shrinking like d^-p: right in the limit.
FINITE_D = "finite-d error"
VERDICTS = (
    "consistent",
    "converges",
    FINITE_D,
    OFF,
    "deviates",
    "mixed",
    "unresolved",
    "flat",
    "not flat",
)


def row_offsets(row: Row) -> tuple[float, float]:
    """The largest |ratio − 1| of a row's resolved cells, in size and in SEs ((NaN, NaN):
    none)."""
    cells = [c for c in row.cells if c.resolved]
    if not cells:
        return math.nan, math.nan
    return max(abs(c.ratio - 1.0) for c in cells), max(abs(c.deviation) for c in cells)


def trend(cells) -> tuple[str, float]:
    """How |ratio − 1| of the resolved cells moves as d grows, and p of |ratio − 1| ~ d^-p from
    the smallest to the largest d (the last error floored at 2 SE). "shrinks": no significant rise
    between neighbours (2 combined SE), a significant fall overall and p >= 1/2; "grows": a
    significant rise overall; "stalls" otherwise; "" with fewer than two resolved cells."""
    res = sorted((c for c in cells if c.resolved), key=lambda c: c.d)
    if len(res) < 2:
        return "", math.nan
    e = [abs(c.ratio - 1.0) for c in res]
    s = [c.ratio_se for c in res]
    span = math.log(res[-1].d / res[0].d)
    p = math.log(e[0] / max(e[-1], 2 * s[-1])) / span if e[0] > 0 else math.nan
    if e[-1] > e[0] + 2 * (s[0] + s[-1]):
        return "grows", p
    steady = all(e[k + 1] <= e[k] + 2 * (s[k] + s[k + 1]) for k in range(len(res) - 1))
    if steady and e[-1] + 2 * (s[0] + s[-1]) < e[0] and p >= 0.5:
        return "shrinks", p
    return "stalls", p


def judge(cells) -> tuple[str, str]:
    """The verdict on one row of cells and its :func:`trend` word. A flat form is "flat" when the
    simulation is within Z_ERRATUM SE of 0 at every d, else "not flat". Otherwise, a ratio more
    than Z_ERRATUM SE from 1 is off: off at every d is :data:`OFF`, or :data:`FINITE_D` when
    the error shrinks; "consistent": nowhere off; "converges": off only at the smallest d, with the
    error smaller at the largest; "deviates": off where resolved, unresolved elsewhere; "mixed":
    any other pattern; "unresolved": resolved at no d."""
    cells = sorted(cells, key=lambda c: c.d)
    if cells[0].flat:
        return ("not flat" if any(abs(c.z) > Z_ERRATUM for c in cells) else "flat"), ""
    res = [c for c in cells if c.resolved]
    if not res:
        return "unresolved", ""
    word = trend(res)[0]
    off = [abs(c.deviation) > Z_ERRATUM for c in res]
    if not any(off):
        return "consistent", ""
    if all(off):
        if len(res) < len(cells):
            return "deviates", word
        return (FINITE_D if word == "shrinks" else OFF), word
    k = off.index(False)
    if not any(off[k:]) and abs(res[-1].ratio - 1.0) < abs(res[0].ratio - 1.0):
        return "converges", word
    return "mixed", word


@dataclass(frozen=True)
class Cost:
    """What building the table cost."""

    configs: int
    samples: int  # sequences simulated, all configs
    cosine_samples: int  # per (alpha, d) of the cosine forms
    wall_seconds: float  # the whole of measure()
    compute_seconds: float  # the simulations, summed, as first simulated
    cosine_seconds: float  # the cosine draws, summed, as first drawn


@dataclass(frozen=True)
class Table:
    """The measured rows of :func:`measure`."""

    rows: tuple[Row, ...]
    ds: tuple[int, ...]
    n: int
    samples: int
    seed: int
    cost: Cost
    boost: int = DEFAULT_BOOST

    def row(self, key: str, part: str, setting: Setting | None = None) -> Row:
        """The row of closed form ``key`` and ``part`` (in ``setting`` when it has several)."""
        hits = [r for r in self.rows if (r.form.key, r.part) == (key, part)]
        hits = [r for r in hits if setting in (None, r.setting)]
        if len(hits) != 1:
            raise ValueError(
                f"key={key!r}, part={part!r}, setting={setting} match {len(hits)} rows"
            )
        return hits[0]

    def cell(self, key: str, part: str, d: int, setting: Setting | None = None) -> Cell:
        cells = [c for c in self.row(key, part, setting).cells if c.d == d]
        if not cells:
            raise ValueError(f"d={d!r} is not allowed; allowed: one of {list(self.ds)}")
        return cells[0]

    def samples_of(self, setting: Setting) -> int:
        return setting_samples(setting, self.samples, self.boost)


def select(keys=None) -> tuple[ClosedForm, ...]:
    """The registry entries named by ``keys`` (all when None), in registry order."""
    if keys is None:
        return CLOSED_FORMS
    if not keys or set(keys) - set(BY_KEY):
        raise ValueError(
            f"keys={keys!r} is not allowed; allowed: a non-empty list of {sorted(BY_KEY)}"
        )
    return tuple(f for f in CLOSED_FORMS if f.key in keys)


def _ds(ds) -> tuple[int, ...]:
    """The hidden sizes ``ds`` (integers >= 4), sorted, once each."""
    return tuple(sorted({check_int("d", d, 4) for d in ds}))


def _draw_cosine(alpha: float, n: int, d: int, samples: int, seed: int) -> list[float]:
    """inputs.input_cosine_similarity and its compute time: [mean, sem, seconds]."""
    t0 = time.perf_counter()
    mean, sem = inputs.input_cosine_similarity(SimConfig(alpha=alpha, n=n, d=d), samples, seed)
    return [mean, sem, time.perf_counter() - t0]


def _timed_cosine(alpha, n, d, samples, seed, cache=None) -> tuple[float, float, float]:
    """:func:`_draw_cosine` through the results cache (keyed by its arguments and inputs' code)."""
    args = {"alpha": alpha, "n": n, "d": d, "samples": samples, "seed": seed}
    value, _ = cached_value(
        "input-cosine",
        partial(_draw_cosine, **args),
        ("recency_lib.inputs",),
        params=args,
        packages=("numpy",),
        cache=cache,
    )
    return tuple(float(v) for v in value)


def setting_samples(setting: Setting, samples: int, boost: int = DEFAULT_BOOST) -> int:
    """Sequences per d for ``setting``: boost × samples in Theorem 1's, settings.PROP1_FACTOR ×
    samples in Proposition 1's (its verdict's runs), ``samples`` elsewhere (conventions.scaled)."""
    if setting == P:
        return conventions.scaled(book_settings.PROP1_FACTOR, samples)
    return conventions.scaled(boost if setting == T else 1, samples)


def _config(setting: Setting, d: int, n: int, samples: int, seed: int, boost: int) -> SimConfig:
    """The run of ``setting`` at ``d``; Proposition 1's is its verdict's, settings.prop1_configs."""
    if setting == P:
        return book_settings.prop1_configs(samples, seed, ds=(d,), n=n)[d]
    return setting.config(d, n, setting_samples(setting, samples, boost), seed)


def _settings(forms, settings, source: str) -> list[Setting]:
    """The settings of ``forms`` of ``source`` (or ``settings`` instead of theirs), sorted."""
    found = {s for f in forms if f.source == source for s in (settings or f.settings)}
    return sorted(found, key=lambda s: (s.norm, s.alpha, s.gamma))


def configs(
    ds=DEFAULT_DS,
    *,
    n: int = 10,
    samples: int = 100_000,
    seed: int = 0,
    boost: int = DEFAULT_BOOST,
    keys=None,
    settings=None,
) -> dict[tuple[Setting, int], SimConfig]:
    """(Setting, d) -> the two-layer run that holds the forms named by ``keys`` (all when None) at
    each d of ``ds``, with :func:`setting_samples` sequences. ``settings``: held at these instead of
    each form's own (a grid's, e.g. Appendix B's)."""
    n, samples = check_int("n", n, 3), check_int("samples", samples, 2)
    boost = check_int("boost", boost, 1)  # (the seed: SimConfig checks it)
    gram = _settings(select(keys), settings, "gram")
    return {(s, d): _config(s, d, n, samples, seed, boost) for s in gram for d in _ds(ds)}


def measure(
    ds=DEFAULT_DS,
    *,
    n: int = 10,
    samples: int = 100_000,
    seed: int = 0,
    boost: int = DEFAULT_BOOST,
    cosine_samples: int = 20_000,
    keys=None,
    executor=None,
    cache=None,
    results: dict | None = None,
    settings=None,
) -> Table:
    """Hold every closed form (or those named by ``keys``) to simulation at each d of ``ds``.

    The runs are :func:`configs`'s (the same arguments): ``results`` when a page passes what it
    simulated ((Setting, d) -> SimResult), else through the results cache (``executor`` spreads
    them). The cosine forms draw ``cosine_samples`` sequences of raw tokens per d, cached alike.
    """
    wanted = configs(ds, n=n, samples=samples, seed=seed, boost=boost, keys=keys, settings=settings)
    ds, cosine_samples = _ds(ds), check_int("cosine_samples", cosine_samples, 2)
    settings = settings and tuple(dict.fromkeys(settings))  # each once
    if results is not None and {k: v.config for k, v in results.items()} != wanted:
        raise ValueError(
            "results do not hold exactly the simulations of closedforms.configs(...) with these "
            "arguments; allowed: dict(zip(cfgs, cached_simulate_many(cfgs.values())))"
        )
    forms = select(keys)
    t0 = time.perf_counter()
    cosine_jobs = {
        (s, d): (s.alpha, n, d, cosine_samples, seed, cache)
        for s in _settings(forms, settings, "cosine")
        for d in ds
    }
    pending = (
        {k: executor.submit(_timed_cosine, *job) for k, job in cosine_jobs.items()}
        if executor
        else {}
    )
    if results is None:
        results = dict(
            zip(wanted, cached_simulate_many(wanted.values(), cache=cache, executor=executor))
        )
    drawn = {
        k: pending[k].result() if k in pending else _timed_cosine(*job)
        for k, job in cosine_jobs.items()
    }
    cosines = {k: Estimate(m, se) for k, (m, se, _) in drawn.items()}
    wall = time.perf_counter() - t0

    rows = []
    for f in forms:
        measured = results if f.source == "gram" else cosines
        for s in settings or f.settings:
            count = setting_samples(s, samples, boost) if f.source == "gram" else cosine_samples
            for name, part in (("level", f.level), ("step", f.step)):
                if part is None:
                    continue
                values = [(d, float(part.form(s, d, n)), part.read(measured[s, d])) for d in ds]
                cells = tuple(Cell(*v, count, part.flat) for v in values)
                rows.append(Row(f, s, name, cells, *judge(cells)))
    cost = Cost(
        len(wanted),
        sum(c.samples for c in wanted.values()),
        cosine_samples,
        wall,
        float(sum(r.elapsed_seconds for r in results.values())),
        float(sum(t for *_, t in drawn.values())),
    )
    return Table(tuple(rows), ds, n, samples, seed, cost, boost)


# -- closed forms against one result --------------------------------------------------------------


def predicted_trend(n: int, d, alpha: float = 0.0, gamma: float = 0.0):
    """The LLN's trend of S^(2), the mean of its steps between earlier keys (SimResult.trend_mean),
    from the corrected Eqs. (32), (40) (Eq. (5) at α = γ = 0); a float for one d, else an
    array."""
    i, j = off_diagonal_steps(n)
    dd = np.asarray(d, dtype=float)
    steps = theory.score2_step_corrected(i, j, alpha, gamma, dd[..., None])  # (..., steps)
    out = np.mean(steps, axis=-1)
    return float(out) if dd.ndim == 0 else out


def eq5_trend(n: int, d):
    """Theorem 1's trend as Eq. (5) predicts it."""
    return predicted_trend(n, d)


def eq5_smallest_step(n: int, d: float) -> float:
    """The smallest step S^(2)_ij − S^(2)_i,j−1, 2 <= j < i <= n, that Eq. (5) predicts."""
    i, j = off_diagonal_steps(n)
    return float(np.min(theory.score2_step_corrected(i, j, 0.0, 0.0, d)))


def trend_over_line(res: SimResult, line: float, z: float) -> str:
    """The mean step of S^(2) (statistics.s2_order) over ``line``, "m ± s", or UNRESOLVED where the
    step is within ``z`` SE of 0."""
    _, m, s = s2_order(res)
    return pm(m / line, s / abs(line)) if abs(zscore(m, s)) > z else UNRESOLVED


@dataclass(frozen=True)
class HCurves:
    """h(j) = 1/‖x_j^(1)‖ at keys ``j``: Eq. (41) as printed and corrected (None without
    normalization) and simulated with its SE; ``normalized``: each over its value at j = 1, else
    √d h(j), the scale of the paper's Figures 2 and 5."""

    j: np.ndarray
    printed: np.ndarray | None
    corrected: np.ndarray | None
    sim: np.ndarray
    sim_se: np.ndarray
    normalized: bool

    def columns(self, label: str) -> dict:
        """The curves as report.curve_columns series, named "<label>: ..."."""
        out = {f"{label}: simulation": (self.j, self.sim, self.sim_se)}
        if self.printed is not None:
            out[f"{label}: Eq. (41) as printed"] = (self.j, self.printed, None)
            out[f"{label}: corrected"] = (self.j, self.corrected, None)
        return out


def h_curves(res: SimResult, normalize: bool = True) -> HCurves:
    """:class:`HCurves` of a simulation with at least two layers."""
    cfg = res.config
    j = np.arange(1, cfg.n + 1)
    printed = corrected = None
    if NORMS[cfg.norm].closed_form and cfg.placement == "pre":  # the paper's layer only
        args = (j, cfg.alpha, cfg.gamma, cfg.d)
        printed = math.sqrt(cfg.d) * np.asarray(theory.h_eq41(*args), float)
        corrected = math.sqrt(cfg.d) * np.asarray(theory.h_corrected(*args, cfg.norm), float)
    if normalize:
        sim, se = simulated_h(res, state=1)
        if printed is not None:
            printed, corrected = printed / printed[0], corrected / corrected[0]
    else:
        sim, se = h_profile(res, math.sqrt(cfg.d))
    return HCurves(j, printed, corrected, np.asarray(sim, float), np.asarray(se, float), normalize)


#: How the error |ratio − 1| of a closed form moves as d grows (:func:`trend`), in words.
TREND_WORDS = {
    "grows": "grows",
    "shrinks": "shrinks",
    "stalls": "neither grows nor shrinks steadily",
    "": "is resolved at fewer than two d",
}


def trend_words(row: Row) -> str:
    return TREND_WORDS[row.trend]


def ratio_texts(row: Row) -> list[str]:
    """The ratios of a row, one per d, as the book writes them ("unresolved" where not resolved)."""
    out = []
    for c in row.cells:
        if not c.resolved:
            out.append("unresolved")
        elif is_exact(c.ratio, c.ratio_se):
            out.append(num(c.ratio, 7))
        else:
            out.append(pm(c.ratio, c.ratio_se))
    return out


def ratio_series(table: Table, key: str, part: str) -> dict[float, tuple]:
    """alpha -> (d, ratio, SE) of closed form ``key``'s ``part``, one per setting (NaN where not
    resolved): the data of a plot of simulated / closed form against d."""
    out = {}
    for row in table.rows:
        if row.form.key == key and row.part == part:
            if row.setting.alpha in out:
                raise ValueError(
                    f"key={key!r} has several settings with alpha = {row.setting.alpha:g}; "
                    "allowed: one setting per alpha"
                )
            out[row.setting.alpha] = tuple(
                np.array([getattr(c, f) for c in row.cells], float)
                for f in ("d", "ratio", "ratio_se")
            )
    return out


def h_downloads(stem: str, curves: dict, table: Table, key: str) -> tuple[Html, Html]:
    """The downloads beside an h(j) figure: ``stem``, the simulated curves (normalized -> alpha ->
    :func:`h_curves`) as h(j)/h(1) and √d h(j); ``stem``-ratios, :func:`ratio_series` of
    ``key``."""
    h = {}
    for normalized in (True, False):
        scale = "h(j)/h(1)" if normalized else "sqrt(d) h(j)"
        for a, c in curves[normalized].items():
            h.update(c.columns(f"{alpha_label(a)}, {scale}"))
    ratios = {
        f"{part}, {alpha_label(a)}": series
        for part in ("level", "step")
        for a, series in ratio_series(table, key, part).items()
    }
    return (
        download(stem, curve_columns(h, x_name="j")),
        download(f"{stem}-ratios", curve_columns(ratios, x_name="d")),
    )


def size_ratios(table: dict, form: str) -> dict[float, tuple[float, float]]:
    """alpha > 0 -> the simulated rise of h(j) over closed form ``form``'s ("printed" or
    "corrected"), with its SE (``table``: a Figure 2 or 5 verdict's ``numbers["table"]``)."""
    return {
        a: (t["sim"][0] / t[form], t["sim"][1] / abs(t[form]))
        for a, t in sorted(table.items())
        if a > 0
    }
