"""Rerun a chapter with other parameters and see it as a page of the book (README: "Rerun").

    python -m companion rerun book/residual.ipynb out -p alpha 0.3 -p gamma 0.5 -p samples 20000
    python -m companion render out/residual.ipynb

Values mean what they mean to papermill and pass the page's own checks before any work; derived
sample sizes follow ``samples``. The run takes its chapter's place in a copy of the book whose other
pages are the book's build, under a banner saying what ran. Outputs are replaced whole, one writer
per folder. Exit status: 0; 2 for bad input; 1 for a failed run or render; 130, 143 on a signal.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import datetime
import hashlib
import html
import json
import logging
import math
import os
import re
import shutil
import signal
import sqlite3
import stat
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import nbformat
import papermill
import yaml
from jupyter_cache import get_cache
from nbclient.exceptions import DeadKernelError
from papermill.cli import _resolve_type
from papermill.exceptions import PapermillExecutionError
from papermill.iorw import NoDatesSafeLoader
from sphinx_external_toc.parsing import parse_toc_yaml

from recency_lib.cache import cache_dir
from recency_lib.config import SimConfig
from recency_lib.engines import memory_limit, pilot
from recency_lib.files import path_text
from recency_lib.kernels import load as load_kernel
from recency_lib.norms import NORMS
from recency_lib.placements import PLACEMENTS
from recency_lib.validation import brief
from recency_lib.workers import cpus

from . import conventions, grid, params
from .params import BOOK, ROOT
from .report import duration
from .significance import z_for, zscore
from .sources import dependency_hash

NOTEBOOK_MAX = 2**26  # the largest notebook or parameters file read (an executed chapter: 0.2-3 MB)
LOCK, STAGING = ".rerun.lock", ".rerun-staging-"
WRITTEN = ".rerun-files.json"  # a folder's record of the files reruns wrote there (check_ours)
RUN = "companion_rerun"  # the notebook metadata key of a rerun's record (run_record)
GLUE_PREFIX = "application/papermill.record/"
FEW_VERDICTS = 4  # a banner lists this many verdicts at most; more fold into a dropdown
UNCHANGED = "the previous outputs are unchanged"  # after a failed or interrupted run


class Terminated(Exception):
    """SIGTERM, raised in the main thread so that a run cleans up as on Ctrl-C."""


# -- what the user gives ---------------------------------------------------------------------------


def read_values(p=(), r=(), y=(), f=()) -> dict:
    """The parameters of papermill's flags -p, -r, -y, -f, read by its own readers in its order
    (every -f, then -y, -p, -r); a name given twice by -p or -r is refused."""
    values, allowed = {}, 'allowed: a YAML mapping, e.g. "alphas: [0.3, 0.7]"'
    for flag, arg in [*(("-f", a) for a in f), *(("-y", a) for a in y)]:
        text = _read_text(arg, "-f", "a UTF-8 text file") if flag == "-f" else arg
        try:
            data = yaml.load(text, Loader=NoDatesSafeLoader) or {}
        except yaml.YAMLError as exc:
            why = " ".join(str(exc).split())[:200]
            raise ValueError(f"{flag} {brief(arg)} is not YAML ({why}); {allowed}") from None
        if not isinstance(data, dict) or not all(isinstance(k, str) for k in data):
            raise ValueError(f"{flag} {brief(arg)} is not a mapping of names; {allowed}")
        values.update(data)
    names = [name for name, _ in [*p, *r]]
    for k, name in enumerate(names):
        if name in names[:k]:
            raise ValueError(
                f"parameter {brief(name)} is given twice; allowed: each parameter once"
            )
    return {**values, **{n: _resolve_type(v) for n, v in p}, **dict(r)}


def _read_text(path, name: str, what: str) -> str:
    """The text of ``path``, a regular UTF-8 file of at most NOTEBOOK_MAX bytes (a pipe or a device
    refused without blocking), else a ValueError naming ``name``."""
    bad = f"{name}={path_text(path)}"
    allowed = f"allowed: {what} (a regular file of at most {NOTEBOOK_MAX // 2**20} MB)"
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # opening a FIFO must not wait for a writer
    except OSError as exc:
        raise ValueError(f"{bad} cannot be read ({exc.strerror}); {allowed}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):  # a folder too: no file object of it
        os.close(fd)
        raise ValueError(f"{bad} is not a regular file; {allowed}")
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        if st.st_size > NOTEBOOK_MAX:
            raise ValueError(f"{bad} has {st.st_size} bytes; {allowed}")
        data = fh.read(NOTEBOOK_MAX)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{bad} is not UTF-8 text (byte {exc.start}); {allowed}") from None


def read_notebook(path):
    """The executed notebook at ``path`` (nbformat's schema, with outputs), else a ValueError."""
    bad = f"notebook={path_text(path)}"
    allowed = "allowed: an executed notebook (python -m companion rerun ... runs one)"
    text = _read_text(path, "notebook", "an executed notebook")
    try:
        nb = nbformat.reads(text, as_version=4)
        nbformat.validate(nb)
    except Exception as exc:  # not JSON, not a notebook, another layout
        why = " ".join(str(exc).split())[:160] or type(exc).__name__
        raise ValueError(f"{bad} is not a notebook ({why}); {allowed}") from None
    if not any(c.get("outputs") for c in nb.cells if c.cell_type == "code"):
        raise ValueError(f"{bad} has no outputs; {allowed}")
    return nb


def page_name(notebook) -> str:
    """A page's file stem (a docname, a line of the toc): the notebook's, each run of characters
    other than ``[A-Za-z0-9_-]`` made ``-``."""
    return re.sub(r"[^A-Za-z0-9_-]+", "-", Path(notebook).stem).strip("-_") or "page"


def out_folder(name: str, folder) -> Path:
    """``folder`` resolved, where a rerun may write: outside the sources and the book's build (which
    jupyter-book alone writes; a run there would become the book)."""
    path = params.check_outside_sources(name, folder)
    build = params.build_folder().resolve()
    if path.is_relative_to(build):
        raise ValueError(
            f"{name}={path_text(folder)} is in the book's build ({path_text(build)}); allowed: a "
            "folder outside the sources and the build"
        )
    return path


def _record(out: Path) -> dict:
    """``out``'s record WRITTEN: the files reruns wrote there (``files``, relative paths) and the
    seconds of its last render (``render_seconds``)."""
    try:
        record = json.loads((out / WRITTEN).read_text(encoding="utf-8"))
        record["files"] = {f for f in record["files"] if isinstance(f, str)}
        return record
    except FileNotFoundError:
        return {"files": set()}
    except (OSError, ValueError, KeyError, TypeError):
        raise ValueError(
            f"out_dir={path_text(out)} has an unreadable record {WRITTEN}; allowed: a folder "
            "that only reruns wrote to, or a new one"
        ) from None


def _written(out: Path) -> set[str]:
    """The files reruns wrote in ``out`` (paths relative to it)."""
    return _record(out)["files"]


def check_ours(out: Path, names) -> None:
    """ValueError unless each of ``names`` (relative to ``out``) is absent or a rerun wrote it: a
    rerun never replaces a file it did not write."""
    written = _written(out)
    theirs = [n for n in names if os.path.lexists(out / n) and n not in written]
    if theirs:
        more = f" and {len(theirs) - 1} more" if len(theirs) > 1 else ""
        raise ValueError(
            f"out_dir={path_text(out)} holds {theirs[0]}{more}, which no rerun wrote there (not "
            f"in its record {WRITTEN}); allowed: a new folder, or one that only reruns wrote to"
        )


def _record_written(out: Path, names, **more) -> None:
    """Add ``names`` (and ``more``: render_seconds) to ``out``'s record (replaced atomically)."""
    record = _record(out) | more
    record["files"] = sorted(record["files"] | set(names))
    tmp = out / f".{WRITTEN}.{os.getpid()}.tmp"
    tmp.write_text(json.dumps(record, indent=0), encoding="utf-8")
    os.replace(tmp, out / WRITTEN)


#: In the book's build folder: the seconds of the last render of a rerun's site, in any folder.
LAST_RENDER = ".rerun-last-render.json"

#: The folders of a rendered site beside its pages (Sphinx's).
SITE_FOLDERS = ("_downloads", "_images", "_sources", "_static")


def _site_names(out: Path, stem: str) -> list[str]:
    """What a run of page ``stem`` may write in ``out``: its pages, the site's files, and whatever
    ``out`` holds in the site's folders (checked again, exactly, as they are committed)."""
    pages = [f"{p}.html" for p in [*toc_pages(), stem, "genindex", "search"]]
    assets = [p for folder in SITE_FOLDERS for p in (out / folder).rglob("*") if not p.is_dir()]
    return [
        *pages,
        *(p.relative_to(out).as_posix() for p in assets),
        *(f"{stem}{ext}" for ext in (".ipynb", ".failed.ipynb")),
        *("searchindex.js", "objects.inv"),
    ]


def commit(out: Path, pairs: list[tuple[Path, Path]], staging: Path) -> None:
    """grid.commit of ``pairs`` into ``out`` once none replaces a file no rerun wrote; recorded."""
    names = [target.relative_to(out).as_posix() for _, target in pairs]
    check_ours(out, names)
    grid.commit(pairs, staging)
    _record_written(out, names)


@contextlib.contextmanager
def _staging(out: Path):
    """A staging folder in ``out`` while this process is its one writer (grid.one_writer); ``out``
    removed again if this made it and a failure or an interrupt left nothing in it but the lock."""
    made = not out.exists()
    try:
        with grid.one_writer(out, LOCK, STAGING):
            with tempfile.TemporaryDirectory(
                dir=out, prefix=STAGING, ignore_cleanup_errors=True
            ) as s:
                yield Path(s)
    except BaseException:
        if made and {p.name for p in out.iterdir()} <= {LOCK}:
            shutil.rmtree(out, ignore_errors=True)
        raise


# -- rerun -----------------------------------------------------------------------------------------


def rerun(page, out_dir, given: dict, *, render_html=True, kernel="python3", progress=None) -> Path:
    """Run chapter ``page`` with ``given`` into ``out_dir``, render it in the book and return the
    executed notebook's path. A bad page, folder, name or value: ValueError before any work; a
    failed cell: PapermillExecutionError (its notebook: ``<page>.failed.ipynb``). ``progress``: the
    stream of the terminal's lines (False: none)."""
    page = Path(page).resolve()
    allowed = f"allowed: a chapter of the book, {path_text(BOOK / '<name>.ipynb')}"
    if not page.is_file():
        raise ValueError(f"page={path_text(page)} does not exist; {allowed}")
    if page.suffix != ".ipynb" or page.parent != BOOK:
        raise ValueError(f"page={path_text(page)} is not allowed; {allowed}")
    out = out_folder("out_dir", out_dir)
    known = params.defaults(page)
    given = dict(given)
    for name, default in params.OUTPUTS.get(page.stem, {}).items():  # what the page writes: in out
        value = given.get(name, "")
        if isinstance(value, str) and not os.path.isabs(value):
            given[name] = str(out / (value or default))
    followed = params.follow_samples(page.stem, known, given)
    with contextlib.chdir(BOOK):  # the page's working folder
        placed = {name: given[name] for name in params.OUTPUTS.get(page.stem, {})}
        book_values = params.check(page.stem, {**known, **placed})
        values = params.check(page.stem, {**known, **followed, **given})
    for check in (load_kernel, cache_dir, memory_limit):  # the simulator's environment variables
        check()
    check_ours(
        out,
        _site_names(out, page.stem) if render_html else [page.name, f"{page.stem}.failed.ipynb"],
    )
    say = _sayer(page.stem, sys.stderr if progress is None else progress)
    say(expected_time(page.stem, book_values, values, render=out if render_html else None))
    say(f"results cache: {path_text(cache_dir())} (RECENCY_LIB_CACHE names another)")
    with _staging(out) as staging:
        staged, started = staging / page.name, time.perf_counter()
        summary = _execute(page, staged, {**followed, **given}, kernel, out, say)
        seconds = time.perf_counter() - started
        nb = read_notebook(staged)
        nb.metadata[RUN] = run_record(page, known, given, followed, summary, seconds)
        nbformat.write(nb, str(staged))
        say(f"ran in {_clock(seconds)}" + ("; rendering it in the book" if render_html else ""))
        pairs = [(staged, out / page.name)]
        if render_html:
            pairs += _render_site(out, staging, {page.stem: staged}, say)
        commit(out, pairs, staging)
        written = _written(out)
        stale = [f"{page.stem}.failed.ipynb", *([] if render_html else [f"{page.stem}.html"])]
        for name in stale:  # an earlier run's page or failure must not sit beside this run
            if name in written:
                (out / name).unlink(missing_ok=True)
    return out / page.name


#: The signs of the lines for the terminal, in ASCII for a terminal whose encoding lacks them.
_ASCII = str.maketrans(
    {"×": "x", "−": "-", "–": "-", "—": "-", "≈": "~", "±": "+/-", "…": "..."}
    | {"→": "->", "≤": "<=", "≥": ">=", "α": "alpha", "γ": "gamma"}
    | {"†": "+", "’": "'", "·": "."}
)


def _say(text: str, stream) -> None:
    """``text`` as a line of ``stream``, its signs in ASCII where its encoding has none of them."""
    encoding = getattr(stream, "encoding", None) or "utf-8"
    try:
        text.encode(encoding)
    except (UnicodeEncodeError, LookupError):
        text = text.translate(_ASCII).encode("ascii", "replace").decode("ascii")
    print(text, file=stream, flush=True)


def _sayer(name: str, stream):
    """Lines for the terminal, prefixed with the chapter's name (none when ``stream`` is False)."""
    return lambda text: stream and _say(f"{name}: {text}", stream)


def _clock(seconds: float) -> str:
    s = round(seconds)
    return f"{s // 60}:{s % 60:02d}" if s < 3600 else f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"


class _Progress:
    """The terminal's lines: one per code cell as it starts ("[3/9] 0:12" and its first line); in a
    cell, every ``every`` s at most, how far its simulations are together and the time they need
    yet (recency_lib.progress's events in ``file``, of every process of the kernel)."""

    def __init__(self, say, file: Path, cells: int, every: float = 30.0, clock=time.perf_counter):
        self.say, self.file, self.cells, self.every, self.clock = say, file, cells, every, clock
        self.t0 = self.last = clock()
        self.cell, self.read, self.pending = 0, 0, ""
        self.runs, self.first = (
            {},
            None,
        )  # this cell's: run -> (done, total); its first event's time

    def start(self, cell, cell_index=None) -> None:
        if cell.cell_type == "code":
            self.cell, self.runs, self.first = self.cell + 1, {}, None
            first = next((line.strip() for line in cell.source.splitlines() if line.strip()), "")
            self._line(first if len(first) <= 72 else first[:71] + "…")

    def _line(self, text: str) -> None:
        self.last = self.clock()
        self.say(f"[{self.cell}/{self.cells}] {_clock(self.last - self.t0)} {text}")

    def poll(self) -> None:
        """The events written since; the cell's simulations said when it said nothing for
        ``every`` s."""
        with contextlib.suppress(FileNotFoundError), open(self.file, "rb") as fh:
            fh.seek(self.read)
            data = fh.read()
            self.read += len(data)
            *lines, self.pending = (self.pending + data.decode("utf-8", "replace")).split("\n")
            for line in lines:  # {"run", "done", "total", "seconds"}
                with contextlib.suppress(ValueError, KeyError, TypeError):
                    event = json.loads(line)
                    self.runs[event["run"]] = (int(event["done"]), int(event["total"]))
                    self.first = self.clock() if self.first is None else self.first
        if self.runs and self.clock() - self.last >= self.every:
            self._line(self._simulations())

    def _simulations(self) -> str:
        """'2 simulations so far in this cell, 40 % of their 30,000,000 sequences, about 1:10 to
        go for them' (the time from their pace since the cell's first event)."""
        done = sum(d for d, _ in self.runs.values())
        total = sum(t for _, t in self.runs.values())
        n = len(self.runs)
        text = f"{n} simulation{'s' if n > 1 else ''} so far in this cell, "
        text += (
            f"{100 * done // max(total, 1)} % of {'their' if n > 1 else 'its'} {total:,} sequences"
        )
        spent = self.clock() - self.first
        if 0 < done < total and spent > 0:
            text += f", about {_clock((total - done) * spent / done)} to go"
        return text

    def watch(self, stop: threading.Event) -> None:
        while not stop.wait(1.0):
            self.poll()


#: What the rerun's kernel is asked once the chapter has run (one JSON line).
SUMMARY = "from companion.provenance import run_summary as _s\nprint(_s(globals(), {names!r}))"


def _execute(page: Path, staged: Path, values: dict, kernel: str, out: Path, say) -> dict | None:
    """papermill from ``book/`` on a kernel that reports its progress; returns what the page held
    at its end (provenance.run_summary). A failed run's notebook: ``out/<page>.failed.ipynb``."""
    events = staged.with_name(".progress.jsonl")
    env = {
        k: v for k, v in os.environ.items() if k not in ("COMPANION_IN_BOOK", "COMPANION_BUILD_DIR")
    }
    env.update(RECENCY_LIB_PROGRESS="0", RECENCY_LIB_PROGRESS_FILE=str(events))
    shared = grid.SharedKernel(kernel, env)
    cells = sum(c.cell_type == "code" for c in nbformat.read(str(page), as_version=4).cells)
    progress, stop = _Progress(say, events, cells + bool(values)), threading.Event()  # + injected
    threading.Thread(target=progress.watch, args=(stop,), daemon=True).start()
    try:
        grid.run_notebook(shared, page, staged, values, BOOK, on_cell_start=progress.start)
        with contextlib.suppress(RuntimeError, ValueError):  # else only the record is the poorer
            return json.loads(shared.ask(SUMMARY.format(names=list(params.defaults(page)))))
    except PapermillExecutionError as exc:
        failed = _keep_failed(staged, out, page)  # papermill wrote it with the error
        if exc.ename == "ValueError" and _check_failed(nbformat.read(str(failed), as_version=4)):
            raise ValueError(exc.evalue) from None  # the page's own check refused a value
        raise
    except DeadKernelError:  # the kernel ended in a cell (a crash, the memory's killer)
        failed = _keep_failed(staged, out, page)
        raise RuntimeError(
            f"{page.name}: the kernel died in {_last_cell(failed)} (its notebook: {failed}; "
            f"{UNCHANGED})"
        ) from None
    except BaseException:  # interrupted: the cell's task dies with the kernel, unread
        for name in ("asyncio", "papermill"):  # (its client logs that the kernel died)
            logging.getLogger(name).setLevel(logging.CRITICAL)
        raise
    finally:
        stop.set()
        shared.close()
    return None


def _keep_failed(staged: Path, out: Path, page: Path) -> Path:
    """A failed run's notebook moved to ``out/<page>.failed.ipynb`` (recorded as a rerun's)."""
    failed = out / f"{page.stem}.failed.ipynb"
    os.replace(staged, failed)
    _record_written(out, [failed.name])
    return failed


def _last_cell(path: Path) -> str:
    """``cell [k/N] (its first line)``: the last code cell papermill started in the notebook
    ``path`` (numbered as the progress lines number them)."""
    code = [c for c in nbformat.read(str(path), as_version=4).cells if c.cell_type == "code"]
    started = [k for k, c in enumerate(code) if c.metadata.get("papermill", {}).get("start_time")]
    if not started:
        return "its start"
    lines = [line.strip() for line in code[started[-1]].source.splitlines() if line.strip()]
    return f"cell [{started[-1] + 1}/{len(code)}] ({(lines or [''])[0][:80]})"


def _check_failed(nb) -> bool:
    """Whether the failed cell is the page's check, the code cell after its parameters."""
    code = [c for c in nb.cells if c.cell_type == "code"]
    tagged = {"parameters", "injected-parameters"}
    after = [k + 1 for k, c in enumerate(code) if tagged & set(c.metadata.get("tags", []))]
    if not after or after[-1] >= len(code):
        return False
    return code[after[-1]].metadata.get("papermill", {}).get("exception") is True


def checkout_state(root: Path = ROOT) -> dict:
    """The checkout's commit and whether it has uncommitted changes (None where git cannot say)."""
    git = ["git", "-C", str(root), "status", "--porcelain=v2", "--branch"]
    try:
        lines = subprocess.run(git, capture_output=True, text=True, check=True).stdout.splitlines()
    except (OSError, subprocess.CalledProcessError):  # no git, or not a git checkout
        return {"commit": None, "dirty": None}
    commit = next((line.split()[2] for line in lines if line.startswith("# branch.oid ")), None)
    dirty = any(not line.startswith("#") for line in lines)
    return {"commit": commit if commit != "(initial)" else None, "dirty": dirty}


def run_record(page: Path, known, given, followed, summary: dict | None, seconds: float) -> dict:
    """The ``companion_rerun`` record of a run (what its banner says)."""
    summary = summary or {}
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


# -- the expected time -----------------------------------------------------------------------------


def book_stamps(build: Path | None = None) -> dict:
    """docname -> what the book's build recorded of the page (fresh_cache's stamps), or {}."""
    build = params.build_folder() if build is None else Path(build)
    try:
        return json.loads((build / ".jupyter_cache" / "fresh_cache.json").read_text())["pages"]
    except (OSError, ValueError, KeyError, TypeError):
        return {}


def cost_factor(page: str, known: dict, values: dict) -> float:
    """How much more a run with ``values`` simulates than the defaults ``known``, roughly:
    sequences × (n/n₀)³ × layers/layers₀ (the Gram engine's cost) × its lists' lengths."""
    sizes = ("samples", *params.derived_sizes(page))
    factor = sum(values[k] for k in sizes) / sum(known[k] for k in sizes)
    for name, power in (("n", 3), ("layers", 1)):
        if isinstance(known.get(name), int):
            factor *= (values[name] / known[name]) ** power
    for name, default in known.items():
        if isinstance(default, list) and default:
            factor *= len(values[name]) / len(default)
    return factor


def _rest_of_last_run(out: Path, page: str) -> float | None:
    """The seconds of ``page``'s last run in ``out`` besides its simulations (start, figures)."""
    try:
        record = read_notebook(out / f"{page}.ipynb").metadata.get(RUN, {})
        return max(0.0, float(record["seconds"]) - float(record["cost"]["seconds"]))
    except (ValueError, OSError, KeyError, TypeError, AttributeError):
        return None


def expected_time(page: str, known: dict, values: dict, build=None, render=None) -> str:
    """The line before a rerun: its simulation's time, then the rest of its execution and the render
    of the site into the folder ``render`` (its last render there, else said to be unknown; None:
    no render). The simulation's time: the book's measured compute of ``page`` times
    :func:`cost_factor` over its ``workers``; for a page of one setting that the build never runs
    (the setting template), a timed pilot of that setting here, and the rest from its last run in
    the folder."""
    stamp = book_stamps(build).get(page, {})
    measured, wall = stamp.get("simulation_seconds"), stamp.get("seconds")
    last = _record(render).get("render_seconds") if render is not None else None
    then = ""
    if isinstance(last, (int, float)):
        then = f"; then about {duration(last)} to render the site (its last render there)"
    elif render is not None:
        build = params.build_folder() if build is None else Path(build)
        try:
            last = float(json.loads((build / LAST_RENDER).read_text())["render_seconds"])
            then = f"; then about {duration(last)} to render the site (the last render here)"
        except (OSError, ValueError, KeyError, TypeError):
            then = "; then the site's render (timed after this machine's first)"
    if isinstance(measured, (int, float)) and isinstance(wall, (int, float)):
        factor, spread = cost_factor(page, known, values), min(values.get("workers", 1), cpus())
        over = f" over {spread} processes" if spread > 1 else ""
        rest = _rest_of_last_run(render, page) if render is not None else None
        besides = (
            f"about {duration(rest)} besides (its last run there: the kernel's start, figures)"
            if rest is not None and rest > wall
            else f"up to {duration(wall)} besides (the book's last execution of the page)"
        )
        seconds = measured * factor / spread + max(wall, rest or 0)
        how = (
            f"the book's run of this page at its defaults holds {duration(measured)} of "
            f"simulation (compute time), × {factor:.2g} for this run's sequences{over}, plus "
            f"{besides}"
        )
    elif all(name in values for name in params.SETTING_PARAMS):
        cfg = SimConfig(**{name: values[name] for name in params.SETTING_PARAMS})
        size, spent = pilot(cfg)
        rest = _rest_of_last_run(render, page) if render is not None else None
        seconds = spent * cfg.samples / size + (rest or 0)
        how = (
            f"a pilot of its setting ran {size:,} sequences here in {duration(spent)}, × "
            f"{cfg.samples / size:.2g} for this run's {cfg.samples:,}, plus "
            + (
                f"about {duration(rest)} for the notebook's start and figures (its last run there)"
                if rest is not None
                else "the notebook's start and figures (timed after its first run there)"
            )
        )
    else:
        return (
            "expected time unknown: the book's build has not measured this page (build the book, "
            f"jupyter-book build book, for an estimate){then}"
        )
    total = duration(seconds + (last or 0))
    return (
        f"expected time about {total}, an estimate: {how}{then}; results already cached take less"
    )


# -- render: the site around the runs --------------------------------------------------------------


def render(notebook, out: str | os.PathLike | None = None) -> Path:
    """``notebook`` (executed) rendered in the book into ``out`` (default: its folder), a chapter's
    run copied there too (a later rerun keeps its place); returns the page's path."""
    nb = read_notebook(notebook)
    out = Path(notebook).resolve().parent if out is None else out
    out = out_folder("out", out)
    name = page_name(notebook)
    given = Path(notebook).resolve()  # rendered where it is: read, never replaced
    check_ours(out, [n for n in _site_names(out, name) if (out / n).resolve() != given])
    with _staging(out) as staging:
        pairs = _render_site(out, staging, {name: Path(notebook)}, _sayer(name, sys.stderr))
        copy = out / f"{name}.ipynb"
        if run_chapter(nb) == name and copy.resolve() != Path(notebook).resolve():
            shutil.copy(notebook, staging / copy.name)
            pairs.append((staging / copy.name, copy))
        commit(out, pairs, staging)
    return out / f"{name}.html"


def toc_pages(root: Path = ROOT) -> list[str]:
    """The book's pages (docnames) in the order of its table of contents."""
    return list(parse_toc_yaml(str(root / "_toc.yml")))


def _dict(value) -> dict:
    return value if isinstance(value, dict) else {}


def run_chapter(nb) -> str | None:
    """The page of the book a notebook is a run of (its record's page, or what papermill ran; a
    chapter, or a page outside the table of contents such as the setting template), else None."""
    meta = _dict(nb.get("metadata"))
    page = _dict(meta.get(RUN)).get("page") or _dict(meta.get("papermill")).get("input_path")
    page = Path(page).stem if isinstance(page, str) else None
    return page if page and page_name(page) == page and (BOOK / f"{page}.ipynb").is_file() else None


def _render_site(out: Path, staging: Path, runs: dict, say) -> list[tuple[Path, Path]]:
    """The book built with ``runs`` (name -> executed notebook) and the other runs in ``out``, its
    folders moved into ``out``; returns the pairs (staged, target) of its pages."""
    written = _written(out)
    for path in sorted(out.glob("*.ipynb")):
        if path.name in written and path.stem not in runs and not path.stem.endswith(".failed"):
            with contextlib.suppress(ValueError):  # not a notebook: not a run
                if run_chapter(read_notebook(path)) == path.stem:
                    runs = {path.stem: path, **runs}
    pages, build = toc_pages(), params.build_folder()
    missing = book_records(build, [p for p in pages if p not in runs])
    if missing:
        why = "; ".join(sorted(set(missing.values())))
        say(
            f"note: {len(missing)} of the book's pages show no numbers here "
            f"({', '.join(sorted(missing))}): {why}; build the book (jupyter-book build book) and "
            f"render again"
        )
    started = time.perf_counter()
    html_dir = _build_site(staging / "project", pages, runs, build, missing)
    seconds = round(time.perf_counter() - started, 1)
    files = sorted(p for p in html_dir.rglob("*") if p.is_file() and p.name != ".buildinfo")
    check_ours(out, [p.relative_to(html_dir).as_posix() for p in files])
    pairs, assets = [], []
    for path in files:
        target = out / path.relative_to(html_dir)
        if path.parent == html_dir:  # a page: committed with the run, all or none
            pairs.append((path, target))
            continue
        target.parent.mkdir(parents=True, exist_ok=True)  # images, static files: each rename atomic
        os.replace(path, target)
        assets.append(target.relative_to(out).as_posix())
    _record_written(out, assets, render_seconds=seconds)
    if build.is_dir():  # the last render of any folder: the estimate before a folder's first
        tmp = build / f"{LAST_RENDER}.{os.getpid()}.tmp"
        tmp.write_text(json.dumps({"render_seconds": seconds}), encoding="utf-8")
        os.replace(tmp, build / LAST_RENDER)
    return pairs


def book_records(build: Path, pages) -> dict:
    """docname -> why the book's execution cache holds no current record (of its cells, and from
    the checkout's sources: fresh_cache's ``code`` stamp) of each such notebook of ``pages``."""
    notebooks = [p for p in pages if (BOOK / f"{p}.ipynb").is_file()]
    if not (build / ".jupyter_cache" / "global.db").is_file():
        return {p: f"no build of the book in {path_text(build)}" for p in notebooks}
    cache, stamps, missing = get_cache(str(build / ".jupyter_cache")), book_stamps(build), {}
    for page in notebooks:
        path = BOOK / f"{page}.ipynb"
        if stamps.get(page, {}).get("code") != dependency_hash(path, ROOT, environ={}):
            missing[page] = "the book's build of them is older than the checkout's sources"
            continue
        try:
            cache.match_cache_notebook(nbformat.read(str(path), as_version=4))
        except KeyError:
            missing[page] = "the book's execution cache has no current record of them"
    return missing


def _copy_cache(src: Path, dst: Path) -> None:
    """The book's execution cache copied, its database by sqlite's backup (whole while written)."""
    if not (src / "global.db").is_file():
        return
    shutil.copytree(src, dst, symlinks=True, ignore=shutil.ignore_patterns("global.db*"))
    with (
        contextlib.closing(sqlite3.connect(f"file:{src / 'global.db'}?mode=ro", uri=True)) as db,
        contextlib.closing(sqlite3.connect(dst / "global.db")) as copy,
    ):
        db.backup(copy)


#: The search's page texts, kept by each page's content in the doctree folder
#: (book/_ext/offline_search.py's TEXTS_CACHE; tests/book/test_site_extensions.py holds them equal).
SEARCH_TEXTS = "page-texts.json"


def _build_site(project: Path, book_pages: list[str], runs: dict, build, missing) -> Path:
    """The book's project copied into ``project`` with ``runs`` in place and built executing nothing
    (its pages from a copy of its cache, the ``missing`` with a note); its HTML folder."""
    book = project / "book"  # book/ but its package (its _toc.yml: a link to the project's)
    ignore = shutil.ignore_patterns("companion", "__pycache__", "_build")
    shutil.copytree(BOOK, book, symlinks=True, ignore=ignore)
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    excluded = sorted(f"{name}.ipynb" for name in [*runs, *missing])
    config["execute"].update(execute_notebooks="cache", exclude_patterns=excluded)  # read only
    del config["sphinx"]["local_extensions"]["fresh_cache"]  # it would execute and restamp pages
    # from disk (file://) a browser refuses the search's fetch of a hit's page: titles only
    config["sphinx"]["config"]["html_show_search_summary"] = False
    config["html"]["announcement"] = _announcement(runs, book_pages, missing)
    (project / "_config.yml").write_text(
        yaml.safe_dump(config, allow_unicode=True, sort_keys=False)
    )
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    toc["chapters"].extend({"file": name} for name in runs if name not in book_pages)
    (project / "_toc.yml").write_text(yaml.safe_dump(toc, sort_keys=False), encoding="utf-8")
    _copy_cache(build / ".jupyter_cache", project / "_build" / ".jupyter_cache")
    texts = build / ".doctrees" / SEARCH_TEXTS
    if texts.is_file():  # the texts of the pages whose content did not change are read back
        (project / "_build" / ".doctrees").mkdir(parents=True, exist_ok=True)
        shutil.copy2(texts, project / "_build" / ".doctrees" / texts.name)
    for page, why in missing.items():
        nb = nbformat.read(str(BOOK / f"{page}.ipynb"), as_version=4)
        nbformat.write(_without_build(nb, why), book / f"{page}.ipynb")
    for name, path in runs.items():
        nbformat.write(_localize_downloads(as_page(path), book), book / f"{name}.ipynb")
    main = "import sys; from jupyter_book.cli.main import main; sys.exit(main())"
    env = {**os.environ, "NO_COLOR": "1"}
    command = [sys.executable, "-c", main, "build", "book"]
    proc = subprocess.run(
        command, cwd=project, capture_output=True, text=True, errors="replace", env=env
    )
    html_dir = project / "_build" / "html"
    if proc.returncode != 0 or not all((html_dir / f"{name}.html").is_file() for name in runs):
        raise RuntimeError(
            f"rendering {', '.join(runs)} failed: {_cause(proc.stdout + proc.stderr)}"
        )
    return html_dir


_DOWNLOAD = re.compile(
    r"\{download\}`(?P<text>[^`<]*?)<(?P<target>[^`<>]+)>`|\{download\}`(?P<bare>[^`<>]+)`"
)


def _localize_downloads(nb: dict, book: Path) -> dict:
    """Files outside the book that a run's page links to with ``{download}`` (Appendix B's runs)
    copied into the temporary ``book``, the links pointed at the copies."""

    def local(match) -> str:
        path = (BOOK / (match["target"] or match["bare"]).strip()).resolve()
        if not path.is_file() or path.is_relative_to(BOOK.resolve()):
            return match.group(0)
        folder = book / "_linked" / hashlib.sha256(str(path).encode()).hexdigest()[:12]
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, folder / path.name)
        text = match["text"].strip() if match["target"] else path.name
        return f"{{download}}`{text} <_linked/{folder.name}/{path.name}>`"

    for cell in nb.cells:  # nbformat's: every text a string
        if cell.cell_type == "markdown":
            cell.source = _DOWNLOAD.sub(local, cell.source)
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            for key in [k for k in data if k.endswith("text/markdown")]:
                data[key] = _DOWNLOAD.sub(local, data[key])
    return nb


