"""Chapter 6's depth study: each layer's order (control-variate trend and RP) in a deeper stack,
and whether LayerNorm's recency grows: the trend's step from one layer to the next, paired within
each sequence (``sequence_statistic(cfg, statistics.trend_steps, control_mean=0.0)``)."""

import math
from dataclasses import dataclass

import numpy as np

from recency_lib.config import SimConfig
from recency_lib.metrics import sign

from . import conventions, report
from .statistics import rp, zscore

#: (norm, alpha, d, residual) -> (sequences of the run, of the paired growth run; 0: none) in units
#: of the page's ``samples_depth``: "iso" alpha = 0, "show" the page's alpha, "small" d = 16,
#: "paper" the page's d, "gamma" its residual weight. The sizes resolve every trend at the section's
#: z (LayerNorm at alpha = 0, d = 64 needs about 8 x 10^5 sequences).
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


def settings(alpha: float, gamma: float, d: int, samples: int) -> dict[tuple, tuple[int, int]]:
    """(norm, alpha, d, gamma) -> (sequences, paired sequences) of :data:`PLAN`; coinciding
    settings keep the larger counts; a growth run has at least 2 sequences."""
    values = {"iso": 0.0, "show": alpha, "small": 16, "paper": d, 0: 0.0, "gamma": gamma}
    out: dict[tuple, tuple[int, int]] = {}
    for (norm, *setting), (k, m) in PLAN.items():
        key = (norm, *(values[x] for x in setting))
        old = out.get(key, (0, 0))
        paired = max(2, conventions.scaled(m, samples)) if m else 0
        out[key] = (max(old[0], conventions.scaled(k, samples)), max(old[1], paired))
    return out


@dataclass(frozen=True)
class Cell:
    """One number of a layer (the trend, RP - 1/2 or the growth): ``value`` ± ``se``, ``z`` and the
    ``direction`` resolved: "recency" / "primacy" (growth: "rises" / "falls") or "none"."""

    value: float
    se: float
    z: float
    direction: str

    @property
    def resolved(self) -> bool:
        return self.direction != "none"


def _cell(what, value, se, zc) -> Cell:
    up, down = ("rises", "falls") if what == "growth" else ("recency", "primacy")
    word = {1: up, -1: down, 0: "none"}[sign(value, se, zc)]
    return Cell(float(value), float(se), zscore(value, se), word)


def family(results: dict, growth: dict) -> int:
    """The comparisons decided together: trend and RP of layers 2..L, growth of layers 3..L."""
    levels = sum(2 * (r.config.layers - 1) for r in results.values())
    return levels + sum(s.config.layers - 2 for s in growth.values())


def cells(res, zc: float, stat=None) -> dict[tuple[str, int], Cell]:
    """(what, layer) -> :class:`Cell` at ``zc``: trend and RP - 1/2 from layer 2, the growth
    (``stat``: statistics.trend_steps) from layer 3."""
    out = {}
    for l in range(2, res.config.layers + 1):
        trend, (value, se) = (res.trend_cv_mean[l - 1], res.trend_cv_sem[l - 1]), rp(res, l)
        out[("trend", l)] = _cell("trend", *trend, zc)
        out[("rp", l)] = _cell("rp", value - 0.5, se, zc)
    if stat is not None:
        for l in range(3, stat.config.layers + 1):
            growth = (stat.cv_mean[l - 1, 1], stat.cv_sem[l - 1, 1])  # layer l minus layer l - 1
            out[("growth", l)] = _cell("growth", *growth, zc)
    return out


@dataclass(frozen=True)
class Summary:
    """One setting: the first layer whose trend and RP resolve primacy, the layers of resolved
    recency (trend) and RP, whether every growth step rises / some falls."""

    onset: int | None
    recency: tuple[int, ...]
    grows: bool
    fades: bool
    rp_resolved: tuple[int, ...]


def summary(c: dict[tuple[str, int], Cell]) -> Summary:
    """:class:`Summary` of one setting's :func:`cells`."""
    layers = sorted(l for what, l in c if what == "trend")
    primacy = [
        l for l in layers if c[("trend", l)].direction == c[("rp", l)].direction == "primacy"
    ]
    steps = [x.direction for (what, _), x in sorted(c.items()) if what == "growth"]
    return Summary(
        primacy[0] if primacy else None,
        tuple(l for l in layers if c[("trend", l)].direction == "recency"),
        bool(steps) and all(w == "rises" for w in steps),
        "falls" in steps,
        tuple(l for l in layers if c[("rp", l)].resolved),
    )


def label(cfg: SimConfig) -> str:
    """ "LayerNorm, α = 0, d = 64"."""
    return f"{conventions.setting_label(cfg)}, d = {cfg.d}"


