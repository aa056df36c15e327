"""The authoring rules of book/AUTHORING.md on every notebook, read from source.

* no function, class or lambda defined in a notebook (the book's package has them, tested):
  the visible cells show how a figure's data is made, the functions they call are companion's;
* cells tagged remove-cell hold only imports, assignments and glue(...) calls (loops of them too)
  and the parameters' check;
* the code cell after the parameters cell is hidden and checks every parameter first, by its own
  name (``globals().update(params.check(PAGE, globals()))``, companion.params);
* the parameters cell is shown (no hide or remove tag), one typed and commented line per parameter
  (papermill --help-notebook prints those comments; it drops a line whose comment holds "=");
* a page that simulates shows its work: a visible code cell of at most 12 lines with the setting it
  simulates, ``SimConfig(...)`` or the call of a settings factory (``settings.fig1_configs(...)``,
  ``beyond.component_configs(...)``), and the call that simulates it (the figure follows);
* every glued figure is numbered: a {glue:figure} directive with a :name:;
* markdown has no pseudo-TeX labels such as S^(2) outside math, and never calls this page's verdict
  "the book's" (a rerun's page shows its run's under the same words).

Also: papermill runs of the exemplar pages with non-default parameter values.
"""

from __future__ import annotations

import ast
import re

import nbformat
import papermill as pm
import pytest
from bookutils import BOOK, execute_notebook, page_source, toc_pages

# every page of the book, and the setting template that papermill runs for
# Appendix B and for readers
NOTEBOOKS = [p for p in toc_pages() if page_source(p).suffix == ".ipynb"] + ["setting_template"]
GLUE_FIGURE = re.compile(r"^```\{glue:figure\}[^\n]*\n((?::[\w-]+:[^\n]*\n)*)", re.M)
PSEUDO_TEX = re.compile(r"\b[SAX]\^\(\d+\)")
HIDDEN = {"hide-cell", "hide-input", "remove-cell", "remove-input"}
PARAMETER_LINE = re.compile(r"^\w+: [\w\[\], |]+ = [^#]+  # [^=]+$")
# what runs a simulation on a page: the results cache, the simulator's entry points,
# the book's grids
SIMULATES = re.compile(
    r"\b(cached_simulate_many|cached_simulate|simulate_many|simulate|sample_trajectories|"
    r"rp_conventions|run_grid|run_setting|measure|sequence_statistic|cached_statistic)\("
)
# what shows the setting a page simulates: the config itself or the factory that writes it once
SHOWS_SETTING = re.compile(r"\bSimConfig\(|\b\w+_configs?\(")


def _code(cell) -> str:
    # IPython magics are not Python
    return "\n".join(
        line for line in cell.source.splitlines() if not line.lstrip().startswith(("%", "!"))
    )


def _checks_parameters(node) -> str | None:
    """The page named by a statement ``globals().update(params.check(PAGE, globals()))``,
    else None."""
    code = ast.unparse(node) if isinstance(node, ast.Expr) else ""
    m = re.fullmatch(r"globals\(\)\.update\(params\.check\('(\w+)', globals\(\)\)\)", code)
    return m.group(1) if m else None


def _glue_or_layout(node) -> bool:
    if isinstance(node, (ast.Import, ast.ImportFrom, ast.Assign, ast.AugAssign, ast.AnnAssign)):
        return True
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        if _checks_parameters(node):
            return True
        # glue(...) itself, or report.glue_numbers(...), which only glues what a companion.pages
        # function returns
        return getattr(node.value.func, "id", getattr(node.value.func, "attr", "")) in (
            "glue",
            "glue_numbers",
        )
    if isinstance(node, ast.For):
        return all(_glue_or_layout(n) for n in node.body) and not node.orelse
    return False


def _parameter_check_problems(page: str, code: list) -> list[str]:
    """The code cell after the parameters cell is hidden and checks every parameter by its own name,
    ``globals().update(params.check(PAGE, globals()))``, before it does anything else but import."""
    at = next((k for k, c in enumerate(code) if "parameters" in c.metadata.get("tags", [])), None)
    if at is None or at + 1 >= len(code):
        return []
    first = code[at + 1]
    body = ast.parse(_code(first)).body
    calls = [k for k, node in enumerate(body) if _checks_parameters(node)]
    if not HIDDEN & set(first.metadata.get("tags", [])) or [
        _checks_parameters(body[k]) for k in calls
    ] != [page]:
        return [
            "the code cell after the parameters cell is not a hidden cell that checks every "
            f"parameter: globals().update(params.check({page!r}, globals()))"
        ]
    if not all(isinstance(node, (ast.Import, ast.ImportFrom)) for node in body[: calls[0]]):
        return ["the parameters' check is not the first statement after the imports of its cell"]
    return []


