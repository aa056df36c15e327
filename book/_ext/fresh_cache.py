"""Execute what changed, only that, on every core; never serve a stale page.

myst-nb's jupyter-cache keys a notebook by its cells, not by the modules it imports. At the start of
every build this extension hashes what each page depends on besides its cells
(companion.sources.dependency_hash: both packages' files, the notebooks it names, the environment it
shows, the simulator's kernel path); a page whose hash changed loses its record and is read again.
The notebooks without a record are executed before Sphinx reads anything, ``fresh_cache_workers`` at
a time, longest first, each slot a runner process with one kernel (book/_ext/run_notebook.py); one
that fails is left to myst-nb, which reports its error.

The stamps (``fresh_cache.json`` in the jupyter-cache folder), per page: the hash it was executed
with, the same without the environment (``code``: a rerun's render compares it), the hash it was
written with (recorded only when a build finished without error), its seconds and what its
simulations cost (``python -m companion rerun`` estimates a rerun's time from them).
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import nbformat
from sphinx.application import Sphinx
from sphinx.util import logging

# what a page depends on besides its cells (a rerun's render asks the same of the book's records)
from companion.sources import dependency_hash

logger = logging.getLogger(__name__)

STAMP = "fresh_cache.json"
RUNNER = Path(__file__).with_name("run_notebook.py")


# -- the book's notebooks -----------------------------------------------------------------------


def _toc_notebooks(app: Sphinx) -> dict[str, Path]:
    """docname -> path of every notebook page of the book's table of contents."""
    paths = {name: Path(app.srcdir, f"{name}.ipynb") for name in app.config.external_site_map}
    return {name: path for name, path in sorted(paths.items()) if path.is_file()}


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


# -- the build hooks -------------------------------------------------------------------------------


def on_builder_inited(app: Sphinx) -> None:
    # Simulation results shared by the chapters (recency_lib.cache) live beside the execution
    # cache, keyed by config and library source; kernels inherit this variable.
    os.environ.setdefault("RECENCY_LIB_CACHE", str(Path(app.outdir).parent / ".recency_cache"))
    # The build's own folder (``_build`` under --path-output): what a page writes beside its results
    # goes there, never into the checkout (companion.params.build_folder: Appendix B's runs).
    os.environ["COMPANION_BUILD_DIR"] = str(Path(app.outdir).parent)
    # The book's pages glue their figures and tables without displaying them (the page places them);
    # outside a build (a papermill rerun) they display them too (companion.in_book).
    os.environ["COMPANION_IN_BOOK"] = "1"
    app._fresh_cache_changed = set()  # type: ignore[attr-defined]
    app._fresh_cache_current = {}  # type: ignore[attr-defined]
    cache, cfg = _cache(app)
    if cache is None:
        return
    stamp_path = Path(cache.path) / STAMP
    try:
        stamps = json.loads(stamp_path.read_text())
        stamps = stamps if isinstance(stamps, dict) and stamps.get("format") == 3 else {}
    except (OSError, ValueError):
        stamps = {}
    pages = stamps.setdefault("pages", {})
    stamps["format"] = 3
    app._fresh_cache_stamps = (stamp_path, stamps)  # type: ignore[attr-defined]

    todo = []  # (docname, path, notebook) without a result
    base = Path(app.srcdir).resolve().parent  # the repository: _config.yml, book/, _build/
    app._fresh_cache_code = {}  # type: ignore[attr-defined]
    for docname, path in _toc_notebooks(app).items():
        current = dependency_hash(path, base)
        app._fresh_cache_current[docname] = current  # type: ignore[attr-defined]
        # the same without the environment: a rerun's render serves the book's record of a page
        # only while this matches, whatever the environment it runs in
        code = dependency_hash(path, base, environ={})
        app._fresh_cache_code[docname] = code  # type: ignore[attr-defined]
        nb = nbformat.read(str(path), as_version=4)
        record = _record(cache, nb)
        old = pages.setdefault(docname, {})
        if old.get("executed") != current and record is not None:
            cache.remove_cache(record.pk)
            record = None
            logger.info("fresh_cache: %s: its dependencies changed, executing it again", docname)
        if old.get("written") != current:
            app._fresh_cache_changed.add(docname)  # type: ignore[attr-defined]
        if record is None:
            todo.append((docname, path, nb))
    stamp_path.parent.mkdir(parents=True, exist_ok=True)

    workers = app.config.fresh_cache_workers or len(os.sched_getaffinity(0))
    if len(todo) < 2 or workers < 2:
        return  # myst-nb executes it (or them) in turn
    todo.sort(key=lambda t: -pages.get(t[0], {}).get("seconds", 60.0))  # longest first
    logger.info("fresh_cache: executing %d notebooks, %d at a time", len(todo), workers)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="fresh_cache_") as tmp:
        tasks = queue.Queue()
        for i, (_, path, _) in enumerate(todo):
            tasks.put((i, path, Path(tmp) / f"{i}.ipynb"))
        results: dict = {}
        slots = [
            threading.Thread(
                target=_slot,
                args=(tasks, results, cfg.execution_timeout, Path(tmp) / f"slot{s}.log", t0),
            )
            for s in range(min(workers, len(todo)))
        ]
        for slot in slots:
            slot.start()
        for slot in slots:
            slot.join()
        for i, (docname, path, _) in enumerate(todo):
            executed, seconds, error, start, cost = results.get(
                i, (None, 0.0, "not executed", 0.0, None)
            )
            if executed is None:
                logger.info(
                    "fresh_cache: %s failed (%s); it runs again while reading", docname, error
                )
                continue
            from jupyter_cache.base import CacheBundleIn

            cache.cache_notebook_bundle(
                CacheBundleIn(executed, str(path), data={"execution_seconds": seconds}),
                check_validity=False,
                overwrite=True,
            )
            pages[docname].update(
                executed=app._fresh_cache_current[docname],
                code=app._fresh_cache_code[docname],
                seconds=round(seconds, 2),
            )
            if isinstance(cost, dict) and isinstance(cost.get("seconds"), (int, float)):
                # what its simulations cost at its defaults (companion.rerun's estimate)
                pages[docname].update(
                    simulation_seconds=round(float(cost["seconds"]), 2),
                    sequences=int(cost.get("sequences") or 0),
                )
            logger.info(
                "fresh_cache: executed %s in %.1f s (%.1f to %.1f s)",
                docname,
                seconds,
                start,
                start + seconds,
            )
    _write_stamps(stamp_path, stamps)
    logger.info("fresh_cache: %d notebooks executed in %.1f s", len(todo), time.perf_counter() - t0)


