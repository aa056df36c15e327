"""The simulator stands alone: importing it loads none of the book's machinery, no module of it
imports the book's package, and (in CI's venv with only the simulator installed) its tests run
against the installed package with nothing of the book present."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

import recency_lib
from recency_lib import cache

HEAVY = (
    "matplotlib",
    "seaborn",
    "sympy",
    "pandas",
    "myst_nb",
    "papermill",
    "nbclient",
    "nbformat",
    "IPython",
)


def loaded(code: str, modules) -> list[str]:
    """Which of ``modules`` a fresh interpreter holds after running ``code``."""
    probe = (
        f"{code}\nimport sys; print(' '.join(m for m in {tuple(modules)!r} if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return out.stdout.split()


def test_importing_the_simulator_loads_no_book_machinery():
    assert loaded("import recency_lib, recency_lib.cache, recency_lib.cli", HEAVY) == []


#: Modules a run loads only when it needs them (a short script's life is mostly imports): tqdm
#: (~20 ms) to show a bar, concurrent.futures (with logging, ~20 ms) for a caller's executor,
#: zipfile to read a result file.
ON_DEMAND = ("tqdm", "concurrent.futures", "logging", "zipfile")


def test_a_run_on_one_core_without_a_bar_loads_no_module_it_does_not_use():
    run = (
        "from recency_lib import SimConfig, simulate\n"
        "simulate(SimConfig(alpha=0.5, n=4, d=8, layers=1, samples=64))"
    )
    assert loaded(run, ON_DEMAND) == []


def test_no_module_of_the_simulator_imports_the_book():
    import ast

    for path in cache.ROOT.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom) and node.level == 0
                else []
            )
            assert not [
                m for m in names if m.split(".")[0] in ("companion", "myst_nb", "papermill")
            ], path


@pytest.mark.skipif(
    os.environ.get("RECENCY_LIB_ALONE") != "1",
    reason="CI's simulator-only venv sets RECENCY_LIB_ALONE=1 (.ci/run)",
)
def test_only_the_simulator_is_installed_and_it_is_the_installed_one():
    assert importlib.util.find_spec("companion") is None
    assert all(
        importlib.util.find_spec(m) is None for m in ("matplotlib", "sympy", "papermill", "myst_nb")
    )
    repo = Path(__file__).resolve().parents[2]
    # the installed package (site-packages, wherever the venv is),
    # not the checkout's recency_lib/ folder
    assert not Path(recency_lib.__file__).resolve().is_relative_to(repo / "recency_lib"), (
        recency_lib.__file__
    )


def test_no_import_cycle_in_the_simulator():
    from importgraph import cycle

    assert cycle(cache.ROOT, "recency_lib") is None
