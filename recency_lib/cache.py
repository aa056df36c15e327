"""On-disk results cache: simulate once per build, reuse everywhere, never stale, never wrong.

The key is a hash of the config, z, the kernel path and the *source code a simulation depends on*:
the modules of the package that :mod:`recency_lib.engines` imports, directly or through other
modules of the package (:func:`module_closure`, read from the import statements with
:mod:`tokenize`, so no module list is written down anywhere), each file under its path relative to
the package (moving the checkout changes no key). Editing the kernel invalidates every entry;
editing the book's figures, tables or prose (its own package, ``companion``) keeps them. Entries are ``<key>.npz`` files (:meth:`SimResult.save`: lossless,
compressed), written atomically, so two processes racing on the same key both end with a whole file.

An entry is served only if it loads completely and validly *and* everything that shaped it
matches, read from the file's own metadata, never from its name: the config (:meth:`SimResult.load`
with ``config``), z, the engine and block size, the library version, the kernel that ran it and the
source hash of the simulation's code (stored in ``extra["source_hash"]`` when the cache saves an
entry). Anything else (unreadable, truncated, corrupt, wrong shapes, all-NaN arrays, another config
or z or kernel or version, an entry moved under another name, a symlink...) is a *bad entry*:
counted (:data:`counts`, :data:`bad_entries`) and recomputed. The cache never opens, writes or
replaces anything through a symlink in its folder (a link where an entry should be is replaced as
itself; its target is never touched), and a lock path that is not a regular file is an error naming
it. The folder is checked before any work: it must be a folder (or creatable) and writable.
Location: ``cache=``, else ``$RECENCY_LIB_CACHE``, else ``~/.cache/recency_lib``.

Values that are not SimResults (e.g. the book's sympy checks, the cosine draws of Eq. (6)) are
cached the same way by :func:`cached_value`, as JSON: keyed by their arguments, the source of the
modules that compute them (with their imports, in this package or another one such as the book's
``companion``) and the versions of the distributions they name.
"""
from __future__ import annotations

import errno
import io
import fcntl
import hashlib
import importlib.util
import json
import os
import stat
import sys
import time
import tokenize
from collections import Counter, deque
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path

from . import engines
from .config import SimConfig
from .files import ANY_FILE, atomic_write_text, check_output_path
from .result import SimResult
from .validation import check_bool, check_z, one_line, short, short_path
from .version import __version__

#: What the cache did in this process: "served" entries, "computed" ones, "bad" ones found (and
#: recomputed); :data:`bad_entries` keeps the last few bad entries' paths and reasons.
counts: Counter = Counter()
bad_entries: deque = deque(maxlen=64)
#: Seconds a process waits for another one's lock before it says what it waits for (on stderr).
WAIT_NOTICE_SECONDS = 3.0

PACKAGE = __name__.rpartition(".")[0]          # "recency_lib"
ROOT = Path(__file__).resolve().parent


def package_root(top: str) -> Path | None:
    """The folder of the top-level package ``top`` (``recency_lib``: this one; another, e.g. the
    book's ``companion``, found by :func:`importlib.util.find_spec` without importing it), or None."""
    return ROOT if top == PACKAGE else _found_root(top)


@lru_cache(maxsize=None)
def _found_root(top: str) -> Path | None:
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return None
    locations = list(spec.submodule_search_locations or []) if spec else []
    return Path(locations[0]).resolve() if locations else None


def qualified(module: str) -> str:
    """The full name of ``module``: a name without a dot that is a module of this package
    (``"engines"``) or ``""`` (the package itself) is this package's; any other name is taken as
    it is (``"recency_lib.engines"``, ``"companion.plotting"``)."""
    if not module:
        return PACKAGE
    if "." not in module and module != PACKAGE and _module_file(f"{PACKAGE}.{module}") is not None:
        return f"{PACKAGE}.{module}"
    return module


def _module_file(module: str) -> Path | None:
    """The source file of the fully named ``module`` (``"recency_lib.engines"``, ``"companion"``), or
    None. For a compiled extension (``recency_lib._kernel``) its C source, ``_kernel.c``: what it
    computes is in there."""
    top, _, rest = module.partition(".")
    root = package_root(top) if top else None
    if root is None:
        return None
    base = root.joinpath(*rest.split(".")) if rest else root
    for path in (base.with_suffix(".py"), base / "__init__.py", base.with_suffix(".c")):
        if path.is_file():
            return path
    return None


