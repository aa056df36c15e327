"""companion.beyond: the settings of chapter 8 and the findings it states.

Decision functions are tested on constructed results (every branch); the settings, the worker pool
and the table builders on small simulations with fixed seeds."""

from __future__ import annotations

import math

import numpy as np
import pytest
from fake_results import fake

from companion import beyond, claims, conventions, report, statistics, verdicts
from recency_lib import SimConfig, simulate
from recency_lib.trajectories import sequence_statistic

# -- settings ------------------------------------------------------------------------------------


def test_component_configs_change_one_part_each():
    cfgs = beyond.component_configs(
        1_000, 3, n=6, d=16, layers=3, heads=2, weights_seed=5, random_divisor=10
    )
    assert list(dict.fromkeys(k for k, _ in cfgs)) == list(beyond.components(2))
    assert {a for _, a in cfgs} == set(beyond.STUDY_ALPHAS)
    paper = cfgs[("paper", 0.5)]
    assert (
        not paper.extended
        and paper.norm == "layernorm"
        and paper.gamma == 0.0
        and (paper.n, paper.d) == (6, 16)
    )
    assert cfgs[("random", 0.5)].samples == 100 and cfgs[("ffn", 0.5)].samples == 1_000
    assert all(c.seed == 3 and c.weights_seed == 5 and c.layers == 3 for c in cfgs.values())
    for key in ("rms", "fixed", "random", "heads", "ffn", "rope", "post", "residual"):
        changed = {
            f
            for f in ("norm", "weights", "heads", "ffn", "rope", "placement", "gamma")
            if getattr(cfgs[(key, 0.5)], f) != getattr(paper, f)
        }
        assert len(changed) == 1, (key, changed)
    comb = cfgs[("combined", 0.0)]
    assert (comb.norm, comb.rope, comb.heads, comb.ffn, comb.gamma, comb.weights) == (
        "rms",
        True,
        2,
        True,
        1.0,
        "fixed",
    )


def test_component_labels_use_the_words_of_the_variant_names():
    cfgs = beyond.component_configs(100, n=5, d=16, heads=4)
    for key in ("rms", "fixed", "random", "ffn", "rope", "post", "residual"):
        cfg = cfgs[(key, 0.5)]
        assert beyond.component_label(key, cfg).removesuffix(
            " (one network)"
        ) in conventions.variant_name(cfg), key
    # fixed weights are one draw of the network: every label of such a setting says so
    assert beyond.component_label("fixed", cfgs[("fixed", 0.5)]) == "fixed weights (one network)"
    assert (
        beyond.component_label("combined", cfgs[("combined", 0.5)])
        == "all parts together (one network)"
    )
    assert "one random network" in beyond.SENTENCE_LABELS["combined"]
    assert beyond.component_label("heads", cfgs[("heads", 0.5)]) == "4 heads"
    assert beyond.component_label("heads", cfgs[("paper", 0.5)]) == "1 head"


def test_component_configs_reject_what_the_simulator_cannot_run():
    with pytest.raises(ValueError, match=r"heads=3 is not allowed with d=16"):
        beyond.component_configs(100, n=5, d=16, heads=3)


def test_length_sweep_settings_sorted_and_deduplicated():
    cfgs = beyond.length_configs([12, 5, 12], 8, d=16, layers=2, heads=2)
    models = ("paper", "residual", "combined", "combined0")
    assert list(cfgs) == [(m, L) for m in models for L in (5, 12)]
    assert list(beyond.by_model(cfgs)) == list(models)
    assert not cfgs[("paper", 5)].extended and cfgs[("residual", 5)].gamma == 1.0
    assert (
        cfgs[("combined", 12)].alpha == 0.5
        and cfgs[("combined0", 12)].alpha == 0.0
        and cfgs[("combined0", 12)].rope
    )
    assert beyond.length_label(cfgs[("combined0", 12)]) == "all parts together (one network), α = 0"
    # the exact models run as many query rows at every length; the dense ones the same sequences
    assert [cfgs[("paper", L)].samples for L in (5, 12)] == [19, 8]
    assert [cfgs[("combined", L)].samples for L in (5, 12)] == [8, 8]
    assert beyond.length_configs([10, 512], 64)[("paper", 10)].samples == 3276
    assert beyond.length_label(cfgs[("residual", 5)]) == "LayerNorm + residual, α = 0.5"


# -- findings on constructed results ---------------------------------------------------------------


