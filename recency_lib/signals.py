"""Signals as exceptions while a run is in progress (the standard library only: the command line
installs this before it imports numpy, so an interrupt during the imports is reported in one line).

:func:`signals_as_exceptions`: SIGTERM (and SIGHUP) raise :class:`Terminated` in the main thread,
like SIGINT raises ``KeyboardInterrupt``, so ``finally`` blocks run and temporaries are removed; if
nobody handles it, the signal's default action (the end of the process) follows once the cleanup
is done. :func:`deferred` holds those signals back while C extensions are imported: raised inside
their initialisation, an exception can become an ImportError ("Importing the numpy C-extensions
failed") or be lost.
"""
from __future__ import annotations

import contextlib
import os
import signal
import threading


class Terminated(BaseException):
    """Raised in the main thread by SIGTERM / SIGHUP inside :func:`signals_as_exceptions`."""

    def __init__(self, signum: int):
        super().__init__(f"terminated by {signal.Signals(signum).name}")
        self.signum = signum


_ENDING = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name))


@contextlib.contextmanager
def deferred():
    """SIGINT, SIGTERM and SIGHUP noted, not handled, for the duration (main thread only); as the block
    ends the first one noted goes to the handler in place before it (or its default action)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    noted: list[int] = []
    old = {s: signal.signal(s, lambda signum, frame: noted.append(signum)) for s in _ENDING}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        previous = old[noted[0]] if noted else None
        if callable(previous):
            previous(noted[0], None)
        elif noted and previous == signal.SIG_DFL:
            os.kill(os.getpid(), noted[0])


@contextlib.contextmanager
def signals_as_exceptions():
    """SIGTERM and SIGHUP raise :class:`Terminated` in the main thread for the duration (no-op
    elsewhere); the previous handlers come back afterwards."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):
        for s in old:                                 # a second signal must not cut the cleanup short
            signal.signal(s, signal.SIG_IGN)
        raise Terminated(signum)

    old = {}                                          # filled one by one: the handler may run meanwhile
    for s in (signal.SIGTERM, signal.SIGHUP):
        old[s] = signal.signal(s, handler)
    try:
        yield
    except Terminated as exc:
        for s, h in old.items():
            signal.signal(s, h)
        if old[exc.signum] == signal.SIG_DFL:        # cleaned up: now end as the signal says
            os.kill(os.getpid(), exc.signum)
        raise
    finally:
        for s, h in old.items():
            signal.signal(s, h)
