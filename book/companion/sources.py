"""What a page's output depends on besides its cells (:func:`dependency_hash`): every file of both
packages (one rule for all is never stale), the notebooks its code names, the environment it shows
and the simulator's kernel path. book/_ext/fresh_cache.py executes a page again when it changes."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
from pathlib import Path

from recency_lib import cache, kernels

PACKAGES = ("recency_lib", "companion")


def package_files() -> dict[str, Path]:
    """Every file of :data:`PACKAGES` by its name (``companion/report.py``), caches aside."""
    roots = [Path(importlib.util.find_spec(top).origin).resolve().parent for top in PACKAGES]
    return dict(sorted(kv for root in roots for kv in cache.package_files(root, skip=()).items()))


def sources_hash(extra: dict[str, bytes] | None = None) -> str:
    """sha256 over :func:`package_files` and ``extra`` (name -> bytes: a page's other inputs)."""
    h = hashlib.sha256()
    items = {name: path.read_bytes() for name, path in package_files().items()} | (extra or {})
    for name in sorted(items):
        h.update(name.encode() + b"\0" + hashlib.sha256(items[name]).digest())
    return h.hexdigest()


def _named_notebooks(path: Path) -> list[Path]:
    """Other notebooks of the same folder that ``path``'s code names (e.g. a papermill template)."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    code = "\n".join(
        "".join(c.get("source", "")) for c in nb.get("cells", []) if c.get("cell_type") == "code"
    )
    names = set(re.findall(r"([\w-]+\.ipynb)", code)) - {path.name}
    return sorted(p for p in (path.parent / n for n in names) if p.is_file())


#: The environment variables that change what a page shows: where results are cached (the
#: reproducibility page prints it), which kernel runs and the build's folder (Appendix B's runs).
PAGE_ENVIRONMENT = ("RECENCY_LIB_CACHE", "RECENCY_LIB_KERNEL", "COMPANION_BUILD_DIR")
FOLDERS = ("RECENCY_LIB_CACHE", "COMPANION_BUILD_DIR")


def _environment_value(name: str, base: Path | None, environ) -> str:
    """The value of ``name`` in ``environ``; a folder inside ``base`` relative to it."""
    value = environ.get(name, "")
    if name in FOLDERS and value and base is not None:
        path = Path(value).resolve()
        if path.is_relative_to(base):
            return path.relative_to(base).as_posix()
    return value


def kernel_path() -> str:
    """The simulator's kernel the pages will run, "c" or "numpy" (a rebuilt kernel, no source)."""
    try:
        return kernels.kernel_name()
    except ValueError:  # a bad RECENCY_LIB_KERNEL: every page that simulates says so
        return "refused"


#: Files of the book's root that pages read (the reproducibility page shows the README's recipes).
ROOT_FILES = ("README.md",)


def dependency_hash(path: Path, base: Path | None = None, environ=None) -> str:
    """sha256 over what notebook ``path`` depends on besides its cells (the module's docstring, and
    :data:`ROOT_FILES`). ``base``: the book's root (default: the notebook's folder's parent)."""
    path = Path(path)
    base = (Path(base) if base is not None else path.parent.parent).resolve()
    environ = os.environ if environ is None else environ
    extra = {
        f"env:{name}": _environment_value(name, base, environ).encode() for name in PAGE_ENVIRONMENT
    }
    extra |= {
        f"root:{name}": (base / name).read_bytes() if (base / name).is_file() else b""
        for name in ROOT_FILES
    }
    extra["kernel-path"] = kernel_path().encode()
    todo, seen = _named_notebooks(path), {path}
    while todo:
        nb = todo.pop()
        if nb not in seen:
            seen.add(nb)
            extra[_relative(nb, base)] = nb.read_bytes()
            todo.extend(_named_notebooks(nb))
    return sources_hash(extra)


def _relative(f: Path, base: Path) -> str:
    f = f.resolve()
    return f.relative_to(base).as_posix() if f.is_relative_to(base) else f.name