def _announcement(runs: dict, book_pages: list[str], missing=()) -> str:
    """The line at the top of every page of the site: which pages are runs (links to them), and
    how many of the others show no numbers (``missing``: no current build of them)."""

    def link(name: str) -> str:
        title = _title(nbformat.read(str(runs[name]), as_version=4)) or name
        style = "color: inherit; text-decoration: underline"
        return f'<a href="{name}.html" style="{style}">{html.escape(title)}</a>'

    order = sorted(runs, key=lambda n: ([*book_pages, n].index(n), n))  # the book's order first
    rest = ", at its defaults" if any(n in book_pages for n in runs) else ""
    others = f"every other page is the book's own build{rest}"
    if missing:
        others = (
            f"{len(missing)} other pages show no numbers (no current build of the book; each "
            "says so), the rest are the book's own build"
        )
    return (
        f"Not the book as published: {', '.join(map(link, order))} ran with other parameters (see "
        f"the banner there); {others}."
    )


def _heading(nb):
    """The first markdown cell with a heading ``# ...`` and its match, else (None, None)."""
    for cell in nb.cells:
        found = re.search(r"(?m)^#[ \t]+(.+?)[ \t]*$", cell.source)
        if cell.cell_type == "markdown" and found:
            return cell, found
    return None, None


