"""Chapter 7's "position or distance?" from statistics.distance_contrasts: per query i, D_i =
S_{i,i-1} - S_{i,i-4} (fixed distances) and K_i = S_{i,4} - S_{i,1} (fixed key positions). A bias
of i - j alone keeps D_i flat; D_5 = K_5."""

import numpy as np

from recency_lib.metrics import sign

from . import conventions, report, statistics

#: The first query that has both keys of D and K (1-based): there D = K.
FIRST_QUERY = statistics.FAR + 1
#: K (fixed key positions) solid, D (fixed distances) dashed.
STYLES = {"K": {"linestyle": "-"}, "D": {"linestyle": "--"}}
NAMES = {
    "K": f"$K_i$: keys {statistics.FAR} vs 1 (fixed positions)",
    "D": f"$D_i$: distances {statistics.NEAR} vs {statistics.FAR} (fixed distances)",
}
CHANGE_WORDS = {1: "rises", -1: "falls", 0: "does not change resolvably"}
_OPEN = dict(markersize=3.5, linestyle="none", markerfacecolor="white", elinewidth=0.8, capsize=0)


def value_at(stat, key: str, query: int, layer: int | None = None) -> tuple[float, float]:
    """(mean, SE) of D_i (``key`` "D") or K_i ("K") at 1-based ``query`` and ``layer``."""
    l = layer or stat.config.layers
    m, e = statistics.distance_profiles(stat)[key]
    return float(m[l - 1, query - FIRST_QUERY]), float(e[l - 1, query - FIRST_QUERY])


def change(stat, key: str, layer: int | None = None) -> tuple[float, float]:
    """(mean, SE) of D_n - D_5 or K_n - K_5, paired within each sequence, at ``layer``."""
    l = layer or stat.config.layers
    m, e = statistics.distance_profiles(stat)[f"{key}_change"]
    return float(m[l - 1]), float(e[l - 1])


def change_word(stat, key: str, zc: float, layer: int | None = None) -> str:
    """How D_i or K_i changes from query 5 to the last, decided at ``zc``: :data:`CHANGE_WORDS`."""
    return CHANGE_WORDS[sign(*change(stat, key, layer), zc)]


def change_text(m: float, e: float) -> str:
    """ "0.040 ± 0.001 (+40)": a change with its z."""
    return f"{report.pm(m, e)} ({report.z_text(report.zscore(m, e))})"


def family(stats) -> int:
    """The changes decided together: D and K of every layer from 2 on."""
    return sum(2 * (s.config.layers - 1) for s in stats)


def change_rows(stats, *, last_layer_only: bool = False) -> list[dict]:
    """Per result and layer from 2 on (or the last only): D_5 = K_5, D_n, K_n and their changes."""
    rows = []
    for s in stats:
        cfg, n, q = s.config, s.config.n, FIRST_QUERY
        for l in [cfg.layers] if last_layer_only else range(2, cfg.layers + 1):
            rows.append(
                {
                    "model": conventions.variant_name(cfg),
                    "$n$": report.count(n),
                    "layer": str(l),
                    f"$D_{q} = K_{q}$": report.pm(*value_at(s, "D", q, l)),
                    "$D_n$": report.pm(*value_at(s, "D", n, l)),
                    "$K_n$": report.pm(*value_at(s, "K", n, l)),
                    f"$D_n - D_{q}$ (z)": change_text(*change(s, "D", l)),
                    f"$K_n - K_{q}$ (z)": change_text(*change(s, "K", l)),
                }
            )
    return rows


#: The columns of :func:`contrast_rows` in a download.
CONTRAST_COLUMNS = ("estimator", "layer", "quantity", "query", "mean", "se")


def contrast_rows(stat) -> list[tuple]:
    """(estimator, layer, "D" or "K", query, mean, SE) of every layer and query of one result."""
    p = statistics.distance_profiles(stat)
    return [
        (p["estimator"], l, key, int(q), float(m), float(e))
        for l in range(1, stat.config.layers + 1)
        for key in ("D", "K")
        for q, m, e in zip(p["queries"], p[key][0][l - 1], p[key][1][l - 1])
    ]


