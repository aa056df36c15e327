"""One-call figure of a result: the mean score matrix of every layer with its recency probability.

``SimResult.plot()`` and ``python -m recency_lib simulate ... --plot FILE`` call :func:`plot_result`.
matplotlib is an optional dependency (``pip install recency_lib[plot]``), imported only here, only when
called. Each panel is a heatmap of the mean scores S_ij (query i down, key j across, 1-based), the
diagonal hatched and left out of the colour scale (after normalization S_ii = sqrt(d), far above the
rest of its row), the upper triangle blank (causal mask), titled with the layer's recency probability
± its standard error. Panels are laid out at most four to a row with a colour bar each, so 1 to 8
layers and n up to 64 stay legible.
"""
from __future__ import annotations

import math

import numpy as np

#: Written into every saved figure, so that a later write recognises it as this library's (files.Kind).
SIGNATURE = "recency_lib plot"
FORMATS = (".png", ".svg", ".pdf")
MAX_COLUMNS = 4


def _pm(value: float, se: float) -> str:
    if not (math.isfinite(value) and math.isfinite(se)) or se <= 0:
        return f"{value:.4f}"
    digits = max(0, 1 - int(math.floor(math.log10(se))))
    return f"{value:.{digits}f} ± {se:.{digits}f}"


def plot_result(res, *, include_diagonal: bool = False):
    """A matplotlib Figure of every layer of ``res`` (a SimResult): heatmaps of the mean scores with the
    recency probability ± SE in each title."""
    try:
        import matplotlib
        from matplotlib.figure import Figure
    except ImportError:
        raise ImportError("SimResult.plot() needs matplotlib: pip install 'recency_lib[plot]'") from None

    cfg = res.config
    L, n = cfg.layers, cfg.n
    cols = min(L, MAX_COLUMNS)
    rows = -(-L // cols)
    fig = Figure(figsize=(3.1 * cols, 2.9 * rows + 0.5), layout="constrained")
    fig.suptitle(f"norm={cfg.norm}, α={cfg.alpha:g}, γ={cfg.gamma:g}, n={n}, d={cfg.d}, "
                 f"{cfg.samples:,} sequences", fontsize=10)
    lower = np.tril(np.ones((n, n), dtype=bool), 0 if include_diagonal else -1)
    diag = np.eye(n, dtype=bool)
    cmap = matplotlib.colormaps["magma"].with_extremes(bad="white")
    ticks = sorted({0, n - 1} | ({(n - 1) // 2} if n > 6 else set(range(n))))
    for layer in range(L):
        ax = fig.add_subplot(rows, cols, layer + 1)
        s = np.asarray(res.score_mean[layer], dtype=float)
        shown = np.where(lower, s, np.nan)
        finite = shown[np.isfinite(shown)]
        lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
        image = ax.imshow(shown, cmap=cmap, vmin=lo, vmax=hi if hi > lo else lo + 1e-12,
                          interpolation="nearest", rasterized=n > 40)
        if not include_diagonal:
            ax.imshow(np.where(diag, 1.0, np.nan), cmap="Greys", vmin=0, vmax=4, interpolation="nearest")
        ax.set_xticks(ticks, [str(t + 1) for t in ticks], fontsize=8)
        ax.set_yticks(ticks, [str(t + 1) for t in ticks], fontsize=8)
        ax.set_xlabel("key j", fontsize=9)
        if layer % cols == 0:
            ax.set_ylabel("query i", fontsize=9)
        rp, se = float(res.recency_probability[layer]), float(res.recency_probability_sem[layer])
        ax.set_title(f"layer {layer + 1}: RP {_pm(rp, se)}" if math.isfinite(rp) else f"layer {layer + 1}",
                     fontsize=9)
        bar = fig.colorbar(image, ax=ax, shrink=0.85)
        bar.ax.tick_params(labelsize=7)
        bar.ax.yaxis.get_offset_text().set_fontsize(7)
    return fig


def check_plot_path(path, name: str = "plot"):
    """The path a figure may be written to: a .png, .svg or .pdf that is new or a figure this library
    saved (:data:`PLOT_FILE`), else ValueError naming it (files.check_output_path) -- before any work."""
    from .files import check_output_path
    from .text import short_path

    if str(path).lower().rpartition(".")[2] not in ("png", "svg", "pdf"):
        raise ValueError(f"{name}={short_path(str(path))} is not allowed; allowed: a path ending in .png, .svg or .pdf")
    return check_output_path(path, name, replaces=PLOT_FILE)


def save(fig, path):
    """Write ``fig`` to ``path`` atomically (its format from the suffix), with :data:`SIGNATURE` in its
    metadata; it replaces only a figure this library saved. Returns the path written."""
    from .files import atomic_write

    check_plot_path(path)
    suffix = str(path).lower().rpartition(".")[2]
    key = {"png": "Software", "svg": "Creator", "pdf": "Creator"}[suffix]
    return atomic_write(path, lambda fh: fig.savefig(fh, format=suffix, dpi=150, metadata={key: SIGNATURE}),
                        binary=True, replaces=PLOT_FILE)


def _recognise(fh, size: int) -> bool:
    return SIGNATURE.encode() in fh.read(65536)


def _plot_kind():
    from .files import Kind

    return Kind("a figure saved by recency_lib", _recognise)


PLOT_FILE = _plot_kind()
