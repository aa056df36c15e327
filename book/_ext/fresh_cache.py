"""Execute what changed, only that, on every core; never serve a stale page.

myst-nb's jupyter-cache keys a notebook by its cells, not by the modules it imports. At the start of
every build this extension hashes what each page depends on besides its cells
(companion.sources.dependency_hash: both packages' files, the notebooks it names, the environment it
shows, the simulator's kernel path); a page whose hash changed is executed again, and so is a page
without a record. They are executed before Sphinx reads anything, ``fresh_cache_workers`` at a
time, longest first, each slot a runner process with one kernel (book/_ext/run_notebook.py), so
myst-nb never executes a page itself. Each result replaces the page's record only once it exists: a
page that fails stops the build with its error, and every record stays (a stale one is never served:
the build ends before reading). The simulator's environment variables are checked before anything
runs. The runs' folder is the build's own (``.fresh_cache_tmp-<pid>``, removed on SIGTERM too, and
at the next build if the build was killed).

Titles: a page's title shows on every page (sidebar, previous/next links, {doc} links), yet Sphinx
writes again only the pages it read. When a title differs from those of the last build that finished
(``fresh_cache_titles.json`` beside Sphinx's environment), or a page came or went, every page is
written again.

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
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import nbformat
from sphinx.application import Sphinx
from sphinx.errors import ExtensionError
from sphinx.util import logging

# what a page depends on besides its cells (a rerun's render asks the same of the book's records)
from companion.sources import dependency_hash
from recency_lib.cache import cache_dir
from recency_lib.engines import memory_limit
from recency_lib.kernels import load as load_kernel

logger = logging.getLogger(__name__)

STAMP = "fresh_cache.json"
TITLES = "fresh_cache_titles.json"  # in Sphinx's doctree folder, beside its environment
SCRATCH = ".fresh_cache_tmp-"  # + the build's pid: its runs' folder, in the build's folder
RUNNER = Path(__file__).with_name("run_notebook.py")
#: The simulator's environment variables, each with its check (as companion.rerun checks them).
ENVIRONMENT = (
    ("RECENCY_LIB_KERNEL", load_kernel),
    ("RECENCY_LIB_CACHE", cache_dir),
    ("RECENCY_LIB_MAX_MEMORY", memory_limit),
)


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


def _check_environment() -> None:
    """ExtensionError, one line naming the variable and its value, if the simulator refuses one of
    its environment variables: every page would fail, so nothing runs and the cache is untouched."""
    for name, check in ENVIRONMENT:
        try:
            check()
        except ValueError as exc:
            why = str(exc)
            if not why.startswith(f"{name}="):
                why = f"{name}={os.environ.get(name, '')!r}: {why}"
            raise ExtensionError(
                f"{why} (nothing was executed; the execution cache is unchanged)",
                modname=__name__,
            ) from None


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
    _check_environment()
    _sweep(Path(app.outdir).parent)
    stamp_path = Path(cache.path) / STAMP
    try:
        stamps = json.loads(stamp_path.read_text())
        stamps = stamps if isinstance(stamps, dict) and stamps.get("format") == 3 else {}
    except (OSError, ValueError):
        stamps = {}
    pages = stamps.setdefault("pages", {})
    stamps["format"] = 3
    app._fresh_cache_stamps = (stamp_path, stamps)  # type: ignore[attr-defined]

    todo = []  # (docname, path) without a current result
    base = Path(app.srcdir).resolve().parent  # the repository: _config.yml, book/, _build/
    app._fresh_cache_code = {}  # type: ignore[attr-defined]
    for docname, path in _toc_notebooks(app).items():
        current = dependency_hash(path, base)
        app._fresh_cache_current[docname] = current  # type: ignore[attr-defined]
        # the same without the environment: a rerun's render serves the book's record of a page
        # only while this matches, whatever the environment it runs in
        code = dependency_hash(path, base, environ={})
        app._fresh_cache_code[docname] = code  # type: ignore[attr-defined]
        record = _record(cache, nbformat.read(str(path), as_version=4))
        old = pages.setdefault(docname, {})
        if old.get("written") != current:
            app._fresh_cache_changed.add(docname)  # type: ignore[attr-defined]
        if record is None:
            todo.append((docname, path))
        elif old.get("executed") != current:  # its record stays until its replacement exists
            todo.append((docname, path))
            logger.info("fresh_cache: %s: its dependencies changed, executing it again", docname)
    stamp_path.parent.mkdir(parents=True, exist_ok=True)
    if not todo:
        return
    failed = _execute(app, cache, cfg, todo, pages)
    _write_stamps(stamp_path, stamps)
    if failed:
        lines = "; ".join(f"{docname} failed: {error}" for docname, error in failed.items())
        raise ExtensionError(
            f"{lines} ({len(failed)} of the {len(todo)} pages executed; the build stops, every "
            "record of the execution cache stays; tracebacks above)",
            modname=__name__,
        )


def _execute(app: Sphinx, cache, cfg, todo: list, pages: dict) -> dict[str, str]:
    """Execute ``todo`` on the runner slots and store each success (replacing the page's record)
    with its stamps; docname -> error of each page that failed (its traceback logged)."""
    from jupyter_cache.base import CacheBundleIn

    workers = min(app.config.fresh_cache_workers or len(os.sched_getaffinity(0)), len(todo))
    todo.sort(key=lambda t: -pages.get(t[0], {}).get("seconds", 60.0))  # longest first
    plural = "s" if len(todo) > 1 else ""
    logger.info("fresh_cache: executing %d notebook%s, %d at a time", len(todo), plural, workers)
    t0 = time.perf_counter()
    with _terminated_unwinds(), _scratch(Path(app.outdir).parent) as tmp:
        results = _run_slots([path for _, path in todo], tmp, workers, cfg.execution_timeout, t0)
    failed = {}
    for i, (docname, path) in enumerate(todo):
        r = results.get(i, {"error": "not executed", "detail": ""})
        if r.get("nb") is None:
            failed[docname] = r["error"]
            logger.info("fresh_cache: %s failed: %s\n%s", docname, r["error"], r["detail"])
            continue
        cache.cache_notebook_bundle(
            CacheBundleIn(r["nb"], str(path), data={"execution_seconds": r["seconds"]}),
            check_validity=False,
            overwrite=True,
        )
        pages[docname].update(
            executed=app._fresh_cache_current[docname],  # type: ignore[attr-defined]
            code=app._fresh_cache_code[docname],  # type: ignore[attr-defined]
            seconds=round(r["seconds"], 2),
        )
        if isinstance(r["verdicts"], list):  # the book's verdicts (a rerun's banner compares)
            pages[docname]["verdicts"] = r["verdicts"]
        cost = r["cost"]
        if isinstance(cost, dict) and isinstance(cost.get("seconds"), (int, float)):
            # what its simulations cost at its defaults (companion.rerun's estimate)
            pages[docname].update(
                simulation_seconds=round(float(cost["seconds"]), 2),
                sequences=int(cost.get("sequences") or 0),
            )
        logger.info(
            "fresh_cache: executed %s in %.1f s (%.1f to %.1f s)",
            docname,
            r["seconds"],
            r["start"],
            r["start"] + r["seconds"],
        )
    done = len(todo) - len(failed)
    logger.info("fresh_cache: %d notebooks executed in %.1f s", done, time.perf_counter() - t0)
    return failed


def _write_stamps(path: Path, stamps: dict) -> None:
    """The stamps, replaced atomically (an interrupt leaves the old file or the new one)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(stamps, indent=1))
    os.replace(tmp, path)


