"""Chapter 8, "Beyond the paper": the paper's LayerNorm model with the parts of a decoder it leaves
out (:mod:`recency_lib.extensions`), at initialisation scale; the length sweep; the study across
networks; chapter 7's contrasts with RoPE. Settings, findings and tables; the page simulates."""

import numpy as np

from recency_lib.config import SimConfig
from recency_lib.features import controls_valid
from recency_lib.metrics import binned_row, late_minus_early, sign
from recency_lib.placements import PLACEMENTS
from recency_lib.result import SimResult

from . import conventions, position, report, statistics
from .claims import not_relative_claim

#: Isotropic tokens and the paper's showcase anisotropy.
STUDY_ALPHAS = (0.0, 0.5)
#: How a sentence names a component where its table label would read oddly.
SENTENCE_LABELS = {
    "paper": "the paper's model",
    "combined": "all parts together (one random network)",
    "fixed": "fixed weights (one random network)",
}
#: Fixed weights are one draw from ``weights_seed``: their errors cover the tokens, not the network.
ONE_NETWORK = "one random network"
#: Bins of relative key position in the last query's profile.
PROFILE_BINS = 16
NO_ORDER = statistics.ORDER_WORDS[0]
UNCHANGED = position.CHANGE_WORDS[0]


# -- the settings -------------------------------------------------------------------------------


def combined_fields(heads: int) -> dict:
    """The layout of common decoders: pre-RMSNorm, RoPE, heads, FFN, residual, fixed weights."""
    return dict(norm="rms", rope=True, heads=heads, ffn=True, gamma=1.0, weights="fixed")


def components(heads: int) -> dict[str, tuple[str, dict]]:
    """Each component in the chapter's order: (its label, the SimConfig fields it changes)."""
    return {
        "paper": ("none (the paper's model)", {}),
        "rms": ("RMSNorm", {"norm": "rms"}),
        "fixed": ("fixed weights (one network)", {"weights": "fixed"}),
        "random": ("random weights", {"weights": "per_sample"}),
        "heads": (f"{heads} head{'s' if heads > 1 else ''}", {"heads": heads}),
        "ffn": ("FFN", {"ffn": True}),
        "rope": ("RoPE", {"rope": True}),
        "post": (PLACEMENTS["post"].label, {"placement": "post"}),
        "residual": ("residual", {"gamma": 1.0}),
        "combined": ("all parts together (one network)", combined_fields(heads)),
    }


def component_label(key: str, cfg: SimConfig) -> str:
    """A component's name in figures and tables ("RoPE", "4 heads", ...)."""
    return components(cfg.heads)[key][0]


def _sentence_name(key: str, cfg: SimConfig) -> str:
    return SENTENCE_LABELS.get(key) or component_label(key, cfg)


