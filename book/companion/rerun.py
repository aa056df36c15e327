"""Rerun a chapter with other parameters and look at it as a page of the book.

    python -m companion rerun book/residual.ipynb out -p gamma 0.5 -p samples 20000
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

**Outputs**: one writer per folder (a lock on ``OUT/.rerun.lock``, held for the whole run: a second rerun
or render into the same folder waits for it). The chapter runs with papermill from ``book/`` into a staging
folder inside OUT (progress bars of long simulations in the notebook) and is rendered there; only when the
notebook and its page are both complete do they replace ``OUT/<page>.ipynb`` and ``OUT/<page>.html`` (its
images and the book's static files are added beside them). A run that fails leaves the previous pair as it
was and puts its own notebook, with the error, beside it as ``OUT/<page>.failed.ipynb``; an interrupted one
(Ctrl-C, SIGTERM) stops its kernel and leaves nothing (a staging folder of a rerun killed outright is
removed by the next one). What a page writes itself (Appendix B's ``out_dir``, the setting template's
``result_path``) goes into OUT when relative or left empty. OUT is never in the sources.

``render`` turns an executed notebook into ``<name>.html`` (a name of letters, digits, ``-`` and ``_``)
in the book's look: a one-page Jupyter Book with the book's configuration, extensions and style, built in
a temporary folder and executing nothing (the numbers and figures are the notebook's), so every glued
number and figure is in place; links to other chapters become plain text there. It reads only a regular
file of at most :data:`NOTEBOOK_MAX` bytes that is a notebook, and writes only outside the sources.

Exit status: 0, 2 for bad input, 1 for a run or render that failed (the cause on the ``error:`` line),
130 and 143 for SIGINT and SIGTERM.
"""
from __future__ import annotations

import argparse
import ast
import contextlib
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
from pathlib import Path

from recency_lib.files import shown
from recency_lib.validation import short

from . import params

BOOK = Path(__file__).resolve().parents[1]          # book/
ROOT = BOOK.parent                                  # the repository: _config.yml, _toc.yml
#: The largest notebook (or parameters file) read: an executed chapter is 0.2 to 3 MB.
NOTEBOOK_MAX = 2 ** 26
#: Folders of a rendered page beside its HTML file.
STATIC = ("_static", "_images", "_sphinx_design_static")
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
    from recency_lib.features import compiled_kernels

    compiled_kernels()
    cache_dir()
    memory_limit()


def check_parameters(page, given: dict) -> dict:
    """``given`` (name -> value) checked before any work: every name one of the chapter's parameters (else
    a ValueError naming the unknown ones and listing the known ones), every value as the page's first cell
    checks it (:func:`companion.params.check`, run from ``book/``, the page's working folder). Returns
    ``given``."""
    page = Path(page)
    known = defaults(page)
    unknown = [k for k in given if k not in known]
    if unknown:
        raise ValueError(f"unknown parameter(s) {', '.join(map(short, unknown))} for {page.name}; "
                         f"allowed: {', '.join(known)}")
    with contextlib.chdir(BOOK):
        params.check(page.stem, {**known, **given})
    return given


def read_values(options: list[tuple[str, object]]) -> dict:
    """The parameters of papermill's command-line flags, in papermill's order (``-f`` files and ``-y`` YAML
    first, then ``-p`` and ``-r``), read by papermill's own readers. ``options``: (flag, argument) pairs,
    the argument a (name, value) pair for ``-p`` and ``-r``. A name given twice by ``-p``/``-r`` is an
    error (papermill would keep the last)."""
    import yaml
    from papermill.cli import _resolve_type
    from papermill.iorw import NoDatesSafeLoader

    values, named = {}, {}
    for flag, arg in sorted(options, key=lambda o: o[0] in ("-p", "-r")):      # stable: -f/-y, then -p/-r
        if flag in ("-f", "-y"):
            text = _read_text(arg, "-f") if flag == "-f" else arg
            try:
                data = yaml.load(text, Loader=NoDatesSafeLoader)
            except yaml.YAMLError as exc:
                raise ValueError(f"{flag} {short(arg)} is not YAML ({' '.join(str(exc).split())[:200]}); "
                                 f"allowed: a YAML mapping, e.g. \"alphas: [0.3, 0.7]\"") from None
            if data is None:
                continue
            if not isinstance(data, dict) or not all(isinstance(k, str) for k in data):
                raise ValueError(f"{flag} {short(arg)} is not a mapping of names; allowed: a YAML mapping, "
                                 f"e.g. \"alphas: [0.3, 0.7]\"")
            values.update(data)
        else:
            name, value = arg
            if name in named:
                raise ValueError(f"parameter {short(name)} is given twice ({named[name]} and {flag}); allowed: "
                                 f"each parameter once")
            named[name] = flag
            values[name] = _resolve_type(value) if flag == "-p" else value
    return values


