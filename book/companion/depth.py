"""What happens with depth (chapter 6): the order of every layer of a deeper stack,
with and without LayerNorm, and whether LayerNorm's recency grows or fades from layer to layer.

Per layer the section reads two numbers of a ``SimResult`` (control variates: layer 1, whose earlier
keys are exchangeable, is the control of every layer): the trend (the mean step between two earlier
keys, ``trend_cv_mean``) and the recency probability (statistics.rp, with control variates). Whether the
order grows is a question about the change from one layer to the next in the same sequences, and a
``SimResult`` keeps no covariance between layers; so the growth is measured with
``recency_lib.engines.sequence_statistic`` and statistics.trend_steps, a per-sequence statistic whose
mean in layer l is the trend of layer l minus that of layer l - 1 (paired within each sequence),
with ``control_mean=0``.

:func:`settings` gives the study's settings and sample sizes (those of the depth study, which resolve
every trend at the section's z), :func:`cells` the numbers with their z and direction,
:func:`summary` the findings of one setting (the onset of primacy, the growth of recency),
:func:`depth_figure` the figure. Nothing here simulates.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from recency_lib.config import SimConfig
from recency_lib.validation import check_int, check_real

from . import conventions as cv
from . import report
from .statistics import rp, zscore

#: The settings of the study: (normalization, alpha, hidden size, residual) -> (sequences of the
#: run that gives each layer's trend and RP, sequences of the paired growth run; both in units of
#: the page's ``samples_depth``, 0: no growth run). "iso": isotropic tokens, "show": the showcase
#: anisotropy (the page's alpha); "small": d = :data:`SMALL_D`, "paper": the page's d; 0 / "gamma":
#: without / with the page's residual weight. The sizes resolve every trend at the section's z; more sequences where the effect is of order
#: 10^-6. LayerNorm on isotropic tokens at d = 64: its layer-2 trend needs about 8 x 10^5 sequences for
#: 90 % power, its first growth step about 3 x 10^5. No normalization on isotropic tokens at d = 64: its
#: layer-2 recency needs about 4 x 10^5; it gets 50 units, 10^6 sequences at the default 20,000, which
#: are Proposition 1's sequences (settings.prop1_configs: the same streams, so the same layer-2 number).
PLAN = {
    ("none", "iso", "small", 0): (2, 0),
    ("none", "iso", "paper", 0): (50, 0),
    ("none", "show", "paper", 0): (1, 0),
    ("layernorm", "iso", "small", 0): (1, 0.25),
    ("layernorm", "iso", "paper", 0): (50, 15),
    ("layernorm", "show", "paper", 0): (1, 0.25),
    ("none", "show", "paper", "gamma"): (2, 0),
    ("layernorm", "show", "paper", "gamma"): (1, 0.25),
}
#: The hidden size of the small-d settings.
SMALL_D = 16


def settings(
    alpha: float, gamma: float, d: int, samples: int
) -> dict[tuple[str, float, int, float], tuple[int, int]]:
    """(norm, alpha, d, gamma) -> (sequences, paired sequences) of each setting of :data:`PLAN`, for the
    showcase anisotropy ``alpha``, the residual weight ``gamma`` of the two settings with the residual,
    the paper's hidden size ``d`` and ``samples`` sequences per unit (settings that coincide, e.g. at
    d = 16, keep the larger counts; a growth run of at least 2 sequences)."""
    alpha = check_real("alpha", alpha, lo=0.0, hi=1.0, allowed="a real number in [0, 1]")
    gamma = check_real("gamma", gamma, allowed="a real number")
    d = check_int("d", d, 2)
    samples = check_int("samples", samples, 2)
    out: dict[tuple[str, float, int, float], tuple[int, int]] = {}
    for (norm, a, size, g), (k, m) in PLAN.items():
        key = (
            norm,
            0.0 if a == "iso" else alpha,
            SMALL_D if size == "small" else d,
            0.0 if g == 0 else gamma,
        )
        old = out.get(key, (0, 0))
        out[key] = (
            max(old[0], int(k * samples)),
            max(old[1], max(2, int(m * samples)) if m else 0),
        )
    return out


@dataclass(frozen=True)
class Cell:
    """One number of the study: ``what`` ("trend", "rp": RP - 1/2, or "growth": the trend minus the
    layer before's, paired) of 1-based ``layer``, control-variate ``value`` ± ``se``, its ``z`` and the
    ``direction`` it resolves at the section's z: "recency" / "primacy" (for growth "rises" / "falls")
    or "none"."""

    what: str
    layer: int
    value: float
    se: float
    z: float
    direction: str

    @property
    def resolved(self) -> bool:
        return self.direction != "none"


def _cell(what, layer, value, se, zc) -> Cell:
    z = zscore(value, se)
    up, down = ("rises", "falls") if what == "growth" else ("recency", "primacy")
    return Cell(
        what, layer, float(value), float(se), z, up if z > zc else down if z < -zc else "none"
    )


def family(results: dict, growth: dict) -> int:
    """The comparisons the section decides together: the trend and the RP of layers 2..L of every
    result, and the growth steps of layers 3..L of every growth run."""
    if not results:
        raise ValueError("results={} is empty; allowed: a dict setting -> SimResult")
    return sum(2 * (r.config.layers - 1) for r in results.values()) + sum(
        s.config.layers - 2 for s in growth.values()
    )


def cells(res, zc: float, stat=None) -> dict[tuple[str, int], Cell]:
    """(what, layer) -> :class:`Cell`: the trend and RP - 1/2 of layers 2..L of ``res`` (a SimResult, control
    variates) and, with ``stat`` (a SequenceStatistic of statistics.trend_steps with control_mean 0), the
    growth of the trend from layer 3 on; each decided at ``zc``."""
    zc = check_real("zc", zc, lo=0.0, lo_open=True, allowed="a number > 0")
    L = res.config.layers
    out = {}
    for l in range(2, L + 1):
        out[("trend", l)] = _cell("trend", l, res.trend_cv_mean[l - 1], res.trend_cv_sem[l - 1], zc)
        value, se = rp(res, l)
        out[("rp", l)] = _cell("rp", l, value - 0.5, se, zc)
    if stat is not None:
        if stat.cv_mean is None:
            raise ValueError(
                "stat has no control-variate estimate; allowed: sequence_statistic(..., control_mean=0.0)"
            )
        for l in range(3, stat.config.layers + 1):
            out[("growth", l)] = _cell(
                "growth", l, stat.cv_mean[l - 1, 1], stat.cv_sem[l - 1, 1], zc
            )
    return out


@dataclass(frozen=True)
class Summary:
    """What the section concludes for one setting: ``onset``, the first layer whose trend and RP both
    resolve primacy (None if none); ``recency``, the layers whose trend resolves recency; ``grows`` /
    ``fades``: every growth step resolved positive / some step resolved negative (both False without a
    growth run); ``rp_resolved``: the layers whose RP is resolved."""

    onset: int | None
    recency: tuple[int, ...]
    grows: bool
    fades: bool
    rp_resolved: tuple[int, ...]


def summary(c: dict[tuple[str, int], Cell]) -> Summary:
    """:class:`Summary` of one setting's :func:`cells`."""
    layers = sorted({l for what, l in c if what == "trend"})
    onset = next(
        (
            l
            for l in layers
            if c[("trend", l)].direction == "primacy" and c[("rp", l)].direction == "primacy"
        ),
        None,
    )
    steps = [x for (what, _), x in sorted(c.items()) if what == "growth"]
    return Summary(
        onset,
        tuple(l for l in layers if c[("trend", l)].direction == "recency"),
        bool(steps) and all(x.direction == "rises" for x in steps),
        any(x.direction == "falls" for x in steps),
        tuple(l for l in layers if c[("rp", l)].resolved),
    )


def label(cfg: SimConfig) -> str:
    """ "LayerNorm, α = 0, d = 64": a setting of the study in a legend or a table."""
    return f"{cv.setting_label(cfg)}, d = {cfg.d}"


def finding(s: Summary, layers: int) -> str:
    """One setting's finding in words, for the compact table."""
    if s.onset is not None:
        return f"primacy from layer {s.onset}"
    if s.fades:
        return "recency fades at some layer"
    if s.grows and len(s.recency) == layers - 1:
        return "recency, grows at every layer"
    if len(s.recency) == layers - 1:
        return "recency in every layer"
    return "no steady order resolved"


def short_label(cfg: SimConfig) -> str:
    """ "LN + residual, α = 0.5, d = 64": a setting in a narrow table column."""
    return f"{cv.variant_short(cfg)}, {cv.alpha_label(cfg.alpha)}, d = {cfg.d}"


def _pm(cell: Cell, shift: float = 0.0) -> str:
    return report.nowrap(report.pm(cell.value + shift, cell.se))


def summary_rows(results: dict, growth: dict, zc: float) -> list[dict]:
    """The compact table: one row per setting, its sequences, its trend and RP in layer 2 and in the last
    layer (one cell each, "layer 2 → layer L"), and its finding."""
    out = []
    for key, res in results.items():
        L = res.config.layers
        c = cells(res, zc, growth.get(key))
        out.append(
            {
                "setting": short_label(res.config),
                "sequences": report.count(res.config.samples),
                f"trend, layer 2 → {L}": f"{_pm(c[('trend', 2)])}<br>→ {_pm(c[('trend', L)])}",
                f"RP, layer 2 → {L}": f"{_pm(c[('rp', 2)], 0.5)}<br>→ {_pm(c[('rp', L)], 0.5)}",
                "finding": finding(summary(c), L),
            }
        )
    return out


def rows(results: dict, growth: dict, zc: float) -> list[dict]:
    """The full table: one row per setting and layer from 2 on: the trend and the RP with their z, and
    the paired growth of the trend from the layer before (with its sequences) where it was measured."""
    out = []
    for key, res in results.items():
        stat = growth.get(key)
        c = cells(res, zc, stat)
        for l in range(2, res.config.layers + 1):
            t, r, g = c[("trend", l)], c[("rp", l)], c.get(("growth", l))
            out.append(
                {
                    "setting": label(res.config),
                    "layer": str(l),
                    "trend": report.pm(t.value, t.se),
                    "z (trend)": report.z_text(t.z),
                    "RP": report.pm(r.value + 0.5, r.se),
                    "z (RP)": report.z_text(r.z),
                    "trend − layer before, paired": ""
                    if g is None
                    else f"{report.pm(g.value, g.se)} ({report.z_text(g.z)}; {report.count(stat.samples)})",
                }
            )
    return out


#: The linear range of the symmetric-log axes: below it a value is drawn on a linear scale.
LINTHRESH = 1e-6
#: Line style of the small-d settings (the paper's d: solid).
SMALL_D_LINE = "-."


def depth_figure(results: dict, zc: float):
    """Two panels against the layer (2..L): RP - 1/2 (left) and the trend (right) of every result,
    symmetric-log axes (linear within :data:`LINTHRESH`), one line per setting (colour: alpha; marker:
    the normalization; dash-dot: the smaller d), ± 1 SE, markers filled where the value is resolved at
    ``zc`` and open where not; dotted: 0 (no order). Returns the figure."""
    from . import plotting

    fig, axes = plotting.subplots(1, 2, height_ratio=0.52)
    dmax = max(r.config.d for r in results.values())
    for res in results.values():
        cfg = res.config
        c = cells(res, zc)
        style = cv.variant_style(cfg)
        layers = np.arange(2, cfg.layers + 1)
        for ax, what in zip(axes, ("rp", "trend")):
            v = np.array([c[(what, l)].value for l in layers])
            e = np.array([c[(what, l)].se for l in layers])
            ok = np.array([c[(what, l)].resolved for l in layers])
            ax.errorbar(
                layers,
                v,
                yerr=e,
                color=style["color"],
                linestyle=SMALL_D_LINE if cfg.d < dmax else "-",
                linewidth=1.2,
                capsize=2.5,
                elinewidth=1.0,
            )
            ax.plot(
                layers[ok],
                v[ok],
                linestyle="none",
                marker=style["marker"],
                markersize=5.5,
                color=style["color"],
            )
            ax.plot(
                layers[~ok],
                v[~ok],
                linestyle="none",
                marker=style["marker"],
                markersize=5.5,
                color=style["color"],
                markerfacecolor="white",
            )
    for ax, name in zip(axes, ("recency probability − ½", "trend (mean step)")):
        ax.set_yscale("symlog", linthresh=LINTHRESH)
        low, high = ax.get_ylim()
        top = int(np.ceil(np.log10(max(abs(low), abs(high), LINTHRESH))))
        decades = range(int(round(np.log10(LINTHRESH))), top + 1, 2)  # every other decade
        ax.set_yticks(sorted([-(10.0**k) for k in decades] + [0.0] + [10.0**k for k in decades]))
        ax.set_ylim(low, high)
        ax.minorticks_off()
        plotting.reference_line(ax, 0.0)
        ax.set_xlabel("layer")
        ax.set_ylabel(name)
        ax.set_xticks(layers)
    return fig


def legend_handles(results: dict):
    """Legend entries for :func:`depth_figure`, one per setting (its line and filled marker)."""
    from matplotlib.lines import Line2D

    dmax = max(r.config.d for r in results.values())
    out = []
    for res in results.values():
        style = cv.variant_style(res.config)
        out.append(
            Line2D(
                [],
                [],
                color=style["color"],
                marker=style["marker"],
                markersize=5.5,
                linestyle=SMALL_D_LINE if res.config.d < dmax else "-",
                label=label(res.config),
            )
        )
    return out
