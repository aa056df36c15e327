"""Chapter 8 (``book/beyond.ipynb``): its numbers and its longer figures."""

from __future__ import annotations

from .. import beyond, conventions, plotting, report


def length_numbers(*, layers, lengths, long_results, long_samples, n) -> dict[str, str]:
    """Chapter 8's length sweep: the lengths, the sample sizes of the dense and the exact models and the
    cost per sequence."""
    out = {}
    found = beyond.length_findings(long_results)
    longest = long_results[("combined", lengths[-1])]
    paper_runs = beyond.by_length(long_results, "paper")
    factor = found["paper"]["factor"]
    out["beyond-n"] = report.count(n)
    out["beyond-layers"] = report.count(layers)
    out["beyond-long-lengths"] = report.listing(lengths, fmt=report.count)
    out["beyond-long-min"] = report.count(lengths[0])
    out["beyond-long-max"] = report.count(lengths[-1])
    out["beyond-long-samples"] = report.count(long_samples)
    exact_counts = [
        f"{report.count(r.config.samples)} at n = {report.count(L)}" for L, r in paper_runs.items()
    ]
    out["beyond-long-exact"] = report.listing(exact_counts, fmt=str)
    per_sequence = longest.elapsed_seconds / longest.config.samples
    out["beyond-cost"] = report.num(per_sequence, 2)
    out["beyond-long-paper-rp"] = found["paper"]["rp"]
    out["beyond-long-paper-rp0"] = report.pm(*found["paper"]["rp_values"][0])
    out["beyond-long-paper-rp1"] = report.pm(*found["paper"]["rp_values"][1])
    out["beyond-long-paper-gaps"] = beyond.gap_listing(found["paper"])
    out["beyond-long-paper-gap"] = found["paper"]["gap"]
    changed = factor is not None and found["paper"]["gap"] != beyond.UNCHANGED
    factor_text = f", by a factor of {report.num(factor, 2)}" if changed else ""
    out["beyond-long-paper-factor"] = factor_text
    both_ways = (found["paper"]["rp"], found["paper"]["gap"]) == ("rises", "shrinks")
    summary_text = " Recency becomes more consistent and smaller." if both_ways else ""
    out["beyond-long-summary"] = summary_text
    out["beyond-bins"] = report.count(beyond.PROFILE_BINS)
    lengths_data = report.download("beyond-lengths", beyond.length_columns(long_results))
    out["beyond-fig-lengths-data"] = lengths_data
    return out


def relative_numbers(*, rel, relative_samples, top) -> dict[str, str]:
    """Chapter 8's position-or-distance check with RoPE and the combined decoder: the contrasts D and K,
    their changes and what they mean."""
    out = {}
    changes = beyond.last_layer_changes(rel)
    rope, both = changes[("rope", top)], changes[("combined", top)]
    out["beyond-rel-samples"] = report.count(relative_samples)
    out["beyond-rel-zc"] = report.num(rope["z_threshold"], 3)
    out["beyond-rel-rope-d"] = rope["D_word"]
    out["beyond-rel-rope-k"] = rope["K_word"]
    out["beyond-rel-rope-kchange"] = report.pm(*rope["K"][:2])
    out["beyond-rel-rope-dchange"] = report.pm(*rope["D"][:2])
    out["beyond-rel-rope-reading"] = beyond.reading(rope)
    out["beyond-rel-comb-kchange"] = report.pm(*both["K"][:2])
    out["beyond-rel-comb-reading"] = beyond.reading(both)
    out["beyond-rel-comb-d"] = both["D_word"]
    out["beyond-rel-comb-dchange"] = report.pm(*both["D"][:2])
    out["beyond-rel-comb-k"] = both["K_word"]
    return out


def network_numbers(*, found_nets, network_samples, networks) -> dict[str, str]:
    """Chapter 8's random networks: how many, their sequences, the mean recency and its t test."""
    out = {}
    out["beyond-networks"] = report.count(networks)
    out["beyond-network-samples"] = report.count(network_samples)
    out["beyond-net-mean"] = beyond.network_text(found_nets)
    out["beyond-net-word"] = found_nets["word"]
    out["beyond-net-t"] = report.z_text(found_nets["t"])
    out["beyond-net-df"] = report.count(networks - 1)
    out["beyond-net-tc"] = report.num(found_nets["t_threshold"], 3)
    out["beyond-net-recency"] = report.count(found_nets["counts"]["recency"])
    out["beyond-net-primacy"] = report.count(found_nets["counts"]["primacy"])
    unordered = found_nets["counts"]["no order resolved"]
    out["beyond-net-none"] = report.count(unordered)
    out["beyond-net-sd"] = report.num(found_nets["sd"], 2)
    out["beyond-net-ratio"] = report.num(found_nets["spread_ratio"], 2)
    return out


