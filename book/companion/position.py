"""Chapter 7's "position or distance?": where in a row the induced order lives.

The statistic is :func:`companion.statistics.distance_contrasts`, run by
``recency_lib.engines.sequence_statistic(cfg, statistics.distance_contrasts, control_mean=0.0)``:

* D_i = S_{i,i-1} - S_{i,i-4}: two keys at *fixed distances* from the query (1 and 4);
* K_i = S_{i,4} - S_{i,1}: two keys at *fixed positions* in the sequence (4 and 1).

Both are differences of two scores of one row, so per sequence they are exactly the log-ratio of two
attention weights (the softmax's normalizer cancels, and so does any constant added to the row). A bias
that depends on i - j alone keeps D_i constant in i; a bias set by the keys' positions keeps K_i
constant. At the first query that has both keys, i = 5, they are the same two keys (D_5 = K_5), so one
figure shows which of the two stays flat (:func:`contrast_panel`).

The functions here read such results (``SequenceStatistic``) and draw or tabulate them; they never
simulate. Estimates are the control-variate ones where the result has them (layer 1's earlier keys
are exchangeable, so its contrasts have mean 0), the plain means otherwise.
"""

from __future__ import annotations

import numpy as np

from recency_lib.validation import check_int

from . import conventions as cv
from . import report, statistics

#: The first query that has both keys of D and K (1-based): there D = K.
FIRST_QUERY = statistics.FAR + 1
#: How the two contrasts are drawn: K (fixed key positions) solid, D (fixed distances) dashed.
STYLES = {"K": {"linestyle": "-"}, "D": {"linestyle": "--"}}
NAMES = {
    "K": f"$K_i$: keys {statistics.FAR} vs 1 (fixed positions)",
    "D": f"$D_i$: distances {statistics.NEAR} vs {statistics.FAR} (fixed distances)",
}


def _layer(stat, layer) -> int:
    return stat.config.layers if layer is None else check_int("layer", layer, 1, stat.config.layers)


def value_at(stat, key: str, query: int, layer: int | None = None) -> tuple[float, float]:
    """(mean, SE) of D_i (``key`` "D") or K_i ("K") at the 1-based ``query`` i and ``layer``
    (default: the last)."""
    if key not in ("D", "K"):
        raise ValueError(f"key={key!r} is not allowed; allowed: 'D' or 'K'")
    n = stat.config.n
    query = check_int("query", query, FIRST_QUERY, n)
    l = _layer(stat, layer)
    m, e = statistics.distance_profiles(stat)[key]
    return float(m[l - 1, query - FIRST_QUERY]), float(e[l - 1, query - FIRST_QUERY])


def change(stat, key: str, layer: int | None = None) -> tuple[float, float]:
    """(mean, SE) of D_n - D_5 (``key`` "D") or K_n - K_5 ("K"), paired within each sequence, at
    ``layer`` (default: the last)."""
    if key not in ("D", "K"):
        raise ValueError(f"key={key!r} is not allowed; allowed: 'D' or 'K'")
    l = _layer(stat, layer)
    m, e = statistics.distance_profiles(stat)[f"{key}_change"]
    return float(m[l - 1]), float(e[l - 1])


def family(stats) -> int:
    """The tests of :func:`change_rows` decided together: the changes of D and K in every layer from 2 on
    of every result."""
    return sum(2 * (s.config.layers - 1) for s in stats)


def _change_cell(m: float, e: float) -> str:
    return f"{report.pm(m, e)} ({report.z_text(report.zscore(m, e))})"


def change_rows(stats, *, last_layer_only: bool = False) -> list[dict]:
    """Table rows: per result and layer from 2 on (or only the last), the model (conventions.variant_name:
    the results are meant to share alpha and d, which the page names), n, the common start
    D_5 = K_5, the values D_n and K_n at the last query, and the paired changes D_n - D_5 and K_n - K_5
    (± SE, z)."""
    rows = []
    for s in stats:
        cfg, n = s.config, s.config.n
        layers = [cfg.layers] if last_layer_only else range(2, cfg.layers + 1)
        for l in layers:
            d0 = value_at(s, "D", FIRST_QUERY, l)
            rows.append(
                {
                    "model": cv.variant_name(cfg),
                    "$n$": report.count(n),
                    "layer": str(l),
                    f"$D_{FIRST_QUERY} = K_{FIRST_QUERY}$": report.pm(*d0),
                    "$D_n$": report.pm(*value_at(s, "D", n, l)),
                    "$K_n$": report.pm(*value_at(s, "K", n, l)),
                    f"$D_n - D_{FIRST_QUERY}$ (z)": _change_cell(*change(s, "D", l)),
                    f"$K_n - K_{FIRST_QUERY}$ (z)": _change_cell(*change(s, "K", l)),
                }
            )
    return rows


def columns(stats) -> dict[str, list]:
    """D_i and K_i of every result, layer and query as download columns (report.download)."""
    rows = []
    for s in stats:
        prof = statistics.distance_profiles(s)
        rows += [
            (
                cv.setting_label(s.config),
                s.config.n,
                s.samples,
                prof["estimator"],
                l,
                key,
                int(q),
                float(mu),
                float(se),
            )
            for l in range(1, s.config.layers + 1)
            for key in ("D", "K")
            for q, mu, se in zip(prof["queries"], prof[key][0][l - 1], prof[key][1][l - 1])
        ]
    return report.columns(
        ("setting", "n", "samples", "estimator", "layer", "quantity", "query", "mean", "se"), rows
    )