def columns(stats) -> dict[str, list]:
    """D_i and K_i of every result, layer and query as download columns."""
    rows = [
        (conventions.setting_label(s.config), s.config.n, s.samples, *r)
        for s in stats
        for r in contrast_rows(s)
    ]
    return report.columns(("setting", "n", "samples", *CONTRAST_COLUMNS), rows)


def contrast_panel(stat, ax, *, z: float = 1.0, log: bool = True, first_layer: int = 2):
    """K_i (solid) and D_i (dashed) against the query i ± ``z`` SE, one colour per layer from
    ``first_layer``, a zero line. Returns ``ax``."""
    prof = statistics.distance_profiles(stat)
    L, q = stat.config.layers, prof["queries"]
    for l in range(first_layer, L + 1):
        colour = conventions.ordered_colour(l - 1, L)
        for key in ("K", "D"):
            m, e = (x[l - 1] for x in prof[key])
            ax.plot(q, m, color=colour, linewidth=1.4, **STYLES[key])
            ax.fill_between(q, m - z * e, m + z * e, color=colour, alpha=0.25, linewidth=0)
    ax.axhline(0.0, **conventions.REFERENCE)
    if log:
        ax.set_xscale("log")
    if q[-1] - q[0] <= 10:  # a short row: every query
        ticks = [int(t) for t in q]
    else:  # the ends, and round numbers not crowding them
        inner = (t for t in (10, 20, 50, 100, 200, 500, 1000) if 1.6 * q[0] <= t <= q[-1] / 1.6)
        ticks = sorted({int(q[0]), int(q[-1]), *inner})
    ax.set_xticks(ticks, [str(t) for t in ticks])
    ax.minorticks_off()
    ax.set_xlabel("query position $i$")
    return ax


def overlay_points(stat, ax, *, z: float = 1.0, first_layer: int = 2):
    """The contrasts of a shorter run as open points ± ``z`` SE on a :func:`contrast_panel`."""
    prof = statistics.distance_profiles(stat)
    L = stat.config.layers
    for l in range(first_layer, L + 1):
        colour = conventions.ordered_colour(l - 1, L)
        for key, marker in (("K", "o"), ("D", "s")):
            m, e = (x[l - 1] for x in prof[key])
            ax.errorbar(prof["queries"], m, yerr=z * e, color=colour, marker=marker, **_OPEN)
    return ax


def legend_handles(layers: int, first_layer: int = 2, *, points: str | None = None) -> list:
    """Legend entries of :func:`contrast_panel` and, labelled ``points``, :func:`overlay_points`."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    out = [
        Line2D([], [], color="0.15", linewidth=1.4, label=NAMES[k], **STYLES[k]) for k in ("K", "D")
    ]
    out += [
        Patch(color=conventions.ordered_colour(l - 1, layers), label=f"layer {l}")
        for l in range(first_layer, layers + 1)
    ]
    if points:
        style = dict(marker="o", markerfacecolor="white", linestyle="none")
        out.append(Line2D([], [], color="0.15", label=points, **style))
    return out


def same_rows(short_scores, long_scores) -> float:
    """The largest |difference| between a short run's scores (B, layers, n, n) and a longer run's
    first n rows and keys, in the causal triangle (inf with a NaN)."""
    a, b = np.asarray(short_scores), np.asarray(long_scores)
    n = a.shape[2]
    low = np.tri(n, dtype=bool)
    gap = np.abs(a[..., low] - b[..., :n, :n][..., low])
    return float("inf") if np.isnan(gap).any() else float(gap.max(initial=0.0))


def check_rows(verdict, stat) -> list[dict]:
    """The checks of claims.not_relative_claim(``stat``), last layer first, with K beside D."""
    layers = range(stat.config.layers, 1, -1)  # the claim's order
    return [
        {
            "layer": str(l),
            f"$D_n - D_{FIRST_QUERY}$": c.text,
            "z": report.z_text(c.z),
            "found": c.status,
            f"$K_n - K_{FIRST_QUERY}$ (z)": change_text(*change(stat, "K", l)),
        }
        for l, c in zip(layers, verdict.checks)
    ]
