"""Every closed form the book quotes, held to simulation.

The paper's Appendix A derives its closed forms by replacing random inner products with their
large-d (law-of-large-numbers, LLN) values; :mod:`recency_lib.theory` evaluates them, as printed
and corrected. This module records, for each, *which simulated number it predicts* and *how to
read that number off a* :class:`~recency_lib.result.SimResult` (or off
:func:`recency_lib.inputs.input_cosine_similarity`), and measures

    ratio = simulated / closed form   (with its standard error)

at several hidden sizes d, separately for two parts of the prediction:

* the **level**: the size of the quantity, e.g. the mean of row n of S^(2) over its keys j < n;
* the **step**: its dependence on the key index j (what orders the keys), e.g. the mean of the
  adjacent steps S_ij - S_i,j-1 over all rows (the trend), or the mean step of ||x_j||^2 over j.

A closed form is compared with simulation only, never with :func:`recency_lib.theory.lln_limit`
(that recursion shares every approximation of the closed forms).

Standard errors. A SimResult stores each entry's Monte-Carlo mean and SE, not the covariances
between entries. So the SE of a mean over entries, or of a difference of two entries, is bounded,
not known: by Minkowski's inequality SD(sum_k X_k) <= sum_k SD(X_k) whatever the correlations.
Such estimates carry ``bound=True``; their ratio's SE is an upper bound as well, so "resolved" and
"off by more than 5 SE" are conservative calls. The score steps are per-sample features with
exact SEs, read from their control-variate estimates (the first layer's steps have a
known mean, 0, and correct the later layers' steps without bias; :func:`score_row_step`,
:func:`score_trend`, :func:`paired_step`); a step of the squared norms ||x_j||^2 is not paired
(bound). The SE of a nonlinear function of a mean (h = m^{-1/2}) comes from the delta method.

Indices are 1-based in names and docstrings (as in the paper), 0-based in array subscripts.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

import numpy as np

from recency_lib import inputs, theory
from recency_lib.cache import cached_simulate_many, cached_value
from recency_lib.config import SimConfig
from recency_lib.metrics import adjacent_index
from recency_lib.norms import NORMS
from recency_lib.result import SimResult
from recency_lib.validation import check_int, check_real

from .conventions import alpha_label, setting_label, variant_short
from .report import Markdown, curve_columns, download, is_exact, nowrap, num, pm, z_text, zscore
from .settings import PROP1_FACTOR
from .statistics import s2_order, simulated_h
from .verdicts import UNRESOLVED

LAYERS = 2  # every closed form here is about layer 1 or layer 2
BOUND_MARK = "\u2020"  # "†": the printed SE is an upper bound (Minkowski), not an estimate
DEFAULT_DS = (16, 64, 256)
Z_RESOLVE = 3.0  # a ratio is reported where the simulated value is this many SE from 0
Z_ERRATUM = 5.0  # a ratio off by more than this many SE from 1 counts as off
FIG_ALPHAS = (0.0, 0.2, 0.4, 0.6, 0.8)  # the alphas of the paper's Figures 2 and 5 (authors' code)


# -- what is measured -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Setting:
    """The model a closed form describes: normalization, anisotropy alpha (Eq. (6)), residual gamma (Eq. (20))."""

    norm: str
    alpha: float
    gamma: float

    @property
    def label(self) -> str:
        """The book's name of the setting (conventions.setting_label): "LayerNorm + residual, α = 0.5"."""
        return setting_label(self.config(16, 3, 2, 0))

    @property
    def short(self) -> str:
        """The setting's name for narrow places (conventions.variant_short): "LN + residual, α = 0.5"."""
        return f"{variant_short(self.config(16, 3, 2, 0))}, {alpha_label(self.alpha)}"

    def config(self, d: int, n: int, samples: int, seed: int) -> SimConfig:
        """The two-layer simulation of this setting (gram engine, exact for the paper's model)."""
        return SimConfig(
            alpha=self.alpha,
            gamma=self.gamma,
            norm=self.norm,
            n=n,
            d=d,
            layers=LAYERS,
            samples=samples,
            seed=seed,
            engine="gram",
        )


@dataclass(frozen=True)
class Estimate:
    """A simulated number with its standard error; ``bound`` = the SE is an upper bound (see module doc)."""

    value: float
    se: float
    method: str
    bound: bool = False


@dataclass(frozen=True)
class Part:
    """One number a closed form predicts.

    ``form(setting, d, n)`` is the closed-form value; ``read(measured)`` the simulated
    :class:`Estimate` (``measured`` is a SimResult, or an Estimate for the cosine entries).
    ``flat``: the closed form says this number is exactly 0 (no j-dependence); it is then tested
    against 0 (a z-score), not as a ratio.
    """

    what: str
    form: Callable[[Setting, float, int], float]
    read: Callable[[object], Estimate]
    flat: bool = False


@dataclass(frozen=True)
class ClosedForm:
    """A closed form the book quotes: where it comes from, what it predicts, in which settings."""

    key: str
    equation: str  # e.g. "Eq. (5) = Eq. (11)"
    version: str  # "as printed", "corrected", "as printed (= LLN)", "this module", ...
    quantity: str  # the simulated quantity and where it is read
    settings: tuple[Setting, ...]
    level: Part | None
    step: Part | None
    source: str = "gram"  # "gram": a SimResult; "cosine": inputs.input_cosine_similarity


# -- reading simulated numbers ------------------------------------------------------------------------


def profile_level(values, sems, what: str = "entries") -> Estimate:
    """Mean of a profile (one entry: its own mean and exact SE; more: SE bounded by the mean SE)."""
    values, sems = np.asarray(values, float), np.asarray(sems, float)
    if values.size == 1:
        return Estimate(float(values[0]), float(sems[0]), "one entry")
    return Estimate(
        float(values.mean()),
        float(sems.mean()),
        f"mean of {values.size} {what} (SE: Minkowski bound)",
        bound=True,
    )


def profile_step(values, sems) -> Estimate:
    """Mean adjacent step (last - first) / (m - 1) of a profile of m >= 2 entries, with an SE bound:
    SE(last) + SE(first), which holds whatever the correlation of the two (the steps of a profile
    that is not a per-sample feature, such as the squared norms)."""
    values, sems = np.asarray(values, float), np.asarray(sems, float)
    m = values.size
    return Estimate(
        float(values[-1] - values[0]) / (m - 1),
        float(sems[0] + sems[-1]) / (m - 1),
        "last minus first (SE: Minkowski bound on the two entries)",
        bound=True,
    )


def last_row(res, which: str, layer: int):
    """Row n of a (layers, n, n) field over the earlier keys j < n: (means, SEs), each (n - 1,)."""
    n = res.config.n
    return getattr(res, f"{which}_mean")[layer][n - 1, : n - 1], getattr(res, f"{which}_sem")[
        layer
    ][n - 1, : n - 1]


def sq_norms(res, layer: int):
    """||x_j||^2 of the state fed to ``layer`` (0: the inputs, 1: the layer-1 output), j = 1..n: (means, SEs).

    For LayerNorm this is the centred ||P x_j||^2 that the normalization sees (without a residual
    the layer-1 output is already centred).
    """
    return res.sq_norm_mean[layer], res.sq_norm_sem[layer]


def h_profile(res, scale: float = 1.0):
    """h(j) = 1 / ||x_j^(1)|| (Eq. (40)) as scale / sqrt(E ||x_j^(1)||^2), with delta-method SEs."""
    m, se = sq_norms(res, 1)
    return scale * m**-0.5, scale * 0.5 * m**-1.5 * se


