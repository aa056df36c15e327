"""``with worker_pool(2) as pool: simulate(cfg, executor=pool)``: a process pool that stops cleanly
(its workers ignore SIGINT, which the main process handles; queued tasks are cancelled on exit).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
from concurrent.futures import ProcessPoolExecutor


def cpus() -> int:
    """The CPUs this process may use."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _start_worker() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if sys.platform.startswith("linux"):
        # glibc's malloc keeps freed blocks for reuse instead of returning every large temporary of
        # the dense engine to the system (which zero-fills fresh pages again at the next allocation)
        with contextlib.suppress(OSError, AttributeError):
            mallopt = ctypes.CDLL(None).mallopt
            mallopt(-3, 1 << 30)  # M_MMAP_THRESHOLD
            mallopt(-1, (1 << 31) - 1)  # M_TRIM_THRESHOLD


@contextlib.contextmanager
def worker_pool(workers: int):
    """A ``ProcessPoolExecutor`` of ``workers`` processes (module docstring)."""
    pool = ProcessPoolExecutor(workers, initializer=_start_worker)
    try:
        yield pool
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
