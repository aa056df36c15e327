"""Helpers of the book's tests: the Jupyter Book CLI, the table of contents, the pages' sources,
papermill runs of a page, the light setting template of the grid's tests (fixtures: conftest.py)."""

from __future__ import annotations

import dataclasses
import glob
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BOOK = REPO / "book"
HTML = REPO / "_build" / "html"
SOURCE_SUFFIXES = (".ipynb", ".md", ".rst")
BUILD_TIMEOUT = int(os.environ.get("BOOK_BUILD_TIMEOUT", "3600"))

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
# Sphinx's own diagnostics ("path:line: WARNING: ...", "ERROR: ..."). The kernel's log lines
# ("[IPKernelApp] WARNING | ...") are not Sphinx warnings and are not counted.
_SPHINX_PROBLEM = re.compile(r"\b(WARNING|ERROR|CRITICAL|SEVERE):")


def jupyter_book_cmd() -> list[str]:
    """The `jupyter-book` CLI that belongs to the interpreter running the tests."""
    script = Path(sys.executable).with_name("jupyter-book")
    if script.exists():
        return [str(script)]
    return [
        sys.executable,
        "-c",
        "import sys; from jupyter_book.cli.main import main; sys.exit(main())",
    ]


@dataclasses.dataclass
class BuildResult:
    returncode: int
    log: str
    seconds: float
    root: Path

    @property
    def html(self) -> Path:
        return self.root / "_build" / "html"

    @property
    def problems(self) -> list[str]:
        return [line for line in self.log.splitlines() if _SPHINX_PROBLEM.search(line)]

    def tail(self, n: int = 60) -> str:
        return "\n".join(self.log.splitlines()[-n:])


def build_env(extra: dict | None = None) -> dict:
    """The environment of a book build: no colours, unbuffered, ``extra`` (e.g. PYTHONPATH to a
    copy of the package), and this interpreter first on PATH (the notebooks' kernel "python3")."""
    env = dict(os.environ, NO_COLOR="1", PYTHONUNBUFFERED="1", **(extra or {}))
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    return env