def on_env_updated(app: Sphinx, env) -> list[str]:
    """Every page, when a title differs from those the last finished build wrote or a page came or
    went: the other pages show it (sidebar, previous/next and {doc} links, glossary, references)."""
    titles = {name: env.titles[name].astext() for name in sorted(env.found_docs & set(env.titles))}
    app._fresh_cache_titles = titles  # type: ignore[attr-defined]
    try:
        written = json.loads(Path(app.doctreedir, TITLES).read_text())
    except (OSError, ValueError):
        written = None
    if titles == written:
        return []
    logger.info("fresh_cache: a page's title changed, or a page came or went: writing every page")
    return sorted(env.found_docs)


def _copy_static(app: Sphinx) -> None:
    """The book's own static files (html_static_path) copied into the site: Sphinx copies them
    only when a page is out of date, so a CSS edit alone never reached the site."""
    from sphinx.util.fileutil import copy_asset

    for entry in app.config.html_static_path:
        source = Path(app.confdir, entry)
        if source.exists():
            copy_asset(str(source), str(Path(app.outdir, "_static")))


def on_build_finished(app: Sphinx, exception) -> None:
    """A build that finished without error has executed and written every page with its current
    dependencies and titles: only now are they recorded as such."""
    if exception is not None:
        return
    if app.builder.format == "html":
        _copy_static(app)
    titles = getattr(app, "_fresh_cache_titles", None)
    if titles is not None:
        _write_stamps(Path(app.doctreedir, TITLES), titles)
    stamps = getattr(app, "_fresh_cache_stamps", None)
    if stamps is None:
        return
    path, data = stamps
    for docname, current in app._fresh_cache_current.items():  # type: ignore[attr-defined]
        data["pages"].setdefault(docname, {}).update(
            executed=current, written=current, code=app._fresh_cache_code[docname]
        )  # type: ignore[attr-defined]
    _write_stamps(path, data)


# -- the runs ------------------------------------------------------------------------------------


