"""Chapter 3 (book/layernorm.ipynb): how large Theorem 1's effect is and where two trends cross:
per hidden size d, the simulated trend of S^(2) against the derived and printed forms, and what
resolving it costs. Nothing here simulates."""

import math
from dataclasses import dataclass

import numpy as np

from recency_lib import theory
from recency_lib.features import adjacent_index
from recency_lib.result import SimResult
from recency_lib.theory.trends import bisect

from . import conventions, plotting, report
from .claims import THEOREM1_FORM_ACCURACY
from .closedforms import eq5_trend
from .statistics import StepEstimate, sequences_needed

#: The smallest d of the derived form with LayerNorm (its series diverges below ~12).
FORM_MIN_D = 16
FIRST_ORDER = "first-order control variate"
GRAM = "Gram-matrix control variates"
_MARKERS = {FIRST_ORDER: "^", GRAM: "s"}


@dataclass(frozen=True)
class Point:
    """One simulated trend of S^(2) at hidden size ``d``: ``trend`` ± ``se``."""

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
        """The derived trend (with LayerNorm NaN below :data:`FORM_MIN_D`)."""
        if self.norm == "none":
            return float(theory.proposition1_trend(self.d, self.n))
        return float(theory.theorem1_trend(self.d, self.n)) if self.d >= FORM_MIN_D else math.nan

    @property
    def eq5(self) -> float:
        return float(eq5_trend(self.n, self.d))

    @property
    def corrected_ratio(self) -> tuple[float, float]:
        """:meth:`ratio` to the corrected Theorem 1, the form's accuracy folded into the SE (as
        claims.corrected_theorem1_claim)."""
        form = self.derived
        return self.trend / form, math.hypot(self.se, THEOREM1_FORM_ACCURACY * form) / abs(form)


def statistic_points(stats: dict) -> list[Point]:
    """Points of d -> a statistic of :mod:`companion.estimators` (trend: the last value of layer
    2), sorted by d."""
    out = []
    for d, s in sorted(stats.items()):
        est = GRAM if s.config.norm == "none" else FIRST_ORDER
        trend, se = float(s.mean[1, -1]), float(s.sem[1, -1])
        out.append(Point(d, trend, se, s.samples, est, s.config.n, s.config.norm))
    return out


def cost_per_sequence(results) -> float:
    """Compute seconds per sequence, pooled over the timed SimResults of ``results``."""
    timed = [r for r in results if math.isfinite(r.elapsed_seconds) and r.elapsed_seconds > 0]
    if not timed:
        return math.nan
    return sum(r.elapsed_seconds for r in timed) / sum(r.config.samples for r in timed)


@dataclass(frozen=True)
class Reach:
    """Theorem 1's trend at one d with control variates and with plain averaging, the SE cut, and
    the sequences for a z of statistics.SETTLE_Z (``need_cv``) of the effect from ``source``:
    "measured" where resolved, else "derived" (the corrected form), "none" below FORM_MIN_D."""

    d: int
    trend: float
    trend_se: float
    z: float
    plain: float
    plain_se: float
    plain_z: float
    vr_trend: float
    resolved: bool
    source: str
    need_cv: float


def theorem1_reach(results: dict[int, SimResult]) -> list[Reach]:
    """:class:`Reach` at each d of settings.theorem1_configs, all d one family."""
    zc = conventions.z_for(len(results))
    out = []
    for d, res in sorted(results.items()):
        m, e = float(res.trend_cv_mean[1]), float(res.trend_cv_sem[1])
        p, pe = float(res.trend_mean[1]), float(res.trend_sem[1])
        z = report.zscore(m, e)
        if z > zc:
            effect, source = m, "measured"
        elif d >= FORM_MIN_D:
            effect, source = float(theory.theorem1_trend(d, res.config.n)), "derived"
        else:
            effect, source = math.nan, "none"
        need = sequences_needed(e, res.config.samples, effect) if effect > 0 else math.nan
        cut = pe / e if e > 0 else math.nan
        plain = (p, pe, report.zscore(p, pe))
        out.append(Reach(d, m, e, z, *plain, cut, z > zc, source, need))
    return out


def first_step(x) -> tuple[float, float]:
    """S_{n,2} - S_{n,1} of layer 2 over the row's corrected Eq. (19) level, ± SE (``x``: a
    Gram-controlled statistic or a SimResult without normalization)."""
    est = StepEstimate.of(x)
    n = est.config.n
    level = float(theory.prop1_score_corrected(n, 1, est.config.d))
    ii, jj = adjacent_index(n)
    k = int(np.flatnonzero((ii == n - 1) & (jj == 1))[0])
    return float(est.mean[k]) / level, float(est.sem[k]) / level


