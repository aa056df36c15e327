"""Chapter 8, "Beyond the paper": the settings it simulates and what it concludes from them.

Two studies on the dense engine, with the parts of a decoder layer that the paper leaves out
(:mod:`recency_lib.extensions`), all weights random at initialisation scale:

* the component study (:func:`component_configs`): the paper's LayerNorm model without residual
  with one component added at a time, and all of them together (the layout of common decoders:
  pre-RMSNorm, RoPE, several heads, FFN, residual, fixed projections), at alpha = 0 and 0.5;
* the length sweep (:func:`length_configs`): four models at growing sequence length n;
* the across-networks check (:func:`network_configs`, :func:`across_networks`): fixed weights are one
  random network (``weights_seed``), whose errors cover the tokens only, so all parts together is also
  run on further networks and the order is decided across them;
* the relativity check (:func:`relativity_configs`, :func:`relativity_rows`): chapter 7's within-row
  contrasts (statistics.distance_contrasts) with RoPE alone and all parts together, streamed per sequence
  by recency_lib.engines.sequence_statistic (the page runs it; functions here read the results).

Every finding is decided here, at the book's family-wise level (conventions.FAMILYWISE_LEVEL, each
function names its family), and every table is built here (cells formatted with :mod:`report`);
the chapter writes the sentences around the glued words and numbers. The engines report plain
sample means in the control-variate fields where layer 1 is not exchangeable (RoPE,
:func:`recency_lib.features.controls_valid`; tests/lib/test_cv_extensions.py checks the others).
"""

from __future__ import annotations

import os

import numpy as np

from recency_lib.cache import cached_simulate_many
from recency_lib.config import SimConfig
from recency_lib.features import controls_valid
from recency_lib.metrics import binned_row, late_minus_early
from recency_lib.result import SimResult
from recency_lib.validation import check_int, short
from recency_lib.workers import worker_pool

from . import conventions as cv
from . import report, statistics
from .claims import not_relative_claim

#: The anisotropy levels of the study: isotropic tokens, and the paper's showcase (the paper's Figure 1, rows 3-4).
STUDY_ALPHAS = (0.0, 0.5)
#: The components in the chapter's order, and the name of each in figures and tables (the words of
#: conventions.variant_name where it has one); "{heads}" is filled in by :func:`component_label`.
COMPONENT_LABELS = {
    "paper": "none (the paper's model)",
    "rms": "RMSNorm",
    "fixed": "fixed weights (one network)",
    "random": "random weights",
    "heads": "{heads} heads",
    "ffn": "FFN",
    "rope": "RoPE",
    "post": "post-LN",
    "residual": "residual",
    "combined": "all parts together (one network)",
}
#: What "one network" means: the fixed weights are one draw, from ``weights_seed``; the errors of a
#: setting with fixed weights cover the sampling of tokens only, not the choice of network.
ONE_NETWORK = "one random network"
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
    return {
        "paper": {},
        "rms": {"norm": "rms"},
        "fixed": {"weights": "fixed"},
        "random": {"weights": "per_sample"},
        "heads": {"heads": heads},
        "ffn": {"ffn": True},
        "rope": {"rope": True},
        "post": {"placement": "post"},
        "residual": {"gamma": 1.0},
        "combined": combined_fields(heads),
    }


def component_label(key: str, cfg: SimConfig) -> str:
    """The name of a component in figures and tables ("RoPE", "4 heads", "all parts together", ...)."""
    if key not in COMPONENT_LABELS:
        raise ValueError(
            f"key={short(key)} is not allowed; allowed: one of {sorted(COMPONENT_LABELS)}"
        )
    if key == "heads" and cfg.heads == 1:
        return "1 head"
    return COMPONENT_LABELS[key].format(heads=cfg.heads)


