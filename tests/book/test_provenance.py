"""companion.provenance and cache.entries: the reproducibility page lists exactly the results cache
entries that this build can use, and counts the rest."""

from __future__ import annotations

import shutil

from companion import provenance
from recency_lib import SimConfig, cache, kernels


def test_only_entries_under_this_builds_key_are_listed(tmp_path):
    a = SimConfig(alpha=0.5, n=4, d=8, layers=2, samples=64, seed=1)
    b = a.replace(norm="none", seed=2)
    cache.cached_simulate(a, cache=tmp_path)
    cache.cached_simulate(b, cache=tmp_path)
    path_a = tmp_path / f"{cache.cache_key(a)}.npz"
    # an entry of another library version: a valid result under a key this build never computes
    shutil.copy(path_a, tmp_path / ("0" * 32 + ".npz"))
    (tmp_path / "junk.npz").write_bytes(b"not a zip file")
    (tmp_path / "notes.txt").write_text("ignored: not an entry")
    usable, other = cache.entries(tmp_path)
    assert [e["config"] for e in usable] == sorted([a, b], key=cache.cache_key)
    assert other == 3
    assert {e["engine"] for e in usable} == {"gram"} and all(
        e["elapsed_seconds"] >= 0 for e in usable
    )
    assert cache.entries(tmp_path / "missing") == ([], 0)


def test_tables_and_downloads_of_the_simulations(tmp_path):
    cfgs = [SimConfig(alpha=a, n=4, d=8, layers=2, samples=64, seed=1) for a in (0.0, 0.5)]
    cfgs.append(SimConfig(alpha=0.5, n=4, d=8, layers=2, samples=64, seed=1, heads=2))
    cache.cached_simulate_many(cfgs, cache=tmp_path)
    entries, other = provenance.simulations(tmp_path)
    assert other == 0 and [e["engine"] for e in entries] == ["dense", "gram", "gram"]
    rows = provenance.simulation_rows(entries)
    assert (
        rows[0]["model"] == "LayerNorm, 2 heads"
        and rows[1]["α"] == "0"
        and rows[0]["engine"] == "dense"
    )
    summary = provenance.simulation_summary(entries)
    assert [r["engine"] for r in summary] == ["dense", f"gram ({kernels.kernel_name()})"]
    assert summary[1]["simulations"] == "2" and summary[1]["sequences"] == "128"
    text = provenance.simulation_table(entries).text
    assert (
        "| dense | 1 | 64 |" not in text and "LayerNorm, 2 heads" in text
    )  # 3 rows: the full table
    assert "none yet" in provenance.simulation_table([]).text
    many = entries * 8  # over 20 rows: summary + dropdown
    assert (
        ":::{dropdown} Every simulation (24 rows)"
        in provenance.simulation_table(many, name="x").text
    )


def test_software_rows_name_the_library_and_its_source_hash():
    rows = {
        r["component"]: r["version"]
        for r in provenance.software_rows(("numpy", "no-such-package-xyz"))
    }
    assert rows["no-such-package-xyz"] == "not installed" and rows["numpy"][0].isdigit()
    assert rows["recency_lib source hash"] == f"`{cache.source_hash()[:16]}`"
    assert rows["Gram-engine kernel"] == kernels.kernel_name() and rows["Gram-engine kernel"] in (
        "c",
        "numpy",
    )


def test_shown_path_is_relative_inside_the_root_and_absolute_outside(tmp_path):
    """The reproducibility page shows the results folder relative to the repository, the same text
    on every machine (a long absolute path of a temporary clone once widened the page at 390 px)."""
    root = tmp_path / "a-long-folder-name-that-a-clone-might-have" / "repo"
    inside = root / "_build" / ".recency_cache"
    inside.mkdir(parents=True)
    assert provenance.repo_path(inside, root) == "_build/.recency_cache"
    assert provenance.repo_path(root / "_build" / ".." / "_build", root) == "_build"
    outside = tmp_path / "elsewhere"
    assert provenance.repo_path(outside, root) == str(outside.resolve())


def test_what_a_run_of_a_page_held_its_simulations_verdicts_and_parameters():
    """A rerun asks the page's kernel, once the page has run, what it held
    (companion.provenance.run_summary): the values its parameters ended with, each verdict with the
    settings of its checks, and the compute time recorded with every simulation it holds (nested in
    dicts, lists and dataclasses; each once)."""
    import json

    from fake_results import fake

    from companion import claims

    ln = fake(
        SimConfig(alpha=0.3, gamma=0.5, norm="layernorm", n=6, d=64, layers=4), rp=0.6, step=0.01
    )
    iso = fake(
        SimConfig(alpha=0.0, gamma=0.5, norm="layernorm", n=6, d=64, layers=2), rp=0.6, step=0.01
    )
    verdict = claims.proposition2_claim(iso, ln)
    namespace = {
        "samples": 2000,
        "alpha": 0.3,
        "pairs": [ln, ln],
        "by": {0.5: {"a": iso}},
        "verdict": verdict,
        "_hidden": fake(iso.config),
        "other": "text",
    }
    assert provenance.held(namespace, (type(ln),)) == [ln, iso]
    assert provenance.simulation_cost(namespace) == {
        "seconds": 4.0,
        "sequences": 2 * iso.config.samples,
        "results": 2,
    }
    assert provenance.verdict_settings(namespace) == [
        {
            "claim": "Proposition 2",
            "name": "Proposition 2",
            "word": verdict.word,
            "checks": 2,
            "settings": [
                {"norm": "layernorm", "placement": "pre", "alpha": 0.0, "gamma": 0.5, "d": 64},
                {"norm": "layernorm", "placement": "pre", "alpha": 0.3, "gamma": 0.5, "d": 64},
            ],
            "number": verdict.value,  # the deciding check's, held against the book's by a rerun
            "what": verdict.decisive.what,
            "value": verdict.decisive.value,
            "se": verdict.decisive.se,
        }
    ]
    summary = json.loads(provenance.run_summary(namespace, ["samples", "alpha", "gamma"]))
    assert summary["parameters"] == {"samples": 2000, "alpha": 0.3}
    assert summary["verdicts"][0]["claim"] == "Proposition 2" and summary["cost"]["results"] == 2