@contextlib.contextmanager
def _terminated_unwinds():
    """Meanwhile SIGTERM raises SystemExit(143) in the main thread (Python's default ends the
    process at once): the runners are stopped and the runs' folder removed, as on Ctrl-C."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum, frame):
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _sweep(build: Path) -> None:
    """The runs' folders that builds killed outright left in the build's folder ``build`` (their
    process gone) removed."""
    for left in build.glob(f"{SCRATCH}*"):
        pid = left.name.removeprefix(SCRATCH)
        if not (pid.isdigit() and _alive(int(pid))):
            shutil.rmtree(left, ignore_errors=True)


@contextlib.contextmanager
def _scratch(build: Path):
    """This build's runs' folder in the build's folder ``build``, removed when done (an exception,
    Ctrl-C or SIGTERM too: _terminated_unwinds)."""
    build.mkdir(parents=True, exist_ok=True)
    folder = build / f"{SCRATCH}{os.getpid()}"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir()
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _alive(pid: int) -> bool:
    """Whether process ``pid`` exists (another user's too)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


class _Runners:
    """The slots' runner processes: none starts once they are stopped (an interrupt)."""

    def __init__(self):
        self.lock, self.procs, self.stopped = threading.Lock(), [], False

    def start(self, args: list[str], **kwargs):
        """A new runner, or None once stopped."""
        with self.lock:
            if self.stopped:
                return None
            proc = subprocess.Popen(args, **kwargs)
            self.procs.append(proc)
            return proc

    def stop(self) -> None:
        """SIGTERM to every runner (each stops its kernel: run_notebook.py)."""
        with self.lock:
            self.stopped = True
            for proc in self.procs:
                if proc.poll() is None:
                    with contextlib.suppress(OSError):
                        proc.terminate()


def _run_slots(paths: list[Path], tmp: Path, workers: int, timeout, origin: float) -> dict:
    """Execute ``paths`` on ``workers`` slots (threads, each with a runner); index -> result
    (_slot). An interrupt stops the runners and waits for the slots before it goes on."""
    tasks = queue.Queue()
    for i, path in enumerate(paths):
        tasks.put((i, path, tmp / f"{i}.ipynb"))
    results: dict = {}
    runners = _Runners()
    slots = [
        threading.Thread(
            target=_slot, args=(tasks, results, runners, timeout, tmp / f"slot{s}.log", origin)
        )
        for s in range(workers)
    ]
    for slot in slots:
        slot.start()
    try:
        for slot in slots:
            slot.join()
    except BaseException:
        runners.stop()
        for slot in slots:
            slot.join()
        raise
    return results


def _slot(
    tasks: queue.Queue, results: dict, runners: _Runners, timeout, log: Path, origin: float
) -> None:
    """One parallel slot: a runner process (book/_ext/run_notebook.py) executes the notebooks it
    takes from ``tasks`` on one kernel; ``results[i]``: ``nb`` (the executed notebook, or None),
    ``seconds``, ``start`` (seconds after ``origin``), ``cost`` (its simulations' or None),
    ``error`` (a line) and ``detail`` (its traceback). A runner that dies is replaced."""
    proc = None
    err = open(log, "a")  # the runner's and its kernel's output
    try:
        while True:
            try:
                i, path, out = tasks.get_nowait()
            except queue.Empty:
                return
            if proc is None or proc.poll() is not None:
                proc = runners.start(
                    [sys.executable, str(RUNNER), str(timeout or -1)],
                    cwd=path.parent,
                    text=True,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=err,
                )
                if proc is None:  # stopped
                    return
            t0 = time.perf_counter()
            reply = _ask(proc, {"source": str(path), "out": str(out)}, log)
            r = {
                "nb": None,
                "seconds": time.perf_counter() - t0,
                "start": t0 - origin,
                "cost": None,
                "verdicts": None,
            }
            if reply.get("ok") and out.is_file():
                r.update(
                    nb=nbformat.read(str(out), as_version=4),
                    cost=reply.get("cost"),
                    verdicts=reply.get("verdicts"),
                )
            else:
                r.update(
                    error=str(reply.get("error", "no result"))[:500],
                    detail=str(reply.get("detail", "")),
                )
            results[i] = r
    finally:
        if proc is not None:
            with contextlib.suppress(OSError):
                proc.stdin.close()
            try:
                proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                proc.kill()
        err.close()


def _ask(proc: subprocess.Popen, request: dict, log: Path) -> dict:
    """The runner's reply to ``request`` (a failure when it ended or answered nonsense)."""
    try:
        proc.stdin.write(json.dumps(request) + "\n")
        proc.stdin.flush()
        line = proc.stdout.readline()
    except OSError:  # the runner is gone
        line = ""
    if not line:
        return {"ok": False, "error": _tail(log) or "the runner ended"}
    try:
        return json.loads(line)
    except ValueError:
        return {"ok": False, "error": f"the runner answered {line[:200]!r}"}


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
    # reads only what Sphinx merged (env.titles), in the main process: parallel reading is safe
    app.connect("env-updated", on_env_updated)
    app.connect("build-finished", on_build_finished)
    return {"version": "4.0", "parallel_read_safe": True, "parallel_write_safe": True}
