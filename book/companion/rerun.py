"""Rerun a chapter with other parameters and look at it as a page of the book.

    python -m companion rerun book/residual.ipynb out -p alpha 0.3 -p gamma 0.5 -p samples 20000
    python -m companion rerun book/input_distribution.ipynb out -y "alphas: [0.3, 0.7]"
    python -m companion render out/residual.ipynb

**Values mean what they mean to papermill**, whose own readers are used: ``-p NAME VALUE`` is ``True``,
``False``, ``None``, an integer, a float or else the string (``-p seed 010`` is 10, ``-p alpha 1e-3`` is
0.001, ``-p seed 1:30`` and ``-p seed 2024-01-01`` are strings, which a page refuses); ``-r NAME VALUE`` is
the string; ``-y YAML`` and ``-f FILE`` are YAML mappings read without dates. As in papermill, ``-p`` and
``-r`` override ``-y`` and ``-f``; a list parameter also takes its string form (``-p ds "[16, 64]"``).

**Checked before any work**: every name is one of the chapter's parameters (papermill itself only warns)
and every value passes the page's own checks (:func:`companion.params.check`, which the page runs in its
first cell too). A bad value is one ``error:`` line naming the parameter, exit 2, nothing written.

**samples sets the cost**: a chapter's derived sample sizes (``samples_first_order``, ``long_samples``, ...)
that are not given follow ``samples`` in proportion to their defaults (:func:`companion.params.
follow_samples`); papermill is given them, so the run's injected cell and its page name them.

**What the terminal shows** (stderr): before the run, its expected time, an estimate from what the book's
own execution of the chapter measured (the compute time recorded with the results it holds, at the
defaults: book/_ext/fresh_cache.py) scaled to this run's sequences; then one line per code cell as it
starts, with the time so far, and within a cell that simulates for long, every half minute, how far its
current simulation is ("41 % of a run of 100,000,000 sequences": the kernel's progress bars, read from
its stderr). Neither the page nor the saved notebook shows a progress bar.

**What the page says**: the rerun records in the notebook's metadata (``companion_rerun``) what ran (the
values the page's parameters had at its end), which derived sizes followed ``samples``, the date, the
checkout's commit and whether it had uncommitted changes, and the settings of the checks behind each
verdict. Its page is titled "... — rerun" and opens with a banner saying all that; its parameters
dropdown shows the values that ran (papermill's injected cell folded into the parameters cell).

**The book around it**: the page is rendered in a copy of the book's project (its configuration, table of
contents, extensions, style and bibliography) in which the run takes its chapter's place and every other
page is the book's own build, read from the book's execution cache (``_build/.jupyter_cache``, or
``$COMPANION_BUILD_DIR/.jupyter_cache``) and served only while the sources it was computed from are the
checkout's (the stamps of book/_ext/fresh_cache.py); nothing of the book is executed again. So
cross-references, citations, the numbering of statements and figures and the search work as in the book
(the search lists its hits by title only: from disk, a browser refuses the fetch of a hit's page for its
summary).
A page of the book without a current build is rendered from its sources with a note at its top that its
numbers are missing (build the book: ``jupyter-book build book``), never with another run's numbers.
Every other run of a chapter in the same folder takes its chapter's place too, so one folder is one book.
A notebook that is not a chapter of the book (the setting template's run, any other) is a page of its own
after the book's. Every page carries the site's announcement that it holds reruns, naming them.

**Outputs**: one writer per folder (a lock on ``OUT/.rerun.lock``, held for the whole run: a second rerun
or render into the same folder waits for it). The chapter runs with papermill from ``book/`` into a staging
folder inside OUT and is rendered there; only when the notebook and the whole site are complete do they
replace ``OUT/<page>.ipynb`` and the site's pages (``OUT/<page>.html`` among them, with ``searchindex.js``;
its images and static files are added beside them), so ``OUT/<page>.html`` opens offline (``file://``).
A run that fails leaves the previous outputs as they were and puts its own notebook, with the error, beside
them as ``OUT/<page>.failed.ipynb``; an interrupted one (Ctrl-C, SIGTERM) stops its kernel and leaves
nothing (a staging folder of a rerun killed outright is removed by the next one). What a page writes itself
(Appendix B's ``out_dir``, the setting template's ``result_path``) goes into OUT when relative or left
empty. OUT is never in the sources.

``render`` turns an executed notebook into that site in OUT (``--out``, default the notebook's folder),
executing nothing (the numbers and figures are the notebook's); a run of a chapter rendered into another
folder is copied there with its page. It reads only a regular file of at most
:data:`NOTEBOOK_MAX` bytes that is a notebook, and writes only outside the sources. A notebook run by
papermill without this command has no ``companion_rerun`` record: its banner gives what papermill recorded.

Exit status: 0, 2 for bad input, 1 for a run or render that failed (the cause on the ``error:`` line),
130 and 143 for SIGINT and SIGTERM.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import datetime
import fcntl
import json
import logging
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from recency_lib.files import shown
from recency_lib.validation import short

from . import params

BOOK = Path(__file__).resolve().parents[1]  # book/
ROOT = BOOK.parent  # the repository: _config.yml, _toc.yml
#: The largest notebook (or parameters file) read: an executed chapter is 0.2 to 3 MB.
NOTEBOOK_MAX = 2**26
LOCK = ".rerun.lock"
STAGING = ".rerun-staging-"


class Terminated(Exception):
    """SIGTERM, raised in the main thread so that a run cleans up as on Ctrl-C."""


# -- parameters ---------------------------------------------------------------------------------------


def parameters(page) -> dict:
    """The chapter's parameters (papermill's reading of its ``parameters`` cell): name -> {type, default, help}."""
    import papermill as pm

    return pm.inspect_notebook(str(page))


def defaults(page) -> dict:
    """The chapter's parameters and their default values."""
    out = {}
    for name, spec in parameters(page).items():
        try:
            out[name] = ast.literal_eval(spec["default"])
        except (ValueError, SyntaxError):
            out[name] = spec["default"]
    return out


def check_environment() -> None:
    """The simulator's environment variables, as its first simulation would check them (ValueError naming
    the variable): which kernel runs, where results are cached, the memory a run may take."""
    from recency_lib.cache import cache_dir
    from recency_lib.engines import memory_limit
    from recency_lib.kernels import load

    load()
    cache_dir()
    memory_limit()


def check_parameters(page, given: dict) -> dict:
    """``given`` (name -> value) checked before any work: every name one of the chapter's parameters (else
    a ValueError naming the unknown ones and listing the known ones), every value as the page's first cell
    checks it (:func:`companion.params.check`, run from ``book/``, the page's working folder). Returns every
    parameter's value as the page will have it (the defaults with ``given``, normalized: lists as lists)."""
    page = Path(page)
    known = defaults(page)
    unknown = [k for k in given if k not in known]
    if unknown:
        raise ValueError(
            f"unknown parameter(s) {', '.join(map(short, unknown))} for {page.name}; "
            f"allowed: {', '.join(known)}"
        )
    with contextlib.chdir(BOOK):
        return params.check(page.stem, {**known, **given})