def finding(s: Summary, layers: int) -> str:
    """One setting's finding in words, for the compact table."""
    every = len(s.recency) == layers - 1
    if s.onset is not None:
        return f"primacy from layer {s.onset}"
    if s.fades:
        return "recency fades at some layer"
    if every:
        return "recency, grows at every layer" if s.grows else "recency in every layer"
    return "no steady order resolved"


def _pm(cell: Cell, shift: float = 0.0) -> str:
    return report.nowrap(report.pm(cell.value + shift, cell.se))


def summary_rows(results: dict, growth: dict, zc: float) -> list[dict]:
    """The compact table: per setting, sequences, trend and RP in layer 2 → the last, finding."""
    out = []
    for key, res in results.items():
        cfg, L = res.config, res.config.layers
        c = cells(res, zc, growth.get(key))
        alpha = conventions.alpha_label(cfg.alpha)
        out.append(
            {
                "setting": f"{conventions.variant_short(cfg)}, {alpha}, d = {cfg.d}",
                "sequences": report.count(cfg.samples),
                f"trend (layer-1 CV), layer 2 → {L}": f"{_pm(c[('trend', 2)])}<br>→ "
                f"{_pm(c[('trend', L)])}",
                f"RP, layer 2 → {L}": f"{_pm(c[('rp', 2)], 0.5)}<br>→ {_pm(c[('rp', L)], 0.5)}",
                "finding": finding(summary(c), L),
            }
        )
    return out


def rows(results: dict, growth: dict, zc: float) -> list[dict]:
    """The full table: per setting and layer from 2 on, trend and RP with their z, and the paired
    growth where it was measured."""
    out = []
    for key, res in results.items():
        stat = growth.get(key)
        c = cells(res, zc, stat)
        for l in range(2, res.config.layers + 1):
            t, r, g = c[("trend", l)], c[("rp", l)], c.get(("growth", l))
            grown = "" if g is None else f"{report.pm(g.value, g.se)} ({report.z_text(g.z)}; "
            out.append(
                {
                    "setting": label(res.config),
                    "layer": str(l),
                    "trend (layer-1 CV)": report.pm(t.value, t.se),
                    "z (trend)": report.z_text(t.z),
                    "RP": report.pm(r.value + 0.5, r.se),
                    "z (RP)": report.z_text(r.z),
                    "trend − layer before, paired": grown
                    and f"{grown}{report.count(stat.samples)})",
                }
            )
    return out


#: The linear range of the symmetric-log axes.
LINTHRESH = 1e-6


def _line(cfg: SimConfig, dmax: int) -> str:
    return "-." if cfg.d < dmax else "-"  # the smaller d dash-dotted


def depth_figure(results: dict, zc: float):
    """RP - 1/2 (left) and the trend (right) against the layer ± 1 SE, one line per setting
    (dash-dot: the smaller d), filled markers where resolved at ``zc``, symmetric-log axes."""
    from . import plotting

    fig, axes = plotting.subplots(1, 2, height_ratio=0.52)
    dmax = max(r.config.d for r in results.values())
    for res in results.values():
        cfg, c = res.config, cells(res, zc)
        style = conventions.variant_style(cfg)
        colour, layers = style["color"], np.arange(2, cfg.layers + 1)
        for ax, what in zip(axes, ("rp", "trend")):
            v = np.array([c[(what, l)].value for l in layers])
            e = np.array([c[(what, l)].se for l in layers])
            ok = np.array([c[(what, l)].resolved for l in layers])
            line = dict(linestyle=_line(cfg, dmax), linewidth=1.2, capsize=2.5, elinewidth=1.0)
            ax.errorbar(layers, v, yerr=e, color=colour, **line)
            dots = dict(linestyle="none", marker=style["marker"], markersize=5.5, color=colour)
            ax.plot(layers[ok], v[ok], **dots)
            ax.plot(layers[~ok], v[~ok], markerfacecolor="white", **dots)
    for ax, name in zip(axes, ("recency probability − ½", "trend (mean step)")):
        ax.set_yscale("symlog", linthresh=LINTHRESH)
        low, high = ax.get_ylim()
        top = int(np.ceil(np.log10(max(abs(low), abs(high), LINTHRESH))))
        decades = range(round(math.log10(LINTHRESH)), top + 1, 2)  # every other decade
        ax.set_yticks(sorted([-(10.0**k) for k in decades] + [0.0] + [10.0**k for k in decades]))
        ax.set_ylim(low, high)
        ax.minorticks_off()
        plotting.reference_line(ax, 0.0)
        ax.set(xlabel="layer", ylabel=name, xticks=layers)
    return fig


def legend_handles(results: dict):
    """Legend entries of :func:`depth_figure`, one per setting."""
    from matplotlib.lines import Line2D

    dmax = max(r.config.d for r in results.values())
    out = []
    for r in results.values():
        style = {k: conventions.variant_style(r.config)[k] for k in ("color", "marker")}
        line = dict(markersize=5.5, linestyle=_line(r.config, dmax), label=label(r.config))
        out.append(Line2D([], [], **style, **line))
    return out
