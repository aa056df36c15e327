"""Chapter 8, "Beyond the paper": the settings it simulates and what it concludes from them.

Two studies on the dense engine, with the parts of a decoder layer that the paper leaves out
(:mod:`recency_lib.extensions`), all weights random at initialisation scale:

* the component study (:func:`component_configs`): the paper's LayerNorm model without residual
  with one component added at a time, and all of them together (the layout of common decoders:
  pre-RMSNorm, RoPE, several heads, FFN, residual, fixed projections), at alpha = 0 and 0.5;
* the length sweep (:func:`length_configs`): four models at growing sequence length n.

Every finding is decided here, at the book's family-wise level (conventions.FAMILYWISE_LEVEL, each
function names its family), and every table is built here (cells formatted with :mod:`report`);
the chapter writes the sentences around the glued words and numbers. The engines report plain
sample means in the control-variate fields where layer 1 is not exchangeable (RoPE,
:func:`recency_lib.features.controls_valid`; tests/lib/test_cv_extensions.py checks the others).
"""
from __future__ import annotations

import os

import numpy as np

from . import claims, report
from . import conventions as cv
from recency_lib.cache import cached_simulate_many
from recency_lib.config import SimConfig
from recency_lib.features import controls_valid
from recency_lib.metrics import binned_row, late_minus_early
from recency_lib.result import SimResult
from recency_lib.validation import check_int, short
from recency_lib.workers import worker_pool

#: The anisotropy levels of the study: isotropic tokens, and the paper's showcase (Figure 1, rows 3-4).
STUDY_ALPHAS = (0.0, 0.5)
#: The components in the chapter's order, and the name of each in figures and tables (the words of
#: conventions.variant_name where it has one); "{heads}" is filled in by :func:`component_label`.
COMPONENT_LABELS = {
    "paper": "none (the paper's model)", "rms": "RMSNorm", "fixed": "fixed weights", "random": "random weights",
    "heads": "{heads} heads", "ffn": "FFN", "rope": "RoPE", "post": "post-LN", "residual": "residual",
    "combined": "all parts together",
}
#: The models of the length sweep.
LENGTH_MODELS = ("paper", "residual", "combined", "combined0")
#: Bins of relative key position in the binned row profiles of the length sweep.
PROFILE_BINS = 16


# -- the settings -------------------------------------------------------------------------------

def combined_fields(heads: int) -> dict:
    """The layout of common decoders: pre-RMSNorm, RoPE, ``heads`` heads, FFN, residual, fixed weights."""
    return dict(norm="rms", rope=True, heads=heads, ffn=True, gamma=1.0, weights="fixed")


def component_fields(heads: int) -> dict[str, dict]:
    """Each component: the SimConfig fields it changes in the paper's LayerNorm model without residual."""
    return {"paper": {}, "rms": {"norm": "rms"}, "fixed": {"weights": "fixed"}, "random": {"weights": "per_sample"},
            "heads": {"heads": heads}, "ffn": {"ffn": True}, "rope": {"rope": True}, "post": {"placement": "post"},
            "residual": {"gamma": 1.0}, "combined": combined_fields(heads)}


def component_label(key: str, cfg: SimConfig) -> str:
    """The name of a component in figures and tables ("RoPE", "4 heads", "all parts together", ...)."""
    if key not in COMPONENT_LABELS:
        raise ValueError(f"key={short(key)} is not allowed; allowed: one of {sorted(COMPONENT_LABELS)}")
    if key == "heads" and cfg.heads == 1:
        return "1 head"
    return COMPONENT_LABELS[key].format(heads=cfg.heads)