def _title(nb) -> str | None:
    """The text of the notebook's first heading ("4. Residual connection"), or None."""
    found = _heading(nb)[1]
    return found and found.group(1)


def _after_title(nb: dict, text: str, suffix: str = "") -> dict:
    """``text`` inserted after the first heading (``suffix`` appended to it), else first."""
    cell, found = _heading(nb)
    if cell is None:
        nb.cells.insert(0, nbformat.v4.new_markdown_cell(text.strip()))
    else:
        cell.source = cell.source[: found.end()] + suffix + text + cell.source[found.end() :]
    return nb


#: A glued value in a page's prose (myst-nb's roles ``{glue}`` and ``{glue:text}``, ...).
_GLUE_ROLE = re.compile(r"\{glue(?::\w+)?\}`[^`]*`")


def _without_build(nb: dict, why: str) -> dict:
    """A page of the book without a current build: its sources, with a note under its title and
    each glued number of its prose shown as missing (not as a blank)."""
    nb = copy.deepcopy(nb)
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            cell.source = _GLUE_ROLE.sub("[number missing]", cell.source)
    return _after_title(
        nb,
        "\n\n:::{admonition} Numbers missing here\n:class: note\nThis page is the book's source "
        f"without the book's build ({why}), so its numbers, tables and figures are not "
        "shown. Build the book (`jupyter-book build book`) and render again.\n:::\n",
    )