def rule_problems(page: str) -> list[str]:
    nb = nbformat.read(page_source(page), as_version=4)
    problems = []
    for k, cell in enumerate(nb.cells):
        tags = cell.metadata.get("tags", [])
        if cell.cell_type == "markdown" and re.search(r"book's verdict", cell.source, re.I):
            problems.append(
                f"cell {k}: 'the book's verdict' names this page's own (a rerun's page shows the "
                "run's under it): say 'this page's verdict'"
            )
        if cell.cell_type == "code":
            tree = ast.parse(_code(cell))
            defined = [
                type(n).__name__
                for n in ast.walk(tree)
                if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda))
            ]
            if defined:
                problems.append(
                    f"cell {k} defines {sorted(set(defined))}: "
                    "move it into companion (or recency_lib)"
                )
            if "remove-cell" in tags and not all(_glue_or_layout(n) for n in tree.body):
                problems.append(f"cell {k} is removed but does more than import, assign and glue")
            if "parameters" in tags:
                if HIDDEN & set(tags):
                    problems.append(
                        f"cell {k}: the parameters cell is hidden ({sorted(HIDDEN & set(tags))})"
                    )
                for line in _code(cell).splitlines():
                    if line.strip() and not PARAMETER_LINE.match(line):
                        problems.append(
                            f"cell {k}: parameter line {line.strip()!r} is not "
                            "`name: type = value  # comment` with a comment free of '='"
                        )
        else:
            for m in GLUE_FIGURE.finditer(cell.source):
                if ":name:" not in m.group(1):
                    problems.append(
                        f"cell {k}: a {{glue:figure}} without :name: (unnumbered figure)"
                    )
            prose = re.sub(
                r"\$\$.*?\$\$|\$[^$\n]*\$|```.*?```|`[^`\n]*`", "", cell.source, flags=re.S
            )
            if PSEUDO_TEX.search(prose):
                problems.append(
                    f"cell {k}: pseudo-TeX label {PSEUDO_TEX.search(prose).group(0)!r}; write math"
                )
    code = [c for c in nb.cells if c.cell_type == "code"]
    if page != "setting_template":  # the grid's template checks through grid.validate_params
        problems += _parameter_check_problems(page, code)
    if any(SIMULATES.search(_code(c)) for c in code):
        shown = [
            c
            for c in code
            if not HIDDEN & set(c.metadata.get("tags", []))
            and SHOWS_SETTING.search(c.source)
            and SIMULATES.search(_code(c))
            and len(c.source.strip().splitlines()) <= 12
        ]
        if not shown:
            problems.append(
                "the page simulates but no visible cell of at most 12 lines shows the setting it "
                "simulates (SimConfig(...) or a settings factory) with the call"
            )
    return problems


@pytest.mark.parametrize("page", NOTEBOOKS)
def test_notebook_follows_the_authoring_rules(page):
    problems = rule_problems(page)
    assert not problems, f"{page}.ipynb:\n  " + "\n  ".join(problems)


# -- the exemplar pages under papermill, with parameter values other than the defaults ------------

NON_DEFAULT = {
    "index": {"samples": 3_000, "seed": 7, "workers": 1},
    "intro": {
        "samples": 2_000,
        "seed": 1,
        "n": 4,
        "d": 16,
        "layers": 2,
        "samples_alpha1": 300,
        "samples_first_order": 5_000,
    },
    "preliminaries": {
        "samples": 2_000,
        "seed": 2,
        "n": 3,
        "d": 8,
        "samples_engines": 500,
        "samples_single": 300,
    },
    # the theory chapters: every parameter moved, the large runs small, one worker (in-process pool)
    "layernorm": {
        "samples": 3_000,
        "samples_d64": 20_000,
        "samples_prop1": 4_000,
        "seed": 3,
        "n": 5,
        "workers": 1,
        "samples_first_order": 5_000,
    },
    "residual": {
        "samples": 2_000,
        "samples_first_order": 5_000,
        "seed": 4,
        "n": 4,
        "layers": 2,
        "workers": 1,
        "alpha": 0.3,
        "gamma": 0.5,
    },
    # one alpha, as papermill's -y "alphas: 0.5" gives it (a number, not a list)
    "input_distribution": {
        "samples": 2_000,
        "samples_isotropic": 10_000,
        "samples_first_order": 5_000,
        "samples_cosine": 300,
        "samples_alpha1": 300,
        "seed": 5,
        "n": 4,
        "d": 16,
        "layers": 3,
        "workers": 1,
        "alphas": 0.5,
    },
}


@pytest.mark.parametrize("page", sorted(NON_DEFAULT))
def test_exemplar_runs_with_other_parameters(page, tmp_path, monkeypatch, seeded_cache):
    monkeypatch.setenv("RECENCY_LIB_CACHE", seeded_cache(tmp_path / "cache"))
    params = NON_DEFAULT[page]
    assert set(params) <= set(pm.inspect_notebook(str(page_source(page))))
    out = tmp_path / f"{page}.ipynb"
    execute_notebook(
        str(page_source(page)),
        str(out),
        parameters=params,
        kernel_name="python3",
        cwd=str(BOOK),
    )
    nb = nbformat.read(out, as_version=4)
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    glued = [o for o in outputs if "scrapbook" in o.get("metadata", {})]
    figures = [o for o in glued if any(k.endswith("image/svg+xml") for k in o.get("data", {}))]
    assert figures, f"{page}: no figure glued"
    if page == "input_distribution":  # the prose names the grid that ran, not the book's
        grid = next(o for o in glued if o["metadata"]["scrapbook"]["name"] == "inputdist-grid")
        text = next(v for k, v in grid["data"].items() if k.endswith("text/plain"))
        assert text == "'0 and 0.5'", grid["data"]
    assert not [o for o in outputs if o.output_type == "stream" and o.get("name") == "stderr"], (
        f"{page}: warnings on stderr"
    )


def test_no_import_cycle_in_the_books_package():
    from importgraph import cycle

    assert cycle(BOOK / "companion", "companion") is None
