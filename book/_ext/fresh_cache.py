"""Execute what changed, only that, on every core; never serve a stale page.

myst-nb's jupyter-cache keys a notebook by its code cells, cell metadata and kernelspec, not by the
modules it imports: after an edit of ``recency_lib`` a cached chapter would still show the old numbers
and figures, and Sphinx would not even re-read it. This extension, at the start of every build:

1. **Dependencies per page.** For each notebook of the book it hashes what its output depends on
   besides its own cells: the modules of ``recency_lib`` and of the book's package ``companion`` its
   code imports, with everything they import (``companion.grid.template_modules``: the same import
   closure the results cache uses), the packages' data files (the explorer's script and style), and
   every notebook of the book folder its code names (Appendix B runs ``setting_template.ipynb``),
   with that notebook's modules in turn. Files enter by their paths relative to their package or
   to the book's root, so moving the checkout executes nothing again.
   A page whose hash changed loses its jupyter-cache record and is re-read; the others are kept.
   The values of ``RECENCY_LIB_CACHE`` and ``RECENCY_LIB_KERNEL`` count too (a page shows them).
   So an edit of ``companion/plotting.py`` re-executes the pages that import it (their simulations
   come back from the results cache, whose key covers only what a simulation runs); an edit of the kernel
   re-executes every page that simulates, and the results cache recomputes.
2. **Parallel execution.** The notebooks that have no cached result are executed before Sphinx
   reads anything, ``fresh_cache_workers`` at a time (default: the CPUs this process may use),
   longest first (by the time each took last); each slot is one runner process whose kernel runs
   its notebooks one after another, cleared between them (a new namespace and history session, the
   working folder reset: book/_ext/run_notebook.py), so a page pays no kernel start and imports of
   its own. Their outputs are stored in the jupyter-cache; myst-nb then finds every page cached. A notebook that
   fails here is left uncached, so myst-nb executes it again while reading and reports the error
   the usual way (``raise_on_error`` fails the build).

Stamps (hash and last execution time per page) live in ``fresh_cache.json`` in the jupyter-cache
folder; a build with nothing changed executes nothing and re-reads nothing.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import queue
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import nbformat
from sphinx.application import Sphinx
from sphinx.util import logging

logger = logging.getLogger(__name__)

STAMP = "fresh_cache.json"
RUNNER = Path(__file__).with_name("run_notebook.py")


# -- what a page depends on ------------------------------------------------------------------------

def _data_files() -> list[Path]:
    """Files of the two packages that are not Python (read at run time, e.g. the explorer's assets)."""
    from recency_lib.cache import package_root
    from companion.grid import PACKAGES

    out = []
    for top in PACKAGES:
        root = package_root(top)
        out += [p for p in root.rglob("*") if p.is_file() and p.suffix not in (".py", ".pyc", ".so", ".c")
                and "__pycache__" not in p.parts and not p.name.startswith(".")]
    return sorted(out)


def _named_notebooks(path: Path) -> list[Path]:
    """Other notebooks of the same folder that ``path``'s code names (e.g. a papermill template)."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    code = "\n".join("".join(c.get("source", "")) for c in nb.get("cells", []) if c.get("cell_type") == "code")
    names = set(re.findall(r"([\w-]+\.ipynb)", code)) - {path.name}
    return sorted(p for p in (path.parent / n for n in names) if p.is_file())


# recency_lib's environment variables that change what a page shows: where results are cached (the
# reproducibility page prints it) and which kernel runs (pages name it; numbers differ by rounding)
PAGE_ENVIRONMENT = ("RECENCY_LIB_CACHE", "RECENCY_LIB_KERNEL")


def _environment_value(name: str, base: Path | None) -> str:
    """The value of ``name`` as a page shows it: a folder inside ``base`` (the book's root) relative to
    it, so that moving the checkout changes nothing."""
    value = os.environ.get(name, "")
    if name == "RECENCY_LIB_CACHE" and value and base is not None:
        path = Path(value).resolve()
        if path.is_relative_to(base):
            return path.relative_to(base).as_posix()
    return value


def _stat(path: str) -> list[int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_mtime_ns, st.st_size]


def _package_sources() -> list[str]:
    """Every source file of the two packages (the files an import closure can read; a module that
    appears or goes changes this list). Not the folders' times: writing byte-code creates
    ``__pycache__`` in them."""
    from recency_lib.cache import package_root
    from companion.grid import PACKAGES

    out = []
    for top in PACKAGES:
        for folder, dirs, files in os.walk(package_root(top)):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            out += [os.path.join(folder, f) for f in sorted(files) if f.endswith((".py", ".c"))]
    return out


def notebook_modules(nb: Path, memo: dict | None = None) -> tuple[str, ...]:
    """``companion.grid.template_modules(nb)``: the modules the notebook's code imports, with what they
    import. With ``memo`` (the stamps' "closures"), kept there beside the modification time and size
    of the notebook and of every module in it, taken before the sources are read, and the list of
    the two packages' source files: while none of those changed, the tokenizing of ~70 sources (0.6 s
    of a build that has nothing to do) is skipped; an edit, a new or a removed module computes it
    again. The files' contents are read for the hash every time either way."""
    from recency_lib.cache import module_file
    from companion.grid import template_modules

    if memo is None:
        return template_modules(nb)
    entry = memo.get(str(nb))
    sources = _package_sources()
    if (_valid(entry, str(nb)) and entry.get("sources") == sources
            and entry["stats"] == [_stat(f) for f in entry["files"]]):
        return tuple(entry["modules"])
    before = {f: _stat(f) for f in [str(nb), *sources]}                    # before reading
    modules = template_modules(nb)
    files = [str(nb), *(str(module_file(m)) for m in modules)]
    memo[str(nb)] = {"modules": list(modules), "files": files, "sources": sources,
                     "stats": [before.get(f) or _stat(f) for f in files]}
    return modules


def _valid(entry, nb: str) -> bool:
    """A memo entry as notebook_modules writes it: the notebook among its files, a stat for each."""
    return (isinstance(entry, dict) and isinstance(entry.get("files"), list) and nb in entry["files"]
            and isinstance(entry.get("stats"), list) and len(entry["stats"]) == len(entry["files"])
            and None not in entry["stats"] and isinstance(entry.get("modules"), list)
            and all(isinstance(m, str) for m in entry["modules"]))


def dependency_hash(path: Path, base: Path | None = None, memo: dict | None = None) -> str:
    """sha256 over what the output of notebook ``path`` depends on besides its own cells: the source
    of the modules of recency_lib and companion its code imports (with what they import), the
    packages' data files, the notebooks its code names, and the values of :data:`PAGE_ENVIRONMENT`.
    Every file enters under its path relative to its package (or to ``base``, the book's root), so
    the hash is the same wherever the checkout lives. ``memo``: see :func:`notebook_modules`."""
    from recency_lib.cache import module_file, module_path_name

    base = (Path(base) if base is not None else path.parent.parent).resolve()
    h = hashlib.sha256()
    for name in PAGE_ENVIRONMENT:
        h.update(f"{name}={_environment_value(name, base)}\0".encode())
    names: dict[str, bytes] = {}
    for f in _data_files():
        names[_relative(f, base)] = f.read_bytes()
    seen: set[Path] = set()
    todo = [path]
    while todo:
        nb = todo.pop()
        if nb in seen:
            continue
        seen.add(nb)
        for m in notebook_modules(nb, memo):
            names[module_path_name(m)] = module_file(m).read_bytes()
        if nb != path:
            names[_relative(nb, base)] = nb.read_bytes()       # a named notebook's cells are inputs too
        todo.extend(_named_notebooks(nb))
    for name in sorted(names):
        h.update(name.encode() + b"\0" + hashlib.sha256(names[name]).digest())
    return h.hexdigest()


def _relative(f: Path, base: Path) -> str:
    f = f.resolve()
    return f.relative_to(base).as_posix() if f.is_relative_to(base) else f.name


# -- the book's notebooks -----------------------------------------------------------------------

def _toc_notebooks(app: Sphinx) -> dict[str, Path]:
    """docname -> path of every notebook page of the book."""
    src = Path(app.srcdir)
    out = {}
    for path in sorted(src.rglob("*.ipynb")):
        rel = path.relative_to(src)
        if any(part.startswith(("_", ".")) for part in rel.parts):
            continue
        docname = rel.with_suffix("").as_posix()
        if not _in_toc(app, docname):
            continue
        out[docname] = path
    return out


def _in_toc(app: Sphinx, docname: str) -> bool:
    toc = getattr(app.config, "external_toc_path", None)
    path = Path(app.srcdir, toc) if toc else Path(app.srcdir, "_toc.yml")
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return True
    return re.search(rf"(?m)^\s*(-\s*)?(file|root):\s*{re.escape(docname)}(\.ipynb)?\s*$", text) is not None


def _cache(app: Sphinx):
    cfg = getattr(app.env, "mystnb_config", None)
    if cfg is None or cfg.execution_mode != "cache":
        return None, None
    from jupyter_cache import get_cache

    path = Path(cfg.execution_cache_path or ".jupyter_cache")
    return get_cache(str(path)), cfg


def _record(cache, nb):
    try:
        return cache.match_cache_notebook(nb)
    except KeyError:
        return None


# -- the build hooks --------------------------------------------------------------------------------

def on_builder_inited(app: Sphinx) -> None:
    # Simulation results shared by the chapters (recency_lib.cache) live beside the execution
    # cache, keyed by config and library source; kernels inherit this variable.
    os.environ.setdefault("RECENCY_LIB_CACHE", str(Path(app.outdir).parent / ".recency_cache"))
    # The book's pages glue their figures and tables without displaying them (the page places them);
    # outside a build (a papermill rerun) they display them too (companion.in_book).
    os.environ["COMPANION_IN_BOOK"] = "1"
    app._fresh_cache_changed = set()  # type: ignore[attr-defined]
    cache, cfg = _cache(app)
    if cache is None:
        return
    stamp_path = Path(cache.path) / STAMP
    try:
        stamps = json.loads(stamp_path.read_text())
        stamps = stamps if isinstance(stamps, dict) and stamps.get("format") == 2 else {}
    except (OSError, ValueError):
        stamps = {}
    pages = stamps.setdefault("pages", {})
    closures = stamps.setdefault("closures", {})
    stamps["format"] = 2

    todo = []                                               # (docname, path, notebook) without a result
    base = Path(app.srcdir).resolve().parent                 # the repository: _config.yml, book/, _build/
    for docname, path in _toc_notebooks(app).items():
        current = dependency_hash(path, base, closures)
        nb = nbformat.read(str(path), as_version=4)
        record = _record(cache, nb)
        old = pages.get(docname, {})
        if old.get("hash") != current:
            if record is not None:
                cache.remove_cache(record.pk)
                record = None
            if "hash" in old:
                app._fresh_cache_changed.add(docname)  # type: ignore[attr-defined]
                logger.info("fresh_cache: %s: its dependencies changed, executing it again", docname)
            pages[docname] = {**old, "hash": current}
        if record is None:
            todo.append((docname, path, nb))
    stamp_path.parent.mkdir(parents=True, exist_ok=True)
    stamp_path.write_text(json.dumps(stamps, indent=1))

    workers = app.config.fresh_cache_workers or len(os.sched_getaffinity(0))
    if len(todo) < 2 or workers < 2:
        return                                              # myst-nb executes it (or them) in turn
    todo.sort(key=lambda t: -pages.get(t[0], {}).get("seconds", 60.0))   # longest first
    logger.info("fresh_cache: executing %d notebooks, %d at a time", len(todo), workers)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="fresh_cache_") as tmp:
        tasks = queue.Queue()
        for i, (_, path, _) in enumerate(todo):
            tasks.put((i, path, Path(tmp) / f"{i}.ipynb"))
        results: dict = {}
        slots = [threading.Thread(target=_slot, args=(tasks, results, cfg.execution_timeout, Path(tmp) / f"slot{s}.log", t0))
                 for s in range(min(workers, len(todo)))]
        for slot in slots:
            slot.start()
        for slot in slots:
            slot.join()
        for i, (docname, path, _) in enumerate(todo):
            executed, seconds, error, start = results.get(i, (None, 0.0, "not executed", 0.0))
            if executed is None:
                logger.info("fresh_cache: %s failed (%s); it runs again while reading", docname, error)
                continue
            from jupyter_cache.base import CacheBundleIn

            cache.cache_notebook_bundle(CacheBundleIn(executed, str(path), data={"execution_seconds": seconds}),
                                        check_validity=False, overwrite=True)
            pages[docname]["seconds"] = round(seconds, 2)
            logger.info("fresh_cache: executed %s in %.1f s (%.1f to %.1f s)", docname, seconds, start, start + seconds)
    stamp_path.write_text(json.dumps(stamps, indent=1))
    logger.info("fresh_cache: %d notebooks executed in %.1f s", len(todo), time.perf_counter() - t0)


def _slot(tasks: queue.Queue, results: dict, timeout, log: Path, origin: float) -> None:
    """One parallel slot: a runner process (book/_ext/run_notebook.py) executes the notebooks it takes
    from ``tasks``, one after another on one kernel (cleared between them); ``results[i]`` = (notebook
    or None, seconds, error, start in seconds after ``origin``). A runner that dies is replaced for the
    next notebook."""
    proc = None
    err = open(log, "a")                                       # the runner's and its kernel's output
    try:
        while True:
            try:
                i, path, out = tasks.get_nowait()
            except queue.Empty:
                return
            if proc is None or proc.poll() is not None:
                proc = subprocess.Popen([sys.executable, str(RUNNER), str(timeout or -1)], cwd=path.parent, text=True,
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err)
            t0 = time.perf_counter()
            try:
                proc.stdin.write(json.dumps({"source": str(path), "out": str(out)}) + "\n")
                proc.stdin.flush()
                line = proc.stdout.readline()
            except OSError:                                    # the runner is gone
                line = ""
            seconds = time.perf_counter() - t0
            try:
                reply = json.loads(line) if line else {"ok": False, "error": _tail(log) or "the runner ended"}
            except ValueError:
                reply = {"ok": False, "error": f"the runner answered {line[:200]!r}"}
            if reply.get("ok") and out.is_file():
                results[i] = (nbformat.read(str(out), as_version=4), seconds, None, t0 - origin)
            else:
                results[i] = (None, seconds, str(reply.get("error", "no result"))[:300], t0 - origin)
    finally:
        if proc is not None:
            with contextlib.suppress(OSError):
                proc.stdin.close()
            try:
                proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                proc.kill()
        err.close()


def _tail(log: Path) -> str:
    try:
        lines = log.read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return lines[-1] if lines else ""


def on_env_get_outdated(app: Sphinx, env, added, changed, removed) -> list[str]:
    """Pages whose dependencies changed are read again (their notebooks were executed again)."""
    redo = set(getattr(app, "_fresh_cache_changed", ())) & set(env.found_docs)
    return sorted(redo - set(added) - set(changed) - set(removed))


def setup(app: Sphinx):
    app.add_config_value("fresh_cache_workers", 0, "env", [int])   # 0: the CPUs this process may use
    # after myst-nb's builder-inited handler, which resolves the jupyter-cache path
    app.connect("builder-inited", on_builder_inited, priority=900)
    app.connect("env-get-outdated", on_env_get_outdated)
    return {"version": "2.0", "parallel_read_safe": True, "parallel_write_safe": True}
