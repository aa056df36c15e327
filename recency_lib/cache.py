"""On-disk results cache: simulate once per build, reuse everywhere, never stale, never wrong.

The key is a hash of the config, z, the kernel path and the *source code a simulation depends on*:
the modules of the package that :mod:`recency_lib.engines` imports, directly or through other
modules of the package (:func:`module_closure`, read from the import statements with
:mod:`tokenize`, so no module list is written down anywhere), each file under its path relative to
the package (moving the checkout changes no key). Editing the kernel invalidates every entry;
editing the book's figures, tables or prose (its own package, ``companion``) keeps them. Entries are ``<key>.npz`` files (:meth:`SimResult.save`: lossless,
compressed), written atomically, so two processes racing on the same key both end with a whole file.

An entry is used only if it loads completely and validly *and* holds the result of exactly the
config asked for (:meth:`SimResult.load` with ``config``); anything else (unreadable, truncated,
corrupt, wrong shapes, all-NaN arrays, another config, even a folder in its place... ) counts as
missing and is recomputed. The folder is checked before any work: it must be a folder (or
creatable) and writable. Location: ``cache=``, else ``$RECENCY_LIB_CACHE``, else
``~/.cache/recency_lib``.

Values that are not SimResults (e.g. the book's sympy checks, the cosine draws of Eq. (6)) are
cached the same way by :func:`cached_value`, as JSON: keyed by their arguments, the source of the
modules that compute them (with their imports, in this package or another one such as the book's
``companion``) and the versions of the distributions they name.
"""
from __future__ import annotations

import io
import fcntl
import hashlib
import importlib.util
import json
import os
import stat
import tokenize
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path

from . import engines
from .config import SimConfig
from .files import ANY_FILE, atomic_write_text, check_output_path