def start_build(root: Path, *args: str, env: dict | None = None, **options) -> subprocess.Popen:
    """`jupyter-book build book ARGS` in ``root``, started in a session of its own (a signal can
    reach its whole process group), its output and errors as one text stream."""
    return subprocess.Popen(
        [*jupyter_book_cmd(), "build", "book", *args],
        cwd=root,
        env=build_env(env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
        **options,
    )


def run_book(
    root: Path, *args: str, timeout: int = BUILD_TIMEOUT, env: dict | None = None
) -> BuildResult:
    """Run `jupyter-book build book ARGS` in `root`; stdout+stderr without colours. ``env``: extra
    environment variables (e.g. PYTHONPATH to a copy of the package)."""
    start = time.perf_counter()
    proc = start_build(root, *args, env=env)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # the build and its kernels
        proc.communicate()
        raise
    return BuildResult(proc.returncode, _ANSI.sub("", out), time.perf_counter() - start, root)


# --------------------------------------------------------------------------- toc & sources


def toc_pages(root: Path = REPO) -> list[str]:
    """Docnames (relative to book/, without suffix) of every page in _toc.yml, in order."""
    import yaml

    toc = yaml.safe_load((root / "_toc.yml").read_text(encoding="utf8"))
    book = root / "book"
    pages: list[str] = []

    def strip(path: str) -> str:
        for suf in SOURCE_SUFFIXES:
            if path.endswith(suf):
                return path[: -len(suf)]
        return path

    def walk(node) -> None:
        if isinstance(node, dict):
            if "root" in node:
                pages.append(strip(node["root"]))
            if "file" in node:
                pages.append(strip(node["file"]))
            if "glob" in node:
                for hit in sorted(glob.glob(str(book / node["glob"]))):
                    rel = Path(hit).relative_to(book).as_posix()
                    if rel.endswith(SOURCE_SUFFIXES):
                        pages.append(strip(rel))
            for value in node.values():
                if isinstance(value, (list, dict)):
                    walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(toc)
    return list(dict.fromkeys(pages))


def page_source(docname: str, root: Path = REPO) -> Path:
    for suf in SOURCE_SUFFIXES:
        path = root / "book" / f"{docname}{suf}"
        if path.exists():
            return path
    raise FileNotFoundError(f"no source for toc entry {docname!r} under {root / 'book'}")


#: The kernel this process keeps between its papermill runs (at most one), by the kernel's name and
#: the environment it started in.
_KEPT: dict = {}


def execute_notebook(
    input_path, output_path, *, parameters=None, kernel_name="python3", cwd=None, **options
):
    """papermill.execute_notebook (no progress bar) on a kernel this process keeps between its
    runs, as the build's slots run the pages (companion.grid.SharedKernel: its namespace cleared and
    its working folder ``cwd`` before each run, its imports kept); a failed run stops it, and a run
    in another environment (a test's own variables) gets a kernel started in that one."""
    from companion import grid

    key = (kernel_name, tuple(sorted(os.environ.items())))
    if key not in _KEPT:
        close_kept_kernels()
        _KEPT[key] = grid.SharedKernel(kernel_name, dict(os.environ))
    grid.run_notebook(
        _KEPT[key], input_path, output_path, parameters or {}, cwd or os.getcwd(), **options
    )


def close_kept_kernels() -> None:
    """Stop the kernel :func:`execute_notebook` keeps."""
    for kernel in _KEPT.values():
        kernel.close()
    _KEPT.clear()


def kernels_running() -> list[int]:
    """The ipykernel processes this process started and still runs, but the one that
    :func:`execute_notebook` keeps (the fault tests' "no kernel left behind")."""
    import psutil

    kept = {k.km.provisioner.pid for k in _KEPT.values() if k.km is not None and k.km.provisioner}
    return [
        p.pid
        for p in psutil.Process().children(recursive=True)
        if "ipykernel" in " ".join(p.cmdline())
        and p.status() != psutil.STATUS_ZOMBIE
        and p.pid not in kept
    ]


def execute_page(docname: str, parameters: dict, out_dir: Path) -> list:
    """Run a chapter through papermill from book/ with ``parameters`` (into ``out_dir``, never over
    the source) and return the outputs of its code cells (errors raise PapermillExecutionError)."""
    import nbformat
    import papermill as pm

    source = page_source(docname)
    unknown = set(parameters) - set(pm.inspect_notebook(str(source)))
    assert not unknown, f"{docname}: unknown parameters {sorted(unknown)}"
    out = Path(out_dir) / f"{docname}.ipynb"
    execute_notebook(
        str(source),
        str(out),
        parameters=parameters,
        kernel_name="python3",
        cwd=str(BOOK),
    )
    return [
        o
        for c in nbformat.read(out, as_version=4).cells
        if c.cell_type == "code"
        for o in c.outputs
    ]


def light_template(path: Path) -> Path:
    """A template for the driver's own tests: the real template's parameters cell, then one cell
    that simulates and writes the result file. Keys, reuse, staging and failures are the driver's
    logic; the real template's imports and figures (two thirds of a run) are tested on
    the template itself."""
    import nbformat

    nb = nbformat.read(BOOK / "setting_template.ipynb", as_version=4)
    params = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
    body = nbformat.v4.new_code_cell(
        "from companion import grid\n"
        "from recency_lib.cache import cached_simulate\n\n"
        "setting = grid.validate_params("
        "dict(alpha=alpha, gamma=gamma, norm=norm, n=n, d=d, layers=layers,\n"
        "                                    samples=samples, seed=seed))\n"
        "cached_simulate(grid.config_of(setting)).save(grid.result_file(result_path))"
    )
    nb.cells = [params, body]
    nbformat.write(nb, path)
    return path


def markdown_text(path: Path) -> str:
    """The prose of a page: markdown cells of a notebook, or the whole .md/.rst file."""
    if path.suffix == ".ipynb":
        import nbformat

        nb = nbformat.read(path, as_version=4)
        return "\n\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    return path.read_text(encoding="utf8")


# --------------------------------------------------------------------------- fixtures


def computed_once(tmp_path_factory, name: str, compute) -> Path:
    """A folder that ``compute(folder)`` filled once per test run, however many pytest-xdist workers
    ask: a module-scoped fixture runs once on every worker that gets one of the module's tests (the
    Appendix-B page under papermill ran twice, 24 s each). The first worker to get here computes
    into a folder beside the workers' own temporary folders, under an flock, and marks it done; the
    others wait for the lock and reuse it. A computation that failed leaves no mark: the next one
    starts again from an empty folder. Without xdist, a temporary folder of this session."""
    import fcntl
    import shutil

    run_id = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    if run_id is None:
        folder = tmp_path_factory.mktemp(name)
        compute(folder)
        return folder
    shared = (
        tmp_path_factory.getbasetemp().parent
    )  # the run's base folder: popen-gw0, popen-gw1, ...
    folder, done = shared / f"{name}-{run_id}", shared / f"{name}-{run_id}.done"
    with open(shared / f"{name}-{run_id}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file is closed
        if not done.exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            compute(folder)
            done.touch()
    return folder