def component_configs(samples: int, seed: int = 0, *, n: int = cv.PAPER_N, d: int = cv.PAPER_D,
                      layers: int = cv.PAPER_LAYERS, heads: int = 4, weights_seed: int = 0,
                      random_divisor: int = 10, alphas=STUDY_ALPHAS) -> dict[tuple[str, float], SimConfig]:
    """(component, alpha) -> SimConfig of the component study, in the chapter's order.

    Drawing four d x d matrices per layer for every sequence dominates the cost of "random
    weights": that setting runs ``samples // random_divisor`` sequences (its errors are larger)."""
    samples = check_int("samples", samples, 2)
    random_divisor = check_int("random_divisor", random_divisor, 1)
    check_int("n", n, 3)                                # the recency probability needs three tokens
    out = {}
    for key, fields in component_fields(heads).items():
        count = max(2, samples // random_divisor) if key == "random" else samples
        for a in alphas:
            out[(key, float(a))] = SimConfig(**{**dict(alpha=a, norm="layernorm", n=n, d=d, layers=layers,
                                                       samples=count, seed=seed, weights_seed=weights_seed), **fields})
    return out


def check_lengths(lengths, name: str = "long_lengths") -> tuple[int, ...]:
    """The sequence lengths of a sweep: a non-empty list of integers >= 3, returned sorted and
    without repeats; ValueError naming ``name`` otherwise."""
    if isinstance(lengths, (str, bytes)) or not hasattr(lengths, "__iter__"):
        raise ValueError(f"{name}={short(lengths)} is not allowed; allowed: a list of integers >= 3")
    values = sorted({check_int(f"{name}[{k}]", v, 3) for k, v in enumerate(lengths)})
    if not values:
        raise ValueError(f"{name}=[] is empty; allowed: a list of integers >= 3")
    return tuple(values)


def length_configs(lengths, samples: int, seed: int = 0, *, d: int = cv.PAPER_D, layers: int = cv.PAPER_LAYERS,
                   heads: int = 4, weights_seed: int = 0) -> dict[tuple[str, int], SimConfig]:
    """(model, n) -> SimConfig of the length sweep: the paper's LayerNorm model and the same with the
    residual (alpha = 0.5, the exact Gram engine), and the common decoder layout at alpha = 0.5 and 0
    (dense engine)."""
    lengths = check_lengths(lengths)
    samples = check_int("samples", samples, 2)
    models = {"paper": dict(alpha=0.5), "residual": dict(alpha=0.5, gamma=1.0),
              "combined": dict(alpha=0.5, **combined_fields(heads)), "combined0": dict(alpha=0.0, **combined_fields(heads))}
    return {(m, L): SimConfig(**{**dict(norm="layernorm", n=L, d=d, layers=layers, samples=samples, seed=seed,
                                        weights_seed=weights_seed), **models[m]})
            for m in LENGTH_MODELS for L in lengths}


def length_label(cfg: SimConfig) -> str:
    """A length-sweep model's name: "LayerNorm, α = 0.5", "LayerNorm + residual, α = 0.5",
    "all parts together, α = 0" (conventions.setting_label for the paper's models)."""
    return f"all parts together, {cv.alpha_label(cfg.alpha)}" if cfg.extended else cv.setting_label(cfg)


def run(configs, workers: int = 1, *, cache=None) -> list[SimResult]:
    """``cached_simulate_many(configs)`` on ``workers`` processes that end with this one
    (:func:`recency_lib.workers.worker_pool`); the numbers do not depend on ``workers``."""
    workers = check_int("workers", workers, 1)
    configs = list(configs)
    if workers == 1:
        return cached_simulate_many(configs, cache=cache)
    with worker_pool(min(workers, os.cpu_count() or 1)) as pool:
        return cached_simulate_many(configs, cache=cache, executor=pool)


def run_studies(configs: dict, long_configs: dict, workers: int = 1, *, cache=None) -> tuple[dict, dict]:
    """Both studies in one :func:`run` (one worker pool: the length sweep's blocks fill the workers
    while the component study's last ones finish): (key -> SimResult of ``configs``, key -> SimResult
    of ``long_configs``)."""
    results = run([*configs.values(), *long_configs.values()], workers, cache=cache)
    return dict(zip(configs, results[:len(configs)])), dict(zip(long_configs, results[len(configs):]))


# -- the component study: findings --------------------------------------------------------------

def cell_count(results: dict) -> int:
    """The number of (setting, layer) cells of ``results``: the family of :func:`directions`."""
    return sum(r.config.layers for r in results.values())


def directions(results: dict) -> dict:
    """key -> the order each layer resolves (claims.direction: "recency", "primacy", "no order
    resolved"), every (setting, layer) cell of ``results`` decided as one family."""
    k = cell_count(results)
    return {key: tuple(claims.direction(r, l, family=k) for l in range(1, r.config.layers + 1))
            for key, r in results.items()}


def definition1_verdicts(results: dict) -> dict:
    """key -> Definition 1 on each layer's mean scores ("holds" / "violated" / "undecided"), every
    matrix of ``results`` in one family (claims.definition1)."""
    k = cell_count(results)
    return {key: tuple(claims.definition1(r, l, family=k) for l in range(1, r.config.layers + 1))
            for key, r in results.items()}


def definition1_holds(def1: dict, alpha: float) -> list[str]:
    """Components whose last layer satisfies Definition 1 at ``alpha`` (verdicts of
    :func:`definition1_verdicts`)."""
    return [key for (key, a), words in def1.items() if a == alpha and words[-1] == "holds"]


def last_layer_orders(dirs: dict, alpha: float, reference: str = "paper") -> dict[str, list[str]]:
    """The components other than ``reference`` whose last layer shows each order at ``alpha``:
    {"recency": [...], "no order resolved": [...], "primacy": [...]} (keys, in the study's order)."""
    out = {"recency": [], "no order resolved": [], "primacy": []}
    for (key, a), words in dirs.items():
        if a == alpha and key != reference:
            out[words[-1]].append(key)
    return out


def created_order(dirs: dict, alpha: float = 0.0, reference: str = "paper") -> list[str]:
    """Components that resolve an order (either way) at ``alpha`` in some layer where the
    ``reference`` component resolves none."""
    ref = dirs[(reference, alpha)]
    return [key for (key, a), words in dirs.items()
            if a == alpha and key != reference
            and any(w != "no order resolved" and r == "no order resolved" for w, r in zip(words, ref))]


def versus_reference(results: dict, alpha: float, reference: str = "paper") -> dict[str, list[str]]:
    """Components whose last-layer recency probability at ``alpha`` is "higher" or "lower" than the
    ``reference``'s, each difference tested against its combined SE, all as one family."""
    ref = results[(reference, alpha)]
    others = [(key, r) for (key, a), r in results.items() if a == alpha and key != reference]
    zc = cv.z_for(max(1, len(others)))
    out = {"higher": [], "lower": []}
    for key, r in others:
        (m, e), (m0, e0) = claims.rp(r, r.config.layers), claims.rp(ref, ref.config.layers)
        z = report.zdiff(m, e, m0, e0)
        if z > zc:
            out["higher"].append(key)
        elif z < -zc:
            out["lower"].append(key)
    return out


def uses_plain(results: dict) -> list[str]:
    """Components whose step estimates are plain sample means: no control variates, because their
    first layer is not exchangeable (features.controls_valid: RoPE)."""
    return list(dict.fromkeys(key for (key, _), r in results.items() if not controls_valid(r.config)))


#: How a sentence names a component where its table label would read oddly.
SENTENCE_LABELS = {"paper": "the paper's model", "combined": "all parts together"}


def names(keys, results: dict) -> str:
    """"RMSNorm, FFN and RoPE" (or "none"): component keys as a list for a sentence; a key may also
    be a (component, alpha) pair, named "RoPE at α = 0"."""
    cfg = {key: r.config for (key, _), r in results.items()}

    def name(k):
        key, a = k if isinstance(k, tuple) else (k, None)
        text = SENTENCE_LABELS.get(key) or component_label(key, cfg[key])
        return text if a is None else f"{text} at {cv.alpha_label(a)}"

    return report.listing(keys, fmt=name)


def layer_orders(words) -> str:
    """A setting's orders over its layers, for a table cell or a sentence: "recency in layers 2–4",
    "recency in layer 2; primacy in layers 3, 4", "no resolved order"."""
    groups: dict[str, list[int]] = {}
    for l, w in enumerate(words, start=1):
        if w != "no order resolved":
            groups.setdefault(w, []).append(l)
    if not groups:
        return "no resolved order"
    return "; ".join(f"{w} in layer{'s' if len(ls) > 1 else ''} {_layer_span(ls)}" for w, ls in groups.items())


def _layer_span(layers: list[int]) -> str:
    if len(layers) > 2 and layers == list(range(layers[0], layers[-1] + 1)):
        return f"{layers[0]}–{layers[-1]}"
    return ", ".join(str(l) for l in layers)


def rp_matrix(results: dict, alpha: float) -> tuple[list[str], np.ndarray, np.ndarray]:
    """(labels, RP (components, layers), SE) of every component at ``alpha``, for the dot plot."""
    keys = [(key, r) for (key, a), r in results.items() if a == alpha]
    labels = [component_label(key, r.config) for key, r in keys]
    return (labels, np.array([r.recency_probability for _, r in keys]),
            np.array([r.recency_probability_sem for _, r in keys]))


def summary_rows(results: dict, dirs: dict, def1: dict, alphas=STUDY_ALPHAS) -> list[dict]:
    """One row per component: its orders by layer at each alpha, the last layer's recency
    probability and Definition 1 at the largest alpha."""
    top = max(alphas)
    rows = []
    for key in dict.fromkeys(k for k, _ in results):
        r = results[(key, top)]
        L = r.config.layers
        row = {"component added": component_label(key, r.config)}
        for a in alphas:
            row[f"order, {cv.alpha_label(a)}"] = layer_orders(dirs[(key, a)])
        row[f"RP of {report.score_label(L)}, {cv.alpha_label(top)}"] = report.pm(*claims.rp(r, L))
        row[f"Definition 1, {report.score_label(L)}, {cv.alpha_label(top)}"] = def1[(key, top)][-1]
        rows.append(row)
    return rows


def full_rows(results: dict, dirs: dict, def1: dict) -> list[dict]:
    """Every (component, alpha, layer): the model's name, RP ± SE, order and Definition 1."""
    rows = []
    for (key, a), r in results.items():
        for l in range(1, r.config.layers + 1):
            rows.append({"component added": component_label(key, r.config), "model": cv.variant_name(r.config),
                         "α": f"{a:g}", "layer": str(l), "RP": report.pm(*claims.rp(r, l)),
                         "order": dirs[(key, a)][l - 1], "Definition 1": def1[(key, a)][l - 1]})
    return rows


def full_columns(results: dict) -> dict[str, list]:
    """The numbers of the component study as download columns (report.download)."""
    cols = {k: [] for k in ("component", "model", "alpha", "samples", "layer", "recency_probability", "se")}
    for (key, a), r in results.items():
        for l in range(1, r.config.layers + 1):
            m, e = claims.rp(r, l)
            for k, v in zip(cols, (component_label(key, r.config), cv.variant_name(r.config), a, r.config.samples,
                                   l, m, e)):
                cols[k].append(v)
    return cols


# -- relativity ----------------------------------------------------------------------------------

def relativity_verdicts(results: dict, keys=("paper", "rope", "combined")) -> dict:
    """(component, alpha) -> claims.subdiagonal_claim of the given components: "holds" where some
    sub-diagonal of some layer >= 2 is resolved as not constant, "open" where none is."""
    return {(key, a): claims.subdiagonal_claim(r) for (key, a), r in results.items() if key in keys}


def relativity_rows(results: dict, keys=("paper", "rope", "combined")) -> list[dict]:
    """:func:`relativity_verdicts` as table rows: the verdict, the largest spread of a sub-diagonal
    (± SE) and how many sub-diagonals are resolved as not constant."""
    rows = []
    for (key, a), v in relativity_verdicts(results, keys).items():
        rows.append({"component added": component_label(key, results[(key, a)].config), "α": f"{a:g}",
                     "not relative?": v.word, "largest spread": v.value,
                     "sub-diagonals not constant": f"{v.numbers.get('resolved', 0)} of "
                                                   f"{len(v.numbers.get('spreads', {}))}"})
    return rows


# -- the length sweep ---------------------------------------------------------------------------

def by_length(long_results: dict, model: str) -> dict[int, SimResult]:
    """n -> result of one model of the length sweep, shortest first."""
    return dict(sorted((L, r) for (m, L), r in long_results.items() if m == model))


def rp_by_length(runs: dict[int, SimResult]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(lengths, RP (lengths, layers), SE) of one model."""
    lengths = np.array(list(runs), dtype=float)
    return (lengths, np.array([r.recency_probability for r in runs.values()]),
            np.array([r.recency_probability_sem for r in runs.values()]))


def last_query_profiles(runs: dict[int, SimResult], layer: int | None = None, bins: int = PROFILE_BINS) -> dict:
    """n -> (relative key position, binned mean score of the last query minus its row mean, bound on
    the SE) at 1-based ``layer`` (default: the last), for rows of different lengths on one axis
    (metrics.binned_row)."""
    out = {}
    for n, r in runs.items():
        l = r.config.layers if layer is None else check_int("layer", layer, 1, r.config.layers)
        x, m, b = binned_row(r.score_mean[l - 1], r.score_sem[l - 1], n, bins)
        out[n] = (x, m - m.mean(), b)
    return out


def late_early(r: SimResult, layer: int | None = None) -> tuple[float, float]:
    """Mean score of the last quarter of the last query's keys minus that of the first quarter, and
    a bound on its SE (metrics.late_minus_early), at 1-based ``layer`` (default: the last)."""
    l = r.config.layers if layer is None else layer
    return late_minus_early(r.score_mean[l - 1], r.score_sem[l - 1], r.config.n)


UNCHANGED = "does not change resolvably"


def change(a: float, se_a: float, b: float, se_b: float, zc: float, words=("rises", "falls")) -> str:
    """How b differs from a: ``words[0]`` when b - a exceeds ``zc`` times the combined error
    sqrt(se_a^2 + se_b^2), ``words[1]`` when it falls short of minus that, else :data:`UNCHANGED`."""
    z = report.zdiff(b, se_b, a, se_a)
    return words[0] if z > zc else words[1] if z < -zc else UNCHANGED


def length_findings(long_results: dict) -> dict[str, dict]:
    """Per model of the sweep, from the shortest to the longest n, in the last layer: how the
    recency probability changes ("rises" / "falls" / :data:`UNCHANGED`) and how the late − early
    gap does ("grows" / "shrinks" / ..., against the sum of its SE bounds, which is conservative):
    all 2 x models comparisons as one family."""
    models = list(dict.fromkeys(m for m, _ in long_results))
    zc = cv.z_for(2 * len(models))
    out = {}
    for m in models:
        runs = by_length(long_results, m)
        first, last = runs[min(runs)], runs[max(runs)]
        L = last.config.layers
        (g0, b0), (g1, b1) = late_early(first), late_early(last)
        out[m] = {"rp": change(*claims.rp(first, L), *claims.rp(last, L), zc),
                  # bounds add (|a - b| <= b_a + b_b whatever the correlation): test against their sum
                  "gap": "grows" if g1 - g0 > zc * (b0 + b1) else "shrinks" if g0 - g1 > zc * (b0 + b1)
                  else UNCHANGED}
    return out


def length_rows(long_results: dict) -> list[dict]:
    """One row per model: the last layer's recency probability at the shortest and longest n, its
    order at the longest (all cells of the sweep as one family), how it changed, and the late − early
    gap at the longest n with the bound on its SE."""
    runs = {m: by_length(long_results, m) for m in dict.fromkeys(m for m, _ in long_results)}
    k = sum(r.config.layers for r in long_results.values())
    find = length_findings(long_results)
    rows = []
    for m, rs in runs.items():
        n0, n1 = min(rs), max(rs)
        L = rs[n1].config.layers
        row = {"model": length_label(rs[n1].config)}
        for n in dict.fromkeys((n0, n1)):
            row[f"RP, n = {n}"] = report.pm(*claims.rp(rs[n], L))
        row[f"order, n = {n1}"] = claims.direction(rs[n1], L, family=k)
        row["RP change"] = find[m]["rp"]
        row[f"late − early, n = {n1} (± SE bound)"] = report.pm(*late_early(rs[n1]))
        rows.append(row)
    return rows


def length_columns(long_results: dict) -> dict[str, list]:
    """The numbers of the length sweep as download columns: RP per model, n and layer, and the
    binned last-query profile of the last layer."""
    cols = {k: [] for k in ("model", "n", "layer", "quantity", "x", "mean", "se")}

    def add(*values):
        for k, v in zip(cols, values):
            cols[k].append(v)

    for (m, n), r in long_results.items():
        label = length_label(r.config)
        for l in range(1, r.config.layers + 1):
            add(label, n, l, "recency_probability", "", *claims.rp(r, l))
        for x, mu, b in zip(*last_query_profiles({n: r})[n]):
            add(label, n, r.config.layers, "binned last-query score - row mean (se: bound)", float(x), float(mu), float(b))
    return cols


# -- the page's findings, first ------------------------------------------------------------------

def findings_rows(results: dict, long_results: dict) -> list[dict]:
    """The chapter's answers in one table (its first screen): each part alone and all parts together
    at the largest alpha of the study, what happens on isotropic tokens, whether the combined
    model's bias is relative, and how the last layer's recency probability changes from the shortest
    to the longest n. Every word is decided by the functions above, at the book's family-wise level;
    the last column links to the figure with the evidence."""
    top, iso = max(STUDY_ALPHAS), min(STUDY_ALPHAS)
    dirs = directions(results)
    orders = last_layer_orders(dirs, top)
    parts = sum(len(v) for v in orders.values())
    alone = f"recency in the last layer with {report.count(len(orders['recency']))} of {report.count(parts)} parts"
    if orders["no order resolved"]:
        alone += f"; no resolved order with {names(orders['no order resolved'], results)}"
    if orders["primacy"]:
        alone += f"; primacy with {names(orders['primacy'], results)}"
    comb = results[("combined", top)]
    L = comb.config.layers
    together = f"{layer_orders(dirs[('combined', top)])}; RP of {report.score_label(L)}: {report.pm(*claims.rp(comb, L))}"
    created = created_order(dirs, iso)
    isotropic = (f"the paper's model: {layer_orders(dirs[('paper', iso)])}; an order of their own with "
                 f"{names(created, results)}" if created else "no part resolves an order")
    rel = claims.subdiagonal_claim(comb)
    relative = (f"not relative: {report.count(rel.numbers.get('resolved', 0))} of "
                f"{report.count(len(rel.numbers.get('spreads', {})))} sub-diagonals vary" if rel.word == claims.HOLDS
                else "open: no sub-diagonal resolved as varying")
    found = length_findings(long_results)
    lengths = sorted({n for _, n in long_results})
    if len(lengths) > 1:
        longer = "; ".join(f"{SENTENCE_LABELS[m]}: {found[m]['rp']}" for m in ("paper", "combined") if m in found)
    else:
        longer = "one length only: no change to test"
    a_top, a_iso = cv.alpha_label(top), cv.alpha_label(iso)
    return [
        {"question": f"one part added to the paper's model, {a_top}", "answer": alone,
         "evidence": "{numref}`fig-beyond-components`"},
        {"question": f"all parts together, {a_top}", "answer": together, "evidence": "{numref}`fig-beyond-components`"},
        {"question": f"isotropic tokens, {a_iso}", "answer": isotropic, "evidence": "{numref}`fig-beyond-components`"},
        {"question": f"is the bias of all parts together relative? ({a_top})", "answer": relative,
         "evidence": "{numref}`fig-beyond-offsets`"},
        {"question": f"last layer's RP from n = {lengths[0]} to {lengths[-1]}", "answer": longer,
         "evidence": "{numref}`fig-beyond-lengths`"},
    ]