# -- a run as a page: its parameters, its banner ---------------------------------------------------


def as_page(path) -> dict:
    """The notebook at ``path`` as its page: glued values placed once, as in the book; a run's
    parameters cell holding the values that ran, its title marked "— rerun" over the banner."""
    nb = nbformat.read(str(path), as_version=4)
    for output in (o for cell in nb["cells"] for o in cell.get("outputs", [])):
        book = output.get("metadata", {}).get("scrapbook")  # glued, and displayed by a rerun
        if book and not book.get("mime_prefix"):
            output["data"] = {GLUE_PREFIX + k: v for k, v in output["data"].items()}
            book["mime_prefix"] = GLUE_PREFIX
    info = run_info(nb)
    if info is not None:
        _fold_parameters(nb, info, papermill.inspect_notebook(str(path)))
        suffix = " \u2014 rerun" if info["chapter"] else " \u2014 a run"
        _after_title(nb, "\n\n" + banner(info, _title(nb)) + "\n", suffix)
    return nb


def run_info(nb: dict) -> dict | None:
    """What a notebook says of its run: its ``companion_rerun`` record, else papermill's (the
    defaults: the chapter's now), else None."""
    meta = nb.get("metadata", {})
    record, ran = meta.get(RUN), _dict(meta.get("papermill"))
    if isinstance(record, dict):
        info = dict(record)
    elif isinstance(ran.get("parameters"), dict):
        source = ran.get("input_path")
        info = {"page": Path(source).stem if isinstance(source, str) else None}
        info.update(given=ran["parameters"], date=ran.get("end_time"), seconds=ran.get("duration"))
        info["recorded"] = "papermill"
    else:
        return None
    known = info.get("defaults")
    if not isinstance(known, dict):
        page = BOOK / f"{info.get('page')}.ipynb"
        ours = re.fullmatch(r"[\w-]+", str(info.get("page"))) and page.is_file()
        known = params.defaults(page) if ours else {}
    given = _dict(info.get("given"))
    info.update(defaults=known, given=given, ran={**known, **given, **_dict(info.get("ran"))})
    info["followed"] = [n for n in info.get("followed") or [] if isinstance(n, str)]
    info["chapter"] = run_chapter(nb)
    info["book_verdicts"] = book_verdicts(info["chapter"]) if info["chapter"] else None
    return info


