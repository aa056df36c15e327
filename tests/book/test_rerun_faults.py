"""Faults a user's machine met in reruns, each refused or reported before it costs anything: the
build's folder as OUT, a user's files in OUT, a result written into the sources, a misspelled name
through plain papermill, a negative value after -p, a folder given as a file, Appendix B's grid with
one alpha, a kernel that dies, a terminal without Unicode."""

from __future__ import annotations

import contextlib
import io
import subprocess
import sys

import nbformat
import pytest
from bookutils import BOOK, REPO

from companion import rerun

RESIDUAL = str(BOOK / "residual.ipynb")


def companion(*args: str) -> subprocess.CompletedProcess:
    """``python -m companion ARGS`` as its entry point runs it (companion.rerun.main), in this
    process: its exit status and what it printed. Every run here is refused before any work; the
    command in a process of its own is run by test_rerun.py and the README's recipes."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = rerun.main(list(args))
    return subprocess.CompletedProcess(args, code, out.getvalue(), err.getvalue())


def refused(out: subprocess.CompletedProcess, *words: str) -> None:
    """Exit 2 with one ``error:`` line holding ``words``."""
    assert out.returncode == 2 and out.stderr.count("\n") == 1, (out.returncode, out.stderr)
    assert out.stderr.startswith("error: ") and all(w in out.stderr for w in words), out.stderr


def test_the_books_build_is_refused_as_a_reruns_folder(tmp_path):
    """`rerun book/residual.ipynb _build/html` made the rerun the book: every page then said "Not
    the book as published" and residual.html was the run."""
    html = REPO / "_build" / "html"
    refused(companion("rerun", RESIDUAL, str(html), "-p", "samples", "2000"), "book's build")
    refused(companion("rerun", RESIDUAL, str(REPO / "_build" / "x")), "book's build")
    nb = tmp_path / "run.ipynb"
    cell = nbformat.v4.new_code_cell("1", outputs=[nbformat.v4.new_output("stream", text="1")])
    nb.write_text(nbformat.writes(nbformat.v4.new_notebook(cells=[cell])))
    refused(companion("render", str(nb), "--out", str(html)), "out=", "book's build")


@pytest.mark.parametrize(
    "theirs", ["index.html", "residual.ipynb", "_static/companion.css", "residual.failed.ipynb"]
)
def test_a_rerun_never_replaces_a_file_it_did_not_write(tmp_path, theirs):
    """A rerun replaced a hand-written index.html, the user's residual.ipynb and their
    _static/companion.css without a word; now it refuses the folder before any work."""
    out = tmp_path / "out"
    (out / theirs).parent.mkdir(parents=True)
    (out / theirs).write_text("mine")
    refused(companion("rerun", RESIDUAL, str(out), "-p", "samples", "2000"), theirs, "no rerun")
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()) == [theirs]
    assert (out / theirs).read_text() == "mine"


