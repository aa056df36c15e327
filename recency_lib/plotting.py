"""Figures of the companion: data and a matplotlib Axes in, the same Axes out. Nothing here simulates.

Conventions (as in the paper's Figs. 1-5): indices are shown 1-based; in a score heatmap the
y axis is the query index i and the x axis the key index j; causal masking leaves the upper
triangle (j > i) blank.

The diagonal of a score matrix is special: after normalization S_ii = sqrt(d) by construction
(Eq. (5)), far above every off-diagonal score, so colouring it would squash the off-diagonal
structure that Definition 1 is about into one colour. :func:`score_heatmap` therefore computes
its colour limits from the strictly lower triangle only and draws the diagonal cells hatched and
uncoloured.
"""
from __future__ import annotations


import numpy as np

from .validation import check_z

RP_GID = "recency_probability"      # gid of the RP text box, so it can be found again
NO_ORDER_GID = "no_order"           # gid of the dashed 0.5 line of recency_by_layer
DIAGONAL_GID = "excluded_diagonal"  # gid of the hatched diagonal cells


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
        raise ValueError(f"{name} has length {a.size}; allowed: length {length} (same as the x values)")
    return a


def _sem(name: str, v, length: int) -> np.ndarray:
    a = _vector(name, v, length)
    if np.any(a[np.isfinite(a)] < 0):
        raise ValueError(f"{name}={a.tolist()!r} has negative entries; allowed: standard errors >= 0 (or NaN)")
    return a


_z = check_z


def pm(mean: float, sem: float, *, digits: int = 1, min_places: int = 0) -> str:
    """"mean ± sem" with the error rounded to ``digits`` significant digits and the mean to match.

    0.55450, 0.00029 -> "0.5545 ± 0.0003"; tiny values switch to a shared exponent:
    5.07e-5, 5.8e-6 -> "(5.1 ± 0.6)e-05". A zero or missing error prints the mean to 4 digits.
    """
    mean, sem = float(mean), float(sem)
    if not np.isfinite(mean):
        return f"{mean}"
    if not np.isfinite(sem) or sem <= 0:
        return f"{mean:.4g} \u00b1 0"
    places = max(min_places, int(-np.floor(np.log10(sem))) + digits - 1)
    if places <= 6 and not (abs(mean) < 1e-3 and places > 3):
        return f"{mean:.{places}f} \u00b1 {sem:.{places}f}"
    exp = int(np.floor(np.log10(max(abs(mean), sem))))
    scale = 10.0 ** exp
    inner = max(0, int(-np.floor(np.log10(sem / scale))) + digits - 1)
    return f"({mean / scale:.{inner}f} \u00b1 {sem / scale:.{inner}f})e{exp:+03d}"


def rp_text(rp: float, sem: float | None = None) -> str:
    """The recency-probability label: "RP = 0.732 ± 0.001" (no ± without a SEM).

    At least 3 decimals, more (up to 6) when needed to show the SEM's first significant digit,
    so a SEM of 3e-4 prints as "0.5545 ± 0.0003" rather than "± 0.000".
    """
    if sem is None or not np.isfinite(sem):
        return f"RP = {rp:.3f}"
    places = 3 if sem <= 0 else int(min(6, max(3, -np.floor(np.log10(sem)))))
    return f"RP = {rp:.{places}f} \u00b1 {sem:.{places}f}"


# -- heatmaps --------------------------------------------------------------------------------------