# -- files ----------------------------------------------------------------------------------------------

def _read_bytes(path, name: str, what: str) -> bytes:
    """The bytes of ``path``, a regular file of at most :data:`NOTEBOOK_MAX` bytes (a named pipe, a device
    or a link to one is refused without blocking); ValueError naming ``name`` otherwise."""
    allowed = f"allowed: {what} (a regular file of at most {NOTEBOOK_MAX // 2 ** 20} MB)"
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)       # opening a FIFO must not wait for a writer
    except OSError as exc:
        raise ValueError(f"{name}={shown(path)} cannot be read ({exc.strerror}); {allowed}") from None
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
        raise ValueError(f"{name}={shown(path)} is not UTF-8 text (byte {exc.start}); allowed: a UTF-8 "
                         f"text file") from None


def read_notebook(path) -> dict:
    """The executed notebook at ``path`` as a dict, checked: a regular file under the size cap, UTF-8
    JSON, a notebook by nbformat's schema, with outputs. ValueError naming the file otherwise."""
    import nbformat

    allowed = "allowed: an executed notebook (python -m companion rerun ... runs one)"
    data = _read_bytes(path, "notebook", "an executed notebook")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"notebook={shown(path)} is not UTF-8 text (byte {exc.start}); {allowed}") from None
    try:
        nb = nbformat.reads(text, as_version=4)
        nbformat.validate(nb)
    except Exception as exc:                     # not JSON, not a notebook, another layout
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
        raise ValueError(f"{name}={shown(folder)} is not a folder; allowed: a folder (made if needed)")
    probe = path
    while not probe.exists():
        probe = probe.parent
    if not probe.is_dir() or not os.access(probe, os.W_OK | os.X_OK):
        raise ValueError(f"{name}={shown(folder)} cannot be written ({shown(probe)} is not a writable folder); "
                         f"allowed: a writable folder")
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


def _commit_static(staging: Path, out: Path) -> None:
    """The staged page's images and static files moved into ``out``, file by file (each rename atomic;
    other pages' files there stay)."""
    for sub in STATIC:
        for src in sorted((staging / sub).rglob("*")) if (staging / sub).is_dir() else ():
            if src.is_file() and not src.is_symlink():
                dst = out / src.relative_to(staging)
                dst.parent.mkdir(parents=True, exist_ok=True)
                if dst.is_dir() and not dst.is_symlink():
                    shutil.rmtree(dst)
                os.replace(src, dst)


def _commit(pairs: list[tuple[Path, Path]], staging: Path) -> None:
    from .grid import _commit as commit_all_or_none

    commit_all_or_none(pairs, staging)


# -- rerun ----------------------------------------------------------------------------------------------