def test_only_files_in_the_folders_record_count_as_a_reruns(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    for name in ("index.html", "_static/x.css"):
        (out / name).parent.mkdir(exist_ok=True)
        (out / name).write_text("ours")
    rerun._record_written(out, ["index.html"])
    rerun.check_ours(out, ["index.html", "residual.html"])  # ours, and absent: fine
    with pytest.raises(ValueError, match=r"holds _static/x\.css, which no rerun wrote"):
        rerun.check_ours(out, ["index.html", "_static/x.css"])
    (out / rerun.WRITTEN).write_text("[")
    with pytest.raises(ValueError, match="unreadable record"):
        rerun.check_ours(out, ["index.html"])


@pytest.mark.parametrize("where", ["recency_lib/res.json", "book/a03.json"])
def test_the_templates_result_never_lands_in_the_sources(tmp_path, where):
    """`-p result_path "$PWD/recency_lib/res.json"` wrote there, after which every rerun said 12
    pages were older than the sources."""
    template = str(BOOK / "setting_template.ipynb")
    out = companion("rerun", template, str(tmp_path / "o"), "-p", "result_path", str(REPO / where))
    refused(out, "result_path=", "outside the sources")
    assert not (REPO / where).exists()


def test_plain_papermill_refuses_a_misspelled_parameter(tmp_path):
    """`papermill residual.ipynb o.ipynb -p alpah 0.3` ran at the default alpha and exited 0
    (papermill only warns); the page's first cell now refuses a name it does not know."""
    values = ["-p", "alpah", "0.3", "-p", "samples", "2000", "--no-progress-bar"]
    out = subprocess.run(
        [sys.executable, "-m", "papermill", "residual.ipynb", str(tmp_path / "o.ipynb"), *values],
        cwd=BOOK,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode != 0
    assert "unknown parameter(s) 'alpah' for residual.ipynb" in out.stderr, out.stderr[-2000:]


def test_the_page_check_tells_data_from_the_namespaces_own_names():
    from companion import params

    namespace = {"In": [""], "Out": {}, "_": 1, "np": io, "print": print, "alpha": 0.3}
    assert params.check("residual", {**params.defaults(BOOK / "residual.ipynb"), **namespace})
    with pytest.raises(ValueError, match=r"unknown parameter\(s\) 'alpah'"):
        params.check("residual", {**params.defaults(BOOK / "residual.ipynb"), "alpah": 0.3})


@pytest.mark.parametrize(
    "value, words",
    [("-1e-3", "gamma=-0.001 is out of range"), ("-inf", "gamma=-inf"), ("-2", "gamma=-2")],
)
def test_a_negative_value_after_p_is_read_as_papermill_reads_it(tmp_path, value, words):
    """`-p gamma -1e-3` was a usage error ("expected 2 arguments"); papermill takes it."""
    out = companion("rerun", RESIDUAL, str(tmp_path / "o"), "-p", "gamma", value)
    refused(out, words)
    assert rerun._take_pairs(["rerun", "p", "o", "-p", "gamma", "-1e-3", "-y", "-x: 1"]) == (
        ["rerun", "p", "o", "-y", "-x: 1"],
        {"parameters": [["gamma", "-1e-3"]], "parameters_raw": []},
    )
    refused(companion("rerun", RESIDUAL, str(tmp_path / "o"), "-p", "gamma"), "expected 2")
    refused(companion("render", "x.ipynb", "-p", "a", "1"), "-p and -r are not allowed here")


def test_a_folder_given_as_a_file_is_named(tmp_path):
    """`render <folder>` and `-f <folder>` said "error: Is a directory: 3" (a file descriptor)."""
    refused(companion("render", str(tmp_path)), f"notebook='{tmp_path}' is not a regular file")
    out = companion("rerun", RESIDUAL, str(tmp_path / "o"), "-f", str(tmp_path))
    refused(out, f"-f='{tmp_path}' is not a regular file")


def test_appendix_b_with_one_residual_alpha_is_refused_before_any_work(tmp_path):
    """It passed the up-front check and failed 25 s later in cell 5 (Figure 5 compares alphas)."""
    out = companion(
        "rerun", str(BOOK / "appendix_b.ipynb"), str(tmp_path / "o"), "-y", "alphas_residual: 0.5"
    )
    refused(out, "alphas_residual=[0.5] is not allowed", "two or more")
    assert not (tmp_path / "o").exists()


def test_a_kernel_that_dies_leaves_its_notebook_and_names_the_cell(tmp_path):
    """A rerun whose kernel died said "Kernel died": no notebook, neither page nor cell named."""
    page = tmp_path / "page.ipynb"
    cells = [
        nbformat.v4.new_code_cell("x = 1", metadata={"tags": ["parameters"]}),
        nbformat.v4.new_code_cell("print('ran')"),
        nbformat.v4.new_code_cell("import os\nos._exit(3)"),
        nbformat.v4.new_code_cell("print('never')"),
    ]
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nbformat.write(nb, page)
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(RuntimeError) as died:
        rerun._execute(page, out / "staged.ipynb", {"x": 2}, "python3", out, lambda text: None)
    failed = out / "page.failed.ipynb"
    assert f"page.ipynb: the kernel died in cell [4/5] (import os) (its notebook: {failed}" in str(
        died.value
    )
    assert failed.is_file() and "page.failed.ipynb" in rerun._written(out)


def test_a_terminal_without_unicode_reads_plain_signs():
    """Under an ASCII locale the estimate printed "\\xd7"."""
    stream = io.TextIOWrapper(io.BytesIO(), encoding="ascii", errors="backslashreplace")
    rerun._say("about 4.8 s … × 1e+02 at α = 0.3, γ ≥ 1 − ε", stream)
    stream.flush()
    text = stream.buffer.getvalue().decode("ascii")
    assert text == "about 4.8 s ... x 1e+02 at alpha = 0.3, gamma >= 1 - ?\n"


# -- a rerun a researcher can read -----------------------------------------------------------------


def test_a_page_that_does_not_exist_is_named_with_where_the_book_is(tmp_path):
    """From another folder, `rerun book/residual.ipynb` said "not allowed", the path as typed."""
    out = companion("rerun", str(tmp_path / "book" / "residual.ipynb"), str(tmp_path / "o"))
    refused(out, "does not exist", f"{BOOK}/<name>.ipynb")


def test_without_a_build_the_page_and_the_bar_say_the_numbers_are_missing():
    """The note's title ran into its text, glued numbers were blanks ("at d = ,") and the bar still
    said "every other page is the book's own build"."""
    nb = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_markdown_cell("# Title\n\nat d = {glue:text}`d-64`, {glue}`x`.")]
    )
    page = rerun._without_build(nb, "no build")["cells"][0]["source"]
    assert ":::{admonition} Numbers missing here\n:class: note\n" in page
    assert "at d = [number missing], [number missing]." in page and "{glue" not in page
    assert "{glue:text}" in nb.cells[0].source  # the notebook itself is left as it was
    bar = rerun._announcement({}, ["intro", "residual"], {"intro": "no build"})
    assert "every other page" not in bar and "1 other pages show no numbers" in bar


