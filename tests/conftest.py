"""Shared fixtures: the book is built once per test session and reused.

* ``book_build``  -- runs ``jupyter-book build book --all -W --keep-going`` from the repo
  root (output in ``_build/html``) once per session and returns a :class:`BuildResult`
  (never fails by itself; ``tests/test_book_build.py`` asserts on it).
* ``built_book``  -- the same result, but fails the requesting test if the build failed.
* ``toc_page``    -- parametrizes a test over every page listed in ``_toc.yml``.
* ``page_markdown`` -- docname -> markdown text of its source.
* ``run_jupyter_book`` -- runs the Jupyter Book CLI of the current interpreter.
"""

from __future__ import annotations

import dataclasses
import glob
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BOOK = REPO / "book"
HTML = REPO / "_build" / "html"
SOURCE_SUFFIXES = (".ipynb", ".md", ".rst")
BUILD_TIMEOUT = int(os.environ.get("BOOK_BUILD_TIMEOUT", "3600"))

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
# Sphinx's own diagnostics ("path:line: WARNING: ...", "ERROR: ..."). The kernel's log lines
# ("[IPKernelApp] WARNING | ...") are not Sphinx warnings and are not counted.
_SPHINX_PROBLEM = re.compile(r"\b(WARNING|ERROR|CRITICAL|SEVERE):")


def jupyter_book_cmd() -> list[str]:
    """The `jupyter-book` CLI that belongs to the interpreter running the tests."""
    script = Path(sys.executable).with_name("jupyter-book")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "import sys; from jupyter_book.cli.main import main; sys.exit(main())"]


@dataclasses.dataclass
class BuildResult:
    returncode: int
    log: str
    seconds: float
    root: Path

    @property
    def html(self) -> Path:
        return self.root / "_build" / "html"

    @property
    def problems(self) -> list[str]:
        return [line for line in self.log.splitlines() if _SPHINX_PROBLEM.search(line)]

    def tail(self, n: int = 60) -> str:
        return "\n".join(self.log.splitlines()[-n:])


def run_book(root: Path, *args: str, timeout: int = BUILD_TIMEOUT, env: dict | None = None) -> BuildResult:
    """Run `jupyter-book build book ARGS` in `root`; stdout+stderr without colours. ``env``: extra
    environment variables (e.g. PYTHONPATH to a copy of the package)."""
    env = dict(os.environ, NO_COLOR="1", PYTHONUNBUFFERED="1", **(env or {}))
    # The kernel of the notebooks must be this interpreter's (kernelspec "python3").
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    start = time.perf_counter()
    proc = subprocess.run(
        [*jupyter_book_cmd(), "build", "book", *args],
        cwd=root, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True, timeout=timeout,
    )
    return BuildResult(proc.returncode, _ANSI.sub("", proc.stdout), time.perf_counter() - start, root)


# --------------------------------------------------------------------------- toc & sources

def toc_pages(root: Path = REPO) -> list[str]:
    """Docnames (relative to book/, without suffix) of every page in _toc.yml, in order."""
    import yaml

    toc = yaml.safe_load((root / "_toc.yml").read_text(encoding="utf8"))
    book = root / "book"
    pages: list[str] = []

    def strip(path: str) -> str:
        for suf in SOURCE_SUFFIXES:
            if path.endswith(suf):
                return path[: -len(suf)]
        return path

    def walk(node) -> None:
        if isinstance(node, dict):
            if "root" in node:
                pages.append(strip(node["root"]))
            if "file" in node:
                pages.append(strip(node["file"]))
            if "glob" in node:
                for hit in sorted(glob.glob(str(book / node["glob"]))):
                    rel = Path(hit).relative_to(book).as_posix()
                    if rel.endswith(SOURCE_SUFFIXES):
                        pages.append(strip(rel))
            for key, value in node.items():
                if isinstance(value, (list, dict)):
                    walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(toc)
    return list(dict.fromkeys(pages))


