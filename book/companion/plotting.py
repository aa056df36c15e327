"""Figures of the companion: data and a matplotlib Axes in, the same Axes out. Nothing here simulates.

Conventions (as in the paper's Figs. 1-5): indices are shown 1-based; in a score heatmap the
y axis is the query index i and the x axis the key index j; causal masking leaves the upper
triangle (j > i) blank. Sizes, fonts, line styles and colours come from
:mod:`companion.conventions`; :func:`book_style` applies them, :func:`subplots` makes a figure
as wide as the page column, and :func:`glue_figure` hands a finished figure to the page.

The diagonal of a score matrix is special: after normalization S_ii = sqrt(d) by construction
(Eq. (5)), far above every off-diagonal score, so colouring it would squash the off-diagonal
structure that Definition 1 is about into one colour. :func:`score_heatmap` therefore computes
its colour limits from the strictly lower triangle only and draws the diagonal cells hatched and
uncoloured (``include_diagonal=True`` draws them as the paper did, on one scale with the rest).

seaborn gives the theme (:func:`book_style`: what ``seaborn.set_theme`` sets, with the book's sizes,
stored by :mod:`companion.theme`); the heatmaps follow recency_lib.plot's convention (its colour map
"rocket", as the paper's, and the excluded diagonal). Where the figures use matplotlib directly, the reason, per kind:

* score heatmaps (:func:`score_heatmap`, :func:`score_grid`): ``pcolormesh``
  (:func:`recency_lib.plot.draw_heatmap`), because the diagonal is hatched and left out of the colour
  scale, colour bars are shared along a grid row, and n > 40 is embedded as a bitmap; ``seaborn.heatmap`` (pcolormesh, a colour bar per Axes) does none of that;
* points with error bars (:func:`errorbar_points`, :func:`recency_by_layer`, ...): ``errorbar`` with the
  standard errors the simulator computed; seaborn's line and point plots estimate their own
  intervals from raw observations, which a SimResult does not keep;
* closed-form curves and reference lines: ``plot`` / ``axhline``, one line each, nothing to gain.
"""

from __future__ import annotations

import numpy as np

from recency_lib.plot import colour_limits
from recency_lib.validation import check_choice, check_int, check_real

from . import conventions as cv
from .report import pm

RP_GID = "recency_probability"  # gid of the RP text box, so it can be found again
NO_ORDER_GID = "no_order"  # gid of the 0.5 reference line of recency_by_layer
EXACT_GID = "closed_form_exact"  # gid of the ratio = 1 reference line of ratio_by_d
DIAGONAL_GID = "excluded_diagonal"  # gid of the hatched diagonal cells
RASTER_ABOVE_N = 40  # heatmaps with more tokens are embedded as a bitmap in the SVG
SHARE_MODES = ("auto", "row", "all", "none")

__all__ = [
    "binned_profiles",
    "book_style",
    "closed_form",
    "d_axis",
    "errorbar_points",
    "figure1_grids",
    "glue_figure",
    "h_curve",
    "h_panel",
    "heatmap_subplots",
    "level_and_step",
    "panel_axes",
    "panels",
    "pm",
    "ratio_by_d",
    "recency_by_layer",
    "recency_by_length",
    "recency_dots",
    "reference_line",
    "row_profile",
    "rp_text",
    "score_grid",
    "score_heatmap",
    "style_legend",
    "subplots",
    "trend_reach",
    "upper_limits",
    "versus_d",
]


# -- style and figures ---------------------------------------------------------------------------


