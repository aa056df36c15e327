"""Figures of the book: data and a matplotlib Axes in, the same Axes out; indices 1-based, heatmaps
by recency_lib.plot's convention, sizes, line styles and colours from companion.conventions.
"""

from __future__ import annotations

import numpy as np

from recency_lib.plot import colour_limits, draw_heatmap
from recency_lib.validation import check_choice

from . import conventions
from .report import pm

RP_GID = "recency_probability"  # gid of a heatmap's RP label
NO_ORDER_GID = "no_order"  # gid of the 0.5 "no order" line
EXACT_GID = "closed_form_exact"  # gid of ratio_by_d's line at 1
RASTER_ABOVE_N = 40  # heatmaps with more tokens are embedded as a bitmap in the SVG
_KINDS = {"printed": conventions.AS_PRINTED, "corrected": conventions.CORRECTED}


# -- style and figures ---------------------------------------------------------------------------


def style_rc() -> dict:
    """The book's matplotlib settings (fonts in points at the figure's natural size)."""
    return {
        "font.size": conventions.FONT_PT,
        "axes.titlesize": conventions.TITLE_PT,
        "axes.labelsize": conventions.FONT_PT,
        "xtick.labelsize": conventions.SMALL_PT,
        "ytick.labelsize": conventions.SMALL_PT,
        "legend.fontsize": conventions.SMALL_PT,
        "legend.title_fontsize": conventions.SMALL_PT,
        "figure.titlesize": conventions.TITLE_PT,
        "figure.figsize": conventions.figure_size(),
        "figure.dpi": 96,
        "savefig.dpi": 192,
        "savefig.pad_inches": 0.03,
        "svg.fonttype": "path",
        "svg.hashsalt": "recency-companion",
        "axes.spines.top": False,
        "axes.spines.right": False,
        "legend.frameon": False,
        "axes.grid": False,
        "lines.linewidth": 1.6,
        "errorbar.capsize": 2.5,
        "figure.facecolor": "white",
        "savefig.facecolor": "white",
    }


def book_style() -> None:
    """seaborn's theme (companion.theme), :func:`style_rc` on top; SVG output in a notebook."""
    from IPython import get_ipython
    from matplotlib_inline.backend_inline import set_matplotlib_formats

    from .theme import apply

    apply(style_rc())
    if get_ipython() is not None:
        set_matplotlib_formats("svg")


def subplots(nrows: int = 1, ncols: int = 1, *, height_ratio: float | None = None, **kw):
    """``plt.subplots`` as wide as the column, constrained; ``height_ratio`` = height / width."""
    import matplotlib.pyplot as plt

    if height_ratio is None:
        height_ratio = 0.62 if nrows == ncols == 1 else min(3.0, 0.8 * nrows / ncols)
    kw.setdefault("layout", "constrained")
    return plt.subplots(nrows, ncols, figsize=conventions.figure_size(height_ratio), **kw)


def heatmap_subplots(rows: int, cols: int, **kw):
    """:func:`subplots` for :func:`score_grid`: about square panels, at most 4 times as high."""
    return subplots(rows, cols, height_ratio=min(4.0, 1.15 * rows / cols), squeeze=False, **kw)


def panel_axes(count: int):
    """:func:`panels` of about square panels, at most four a row."""
    return panels(count, max_cols=4, panel_ratio=1.1)