def page_source(docname: str, root: Path = REPO) -> Path:
    for suf in SOURCE_SUFFIXES:
        path = root / "book" / f"{docname}{suf}"
        if path.exists():
            return path
    raise FileNotFoundError(f"no source for toc entry {docname!r} under {root / 'book'}")


def execute_page(docname: str, parameters: dict, out_dir: Path) -> list:
    """Run a chapter through papermill from book/ with ``parameters`` (into ``out_dir``, never over the
    source) and return the outputs of its code cells (errors raise PapermillExecutionError)."""
    import nbformat
    import papermill as pm

    source = page_source(docname)
    unknown = set(parameters) - set(pm.inspect_notebook(str(source)))
    assert not unknown, f"{docname}: unknown parameters {sorted(unknown)}"
    out = Path(out_dir) / f"{docname}.ipynb"
    pm.execute_notebook(str(source), str(out), parameters=parameters, kernel_name="python3", cwd=str(BOOK),
                        progress_bar=False)
    return [o for c in nbformat.read(out, as_version=4).cells if c.cell_type == "code" for o in c.outputs]


def light_template(path: Path) -> Path:
    """A template for the driver's own tests: the real template's parameters cell, then one cell that
    simulates and writes the result file. Keys, reuse, staging and failures are the driver's logic;
    the real template's imports and figures (two thirds of a run) are tested on the template itself."""
    import nbformat

    nb = nbformat.read(BOOK / "setting_template.ipynb", as_version=4)
    params = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
    body = nbformat.v4.new_code_cell(
        "from companion import grid\n"
        "from recency_lib.cache import cached_simulate\n\n"
        "setting = grid.validate_params(dict(alpha=alpha, gamma=gamma, norm=norm, n=n, d=d, layers=layers,\n"
        "                                    samples=samples, seed=seed))\n"
        "cached_simulate(grid.config_of(setting)).save(grid.result_file(result_path))")
    nb.cells = [params, body]
    nbformat.write(nb, path)
    return path


def markdown_text(path: Path) -> str:
    """The prose of a page: markdown cells of a notebook, or the whole .md/.rst file."""
    if path.suffix == ".ipynb":
        import nbformat

        nb = nbformat.read(path, as_version=4)
        return "\n\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    return path.read_text(encoding="utf8")


# --------------------------------------------------------------------------- fixtures

def pytest_generate_tests(metafunc):
    if "toc_page" in metafunc.fixturenames:
        pages = toc_pages()
        metafunc.parametrize("toc_page", pages, ids=pages)


@pytest.fixture(scope="session")
def page_markdown():
    """docname -> the markdown prose of that page's source (notebook markdown cells)."""
    return lambda docname: markdown_text(page_source(docname))


@pytest.fixture(scope="session")
def run_jupyter_book():
    return run_book


