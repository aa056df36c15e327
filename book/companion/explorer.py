"""The explorer page (``book/explorer.ipynb``): a grid of settings simulated at build time, packed
into a compact JSON payload and drawn in the browser by a small script, offline.

Three steps, each a pure function of the one before:

* :func:`grid_configs` -- the settings: alpha x gamma x d x norm (:data:`ALPHAS`, :data:`GAMMAS`,
  :data:`DS`, :data:`NORMS`; 10 x 2 x 4 x 3 = 240 of them), n = 10 tokens, 4 layers, one seed.
  They run on the gram engine through the results cache (:func:`recency_lib.cache.cached_simulate_many`).
* :func:`explorer_data` -- the results as a JSON-ready dict. Every simulated number is stored as a
  scaled integer ``k`` with a number of decimals ``dec`` (value = k / 10**dec) chosen from the
  standard errors (:func:`decimals`): the recency probability and h(j) keep two significant digits
  of their SE (rounding moves them by at most 1/20 of it); the cells of a score matrix share one
  ``dec``, the first significant digit of the matrix's smallest off-diagonal SE (rounding moves a
  cell by at most half its SE). The page prints exactly these digits. Arrays of integers are
  packed as base-64 strings (:func:`pack`; ~300 kB for the default grid instead of ~600 kB of
  JSON numbers), which the page unpacks. Per setting: the mean scores S_ij of every layer with their
  SEs (Fig. 1), the recency probability with its SE and estimator, the Definition-1 decision of
  recency_lib's one rule (:meth:`SimResult.decision`: family-wise over the matrix's adjacent steps at
  5 %, never on a step below float64's resolution) with its reason and its least-resolved step,
  the simulated h(j) (Eq. (40): 1 / ||x_j^(1)||, normalized to h(1) = 1, with its SE) and the
  corrected closed form :func:`recency_lib.theory.h_corrected` normalized the same way.
* :func:`page_html` -- the markup: real form controls, the figures' containers, the data in a
  ``<script type="application/json">`` block, and the stylesheet and script of
  ``companion/assets/`` inlined (nothing is fetched: the page works from disk).

The command that recomputes one setting with more samples is a template with ``{alpha}``,
``{gamma}``, ``{norm}``, ``{d}`` and ``{slug}`` fields (:func:`command_templates`); the page fills it in
for the current setting, :func:`fill_command` does the same in Python.
"""

from __future__ import annotations

import html
import json
import math
import re
from pathlib import Path

import numpy as np

from recency_lib.config import SimConfig
from recency_lib.metrics import LEVEL, familywise_z
from recency_lib.norms import NORMS as NORM_REGISTRY
from recency_lib.plot import DIAGONAL, HEATMAP_HEX
from recency_lib.result import SimResult
from recency_lib.validation import check_choice, check_int, check_real, short

FORMAT = "companion.explorer/1"
ALPHAS = tuple(round(0.1 * k, 1) for k in range(10))  # 0, 0.1, ..., 0.9
GAMMAS = (0.0, 1.0)
DS = (16, 64, 256, 1024)
#: The normalizations of recency_lib.norms, the identity first (the paper's first row)
NORMS = tuple(sorted(NORM_REGISTRY, key=lambda m: NORM_REGISTRY[m].scales))
NORM_LABELS = {m: NORM_REGISTRY[m].label if NORM_REGISTRY[m].scales else "none" for m in NORMS}
N_TOKENS = 10
LAYERS = 4
#: Samples per setting (the page's default): the whole grid must cost at most ~30 s of a cold
#: build on 2 cores; benchmarks/bench_explorer.py measures it (and the SE it buys).
DEFAULT_SAMPLES = 20_000
MAX_DECIMALS = 9
#: Significant digits of the smallest off-diagonal SE of a score matrix (its cells share one
#: number of decimals); the recency probability and h(j) keep two.
CELL_DIGITS = 1
VERDICT_CODES = {"holds": "h", "violated": "v", "undecided": "u"}
DIRECTION_CODES = {"recency": "r", "primacy": "p", "none": "n"}
ASSETS = Path(__file__).with_name("assets")


