"""Files the library writes: checked before any work, replaced atomically, no temporaries left behind.

* :func:`check_output_path`: a path we may write, checked before a run starts: nothing there yet,
  or a regular file that this library wrote (what may be replaced is a :class:`Kind`, recognised by
  the file's own format: a result file is one, a notebook or a source file is not), in a folder
  that exists or can be made and is writable. A symlink is followed only to a file that may be
  replaced (a link to anything else, or to nothing, is refused), or, with
  ``follow_symlinks=False`` (the results cache's own entries), never followed: the link itself is
  what gets replaced.
* :func:`atomic_write`: write a temporary file next to the target, then ``os.replace`` it into
  place: readers see the old file or the whole new one. The existing file's permission bits are
  kept (a new file gets ``0o666 & ~umask``); the target is checked again just before the rename,
  so what is replaced is still something this write may replace (never a folder, a device, or a
  file of another kind that appeared meanwhile).
* Temporaries (``.NAME.PID.XXXXXXXX.recency-tmp`` files, ``.staging-*`` folders) hold an exclusive ``flock``
  while their writer lives. A writer that dies by a signal it cannot catch (SIGKILL) leaves its
  temporary behind, unlocked; the next write into the same folder removes every unlocked
  temporary (:func:`sweep`): it works across processes and PID namespaces, and never touches a
  temporary whose writer is alive. The name of a temporary is fixed *before* it is created, inside
  the ``try`` whose cleanup removes it, so an interrupt at any point leaves nothing behind.
* SIGTERM and SIGHUP raise exceptions while a run is in progress, so the cleanup above runs: :mod:`recency_lib.signals`.
"""
from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import secrets
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Callable

from .validation import short, short_path

_NAME_MAX = 255
_TMP_SUFFIX = ".recency-tmp"
_TAIL = re.compile(r"\.\d+\.[0-9a-f]{8}\.recency-tmp$")      # what sweep() may remove: our own names only
_STAGING_TAIL = re.compile(r"\d+-[0-9a-f]{8}$")


# -- output paths ---------------------------------------------------------------------------------

def _as_path(value, name: str) -> str:
    if isinstance(value, bytes) or not isinstance(value, (str, os.PathLike)):
        raise ValueError(f"{name}={short(value)} is not a path; allowed: a str or os.PathLike")
    try:
        text = os.fspath(value)
    except TypeError:
        text = None
    if not isinstance(text, str):
        raise ValueError(f"{name}={short(value)} is not a path; allowed: a str or os.PathLike")
    text = str.__str__(text)                         # a str subclass as a plain str: its methods are not asked
    if text == "":
        raise ValueError(f"{name}='' is empty; allowed: a path to a file")
    if "\0" in text:
        raise ValueError(f"{name}={short_path(text)} contains a NUL character; allowed: a path to a file")
    return text


@dataclass(frozen=True)
class Kind:
    """What a write may replace besides nothing: a regular file that ``recognise(fh, size)`` (a binary
    file object opened at its start, and its size in bytes) says is one of ``what`` (e.g. "a
    recency_lib result file"). It reads as little as it needs and never raises for a foreign file."""

    what: str
    recognise: Callable[[BinaryIO, int], bool]


#: Any regular file (the results cache replaces whatever holds one of its own entry names).
ANY_FILE = Kind("a regular file", lambda fh, size: True)


def _is_kind(real: Path, kind: Kind, follow: bool) -> bool:
    """Whether the regular file ``real`` is of ``kind`` (opened without blocking: never a FIFO)."""
    if kind is ANY_FILE:
        return True
    try:
        fd = os.open(real, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW))
    except OSError:
        return False
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return False
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb", closefd=False) as fh:
            return bool(kind.recognise(fh, st.st_size))
    except Exception:                     # a recogniser that fails: not recognised
        return False
    finally:
        os.close(fd)