def book_verdicts(page: str, build: Path | None = None) -> dict | None:
    """claim -> each verdict of the book's build of ``page`` (its word, deciding number, ...), while
    that build is the checkout's (fresh_cache's ``code`` stamp), else None."""
    stamp = book_stamps(build).get(page, {})
    if stamp.get("code") != dependency_hash(BOOK / f"{page}.ipynb", ROOT, environ={}):
        return None
    found = [v for v in stamp.get("verdicts") or [] if isinstance(v, dict)]
    return {v.get("claim"): v for v in found} or None


def _literal(value, grouping: str = "_") -> str:
    """A parameter's value as Python writes it, integers grouped in threes by ``grouping``."""
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:{grouping}}"
    if isinstance(value, list):
        return "[" + ", ".join(_literal(v, grouping) for v in value) + "]"
    return repr(value)


def _in_banner(value) -> str:
    """A value as the banner writes it: "20,000", "0.3", "[0.1, 0.3]", a string as code."""
    text = _literal(value, ",")
    return f"`{text}`" if isinstance(value, str) and "`" not in value else text


def changed(info: dict) -> list[tuple[str, object, object]]:
    """(name, the value that ran, the book's) of each parameter that ran with another value."""
    known, ran = info["defaults"], info["ran"]
    names = list(known) + [n for n in ran if n not in known]
    return [(n, ran[n], known.get(n)) for n in names if n in ran and ran[n] != known.get(n, ...)]


