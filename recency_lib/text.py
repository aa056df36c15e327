"""Values in messages: cut to a readable length, one line (the standard library only, so that the
command line can report an interrupt that came while numpy was still being imported)."""
from __future__ import annotations

import os
import reprlib

_SHORT = reprlib.Repr()
_SHORT.maxstring = _SHORT.maxother = 60
_SHORT.maxlong = 40
_SHORT.maxlist = _SHORT.maxtuple = _SHORT.maxdict = _SHORT.maxset = 6


def short(value) -> str:
    """``repr(value)`` cut to about 60 characters (a 400-digit integer, a 300-character path), so that
    an error message stays one readable line; the cut is marked with '...'."""
    try:
        return _SHORT.repr(value)
    except Exception:                                   # a hostile __repr__
        return f"<{type(value).__name__}>"


def one_line(message: str, limit: int = 400) -> str:
    """``message`` with control characters escaped and cut to ``limit`` characters (head ... tail)."""
    text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(message))
    return text if len(text) <= limit else f"{text[:limit * 2 // 3]} ... {text[-limit // 3:]}"


def short_path(path) -> str:
    """``repr`` of a path for a message, cut to about 100 characters but keeping its last component
    (the file the message is about): the folders are cut in the middle first."""
    try:
        text = os.fspath(path)
    except TypeError:
        return short(path)
    if not isinstance(text, str):
        return short(text)
    if len(text) <= 100:
        return repr(text)
    head, sep, name = text.rpartition("/")
    if len(name) > 80:
        name = f"{name[:40]}...{name[-37:]}"
    room = max(10, 100 - len(name) - 4)
    if len(head) > room:
        head = f"{head[:room // 2]}...{head[-(room - room // 2):]}"
    return repr(f"{head}{sep}{name}")
