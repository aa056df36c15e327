"""Every chapter notebook is parameterised and runs through papermill with other parameters.

Each chapter must expose a `parameters` cell with at least `samples` and `seed` (typed, commented),
carry no outputs in git, and execute from its own folder with parameters injected (small sample
counts, other values: this module and the ones named in test_every_page_runs_under_papermill...).
"""

from __future__ import annotations

import re

import nbformat
import papermill as pm
import pytest
from bookutils import BOOK, execute_notebook, execute_page, page_source, toc_pages

from companion import rerun

# pages whose papermill behaviour has dedicated tests: tests/book/test_appendix_b.py (grids of its
# own), tests/book/test_explorer.py (an HTML explorer, no figure)
DEDICATED = {"appendix_b", "explorer"}

NOTEBOOKS = [p for p in toc_pages() if page_source(p).suffix == ".ipynb"]


@pytest.mark.parametrize("page", NOTEBOOKS)
def test_notebook_is_clean_and_parameterised(page):
    path = page_source(page)
    nb = nbformat.read(path, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(not c.get("outputs") and c.get("execution_count") is None for c in code), (
        f"{path.name} carries outputs; strip them before committing"
    )
    tagged = [c for c in code if "parameters" in c.metadata.get("tags", [])]
    assert len(tagged) == 1, f"{path.name}: exactly one cell must be tagged 'parameters'"
    params = pm.inspect_notebook(str(path))
    for name in ("samples", "seed"):
        assert name in params, f"{path.name}: parameter {name!r} missing"
        assert params[name]["inferred_type_name"] == "int", (
            f"{path.name}: {name} needs a type annotation"
        )
        assert params[name]["help"], f"{path.name}: {name} needs a comment"
    assert nb.metadata.get("kernelspec", {}).get("name") == "python3"


def test_every_page_runs_under_papermill_with_other_parameters():
    """Every notebook of the book has a papermill run at small sample counts with parameter values
    other than its defaults, which checks that it runs, glues figures and writes nothing to stderr:
    chapters 1-5 in tests/book/test_notebook_rules.py, chapter 6 in
    tests/book/test_empirical_page.py, chapters 7-9, the reproducibility page and Appendix A here,
    Appendix B in tests/book/test_appendix_b.py, the explorer in tests/book/test_explorer.py. (A run
    at the defaults with only the samples cut would execute each page once more for nothing:
    the full build executes every page at its defaults.) A new page must join one of those lists."""
    from test_notebook_rules import NON_DEFAULT

    covered = set(NON_DEFAULT) | set(OTHER_PARAMETERS) | {"appendix_a", "empirical"} | DEDICATED
    assert sorted(set(NOTEBOOKS) - covered) == [], "pages no papermill test runs"
    assert covered <= set(NOTEBOOKS), (
        f"tests for pages that are gone: {sorted(covered - set(NOTEBOOKS))}"
    )


# -- chapters 7, 8 and the reproducibility page with parameter values other than the defaults ------


def _glued(outputs) -> dict[str, str]:
    """Glued values among executed outputs: name -> markdown, else text/plain, as recorded."""
    out = {}
    for o in outputs:
        rec = o.get("metadata", {}).get("scrapbook")
        if rec:
            data = o.get("data", {})
            out[rec["name"]] = next(
                (v for k, v in data.items() if k.endswith("text/markdown")),
                next((v for k, v in data.items() if k.endswith("text/plain")), ""),
            )
    return out


# layers 6: chapter 8 once hard-coded a 2 x 4 grid of panels (crashed); lengths other than 512: its
# prose once said "length 512" whatever long_lengths was. Small sizes keep each run near a minute.
OTHER_PARAMETERS = {
    "conclusion": (
        {
            "samples": 2_000,
            "seed": 3,
            "n": 6,
            "d": 16,
            "layers": 6,
            "alpha": 0.3,
            "gamma": 1.0,
            "samples_short": 500,
            "long_n": 12,
            "long_samples": 200,
        },
        {"concl-layers": "'6'", "concl-samples": "'2,000'"},
    ),
    "beyond": (
        {
            "samples": 600,
            "seed": 1,
            "weights_seed": 2,
            "d": 16,
            "n": 6,
            "heads": 2,
            "layers": 6,
            "persample_divisor": 3,
            "workers": 1,
            "long_samples": 4,
            "long_lengths": [20, 6],
            "networks": 3,
            "network_samples": 100,
            "relative_samples": 300,
        },
        {
            "beyond-long-max": "'20'",
            "beyond-long-min": "'6'",
            "beyond-long-lengths": "'6 and 20'",
            "beyond-samples-random": "'200'",
            "beyond-layers": "'6'",
            "beyond-n": "'6'",
        },
    ),
    "reproducibility": ({"samples": 10, "seed": 4}, {"repro-count": "'0'"}),
    # two placements (a bare name, as papermill's -p passes it, would be one), d other than 1024
    "placements": (
        {
            "samples": 600,
            "seed": 2,
            "alpha": 0.3,
            "gamma": 0.5,
            "d": 16,
            "workers": 1,
            "placements": "['qk', 'post']",
        },
        {
            "placements-d": "'16'",
            "placements-alpha": "'0.3'",
            "placements-same-output": "'not run here'",
        },
    ),
}


@pytest.mark.parametrize("page", sorted(OTHER_PARAMETERS))
def test_closing_pages_run_with_other_parameters(page, tmp_path, monkeypatch, seeded_cache):
    monkeypatch.setenv("RECENCY_LIB_CACHE", seeded_cache(tmp_path / "cache"))
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    params, expected = OTHER_PARAMETERS[page]
    outputs = execute_page(page, params, tmp_path)
    assert not [o for o in outputs if o.output_type == "error"]
    assert not [o for o in outputs if o.output_type == "stream" and o.get("name") == "stderr"], (
        f"{page}: stderr"
    )
    glued = _glued(outputs)
    for key, value in expected.items():
        assert glued.get(key) == value, (key, glued.get(key))
    if page != "reproducibility":
        assert any("image/svg+xml" in k for o in outputs for k in o.get("data", {})), (
            f"{page}: no figure"
        )


# A bad value of any page's parameter stops the page in its first hidden cell (the parameters'
# check), under the parameter's own name, before anything is simulated. The first nine are the cases
# that were refused late (after other cells had simulated) or under an internal name.
FIRST_CELL = [
    ("beyond", {"long_samples": 0}, "long_samples=0 is out of range"),
    ("input_distribution", {"samples_alpha1": 1}, "samples_alpha1=1 is out of range"),
    (
        "layernorm",
        {"samples_prop1": 0},
        "samples_prop1=0 is out of range; allowed: an integer >= 2",
    ),
    ("intro", {"samples_first_order": 1}, "samples_first_order=1 is out of range"),
    ("preliminaries", {"samples_single": 0}, "samples_single=0 is out of range"),
    ("appendix_a", {"ds": "abc"}, "ds='abc' is not a list"),
    ("residual", {"samples_first_order": -3}, "samples_first_order=-3 is out of range"),
    ("empirical", {"depth_layers": 2}, "depth_layers=2 is out of range"),
    ("conclusion", {"long_n": 5}, "long_n=5 is out of range"),
    ("beyond", {"heads": 3}, "heads=3 is not allowed with d=64"),
    ("index", {"workers": 0}, "workers=0 is out of range"),
    ("explorer", {"samples": 1}, "samples=1 is out of range"),
    (
        "appendix_b",
        {"alphas_residual": "[0.2, 0.2]"},
        "alphas_residual='[0.2, 0.2]' repeats a value",
    ),
    ("reproducibility", {"seed": -1}, "seed=-1 is out of range"),
    ("placements", {"placements": "['pre', 'middle']"}, "placements[1]='middle' is not allowed"),
]


@pytest.mark.parametrize(
    "page, given, message", FIRST_CELL, ids=[f"{p}-{next(iter(g))}" for p, g, _ in FIRST_CELL]
)
def test_a_bad_parameter_stops_the_page_in_its_first_cell_under_its_own_name(
    page, given, message, tmp_path, monkeypatch
):
    monkeypatch.setenv("RECENCY_LIB_CACHE", str(tmp_path / "cache"))
    with pytest.raises(pm.PapermillExecutionError) as info:
        execute_page(page, given, tmp_path)
    error = info.value
    assert error.ename == "ValueError" and error.evalue.startswith(message), (
        error.ename,
        error.evalue,
    )
    failed = nbformat.read(tmp_path / f"{page}.ipynb", as_version=4)
    assert rerun._check_failed(failed), f"{page} failed in a later cell:\n{error.source}"
    assert not (tmp_path / "cache").exists() or not list((tmp_path / "cache").iterdir()), (
        "something was simulated"
    )


# -- Appendix A with parameter values other than the defaults --------------------------------------

APPENDIX_A = {
    "samples": 3_000,
    "boost": 2,
    "samples_cosine": 500,
    "samples_paper": 2_000,
    "seed": 3,
    "n": 5,
    "ds": "[8, 32]",
    "workers": 1,
}  # a list in papermill's -p form


def test_appendix_a_runs_with_other_parameters(tmp_path, monkeypatch, seeded_cache):
    """Other hidden sizes (two, none of them the paper's 64, given as papermill's -p passes a list:
    its string), a shorter sequence, one worker, another seed: every glued number and figure is
    still produced, nothing is written to stderr."""
    monkeypatch.setenv("RECENCY_LIB_CACHE", seeded_cache(tmp_path / "cache"))
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    path = page_source("appendix_a")
    assert set(APPENDIX_A) <= set(pm.inspect_notebook(str(path)))
    out = tmp_path / "appendix_a.ipynb"
    execute_notebook(
        str(path),
        str(out),
        parameters=APPENDIX_A,
        kernel_name="python3",
        cwd=str(BOOK),
    )
    nb = nbformat.read(out, as_version=4)
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    assert not [o for o in outputs if o.output_type == "stream" and o.get("name") == "stderr"]
    glued = {
        k
        for o in outputs
        for k in o.get("metadata", {}).get("scrapbook", {}).values()
        if isinstance(k, str)
    }
    markdown = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    wanted = set(re.findall(r"\{glue:(?:text|md|figure)\}`?\s*([\w-]+)", markdown))
    assert wanted and wanted <= glued, sorted(wanted - glued)
