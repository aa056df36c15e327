"""The book builds from scratch with zero warnings; failures and stale caches are caught.

The full build is a session fixture (tests/book/conftest.py) shared with the browser test.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import threading
import time
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.book


# --------------------------------------------------------------------------- the real book


def test_book_builds_without_warnings(book_build):
    assert book_build.returncode == 0, (
        f"`jupyter-book build book --all -W --keep-going` exited {book_build.returncode}.\n"
        "Sphinx warnings/errors:\n  "
        + "\n  ".join(book_build.problems or ["(none)"])
        + "\nend of the log:\n"
        + book_build.tail(40)
    )
    assert book_build.problems == [], "Sphinx warnings/errors:\n" + "\n".join(book_build.problems)
    assert re.search(r"^build succeeded\.\s*$", book_build.log, re.M), book_build.tail()


def test_every_toc_page_has_html(built_book, toc_page):
    html = built_book.html / f"{toc_page}.html"
    assert html.is_file(), f"{toc_page} is in _toc.yml but {html} was not built"
    assert html.stat().st_size > 0


def test_no_remote_scripts_styles_or_fonts(built_book, toc_page):
    """Nothing a page loads by itself (script src, link href) points off the machine."""
    text = (built_book.html / f"{toc_page}.html").read_text(encoding="utf8")
    remote = re.findall(r"<script\b[^>]*\bsrc=[\"']((?:https?:)?//[^\"']+)", text)
    remote += [
        m.group(2)
        for m in re.finditer(r"<link\b([^>]*)\bhref=[\"']((?:https?:)?//[^\"']+)", text)
        if not re.search(r"rel=[\"'](?:next|prev|canonical|author)[\"']", m.group(0))
    ]
    assert remote == [], f"{toc_page}.html loads remote resources: {remote}"
    if 'class="math' in text:
        assert "_static/mathjax/tex-mml-chtml.js" in text, "math page without the local MathJax"


def test_local_mathjax_copied(built_book):
    mj = built_book.html / "_static" / "mathjax"
    assert (mj / "tex-mml-chtml.js").is_file()
    assert any((mj / "output" / "chtml" / "fonts" / "woff-v2").glob("*.woff"))
    assert (mj / "input" / "tex" / "extensions" / "ams.js").is_file()


# --------------------------------------------------------------------------- tiny books


def _tiny_book(root: Path, notebooks: dict[str, list]) -> None:
    """A book in `root` with the repo's _config.yml, extensions, CSS and bibliography,
    and `notebooks` (name -> cells) as its pages; the first notebook is the root page."""
    shutil.copy(REPO / "_config.yml", root / "_config.yml")
    book = root / "book"
    book.mkdir()
    shutil.copy(
        REPO / "book" / "references.bib", book / "references.bib"
    )  # _config.yml's bibtex_bibfiles
    for sub in ("_ext", "_static"):
        if (REPO / "book" / sub).is_dir():
            shutil.copytree(
                REPO / "book" / sub, book / sub, ignore=shutil.ignore_patterns("__pycache__")
            )
    names = list(notebooks)
    toc = f"format: jb-book\nroot: {names[0]}\n"
    if names[1:]:
        toc += "chapters:\n" + "".join(f"  - file: {n}\n" for n in names[1:])
    (root / "_toc.yml").write_text(toc)
    (book / "_toc.yml").symlink_to("../_toc.yml")
    meta = {
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
    }
    for name, cells in notebooks.items():
        nb = new_notebook(cells=cells, metadata=meta)
        for i, cell in enumerate(nb.cells):
            cell.id = f"c{i}"
        nbformat.write(nb, book / f"{name}.ipynb")


def test_failing_notebook_fails_the_build(tmp_path, run_jupyter_book):
    _tiny_book(
        tmp_path,
        {
            "boom": [
                new_markdown_cell("# Boom"),
                new_code_cell("raise RuntimeError('deliberate failure 8517')"),
            ]
        },
    )
    result = run_jupyter_book(tmp_path, "--all", "-W", "--keep-going", timeout=600)
    assert result.returncode != 0, "a notebook that raises must fail the build:\n" + result.tail()
    assert "deliberate failure 8517" in result.log, result.tail()


def _executed(log: str) -> set[str]:
    """Pages a build executed (in parallel by fresh_cache, or by myst-nb itself)."""
    return set(re.findall(r"fresh_cache: executed (\w+) in", log)) | {
        Path(p).stem for p in re.findall(r"(\S+\.ipynb): Executing notebook", log)
    }


def _results(folder: Path) -> dict[str, int]:
    """The results cache's entries (file name -> modification time): a recomputed
    simulation rewrites one."""
    return {p.name: p.stat().st_mtime_ns for p in folder.glob("*.npz")}


SIMULATING_PAGE = (
    "from recency_lib import SimConfig\n"
    "from recency_lib.cache import cached_simulate\n"
    "from companion import conventions, report\n"
    "res = cached_simulate(SimConfig(alpha=0.5, n=6, d=16, layers=2, samples=2000, seed=1))\n"
    "print('rp', report.pm(res.recency_probability[1], res.recency_probability_sem[1]), "
    "'font', conventions.FONT_PT)"
)


def test_library_change_reexecutes_the_pages_and_recomputes_only_simulations_it_changes(
    tmp_path, run_jupyter_book
):
    """book/_ext/fresh_cache.py: every page is executed again when a file of the two packages
    changed (each chapter reaches nearly all of them: companion.sources). A style edit of the book's
    package (a font size in companion/conventions.py) recomputes no simulation (the results cache
    keys only what a simulation runs); an edit of the simulator's kernel recomputes the simulation;
    no edit, no execution; a fresh Sphinx environment (--all) keeps the current results; moving the
    whole checkout executes nothing; another results folder executes every page (a page may show
    where results live)."""
    root = tmp_path / "a"
    lib = root / "lib"
    for pkg, src in (
        ("recency_lib", REPO / "recency_lib"),
        ("companion", REPO / "book" / "companion"),
    ):
        shutil.copytree(src, lib / pkg, ignore=shutil.ignore_patterns("__pycache__"))
    with open(lib / "companion" / "plotting.py", "a") as fh:
        fh.write("\nPROBE = 'plotting-1'\n")

    def env(base: Path) -> dict:
        return {"PYTHONPATH": str(base / "lib"), "RECENCY_LIB_CACHE": str(base / "results")}

    root.mkdir(exist_ok=True)
    _tiny_book(
        root,
        {
            "plots": [
                new_markdown_cell("# Plots"),
                new_code_cell("from companion import plotting\nprint(plotting.PROBE)"),
            ],
            "sims": [new_markdown_cell("# Sims"), new_code_cell(SIMULATING_PAGE)],
            "plain": [
                new_markdown_cell("# Plain"),
                new_code_cell(
                    "import os\nprint('no library here; results in', "
                    "os.environ['RECENCY_LIB_CACHE'])"
                ),
            ],
        },
    )
    html = root / "_build" / "html"

    first = run_jupyter_book(root, env=env(root), timeout=600)
    assert first.returncode == 0, first.tail()
    assert _executed(first.log) == {"plots", "sims", "plain"}, first.tail()
    assert "plotting-1" in (html / "plots.html").read_text()
    results = _results(root / "results")
    assert len(results) == 1, results

    unchanged = run_jupyter_book(root, env=env(root), timeout=600)
    assert unchanged.returncode == 0, unchanged.tail()
    assert _executed(unchanged.log) == set(), unchanged.tail()

    plotting = lib / "companion" / "plotting.py"
    plotting.write_text(plotting.read_text().replace("plotting-1", "plotting-2"))
    edited = run_jupyter_book(root, env=env(root), timeout=600)
    assert edited.returncode == 0, edited.tail()
    assert _executed(edited.log) == {"plots", "sims", "plain"}, edited.tail()
    assert "plotting-2" in (html / "plots.html").read_text(), (
        "the page still shows the old library's output"
    )
    assert _results(root / "results") == results, (
        "an edit of the book's package recomputed a simulation"
    )

    conventions = lib / "companion" / "conventions.py"
    text = conventions.read_text()
    assert "FONT_PT = 10.0" in text
    conventions.write_text(text.replace("FONT_PT = 10.0", "FONT_PT = 10.5"))
    styled = run_jupyter_book(root, env=env(root), timeout=600)
    assert styled.returncode == 0, styled.tail()
    assert _executed(styled.log) == {"plots", "sims", "plain"}, styled.tail()
    assert "font 10.5" in (html / "sims.html").read_text()
    assert _results(root / "results") == results, "a style edit recomputed a simulation"

    kernels = lib / "recency_lib" / "kernels.py"
    kernels.write_text(kernels.read_text() + "\n# an edit of the kernel\n")
    edited = run_jupyter_book(root, env=env(root), timeout=600)
    assert edited.returncode == 0, edited.tail()
    assert _executed(edited.log) == {"plots", "sims", "plain"}, edited.tail()
    assert len(_results(root / "results")) == 2, "the kernel edit did not recompute the simulation"

    full = run_jupyter_book(root, "--all", env=env(root), timeout=600)  # a fresh Sphinx environment
    assert full.returncode == 0, full.tail()
    assert _executed(full.log) == set(), "the cache of the current library was lost"
    assert "plotting-2" in (html / "plots.html").read_text()

    moved = tmp_path / "b"
    shutil.move(root, moved)  # the whole checkout, built, elsewhere
    again = run_jupyter_book(moved, env=env(moved), timeout=600)
    assert again.returncode == 0, again.tail()
    assert _executed(again.log) == set(), (
        "moving the checkout executed pages again:\n" + again.tail()
    )

    other = run_jupyter_book(
        moved, env={**env(moved), "RECENCY_LIB_CACHE": str(tmp_path / "elsewhere")}, timeout=600
    )
    assert other.returncode == 0, other.tail()  # a page may show where results live
    assert _executed(other.log) == {"plots", "sims", "plain"}, other.tail()
    assert str(tmp_path / "elsewhere") in (moved / "_build" / "html" / "plain.html").read_text()


def test_parallel_slots_reuse_their_kernel_cleared_between_pages(tmp_path, run_jupyter_book):
    """fresh_cache's slots run several pages on one kernel each: every page starts with an empty
    namespace (an earlier page's variable is gone), in the book's folder, with the execution counts
    of a fresh kernel (the first page of each slot has one); with 4 pages on 2 slots, some pages
    share a kernel (the same process id)."""
    probe = (
        "import os\n"
        "assert 'leftover' not in globals(), 'an earlier page left its namespace'\n"
        "leftover = 1\n"
        "print('probe', os.getpid(), os.path.basename(os.getcwd()), get_ipython().execution_count)"
    )
    _tiny_book(
        tmp_path,
        {
            name: [new_markdown_cell(f"# {name}"), new_code_cell(probe)]
            for name in ("p1", "p2", "p3", "p4")
        },
    )
    result = run_jupyter_book(
        tmp_path,
        "--all",
        "-W",
        "--keep-going",
        env={"RECENCY_LIB_CACHE": str(tmp_path / "r")},
        timeout=600,
    )
    assert result.returncode == 0, result.tail()
    assert "fresh_cache: executing 4 notebooks, 2 at a time" in result.log, result.tail()
    probes = [
        re.search(
            r"probe (\d+) (\S+) (\d+)", (tmp_path / "_build" / "html" / f"{p}.html").read_text()
        ).groups()
        for p in ("p1", "p2", "p3", "p4")
    ]
    assert {folder for _, folder, _ in probes} == {"book"}
    assert len({count for *_, count in probes}) == 1, (
        "execution counts differ from a fresh kernel's"
    )
    assert len({pid for pid, *_ in probes}) < 4, "no page ran on an earlier page's kernel"


def test_notebooks_run_in_parallel_and_a_failure_still_fails_the_build(tmp_path, run_jupyter_book):
    """With two or more notebooks to execute, fresh_cache runs them in parallel processes; one that
    fails stops the build with the page's name and its error (the cache keeps its records)."""
    _tiny_book(
        tmp_path,
        {
            "ok": [new_markdown_cell("# OK"), new_code_cell("print('fine')")],
            "boom": [
                new_markdown_cell("# Boom"),
                new_code_cell("raise RuntimeError('deliberate failure 4410')"),
            ],
        },
    )
    result = run_jupyter_book(
        tmp_path,
        "--all",
        "-W",
        "--keep-going",
        env={"RECENCY_LIB_CACHE": str(tmp_path / "r")},
        timeout=600,
    )
    assert "fresh_cache: executing 2 notebooks" in result.log, result.tail()
    assert result.returncode != 0 and "deliberate failure 4410" in result.log, result.tail()


# --------------------------------------------------------------------------- interrupted builds

SLOW_PHASE = '''"""The tiny book's probe of a build's phases: with SLOW_PHASE=reading (or
writing) every page takes a second longer to read (or to write), so that a test can interrupt a
build in that phase."""
import os
import time


def _sleep(phase):
    if os.environ.get("SLOW_PHASE") == phase:
        print(f"slow_phase: {phase}", flush=True)
        time.sleep(1.5)


def setup(app):
    app.connect("doctree-read", lambda app, doctree: _sleep("reading"))
    app.connect("html-page-context", lambda app, *args: _sleep("writing"))
    return {"parallel_read_safe": True, "parallel_write_safe": True}
'''

#: A page that prints the package's PROBE; it takes two seconds only in the build to be interrupted
#: while executing (SLOW_PHASE=executing), so that the other builds cost no waiting.
PROBE_PAGE = (
    "import os, time\nfrom companion import report\n"
    "time.sleep(2 if os.environ.get('SLOW_PHASE') == 'executing' else 0)\n"
    "print('probe', report.PROBE)"
)

# (signal, phase, the log line that says the phase has started)
INTERRUPTIONS = [
    ("SIGINT", "executing", "fresh_cache: executing"),
    ("SIGKILL", "executing", "fresh_cache: executing"),
    ("SIGINT", "reading", "slow_phase: reading"),
    ("SIGKILL", "reading", "slow_phase: reading"),
    ("SIGINT", "writing", "slow_phase: writing"),
    ("SIGKILL", "writing", "slow_phase: writing"),
]


def _interrupted_build(root: Path, env: dict, signame: str, marker: str) -> str:
    """`jupyter-book build book` in ``root``, its whole process group sent ``signame`` (as a
    terminal's Ctrl-C reaches every process of the foreground job) once ``marker`` is in
    its output; its log."""
    from bookutils import _ANSI, start_build

    # SIGINT as from a terminal, even under a shell that ignores it (`cmd &`)
    proc = start_build(
        root, env=env, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL)
    )
    lines, seen = [], threading.Event()

    def read():
        for line in proc.stdout:
            lines.append(line)
            if marker in line:
                seen.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        assert seen.wait(300), f"the build never reached {marker!r}:\n" + "".join(lines[-40:])
        time.sleep(0.5)
        os.killpg(proc.pid, getattr(signal, signame))
        proc.wait(120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    reader.join(30)
    log = _ANSI.sub("", "".join(lines))
    assert proc.returncode != 0, f"the build was not interrupted by {signame}:\n{log[-3000:]}"
    return log


def test_an_interrupted_build_leaves_no_stale_page(tmp_path, run_jupyter_book):
    """book/_ext/fresh_cache.py: a build interrupted by SIGINT or SIGKILL while it executes, reads
    or writes the pages of an edit of the book's package is followed by a build that ends "build
    succeeded" with every page showing the edited package's output (the stamp that says a page is
    current is written only once a build has written it)."""
    lib = tmp_path / "lib"
    for pkg, src in (
        ("recency_lib", REPO / "recency_lib"),
        ("companion", REPO / "book" / "companion"),
    ):
        shutil.copytree(src, lib / pkg, ignore=shutil.ignore_patterns("__pycache__"))
    report = lib / "companion" / "report.py"
    original = report.read_text()
    root = tmp_path / "b"
    root.mkdir()
    pages = ("p1", "p2", "p3", "p4")
    _tiny_book(root, {p: [new_markdown_cell(f"# {p}"), new_code_cell(PROBE_PAGE)] for p in pages})
    (root / "book" / "_ext" / "slow_phase.py").write_text(SLOW_PHASE)
    config = root / "_config.yml"
    config.write_text(
        config.read_text().replace(
            "    collector: book/_ext\n", "    collector: book/_ext\n    slow_phase: book/_ext\n"
        )
    )
    env = {"PYTHONPATH": str(lib), "RECENCY_LIB_CACHE": str(tmp_path / "results")}

    def shown() -> dict[str, str | None]:
        """page -> the probe it prints (None: no printed line; the assertion shows the logs)."""
        found = {
            p: re.search(r"probe (\S+)", (root / "_build/html" / f"{p}.html").read_text())
            for p in pages
        }
        return {p: m and m.group(1) for p, m in found.items()}

    report.write_text(original + "\nPROBE = 'v0'\n")
    first = run_jupyter_book(root, env=env, timeout=600)
    assert first.returncode == 0 and shown() == dict.fromkeys(pages, "v0"), first.tail()
    for k, (signame, phase, marker) in enumerate(INTERRUPTIONS, start=1):
        report.write_text(original + f"\nPROBE = 'v{k}'\n")  # an edit: every page is out of date
        log = _interrupted_build(root, {**env, "SLOW_PHASE": phase}, signame, marker)
        rebuilt = run_jupyter_book(root, env=env, timeout=600)
        assert rebuilt.returncode == 0 and re.search(r"^build succeeded", rebuilt.log, re.M), (
            rebuilt.tail()
        )
        assert shown() == dict.fromkeys(pages, f"v{k}"), (
            f"after a build interrupted by {signame} while {phase} the pages",
            shown(),
            log[-2000:],
            rebuilt.tail(),
        )


def test_a_pages_runs_land_in_the_builds_folder_whatever_path_output_says(
    tmp_path, run_jupyter_book
):
    """fresh_cache tells the pages where the build writes (COMPANION_BUILD_DIR: ``_build`` under
    --path-output), so what a page writes beside its results (Appendix B's runs, companion.params)
    lands there and never in the checkout, which a build into another folder may not
    be able to write."""
    root = tmp_path / "checkout"
    root.mkdir()
    _tiny_book(
        root,
        {
            "runs": [
                new_markdown_cell("# Runs"),
                new_code_cell(
                    "from companion import params\nprint('runs in', params.build_folder())"
                ),
            ]
        },
    )
    out = tmp_path / "elsewhere"
    result = run_jupyter_book(
        root, "--path-output", str(out), env={"RECENCY_LIB_CACHE": str(tmp_path / "r")}, timeout=600
    )
    assert result.returncode == 0, result.tail()
    assert f"runs in {out / '_build'}" in (out / "_build" / "html" / "runs.html").read_text(), (
        result.tail()
    )
    assert not (root / "_build").exists()