def read_values(options: list[tuple[str, object]]) -> dict:
    """The parameters of papermill's command-line flags, in papermill's order (``-f`` files and ``-y`` YAML
    first, then ``-p`` and ``-r``), read by papermill's own readers. ``options``: (flag, argument) pairs,
    the argument a (name, value) pair for ``-p`` and ``-r``. A name given twice by ``-p``/``-r`` is an
    error (papermill would keep the last)."""
    import yaml
    from papermill.cli import _resolve_type
    from papermill.iorw import NoDatesSafeLoader

    values, named = {}, {}
    for flag, arg in sorted(
        options, key=lambda o: o[0] in ("-p", "-r")
    ):  # stable: -f/-y, then -p/-r
        if flag in ("-f", "-y"):
            text = _read_text(arg, "-f") if flag == "-f" else arg
            try:
                data = yaml.load(text, Loader=NoDatesSafeLoader)
            except yaml.YAMLError as exc:
                raise ValueError(
                    f"{flag} {short(arg)} is not YAML ({' '.join(str(exc).split())[:200]}); "
                    f'allowed: a YAML mapping, e.g. "alphas: [0.3, 0.7]"'
                ) from None
            if data is None:
                continue
            if not isinstance(data, dict) or not all(isinstance(k, str) for k in data):
                raise ValueError(
                    f"{flag} {short(arg)} is not a mapping of names; allowed: a YAML mapping, "
                    f'e.g. "alphas: [0.3, 0.7]"'
                )
            values.update(data)
        else:
            name, value = arg
            if name in named:
                raise ValueError(
                    f"parameter {short(name)} is given twice ({named[name]} and {flag}); allowed: "
                    f"each parameter once"
                )
            named[name] = flag
            values[name] = _resolve_type(value) if flag == "-p" else value
    return values


# -- files ----------------------------------------------------------------------------------------------


def _read_bytes(path, name: str, what: str) -> bytes:
    """The bytes of ``path``, a regular file of at most :data:`NOTEBOOK_MAX` bytes (a named pipe, a device
    or a link to one is refused without blocking); ValueError naming ``name`` otherwise."""
    allowed = f"allowed: {what} (a regular file of at most {NOTEBOOK_MAX // 2**20} MB)"
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # opening a FIFO must not wait for a writer
    except OSError as exc:
        raise ValueError(
            f"{name}={shown(path)} cannot be read ({exc.strerror}); {allowed}"
        ) from None
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise ValueError(f"{name}={shown(path)} is not a regular file; {allowed}")
        if st.st_size > NOTEBOOK_MAX:
            raise ValueError(f"{name}={shown(path)} has {st.st_size} bytes; {allowed}")
        data = fh.read(NOTEBOOK_MAX + 1)
    if len(data) > NOTEBOOK_MAX:
        raise ValueError(f"{name}={shown(path)} has more than {NOTEBOOK_MAX} bytes; {allowed}")
    return data


def _read_text(path, name: str) -> str:
    data = _read_bytes(path, name, "a UTF-8 text file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(
            f"{name}={shown(path)} is not UTF-8 text (byte {exc.start}); allowed: a UTF-8 text file"
        ) from None


def read_notebook(path) -> dict:
    """The executed notebook at ``path`` as a dict, checked: a regular file under the size cap, UTF-8
    JSON, a notebook by nbformat's schema, with outputs. ValueError naming the file otherwise."""
    import nbformat

    allowed = "allowed: an executed notebook (python -m companion rerun ... runs one)"
    data = _read_bytes(path, "notebook", "an executed notebook")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(
            f"notebook={shown(path)} is not UTF-8 text (byte {exc.start}); {allowed}"
        ) from None
    try:
        nb = nbformat.reads(text, as_version=4)
        nbformat.validate(nb)
    except Exception as exc:  # not JSON, not a notebook, another layout
        why = " ".join(str(exc).split())[:160] or type(exc).__name__
        raise ValueError(f"notebook={shown(path)} is not a notebook ({why}); {allowed}") from None
    if not any(c.get("outputs") for c in nb.cells if c.cell_type == "code"):
        raise ValueError(f"notebook={shown(path)} has no outputs; {allowed}")
    return nb


def page_name(notebook) -> str:
    """The file stem of a rendered page: the notebook's, with anything but letters, digits, ``-`` and ``_``
    made ``-`` (a page's name is also a document name and a line of the table of contents)."""
    name = re.sub(r"[^A-Za-z0-9_-]+", "-", Path(notebook).stem).strip("-_")
    return name or "page"


def _check_out(name: str, folder) -> Path:
    """``folder``, outside the sources, an existing folder or one that can be made (nothing is made)."""
    path = params.check_outside_sources(name, folder)
    if path.exists() and not path.is_dir():
        raise ValueError(
            f"{name}={shown(folder)} is not a folder; allowed: a folder (made if needed)"
        )
    probe = path
    while not probe.exists():
        probe = probe.parent
    if not probe.is_dir() or not os.access(probe, os.W_OK | os.X_OK):
        raise ValueError(
            f"{name}={shown(folder)} cannot be written ({shown(probe)} is not a writable folder); "
            f"allowed: a writable folder"
        )
    return path