@pytest.fixture(scope="session")
def book_build() -> BuildResult:
    """Build the whole book once per test run, as CI does (into the repo's _build/).

    Under pytest-xdist each worker has its own session, so a session fixture alone builds the book
    once per worker that needs it (the ``xdist_group`` marker does not help: xdist 3.8 writes the
    group into ``item._nodeid``, which pytest 9 no longer reads). The workers of one run share its
    ``PYTEST_XDIST_TESTRUNUID``: the first to get here builds under an flock, the others wait for
    it and read its result (exit status, log, seconds) from ``_build/.pytest-book-build.json``."""
    import fcntl
    import json

    run_id = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    if run_id is None:                                       # one process: nothing to share
        result = run_book(REPO, "--all", "-W", "--keep-going")
        print(f"\nbook build: exit {result.returncode} in {result.seconds:.1f} s")
        return result
    (REPO / "_build").mkdir(exist_ok=True)
    record = REPO / "_build" / ".pytest-book-build.json"
    with open(REPO / "_build" / ".pytest-book-build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)                     # released when the file is closed
        try:
            saved = json.loads(record.read_text())
        except (OSError, ValueError):
            saved = {}
        if saved.get("run") == run_id:
            return BuildResult(saved["returncode"], saved["log"], saved["seconds"], REPO)
        result = run_book(REPO, "--all", "-W", "--keep-going")
        record.write_text(json.dumps({"run": run_id, "returncode": result.returncode, "log": result.log,
                                      "seconds": result.seconds}))
    print(f"\nbook build: exit {result.returncode} in {result.seconds:.1f} s")
    return result


@pytest.fixture(scope="session")
def built_book(book_build: BuildResult) -> BuildResult:
    if book_build.returncode != 0:
        pytest.fail(
            f"the book build failed (exit {book_build.returncode}); "
            "see test_book_builds_without_warnings. Sphinx problems:\n  "
            + "\n  ".join(book_build.problems[:10] or ["(none; see the log)"]),
            pytrace=False,
        )
    return book_build


# Tests that execute notebooks in Jupyter kernels (papermill) or are slow by design (a fresh interpreter
# at n = 512 on the numpy path): marked ``book`` too, so ``pytest -m "not book"`` is the library's
# quick loop. Named here, once, by test function (module::function, parameters aside).
HEAVY = {
    "test_notebook_rules.py::test_exemplar_runs_with_other_parameters",
    "test_explorer.py::test_notebook_runs_with_small_samples",
    "test_explorer.py::test_notebook_rejects_bad_workers",
    "test_appendix_b.py::test_template_writes_its_result",
    "test_appendix_b.py::test_bad_parameter_fails_in_first_cell_and_writes_nothing",
    "test_appendix_b.py::test_driver_skips_unchanged_and_reruns_on_change",
    "test_hostile_faults.py::test_grid_reruns_a_damaged_result_and_sweeps_dead_staging",
    "test_hostile_faults.py::test_grid_driver_killed_mid_run_leaves_no_kernel_and_no_staging",
    "test_engines.py::test_memory_does_not_grow_with_samples",
    "test_engines.py::test_memory_at_n512_is_bounded_on_every_path",
    "test_appendix_b.py::test_appendix_runs_with_other_parameters",
    "test_appendix_b.py::test_appendix_rejects_a_bad_grid_before_any_run",
    "test_notebooks.py::test_closing_pages_run_with_other_parameters",
    "test_notebooks.py::test_beyond_rejects_bad_parameters_before_any_work",
    "test_notebooks.py::test_appendix_a_runs_with_other_parameters",
}
HEAVY_MODULES = {"test_empirical_page.py"}     # chapter 6 under papermill, every test
HEAVY_FIXTURES = {"appendix"}      # test_appendix_b.py: the appendix page executed by papermill


def _is_heavy(item) -> bool:
    name = f"{item.path.name}::{getattr(item, 'originalname', item.name)}"
    return (name in HEAVY or item.path.name in HEAVY_MODULES
            or bool(HEAVY_FIXTURES & set(getattr(item, "fixturenames", ()))))


def pytest_itemcollected(item):
    """Marks the HEAVY tests ``book`` (so ``pytest -m "not book"`` is the library's quick loop)."""
    if _is_heavy(item) or item.get_closest_marker("slow"):
        item.add_marker(pytest.mark.book)


def _needs_the_book(item) -> bool:
    return bool({"book_build", "built_book"} & set(getattr(item, "fixturenames", ())))


def pytest_collection_modifyitems(session, config, items):
    """Order for two workers (pytest-xdist hands out the first quarter of the items alternately, the
    rest as workers free up): first one test that builds the book, so that its ~100 s start at once
    on one worker while the other runs everything that does not need the book, the quick tests
    before the heavy ones (the first worker's alternate share of the head is then quick to finish
    after the build); the tests that read the built book last. A stable sort: within a group the
    collection order stays."""
    first = next((i for i, item in enumerate(items) if _needs_the_book(item)), None)
    if first is None:
        return
    builder = items.pop(first)

    def group(item) -> int:
        if _needs_the_book(item):
            return 2
        return 1 if item.get_closest_marker("book") else 0

    items.sort(key=group)
    items.insert(0, builder)
