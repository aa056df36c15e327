"""Fixtures of the book's tests: the book is built once per test session and reused.

* ``book_build``  -- runs ``jupyter-book build book --all -W --keep-going`` from the repo
  root (output in ``_build/html``) once per session and returns a :class:`BuildResult`
  (never fails by itself; ``tests/book/test_book_build.py`` asserts on it).
* ``built_book``  -- the same result, but fails the requesting test if the build failed.
* ``toc_page``    -- parametrizes a test over every page listed in ``_toc.yml``.
* ``page_markdown`` -- docname -> markdown text of its source.
* ``run_jupyter_book`` -- runs the Jupyter Book CLI of the current interpreter.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from bookutils import (
    REPO,
    BuildResult,
    close_kept_kernels,
    computed_once,
    markdown_text,
    page_source,
    run_book,
    toc_pages,
)


def pytest_generate_tests(metafunc):
    if "toc_page" in metafunc.fixturenames:
        pages = toc_pages()
        metafunc.parametrize("toc_page", pages, ids=pages)


@pytest.fixture(scope="session")
def page_markdown():
    """docname -> the markdown prose of that page's source (notebook markdown cells)."""
    return lambda docname: markdown_text(page_source(docname))


@pytest.fixture(scope="session", autouse=True)
def _kept_kernels():
    """bookutils.execute_notebook's kernel, stopped when the session ends."""
    yield
    close_kept_kernels()


@pytest.fixture(scope="session")
def run_jupyter_book():
    return run_book


#: Results-cache entries that no page parameter changes: seaborn's theme (companion.theme: importing
#: seaborn costs the first kernel of every empty cache ~1 s) and Appendix A's sympy checks
#: (companion.errata.sympy_checks: ~6 s, their simulations included).
SEED_ENTRIES = ("seaborn-theme-", "sympy-checks-")


@pytest.fixture(scope="session")
def seeded_cache(tmp_path_factory):
    """``seeded(path)``: a new results cache at ``path`` holding only the SEED_ENTRIES, as a string
    for RECENCY_LIB_CACHE. The entries are computed once per test run, in a fresh interpreter
    (bookutils.computed_once). For the tests that run pages with other parameters, in a cache of
    their own: their simulations start from nothing, the theme and the algebra are read back.
    Computing those two in an empty cache is tested by test_theme.py, test_appendix_checks.py
    and the cold build."""

    def compute(folder: Path) -> None:
        code = "from companion import errata, theme; theme.theme(); errata.sympy_checks()"
        out = subprocess.run(
            [sys.executable, "-c", code],
            env={**os.environ, "RECENCY_LIB_CACHE": str(folder)},
            capture_output=True,
            text=True,
            timeout=900,
        )
        assert out.returncode == 0, out.stderr[-3000:]

    seeds = computed_once(tmp_path_factory, "cache-seeds", compute)
    entries = [
        f for f in seeds.iterdir() if f.name.startswith(SEED_ENTRIES) and f.suffix == ".json"
    ]
    assert len(entries) == len(SEED_ENTRIES), sorted(f.name for f in seeds.iterdir())

    def seeded(path) -> str:
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        for f in entries:
            shutil.copy2(f, path / f.name)
        return str(path)

    return seeded


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
    if run_id is None:  # one process: nothing to share
        result = run_book(REPO, "--all", "-W", "--keep-going")
        print(f"\nbook build: exit {result.returncode} in {result.seconds:.1f} s")
        return result
    (REPO / "_build").mkdir(exist_ok=True)
    record = REPO / "_build" / ".pytest-book-build.json"
    with open(REPO / "_build" / ".pytest-book-build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file is closed
        try:
            saved = json.loads(record.read_text())
        except (OSError, ValueError):
            saved = {}
        if saved.get("run") == run_id:
            return BuildResult(saved["returncode"], saved["log"], saved["seconds"], REPO)
        result = run_book(REPO, "--all", "-W", "--keep-going")
        record.write_text(
            json.dumps(
                {
                    "run": run_id,
                    "returncode": result.returncode,
                    "log": result.log,
                    "seconds": result.seconds,
                }
            )
        )
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


@pytest.fixture(scope="session")
def grid_results():
    """LayerNorm at alpha = 0.5 without and with the residual, and no normalization: n = 6, d = 16
    (small results shared by the tests of the closed forms, the statistics and the verdicts)."""
    from recency_lib import SimConfig, simulate_many

    cfgs = [
        SimConfig(alpha=0.5, gamma=0.0, n=6, d=16, layers=3, samples=4000, seed=3),
        SimConfig(alpha=0.5, gamma=1.0, n=6, d=16, layers=3, samples=4000, seed=3),
        SimConfig(alpha=0.0, gamma=0.0, norm="none", n=6, d=16, layers=3, samples=4000, seed=3),
    ]
    return simulate_many(cfgs)