def _cv_method(layer: int) -> str:
    return "control variates, exact SE" if layer > 0 else "exact SE"


def h_growth(res) -> tuple[np.ndarray, np.ndarray]:
    """h(j) / h(1) = sqrt(E||x_1^(1)||^2 / E||x_j^(1)||^2), j = 1..n (Eq. (40): the growth of the key
    factor that the paper's Figure 5 plots normalised), with an upper bound on its SE (delta method, the two
    norms' relative errors added: Minkowski). Both (n,)."""
    m, se = sq_norms(res, 1)
    ratio = np.sqrt(m[0] / m)
    bound = 0.5 * ratio * (se[0] / m[0] + se / m)
    bound[0] = 0.0
    return ratio, bound


def prop1_dip(res) -> dict[str, np.ndarray]:
    """Row n of S^(2) without normalization, relative to its own mean over the keys j < n:
    ``sim`` = S_nj / mean_j S_nj - 1 with ``se`` (each entry's SE over the mean), and the same for the
    next order beyond the LLN, ``predicted`` = rise(j) - mean_j rise(j) (:func:`prop1_row_rise`). The
    LLN (corrected Eq. (19)) is 0 at every j. ``j``: the 1-based keys. (The row mean's own error,
    which shifts every point alike, is not in ``se``.)"""
    values, sems = last_row(res, "score", 1)
    j = _keys(res.config.n)
    rise = prop1_row_rise(j, res.config.d)
    mean = values.mean()
    return {
        "j": j,
        "sim": values / mean - 1.0,
        "se": sems / abs(mean),
        "predicted": rise - rise.mean(),
    }


def score_row_step(res, layer: int) -> Estimate:
    """Mean adjacent step of row n of S^(layer+1) over the keys j < n: (S_{n,n-1} - S_{n,1}) / (n - 2).

    A per-sample feature (the row trend), read from its control-variate estimate
    (``row_trend_cv_*``: unbiased, exact SE; the first layer's own estimate is plain).
    """
    n = res.config.n
    return Estimate(
        float(res.row_trend_cv_mean[layer][n - 1]),
        float(res.row_trend_cv_sem[layer][n - 1]),
        f"mean step of row n ({_cv_method(layer)})",
    )


def score_trend(res, layer: int) -> Estimate:
    """Mean of all off-diagonal adjacent steps S_ij - S_i,j-1 (2 <= j < i) of S^(layer+1), the trend:
    a per-sample feature, read from its control-variate estimate (``trend_cv_*``; exact SE)."""
    return Estimate(
        float(res.trend_cv_mean[layer]),
        float(res.trend_cv_sem[layer]),
        f"mean of all off-diagonal steps ({_cv_method(layer)})",
    )


def paired_step(res, layer: int, i: int, j: int) -> Estimate:
    """One adjacent score difference S_ij - S_i,j-1 (1-based i, j), a per-sample feature read from its
    control-variate estimate (``diff_cv_*``; plain for the diagonal step j = i): exact SE."""
    return Estimate(
        float(res.diff_cv_mean[layer][i - 1, j - 1]),
        float(res.diff_cv_sem[layer][i - 1, j - 1]),
        f"step S_{i},{j} - S_{i},{j - 1} ({_cv_method(layer)})",
    )


# -- closed forms that theory.py does not already provide ---------------------------------------------


def layer1_offdiag_weight(alpha, d, n: int):
    """Layer-1 attention of query n on each earlier key in the LLN, Eqs. (4) and (25)-(26):

        A^(1)_{n j} = e^{alpha sqrt d} / (e^{sqrt d} + e^{alpha sqrt d} (n - 1)) = t / (1 + (n - 1) t),

    t = e^{-(1 - alpha) sqrt d} (the same for every j < n). At alpha = 0 it is Eq. (4)'s weight
    1 / (e^{sqrt d} + n - 1), which is also Eq. (15) as printed.
    """
    t = np.exp(-(1.0 - np.asarray(alpha, float)) * np.sqrt(np.asarray(d, float)))
    return t / (1.0 + (n - 1) * t)


def prop1_row_rise(j, d):
    """Relative rise of a mean second-layer row without normalization beyond the LLN (this module):

        E S^(2)_ij = c_i (1 + d^{-3/2} (1 - 1/j) + O(d^-2)),   j < i, alpha = gamma = 0, norm "none",

    with c_i free of j (c_i -> corrected Eq. (19)). Derivation: write <x_k, x_l> = delta_kl +
    xi_kl / sqrt(d) (xi ~ N(0, 1) off the diagonal, variance 2 on it) and expand the layer-1 softmax
    to first order in the scores, S^(2)_ij = sum_{k <= i, l <= j} A_ik A_jl <x_k, x_l> / sqrt(d). The
    corrected Eq. (19) is the order-0 term (1 / (i sqrt d)); every term up to relative order 1/d is
    free of j. The first j-dependent term comes from the correlation of query j's attention weights
    with the inner products they multiply: E[sum_{k <= i, l <= j} (A_jl - 1/j) xi_kl] = (j - 1) / (j d)
    (only the pairs (k, l) = (j, l) and (k, j) correlate with A_jl), which with A_ik ~ 1/i gives
    relative size d^{-3/2} (j - 1) / j. The row therefore rises with j, key 1 lowest: the LLN's exact
    flatness holds to relative order 1/d only. (Held to simulation by the "prop1-beyond-lln" entry
    and by tests/book/test_closedforms.py.)
    """
    j = np.asarray(j, float)
    return np.asarray(d, float) ** -1.5 * (1.0 - 1.0 / j)


def off_diagonal_steps(n: int) -> tuple[np.ndarray, np.ndarray]:
    """1-based (i, j) of the off-diagonal adjacent steps S_ij - S_i,j-1, 2 <= j < i <= n, row by row:
    (n - 1)(n - 2)/2 of them, the steps whose mean is the trend (SimResult.trend_*)."""
    i, j = np.tril_indices(check_int("n", n, 3), -1)
    keep = j >= 1
    return i[keep] + 1, j[keep] + 1


