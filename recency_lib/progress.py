"""Progress of a long run: tqdm's bar on stderr, and events another process can read.

``RECENCY_LIB_PROGRESS``: "1" shows the bar anywhere (from 10^5 sequences), "0" never; unset, on
a terminal from 10^6 sequences. ``RECENCY_LIB_PROGRESS_FILE``: every run appends JSON lines to it,
``{"run": "<pid>-<k>", "done": sequences, "total": sequences, "seconds": since its start}``, at
most twice a second and once at its end (a rerun reads them: its notebook's kernel shows no bar).
"""

from __future__ import annotations

import itertools
import json
import os
import sys
import time

_RUNS = itertools.count(1)


def _bar_wanted(total: int, progress: bool | None) -> bool:
    if progress is not None:
        return progress
    forced = os.environ.get("RECENCY_LIB_PROGRESS", "")
    if forced in ("0", "1"):
        return forced == "1" and total >= 10**5
    return sys.stderr.isatty() and total >= 10**6


class Progress:
    """``update(k)`` after k more sequences; a context manager that closes the bar and events."""

    def __init__(self, total: int, progress: bool | None = None):
        self.total, self.done, self.start, self.said = total, 0, time.monotonic(), 0.0
        self.run = f"{os.getpid()}-{next(_RUNS)}"
        self.file = os.environ.get("RECENCY_LIB_PROGRESS_FILE") or None
        self.bar = None  # tqdm only when its bar shows: its import is ~5 % of a short run's life
        if _bar_wanted(total, progress):
            from tqdm import tqdm

            self.bar = tqdm(total=total, unit="sample", file=sys.stderr, leave=False)

    def update(self, k: int) -> None:
        self.done += k
        if self.bar is not None:
            self.bar.update(k)
        if self.file and time.monotonic() - self.said >= 0.5:
            self._event()

    def _event(self) -> None:
        self.said = time.monotonic()
        event = {"run": self.run, "done": self.done, "total": self.total}
        event["seconds"] = round(self.said - self.start, 3)
        try:
            with open(self.file, "a", encoding="utf-8") as fh:
                fh.write(json.dumps(event) + "\n")
        except OSError:  # progress is never worth a failed run
            self.file = None

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
        if self.file:
            self._event()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