def _fold_parameters(nb: dict, info: dict, specs: dict) -> None:
    """The parameters cell written again from papermill's ``specs`` with the values that ran (a
    changed one says the book's), papermill's injected cell taken out."""
    cells = nb["cells"]
    tagged = [c for c in cells if "parameters" in c["metadata"].get("tags", [])]
    if not tagged or not specs:
        return
    ran, known, lines = info["ran"], info["defaults"], []
    for name, spec in specs.items():
        value, note = spec["default"], ""
        if name in ran and ran[name] != known.get(name, ...):
            note = f"book: {_literal(known[name])}" if name in known else "not in the book"
            note += ", follows samples" if name in info["followed"] else ""
            value, note = _literal(ran[name]), f"[{note}] "
        kind, comment = spec["inferred_type_name"], note + spec["help"]
        line = f"{name}{f': {kind}' if kind != 'None' else ''} = {value}"
        lines.append(f"{line}  # {comment}" if comment else line)
    tagged[0]["source"] = "\n".join(lines)
    nb["cells"] = [c for c in cells if "injected-parameters" not in c["metadata"].get("tags", [])]


def _setting_words(s: dict) -> str:
    """ "LayerNorm, α = 0.3, γ = 0.5, $d$ = 64" of a check's setting (what it has; the placement
    where it is not the paper's: "LayerNorm post-norm, ...")."""
    norm, where = s.get("norm"), s.get("placement")
    if where not in PLACEMENTS:  # a stamp written before placements were recorded
        where = "pre"
    parts = [conventions.norm_name(norm, where) if norm in NORMS else str(norm)] if norm else []
    for key, symbol in (("alpha", "α"), ("gamma", "γ")):
        if isinstance(s.get(key), (int, float)):
            parts.append(f"{symbol} = {s[key]:g}")
    if isinstance(s.get("d"), int):
        parts.append(f"$d$ = {s['d']}")
    return ", ".join(parts) or "no one setting"