def module_file(module: str) -> Path | None:
    """The source file of ``module`` (a name as :func:`qualified` reads it), or None."""
    return _module_file(qualified(module))


def _statements(code: str):
    """The import statements of Python source ``code`` as lists of tokens (names and '.', ',', '(',
    ')', '*'), found with :mod:`tokenize` (strings and comments skipped; imports inside functions
    included). Not :func:`ast.parse`: CPython 3.11's AST conversion is not thread-safe (it fails
    with "AST constructor recursion depth mismatch" when another thread, e.g. papermill's, uses
    ``ast`` at the same time), and the grid computes keys in threads."""
    stmt = None
    for tok in tokenize.generate_tokens(io.StringIO(code).readline):
        if tok.type in (tokenize.NEWLINE, tokenize.ENDMARKER) or (tok.type == tokenize.OP and tok.string == ";"):
            if stmt:
                yield stmt
            stmt = None
        elif tok.type == tokenize.NAME and tok.string in ("import", "from") and stmt is None and _at_start(tok):
            stmt = [tok.string]
        elif stmt is not None and tok.type in (tokenize.NAME, tokenize.OP):
            stmt.append(tok.string)


def _at_start(tok) -> bool:
    """True when ``tok`` is the first token of its logical line (so `from` in `yield from` is not)."""
    return tok.line[: tok.start[1]].strip() in ("", ";") or tok.line[: tok.start[1]].rstrip().endswith(":")


def _imported(code: str, package: str, tracked: frozenset[str]) -> set[str]:
    """Fully named modules of the ``tracked`` top-level packages imported anywhere in ``code``
    (also inside functions): relative imports (``from .kernels import x``, ``from . import
    sampling``) resolved against ``package`` (the full name of the code's package, "" for code
    outside any), and absolute ones (``import recency_lib.kernels``, ``from companion import
    plotting``)."""
    found = set()
    for stmt in _statements(code):
        if stmt[0] == "from" and "import" in stmt:
            k = stmt.index("import")
            src = stmt[1:k]
            names = [t for t in stmt[k + 1:] if t not in ",()*"]
            names = [t for i, t in enumerate(names) if t != "as" and (i == 0 or names[i - 1] != "as")]
            dots = [t for t in src if set(t) == {"."}]                  # "." or "..." tokens
            level = sum(map(len, dots)) if src[:1] == dots[:1] and dots else 0
            module = ".".join(t for t in src if set(t) != {"."})
            if level:
                if not package:
                    continue
                parts = package.split(".")
                parts = parts[: len(parts) - (level - 1)]
                base = ".".join([*parts, *([module] if module else [])])
            else:
                base = module
            if base.partition(".")[0] not in tracked:
                continue
            subs = [f"{base}.{name}" for name in names]
            found.update(m for m in subs if _module_file(m) is not None)    # `from . import kernels`
            if not names or any(_module_file(m) is None for m in subs):    # `from .config import SimConfig`
                found.add(base)
        elif stmt[0] == "import":
            for name in _dotted_names(stmt[1:]):
                if name.partition(".")[0] in tracked:
                    found.add(name)
    return {m for m in found if _module_file(m) is not None}


def _dotted_names(tokens: list[str]) -> list[str]:
    """``a . b as c , d`` -> ["a.b", "d"]: the modules of an ``import`` statement's tokens."""
    out, cur, alias = [], [], False
    for t in tokens + [","]:
        if t == ",":
            out.append("".join(cur))
            cur, alias = [], False
        elif t == "as":
            alias = True
        elif not alias:
            cur.append(t)
    return out


def _imports(module: str, tracked: frozenset[str]) -> set[str]:
    """Fully named modules of the ``tracked`` packages that ``module`` imports (memoized while the
    file is unchanged; none for a C extension)."""
    path = _module_file(module)
    if path.suffix == ".c":
        return set()
    st = path.stat()
    return _imports_of(module, str(path), st.st_mtime_ns, st.st_size, tracked)


@lru_cache(maxsize=1024)
def _imports_of(module: str, path: str, mtime_ns: int, size: int, tracked: frozenset[str]) -> frozenset[str]:
    package = module if path.endswith("__init__.py") else module.rpartition(".")[0]
    return frozenset(_imported(Path(path).read_text(encoding="utf-8"), package, tracked))


