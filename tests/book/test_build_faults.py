"""book/_ext/fresh_cache.py's faults, each on a tiny book: a title edit reaches every page; a failed
build (a bad environment variable, a page that fails) keeps the execution cache; SIGTERM while
executing leaves no runs' folder, no runner and no kernel."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import nbformat
import pytest
from bookutils import _ANSI, start_build
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook
from procutils import alive, children
from test_book_build import SLOW_PHASE, _executed, _interrupted_build, _tiny_book

pytestmark = pytest.mark.book


def _html(root: Path, page: str) -> str:
    return (root / "_build" / "html" / f"{page}.html").read_text()


def _set_cell(path: Path, index: int, source: str) -> None:
    nb = nbformat.read(path, as_version=4)
    nb.cells[index].source = source
    nbformat.write(nb, path)


# --------------------------------------------------------------------------- titles


def test_a_title_edit_is_written_on_every_page(tmp_path, run_jupyter_book):
    """A page's new title shows on every page (sidebar, previous/next and {doc} links), after an
    uninterrupted build and after one killed while writing; so does a page added to the toc. Sphinx
    writes again only the pages it read: the others kept the old title, in every later build."""
    pages = {
        "home": [new_markdown_cell("# Home\n\nSee {doc}`alpha`.")],
        "alpha": [new_markdown_cell("# Alpha first\n\nThe page whose title changes.")],
        "beta": [new_markdown_cell("# Beta\n\nBack to {doc}`alpha`.")],
    }
    _tiny_book(tmp_path, pages)
    (tmp_path / "book" / "_ext" / "slow_phase.py").write_text(SLOW_PHASE)
    config = tmp_path / "_config.yml"
    config.write_text(
        config.read_text().replace(
            "    collector: book/_ext\n", "    collector: book/_ext\n    slow_phase: book/_ext\n"
        )
    )
    env = {"RECENCY_LIB_CACHE": str(tmp_path / "r")}
    alpha = tmp_path / "book" / "alpha.ipynb"

    def shown(title: str) -> dict:
        """page -> whether it shows ``title``."""
        return {p: title in _html(tmp_path, p) for p in pages}

    everywhere, nowhere = dict.fromkeys(pages, True), dict.fromkeys(pages, False)

    first = run_jupyter_book(tmp_path, env=env, timeout=600)
    assert first.returncode == 0, first.tail()
    assert shown("Alpha first") == everywhere

    _set_cell(alpha, 0, "# Alpha second\n\nThe page whose title changes.")
    second = run_jupyter_book(tmp_path, env=env, timeout=600)
    assert second.returncode == 0, second.tail()
    assert (shown("Alpha second"), shown("Alpha first")) == (everywhere, nowhere), second.tail()

    _set_cell(alpha, 0, "# Alpha third\n\nThe page whose title changes.")
    log = _interrupted_build(
        tmp_path, {**env, "SLOW_PHASE": "writing"}, "SIGKILL", "slow_phase: writing"
    )
    third = run_jupyter_book(tmp_path, env=env, timeout=600)
    assert third.returncode == 0, third.tail()
    assert (shown("Alpha third"), shown("Alpha second")) == (everywhere, nowhere), (
        log[-2000:],
        third.tail(),
    )

    nb = nbformat.read(alpha, as_version=4)
    nb.cells = [new_markdown_cell("# Gamma added\n\nA new page.")]
    nbformat.write(nb, tmp_path / "book" / "gamma.ipynb")
    toc = tmp_path / "_toc.yml"
    toc.write_text(toc.read_text() + "  - file: gamma\n")
    added = run_jupyter_book(tmp_path, env=env, timeout=600)
    assert added.returncode == 0, added.tail()
    assert shown("Gamma added") == everywhere, added.tail()


# --------------------------------------------------------------------------- failed builds

HELPER_PAGE = (
    "import json\n"
    "cells = json.load(open('helper.ipynb'))['cells']\n"
    "exec(''.join(cells[0]['source']))\n"
    "print('value', VALUE)"
)


def _records(root: Path) -> set[tuple]:
    """The execution cache's records: (page, pk, hash of its cells)."""
    from jupyter_cache import get_cache

    cache = get_cache(str(root / "_build" / ".jupyter_cache"))
    return {(Path(r.uri).stem, r.pk, r.hashkey) for r in cache.list_cache_records()}