def _number_differs(v: dict, theirs, zc: float) -> float | None:
    """The z of a run's deciding number against the book's, when both measure the same thing and
    differ beyond ``zc``; else None."""
    if not isinstance(theirs, dict) or theirs.get("what") != v.get("what"):
        return None
    try:
        z = zscore(float(v["value"]) - float(theirs["value"]), math.hypot(v["se"], theirs["se"]))
    except (KeyError, TypeError, ValueError):
        return None
    return z if abs(z) > zc else None


def _verdict_line(v: dict, book: dict | None = None, zc: float = math.inf) -> str:
    settings = [s for s in v.get("settings") or [] if isinstance(s, dict)]
    at = "; ".join(_setting_words(s) for s in settings[:6])
    at += f"; and {len(settings) - 6} more" if len(settings) > 6 else ""
    checks = f"{v.get('checks')} check{'s' if v.get('checks') != 1 else ''}"
    theirs = (book or {}).get(v.get("claim"))
    word = theirs.get("word") if isinstance(theirs, dict) else None
    other = f" (**the book's: *{word}***)" if word and word != v.get("word") else ""
    line = f"- {v.get('name') or v.get('claim')}: *{v.get('word')}*{other}, from {checks} at {at}"
    if v.get("number"):
        line += f"; its deciding number {v['number']}"
        same = isinstance(theirs, dict) and theirs.get("what") == v.get("what")
        if same and theirs.get("number"):
            z = _number_differs(v, theirs, zc)
            differs = f", **differs**: $z$ = {z:+.1f}" if z is not None else ""
            line += f" against the book's {theirs['number']}{differs}"
    return line


def _against_book(verdicts: list[dict], book: dict | None, zc: float = math.inf) -> str:
    """Sentences: which of a run's verdicts, and which deciding numbers, differ from the book's."""
    if book is None:
        return "(The book's own verdicts of this page are not in a current build to compare.)"

    def word(v):
        theirs = book.get(v.get("claim"))
        return theirs.get("word") if isinstance(theirs, dict) else v.get("word")

    differ = [v for v in verdicts if word(v) != v.get("word")]
    if len(verdicts) == 1:
        out = "It differs from the book's verdict." if differ else "It is the book's verdict."
    elif not differ:
        out = "Every one of them is the book's verdict."
    else:
        names = ", ".join(str(v.get("name") or v.get("claim")) for v in differ)
        out = f"{len(differ)} of the {len(verdicts)} differ from the book's: {names} (marked)."
    moved = [v for v in verdicts if _number_differs(v, book.get(v.get("claim")), zc) is not None]
    if moved:
        names = ", ".join(str(v.get("name") or v.get("claim")) for v in moved)
        level = f"beyond their errors at the book's family-wise level ($|z|$ > {zc:.2f})"
        out += f" Deciding numbers that differ from the book's {level}: {names}."
    return out


def _source_words(info: dict) -> str:
    """Where a run came from: its commit and whether the checkout had uncommitted changes."""
    commit, dirty = info.get("commit"), info.get("dirty")
    if info.get("recorded") == "papermill":
        return "by papermill, outside `python -m companion rerun` (no commit recorded)"
    if not (isinstance(commit, str) and commit):
        return "from a checkout that is not a git repository (no commit recorded)"
    state = {True: " with", False: " without"}.get(dirty)
    state = f"{state} uncommitted changes" if state else " (its uncommitted changes unknown)"
    return f"from commit `{commit[:12]}` of the companion{state}"


def banner(info: dict, title: str | None) -> str:
    """The admonition at the top of a run's page: what ran, when, from which commit, with which
    parameters, and the settings that decided each verdict."""
    name, chapter = title or info.get("page") or "this notebook", info.get("chapter")
    what = f"A rerun of {name}" if chapter else f"A run of {name}"
    lines = [f"::::{{admonition}} {what}, not the book's page", ":class: warning rerun-banner", ""]
    when = info.get("date")
    when = _date_words(when) if isinstance(when, str) else "at a date not recorded"
    seconds = info.get("seconds")
    took = f" in {duration(seconds)}" if isinstance(seconds, (int, float)) and seconds >= 0 else ""
    place = f"; it takes the place of the book's page \u201c{name}\u201d. " if chapter else ". "
    lines.append(f"This page ran {when}{took}, {_source_words(info)}{place}")
    theirs = ("the book", "the book's value") if chapter else ("its default", "its default value")
    rows, followed = changed(info), info["followed"]
    if rows:
        head = f"Its parameters differ from {'the book' if chapter else 'the notebook'}'s in:"
        lines += [head, "", f"| parameter | this run | {theirs[0]} |", "|:---|---:|---:|"]
        for n, ran, default in rows:
            mark = "\u00a0†" if n in followed else ""
            book = _in_banner(default) if n in info["defaults"] else "—"
            lines.append(f"| `{n}` | {_in_banner(ran)}{mark} | {book} |")
        lines.append("")
        if any(n in followed for n, _, _ in rows):
            lines.append(
                "† a sample size that follows `samples`: the book's, scaled as `samples` is, "
                "up to the paper's final 10⁷ sequences per setting (or `samples`, if more). "
            )
        lines.append(
            f"Every other parameter has {theirs[1]} (the parameters cell below shows them all)."
        )
    else:
        lines.append(f"Every parameter has {theirs[1]}.")
    verdicts = [v for v in info.get("verdicts") or [] if isinstance(v, dict)]
    said = "Its verdicts are decided by the book's rule at this run's settings"
    book = info.get("book_verdicts") if chapter else None
    zc = z_for(max(1, len(verdicts)))  # one family: the page's deciding numbers
    compared = [_against_book(verdicts, book, zc)] if chapter and verdicts else []
    shown = [_verdict_line(v, book, zc) for v in verdicts]
    if 0 < len(verdicts) <= FEW_VERDICTS:
        lines += ["", said + ":", "", *shown, "", *compared]
    elif verdicts:  # the landing page's many: folded
        dropdown = f":::{{dropdown}} The settings of its {len(verdicts)} verdicts"
        lines += ["", f"{said}. {' '.join(compared)}", "", dropdown, "", *shown, ":::"]
    elif chapter and info.get("recorded") != "papermill":
        lines += ["", "The settings behind its verdicts were not recorded."]
    return "\n".join([*lines, "::::"])


