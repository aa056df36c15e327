"""The import graph of a package, every import counted (inside functions too), for the tests that
keep it free of cycles: recency_lib (tests/lib/test_layers.py) and the book's
companion (tests/book)."""

from __future__ import annotations

import ast
import graphlib
from pathlib import Path


def import_graph(root: Path, top: str) -> dict[str, set[str]]:
    """module -> the modules of the same package it imports (``root`` is the package's folder)."""
    mods = {
        ".".join((top, *p.relative_to(root).with_suffix("").parts)).removesuffix(".__init__"): p
        for p in root.rglob("*.py")
        if "__pycache__" not in p.parts
    }

    def targets(m: str, node) -> list[str]:
        if isinstance(node, ast.Import):
            return [a.name for a in node.names]
        pkg = m if mods[m].name == "__init__.py" else m.rpartition(".")[0]
        base = node.module or ""
        if node.level:
            parts = pkg.split(".")[: len(pkg.split(".")) - node.level + 1]
            base = ".".join(parts + ([node.module] if node.module else []))
        return [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]

    return {
        m: {
            t
            for n in ast.walk(ast.parse(p.read_text(encoding="utf-8")))
            if isinstance(n, (ast.Import, ast.ImportFrom))
            for t in targets(m, n)
            if t in mods and t != m
        }
        for m, p in mods.items()
    }


def cycle(root: Path, top: str) -> list[str] | None:
    """A cycle of imports in the package, or None."""
    try:
        graphlib.TopologicalSorter(import_graph(root, top)).prepare()
    except graphlib.CycleError as exc:
        return exc.args[1]
    return None
