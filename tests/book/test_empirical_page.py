"""Chapter 6 (book/empirical.ipynb) under papermill with parameter values other than the defaults:
it runs, glues every number and figure its markdown cites, and rejects a bad parameter before any
simulation. Small sample counts into a private results cache; nothing is written into book/."""

from __future__ import annotations

import re

import nbformat
import papermill as pm
import pytest
from bookutils import BOOK, execute_notebook, page_source
from papermill.exceptions import PapermillExecutionError

PAGE = page_source("empirical")


def run(tmp_path, monkeypatch, seeded_cache, **params):
    monkeypatch.setenv("RECENCY_LIB_CACHE", seeded_cache(tmp_path / "cache"))
    assert set(params) <= set(pm.inspect_notebook(str(PAGE)))
    before = sorted(p.name for p in BOOK.iterdir())
    out = tmp_path / "empirical.ipynb"
    try:
        execute_notebook(
            str(PAGE),
            str(out),
            parameters=params,
            kernel_name="python3",
            cwd=str(BOOK),
        )
    finally:
        assert sorted(p.name for p in BOOK.iterdir()) == before, "the page wrote into book/"
    return nbformat.read(out, as_version=4)


def glued(nb) -> dict[str, dict]:
    """glue key -> its mime bundle, myst-nb's mime prefix stripped."""
    out = {}
    for c in nb.cells:
        for o in c.get("outputs", []):
            meta = o.get("metadata", {}).get("scrapbook")
            if meta:
                prefix = meta.get("mime_prefix", "")
                out[meta["name"]] = {k[len(prefix) :]: v for k, v in o["data"].items()}
    return out


@pytest.mark.parametrize(
    "params",
    [
        {"samples": 2_000, "samples_dsweep": 1_000, "seed": 3, "n": 4, "d": 32, "layers": 2},
        {"samples": 1_500, "samples_dsweep": 1_500, "seed": 1, "n": 6, "d": 16, "layers": 5},
    ],
    ids=["n4-d32-L2", "n6-d16-L5"],
)
def test_chapter_runs_with_other_parameters(tmp_path, monkeypatch, seeded_cache, params):
    nb = run(tmp_path, monkeypatch, seeded_cache, **params)
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    assert not [o for o in outputs if o.output_type == "stream" and o.get("name") == "stderr"]
    keys = glued(nb)
    cited = set()
    for c in nb.cells:
        if c.cell_type == "markdown":
            cited |= {
                k.split(":")[0] for k in re.findall(r"\{glue:(?:text|md)\}`([^`]+)`", c.source)
            }
            cited |= set(re.findall(r"```\{glue:(?:md|figure)\} (\S+)", c.source))
    assert cited <= set(keys), f"cited but not glued: {sorted(cited - set(keys))}"
    figures = [k for k in cited if "image/svg+xml" in keys[k]]
    assert len(figures) == 8, sorted(figures)
    assert keys["empirical-d"]["text/plain"].strip("'") == str(params["d"])
    assert keys["empirical-layers"]["text/plain"].strip("'") == str(params["layers"])
    text = " ".join(
        str(v.get("text/plain", "")) + str(v.get("text/markdown", "")) for v in keys.values()
    )
    assert "nan" not in text.lower().replace("nano", "")


@pytest.mark.parametrize(
    "param, value, message",
    [
        ("n", 2, "n=2 is out of range"),
        ("layers", 1, "layers=1 is out of range"),
        ("samples_dsweep", 1, "samples_dsweep=1 is out of range"),
    ],
)
def test_chapter_rejects_a_bad_parameter_before_simulating(
    tmp_path, monkeypatch, seeded_cache, param, value, message
):
    with pytest.raises(PapermillExecutionError, match=re.escape(message)):
        run(tmp_path, monkeypatch, seeded_cache, **{"samples": 500, param: value})
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").rglob("*.npz"))