# -- the grid ------------------------------------------------------------------------------------


def _values(name: str, values, check) -> tuple:
    """A non-empty tuple of distinct values, each passed through ``check``."""
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise ValueError(
            f"{name}={short(values)} is not a list; allowed: a non-empty list of values"
        )
    out = tuple(check(v) for v in values)
    if not out or len(set(out)) != len(out):
        raise ValueError(
            f"{name}={short(values)} is not allowed; allowed: a non-empty list of distinct values"
        )
    return out


def grid_axes(*, alphas=ALPHAS, gammas=GAMMAS, ds=DS, norms=NORMS) -> dict:
    """The validated axes of the grid: alphas in [0, 1], gammas finite, ds integers >= 2, norms."""
    return {
        "alphas": _values(
            "alphas",
            alphas,
            lambda a: check_real("alpha", a, lo=0.0, hi=1.0, allowed="a real number in [0, 1]"),
        ),
        "gammas": _values(
            "gammas", gammas, lambda g: check_real("gamma", g, allowed="a finite real number")
        ),
        "ds": _values("ds", ds, lambda d: check_int("d", d, 2)),
        "norms": _values("norms", norms, lambda m: check_choice("norm", m, NORMS)),
    }


def grid_configs(
    samples: int = DEFAULT_SAMPLES,
    seed: int = 0,
    *,
    n: int = N_TOKENS,
    layers: int = LAYERS,
    alphas=ALPHAS,
    gammas=GAMMAS,
    ds=DS,
    norms=NORMS,
) -> list[SimConfig]:
    """Every setting of the explorer, alpha slowest and norm fastest (the order of ``settings``).

    n >= 3 (the recency probability needs three tokens) and layers >= 2 (h(j) is read off the
    output of layer 1). Raises ValueError naming the bad parameter before anything runs.
    """
    check_int("samples", samples, 2)
    check_int("seed", seed, 0)
    check_int("n", n, 3)
    check_int("layers", layers, 2)
    ax = grid_axes(alphas=alphas, gammas=gammas, ds=ds, norms=norms)
    return [
        SimConfig(alpha=a, gamma=g, norm=m, n=n, d=d, layers=layers, samples=samples, seed=seed)
        for a in ax["alphas"]
        for g in ax["gammas"]
        for d in ax["ds"]
        for m in ax["norms"]
    ]


def label(x: float) -> str:
    """A grid value as the page spells it (and as the command line accepts it): 0.3 -> "0.3", 1.0 -> "1"."""
    return f"{float(x):g}"


def setting_key(cfg: SimConfig) -> str:
    """The name of a setting in the payload, e.g. "a0.3-g1-d256-layernorm" (the page builds the same)."""
    return f"a{label(cfg.alpha)}-g{label(cfg.gamma)}-d{cfg.d}-{cfg.norm}"


# -- numbers -------------------------------------------------------------------------------------


def decimals(se: float, digits: int = 2) -> int:
    """Decimals that show ``se`` with ``digits`` significant digits (0 .. MAX_DECIMALS; the maximum
    for an SE of 0 or NaN). A value rounded to them moves by at most 1/20 of its SE (digits = 2)."""
    se = float(se)
    if not (math.isfinite(se) and se > 0):
        return MAX_DECIMALS
    return int(min(MAX_DECIMALS, max(0, digits - 1 - math.floor(math.log10(se)))))


def scaled(values, dec: int) -> list[int]:
    """``values`` as integers in units of 10**-dec (value = k / 10**dec)."""
    return [int(v) for v in np.rint(np.asarray(values, dtype=float) * 10.0**dec)]


def unscaled(ints, dec: int) -> np.ndarray:
    """Inverse of :func:`scaled` (what the page computes: k / 10**dec)."""
    return np.asarray(ints, dtype=float) / 10.0**dec


