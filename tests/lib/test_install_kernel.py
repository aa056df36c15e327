"""setup.py's build of the C kernel: a compiler that fails, or none, fails the install with the
compiler's error and the way out (``RECENCY_LIB_NO_KERNEL=1``, which installs without the kernel),
never a quiet install of the numpy path. Runs ``setup.py build_ext --inplace`` in a copy of what it
reads, with ``CC`` a compiler that fails."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("setuptools")  # (a venv of Python >= 3.12 comes without it)
pytestmark = pytest.mark.skipif(os.name != "posix", reason="the failing compiler is a sh script")

REPO = Path(__file__).resolve().parents[2]
SAID = "the C kernel (recency_lib/_kernel.c) did not compile"


def build(tmp_path: Path, cc: str, **env) -> subprocess.CompletedProcess:
    """``setup.py build_ext --inplace`` in a copy of the build's inputs, with ``CC=cc``."""
    src = tmp_path / "src"
    src.mkdir()
    for name in ("setup.py", "pyproject.toml", "README.md"):
        shutil.copy(REPO / name, src)
    skip = shutil.ignore_patterns("*.so", "*.pyd", "__pycache__")
    shutil.copytree(REPO / "recency_lib", src / "recency_lib", ignore=skip)
    env = {k: v for k, v in os.environ.items() if k != "RECENCY_LIB_NO_KERNEL"} | env
    return subprocess.run(
        [sys.executable, "setup.py", "build_ext", "--inplace"],
        cwd=src,
        env={**env, "CC": cc},
        capture_output=True,
        text=True,
        timeout=120,
    )


def failing_compiler(tmp_path: Path) -> str:
    cc = tmp_path / "cc"
    cc.write_text("#!/bin/sh\necho 'cc: killed on purpose' >&2\nkill -9 $$\n")
    cc.chmod(0o755)
    return str(cc)


def kernels_built(tmp_path: Path) -> list[str]:
    return [p.name for p in (tmp_path / "src" / "recency_lib").glob("_kernel*.so")]


@pytest.mark.parametrize("compiler", ["fails", "missing"])
def test_a_kernel_that_does_not_compile_fails_the_build_and_says_why(tmp_path, compiler):
    cc = failing_compiler(tmp_path) if compiler == "fails" else str(tmp_path / "no-such-cc")
    run = build(tmp_path, cc)
    out = run.stdout + run.stderr
    assert run.returncode != 0, out
    assert SAID in out and "RECENCY_LIB_NO_KERNEL=1" in out, out
    if compiler == "fails":
        assert "cc: killed on purpose" in out, out  # the compiler's own error reaches the user
    assert kernels_built(tmp_path) == []


def test_no_kernel_on_purpose_builds_without_it(tmp_path):
    run = build(tmp_path, failing_compiler(tmp_path), RECENCY_LIB_NO_KERNEL="1")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "RECENCY_LIB_NO_KERNEL=1: no C kernel" in run.stderr
    assert "killed on purpose" not in run.stderr and kernels_built(tmp_path) == []


def test_a_bad_no_kernel_value_is_refused(tmp_path):
    run = build(tmp_path, failing_compiler(tmp_path), RECENCY_LIB_NO_KERNEL="yes")
    assert run.returncode != 0
    assert "RECENCY_LIB_NO_KERNEL='yes' is not allowed; allowed: 1, 0 or unset" in run.stderr
