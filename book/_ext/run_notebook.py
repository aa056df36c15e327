"""Execute notebooks one after another on one kernel, as myst-nb's cache mode does, and write the copies.

    python run_notebook.py TIMEOUT

Run by book/_ext/fresh_cache.py, one process per parallel slot. Requests come on stdin, one JSON line
each, ``{"source": SOURCE.ipynb, "out": OUT.ipynb}``; one JSON line answers each on stdout,
``{"ok": true}`` or ``{"ok": false, "error": "..."}``. The slot's notebooks share one kernel: before
each, its namespace is cleared (IPython's reset with a new history session, so execution counts start
at 1 again) and its working directory set to the notebook's folder, so a page runs as in a fresh
kernel, without the kernel start and the imports of its own (~2 s a page). A notebook whose cell
fails (or times out) gets nothing written, and its kernel is stopped: the next notebook starts a new
one; myst-nb then executes the failed notebook itself and reports the error. The kernel stops when
stdin ends. TIMEOUT < 0: no per-cell timeout (a notebook's own ``execution`` metadata still wins).
"""
import json
import os
import sys
from pathlib import Path

import nbformat
from jupyter_client.manager import AsyncKernelManager
from jupyter_core.utils import run_sync
from nbclient import NotebookClient


class Kernel:
    """The slot's kernel: started on first use, cleared and moved before every notebook."""

    def __init__(self):
        self.km = None

    def ready(self, folder: Path, name: str):
        if self.km is not None and (self.km.kernel_name != name or not run_sync(self.km.is_alive)()):
            self.close()
        if self.km is None:
            self.km = AsyncKernelManager(kernel_name=name)
            run_sync(self.km.start_kernel)(cwd=str(folder))
        kc = self.km.client()
        kc.start_channels()
        try:
            run_sync(kc.wait_for_ready)(timeout=60)
            reply = run_sync(kc.execute_interactive)(
                f"import os as _os\n_os.chdir({str(folder)!r})\nget_ipython().reset(new_session=True)",
                store_history=False, timeout=60, output_hook=lambda msg: None)
        finally:
            kc.stop_channels()
        if reply["content"].get("status") != "ok":
            self.close()
            raise RuntimeError(f"the kernel could not be cleared: {reply['content'].get('evalue')}")
        return self.km

    def close(self) -> None:
        if self.km is not None:
            try:
                if run_sync(self.km.is_alive)():
                    run_sync(self.km.shutdown_kernel)(now=True)
            finally:
                self.km = None


def execute(kernel: Kernel, source: Path, out: Path, timeout: float) -> None:
    """Execute ``source`` on ``kernel`` and write it to ``out``; raise on a failed cell."""
    nb = nbformat.read(str(source), as_version=4)
    cell_timeout = None if timeout < 0 else int(timeout)
    allow_errors = False
    meta = nb.metadata.get("execution", {})                  # as jupyter-cache: the notebook's own say
    cell_timeout = meta.get("timeout", cell_timeout)
    allow_errors = meta.get("allow_errors", allow_errors)
    name = nb.metadata.get("kernelspec", {}).get("name", "python3")
    km = kernel.ready(source.parent, name)
    client = NotebookClient(nb, km=km, timeout=cell_timeout, allow_errors=allow_errors, record_timing=False,
                            resources={"metadata": {"path": str(source.parent)}})
    try:
        client.execute()
    finally:
        if client.kc is not None:                             # nbclient leaves a client it did not own open
            client.kc.stop_channels()
    nbformat.write(nb, str(out))


def main(timeout: str) -> int:
    replies = os.fdopen(os.dup(1), "w", buffering=1)            # answers only on the real stdout; anything
    os.dup2(2, 1)                                                # else printed (the kernel too) goes to stderr
    kernel = Kernel()
    try:
        for line in sys.stdin:
            request = json.loads(line)
            try:
                execute(kernel, Path(request["source"]).resolve(), Path(request["out"]), float(timeout))
                replies.write(json.dumps({"ok": True}) + "\n")
            except Exception as exc:                                # noqa: BLE001 (reported, then myst-nb reruns it)
                kernel.close()
                replies.write(json.dumps({"ok": False, "error": f"{type(exc).__name__}: {exc}"[:2000]}) + "\n")
    finally:
        kernel.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