def score_heatmap(score_mean, ax, *, recency_probability=None, recency_sem=None, title=None, cbar=True,
                  annotate_fmt=None):
    """Heatmap (seaborn, cmap "rocket") of an (n, n) mean score matrix, as in Fig. 1.

    * Upper triangle (j > i) and non-finite entries: blank.
    * Diagonal: EXCLUDED from the colour scale and drawn blank with grey hatching. vmin/vmax are
      the min/max of the finite strictly-lower-triangle entries (when there are none, e.g.
      n = 1, nothing is coloured and the scale is an arbitrary [0, 1]).
    * Ticks 1..n; y = query index i, x = key index j.
    * ``recency_probability`` (and ``recency_sem``): printed in the empty upper-right corner,
      e.g. "RP = 0.732 ± 0.001".
    * ``annotate_fmt`` (e.g. ".2f"): write each coloured cell's value.

    Returns ``ax``.
    """
    import matplotlib.patches as mpatches
    import seaborn as sns

    s = _square("score_mean", score_mean)                          # (n, n)
    n = s.shape[0]
    rows, cols = np.indices(s.shape)
    strict = rows > cols
    mask = ~(strict & np.isfinite(s))                               # hide diagonal, upper, NaN
    lower_vals = s[strict & np.isfinite(s)]
    vmin = float(lower_vals.min()) if lower_vals.size else 0.0
    vmax = float(lower_vals.max()) if lower_vals.size else 1.0
    ticks = [str(k) for k in range(1, n + 1)]
    # seaborn's heatmap redraws the whole figure on every call (to test tick overlap), which makes
    # a 4 x 4 grid take ~40 s; the same picture from pcolormesh with seaborn's colormap is instant.
    data = np.ma.masked_array(s, mask=mask)
    mesh = ax.pcolormesh(np.arange(n + 1), np.arange(n + 1), data, cmap=sns.color_palette("rocket", as_cmap=True),
                         vmin=vmin, vmax=vmax)
    ax.set_xlim(0, n)
    ax.set_ylim(n, 0)                                              # matrix orientation: query 1 on top
    ax.set_aspect("equal")
    for side in ("top", "right", "left", "bottom"):
        ax.spines[side].set_visible(False)
    centres = np.arange(n) + 0.5
    ax.set_xticks(centres, ticks)
    ax.set_yticks(centres, ticks)
    if cbar:
        colorbar = ax.figure.colorbar(mesh, ax=ax)
        colorbar.outline.set_linewidth(0)
    if annotate_fmt is not None:
        for i, j in zip(*np.nonzero(~mask)):
            value = s[i, j]
            shade = (value - vmin) / (vmax - vmin) if vmax > vmin else 0.5
            ax.text(j + 0.5, i + 0.5, format(value, annotate_fmt), ha="center", va="center", fontsize=7,
                    color="black" if shade > 0.6 else "white")
    for k in range(n):                                             # the excluded diagonal
        ax.add_patch(mpatches.Rectangle((k, k), 1, 1, fill=False, hatch="///", edgecolor="0.6",
                                        linewidth=0.0, gid=DIAGONAL_GID))
    ax.set_xlabel("key j")
    ax.set_ylabel("query i")
    ax.tick_params(axis="y", rotation=0)
    if title is not None:
        ax.set_title(title)
    if recency_probability is not None:
        ax.text(0.97, 0.97, rp_text(float(recency_probability), recency_sem), transform=ax.transAxes,
                ha="right", va="top", fontsize=8, gid=RP_GID,
                bbox={"boxstyle": "round,pad=0.3", "facecolor": "white", "edgecolor": "0.7", "alpha": 0.9})
    return ax


