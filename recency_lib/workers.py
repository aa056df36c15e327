"""Process pools whose workers never outlive the process that made them.

Each worker, as it starts, asks the kernel to kill it when its parent goes (Linux
``prctl(PR_SET_PDEATHSIG, SIGKILL)``; elsewhere a watchdog thread polls ``os.getppid()``), so even
SIGKILL of the main process ends its workers at once. Workers ignore SIGINT (a Ctrl-C reaches
the whole process group; the main process handles it) and take SIGTERM's default action. When the
``with`` block of :func:`worker_pool` ends by an exception (an interrupt, an error), queued tasks
are cancelled and the workers are terminated right away instead of finishing their tasks.
"""
from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import threading
import time
from concurrent.futures import ProcessPoolExecutor

_PR_SET_PDEATHSIG = 1
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3      # glibc mallopt parameters (malloc.h)


def keep_freed_memory() -> bool:
    """Ask glibc's malloc to serve large blocks from its heap and to keep freed memory for reuse.

    By default every array above 32 MB (and, until the threshold adapts, above 128 kB) is a fresh
    ``mmap`` that the kernel zero-fills page by page, and is returned at ``free``: the dense engine,
    which makes temporaries of a few MB per operation (FFN hidden states, long-sequence scores),
    then spends up to a third of its time in page faults. With these settings a freed block is
    reused by the next operation; peak memory is unchanged (what is kept is what was in use a moment
    before). A no-op returning False where glibc is not the C library.
    """
    if not sys.platform.startswith("linux"):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    return bool(mallopt(_M_MMAP_THRESHOLD, 1 << 30)) and bool(mallopt(_M_TRIM_THRESHOLD, (1 << 31) - 1))


def _watch_parent(parent: int) -> None:
    while True:
        if os.getppid() != parent:
            os._exit(1)
        time.sleep(0.5)


def die_with_parent(parent: int) -> None:
    """Worker initializer: end this process when ``parent`` (the pid that made it) ends."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    keep_freed_memory()                 # the workers only simulate: see keep_freed_memory
    armed = False
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            armed = libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0
        except (OSError, AttributeError):
            armed = False
    if not armed:
        threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()
    if os.getppid() != parent:          # the parent died before the guard was set
        os._exit(1)


def _shutdown(pool: ProcessPoolExecutor) -> None:
    # The executor's manager thread must be over before this returns: left running, it closes its
    # wake-up pipe while interpreter exit writes to it ("Exception ignored ... Bad file descriptor"
    # on stderr after the CLI's one-line error). shutdown(wait=False) forgets the thread (CPython
    # 3.11), so a second shutdown(wait=True) joins nothing: keep the reference and join it here.
    manager = getattr(pool, "_executor_manager_thread", None)
    pool.shutdown(wait=False, cancel_futures=True)
    if manager is not None:
        manager.join()


def terminate(pool: ProcessPoolExecutor, timeout: float = 5.0) -> None:
    """End the pool's workers now (SIGTERM, then SIGKILL after ``timeout``), then cancel its queued tasks.

    The workers go first and the executor's own shutdown runs in a helper thread, waited for at most
    ``timeout``: an interrupt can land inside ``submit`` just after it took the executor's internal
    lock (a ``with`` block is not entered atomically), and a shutdown from this thread would then
    wait for that lock forever."""
    procs = list((getattr(pool, "_processes", None) or {}).values())    # CPython's pool keeps them here
    for p in procs:
        with contextlib.suppress(Exception):
            p.terminate()
    deadline = time.monotonic() + timeout
    for p in procs:
        with contextlib.suppress(Exception):
            p.join(max(0.0, deadline - time.monotonic()))
            if p.is_alive():
                p.kill()
                p.join(1.0)
    # A worker ended while it was sending a result leaves the executor's manager thread reading the
    # rest of that message, and nothing more will come: this process holds the pipe's write end too,
    # so the read never sees end-of-file, and interpreter exit (which joins the manager) hung (seen
    # in 3 of 8 runs of the signal tests). With the workers gone, close this process's write end: the
    # read ends, the manager takes the pool for broken and exits.
    writer = getattr(getattr(pool, "_result_queue", None), "_writer", None)
    if writer is not None and not any(p.is_alive() for p in procs):
        with contextlib.suppress(Exception):
            writer.close()
    helper = threading.Thread(target=_shutdown, args=(pool,), daemon=True, name="worker-pool-shutdown")
    helper.start()
    helper.join(timeout)


@contextlib.contextmanager
def worker_pool(workers: int):
    """A ``ProcessPoolExecutor`` of ``workers`` processes tied to this one (module docstring)."""
    pool = ProcessPoolExecutor(workers, initializer=die_with_parent, initargs=(os.getpid(),))
    try:
        yield pool
    except BaseException:
        terminate(pool)
        raise
    pool.shutdown(wait=True)