def _smallest_se(se: np.ndarray) -> float:
    """The smallest positive finite SE (NaN when there is none)."""
    se = np.asarray(se, dtype=float)
    pos = se[np.isfinite(se) & (se > 0)]
    return float(pos.min()) if pos.size else float("nan")


def lower_triangle(matrix: np.ndarray) -> np.ndarray:
    """The entries j <= i of an (n, n) matrix, row by row (``np.tril_indices`` order)."""
    return np.asarray(matrix)[np.tril_indices(matrix.shape[-1])]


def strict_lower(matrix: np.ndarray) -> np.ndarray:
    """The entries j < i of an (n, n) matrix, row by row: the layout of ``S``."""
    return np.asarray(matrix)[np.tril_indices(matrix.shape[-1], -1)]


# -- packing -------------------------------------------------------------------------------------

DIGITS64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


def pack(ints) -> str:
    """Non-negative integers as one string: a width digit w (1-9), then each integer as w base-64
    digits (:data:`DIGITS64`, most significant first). ~1-3 characters a number instead of JSON's
    3-8; the page unpacks it with the same rule."""
    ints = [int(k) for k in ints]
    if any(k < 0 for k in ints):
        raise ValueError(f"ints={short(ints)} has negative entries; allowed: integers >= 0")
    top = max(ints, default=0)
    width = 1
    while top >= 64**width:
        width += 1
    if width > 9:
        raise ValueError(f"ints has an entry {top} >= 64**9; allowed: integers < 64**9")
    chars = []
    for k in ints:
        chars.append("".join(DIGITS64[(k // 64**p) % 64] for p in range(width - 1, -1, -1)))
    return str(width) + "".join(chars)


def unpack(text: str) -> list[int]:
    """Inverse of :func:`pack`."""
    width, body = int(text[0]), text[1:]
    if width < 1 or len(body) % width:
        raise ValueError(
            f"text={text[:20]!r}... is not a packed array; allowed: the output of pack()"
        )
    out = []
    for start in range(0, len(body), width):
        k = 0
        for ch in body[start : start + width]:
            k = 64 * k + DIGITS64.index(ch)
        out.append(k)
    return out


def pack_offset(values, dec: int) -> tuple[int, str]:
    """``values`` at ``dec`` decimals as (offset, packed integers above the offset)."""
    ints = scaled(values, dec)
    offset = min(ints, default=0)
    return offset, pack(k - offset for k in ints)


def unpack_offset(offset: int, text: str, dec: int) -> np.ndarray:
    """Inverse of :func:`pack_offset`: the rounded values."""
    return unscaled([offset + k for k in unpack(text)], dec)


# -- one setting ---------------------------------------------------------------------------------


def setting_data(res: SimResult, reasons: list[str] | None = None) -> dict:
    """One simulated setting as a compact dict (see the module docstring for the encoding).

    * ``layers``: per layer ``{"dec", "oS", "S", "oD", "D", "E", "rp", "v", "dir", "zmin"}``: the
      mean scores below the diagonal (row by row, j < i) and on it, and the SEs of the lower
      triangle incl. the diagonal (row by row, j <= i), all at ``dec`` decimals, packed
      (:func:`pack_offset`, offsets ``oS``, ``oD``; SEs with offset 0); ``rp`` = [RP, SE, dec]
      (integers at dec) and ``rpe`` its estimator; ``v`` the Definition-1 word (:data:`VERDICT_CODES`)
      and ``why`` its reason (:meth:`SimResult.decision`), an index into ``reasons`` (a list shared by
      the settings, filled here; without it, the text); ``dir`` the direction code of the RP
      (:meth:`SimResult.direction`, :data:`DIRECTION_CODES`).
    * ``h``: ``{"dec", "m", "e", "c"}``: simulated h(j)/h(1), its SE and the corrected closed form
      (None without normalization, where the paper has no closed form), packed at ``dec``.
    """
    from recency_lib.theory import h_corrected

    from .statistics import simulated_h

    cfg = res.config
    layers = []
    for l in range(cfg.layers):
        mean, se = res.score_mean[l], res.score_sem[l]  # (n, n)
        dec = decimals(_smallest_se(strict_lower(se)), CELL_DIGITS)
        o_s, s = pack_offset(strict_lower(mean), dec)
        o_d, diag = pack_offset(np.diag(mean), dec)
        rp, rp_se, rp_how = res.rp(l + 1)
        rp_dec = decimals(rp_se)
        decision = res.decision(l + 1)
        layers.append(
            {
                "dec": dec,
                "oS": o_s,
                "S": s,
                "oD": o_d,
                "D": diag,
                "E": pack(scaled(lower_triangle(se), dec)),
                "rp": [*scaled([rp, rp_se], rp_dec), rp_dec],
                "rpe": rp_how,
                "v": VERDICT_CODES[decision.word],
                "why": decision.reason if reasons is None else _index(reasons, decision.reason),
                "dir": DIRECTION_CODES[res.direction(l + 1)],
            }
        )
    h, h_se = simulated_h(res, state=1)
    h_dec = decimals(_smallest_se(h_se[1:]))
    closed = None
    if NORM_REGISTRY[cfg.norm].closed_form:
        j = np.arange(1, cfg.n + 1)
        hc = np.asarray(h_corrected(j, cfg.alpha, cfg.gamma, cfg.d, cfg.norm), dtype=float)
        closed = pack(scaled(hc / hc[0], h_dec))
    return {
        "layers": layers,
        "h": {
            "dec": h_dec,
            "m": pack(scaled(h, h_dec)),
            "e": pack(scaled(h_se, h_dec)),
            "c": closed,
        },
    }


def diagonal_style() -> dict:
    """recency_lib.plot.DIAGONAL for the page's SVG: the hatch's direction in degrees and its colour."""
    from matplotlib.colors import to_hex

    angle = {"/": 45, "\\": -45, "|": 0, "-": 90, "x": 45, "+": 0}.get(DIAGONAL["hatch"][:1], 45)
    return {"angle": angle, "colour": to_hex(DIAGONAL["edgecolor"])}


def _index(table: list, item) -> int:
    """The position of ``item`` in ``table``, appended if new."""
    if item not in table:
        table.append(item)
    return table.index(item)


# -- commands ------------------------------------------------------------------------------------


def rerun_samples(samples: int) -> int:
    """Samples suggested for a rerun of one setting: ten times the page's, at least 100,000 (the
    paper's); the SE shrinks by sqrt(rerun / samples) >= sqrt(10)."""
    return max(100_000, 10 * check_int("samples", samples, 2))


def command_templates(
    samples: int, seed: int = 0, *, n: int = N_TOKENS, layers: int = LAYERS
) -> dict:
    """Shell commands for one setting, with fields {alpha} {gamma} {norm} {d} {slug}:

    * ``cli``: the simulator's command line with :func:`rerun_samples` samples (result file + summary);
    * ``papermill``: the one-setting notebook ``book/setting_template.ipynb`` with as many samples
      (figures, tables and a result file in ``out/``; README "Rerun with new parameters");
    * ``same``: the command line that reproduces this page's numbers for the setting exactly.
    """
    more = rerun_samples(samples)
    check_int("seed", seed, 0)
    common = f"--n {n} --d {{d}} --layers {layers}"
    cli = (
        ".venv/bin/python -m recency_lib simulate --alpha {alpha} --gamma {gamma} --norm {norm} "
        f"{common} --samples {more} --seed {seed} --workers 2 --out {{slug}}-s{more}.json"
    )
    papermill = (
        "mkdir -p out && .venv/bin/papermill book/setting_template.ipynb out/{slug}.ipynb "
        "-p alpha {alpha} -p gamma {gamma} -p norm {norm} "
        f"-p n {n} -p d {{d}} -p layers {layers} -p samples {more} -p seed {seed} "
        "-p result_path {slug}.json --cwd out -k python3"
    )
    same = (
        ".venv/bin/python -m recency_lib simulate --alpha {alpha} --gamma {gamma} --norm {norm} "
        f"{common} --samples {samples} --seed {seed}"
    )
    return {"cli": cli, "papermill": papermill, "same": same}


_FIELD = re.compile(r"\{(alpha|gamma|norm|d|slug)\}")


def fill_command(template: str, cfg: SimConfig) -> str:
    """A command template with the fields of ``cfg`` filled in (as the page does in the browser)."""
    values = {
        "alpha": label(cfg.alpha),
        "gamma": label(cfg.gamma),
        "norm": cfg.norm,
        "d": str(cfg.d),
        "slug": setting_key(cfg),
    }
    return _FIELD.sub(lambda m: values[m.group(1)], template)


# -- the payload ---------------------------------------------------------------------------------


def heatmap_lut() -> list[str]:
    """The heatmaps' colour map (:data:`recency_lib.plot.HEATMAP_HEX`, the book's) as 256 hex colours,
    dark to light."""
    hexes = "".join(HEATMAP_HEX)
    return ["#" + hexes[k : k + 6] for k in range(0, len(hexes), 6)]


def explorer_data(results) -> dict:
    """The page's payload from the results of :func:`grid_configs` (any order, one seed and size).

    ``meta``: the grid (axes and their labels), n, layers, samples, seed, the thresholds, the
    colour LUT, the command templates, the RP SE range and the CPU time of the simulations;
    ``settings``: :func:`setting_key` -> :func:`setting_data`.
    """
    results = list(results)
    if not results:
        raise ValueError("results=[] is empty; allowed: the SimResults of grid_configs(...)")
    first = results[0].config
    shape = {k: getattr(first, k) for k in ("n", "layers", "samples", "seed")}
    for r in results:
        c = r.config
        if {k: getattr(c, k) for k in shape} != shape or c.extended:
            raise ValueError(
                f"results mix settings: {c} differs from {first} in n, layers, samples, seed "
                f"or extensions; allowed: the results of one grid_configs(...) call"
            )
    keys = [setting_key(r.config) for r in results]
    if len(set(keys)) != len(keys):
        raise ValueError("results contain the same setting twice; allowed: each setting once")
    axes = {
        "alphas": sorted({r.config.alpha for r in results}),
        "gammas": sorted({r.config.gamma for r in results}),
        "ds": sorted({r.config.d for r in results}),
        "norms": [m for m in NORMS if m in {r.config.norm for r in results}],
    }
    expected = len(axes["alphas"]) * len(axes["gammas"]) * len(axes["ds"]) * len(axes["norms"])
    if expected != len(results):
        raise ValueError(
            f"results hold {len(results)} settings, not the full grid of {expected}; "
            f"allowed: every combination of alpha, gamma, d and norm"
        )
    steps = shape["n"] * (shape["n"] - 1) // 2
    z_fw = familywise_z(steps, LEVEL)
    rp_se = np.array([r.recency_probability_sem for r in results])  # (settings, layers)
    meta = {
        "format": FORMAT,
        **shape,
        "alphas": axes["alphas"],
        "alpha_labels": [label(a) for a in axes["alphas"]],
        "gammas": axes["gammas"],
        "gamma_labels": [label(g) for g in axes["gammas"]],
        "ds": axes["ds"],
        "norms": axes["norms"],
        "norm_labels": [NORM_LABELS[m] for m in axes["norms"]],
        "steps": steps,
        "level": LEVEL,
        "z_fw": round(z_fw, 2),
        "direction_z": round(familywise_z(1, LEVEL), 2),
        "verdicts": {v: k for k, v in VERDICT_CODES.items()},
        "directions": {v: k for k, v in DIRECTION_CODES.items()},
        "lut": heatmap_lut(),
        "diagonal": diagonal_style(),
        "commands": command_templates(
            shape["samples"], shape["seed"], n=shape["n"], layers=shape["layers"]
        ),
        "rerun_samples": rerun_samples(shape["samples"]),
        "rp_se_median": float(f"{np.median(rp_se):.2g}"),
        "rp_se_max": float(f"{np.max(rp_se):.2g}"),
        "cpu_seconds": round(float(sum(r.elapsed_seconds for r in results)), 1),
        "engine": results[0].engine,
        "kernel": results[0].extra.get("kernel"),
        "library_version": results[0].library_version,
    }
    reasons: list[str] = []
    settings = {
        k: setting_data(r, reasons)
        for k, r in sorted(zip(keys, results), key=lambda kr: _order(kr[1].config, axes))
    }
    meta["reasons"] = reasons
    return {"meta": meta, "settings": settings}


def _order(cfg: SimConfig, axes: dict) -> tuple:
    return (
        axes["alphas"].index(cfg.alpha),
        axes["gammas"].index(cfg.gamma),
        axes["ds"].index(cfg.d),
        axes["norms"].index(cfg.norm),
    )


def decode_layer(setting: dict, layer: int, n: int, reasons: list[str] | None = None) -> dict:
    """One layer of a setting back as arrays (what the page draws): (n, n) mean and SE with NaN
    above the diagonal, the RP and its SE, the verdict and direction words. For tests and readers."""
    lay = setting["layers"][layer]
    dec = lay["dec"]
    mean, se = np.full((n, n), np.nan), np.full((n, n), np.nan)
    mean[np.tril_indices(n, -1)] = unpack_offset(lay["oS"], lay["S"], dec)
    mean[np.diag_indices(n)] = unpack_offset(lay["oD"], lay["D"], dec)
    se[np.tril_indices(n)] = unpack_offset(0, lay["E"], dec)
    rp, rp_se = unscaled(lay["rp"][:2], lay["rp"][2])
    return {
        "mean": mean,
        "se": se,
        "dec": dec,
        "rp": float(rp),
        "rp_se": float(rp_se),
        "rp_dec": lay["rp"][2],
        "verdict": {v: k for k, v in VERDICT_CODES.items()}[lay["v"]],
        "direction": {v: k for k, v in DIRECTION_CODES.items()}[lay["dir"]],
        "why": lay["why"] if reasons is None else reasons[lay["why"]],
        "rp_estimator": lay["rpe"],
    }


def decode_h(setting: dict) -> dict:
    """The h(j) part of a setting back as arrays: simulated mean and SE, closed form (or None)."""
    h = setting["h"]
    closed = None if h["c"] is None else unpack_offset(0, h["c"], h["dec"])
    return {
        "mean": unpack_offset(0, h["m"], h["dec"]),
        "se": unpack_offset(0, h["e"], h["dec"]),
        "closed": closed,
        "dec": h["dec"],
    }


def fixed(k: int, dec: int) -> str:
    """A scaled integer as the page prints it (JavaScript's (k / 10**dec).toFixed(dec))."""
    return f"{k / 10**dec:.{dec}f}"


# -- the page ------------------------------------------------------------------------------------


def json_for_script(data: dict) -> str:
    """Compact JSON that is safe inside ``<script type="application/json">``: every "<" (which can
    only occur inside a string) is written as the JSON escape \\u003c, so no "</script>" or "<!--"."""
    return json.dumps(data, separators=(",", ":"), allow_nan=False).replace("<", "\\u003c")


def asset(name: str) -> str:
    """The text of a file shipped in ``companion/assets/`` (the page's CSS and script)."""
    check_choice("name", name, ("explorer.css", "explorer.js"))
    return (ASSETS / name).read_text(encoding="utf8")


def _radios(name: str, legend: str, options: list[tuple[str, str]], checked: str) -> str:
    items = "".join(
        f'<label class="rx-radio"><input type="radio" name="{name}" value="{html.escape(v)}"'
        f"{' checked' if v == checked else ''}> {html.escape(text)}</label>"
        for v, text in options
    )
    return f'<fieldset class="rx-field"><legend>{legend}</legend><div class="rx-radios">{items}</div></fieldset>'


def controls_html(meta: dict, start: dict) -> str:
    """The form controls (real inputs with labels): alpha slider, gamma and norm radios, d select,
    layer radios, set to ``start`` (keys alpha, gamma, d, norm, layer)."""
    ia = meta["alphas"].index(start["alpha"])
    alpha = (
        f'<div class="rx-field"><label for="rx-alpha">anisotropy α = <output id="rx-alpha-out" for="rx-alpha">'
        f"{meta['alpha_labels'][ia]}</output></label>"
        f'<input type="range" id="rx-alpha" name="alpha" min="0" max="{len(meta["alphas"]) - 1}" step="1" '
        f'value="{ia}" aria-valuetext="α = {meta["alpha_labels"][ia]}"></div>'
    )
    gamma = _radios(
        "rx-gamma",
        "residual γ",
        [(lab, lab) for lab in meta["gamma_labels"]],
        label(start["gamma"]),
    )
    opts = "".join(
        f'<option value="{d}"{" selected" if d == start["d"] else ""}>{d}</option>'
        for d in meta["ds"]
    )
    d = f'<div class="rx-field"><label for="rx-d">hidden size d</label><select id="rx-d" name="d">{opts}</select></div>'
    norm = _radios(
        "rx-norm", "normalization", list(zip(meta["norms"], meta["norm_labels"])), start["norm"]
    )
    layer = _radios(
        "rx-layer",
        "layer",
        [(str(l), str(l)) for l in range(1, meta["layers"] + 1)],
        str(start["layer"]),
    )
    return f'<form class="rx-controls" id="rx-controls" aria-label="setting">{alpha}{gamma}{d}{norm}{layer}</form>'


DEFAULT_START = {"alpha": 0.5, "gamma": 0.0, "d": 64, "norm": "layernorm", "layer": 2}
DEFAULT_PINNED = {"alpha": 0.5, "gamma": 0.0, "d": 64, "norm": "none", "layer": 2}


def _start(meta: dict, want: dict) -> dict:
    """``want`` where it is on the grid, else the grid's first value of that axis."""
    out = {}
    for key, axis in (("alpha", "alphas"), ("gamma", "gammas"), ("d", "ds"), ("norm", "norms")):
        out[key] = want[key] if want[key] in meta[axis] else meta[axis][0]
    out["layer"] = want["layer"] if 1 <= want["layer"] <= meta["layers"] else 1
    return out


def page_html(data: dict, *, start: dict | None = None, pinned: dict | None = None) -> str:
    """The explorer's HTML: controls, figure containers, the data block, the inlined CSS and script.

    ``start`` / ``pinned``: the settings shown first and in the comparison panel (dicts with
    alpha, gamma, d, norm, layer; default α = 0.5, γ = 0, d = 64, layer 2, LayerNorm vs none).
    """
    meta = data["meta"]
    a = _start(meta, start or DEFAULT_START)
    b = _start(meta, pinned or DEFAULT_PINNED)
    cfg = json.dumps({"start": a, "pinned": b}, separators=(",", ":"))
    return f"""<div class="rx-explorer" id="rx-explorer" data-rx-init='{html.escape(cfg, quote=True)}'>
<style>{asset("explorer.css")}</style>
<noscript><p class="rx-note">The explorer draws its figures with JavaScript, which is off in this browser.
The same numbers come from the command line shown in the README.</p></noscript>
{controls_html(meta, a)}
<p class="rx-note" id="rx-link-note" role="status" hidden></p>
<div class="rx-main">
 <section class="rx-panel rx-heat" aria-labelledby="rx-heat-title">
  <h3 class="rx-h" id="rx-heat-title">Mean attention scores</h3>
  <p class="rx-sub" id="rx-setting-text"></p>
  <svg id="rx-heatmap" class="rx-svg" role="img" aria-labelledby="rx-heat-title rx-setting-text"></svg>
 </section>
 <section class="rx-panel rx-readout" aria-live="polite" aria-labelledby="rx-read-title">
  <h3 class="rx-h" id="rx-read-title">Recency in this layer</h3>
  <p class="rx-rp">recency probability <strong id="rx-rp"></strong></p>
  <p id="rx-direction" class="rx-sub"></p>
  <p class="rx-def1">Definition 1: <strong id="rx-verdict"></strong></p>
  <p id="rx-verdict-detail" class="rx-sub"></p>
 </section>
 <section class="rx-panel rx-h-panel" aria-labelledby="rx-hj-title">
  <h3 class="rx-h" id="rx-hj-title">h(j): the key factor of layer 2</h3>
  <svg id="rx-hchart" class="rx-svg" role="img" aria-labelledby="rx-hj-title rx-h-caption"></svg>
  <p class="rx-sub" id="rx-h-caption"></p>
 </section>
</div>
<div class="rx-second">
 <section class="rx-panel" aria-labelledby="rx-alpha-title">
  <h3 class="rx-h" id="rx-alpha-title">Recency probability against α, all layers</h3>
  <svg id="rx-rpchart" class="rx-svg" role="img" aria-labelledby="rx-alpha-title rx-rpchart-caption"></svg>
  <p class="rx-sub" id="rx-rpchart-caption"></p>
 </section>
 <section class="rx-panel" aria-labelledby="rx-compare-title">
  <h3 class="rx-h" id="rx-compare-title">Side by side</h3>
  <div class="rx-pair">
   <figure class="rx-fig"><svg id="rx-heat-a" class="rx-svg" role="img" aria-labelledby="rx-cap-a"></svg>
    <figcaption id="rx-cap-a"></figcaption></figure>
   <figure class="rx-fig"><svg id="rx-heat-b" class="rx-svg" role="img" aria-labelledby="rx-cap-b"></svg>
    <figcaption id="rx-cap-b"></figcaption></figure>
  </div>
  <p class="rx-sub" id="rx-diff"></p>
  <p class="rx-buttons"><button type="button" id="rx-pin">Keep the current setting as B</button>
   <button type="button" id="rx-swap">Swap A and B</button></p>
 </section>
</div>
<section class="rx-panel rx-commands" aria-labelledby="rx-cmd-title">
 <h3 class="rx-h" id="rx-cmd-title">Recompute this setting</h3>
 <p class="rx-sub" id="rx-cmd-intro"></p>
 <pre class="rx-pre" tabindex="0" aria-label="command line"><code id="rx-cmd-cli"></code></pre>
 <pre class="rx-pre" tabindex="0" aria-label="papermill command"><code id="rx-cmd-papermill"></code></pre>
 <p class="rx-sub">This page's numbers for the setting, exactly:</p>
 <pre class="rx-pre" tabindex="0" aria-label="command that reproduces this page"><code id="rx-cmd-same"></code></pre>
 <p class="rx-sub" id="rx-provenance"></p>
</section>
<details class="rx-panel rx-table-box"><summary>The numbers of the heatmap (mean ± SE)</summary>
 <div class="rx-scroll" tabindex="0" aria-label="table of mean scores"><table class="rx-table" id="rx-table"></table></div>
</details>
<script type="application/json" id="rx-explorer-data">{json_for_script(data)}</script>
<script>{asset("explorer.js")}</script>
</div>"""


def page_weight(page: str) -> dict:
    """Bytes (UTF-8) of the explorer's HTML: total, the data block, the script and the stylesheet."""

    def size(s: str) -> int:
        return len(s.encode("utf8"))

    m = re.search(
        r'<script type="application/json" id="rx-explorer-data">(.*?)</script>', page, re.S
    )
    return {
        "total": size(page),
        "data": size(m.group(1)) if m else 0,
        "script": size(asset("explorer.js")),
        "style": size(asset("explorer.css")),
    }
