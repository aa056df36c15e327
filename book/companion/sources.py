"""What a page's output depends on besides its own cells: the files of the simulator and of the book's
package (their Python sources, the C kernel's source, the explorer's assets).

Every page depends on all of them. Following each page's imports would save little: every chapter
reaches 38 to 41 of the two packages' modules through the book's shared modules, so an edit of nearly
any module concerns nearly every page; one rule for all is simpler and never stale. Files enter a hash
under their paths relative to the folder that holds their package, so moving the checkout changes
nothing.
"""
from __future__ import annotations

import hashlib
import importlib.util
from pathlib import Path

PACKAGES = ("recency_lib", "companion")


def package_files() -> dict[str, Path]:
    """Every file of :data:`PACKAGES` by its name (``companion/report.py``), compiled files and caches aside."""
    out = {}
    for top in PACKAGES:
        root = Path(importlib.util.find_spec(top).origin).resolve().parent
        for path in root.rglob("*"):
            rel = path.relative_to(root.parent)
            if path.is_file() and path.suffix not in (".pyc", ".so") and not any(
                    part == "__pycache__" or part.startswith(".") for part in rel.parts):
                out[rel.as_posix()] = path
    return dict(sorted(out.items()))


def sources_hash(extra: dict[str, bytes] | None = None) -> str:
    """sha256 over :func:`package_files` and ``extra`` (name -> bytes: a page's other inputs)."""
    h = hashlib.sha256()
    items = {name: path.read_bytes() for name, path in package_files().items()} | (extra or {})
    for name in sorted(items):
        h.update(name.encode() + b"\0" + hashlib.sha256(items[name]).digest())
    return h.hexdigest()
