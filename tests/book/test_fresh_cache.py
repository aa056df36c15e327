"""book/_ext/fresh_cache.py's dependency hash of a page: the two packages' files, the notebooks the
page names, the environment a page shows; nothing else (not where the checkout lives). The extension
at work (edits, rebuilds, an interrupted build) is tested on a small book in test_book_build.py."""

from __future__ import annotations

import sys

import nbformat
from bookutils import BOOK
from nbformat.v4 import new_code_cell, new_notebook

sys.path.insert(0, str(BOOK / "_ext"))
import fresh_cache

from companion import sources


def _notebook(path, code: str):
    nbformat.write(new_notebook(cells=[new_code_cell(code)]), path)
    return path


def test_a_page_depends_on_every_file_of_both_packages(tmp_path, monkeypatch):
    nb = _notebook(tmp_path / "a.ipynb", "print(1)")
    files = sources.package_files()
    assert (
        "recency_lib/_kernel.c" in files
        and "companion/report.py" in files
        and "recency_lib/engines.py" in files
    )
    assert any(name.startswith("companion/assets/") for name in files)
    assert not [n for n in files if "__pycache__" in n or n.endswith((".so", ".pyc"))]
    base = fresh_cache.dependency_hash(nb, tmp_path)
    edited = dict(files)
    edited["companion/new.py"] = nb  # a file that appears
    monkeypatch.setattr(sources, "package_files", lambda: edited)
    assert fresh_cache.dependency_hash(nb, tmp_path) != base
    monkeypatch.undo()
    assert fresh_cache.dependency_hash(nb, tmp_path) == base


def test_named_notebooks_and_the_shown_environment_count(tmp_path, monkeypatch):
    template = _notebook(tmp_path / "template.ipynb", "x = 1")
    page = _notebook(tmp_path / "page.ipynb", "run('template.ipynb')")
    base = fresh_cache.dependency_hash(page, tmp_path)
    _notebook(template, "x = 2")
    assert fresh_cache.dependency_hash(page, tmp_path) != base
    again = fresh_cache.dependency_hash(page, tmp_path)
    monkeypatch.setenv("RECENCY_LIB_KERNEL", "numpy")
    assert fresh_cache.dependency_hash(page, tmp_path) != again


def test_the_simulators_kernel_path_counts(tmp_path, monkeypatch):
    """A kernel older than its source runs the numpy path (recency_lib.kernels); rebuilding it
    changes no source file, yet the pages computed meanwhile (and the reproducibility page, which
    names the kernel) must be executed again."""
    from recency_lib import kernels

    page = _notebook(tmp_path / "page.ipynb", "print(1)")
    base = fresh_cache.dependency_hash(page, tmp_path)
    other = {"c": "numpy", "numpy": "c"}[kernels.kernel_name()]
    monkeypatch.setattr(kernels, "kernel_name", lambda: other)
    assert fresh_cache.dependency_hash(page, tmp_path) != base


def test_the_readme_counts(tmp_path):
    """The reproducibility page shows the README's recipes: an edited README executes the pages
    again."""
    (tmp_path / "book").mkdir()
    page = _notebook(tmp_path / "book" / "page.ipynb", "print(1)")
    base = fresh_cache.dependency_hash(page)  # the book's root: the notebook's folder's parent
    (tmp_path / "README.md").write_text("## Rerun\n")
    edited = fresh_cache.dependency_hash(page)
    (tmp_path / "README.md").write_text("## Rerun\n\nanother recipe\n")
    assert len({base, edited, fresh_cache.dependency_hash(page)}) == 3
    assert "README.md" in sources.ROOT_FILES