def rerun(page, out_dir, given: dict, *, render_html: bool = True, kernel: str = "python3") -> Path:
    """Run chapter ``page`` with the parameters ``given`` into ``out_dir`` (created) and render it; returns
    the executed notebook's path. ValueError before any work for an unknown parameter or a bad value, a
    page that is not one of the book's notebooks, or an output folder in the sources; papermill's
    PapermillExecutionError when the chapter fails (its notebook then is ``<page>.failed.ipynb``)."""
    page = Path(page).resolve()
    if page.suffix != ".ipynb" or page.parent != BOOK or not page.is_file():
        raise ValueError(f"page={shown(page)} is not allowed; allowed: a chapter of the book, book/<name>.ipynb")
    out = _check_out("out_dir", out_dir)
    given = dict(given)
    for name, default in params.OUTPUTS.get(page.stem, {}).items():    # what the page writes: into out
        value = given.get(name, "")
        if isinstance(value, str) and not os.path.isabs(value):
            given[name] = str(out / (value or default))
    check_parameters(page, given)
    check_environment()
    with _one_writer(out):
        staging = Path(tempfile.mkdtemp(dir=out, prefix=STAGING))
        try:
            staged = staging / page.name
            _execute(page, staged, given, kernel, out)
            pairs = [(staged, out / page.name)]
            if render_html:
                html = _render_into(dict(read_notebook(staged)), page.stem, staging)
                _commit_static(staging, out)
                pairs.append((html, out / html.name))
            _commit(pairs, staging)
            if not render_html:                       # a page of an earlier run must not sit beside it
                (out / f"{page.stem}.html").unlink(missing_ok=True)
            (out / f"{page.stem}.failed.ipynb").unlink(missing_ok=True)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return out / page.name


def _execute(page: Path, staged: Path, given: dict, kernel: str, out: Path) -> None:
    """papermill from ``book/`` on a kernel of this process (companion.grid.SharedKernel: stopped on an
    error or an interrupt); a failed run's notebook goes to ``out/<page>.failed.ipynb``."""
    import papermill as pm
    from papermill.exceptions import PapermillExecutionError

    from .grid import SharedKernel, _shared_engine

    env = {"RECENCY_LIB_PROGRESS": "1"}
    old = {k: os.environ.get(k) for k in (*env, "COMPANION_IN_BOOK", "COMPANION_BUILD_DIR")}
    os.environ.update(env)
    os.environ.pop("COMPANION_IN_BOOK", None)                # a rerun displays its figures and tables
    os.environ.pop("COMPANION_BUILD_DIR", None)
    shared = SharedKernel(kernel)
    try:
        pm.execute_notebook(str(page), str(staged), parameters=given, kernel_name=kernel, progress_bar=False,
                            km=shared.ready(BOOK), engine_name=_shared_engine())
    except PapermillExecutionError:
        if staged.is_file():
            os.replace(staged, out / f"{page.stem}.failed.ipynb")
        raise
    except BaseException:                         # interrupted: the cell's task dies with the kernel, unread
        logging.getLogger("asyncio").setLevel(logging.CRITICAL)
        raise
    finally:
        shared.close()
        for k, v in old.items():
            os.environ.pop(k, None) if v is None else os.environ.__setitem__(k, v)


# -- render ---------------------------------------------------------------------------------------------

def render(notebook, out: str | os.PathLike | None = None) -> Path:
    """``notebook`` (executed) as an HTML page in the book's look: ``<out>/<name>.html`` with the book's
    static files beside it (``out`` defaults to the notebook's folder, never in the sources). Returns the
    page's path."""
    nb = read_notebook(notebook)
    out = _check_out("out", out if out is not None else Path(notebook).resolve().parent)
    with _one_writer(out):
        staging = Path(tempfile.mkdtemp(dir=out, prefix=STAGING))
        try:
            html = _render_into(dict(nb), page_name(notebook), staging)
            _commit_static(staging, out)
            _commit([(html, out / html.name)], staging)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return out / html.name


