"""Never serve notebook results computed with an older ``recency_lib``.

myst-nb's jupyter-cache keys a notebook by its code cells, cell metadata and kernelspec,
not by the modules it imports: after an edit of ``recency_lib`` a cached chapter would
still show the old numbers and figures, and Sphinx would not even re-read it.

This extension hashes the sources it watches (config ``fresh_cache_watch``: folders or
files relative to the Sphinx source folder; default ``["../recency_lib"]``; the files
matching ``fresh_cache_patterns``, default ``["*.py"]``) at the start of every build, and

* keeps the hash of the sources that produced the cached results in a stamp file inside
  the jupyter-cache folder; when it differs (or is missing), the whole jupyter-cache is
  deleted before anything is read, so every notebook is executed again;
* keeps the hash that the current pages were built with in the Sphinx environment; when
  it differs, ``env-get-outdated`` returns every page (not only the notebooks: pages that
  show glued numbers of other pages must be rebuilt as well) so all are re-read.

With nothing changed, nothing is re-executed and the build stays incremental.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import shutil
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.util import logging

logger = logging.getLogger(__name__)

STAMP = "fresh_cache.json"


def source_hash(roots: list[Path], patterns: list[str]) -> str:
    """sha256 over the sorted (relative path, content) pairs of the watched files."""
    h = hashlib.sha256()
    for root in roots:
        h.update(f"root:{root.name}\0".encode())
        if root.is_file():
            files = [root]
            base = root.parent
        elif root.is_dir():
            files = []
            for dirpath, dirnames, filenames in os.walk(root):
                dirnames[:] = sorted(
                    d for d in dirnames if d != "__pycache__" and not d.startswith(".")
                )
                for name in filenames:
                    if any(fnmatch.fnmatch(name, p) for p in patterns):
                        files.append(Path(dirpath, name))
            base = root
        else:
            h.update(b"missing\0")
            continue
        for f in sorted(files, key=lambda p: p.relative_to(base).as_posix()):
            h.update(f.relative_to(base).as_posix().encode() + b"\0")
            h.update(hashlib.sha256(f.read_bytes()).digest())
    return h.hexdigest()


def _cache_dir(app: Sphinx) -> Path | None:
    cfg = getattr(app.env, "mystnb_config", None)
    if cfg is None or cfg.execution_mode != "cache":
        return None
    return Path(cfg.execution_cache_path or ".jupyter_cache")


def on_builder_inited(app: Sphinx) -> None:
    # Simulation results shared by the chapters (recency_lib.cache) live beside the execution
    # cache, keyed by config and library source; kernels inherit this variable.
    os.environ.setdefault("RECENCY_LIB_CACHE", str(Path(app.outdir).parent / ".recency_cache"))
    roots = [Path(app.srcdir, p).resolve() for p in app.config.fresh_cache_watch]
    current = source_hash(roots, list(app.config.fresh_cache_patterns))
    app._fresh_cache_hash = current  # type: ignore[attr-defined]
    logger.info("fresh_cache: sources %s hash %s", [str(r) for r in roots], current[:12])

    cache = _cache_dir(app)
    if cache is None:
        return
    stamp = cache / STAMP
    try:
        previous = json.loads(stamp.read_text())["hash"]
    except (OSError, ValueError, KeyError):
        previous = None
    if previous == current:
        return
    if cache.exists():
        logger.info(
            "fresh_cache: watched sources changed (%s -> %s): clearing jupyter-cache %s",
            (previous or "unknown")[:12], current[:12], cache,
        )
        shutil.rmtree(cache)
    cache.mkdir(parents=True, exist_ok=True)
    stamp.write_text(json.dumps({"hash": current, "watch": app.config.fresh_cache_watch}))


def on_env_get_outdated(app: Sphinx, env, added, changed, removed) -> list[str]:
    current = app._fresh_cache_hash  # type: ignore[attr-defined]
    previous = getattr(env, "fresh_cache_hash", None)
    env.fresh_cache_hash = current
    if previous == current:
        return []
    docs = sorted(set(env.found_docs) - set(removed) - set(added) - set(changed))
    if docs:
        logger.info(
            "fresh_cache: watched sources changed (%s -> %s): re-reading %d more pages",
            (previous or "unknown")[:12], current[:12], len(docs),
        )
    return docs


def setup(app: Sphinx):
    app.add_config_value("fresh_cache_watch", ["../recency_lib"], "env", [list])
    app.add_config_value("fresh_cache_patterns", ["*.py"], "env", [list])
    # after myst-nb's builder-inited handler, which resolves the jupyter-cache path
    app.connect("builder-inited", on_builder_inited, priority=900)
    app.connect("env-get-outdated", on_env_get_outdated)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
