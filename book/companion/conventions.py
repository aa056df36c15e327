"""The book's conventions, each defined once: chapters, figures and tables quote them from here.

* Statistics: one family-wise error level for every decision the book draws from Monte Carlo, and
  the z it implies for a family of ``k`` comparisons (Bonferroni, :func:`z_for`), defined in
  :mod:`companion.significance` and quoted here.
  A single comparison is a family of one. There is no other threshold.
* Figures: the width of the page column and the font sizes, so that a figure drawn with
  :func:`figure_size` is shown at its natural size and its text reads at >= 9 pt on the page;
  line styles for a formula as printed in the paper, a corrected formula, and
  simulated points; one colour per anisotropy level alpha, the same in every figure.
* Names: the model variants ("LayerNorm + residual", ...) as a function of a :class:`SimConfig`.
"""

from __future__ import annotations

import math

from recency_lib.config import SimConfig
from recency_lib.norms import NORMS
from recency_lib.validation import check_int, check_real, short

from .significance import FAMILYWISE_LEVEL, adjacent_pairs, z_for  # noqa: F401  (quoted here)

# -- statistics ------------------------------------------------------------------------------------


def definition1_z(n: int) -> float:
    """The z of a Definition-1 verdict on an n x n score matrix (all adjacent differences at once)."""
    return z_for(max(1, adjacent_pairs(n)))


# -- page and figure geometry ------------------------------------------------------------------------

#: Drawing width of a full-column figure in CSS pixels, and in inches at the browser's 96 px per
#: inch. The page's text column is 784 px at a 1400 px window and a figure inside it 768 px;
#: 760 px plus the saved figure's padding fits either at 100 %.
COLUMN_PX = 760
COLUMN_IN = COLUMN_PX / 96
#: Font sizes in points at the figure's natural size (an SVG shown 1:1 in the column).
FONT_PT = 10.0  # axis labels, legends, tick labels
SMALL_PT = 9.0  # the smallest text in any figure
TITLE_PT = 11.0  # panel titles
RP_LABEL_PT = 11.0  # the recency-probability label of a heatmap panel


def figure_size(height_ratio: float = 0.62, width: float = 1.0) -> tuple[float, float]:
    """(width, height) in inches of a figure that fills ``width`` (0 < width <= 1) of the column."""
    width = check_real("width", width, lo=0.0, lo_open=True, hi=1.0, allowed="a number in (0, 1]")
    height_ratio = check_real(
        "height_ratio", height_ratio, lo=0.0, lo_open=True, hi=4.0, allowed="a number in (0, 4]"
    )
    w = COLUMN_IN * width
    return (w, w * height_ratio)


# -- line styles ----------------------------------------------------------------------------------------

#: A closed form as printed in the paper: dashed.
AS_PRINTED = {"linestyle": "--", "linewidth": 1.6}
#: The corrected closed form (the book's derivation): solid.
CORRECTED = {"linestyle": "-", "linewidth": 1.6}
#: Simulated means: points with +/- 1 SE error bars, no line.
SIMULATION = {"fmt": "o", "markersize": 4, "capsize": 2.5, "elinewidth": 1.0}
#: The "no order" reference (recency probability 0.5, a zero difference): thin grey dashes.
REFERENCE = {"linestyle": ":", "color": "0.45", "linewidth": 1.0}

#: The heatmaps of mean scores follow recency_lib's convention (recency_lib.plot: the colour map, the
#: excluded diagonal), which SimResult.plot() and the explorer read too.


# -- anisotropy levels and their colours -------------------------------------------------------------

#: The book's anisotropy levels alpha (Eq. (6)): every chapter draws its alphas from this grid.
ALPHAS = (0.0, 0.2, 0.4, 0.5, 0.6, 0.8, 0.95, 1.0)
#: The grid of the paper's Figures 2-5 (h(j) and the extended heatmaps).
H_ALPHAS = (0.0, 0.2, 0.4, 0.6, 0.8)
_ALPHA_CMAP = "viridis"
_ALPHA_SPAN = (0.0, 0.88)  # the colour map's yellow end is too light on white: stop before it


def alpha_colour(alpha: float) -> tuple[float, float, float, float]:
    """The colour of anisotropy level ``alpha`` in every figure: viridis at alpha (dark = isotropic,
    green-yellow = nearly identical tokens); the same alpha always gets the same colour."""
    import matplotlib as mpl

    a = check_real("alpha", alpha, lo=0.0, hi=1.0, allowed="a real number in [0, 1]")
    lo, hi = _ALPHA_SPAN
    return tuple(mpl.colormaps[_ALPHA_CMAP](lo + (hi - lo) * a))


def alpha_label(alpha: float) -> str:
    """ "α = 0.5" (the way every figure and table names an anisotropy level)."""
    a = check_real("alpha", alpha, lo=0.0, hi=1.0, allowed="a real number in [0, 1]")
    return f"α = {a:g}"


