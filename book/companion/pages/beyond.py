"""Chapter 8 (``book/beyond.ipynb``): its numbers and its longer figures."""

from recency_lib.features import controls_valid

from .. import beyond, conventions, plotting, report
from ..report import count, num, pm


def component_numbers(*, configs, def1, dirs, results, samples, weights_seed) -> dict[str, str]:
    """The component study: the parts that order more or less than the paper's model or create an
    order, where Definition 1 holds, the plain-mean settings, the sizes and the figure's data."""
    top, iso = max(beyond.STUDY_ALPHAS), min(beyond.STUDY_ALPHAS)
    cells = beyond.cell_count(results)
    plain = dict.fromkeys(k for (k, _), r in results.items() if not controls_valid(r.config))
    listed = {
        **beyond.versus_paper(results, top),  # "higher", "lower"
        "created": beyond.created_order(dirs, iso),
        "def1-holds": [k for (k, a), w in def1.items() if a == top and w[-1] == "holds"],
        "plain": list(plain),
    }
    out = {f"beyond-{key}": beyond.names(keys, results) for key, keys in listed.items()}
    data = beyond.full_columns(results)
    return out | {
        "beyond-paper-top": beyond.layer_orders(dirs[("paper", top)]),
        "beyond-paper-iso": beyond.layer_orders(dirs[("paper", iso)]),
        "beyond-samples": count(samples),
        "beyond-samples-random": count(configs[("random", top)].samples),
        "beyond-weights-seed": str(weights_seed),
        "beyond-cells": count(cells),
        "beyond-level": report.percent(conventions.FAMILYWISE_LEVEL),
        "beyond-zc": num(conventions.z_for(cells), 3),
        "beyond-fig-components-data": report.download("beyond-components", data),
    }


def network_numbers(*, found_nets, network_samples, networks) -> dict[str, str]:
    """The random networks: how many, their sequences, the mean RP and its t test."""
    f, c = found_nets, found_nets["counts"]
    return {
        "beyond-networks": count(networks),
        "beyond-network-samples": count(network_samples),
        "beyond-net-mean": beyond.network_text(f),
        "beyond-net-word": f["word"],
        "beyond-net-t": report.z_text(f["t"]),
        "beyond-net-df": count(networks - 1),
        "beyond-net-tc": num(f["t_threshold"], 3),
        "beyond-net-recency": count(c["recency"]),
        "beyond-net-primacy": count(c["primacy"]),
        "beyond-net-none": count(c[beyond.NO_ORDER]),
        "beyond-net-sd": num(f["sd"], 2),
        "beyond-net-ratio": num(f["spread_ratio"], 2),
    }


def relative_numbers(*, rel, relative_samples, top) -> dict[str, str]:
    """The relativity check: D and K with RoPE alone and all parts together."""
    changes = beyond.last_layer_changes(rel)
    out = {
        "beyond-rel-samples": count(relative_samples),
        "beyond-rel-zc": num(changes[("rope", top)]["z_threshold"], 3),
    }
    for key, name in (("rope", "rope"), ("combined", "comb")):
        ch = changes[(key, top)]
        out[f"beyond-rel-{name}-reading"] = ch["reading"]
        for c in ("D", "K"):
            out[f"beyond-rel-{name}-{c.lower()}"] = ch[f"{c}_word"]
            out[f"beyond-rel-{name}-{c.lower()}change"] = pm(*ch[c])
    return out


def length_numbers(*, layers, lengths, long_results, long_samples, n) -> dict[str, str]:
    """The length sweep: the lengths, sequences and cost, and what the paper's model does from the
    shortest n to the longest."""
    paper = beyond.length_findings(long_results)["paper"]
    longest = long_results[("combined", lengths[-1])]
    exact = beyond.by_model(long_results)["paper"]
    exact_samples = [f"{count(r.config.samples)} at n = {count(L)}" for L, r in exact.items()]
    changed = paper["factor"] is not None and paper["gap"] != beyond.UNCHANGED
    factor = f", by a factor of {num(paper['factor'], 2)}" if changed else ""
    both = (paper["rp"], paper["gap"]) == ("rises", "shrinks")
    data = beyond.length_columns(long_results)
    return {
        "beyond-n": count(n),
        "beyond-layers": count(layers),
        "beyond-long-lengths": report.listing(lengths, fmt=count),
        "beyond-long-min": count(lengths[0]),
        "beyond-long-max": count(lengths[-1]),
        "beyond-long-samples": count(long_samples),
        "beyond-long-exact": report.listing(exact_samples, fmt=str),
        "beyond-cost": num(longest.elapsed_seconds / longest.config.samples, 2),
        "beyond-long-paper-rp": paper["rp"],
        "beyond-long-paper-rp0": pm(*paper["rp_values"][0]),
        "beyond-long-paper-rp1": pm(*paper["rp_values"][1]),
        "beyond-long-paper-gaps": beyond.gap_listing(paper),
        "beyond-long-paper-gap": paper["gap"],
        "beyond-long-paper-factor": factor,
        "beyond-long-summary": " Recency becomes more consistent and smaller." if both else "",
        "beyond-bins": count(beyond.PROFILE_BINS),
        "beyond-fig-lengths-data": report.download("beyond-lengths", data),
    }


def _legend_and_glue(key: str, fig, axes, cols: int) -> None:
    fig.legend(*axes[0].get_legend_handles_labels(), loc="outside upper center", ncols=min(cols, 6))
    plotting.glue_figure(key, fig)


def components_figure(*, results, layers) -> None:
    """Figure ``beyond-fig-components``: the RP of every layer of every setting, a panel per α."""
    alphas = beyond.STUDY_ALPHAS
    fig, axes = plotting.subplots(1, len(alphas), height_ratio=0.55, sharex=True)
    for ax, a in zip(axes, alphas):
        plotting.recency_dots(*beyond.rp_matrix(results, a), ax, show_labels=ax is axes[0])
        ax.set_title(conventions.alpha_label(a))
    _legend_and_glue("beyond-fig-components", fig, axes, layers + 1)


def length_figures(*, long_results, lengths, layers) -> None:
    """Figures ``beyond-fig-lengths`` (RP against n) and ``beyond-fig-profiles``, by model."""
    runs = list(beyond.by_model(long_results).values())
    titles = [beyond.length_label(next(iter(r.values())).config) for r in runs]
    shape = dict(max_cols=2, panel_ratio=0.75, sharex=True)
    fig, axes = plotting.panels(len(runs), sharey=True, **shape)
    for ax, r, title in zip(axes, runs, titles):
        plotting.recency_by_length(*beyond.rp_by_length(r), ax)
        ax.set_title(title)
    _legend_and_glue("beyond-fig-lengths", fig, axes, layers + 1)
    fig, axes = plotting.panels(len(runs), **shape)
    for ax, r, title in zip(axes, runs, titles):
        plotting.binned_profiles({n: beyond.last_query_profile(x) for n, x in r.items()}, ax)
        ax.set_title(title)
    _legend_and_glue("beyond-fig-profiles", fig, axes, len(lengths))