def test_a_failed_build_keeps_the_execution_cache(tmp_path, run_jupyter_book):
    """A bad environment variable of the simulator stops the build before anything runs, with one
    line naming it and its value, and removes no record (the variables are in every page's hash:
    every record was removed, every page failed, the next good build executed them all again). A
    page that fails stops the build naming the page and its error, and its stale record stays, never
    served; once fixed, only that page is executed, by fresh_cache's runner (never by myst-nb)."""
    _tiny_book(
        tmp_path,
        {
            "steady": [new_markdown_cell("# Steady"), new_code_cell("print('steady page')")],
            "uses": [new_markdown_cell("# Uses"), new_code_cell(HELPER_PAGE)],
        },
    )
    helper = tmp_path / "book" / "helper.ipynb"  # a notebook the page names: in its hash
    nbformat.write(new_notebook(cells=[new_code_cell("VALUE = 'v1'")]), helper)
    env = {"RECENCY_LIB_CACHE": str(tmp_path / "r")}

    first = run_jupyter_book(tmp_path, env=env, timeout=600)
    assert first.returncode == 0, first.tail()
    assert "value v1" in _html(tmp_path, "uses")
    records = _records(tmp_path)
    assert {page for page, *_ in records} == {"steady", "uses"}

    (tmp_path / "a-file").write_text("not a folder")
    for name, value in (
        ("RECENCY_LIB_CACHE", str(tmp_path / "a-file")),
        ("RECENCY_LIB_KERNEL", "fortran"),
        ("RECENCY_LIB_MAX_MEMORY", "lots"),
    ):
        bad = run_jupyter_book(tmp_path, env={**env, name: value}, timeout=600)
        assert bad.returncode != 0, bad.tail()
        said = bad.log.partition("Extension error (fresh_cache):\n")[2].partition("\n")[0]
        assert said.startswith(f"{name}={value!r}"), (name, bad.tail())
        assert len(bad.log.splitlines()) < 100, bad.log  # Jupyter Book's traceback ends it
        assert "fresh_cache: executing" not in bad.log and _executed(bad.log) == set(), bad.tail()
        assert _records(tmp_path) == records, f"{name}={value} removed records"
    again = run_jupyter_book(tmp_path, env=env, timeout=600)
    assert again.returncode == 0 and _executed(again.log) == set(), again.tail()

    _set_cell(helper, 0, "raise RuntimeError('deliberate failure 7315')")
    failed = run_jupyter_book(tmp_path, env=env, timeout=600)
    assert failed.returncode != 0, failed.tail()
    assert "uses failed: RuntimeError: deliberate failure 7315" in failed.log, failed.tail()
    assert _records(tmp_path) == records, "a failed page lost its record, or another page its own"
    assert "value v1" in _html(tmp_path, "uses")

    _set_cell(helper, 0, "VALUE = 'v2'")
    fixed = run_jupyter_book(tmp_path, env=env, timeout=600)
    assert fixed.returncode == 0, fixed.tail()
    assert "fresh_cache: executed uses in" in fixed.log and _executed(fixed.log) == {"uses"}, (
        fixed.tail()
    )
    assert "value v2" in _html(tmp_path, "uses")
    now = _records(tmp_path)
    assert {r for r in now if r[0] == "steady"} == {r for r in records if r[0] == "steady"}
    assert len(now) == 2, now


# --------------------------------------------------------------------------- signals

SLEEPING_PAGE = (
    "import os, time\ntime.sleep(float(os.environ.get('PAGE_SLEEP', '0')))\nprint('slept')"
)


def _descendants(pid: int) -> set[int]:
    found, todo = set(), [pid]
    while todo:
        for child in children(todo.pop()):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


