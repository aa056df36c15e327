"""The heatmap convention of every figure of mean scores (the book's, its explorer's and
:meth:`SimResult.plot`'s): seaborn's "rocket" colour map as 256 colours (:data:`HEATMAP_HEX`), the
upper triangle blank, the diagonal hatched and out of the colour scale (:data:`DIAGONAL`: after a
normalization S_ii = sqrt(d), far above its row). matplotlib is imported only to draw.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from .files import atomic_write, check_output_path
from .validation import brief

HEATMAP_HEX = (  # 256 colours, 15 to a line
    "03051a04051a05061b06071c07071d08081e0a091f0b09200d0a210e0b22100b23110c24130d25140e26160e27"
    "170f28180f291a102a1b112b1d112c1e122d20122e2113302213312414322514332715342815352a16362b1637"
    "2d17382e173930173a31183b33183c34193d35193e37193f381a403a1a413c1a423d1a423f1b43401b44421b45"
    "431c46451c47461c48481c48491d494b1d4a4c1d4b4e1d4b501d4c511e4d531e4d541e4e561e4f581e4f591e50"
    "5b1e515c1e515e1f52601f52611f53631f53641f54661f54681f55691f556b1f566d1f566e1f57701f57711f57"
    "731f58751f58761f58781f597a1f597b1f597d1f5a7f1e5a811e5a821e5a841e5a861e5b871e5b891e5b8b1d5b"
    "8c1d5b8e1d5b901d5b921c5b931c5b951c5b971c5b981b5b9a1b5b9c1b5b9e1a5b9f1a5ba11a5ba3195ba4195b"
    "a6195aa8185aaa185aab185aad1759af1759b01759b21758b41658b51657b71657b91657ba1656bc1656bd1655"
    "bf1654c11754c21753c41753c51852c71951c81951ca1a50cb1b4fcd1c4ece1d4ecf1e4dd11f4cd2204cd3214b"
    "d5224ad62449d72549d82748d92847db2946dc2b46dd2c45de2e44df2f44e03143e13342e23442e33641e43841"
    "e53940e63b40e73d3fe83f3fe8403ee9423eea443eeb463eeb483eec4a3eec4c3eed4e3eed503eee523fee543f"
    "ef5640ef5840ef5a41f05c42f05e42f06043f16244f16445f16646f26747f26948f26b49f26d4bf26f4cf3714d"
    "f3734ef37450f37651f37852f47a54f47c55f47d57f47f58f4815af4835bf4845df4865ef58860f58a61f58b63"
    "f58d64f58f66f59067f59269f5946bf5966cf5976ef59970f69b71f69c73f69e75f6a077f6a178f6a37af6a47c"
    "f6a67ef6a880f6a981f6ab83f6ad85f6ae87f6b089f6b18bf6b38df6b48ff6b691f6b893f6b995f6bb97f6bc99"
    "f6be9bf6bf9df6c19ff7c2a2f7c4a4f7c6a6f7c7a8f7c9aaf7caacf7ccaff7cdb1f7cfb3f7d0b5f8d1b8f8d3ba"
    "f8d4bcf8d6bef8d7c0f8d9c3f8dac5f8dcc7f9ddc9f9dfcbf9e0cdf9e2d0f9e3d2f9e5d4fae6d6fae8d8fae9da"
    "faebdd"
)
#: How an excluded diagonal cell is drawn: a hatched square without fill.
DIAGONAL = {"hatch": "///", "edgecolor": "0.6", "fill": False, "linewidth": 0.0}
FORMATS = (".png", ".svg", ".pdf")
SIGNATURE = "recency_lib plot"  # in every saved figure's metadata: what a later save may replace


def heatmap_colours() -> np.ndarray:
    """:data:`HEATMAP_HEX` as (256, 3) RGB rows in [0, 1]."""
    return np.frombuffer(bytes.fromhex(HEATMAP_HEX), dtype=np.uint8).reshape(-1, 3) / 255


def heatmap_cmap():
    """The convention's colour map, for matplotlib."""
    from matplotlib.colors import ListedColormap

    return ListedColormap(heatmap_colours(), name="rocket")


def colour_limits(s: np.ndarray, include_diagonal: bool = False) -> tuple[float, float]:
    """The range a heatmap of ``s`` (n, n) spans: its finite entries j < i (j <= i: diagonal)."""
    coloured = s[np.tri(len(s), k=0 if include_diagonal else -1, dtype=bool) & np.isfinite(s)]
    return (float(coloured.min()), float(coloured.max())) if coloured.size else (0.0, 1.0)


