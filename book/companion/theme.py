"""seaborn's theme for the book's figures without importing seaborn in every kernel: what
``seaborn.set_theme(context="paper", style="ticks")`` sets, kept in the results cache.
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
    """What ``set_theme`` sets, as JSON: ``rc`` (its rcParams but the colour cycle), ``cycle`` (the
    cycle's RGB triples) and ``codes`` (the one-letter colours)."""
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
    """:func:`from_seaborn`'s values, from the results cache."""
    # imported by name: book/_ext/fresh_cache.py follows import statements, and a page that only
    # draws must not depend on the simulator's code through recency_lib.cache
    cache = importlib.import_module("recency_lib.cache")
    value, _ = cache.cached_value(
        "seaborn-theme", from_seaborn, ("companion.theme",), packages=("seaborn", "matplotlib")
    )
    return value


def apply(rc: dict | None = None) -> None:
    """What ``seaborn.set_theme(context=CONTEXT, style=STYLE, rc=rc)`` does, from :func:`theme`."""
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
