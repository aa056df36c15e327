"""On-disk results cache: simulate once per build, reuse everywhere, never stale.

The key is a hash of the config, the engine options and the library's *source code* (every
``.py`` file of the installed package) and the kernel path, so editing recency_lib invalidates every
entry. Entries are ``<key>.npz`` files (:meth:`SimResult.save`: lossless, compressed), written
atomically, so two processes racing on the same key both end with a whole file.
Location: ``$RECENCY_LIB_CACHE`` if set, else ``~/.cache/recency_lib``.
"""
from __future__ import annotations

import hashlib
import zipfile
import json
import os
from functools import lru_cache
from pathlib import Path

from .config import SimConfig
from .result import SimResult


@lru_cache(maxsize=1)
def source_hash() -> str:
    """sha256 over the package's Python sources (sorted by name); changes with any edit."""
    h = hashlib.sha256()
    root = Path(__file__).parent
    for path in sorted(root.rglob("*.py")):
        h.update(path.relative_to(root).as_posix().encode())
        h.update(path.read_bytes())
    return h.hexdigest()


_UNREADABLE = (ValueError, KeyError, OSError, EOFError, zipfile.BadZipFile)   # -> recompute the entry


def cache_dir(path=None) -> Path:
    if path is not None:
        return Path(path)
    env = os.environ.get("RECENCY_LIB_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "recency_lib"


def cache_key(cfg: SimConfig, z: float = 3.0) -> str:
    """Hash of the config, z, the library source and the kernel path ("numba" or "numpy": the two
    agree only to float rounding, so a result of one is never served for the other)."""
    from .kernels import kernel_name

    payload = json.dumps({"config": cfg.to_dict(), "z": z, "source": source_hash(),
                          "kernel": kernel_name()}, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()[:32]


def cached_simulate(cfg: SimConfig, *, cache: str | os.PathLike | None = None, z: float = 3.0,
                    executor=None, refresh: bool = False) -> SimResult:
    """``simulate(cfg)`` through the on-disk cache; ``refresh=True`` recomputes and overwrites."""
    from .engines import simulate

    path = cache_dir(cache) / f"{cache_key(cfg, z)}.npz"
    if path.exists() and not refresh:
        try:
            return SimResult.load(path)
        except _UNREADABLE:     # unreadable entry: recompute it
            pass
    res = simulate(cfg, executor=executor, z=z)
    res.save(path)
    return res


def cached_simulate_many(configs, *, cache=None, z: float = 3.0, executor=None) -> list[SimResult]:
    """Like :func:`cached_simulate` for many configs; the missing ones run together."""
    from .engines import simulate_many

    configs = list(configs)
    paths = [cache_dir(cache) / f"{cache_key(c, z)}.npz" for c in configs]
    out: list[SimResult | None] = []
    for p in paths:
        try:
            out.append(SimResult.load(p) if p.exists() else None)
        except _UNREADABLE:
            out.append(None)
    missing = [k for k, r in enumerate(out) if r is None]
    if missing:
        for k, res in zip(missing, simulate_many([configs[k] for k in missing], executor=executor, z=z)):
            res.save(paths[k])
            out[k] = res
    return out