def _write_stamps(path: Path, stamps: dict) -> None:
    """The stamps, replaced atomically (an interrupt leaves the old file or the new one)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(stamps, indent=1))
    os.replace(tmp, path)


def on_build_finished(app: Sphinx, exception) -> None:
    """A build that finished without error has executed and written every page with its current
    dependencies: only now are they recorded as such."""
    stamps = getattr(app, "_fresh_cache_stamps", None)
    if exception is not None or stamps is None:
        return
    path, data = stamps
    for docname, current in app._fresh_cache_current.items():  # type: ignore[attr-defined]
        data["pages"].setdefault(docname, {}).update(
            executed=current, written=current, code=app._fresh_cache_code[docname]
        )  # type: ignore[attr-defined]
    _write_stamps(path, data)


def _slot(tasks: queue.Queue, results: dict, timeout, log: Path, origin: float) -> None:
    """One parallel slot: a runner process (book/_ext/run_notebook.py) executes the notebooks it
    takes from ``tasks`` on one kernel; ``results[i]`` = (notebook or None, seconds, error, start in
    seconds after ``origin``, its simulations' cost or None). A runner that dies is replaced."""
    proc = None
    err = open(log, "a")  # the runner's and its kernel's output
    try:
        while True:
            try:
                i, path, out = tasks.get_nowait()
            except queue.Empty:
                return
            if proc is None or proc.poll() is not None:
                proc = subprocess.Popen(
                    [sys.executable, str(RUNNER), str(timeout or -1)],
                    cwd=path.parent,
                    text=True,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=err,
                )
            t0 = time.perf_counter()
            try:
                proc.stdin.write(json.dumps({"source": str(path), "out": str(out)}) + "\n")
                proc.stdin.flush()
                line = proc.stdout.readline()
            except OSError:  # the runner is gone
                line = ""
            seconds = time.perf_counter() - t0
            try:
                reply = (
                    json.loads(line)
                    if line
                    else {"ok": False, "error": _tail(log) or "the runner ended"}
                )
            except ValueError:
                reply = {"ok": False, "error": f"the runner answered {line[:200]!r}"}
            if reply.get("ok") and out.is_file():
                results[i] = (
                    nbformat.read(str(out), as_version=4),
                    seconds,
                    None,
                    t0 - origin,
                    reply.get("cost"),
                )
            else:
                results[i] = (
                    None,
                    seconds,
                    str(reply.get("error", "no result"))[:300],
                    t0 - origin,
                    None,
                )
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
    app.add_config_value("fresh_cache_workers", 0, "env", [int])  # 0: the CPUs this process may use
    # after myst-nb's builder-inited handler, which resolves the jupyter-cache path
    app.connect("builder-inited", on_builder_inited, priority=900)
    app.connect("env-get-outdated", on_env_get_outdated)
    app.connect("build-finished", on_build_finished)
    return {"version": "3.0", "parallel_read_safe": True, "parallel_write_safe": True}