def component_numbers(*, configs, def1, dirs, results, samples, weights_seed) -> dict[str, str]:
    """The component study: which parts order the scores more or less than the paper's model at the
    top alpha, which create an order at the isotropic one, where Definition 1 holds strictly, the
    sample sizes, the family-wise z of its cells and the figure's data."""
    out = {}
    top, iso = max(beyond.STUDY_ALPHAS), min(beyond.STUDY_ALPHAS)
    vs_paper = beyond.versus_reference(results, top)
    out["beyond-paper-top"] = beyond.layer_orders(dirs[("paper", top)])
    out["beyond-paper-iso"] = beyond.layer_orders(dirs[("paper", iso)])
    out["beyond-higher"] = beyond.names(vs_paper["higher"], results)
    out["beyond-lower"] = beyond.names(vs_paper["lower"], results)
    out["beyond-created"] = beyond.names(beyond.created_order(dirs, iso), results)
    out["beyond-def1-holds"] = beyond.names(beyond.definition1_holds(def1, top), results)
    out["beyond-plain"] = beyond.names(beyond.uses_plain(results), results)
    out["beyond-samples"] = report.count(samples)
    out["beyond-samples-random"] = report.count(configs[("random", top)].samples)
    out["beyond-weights-seed"] = str(weights_seed)
    out["beyond-cells"] = report.count(beyond.cell_count(results))
    out["beyond-level"] = report.percent(conventions.FAMILYWISE_LEVEL)
    out["beyond-zc"] = report.num(conventions.z_for(beyond.cell_count(results)), 3)
    out["beyond-fig-components-data"] = report.download(
        "beyond-components", beyond.full_columns(results)
    )
    return out


# -- figures -------------------------------------------------------------------------------------------


def components_figure(*, results, layers) -> None:
    """Figure ``beyond-fig-components``: the recency probability of every layer of every setting of the
    component study, one panel per α of :data:`companion.beyond.STUDY_ALPHAS`."""
    alphas = beyond.STUDY_ALPHAS
    fig, axes = plotting.subplots(1, len(alphas), height_ratio=0.55, sharex=True)
    for ax, a in zip(axes, alphas):
        labels, rp, se = beyond.rp_matrix(results, a)
        plotting.recency_dots(labels, rp, se, ax, show_labels=ax is axes[0])
        ax.set_title(conventions.alpha_label(a))
    fig.legend(
        *axes[0].get_legend_handles_labels(), loc="outside upper center", ncols=min(layers + 1, 6)
    )
    plotting.glue_figure("beyond-fig-components", fig)


def length_figures(*, long_results, lengths, layers) -> None:
    """Figures ``beyond-fig-lengths`` (the recency probability of every layer against n, one panel per
    model of :data:`companion.beyond.LENGTH_MODELS`) and ``beyond-fig-profiles`` (the last query's
    binned mean scores in the last layer, one curve per length)."""
    models = beyond.LENGTH_MODELS
    fig, axes = plotting.panels(len(models), max_cols=2, panel_ratio=0.75, sharex=True, sharey=True)
    for ax, m in zip(axes, models):
        runs = beyond.by_length(long_results, m)
        plotting.recency_by_length(*beyond.rp_by_length(runs), ax)
        ax.set_title(beyond.length_label(next(iter(runs.values())).config))
    fig.legend(
        *axes[0].get_legend_handles_labels(), loc="outside upper center", ncols=min(layers + 1, 6)
    )
    plotting.glue_figure("beyond-fig-lengths", fig)

    fig, axes = plotting.panels(len(models), max_cols=2, panel_ratio=0.75, sharex=True)
    for ax, m in zip(axes, models):
        runs = beyond.by_length(long_results, m)
        plotting.binned_profiles(beyond.last_query_profiles(runs), ax)
        ax.set_title(beyond.length_label(next(iter(runs.values())).config))
    fig.legend(
        *axes[0].get_legend_handles_labels(), loc="outside upper center", ncols=min(len(lengths), 6)
    )
    plotting.glue_figure("beyond-fig-profiles", fig)
