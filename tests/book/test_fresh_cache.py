"""book/_ext/fresh_cache.py's memo of a page's import closure (notebook_modules): the closure is the one
companion.grid.template_modules computes, it is reused while no file or folder it depends on changed, and
computed again when one did. (The whole extension, edits and rebuilds of a small book included, is
tested in test_book_build.py::test_library_change_reexecutes_exactly_the_pages_that_depend_on_it.)"""
from __future__ import annotations

import os
import sys

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from bookutils import BOOK

sys.path.insert(0, str(BOOK / "_ext"))
import fresh_cache  # noqa: E402
from companion import grid  # noqa: E402


def _notebook(path, code: str):
    nbformat.write(new_notebook(cells=[new_code_cell(code)]), path)
    return path


def _no_tokenizing(monkeypatch):
    def refuse(nb):
        raise AssertionError(f"template_modules({nb}) was computed again")
    monkeypatch.setattr(grid, "template_modules", refuse)


def test_the_memo_holds_the_closure_and_is_reused(tmp_path, monkeypatch):
    nb = _notebook(tmp_path / "a.ipynb", "from companion import theme")
    memo = {}
    modules = fresh_cache.notebook_modules(nb, memo)
    assert modules == grid.template_modules(nb) and "companion.theme" in modules
    entry = memo[str(nb)]
    assert str(nb) in entry["files"] and all(s is not None for s in entry["stats"])
    # the packages' source files are listed: a module that appears or goes changes the list
    assert entry["sources"] == fresh_cache._package_sources() and any(f.endswith("theme.py") for f in entry["sources"])
    _no_tokenizing(monkeypatch)
    assert fresh_cache.notebook_modules(nb, memo) == modules


def test_an_edited_notebook_or_module_computes_it_again(tmp_path, monkeypatch):
    nb = _notebook(tmp_path / "a.ipynb", "from companion import theme")
    memo = {}
    fresh_cache.notebook_modules(nb, memo)
    _notebook(nb, "from companion import theme, report\n# a longer notebook")   # size and time change
    assert "companion.report" in fresh_cache.notebook_modules(nb, memo)
    module = next(f for f in memo[str(nb)]["files"] if f.endswith("theme.py"))
    real = fresh_cache._stat
    monkeypatch.setattr(fresh_cache, "_stat", lambda f: [0, 0] if f == module else real(f))   # theme.py edited
    calls = []
    monkeypatch.setattr(grid, "template_modules", lambda path: calls.append(path) or ("x",))
    assert fresh_cache.notebook_modules(nb, memo) == ("x",) and calls == [nb]


def test_a_module_that_appears_or_goes_computes_it_again(tmp_path, monkeypatch):
    nb = _notebook(tmp_path / "a.ipynb", "from companion import theme")
    memo = {}
    fresh_cache.notebook_modules(nb, memo)
    real = fresh_cache._package_sources()
    monkeypatch.setattr(fresh_cache, "_package_sources", lambda: [*real, "/somewhere/companion/new.py"])
    calls = []
    monkeypatch.setattr(grid, "template_modules", lambda path: calls.append(path) or ("companion.report",))
    assert fresh_cache.notebook_modules(nb, memo) == ("companion.report",) and calls == [nb]
    assert fresh_cache.notebook_modules(nb, memo) == ("companion.report",) and calls == [nb]   # then kept


def test_byte_code_written_into_the_packages_keeps_the_memo(tmp_path, monkeypatch):
    """A first build writes __pycache__ into the package folders (their times change): the memo holds."""
    nb = _notebook(tmp_path / "a.ipynb", "from companion import theme")
    memo = {}
    fresh_cache.notebook_modules(nb, memo)
    real = fresh_cache._stat
    monkeypatch.setattr(fresh_cache, "_stat", lambda f: [1, 1] if os.path.isdir(f) else real(f))
    _no_tokenizing(monkeypatch)
    assert "companion.theme" in fresh_cache.notebook_modules(nb, memo)


def test_without_a_memo_nothing_is_kept(tmp_path):
    nb = _notebook(tmp_path / "a.ipynb", "import recency_lib.cache")
    assert fresh_cache.notebook_modules(nb) == grid.template_modules(nb)


@pytest.mark.parametrize("entry", [None, {}, {"modules": ["x"]}, {"modules": ["x"], "files": [], "stats": []},
                                   "junk", {"modules": ["x"], "files": ["/nonexistent"], "stats": [None]},
                                   {"modules": [1], "files": ["NB"], "stats": ["NOW"]},
                                   {"modules": ["x"], "files": ["NB", "/nonexistent"], "stats": ["NOW", None]}])
def test_a_damaged_or_empty_entry_is_computed_again(tmp_path, entry):
    nb = _notebook(tmp_path / "a.ipynb", "from companion import theme")
    if isinstance(entry, dict):               # "NB": the notebook itself, "NOW": its current stat
        entry = {k: [str(nb) if x == "NB" else fresh_cache._stat(str(nb)) if x == "NOW" else x for x in v]
                 for k, v in entry.items()}
    memo = {str(nb): entry}
    assert fresh_cache.notebook_modules(nb, memo) == grid.template_modules(nb)
