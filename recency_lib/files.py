"""Files the library writes: checked before any work (nothing there yet, or a file of ours:
:func:`check_output_path`), then replaced atomically (:func:`atomic_write`: a reader sees the old
file or the whole new one; an error or interrupt leaves no temporary)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path

from .validation import brief


def path_text(path) -> str:
    """A path for a message: whole up to 100 characters, else its start and its file name."""
    text = str(path)
    return repr(text) if len(text) <= 100 else repr(f"{text[:40]}.../{Path(text).name[-56:]}")


def check_output_path(
    path, name="out", ours: Callable | None = None, what="a file we wrote"
) -> Path:
    """``path`` as a Path if a file may be written there, else ValueError naming it: nothing there
    yet, or a file ``ours(path)`` recognises as ``what``, in a writable folder (or one to make)."""
    if not isinstance(path, (str, os.PathLike)) or not os.fspath(path) or "\0" in os.fspath(path):
        raise ValueError(f"{name}={brief(path)} is not a path; allowed: a path to a file")
    p = Path(path)
    allowed = f"allowed: a new file{f', or {what}' if ours else ''}, in a writable folder"
    if p.is_dir() or str(path).endswith(os.sep):
        raise ValueError(f"{name}={path_text(path)} is a folder; {allowed}")
    if p.exists() or p.is_symlink():
        if not p.is_file():
            raise ValueError(f"{name}={path_text(path)} is not a regular file; {allowed}")
        if ours is None or not ours(p):
            raise ValueError(f"{name}={path_text(path)} holds a file that is not {what}; {allowed}")
    folder = p.resolve().parent
    while not folder.exists():
        folder = folder.parent
    if not folder.is_dir() or not os.access(folder, os.W_OK | os.X_OK):
        raise ValueError(
            f"{name}={path_text(path)}: cannot write in {path_text(folder)}; {allowed}"
        )
    return p


def atomic_write(path, write: Callable, binary: bool = False) -> Path:
    """``write(file_object)`` into a temporary file beside ``path``, then ``os.replace`` it over
    ``path`` (a symlink is written through to its target). On any error or interrupt the temporary
    is removed and the old file is untouched. Returns the path written."""
    target = Path(path).resolve()
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(
            fd, "wb" if binary else "w", **({} if binary else {"encoding": "utf-8"})
        ) as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        if target.exists():
            os.chmod(tmp, target.stat().st_mode & 0o7777)
        else:
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, target)
    except BaseException as exc:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, OSError) and exc.filename is None:  # a full disk: name the file
            raise OSError(exc.errno, exc.strerror, str(target)) from exc
        raise
    return target