def _render_into(nb: dict, name: str, staging: Path) -> Path:
    """Build the one-page book of ``nb`` (as ``name``) in a temporary folder and copy the page and its
    static files into ``staging``; returns the staged page."""
    with tempfile.TemporaryDirectory(prefix="companion-render-") as tmp:
        tmp = Path(tmp)
        config = (ROOT / "_config.yml").read_text(encoding="utf-8")
        config = config.replace("execute_notebooks: cache", "execute_notebooks: \"off\"")
        (tmp / "_config.yml").write_text(config, encoding="utf-8")
        book = tmp / "book"
        book.mkdir()
        for sub in ("_ext", "_static"):
            shutil.copytree(BOOK / sub, book / sub, ignore=shutil.ignore_patterns("__pycache__"))
        shutil.copy(BOOK / "references.bib", book / "references.bib")
        (book / f"{name}.ipynb").write_text(json.dumps(_glued_only(nb), ensure_ascii=False), encoding="utf-8")
        (tmp / "_toc.yml").write_text(f"format: jb-book\nroot: {name}\n", encoding="utf-8")
        (book / "_toc.yml").symlink_to("../_toc.yml")
        proc = subprocess.run([sys.executable, "-c", "import sys; from jupyter_book.cli.main import main; sys.exit(main())",
                               "build", "book"], cwd=tmp, capture_output=True, text=True, errors="replace",
                              env={**os.environ, "NO_COLOR": "1"})
        html = tmp / "_build" / "html"
        if proc.returncode != 0 or not (html / f"{name}.html").is_file():
            raise RuntimeError(f"rendering {name} failed: {_cause(proc.stdout + proc.stderr)}")
        shutil.copy(html / f"{name}.html", staging / f"{name}.html")
        for sub in STATIC:
            if (html / sub).is_dir():
                shutil.copytree(html / sub, staging / sub)
    return staging / f"{name}.html"


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
    r.add_argument("out_dir", help="where the executed notebook and its page go (not in the sources)")
    r.set_defaults(values=[])
    r.add_argument("-p", "--parameters", nargs=2, action=_Options, metavar=("NAME", "VALUE"),
                   help="a parameter, its value read as papermill reads it")
    r.add_argument("-r", "--parameters_raw", nargs=2, action=_Options, metavar=("NAME", "VALUE"),
                   help="a parameter, its value a string")
    r.add_argument("-y", "--parameters_yaml", action=_Options, metavar="YAML", help="parameters as a YAML mapping")
    r.add_argument("-f", "--parameters_file", action=_Options, metavar="FILE", help="parameters in a YAML file")
    r.add_argument("--no-render", action="store_true", help="only the executed notebook")
    h = sub.add_parser("render", help="an executed notebook as a page in the book's look")
    h.add_argument("notebook")
    h.add_argument("--out", default=None, help="folder of the page (default: the notebook's; not in the sources)")
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
        except SystemExit as exc:                  # --help
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
    except OSError as exc:                        # a full disk, a folder that went away: the cause and the file
        where = " -> ".join(str(f) for f in (exc.filename, exc.filename2) if f is not None)
        return _fail(f"{exc.strerror or exc}: {where} (the previous outputs are unchanged)", 1)
    except Exception as exc:                      # papermill's execution error: the chapter's own message
        return _fail(_failure(exc, args), 2 if _is_parameter_error(exc) else 1)
    finally:
        signal.signal(signal.SIGTERM, old)
    return 0


def _is_parameter_error(exc) -> bool:
    """A ValueError raised by the page's parameters' check (its first code cell after the parameters)."""
    from papermill.exceptions import PapermillExecutionError

    return (isinstance(exc, PapermillExecutionError) and exc.ename == "ValueError"
            and "params.check(" in (exc.source or ""))


def _failure(exc, args) -> str:
    from papermill.exceptions import PapermillExecutionError

    if isinstance(exc, PapermillExecutionError):
        if _is_parameter_error(exc):
            return exc.evalue
        failed = Path(args.out_dir) / f"{Path(args.page).stem}.failed.ipynb"
        return (f"{Path(args.page).name} failed in cell [{exc.exec_count}]: {exc.ename}: {exc.evalue} "
                f"(its notebook: {failed}; the previous outputs are unchanged)")
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text[:500]}" if not isinstance(exc, RuntimeError) else text[:500]


def _fail(message: str, code: int) -> int:
    print("error: " + " ".join(str(message).split()), file=sys.stderr)
    return code