#: Colour map of ordered series other than alpha (layers, sequence lengths, query positions):
#: dark purple for the first, orange for the last (its light yellow end is left out).
ORDER_CMAP = "plasma"
_ORDER_SPAN = (0.0, 0.8)


def ordered_colour(k: int, count: int) -> tuple[float, float, float, float]:
    """The colour of the ``k``-th (0-based) of ``count`` ordered series (layer 1..L, the lengths of a
    sweep, query positions): evenly spaced on :data:`ORDER_CMAP`, never the alpha colours."""
    import matplotlib as mpl

    count = check_int("count", count, 1)
    k = check_int("k", k, 0, count - 1)
    lo, hi = _ORDER_SPAN
    return tuple(
        mpl.colormaps[ORDER_CMAP](lo + (hi - lo) * (k / (count - 1) if count > 1 else 0.0))
    )


# -- names of the model variants ------------------------------------------------------------------------

_EXTENSION_NAMES = {
    "ffn": "FFN",
    "rope": "RoPE",
    "placement=post": "post-LN",
    "weights=per_sample": "random weights",
    "weights=fixed": "fixed weights",
}


def variant_name(cfg: SimConfig) -> str:
    """The name of the model variant of ``cfg``, the same in every chapter:
    "no normalization", "LayerNorm", "LayerNorm + residual", "RMSNorm + residual", ...;
    extensions beyond the paper are appended ("LayerNorm + FFN + RoPE", "LayerNorm, 4 heads").
    A residual weight other than 0 and 1 is spelled out ("LayerNorm + 0.5 × residual")."""
    if not isinstance(cfg, SimConfig):
        raise ValueError(f"cfg={short(cfg)} is not allowed; allowed: a SimConfig")
    name = NORMS[cfg.norm].label
    if cfg.gamma == 1.0:
        name += " + residual"
    elif cfg.gamma != 0.0:
        name += f" + {cfg.gamma:g} × residual"
    heads = ""
    for ext in cfg.extensions:
        if ext.startswith("heads="):
            heads = f", {cfg.heads} heads"
        else:
            name += f" + {_EXTENSION_NAMES[ext]}"
    return name + heads


#: Marker of each normalization in every figure (the colour is the anisotropy's, alpha_colour), in the
#: order of the registry (recency_lib.norms.NORMS): a new normalization gets the next marker.
VARIANT_MARKERS = dict(zip(NORMS, "oDs^v<>pP*"))


def variant_short(cfg: SimConfig) -> str:
    """A short name for narrow places (heatmap rows, legends): "no norm.", "LayerNorm",
    "LN + residual", "RMS + residual"; extensions are not named (use :func:`variant_name`)."""
    if not isinstance(cfg, SimConfig):
        raise ValueError(f"cfg={short(cfg)} is not allowed; allowed: a SimConfig")
    if cfg.gamma == 0.0:
        return NORMS[cfg.norm].label if NORMS[cfg.norm].scales else NORMS[cfg.norm].short
    res = "residual" if cfg.gamma == 1.0 else f"{cfg.gamma:g} × residual"
    return f"{NORMS[cfg.norm].short} + {res}"


def variant_style(cfg: SimConfig) -> dict:
    """Line/marker style of a setting in every figure: the colour of its alpha, the marker of its
    normalization, filled without and open (white inside) with the residual. (Dashed lines are
    reserved for formulas as printed, :data:`AS_PRINTED`.)"""
    if not isinstance(cfg, SimConfig):
        raise ValueError(f"cfg={short(cfg)} is not allowed; allowed: a SimConfig")
    colour = alpha_colour(cfg.alpha)
    return {
        "color": colour,
        "marker": VARIANT_MARKERS[cfg.norm],
        "linestyle": "-",
        "markerfacecolor": colour if cfg.gamma == 0.0 else "white",
    }


def setting_label(cfg: SimConfig) -> str:
    """Variant and anisotropy, "LayerNorm + residual, α = 0.5": the label of one setting."""
    return f"{variant_name(cfg)}, {alpha_label(cfg.alpha)}"


# -- the paper's setting ----------------------------------------------------------------------------------

#: Sec. 3 of the paper: n = 10 tokens, d = 64, 4 layers, 100,000 sequences per setting.
PAPER_N, PAPER_D, PAPER_LAYERS, PAPER_SAMPLES = 10, 64, 4, 100_000


def leak(alpha: float, d: float) -> float:
    """The layer-1 leak t = e^{-(1 - alpha) sqrt(d)}: the attention weight of another token relative to
    the token itself in the large-d limit (Eqs. (25)-(26)); every effect of the proofs scales with it."""
    a = check_real("alpha", alpha, lo=0.0, hi=1.0, allowed="a real number in [0, 1]")
    d = check_real("d", d, lo=1.0, allowed="a real number >= 1")
    return math.exp(-(1.0 - a) * math.sqrt(d))