def _study(rps: dict, layers=3, n=6, se=1e-3, steps=None) -> dict:
    """(key, alpha) -> fake result with per-layer recency probabilities ``rps[(key, alpha)]``."""
    fields = {key: f for key, (_, f) in beyond.components(2).items()}
    out = {}
    for (key, a), rp in rps.items():
        cfg = SimConfig(alpha=a, n=n, d=16, layers=layers, **fields[key])
        out[(key, a)] = fake(
            cfg, rp=np.asarray(rp, dtype=float), rp_se=se, step=(steps or {}).get((key, a), 0.0)
        )
    return out


def test_directions_and_the_lists_of_the_verdict():
    res = _study(
        {
            ("paper", 0.0): [0.5, 0.5, 0.5],
            ("paper", 0.5): [0.5, 0.7, 0.7],
            ("rms", 0.0): [0.5, 0.5, 0.5],
            ("rms", 0.5): [0.5, 0.8, 0.8],
            ("rope", 0.0): [0.5, 0.6, 0.6],
            ("rope", 0.5): [0.5, 0.5, 0.501],
            ("post", 0.0): [0.5, 0.4, 0.3],
            ("post", 0.5): [0.5, 0.2, 0.2],
        }
    )
    dirs = beyond.directions(res)
    assert beyond.cell_count(res) == 24
    assert dirs[("paper", 0.5)] == ("no order resolved", "recency", "recency")
    assert dirs[("rope", 0.5)][-1] == "no order resolved"  # 1 SE: below the family's z
    assert beyond.last_layer_orders(dirs, 0.5) == {
        "recency": ["rms"],
        "no order resolved": ["rope"],
        "primacy": ["post"],
    }
    assert beyond.created_order(dirs, 0.0) == ["rope", "post"]
    assert beyond.versus_paper(res, 0.5) == {"higher": ["rms"], "lower": ["rope", "post"]}
    assert beyond.names(["rms", "rope", "post"], res) == "RMSNorm, RoPE and post-norm"
    assert beyond.names(["paper", "rope"], res) == "the paper's model and RoPE"
    assert beyond.names([], res) == "none"


def test_definition1_verdicts_are_one_family():
    # steps of 3 SE: resolved alone (1.96), not in a family of 2 settings x 3 layers x 15 steps
    # (z = 3.45)
    res = _study(
        {("paper", 0.5): [0.5] * 3, ("rms", 0.5): [0.5] * 3},
        se=1e-3,
        steps={("paper", 0.5): 0.003, ("rms", 0.5): 0.1},
    )
    def1 = beyond.definition1_verdicts(res)
    assert def1[("paper", 0.5)] == ("undecided",) * 3 and def1[("rms", 0.5)] == ("holds",) * 3


def test_layer_orders_cell():
    assert (
        beyond.layer_orders(["no order resolved", "recency", "recency", "recency"])
        == "recency in layers 2–4"
    )
    assert (
        beyond.layer_orders(["no order resolved", "recency", "primacy", "primacy"])
        == "recency in layer 2; primacy in layers 3, 4"
    )
    assert beyond.layer_orders(["no order resolved"] * 2) == "no resolved order"


# -- tables and the length sweep on small simulations ----------------------------------------------


@pytest.fixture(scope="module")
def small_study():
    cfgs = beyond.component_configs(400, 2, n=5, d=16, layers=2, heads=2)
    return {k: simulate(c) for k, c in cfgs.items()}


def test_tables_of_the_component_study(small_study):
    dirs, def1 = beyond.directions(small_study), beyond.definition1_verdicts(small_study)
    summary = beyond.summary_rows(small_study, dirs, def1)
    full = beyond.full_rows(small_study, dirs, def1)
    assert len(summary) == len(beyond.components(2)) and len(full) == len(small_study) * 2
    assert summary[0]["component added"] == "none (the paper's model)"
    assert list(summary[0])[-2:] == ["RP of $S^{(2)}$, α = 0.5", "Definition 1, $S^{(2)}$, α = 0.5"]
    assert all(r["order"] in ("recency", "primacy", "no order resolved") for r in full)
    text = report.table(full, summary=summary, name="beyond-test").text
    assert ":::{dropdown} Full table (40 rows)" in text and "data:text/csv" in text
    cols = beyond.full_columns(small_study)
    assert len(cols["recency_probability"]) == len(full) and set(cols["alpha"]) == {0.0, 0.5}
    labels, rp, se = beyond.rp_matrix(small_study, 0.5)
    assert len(labels) == 10 and rp.shape == se.shape == (10, 2)


