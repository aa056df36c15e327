"""Execute notebooks one after another on one kernel, as myst-nb's cache mode does, and write them.

    python run_notebook.py TIMEOUT

Run by book/_ext/fresh_cache.py, one process per slot (its kernel: companion.grid.SharedKernel,
cleared before each notebook). Requests on stdin, one JSON line each, ``{"source": SOURCE.ipynb,
"out": OUT.ipynb}``; one JSON line answers each on stdout, ``{"ok": true, "cost": {...},
"verdicts": [...]}`` (what the page's simulations cost, and its verdicts: companion.provenance) or
``{"ok": false, "error": "...", "detail": "..."}`` (its error in a line; the failed cell and its
traceback). A notebook that fails is not written and its kernel is stopped. TIMEOUT < 0: no
per-cell timeout. SIGTERM or SIGINT stop the kernel before the runner ends.
"""

import json
import os
import signal
import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from companion.grid import CLIENT_OPTIONS, SharedKernel

#: Asked of the kernel once a page has run: what its simulations cost and its verdicts (a JSON
#: line; a rerun's banner compares its own verdicts with the book's).
SUMMARY = (
    "from companion import provenance as _p\nimport json as _json\n"
    "print(_json.dumps({'cost': _p.simulation_cost(globals()), "
    "'verdicts': _p.verdict_settings(globals())}, default=str))"
)


def execute(kernel: SharedKernel, source: Path, out: Path, timeout: float) -> SharedKernel:
    """Execute ``source`` on ``kernel`` (or on a new one, for another kernelspec) and write it to
    ``out``; raise on a failed cell. Returns the kernel it ran on."""
    nb = nbformat.read(str(source), as_version=4)
    meta = nb.metadata.get("execution", {})  # as jupyter-cache: the notebook's own say
    cell_timeout = meta.get("timeout", None if timeout < 0 else int(timeout))
    allow_errors = meta.get("allow_errors", False)
    name = nb.metadata.get("kernelspec", {}).get("name", "python3")
    if kernel.kernel != name:
        kernel.close()
        kernel = SharedKernel(name)
    km = kernel.ready(source.parent)
    client = NotebookClient(
        nb,
        km=km,
        timeout=cell_timeout,
        allow_errors=allow_errors,
        record_timing=False,
        resources={"metadata": {"path": str(source.parent)}},
        **CLIENT_OPTIONS,
    )
    try:
        client.execute()
    finally:
        km.stop_clients()  # nbclient leaves open a client of a kernel it does not own
    nbformat.write(nb, str(out))
    return kernel


def failure(exc: Exception) -> dict:
    """The reply for a notebook that raised ``exc``: its error in a line, and the whole of it."""
    if isinstance(exc, CellExecutionError):
        line = f"{exc.ename}: {' '.join(str(exc.evalue).split())}"
    else:
        line = f"{type(exc).__name__}: {' '.join(str(exc).split())}"
    return {"ok": False, "error": line[:500], "detail": str(exc)[-20000:]}


def _terminated(signum, frame):
    """SIGTERM (the build stops its runners) or SIGINT (Ctrl-C): unwind, so that the kernel is
    stopped too; a second signal does not interrupt its shutdown."""
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, signal.SIG_IGN)
    raise SystemExit(128 + signum)


def main(timeout: str) -> int:
    for sig in (signal.SIGTERM, signal.SIGINT):
        if signal.getsignal(sig) is not signal.SIG_IGN:  # as a build started with `&` ignores it
            signal.signal(sig, _terminated)
    replies = os.fdopen(os.dup(1), "w", buffering=1)  # answers only on the real stdout; anything
    os.dup2(2, 1)  # else printed (the kernel too) goes to stderr
    kernel = SharedKernel("python3")
    try:
        for line in sys.stdin:
            request = json.loads(line)
            try:
                kernel = execute(
                    kernel, Path(request["source"]).resolve(), Path(request["out"]), float(timeout)
                )
                try:
                    summary = json.loads(kernel.ask(SUMMARY))
                except (RuntimeError, ValueError):  # no measure: the page is still right
                    summary = {}
                replies.write(json.dumps({"ok": True, **summary}) + "\n")
            except Exception as exc:
                kernel.close()
                replies.write(json.dumps(failure(exc)) + "\n")
    finally:
        kernel.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