def _tracked(roots, packages=()) -> frozenset[str]:
    """The top-level packages a closure follows: those of ``roots``, ``packages`` and this one."""
    return frozenset({PACKAGE, *packages, *(r.partition(".")[0] for r in roots)})


def source_modules(code: str | None, packages: tuple[str, ...] = (PACKAGE,)) -> tuple[str, ...]:
    """Fully named modules of the top-level ``packages`` that Python source ``code`` (e.g. a
    notebook's cells) imports, with everything they import (:func:`module_closure`); for None,
    every module of those packages. SyntaxError if ``code`` does not parse."""
    tracked = _tracked((), packages)
    if code is None:
        out = []
        for top in sorted(tracked):
            root = package_root(top)
            for p in sorted(root.rglob("*.py")) + sorted(root.rglob("*.c")) if root else []:
                name = ".".join((top, *p.relative_to(root).with_suffix("").parts)).removesuffix(".__init__")
                out.append(name)
        return tuple(sorted(out))
    compile(code, "<notebook>", "exec", dont_inherit=True)    # SyntaxError if it does not parse
    return module_closure(*_imported(code, "", tracked), packages=tuple(tracked))


def module_closure(*roots: str, packages: tuple[str, ...] = ()) -> tuple[str, ...]:
    """``roots`` and every module they import, transitively, within the top-level packages of the
    roots, ``packages`` and this one (sorted full names; a root as :func:`qualified` reads it). A
    module's packages count too (``companion.pages.beyond`` brings ``companion.pages`` and
    ``companion``): importing it runs their ``__init__.py`` first."""
    roots = tuple(qualified(r) for r in roots)
    tracked = _tracked(roots, packages)
    seen, todo = set(), list(roots)
    while todo:
        m = todo.pop()
        if m in seen or _module_file(m) is None:
            continue
        seen.add(m)
        parents = [m.rsplit(".", k)[0] for k in range(1, m.count(".") + 1)]   # a.b.c -> a.b, a
        todo.extend({*_imports(m, tracked), *parents} - seen)
    return tuple(sorted(seen))


def module_path_name(module: str) -> str:
    """The file of the fully named ``module`` relative to the folder that holds its top-level package
    (``recency_lib/engines.py``, ``companion/plotting.py``): the name a hash uses, the same wherever
    the checkout lives."""
    path = _module_file(module)
    return path.relative_to(package_root(module.partition(".")[0]).parent).as_posix()


@lru_cache(maxsize=None)
def source_hash(*roots: str) -> str:
    """sha256 over the source files of :func:`module_closure` of ``roots`` (default: what a
    simulation runs, ``engines``), each under its path relative to its package's folder; changes
    with any edit of one of them, and only then (not when the checkout moves)."""
    h = hashlib.sha256()
    for m in module_closure(*(roots or ("engines",))):
        h.update(module_path_name(m).encode() + b"\0")
        h.update(_module_file(m).read_bytes())
    return h.hexdigest()


