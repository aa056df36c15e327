"""Process helpers of the fault tests, on Linux's /proc (importable from tests/lib and tests/book:
tests/conftest.py puts this folder on sys.path)."""

from __future__ import annotations

from pathlib import Path


def children(pid: int) -> list[int]:
    """The process ids of ``pid``'s children, started by any of its threads (none if it is gone)."""
    found = []
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            found += [int(c) for c in (task / "children").read_text().split()]
    except OSError:
        pass
    return found


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, exited but not yet reaped, does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"
