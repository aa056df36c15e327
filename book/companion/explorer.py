"""The explorer page (``book/explorer.ipynb``): a grid of settings simulated at build time, drawn
offline by ``assets/explorer.js`` from a JSON payload inlined in ``assets/explorer.html``. Each
number is an integer k at ``dec`` decimals (k / 10**dec) chosen from its SE (:func:`decimals`),
arrays of them packed into base-64 strings (:func:`pack`).
"""

from __future__ import annotations

import html
import itertools
import json
import math
import re
from pathlib import Path
from string import Template

import numpy as np

from recency_lib.config import SimConfig
from recency_lib.norms import NORMS as NORM_REGISTRY
from recency_lib.plot import DIAGONAL, HEATMAP_HEX
from recency_lib.result import SimResult

from .significance import FAMILYWISE_LEVEL, adjacent_pairs, z_for
from .verdicts import DECIDED_ELSEWHERE

FORMAT = "companion.explorer/1"
ALPHAS = tuple(round(0.1 * k, 1) for k in range(10))  # 0, 0.1, ..., 0.9
GAMMAS = (0.0, 1.0)
DS = (16, 64, 256, 1024)
#: Every normalization of recency_lib.norms, the identity first (the paper's first row).
NORMS = tuple(sorted(NORM_REGISTRY, key=lambda m: NORM_REGISTRY[m].scales))
NORM_LABELS = {m: NORM_REGISTRY[m].label if NORM_REGISTRY[m].scales else "none" for m in NORMS}
N_TOKENS = 10
LAYERS = 4
#: Samples per setting: the grid costs at most ~30 s of a cold build on 2 cores
#: (benchmarks/bench_explorer.py).
DEFAULT_SAMPLES = 20_000
MAX_DECIMALS = 9
CELL_DIGITS = 1  # significant digits of a score matrix's smallest off-diagonal SE
#: Layer 2 at α = 0, "{norm}-{γ}": the chapter that decides it with an estimator built for it (the
#: explorer's layer-1 control variates leave it undecided; verdicts.DECIDED_ELSEWHERE).
ELSEWHERE = {
    f"{norm}-{gamma:g}": f"Chapter {chapter} decides it with {estimator} ({claim})."
    for (norm, gamma), (_, chapter, claim, estimator) in DECIDED_ELSEWHERE.items()
}
VERDICT_CODES = {"holds": "h", "violated": "v", "undecided": "u"}
DIRECTION_CODES = {"recency": "r", "primacy": "p", "none": "n"}
DIGITS64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
ASSETS = Path(__file__).with_name("assets")
DEFAULT_START = {"alpha": 0.5, "gamma": 0.0, "d": 64, "norm": "layernorm", "layer": 2}
DEFAULT_PINNED = {"alpha": 0.5, "gamma": 0.0, "d": 64, "norm": "none", "layer": 2}


def grid_configs(samples: int = DEFAULT_SAMPLES, seed: int = 0) -> list[SimConfig]:
    """Every setting of the explorer, alpha slowest and norm fastest, as the page runs them."""
    common = {"n": N_TOKENS, "layers": LAYERS, "samples": samples, "seed": seed}
    grid = itertools.product(ALPHAS, GAMMAS, DS, NORMS)
    return [SimConfig(alpha=a, gamma=g, d=d, norm=m, **common) for a, g, d, m in grid]


def label(x: float) -> str:
    """A grid value as the page and the command line spell it: 0.3 -> "0.3", 1.0 -> "1"."""
    return f"{float(x):g}"


def setting_key(cfg: SimConfig) -> str:
    """A setting's name in the payload, e.g. "a0.3-g1-d256-layernorm" (the page builds the same)."""
    return f"a{label(cfg.alpha)}-g{label(cfg.gamma)}-d{cfg.d}-{cfg.norm}"


# -- numbers ---------------------------------------------------------------------------------------