def contrast_panel(stat, ax, *, z: float = 1.0, log: bool = True, first_layer: int = 2):
    """K_i (solid) and D_i (dashed) against the query i of one result, one colour per layer from
    ``first_layer`` on (conventions.ordered_colour over all layers), with bands of ± ``z`` SE and a
    dotted zero line; the query axis is logarithmic when ``log``. Returns ``ax``."""
    prof = statistics.distance_profiles(stat)
    L = stat.config.layers
    first_layer = check_int("first_layer", first_layer, 1, L)
    q = prof["queries"]
    for l in range(first_layer, L + 1):
        colour = cv.ordered_colour(l - 1, L)
        for key in ("K", "D"):
            m, e = (x[l - 1] for x in prof[key])
            ax.plot(q, m, color=colour, linewidth=1.4, **STYLES[key])
            ax.fill_between(q, m - z * e, m + z * e, color=colour, alpha=0.25, linewidth=0)
    ax.axhline(0.0, **cv.REFERENCE)
    if log:
        ax.set_xscale("log")
    if q[-1] - q[0] <= 10:  # a short row: every query
        ticks = [int(t) for t in q]
    else:
        inner = (t for t in (10, 20, 50, 100, 200, 500, 1000) if 1.6 * q[0] <= t <= q[-1] / 1.6)
        ticks = sorted({int(q[0]), int(q[-1]), *inner})  # none crowding the ends
    ax.set_xticks(ticks, [str(t) for t in ticks])
    ax.minorticks_off()
    ax.set_xlabel("query position $i$")
    return ax


def overlay_points(stat, ax, *, z: float = 1.0, first_layer: int = 2):
    """The same contrasts of a shorter run as points ± ``z`` SE on a :func:`contrast_panel` (K: circles,
    D: squares), in the layers' colours. Returns ``ax``."""
    prof = statistics.distance_profiles(stat)
    L = stat.config.layers
    q = prof["queries"]
    for l in range(check_int("first_layer", first_layer, 1, L), L + 1):
        colour = cv.ordered_colour(l - 1, L)
        for key, marker in (("K", "o"), ("D", "s")):
            m, e = (x[l - 1] for x in prof[key])
            ax.errorbar(
                q,
                m,
                yerr=z * e,
                color=colour,
                marker=marker,
                markersize=3.5,
                linestyle="none",
                markerfacecolor="white",
                elinewidth=0.8,
                capsize=0,
            )
    return ax


def legend_handles(layers: int, first_layer: int = 2, *, points: str | None = None) -> list:
    """Legend entries for :func:`contrast_panel`: one line per contrast (black, its style), one patch per
    layer (its colour), and, when ``points`` names them, the markers of :func:`overlay_points`."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    layers = check_int("layers", layers, 1)
    out = [
        Line2D([], [], color="0.15", linewidth=1.4, label=NAMES[k], **STYLES[k]) for k in ("K", "D")
    ]
    out += [
        Patch(color=cv.ordered_colour(l - 1, layers), label=f"layer {l}")
        for l in range(first_layer, layers + 1)
    ]
    if points:
        out.append(
            Line2D(
                [],
                [],
                color="0.15",
                marker="o",
                markerfacecolor="white",
                linestyle="none",
                label=points,
            )
        )
    return out


def same_rows(short_scores, long_scores) -> float:
    """The largest absolute difference between the scores of a short run (B, layers, n, n) and the
    first n rows and keys of a longer one (B, layers, N, N), N >= n, over the causal triangle: 0.0 when
    the short rows are the long run's rows bit for bit (NaN above the diagonal in both is ignored)."""
    a, b = np.asarray(short_scores, dtype=float), np.asarray(long_scores, dtype=float)
    if (
        a.ndim != 4
        or b.ndim != 4
        or a.shape[:2] != b.shape[:2]
        or a.shape[2] != a.shape[3]
        or b.shape[2] != b.shape[3]
        or b.shape[2] < a.shape[2]
    ):
        raise ValueError(
            f"scores have shapes {a.shape} and {b.shape}; allowed: (B, layers, n, n) and "
            f"(B, layers, N, N) with N >= n"
        )
    n = a.shape[2]
    low = np.tri(n, dtype=bool)
    x, y = a[..., low], b[..., :n, :n][..., low]
    if np.isnan(x).any() or np.isnan(y).any():
        return float("inf")
    return float(np.max(np.abs(x - y))) if x.size else 0.0


def check_rows(verdict, stat) -> list[dict]:
    """The checks of claims.not_relative_claim(``stat``) as table rows, last layer first: the layer, the
    change D_n - D_5 (± SE), its z, what the check found, and beside it K_n - K_5 (± SE, z)."""
    layers = range(stat.config.layers, 1, -1)  # the claim's order: the last layer first
    if len(verdict.checks) != len(layers):
        raise ValueError(
            f"verdict has {len(verdict.checks)} checks; allowed: one per layer from 2 on "
            f"({len(layers)}), as claims.not_relative_claim(stat) gives"
        )
    rows = []
    for l, c in zip(layers, verdict.checks):
        rows.append(
            {
                "layer": str(l),
                f"$D_n - D_{FIRST_QUERY}$": c.text,
                "z": report.z_text(c.z),
                "found": c.status,
                f"$K_n - K_{FIRST_QUERY}$ (z)": _change_cell(*change(stat, "K", l)),
            }
        )
    return rows


CHANGE_WORDS = ("rises", "falls", "does not change resolvably")


def change_word(stat, key: str, zc: float, layer: int | None = None, words=CHANGE_WORDS) -> str:
    """How D_i (``key`` "D") or K_i ("K") changes from query 5 to the last, at ``layer`` (default: the
    last), decided at ``zc``: ``words[0]`` when the paired change is resolved above 0, ``words[1]``
    below, ``words[2]`` otherwise."""
    z = report.zscore(*change(stat, key, layer))
    return words[0] if z > zc else words[1] if z < -zc else words[2]