def test_an_interrupted_first_run_leaves_no_folder(tmp_path):
    """An interrupted first run left an empty OUT holding only .rerun.lock."""
    out = tmp_path / "new"
    with pytest.raises(KeyboardInterrupt), rerun._staging(out):
        raise KeyboardInterrupt
    assert not out.exists()
    (tmp_path / "kept").mkdir()
    with pytest.raises(KeyboardInterrupt), rerun._staging(tmp_path / "kept"):
        raise KeyboardInterrupt
    assert (tmp_path / "kept").is_dir()  # not made by the run: kept


def test_a_run_of_a_page_outside_the_toc_is_a_run_of_the_book():
    """The setting template's run dropped out of its folder's book when another rerun came."""
    meta = {"metadata": {rerun.RUN: {"page": "setting_template"}}}
    assert rerun.run_chapter(meta) == "setting_template"
    assert rerun.run_chapter({"metadata": {rerun.RUN: {"page": "../x"}}}) is None
    assert (
        rerun.run_chapter({"metadata": {"papermill": {"input_path": "/a/nowhere.ipynb"}}}) is None
    )


def test_a_reruns_verdicts_are_held_against_the_books():
    """A rerun page marked which parameters changed, not which results did."""
    info = {"page": "residual", "chapter": "residual", "defaults": {}, "given": {}, "ran": {}}
    info |= {"followed": [], "date": "2026-12-06T10:00:00+00:00", "commit": None, "dirty": None}
    settings = [{"norm": "layernorm", "alpha": 0.3, "gamma": 1.0, "d": 64}]
    v = {"claim": "Proposition 2", "name": "Proposition 2", "checks": 2, "settings": settings}
    same = rerun.banner(
        {**info, "verdicts": [{**v, "word": "holds"}]}
        | {"book_verdicts": {"Proposition 2": {"word": "holds"}}},
        "4. Residual",
    )
    assert "It is the book's verdict." in same and "the book's: " not in same
    other = rerun.banner(
        {**info, "verdicts": [{**v, "word": "holds in part"}]}
        | {"book_verdicts": {"Proposition 2": {"word": "holds"}}},
        "4. Residual",
    )
    assert "*holds in part* (**the book's: *holds***)" in other
    assert "It differs from the book's verdict." in other
    two = [
        {**v, "word": "holds"},
        {**v, "claim": "Theorem 1", "name": "Theorem 1", "word": "fails"},
    ]
    book = {"Proposition 2": {"word": "holds"}, "Theorem 1": {"word": "holds"}}
    both = rerun.banner({**info, "verdicts": two, "book_verdicts": book}, "x")
    assert "1 of the 2 differ from the book's: Theorem 1 (marked)." in both
    # the deciding numbers: the run's beside the book's, marked where they differ beyond errors
    step = {"what": "the mean step", "number": "(2.1 ± 0.1) × 10⁻⁶", "value": 2.1e-6, "se": 1e-7}
    book = {"Proposition 2": {"word": "holds", **step}}
    for value, differs in ((2.2e-6, False), (3.1e-6, True)):
        ran = {**v, "word": "holds", **step, "value": value, "number": f"{value:.1e}"}
        text = rerun.banner({**info, "verdicts": [ran], "book_verdicts": book}, "x")
        assert f"its deciding number {value:.1e} against the book's (2.1 ± 0.1)" in text
        assert ("**differs**: $z$ = +7.1" in text) == differs, text
        assert ("Deciding numbers that differ from the book's" in text) == differs
    unknown = rerun.banner(
        {**info, "verdicts": [{**v, "word": "holds"}], "book_verdicts": None}, "x"
    )
    assert "not in a current build to compare" in unknown
