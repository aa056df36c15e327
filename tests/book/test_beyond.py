"""companion.beyond: the settings of chapter 8 and the findings it states.

Decision functions are tested on constructed results (every branch); the settings, the worker pool
and the table builders on small simulations with fixed seeds."""
from __future__ import annotations

import math

import numpy as np
import pytest

from recency_lib import SimConfig, simulate
from companion import beyond, conventions as cv, report
from test_claims import fake


# -- settings ------------------------------------------------------------------------------------

def test_component_configs_change_one_part_each():
    cfgs = beyond.component_configs(1_000, 3, n=6, d=16, layers=3, heads=2, weights_seed=5, random_divisor=10)
    assert list(dict.fromkeys(k for k, _ in cfgs)) == list(beyond.COMPONENT_LABELS)
    assert {a for _, a in cfgs} == set(beyond.STUDY_ALPHAS)
    paper = cfgs[("paper", 0.5)]
    assert not paper.extended and paper.norm == "layernorm" and paper.gamma == 0.0 and (paper.n, paper.d) == (6, 16)
    assert cfgs[("random", 0.5)].samples == 100 and cfgs[("ffn", 0.5)].samples == 1_000
    assert all(c.seed == 3 and c.weights_seed == 5 and c.layers == 3 for c in cfgs.values())
    for key in ("rms", "fixed", "random", "heads", "ffn", "rope", "post", "residual"):
        changed = {f for f in ("norm", "weights", "heads", "ffn", "rope", "placement", "gamma")
                   if getattr(cfgs[(key, 0.5)], f) != getattr(paper, f)}
        assert len(changed) == 1, (key, changed)
    comb = cfgs[("combined", 0.0)]
    assert (comb.norm, comb.rope, comb.heads, comb.ffn, comb.gamma, comb.weights) == ("rms", True, 2, True, 1.0, "fixed")


def test_component_labels_use_the_words_of_the_variant_names():
    cfgs = beyond.component_configs(100, n=5, d=16, heads=4)
    for key in ("rms", "fixed", "random", "ffn", "rope", "post", "residual"):
        cfg = cfgs[(key, 0.5)]
        assert beyond.component_label(key, cfg) in cv.variant_name(cfg), key
    assert beyond.component_label("heads", cfgs[("heads", 0.5)]) == "4 heads"
    assert beyond.component_label("heads", cfgs[("paper", 0.5)]) == "1 head"
    with pytest.raises(ValueError, match="key='nope' is not allowed"):
        beyond.component_label("nope", cfgs[("paper", 0.5)])


@pytest.mark.parametrize("kw, match", [
    (dict(samples=1), r"samples=1"), (dict(n=2), r"n=2"), (dict(random_divisor=0), r"random_divisor=0"),
    (dict(heads=3), r"heads=3 is not allowed with d=16"),
])
def test_component_configs_reject_bad_parameters(kw, match):
    with pytest.raises(ValueError, match=match):
        beyond.component_configs(**{**dict(samples=100, n=5, d=16), **kw})


def test_lengths_are_checked_sorted_and_deduplicated():
    assert beyond.check_lengths([32, 10, 32]) == (10, 32)
    for bad, match in (([], r"long_lengths=\[\] is empty"), ("[10, 32]", r"long_lengths='\[10, 32\]'"),
                       ([10, 2], r"long_lengths\[1\]=2"), ([10, 3.5], r"long_lengths\[1\]=3\.5"), (7, r"long_lengths=7")):
        with pytest.raises(ValueError, match=match):
            beyond.check_lengths(bad)
    cfgs = beyond.length_configs([12, 5], 8, d=16, layers=2, heads=2)
    assert list(cfgs) == [(m, L) for m in beyond.LENGTH_MODELS for L in (5, 12)]
    assert not cfgs[("paper", 5)].extended and cfgs[("residual", 5)].gamma == 1.0
    assert cfgs[("combined", 12)].alpha == 0.5 and cfgs[("combined0", 12)].alpha == 0.0 and cfgs[("combined0", 12)].rope
    assert beyond.length_label(cfgs[("combined0", 12)]) == "all parts together, α = 0"
    assert beyond.length_label(cfgs[("residual", 5)]) == "LayerNorm + residual, α = 0.5"


def test_run_on_worker_processes_gives_the_same_numbers(tmp_path):
    cfgs = list(beyond.component_configs(64, 1, n=5, d=8, layers=2, heads=2).values())[:6]
    one = beyond.run(cfgs, 1, cache=tmp_path / "a")
    two = beyond.run(cfgs, 2, cache=tmp_path / "b")
    for a, b in zip(one, two):
        assert np.array_equal(a.score_mean, b.score_mean, equal_nan=True)
        assert np.array_equal(a.recency_probability, b.recency_probability)
    with pytest.raises(ValueError, match="workers=0"):
        beyond.run(cfgs, 0, cache=tmp_path / "c")