def test_length_sweep_findings_rows_and_downloads():
    cfgs = beyond.length_configs([5, 9], 64, 1, d=16, layers=2, heads=2)
    res = {k: simulate(c) for k, c in cfgs.items()}
    runs = beyond.by_model(res)["paper"]
    assert list(runs) == [5, 9]
    lengths, rp, _ = beyond.rp_by_length(runs)
    assert lengths.tolist() == [5.0, 9.0] and rp.shape == (2, 2)
    x, m, b = beyond.last_query_profile(runs[9])
    assert x.size == 8 and abs(m.mean()) < 1e-12 and np.all(b > 0)  # 8 keys: 8 bins of 16
    found = beyond.length_findings(res)
    assert list(found) == ["paper", "residual", "combined", "combined0"]
    assert all(f["rp"] in ("rises", "falls", beyond.UNCHANGED) for f in found.values())
    assert all(f["gap"] in ("grows", "shrinks", beyond.UNCHANGED) for f in found.values())
    rows = beyond.length_rows(res)
    assert len(rows) == 4 and list(rows[0]) == [
        "model",
        "RP, n = 5",
        "RP, n = 9",
        "order, n = 9",
        "RP change",
        "late − early, n = 5 (± SE bound)",
        "late − early, n = 9 (± SE bound)",
        "gap change",
    ]
    assert [r.config.samples for r in runs.values()] == [115, 64]
    gaps = found["paper"]["gaps"]
    assert list(gaps) == [5, 9] and gaps[9] == beyond.late_early(runs[9])
    g0, g1 = gaps[5][0], gaps[9][0]
    assert found["paper"]["factor"] is None or found["paper"]["factor"] == pytest.approx(g0 / g1)
    assert beyond.gap_listing(found["paper"]).endswith(f"{report.pm(*gaps[9])} at n = 9")
    g, bound = beyond.late_early(runs[9])
    assert math.isfinite(g) and bound > 0
    cols = beyond.length_columns(res)
    assert len(set(len(v) for v in cols.values())) == 1 and "binned" in cols["quantity"][-1]
    assert report.download("beyond-lengths", cols).text.count("data:") == 2


@pytest.fixture(scope="module")
def relativity_stats():
    """Chapter 7's contrasts for RoPE alone and all parts together at n = 6, small and quick."""
    cfgs = beyond.relativity_configs(
        beyond.component_configs(100, 2, n=6, d=16, layers=2, heads=2), 200
    )
    return {
        k: sequence_statistic(c, statistics.distance_contrasts, control_mean=beyond.control_mean(c))
        for k, c in cfgs.items()
    }


def test_relativity_settings_and_controls(relativity_stats):
    assert list(relativity_stats) == [
        (k, a) for k in beyond.RELATIVITY_KEYS for a in beyond.STUDY_ALPHAS
    ]
    assert all(
        st.samples == 200 and st.cv_mean is None for st in relativity_stats.values()
    )  # RoPE: plain
    assert (
        beyond.control_mean(SimConfig(heads=2, d=16)) == 0.0
        and beyond.control_mean(SimConfig(rope=True)) is None
    )


def test_relativity_rows_changes_and_readings(relativity_stats):
    assert all(
        claims.not_relative_claim(st).word in verdicts.WORDS for st in relativity_stats.values()
    )
    changes = beyond.last_layer_changes(relativity_stats)
    zc = conventions.z_for(2 * len(relativity_stats))
    for ch in changes.values():
        assert ch["z_threshold"] == zc
        for c in ("D", "K"):
            z = report.zscore(*ch[c])
            assert ch[f"{c}_word"] == (beyond.CHANGES if abs(z) > zc else beyond.UNCHANGED)
        assert ch["reading"] == beyond.READINGS[(ch["D_word"], ch["K_word"])]
    assert beyond.READINGS[(beyond.UNCHANGED, beyond.CHANGES)].startswith("follows the distance")
    rows = beyond.relativity_rows(relativity_stats)
    assert [r["component added"] for r in rows] == ["RoPE"] * 2 + [
        "all parts together (one network)"
    ] * 2
    assert all(r["not relative? (decisive $D_n - D_5$)"].endswith("(layer 2)") for r in rows)
    assert list(rows[0])[-2:] == ["$D_n - D_5$, layer 2 (z)", "$K_n - K_5$, layer 2 (z)"]
    cols = beyond.relativity_columns(relativity_stats)
    assert len(cols["mean"]) == 4 * 2 * 2 * 2  # settings x layers x D, K x queries 5, 6