def series(points, pair) -> tuple[list, list, list]:
    """(d, value, SE) lists of ``points`` (anything with ``d``), ``pair(p)`` giving (value, SE)."""
    values = [pair(p) for p in points]
    return [p.d for p in points], [v for v, _ in values], [e for _, e in values]


def _by_estimator(points: list[Point]) -> dict[str, list[Point]]:
    ests = dict.fromkeys(p.estimator for p in points)
    return {e: [p for p in points if p.estimator == e] for e in ests}


def size_columns(ln_points: list[Point], none_points: list[Point]) -> dict:
    """The size figure's curves: simulated / corrected Theorem 1 and / Eq. (5) per estimator, and
    without normalization simulated / derived."""
    out = {}
    for est, sel in _by_estimator(ln_points).items():
        out[f"÷ corrected Theorem 1, {est}"] = series(sel, lambda p: p.corrected_ratio)
        out[f"÷ Eq. (5), {est}"] = series(sel, lambda p: p.ratio(p.eq5))
    out["no normalization, ÷ derived"] = series(none_points, lambda p: p.ratio(p.derived))
    return out


def smallest_step_crossover(n: int = conventions.PAPER_N) -> float:
    """The d above which the smallest derived step between earlier keys without normalization
    exceeds LayerNorm's (theory.crossover_d is the same for the mean step)."""
    pairs = [(i, j) for i in range(3, n + 1) for j in range(2, i)]

    def gap(d: float) -> float:
        ln = float(theory.theorem1_steps(n, d)[2].min())
        none = min(float(theory.proposition1_step(i, j, d)) for i, j in pairs)
        return math.log(ln) - math.log(none)

    return bisect(gap, 16.0, 400.0, rtol=1e-9)


