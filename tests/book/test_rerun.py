"""Rerun a chapter and see it: papermill's --help-notebook lists every parameter of every page with
its type and comment; `python -m companion rerun` refuses an unknown parameter before any work and
renders a run whose notebook holds its figures; `python -m companion render` places them in the
book's look."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest
from bookutils import BOOK, REPO, computed_once, page_source, toc_pages

PAGES = [p for p in toc_pages() if page_source(p).suffix == ".ipynb"] + ["setting_template"]
COMPANION = [sys.executable, "-m", "companion"]


def parameter_lines(page: str) -> dict[str, tuple[str, str]]:
    """name -> (type, comment) of every line of the page's parameters cell."""
    nb = nbformat.read(BOOK / f"{page}.ipynb", as_version=4)
    cell = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
    out = {}
    for line in cell.source.splitlines():
        if line.strip():
            name, kind, comment = re.match(r"^(\w+): (\S+) = .*?  # (.*)$", line).groups()
            out[name] = (kind, comment)
    return out


@pytest.mark.parametrize("page", PAGES)
def test_help_notebook_lists_every_parameter_with_its_type_and_comment(page):
    """``papermill --help-notebook PAGE``: papermill's own command, invoked in this process (click's
    runner; the command's code, without an interpreter start per page)."""
    from click.testing import CliRunner
    from papermill.cli import papermill

    out = CliRunner().invoke(papermill, ["--help-notebook", str(BOOK / f"{page}.ipynb")])
    assert out.exit_code == 0 and "Unable to parse" not in out.output, out.output
    text = " ".join(out.output.split())  # papermill wraps long comments
    for name, (kind, comment) in parameter_lines(page).items():
        assert f" {name}: {kind} (default " in text, (
            f"{page}: {name} missing from --help-notebook:\n{out.output}"
        )
        assert " ".join(comment.split())[:40] in text, (
            f"{page}: the comment of {name} is missing:\n{out.output}"
        )