def draw_heatmap(ax, s, *, include_diagonal=False, vmin=None, vmax=None, rasterized=False):
    """The mean scores ``s`` (n, n) on ``ax`` by the convention (query i down, key j across), the
    colour scale over :func:`colour_limits` unless ``vmin``/``vmax``. Returns the mesh."""
    import matplotlib.patches as patches

    n = s.shape[0]
    shown = np.tri(n, k=0 if include_diagonal else -1, dtype=bool) & np.isfinite(s)
    lo, hi = colour_limits(s, include_diagonal)
    vmin, vmax = lo if vmin is None else float(vmin), hi if vmax is None else float(vmax)
    edges, masked = np.arange(n + 1), np.ma.masked_array(s, mask=~shown)
    mesh = ax.pcolormesh(edges, edges, masked, cmap=heatmap_cmap(), vmin=vmin, vmax=vmax)
    mesh.set_rasterized(rasterized)
    ax.set_xlim(0, n)
    ax.set_ylim(n, 0)
    ax.set_aspect("equal")
    if not include_diagonal:
        for k in range(n):
            ax.add_patch(patches.Rectangle((k, k), 1, 1, gid="excluded_diagonal", **DIAGONAL))
    return mesh


def plot_result(res, *, include_diagonal: bool = False):
    """A Figure of every layer of ``res`` by the convention, four panels a row, each titled with its
    recency probability."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise ImportError(
            "SimResult.plot() needs matplotlib: pip install 'recency_lib[plot]'"
        ) from None
    from .stats import pm

    cfg = res.config
    cols = min(cfg.layers, 4)
    rows = -(-cfg.layers // cols)
    fig = Figure(figsize=(3.1 * cols, 2.9 * rows + 0.5), layout="constrained")
    fig.suptitle(
        f"norm={cfg.norm}, α={cfg.alpha:g}, γ={cfg.gamma:g}, n={cfg.n}, d={cfg.d}, "
        f"{cfg.samples:,} sequences",
        fontsize=10,
    )
    ticks = sorted({0, cfg.n - 1} | ({(cfg.n - 1) // 2} if cfg.n > 6 else set(range(cfg.n))))
    for layer in range(cfg.layers):
        ax = fig.add_subplot(rows, cols, layer + 1)
        s = np.asarray(res.score_mean[layer], dtype=float)
        mesh = draw_heatmap(ax, s, include_diagonal=include_diagonal, rasterized=cfg.n > 40)
        ax.set_xticks([t + 0.5 for t in ticks], [str(t + 1) for t in ticks], fontsize=8)
        ax.set_yticks([t + 0.5 for t in ticks], [str(t + 1) for t in ticks], fontsize=8)
        ax.set_xlabel("key j", fontsize=9)
        if layer % cols == 0:
            ax.set_ylabel("query i", fontsize=9)
        rp, se = res.recency_probability_cv[layer], res.recency_probability_cv_sem[layer]
        rp_text = f": RP {pm(float(rp), float(se))}" if math.isfinite(rp) else ""
        ax.set_title(f"layer {layer + 1}{rp_text}", fontsize=9)
        fig.colorbar(mesh, ax=ax, shrink=0.85).ax.tick_params(labelsize=7)
    return fig


def is_plot_file(path: Path) -> bool:
    """Whether ``path`` is a figure this library saved (:data:`SIGNATURE` in its first 64 kB)."""
    try:
        with open(path, "rb") as fh:
            return SIGNATURE.encode() in fh.read(65536)
    except OSError:
        return False


def check_plot_path(path, name: str = "plot") -> Path:
    """Before any work: a .png, .svg or .pdf path, new or holding a figure this library saved."""
    if Path(str(path)).suffix.lower() not in FORMATS:
        raise ValueError(
            f"{name}={brief(str(path))} is not allowed; "
            "allowed: a path ending in .png, .svg or .pdf"
        )
    return check_output_path(path, name, ours=is_plot_file, what="a figure this library saved")


def save(fig, path) -> Path:
    """Write ``fig`` to ``path`` atomically (format from the suffix), signed so that a later save
    may replace it; it replaces nothing else."""
    fmt = check_plot_path(path).suffix.lower()[1:]
    signed = {"Software" if fmt == "png" else "Creator": SIGNATURE}
    return atomic_write(
        path, lambda fh: fig.savefig(fh, format=fmt, dpi=150, metadata=signed), True
    )