def _date_words(text: str) -> str:
    """ "on 2026-12-05 at 11:51 UTC" of an ISO date with a time zone (else the text itself)."""
    try:
        when = datetime.datetime.fromisoformat(text).astimezone(datetime.UTC)
    except ValueError:
        return f"on {text}"
    return f"on {when:%Y-%m-%d} at {when:%H:%M} UTC"


_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
#: What says why a build failed, most telling first: an operating system's error (a full disk names
#: its file), an exception with its message, a Sphinx error.
_CAUSES = (r"\[Errno \d+\]", r"^(\w+\.)*\w*(Error|Exception): \S", r"\b(ERROR|CRITICAL|SEVERE):")


def _cause(log: str) -> str:
    """The line of a failed build's output that says why (the last of the most telling kind)."""
    lines = [line for line in (_ANSI.sub("", raw).strip() for raw in log.splitlines()) if line]
    for pattern in _CAUSES:
        named = [line for line in lines if re.search(pattern, line)]
        if named:
            return named[-1][:500]
    return (lines or ["no output"])[-1][:500]


# -- the command line ------------------------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    """argparse's parser whose usage errors are one ``error:`` line and exit 2, as any bad input."""

    def error(self, message):
        raise ValueError(f"{message} ({self.prog} --help)")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m companion", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("rerun", help="run a chapter with other parameters, then render it")
    r.add_argument("page", help="a chapter, book/<name>.ipynb")
    r.add_argument("out_dir", help="where the run and its page go (not in the sources)")
    pair = dict(nargs=2, action="append", default=[], metavar=("NAME", "VALUE"))
    r.add_argument("-p", "--parameters", **pair, help="a parameter, read as papermill does")
    r.add_argument("-r", "--parameters_raw", **pair, help="a parameter, its value a string")
    text = dict(action="append", default=[])
    r.add_argument("-y", "--parameters_yaml", **text, metavar="YAML", help="a YAML mapping")
    r.add_argument("-f", "--parameters_file", **text, metavar="FILE", help="a YAML file")
    r.add_argument("--no-render", action="store_true", help="only the executed notebook")
    h = sub.add_parser("render", help="an executed notebook as a page in the book's look")
    h.add_argument("notebook")
    h.add_argument("--out", help="folder of the page (default: the notebook's; not in the sources)")
    return parser


#: papermill's flags that take a NAME and a VALUE, and those that take one text.
PAIR_FLAGS = {"-p": "parameters", "--parameters": "parameters"}
PAIR_FLAGS |= {"-r": "parameters_raw", "--parameters_raw": "parameters_raw"}
TEXT_FLAGS = ("-y", "--parameters_yaml", "-f", "--parameters_file")


def _take_pairs(argv: list[str]) -> tuple[list[str], dict]:
    """``argv`` without its NAME VALUE pairs (-p, -r), and the pairs by flag: argparse would read a
    VALUE such as ``-1e-3`` or ``-inf`` as an option, papermill reads it as a value."""
    rest, pairs, k = [], {"parameters": [], "parameters_raw": []}, 0
    while k < len(argv):
        arg = argv[k]
        if arg in PAIR_FLAGS and k + 2 < len(argv):  # (too few: argparse says so)
            pairs[PAIR_FLAGS[arg]].append(argv[k + 1 : k + 3])
            k += 3
            continue
        take = 2 if arg in TEXT_FLAGS else 1  # a YAML text may start with "-"
        rest += argv[k : k + take]
        k += take
    return rest, pairs


def main(argv=None) -> int:
    """The command line; returns the exit status."""

    def terminate(signum, frame):
        raise Terminated()

    old = signal.signal(signal.SIGTERM, terminate)
    try:
        argv, pairs = _take_pairs(sys.argv[1:] if argv is None else list(argv))
        args = _parser().parse_args(argv)  # --help: SystemExit(0)
        if args.command == "rerun":
            args.parameters = [*args.parameters, *pairs["parameters"]]  # (argparse's defaults
            args.parameters_raw = [*args.parameters_raw, *pairs["parameters_raw"]]  # are shared)
            flags = args.parameters, args.parameters_raw, args.parameters_yaml, args.parameters_file
            given = read_values(*flags)
            path = rerun(args.page, args.out_dir, given, render_html=not args.no_render)
            print(path if args.no_render else path.with_suffix(".html"))
        elif pairs["parameters"] or pairs["parameters_raw"]:
            raise ValueError("-p and -r are not allowed here; allowed: with rerun")
        else:
            print(render(args.notebook, args.out))
    except ValueError as exc:
        return _fail(str(exc), 2)
    except KeyboardInterrupt:
        return _fail(f"interrupted (SIGINT); {UNCHANGED}", 130)
    except Terminated:
        return _fail(f"terminated (SIGTERM); {UNCHANGED}", 143)
    except OSError as exc:  # a full disk, a folder that went away: the cause and the file
        where = " -> ".join(str(f) for f in (exc.filename, exc.filename2) if f is not None)
        return _fail(f"{exc.strerror or exc}: {where} ({UNCHANGED})", 1)
    except PapermillExecutionError as exc:  # a cell of the chapter failed
        page = Path(args.page)
        failed = Path(args.out_dir) / f"{page.stem}.failed.ipynb"
        why = f"{exc.ename}: {exc.evalue} (its notebook: {failed}; {UNCHANGED})"
        return _fail(f"{page.name} failed in cell [{exc.exec_count}]: {why}", 1)
    except Exception as exc:  # a failed render (RuntimeError) or else: its message
        text = " ".join(str(exc).split())[:500]
        return _fail(text if isinstance(exc, RuntimeError) else f"{type(exc).__name__}: {text}", 1)
    finally:
        signal.signal(signal.SIGTERM, old)
    return 0


def _fail(message: str, code: int) -> int:
    _say("error: " + " ".join(str(message).split()), sys.stderr)
    return code