from .result import SimResult
from .validation import check_bool, check_z, short

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
    roots, ``packages`` and this one (sorted full names; a root as :func:`qualified` reads it)."""
    roots = tuple(qualified(r) for r in roots)
    tracked = _tracked(roots, packages)
    seen, todo = set(), list(roots)
    while todo:
        m = todo.pop()
        if m in seen or _module_file(m) is None:
            continue
        seen.add(m)
        todo.extend(_imports(m, tracked) - seen)
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
    for the other)."""
    payload = json.dumps({"config": cfg.to_dict(), "z": z, "source": source_hash(),
                          "kernel": engines.kernel_name()}, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()[:32]


def entry_meta(path) -> dict | None:
    """The metadata of a cache entry (config, z, engine, elapsed_seconds, library_version, ...), read
    without its arrays; None when the file is not a readable entry."""
    import numpy as np

    try:
        with np.load(path, allow_pickle=False) as data:
            meta = json.loads(str(data["meta"][()]))
        return meta if isinstance(meta, dict) and isinstance(meta.get("config"), dict) else None
    except Exception:          # unreadable, damaged, not an entry: nothing this build can use
        return None


def usable_entries(cache=None) -> tuple[list[dict], int]:
    """The entries of the cache folder that this build would serve, and how many other files it holds.

    An entry is served only under the key that its config and z give with the current source and
    kernel (:func:`cache_key`), so entries written by other library versions or by the other kernel
    stay in the folder but are never used; they are counted, not listed. Returns (metadata of every
    usable entry with its "config" as a SimConfig, in file-name order; the number of other files)."""
    folder = cache_dir(cache)
    usable, other = [], 0
    for path in sorted(folder.glob("*.npz")) if folder.is_dir() else []:
        meta = entry_meta(path)
        try:
            cfg = SimConfig.from_dict(meta["config"]) if meta else None
            ok = cfg is not None and cache_key(cfg, float(meta.get("z", 3.0))) == path.stem
        except (ValueError, TypeError):
            ok = False
        if ok:
            usable.append({**meta, "config": cfg})
        else:
            other += 1
    return usable, other


def _check_entry(folder: Path, path: Path) -> None:
    """Before any work: the cache folder ``folder`` can store the entry ``path``."""
    try:
        check_output_path(path, "cache entry", replaces=ANY_FILE)
    except ValueError as exc:
        raise ValueError(f"cache={short(str(folder))} cannot be used: {exc} (set cache= or RECENCY_LIB_CACHE "
                         f"to another folder)") from None


def _entry(cfg, z: float, cache) -> Path:
    """The entry's path, after checking (before any work) that the cache can store it."""
    if not isinstance(cfg, SimConfig):
        raise ValueError(f"cfg={short(cfg)} is not a SimConfig; allowed: a recency_lib.SimConfig")
    folder = cache_dir(cache)
    path = folder / f"{cache_key(cfg, z)}.npz"
    _check_entry(folder, path)
    return path


def _load(path: Path, cfg: SimConfig) -> SimResult | None:
    """The entry if it is whole, valid and for ``cfg``; None for anything else (recompute it)."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None
        return SimResult.load(path, config=cfg)
    except Exception:          # unreadable, corrupt, inconsistent, another config: all "missing"
        return None


@contextmanager
def _computing(paths):
    """Exclusive locks (``<entry>.lock``, ``flock``) on the entries about to be computed, taken in
    sorted order (two processes never wait on each other in a cycle) and released on exit: a second
    process that needs the same entry (two chapters built in parallel) waits, then loads it instead
    of computing it again. The lock files are empty and reused; a killed holder releases its lock."""
    fds = []
    try:
        for p in sorted(set(paths)):
            p.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(p.with_name(p.name + ".lock"), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            fds.append(fd)
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        for fd in fds:
            os.close(fd)                               # closing releases the flock


def cached_simulate(cfg: SimConfig, *, cache: str | os.PathLike | None = None, z: float = 3.0,
                    executor=None, refresh: bool = False) -> SimResult:
    """``simulate(cfg)`` through the on-disk cache; ``refresh=True`` recomputes and overwrites."""
    z, refresh = check_z(z), check_bool("refresh", refresh)
    if refresh:
        path = _entry(cfg, z, cache)
        with _computing([path]):
            res = engines.simulate(cfg, executor=executor, z=z)
            res._write(path, ANY_FILE, True)
        return res
    return cached_simulate_many([cfg], cache=cache, z=z, executor=executor)[0]


def cached_simulate_many(configs, *, cache=None, z: float = 3.0, executor=None) -> list[SimResult]:
    """Like :func:`cached_simulate` for many configs; the missing ones run together. An entry that
    another process is computing right now is waited for, not computed twice (:func:`_computing`)."""
    z = check_z(z)
    if isinstance(configs, (SimConfig, str, bytes)) or not hasattr(configs, "__iter__"):
        raise ValueError(f"configs={short(configs)} is not allowed; allowed: an iterable of SimConfig objects")
    configs = list(configs)
    paths = [_entry(c, z, cache) for c in configs]
    out = [_load(p, c) for p, c in zip(paths, configs)]
    missing = [k for k, r in enumerate(out) if r is None]
    if missing:
        with _computing([paths[k] for k in missing]):
            for k in missing:                          # computed by another process meanwhile?
                out[k] = _load(paths[k], configs[k])
            missing = [k for k in missing if out[k] is None]
            if missing:
                results = engines.simulate_many([configs[k] for k in missing], executor=executor, z=z)
                for k, res in zip(missing, results):
                    res._write(paths[k], ANY_FILE, True)
                    out[k] = res
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
    if not isinstance(name, str) or not name.replace("-", "").isalnum():
        raise ValueError(f"name={short(name)} is not allowed; allowed: letters, digits and '-'")
    if not callable(compute):
        raise ValueError(f"compute={short(compute)} is not allowed; allowed: a function of no arguments")
    roots = (roots,) if isinstance(roots, str) else tuple(roots)
    unknown = [m for m in roots if not isinstance(m, str) or module_file(m) is None]
    if not roots or unknown:
        raise ValueError(f"roots={short(roots)} is not allowed; allowed: names of Python modules "
                         f"(\"engines\" for {PACKAGE}.engines, or a full name such as \"companion.symbolic\")")
    refresh = check_bool("refresh", refresh)
    try:
        params = json.loads(json.dumps(params or {}, sort_keys=True, allow_nan=False))
    except (TypeError, ValueError):
        params = None
    if not isinstance(params, dict):
        raise ValueError(f"params={short(params)} is not allowed; allowed: a dict of JSON values (finite numbers)")
    key = value_key(name, roots, tuple(packages), params)
    folder = cache_dir(cache)
    path = folder / f"{name}-{hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:32]}.json"
    _check_entry(folder, path)
    with _computing([path]):
        if not refresh:
            stored = _load_value(path, key)
            if stored is not None:
                return stored[0], True
        value = compute()
        atomic_write_text(path, json.dumps({"key": key, "value": value}, sort_keys=True), replaces=ANY_FILE)
    return value, False


def _load_value(path: Path, key: dict):
    """``(value,)`` of a whole entry stored under ``key``; None for anything else."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None
        entry = json.loads(path.read_text(encoding="utf-8"))
        return (entry["value"],) if entry["key"] == key else None
    except Exception:          # missing, unreadable, truncated, not JSON, another layout: recompute
        return None