@contextlib.contextmanager
def _one_writer(out: Path):
    """One rerun or render at a time writes into ``out`` (an exclusive lock on ``out/.rerun.lock``, released
    when the process ends, however); staging folders of one killed outright are removed once it is held."""
    out.mkdir(parents=True, exist_ok=True)
    with open(out / LOCK, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        for left in out.glob(STAGING + "*"):
            shutil.rmtree(left, ignore_errors=True)
        yield


def _commit(pairs: list[tuple[Path, Path]], staging: Path) -> None:
    from .grid import _commit as commit_all_or_none

    commit_all_or_none(pairs, staging)


# -- rerun ----------------------------------------------------------------------------------------------


def rerun(
    page, out_dir, given: dict, *, render_html: bool = True, kernel: str = "python3", progress=None
) -> Path:
    """Run chapter ``page`` with the parameters ``given`` into ``out_dir`` (created) and render it with the
    book around it; returns the executed notebook's path. ValueError before any work for an unknown
    parameter or a bad value, a page that is not one of the book's notebooks, or an output folder in the
    sources; papermill's PapermillExecutionError when the chapter fails (its notebook then is
    ``<page>.failed.ipynb``). ``progress``: the text stream the expected time and one line per cell go to
    (None: stderr; False: nowhere)."""
    page = Path(page).resolve()
    if page.suffix != ".ipynb" or page.parent != BOOK or not page.is_file():
        raise ValueError(
            f"page={shown(page)} is not allowed; allowed: a chapter of the book, book/<name>.ipynb"
        )
    out = _check_out("out_dir", out_dir)
    given = dict(given)
    for name, default in params.OUTPUTS.get(
        page.stem, {}
    ).items():  # what the page writes: into out
        value = given.get(name, "")
        if isinstance(value, str) and not os.path.isabs(value):
            given[name] = str(out / (value or default))
    known = defaults(page)
    followed = params.follow_samples(page.stem, known, given)  # derived sizes that follow samples
    values = {**followed, **given}
    checked = check_parameters(page, values)
    check_environment()
    say = _Say(page.stem, sys.stderr if progress is None else progress)
    with contextlib.chdir(BOOK):
        book_values = params.check(page.stem, known)
    say(expected_time(page.stem, book_values, checked))
    with _one_writer(out):
        staging = Path(tempfile.mkdtemp(dir=out, prefix=STAGING))
        try:
            staged = staging / page.name
            started = time.perf_counter()
            summary = _execute(page, staged, values, kernel, out, say)
            seconds = time.perf_counter() - started
            nb = read_notebook(staged)
            nb.metadata[RUN] = run_record(page, known, given, followed, summary, seconds)
            staged.write_text(json.dumps(nb, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
            say(
                f"ran in {_clock(seconds)}"
                + ("; rendering it with the book's other pages" if render_html else "")
            )
            pairs = [(staged, out / page.name)]
            if render_html:
                pairs += _render_site(out, staging, {page.stem: dict(nb)}, say)
            _commit(pairs, staging)
            if not render_html:  # a page of an earlier run must not sit beside it
                (out / f"{page.stem}.html").unlink(missing_ok=True)
            (out / f"{page.stem}.failed.ipynb").unlink(missing_ok=True)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return out / page.name


class _Say:
    """Lines for the terminal, each prefixed with the chapter's name (nothing when ``stream`` is False)."""

    def __init__(self, name: str, stream):
        self.name, self.stream = name, stream

    def __call__(self, text: str) -> None:
        if self.stream:
            print(f"{self.name}: {text}", file=self.stream, flush=True)


def _clock(seconds: float) -> str:
    seconds = int(round(seconds))
    return (
        f"{seconds // 60}:{seconds % 60:02d}"
        if seconds < 3600
        else f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
    )


class _CellProgress:
    """papermill's ``on_cell`` hook (companion.grid's engine): one line per code cell as it starts, "[3/9]
    0:12" and the cell's first line. Also the file papermill copies the kernel's stderr to: of the
    progress bars there (recency_lib's, tqdm's "41%|███   | 41000000/100000000"), a line at most every
    ``every`` seconds of a cell, "[3/9] 4:40 41 % of a run of 100,000,000 sequences" (a cell may hold several
    runs); other text is the page's."""

    def __init__(self, say: _Say, every: float = 30.0, clock=time.perf_counter):
        self.say, self.every, self.clock = say, every, clock
        self.t0 = self.last = clock()
        self.done = self.total = 0

    def __call__(self, nb, index) -> None:
        cell = nb.cells[index]
        if cell.cell_type != "code":
            return
        self.done += 1
        self.total = sum(c.cell_type == "code" for c in nb.cells)
        first = next((line.strip() for line in cell.source.splitlines() if line.strip()), "")
        first = first if len(first) <= 72 else first[:71] + "…"
        self.last = self.clock()
        self.say(f"[{self.done}/{self.total}] {_clock(self.last - self.t0)} {first}")

    def write(self, text: str) -> None:
        bars = _BAR.findall(text)
        now = self.clock()
        if bars and now - self.last >= self.every:
            self.last = now
            percent, total = bars[-1]
            self.say(
                f"[{self.done}/{self.total}] {_clock(now - self.t0)} {percent} % of a run of "
                f"{int(total):,} sequences"
            )

    def flush(self) -> None:
        pass


#: What the rerun's kernel is asked once the chapter has run (one JSON line: companion.provenance.run_summary).
SUMMARY = (
    "from companion.provenance import run_summary as _run_summary\n"
    "print(_run_summary(globals(), {names!r}))"
)


def _execute(
    page: Path, staged: Path, values: dict, kernel: str, out: Path, say: _Say
) -> dict | None:
    """papermill from ``book/`` on a kernel of this process (companion.grid.SharedKernel: stopped on an
    error or an interrupt), no progress bars in the notebook, one line per cell on the terminal; a failed
    run's notebook goes to ``out/<page>.failed.ipynb``. Returns what the page held at its end
    (:func:`companion.provenance.run_summary`, None if the kernel could not say)."""
    import papermill as pm
    from papermill.exceptions import PapermillExecutionError

    from .grid import SharedKernel, _shared_engine

    # the kernel's progress bars, an update every 5 s at most, go to the terminal (_CellProgress), never the page
    env = {"RECENCY_LIB_PROGRESS": "1", "TQDM_MININTERVAL": "5"}
    old = {k: os.environ.get(k) for k in (*env, "COMPANION_IN_BOOK", "COMPANION_BUILD_DIR")}
    os.environ.update(env)
    os.environ.pop("COMPANION_IN_BOOK", None)  # a rerun displays its figures and tables
    os.environ.pop("COMPANION_BUILD_DIR", None)
    shared = SharedKernel(kernel)
    try:
        progress = _CellProgress(say)
        pm.execute_notebook(
            str(page),
            str(staged),
            parameters=values,
            kernel_name=kernel,
            progress_bar=False,
            km=shared.ready(BOOK),
            engine_name=_shared_engine(),
            on_cell=progress,
            stderr_file=progress,
        )
        _strip_saved(staged)
        try:
            return json.loads(shared.ask(SUMMARY.format(names=list(defaults(page)))))
        except (RuntimeError, ValueError):  # the page ran; only the record is the poorer
            return None
    except PapermillExecutionError:
        if staged.is_file():
            with contextlib.suppress(
                OSError, ValueError
            ):  # a notebook papermill could not finish: as it is
                _strip_saved(staged)
            os.replace(staged, out / f"{page.stem}.failed.ipynb")
        raise
    except BaseException:  # interrupted: the cell's task dies with the kernel, unread
        logging.getLogger("asyncio").setLevel(logging.CRITICAL)
        raise
    finally:
        shared.close()
        for k, v in old.items():
            os.environ.pop(k, None) if v is None else os.environ.__setitem__(k, v)


# -- what ran, recorded in the notebook -------------------------------------------------------------------

#: The notebook metadata key of a rerun's record (:func:`run_record`).
RUN = "companion_rerun"


def checkout_state(root: Path = ROOT) -> dict:
    """The checkout's commit (``git rev-parse HEAD``; None outside a git checkout or without git) and
    whether it has uncommitted changes (``git status --porcelain`` not empty: edits, and files that are
    neither committed nor ignored)."""

    def git(*args):
        return subprocess.run(
            ["git", "-C", str(root), *args], capture_output=True, text=True, timeout=60
        )

    try:
        head, status = git("rev-parse", "HEAD"), git("status", "--porcelain")
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None}
    if head.returncode != 0:
        return {"commit": None, "dirty": None}
    return {
        "commit": head.stdout.strip(),
        "dirty": bool(status.stdout.strip()) if status.returncode == 0 else None,
    }


def run_record(
    page: Path, known: dict, given: dict, followed: dict, summary: dict | None, seconds: float
) -> dict:
    """The ``companion_rerun`` record of a run of chapter ``page``: its defaults (``known``), the values
    given and those that followed ``samples``, what ran (the kernel's values at the end, when it could
    say), the verdicts' settings, the simulations' cost, the date (UTC), the run's seconds and the
    checkout's state."""
    summary = summary if isinstance(summary, dict) else {}
    return {
        "page": page.stem,
        "defaults": known,
        "given": given,
        "followed": sorted(followed),
        "ran": summary.get("parameters") or {**known, **followed, **given},
        "verdicts": summary.get("verdicts"),
        "cost": summary.get("cost"),
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "seconds": round(seconds, 1),
        **checkout_state(),
    }


# -- the expected time ------------------------------------------------------------------------------------


def book_stamps(build: Path | None = None) -> dict:
    """docname -> what the book's build recorded of the page (book/_ext/fresh_cache.py's stamps: the hash
    it was executed with, the hash of its code and kernel path, its seconds, what its simulations cost);
    empty when the book has not been built."""
    build = params.build_folder() if build is None else Path(build)
    try:
        data = json.loads(
            (build / ".jupyter_cache" / "fresh_cache.json").read_text(encoding="utf-8")
        )
    except (OSError, ValueError):
        return {}
    pages = data.get("pages") if isinstance(data, dict) else None
    return (
        {k: v for k, v in pages.items() if isinstance(v, dict)} if isinstance(pages, dict) else {}
    )


def cost_factor(page: str, known: dict, values: dict) -> float:
    """How much more a run of ``page`` with ``values`` simulates than one with its defaults ``known``: the
    ratio of its sequences (``samples`` and the derived sizes), times (n / n₀)³ and layers / layers₀ where
    the page has them (a layer costs about n³ per sequence on the Gram engine), times the ratio of the
    lengths of its list parameters (settings swept). A rough measure, for an estimate."""
    sizes = ("samples", *params.derived_sizes(page))
    factor = sum(values[k] for k in sizes) / sum(known[k] for k in sizes)
    if isinstance(known.get("n"), int) and isinstance(values.get("n"), int):
        factor *= (values["n"] / known["n"]) ** 3
    if isinstance(known.get("layers"), int) and isinstance(values.get("layers"), int):
        factor *= values["layers"] / known["layers"]
    for name, default in known.items():
        if isinstance(default, list) and default and isinstance(values.get(name), list):
            factor *= len(values[name]) / len(default)
    return factor


def expected_time(page: str, known: dict, values: dict, build: Path | None = None) -> str:
    """The line the terminal shows before a rerun: its expected time, an estimate from what the book's own
    execution of ``page`` recorded (the compute seconds of the simulations it holds, at its defaults, and
    the time its last execution took), scaled by :func:`cost_factor` (``known``: the defaults, ``values``:
    this run's, both checked); or that the book has not measured the page."""
    from .report import duration

    stamp = book_stamps(build).get(page, {})
    measured, wall = stamp.get("simulation_seconds"), stamp.get("seconds")
    if not isinstance(measured, (int, float)) or not isinstance(wall, (int, float)):
        return (
            "expected time unknown: the book's build has not measured this page (build the book, "
            "jupyter-book build book, for an estimate)"
        )
    factor = cost_factor(page, known, values)
    return (
        f"expected time about {duration(measured * factor + wall)}, an estimate: the book's run of this "
        f"page at its defaults holds {duration(measured)} of simulation (compute time), × {factor:.2g} "
        f"for this run's sequences, plus up to {duration(wall)} besides (the book's last execution of the "
        f"page); results already cached, or spread over processes, take less"
    )


# -- render ---------------------------------------------------------------------------------------------


def render(notebook, out: str | os.PathLike | None = None) -> Path:
    """``notebook`` (executed) rendered with the book around it into ``out`` (default: the notebook's
    folder, never in the sources): every page of the site, ``<out>/<name>.html`` among them, with the
    book's static files beside them. A run of a chapter (named as the chapter) rendered into another
    folder is copied there too, so that a later rerun into that folder keeps it in its place. Returns the
    page's path."""
    nb = read_notebook(notebook)
    out = _check_out("out", out if out is not None else Path(notebook).resolve().parent)
    name = page_name(notebook)
    with _one_writer(out):
        staging = Path(tempfile.mkdtemp(dir=out, prefix=STAGING))
        try:
            chapter = run_chapter(nb)
            runs = {chapter: dict(nb)} if chapter == name else {name: dict(nb)}
            pairs = _render_site(out, staging, runs, _Say(name, sys.stderr))
            if chapter == name and (out / f"{name}.ipynb").resolve() != Path(notebook).resolve():
                shutil.copy(notebook, staging / f"{name}.ipynb")
                pairs.append((staging / f"{name}.ipynb", out / f"{name}.ipynb"))
            _commit(pairs, staging)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return out / f"{name}.html"


def toc_pages(root: Path = ROOT) -> list[str]:
    """The book's pages (docnames) in the order of its table of contents, ``_toc.yml``."""
    import yaml

    def walk(node) -> list[str]:
        found = []
        if isinstance(node, dict):
            for key in ("root", "file"):
                if isinstance(node.get(key), str):
                    found.append(re.sub(r"\.(ipynb|md)$", "", node[key]))
            for key in ("parts", "chapters", "sections"):
                for child in node.get(key) or []:
                    found.extend(walk(child))
        return found

    return walk(yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8")))


def run_chapter(nb) -> str | None:
    """The chapter of the book a notebook is a run of (its ``companion_rerun`` record's page, or the
    notebook papermill ran, when that is one of the book's chapters), else None."""
    meta = nb.get("metadata", {}) if isinstance(nb, dict) else {}
    record, pm_meta = meta.get(RUN), meta.get("papermill")
    page = record.get("page") if isinstance(record, dict) else None
    if (
        not isinstance(page, str)
        and isinstance(pm_meta, dict)
        and isinstance(pm_meta.get("input_path"), str)
    ):
        page = Path(pm_meta["input_path"]).stem
    return (
        page
        if isinstance(page, str) and page in toc_pages() and (BOOK / f"{page}.ipynb").is_file()
        else None
    )


def _runs_in(out: Path, runs: dict) -> dict:
    """``runs`` (name -> notebook) and the other runs of chapters that ``out`` holds (``out/<chapter>.ipynb``,
    a run of that chapter by its record or papermill's): one folder is one book, each run in its chapter's
    place. A notebook there that cannot be read is left out."""
    found = {}
    for path in sorted(out.glob("*.ipynb")):
        if path.stem in runs or path.name.endswith(".failed.ipynb"):
            continue
        try:
            nb = read_notebook(path)
        except ValueError:
            continue
        if run_chapter(nb) == path.stem:
            found[path.stem] = dict(nb)
    return {**found, **runs}


def _render_site(out: Path, staging: Path, runs: dict, say: _Say) -> list[tuple[Path, Path]]:
    """Build the book with ``runs`` (name -> executed notebook: a chapter's name puts it in that chapter's
    place, any other name makes it a page after the book's) and the other runs of chapters in ``out``,
    every other page from the book's build; move its static folders into ``out`` file by file and return
    the (staged, target) pairs of its pages and search index, for the caller to commit with its own."""
    runs = _runs_in(out, runs)
    book_pages = toc_pages()
    build = params.build_folder()
    current, missing = book_records(build, [p for p in book_pages if p not in runs])
    if missing:
        say(
            f"note: {len(missing)} of the book's pages show no numbers here ({', '.join(sorted(missing))}): "
            f"{_why_missing(missing)}; build the book (jupyter-book build book) and render again"
        )
    site = staging / "site"
    with tempfile.TemporaryDirectory(prefix="companion-render-") as tmp:
        html = _build_site(Path(tmp), book_pages, runs, build, current, missing)
        _copy_files(html, site)
    for sub in sorted(p for p in site.iterdir() if p.is_dir()):
        _commit_folder(sub, out / sub.name)
    return [(f, out / f.name) for f in sorted(site.iterdir()) if f.is_file()]


def _copy_files(src: Path, dst: Path) -> None:
    """Every file of the built site ``src`` (but Sphinx's ``.buildinfo``) copied to ``dst``; the first file
    that cannot be copied raises its OSError (a full disk names it)."""
    for path in sorted(src.rglob("*")):
        if path.is_file() and path.name != ".buildinfo":
            target = dst / path.relative_to(src)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(path, target)


def _why_missing(missing: dict) -> str:
    reasons = sorted(set(missing.values()))
    return "; ".join(reasons)


def book_records(build: Path, pages) -> tuple[set, dict]:
    """Which of ``pages`` (docnames) the book's execution cache in ``build`` holds current: a record matching
    the page's cells, and the build's stamp of the code and kernel path it ran with (book/_ext/fresh_cache.py's
    ``code``) the checkout's. Returns those pages, and docname -> why not for the other notebooks of ``pages``."""
    import nbformat

    from .sources import dependency_hash

    notebooks = [p for p in pages if (BOOK / f"{p}.ipynb").is_file()]
    cache_path = build / ".jupyter_cache"
    if not notebooks:
        return set(), {}
    if not (cache_path / "global.db").is_file():
        return set(), {p: f"no build of the book in {shown(build)}" for p in notebooks}
    from jupyter_cache import get_cache

    cache, stamps = get_cache(str(cache_path)), book_stamps(build)
    current, missing = set(), {}
    for page in notebooks:
        path = BOOK / f"{page}.ipynb"
        if stamps.get(page, {}).get("code") != dependency_hash(path, ROOT, environ={}):
            missing[page] = "the book's build of them is older than the checkout's sources"
            continue
        try:
            cache.match_cache_notebook(nbformat.read(str(path), as_version=4))
        except KeyError:
            missing[page] = "the book's execution cache has no current record of them"
            continue
        current.add(page)
    return current, missing


def _copy_cache(src: Path, dst: Path, drop) -> None:
    """The book's execution cache ``src`` copied to ``dst`` (its database by sqlite's backup, a consistent
    copy while a build writes; its records; Appendix B's runs, which the book's page links to), without the
    records of the notebooks ``drop`` (paths: pages whose record is not current). Nothing when ``src`` has
    no database."""
    import sqlite3

    import nbformat
    from jupyter_cache import get_cache

    if not (src / "global.db").is_file():
        return
    dst.mkdir(parents=True)
    with (
        contextlib.closing(sqlite3.connect(f"file:{src / 'global.db'}?mode=ro", uri=True)) as db,
        contextlib.closing(sqlite3.connect(dst / "global.db")) as copy,
    ):
        db.backup(copy)
    for name in ("__version__.txt", "executed", "appendix_b"):
        if (src / name).is_dir():
            shutil.copytree(src / name, dst / name, symlinks=True)
        elif (src / name).is_file():
            shutil.copy2(src / name, dst / name)
    cache = get_cache(str(dst))
    for path in drop:
        with contextlib.suppress(KeyError):
            cache.remove_cache(
                cache.match_cache_notebook(nbformat.read(str(path), as_version=4)).pk
            )


def _build_site(
    tmp: Path, book_pages: list[str], runs: dict, build: Path, current: set, missing: dict
) -> Path:
    """The copy of the book's project in ``tmp`` with ``runs`` in place, built executing nothing: the book's
    pages in ``current`` come from a copy of its execution cache (as in the book's build, with their
    execution times), the other notebooks are excluded from execution (the runs with their outputs, the
    pages without a current build with a note). Returns its HTML folder; RuntimeError naming the cause when
    the build fails."""
    import yaml

    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    notebooks = [p for p in book_pages if (BOOK / f"{p}.ipynb").is_file()]
    execute = config.setdefault("execute", {})
    execute["execute_notebooks"] = "cache"  # the book's records, read, never executed
    execute["exclude_patterns"] = sorted(
        f"{name}.ipynb" for name in {*runs, *(p for p in notebooks if p not in current)}
    )
    sphinx = config.setdefault("sphinx", {})
    sphinx["local_extensions"] = {
        k: v for k, v in (sphinx.get("local_extensions") or {}).items() if k != "fresh_cache"
    }  # it would execute and restamp pages
    # The site opens from disk (file://), where a browser refuses the search's fetch of each hit's page for
    # its summary: the hits are listed with their titles only.
    sphinx.setdefault("config", {})["html_show_search_summary"] = False
    config.setdefault("html", {})["announcement"] = _announcement(runs, book_pages)
    (tmp / "_config.yml").write_text(
        yaml.safe_dump(config, allow_unicode=True, sort_keys=False), encoding="utf-8"
    )
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    toc.setdefault("chapters", []).extend({"file": name} for name in runs if name not in book_pages)
    (tmp / "_toc.yml").write_text(yaml.safe_dump(toc, sort_keys=False), encoding="utf-8")
    book = tmp / "book"
    book.mkdir()
    (book / "_toc.yml").symlink_to("../_toc.yml")
    for sub in ("_ext", "_static"):
        shutil.copytree(BOOK / sub, book / sub, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(BOOK / "references.bib", book / "references.bib")
    for path in BOOK.glob("*.ipynb"):  # notebooks outside the toc: download targets only
        if path.stem not in book_pages:
            shutil.copy(path, book / path.name)
    _copy_cache(
        build / ".jupyter_cache",
        tmp / "_build" / ".jupyter_cache",
        drop=[BOOK / f"{p}.ipynb" for p in notebooks if p not in current],
    )
    for page in book_pages:
        if page in runs:
            continue
        source = next(
            BOOK / f"{page}{ext}" for ext in (".ipynb", ".md") if (BOOK / f"{page}{ext}").is_file()
        )
        if source.suffix == ".md" or page in current:
            shutil.copy(source, book / source.name)
        else:
            _write_notebook(
                book / source.name,
                _without_build(
                    json.loads(source.read_text(encoding="utf-8")), missing.get(page, "")
                ),
            )
    for name, nb in runs.items():
        _write_notebook(book / f"{name}.ipynb", _localize_downloads(as_page(nb), book))
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from jupyter_book.cli.main import main; sys.exit(main())",
            "build",
            "book",
        ],
        cwd=tmp,
        capture_output=True,
        text=True,
        errors="replace",
        env={**os.environ, "NO_COLOR": "1"},
    )
    html = tmp / "_build" / "html"
    absent = [name for name in runs if not (html / f"{name}.html").is_file()]
    if proc.returncode != 0 or absent:
        raise RuntimeError(
            f"rendering {', '.join(runs)} failed: {_cause(proc.stdout + proc.stderr)}"
        )
    return html


_DOWNLOAD = re.compile(
    r"\{download\}`(?P<text>[^`<]*?)<(?P<target>[^`<>]+)>`|\{download\}`(?P<bare>[^`<>]+)`"
)


def _localize_downloads(nb: dict, book: Path) -> dict:
    """Files a run's page links to with ``{download}`` outside the book's folder (paths relative to
    ``book/``, where the run worked: Appendix B's runs in OUT) copied into the temporary ``book`` and the
    links pointed at the copies, so the site carries them (``_downloads``)."""
    import hashlib

    def local(match) -> str:
        target = (match["target"] or match["bare"]).strip()
        path = (BOOK / target).resolve()
        if not path.is_file() or path.is_relative_to(BOOK.resolve()):
            return match.group(0)
        folder = book / "_linked" / hashlib.sha256(str(path).encode()).hexdigest()[:12]
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, folder / path.name)
        text = match["text"].strip() if match["target"] else path.name
        return f"{{download}}`{text} <_linked/{folder.name}/{path.name}>`"

    def fix(value):
        if isinstance(value, str):
            return _DOWNLOAD.sub(local, value)
        if isinstance(value, list):
            return [fix(v) for v in value]
        return value

    for cell in nb.get("cells", []):
        if cell.get("cell_type") == "markdown":
            cell["source"] = fix(cell.get("source"))
        for out in cell.get("outputs", []) if cell.get("cell_type") == "code" else []:
            data = out.get("data")
            if isinstance(data, dict):
                for key in list(data):
                    if key.endswith("text/markdown"):
                        data[key] = fix(data[key])
    return nb


def _write_notebook(path: Path, nb) -> None:
    path.write_text(json.dumps(nb, ensure_ascii=False), encoding="utf-8")


def _announcement(runs: dict, book_pages: list[str]) -> str:
    """The line at the top of every page of the site: which pages are runs (links), and that the others
    are the book's."""
    import html as html_module

    order = sorted(
        runs,
        key=lambda name: (book_pages.index(name) if name in book_pages else len(book_pages), name),
    )
    links = ", ".join(
        f'<a href="{name}.html" style="color: inherit; text-decoration: underline">'
        f"{html_module.escape(_title(runs[name]) or name)}</a>"
        for name in order
    )
    rest = (
        "every other page is the book's own build, at its defaults"
        if any(n in book_pages for n in runs)
        else "every other page is the book's own build"
    )
    return f"Not the book as published: {links} ran with other parameters (see the banner there); {rest}."


def _title(nb) -> str | None:
    """The text of the notebook's first heading ("4. Residual connection"), or None."""
    for cell in nb.get("cells", []):
        if cell.get("cell_type") == "markdown":
            source = _text(cell.get("source"))
            found = re.search(r"(?m)^#\s+(.+?)\s*$", source)
            if found:
                return found.group(1)
    return None


def _text(source) -> str:
    return "".join(source) if isinstance(source, list) else str(source or "")


def _without_build(nb: dict, why: str) -> dict:
    """A page of the book without a current build: its sources, with a note under its title that its
    numbers and figures are missing and why."""
    note = (
        f"\n\n:::{{note}} Numbers missing here\nThis page is the book's source without the book's build "
        f"({why or 'none is current'}), so its numbers, tables and figures are not shown. Build the book "
        f"(`jupyter-book build book`) and render again.\n:::\n"
    )
    _after_title(nb, note)
    return nb


def _after_title(nb: dict, text: str, suffix: str = "") -> None:
    """``text`` (markdown) inserted after the first heading of the notebook (``suffix`` appended to the
    heading); before everything when there is none."""
    import nbformat

    for cell in nb.get("cells", []):
        if cell.get("cell_type") != "markdown":
            continue
        source = _text(cell.get("source"))
        found = re.search(r"(?m)^#\s+.+?$", source)
        if found:
            cell["source"] = source[: found.end()] + suffix + text + source[found.end() :]
            return
    nb.setdefault("cells", []).insert(0, nbformat.v4.new_markdown_cell(text.strip()))


def _commit_folder(src: Path, dst: Path) -> None:
    """The staged folder ``src`` (the site's images, static files, sources) moved into ``dst`` file by file
    (each rename atomic; files of ``dst`` that the site does not have stay)."""
    for path in sorted(src.rglob("*")):
        if path.is_file() and not path.is_symlink():
            target = dst / path.relative_to(src)
            target.parent.mkdir(parents=True, exist_ok=True)
            if target.is_dir() and not target.is_symlink():
                shutil.rmtree(target)
            os.replace(path, target)


# -- a run as a page: title, banner, parameters -----------------------------------------------------------


def as_page(nb) -> dict:
    """A run's notebook as its page shows it (a copy; the notebook itself is not changed): glued values
    placed once as in the book (:func:`_glued_only`), no progress bars, the parameters cell showing the
    values that ran (papermill's injected cell folded into it), and, for a run, the title marked "— rerun"
    with the banner of :func:`banner` under it."""
    nb = json.loads(json.dumps(nb))
    _glued_only(nb)
    _drop_progress(nb)
    info = run_info(nb)
    if info is not None:
        _fold_parameters(nb, info)
        _after_title(
            nb,
            "\n\n" + banner(info, _title(nb)) + "\n",
            suffix=" \u2014 rerun" if info["chapter"] else " \u2014 a run",
        )
    return nb


def run_info(nb: dict) -> dict | None:
    """What a notebook says of its run, for its banner: its ``companion_rerun`` record, else papermill's (the
    values given, the chapter's current defaults, the date; no commit), else None (not a run)."""
    meta = nb.get("metadata", {})
    record, pm_meta = meta.get(RUN), meta.get("papermill")
    chapter = run_chapter(nb)
    if isinstance(record, dict):
        info = dict(record)
    elif isinstance(pm_meta, dict) and isinstance(pm_meta.get("parameters"), dict):
        source = Path(pm_meta["input_path"]) if isinstance(pm_meta.get("input_path"), str) else None
        info = {
            "page": source.stem if source else None,
            "given": pm_meta["parameters"],
            "date": pm_meta.get("end_time"),
            "seconds": pm_meta.get("duration"),
            "recorded": "papermill",
        }
    else:
        return None
    known = info.get("defaults")
    if not isinstance(known, dict):
        stem = info.get("page")
        path = (
            BOOK / f"{stem}.ipynb"
            if isinstance(stem, str) and re.fullmatch(r"[\w-]+", stem)
            else None
        )
        try:
            known = defaults(path) if path is not None and path.is_file() else {}
        except Exception:
            known = {}
    given = info.get("given") if isinstance(info.get("given"), dict) else {}
    ran = info.get("ran") if isinstance(info.get("ran"), dict) else {}
    info.update(
        defaults=known,
        given=given,
        ran={**known, **given, **ran},
        chapter=chapter,
        followed=[n for n in info.get("followed") or [] if isinstance(n, str)],
    )
    return info


def _literal(value, grouping: str = "_") -> str:
    """A parameter's value as Python writes it, integers grouped in threes by ``grouping`` ("_" in the
    parameters cell: ``20_000``)."""
    if isinstance(value, bool) or value is None:
        return repr(value)
    if isinstance(value, int):
        return f"{value:{grouping}}"
    if isinstance(value, list):
        return "[" + ", ".join(_literal(v, grouping) for v in value) + "]"
    return repr(value)


def _shown(value) -> str:
    """A parameter's value as the banner writes it: "20,000", "0.3", "[0.1, 0.3]", a string as code."""
    text = _literal(value, ",")
    return f"`{text}`" if isinstance(value, str) and "`" not in value else text


def changed(info: dict) -> list[tuple[str, object, object]]:
    """(name, the value that ran, the book's) of every parameter that ran with another value than the
    book's default, in the order of the parameters cell (then any other given)."""
    known, ran = info["defaults"], info["ran"]
    names = list(known) + [n for n in ran if n not in known]
    return [
        (n, ran.get(n), known.get(n))
        for n in names
        if n in ran and (n not in known or ran[n] != known[n])
    ]


_PARAMETER_LINE = re.compile(
    r"^(?P<name>[A-Za-z_]\w*)(?P<type>\s*:\s*[^=]+?)?\s*=\s*(?P<value>.*?)(?P<comment>\s+#.*)?$"
)


def _fold_parameters(nb: dict, info: dict) -> None:
    """The parameters cell rewritten to the values that ran (a changed line says the book's value), and
    papermill's injected cell, whose values it then holds, taken out. Left alone without a parameters cell."""
    cells = nb.get("cells", [])
    tagged = [c for c in cells if "parameters" in (c.get("metadata", {}).get("tags") or [])]
    if not tagged:
        return
    ran, known = info["ran"], info["defaults"]
    lines = []
    for line in _text(tagged[0].get("source")).splitlines():
        m = _PARAMETER_LINE.match(line)
        if (
            not m
            or m["name"] not in ran
            or (m["name"] in known and ran[m["name"]] == known[m["name"]])
        ):
            lines.append(line)
            continue
        note = f"book: {_literal(known[m['name']])}" if m["name"] in known else "not in the book"
        if m["name"] in info["followed"]:
            note += ", follows samples"
        comment = (m["comment"] or "").strip().lstrip("#").strip()
        lines.append(
            f"{m['name']}{m['type'] or ''} = {_literal(ran[m['name']])}  # [{note}] {comment}".rstrip()
        )
    tagged[0]["source"] = "\n".join(lines)
    nb["cells"] = [
        c for c in cells if "injected-parameters" not in (c.get("metadata", {}).get("tags") or [])
    ]


_PROGRESS = re.compile(r"\d+%\|")
_BAR = re.compile(
    r"(\d+)%\|[^|\r\n]*\|\s*\d+/(\d+)"
)  # tqdm's "41%|███   | 41000/100000": percent, total


def _without_progress(text: str) -> str:
    """stderr text without progress bars: of a line that holds one or a carriage return, the pieces between
    carriage returns that are neither a bar nor blank (nothing, if none); every other line as it was."""
    lines = []
    for line in text.split("\n"):
        if "\r" in line or _PROGRESS.search(line):
            line = "".join(p for p in line.split("\r") if p.strip() and not _PROGRESS.search(p))
            if not line:
                continue
        lines.append(line)
    return "\n".join(lines)


def _drop_progress(nb: dict) -> None:
    """Progress bars (tqdm's "42%|███" on stderr) taken out of the outputs, the rest of the stream kept, a
    stream left empty dropped: a page and a saved notebook show results."""
    for cell in nb.get("cells", []):
        if cell.get("cell_type") == "code":
            outputs = []
            for o in cell.get("outputs", []):
                if o.get("output_type") == "stream" and o.get("name") == "stderr":
                    o["text"] = _without_progress(_text(o.get("text")))
                    if not o["text"]:
                        continue
                outputs.append(o)
            cell["outputs"] = outputs


def _strip_saved(path: Path) -> None:
    """:func:`_drop_progress` on the executed notebook at ``path`` (written in its staging folder)."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    _drop_progress(nb)
    path.write_text(
        json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8"
    )  # as nbformat


def _setting_words(s: dict) -> str:
    """ "LayerNorm, α = 0.3, γ = 0.5, d = 64" of a check's setting (what it has)."""
    names = {"layernorm": "LayerNorm", "rms": "RMSNorm", "none": "no normalization"}
    parts = [names.get(s.get("norm"), str(s.get("norm")))] if s.get("norm") else []
    for key, symbol in (("alpha", "α"), ("gamma", "γ")):
        if isinstance(s.get(key), (int, float)):
            parts.append(f"{symbol} = {s[key]:g}")
    if isinstance(s.get("d"), int):
        parts.append(f"$d$ = {s['d']}")
    return ", ".join(parts) or "no one setting"


#: A banner lists this many verdicts at most; more fold into a dropdown.
FEW_VERDICTS = 4


def _verdict_lines(verdicts) -> list[str]:
    lines = []
    for v in verdicts:
        if not isinstance(v, dict):
            continue
        settings = [s for s in v.get("settings") or [] if isinstance(s, dict)]
        shown_settings = "; ".join(_setting_words(s) for s in settings[:6])
        if len(settings) > 6:
            shown_settings += f"; and {len(settings) - 6} more"
        checks = v.get("checks")
        lines.append(
            f"- {v.get('name') or v.get('claim')}: *{v.get('word')}*, from {checks} "
            f"check{'s' if checks != 1 else ''} at "
            f"{shown_settings}"
        )
    return lines


def banner(info: dict, title: str | None) -> str:
    """The admonition at the top of a run's page (MyST): which chapter ran, when, from which commit, every
    parameter that ran with another value than the book's (with the book's), which sample sizes followed
    ``samples``, and the settings that decided each verdict of the page."""
    from .report import duration

    name = title or info.get("page") or "this notebook"
    chapter = info.get("chapter")
    lines = [
        f"::::{{admonition}} {'A rerun of ' + name if chapter else 'A run of ' + name}, not the book's page",
        ":class: warning rerun-banner",
        "",
    ]
    when = info.get("date")
    when = _date_words(when) if isinstance(when, str) else "at a date not recorded"
    commit = info.get("commit")
    if info.get("recorded") == "papermill":
        source = "by papermill, outside `python -m companion rerun` (no commit recorded)"
    elif isinstance(commit, str) and commit:
        dirty = info.get("dirty")
        state = (
            " with uncommitted changes"
            if dirty
            else " without uncommitted changes"
            if dirty is False
            else " (its uncommitted changes unknown)"
        )
        source = f"from commit `{commit[:12]}` of the companion{state}"
    else:
        source = "from a checkout that is not a git repository (no commit recorded)"
    seconds = info.get("seconds")
    took = f" in {duration(seconds)}" if isinstance(seconds, (int, float)) and seconds >= 0 else ""
    lines.append(
        f"This page ran {when}{took}, {source}"
        + (f"; it takes the place of the book's page \u201c{name}\u201d. " if chapter else ". ")
    )
    rows = changed(info)
    theirs, value = (
        ("the book", "the book's value") if chapter else ("its default", "its default value")
    )
    if rows:
        lines += [
            f"Its parameters differ from {'the book' if chapter else 'the notebook'}'s in:",
            "",
            f"| parameter | this run | {theirs} |",
            "|:---|---:|---:|",
        ]
        for n, ran, default in rows:
            follows = "\u00a0†" if n in info["followed"] else ""
            lines.append(
                f"| `{n}` | {_shown(ran)}{follows} | {_shown(default) if n in info['defaults'] else '—'} |"
            )
        lines.append("")
        if any(n in info["followed"] for n, _, _ in rows):
            lines.append(
                "† a sample size that follows `samples`: the book's, scaled as `samples` is. "
            )
        lines.append(
            f"Every other parameter has {value} (the parameters cell below shows them all)."
        )
    else:
        lines.append(f"Every parameter has {value}.")
    verdicts = info.get("verdicts")
    if isinstance(verdicts, list) and verdicts:
        said = "Its verdicts are decided by the book's rule at this run's settings"
        if len(verdicts) <= FEW_VERDICTS:
            lines += ["", said + ":", "", *_verdict_lines(verdicts)]
        else:  # the landing page's many: folded
            lines += [
                "",
                f"{said}.",
                "",
                f":::{{dropdown}} The settings of its {len(verdicts)} verdicts",
                "",
                *_verdict_lines(verdicts),
                ":::",
            ]
    elif chapter and info.get("recorded") != "papermill":
        lines += ["", "The settings behind its verdicts were not recorded."]
    lines.append("::::")
    return "\n".join(lines)


def _date_words(text: str) -> str:
    """ "on 2026-12-05 at 11:51 UTC" of an ISO date with a time zone (the text itself if it is not one)."""
    try:
        when = datetime.datetime.fromisoformat(text).astimezone(datetime.UTC)
    except ValueError:
        return f"on {text}"
    return f"on {when:%Y-%m-%d} at {when:%H:%M} UTC"


# -- failures and glue ------------------------------------------------------------------------------

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
#: What says why a build failed, most telling first: an operating system's error (a full disk names its
#: file), an exception with its message, a Sphinx error.
_CAUSES = (r"\[Errno \d+\]", r"^(\w+\.)*\w*(Error|Exception): \S", r"\b(ERROR|CRITICAL|SEVERE):")


def _cause(log: str) -> str:
    """The line of a failed build's output that says why (the last of the most telling kind of
    :data:`_CAUSES`), else its last line."""
    lines = [line for line in (_ANSI.sub("", raw).strip() for raw in log.splitlines()) if line]
    for pattern in _CAUSES:
        named = [line for line in lines if re.search(pattern, line)]
        if named:
            return named[-1][:500]
    return (lines or ["no output"])[-1][:500]


GLUE_PREFIX = "application/papermill.record/"


def _glued_only(nb: dict) -> dict:
    """The notebook with every glued value that a rerun also displayed (companion.in_book) turned back
    into a glue record only, as in the book's build: the page places it where its text refers to it,
    once."""
    for cell in nb.get("cells", []):
        for out in cell.get("outputs", []) if cell.get("cell_type") == "code" else []:
            book = out.get("metadata", {}).get("scrapbook")
            if book and not book.get("mime_prefix"):
                out["data"] = {GLUE_PREFIX + k: v for k, v in out["data"].items()}
                book["mime_prefix"] = GLUE_PREFIX
    return nb


# -- the command line -----------------------------------------------------------------------------------


class _Options(argparse.Action):
    """Keeps every -p/-r/-y/-f in the order given: ``namespace.values`` (short flag, argument)."""

    def __call__(self, parser, namespace, values, option_string=None):
        flag = next(o for o in self.option_strings if len(o) == 2)
        namespace.values.append((flag, tuple(values) if isinstance(values, list) else values))


class _Usage(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    """argparse's parser whose usage errors are one ``error:`` line and exit 2, as every other bad input."""

    def error(self, message):
        raise _Usage(f"{message} ({self.prog} --help)")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m companion", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("rerun", help="run a chapter with other parameters, then render it")
    r.add_argument("page", help="a chapter, book/<name>.ipynb")
    r.add_argument(
        "out_dir", help="where the executed notebook and its page go (not in the sources)"
    )
    r.set_defaults(values=[])
    r.add_argument(
        "-p",
        "--parameters",
        nargs=2,
        action=_Options,
        metavar=("NAME", "VALUE"),
        help="a parameter, its value read as papermill reads it",
    )
    r.add_argument(
        "-r",
        "--parameters_raw",
        nargs=2,
        action=_Options,
        metavar=("NAME", "VALUE"),
        help="a parameter, its value a string",
    )
    r.add_argument(
        "-y",
        "--parameters_yaml",
        action=_Options,
        metavar="YAML",
        help="parameters as a YAML mapping",
    )
    r.add_argument(
        "-f", "--parameters_file", action=_Options, metavar="FILE", help="parameters in a YAML file"
    )
    r.add_argument("--no-render", action="store_true", help="only the executed notebook")
    h = sub.add_parser("render", help="an executed notebook as a page in the book's look")
    h.add_argument("notebook")
    h.add_argument(
        "--out",
        default=None,
        help="folder of the page (default: the notebook's; not in the sources)",
    )
    return parser


def main(argv=None) -> int:
    """The command line; returns the exit status (0, 2 bad input, 1 failure, 130 SIGINT, 143 SIGTERM)."""
    parser, args = _parser(), None

    def terminate(signum, frame):
        raise Terminated()

    old = signal.signal(signal.SIGTERM, terminate)
    try:
        try:
            args = parser.parse_args(argv)
        except SystemExit as exc:  # --help
            return exc.code if isinstance(exc.code, int) else 0
        if args.command == "rerun":
            given = read_values(args.values)
            path = rerun(args.page, args.out_dir, given, render_html=not args.no_render)
            print(path.with_suffix(".html") if not args.no_render else path)
        else:
            print(render(args.notebook, args.out))
    except (_Usage, ValueError) as exc:
        return _fail(str(exc), 2)
    except KeyboardInterrupt:
        return _fail("interrupted (SIGINT); the previous outputs are unchanged", 130)
    except Terminated:
        return _fail("terminated (SIGTERM); the previous outputs are unchanged", 143)
    except OSError as exc:  # a full disk, a folder that went away: the cause and the file
        where = " -> ".join(str(f) for f in (exc.filename, exc.filename2) if f is not None)
        return _fail(f"{exc.strerror or exc}: {where} (the previous outputs are unchanged)", 1)
    except Exception as exc:  # papermill's execution error: the chapter's own message
        return _fail(_failure(exc, args), 2 if _is_parameter_error(exc) else 1)
    finally:
        signal.signal(signal.SIGTERM, old)
    return 0


def _is_parameter_error(exc) -> bool:
    """A ValueError raised by the page's parameters' check (its first code cell after the parameters)."""
    from papermill.exceptions import PapermillExecutionError

    return (
        isinstance(exc, PapermillExecutionError)
        and exc.ename == "ValueError"
        and "params.check(" in (exc.source or "")
    )


def _failure(exc, args) -> str:
    from papermill.exceptions import PapermillExecutionError

    if isinstance(exc, PapermillExecutionError):
        if _is_parameter_error(exc):
            return exc.evalue
        failed = Path(args.out_dir) / f"{Path(args.page).stem}.failed.ipynb"
        return (
            f"{Path(args.page).name} failed in cell [{exc.exec_count}]: {exc.ename}: {exc.evalue} "
            f"(its notebook: {failed}; the previous outputs are unchanged)"
        )
    text = " ".join(str(exc).split())
    return (
        f"{type(exc).__name__}: {text[:500]}" if not isinstance(exc, RuntimeError) else text[:500]
    )


def _fail(message: str, code: int) -> int:
    print("error: " + " ".join(str(message).split()), file=sys.stderr)
    return code
