"""On-disk results cache: simulate once, reuse everywhere, never serve a stale or another config's.

An entry ``<key>.npz`` is a :class:`SimResult`, keyed by the config, the kernel path ("c" or
"numpy": they agree to rounding only) and :func:`source_hash`, the files a simulation runs (not
:data:`NOT_SIMULATION`: the decisions and the level, files, figures, command line, closed forms), so
an edit of the simulator recomputes and an edit of a figure or of the book recomputes nothing. An
entry is served only when it loads and its own metadata names the same config, source and kernel.
Entries are written atomically; a lock file per entry makes a second process wait, not recompute.
Other values (sequence statistics, the book's sympy checks) go through :func:`cached_value`.
Location: ``cache=``, else ``$RECENCY_LIB_CACHE``, else ``~/.cache/recency_lib``.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import importlib.util
import json
import os
import sys
from collections import Counter
from importlib.metadata import version
from pathlib import Path

import numpy as np

from . import engines, kernels, trajectories
from .config import SimConfig
from .files import atomic_write
from .result import SimResult
from .validation import brief, check_bool

ROOT = Path(__file__).resolve().parent
#: What no simulation runs (deciding, showing, storing): their edits keep every results key.
NOT_SIMULATION = (
    *("__main__.py", "cli.py", "plot.py", "theory", "metrics.py", "result.py", "files.py"),
    *("cache.py", "progress.py", "workers.py", "inputs.py"),
)
#: What the cache did in this process: "served", "computed" and "bad" (an entry not served).
counts: Counter = Counter()


def _hash_files(named: dict[str, Path]) -> str:
    """sha256 over files, each under its name (not its path: moving the checkout keeps it)."""
    h = hashlib.sha256()
    for name in sorted(named):
        h.update(name.encode() + b"\0" + named[name].read_bytes())
    return h.hexdigest()


def package_files(root: Path | None = None, skip=NOT_SIMULATION) -> dict[str, Path]:
    """The source files of the package folder ``root`` (default: this one) by name
    (``recency_lib/engines.py``), compiled, cached and hidden files aside, without ``skip``."""
    root = ROOT if root is None else root
    out = {}
    for path in root.rglob("*"):
        rel = path.relative_to(root)
        hidden = any(part == "__pycache__" or part.startswith(".") for part in rel.parts)
        if path.is_file() and path.suffix not in (".pyc", ".so") and not hidden:
            if rel.parts[0] not in skip:
                out[f"{root.name}/{rel.as_posix()}"] = path
    return dict(sorted(out.items()))


def source_hash() -> str:
    """sha256 of the files a simulation runs (:func:`package_files`)."""
    return _hash_files(package_files())


def cache_dir(path=None) -> Path:
    """The cache folder, made if missing; ValueError naming it when it cannot hold entries."""
    default = os.environ.get("RECENCY_LIB_CACHE") or Path.home() / ".cache" / "recency_lib"
    folder = Path(default if path is None else path)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ValueError(
            f"cache={brief(str(folder))} cannot be made ({exc.strerror}); "
            "allowed: a writable folder "
            f"(cache= or RECENCY_LIB_CACHE)"
        ) from None
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ValueError(
            f"cache={brief(str(folder))} is not writable; allowed: a writable folder (cache= or "
            f"RECENCY_LIB_CACHE)"
        )
    return folder


def _stamp() -> dict:
    """What an entry records of the build that made it, and must match to be served."""
    return {"source_hash": source_hash(), "kernel_path": kernels.kernel_name()}


def cache_key(cfg: SimConfig) -> str:
    """The entry name of ``cfg``: a hash of the config and :func:`_stamp`."""
    if not isinstance(cfg, SimConfig):
        raise ValueError(f"cfg={brief(cfg)} is not a SimConfig; allowed: a recency_lib.SimConfig")
    payload = json.dumps({"config": cfg.to_dict(), **_stamp()}, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()[:32]


def _lock(path: Path):
    """An exclusive lock on the file ``path``, made if missing. Its holder removes it when done, so
    a lock taken on a file that was meanwhile removed or replaced is taken again on the new one."""
    while True:
        fh = open(path, "a")
        fcntl.flock(fh, fcntl.LOCK_EX)
        with contextlib.suppress(FileNotFoundError):
            if os.stat(path).st_ino == os.fstat(fh.fileno()).st_ino:
                return fh
        fh.close()


@contextlib.contextmanager
def _locked(paths):
    """Exclusive locks (``<entry>.lock``) on the entries about to be computed, taken in sorted order
    so two processes never wait on each other in a cycle; a killed holder releases its lock, and
    the lock files go with their holders (none is left in the cache)."""
    held = []
    try:
        for p in sorted(set(paths)):
            lock = p.with_name(p.name + ".lock")
            held.append((lock, _lock(lock)))
        yield
    finally:
        for lock, fh in reversed(held):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(lock)  # while held: a waiter then takes the lock again on a new file
            fh.close()


def _load(path: Path, cfg: SimConfig) -> SimResult | None:
    """The entry at ``path`` if it is a whole result for ``cfg`` made by this build, else None."""
    if not path.is_file():
        return None
    try:
        res = SimResult.load(path, config=cfg)
    except ValueError:
        res = None
    if res is None or {k: res.extra.get(k) for k in _stamp()} != _stamp():
        counts["bad"] += 1
        return None
    counts["served"] += 1
    return res


def _store(res: SimResult, path: Path) -> SimResult:
    res.extra = {**res.extra, **_stamp()}
    res._write(path)
    counts["computed"] += 1
    return res


def cached_simulate(
    cfg: SimConfig, *, cache=None, executor=None, refresh: bool = False
) -> SimResult:
    """``simulate(cfg)`` through the cache; ``refresh=True`` recomputes and replaces the entry."""
    if check_bool("refresh", refresh):
        path = cache_dir(cache) / f"{cache_key(cfg)}.npz"
        with _locked([path]):
            return _store(engines.simulate(cfg, executor=executor), path)
    return cached_simulate_many([cfg], cache=cache, executor=executor)[0]


def cached_simulate_many(configs, *, cache=None, executor=None) -> list[SimResult]:
    """:func:`cached_simulate` of several configs; the missing ones run together (one
    :func:`recency_lib.simulate_many`), and an entry another process is computing is waited for."""
    if isinstance(configs, (SimConfig, str)) or not hasattr(configs, "__iter__"):
        raise ValueError(
            f"configs={brief(configs)} is not allowed; allowed: an iterable of SimConfig objects"
        )
    configs = list(configs)
    folder = cache_dir(cache)
    paths = [folder / f"{cache_key(c)}.npz" for c in configs]
    out = [_load(p, c) for p, c in zip(paths, configs)]
    missing = [k for k, r in enumerate(out) if r is None]
    if missing:
        with _locked([paths[k] for k in missing]):
            for k in missing:  # computed by another process meanwhile?
                out[k] = _load(paths[k], configs[k])
            missing = [k for k in missing if out[k] is None]
            if missing:
                results = engines.simulate_many([configs[k] for k in missing], executor=executor)
                for k, res in zip(missing, results):
                    out[k] = _store(res, paths[k])
    return out


def entries(cache=None) -> tuple[list[dict], int]:
    """The metadata of every entry this build would serve (its "config" a SimConfig), in file order,
    and the number of other files in the folder (other builds' entries, anything; not locks)."""
    usable, other = [], 0
    for path in sorted(p for p in cache_dir(cache).iterdir() if not p.name.endswith(".lock")):
        meta = None
        with contextlib.suppress(Exception):
            with np.load(path, allow_pickle=False) as z:
                meta = json.loads(str(z["meta"][()]))
            cfg = SimConfig.from_dict(meta["config"])
            stamp = {k: meta["extra"].get(k) for k in _stamp()}
            if path.name == f"{cache_key(cfg)}.npz" and stamp == _stamp():
                usable.append({**meta, "config": cfg})
                continue
        other += 1
    return usable, other


def module_files(module: str) -> dict[str, Path]:
    """The source of the importable ``module`` by name: its file, or every file of a package."""
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        raise ValueError(f"module={brief(module)} is not allowed; allowed: an importable module")
    if spec.submodule_search_locations:  # a package
        return package_files(Path(spec.origin).resolve().parent, ())
    return {module: Path(spec.origin).resolve()}


def cached_value(
    name: str, compute, modules, *, params=None, packages=(), cache=None, refresh: bool = False
):
    """``compute()`` through the cache, for a value that depends on source code and ``params``
    alone: its key holds ``name``, ``params`` (a dict of JSON values), the source of ``modules``
    (every module or package whose code computes it, beyond the simulation's own files), the
    versions of the distributions ``packages``, and Python's version. ``compute`` takes no argument
    and returns a JSON value. Returns ``(value, hit)``, ``hit`` True when it came from the file."""
    if not isinstance(name, str) or not name.replace("-", "").isalnum():
        raise ValueError(f"name={brief(name)} is not allowed; allowed: letters, digits and '-'")
    modules = (modules,) if isinstance(modules, str) else tuple(modules)
    source = _hash_files(
        {k: v for m in modules for k, v in module_files(m).items()} | package_files()
    )
    key = {
        "name": name,
        "params": json.loads(json.dumps(params or {}, sort_keys=True)),
        "source": source,
        "python": list(sys.version_info[:2]),
        "packages": {p: version(p) for p in packages},
    }
    path = (
        cache_dir(cache)
        / f"{name}-{hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:32]}.json"
    )
    with _locked([path]):
        if not check_bool("refresh", refresh):
            with contextlib.suppress(Exception):
                entry = json.loads(path.read_text(encoding="utf-8"))
                if entry["key"] == key:
                    counts["served"] += 1
                    return entry["value"], True
        value = compute()
        text = json.dumps({"key": key, "value": value}, sort_keys=True)
        atomic_write(path, lambda fh: fh.write(text))
        counts["computed"] += 1
    return value, False


def cached_statistic(
    cfg, statistic, *, samples=None, control_mean=None, engine=None, executor=None, cache=None
):
    """:func:`recency_lib.trajectories.sequence_statistic` through the cache, keyed by the config,
    the arguments and ``statistic``'s name and module source (a module-level function, or a
    ``functools.partial`` of one with JSON keyword arguments); ``executor`` runs it, unkeyed (it
    never changes a bit)."""
    func, kwargs = statistic, {}
    if isinstance(statistic, functools.partial) and not statistic.args:
        func, kwargs = statistic.func, dict(statistic.keywords)
    module, qual = getattr(func, "__module__", None), getattr(func, "__qualname__", "<")
    if not callable(func) or not isinstance(module, str) or "<" in qual:
        raise ValueError(
            f"statistic={brief(statistic)} is not allowed; allowed: a module-level function of an "
            f"importable module, or a functools.partial of one with keyword arguments"
        )
    mean = None if control_mean is None else np.asarray(control_mean, dtype=float).tolist()
    params = {"config": cfg.to_dict(), "samples": samples, "control_mean": mean, "engine": engine}
    params |= {"statistic": f"{module}.{qual}", "kwargs": kwargs, "kernel": kernels.kernel_name()}
    fields = ("mean", "sem", "cv_mean", "cv_sem")

    def compute():
        kw = {"samples": samples, "control_mean": control_mean, "engine": engine}
        st = trajectories.sequence_statistic(cfg, statistic, executor=executor, **kw)
        arrays = {k: None if getattr(st, k) is None else getattr(st, k).tolist() for k in fields}
        return {"samples": st.samples, "elapsed_seconds": st.elapsed_seconds, **arrays}

    value, _ = cached_value(
        "statistic", compute, (module,), params=params, packages=("numpy",), cache=cache
    )
    arrays = {k: None if value[k] is None else np.asarray(value[k], dtype=float) for k in fields}
    seconds = float(value["elapsed_seconds"])
    return trajectories.SequenceStatistic(
        cfg, int(value["samples"]), elapsed_seconds=seconds, **arrays
    )