def prop1_trend(d, n: int) -> float:
    """Mean of all off-diagonal steps of E S^(2) without normalization (alpha = gamma = 0), from
    :func:`prop1_row_rise`: row i's steps add up to c_i (rise(i - 1) - rise(1)) = c_i rise(i - 1),
    with c_i the corrected Eq. (19) (theory.prop1_score_corrected); the LLN's value is 0."""
    i = np.arange(3, check_int("n", n, 3) + 1)
    c = theory.prop1_score_corrected(i, 1, d)
    return float(np.sum(c * prop1_row_rise(i - 1, d)) / ((n - 1) * (n - 2) // 2))


#: The effects :func:`definition1_samples` can assume: the LLN's step (Eq. (5) and its corrected
#: relatives, theory.score2_step_corrected) or the book's corrected Theorem 1 (theory.theorem1_step).
STEP_EFFECTS = ("lln", "theorem1")


def definition1_samples(res, z: float, effect: str = "lln") -> tuple[float, int, int]:
    """Sequences that would settle Definition 1 on S^(2) of ``res`` if its steps were ``effect``'s.

    The estimator: the control-variate estimate of each off-diagonal step S_ij - S_i,j-1
    (2 <= j < i; ``diff_cv_*``, exact SE ~ 1 / sqrt(samples)); every one of them must be ``z``
    standard errors above 0 at once (the family-wise z of Definition 1,
    conventions.definition1_z). With the step s_ij of ``effect`` as the true value, step (i, j)
    needs samples * (z SE_ij / s_ij)^2 sequences; the answer is the largest, with its (1-based) i
    and j. ``effect``: "lln", the LLN's step (theory.score2_step_corrected; at alpha = gamma = 0 this
    is Eq. (5)'s, which is 1.8 to 2.7 times too small for 16 <= d <= 64, so the count comes out 3 to
    7 times too large), or "theorem1", the book's corrected Theorem 1 (theory.theorem1_step: within
    0.5 % of simulation for d >= 16; Theorem 1's setting only, LayerNorm, alpha = gamma = 0; NaN
    where its series is not positive, d < 16). (The diagonal steps S_ii - S_i,i-1 are of order
    sqrt(d) and never the limit.) LayerNorm or RMSNorm settings only.
    """
    z = check_real("z", z, lo=0.0, lo_open=True, allowed="a finite number > 0")
    if not isinstance(effect, str) or effect not in STEP_EFFECTS:
        raise ValueError(
            f"effect={effect!r} is not allowed; allowed: one of {', '.join(map(repr, STEP_EFFECTS))}"
        )
    cfg = res.config
    i, j = off_diagonal_steps(cfg.n)
    if effect == "theorem1":
        if (cfg.norm, cfg.alpha, cfg.gamma) != ("layernorm", 0.0, 0.0) or cfg.layers < 2:
            raise ValueError(
                f"effect='theorem1' is not allowed for {setting_label(cfg)}, gamma = {cfg.gamma:g}; "
                "allowed: Theorem 1's setting (LayerNorm, alpha = gamma = 0, two layers or more)"
            )
        ti, tj, ts = theory.theorem1_steps(cfg.n, cfg.d)
        derived = {(int(a), int(b)): v for a, b, v in zip(ti, tj, ts)}
        step = np.array([derived[int(a), int(b)] for a, b in zip(i, j)], dtype=float)
        if not np.all(np.isfinite(step) & (step > 0)):
            return math.nan, 0, 0
    else:
        step = theory.score2_step_corrected(i, j, cfg.alpha, cfg.gamma, cfg.d, cfg.norm)
    se = res.diff_cv_sem[1][i - 1, j - 1]
    need = cfg.samples * (z * se / step) ** 2
    k = int(np.argmax(need))
    return float(need[k]), int(i[k]), int(j[k])


# -- the registry --------------------------------------------------------------------------------------

T = Setting("layernorm", 0.0, 0.0)  # Theorem 1
P = Setting("none", 0.0, 0.0)  # Proposition 1
R = Setting("layernorm", 0.0, 1.0)  # Proposition 2
A = Setting("layernorm", 0.5, 0.0)  # Proposition 3 (the alpha of the paper's Figure 1)
AR = Setting("layernorm", 0.5, 1.0)  # Propositions 2 + 3
RAW = Setting("none", 0.5, 0.0)  # raw anisotropic tokens, Eqs. (6), (22)

# Settings whose closed forms are noise-limited get more than ``samples`` (:func:`configs`): Theorem 1
# ``boost`` times (scores of order sqrt(d) e^{-sqrt d} against per-sample fluctuations of order 1), and
# Proposition 1 (its rise of relative size d^{-3/2}) exactly the runs of the book's verdict on it,
# settings.prop1_configs: PROP1_FACTOR times ``samples``, the default engine. Every other setting resolves
# its numbers with ``samples``.
BOOSTED = frozenset({T})
DEFAULT_BOOST = 8


def _keys(n):
    return np.arange(1, n)  # earlier keys j = 1..n-1 of query n


def _tokens(n):
    return np.arange(1, n + 1)  # j = 1..n


def _mean_step(profile):
    p = np.asarray(profile, float)
    return float(p[-1] - p[0]) / (p.size - 1)


def _zero(s, d, n):
    return 0.0


def _level(what, profile, read) -> Part:
    """Level part: the mean of a closed-form profile against the mean of the simulated one."""
    return Part(what, lambda s, d, n: float(np.mean(profile(s, d, n))), read)


def _step(what, profile, read, step=None) -> Part:
    """Step part: the mean adjacent step of the profile (or ``step(s, d, n)`` when given, free of cancellation)."""
    return Part(what, step or (lambda s, d, n: _mean_step(profile(s, d, n))), read)


def _flat(what, read) -> Part:
    return Part(what, _zero, read, flat=True)


# simulated readers
def _score_row_level(layer):
    return lambda res: profile_level(*last_row(res, "score", layer), "scores")


def _attn_row_level(res):
    return profile_level(*last_row(res, "attn", 0), "weights")


def _attn_row_step(res):
    return profile_step(*last_row(res, "attn", 0))


def _norm_level(layer):
    return lambda res: profile_level(*sq_norms(res, layer), "squared norms")


def _norm_step(layer):
    return lambda res: profile_step(*sq_norms(res, layer))


def _h_level(scale_of_d):
    return lambda res: profile_level(*h_profile(res, scale_of_d(res.config.d)), "values of h")


def _h_step(scale_of_d):
    return lambda res: profile_step(*h_profile(res, scale_of_d(res.config.d)))


def _trend2(res):
    return score_trend(res, 1)


def _diag_attention(res):
    n = res.config.n
    return Estimate(
        float(res.attn_mean[0][n - 1, n - 1]), float(res.attn_sem[0][n - 1, n - 1]), "one entry"
    )


def _all_steps(step_fn):
    """Mean of a closed form's off-diagonal adjacent steps over all rows, the trend (computed without
    cancellation): the closed-form value of :func:`score_trend`."""
    return lambda s, d, n: float(np.mean(step_fn(s, d, *off_diagonal_steps(n))))


def _score2_steps(s, d, i, j):
    return theory.score2_step_corrected(i, j, s.alpha, s.gamma, d)


def _unit(d):
    return 1.0


def _sqrt_d(d):
    return math.sqrt(d)


ROW_LEVEL = "mean of row n over the keys j < n"
ROW_STEP = "mean adjacent step of row n over the keys j < n"
TREND = "mean of all off-diagonal steps S^(2)_{ij} - S^(2)_{i,j-1}, 2 <= j < i (the trend)"
TOK_LEVEL = "mean over j = 1..n"
TOK_STEP = "mean adjacent step over j = 1..n"

_FIG2 = tuple(Setting("layernorm", a, 0.0) for a in FIG_ALPHAS)
_FIG5 = tuple(Setting("layernorm", a, 1.0) for a in FIG_ALPHAS)


def _registry() -> tuple[ClosedForm, ...]:
    score_step1 = lambda res: score_row_step(res, 0)  # noqa: E731
    eq41 = {"as printed": theory.h_eq41, "corrected": theory.h_corrected}
    eq36 = {"as printed": theory.sq_norm_eq36, "corrected": theory.sq_norm_corrected}
    forms = [
        ClosedForm(
            "eq4-attention",
            "Eqs. (4), (25)-(26)",
            "as printed (= LLN)",
            "layer-1 attention A^(1)_{n j} of query n on the keys j < n: attn_mean[0][n-1, :n-1]",
            (T, A),
            _level(
                ROW_LEVEL, lambda s, d, n: layer1_offdiag_weight(s.alpha, d, n), _attn_row_level
            ),
            _flat(ROW_STEP, _attn_row_step),
        ),
        ClosedForm(
            "eq11",
            "Eq. (5) = Eq. (11)",
            "as printed (= LLN)",
            "second-layer scores S^(2)_{n j}, j < n: score_mean[1][n-1, :n-1]; steps: trend_cv_mean[1]",
            (T,),
            _level(
                ROW_LEVEL,
                lambda s, d, n: theory.theorem1_score(n, _keys(n), d),
                _score_row_level(1),
            ),
            _step(TREND, None, _trend2, _all_steps(_score2_steps)),
        ),
        ClosedForm(
            "eq10",
            "Eq. (10)",
            "as printed (= LLN)",
            "squared norm ||x_j^(1)||^2 of the layer-1 output, j = 1..n: sq_norm_mean[1]",
            (T,),
            _level(
                TOK_LEVEL,
                lambda s, d, n: theory.sq_norm_eq36(_tokens(n), 0.0, 0.0, d),
                _norm_level(1),
            ),
            _step(
                TOK_STEP,
                lambda s, d, n: theory.sq_norm_eq36(_tokens(n), 0.0, 0.0, d),
                _norm_step(1),
            ),
        ),
    ]
    for version, value in (("as printed", _sqrt_d), ("corrected", _unit)):
        forms.append(
            ClosedForm(
                f"eq14-{version.split()[-1]}",
                "Eq. (14)",
                version,
                "squared input norm <x_j, x_j> = ||x_j^(0)||^2 (no normalization), j = 1..n: sq_norm_mean[0]",
                (P,),
                _level(TOK_LEVEL, lambda s, d, n, v=value: np.full(n, v(d)), _norm_level(0)),
                _flat(TOK_STEP, _norm_step(0)),
            )
        )
    for version, fn in (
        ("as printed", lambda s, d, n: theory.prop1_attention(n, n, d)),
        ("corrected", lambda s, d, n: theory.prop1_attention_corrected(n, n, d, s.alpha)),
    ):
        forms.append(
            ClosedForm(
                f"eq15-{version.split()[-1]}",
                "Eq. (15)",
                version,
                "layer-1 attention without normalization: level A^(1)_{n n} (attn_mean[0][n-1, n-1]); step over "
                "the keys j < n (attn_mean[0][n-1, :n-1])",
                (P,),
                Part(
                    "A^(1)_{n n}, the last query's weight on itself",
                    lambda s, d, n, f=fn: float(f(s, d, n)),
                    _diag_attention,
                ),
                _flat(ROW_STEP, _attn_row_step),
            )
        )
    for version, fn in (
        ("as printed", lambda s, d, n: theory.prop1_score(n, _keys(n), d)),
        ("corrected", lambda s, d, n: theory.prop1_score_corrected(n, _keys(n), d, s.alpha)),
    ):
        forms.append(
            ClosedForm(
                f"eq19-{version.split()[-1]}",
                "Eqs. (17)-(19)",
                version,
                "second-layer scores without normalization S^(2)_{n j}, j < n: score_mean[1][n-1, :n-1]; steps: "
                "trend_cv_mean[1]",
                (P,),
                _level(ROW_LEVEL, fn, _score_row_level(1)),
                _flat(TREND, _trend2),
            )
        )
    forms.append(
        ClosedForm(
            "prop1-beyond-lln",
            "Prop. 1, next order",
            "this module (prop1_row_rise)",
            "mean off-diagonal step of S^(2) without normalization: trend_cv_mean[1]",
            (P,),
            None,
            Part(TREND, lambda s, d, n: prop1_trend(d, n), _trend2),
        )
    )
    for version, value in (
        ("as printed", lambda s, d: math.sqrt(d) / (1 - s.alpha)),
        ("corrected", lambda s, d: 1.0 / (1 - s.alpha)),
    ):
        forms.append(
            ClosedForm(
                f"eq22-{version.split()[-1]}",
                "Eq. (22)",
                version,
                "squared norm of the raw anisotropic tokens ||x_j^(0)||^2, j = 1..n: sq_norm_mean[0] (norm 'none')",
                (RAW,),
                _level(TOK_LEVEL, lambda s, d, n, v=value: np.full(n, v(s, d)), _norm_level(0)),
                _flat(TOK_STEP, _norm_step(0)),
            )
        )
    for version, value in (
        ("as printed", lambda s, d: s.alpha),
        ("corrected", lambda s, d: math.sqrt(d) * s.alpha),
    ):
        forms.append(
            ClosedForm(
                f"eq23-{version.split()[-1]}",
                "Eq. (23)",
                version,
                "layer-1 scores <y_n, y_j> / sqrt(d) = S^(1)_{n j}, j < n: score_mean[0][n-1, :n-1]",
                (A,),
                _level(
                    ROW_LEVEL, lambda s, d, n, v=value: np.full(n - 1, v(s, d)), _score_row_level(0)
                ),
                _flat(ROW_STEP, score_step1),
            )
        )
    for version, fn in eq36.items():
        forms.append(
            ClosedForm(
                f"eq36-{version.split()[-1]}",
                "Eq. (36)",
                version,
                "squared norm ||x_j^(1)||^2 of the layer-1 output (centred, what LayerNorm sees), j = 1..n: "
                "sq_norm_mean[1]",
                (R, A, AR) if version == "as printed" else (R, AR),
                _level(
                    TOK_LEVEL,
                    lambda s, d, n, f=fn: f(_tokens(n), s.alpha, s.gamma, d),
                    _norm_level(1),
                ),
                _step(
                    TOK_STEP,
                    lambda s, d, n, f=fn: f(_tokens(n), s.alpha, s.gamma, d),
                    _norm_step(1),
                ),
            )
        )
    for version, fn in eq41.items():
        forms.append(
            ClosedForm(
                f"eq41-{version.split()[-1]}",
                "Eq. (41)",
                version,
                "h(j) = 1 / ||x_j^(1)||, j = 1..n: 1 / sqrt(sq_norm_mean[1]) (delta-method SE)",
                (R, A, AR) if version == "as printed" else (R, AR),
                _level(
                    TOK_LEVEL,
                    lambda s, d, n, f=fn: f(_tokens(n), s.alpha, s.gamma, d),
                    _h_level(_unit),
                ),
                _step(
                    TOK_STEP,
                    lambda s, d, n, f=fn: f(_tokens(n), s.alpha, s.gamma, d),
                    _h_step(_unit),
                ),
            )
        )
    forms.append(
        ClosedForm(
            "eq40-corrected",
            "Eqs. (32), (40)",
            "corrected (theory.score2_corrected)",
            "second-layer scores S^(2)_{n j}, j < n, with alpha and gamma: score_mean[1][n-1, :n-1]; steps: "
            "trend_cv_mean[1]",
            (R, A, AR),
            _level(
                ROW_LEVEL,
                lambda s, d, n: theory.score2_corrected(n, _keys(n), s.alpha, s.gamma, d),
                _score_row_level(1),
            ),
            _step(TREND, None, _trend2, _all_steps(_score2_steps)),
        )
    )
    for key, figure, settings, fn in (
        ("fig2", "the paper's Figure 2", _FIG2, theory.h_eq41),
        ("fig5-printed", "the paper's Figure 5", _FIG5, theory.h_eq41),
        ("fig5-corrected", "the paper's Figure 5", _FIG5, theory.h_corrected),
    ):
        forms.append(
            ClosedForm(
                key,
                f"{figure} (Eq. (41))",
                "corrected (γ → g)" if key.endswith("corrected") else "as plotted",
                "h(j) as plotted, sqrt(d) / ||x_j^(1)|| = sqrt(d / sq_norm_mean[1]), j = 1..n (delta-method SE)",
                settings,
                _level(
                    TOK_LEVEL,
                    lambda s, d, n, f=fn: math.sqrt(d) * f(_tokens(n), s.alpha, s.gamma, d),
                    _h_level(_sqrt_d),
                ),
                _step(
                    TOK_STEP,
                    lambda s, d, n, f=fn: math.sqrt(d) * f(_tokens(n), s.alpha, s.gamma, d),
                    _h_step(_sqrt_d),
                ),
            )
        )
    for key, version, fn in (
        ("eq6-cosine", "LLN: cos -> alpha", lambda s, d, n: s.alpha),
        (
            "eq6-cosine-2nd",
            "second order (inputs.cosine_bias_second_order)",
            lambda s, d, n: s.alpha + float(inputs.cosine_bias_second_order(s.alpha, d)),
        ),
    ):
        forms.append(
            ClosedForm(
                key,
                "Eq. (6)",
                version,
                "mean cosine similarity of two raw input tokens: inputs.input_cosine_similarity",
                (RAW,),
                Part("mean pairwise cosine of a sequence's tokens", fn, lambda est: est),
                None,
                source="cosine",
            )
        )
    return tuple(forms)


CLOSED_FORMS: tuple[ClosedForm, ...] = _registry()
BY_KEY = {f.key: f for f in CLOSED_FORMS}


# -- measuring ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Cell:
    """One closed form, one part, one d: the closed-form value and the simulated estimate."""

    d: int
    closed: float
    sim: Estimate
    samples: int
    flat: bool = False
    z_resolve: float = Z_RESOLVE

    @property
    def z(self) -> float:
        """Simulated value in standard errors from 0."""
        return zscore(self.sim.value, self.sim.se)

    @property
    def underflow(self) -> bool:
        """The closed form is nonzero in exact arithmetic but rounds to 0 (or is not finite) in float64."""
        return not self.flat and (self.closed == 0.0 or not math.isfinite(self.closed))

    @property
    def resolved(self) -> bool:
        """A ratio is reported: the closed form is nonzero and the simulated value is >= z_resolve SE from 0."""
        return not self.flat and not self.underflow and abs(self.z) >= self.z_resolve

    @property
    def ratio(self) -> float:
        return self.sim.value / self.closed if self.resolved else math.nan

    @property
    def ratio_se(self) -> float:
        return self.sim.se / abs(self.closed) if self.resolved else math.nan

    @property
    def deviation(self) -> float:
        """(ratio - 1) in standard errors of the ratio (NaN where no ratio is reported)."""
        return zscore(self.ratio, self.ratio_se, 1.0) if self.resolved else math.nan

    @property
    def samples_to_resolve(self) -> float:
        """Samples for this estimator to put the closed-form value z_resolve SE from 0 (SE ~ 1/sqrt(samples)),
        if the simulated value were the closed form's. NaN for flat or underflowing forms."""
        if self.flat or self.underflow:
            return math.nan
        return self.samples * (self.z_resolve * self.sim.se / abs(self.closed)) ** 2

    def text(self) -> str:
        """The cell as the book prints it: the ratio ± SE; for a flat form the simulated value and its z
        against 0; "unresolved" with the samples this estimator would need. A † marks an SE that is
        an upper bound (module doc)."""
        mark = BOUND_MARK if self.sim.bound else ""
        if self.flat:
            return f"{nowrap(pm(self.sim.value, self.sim.se))}{mark} ({nowrap(f'z = {z_text(self.z)}')})"
        if self.underflow:
            return "closed form underflows"
        if not self.resolved:
            return f"unresolved ({nowrap(f'z = {z_text(self.z)}')}; ≈ {nowrap(num(self.samples_to_resolve, 2))} sequences)"
        if 0 < self.ratio_se and is_exact(
            self.ratio, self.ratio_se
        ):  # an SE below float rounding's scale
            return f"{self.ratio:.9f} (SE < 10⁻⁹){mark}"
        return f"{nowrap(pm(self.ratio, self.ratio_se))}{mark}"


@dataclass(frozen=True)
class Row:
    """One closed form in one setting, one part ("level" or "step"), at every d, with the verdict.

    ``literal_erratum``: the ratio differs from 1 by more than the threshold at every d (the verdicts
    :data:`OFF` and :data:`FINITE_D`; the rule that decides whether a row can be evidence of an
    erratum, see companion.errata). ``trend``: how |ratio - 1| moves as d grows (:func:`trend`).
    """

    form: ClosedForm
    setting: Setting
    part: str
    cells: tuple[Cell, ...]
    verdict: str
    summary: str
    trend: str
    literal_erratum: bool

    def series(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(d, ratio, SE of the ratio) of the resolved cells, ordered by d: what a figure plots."""
        cells = [c for c in self.cells if c.resolved]
        return (
            np.array([c.d for c in cells], float),
            np.array([c.ratio for c in cells]),
            np.array([c.ratio_se for c in cells]),
        )


#: Off by more than the threshold at every d, and the error does not shrink as d grows: the closed form
#: misses a factor (an error in print, or the bias of the LLN approximation; the book's own corrected forms can
#: get it too, which is why the verdict does not say "erratum").
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
    """How far a row's resolved ratios are from 1: (largest |ratio - 1|, largest |ratio - 1| in standard
    errors of the ratio, i.e. the largest |Cell.deviation|); (NaN, NaN) when no cell is resolved. A ratio
    close to 1 in size can still be far from it in standard errors: a page says both."""
    cells = [c for c in row.cells if c.resolved]
    if not cells:
        return math.nan, math.nan
    return max(abs(c.ratio - 1.0) for c in cells), max(abs(c.deviation) for c in cells)


def trend(cells) -> tuple[str, float]:
    """How the error |ratio - 1| of the resolved cells (at least two) moves as d grows, and its exponent.

    Returns (word, p) with p the exponent of |ratio - 1| ~ d^-p between the smallest and largest
    resolved d (the error at the largest d floored at 2 SE, so a last ratio consistent with 1 gives
    a lower bound on p). "shrinks": no significant rise between neighbouring d (2 combined SE), a
    significant fall from the first to the last, and p >= 1/2 (the error at least halves each time d
    grows fourfold); "grows": a significant rise from the first to the last; "stalls" otherwise;
    "" with fewer than two resolved cells.
    """
    res = sorted((c for c in cells if c.resolved), key=lambda c: c.d)
    if len(res) < 2:
        return "", math.nan
    e = [abs(c.ratio - 1.0) for c in res]
    s = [c.ratio_se for c in res]
    first, last = res[0], res[-1]
    p = (
        math.log(e[0] / max(e[-1], 2 * s[-1])) / math.log(last.d / first.d)
        if e[0] > 0
        else math.nan
    )
    if e[-1] > e[0] + 2 * (s[0] + s[-1]):
        return "grows", p
    steady = all(e[k + 1] <= e[k] + 2 * (s[k] + s[k + 1]) for k in range(len(res) - 1))
    if steady and e[-1] + 2 * (s[0] + s[-1]) < e[0] and p >= 0.5:
        return "shrinks", p
    return "stalls", p


def judge(cells, z_erratum: float = Z_ERRATUM) -> tuple[str, str, str, bool]:
    """Verdict on one row of cells (one closed form, setting and part, ordered by d).

    Returns (verdict, summary, trend word, literal erratum). A flat closed form (value 0) is
    "flat" when the simulated value is within ``z_erratum`` SE of 0 at every d, else "not flat".
    Otherwise, on the ratios where resolved ("off" = more than ``z_erratum`` SE from 1):

    * :data:`OFF` ("off, not shrinking"): off at every d, and the error does not shrink as d grows
      (:func:`trend`): the large-d form misses a factor that stays (the measured factor at the largest
      d is reported);
    * :data:`FINITE_D` ("finite-d error"): off at every d, but the error shrinks like d^-p (p >= 1/2):
      the large-d form is right in the limit. Both are off at every d (``literal_erratum``);
    * "consistent": within ``z_erratum`` SE of 1 wherever resolved (however wide that SE is);
    * "converges": off only at the smallest d, within ``z_erratum`` SE of 1 at the larger ones, and
      the error smaller at the largest d than at the smallest;
    * "deviates": off wherever resolved, unresolved at the other d;
    * "mixed": any other pattern; "unresolved": resolved at no d.
    """
    z_erratum = check_real(
        "z_erratum", z_erratum, lo=0.0, lo_open=True, allowed="a finite number > 0"
    )
    cells = sorted(cells, key=lambda c: c.d)
    if cells[0].flat:
        off = [c for c in cells if abs(c.z) > z_erratum]
        if not off:
            return (
                "flat",
                f"consistent with 0 at every d (largest |z| = {max(abs(c.z) for c in cells):.1f})",
                "",
                False,
            )
        return (
            "not flat",
            "nonzero at " + ", ".join(f"d = {c.d} (z = {c.z:.1f})" for c in off),
            "",
            False,
        )
    res = [c for c in cells if c.resolved]
    if not res:
        return "unresolved", "the simulated value is within the resolution at every d", "", False
    word, p = trend(res)
    how = (
        f"; |ratio - 1| ~ d^-{p:.2f}"
        if word == "shrinks"
        else (f"; the error {word} with d" if word else "")
    )
    off = [abs(c.deviation) > z_erratum for c in res]
    ratios = ", ".join(f"{c.ratio:.4g} at d = {c.d}" for c in res)
    if not any(off):
        return "consistent", f"within {z_erratum:g} SE of 1 wherever resolved ({ratios})", "", False
    if all(off) and len(res) == len(cells):
        last = res[-1]
        if word == "shrinks":
            return (
                FINITE_D,
                f"off by > {z_erratum:g} SE at every d, shrinking ({ratios}{how})",
                word,
                True,
            )
        return (
            OFF,
            f"off by > {z_erratum:g} SE at every d, not shrinking: factor "
            f"{pm(last.ratio, last.ratio_se)} at d = {last.d} ({ratios}{how})",
            word,
            True,
        )
    if all(off):
        return (
            "deviates",
            f"off by > {z_erratum:g} SE where resolved ({ratios}); unresolved elsewhere",
            word,
            False,
        )
    k = off.index(False)
    e_first, e_last = abs(res[0].ratio - 1.0), abs(res[-1].ratio - 1.0)
    if not any(off[k:]) and e_last < e_first:
        return (
            "converges",
            f"off by > {z_erratum:g} SE up to d = {res[k - 1].d}, within it from d = {res[k].d} "
            f"({ratios}{how})",
            word,
            False,
        )
    return "mixed", f"off by > {z_erratum:g} SE at some d ({ratios}{how})", word, False


@dataclass(frozen=True)
class Cost:
    """What building the table cost: settings, samples and seconds (wall and summed compute)."""

    configs: int
    samples: int  # total sequences simulated (all configs)
    cosine_samples: int  # per (alpha, d) of the cosine entries
    wall_seconds: (
        float  # the whole of measure(), simulations and cosines (they overlap on an executor)
    )
    compute_seconds: (
        float  # simulations, summed over configs (SimResult.elapsed_seconds, as first simulated)
    )
    cosine_seconds: (
        float  # cosine draws, summed (as first drawn; they are cached like the simulations)
    )


@dataclass(frozen=True)
class Table:
    """The measured table: one :class:`Row` per closed form, setting and part; ``results`` holds the
    simulations behind it, (Setting, d) -> SimResult, for figures of the same numbers."""

    rows: tuple[Row, ...]
    ds: tuple[int, ...]
    n: int
    samples: int
    seed: int
    cost: Cost
    boost: int = DEFAULT_BOOST
    results: dict = field(default_factory=dict, compare=False, repr=False)

    def records(self) -> list[dict]:
        """One flat dict per row (for a pandas DataFrame): names, one text column per d, the verdict."""
        out = []
        for r in self.rows:
            rec = {
                "key": r.form.key,
                "equation": r.form.equation,
                "version": r.form.version,
                "setting": r.setting.label,
                "part": r.part,
            }
            for c in r.cells:
                rec[f"d = {c.d}"] = c.text()
            rec["verdict"] = r.verdict
            rec["trend"] = r.trend
            rec["summary"] = r.summary
            out.append(rec)
        return out

    def errata(self) -> list[Row]:
        """Rows whose ratio differs from 1 by more than the threshold at every d (the
        verdicts :data:`OFF` and :data:`FINITE_D`)."""
        return [r for r in self.rows if r.literal_erratum]

    def row(self, key: str, part: str, setting: Setting | None = None) -> Row:
        """The row of closed form ``key`` and ``part`` (in ``setting``, needed when the form has several)."""
        hits = [
            r
            for r in self.rows
            if r.form.key == key and r.part == part and (setting is None or r.setting == setting)
        ]
        if len(hits) != 1:
            raise ValueError(
                f"key={key!r}, part={part!r}, setting={setting!r} matches {len(hits)} rows; "
                f"allowed: a key of this table with a part it has (and a setting when it has several)"
            )
        return hits[0]

    def cell(self, key: str, part: str, d: int, setting: Setting | None = None) -> Cell:
        """The cell of :meth:`row` (``key``, ``part``, ``setting``) at hidden size ``d``."""
        cells = [c for c in self.row(key, part, setting).cells if c.d == d]
        if not cells:
            raise ValueError(f"d={d!r} is not allowed; allowed: one of {list(self.ds)}")
        return cells[0]

    def samples_of(self, setting: Setting) -> int:
        """Sequences simulated for ``setting`` at each d (:func:`setting_samples`)."""
        return setting_samples(setting, self.samples, self.boost)


def select(keys=None) -> tuple[ClosedForm, ...]:
    """The registry entries named by ``keys`` (all when None), in registry order."""
    if keys is None:
        return CLOSED_FORMS
    keys = list(keys)
    unknown = [k for k in keys if k not in BY_KEY]
    if unknown or not keys:
        raise ValueError(
            f"keys={keys!r} is not allowed; allowed: a non-empty list of {sorted(BY_KEY)}"
        )
    return tuple(f for f in CLOSED_FORMS if f.key in keys)


def _check_ds(ds) -> tuple[int, ...]:
    try:
        values = list(ds)
    except TypeError:
        raise ValueError(
            f"ds={ds!r} is not allowed; allowed: a non-empty list of integers >= 4"
        ) from None
    if not values:
        raise ValueError(f"ds={ds!r} is not allowed; allowed: a non-empty list of integers >= 4")
    return tuple(sorted({check_int("d", v, 4) for v in values}))


def _draw_cosine(alpha: float, n: int, d: int, samples: int, seed: int) -> list[float]:
    """inputs.input_cosine_similarity with its compute time: [mean, sem, seconds]."""
    t0 = time.perf_counter()
    mean, sem = inputs.input_cosine_similarity(SimConfig(alpha=alpha, n=n, d=d), samples, seed)
    return [mean, sem, time.perf_counter() - t0]


def _timed_cosine(
    alpha: float, n: int, d: int, samples: int, seed: int, cache=None
) -> tuple[float, float, float]:
    """:func:`_draw_cosine` through the on-disk cache (:func:`recency_lib.cache.cached_value`, keyed
    by the arguments, the source of ``inputs`` and what it imports, and numpy's version): (mean, sem,
    seconds when drawn). Module level, so a process pool can run it."""
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
    """Sequences per d that :func:`configs` simulates for ``setting``: ``boost`` x ``samples`` in Theorem 1's
    setting (:data:`BOOSTED`), :data:`PROP1_FACTOR` x ``samples`` in Proposition 1's (its verdict's runs),
    ``samples`` elsewhere."""
    if setting == P:
        return PROP1_FACTOR * samples
    return samples * (boost if setting in BOOSTED else 1)


def _config(setting: Setting, d: int, n: int, samples: int, seed: int, boost: int) -> SimConfig:
    """The simulation of ``setting`` at ``d``: :meth:`Setting.config` (gram engine), except in Proposition 1's
    setting, which is exactly the run of the book's verdict on Proposition 1 (settings.prop1_configs: no
    normalization, the default engine, PROP1_FACTOR x samples), so the two share their cached results."""
    count = setting_samples(setting, samples, boost)
    if setting == P:
        return SimConfig(
            alpha=0.0, gamma=0.0, norm="none", n=n, d=d, layers=LAYERS, seed=seed, samples=count
        )
    return setting.config(d, n, count, seed)


def _check_settings(settings) -> tuple[Setting, ...] | None:
    """``settings`` (None, or Settings to hold the forms at instead of their own) as a tuple."""
    if settings is None:
        return None
    values = list(settings) if isinstance(settings, (list, tuple)) else None
    if not values or not all(isinstance(s, Setting) for s in values):
        raise ValueError(
            f"settings={settings!r} is not allowed; allowed: None or a non-empty list of closedforms.Setting"
        )
    return tuple(dict.fromkeys(values))


def _settings_of(form: ClosedForm, settings: tuple[Setting, ...] | None) -> tuple[Setting, ...]:
    return form.settings if settings is None else settings


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
    """The simulations that hold the closed forms named by ``keys`` (all when None) to the model at each d
    in ``ds``: (Setting, d) -> the two-layer SimConfig of ``n`` tokens, root seed ``seed``, with
    :func:`setting_samples` sequences (``samples``; ``boost`` times as many in Theorem 1's setting;
    Proposition 1's setting: the runs of its verdict, settings.prop1_configs). ``settings``: the settings
    to hold the forms at instead of their own (a grid's, e.g. Appendix B's; None: each form's own)."""
    ds = _check_ds(ds)
    n = check_int("n", n, 3)
    samples = check_int("samples", samples, 2)
    seed = check_int("seed", seed, 0)
    boost = check_int("boost", boost, 1)
    forms = select(keys)
    settings = _check_settings(settings)
    gram = sorted(
        {s for f in forms if f.source == "gram" for s in _settings_of(f, settings)},
        key=lambda s: (s.norm, s.alpha, s.gamma),
    )
    return {(s, d): _config(s, d, n, samples, seed, boost) for s in gram for d in ds}


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
    z_resolve: float = Z_RESOLVE,
    z_erratum: float = Z_ERRATUM,
    results: dict | None = None,
    settings=None,
) -> Table:
    """Hold every closed form (or those named by ``keys``) to simulation at each d in ``ds``.

    The simulations are :func:`configs` (the same arguments); a page passes what it simulated as
    ``results`` ((Setting, d) -> SimResult, for exactly those configs), else they run here through the
    results cache (gram engine; ``executor`` spreads the missing ones, ``cache`` overrides the cache
    folder). The cosine entries draw ``cosine_samples`` sequences of raw tokens (dense; cost grows
    with d), on ``executor`` when one is given, through the same cache folder (:func:`_timed_cosine`).
    A ratio is reported where the closed form is nonzero and the simulated value is at least
    ``z_resolve`` SE from 0; verdicts use ``z_erratum`` (:func:`judge`). ``settings``: as :func:`configs`'s.
    """
    wanted = configs(ds, n=n, samples=samples, seed=seed, boost=boost, keys=keys, settings=settings)
    settings = _check_settings(settings)
    ds = _check_ds(ds)
    cosine_samples = check_int("cosine_samples", cosine_samples, 2)
    z_resolve = check_real(
        "z_resolve", z_resolve, lo=0.0, lo_open=True, allowed="a finite number > 0"
    )
    z_erratum = check_real(
        "z_erratum", z_erratum, lo=0.0, lo_open=True, allowed="a finite number > 0"
    )
    forms = select(keys)
    if results is not None and (
        not isinstance(results, dict)
        or {k: getattr(v, "config", None) for k, v in results.items()} != wanted
    ):
        raise ValueError(
            "results do not hold exactly the simulations of closedforms.configs(...) with these "
            "arguments; allowed: dict(zip(cfgs, cached_simulate_many(cfgs.values()))) for those cfgs"
        )

    t0 = time.perf_counter()
    per_setting = {
        s: setting_samples(s, samples, boost) for f in forms for s in _settings_of(f, settings)
    }
    cos_jobs = {
        (s, d): (s.alpha, n, d, cosine_samples, seed, cache)
        for s in sorted(
            {s for f in forms if f.source == "cosine" for s in _settings_of(f, settings)},
            key=lambda s: s.alpha,
        )
        for d in ds
    }
    pending = (
        {key: executor.submit(_timed_cosine, *args) for key, args in cos_jobs.items()}
        if executor
        else {}
    )
    sims = (
        results
        if results is not None
        else dict(
            zip(wanted, cached_simulate_many(wanted.values(), cache=cache, executor=executor))
        )
    )
    drawn = {
        key: (pending[key].result() if key in pending else _timed_cosine(*args))
        for key, args in cos_jobs.items()
    }
    cosines = {
        key: Estimate(m, se, f"mean over {cosine_samples} sequences")
        for key, (m, se, _) in drawn.items()
    }
    wall = time.perf_counter() - t0

    rows = []
    for f in forms:
        measured = sims if f.source == "gram" else cosines
        for s in _settings_of(f, settings):
            count = per_setting[s] if f.source == "gram" else cosine_samples
            for name, part in (("level", f.level), ("step", f.step)):
                if part is None:
                    continue
                cells = tuple(
                    Cell(
                        d,
                        float(part.form(s, d, n)),
                        part.read(measured[(s, d)]),
                        count,
                        part.flat,
                        z_resolve,
                    )
                    for d in ds
                )
                rows.append(Row(f, s, name, cells, *judge(cells, z_erratum)))
    cost = Cost(
        len(wanted),
        sum(c.samples for c in wanted.values()),
        cosine_samples,
        wall,
        float(sum(r.elapsed_seconds for r in sims.values())),
        float(sum(t for *_, t in drawn.values())),
    )
    return Table(tuple(rows), ds, n, samples, seed, cost, boost, sims)


# -- closed forms against one result: trends, h(j), ratios ---------------------------------------------


def predicted_trend(n: int, d, alpha: float = 0.0, gamma: float = 0.0):
    """The trend of S^(2) in the LLN limit: the mean of the steps S^(2)_ij - S^(2)_i,j-1 between earlier
    keys (2 <= j < i <= n), the quantity of ``SimResult.trend_mean``, from the corrected Eqs. (32),
    (40) (theory.score2_step_corrected, without cancellation; at alpha = gamma = 0 this is Eq. (5)).
    ``d``: a hidden size (a float back) or an array of them (an array back)."""
    i, j = off_diagonal_steps(n)
    dd = np.asarray(d, dtype=float)
    steps = theory.score2_step_corrected(i, j, alpha, gamma, dd[..., None])  # (..., steps)
    out = np.mean(steps, axis=-1)
    return float(out) if dd.ndim == 0 else out


def eq5_trend(n: int, d):
    """Theorem 1's trend as Eq. (5) predicts it (:func:`predicted_trend` at alpha = gamma = 0)."""
    return predicted_trend(n, d)


def eq5_smallest_step(n: int, d: float) -> float:
    """The smallest step S^(2)_ij - S^(2)_i,j-1 between two earlier keys (2 <= j < i <= n) that
    Eq. (5) predicts in Theorem 1's setting (alpha = gamma = 0; computed without cancellation,
    theory.score2_step_corrected)."""
    ii, jj = adjacent_index(check_int("n", n, 3))
    off = jj < ii
    return float(np.min(theory.score2_step_corrected(ii[off] + 1, jj[off] + 1, 0.0, 0.0, d)))


def trend_over_line(res: SimResult, line: float, z: float) -> str:
    """The mean step of S^(2) of ``res`` (:func:`s2_order`) over a predicted value ``line`` (e.g.
    :func:`predicted_trend`), "m ± s", or :data:`UNRESOLVED` where the step itself is within ``z``
    standard errors of 0: the one rule of every "simulated / large-d" ratio the book prints."""
    _, m, s = s2_order(res)
    return pm(m / line, s / abs(line)) if abs(zscore(m, s)) > z else UNRESOLVED


@dataclass(frozen=True)
class HCurves:
    """The key factor h(j) = 1/||x_j^(1)|| (Eq. (40)) of one setting, for keys ``j`` = 1..n: Eq. (41)
    as printed, the corrected closed form (theory.h_corrected; both None without normalization,
    where Eq. (41) does not apply) and the simulated 1/sqrt(E||x_j^(1)||^2) with its delta-method
    SE. ``normalized``: each divided by its value at j = 1 (the simulated one with the error of
    that division, statistics.simulated_h); else in the scale of the paper's Figures 2 and 5,
    sqrt(d) h(j) (closedforms.h_profile)."""

    j: np.ndarray
    printed: np.ndarray | None
    corrected: np.ndarray | None
    sim: np.ndarray
    sim_se: np.ndarray
    normalized: bool

    def columns(self, label: str) -> dict:
        """The curves as :func:`curve_columns` series, named "<label>: ..."."""
        out = {f"{label}: simulation": (self.j, self.sim, self.sim_se)}
        if self.printed is not None:
            out[f"{label}: Eq. (41) as printed"] = (self.j, self.printed, None)
            out[f"{label}: corrected"] = (self.j, self.corrected, None)
        return out


def h_curves(res: SimResult, normalize: bool = True) -> HCurves:
    """:class:`HCurves` of a simulated setting with at least two layers (h needs layer 1's output)."""
    cfg = res.config
    if cfg.layers < 2:
        raise ValueError(
            f"layers={cfg.layers} is out of range; allowed: >= 2 (h(j) is read from layer 1's output)"
        )
    j = np.arange(1, cfg.n + 1)
    printed = corrected = None
    if NORMS[cfg.norm].closed_form:
        printed = math.sqrt(cfg.d) * np.asarray(
            theory.h_eq41(j, cfg.alpha, cfg.gamma, cfg.d), dtype=float
        )
        corrected = math.sqrt(cfg.d) * np.asarray(
            theory.h_corrected(j, cfg.alpha, cfg.gamma, cfg.d, cfg.norm), dtype=float
        )
    if normalize:
        sim, se = simulated_h(res, state=1)
        if printed is not None:
            printed, corrected = printed / printed[0], corrected / corrected[0]
    else:
        sim, se = h_profile(res, math.sqrt(cfg.d))
    return HCurves(
        j,
        printed,
        corrected,
        np.asarray(sim, dtype=float),
        np.asarray(se, dtype=float),
        bool(normalize),
    )


#: How the error |ratio - 1| of a closed form moves as d grows (closedforms.trend), in words.
TREND_WORDS = {
    "grows": "grows",
    "shrinks": "shrinks",
    "stalls": "neither grows nor shrinks steadily",
    "": "is resolved at fewer than two d",
}


def trend_words(row) -> str:
    """What the error of a closed form does as d grows, for the prose: "grows", "shrinks", ...
    (``row``: a closedforms.Row; :data:`TREND_WORDS`)."""
    return TREND_WORDS[row.trend]


def ratio_texts(row) -> list[str]:
    """The measured ratios simulated / closed form of one ``closedforms.Row``, one per d, as the book
    writes them ("0.98062 ± 0.00005"; "unresolved" where the simulated value is within the
    resolution; the SEs are upper bounds where the row's estimator says so)."""
    out = []
    for c in row.cells:
        if not c.resolved:
            out.append("unresolved")
        elif is_exact(c.ratio, c.ratio_se):
            out.append(num(c.ratio, 7))
        else:
            out.append(pm(c.ratio, c.ratio_se))
    return out


def ratio_series(
    table, key: str, part: str
) -> dict[float, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """alpha -> (d, ratio, SE) of closed form ``key``'s ``part`` ("level" or "step") in a
    ``closedforms.Table``, one entry per setting of that form (NaN where not resolved): the data of a
    plot of simulated / closed form against d."""
    out = {}
    for row in table.rows:
        if row.form.key != key or row.part != part:
            continue
        a = row.setting.alpha
        if a in out:
            raise ValueError(
                f"key={key!r} has several settings with alpha = {a:g}; allowed: one setting per alpha"
            )
        out[a] = tuple(
            np.array([getattr(c, f) for c in row.cells], dtype=float)
            for f in ("d", "ratio", "ratio_se")
        )
    if not out:
        raise ValueError(
            f"key={key!r}, part={part!r} is not in the table; allowed: a closed form and part it measured"
        )
    return out


def h_downloads(stem: str, curves: dict, table, key: str) -> tuple[Markdown, Markdown]:
    """The two downloads beside an h(j) figure (Sec. 3's Figure 2, Appendix B's Figure 5): ``stem``,
    every simulated curve of ``curves`` (normalized -> alpha -> curve, :func:`h_curves`) as h(j)/h(1)
    and as sqrt(d) h(j) against j; ``stem``-ratios, simulated / closed form ``key`` of the
    ``closedforms.Table`` for its level and step against d (:func:`ratio_series`)."""
    h = curve_columns(
        {
            k: v
            for normalized in (True, False)
            for a, c in curves[normalized].items()
            for k, v in c.columns(
                f"{alpha_label(a)}, {'h(j)/h(1)' if normalized else 'sqrt(d) h(j)'}"
            ).items()
        },
        x_name="j",
    )
    ratios = curve_columns(
        {
            f"{part}, {alpha_label(a)}": series
            for part in ("level", "step")
            for a, series in ratio_series(table, key, part).items()
        },
        x_name="d",
    )
    return download(stem, h), download(f"{stem}-ratios", ratios)