def check_output_path(path, name: str = "out", *, replaces: Kind | None = None,
                      follow_symlinks: bool = True) -> Path:
    """The path a result may be written to (symlinks followed: their target; with
    ``follow_symlinks=False`` the link itself), else ValueError naming ``path`` and saying why.

    Allowed: nothing there yet, or a regular file of the kind ``replaces`` (None: nothing may be
    replaced), in a folder that exists or can be made and is writable. Refused: a folder or another
    non-regular file, a file of another kind (a notebook, a source file where a result is expected),
    a symlink to any of those or to nothing, a path under a regular file, a name too long, a folder
    that is not writable. Nothing is left behind (a probe file is created and removed in the folder
    that will hold the file)."""
    text = _as_path(path, name)
    if text.endswith(("/", os.sep)) or Path(text).name in ("", ".", ".."):
        raise ValueError(f"{name}={short_path(text)} names a folder; allowed: a path to a file")
    what = "nothing yet" if replaces is None else f"{replaces.what} or to nothing yet"
    allowed = f"allowed: a path to {what}, in a writable folder (this library replaces only files it wrote)"
    link = os.path.islink(text)
    if follow_symlinks or not link:
        real = Path(os.path.realpath(text))
    else:                                                # the link itself, in its real folder
        real = Path(os.path.realpath(os.path.dirname(text) or ".")) / os.path.basename(text)
    for part in real.parts:
        if len(os.fsencode(part)) > _NAME_MAX:
            raise ValueError(f"{name}={short_path(text)} has a name longer than {_NAME_MAX} bytes; {allowed}")
    try:
        st = os.stat(real) if follow_symlinks else os.lstat(real)
    except FileNotFoundError:
        st = None
    except OSError as exc:           # ENOTDIR (a regular file on the way), ELOOP, EACCES, ...
        raise ValueError(f"{name}={short_path(text)} cannot be used ({exc.strerror}); {allowed}") from None
    if st is None and link and follow_symlinks:
        raise ValueError(f"{name}={short_path(text)} is a symbolic link to nothing ({short_path(real)}); {allowed}")
    if st is not None and not (stat.S_ISLNK(st.st_mode) and not follow_symlinks):
        via = f" (a symbolic link to {short_path(real)})" if link and follow_symlinks else ""
        if stat.S_ISDIR(st.st_mode):
            raise ValueError(f"{name}={short_path(text)}{via} is a folder; {allowed}")
        if not stat.S_ISREG(st.st_mode):
            raise ValueError(f"{name}={short_path(text)}{via} is not a regular file (a device, pipe or socket); {allowed}")
        if replaces is None:
            raise ValueError(f"{name}={short_path(text)}{via} already exists; {allowed}")
        if not _is_kind(real, replaces, follow_symlinks):
            raise ValueError(f"{name}={short_path(text)}{via} holds a file that is not {replaces.what}; {allowed}")
        if not os.access(real, os.W_OK):
            raise ValueError(f"{name}={short_path(text)} is not writable; {allowed}")
    folder = real.parent
    while not folder.exists():                           # the first folder that exists must be writable
        folder = folder.parent
    if not folder.is_dir():
        raise ValueError(f"{name}={short_path(text)} is under {short_path(folder)}, which is not a folder; {allowed}")
    probe = _temp_name(folder, real.name if folder == real.parent else "probe")
    try:                                                 # the real test: create and remove a file there
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600))
    except OSError as exc:
        raise ValueError(f"{name}={short_path(text)}: cannot write in {short_path(folder)} ({exc.strerror}); {allowed}") from None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(probe)
    return real


# -- temporaries ----------------------------------------------------------------------------------

def _temp_name(folder: Path, name: str) -> Path:
    """``.NAME.PID.XXXXXXXX.recency-tmp`` in ``folder``, NAME cut so the whole stays within NAME_MAX."""
    tail = f".{os.getpid()}.{secrets.token_hex(4)}{_TMP_SUFFIX}"
    keep = os.fsdecode(os.fsencode(name)[: _NAME_MAX - 1 - len(tail)])
    return folder / f".{keep}{tail}"