def score_grid(score_means, axes, *, recency_probabilities=None, recency_sems=None, row_labels=None,
               col_labels=None):
    """A grid of :func:`score_heatmap` panels: rows = settings, columns = layers (Figs. 1, 3, 4).

    score_means: (rows, cols, n, n). axes: (rows, cols) array of Axes (any array of the same size
    is reshaped, e.g. ``plt.subplots(1, k)``'s 1-D array). recency_probabilities / recency_sems:
    (rows, cols) or None. row_labels (length rows) go on the left of the first column,
    col_labels (length cols) above the first row. Each panel has its own colour scale and
    colourbar (the off-diagonal ranges differ between layers by orders of magnitude).

    Returns ``axes`` as a (rows, cols) array.
    """
    sm = np.asarray(score_means, dtype=float)
    if sm.ndim != 4 or sm.shape[2] != sm.shape[3]:
        raise ValueError(f"score_means has shape {sm.shape}; allowed: (rows, cols, n, n)")
    n_rows, n_cols = sm.shape[:2]
    ax_arr = np.asarray(axes, dtype=object)
    if ax_arr.size != n_rows * n_cols:
        raise ValueError(f"axes has shape {ax_arr.shape}; allowed: {n_rows * n_cols} Axes, "
                         f"one per panel of score_means' (rows, cols) = {(n_rows, n_cols)}")
    ax_arr = ax_arr.reshape(n_rows, n_cols)

    def grid_of(name, values):
        if values is None:
            return None
        a = np.asarray(values, dtype=float)
        if a.shape != (n_rows, n_cols):
            raise ValueError(f"{name} has shape {a.shape}; allowed: {(n_rows, n_cols)}")
        return a

    rp = grid_of("recency_probabilities", recency_probabilities)
    rp_sem = grid_of("recency_sems", recency_sems)
    for name, labels, size in (("row_labels", row_labels, n_rows), ("col_labels", col_labels, n_cols)):
        if labels is not None and len(labels) != size:
            raise ValueError(f"{name} has length {len(labels)}; allowed: length {size}")

    for r in range(n_rows):
        for c in range(n_cols):
            ax = ax_arr[r, c]
            score_heatmap(sm[r, c], ax,
                          recency_probability=None if rp is None else rp[r, c],
                          recency_sem=None if rp_sem is None else rp_sem[r, c],
                          title=col_labels[c] if (col_labels is not None and r == 0) else None)
            if c > 0:
                ax.set_ylabel("")
            elif row_labels is not None:
                ax.set_ylabel(f"{row_labels[r]}\nquery i")
            if r < n_rows - 1:
                ax.set_xlabel("")
    return ax_arr


# -- curves ----------------------------------------------------------------------------------------

def h_curve(j, h, ax, *, label=None, normalize=True, **kw):
    """h(j) against key index j (Figs. 2 and 5; h of Eq. (41) or theory.h_corrected).

    normalize=True divides by the first value, h(j_1) (h(1) when j starts at 1): every curve
    then starts at 1 and shows the relative growth over keys, which is what Definition 1 and
    S_ij = g(i) h(j) (Eq. (40)) depend on; the absolute scale of h (~1/sqrt(d)) is a
    row factor that cancels. Extra keywords go to ``ax.plot``. Returns ``ax``.
    """
    jj = _vector("j", j)
    hh = _vector("h", h, jj.size)
    if normalize:
        if not (np.isfinite(hh[0]) and hh[0] != 0):
            raise ValueError(f"h[0]={float(hh[0])!r} cannot normalize; allowed: finite and non-zero when normalize=True")
        hh = hh / hh[0]
    kw.setdefault("marker", "o")
    kw.setdefault("markersize", 3)
    ax.plot(jj, hh, label=label, **kw)
    ax.set_xlabel("key j")
    ax.set_ylabel(f"h(j) / h({jj[0]:g})" if normalize else "h(j)")
    return ax


def errorbar_points(x, mean, sem, ax, *, label=None, z=1.0, **kw):
    """Simulated means as points with error bars of +/- z * SEM (z = 1: one standard error).

    Extra keywords go to ``ax.errorbar``. Returns ``ax``.
    """
    xx = _vector("x", x)
    mm = _vector("mean", mean, xx.size)
    ee = _sem("sem", sem, xx.size)
    z = _z(z)
    kw.setdefault("fmt", "o")
    kw.setdefault("capsize", 3)
    kw.setdefault("markersize", 4)
    ax.errorbar(xx, mm, yerr=z * ee, label=label, **kw)
    return ax


