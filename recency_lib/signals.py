"""Signals as exceptions while a run is in progress (the standard library only: the command line
installs this before it imports numpy, so an interrupt during the imports is reported in one line).

:func:`signals_as_exceptions`: SIGTERM (and SIGHUP) raise :class:`Terminated` in the main thread,
like SIGINT raises ``KeyboardInterrupt``, so ``finally`` blocks run and temporaries are removed; if
nobody handles it, the signal's default action (the end of the process) follows once the cleanup
is done.

:func:`deferred`: those signals held back while a block runs and delivered when it ends. For the
imports of C extensions: an exception raised inside their initialisation can be turned into an
ImportError (numpy's ``PyCapsule_Import`` of ``datetime``: "Importing the numpy C-extensions failed"),
cleared, or leave the interpreter to end by SIGINT after the exit status was chosen.
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
    """SIGINT, SIGTERM and SIGHUP held back for the duration (main thread only; elsewhere a no-op):
    a handler that only notes the signal stands in for each, and as the block ends the first signal
    noted goes to the handler that was in place (``KeyboardInterrupt``, :class:`Terminated`, or the
    default action), in plain Python code."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    noted: list[int] = []

    def note(signum, frame):
        noted.append(signum)

    old = {s: signal.signal(s, note) for s in _ENDING}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        if noted:
            previous = old[noted[0]]
            if callable(previous):
                previous(noted[0], None)
            elif previous == signal.SIG_DFL:
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

    old = {}
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
