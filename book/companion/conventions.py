"""The book's conventions, each defined once: the family-wise level and its z, the figures'
geometry, fonts, line styles and colours, the model variants' names, the paper's setting.
"""

from __future__ import annotations

import math

from recency_lib.config import SimConfig
from recency_lib.norms import NORMS
from recency_lib.placements import PLACEMENTS

from .significance import FAMILYWISE_LEVEL, adjacent_pairs, z_for  # noqa: F401  (quoted here)


def definition1_z(n: int) -> float:
    """The z of a Definition-1 verdict on an n x n matrix (all its adjacent differences at once)."""
    return z_for(max(1, adjacent_pairs(n)))


# -- figure geometry: a figure is drawn at the column's width and shown 1:1 ------------------------

#: A full-column figure in CSS pixels (the text column is 784 px at a 1400 px window), in inches.
COLUMN_PX = 760
COLUMN_IN = COLUMN_PX / 96
FONT_PT = 10.0  # axis labels, legends, tick labels
SMALL_PT = 9.0  # the smallest text in any figure
TITLE_PT = 11.0  # panel titles
RP_LABEL_PT = 11.0  # the recency-probability label of a heatmap panel


def figure_size(height_ratio: float = 0.62, width: float = 1.0) -> tuple[float, float]:
    """(width, height) in inches of a figure ``width`` of the column wide."""
    w = COLUMN_IN * width
    return (w, w * height_ratio)


# -- line styles -----------------------------------------------------------------------------------

AS_PRINTED = {"linestyle": "--", "linewidth": 1.6}  # a closed form as the paper prints it
CORRECTED = {"linestyle": "-", "linewidth": 1.6}  # the book's corrected closed form
SIMULATION = {"fmt": "o", "markersize": 4, "capsize": 2.5, "elinewidth": 1.0}  # points ± 1 SE
REFERENCE = {"linestyle": ":", "color": "0.45", "linewidth": 1.0}  # "no order", a zero difference


# -- colours ---------------------------------------------------------------------------------------

#: The book's anisotropy levels alpha (Eq. (6)), and those of the paper's Figures 2-5.
ALPHAS = (0.0, 0.2, 0.4, 0.5, 0.6, 0.8, 0.95, 1.0)
H_ALPHAS = (0.0, 0.2, 0.4, 0.6, 0.8)


def alpha_colour(alpha: float) -> tuple[float, float, float, float]:
    """The colour of ``alpha`` in every figure: viridis, stopped before its too light yellow end."""
    import matplotlib as mpl

    return tuple(mpl.colormaps["viridis"](0.88 * alpha))


def ink_on(colour) -> str:
    """The colour of text legible on a cell of ``colour`` (RGB in [0, 1]): white on a dark cell,
    near-black on a light one (by relative luminance)."""
    r, g, b = colour[:3]
    return "white" if 0.2126 * r + 0.7152 * g + 0.0722 * b < 0.45 else "0.1"


def alpha_label(alpha: float) -> str:
    """ "α = 0.5", the name of an anisotropy level in every figure and table."""
    return f"α = {alpha:g}"


def ordered_colour(k: int, count: int) -> tuple[float, float, float, float]:
    """The colour of the ``k``-th of ``count`` ordered series (plasma, never an alpha's)."""
    import matplotlib as mpl

    return tuple(mpl.colormaps["plasma"](0.8 * (k / (count - 1) if count > 1 else 0.0)))


# -- names and styles of the model variants --------------------------------------------------------

_EXTENSION_NAMES = {
    "ffn": "FFN",
    "rope": "RoPE",
    "weights=per_sample": "random weights",
    "weights=fixed": "fixed weights",
}


def norm_name(norm: str, placement: str = "pre") -> str:
    """ "LayerNorm", or "LayerNorm post-norm" where the norm sits elsewhere than the paper's."""
    where = "" if placement == "pre" else f" {PLACEMENTS[placement].label}"
    return NORMS[norm].label + where


def variant_name(cfg: SimConfig) -> str:
    """The model variant of ``cfg`` in every chapter: "LayerNorm + residual", "LayerNorm + 0.5 ×
    residual", "LayerNorm + FFN + RoPE", "LayerNorm, 4 heads", "LayerNorm post-norm", ..."""
    name = norm_name(cfg.norm, cfg.placement)
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


#: The marker of each normalization, in the registry's order (a new one gets the next marker).
VARIANT_MARKERS = dict(zip(NORMS, "oDs^v<>pP*"))


def variant_short(cfg: SimConfig) -> str:
    """A short name for heatmap rows and legends: "no norm.", "LayerNorm", "LN + residual"."""
    norm = NORMS[cfg.norm]
    if cfg.gamma == 0.0:
        return norm.label if norm.scales else norm.short
    res = "residual" if cfg.gamma == 1.0 else f"{cfg.gamma:g} × residual"
    return f"{norm.short} + {res}"


def variant_style(cfg: SimConfig) -> dict:
    """A setting's style: its alpha's colour, its normalization's marker, open with the residual."""
    colour = alpha_colour(cfg.alpha)
    return {
        "color": colour,
        "marker": VARIANT_MARKERS[cfg.norm],
        "linestyle": "-",
        "markerfacecolor": colour if cfg.gamma == 0.0 else "white",
    }


def setting_label(cfg: SimConfig) -> str:
    """ "LayerNorm + residual, α = 0.5": the label of one setting."""
    return f"{variant_name(cfg)}, {alpha_label(cfg.alpha)}"


#: The paper's setting (Sec. 3): n = 10 tokens, d = 64, 4 layers, 100,000 sequences.
PAPER_N, PAPER_D, PAPER_LAYERS, PAPER_SAMPLES = 10, 64, 4, 100_000
#: Sequences per setting of the paper's final version (the authors' repository).
FINAL_SAMPLES = 10_000_000


def scaled(factor: float, samples: int) -> int:
    """``factor`` × ``samples`` sequences (a size the book derives from ``samples``: more where an
    effect is small), but at most the paper's final FINAL_SAMPLES, or ``samples`` if that is more:
    the book's multiples stop where the paper's own runs stop."""
    return min(round(factor * samples), max(samples, FINAL_SAMPLES))


def leak(alpha: float, d: float) -> float:
    """The layer-1 leak t = e^{-(1 - alpha) sqrt(d)} (Eqs. (25)-(26)): another token's attention
    weight relative to the token's own at large d; every effect of the proofs scales with it."""
    return math.exp(-(1.0 - alpha) * math.sqrt(d))