def component_configs(
    samples: int, seed: int = 0, *, heads: int = 4, random_divisor: int = 10, **fields
) -> dict[tuple[str, float], SimConfig]:
    """(component, alpha) -> the paper's LayerNorm model (``fields``: n, d, layers, weights_seed)
    with the component, at each of :data:`STUDY_ALPHAS`; random weights (slow draws) run ``samples
    // random_divisor`` sequences."""
    out = {}
    for key, (_, changes) in components(heads).items():
        count = max(2, samples // random_divisor) if key == "random" else samples
        for a in STUDY_ALPHAS:
            cfg = SimConfig(norm="layernorm", alpha=a, samples=count, seed=seed, **fields)
            out[(key, a)] = cfg.replace(**changes)
    return out


def length_configs(lengths, samples: int, seed: int = 0, *, heads: int = 4, **fields) -> dict:
    """(model, n) -> SimConfig (``fields``: d, layers, weights_seed): the paper's model without
    and with the residual at alpha = 0.5 (Gram engine, ``samples * longest // n`` sequences: as
    many query rows at every n) and all parts together at alpha = 0.5 and 0 (dense, ``samples``)."""
    lengths = sorted(set(lengths))
    models = {
        "paper": dict(alpha=0.5),
        "residual": dict(alpha=0.5, gamma=1.0),
        "combined": dict(alpha=0.5, **combined_fields(heads)),
        "combined0": dict(alpha=0.0, **combined_fields(heads)),
    }
    out = {}
    for m, changes in models.items():
        for n in lengths:
            count = samples * lengths[-1] // n if m in ("paper", "residual") else samples
            cfg = SimConfig(norm="layernorm", n=n, samples=count, seed=seed, **fields)
            out[(m, n)] = cfg.replace(**changes)
    return out


def length_label(cfg: SimConfig) -> str:
    """ "LayerNorm + residual, α = 0.5", "all parts together (one network), α = 0"."""
    if cfg.extended:
        return f"all parts together (one network), {conventions.alpha_label(cfg.alpha)}"
    return conventions.setting_label(cfg)


# -- the component study --------------------------------------------------------------------------


def cell_count(results: dict) -> int:
    """The (setting, layer) cells of ``results``: the family of :func:`directions`."""
    return sum(r.config.layers for r in results.values())


def _by_layer(results: dict, decide) -> dict:
    k = cell_count(results)
    return {
        key: tuple(decide(r, l, family=k) for l in range(1, r.config.layers + 1))
        for key, r in results.items()
    }


def directions(results: dict) -> dict:
    """key -> each layer's order (statistics.direction), every cell of ``results`` one family."""
    return _by_layer(results, statistics.direction)


def definition1_verdicts(results: dict) -> dict:
    """key -> Definition 1 on each layer (statistics.definition1), every matrix one family."""
    return _by_layer(results, statistics.definition1)


def last_layer_orders(dirs: dict, alpha: float) -> dict[str, list[str]]:
    """order -> the components other than the paper's whose last layer shows it at ``alpha``."""
    out = {w: [] for w in statistics.ORDER_WORDS.values()}
    for (key, a), words in dirs.items():
        if a == alpha and key != "paper":
            out[words[-1]].append(key)
    return out


def created_order(dirs: dict, alpha: float) -> list[str]:
    """Components that resolve an order at ``alpha`` in a layer where the paper's model has none."""
    ref = dirs[("paper", alpha)]
    return [
        key
        for (key, a), words in dirs.items()
        if a == alpha and any(w != NO_ORDER and r == NO_ORDER for w, r in zip(words, ref))
    ]


def versus_paper(results: dict, alpha: float) -> dict[str, list[str]]:
    """ "higher" / "lower": components whose last-layer RP at ``alpha`` is resolvably above / below
    the paper's model's, all differences one family."""
    ref = results[("paper", alpha)]
    others = [(key, r) for (key, a), r in results.items() if a == alpha and key != "paper"]
    zc = conventions.z_for(len(others))
    out = {1: [], -1: [], 0: []}
    for key, r in others:
        out[sign(*statistics.rp_gap(r, ref, r.config.layers), zc)].append(key)
    return {"higher": out[1], "lower": out[-1]}


def names(keys, results: dict) -> str:
    """ "RMSNorm, FFN and RoPE" (or "none"): components named for a sentence."""
    cfg = {key: r.config for (key, _), r in results.items()}
    return report.listing(keys, fmt=lambda k: _sentence_name(k, cfg[k]))


def layer_orders(words) -> str:
    """A setting's orders by layer: "recency in layers 2–4", "recency in layer 2; primacy in
    layers 3, 4", or "no resolved order"."""
    groups: dict[str, list[int]] = {}
    for l, w in enumerate(words, start=1):
        if w != NO_ORDER:
            groups.setdefault(w, []).append(l)
    parts = []
    for w, ls in groups.items():
        consecutive = len(ls) > 2 and ls == list(range(ls[0], ls[-1] + 1))
        span = f"{ls[0]}–{ls[-1]}" if consecutive else ", ".join(map(str, ls))
        parts.append(f"{w} in layer{'s' if len(ls) > 1 else ''} {span}")
    return "; ".join(parts) or "no resolved order"


def _rp_arrays(runs) -> tuple[np.ndarray, np.ndarray]:
    rps = [statistics.rp_layers(r) for r in runs]
    return np.array([v for v, _ in rps]), np.array([e for _, e in rps])


def rp_matrix(results: dict, alpha: float) -> tuple[list[str], np.ndarray, np.ndarray]:
    """(labels, RP (components, layers), SE) of every component at ``alpha``."""
    runs = {key: r for (key, a), r in results.items() if a == alpha}
    return [component_label(k, r.config) for k, r in runs.items()], *_rp_arrays(runs.values())


def summary_rows(results: dict, dirs: dict, def1: dict) -> list[dict]:
    """Per component: its orders at each alpha; RP and Definition 1 of the last layer at the top."""
    top = max(STUDY_ALPHAS)
    rows = []
    for key in dict.fromkeys(k for k, _ in results):
        r = results[(key, top)]
        S, at = report.score_label(r.config.layers), conventions.alpha_label(top)
        row = {"component added": component_label(key, r.config)}
        for a in STUDY_ALPHAS:
            row[f"order, {conventions.alpha_label(a)}"] = layer_orders(dirs[(key, a)])
        row[f"RP of {S}, {at}"] = report.pm(*statistics.rp(r, r.config.layers))
        row[f"Definition 1, {S}, {at}"] = def1[(key, top)][-1]
        rows.append(row)
    return rows


def full_rows(results: dict, dirs: dict, def1: dict) -> list[dict]:
    """Every (component, alpha, layer): the model, RP ± SE, order and Definition 1."""
    return [
        {
            "component added": component_label(key, r.config),
            "model": conventions.variant_name(r.config),
            "α": f"{a:g}",
            "layer": str(l),
            "RP": report.pm(*statistics.rp(r, l)),
            "order": dirs[(key, a)][l - 1],
            "Definition 1": def1[(key, a)][l - 1],
        }
        for (key, a), r in results.items()
        for l in range(1, r.config.layers + 1)
    ]


def full_columns(results: dict) -> dict[str, list]:
    """The numbers of the component study as download columns."""
    rows = []
    for (key, a), r in results.items():
        cfg = r.config
        setting = (component_label(key, cfg), conventions.variant_name(cfg), a, cfg.samples)
        rows += [(*setting, l, *statistics.rp(r, l)) for l in range(1, cfg.layers + 1)]
    header = ("component", "model", "alpha", "samples", "layer", "recency_probability", "se")
    return report.columns(header, rows)


# -- relativity: chapter 7's contrasts (position.py) with RoPE alone and all parts together ------


RELATIVITY_KEYS = ("rope", "combined")
CHANGES = "changes"
#: What the last layer's changes of D and K (changed or not) say about where a row's order lives.
READINGS = {
    (UNCHANGED, CHANGES): "follows the distance i − j, as a relative encoding's would",
    (CHANGES, UNCHANGED): "follows the keys' positions, not their distance",
    (CHANGES, CHANGES): "follows neither the distance nor the keys' positions alone",
    (UNCHANGED, UNCHANGED): "shows no resolved change with the query",
}


def relativity_configs(configs: dict, samples: int) -> dict[tuple[str, float], SimConfig]:
    """(component, alpha) -> the study's setting of :data:`RELATIVITY_KEYS`, ``samples`` each."""
    return {k: c.replace(samples=samples) for k, c in configs.items() if k[0] in RELATIVITY_KEYS}


def control_mean(cfg: SimConfig):
    """sequence_statistic's ``control_mean`` for the contrasts: 0, or None (plain) under RoPE."""
    return 0.0 if controls_valid(cfg) else None


def last_layer_changes(stats: dict) -> dict:
    """key -> {"D": (D_n - D_5, SE), "K": (K_n - K_5, SE), "D_word", "K_word", "reading",
    "z_threshold"}: the last layer's changes, :data:`CHANGES` or unchanged, all one family."""
    zc = conventions.z_for(2 * len(stats))
    out = {}
    for key, st in stats.items():
        ch = {c: position.change(st, c) for c in ("D", "K")}
        words = {f"{c}_word": CHANGES if sign(*ch[c], zc) else UNCHANGED for c in ch}
        reading = READINGS[(words["D_word"], words["K_word"])]
        out[key] = {**ch, **words, "reading": reading, "z_threshold": zc}
    return out


def relativity_rows(stats: dict) -> list[dict]:
    """Per result: claims.not_relative_claim (its decisive layer), the last layer's changes."""
    changes = last_layer_changes(stats)
    rows = []
    for (comp, a), st in stats.items():
        v, ch, L = not_relative_claim(st), changes[(comp, a)], st.config.layers
        decisive = L - list(v.checks).index(v.decisive)  # checks: layers L .. 2
        rows.append(
            {
                "component added": component_label(comp, st.config),
                "α": f"{a:g}",
                "not relative? (decisive $D_n - D_5$)": f"{v.word}: {v.value} (layer {decisive})",
                f"$D_n - D_5$, layer {L} (z)": position.change_text(*ch["D"]),
                f"$K_n - K_5$, layer {L} (z)": position.change_text(*ch["K"]),
            }
        )
    return rows


def relativity_columns(stats: dict) -> dict[str, list]:
    """D_i and K_i of every result, layer and query as download columns."""
    rows = [
        (component_label(comp, st.config), a, st.samples, *r)
        for (comp, a), st in stats.items()
        for r in position.contrast_rows(st)
    ]
    return report.columns(("component", "alpha", "samples", *position.CONTRAST_COLUMNS), rows)


# -- across networks ------------------------------------------------------------------------------


def network_configs(cfg: SimConfig, networks: int, samples: int) -> list[SimConfig]:
    """``cfg`` (fixed weights) on ``networks - 1`` further networks, weights_seed + 1, + 2, ..."""
    return [
        cfg.replace(weights_seed=cfg.weights_seed + k, samples=samples) for k in range(1, networks)
    ]


def across_networks(results) -> dict:
    """The last layer's RP on K networks (one SimResult per weights_seed): per network, RP, SE and
    order (one family); across them, the mean, SD, SE of the mean and its Student t against 0.5
    (K - 1 degrees of freedom) decided at the book's level, and the SD over the median SE."""
    from scipy.special import stdtrit

    results = list(results)
    K, L = len(results), results[0].config.layers
    rp, se = (np.array(x) for x in zip(*(statistics.rp(r, L) for r in results)))
    mean, sd = float(rp.mean()), float(rp.std(ddof=1))
    sem = sd / np.sqrt(K)
    tc = float(stdtrit(K - 1, 1.0 - conventions.FAMILYWISE_LEVEL / 2))
    orders = [statistics.direction(r, L, family=K) for r in results]
    return {
        "layer": L,
        "seeds": [r.config.weights_seed for r in results],
        "rp": rp,
        "se": se,
        "mean": mean,
        "sd": sd,
        "sem": float(sem),
        "t": report.zscore(mean, sem, 0.5),
        "t_threshold": tc,
        "word": statistics.ORDER_WORDS[sign(mean, sem, tc, 0.5)],
        "spread_ratio": sd / float(np.median(se)) if np.median(se) > 0 else np.inf,
        "counts": {w: orders.count(w) for w in statistics.ORDER_WORDS.values()},
    }


def network_text(found: dict) -> str:
    """ "0.531 ± 0.017 over 5 networks (SD 0.037)"."""
    over = f"over {report.count(len(found['rp']))} networks"
    return f"{report.pm(found['mean'], found['sem'])} {over} (SD {report.num(found['sd'], 2)})"


def network_panel(found: dict, ax, *, z: float = 1.0):
    """Each network's RP (± ``z`` SE), their mean (a band) and "no order"; returns ``ax``."""
    from .plotting import errorbar_points

    x = np.arange(len(found["rp"]))
    band = (found["mean"] - z * found["sem"], found["mean"] + z * found["sem"])
    ax.axhspan(*band, color="0.85", linewidth=0, label="mean across networks ± SE")
    ax.axhline(found["mean"], color="0.45", linewidth=1.0)
    colour = conventions.ordered_colour(0, 1)
    errorbar_points(x, found["rp"], found["se"], ax, z=z, label="one network ± SE", color=colour)
    ax.axhline(0.5, label="no order", **conventions.REFERENCE)
    ax.set_xticks(x, [str(s) for s in found["seeds"]])
    ax.set(xlabel="weights_seed (one random network each)", ylabel=f"RP of layer {found['layer']}")
    return ax


def identical_scores(engine_scores, layer_scores) -> bool:
    """Whether an engine's scores (B, layers, n, n) and the same layer by layer ((B, n, n) each) are
    the same floats, bit for bit, in the causal triangle."""
    a, b = np.asarray(engine_scores), np.stack(layer_scores, axis=1)
    low = np.tri(a.shape[-1], dtype=bool)
    return a.shape == b.shape and np.array_equal(
        a[..., low].view(np.uint64), b[..., low].view(np.uint64)
    )


# -- the length sweep ---------------------------------------------------------------------------


def by_model(long_results: dict) -> dict[str, dict[int, SimResult]]:
    """model -> n -> result of the length sweep (models in the sweep's order, shortest n first)."""
    out = {}
    for (m, n), r in sorted(long_results.items(), key=lambda item: item[0][1]):
        out.setdefault(m, {})[n] = r
    return out


def rp_by_length(runs: dict[int, SimResult]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(lengths, RP (lengths, layers), SE) of one model."""
    return np.array(list(runs), dtype=float), *_rp_arrays(runs.values())


def last_query_profile(r: SimResult) -> tuple:
    """(relative key position, binned score of the last query minus its mean, SE bound)."""
    L = r.config.layers
    x, m, b = binned_row(r.score_mean[L - 1], r.score_sem[L - 1], r.config.n, PROFILE_BINS)
    return x, m - m.mean(), b


def late_early(r: SimResult) -> tuple[float, float]:
    """The last query's mean score on its last quarter of keys minus its first, ± an SE bound."""
    L = r.config.layers
    return late_minus_early(r.score_mean[L - 1], r.score_sem[L - 1], r.config.n)


def length_findings(long_results: dict) -> dict[str, dict]:
    """Per model, from the shortest n to the longest, last layer: "rp" (rises / falls / unchanged),
    "gap", the late − early gap (grows / shrinks / unchanged), all of them one family; "rp_values"
    at both ends, "gaps" (n -> gap), "factor" (shortest over longest gap, None unless both > 0)."""
    models = by_model(long_results)
    zc = conventions.z_for(2 * len(models))
    out = {}
    for m, runs in models.items():
        first, last = runs[min(runs)], runs[max(runs)]
        L = last.config.layers
        gaps = {n: late_early(r) for n, r in runs.items()}
        (g0, b0), (g1, b1) = gaps[min(runs)], gaps[max(runs)]
        out[m] = {
            "rp": position.CHANGE_WORDS[sign(*statistics.rp_gap(last, first, L), zc)],
            # SE bounds add (|a - b| <= b_a + b_b whatever the correlation): test against their sum
            "gap": {1: "grows", -1: "shrinks", 0: UNCHANGED}[sign(g1 - g0, b0 + b1, zc)],
            "gaps": gaps,
            "factor": g0 / g1 if g0 > zc * b0 and g1 > zc * b1 else None,
            "rp_values": (statistics.rp(first, L), statistics.rp(last, L)),
        }
    return out


def gap_listing(found: dict) -> str:
    """ "1.03 ± 0.04 at n = 10, ..., and 0.204 ± 0.017 at n = 512"."""
    gaps = [f"{report.pm(g, b)} at n = {report.count(n)}" for n, (g, b) in found["gaps"].items()]
    return report.listing(gaps, fmt=str)


def length_rows(long_results: dict) -> list[dict]:
    """Per model: the last layer's RP at the shortest and longest n, its order at the longest, the
    late − early gap at both, and their changes (:func:`length_findings`)."""
    k, models = cell_count(long_results), by_model(long_results)
    rows = []
    for m, f in length_findings(long_results).items():
        ends = list(dict.fromkeys((min(models[m]), max(models[m]))))  # one length: one column
        last = models[m][ends[-1]]
        row = {"model": length_label(last.config)}
        row |= {f"RP, n = {n}": report.pm(*rp) for n, rp in zip(ends, f["rp_values"])}
        row[f"order, n = {ends[-1]}"] = statistics.direction(last, last.config.layers, family=k)
        row["RP change"] = f["rp"]
        row |= {f"late − early, n = {n} (± SE bound)": report.pm(*f["gaps"][n]) for n in ends}
        row["gap change"] = f["gap"]
        rows.append(row)
    return rows


def length_columns(long_results: dict) -> dict[str, list]:
    """RP per model, n and layer, and the last query's binned profile, as download columns."""
    what = "binned last-query score - row mean (se: bound)"
    rows = []
    for (_, n), r in long_results.items():
        label, L = length_label(r.config), r.config.layers
        rows += [
            (label, n, l, "recency_probability", "", *statistics.rp(r, l)) for l in range(1, L + 1)
        ]
        rows += [
            (label, n, L, what, float(x), float(mu), float(b))
            for x, mu, b in zip(*last_query_profile(r))
        ]
    return report.columns(("model", "n", "layer", "quantity", "x", "mean", "se"), rows)


# -- the page's findings, first ------------------------------------------------------------------


def _alone(dirs: dict, results: dict, top: float) -> str:
    orders = last_layer_orders(dirs, top)
    parts = sum(len(v) for v in orders.values())
    kept = report.count(len(orders["recency"]))
    text = f"recency in the last layer with {kept} of {report.count(parts)} parts"
    if "fixed" in orders["recency"]:
        text += f" (fixed weights among them: {ONE_NETWORK})"
    if orders[NO_ORDER]:
        text += f"; no resolved order with {names(orders[NO_ORDER], results)}"
    if orders["primacy"]:
        text += f"; primacy with {names(orders['primacy'], results)}"
    return text


def _longer(long_results: dict) -> str:
    found, lengths = length_findings(long_results), sorted({n for _, n in long_results})
    if len(lengths) == 1:
        return "one length only: no change to test"
    f, g = found["paper"], found["paper"]["gaps"]
    rp0, rp1 = (report.pm(*v) for v in f["rp_values"])
    gaps = f"{report.pm(*g[lengths[0]])} → {report.pm(*g[lengths[-1]])}"
    rps = f"RP {f['rp']} ({rp0} → {rp1})"
    paper = f"the paper's model: {rps}, late − early gap {f['gap']} ({gaps})"
    return f"{paper}; {SENTENCE_LABELS['combined']}: RP {found['combined']['rp']}"


def findings_rows(results: dict, long_results: dict, relativity: dict, networks: dict) -> list:
    """The chapter's answers, each with the figure of its evidence: the parts alone and together,
    across ``networks`` (:func:`across_networks`), on isotropic tokens, whether the bias is
    ``relativity``'s, the change with n."""
    top, iso = max(STUDY_ALPHAS), min(STUDY_ALPHAS)
    a_top, a_iso = conventions.alpha_label(top), conventions.alpha_label(iso)
    dirs = directions(results)
    comb = results[("combined", top)]
    L = comb.config.layers
    rp_comb = f"RP of {report.score_label(L)}: {report.pm(*statistics.rp(comb, L))}"
    rows = [
        (f"one part added to the paper's model, {a_top}", _alone(dirs, results, top), "components"),
        (
            f"all parts together, {ONE_NETWORK}, {a_top}",
            f"{layer_orders(dirs[('combined', top)])}; {rp_comb}",
            "components",
        ),
    ]
    c, K = networks["counts"], report.count(len(networks["rp"]))
    rp_nets = f"RP of {report.score_label(networks['layer'])}: {network_text(networks)}"
    split = f"recency in {report.count(c['recency'])}, primacy in {report.count(c['primacy'])}"
    answer = f"{rp_nets}: {networks['word']} across networks; {split} of the {K} networks"
    rows.append((f"all parts together across random networks, {a_top}", answer, "networks"))
    created = created_order(dirs, iso)
    isotropic = "no part resolves an order"
    if created:
        paper = layer_orders(dirs[("paper", iso)])
        isotropic = (
            f"the paper's model: {paper}; an order of their own with {names(created, results)}"
        )
    rows.append((f"isotropic tokens, {a_iso}", isotropic, "components"))
    changes = last_layer_changes(relativity)
    parts = [
        f"{_sentence_name(k[0], st.config)}: {not_relative_claim(st).word} ($D_n - D_5$ "
        f"{changes[k]['D_word']}, $K_n - K_5$ {changes[k]['K_word']})"
        for k, st in relativity.items()
        if k[1] == top
    ]
    rows.append((f"is the bias relative? ({a_top})", "; ".join(parts), "contrasts"))
    lengths = sorted({n for _, n in long_results})
    rows.append(
        (f"last layer from n = {lengths[0]} to {lengths[-1]}", _longer(long_results), "lengths")
    )
    return [
        {"question": q, "answer": a, "evidence": f"{{numref}}`fig-beyond-{fig}`"}
        for q, a, fig in rows
    ]