class _Build:
    """`jupyter-book build book` in ``root``, in a session of its own; its output read as it
    comes."""

    def __init__(self, root: Path, env: dict):
        self.proc = start_build(root, env=env)
        self.lines, self.seen = [], set()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append(line)

    @property
    def log(self) -> str:
        return _ANSI.sub("", "".join(self.lines))

    def executing(self, kernels: int) -> set[int]:
        """Once its slots run ``kernels`` kernels: its processes (runners, kernels)."""
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            found = _descendants(self.proc.pid)
            self.seen |= found
            if "fresh_cache: executing" in self.log and len(found) >= 2 * kernels:
                time.sleep(2)  # the kernels started their pages
                self.seen |= _descendants(self.proc.pid)
                return set(self.seen)
            assert self.proc.poll() is None, self.log[-3000:]
            time.sleep(0.2)
        raise AssertionError("the build never ran its kernels:\n" + self.log[-3000:])

    def end(self) -> None:
        """Whatever is left of it killed (its processes, by id)."""
        for pid in self.seen | _descendants(self.proc.pid):
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


def test_sigterm_while_executing_leaves_no_runs_and_no_process(tmp_path, run_jupyter_book):
    """SIGTERM to the build (its process only, as `kill` or a CI timeout sends it) while it executes
    ends it at once, its runners and their kernels stopped, and nothing of its runs left in TMPDIR
    or the build's folder (tempfile's folder stayed, 7 MB a build: Python's default SIGTERM does not
    unwind). A build killed outright leaves its runs' folder in the build's folder; the next build
    removes it."""
    _tiny_book(
        tmp_path,
        {p: [new_markdown_cell(f"# {p}"), new_code_cell(SLEEPING_PAGE)] for p in ("s1", "s2")},
    )
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    env = {"RECENCY_LIB_CACHE": str(tmp_path / "r"), "TMPDIR": str(tmpdir), "PAGE_SLEEP": "120"}
    build_dir = tmp_path / "_build"

    build = _Build(tmp_path, env)
    try:
        procs = build.executing(kernels=2)
        build.proc.send_signal(signal.SIGTERM)
        build.proc.wait(60)
        assert build.proc.returncode != 0, build.log[-3000:]
        deadline = time.monotonic() + 30
        while any(alive(p) for p in procs) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert [p for p in procs if alive(p)] == [], "runners or kernels outlived the build"
    finally:
        build.end()
    left = sorted(p.relative_to(tmpdir).as_posix() for p in tmpdir.rglob("*"))
    assert left == [], "left in TMPDIR (runs, kernels' connection files)"
    assert list(build_dir.glob(".fresh_cache_tmp-*")) == []

    killed = _Build(tmp_path, env)
    try:
        killed.executing(kernels=2)
        killed.proc.kill()
        killed.proc.wait(60)
        assert build_dir.joinpath(f".fresh_cache_tmp-{killed.proc.pid}").is_dir()
    finally:
        killed.end()
    after = run_jupyter_book(tmp_path, env={**env, "PAGE_SLEEP": "0"}, timeout=600)
    assert after.returncode == 0, after.tail()
    assert list(build_dir.glob(".fresh_cache_tmp-*")) == []
    assert "slept" in _html(tmp_path, "s1") and "slept" in _html(tmp_path, "s2")


def test_a_style_edit_alone_reaches_the_site(tmp_path, run_jupyter_book):
    """Sphinx copies its static files only when a page is out of date: an edit of companion.css
    alone left the old style in the site, build after build."""
    _tiny_book(tmp_path, {"home": [new_markdown_cell("# Home")]})
    env = {"RECENCY_LIB_CACHE": str(tmp_path / "r")}
    assert run_jupyter_book(tmp_path, env=env).returncode == 0
    css = tmp_path / "book" / "_static" / "companion.css"
    css.write_text(css.read_text() + "\n/* edited */\n")
    result = run_jupyter_book(tmp_path, env=env)
    assert result.returncode == 0 and "no targets are out of date" in result.log, result.log[-2000:]
    assert (
        tmp_path / "_build" / "html" / "_static" / "companion.css"
    ).read_text() == css.read_text()