def style_rc() -> dict:
    """The matplotlib settings of the book (fonts in points at the figure's natural size)."""
    return {
        "font.size": cv.FONT_PT,
        "axes.titlesize": cv.TITLE_PT,
        "axes.labelsize": cv.FONT_PT,
        "xtick.labelsize": cv.SMALL_PT,
        "ytick.labelsize": cv.SMALL_PT,
        "legend.fontsize": cv.SMALL_PT,
        "legend.title_fontsize": cv.SMALL_PT,
        "figure.titlesize": cv.TITLE_PT,
        "figure.figsize": cv.figure_size(),
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
    """Apply the book's figure style: seaborn's "ticks" theme with :func:`style_rc` on top, and in a
    notebook SVG output (sharp at any zoom; shown at its natural size, which :func:`subplots` makes the
    column width). The theme is ``seaborn.set_theme(context="paper", style="ticks", rc=style_rc())``'s
    effect, stored once (:mod:`companion.theme`): a kernel that draws does not import seaborn."""
    from .theme import apply

    apply(style_rc())
    try:
        from IPython import get_ipython
        from matplotlib_inline.backend_inline import set_matplotlib_formats
    except ImportError:  # plain Python: nothing to configure
        return
    if get_ipython() is not None:
        set_matplotlib_formats("svg")


def subplots(
    nrows: int = 1, ncols: int = 1, *, height_ratio: float | None = None, width: float = 1.0, **kw
):
    """``plt.subplots`` for the page: the figure fills ``width`` of the column (conventions.COLUMN_IN)
    and lays itself out (constrained layout); ``height_ratio`` is height / width (default: square
    panels for a grid, 0.62 for a single panel). Returns (fig, axes) as ``plt.subplots``."""
    import matplotlib.pyplot as plt

    nrows, ncols = check_int("nrows", nrows, 1), check_int("ncols", ncols, 1)
    if height_ratio is None:
        height_ratio = 0.62 if nrows == ncols == 1 else min(3.0, 0.8 * nrows / ncols)
    kw.setdefault("layout", "constrained")
    return plt.subplots(nrows, ncols, figsize=cv.figure_size(height_ratio, width), **kw)


def heatmap_subplots(rows: int, cols: int, **kw):
    """:func:`subplots` for a grid of score heatmaps (:func:`score_grid`): panels about square with
    room for the colour bars, the figure at most four times as high as wide."""
    rows, cols = check_int("rows", rows, 1), check_int("cols", cols, 1)
    return subplots(rows, cols, height_ratio=min(4.0, 1.15 * rows / cols), squeeze=False, **kw)


def panel_axes(count: int, *, max_cols: int = 4, height_ratio: float | None = None):
    """:func:`panels` for chapter 6's figures: rows of at most ``max_cols`` panels, about square
    (``height_ratio``: the figure's height / width instead). Returns (fig, list of ``count`` Axes)."""
    count, max_cols = check_int("count", count, 1), check_int("max_cols", max_cols, 1)
    cols = min(count, max_cols)
    rows = -(-count // cols)
    ratio = 1.1 if height_ratio is None else float(height_ratio) * cols / rows
    return panels(count, max_cols=max_cols, panel_ratio=ratio)


def panels(count: int, *, max_cols: int = 3, panel_ratio: float = 1.0, **kw):
    """``count`` panels as wide as the column, at most ``max_cols`` side by side (a chapter whose
    number of layers is a parameter gets as many rows as it needs); ``panel_ratio`` is one panel's
    height / width. The unused cells of the last row are hidden. Returns (fig, list of ``count``
    Axes, in reading order)."""
    count = check_int("count", count, 1)
    max_cols = check_int("max_cols", max_cols, 1)
    cols = min(max_cols, count)
    rows = -(-count // cols)
    ratio = min(4.0, panel_ratio * rows / cols)
    fig, axes = subplots(rows, cols, height_ratio=ratio, squeeze=False, **kw)
    flat = list(axes.flat)
    for ax in flat[count:]:
        ax.set_visible(False)
    return fig, flat[:count]


def glue_figure(key: str, fig) -> None:
    """Glue ``fig`` under ``key`` for a ``{glue:figure}`` directive (numbered, with its caption in
    the markdown) and close it, so that the cell does not show it a second time. Outside the book's
    build (a papermill rerun) the figure is displayed as well (:func:`companion.in_book`)."""
    import matplotlib.pyplot as plt
    from myst_nb import glue

    from . import in_book

    glue(key, fig, display=not in_book())
    plt.close(fig)


# -- validation ------------------------------------------------------------------------------------


def _square(name: str, m) -> np.ndarray:
    a = np.asarray(m, dtype=float)
    if a.ndim != 2 or a.shape[0] != a.shape[1] or a.shape[0] < 1:
        raise ValueError(f"{name} has shape {a.shape}; allowed: a square (n, n) matrix with n >= 1")
    return a


def _vector(name: str, v, length: int | None = None) -> np.ndarray:
    a = np.asarray(v, dtype=float)
    if a.ndim != 1 or a.size < 1:
        raise ValueError(f"{name} has shape {a.shape}; allowed: a non-empty 1-D array")
    if length is not None and a.size != length:
        raise ValueError(
            f"{name} has length {a.size}; allowed: length {length} (same as the x values)"
        )
    return a


def _sem(name: str, v, length: int) -> np.ndarray:
    a = _vector(name, v, length)
    if np.any(a[np.isfinite(a)] < 0):
        raise ValueError(
            f"{name}={a.tolist()!r} has negative entries; allowed: standard errors >= 0 (or NaN)"
        )
    return a


def rp_text(rp: float, sem: float | None = None, sep: str = " ") -> str:
    """The recency-probability label: "RP = 0.7321 ± 0.0012" (report.pm), "RP = 0.500" without a
    SEM; ``sep="\\n"`` breaks it before the ±, for a narrow panel."""
    if sem is None or not np.isfinite(sem):
        return f"RP = {rp:.3f}"
    text = pm(rp, sem, min_places=3)
    if sep != " ":
        at = " \u00d7 " if text.startswith("(") else " \u00b1 "  # "(7.2 ± 0.8)" stays whole
        text = text.replace(at, sep + at[1:], 1)
    return f"RP = {text}"


# -- heatmaps --------------------------------------------------------------------------------------


def _colourbar(mappable, ax, *, axes=None):
    """A slim horizontal colour bar under the panel(s), two or three ticks and a shared power of ten
    (×10⁻⁵) when the values need one."""
    from matplotlib.ticker import MaxNLocator, ScalarFormatter

    fmt = ScalarFormatter(useMathText=True)
    fmt.set_powerlimits((-2, 3))
    bar = ax.figure.colorbar(
        mappable,
        ax=axes if axes is not None else ax,
        location="bottom",
        fraction=0.05,
        pad=0.02,
        aspect=14,
        format=fmt,
    )
    bar.locator = MaxNLocator(nbins=2, min_n_ticks=2)
    bar.update_ticks()
    bar.outline.set_linewidth(0)
    bar.ax.tick_params(labelsize=cv.SMALL_PT, length=2, pad=1)
    bar.ax.xaxis.offsetText.set_fontsize(cv.SMALL_PT)
    return bar


def score_heatmap(
    score_mean,
    ax,
    *,
    recency_probability=None,
    recency_sem=None,
    title=None,
    cbar=True,
    annotate_fmt=None,
    include_diagonal=False,
    vmin=None,
    vmax=None,
    ticks="all",
):
    """Heatmap of an (n, n) mean score matrix, as in Fig. 1, by recency_lib's heatmap convention
    (:func:`recency_lib.plot.draw_heatmap`: the colour map "rocket", as the paper's).

    * Upper triangle (j > i) and non-finite entries: blank.
    * Diagonal: EXCLUDED from the colour scale and drawn hatched (``include_diagonal=True``: coloured
      on one scale with the rest, as the paper's figure). vmin/vmax default to the min/max of the
      finite entries coloured (none, e.g. n = 1: an arbitrary [0, 1]).
    * y = query index i, x = key index j, ticks 1..n (``ticks="ends"``: only 1 and n, for grids).
    * ``recency_probability`` (and ``recency_sem``): printed in the empty upper-right corner,
      "RP = 0.7321" over "± 0.0012" (conventions.RP_LABEL_PT).
    * ``annotate_fmt`` (e.g. ".2f"): write each coloured cell's value.
    * ``cbar``: True draws this panel's own colour bar; False none (e.g. a shared one, score_grid).

    Returns ``ax``.
    """
    from recency_lib.plot import draw_heatmap

    s = _square("score_mean", score_mean)  # (n, n)
    n = s.shape[0]
    ticks = check_choice("ticks", ticks, ("all", "ends"))
    lo, hi = colour_limits(s, include_diagonal)
    vmin = lo if vmin is None else float(vmin)
    vmax = hi if vmax is None else float(vmax)
    mesh = draw_heatmap(
        ax,
        s,
        include_diagonal=include_diagonal,
        vmin=vmin,
        vmax=vmax,
        rasterized=n > RASTER_ABOVE_N,
    )
    for side in ("top", "right", "left", "bottom"):
        ax.spines[side].set_visible(False)
    shown_ticks = np.arange(n) if (ticks == "all" and n <= 12) else np.unique([0, n - 1])
    ax.set_xticks(shown_ticks + 0.5, [str(k + 1) for k in shown_ticks])
    ax.set_yticks(shown_ticks + 0.5, [str(k + 1) for k in shown_ticks])
    ax.tick_params(length=0, pad=2)
    if cbar:
        _colourbar(mesh, ax)
    if annotate_fmt is not None:
        rows, cols = np.indices(s.shape)
        shown = ((rows >= cols) if include_diagonal else (rows > cols)) & np.isfinite(s)
        for i, j in zip(*np.nonzero(shown)):
            value = s[i, j]
            shade = (value - vmin) / (vmax - vmin) if vmax > vmin else 0.5
            ax.text(
                j + 0.5,
                i + 0.5,
                format(value, annotate_fmt),
                ha="center",
                va="center",
                fontsize=cv.SMALL_PT,
                color="black" if shade > 0.6 else "white",
            )
    ax.set_xlabel("key j")
    ax.set_ylabel("query i")
    if title is not None:
        ax.set_title(title)
    if recency_probability is not None:
        ax.text(
            0.99,
            0.99,
            rp_text(float(recency_probability), recency_sem, sep="\n"),
            transform=ax.transAxes,
            ha="right",
            va="top",
            fontsize=cv.RP_LABEL_PT,
            linespacing=1.1,
            gid=RP_GID,
        )
    return ax


def _share_groups(limits: np.ndarray, share: str) -> list[list[tuple[int, int]]]:
    """Panels (r, c) that share one colour scale. "auto": a row shares when every panel's own range
    covers at least half of the row's joint range (so no panel loses more than half of its colours;
    otherwise each panel keeps its own scale)."""
    n_rows, n_cols = limits.shape[:2]
    cells = [[(r, c) for c in range(n_cols)] for r in range(n_rows)]
    if share == "none":
        return [[rc] for row in cells for rc in row]
    if share == "all":
        return [[rc for row in cells for rc in row]]
    groups = []
    for row in cells:
        lo = min(limits[r, c, 0] for r, c in row)
        hi = max(limits[r, c, 1] for r, c in row)
        own = [limits[r, c, 1] - limits[r, c, 0] for r, c in row]
        if share == "row" or (hi > lo and min(own) >= 0.5 * (hi - lo)):
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
    """A grid of :func:`score_heatmap` panels: rows = settings, columns = layers (Figs. 1, 3, 4).

    score_means: (rows, cols, n, n). axes: (rows, cols) array of Axes (any array of the same size
    is reshaped, e.g. ``plt.subplots(1, k)``'s 1-D array). recency_probabilities / recency_sems:
    (rows, cols) or None. row_labels (length rows) go on the left of the first column,
    col_labels (length cols) above the first row. Tick labels 1 and n only, axis labels on the
    outer panels.

    Colour scales (``share``): "auto" gives a row one shared colour bar where that is honest (every
    panel's range covers at least half of the row's, :func:`_share_groups`), else each panel its own;
    "row" / "all" / "none" force it. ``include_diagonal``: colour the diagonal too (the paper's way).

    Returns ``axes`` as a (rows, cols) array.
    """
    sm = np.asarray(score_means, dtype=float)
    if sm.ndim != 4 or sm.shape[2] != sm.shape[3]:
        raise ValueError(f"score_means has shape {sm.shape}; allowed: (rows, cols, n, n)")
    n_rows, n_cols = sm.shape[:2]
    ax_arr = np.asarray(axes, dtype=object)
    if ax_arr.size != n_rows * n_cols:
        raise ValueError(
            f"axes has shape {ax_arr.shape}; allowed: {n_rows * n_cols} Axes, "
            f"one per panel of score_means' (rows, cols) = {(n_rows, n_cols)}"
        )
    ax_arr = ax_arr.reshape(n_rows, n_cols)
    share = check_choice("share", share, SHARE_MODES)

    def grid_of(name, values):
        if values is None:
            return None
        a = np.asarray(values, dtype=float)
        if a.shape != (n_rows, n_cols):
            raise ValueError(f"{name} has shape {a.shape}; allowed: {(n_rows, n_cols)}")
        return a

    rp = grid_of("recency_probabilities", recency_probabilities)
    rp_sem = grid_of("recency_sems", recency_sems)
    for name, labels, size in (
        ("row_labels", row_labels, n_rows),
        ("col_labels", col_labels, n_cols),
    ):
        if labels is not None and len(labels) != size:
            raise ValueError(f"{name} has length {len(labels)}; allowed: length {size}")

    limits = np.array(
        [[colour_limits(sm[r, c], include_diagonal) for c in range(n_cols)] for r in range(n_rows)]
    )
    scale = {}
    groups = _share_groups(limits, share)
    for group in groups:
        lo = min(limits[r, c, 0] for r, c in group)
        hi = max(limits[r, c, 1] for r, c in group)
        for rc in group:
            scale[rc] = (lo, hi)
    for r in range(n_rows):
        for c in range(n_cols):
            ax = ax_arr[r, c]
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


# -- curves ----------------------------------------------------------------------------------------

_KINDS = {"printed": cv.AS_PRINTED, "corrected": cv.CORRECTED, None: {}}


def figure1_grids(results, row_labels, layers: int):
    """The paper's Figure 1 for ``results`` (one row per setting, one column per layer), drawn twice
    with :func:`score_grid`: the book's way (diagonal left out, each panel's RP ± SE, colour bars shared
    where honest) and the paper's (diagonal coloured, a colour bar per panel). Returns (book, paper)
    figures."""
    results = list(results)
    layers = check_int("layers", layers, 1)
    grid = dict(
        score_means=[r.score_mean for r in results],
        row_labels=row_labels,
        col_labels=[f"layer {l}" for l in range(1, layers + 1)],
    )
    book, axes = heatmap_subplots(len(results), layers)
    from .statistics import rp_layers

    rps = [rp_layers(r) for r in results]
    score_grid(
        axes=axes,
        recency_probabilities=[v for v, _ in rps],
        recency_sems=[e for _, e in rps],
        **grid,
    )
    paper, axes = heatmap_subplots(len(results), layers)
    score_grid(axes=axes, include_diagonal=True, share="none", **grid)
    return book, paper


def h_curve(j, h, ax, *, label=None, normalize=True, kind=None, **kw):
    """h(j) against key index j (Figs. 2 and 5; h of Eq. (41) or theory.h_corrected).

    normalize=True divides by the first value, h(j_1) (h(1) when j starts at 1): every curve
    then starts at 1 and shows the relative growth over keys, which is what Definition 1 and
    S_ij = g(i) h(j) (Eq. (40)) depend on; the absolute scale of h (~1/sqrt(d)) is a
    row factor that cancels. ``kind``: "printed" (dashed) or "corrected" (solid), the book's
    line styles (conventions.AS_PRINTED / CORRECTED); extra keywords go to ``ax.plot``.
    Returns ``ax``.
    """
    jj = _vector("j", j)
    hh = _vector("h", h, jj.size)
    if normalize:
        if not (np.isfinite(hh[0]) and hh[0] != 0):
            raise ValueError(
                f"h[0]={float(hh[0])!r} cannot normalize; allowed: finite and non-zero when normalize=True"
            )
        hh = hh / hh[0]
    style = dict(_KINDS[check_choice("kind", kind, tuple(_KINDS))])
    if kind is None:
        style.update(marker="o", markersize=3)
    style.update(kw)
    ax.plot(jj, hh, label=label, **style)
    ax.set_xlabel("key j")
    ax.set_ylabel(f"h(j) / h({jj[0]:g})" if normalize else "h(j)")
    return ax


def errorbar_points(x, mean, sem, ax, *, label=None, z=1.0, **kw):
    """Simulated means as points with error bars of +/- z * SEM (z = 1: one standard error),
    in the book's simulation style (conventions.SIMULATION). Extra keywords go to ``ax.errorbar``.
    Returns ``ax``.
    """
    xx = _vector("x", x)
    mm = _vector("mean", mean, xx.size)
    ee = _sem("sem", sem, xx.size)
    z = check_real("z", z, lo=0.0, lo_open=True, allowed="a finite number > 0")
    styled = "marker" in kw or "linestyle" in kw  # e.g. conventions.variant_style(cfg)
    for key, value in cv.SIMULATION.items():
        if not (key == "fmt" and styled):
            kw.setdefault(key, value)
    ax.errorbar(xx, mm, yerr=z * ee, label=label, **kw)
    return ax


def recency_by_layer(rp, rp_sem, ax, *, label=None, z=1.0, **kw):
    """Recency probability per layer (1-based) with +/- z SEM bars and a dotted 0.5 "no order" line.

    Calling it again on the same Axes (several settings) adds one more series, not a second
    reference line. Extra keywords (e.g. ``color``) go to ``ax.errorbar``. Returns ``ax``.
    """
    r = _vector("rp", rp)
    layers = np.arange(1, r.size + 1)
    if not ("marker" in kw or "linestyle" in kw):
        kw.setdefault("fmt", "o-")
    errorbar_points(layers, r, rp_sem, ax, label=label, z=z, **kw)
    if not any(line.get_gid() == NO_ORDER_GID for line in ax.get_lines()):
        ax.axhline(0.5, label="no order", gid=NO_ORDER_GID, **cv.REFERENCE)
    ax.set_xticks(layers)
    ax.set_xlabel("layer")
    ax.set_ylabel("recency probability")
    ax.set_ylim(-0.02, 1.02)
    return ax


def row_profile(score_mean, score_sem, i, ax, *, label=None, z=1.0, include_diagonal=False, **kw):
    """Mean scores of query row i (1-based) against key j, with +/- z SEM bars.

    The diagonal key j = i is left out by default (S_ii = sqrt(d) by construction would dwarf
    the rest, as in the heatmaps); pass include_diagonal=True to show it. Returns ``ax``.
    """
    s = _square("score_mean", score_mean)
    e = _square("score_sem", score_sem)
    if e.shape != s.shape:
        raise ValueError(f"score_sem has shape {e.shape}; allowed: {s.shape} (same as score_mean)")
    n = s.shape[0]
    if isinstance(i, bool) or not isinstance(i, (int, np.integer)) or not 1 <= i <= n:
        raise ValueError(
            f"i={i!r} is out of range; allowed: an integer in [1, {n}] (1-based query index)"
        )
    keys = i if include_diagonal else i - 1
    if keys < 1:
        raise ValueError(
            f"i={i!r} has no off-diagonal keys; allowed: i in [2, {n}], or include_diagonal=True"
        )
    j = np.arange(1, keys + 1)
    if not (
        "marker" in kw or "linestyle" in kw
    ):  # a setting's style (conventions.variant_style) has its own
        kw.setdefault("fmt", "o-")
    errorbar_points(j, s[i - 1, :keys], e[i - 1, :keys], ax, label=label, z=z, **kw)
    ax.set_xticks(j if keys <= 12 else np.unique([1, keys // 2, keys]))
    ax.set_xlabel("key j")
    ax.set_ylabel(f"mean score S[{i}, j]")
    return ax


# -- quantities against the hidden size (Theorem 1 and Proposition 1) ------------------------------


def closed_form(x, y, ax, *, kind="corrected", label=None, **kw):
    """A closed form as a line in the book's style: ``kind`` "printed" (dashed, conventions.AS_PRINTED)
    or "corrected" (solid, CORRECTED). Extra keywords go to ``ax.plot``. Returns ``ax``."""
    xx = _vector("x", x)
    yy = _vector("y", y, xx.size)
    style = dict(_KINDS[check_choice("kind", kind, ("printed", "corrected"))])
    style.update(kw)
    ax.plot(xx, yy, label=label, **style)
    return ax


def reference_line(ax, y: float = 0.0, *, label=None):
    """A horizontal "no effect" line at ``y`` (conventions.REFERENCE: thin grey dots). Returns ``ax``."""
    ax.axhline(float(y), label=label, **cv.REFERENCE)
    return ax


def upper_limits(x, bound, ax, *, label=None, **kw):
    """Upper limits at ``bound`` (e.g. an unresolved estimate plus 2 SE): open markers with a
    downward arrow. Extra keywords (e.g. ``color``) go to ``ax.errorbar``. Returns ``ax``."""
    xx = _vector("x", x)
    bb = _vector("bound", bound, xx.size)
    kw.setdefault("fmt", "v")
    kw.setdefault("markerfacecolor", "white")
    kw.setdefault("markersize", 5)
    ax.errorbar(xx, bb, yerr=0.35 * bb, uplims=True, label=label, capsize=0, elinewidth=1.0, **kw)
    return ax


def trend_reach(reach, ax, *, eq5=None, colour="C0"):
    """Theorem 1's trend (the mean step of S^(2) between earlier keys) against d, from
    :func:`companion.theorem1.theorem1_reach` records (anything with ``d``, ``trend``, ``trend_se``,
    ``resolved`` and ``plain_se``): the control-variate trend as points +/- 1 SE where resolved and
    as an upper limit (trend + 2 SE) where not; twice the plain estimator's SE (what plain
    averaging can resolve) as a grey line; ``eq5`` = (d grid, trend), the prediction as printed
    (dashed). Log-log axes. Returns ``ax``."""
    rows = sorted(reach, key=lambda r: r.d)
    if not rows:
        raise ValueError(
            "reach is empty; allowed: one record per hidden size (theorem1.theorem1_reach)"
        )
    if eq5 is not None:
        closed_form(*eq5, ax, kind="printed", color="black", label="Eq. (5)")
    shown = [r for r in rows if r.resolved]
    hidden = [r for r in rows if not r.resolved]
    if shown:
        errorbar_points(
            [r.d for r in shown],
            [r.trend for r in shown],
            [r.trend_se for r in shown],
            ax,
            color=colour,
            label="simulated, control variates",
        )
    if hidden:
        upper_limits(
            [r.d for r in hidden],
            [max(r.trend, 0.0) + 2 * r.trend_se for r in hidden],
            ax,
            color=colour,
            label="unresolved: below (+2 SE)",
        )
    ax.plot(
        [r.d for r in rows],
        [2 * r.plain_se for r in rows],
        "-",
        color="0.6",
        linewidth=1.2,
        marker=".",
        label="2 SE of plain averaging",
    )
    d_axis(ax, [r.d for r in rows], log_y=True)
    ax.set_ylabel(r"mean step of $S^{(2)}$")
    return ax


def recency_dots(labels, rp, rp_sem, ax, *, z=1.0, show_labels=True):
    """A dot plot of recency probabilities: one row per setting (``labels``, top to bottom), one dot
    per layer (columns of ``rp``, coloured by conventions.ordered_colour, side by side within the
    row), +/- z SEM bars, and the dotted 0.5 "no order" line. ``rp`` and ``rp_sem``: (settings,
    layers). ``show_labels=False`` leaves the rows unlabelled (a second panel beside the first).
    Returns ``ax``."""
    r = np.asarray(rp, dtype=float)
    e = np.asarray(rp_sem, dtype=float)
    if r.ndim != 2 or r.shape[0] < 1 or r.shape[1] < 1:
        raise ValueError(f"rp has shape {r.shape}; allowed: (settings, layers), both >= 1")
    if e.shape != r.shape:
        raise ValueError(f"rp_sem has shape {e.shape}; allowed: {r.shape} (same as rp)")
    if len(labels) != r.shape[0]:
        raise ValueError(
            f"labels has length {len(labels)}; allowed: one label per row of rp ({r.shape[0]})"
        )
    k, L = r.shape
    rows = np.arange(k)
    spread = 0.6 / max(1, L)
    z = check_real("z", z, lo=0.0, lo_open=True, allowed="a finite number > 0")
    style = {key: value for key, value in cv.SIMULATION.items() if key != "fmt"}
    for l in range(L):
        ax.errorbar(
            r[:, l],
            rows + (l - (L - 1) / 2) * spread,
            xerr=z * _sem("rp_sem", e[:, l], k),
            marker="o",
            linestyle="none",
            color=cv.ordered_colour(l, L),
            label=f"layer {l + 1}",
            **style,
        )
    ax.axvline(0.5, label="no order", gid=NO_ORDER_GID, **cv.REFERENCE)
    ax.set_yticks(rows, list(labels) if show_labels else [""] * k)
    ax.tick_params(axis="y", length=0)
    ax.set_ylim(k - 0.5, -0.5)  # first setting on top
    ax.set_xlim(-0.02, 1.02)
    ax.set_xlabel("recency probability")
    return ax


def recency_by_length(lengths, rp, rp_sem, ax, *, z=1.0):
    """Recency probability against the sequence length n (log axis), one series per layer (columns
    of ``rp``, (lengths, layers)), coloured by conventions.ordered_colour, +/- z SEM bars, with the
    dotted 0.5 "no order" line. Returns ``ax``."""
    x = _vector("lengths", lengths)
    r = np.asarray(rp, dtype=float)
    if r.ndim != 2 or r.shape[0] != x.size:
        raise ValueError(f"rp has shape {r.shape}; allowed: (lengths, layers) = ({x.size}, layers)")
    L = r.shape[1]
    e = np.asarray(rp_sem, dtype=float)
    if e.shape != r.shape:
        raise ValueError(f"rp_sem has shape {e.shape}; allowed: {r.shape} (same as rp)")
    for l in range(L):
        errorbar_points(
            x,
            r[:, l],
            e[:, l],
            ax,
            z=z,
            label=f"layer {l + 1}",
            color=cv.ordered_colour(l, L),
            marker="o",
            linestyle="-",
            markersize=4,
        )
    ax.axhline(0.5, label="no order", gid=NO_ORDER_GID, **cv.REFERENCE)
    ax.set_xscale("log")
    ax.set_xticks(x, [f"{v:g}" for v in x])
    ax.minorticks_off()
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("sequence length n")
    ax.set_ylabel("recency probability")
    return ax


def binned_profiles(profiles: dict, ax, *, z=1.0):
    """Binned last-query rows of several sequence lengths on one axis of relative key position:
    ``profiles`` maps a length n to (centres j / n, mean scores shifted by their row mean, SE bounds)
    (as :func:`recency_lib.metrics.binned_row` gives them); one series per length, coloured by
    conventions.ordered_colour in the order given, +/- z bound bars. Returns ``ax``."""
    if not isinstance(profiles, dict) or not profiles:
        raise ValueError("profiles is empty; allowed: a dict n -> (centres, means, bounds)")
    k = len(profiles)
    for c, (n, (x, m, b)) in enumerate(profiles.items()):
        errorbar_points(
            x,
            m,
            b,
            ax,
            z=z,
            label=f"n = {n}",
            color=cv.ordered_colour(c, k),
            marker=".",
            linestyle="-",
            capsize=2,
        )
    ax.axhline(0.0, **cv.REFERENCE)
    ax.set_xlabel("relative key position j / n")
    ax.set_ylabel("mean score − row mean")
    return ax


# -- hidden size and the key factor (Figures 1 and 2 at other d, Figures 2 and 5) -------------------


def versus_d(ds, mean, sem, ax, *, label=None, reference=None, ylabel=None, z=1.0, **kw):
    """A quantity against the hidden size d (log axis, ticks at this call's d), points +/- z SEM joined
    by a line; ``reference`` draws a dotted "no order" / "exact" line at that value (once per Axes);
    ``sem`` may be None (an exact value). Extra keywords (e.g. ``conventions.variant_style(cfg)``)
    go to ``ax.errorbar``. Returns ``ax``."""
    dd = _vector("ds", ds)
    if np.any(dd <= 0):
        raise ValueError(f"ds={dd.tolist()!r} has entries <= 0; allowed: hidden sizes > 0")
    mm = _vector("mean", mean, dd.size)
    ee = np.zeros(dd.size) if sem is None else _sem("sem", sem, dd.size)
    if not ("marker" in kw or "linestyle" in kw):
        kw.setdefault("fmt", "o-")
    errorbar_points(dd, mm, ee, ax, label=label, z=z, **kw)
    if reference is not None and not any(line.get_gid() == NO_ORDER_GID for line in ax.get_lines()):
        ax.axhline(float(reference), gid=NO_ORDER_GID, **cv.REFERENCE)
    ax.set_xscale("log")
    ax.set_xticks(dd, [f"{t:g}" for t in dd])
    ax.minorticks_off()
    ax.set_xlabel("hidden size d")
    if ylabel is not None:
        ax.set_ylabel(ylabel)
    return ax


def h_panel(curves, ax, *, printed=True, corrected=True, color=None, label=None):
    """One setting's key factor h(j) (Figs. 2 and 5): Eq. (41) as printed (dashed,
    conventions.AS_PRINTED), the corrected form (solid, conventions.CORRECTED) and the simulated
    points +/- 1 SE, all in ``color``; ``label`` names the points (e.g. the setting's alpha).

    ``curves``: an object with ``j``, ``sim``, ``sim_se``, ``printed``, ``corrected`` (arrays, the
    last two None when no closed form applies) and ``normalized`` (closedforms.HCurves). The printed /
    corrected lines are drawn when asked for and present. Returns ``ax``."""
    j = _vector("j", curves.j)
    for kind, wanted in (("printed", printed), ("corrected", corrected)):
        values = getattr(curves, kind)
        if wanted and values is not None:
            h_curve(j, values, ax, normalize=False, kind=kind, color=color)
    errorbar_points(j, curves.sim, curves.sim_se, ax, label=label, color=color)
    ax.set_xticks(j if j.size <= 12 else np.unique([j[0], j[j.size // 2], j[-1]]))
    ax.set_xlabel("key j")
    ax.set_ylabel("h(j) / h(1)" if curves.normalized else "√d · h(j)")
    return ax


def style_legend(ax, kinds=("printed", "corrected", "simulation"), **kw):
    """A legend of the book's line styles in black ("Eq. (41) as printed" dashed, "corrected"
    solid, "simulation ± 1 SE" points), added next to any legend the Axes already has.
    Extra keywords go to ``ax.legend``. Returns the legend."""
    from matplotlib.lines import Line2D

    names = {
        "printed": ("Eq. (41) as printed", cv.AS_PRINTED),
        "corrected": ("corrected", cv.CORRECTED),
        "simulation": (
            "simulation ± 1 SE",
            {"linestyle": "none", "marker": "o", "markersize": cv.SIMULATION["markersize"]},
        ),
    }
    handles = []
    for kind in kinds:
        if kind not in names:
            raise ValueError(f"kinds={kinds!r} is not allowed; allowed: some of {tuple(names)}")
        text, style = names[kind]
        handles.append(Line2D([], [], color="black", label=text, **style))
    old = ax.get_legend()
    legend = ax.legend(handles=handles, **kw)
    if old is not None:
        ax.add_artist(old)
    return legend


def d_axis(ax, ds, *, label: str = "hidden size d", log_y: bool = False):
    """A hidden-size axis: log base 2, ticks at ``ds`` (labelled as integers); ``log_y``: a log y axis
    too. Returns ``ax``."""
    dd = _vector("ds", ds)
    if np.any(~np.isfinite(dd) | (dd <= 0)):
        raise ValueError(f"ds={dd.tolist()!r} is not allowed; allowed: positive hidden sizes")
    ax.set_xscale("log", base=2)
    ticks = np.unique(dd)
    ax.set_xticks(ticks, [f"{t:g}" for t in ticks])
    ax.minorticks_off()
    if log_y:
        ax.set_yscale("log")
    ax.set_xlabel(label)
    return ax


def ratio_by_d(ds, ratio, se, ax, *, label=None, z=1.0, **kw):
    """A measured ratio simulated / closed form against the hidden size d: points with +/- z SE
    bars joined by a thin line (:func:`errorbar_points`; ``kw`` e.g. conventions.variant_style), and
    a dotted reference at 1 (the closed form exact), drawn once per Axes. The x axis is not set
    here: :func:`d_axis`. No resolved point (empty arrays, e.g. at a small sample count) draws only
    the reference. Returns ``ax``.
    """
    if np.asarray(ds).size:
        dd = _vector("ds", ds)
        if np.any(~np.isfinite(dd) | (dd <= 0)):
            raise ValueError(f"ds={dd.tolist()!r} is not allowed; allowed: positive hidden sizes")
        kw.setdefault("linewidth", 1.0)
        if not ("marker" in kw or "linestyle" in kw):
            kw.setdefault("fmt", "o-")
        errorbar_points(dd, ratio, se, ax, label=label, z=z, **kw)
    if not any(line.get_gid() == EXACT_GID for line in ax.get_lines()):
        ax.axhline(1.0, gid=EXACT_GID, **cv.REFERENCE)
    ax.set_ylabel("simulated / closed form")
    return ax


#: The two panels of :func:`level_and_step`, by their key in closedforms.ratio_series.
LEVEL_AND_STEP = {"level": "level", "step": "shape (step over j)"}


def level_and_step(series: dict, *, ylabel: str):
    """A closed form held to the simulation against d, in two panels: its level and its shape (the step
    over j). ``series``: part ("level", "step") -> alpha -> (ds, ratio, se), closedforms.ratio_series's
    values; one line per alpha in its colour (:func:`versus_d`, a dotted 1), the legend under both.
    Returns the figure."""
    missing = [p for p in LEVEL_AND_STEP if p not in series]
    if missing:
        raise ValueError(
            f"series has no {missing}; allowed: a dict with the parts {list(LEVEL_AND_STEP)}"
        )
    fig, axes = subplots(1, 2, height_ratio=0.42, sharey=True)
    for ax, (part, title) in zip(axes, LEVEL_AND_STEP.items()):
        for a, (ds, ratio, se) in series[part].items():
            versus_d(
                ds,
                ratio,
                se,
                ax,
                reference=1.0,
                label=cv.alpha_label(a),
                color=cv.alpha_colour(a),
                ylabel=ylabel,
            )
        ax.set_title(title)
    axes[1].set_ylabel("")
    fig.legend(
        *axes[1].get_legend_handles_labels(),
        loc="outside lower center",
        ncols=len(axes[1].containers),
    )
    return fig
