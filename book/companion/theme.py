"""seaborn's theme for the book's figures, without importing seaborn in every kernel.

The figures use seaborn's "paper" context and its "ticks" style (:func:`companion.plotting.book_style`);
the heatmaps' colour map is recency_lib's convention (:mod:`recency_lib.plot`). Importing seaborn brings scipy.stats and pandas into every
kernel that draws: the pages, Appendix B's papermill runs and every rerun. What ``seaborn.set_theme`` sets is plain data, so seaborn itself computes it once and the
results cache keeps it (:func:`recency_lib.cache.cached_value`, keyed by seaborn's and matplotlib's
versions and this module's code); later kernels apply the stored values, the same numbers bit for bit
(``tests/book/test_theme.py`` compares them with a real ``set_theme``).
"""

from __future__ import annotations

import importlib
from enum import Enum

CONTEXT, STYLE = "paper", "ticks"
#: The one-letter colours that set_theme (color_codes=True) redefines from its palette.
COLOR_CODES = "bgrmyck"


def _json(value):
    if isinstance(value, Enum):  # lines.solid_capstyle: CapStyle.round -> "round"
        return value.value
    return list(value) if isinstance(value, tuple) else value


def from_seaborn() -> dict:
    """Import seaborn, apply ``set_theme(context=CONTEXT, style=STYLE)`` and read back what it set, as
    JSON values: ``rc`` (the rcParams of its style and context, the colour cycle left out),
    ``cycle`` (the colour cycle's RGB triples) and ``codes`` (the one-letter colours)."""
    import matplotlib as mpl
    import seaborn as sns

    keys = set(sns.axes_style(STYLE)) | set(sns.plotting_context(CONTEXT)) | {"font.family"}
    sns.set_theme(context=CONTEXT, style=STYLE)
    return {
        "rc": {k: _json(mpl.rcParams[k]) for k in sorted(keys)},
        "cycle": [list(c) for c in mpl.rcParams["axes.prop_cycle"].by_key()["color"]],
        "codes": {c: list(mpl.colors.to_rgb(c)) for c in COLOR_CODES},
    }


def theme() -> dict:
    """:func:`from_seaborn`'s values, from the results cache (computed there once per seaborn and
    matplotlib version)."""
    # the cache by name, not by an import statement: the theme depends on seaborn, matplotlib and this
    # module alone, and book/_ext/fresh_cache.py (which follows import statements) must not make every
    # page that only draws depend on the simulator's code through recency_lib.cache
    cache = importlib.import_module("recency_lib.cache")
    value, _ = cache.cached_value(
        "seaborn-theme", from_seaborn, ("companion.theme",), packages=("seaborn", "matplotlib")
    )
    return value


def apply(rc: dict | None = None) -> None:
    """What ``seaborn.set_theme(context=CONTEXT, style=STYLE, rc=rc)`` does to matplotlib, from
    :func:`theme`: the rcParams, the colour cycle, the one-letter colours and the registration of the
    colour map its ``image.cmap`` names, "rocket" (recency_lib's heatmap convention); then ``rc`` on top."""
    import matplotlib as mpl
    from cycler import cycler

    from recency_lib.plot import heatmap_cmap

    t = theme()
    mpl.rcParams.update(t["rc"])
    mpl.rcParams["axes.prop_cycle"] = cycler("color", [tuple(c) for c in t["cycle"]])
    for code, rgb in t["codes"].items():
        mpl.colors.colorConverter.colors[code] = tuple(rgb)
    cmap = heatmap_cmap()
    for c in (cmap, cmap.reversed()):
        if c.name not in mpl.colormaps:
            mpl.colormaps.register(c)
    mpl.rcParams.update(rc or {})