def row_rise(res: SimResult) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(keys j = 1..n-1, (S_nj - S_n1) / c_n, SE bound) of the last row, c_n the corrected Eq. (19)
    level."""
    n, d = res.config.n, res.config.d
    level = float(theory.prop1_score_corrected(n, 1, d))
    s, e = res.score_mean[1, n - 1, : n - 1], res.score_sem[1, n - 1, : n - 1]
    return np.arange(1, n), (s - s[0]) / level, np.hypot(e, e[0]) / level


def derived_row_rise(n: int, d: float) -> tuple[np.ndarray, np.ndarray]:
    """(keys j = 1..n-1, the derived rise of row n without normalization over key 1, over c_n)."""
    level = float(theory.prop1_score_corrected(n, 1, d))
    steps = [float(theory.proposition1_step(n, j, d)) for j in range(2, n)]
    return np.arange(1, n), np.concatenate([[0.0], np.cumsum(steps)]) / level


def trend_grids(dmax: float, points: int = 60) -> tuple[np.ndarray, np.ndarray]:
    """The d grids of Eq. (5) (from 4) and the corrected Theorem 1 (from 16) up to ``dmax``."""
    return np.geomspace(4, dmax, points), np.geomspace(FORM_MIN_D, dmax, points)


# -- figures ---------------------------------------------------------------------------------------


def ratio_panel(points: list[Point], ax):
    """Simulated / corrected Theorem 1 (filled) and / Eq. (5) (open) against d, a marker per
    estimator, and corrected / Eq. (5) (a line tending to e). Returns ``ax``."""
    from matplotlib.lines import Line2D

    pts = [p for p in points if p.d >= FORM_MIN_D and p.norm != "none"]
    n, ds, by_est = pts[0].n, [p.d for p in pts], _by_estimator(pts)
    kw = {}  # the first estimator's colour, for all of them
    for est, sel in by_est.items():
        mk = dict(marker=_MARKERS[est], linestyle="none")
        plotting.errorbar_points(*series(sel, lambda p: p.corrected_ratio), ax, **mk, **kw)
        kw = kw or {"color": ax.containers[-1].lines[0].get_color()}
    ax.axhline(1.0, **conventions.REFERENCE)
    grid = np.geomspace(min(ds), max(ds), 60)
    (curve,) = ax.plot(grid, theory.theorem1_trend(grid, n) / eq5_trend(n, grid), linewidth=1.0)
    c5, hollow = curve.get_color(), dict(markerfacecolor="white", linestyle="none")
    for est, sel in by_est.items():
        mk = dict(color=c5, marker=_MARKERS[est], **hollow)
        plotting.errorbar_points(*series(sel, lambda p: p.ratio(p.eq5)), ax, **mk)
    ax.axhline(math.e, **conventions.REFERENCE)
    at = dict(xytext=(2, 2), textcoords="offset points", va="bottom", fontsize=conventions.SMALL_PT)
    ax.annotate("$e$", (min(ds), math.e), **at)
    handles = [
        Line2D([], [], marker="o", linestyle="none", label="÷ corrected Theorem 1", **kw),
        Line2D([], [], color=c5, marker="o", label="÷ Eq. (5)", **hollow),
        Line2D([], [], color=c5, linewidth=1.0, label="corrected ÷ Eq. (5)"),
    ]
    handles += [
        Line2D([], [], color="black", marker=_MARKERS[e], linestyle="none", label=e) for e in by_est
    ]
    ax.legend(handles=handles, loc="center right", bbox_to_anchor=(1.0, 0.33))
    plotting.d_axis(ax, ds)
    ax.set_ylabel("simulated trend ÷ formula")
    return ax


def rise_panel(res: SimResult, ax):
    """The rise of row n over key 1 in per cent of its level, simulated and derived, and the LLN's
    flat row. Returns ``ax``."""
    j, rise, se = row_rise(res)
    n = res.config.n
    jd, derived = derived_row_rise(n, res.config.d)
    plotting.closed_form(jd, 100 * derived, ax, kind="corrected", color="black", label="derived")
    style = dict(marker=conventions.VARIANT_MARKERS[res.config.norm], linestyle="none")
    plotting.errorbar_points(j, 100 * rise, 100 * se, ax, label="simulated", **style)
    plotting.reference_line(ax, 0.0, label="LLN: flat")
    ylabel = f"$(S^{{(2)}}_{{{n},j}} - S^{{(2)}}_{{{n},1}})/c_{{{n}}}$, %"
    ax.set(xticks=j, xlabel="key j", ylabel=ylabel)
    return ax


def prop1_panel(points: list[Point], ax):
    """Simulated / derived trend without normalization against d, references at 1 and 0 (the
    LLN). Returns ``ax``."""
    pts = [p for p in points if p.norm == "none"]
    style = dict(marker=conventions.VARIANT_MARKERS["none"], linestyle="none", label="÷ derived")
    plotting.errorbar_points(*series(pts, lambda p: p.ratio(p.derived)), ax, **style)
    ax.axhline(1.0, **conventions.REFERENCE)
    plotting.reference_line(ax, 0.0, label="LLN: flat rows")
    plotting.d_axis(ax, [p.d for p in pts])
    ax.set_ylabel("simulated trend ÷ derived")
    return ax


def trends_panel(ln_points: list[Point], none_points: list[Point], n: int, ax, *, crossover: float):
    """Both derived trends against d (log-log), the simulated points (unresolved: upper limits at
    trend + 2 SE), the ``crossover``. Returns ``ax``."""
    ds = sorted({p.d for p in (*ln_points, *none_points)} | {FORM_MIN_D})
    grid = np.geomspace(FORM_MIN_D, max(ds), 80)
    ln_label, none_label = "LayerNorm: corrected Theorem 1", "no normalization: derived"
    (ln_line,) = ax.plot(grid, theory.theorem1_trend(grid, n), label=ln_label)
    (none_line,) = ax.plot(grid, theory.proposition1_trend(grid, n), label=none_label)
    for pts, line in ((ln_points, ln_line), (none_points, none_line)):
        colour = line.get_color()
        for est, sel in _by_estimator(pts).items():
            shown, hidden = [p for p in sel if p.z > 2.0], [p for p in sel if p.z <= 2.0]
            mk = _MARKERS[est] if pts is ln_points else conventions.VARIANT_MARKERS["none"]
            face = "white" if est == FIRST_ORDER else colour
            style = dict(color=colour, marker=mk, linestyle="none", markerfacecolor=face)
            if shown:
                plotting.errorbar_points(*series(shown, lambda p: (p.trend, p.se)), ax, **style)
            if hidden:
                bound = [max(p.trend, 0.0) + 2 * p.se for p in hidden]
                plotting.upper_limits([p.d for p in hidden], bound, ax, color=colour)
    ax.axvline(crossover, **conventions.REFERENCE)
    at = dict(xycoords=("data", "axes fraction"), xytext=(4, 0), textcoords="offset points")
    ax.annotate(f"$d^* = {crossover:.1f}$", (crossover, 0.5), fontsize=conventions.SMALL_PT, **at)
    plotting.d_axis(ax, ds, log_y=True)
    ax.set_ylabel(r"mean step of $S^{(2)}$")
    return ax