def cache_dir(path=None) -> Path:
    if path is not None:
        return Path(path)
    env = os.environ.get("RECENCY_LIB_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "recency_lib"


def cache_key(cfg: SimConfig, z: float = 3.0) -> str:
    """Hash of the config, z, the simulation's source (:func:`source_hash`) and the kernel path
    ("c" or "numpy": the two agree only to float rounding, so a result of one is never served
    for the other). The config and z are validated and canonical first (``z=3`` and ``z=3.0`` are
    one key). The key names the file; what decides whether an entry is served is its metadata
    (:func:`entry_mismatch`)."""
    cfg, z = SimConfig.checked(cfg), check_z(z)
    payload = json.dumps({"config": cfg.to_dict(), "z": z, "source": source_hash(),
                          "kernel": engines.kernel_name()}, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()[:32]


def entry_stamp(cfg: SimConfig, z: float) -> dict:
    """The metadata this build writes into the entry of ``cfg`` at ``z``, beside the config and the
    arrays: engine, block size, library version, z and ``extra`` (the Gram engine's kernel and the
    source hash of the simulation's code)."""
    engine = engines.resolve_engine(cfg)
    extra = {"kernel": engines.kernel_name()} if engine == "gram" else {}
    return {"engine": engine, "block_size": engines.block_size(cfg, engine), "library_version": __version__,
            "z": float(z), "extra": {**extra, "source_hash": source_hash()}}


def entry_mismatch(meta: dict, cfg: SimConfig, z: float) -> str | None:
    """Why an entry whose metadata is ``meta`` (config already matched) may not be served for
    ``cfg`` at ``z`` by this build (the first field that differs from :func:`entry_stamp`, with
    both values), or None when everything matches."""
    for name, want in entry_stamp(cfg, z).items():
        got = meta.get(name)
        if name == "extra":
            got = dict(got) if isinstance(got, dict) else got
        if got != want or type(got) is not type(want):
            return f"{name}={short(got)} where this build writes {short(want)}"
    return None


def _bad(path: Path, why: str) -> None:
    counts["bad"] += 1
    bad_entries.append((str(path), one_line(why, 300)))


def entry_meta(path) -> dict | None:
    """The metadata of a cache entry (config, z, engine, elapsed_seconds, library_version, ...), read
    without its arrays (and never through a symlink); None when the file is not a readable entry."""
    import numpy as np

    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return None
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
        with os.fdopen(fd, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                return None
            with np.load(fh, allow_pickle=False) as data:
                meta = json.loads(str(data["meta"][()]))
        return meta if isinstance(meta, dict) and isinstance(meta.get("config"), dict) else None
    except Exception:          # unreadable, damaged, not an entry: nothing this build can use
        return None


def usable_entries(cache=None) -> tuple[list[dict], int]:
    """The entries of the cache folder that this build would serve, and how many other files it holds.

    An entry is usable when it is a regular file (not a link) named by the key that its config and
    z give with the current source and kernel (:func:`cache_key`) *and* its metadata is what this
    build writes (:func:`entry_mismatch`: library version, kernel, source hash...), so entries
    written by other library versions or by the other kernel, or moved under another name, stay in
    the folder but are never used; they are counted, not listed. Returns (metadata of every usable
    entry with its "config" as a SimConfig, in file-name order; the number of other files)."""
    folder = cache_dir(cache)
    usable, other = [], 0
    for path in sorted(folder.glob("*.npz")) if folder.is_dir() else []:
        meta = entry_meta(path)
        try:
            cfg = SimConfig.from_dict(meta["config"]) if meta else None
            z = meta.get("z", 3.0) if meta else None
            ok = (cfg is not None and cache_key(cfg, z) == path.stem
                  and entry_mismatch(meta, cfg, check_z(z)) is None)
        except (ValueError, TypeError):
            ok = False
        if ok:
            usable.append({**meta, "config": cfg})
        else:
            other += 1
    return usable, other


def _check_entry(folder: Path, path: Path) -> None:
    """Before any work: the cache folder ``folder`` can store the entry ``path`` (a regular file or a
    link there is replaced as itself; a folder or a device is an error)."""
    try:
        check_output_path(path, "cache entry", replaces=ANY_FILE, follow_symlinks=False)
    except ValueError as exc:
        raise ValueError(f"cache={short_path(folder)} cannot be used: {exc} (set cache= or RECENCY_LIB_CACHE "
                         f"to another folder)") from None


def _entry(cfg, z: float, cache) -> tuple[SimConfig, Path]:
    """The config (validated again) and its entry's path, after checking (before any work) that the
    cache can store it."""
    cfg = SimConfig.checked(cfg)
    folder = cache_dir(cache)
    path = folder / f"{cache_key(cfg, z)}.npz"
    _check_entry(folder, path)
    return cfg, path


def _load(path: Path, cfg: SimConfig, z: float, seen: set | None = None) -> SimResult | None:
    """The entry if it is a whole, valid result for ``cfg`` at ``z`` whose metadata matches this
    build (:func:`entry_mismatch`); None when there is none, and for anything else (a bad entry:
    counted once per call that finds it (``seen``: the paths already counted), recomputed). Never
    opens a symlink."""
    def bad(why):
        if seen is None or path not in seen:
            _bad(path, why)
        if seen is not None:
            seen.add(path)

    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        bad(f"cannot be read ({exc.strerror})")
        return None
    if not stat.S_ISREG(st.st_mode):
        bad("a symbolic link (never followed)" if stat.S_ISLNK(st.st_mode) else "not a regular file")
        return None
    try:
        res = SimResult.load(path, config=cfg, follow_symlinks=False)
    except ValueError as exc:  # unreadable, corrupt, inconsistent, another config
        bad(str(exc))
        return None
    why = entry_mismatch({"engine": res.engine, "block_size": res.block_size, "library_version": res.library_version,
                          "z": res.z, "extra": res.extra}, cfg, z)
    if why is not None:
        bad(why)
        return None
    counts["served"] += 1
    return res


def _store(res: SimResult, path: Path) -> SimResult:
    """Save ``res`` as the entry ``path``, its metadata stamped with the source hash (what
    :func:`entry_mismatch` checks on load); a regular file or a link there is replaced as itself."""
    res.extra = {**res.extra, "source_hash": source_hash()}
    res._write(path, ANY_FILE, follow_symlinks=False)
    counts["computed"] += 1
    return res


def _open_lock(lock: Path) -> int:
    """An fd of the lock file ``lock`` (created if missing), never through a symlink; ValueError
    naming it when it is anything but a regular file."""
    allowed = "allowed: a regular file or nothing (remove it, or set cache= / RECENCY_LIB_CACHE to another folder)"
    try:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        kind = ("a symbolic link" if os.path.islink(lock) else "a folder" if exc.errno == errno.EISDIR
                else f"not usable ({exc.strerror})")
        raise ValueError(f"the cache lock {short_path(lock)} is {kind}; {allowed}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise ValueError(f"the cache lock {short_path(lock)} is not a regular file (a pipe or device); {allowed}")
    os.set_blocking(fd, True)
    return fd


def _sign(fd: int) -> None:
    """Write this process's pid into the lock it holds (for a waiter's message), but only into a lock
    file of its own: one that has no other hard link and holds nothing but a pid (a file planted
    there, or linked to another one, is left as it is)."""
    try:
        st = os.fstat(fd)
        if st.st_nlink != 1 or st.st_size > 32 or (st.st_size and not os.pread(fd, 32, 0).strip().isdigit()):
            return
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
    except OSError:
        pass


def _take(fd: int, lock: Path, what: str) -> None:
    """Exclusive flock on ``fd``; if another process holds it for more than
    :data:`WAIT_NOTICE_SECONDS`, one line on stderr says what this one waits for, then it waits on."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return
    except BlockingIOError:
        pass
    start = time.monotonic()
    while time.monotonic() - start < WAIT_NOTICE_SECONDS:
        time.sleep(min(0.1, WAIT_NOTICE_SECONDS / 10))
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            continue
    try:
        holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        holder = ""
    by = f"process {holder}" if holder.isdigit() else "another process"
    print(f"recency_lib.cache: waiting for {by} to finish {one_line(what, 300)} (lock {short_path(lock)})",
          file=sys.stderr, flush=True)
    fcntl.flock(fd, fcntl.LOCK_EX)


@contextmanager
def _computing(paths, what=None):
    """Exclusive locks (``<entry>.lock``, ``flock``) on the entries about to be computed, taken in
    sorted order (two processes never wait on each other in a cycle) and released on exit: a second
    process that needs the same entry (two chapters built in parallel) waits, then loads it instead
    of computing it again (saying what it waits for after :data:`WAIT_NOTICE_SECONDS`). The lock
    files are reused and hold the holder's pid; a killed holder releases its lock. ``what``: path ->
    a description of the entry (for that message)."""
    fds = []
    what = what or {}
    try:
        for p in sorted(set(paths)):
            p.parent.mkdir(parents=True, exist_ok=True)
            lock = p.with_name(p.name + ".lock")
            fd = _open_lock(lock)
            fds.append(fd)
            _take(fd, lock, what.get(p, f"the cache entry {p.name}"))
            _sign(fd)
        yield
    finally:
        for fd in fds:
            os.close(fd)                               # closing releases the flock


def _described(cfg: SimConfig, path: Path) -> str:
    """The entry's setting in one line, for a waiter's message."""
    default = SimConfig().to_dict()
    shown = ", ".join(f"{k}={v!r}" for k, v in cfg.to_dict().items()
                      if k in ("alpha", "gamma", "norm", "n", "d", "layers", "samples", "seed") or v != default[k])
    return f"the simulation of SimConfig({shown}) (entry {path.name})"


def cached_simulate(cfg: SimConfig, *, cache: str | os.PathLike | None = None, z: float = 3.0,
                    executor=None, refresh: bool = False) -> SimResult:
    """``simulate(cfg)`` through the on-disk cache; ``refresh=True`` recomputes and overwrites."""
    z, refresh = check_z(z), check_bool("refresh", refresh)
    if refresh:
        cfg, path = _entry(cfg, z, cache)
        with _computing([path], {path: _described(cfg, path)}):
            return _store(engines.simulate(cfg, executor=executor, z=z), path)
    return cached_simulate_many([cfg], cache=cache, z=z, executor=executor)[0]


def cached_simulate_many(configs, *, cache=None, z: float = 3.0, executor=None) -> list[SimResult]:
    """Like :func:`cached_simulate` for many configs; the missing ones run together. An entry that
    another process is computing right now is waited for, not computed twice (:func:`_computing`)."""
    z = check_z(z)
    if isinstance(configs, (SimConfig, str, bytes)) or not hasattr(configs, "__iter__"):
        raise ValueError(f"configs={short(configs)} is not allowed; allowed: an iterable of SimConfig objects")
    pairs = [_entry(c, z, cache) for c in configs]
    configs, paths = [c for c, _ in pairs], [p for _, p in pairs]
    seen: set = set()                              # bad entries found (counted once)
    out = [_load(p, c, z, seen) for p, c in zip(paths, configs)]
    missing = [k for k, r in enumerate(out) if r is None]
    if missing:
        with _computing([paths[k] for k in missing], {paths[k]: _described(configs[k], paths[k]) for k in missing}):
            for k in missing:                          # computed by another process meanwhile?
                out[k] = _load(paths[k], configs[k], z, seen)
            missing = [k for k in missing if out[k] is None]
            if missing:
                results = engines.simulate_many([configs[k] for k in missing], executor=executor, z=z)
                for k, res in zip(missing, results):
                    out[k] = _store(res, paths[k])
    return out


def value_key(name: str, roots: tuple[str, ...], packages: tuple[str, ...] = (), params=None) -> dict:
    """What a source-only value depends on: its ``name``, its arguments ``params`` (a JSON dict),
    the source of the package's modules ``roots`` and everything they import (:func:`source_hash`),
    the installed versions of the distributions ``packages`` and the Python version."""
    from importlib.metadata import version
    import sys

    return {"name": name, "params": params or {}, "source": source_hash(*roots),
            "python": list(sys.version_info[:2]), "packages": {p: version(p) for p in packages}}


def cached_value(name: str, compute, roots, *, params=None, packages=(), cache=None, refresh: bool = False):
    """``compute()`` through the on-disk cache, for a value that depends on source code and the
    arguments ``params`` alone (a dict of JSON values, e.g. a seed and a sample count): the modules
    ``roots`` (names as :func:`qualified` reads them, with what they import) and the distributions ``packages``
    (:func:`value_key`). ``compute`` takes no argument and returns a JSON-serializable value; the
    entry ``<name>-<hash>.json`` holds it beside its key. Any edit of one of those modules, another
    package version or another Python changes the key, so a stored value is never stale; an entry
    that does not load or holds another key counts as missing and is recomputed (under the entry's
    lock, so parallel pages compute it once). Returns ``(value, hit)``, ``hit`` True when the value
    came from the file."""
    if not isinstance(name, str) or not str.__str__(name).replace("-", "").isalnum():
        raise ValueError(f"name={short(name)} is not allowed; allowed: letters, digits and '-'")
    name = str.__str__(name)
    if not callable(compute):
        raise ValueError(f"compute={short(compute)} is not allowed; allowed: a function of no arguments")
    try:
        roots = (roots,) if isinstance(roots, str) else tuple(roots)
    except TypeError:
        raise ValueError(f"roots={short(roots)} is not allowed; allowed: a module name or names") from None
    roots = tuple(str.__str__(m) if isinstance(m, str) else m for m in roots)
    unknown = [m for m in roots if not isinstance(m, str) or module_file(m) is None]
    if not roots or unknown:
        raise ValueError(f"roots={short(roots)} is not allowed; allowed: names of Python modules "
                         f"(\"engines\" for {PACKAGE}.engines, or a full name such as \"companion.symbolic\")")
    try:
        packages = (packages,) if isinstance(packages, str) else tuple(packages)
    except TypeError:
        packages = None
    if packages is None or not all(isinstance(p, str) for p in packages):
        raise ValueError(f"packages={short(packages)} is not allowed; allowed: names of installed distributions")
    packages = tuple(str.__str__(p) for p in packages)
    refresh = check_bool("refresh", refresh)
    given = params
    try:
        params = json.loads(json.dumps(params or {}, sort_keys=True, allow_nan=False))
    except (TypeError, ValueError, RecursionError):
        params = None
    if not isinstance(params, dict):
        raise ValueError(f"params={short(given)} is not allowed; allowed: a dict of JSON values (finite numbers)")
    key = value_key(name, roots, tuple(packages), params)
    folder = cache_dir(cache)
    path = folder / f"{name}-{hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:32]}.json"
    _check_entry(folder, path)
    with _computing([path], {path: f"the value {name!r} (entry {path.name})"}):
        if not refresh:
            stored = _load_value(path, key)
            if stored is not None:
                counts["served"] += 1
                return stored[0], True
        value = compute()
        atomic_write_text(path, json.dumps({"key": key, "value": value}, sort_keys=True),
                          replaces=ANY_FILE, follow_symlinks=False)
        counts["computed"] += 1
    return value, False


def _load_value(path: Path, key: dict):
    """``(value,)`` of a whole entry stored under ``key``; None for anything else (a bad entry,
    counted, unless there is none). Never opens a symlink."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        _bad(path, f"cannot be read ({exc.strerror})")
        return None
    try:
        if not stat.S_ISREG(st.st_mode):
            raise ValueError("a symbolic link (never followed)" if stat.S_ISLNK(st.st_mode) else "not a regular file")
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
        with os.fdopen(fd, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                raise ValueError("not a regular file")
            entry = json.loads(fh.read().decode("utf-8"))
        if entry["key"] != key:
            raise ValueError("stored under another key")
        return (entry["value"],)
    except Exception as exc:   # unreadable, truncated, not JSON, another layout or key: recompute
        _bad(path, f"{type(exc).__name__}: {exc}")
        return None


def cached_statistic(cfg: SimConfig, statistic, *, samples: int | None = None, control_mean=None,
                     engine: str | None = None, cache=None):
    """:func:`recency_lib.engines.sequence_statistic` through the on-disk cache: computed once per build,
    read back by every page that asks again. The key is the config, ``samples``, ``control_mean``,
    ``engine``, the kernel path and the statistic itself: its module and name (and keyword arguments, for
    a ``functools.partial``), with the source of its module and of what a simulation runs
    (:func:`cached_value`); so ``statistic`` must be a module-level function of an importable module (or
    a partial of one with JSON keyword arguments), whose module imports no more than the statistic needs:
    an edit of it, or of the simulator, recomputes the value, nothing else does."""
    import functools

    import numpy as np

    cfg = SimConfig.checked(cfg)
    func, kwargs = (statistic.func, dict(statistic.keywords)) if isinstance(statistic, functools.partial) \
        and not statistic.args else (statistic, {})
    module, name = getattr(func, "__module__", None), getattr(func, "__qualname__", "")
    if not callable(func) or not isinstance(module, str) or "<" in name or module_file(module) is None:
        raise ValueError(f"statistic={short(statistic)} is not allowed; allowed: a module-level function of an "
                         f"importable module, or a functools.partial of one with keyword arguments")
    mean = None if control_mean is None else np.asarray(control_mean, dtype=float).tolist()
    params = {"config": cfg.to_dict(), "samples": cfg.samples if samples is None else samples, "control_mean": mean,
              "engine": engine, "statistic": f"{module}.{name}", "kwargs": kwargs, "kernel": engines.kernel_name()}

    def compute():
        st = engines.sequence_statistic(cfg, statistic, samples=samples, control_mean=control_mean, engine=engine)
        return {"samples": st.samples, "elapsed_seconds": st.elapsed_seconds,
                **{k: (None if getattr(st, k) is None else getattr(st, k).tolist())
                   for k in ("mean", "sem", "cv_mean", "cv_sem")}}

    value, _ = cached_value("statistic", compute, (module, "engines"), params=params, packages=("numpy",), cache=cache)
    arrays = {k: None if value[k] is None else np.asarray(value[k], dtype=float) for k in ("mean", "sem", "cv_mean", "cv_sem")}
    return engines.SequenceStatistic(cfg, int(value["samples"]), elapsed_seconds=float(value["elapsed_seconds"]),
                                     **arrays)
