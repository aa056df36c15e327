"""Chapter 3 (book/layernorm.ipynb): how large Theorem 1's effect is, and where the two trends cross.

The chapter compares three things at each hidden size d, all in Theorem 1's setting (isotropic tokens,
no residual, two layers) or Proposition 1's (the same without normalization):

* the simulated trend of S^(2), the mean step S^(2)_ij - S^(2)_i,j-1 between two earlier keys, from the
  strongest estimator of each setting: the first-order control variate with LayerNorm, the Gram-matrix
  controls without normalization (:mod:`companion.estimators`; per-sequence statistics for
  ``recency_lib.engines.sequence_statistic``), and what the simulator's layer-1 control variates
  (``SimResult.trend_cv_mean``) reach (:func:`theorem1_reach`);
* the book's derived trends, :func:`recency_lib.theory.theorem1_trend` (with LayerNorm) and
  :func:`recency_lib.theory.proposition1_trend` (without), and Eq. (5)'s (:func:`eq5_trend`);
* what it costs to resolve the trend, with the derived trend as the effect wherever the simulation
  does not resolve it (Eq. (5)'s value would understate it by a factor that grows toward e).

Points (:class:`Point`) carry a simulated trend with its standard error and the setting it comes from;
the plot functions take points and an Axes and never simulate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from recency_lib import theory
from recency_lib.result import SimResult
from recency_lib.theory.trends import bisect
from recency_lib.validation import check_int, check_real

from . import conventions as cv
from . import plotting, report
from .claims import THEOREM1_FORM_ACCURACY
from .closedforms import eq5_trend
from .statistics import SETTLE_Z, StepEstimate, earlier_steps, sequences_needed

#: The smallest d at which the derived form with LayerNorm is used (its epsilon series diverges below ~12;
#: stated accuracy 0.5 % for d >= 16, n <= 10: THEOREM1_FORM_ACCURACY).
FORM_MIN_D = 16
#: Estimator names of the points, as the page prints them.
FIRST_ORDER = "first-order control variate"
GRAM = "Gram-matrix control variates"


@dataclass(frozen=True)
class Point:
    """One simulated trend of S^(2): hidden size ``d``, ``trend`` +/- ``se``, from ``samples`` sequences
    with ``estimator`` (:data:`FIRST_ORDER` or :data:`GRAM`), ``n`` tokens, normalization ``norm``."""

    d: int
    trend: float
    se: float
    samples: int
    estimator: str
    n: int
    norm: str = "layernorm"

    @property
    def z(self) -> float:
        return report.zscore(self.trend, self.se)

    def ratio(self, predicted: float) -> tuple[float, float]:
        """(simulated / ``predicted``, its SE)."""
        return self.trend / predicted, self.se / abs(predicted)

    @property
    def derived(self) -> float:
        """The book's derived trend at this point (with LayerNorm: theory.theorem1_trend, NaN below
        :data:`FORM_MIN_D`; without normalization: theory.proposition1_trend)."""
        if self.norm == "none":
            return float(theory.proposition1_trend(self.d, self.n))
        return float(theory.theorem1_trend(self.d, self.n)) if self.d >= FORM_MIN_D else math.nan

    @property
    def eq5(self) -> float:
        return float(eq5_trend(self.n, self.d))

    @property
    def corrected_ratio(self) -> tuple[float, float]:
        """(simulated / corrected Theorem 1, its SE) as :func:`claims.corrected_theorem1_claim` states it:
        the form's stated accuracy (THEOREM1_FORM_ACCURACY) combined with the simulation's SE."""
        form = self.derived
        return self.trend / form, math.hypot(self.se, THEOREM1_FORM_ACCURACY * form) / abs(form)


def statistic_points(stats: dict) -> list[Point]:
    """Points of an estimator of :mod:`companion.estimators` (``stats``: d -> SequenceStatistic; the trend is
    the last value of its second layer): the first-order control variate with LayerNorm, the Gram-matrix
    controls without normalization; sorted by d."""
    return [
        Point(
            d,
            float(stats[d].mean[1, -1]),
            float(stats[d].sem[1, -1]),
            stats[d].samples,
            GRAM if stats[d].config.norm == "none" else FIRST_ORDER,
            stats[d].config.n,
            stats[d].config.norm,
        )
        for d in sorted(stats)
    ]


def cost_per_sequence(results) -> float:
    """Measured compute seconds per sequence, pooled over ``results`` (SimResults or SequenceStatistics:
    their summed CPU seconds over their summed sequences): one cost for every conversion of a sequence
    count into time (the Gram engine's cost does not depend on d). NaN when no timing is known."""
    t = s = 0.0
    for r in results:
        e = float(getattr(r, "elapsed_seconds", math.nan))
        if math.isfinite(e) and e > 0:
            t += e
            s += r.config.samples if isinstance(r, SimResult) else r.samples
    return t / s if s > 0 else math.nan


@dataclass(frozen=True)
class Need:
    """What it takes to resolve Theorem 1's trend at one hidden size with layer-1 control variates: the
    effect assumed (``effect``, from ``source``: "measured" where the run resolves it, else "derived",
    the corrected Theorem 1; "none" below :data:`FORM_MIN_D` where neither applies) and the sequences
    for an expected z of ``z`` (control variates, plain averaging)."""

    d: int
    effect: float
    source: str
    cv: float
    plain: float
    z: float


def needs(reach, n: int, z: float = SETTLE_Z) -> dict[int, Need]:
    """d -> :class:`Need` for records of :func:`theorem1_reach` (their ``resolved``, ``trend``,
    ``trend_se``, ``plain_se``, ``samples``): the measured trend where resolved, else the derived one."""
    n = check_int("n", n, 3)
    out = {}
    for r in reach:
        if r.resolved:
            effect, source = r.trend, "measured"
        elif r.d >= FORM_MIN_D:
            effect, source = float(theory.theorem1_trend(r.d, n)), "derived"
        else:
            effect, source = math.nan, "none"
        if math.isfinite(effect) and effect > 0:
            need_cv = sequences_needed(r.trend_se, r.samples, effect, z)
            need_plain = sequences_needed(r.plain_se, r.samples, effect, z)
        else:
            need_cv = need_plain = math.nan
        out[r.d] = Need(r.d, effect, source, need_cv, need_plain, z)
    return out


@dataclass(frozen=True)
class Reach:
    """What one hidden size of Theorem 1's check shows (:func:`theorem1_reach`): ``trend``/``trend_se``,
    the control-variate trend of S^(2) (mean step between earlier keys); ``plain``/``plain_se``, the
    same by plain averaging; ``z``, ``plain_z``: their z-scores; ``eq5``: Eq. (5)'s trend;
    ``vr_trend``: the variance reduction (plain SE / CV SE); ``resolved``: the CV trend is beyond the
    family's z."""

    d: int
    samples: int
    trend: float
    trend_se: float
    z: float
    plain: float
    plain_se: float
    plain_z: float
    eq5: float
    vr_trend: float
    resolved: bool


def theorem1_reach(results: dict[int, SimResult]) -> list[Reach]:
    """Theorem 1's trend at each hidden size (settings.theorem1_configs), with control variates and
    without; the trends of all hidden sizes are tested together (z of len(results) comparisons)."""
    if not results:
        raise ValueError(
            "results={} is empty; allowed: a dict d -> SimResult of Theorem 1's setting"
        )
    zc = cv.z_for(len(results))
    out = []
    for d in sorted(results):
        res = results[d]
        m, e = float(res.trend_cv_mean[1]), float(res.trend_cv_sem[1])
        pm_, pe = float(res.trend_mean[1]), float(res.trend_sem[1])
        zz = report.zscore(m, e)
        out.append(
            Reach(
                d,
                res.config.samples,
                m,
                e,
                zz,
                pm_,
                pe,
                report.zscore(pm_, pe),
                eq5_trend(res.config.n, d),
                pe / e if e > 0 else math.nan,
                zz > zc,
            )
        )
    return out


@dataclass(frozen=True)
class Beyond:
    """Proposition 1 beyond the LLN at one hidden size (:func:`prop1_beyond`): the trend of S^(2) and the
    first step of row n relative to the row's level, S_{n,2} - S_{n,1} over corrected Eq. (19)."""

    d: int
    samples: int
    trend: float
    trend_se: float
    z: float
    first: float
    first_se: float


def prop1_beyond(results: dict) -> list[Beyond]:
    """Proposition 1's second-layer row beyond the LLN, per hidden size (settings.prop1_configs; d -> the
    Gram-controlled statistic of companion.estimators, or a SimResult)."""
    from recency_lib.metrics import adjacent_index

    out = []
    for d in sorted(results):
        est = StepEstimate.of(results[d])
        n = est.config.n
        level = float(theory.prop1_score_corrected(n, 1, d))
        ii, jj = adjacent_index(n)
        k = int(np.flatnonzero((ii == n - 1) & (jj == 1))[0])  # S_{n,2} - S_{n,1}
        out.append(
            Beyond(
                d,
                est.config.samples,
                est.trend,
                est.trend_se,
                report.zscore(est.trend, est.trend_se),
                float(est.mean[k]) / level,
                float(est.sem[k]) / level,
            )
        )
    return out


def every_step_need(res: SimResult, z: float) -> tuple[float, float]:
    """Sequences at which layer-1 control variates would put every step between earlier keys of E S^(2)
    (2 <= j < i) ``z`` standard errors from 0 in expectation, with the corrected Theorem 1's per-pair
    steps (theory.theorem1_step) as the effects and ``res``'s step SEs (LayerNorm, two layers or more,
    d >= :data:`FORM_MIN_D`): (sequences, smallest derived step). The diagonal steps, of order sqrt(d),
    need far fewer."""
    z = check_real("z", z, lo=0.0, lo_open=True, allowed="a number > 0")
    d, n = res.config.d, res.config.n
    if d < FORM_MIN_D or res.config.norm != "layernorm" or n < 3:
        return math.nan, math.nan
    ii, jj = earlier_steps(n)
    sem = res.steps("cv")[1][1][ii, jj]
    derived = pair_steps(theory.theorem1_steps(n, d))
    steps = np.array([derived[int(i) + 1, int(j) + 1] for i, j in zip(ii, jj)])
    need = max(
        sequences_needed(float(e), res.config.samples, float(s), z) for e, s in zip(sem, steps)
    )
    return need, float(steps.min())


def size_columns(ln_points: list[Point], none_points: list[Point]) -> dict:
    """The data of the chapter's size figure for report.curve_columns: per estimator, simulated / corrected
    Theorem 1 and simulated / Eq. (5) (value, SE) against d; without normalization, simulated / derived."""
    out = {}
    for est in dict.fromkeys(p.estimator for p in ln_points):
        sel = [p for p in ln_points if p.estimator == est]
        out[f"÷ corrected Theorem 1, {est}"] = (
            [p.d for p in sel],
            [p.corrected_ratio[0] for p in sel],
            [p.corrected_ratio[1] for p in sel],
        )
        out[f"÷ Eq. (5), {est}"] = (
            [p.d for p in sel],
            [p.ratio(p.eq5)[0] for p in sel],
            [p.ratio(p.eq5)[1] for p in sel],
        )
    out["no normalization, ÷ derived"] = (
        [p.d for p in none_points],
        [p.ratio(p.derived)[0] for p in none_points],
        [p.ratio(p.derived)[1] for p in none_points],
    )
    return out


def smallest_steps(d: float, n: int) -> tuple[float, float]:
    """The smallest per-pair step between earlier keys (2 <= j < i <= n) of E S^(2), derived, with
    LayerNorm (theory.theorem1_step) and without normalization (theory.proposition1_step): the steps
    Definition 1 needs resolved."""
    n = check_int("n", n, 3)
    d = check_real("d", d, lo=float(FORM_MIN_D), allowed=f"a hidden size >= {FORM_MIN_D}")
    none = min(
        float(theory.proposition1_step(i, j, d)) for i in range(3, n + 1) for j in range(2, i)
    )
    return float(theory.theorem1_steps(n, d)[2].min()), none


def pair_steps(steps: tuple[np.ndarray, np.ndarray, np.ndarray]) -> dict[tuple[int, int], float]:
    """{(i, j): step} (1-based) from theory.theorem1_steps' (i, j, steps)."""
    i, j, s = steps
    return {(int(a), int(b)): float(v) for a, b, v in zip(i, j, s)}


def smallest_step_crossover(n: int = cv.PAPER_N, lo: float = 16.0, hi: float = 400.0) -> float:
    """The hidden size above which the smallest derived step without normalization exceeds the smallest
    one with LayerNorm (:func:`smallest_steps`); compare theory.crossover_d, the same for the mean step."""
    n = check_int("n", n, 3)

    def gap(x: float) -> float:
        ln, none = smallest_steps(x, n)
        return math.log(ln) - math.log(none)

    return bisect(gap, lo, hi, rtol=1e-9)


def row_rise(res: SimResult, layer: int = 2) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The rise of the last row of 1-based ``layer`` over its first key, relative to the corrected Eq. (19)
    level c_n (theory.prop1_score_corrected, Proposition 1's setting): (keys j = 1..n-1,
    (S_nj - S_n1) / c_n, SE), the two scores' SEs combined as if independent (an upper bound: they
    correlate positively)."""
    n, d = res.config.n, res.config.d
    level = float(theory.prop1_score_corrected(n, 1, d))
    s, e = res.score_mean[layer - 1, n - 1, : n - 1], res.score_sem[layer - 1, n - 1, : n - 1]
    return np.arange(1, n), (s - s[0]) / level, np.hypot(e, e[0]) / level


def derived_row_rise(n: int, d: float) -> tuple[np.ndarray, np.ndarray]:
    """The derived rise of row n of E S^(2) without normalization over its first key, relative to c_n:
    (keys j = 1..n-1, sum of theory.proposition1_step(n, k, d) for k <= j, over c_n)."""
    n = check_int("n", n, 3)
    level = float(theory.prop1_score_corrected(n, 1, d))
    steps = [float(theory.proposition1_step(n, j, d)) for j in range(2, n)]
    return np.arange(1, n), np.concatenate([[0.0], np.cumsum(steps)]) / level


# -- figures ------------------------------------------------------------------------------------------

_MARKERS = {FIRST_ORDER: "^", GRAM: "s"}


def ratio_panel(points: list[Point], ax, *, eq5: bool = True, d_grid=None):
    """Simulated / corrected Theorem 1 with LayerNorm (filled) against d, one marker per estimator, the
    error bars +/- 1 SE with the form's stated accuracy folded in (:attr:`Point.corrected_ratio`), and a
    dotted reference at 1; ``eq5``: also simulated / Eq. (5) (open markers, +/- 1 SE) and the corrected
    form / Eq. (5) (thin line over ``d_grid``) tending to e (dotted). One legend: the series (centre
    right, with the estimators' markers). Points below :data:`FORM_MIN_D` are left out.
    Returns ``ax``."""
    from matplotlib.lines import Line2D

    pts = [p for p in points if p.d >= FORM_MIN_D and p.norm != "none"]
    if not pts:
        raise ValueError(
            "points has no LayerNorm point with d >= 16; allowed: Points of Theorem 1's setting"
        )
    n = pts[0].n
    ests = list(dict.fromkeys(p.estimator for p in pts))
    ds = [p.d for p in pts]
    series = []
    for est in ests:
        sel = [p for p in pts if p.estimator == est]
        r = np.array([p.corrected_ratio for p in sel])
        kw = {"color": series[0].get_color()} if series else {}
        bars = plotting.errorbar_points(
            [p.d for p in sel], r[:, 0], r[:, 1], ax, marker=_MARKERS[est], linestyle="none", **kw
        ).containers[-1]
        if not series:
            series.append(bars.lines[0])
    ax.axhline(1.0, **cv.REFERENCE)
    handles = [
        Line2D(
            [],
            [],
            color=series[0].get_color(),
            marker="o",
            linestyle="none",
            label="÷ corrected Theorem 1",
        )
    ]
    if eq5:
        grid = (
            np.geomspace(min(ds), max(ds), 60)
            if d_grid is None
            else np.asarray(d_grid, dtype=float)
        )
        (curve,) = ax.plot(grid, theory.theorem1_trend(grid, n) / eq5_trend(n, grid), linewidth=1.0)
        for est in ests:
            sel = [p for p in pts if p.estimator == est]
            r = np.array([p.ratio(p.eq5) for p in sel])
            plotting.errorbar_points(
                [p.d for p in sel],
                r[:, 0],
                r[:, 1],
                ax,
                color=curve.get_color(),
                marker=_MARKERS[est],
                markerfacecolor="white",
                linestyle="none",
            )
        ax.axhline(math.e, **cv.REFERENCE)
        ax.annotate(
            "$e$",
            (min(ds), math.e),
            xytext=(2, 2),
            textcoords="offset points",
            va="bottom",
            fontsize=cv.SMALL_PT,
        )
        handles += [
            Line2D(
                [],
                [],
                color=curve.get_color(),
                marker="o",
                markerfacecolor="white",
                linestyle="none",
                label="÷ Eq. (5)",
            ),
            Line2D([], [], color=curve.get_color(), linewidth=1.0, label="corrected ÷ Eq. (5)"),
        ]
    handles += [
        Line2D([], [], color="black", marker=_MARKERS[e], linestyle="none", label=e) for e in ests
    ]
    ax.legend(handles=handles, loc="center right", bbox_to_anchor=(1.0, 0.33))
    plotting.d_axis(ax, ds)
    ax.set_ylabel("simulated trend ÷ formula")
    return ax


def rise_panel(res: SimResult, ax, *, label: str | None = None):
    """Proposition 1's row beyond the LLN: the simulated rise of row n over key 1, relative to the
    corrected Eq. (19) level, in per cent (:func:`row_rise`, +/- its SE bound), the derived rise (solid,
    :func:`derived_row_rise`) and the LLN's flat row (dotted 0). Returns ``ax``."""
    j, rise, se = row_rise(res)
    jd, derived = derived_row_rise(res.config.n, res.config.d)
    plotting.closed_form(jd, 100 * derived, ax, kind="corrected", color="black", label="derived")
    plotting.errorbar_points(
        j,
        100 * rise,
        100 * se,
        ax,
        marker=cv.VARIANT_MARKERS[res.config.norm],
        linestyle="none",
        label=label or "simulated",
    )
    plotting.reference_line(ax, 0.0, label="LLN: flat")
    ax.set_xticks(j)
    ax.set_xlabel("key j")
    ax.set_ylabel(
        f"$(S^{{(2)}}_{{{res.config.n},j}} - S^{{(2)}}_{{{res.config.n},1}})/c_{{{res.config.n}}}$, %"
    )
    return ax


def prop1_panel(points: list[Point], ax):
    """Simulated / derived trend without normalization (theory.proposition1_trend), +/- 1 SE, against d,
    with a dotted reference at 1 (the form exact) and one at 0 (the LLN's flat row). Returns ``ax``."""
    pts = [p for p in points if p.norm == "none"]
    if not pts:
        raise ValueError(
            "points has no point without normalization; allowed: Points of Proposition 1's setting"
        )
    r = np.array([p.ratio(p.derived) for p in pts])
    plotting.errorbar_points(
        [p.d for p in pts],
        r[:, 0],
        r[:, 1],
        ax,
        marker=cv.VARIANT_MARKERS["none"],
        linestyle="none",
        label="÷ derived",
    )
    ax.axhline(1.0, **cv.REFERENCE)
    plotting.reference_line(ax, 0.0, label="LLN: flat rows")
    plotting.d_axis(ax, [p.d for p in pts])
    ax.set_ylabel("simulated trend ÷ derived")
    return ax


def trends_panel(
    ln_points: list[Point],
    none_points: list[Point],
    n: int,
    ax,
    *,
    d_grid=None,
    crossover: float | None = None,
):
    """Both derived trends against d (log-log: theory.theorem1_trend from :data:`FORM_MIN_D`,
    theory.proposition1_trend) with the simulated points on them (+/- 1 SE; an unresolved point as an
    upper limit at trend + 2 SE) and the crossover ``crossover`` marked (dotted vertical line). Returns
    ``ax``."""
    n = check_int("n", n, 3)
    ds = sorted({p.d for p in (*ln_points, *none_points)} | {FORM_MIN_D})
    grid = (
        np.geomspace(FORM_MIN_D, max(ds), 80) if d_grid is None else np.asarray(d_grid, dtype=float)
    )
    (ln_line,) = ax.plot(
        grid, theory.theorem1_trend(grid, n), label="LayerNorm: corrected Theorem 1"
    )
    (none_line,) = ax.plot(
        grid, theory.proposition1_trend(grid, n), label="no normalization: derived"
    )
    for pts, colour, marker in (
        (ln_points, ln_line.get_color(), cv.VARIANT_MARKERS["layernorm"]),
        (none_points, none_line.get_color(), cv.VARIANT_MARKERS["none"]),
    ):
        for est in dict.fromkeys(p.estimator for p in pts):
            sel = [p for p in pts if p.estimator == est]
            shown = [p for p in sel if p.z > 2.0]
            hidden = [p for p in sel if p.z <= 2.0]
            mk = _MARKERS[est] if pts is ln_points else marker
            if shown:
                plotting.errorbar_points(
                    [p.d for p in shown],
                    [p.trend for p in shown],
                    [p.se for p in shown],
                    ax,
                    color=colour,
                    marker=mk,
                    linestyle="none",
                    markerfacecolor="white" if est == FIRST_ORDER else colour,
                )
            if hidden:
                plotting.upper_limits(
                    [p.d for p in hidden],
                    [max(p.trend, 0.0) + 2 * p.se for p in hidden],
                    ax,
                    color=colour,
                )
    if crossover is not None and math.isfinite(crossover):
        ax.axvline(crossover, **cv.REFERENCE)
        ax.annotate(
            f"$d^* = {crossover:.1f}$",
            (crossover, 0.5),
            xycoords=("data", "axes fraction"),
            xytext=(4, 0),
            textcoords="offset points",
            fontsize=cv.SMALL_PT,
        )
    plotting.d_axis(ax, ds, log_y=True)
    ax.set_ylabel(r"mean step of $S^{(2)}$")
    return ax


def trend_grids(dmax: float, points: int = 60) -> tuple[np.ndarray, np.ndarray]:
    """The d grids of the chapter's trend figure: Eq. (5) from d = 4 and the corrected Theorem 1 from
    :data:`FORM_MIN_D`, both to ``dmax``."""
    return np.geomspace(4, dmax, points), np.geomspace(FORM_MIN_D, dmax, points)