def decimals(se: float, digits: int = 2) -> int:
    """The decimals that show ``se`` with ``digits`` significant digits (at most MAX_DECIMALS)."""
    se = float(se)
    if not (math.isfinite(se) and se > 0):
        return MAX_DECIMALS
    return int(min(MAX_DECIMALS, max(0, digits - 1 - math.floor(math.log10(se)))))


def scaled(values, dec: int) -> list[int]:
    """``values`` as integers in units of 10**-dec."""
    return [int(v) for v in np.rint(np.asarray(values, dtype=float) * 10.0**dec)]


def _smallest_se(se: np.ndarray) -> float:
    """The smallest positive finite SE (NaN when there is none)."""
    pos = se[np.isfinite(se) & (se > 0)]
    return float(pos.min()) if pos.size else float("nan")


def pack(ints) -> str:
    """Integers 0 <= k < 64**9 as a width digit w, then each as w digits of :data:`DIGITS64`."""
    ints = [int(k) for k in ints]
    width = 1
    while max(ints, default=0) >= 64**width:
        width += 1
    digits = (DIGITS64[(k // 64**p) % 64] for k in ints for p in range(width - 1, -1, -1))
    return str(width) + "".join(digits)


def pack_offset(values, dec: int) -> tuple[int, str]:
    """``values`` at ``dec`` decimals as (offset, packed integers above the offset)."""
    ints = scaled(values, dec)
    offset = min(ints, default=0)
    return offset, pack(k - offset for k in ints)


# -- the payload -----------------------------------------------------------------------------------


def setting_data(res: SimResult, reasons: list[str]) -> dict:
    """One setting: per layer the mean scores below the diagonal and on it, the SEs of j <= i, the
    RP ± SE, the Definition-1 word (its reason an index into ``reasons``, which grows) and the
    direction; the simulated h(j) / h(1) ± SE and the corrected closed form."""
    from recency_lib.theory import h_corrected

    from .statistics import simulated_h

    cfg = res.config
    below, lower = np.tril_indices(cfg.n, -1), np.tril_indices(cfg.n)
    layers = []
    for l in range(cfg.layers):
        mean, se = res.score_mean[l], res.score_sem[l]  # (n, n)
        dec = decimals(_smallest_se(se[below]), CELL_DIGITS)
        o_s, s = pack_offset(mean[below], dec)
        o_d, diag = pack_offset(np.diag(mean), dec)
        rp, rp_se, rp_how = res.rp(l + 1)
        rp_dec = decimals(rp_se)
        decision = res.decision(l + 1)
        if decision.reason not in reasons:
            reasons.append(decision.reason)
        layers.append(
            {
                "dec": dec,
                "oS": o_s,
                "S": s,
                "oD": o_d,
                "D": diag,
                "E": pack(scaled(se[lower], dec)),
                "rp": [*scaled([rp, rp_se], rp_dec), rp_dec],
                "rpe": rp_how,
                "v": VERDICT_CODES[decision.word],
                "why": reasons.index(decision.reason),
                "dir": DIRECTION_CODES[res.direction(l + 1)],
            }
        )
    h, h_se = simulated_h(res, state=1)
    h_dec = decimals(_smallest_se(h_se[1:]))
    closed = None
    if NORM_REGISTRY[cfg.norm].closed_form:
        hc = np.asarray(h_corrected(np.arange(1, cfg.n + 1), cfg.alpha, cfg.gamma, cfg.d, cfg.norm))
        closed = pack(scaled(hc / hc[0], h_dec))
    h_data = {"dec": h_dec, "m": pack(scaled(h, h_dec)), "e": pack(scaled(h_se, h_dec))}
    return {"layers": layers, "h": h_data | {"c": closed}}


def diagonal_style() -> dict:
    """recency_lib.plot.DIAGONAL for the page's SVG: the hatch's angle in degrees and its colour."""
    from matplotlib.colors import to_hex

    angle = {"/": 45, "\\": -45, "|": 0, "-": 90, "x": 45, "+": 0}.get(DIAGONAL["hatch"][:1], 45)
    return {"angle": angle, "colour": to_hex(DIAGONAL["edgecolor"])}


def rerun_samples(samples: int) -> int:
    """Samples suggested for a rerun of one setting: ten times the page's, at least 100,000."""
    return max(100_000, 10 * samples)


def command_templates(samples: int, seed: int = 0, *, n: int = N_TOKENS, layers: int = LAYERS):
    """Shell commands for one setting, fields {alpha} {gamma} {norm} {d} {slug}: ``cli`` and
    ``papermill`` (book/setting_template.ipynb) at :func:`rerun_samples`, ``same`` the page's."""
    more = rerun_samples(samples)
    flags = (
        f"--alpha {{alpha}} --gamma {{gamma}} --norm {{norm}} --n {n} --d {{d}} --layers {layers}"
    )
    simulate = f".venv/bin/python -m recency_lib simulate {flags}"
    cli = f"{simulate} --samples {more} --seed {seed} --workers 2 --out {{slug}}-s{more}.json"
    papermill = (
        "mkdir -p out && .venv/bin/papermill book/setting_template.ipynb out/{slug}.ipynb "
        "-p alpha {alpha} -p gamma {gamma} -p norm {norm} "
        f"-p n {n} -p d {{d}} -p layers {layers} -p samples {more} -p seed {seed} "
        "-p result_path {slug}.json --cwd out -k python3"
    )
    same = f"{simulate} --samples {samples} --seed {seed}"
    return {"cli": cli, "papermill": papermill, "same": same}


def heatmap_lut() -> list[str]:
    """The heatmaps' colour map (recency_lib.plot.HEATMAP_HEX) as 256 hex colours, dark to light."""
    hexes = "".join(HEATMAP_HEX)
    return ["#" + hexes[k : k + 6] for k in range(0, len(hexes), 6)]


def explorer_data(results) -> dict:
    """The page's payload from one grid's results (any order): ``meta`` (the grid, the level, the
    colours, the commands, ...) and ``settings`` (:func:`setting_key` -> :func:`setting_data`)."""
    results = list(results)
    first = results[0]
    shape = {k: getattr(first.config, k) for k in ("n", "layers", "samples", "seed")}
    axes = {
        f"{k}s": sorted({getattr(r.config, k) for r in results}) for k in ("alpha", "gamma", "d")
    }
    axes["norms"] = [m for m in NORMS if m in {r.config.norm for r in results}]  # registry order
    steps = adjacent_pairs(shape["n"])
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
        "level": FAMILYWISE_LEVEL,
        "z_fw": round(z_for(steps), 2),
        "direction_z": round(z_for(1), 2),
        "verdicts": {v: k for k, v in VERDICT_CODES.items()},
        "directions": {v: k for k, v in DIRECTION_CODES.items()},
        "lut": heatmap_lut(),
        "diagonal": diagonal_style(),
        "commands": command_templates(**shape),
        "rerun_samples": rerun_samples(shape["samples"]),
        "rp_se_median": float(f"{np.median(rp_se):.2g}"),
        "rp_se_max": float(f"{np.max(rp_se):.2g}"),
        "cpu_seconds": round(float(sum(r.elapsed_seconds for r in results)), 1),
        "engine": first.engine,
        "kernel": first.extra.get("kernel"),
        "library_version": first.library_version,
        "elsewhere": ELSEWHERE,
    }

    def position(res):  # on the grid: alpha slowest, norm fastest
        c = res.config
        return [axes[f"{k}s"].index(getattr(c, k)) for k in ("alpha", "gamma", "d", "norm")]

    reasons: list[str] = []
    settings = {
        setting_key(r.config): setting_data(r, reasons) for r in sorted(results, key=position)
    }
    return {"meta": meta | {"reasons": reasons}, "settings": settings}


# -- the page --------------------------------------------------------------------------------------


def json_for_script(data: dict) -> str:
    """Compact JSON safe inside ``<script>``: every "<" (only in strings) written as \\u003c."""
    return json.dumps(data, separators=(",", ":"), allow_nan=False).replace("<", "\\u003c")


def asset(name: str) -> str:
    """The text of a file of ``companion/assets/``."""
    return (ASSETS / name).read_text(encoding="utf8")


def _radios(name: str, legend: str, options: list[tuple[str, str]], checked: str) -> str:
    items = "".join(
        f'<label class="rx-radio"><input type="radio" name="{name}" value="{html.escape(v)}"'
        f"{' checked' if v == checked else ''}> {html.escape(text)}</label>"
        for v, text in options
    )
    return (
        f'<fieldset class="rx-field"><legend>{legend}</legend>'
        f'<div class="rx-radios">{items}</div></fieldset>'
    )


def controls_html(meta: dict, start: dict) -> str:
    """The form: alpha slider, gamma and norm radios, d select, layer radios, set to ``start``."""
    ia = meta["alphas"].index(start["alpha"])
    shown = meta["alpha_labels"][ia]
    alpha = (
        '<div class="rx-field"><label for="rx-alpha">anisotropy α = '
        f'<output id="rx-alpha-out" for="rx-alpha">{shown}</output></label>'
        f'<input type="range" id="rx-alpha" name="alpha" min="0" max="{len(meta["alphas"]) - 1}" '
        f'step="1" value="{ia}" aria-valuetext="α = {shown}"></div>'
    )
    gammas = [(lab, lab) for lab in meta["gamma_labels"]]
    gamma = _radios("rx-gamma", "residual γ", gammas, label(start["gamma"]))
    opts = "".join(
        f'<option value="{d}"{" selected" if d == start["d"] else ""}>{d}</option>'
        for d in meta["ds"]
    )
    d = (
        '<div class="rx-field"><label for="rx-d">hidden size d</label>'
        f'<select id="rx-d" name="d">{opts}</select></div>'
    )
    norms = list(zip(meta["norms"], meta["norm_labels"]))
    norm = _radios("rx-norm", "normalization", norms, start["norm"])
    layers = [(str(l), str(l)) for l in range(1, meta["layers"] + 1)]
    layer = _radios("rx-layer", "layer", layers, str(start["layer"]))
    form = f"{alpha}{gamma}{d}{norm}{layer}"
    return f'<form class="rx-controls" id="rx-controls" aria-label="setting">{form}</form>'


def _start(meta: dict, want: dict) -> dict:
    """``want`` where it is on the grid, else the grid's first value of that axis (layer 1)."""
    out = {
        k: want[k] if want[k] in meta[f"{k}s"] else meta[f"{k}s"][0]
        for k in ("alpha", "gamma", "d", "norm")
    }
    out["layer"] = want["layer"] if 1 <= want["layer"] <= meta["layers"] else 1
    return out


def page_html(data: dict, *, start: dict | None = None, pinned: dict | None = None) -> str:
    """The explorer's HTML (assets/explorer.html): controls at ``start``, comparing ``pinned``."""
    meta = data["meta"]
    a = _start(meta, start or DEFAULT_START)
    b = _start(meta, pinned or DEFAULT_PINNED)
    init = json.dumps({"start": a, "pinned": b}, separators=(",", ":"))
    return Template(asset("explorer.html").removesuffix("\n")).substitute(
        init=html.escape(init, quote=True),
        style=asset("explorer.css"),
        controls=controls_html(meta, a),
        data=json_for_script(data),
        script=asset("explorer.js"),
    )


def page_weight(page: str) -> dict:
    """Bytes (UTF-8) of the explorer's HTML: total, data block, script and stylesheet."""
    block = re.search(
        r'<script type="application/json" id="rx-explorer-data">(.*?)</script>', page, re.S
    )
    parts = {
        "total": page,
        "data": block.group(1) if block else "",
        "script": asset("explorer.js"),
        "style": asset("explorer.css"),
    }
    return {k: len(text.encode("utf8")) for k, text in parts.items()}