# -- findings on constructed results ----------------------------------------------------------------

def _study(rps: dict, layers=3, n=6, se=1e-3, steps=None) -> dict:
    """(key, alpha) -> fake result with per-layer recency probabilities ``rps[(key, alpha)]``."""
    fields = beyond.component_fields(2)
    out = {}
    for (key, a), rp in rps.items():
        cfg = SimConfig(alpha=a, n=n, d=16, layers=layers, **fields[key])
        out[(key, a)] = fake(cfg, rp=np.asarray(rp, dtype=float), rp_se=se, step=(steps or {}).get((key, a), 0.0))
    return out


def test_directions_and_the_lists_of_the_verdict():
    res = _study({("paper", 0.0): [0.5, 0.5, 0.5], ("paper", 0.5): [0.5, 0.7, 0.7],
                  ("rms", 0.0): [0.5, 0.5, 0.5], ("rms", 0.5): [0.5, 0.8, 0.8],
                  ("rope", 0.0): [0.5, 0.6, 0.6], ("rope", 0.5): [0.5, 0.5, 0.501],
                  ("post", 0.0): [0.5, 0.4, 0.3], ("post", 0.5): [0.5, 0.2, 0.2]})
    dirs = beyond.directions(res)
    assert beyond.cell_count(res) == 24
    assert dirs[("paper", 0.5)] == ("no order resolved", "recency", "recency")
    assert dirs[("rope", 0.5)][-1] == "no order resolved"              # 1 SE: below the family's z
    assert beyond.last_layer_orders(dirs, 0.5) == {"recency": ["rms"], "no order resolved": ["rope"],
                                                   "primacy": ["post"]}
    assert beyond.created_order(dirs, 0.0) == ["rope", "post"]
    assert beyond.versus_reference(res, 0.5) == {"higher": ["rms"], "lower": ["rope", "post"]}
    assert beyond.names(["rms", "rope", "post"], res) == "RMSNorm, RoPE and post-LN"
    assert beyond.names([("paper", 0.0), ("rope", 0.5)], res) == "the paper's model at α = 0 and RoPE at α = 0.5"
    assert beyond.names([], res) == "none"
    assert beyond.uses_plain(res) == ["rope"]


def test_definition1_verdicts_are_one_family():
    # steps of 3 SE: resolved alone (1.96), not in a family of 2 settings x 3 layers x 15 steps (z = 3.45)
    res = _study({("paper", 0.5): [0.5] * 3, ("rms", 0.5): [0.5] * 3}, se=1e-3,
                 steps={("paper", 0.5): 0.003, ("rms", 0.5): 0.1})
    def1 = beyond.definition1_verdicts(res)
    assert def1[("paper", 0.5)] == ("undecided",) * 3 and def1[("rms", 0.5)] == ("holds",) * 3
    assert beyond.definition1_holds(def1, 0.5) == ["rms"]


def test_layer_orders_cell():
    assert beyond.layer_orders(["no order resolved", "recency", "recency", "recency"]) == "recency in layers 2–4"
    assert beyond.layer_orders(["no order resolved", "recency", "primacy", "primacy"]) == \
        "recency in layer 2; primacy in layers 3, 4"
    assert beyond.layer_orders(["no order resolved"] * 2) == "no resolved order"


def test_change_words():
    assert beyond.change(0.5, 0.01, 0.6, 0.01, 3.0) == "rises"
    assert beyond.change(0.6, 0.01, 0.5, 0.01, 3.0) == "falls"
    assert beyond.change(0.5, 0.01, 0.52, 0.01, 3.0) == beyond.UNCHANGED
    assert beyond.change(1.0, 0.1, 2.0, 0.1, 3.0, words=("grows", "shrinks")) == "grows"


# -- tables and the length sweep on small simulations ---------------------------------------------------

@pytest.fixture(scope="module")
def small_study():
    cfgs = beyond.component_configs(400, 2, n=5, d=16, layers=2, heads=2)
    return {k: simulate(c) for k, c in cfgs.items()}