def test_an_unknown_parameter_is_refused_before_any_work(tmp_path):
    out = subprocess.run(
        [
            *COMPANION,
            "rerun",
            str(BOOK / "residual.ipynb"),
            str(tmp_path / "o"),
            "-p",
            "gammma",
            "0.5",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 2 and out.stderr.count("\n") == 1
    assert (
        "gammma" in out.stderr
        and "allowed:" in out.stderr
        and "gamma" in out.stderr.split("allowed:")[1]
    )
    assert not (tmp_path / "o").exists()  # nothing made before the check


def test_a_rerun_goes_nowhere_near_the_sources(tmp_path):
    out = subprocess.run(
        [*COMPANION, "rerun", str(BOOK / "residual.ipynb"), str(BOOK)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 2 and "out_dir=" in out.stderr


def companion(
    *args, env: dict | None = None, timeout: int = 300, cwd=None
) -> subprocess.CompletedProcess:
    """``python -m companion ARGS`` in a fresh interpreter."""
    return subprocess.run(
        [*COMPANION, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        env={**os.environ, **(env or {})},
    )


def one_error_line(out: subprocess.CompletedProcess, code: int, starts: str) -> None:
    assert (
        out.returncode == code
        and out.stderr.count("\n") == 1
        and out.stderr.startswith("error: " + starts)
    ), (out.returncode, out.stderr[-3000:])


def error_after_progress(code: int, err: str, page: str, starts: str, returncode: int) -> None:
    """A run that failed once it had started: its progress lines (each "<page>: ..."), then one
    ``error:`` line, the last."""
    lines = err.splitlines()
    assert returncode == code and lines and lines[-1].startswith("error: " + starts), (
        returncode,
        err[-3000:],
    )
    assert all(line.startswith(f"{page}: ") for line in lines[:-1]), err[-3000:]


def files_of(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` (relative name -> bytes) but the record of what reruns wrote."""
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.name != ".rerun-files.json"
    }


# -- values: what they mean to papermill -----------------------------------------------------------

P_VALUES = [
    "010",
    "1:30",
    "1e-3",
    "2024-01-01",
    "True",
    "None",
    "-0",
    " 7",
    "1_000",
    "nan",
    "[1, 2]",
    "abc",
    "0x10",
]
Y_VALUES = [
    "seed: 010",
    "seed: 1:30",
    "seed: 2024-01-01",
    "seed: 1e-3",
    "alphas: 0.5",
    "alphas: [0.3, 0.7]",
    "seed: 0o10",
    "seed: yes",
]


def papermills_parameters(monkeypatch, *flags: str) -> dict:
    """The parameters papermill's own command line passes on for ``flags`` (its execute_notebook
    recorded)."""
    import papermill.cli
    from click.testing import CliRunner

    seen = {}
    monkeypatch.setattr(
        papermill.cli, "execute_notebook", lambda *a, parameters=None, **k: seen.update(parameters)
    )
    out = CliRunner().invoke(
        papermill.cli.papermill, [str(BOOK / "residual.ipynb"), "unused.ipynb", *flags]
    )
    assert out.exit_code == 0, out.output
    return seen


@pytest.mark.parametrize("text", P_VALUES)
def test_a_p_value_means_what_it_means_to_papermill(text, monkeypatch):
    """`-p seed 010` ran seed 8 (YAML 1.1's octal), `-p seed 1:30` seed 90 (sexagesimal), `-p alpha
    1e-3` was "not a number": now every -p value is papermill's own reading of it."""
    from companion import rerun

    ours, theirs = (
        rerun.read_values(p=[("seed", text)]),
        papermills_parameters(monkeypatch, "-p", "seed", text),
    )
    assert repr(ours) == repr(theirs)  # nan too


@pytest.mark.parametrize("text", Y_VALUES)
def test_a_y_value_means_what_it_means_to_papermill(text, monkeypatch):
    from companion import rerun

    assert rerun.read_values(y=[text]) == papermills_parameters(monkeypatch, "-y", text)


def test_p_and_r_override_y_and_f_as_in_papermill(tmp_path, monkeypatch):
    from companion import rerun

    (tmp_path / "p.yaml").write_text("seed: 3\nn: 5\n")
    flags = dict(p=[("seed", "4")], y=["seed: 5\nalpha: 0.25"], f=[str(tmp_path / "p.yaml")])
    theirs = papermills_parameters(
        monkeypatch,
        "-p",
        "seed",
        "4",
        "-y",
        "seed: 5\nalpha: 0.25",
        "-f",
        str(tmp_path / "p.yaml"),
        "-r",
        "n",
        "6",
    )
    ours = rerun.read_values(**flags, r=[("n", "6")])
    assert ours == theirs == {"seed": 4, "alpha": 0.25, "n": "6"}
    later = ["-y", "n: 1", "-f", str(tmp_path / "p.yaml")]  # every -f first, whatever the order
    assert rerun.read_values(y=["n: 1"], f=[later[3]]) == papermills_parameters(monkeypatch, *later)


@pytest.mark.parametrize(
    "args, message",
    [
        (["-p", "seed", "1:30"], "seed='1:30' is not an integer"),
        (["-p", "seed", "2024-01-01"], "seed='2024-01-01' is not an integer"),
        (["-p", "alpha", "1e-3", "-p", "n", "2"], "n=2 is out of range"),  # 1e-3 passed: a number
        (["-p", "samples_first_order", "-3"], "samples_first_order=-3 is out of range"),
        (["-p", "alpha", "abc"], "alpha='abc' is not a number"),
        (["-y", "alphas: [0.3]"], "unknown parameter(s) 'alphas' for residual.ipynb"),
        (["-y", "[1, 2]"], "-y '[1, 2]' is not a mapping"),
        (["-y", "a: [1"], "-y 'a: [1' is not YAML"),
        (["-p", "seed", "1", "-r", "seed", "2"], "parameter 'seed' is given twice"),
        (["--bogus"], "unrecognized arguments: --bogus"),
    ],
)
def test_a_bad_value_is_one_error_line_naming_it_and_exit_2_before_any_work(
    tmp_path, args, message, capsys
):
    """companion rerun once exited 1 for every bad value with "error: PapermillExecutionError:
    ValueError: ..." after papermill had started (or 0, with the wrong value run): now the page's
    own checks run first. The command line's ``main`` in this process (a fresh interpreter's whole
    output for a bad value: test_an_unknown_parameter_is_refused_before_any_work and the bad
    environment variables below)."""
    from companion import rerun

    code = rerun.main(["rerun", str(BOOK / "residual.ipynb"), str(tmp_path / "o"), *args])
    captured = capsys.readouterr()
    one_error_line(subprocess.CompletedProcess([], code, captured.out, captured.err), 2, message)
    assert not captured.out and not (tmp_path / "o").exists()


@pytest.mark.parametrize(
    "variable, value",
    [
        ("RECENCY_LIB_KERNEL", "bogus"),
        ("NUMPY_MADVISE_HUGEPAGE", "x"),
        ("RECENCY_LIB_MAX_MEMORY", "lots"),
    ],
)
def test_a_bad_environment_variable_is_one_error_line_naming_it(tmp_path, variable, value):
    out = companion(
        "rerun",
        str(BOOK / "residual.ipynb"),
        str(tmp_path / "o"),
        env={variable: value},
        timeout=120,
    )
    one_error_line(out, 2, f"{variable}=")
    assert not (tmp_path / "o").exists()


def last_run(path: Path, *, seconds: float, simulating: float) -> None:
    """An executed notebook at ``path`` whose rerun record took ``seconds``, ``simulating`` of
    them in simulations."""
    from companion import rerun

    ran = nbformat.v4.new_code_cell("1", outputs=[nbformat.v4.new_output("stream", text="1")])
    nb = nbformat.v4.new_notebook(cells=[ran])
    nb.metadata[rerun.RUN] = {"seconds": seconds, "cost": {"seconds": simulating}}
    nbformat.write(nb, str(path))


def test_the_expected_time_is_the_books_measure_scaled(tmp_path, monkeypatch):
    """The estimate: the compute time the book's run of the page holds, times the share of
    sequences, over its worker processes, plus the page's time besides; a page the build never
    measured says so."""
    from companion import params, rerun

    monkeypatch.setattr(rerun, "cpus", lambda: 2)  # the page's two workers each have a CPU

    cache = tmp_path / ".jupyter_cache"
    cache.mkdir()
    (cache / "fresh_cache.json").write_text(
        json.dumps(
            {"format": 3, "pages": {"residual": {"seconds": 10.0, "simulation_seconds": 100.0}}}
        )
    )
    known = params.defaults(BOOK / "residual.ipynb")
    values = {**known, "samples": 20_000, "samples_first_order": 80_000}
    assert rerun.cost_factor("residual", known, values) == pytest.approx(0.2)
    assert rerun.cost_factor("residual", known, {**known, "n": 20}) == pytest.approx(8.0)
    line = rerun.expected_time("residual", known, values, build=tmp_path)
    assert line.startswith("expected time about 20 s, an estimate") and "1.7 min of simul" in line
    assert rerun.expected_time("layernorm", known, values, build=tmp_path).startswith(
        "expected time unknown"
    )
    # the render of the site: its last time in the folder, counted in; unknown before the first
    out = tmp_path / "out"
    first = rerun.expected_time("residual", known, values, build=tmp_path, render=out)
    assert (
        first.startswith("expected time about 20 s") and "timed after this machine's first" in first
    )
    (tmp_path / rerun.LAST_RENDER).write_text('{"render_seconds": 12}')  # any folder's last render
    first = rerun.expected_time("residual", known, values, build=tmp_path, render=out)
    assert (
        first.startswith("expected time about 32 s")
        and "12 s to render the site (the last" in first
    )
    out.mkdir()
    rerun._record_written(out, ["residual.html"], render_seconds=25.0)
    again = rerun.expected_time("residual", known, values, build=tmp_path, render=out)
    assert again.startswith("expected time about 45 s") and "about 25 s to render the site" in again
    # a run already in the folder: its time besides the simulations, where longer than the book's
    last_run(out / "residual.ipynb", seconds=30.0, simulating=10.0)
    line = rerun.expected_time("residual", known, values, build=tmp_path, render=out)
    assert line.startswith("expected time about 55 s") and "about 20 s besides (its last" in line

    # a page whose simulations spread over its worker processes: the compute time over them
    (cache / "fresh_cache.json").write_text(
        json.dumps({"format": 3, "pages": {"appendix_a": {"seconds": 5, "simulation_seconds": 60}}})
    )
    known = params.defaults(BOOK / "appendix_a.ipynb")
    for workers, words in ((1, "about 1.1 min, "), (2, "about 35 s, ")):
        line = rerun.expected_time("appendix_a", known, {**known, "workers": workers}, tmp_path)
        assert words in line and (" over 2 processes" in line) == (workers == 2), line


def test_the_setting_templates_expected_time_is_a_pilot_of_its_setting(tmp_path, monkeypatch):
    """The build never runs the template: its estimate times a pilot of the setting here."""
    from companion import params, rerun

    known = params.defaults(BOOK / "setting_template.ipynb")
    values = {**known, "samples": 1_000_000}
    monkeypatch.setattr(rerun, "pilot", lambda cfg: (4096, 0.5))
    line = rerun.expected_time("setting_template", known, values, build=tmp_path)
    assert line.startswith("expected time about 2 min, an estimate: a pilot of its setting ran")
    assert "4,096 sequences here in 0.5 s, × 2.4e+02 for this run's 1,000,000" in line
    assert "start and figures (timed after its first run there)" in rerun.expected_time(
        "setting_template", known, values, build=tmp_path, render=tmp_path
    )
    # after a run in the folder: its time besides the simulations counts in
    last_run(tmp_path / "setting_template.ipynb", seconds=9.0, simulating=4.0)
    line = rerun.expected_time("setting_template", known, values, build=tmp_path, render=tmp_path)
    assert line.startswith("expected time about 2.1 min") and "about 5 s for the notebook's" in line


def test_a_long_simulation_reports_its_progress_on_the_terminal(tmp_path):
    """Within a cell, the kernel's progress events (recency_lib.progress: a JSON line each) become a
    line at most every 30 s; an event still being written waits for its end. The kernel draws no bar
    (test_rerun_site.py: none on the page)."""
    from companion import rerun

    lines, now, events = [], [0.0], tmp_path / "events.jsonl"
    progress = rerun._Progress(lines.append, events, 1, every=30.0, clock=lambda: now[0])
    progress.start(nbformat.v4.new_markdown_cell("# x"))
    progress.start(nbformat.v4.new_code_cell("res = simulate(cfg)"))
    progress.poll()  # nothing simulated yet: no file

    def event(text: str, t: float) -> None:
        now[0] = t
        with open(events, "a") as fh:
            fh.write(text)
        progress.poll()

    for t in (1, 31, 40, 61):
        event(json.dumps({"run": "1-1", "done": t * 10**6, "total": 10**8, "seconds": t}) + "\n", t)
    event('{"run": "1-1", "done": 91000000, ', 85)  # a line still being written waits
    event('"total": 100000000, "seconds": 91}\n', 92)
    event(json.dumps({"run": "2-1", "done": 0, "total": 10**8, "seconds": 0}) + "\n", 93)
    event(json.dumps({"run": "2-1", "done": 2 * 10**6, "total": 10**8, "seconds": 30}) + "\n", 123)
    assert lines == [
        "[1/1] 0:00 res = simulate(cfg)",
        "[1/1] 0:31 1 simulation so far in this cell, 31 % of its 100,000,000 sequences, "
        "about 1:07 to go",
        "[1/1] 1:01 1 simulation so far in this cell, 61 % of its 100,000,000 sequences, "
        "about 0:38 to go",
        "[1/1] 1:32 1 simulation so far in this cell, 91 % of its 100,000,000 sequences, "
        "about 0:09 to go",
        "[1/1] 2:03 2 simulations so far in this cell, 46 % of their 200,000,000 sequences, "
        "about 2:20 to go",
    ]


# -- render: what it reads and where it writes -----------------------------------------------------


def test_render_reads_only_a_regular_notebook_file_without_blocking(tmp_path):
    """A named pipe blocked render until killed; a link to /dev/zero was read without limit. Every
    input that is not an executed notebook is one line naming it, exit 2, at once."""
    os.mkfifo(tmp_path / "fifo.ipynb")
    (tmp_path / "zero.ipynb").symlink_to("/dev/zero")
    with open(tmp_path / "huge.ipynb", "wb") as fh:  # sparse: no disk used
        fh.truncate(2**26 + 1)
    (tmp_path / "list.ipynb").write_text("[1, 2]")
    (tmp_path / "outputs.ipynb").write_text(
        json.dumps(
            {
                "cells": [{"cell_type": "code", "outputs": 5, "source": "", "metadata": {}}],
                "metadata": {},
                "nbformat": 4,
                "nbformat_minor": 5,
            }
        )
    )
    (tmp_path / "binary.ipynb").write_bytes(bytes(range(256)) * 4)
    (tmp_path / "empty.ipynb").write_text(
        json.dumps(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1")]))
    )
    for name, why in (
        ("fifo", "is not a regular file"),
        ("zero", "is not a regular file"),
        ("huge", "has 67108865 bytes"),
        ("list", "is not a notebook"),
        ("outputs", "is not a notebook"),
        ("binary", "is not UTF-8 text"),
        ("empty", "has no outputs"),
        ("missing", "cannot be read (No such file or directory)"),
    ):
        out = companion(
            "render", str(tmp_path / f"{name}.ipynb"), "--out", str(tmp_path / "o"), timeout=60
        )
        one_error_line(out, 2, f"notebook='{tmp_path / name}.ipynb' {why}")
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(
    "name, page",
    [
        ("a: b", "a-b"),
        ("#x", "x"),
        ("[x]", "x"),
        ("new\nline", "new-line"),
        ("residual", "residual"),
        ("..", "page"),
        ("_x_", "x"),
    ],
)
def test_a_pages_name_is_safe_for_the_table_of_contents(name, page):
    from companion import rerun

    assert rerun.page_name(f"/somewhere/{name}.ipynb") == page


def test_a_failed_render_says_why(monkeypatch):
    """A full TMPDIR gave "error: rendering X failed: RuntimeError:": the line now carries the cause
    (from a build that failed so: its last lines)."""
    from companion import rerun

    log = (
        "OSError: [Errno 28] No space left on device: '/tmp/companion-render-x/book/p.ipynb' -> "
        "'/tmp/companion-render-x/_build/html/_sources/p.ipynb'\n\nThe above exception was the "
        "direct cause of the following exception:\n\nTraceback (most recent call last):\n"
        '  File "main.py", line 528\nRuntimeError: \n\x1b[91m=====\x1b[0m\n\n'
        "There was an error in building your book. Look above for the cause.\n"
    )
    assert rerun._cause(log).startswith(
        "OSError: [Errno 28] No space left on device: '/tmp/companion-render-x/book"
    )


def test_nothing_is_rendered_into_the_sources(tmp_path):
    before = files_of(BOOK)
    for out in (BOOK, BOOK / "_static", REPO, REPO / "recency_lib"):
        result = companion("render", str(tmp_path / "x.ipynb"), "--out", str(out), timeout=60)
        assert result.returncode == 2 and result.stderr.startswith("error: "), result.stderr
    (tmp_path / "x.ipynb").write_text("{}")
    result = companion("render", str(tmp_path / "x.ipynb"), "--out", str(BOOK), timeout=60)
    one_error_line(result, 2, "notebook=")  # the notebook is read first
    assert files_of(BOOK) == before


# -- reruns: atomic outputs, one writer per folder (the setting template: a rerun of seconds) ------

TEMPLATE = str(BOOK / "setting_template.ipynb")
LIGHT = ["-p", "samples", "500", "-p", "n", "4", "-p", "d", "8", "-p", "layers", "2"]


def shown_alpha(out: Path) -> tuple[float, str]:
    """The alpha a rerun's notebook ran with and the alpha its page's parameters cell shows."""
    nb = json.loads((out / "setting_template.ipynb").read_text())
    html = (out / "setting_template.html").read_text(encoding="utf8")
    cell = re.search(r'<div class="cell tag_parameters.*?</div>\s*</div>', html, re.S)
    shown = (
        re.search(
            r'<span class="n">alpha</span>.*?<span class="mf">([0-9.]+)</span>', cell.group(0), re.S
        )
        if cell
        else None
    )
    return nb["metadata"]["papermill"]["parameters"]["alpha"], shown.group(1) if shown else None


def _good_run(folder: Path) -> None:
    env = {**os.environ, "RECENCY_LIB_CACHE": str(folder / "cache")}
    result = companion(
        "rerun", TEMPLATE, str(folder / "out"), "-p", "alpha", "0.3", *LIGHT, env=env
    )
    assert result.returncode == 0, result.stderr[-3000:]


@pytest.fixture
def good_run(tmp_path, tmp_path_factory, monkeypatch):
    """A folder holding a rerun that succeeded (alpha 0.3), and its files' bytes: one run per test
    session (bookutils.computed_once), copied for each test with its results cache."""
    import shutil

    done = computed_once(tmp_path_factory, "good-run", _good_run)
    for name in ("out", "cache"):
        shutil.copytree(done / name, tmp_path / name, symlinks=True)
    monkeypatch.setenv("RECENCY_LIB_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "out"
    assert shown_alpha(out) == (0.3, "0.3")
    return out, files_of(out)


def test_a_rerun_writes_what_the_page_writes_into_its_own_folder(good_run):
    """The setting template's result file once landed relative to book/ (the page's working folder):
    a rerun puts the default into its output folder (a relative result_path too: the README's
    recipe, tests/book/test_readme.py), and leaves no staging folder."""
    out, files = good_run
    assert "setting_result.json" in files and not (BOOK / "setting_result.json").exists()
    assert not list(out.glob(".rerun-staging-*"))


def test_a_failed_rerun_keeps_the_previous_pair_and_puts_its_notebook_beside_it(good_run, tmp_path):
    """A failing run (here: the memory the kernel may use too small for any run) replaced the good
    269 KB notebook with its 21 KB error; now the previous notebook and page stay, and the failed
    notebook is beside them under a name that says so; a later good run takes that away."""
    out, files = good_run
    startup = tmp_path / "ipython" / "profile_default" / "startup"  # the kernel's, not the rerun's:
    startup.mkdir(parents=True)  # the rerun's own checks (its pilot) see the machine's memory
    (startup / "small.py").write_text('import os\nos.environ["RECENCY_LIB_MAX_MEMORY"] = "1000"\n')
    result = companion(
        "rerun",
        TEMPLATE,
        str(out),
        "-p",
        "alpha",
        "0.5",
        *LIGHT,
        env={"IPYTHONDIR": str(tmp_path / "ipython")},
    )
    error_after_progress(
        1,
        result.stderr,
        "setting_template",
        "setting_template.ipynb failed in cell",
        result.returncode,
    )
    assert "needs about" in result.stderr and "setting_template.failed.ipynb" in result.stderr
    now = files_of(out)
    failed = json.loads(now.pop("setting_template.failed.ipynb"))
    assert any(
        o.get("output_type") == "error" for c in failed["cells"] for o in c.get("outputs", [])
    )
    assert now == files, "the previous outputs changed"
    again = companion("rerun", TEMPLATE, str(out), "-p", "alpha", "0.4", *LIGHT)
    assert again.returncode == 0 and shown_alpha(out) == (0.4, "0.4"), again.stderr[-3000:]
    assert not (out / "setting_template.failed.ipynb").exists()


@pytest.mark.parametrize(
    "sig, code, word", [(signal.SIGTERM, 143, "terminated"), (signal.SIGINT, 130, "interrupted")]
)
def test_an_interrupted_rerun_keeps_the_previous_pair_and_leaves_no_kernel(
    good_run, sig, code, word
):
    """SIGTERM mid-run left a 13.8 KB partial notebook in place of the good one: now the kernel
    stops, the staging folder goes, and the previous pair stays as it was. Ctrl-C reaches the whole
    process group."""
    from procutils import alive, children

    out, files = good_run
    proc = subprocess.Popen(
        [
            *COMPANION,
            "rerun",
            TEMPLATE,
            str(out),
            "-p",
            "alpha",
            "0.6",
            "-p",
            "samples",
            "50000000",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )  # Ctrl-C as a terminal's, even
    deadline = time.monotonic() + 120  # under a shell that ignores it (`cmd &`)
    while (
        not list(out.glob(".rerun-staging-*/setting_template.ipynb"))
        and time.monotonic() < deadline
    ):
        time.sleep(0.1)
    time.sleep(2.0)  # the kernel simulates
    kernels = children(proc.pid)
    assert kernels and proc.poll() is None, "the rerun did not start"
    os.killpg(proc.pid, sig)
    _, err = proc.communicate(timeout=60)
    error_after_progress(code, err, "setting_template", word, proc.returncode)
    deadline = time.monotonic() + 10
    while any(alive(k) for k in kernels) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(alive(k) for k in kernels), "a kernel outlived the rerun"
    assert files_of(out) == files


def test_two_reruns_into_one_folder_never_mix(good_run):
    """Two reruns at once (alpha 0.1 and 0.9) into one folder: the notebook once held 0.1 while the
    page showed 0.9. One writes at a time: both succeed and the pair left is one run's."""
    out, _ = good_run
    procs = [
        subprocess.Popen(
            [*COMPANION, "rerun", TEMPLATE, str(out), "-p", "alpha", alpha, *LIGHT],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for alpha in ("0.1", "0.9")
    ]
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err[-3000:]
    alpha, shown = shown_alpha(out)
    assert alpha in (0.1, 0.9) and shown == str(alpha)
    assert not list(out.glob(".rerun-staging-*"))


def test_a_render_that_fails_leaves_the_previous_page(good_run, monkeypatch, capsys):
    """A render on a full disk left a half-written page and 215 static files, many of 0 bytes: it is
    staged beside the folder and moved into place whole (here the disk fills while the page is
    staged)."""
    import errno

    from companion import rerun

    out, files = good_run
    copytree = rerun.shutil.copytree

    def full(src, dst, *args, **kwargs):  # the disk fills as the book's folder is staged
        copytree(src, dst, *args, **kwargs)
        if Path(src) != BOOK:  # one of its folders (copytree copies them by itself)
            return dst
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(src), None, str(dst))

    monkeypatch.setattr(rerun.shutil, "copytree", full)
    code = rerun.main(["render", str(out / "setting_template.ipynb")])
    err = capsys.readouterr().err
    error_after_progress(1, err, "setting_template", "No space left on device: ", code)
    assert str(out / ".rerun-staging-") in err, err
    assert files_of(out) == files and not list(out.glob(".rerun-staging-*"))


def test_render_gives_any_notebook_name_a_safe_page(good_run, tmp_path):
    """Notebooks named `a: b`, `#x`, `[x]` or with a newline broke the generated toc."""
    out, _ = good_run
    odd = tmp_path / "odd"
    odd.mkdir()
    nb = odd / "a: #[x]\nb.ipynb"
    nb.write_bytes((out / "setting_template.ipynb").read_bytes())
    result = companion("render", str(nb))
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip() == str(odd / "a-x-b.html") and (odd / "a-x-b.html").is_file()


def test_a_parameter_error_raised_inside_the_page_is_still_one_line_and_exit_2(
    good_run, monkeypatch, capsys
):
    """Should a value pass the check before papermill and fail the page's own (its first code cell
    after the parameters): the page's ValueError is the error line, exit 2, the previous outputs
    stay and the failed notebook is beside them. A later cell's failure is exit 1 (the test above).
    """
    from companion import rerun

    out, files = good_run
    monkeypatch.setattr(rerun.params, "check", lambda page, values: dict(values))  # lets all pass
    code = rerun.main(["rerun", TEMPLATE, str(out), "-p", "n", "2", "-p", "samples", "500"])
    err = capsys.readouterr().err
    error_after_progress(2, err, "setting_template", "n=2 is out of range", code)
    now = files_of(out)
    assert now.pop("setting_template.failed.ipynb") and now == files
