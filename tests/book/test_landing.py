"""companion.landing: the landing page's opening and Cite section, Definition 1's steps with the
verdicts' estimator, Definition 1 on single sequences, and what the dense-versus-Gram
check compares.

Simulations are small and seeded; the effects they rely on are far from any threshold
(noted where used)."""

import math

import numpy as np
import pytest

import recency_lib
from companion import claims, landing, report, statistics, verdicts
from recency_lib import SimConfig, simulate
from recency_lib.trajectories import SequenceStatistic, sequence_statistic


@pytest.fixture(scope="module")
def aniso():
    # alpha = 0.5, d = 16: layer 2's steps are ~10 SE positive at 20,000 sequences; many blocks, so
    # the control variates are cross-fitted
    return simulate(
        SimConfig(alpha=0.5, norm="layernorm", n=5, d=16, layers=2, samples=20_000, seed=3)
    )


def check(d, text="1.0 ± 0.1", status=verdicts.AS_CLAIMED):
    return verdicts.Check("what", f"LayerNorm, $d = {d}$", 1.0, 0.1, 10.0, status, text, d=d)


# -- the opening -----------------------------------------------------------------------------------


def test_findings_read_every_word_from_the_verdicts():
    vs = [
        verdicts.decide(
            name,
            [check(16, f"{name} at 16", verdicts.AGAINST), check(64, f"{name} at 64")],
            ("doc", "x"),
        )
        for name in landing.FINDING_CLAIMS.values()
    ]
    found = landing.findings(vs)
    assert found == {k: "contradicted" for k in ("fig1", "thm1", "eq5", "corr", "prop1")}


# -- the Cite section ------------------------------------------------------------------------------


def test_repository_url_is_read_from_the_top_level_config(tmp_path):
    assert landing.repository_url().startswith("https://")
    bad = tmp_path / "_config.yml"
    bad.write_text("repository:\n  url: ftp://example.org\n")
    with pytest.raises(ValueError, match=r"repository\.url"):
        landing.repository_url(bad)


def test_citation_file_agrees_with_the_config_and_the_version():
    """_config.yml is the one place of the repository's URL; CITATION.cff must follow it
    (and the version)."""
    cff = landing._yaml(landing.CITATION)
    assert cff["repository-code"] == landing.repository_url()
    assert cff["preferred-citation"]["url"] == landing.repository_url()
    assert cff["version"] == recency_lib.__version__


def test_bib_entry_is_the_whole_entry_verbatim(tmp_path):
    entry = landing.bib_entry("kim2026layernorm")
    assert entry.startswith("@inproceedings{kim2026layernorm,") and entry.endswith("}")
    assert (
        entry.count("{") == entry.count("}")
        and "2509.21042" in entry
        and "Findings of the Association" in entry
    )
    assert entry in landing.REFERENCES.read_text(encoding="utf-8")
    with pytest.raises(ValueError, match="not in"):
        landing.bib_entry("nobody2099")
    open_entry = tmp_path / "x.bib"
    open_entry.write_text("@misc{k,\n  title = {never closed}\n")
    with pytest.raises(ValueError, match="not closed"):
        landing.bib_entry("k", open_entry)


def test_book_bibtex_takes_the_citation_file_url_and_version():
    text = landing.book_bibtex("9.9.9", "https://example.org/repo")
    assert text.startswith("@software{companion,") and text.endswith("}")
    assert "{9.9.9}" in text and "{https://example.org/repo}" in text
    title = landing._yaml(landing.CITATION)["preferred-citation"]["title"]
    assert title.replace("\u2014", "---") in text
    assert landing.repository_url() in landing.book_bibtex("1")
    block = landing.bibtex_block(text)
    assert isinstance(block, report.Markdown) and block.text.startswith("```bibtex\n")


# -- Definition 1 on single sequences --------------------------------------------------------------


def test_ordered_rows_flags_each_row_and_the_whole_matrix():
    n = 4
    s = np.full((2, 1, n, n), np.nan)
    rows = np.tril(np.arange(n, dtype=float)[None, :].repeat(n, 0))  # rising rows
    s[0, 0][np.tri(n, dtype=bool)] = rows[np.tri(n, dtype=bool)]
    s[1, 0] = s[0, 0]
    s[1, 0, 3, 1] = -1.0  # row 4 out of order
    out = statistics.ordered_rows(s, np.zeros_like(s))
    assert out.shape == (2, 1, n + 1)
    assert out[0, 0].tolist() == [1.0] * (n + 1)
    assert out[1, 0].tolist() == [0.0, 1.0, 1.0, 1.0, 0.0]


def test_single_sequences_of_layer_one_are_ordered_by_chance():
    cfg = SimConfig(alpha=0.5, norm="layernorm", n=5, d=16, layers=2, samples=2, seed=1)
    stat = sequence_statistic(cfg, statistics.ordered_rows, samples=6_000)
    one, two = landing.single_sequence_order(stat, 1), landing.single_sequence_order(stat, 2)
    assert one.rows.tolist() == [3, 4, 5]
    # layer 1's earlier keys are exchangeable: row i in order with probability
    # 1/(i-1)! (within 5 SE)
    assert np.all(np.abs(one.row_share - one.exchangeable) < 5 * one.row_se + 1e-12)
    assert two.row_share[0] > one.row_share[0]  # recency: ~ +6 SE at row 3
    assert one.count == round(one.share * 6_000) and 0 <= one.share <= one.row_share.min()
    table = landing.single_order_rows([one, two])
    assert [r["query $i$"] for r in table] == ["3", "4", "5"]
    assert set(table[0]) == {"query $i$", "layer 1", "layer 2", "$1/(i-1)!$"}


def test_single_sequence_order_of_a_constructed_statistic():
    cfg = SimConfig(n=3, layers=2)
    mean = np.array([[0.25, 1.0, 1.0, 0.5], [0.0, 1.0, 1.0, 0.0]])
    stat = SequenceStatistic(cfg, 100, mean, np.full_like(mean, 0.01))
    o = landing.single_sequence_order(stat, 1)
    assert (o.share, o.count) == (0.25, 25) and o.rows.tolist() == [3]
    assert o.row_share.tolist() == [0.5] and math.isclose(o.exchangeable[0], 0.5)


# -- the engine check ------------------------------------------------------------------------------


def test_exact_entries_are_the_diagonal_scores_and_the_first_weight():
    cfg = SimConfig(alpha=0.5, gamma=1.0, norm="layernorm", n=4, d=8, layers=3, samples=400)
    dense, gram = (
        simulate(cfg.replace(engine="dense", seed=1)),
        simulate(cfg.replace(engine="gram", seed=2)),
    )
    exact = landing.exact_entries(dense, gram)
    assert exact == {"score": cfg.layers * cfg.n, "attention": cfg.layers}
    assert sum(exact.values()) == claims.engines_agree(dense, gram).numbers["exact_count"]
    se = landing.typical_score_se(gram, 2)
    assert 0 < se < 1 and math.isnan(
        landing.typical_score_se(simulate(cfg.replace(n=1, samples=10)), 1)
    )