def theory_vs_simulation(j, theory, sim_mean, sim_sem, ax, *, label=None, z=1.0):
    """A theory curve (line) and the simulated means (points, +/- z SEM) in one colour.

    Legend entries: "<label> theory" and "<label> simulation" (just "theory"/"simulation"
    without a label). Returns ``ax``.
    """
    jj = _vector("j", j)
    th = _vector("theory", theory, jj.size)
    prefix = f"{label} " if label else ""
    (line,) = ax.plot(jj, th, "-", label=f"{prefix}theory")
    errorbar_points(jj, sim_mean, sim_sem, ax, label=f"{prefix}simulation", z=z, color=line.get_color())
    return ax


def recency_by_layer(rp, rp_sem, ax, *, label=None, z=1.0):
    """Recency probability per layer (1-based) with +/- z SEM bars and a dashed 0.5 "no order" line.

    Calling it again on the same Axes (several settings) adds one more series, not a second
    reference line. Returns ``ax``.
    """
    r = _vector("rp", rp)
    layers = np.arange(1, r.size + 1)
    errorbar_points(layers, r, rp_sem, ax, label=label, z=z, fmt="o-")
    if not any(line.get_gid() == NO_ORDER_GID for line in ax.get_lines()):
        ax.axhline(0.5, linestyle="--", color="0.5", linewidth=1, label="no order", gid=NO_ORDER_GID)
    ax.set_xticks(layers)
    ax.set_xlabel("layer")
    ax.set_ylabel("recency probability")
    ax.set_ylim(-0.02, 1.02)
    return ax


def row_profile(score_mean, score_sem, i, ax, *, label=None, z=1.0, include_diagonal=False):
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
        raise ValueError(f"i={i!r} is out of range; allowed: an integer in [1, {n}] (1-based query index)")
    keys = i if include_diagonal else i - 1
    if keys < 1:
        raise ValueError(f"i={i!r} has no off-diagonal keys; allowed: i in [2, {n}], or include_diagonal=True")
    j = np.arange(1, keys + 1)
    errorbar_points(j, s[i - 1, :keys], e[i - 1, :keys], ax, label=label, z=z, fmt="o-")
    ax.set_xticks(j)
    ax.set_xlabel("key j")
    ax.set_ylabel(f"mean score S[{i}, j]")
    return ax


def offset_profiles(score_mean, score_sem, ax, *, z=1.0, cmap="viridis"):
    """Every query row's mean scores against the offset i - j (1..i-1), with +/- z SEM bars.

    A relative bias (a function of i - j only) would collapse all rows onto one curve; rows that
    stay apart show that the bias depends on absolute positions (Sec. 4 of the paper). One series
    per query i = 2..n, coloured from ``cmap`` by i and labelled "i = <i>". The diagonal
    (offset 0) is left out, as in the heatmaps. Returns ``ax``.
    """
    import matplotlib as mpl

    s = _square("score_mean", score_mean)
    e = _square("score_sem", score_sem)
    if e.shape != s.shape:
        raise ValueError(f"score_sem has shape {e.shape}; allowed: {s.shape} (same as score_mean)")
    n = s.shape[0]
    if n < 2:
        raise ValueError(f"score_mean has shape {s.shape}; allowed: n >= 2 (an off-diagonal key must exist)")
    colours = mpl.colormaps[cmap](np.linspace(0.0, 0.9, n - 1))
    for i in range(2, n + 1):                                        # 1-based query
        j = np.arange(i - 1, 0, -1)                                  # keys i-1 .. 1
        errorbar_points(i - j, s[i - 1, j - 1], e[i - 1, j - 1], ax, label=f"i = {i}", z=z, fmt="o-",
                        color=colours[i - 2], markersize=3, capsize=2, linewidth=1)
    ax.set_xticks(np.arange(1, n))
    ax.set_xlabel("offset i \u2212 j")
    ax.set_ylabel("mean score")
    return ax