def test_across_networks_decides_the_mean_by_its_spread():
    cfg = SimConfig(alpha=0.5, n=6, d=16, layers=2, weights="fixed", heads=2)
    nets = beyond.network_configs(cfg, 4, 50)
    assert [c.weights_seed for c in nets] == [1, 2, 3] and {c.samples for c in nets} == {50}
    # every network resolves its own order, but they disagree: no order across networks
    spread = [
        fake(cfg.replace(weights_seed=k), rp=[0.5, r], rp_se=1e-3)
        for k, r in enumerate((0.6, 0.45, 0.58, 0.44))
    ]
    found = beyond.across_networks(spread)
    assert found["seeds"] == [0, 1, 2, 3]
    assert found["counts"] == {"recency": 2, "no order resolved": 0, "primacy": 2}
    assert found["mean"] == pytest.approx(0.5175)
    assert found["sd"] == pytest.approx(np.std([0.6, 0.45, 0.58, 0.44], ddof=1))
    assert (
        found["t_threshold"] == pytest.approx(3.182, abs=1e-3)
        and found["word"] == "no order resolved"
    )
    agree = beyond.across_networks([fake(cfg, rp=[0.5, r]) for r in (0.6, 0.61, 0.62)])
    assert agree["word"] == "recency" and agree["t"] > agree["t_threshold"]
    assert (
        beyond.network_text(agree)
        == f"{report.pm(0.61, 0.01 / np.sqrt(3))} over 3 networks (SD 0.01)"
    )
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    assert beyond.network_panel(found, ax) is ax and len(ax.get_xticks()) == 4
    plt.close(fig)


def test_identical_scores_compares_the_bits():
    from recency_lib import model, sample_trajectories, sampling

    cfg = SimConfig(alpha=0.5, n=5, d=8, layers=2, samples=8, seed=3, engine="dense")
    scores = sample_trajectories(cfg)[0]
    x = sampling.dense_tokens(
        cfg, np.random.default_rng(np.random.SeedSequence(3, spawn_key=(0,))), 8
    )
    direct = []
    for _ in range(2):
        x, s, _, _ = model.layer(x, norm="layernorm", d=8, gamma=0.0, eps=cfg.eps)
        direct.append(s)
    assert beyond.identical_scores(scores, direct)
    moved = direct[1].copy()
    moved[2, 4, 1] = np.nextafter(moved[2, 4, 1], np.inf)  # one ulp, in the causal triangle
    assert not beyond.identical_scores(scores, [direct[0], moved])
    upper = direct[1].copy()
    upper[2, 1, 4] += 1.0  # above the diagonal: not compared
    assert beyond.identical_scores(scores, [direct[0], upper])
    assert not beyond.identical_scores(scores, direct[:1])


def test_findings_table_answers_each_question_from_the_deciding_functions(
    small_study, relativity_stats
):
    long = {
        k: simulate(c)
        for k, c in beyond.length_configs([5, 9], 32, 1, d=16, layers=2, heads=2).items()
    }
    cfg = small_study[("combined", 0.5)].config
    nets = beyond.across_networks(
        [
            small_study[("combined", 0.5)],
            *[simulate(c) for c in beyond.network_configs(cfg, 3, 100)],
        ]
    )
    rows = beyond.findings_rows(small_study, long, relativity_stats, nets)
    assert [r["evidence"] for r in rows] == ["{numref}`fig-beyond-components`"] * 2 + [
        "{numref}`fig-beyond-networks`",
        "{numref}`fig-beyond-components`",
        "{numref}`fig-beyond-contrasts`",
        "{numref}`fig-beyond-lengths`",
    ]
    orders = beyond.last_layer_orders(beyond.directions(small_study), 0.5)
    kept = len(orders["recency"])
    assert rows[0]["answer"].startswith(
        f"recency in the last layer with {kept} of {len(beyond.components(2)) - 1} parts"
    )
    assert ("primacy with" in rows[0]["answer"]) == bool(orders["primacy"])
    assert "one random network" in rows[1]["question"]
    assert " ± " in rows[1]["answer"] and "$S^{(2)}$" in rows[1]["answer"]
    across = f"RP of $S^{{(2)}}$: {beyond.network_text(nets)}: {nets['word']} across networks"
    assert rows[2]["answer"].startswith(across)
    rel = claims.not_relative_claim(relativity_stats[("rope", 0.5)])
    assert rows[4]["answer"].startswith(f"RoPE: {rel.word} ($D_n - D_5$ ")
    found = beyond.length_findings(long)
    assert rows[5]["question"] == "last layer from n = 5 to 9"
    assert rows[5]["answer"].startswith(f"the paper's model: RP {found['paper']['rp']} (")
    assert rows[5]["answer"].endswith(
        f"all parts together (one random network): RP {found['combined']['rp']}"
    )
    assert f"late − early gap {found['paper']['gap']}" in rows[5]["answer"]
    one = {k: r for k, r in long.items() if k[1] == 9}
    short = beyond.findings_rows(small_study, one, relativity_stats, nets)
    assert short[-1]["answer"] == "one length only: no change to test"
    assert report.table(rows).text.count("\n") == len(rows) + 1  # header, rule, one line per row