def test_tables_of_the_component_study(small_study):
    dirs, def1 = beyond.directions(small_study), beyond.definition1_verdicts(small_study)
    summary = beyond.summary_rows(small_study, dirs, def1)
    full = beyond.full_rows(small_study, dirs, def1)
    assert len(summary) == len(beyond.COMPONENT_LABELS) and len(full) == len(small_study) * 2
    assert summary[0]["component added"] == "none (the paper's model)"
    assert list(summary[0])[-2:] == ["RP of $S^{(2)}$, α = 0.5", "Definition 1, $S^{(2)}$, α = 0.5"]
    assert all(r["order"] in ("recency", "primacy", "no order resolved") for r in full)
    text = report.table(full, summary=summary, name="beyond-test").text
    assert ":::{dropdown} Full table (40 rows)" in text and "data:text/csv" in text
    cols = beyond.full_columns(small_study)
    assert len(cols["recency_probability"]) == len(full) and set(cols["alpha"]) == {0.0, 0.5}
    labels, rp, se = beyond.rp_matrix(small_study, 0.5)
    assert len(labels) == 10 and rp.shape == se.shape == (10, 2)
    verdicts = beyond.relativity_verdicts(small_study)
    assert list(verdicts) == [(k, a) for k in ("paper", "rope", "combined") for a in beyond.STUDY_ALPHAS]
    rel = beyond.relativity_rows(small_study)
    assert [r["component added"] for r in rel] == ["none (the paper's model)"] * 2 + ["RoPE"] * 2 + ["all parts together"] * 2
    assert all(r["sub-diagonals not constant"].endswith("of 3") for r in rel)   # layer 2, offsets 1-3 at n = 5


def test_length_sweep_findings_rows_and_downloads():
    cfgs = beyond.length_configs([5, 9], 64, 1, d=16, layers=2, heads=2)
    res = {k: simulate(c) for k, c in cfgs.items()}
    runs = beyond.by_length(res, "paper")
    assert list(runs) == [5, 9]
    lengths, rp, se = beyond.rp_by_length(runs)
    assert lengths.tolist() == [5.0, 9.0] and rp.shape == (2, 2)
    prof = beyond.last_query_profiles(runs, bins=4)
    x, m, b = prof[9]
    assert x.size == 4 and abs(m.mean()) < 1e-12 and np.all(b > 0)
    found = beyond.length_findings(res)
    assert set(found) == set(beyond.LENGTH_MODELS)
    assert all(f["rp"] in ("rises", "falls", beyond.UNCHANGED) for f in found.values())
    assert all(f["gap"] in ("grows", "shrinks", beyond.UNCHANGED) for f in found.values())
    rows = beyond.length_rows(res)
    assert len(rows) == 4 and list(rows[0]) == ["model", "RP, n = 5", "RP, n = 9", "order, n = 9", "RP change",
                                                 "late − early, n = 9 (± SE bound)"]
    g, bound = beyond.late_early(runs[9])
    assert math.isfinite(g) and bound > 0
    cols = beyond.length_columns(res)
    assert len(set(len(v) for v in cols.values())) == 1 and "binned" in cols["quantity"][-1]
    assert report.download("beyond-lengths", cols).text.count("data:") == 2


def test_findings_table_answers_each_question_from_the_deciding_functions(small_study):
    long = {k: simulate(c) for k, c in beyond.length_configs([5, 9], 32, 1, d=16, layers=2, heads=2).items()}
    rows = beyond.findings_rows(small_study, long)
    assert [r["evidence"] for r in rows] == ["{numref}`fig-beyond-components`"] * 3 + \
        ["{numref}`fig-beyond-offsets`", "{numref}`fig-beyond-lengths`"]
    orders = beyond.last_layer_orders(beyond.directions(small_study), 0.5)
    kept = len(orders["recency"])
    assert rows[0]["answer"].startswith(f"recency in the last layer with {kept} of {len(beyond.COMPONENT_LABELS) - 1} parts")
    assert ("primacy with" in rows[0]["answer"]) == bool(orders["primacy"])
    assert " ± " in rows[1]["answer"] and "$S^{(2)}$" in rows[1]["answer"]
    rel = beyond.relativity_verdicts(small_study)[("combined", 0.5)]
    assert rows[3]["answer"].startswith("not relative" if rel.word == "holds" else "open")
    found = beyond.length_findings(long)
    assert rows[4]["question"] == "last layer's RP from n = 5 to 9"
    assert rows[4]["answer"] == f"the paper's model: {found['paper']['rp']}; all parts together: {found['combined']['rp']}"
    one = {k: r for k, r in long.items() if k[1] == 9}
    assert beyond.findings_rows(small_study, one)[4]["answer"] == "one length only: no change to test"
    assert report.table(rows).text.count("\n") == len(rows) + 1          # header, rule, one line per row


def test_run_studies_splits_one_run_into_the_two_studies(tmp_path):
    comp = beyond.component_configs(40, 1, n=4, d=8, layers=2, heads=2)
    long = beyond.length_configs([4, 6], 16, 1, d=8, layers=2, heads=2)
    res, long_res = beyond.run_studies(comp, long, 1, cache=tmp_path)
    assert list(res) == list(comp) and list(long_res) == list(long)
    assert all(r.config == comp[k] for k, r in res.items()) and all(r.config == long[k] for k, r in long_res.items())