def component_configs(
    samples: int,
    seed: int = 0,
    *,
    n: int = cv.PAPER_N,
    d: int = cv.PAPER_D,
    layers: int = cv.PAPER_LAYERS,
    heads: int = 4,
    weights_seed: int = 0,
    random_divisor: int = 10,
    alphas=STUDY_ALPHAS,
) -> dict[tuple[str, float], SimConfig]:
    """(component, alpha) -> SimConfig of the component study, in the chapter's order.

    Drawing four d x d matrices per layer for every sequence dominates the cost of "random
    weights": that setting runs ``samples // random_divisor`` sequences (its errors are larger)."""
    samples = check_int("samples", samples, 2)
    random_divisor = check_int("random_divisor", random_divisor, 1)
    check_int("n", n, 3)  # the recency probability needs three tokens
    out = {}
    for key, fields in component_fields(heads).items():
        count = max(2, samples // random_divisor) if key == "random" else samples
        for a in alphas:
            out[(key, float(a))] = SimConfig(
                **{
                    **dict(
                        alpha=a,
                        norm="layernorm",
                        n=n,
                        d=d,
                        layers=layers,
                        samples=count,
                        seed=seed,
                        weights_seed=weights_seed,
                    ),
                    **fields,
                }
            )
    return out


def check_lengths(lengths, name: str = "long_lengths") -> tuple[int, ...]:
    """The sequence lengths of a sweep: a non-empty list of integers >= 3, returned sorted and
    without repeats; ValueError naming ``name`` otherwise."""
    if isinstance(lengths, (str, bytes)) or not hasattr(lengths, "__iter__"):
        raise ValueError(
            f"{name}={short(lengths)} is not allowed; allowed: a list of integers >= 3"
        )
    values = sorted({check_int(f"{name}[{k}]", v, 3) for k, v in enumerate(lengths)})
    if not values:
        raise ValueError(f"{name}=[] is empty; allowed: a list of integers >= 3")
    return tuple(values)


def length_configs(
    lengths,
    samples: int,
    seed: int = 0,
    *,
    d: int = cv.PAPER_D,
    layers: int = cv.PAPER_LAYERS,
    heads: int = 4,
    weights_seed: int = 0,
) -> dict[tuple[str, int], SimConfig]:
    """(model, n) -> SimConfig of the length sweep: the paper's LayerNorm model and the same with the
    residual (alpha = 0.5, the exact Gram engine), and the common decoder layout at alpha = 0.5 and 0
    (dense engine, one random network).

    The dense models run ``samples`` sequences at every length. The exact models run
    :func:`exact_samples` sequences: the same number of query rows (sequences x n) at every length as at
    the longest, so that their shorter runs resolve what the longest one does (the Gram engine makes
    them cheap: a sequence of length 10 costs about 1/20,000 of one of length 512)."""
    lengths = check_lengths(lengths)
    samples = check_int("samples", samples, 2)
    models = {
        "paper": dict(alpha=0.5),
        "residual": dict(alpha=0.5, gamma=1.0),
        "combined": dict(alpha=0.5, **combined_fields(heads)),
        "combined0": dict(alpha=0.0, **combined_fields(heads)),
    }
    longest = max(lengths)

    def count(m, L):
        return exact_samples(samples, L, longest) if m in EXACT_MODELS else samples

    return {
        (m, L): SimConfig(
            **{
                **dict(
                    norm="layernorm",
                    n=L,
                    d=d,
                    layers=layers,
                    samples=count(m, L),
                    seed=seed,
                    weights_seed=weights_seed,
                ),
                **models[m],
            }
        )
        for m in LENGTH_MODELS
        for L in lengths
    }


#: The models of the length sweep that run on the exact Gram engine (the paper's model, no extension).
EXACT_MODELS = ("paper", "residual")


def exact_samples(samples: int, n: int, longest: int) -> int:
    """Sequences of an exact model at length ``n`` of a sweep whose longest length runs ``samples``: as
    many query rows as there, ``samples * longest // n`` (never fewer than ``samples``)."""
    samples, n = check_int("samples", samples, 2), check_int("n", n, 1)
    longest = check_int("longest", longest, n)
    return max(samples, samples * longest // n)


def length_label(cfg: SimConfig) -> str:
    """A length-sweep model's name: "LayerNorm, α = 0.5", "LayerNorm + residual, α = 0.5",
    "all parts together (one network), α = 0" (conventions.setting_label for the paper's models)."""
    return (
        f"all parts together (one network), {cv.alpha_label(cfg.alpha)}"
        if cfg.extended
        else cv.setting_label(cfg)
    )


def run(configs, workers: int = 1, *, cache=None) -> list[SimResult]:
    """``cached_simulate_many(configs)`` on ``workers`` processes that end with this one
    (:func:`recency_lib.workers.worker_pool`); the numbers do not depend on ``workers``."""
    workers = check_int("workers", workers, 1)
    configs = list(configs)
    if workers == 1:
        return cached_simulate_many(configs, cache=cache)
    with worker_pool(min(workers, os.cpu_count() or 1)) as pool:
        return cached_simulate_many(configs, cache=cache, executor=pool)


# -- the component study: findings --------------------------------------------------------------


def cell_count(results: dict) -> int:
    """The number of (setting, layer) cells of ``results``: the family of :func:`directions`."""
    return sum(r.config.layers for r in results.values())


def directions(results: dict) -> dict:
    """key -> the order each layer resolves (statistics.direction: "recency", "primacy", "no order
    resolved"), every (setting, layer) cell of ``results`` decided as one family."""
    k = cell_count(results)
    return {
        key: tuple(statistics.direction(r, l, family=k) for l in range(1, r.config.layers + 1))
        for key, r in results.items()
    }


def definition1_verdicts(results: dict) -> dict:
    """key -> Definition 1 on each layer's mean scores ("holds" / "violated" / "undecided"), every
    matrix of ``results`` in one family (statistics.definition1)."""
    k = cell_count(results)
    return {
        key: tuple(statistics.definition1(r, l, family=k) for l in range(1, r.config.layers + 1))
        for key, r in results.items()
    }


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
    return [
        key
        for (key, a), words in dirs.items()
        if a == alpha
        and key != reference
        and any(w != "no order resolved" and r == "no order resolved" for w, r in zip(words, ref))
    ]


def versus_reference(results: dict, alpha: float, reference: str = "paper") -> dict[str, list[str]]:
    """Components whose last-layer recency probability at ``alpha`` is "higher" or "lower" than the
    ``reference``'s, each difference tested against its combined SE, all as one family."""
    ref = results[(reference, alpha)]
    others = [(key, r) for (key, a), r in results.items() if a == alpha and key != reference]
    zc = cv.z_for(max(1, len(others)))
    out = {"higher": [], "lower": []}
    for key, r in others:
        (m, e), (m0, e0) = statistics.rp(r, r.config.layers), statistics.rp(ref, ref.config.layers)
        z = report.zdiff(m, e, m0, e0)
        if z > zc:
            out["higher"].append(key)
        elif z < -zc:
            out["lower"].append(key)
    return out


def uses_plain(results: dict) -> list[str]:
    """Components whose step estimates are plain sample means: no control variates, because their
    first layer is not exchangeable (features.controls_valid: RoPE)."""
    return list(
        dict.fromkeys(key for (key, _), r in results.items() if not controls_valid(r.config))
    )


#: How a sentence names a component where its table label would read oddly.
SENTENCE_LABELS = {
    "paper": "the paper's model",
    "combined": "all parts together (one random network)",
    "fixed": "fixed weights (one random network)",
}


def names(keys, results: dict) -> str:
    """ "RMSNorm, FFN and RoPE" (or "none"): component keys as a list for a sentence; a key may also
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
    return "; ".join(
        f"{w} in layer{'s' if len(ls) > 1 else ''} {_layer_span(ls)}" for w, ls in groups.items()
    )


def _layer_span(layers: list[int]) -> str:
    if len(layers) > 2 and layers == list(range(layers[0], layers[-1] + 1)):
        return f"{layers[0]}–{layers[-1]}"
    return ", ".join(str(l) for l in layers)


def rp_matrix(results: dict, alpha: float) -> tuple[list[str], np.ndarray, np.ndarray]:
    """(labels, RP (components, layers), SE) of every component at ``alpha``, for the dot plot."""
    keys = [(key, r) for (key, a), r in results.items() if a == alpha]
    labels = [component_label(key, r.config) for key, r in keys]
    rps = [statistics.rp_layers(r) for _, r in keys]
    return labels, np.array([v for v, _ in rps]), np.array([e for _, e in rps])


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
        row[f"RP of {report.score_label(L)}, {cv.alpha_label(top)}"] = report.pm(
            *statistics.rp(r, L)
        )
        row[f"Definition 1, {report.score_label(L)}, {cv.alpha_label(top)}"] = def1[(key, top)][-1]
        rows.append(row)
    return rows


def full_rows(results: dict, dirs: dict, def1: dict) -> list[dict]:
    """Every (component, alpha, layer): the model's name, RP ± SE, order and Definition 1."""
    rows = []
    for (key, a), r in results.items():
        for l in range(1, r.config.layers + 1):
            rows.append(
                {
                    "component added": component_label(key, r.config),
                    "model": cv.variant_name(r.config),
                    "α": f"{a:g}",
                    "layer": str(l),
                    "RP": report.pm(*statistics.rp(r, l)),
                    "order": dirs[(key, a)][l - 1],
                    "Definition 1": def1[(key, a)][l - 1],
                }
            )
    return rows


def full_columns(results: dict) -> dict[str, list]:
    """The numbers of the component study as download columns (report.download)."""
    return report.columns(
        ("component", "model", "alpha", "samples", "layer", "recency_probability", "se"),
        (
            (
                component_label(key, r.config),
                cv.variant_name(r.config),
                a,
                r.config.samples,
                l,
                *statistics.rp(r, l),
            )
            for (key, a), r in results.items()
            for l in range(1, r.config.layers + 1)
        ),
    )


# -- relativity ----------------------------------------------------------------------------------
#
# Chapter 7's within-row contrasts (statistics.distance_contrasts: D_i, two keys at fixed distances; K_i, two
# keys at fixed positions), streamed per sequence by recency_lib.engines.sequence_statistic on the dense
# engine. Functions here take those results (SequenceStatistic); the page runs them.

#: The components whose bias is tested for relativity here: RoPE (a relative encoding) alone, and all
#: parts together. The paper's model is chapter 7's (claims.not_relative_claim on its canonical run).
RELATIVITY_KEYS = ("rope", "combined")


def relativity_configs(
    configs: dict, samples: int, keys=RELATIVITY_KEYS
) -> dict[tuple[str, float], SimConfig]:
    """(component, alpha) -> the component study's setting of each of ``keys`` with ``samples`` sequences."""
    samples = check_int("samples", samples, 2)
    return {
        (key, a): cfg.replace(samples=samples) for (key, a), cfg in configs.items() if key in keys
    }


def control_mean(cfg: SimConfig):
    """The ``control_mean`` of sequence_statistic for the contrasts of ``cfg``: 0 where layer 1's earlier
    keys are exchangeable (features.controls_valid), None (plain means) where they are not (RoPE)."""
    return 0.0 if controls_valid(cfg) else None


def relativity_verdicts(stats: dict) -> dict:
    """(component, alpha) -> claims.not_relative_claim of each result of ``stats``."""
    return {key: not_relative_claim(st) for key, st in stats.items()}


CHANGES, NO_CHANGE = "changes", "does not change resolvably"
#: What the two last-layer changes of :func:`last_layer_changes` say about where a row's order lives.
READINGS = {
    (NO_CHANGE, CHANGES): "follows the distance i − j, as a relative encoding's would",
    (CHANGES, NO_CHANGE): "follows the keys' positions, not their distance",
    (CHANGES, CHANGES): "follows neither the distance nor the keys' positions alone",
    (NO_CHANGE, NO_CHANGE): "shows no resolved change with the query",
}


def reading(change: dict) -> str:
    """:data:`READINGS` of one entry of :func:`last_layer_changes` (D's word, K's word)."""
    return READINGS[(change["D_word"], change["K_word"])]


def last_layer_changes(stats: dict) -> dict:
    """(component, alpha) -> {"D": (change, SE, z), "K": (change, SE, z), "D_word", "K_word"}: the paired
    changes D_n - D_5 and K_n - K_5 in the last layer, all 2 x len(stats) of them decided as one family
    (:data:`CHANGES` / :data:`NO_CHANGE`); "z_threshold" in every entry."""
    zc = cv.z_for(max(1, 2 * len(stats)))
    out = {}
    for key, st in stats.items():
        prof = statistics.distance_profiles(st)
        L = st.config.layers
        row = {"z_threshold": zc}
        for c in ("D", "K"):
            m, e = (float(x[L - 1]) for x in prof[f"{c}_change"])
            z = report.zscore(m, e)
            row[c] = (m, e, z)
            row[f"{c}_word"] = CHANGES if abs(z) > zc else NO_CHANGE
        out[key] = row
    return out


def _decisive_layer(v) -> int:
    L = len(v.checks) + 1  # checks: layers L .. 2
    return L - list(v.checks).index(v.decisive)


def relativity_rows(stats: dict) -> list[dict]:
    """One row per result: the component, alpha, the verdict of claims.not_relative_claim with its
    decisive number (and layer), and the last layer's paired changes of D and K (± SE, z) of
    :func:`last_layer_changes`."""
    verdicts, changes = relativity_verdicts(stats), last_layer_changes(stats)
    rows = []
    for key, st in stats.items():
        comp, a = key
        v, ch = verdicts[key], changes[key]
        L = st.config.layers
        rows.append(
            {
                "component added": component_label(comp, st.config),
                "α": f"{a:g}",
                "not relative? (decisive $D_n - D_5$)": f"{v.word}: {v.value} (layer {_decisive_layer(v)})",
                f"$D_n - D_5$, layer {L} (z)": f"{report.pm(*ch['D'][:2])} ({report.z_text(ch['D'][2])})",
                f"$K_n - K_5$, layer {L} (z)": f"{report.pm(*ch['K'][:2])} ({report.z_text(ch['K'][2])})",
            }
        )
    return rows


def relativity_columns(stats: dict) -> dict[str, list]:
    """D_i and K_i of every result, layer and query as download columns."""
    rows = []
    for (comp, a), st in stats.items():
        prof = statistics.distance_profiles(st)
        rows += [
            (
                component_label(comp, st.config),
                a,
                st.samples,
                prof["estimator"],
                l,
                c,
                int(q),
                float(mu),
                float(se),
            )
            for l in range(1, st.config.layers + 1)
            for c in ("D", "K")
            for q, mu, se in zip(prof["queries"], prof[c][0][l - 1], prof[c][1][l - 1])
        ]
    return report.columns(
        ("component", "alpha", "samples", "estimator", "layer", "quantity", "query", "mean", "se"),
        rows,
    )


# -- across networks ------------------------------------------------------------------------------


def network_configs(cfg: SimConfig, networks: int, samples: int) -> list[SimConfig]:
    """``cfg`` (fixed weights) on ``networks - 1`` other random networks, weights_seed + 1, + 2, ..., each
    with ``samples`` sequences (the first network is ``cfg``'s own run)."""
    if cfg.weights != "fixed":
        raise ValueError(
            f"cfg.weights={cfg.weights!r} is not allowed; allowed: 'fixed' (one network per weights_seed)"
        )
    networks = check_int("networks", networks, 2)
    samples = check_int("samples", samples, 2)
    return [
        cfg.replace(weights_seed=cfg.weights_seed + k, samples=samples) for k in range(1, networks)
    ]


def across_networks(results, layer: int | None = None) -> dict:
    """The recency probability of one setting on several random networks (``results``: one SimResult per
    weights_seed) at ``layer`` (default: the last): per network its RP, SE and order (statistics.direction, the
    networks as one family), and across networks the mean, the standard deviation, the SE of the mean
    (SD / sqrt(K)) and its Student t against 0.5 with K - 1 degrees of freedom, decided at the book's
    level ("recency" / "primacy" / "no order resolved"); "spread_ratio": the SD over the median SE of
    one network's RP (how much more the network matters than the tokens)."""
    from scipy.special import stdtrit

    results = list(results)
    K = len(results)
    if K < 2:
        raise ValueError(f"{K} result(s) given; allowed: at least 2 networks")
    L = (
        results[0].config.layers
        if layer is None
        else check_int("layer", layer, 1, results[0].config.layers)
    )
    rp = np.array([statistics.rp(r, L)[0] for r in results])
    se = np.array([statistics.rp(r, L)[1] for r in results])
    mean, sd = float(rp.mean()), float(rp.std(ddof=1))
    sem = sd / np.sqrt(K)
    t = report.zscore(mean, sem, 0.5)
    tc = float(stdtrit(K - 1, 1.0 - cv.FAMILYWISE_LEVEL / 2))
    word = "recency" if t > tc else "primacy" if t < -tc else "no order resolved"
    orders = [statistics.direction(r, L, family=K) for r in results]
    return {
        "layer": L,
        "seeds": [r.config.weights_seed for r in results],
        "samples": [r.config.samples for r in results],
        "rp": rp,
        "se": se,
        "orders": orders,
        "mean": mean,
        "sd": sd,
        "sem": float(sem),
        "t": t,
        "t_threshold": tc,
        "word": word,
        "spread_ratio": sd / float(np.median(se)) if np.median(se) > 0 else np.inf,
        "counts": {w: orders.count(w) for w in ("recency", "no order resolved", "primacy")},
    }


def network_text(found: dict) -> str:
    """ "0.531 ± 0.017 over 5 networks (SD 0.037)": the across-networks mean of :func:`across_networks`."""
    return (
        f"{report.pm(found['mean'], found['sem'])} over {report.count(len(found['rp']))} networks "
        f"(SD {report.num(found['sd'], 2)})"
    )


# -- the paper's model on the extensions' engine -------------------------------------------------


def identical_scores(engine_scores, layer_scores) -> bool:
    """Whether scores from an engine, (B, layers, n, n), and the same scores computed layer by layer
    (``layer_scores``: one (B, n, n) array per layer) are the same floats, bit for bit, in the causal
    triangle (the engines leave NaN above the diagonal)."""
    a = np.asarray(engine_scores, dtype=float)
    b = np.stack([np.asarray(s, dtype=float) for s in layer_scores], axis=1)
    if a.shape != b.shape or a.ndim != 4 or a.shape[-1] != a.shape[-2]:
        raise ValueError(
            f"scores have shapes {a.shape} and {b.shape} (stacked by layer); allowed: equal "
            f"shapes (B, layers, n, n)"
        )
    low = np.tri(a.shape[-1], dtype=bool)
    return bool(np.array_equal(a[..., low].view(np.uint64), b[..., low].view(np.uint64)))


# -- the length sweep ---------------------------------------------------------------------------


def by_length(long_results: dict, model: str) -> dict[int, SimResult]:
    """n -> result of one model of the length sweep, shortest first."""
    return dict(sorted((L, r) for (m, L), r in long_results.items() if m == model))


def rp_by_length(runs: dict[int, SimResult]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(lengths, RP (lengths, layers), SE) of one model."""
    lengths = np.array(list(runs), dtype=float)
    rps = [statistics.rp_layers(r) for r in runs.values()]
    return lengths, np.array([v for v, _ in rps]), np.array([e for _, e in rps])


def last_query_profiles(
    runs: dict[int, SimResult], layer: int | None = None, bins: int = PROFILE_BINS
) -> dict:
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


def change(
    a: float, se_a: float, b: float, se_b: float, zc: float, words=("rises", "falls")
) -> str:
    """How b differs from a: ``words[0]`` when b - a exceeds ``zc`` times the combined error
    sqrt(se_a^2 + se_b^2), ``words[1]`` when it falls short of minus that, else :data:`UNCHANGED`."""
    z = report.zdiff(b, se_b, a, se_a)
    return words[0] if z > zc else words[1] if z < -zc else UNCHANGED


def gap_series(runs: dict[int, SimResult]) -> dict[int, tuple[float, float]]:
    """n -> the late − early gap of the last layer and the bound on its SE (:func:`late_early`)."""
    return {n: late_early(r) for n, r in runs.items()}


def length_findings(long_results: dict) -> dict[str, dict]:
    """Per model of the sweep, from the shortest to the longest n, in the last layer: how the
    recency probability changes ("rises" / "falls" / :data:`UNCHANGED`) and how the late − early
    gap does ("grows" / "shrinks" / ..., against the sum of its SE bounds, which is conservative):
    all 2 x models comparisons as one family. Also "gaps" (n -> (gap, SE bound)) and "factor", the
    shortest n's gap over the longest's (None unless both are resolved above 0 at the same level)."""
    models = list(dict.fromkeys(m for m, _ in long_results))
    zc = cv.z_for(2 * len(models))
    out = {}
    for m in models:
        runs = by_length(long_results, m)
        first, last = runs[min(runs)], runs[max(runs)]
        L = last.config.layers
        (g0, b0), (g1, b1) = late_early(first), late_early(last)
        positive = g0 > zc * b0 and g1 > zc * b1
        out[m] = {
            "rp": change(*statistics.rp(first, L), *statistics.rp(last, L), zc),
            # bounds add (|a - b| <= b_a + b_b whatever the correlation): test against their sum
            "gap": "grows"
            if g1 - g0 > zc * (b0 + b1)
            else "shrinks"
            if g0 - g1 > zc * (b0 + b1)
            else UNCHANGED,
            "gaps": gap_series(runs),
            "factor": g0 / g1 if positive else None,
            "rp_values": (statistics.rp(first, L), statistics.rp(last, L)),
        }
    return out


def gap_listing(found: dict) -> str:
    """ "1.03 ± 0.04 at n = 10, ..., and 0.204 ± 0.017 at n = 512": one model's gaps (:func:`length_findings`)."""
    return report.listing(
        [f"{report.pm(g, b)} at n = {report.count(n)}" for n, (g, b) in found["gaps"].items()],
        fmt=str,
    )


def length_rows(long_results: dict) -> list[dict]:
    """One row per model: the last layer's recency probability at the shortest and longest n, its
    order at the longest (all cells of the sweep as one family), how it changed, the late − early gap
    at the shortest and the longest n with the bounds on their SEs, and how the gap changed
    (:func:`length_findings`)."""
    runs = {m: by_length(long_results, m) for m in dict.fromkeys(m for m, _ in long_results)}
    k = sum(r.config.layers for r in long_results.values())
    find = length_findings(long_results)
    rows = []
    for m, rs in runs.items():
        n0, n1 = min(rs), max(rs)
        L = rs[n1].config.layers
        row = {"model": length_label(rs[n1].config)}
        for n in dict.fromkeys((n0, n1)):
            row[f"RP, n = {n}"] = report.pm(*statistics.rp(rs[n], L))
        row[f"order, n = {n1}"] = statistics.direction(rs[n1], L, family=k)
        row["RP change"] = find[m]["rp"]
        for n in dict.fromkeys((n0, n1)):
            row[f"late − early, n = {n} (± SE bound)"] = report.pm(*late_early(rs[n]))
        row["gap change"] = find[m]["gap"]
        rows.append(row)
    return rows


def length_columns(long_results: dict) -> dict[str, list]:
    """The numbers of the length sweep as download columns: RP per model, n and layer, and the
    binned last-query profile of the last layer."""
    rows = []
    for (m, n), r in long_results.items():
        label = length_label(r.config)
        rows += [
            (label, n, l, "recency_probability", "", *statistics.rp(r, l))
            for l in range(1, r.config.layers + 1)
        ]
        rows += [
            (
                label,
                n,
                r.config.layers,
                "binned last-query score - row mean (se: bound)",
                float(x),
                float(mu),
                float(b),
            )
            for x, mu, b in zip(*last_query_profiles({n: r})[n])
        ]
    return report.columns(("model", "n", "layer", "quantity", "x", "mean", "se"), rows)


# -- the page's findings, first ------------------------------------------------------------------


def findings_rows(
    results: dict, long_results: dict, relativity: dict | None = None, networks: dict | None = None
) -> list[dict]:
    """The chapter's answers in one table (its first screen): each part alone and all parts together
    at the largest alpha of the study (one random network), all parts together across networks
    (``networks``: :func:`across_networks`), what happens on isotropic tokens, whether the bias of RoPE
    and of all parts together is relative (``relativity``: (component, alpha) -> SequenceStatistic of
    the contrasts), and how the last layer's recency probability and late − early gap change from the
    shortest to the longest n. Every word is decided by the functions above, at the book's family-wise
    level; the last column links to the figure with the evidence. Rows whose input is not given are
    left out."""
    top, iso = max(STUDY_ALPHAS), min(STUDY_ALPHAS)
    dirs = directions(results)
    orders = last_layer_orders(dirs, top)
    parts = sum(len(v) for v in orders.values())
    alone = f"recency in the last layer with {report.count(len(orders['recency']))} of {report.count(parts)} parts"
    if "fixed" in orders["recency"]:
        alone += f" (fixed weights among them: {ONE_NETWORK})"
    if orders["no order resolved"]:
        alone += f"; no resolved order with {names(orders['no order resolved'], results)}"
    if orders["primacy"]:
        alone += f"; primacy with {names(orders['primacy'], results)}"
    comb = results[("combined", top)]
    L = comb.config.layers
    together = f"{layer_orders(dirs[('combined', top)])}; RP of {report.score_label(L)}: {report.pm(*statistics.rp(comb, L))}"
    created = created_order(dirs, iso)
    isotropic = (
        f"the paper's model: {layer_orders(dirs[('paper', iso)])}; an order of their own with "
        f"{names(created, results)}"
        if created
        else "no part resolves an order"
    )
    found = length_findings(long_results)
    lengths = sorted({n for _, n in long_results})
    if len(lengths) > 1:
        parts_len = []
        if "paper" in found:
            f = found["paper"]
            g = f["gaps"]
            parts_len.append(
                f"the paper's model: RP {f['rp']} ({report.pm(*f['rp_values'][0])} → "
                f"{report.pm(*f['rp_values'][1])}), late − early gap {f['gap']} "
                f"({report.pm(*g[lengths[0]])} → {report.pm(*g[lengths[-1]])})"
            )
        if "combined" in found:
            parts_len.append(f"{SENTENCE_LABELS['combined']}: RP {found['combined']['rp']}")
        longer = "; ".join(parts_len)
    else:
        longer = "one length only: no change to test"
    a_top, a_iso = cv.alpha_label(top), cv.alpha_label(iso)
    rows = [
        {
            "question": f"one part added to the paper's model, {a_top}",
            "answer": alone,
            "evidence": "{numref}`fig-beyond-components`",
        },
        {
            "question": f"all parts together, {ONE_NETWORK}, {a_top}",
            "answer": together,
            "evidence": "{numref}`fig-beyond-components`",
        },
    ]
    if networks is not None:
        K = len(networks["rp"])
        c = networks["counts"]
        across = (
            f"RP of {report.score_label(networks['layer'])}: {network_text(networks)}: {networks['word']} "
            f"across networks; recency in {report.count(c['recency'])}, primacy in "
            f"{report.count(c['primacy'])} of the {report.count(K)} networks"
        )
        rows.append(
            {
                "question": f"all parts together across random networks, {a_top}",
                "answer": across,
                "evidence": "{numref}`fig-beyond-networks`",
            }
        )
    rows.append(
        {
            "question": f"isotropic tokens, {a_iso}",
            "answer": isotropic,
            "evidence": "{numref}`fig-beyond-components`",
        }
    )
    if relativity:
        verdicts, changes = relativity_verdicts(relativity), last_layer_changes(relativity)
        parts_rel = []
        for key in [k for k in relativity if k[1] == top]:
            ch = changes[key]
            parts_rel.append(
                f"{SENTENCE_LABELS.get(key[0]) or component_label(key[0], relativity[key].config)}: "
                f"{verdicts[key].word} ($D_n - D_5$ {ch['D_word']}, $K_n - K_5$ {ch['K_word']})"
            )
        rows.append(
            {
                "question": f"is the bias relative? ({a_top})",
                "answer": "; ".join(parts_rel),
                "evidence": "{numref}`fig-beyond-contrasts`",
            }
        )
    rows.append(
        {
            "question": f"last layer from n = {lengths[0]} to {lengths[-1]}",
            "answer": longer,
            "evidence": "{numref}`fig-beyond-lengths`",
        }
    )
    return rows


# -- figures of this chapter ----------------------------------------------------------------------


def network_panel(found: dict, ax, *, z: float = 1.0):
    """The recency probability of every network of :func:`across_networks` (points ± ``z`` SE, one per
    weights_seed), the mean across networks ± ``z`` times its SE (a band), and the dotted 0.5 "no order"
    line. Returns ``ax``."""
    from .plotting import errorbar_points

    x = np.arange(len(found["rp"]))
    ax.axhspan(
        found["mean"] - z * found["sem"],
        found["mean"] + z * found["sem"],
        color="0.85",
        linewidth=0,
        label="mean across networks ± SE",
    )
    ax.axhline(found["mean"], color="0.45", linewidth=1.0)
    errorbar_points(
        x,
        found["rp"],
        found["se"],
        ax,
        z=z,
        label="one network ± SE",
        color=cv.ordered_colour(0, 1),
    )
    ax.axhline(0.5, label="no order", **cv.REFERENCE)
    ax.set_xticks(x, [str(s) for s in found["seeds"]])
    ax.set_xlabel("weights_seed (one random network each)")
    ax.set_ylabel(f"RP of layer {found['layer']}")
    return ax