def _locked(path: Path, flags: int) -> int | None:
    """An fd of ``path`` with an exclusive flock taken, or None if another process holds it."""
    try:
        fd = os.open(path, flags | os.O_CLOEXEC | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


def sweep(folder: Path, prefix: str, tail: re.Pattern = _TAIL) -> int:
    """Remove every entry of ``folder`` named ``prefix`` + something matching ``tail`` (names this
    module makes, nothing else) whose writer is gone (no flock held); returns how many. Entries
    in use by a live writer are left alone."""
    removed = 0
    try:
        entries = [e for e in os.scandir(folder) if e.name.startswith(prefix) and tail.search(e.name[len(prefix):])]
    except OSError:
        return 0
    for e in entries:
        is_dir = e.is_dir(follow_symlinks=False)
        fd = _locked(Path(e.path), os.O_RDONLY | (os.O_DIRECTORY if is_dir else 0))
        if fd is None:
            continue
        try:
            if is_dir:
                shutil.rmtree(e.path, ignore_errors=True)
            else:
                os.unlink(e.path)
            removed += 1
        except OSError:
            pass
        finally:
            os.close(fd)
    return removed


def _still_linked(fd: int, path: Path) -> bool:
    """True if ``path`` is still the file open as ``fd`` (a sweeper did not remove it)."""
    try:
        a, b = os.fstat(fd), os.lstat(path)
    except OSError:
        return False
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def _lock(fd: int) -> None:
    """Exclusive flock, or nothing where the file system has no locks (then nothing is swept)."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
    except OSError as exc:
        if exc.errno not in (errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS):
            raise


def atomic_write(path, write, binary: bool = False, *, replaces: Kind | None = None,
                 follow_symlinks: bool = True) -> Path:
    """Call ``write(file_object)`` on a temporary next to ``path`` then rename it over ``path``.

    Readers see the old file or the whole new one; on any failure or interrupt the temporary and
    any folder made for it are removed and an existing file is untouched. What may be replaced, and
    whether a symlink is followed, are :func:`check_output_path`'s ``replaces`` and
    ``follow_symlinks``, checked before ``write`` runs and again just before the rename (ValueError).
    Returns the path written (symlinks followed unless ``follow_symlinks=False``).
    """
    real = check_output_path(path, "path", replaces=replaces, follow_symlinks=follow_symlinks)
    try:
        st = os.lstat(real)
    except FileNotFoundError:
        st = None
    if st is not None and not stat.S_ISREG(st.st_mode):   # a link replaced as itself: a new file
        st = None
    made = []                                             # folders created here, outermost first
    folder = real.parent
    while not folder.exists():
        made.insert(0, folder)
        folder = folder.parent
    tmp = None
    fd = -1
    try:
        for f in made:
            os.mkdir(f)
        sweep(real.parent, ".")                                         # dead writers' leftovers
        mode = stat.S_IMODE(st.st_mode) if st is not None else 0o666   # new files: umask applies
        for _ in range(5):
            tmp = _temp_name(real.parent, real.name)      # the name is known before the file exists
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, mode)
            _lock(fd)
            if _still_linked(fd, tmp):                    # not swept between create and lock
                break
            os.close(fd)
            fd = -1
        else:
            raise OSError(errno.EAGAIN, f"could not create a temporary file in {real.parent}")
        fh = os.fdopen(fd, "wb" if binary else "w", encoding=None if binary else "utf-8")
        fd = -1                                                         # owned by fh now
        with fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
            if st is not None:
                os.fchmod(fh.fileno(), stat.S_IMODE(st.st_mode))
                with contextlib.suppress(OSError):
                    os.fchown(fh.fileno(), st.st_uid, st.st_gid)
            # still nothing, or a file this write may replace (a link that appeared meanwhile is
            # replaced as itself: os.replace never writes through the target's link)
            check_output_path(real, "path", replaces=replaces, follow_symlinks=False)
            os.replace(tmp, real)
        tmp = None
    except BaseException:
        if fd >= 0:
            os.close(fd)
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        for f in reversed(made):
            with contextlib.suppress(OSError):
                os.rmdir(f)
        raise
    return real


def atomic_write_text(path, text: str, *, replaces: Kind | None = None, follow_symlinks: bool = True) -> Path:
    """:func:`atomic_write` of a string (UTF-8)."""
    return atomic_write(path, lambda fh: fh.write(text), replaces=replaces, follow_symlinks=follow_symlinks)


@contextlib.contextmanager
def staging_dir(parent, prefix: str):
    """A private folder ``parent/PREFIX<pid>-XXXX`` (flock held) for the duration, then removed;
    unlocked leftovers of dead runs with the same prefix are removed first."""
    parent = Path(parent)
    sweep(parent, prefix, _STAGING_TAIL)
    path = None
    fd = -1
    try:
        # another run's sweep may remove the new folder between mkdir and flock (it is unlocked
        # then): as in atomic_write, check it is still there once locked, else make another
        for _ in range(5):
            path = parent / f"{prefix}{os.getpid()}-{secrets.token_hex(4)}"
            os.mkdir(path, 0o700)
            try:
                fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            except FileNotFoundError:
                continue
            _lock(fd)
            if _still_linked(fd, path):
                break
            os.close(fd)
            fd = -1
        else:
            raise OSError(errno.EAGAIN, f"could not create a staging folder in {parent}")
        yield path
    finally:
        if path is not None:
            shutil.rmtree(path, ignore_errors=True)
        if fd >= 0:
            os.close(fd)