def panels(count: int, *, max_cols: int = 3, panel_ratio: float = 1.0, **kw):
    """(fig, ``count`` Axes in reading order), at most ``max_cols`` a row, the rest hidden."""
    cols = min(max_cols, count)
    rows = -(-count // cols)
    ratio = min(4.0, panel_ratio * rows / cols)
    fig, axes = subplots(rows, cols, height_ratio=ratio, squeeze=False, **kw)
    flat = list(axes.flat)
    for ax in flat[count:]:
        ax.set_visible(False)
    return fig, flat[:count]


def glue_figure(key: str, fig) -> None:
    """Glue ``fig`` for a ``{glue:figure}`` and close it; displayed too outside the book's build."""
    import matplotlib.pyplot as plt
    from myst_nb import glue

    from . import in_book

    glue(key, fig, display=not in_book())
    plt.close(fig)


# -- heatmaps --------------------------------------------------------------------------------------


def rp_text(rp: float, sem: float | None = None) -> str:
    """A heatmap's label "RP = 0.7321" over "± 0.0012" (report.pm); "RP = 0.500" without an SE.
    A value longer than 7 characters (a large run's "0.5000602") gets a line of its own under
    "RP =", so the label stays in the panel's empty corner, clear of the tick labels."""
    if sem is None or not np.isfinite(sem):
        return f"RP = {rp:.3f}"
    text = pm(rp, sem, min_places=3)
    at = " × " if text.startswith("(") else " ± "  # "(7.2 ± 0.8)" stays whole
    value, _, rest = text.partition(at)
    head = "RP =\n" if len(value) > 7 else "RP = "
    return head + value + ("\n" + at[1:] + rest if rest else "")


def _colourbar(mappable, ax, *, axes=None):
    """A slim colour bar under the panel(s): two or three ticks, a shared power of ten if needed."""
    from matplotlib.ticker import MaxNLocator, ScalarFormatter

    fmt = ScalarFormatter(useMathText=True)
    fmt.set_powerlimits((-2, 3))
    size = {"fraction": 0.05, "pad": 0.02, "aspect": 14}
    bar = ax.figure.colorbar(mappable, ax=axes or ax, location="bottom", format=fmt, **size)
    bar.locator = MaxNLocator(nbins=2, min_n_ticks=2)
    bar.update_ticks()
    bar.outline.set_linewidth(0)
    bar.ax.tick_params(labelsize=conventions.SMALL_PT, length=2, pad=1)
    bar.ax.xaxis.offsetText.set_fontsize(conventions.SMALL_PT)
    return bar


def score_heatmap(
    score_mean,
    ax,
    *,
    recency_probability=None,
    recency_sem=None,
    title=None,
    cbar=True,
    include_diagonal=False,
    vmin=None,
    vmax=None,
    ticks="all",
):
    """Heatmap of an (n, n) mean score matrix (Fig. 1), by recency_lib.plot's convention: the
    diagonal coloured too with ``include_diagonal`` (the paper's way), only 1 and n labelled with
    ``ticks="ends"``, the RP (± SE) in the empty upper-right corner. Returns ``ax``."""
    s = np.asarray(score_mean, dtype=float)  # (n, n)
    n = s.shape[0]
    mesh = draw_heatmap(
        ax,
        s,
        include_diagonal=include_diagonal,
        vmin=vmin,
        vmax=vmax,
        rasterized=n > RASTER_ABOVE_N,
    )
    ax.spines[:].set_visible(False)
    shown = np.arange(n) if (ticks == "all" and n <= 12) else np.unique([0, n - 1])
    ax.set_xticks(shown + 0.5, [str(k + 1) for k in shown])
    ax.set_yticks(shown + 0.5, [str(k + 1) for k in shown])
    ax.tick_params(length=0, pad=2)
    if cbar:
        _colourbar(mesh, ax)
    ax.set_xlabel("key j")
    ax.set_ylabel("query i")
    if title is not None:
        ax.set_title(title)
    if recency_probability is not None:
        text = rp_text(float(recency_probability), recency_sem)
        at = {"ha": "right", "va": "top", "transform": ax.transAxes, "gid": RP_GID}
        ax.text(0.99, 0.99, text, fontsize=conventions.RP_LABEL_PT, linespacing=1.1, **at)
    return ax


def _share_groups(limits: np.ndarray, share: str) -> list[list[tuple[int, int]]]:
    """The panels (r, c) that share a colour scale. "auto": a row shares when every panel's own
    range covers at least half of the row's (no panel loses more than half of its colours)."""
    n_rows, n_cols = limits.shape[:2]
    cells = [[(r, c) for c in range(n_cols)] for r in range(n_rows)]
    if share == "none":
        return [[rc] for row in cells for rc in row]
    groups = []
    for row in cells:
        lo = min(limits[r, c, 0] for r, c in row)
        hi = max(limits[r, c, 1] for r, c in row)
        own = [limits[r, c, 1] - limits[r, c, 0] for r, c in row]
        if hi > lo and min(own) >= 0.5 * (hi - lo):
            groups.append(row)
        else:
            groups += [[rc] for rc in row]
    return groups


def score_grid(
    score_means,
    axes,
    *,
    recency_probabilities=None,
    recency_sems=None,
    row_labels=None,
    col_labels=None,
    share="auto",
    include_diagonal=False,
):
    """(rows, cols) Axes of :func:`score_heatmap` panels (Figs. 1, 3, 4): ``score_means`` (rows =
    settings, cols = layers, n, n), RPs and SEs (rows, cols) or None; ``share`` "auto" (a row
    shares a colour bar where :func:`_share_groups` finds it honest) or "none"."""
    sm = np.asarray(score_means, dtype=float)  # (rows, cols, n, n)
    n_rows, n_cols = sm.shape[:2]
    ax_arr = np.asarray(axes, dtype=object).reshape(n_rows, n_cols)
    rp = None if recency_probabilities is None else np.asarray(recency_probabilities, dtype=float)
    rp_sem = None if recency_sems is None else np.asarray(recency_sems, dtype=float)
    limits = np.array([[colour_limits(m, include_diagonal) for m in row] for row in sm])
    scale = {}
    groups = _share_groups(limits, share)
    for group in groups:
        span = (min(limits[r, c, 0] for r, c in group), max(limits[r, c, 1] for r, c in group))
        scale.update(dict.fromkeys(group, span))
    for (r, c), ax in np.ndenumerate(ax_arr):
        score_heatmap(
            sm[r, c],
            ax,
            cbar=False,
            ticks="ends",
            include_diagonal=include_diagonal,
            vmin=scale[(r, c)][0],
            vmax=scale[(r, c)][1],
            recency_probability=None if rp is None else rp[r, c],
            recency_sem=None if rp_sem is None else rp_sem[r, c],
            title=col_labels[c] if (col_labels is not None and r == 0) else None,
        )
        if c > 0:
            ax.set_ylabel("")
        elif row_labels is not None:
            ax.set_ylabel(f"{row_labels[r]}\nquery i")
        if r < n_rows - 1:
            ax.set_xlabel("")
    for group in groups:
        r, c = group[-1]
        _colourbar(ax_arr[r, c].collections[0], ax_arr[r, c], axes=[ax_arr[rc] for rc in group])
    return ax_arr


def figure1_grids(results, row_labels, layers: int):
    """The paper's Figure 1 for ``results`` (a row each), as (the book's figure: RP ± SE, colour
    bars shared where honest; the paper's: diagonal coloured, a colour bar per panel)."""
    from .statistics import rp_layers

    results = list(results)
    grid = dict(
        score_means=[r.score_mean for r in results],
        row_labels=row_labels,
        col_labels=[f"layer {l}" for l in range(1, layers + 1)],
    )
    book, axes = heatmap_subplots(len(results), layers)
    rps, sems = zip(*(rp_layers(r) for r in results))
    score_grid(axes=axes, recency_probabilities=rps, recency_sems=sems, **grid)
    paper, axes = heatmap_subplots(len(results), layers)
    score_grid(axes=axes, include_diagonal=True, share="none", **grid)
    return book, paper


# -- curves ----------------------------------------------------------------------------------------


def h_curve(j, h, ax, *, label=None, normalize=True, kind="corrected", **kw):
    """h(j) against the key j (Figs. 2 and 5), over h(1) if ``normalize``, as a closed form."""
    j, h = np.asarray(j, dtype=float), np.asarray(h, dtype=float)
    if normalize:
        h = h / h[0]
    closed_form(j, h, ax, kind=kind, label=label, **kw)
    ax.set_xlabel("key j")
    ax.set_ylabel(f"h(j) / h({j[0]:g})" if normalize else "h(j)")
    return ax


def errorbar_points(x, mean, sem, ax, *, label=None, z=1.0, joined=False, **kw):
    """Simulated means as points ± z SE (conventions.SIMULATION, unless ``kw`` styles them),
    ``joined`` by a line."""
    styled = "marker" in kw or "linestyle" in kw
    if joined and not styled:
        kw.setdefault("fmt", "o-")
    for key, value in conventions.SIMULATION.items():
        if not (key == "fmt" and styled):
            kw.setdefault(key, value)
    ax.errorbar(x, mean, yerr=z * np.asarray(sem, dtype=float), label=label, **kw)
    return ax


def _no_order_line(ax, y: float, gid: str = NO_ORDER_GID, **kw) -> None:
    """The dotted reference at ``y`` (conventions.REFERENCE), once per Axes."""
    if not any(line.get_gid() == gid for line in ax.get_lines()):
        ax.axhline(y, gid=gid, **kw, **conventions.REFERENCE)


def recency_by_layer(rp, rp_sem, ax, *, label=None, z=1.0, **kw):
    """The RP per layer ± z SE, joined, and the 0.5 "no order" line (once per Axes)."""
    layers = np.arange(1, len(rp) + 1)
    errorbar_points(layers, rp, rp_sem, ax, label=label, z=z, joined=True, **kw)
    _no_order_line(ax, 0.5, label="no order")
    ax.set_xticks(layers)
    ax.set_xlabel("layer")
    ax.set_ylabel("recency probability")
    ax.set_ylim(-0.02, 1.02)
    return ax


def row_profile(score_mean, score_sem, i, ax, *, label=None, z=1.0, include_diagonal=False, **kw):
    """The mean scores of query row ``i`` against the key j, ± z SE (its diagonal if asked)."""
    s, e = np.asarray(score_mean, dtype=float), np.asarray(score_sem, dtype=float)
    keys = i if include_diagonal else i - 1
    j = np.arange(1, keys + 1)
    errorbar_points(j, s[i - 1, :keys], e[i - 1, :keys], ax, label=label, z=z, joined=True, **kw)
    ax.set_xticks(j if keys <= 12 else np.unique([1, keys // 2, keys]))
    ax.set_xlabel("key j")
    ax.set_ylabel(f"mean score S[{i}, j]")
    return ax


def closed_form(x, y, ax, *, kind="corrected", label=None, **kw):
    """A closed form as a line, ``kind`` "printed" (dashed) or "corrected" (solid)."""
    style = _KINDS[check_choice("kind", kind, tuple(_KINDS))]
    ax.plot(x, y, label=label, **(style | kw))
    return ax


def reference_line(ax, y: float = 0.0, *, label=None):
    """A horizontal "no effect" line at ``y`` (conventions.REFERENCE)."""
    ax.axhline(float(y), label=label, **conventions.REFERENCE)
    return ax


def upper_limits(x, bound, ax, *, label=None, **kw):
    """Upper limits at ``bound``: open markers with a downward arrow."""
    bound = np.asarray(bound, dtype=float)
    kw.setdefault("fmt", "v")
    kw.setdefault("markerfacecolor", "white")
    kw.setdefault("markersize", 5)
    ax.errorbar(
        x, bound, yerr=0.35 * bound, uplims=True, label=label, capsize=0, elinewidth=1.0, **kw
    )
    return ax


def trend_reach(reach, ax, *, eq5=None):
    """Theorem 1's trend against d (log-log) from theorem1.theorem1_reach's records: points ± 1 SE
    where resolved, else upper limits (+2 SE); 2 SE of plain means in grey; ``eq5`` = (d, trend)."""
    rows = sorted(reach, key=lambda r: r.d)
    if eq5 is not None:
        closed_form(*eq5, ax, kind="printed", color="black", label="Eq. (5)")
    shown = [r for r in rows if r.resolved]
    hidden = [r for r in rows if not r.resolved]
    if shown:
        x, y, se = ([getattr(r, k) for r in shown] for k in ("d", "trend", "trend_se"))
        errorbar_points(x, y, se, ax, color="C0", label="simulated, control variates")
    if hidden:
        bound = [max(r.trend, 0.0) + 2 * r.trend_se for r in hidden]
        label = "unresolved: below (+2 SE)"
        upper_limits([r.d for r in hidden], bound, ax, color="C0", label=label)
    ds = [r.d for r in rows]
    plain = [2 * r.plain_se for r in rows]
    ax.plot(ds, plain, "-", color="0.6", linewidth=1.2, marker=".", label="2 SE of plain averaging")
    d_axis(ax, ds, log_y=True)
    ax.set_ylabel(r"mean step of $S^{(2)}$")
    return ax


def recency_dots(labels, rp, rp_sem, ax, *, z=1.0, show_labels=True):
    """RPs (settings, layers) as dots ± z SE, a row per setting (top down), and the 0.5 line."""
    r, e = np.asarray(rp, dtype=float), np.asarray(rp_sem, dtype=float)  # (settings, layers)
    k, L = r.shape
    rows = np.arange(k)
    spread = 0.6 / max(1, L)
    style = {k: v for k, v in conventions.SIMULATION.items() if k != "fmt"}
    style |= {"marker": "o", "linestyle": "none"}
    for l in range(L):
        y = rows + (l - (L - 1) / 2) * spread  # the layers side by side within a row
        colour = conventions.ordered_colour(l, L)
        ax.errorbar(r[:, l], y, xerr=z * e[:, l], color=colour, label=f"layer {l + 1}", **style)
    ax.axvline(0.5, label="no order", gid=NO_ORDER_GID, **conventions.REFERENCE)
    ax.set_yticks(rows, list(labels) if show_labels else [""] * k)
    ax.tick_params(axis="y", length=0)
    ax.set_ylim(k - 0.5, -0.5)  # first setting on top
    ax.set_xlim(-0.02, 1.02)
    ax.set_xlabel("recency probability")
    return ax


def _log_x(ax, ticks, label: str, base: float = 10) -> None:
    """A log x axis labelled ``label``, ticks at ``ticks`` only."""
    ax.set_xscale("log", base=base)
    ax.set_xticks(ticks, [f"{t:g}" for t in ticks])
    ax.minorticks_off()
    ax.set_xlabel(label)


def recency_by_length(lengths, rp, rp_sem, ax, *, z=1.0):
    """The RP (lengths, layers) ± z SE against the sequence length n (log axis), and 0.5."""
    r, e = np.asarray(rp, dtype=float), np.asarray(rp_sem, dtype=float)  # (lengths, layers)
    L = r.shape[1]
    style = {"marker": "o", "linestyle": "-", "markersize": 4}
    for l in range(L):
        colour = conventions.ordered_colour(l, L)
        errorbar_points(
            lengths, r[:, l], e[:, l], ax, z=z, label=f"layer {l + 1}", color=colour, **style
        )
    ax.axhline(0.5, label="no order", gid=NO_ORDER_GID, **conventions.REFERENCE)
    _log_x(ax, lengths, "sequence length n")
    ax.set_ylim(-0.02, 1.02)
    ax.set_ylabel("recency probability")
    return ax


def binned_profiles(profiles: dict, ax, *, z=1.0):
    """Binned last-query rows against j / n: n -> recency_lib.metrics.binned_row, ± z bounds."""
    style = {"marker": ".", "linestyle": "-", "capsize": 2}
    for c, (n, (x, m, b)) in enumerate(profiles.items()):
        colour = conventions.ordered_colour(c, len(profiles))
        errorbar_points(x, m, b, ax, z=z, label=f"n = {n}", color=colour, **style)
    ax.axhline(0.0, **conventions.REFERENCE)
    ax.set_xlabel("relative key position j / n")
    ax.set_ylabel("mean score − row mean")
    return ax


# -- against the hidden size -----------------------------------------------------------------------


def versus_d(ds, mean, sem, ax, *, label=None, reference=None, ylabel=None, z=1.0, **kw):
    """A quantity against d (log axis), points ± z SE joined, a dotted line at ``reference``."""
    sem = np.zeros(len(ds)) if sem is None else sem
    errorbar_points(ds, mean, sem, ax, label=label, z=z, joined=True, **kw)
    if reference is not None:
        _no_order_line(ax, float(reference))
    _log_x(ax, ds, "hidden size d")
    if ylabel is not None:
        ax.set_ylabel(ylabel)
    return ax


def h_panel(curves, ax, *, printed=True, corrected=True, color=None, label=None):
    """One setting's h(j) (closedforms.HCurves): as printed, corrected, simulated ± 1 SE."""
    j = np.asarray(curves.j, dtype=float)
    for kind, wanted in (("printed", printed), ("corrected", corrected)):
        values = getattr(curves, kind)
        if wanted and values is not None:
            h_curve(j, values, ax, normalize=False, kind=kind, color=color)
    errorbar_points(j, curves.sim, curves.sim_se, ax, label=label, color=color)
    ax.set_xticks(j if j.size <= 12 else np.unique([j[0], j[j.size // 2], j[-1]]))
    ax.set_xlabel("key j")
    ax.set_ylabel("h(j) / h(1)" if curves.normalized else "√d · h(j)")
    return ax


def style_legend(ax, **kw):
    """A legend of the line styles in black, beside the Axes' own legend. Returns the legend."""
    from matplotlib.lines import Line2D

    size = conventions.SIMULATION["markersize"]
    styles = {
        "Eq. (41) as printed": conventions.AS_PRINTED,
        "corrected": conventions.CORRECTED,
        "simulation ± 1 SE": {"linestyle": "none", "marker": "o", "markersize": size},
    }
    handles = [Line2D([], [], color="black", label=t, **style) for t, style in styles.items()]
    old = ax.get_legend()
    legend = ax.legend(handles=handles, **kw)
    if old is not None:
        ax.add_artist(old)
    return legend


def d_axis(ax, ds, *, label: str = "hidden size d", log_y: bool = False):
    """A hidden-size axis: log base 2, integer ticks at ``ds``; ``log_y``: a log y axis too."""
    _log_x(ax, np.unique(ds), label, base=2)
    if log_y:
        ax.set_yscale("log")
    return ax


def ratio_by_d(ds, ratio, se, ax, *, label=None, z=1.0, **kw):
    """Simulated / closed form against d: points ± z SE on a thin line, a dotted line at 1."""
    if np.size(ds):
        kw.setdefault("linewidth", 1.0)
        errorbar_points(ds, ratio, se, ax, label=label, z=z, joined=True, **kw)
    _no_order_line(ax, 1.0, gid=EXACT_GID)
    ax.set_ylabel("simulated / closed form")
    return ax


def level_and_step(series: dict, *, ylabel: str):
    """A figure of two panels, a closed form's level and step over j against simulation over d:
    ``series`` part -> alpha -> (ds, ratio, se) (closedforms.ratio_series), a line per alpha."""
    fig, axes = subplots(1, 2, height_ratio=0.42, sharey=True)
    for ax, (part, title) in zip(axes, (("level", "level"), ("step", "shape (step over j)"))):
        for a, (ds, ratio, se) in series[part].items():
            style = {"label": conventions.alpha_label(a), "color": conventions.alpha_colour(a)}
            versus_d(ds, ratio, se, ax, reference=1.0, ylabel=ylabel, **style)
        ax.set_title(title)
    axes[1].set_ylabel("")
    handles, labels = axes[1].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=len(axes[1].containers))
    return fig
