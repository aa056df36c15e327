"""Rerun a chapter and see it: papermill's --help-notebook lists every parameter of every page
with its type and comment; `python -m companion rerun` refuses an unknown parameter before any work and
renders a run whose notebook holds its figures; `python -m companion render` places them in the book's look."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from bookutils import BOOK, page_source, toc_pages

PAGES = [p for p in toc_pages() if page_source(p).suffix == ".ipynb"] + ["setting_template"]
COMPANION = [sys.executable, "-m", "companion"]


def parameter_lines(page: str) -> dict[str, tuple[str, str]]:
    """name -> (type, comment) of every line of the page's parameters cell."""
    nb = nbformat.read(BOOK / f"{page}.ipynb", as_version=4)
    cell = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
    out = {}
    for line in cell.source.splitlines():
        if line.strip():
            name, kind, comment = re.match(r"^(\w+): (\S+) = .*?  # (.*)$", line).groups()
            out[name] = (kind, comment)
    return out


@pytest.mark.parametrize("page", PAGES)
def test_help_notebook_lists_every_parameter_with_its_type_and_comment(page):
    """``papermill --help-notebook PAGE``: papermill's own command, invoked in this process (click's
    runner; the command's code, without an interpreter start per page)."""
    from click.testing import CliRunner
    from papermill.cli import papermill

    out = CliRunner().invoke(papermill, ["--help-notebook", str(BOOK / f"{page}.ipynb")])
    assert out.exit_code == 0 and "Unable to parse" not in out.output, out.output
    text = " ".join(out.output.split())                               # papermill wraps long comments
    for name, (kind, comment) in parameter_lines(page).items():
        assert f" {name}: {kind} (default " in text, f"{page}: {name} missing from --help-notebook:\n{out.output}"
        assert " ".join(comment.split())[:40] in text, f"{page}: the comment of {name} is missing:\n{out.output}"


def test_an_unknown_parameter_is_refused_before_any_work(tmp_path):
    out = subprocess.run([*COMPANION, "rerun", str(BOOK / "residual.ipynb"), str(tmp_path / "o"), "-p", "gammma", "0.5"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and out.stderr.count("\n") == 1
    assert "gammma" in out.stderr and "allowed:" in out.stderr and "gamma" in out.stderr.split("allowed:")[1]
    assert not (tmp_path / "o").exists()                              # nothing made before the check


def test_a_rerun_goes_nowhere_near_the_sources(tmp_path):
    out = subprocess.run([*COMPANION, "rerun", str(BOOK / "residual.ipynb"), str(BOOK)], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 2 and "out_dir=" in out.stderr


@pytest.mark.book
def test_a_rerun_with_other_alpha_and_gamma_shows_its_figures(tmp_path, monkeypatch, seeded_cache):
    monkeypatch.setenv("RECENCY_LIB_CACHE", seeded_cache(tmp_path / "cache"))
    args = ["-p", "alpha", "0.3", "-p", "gamma", "0.5", "-p", "samples", "2000", "-p", "samples_first_order", "20000",
            "-p", "workers", "1"]
    out = subprocess.run([*COMPANION, "rerun", str(BOOK / "residual.ipynb"), str(tmp_path / "out"), *args],
                         capture_output=True, text=True, timeout=1200)
    assert out.returncode == 0, out.stderr[-2000:]
    nb = json.loads((tmp_path / "out" / "residual.ipynb").read_text())
    images = [o for c in nb["cells"] if c["cell_type"] == "code" for o in c.get("outputs", [])
              if o.get("output_type") == "display_data" and any(k.startswith("image/") for k in o.get("data", {}))]
    assert images, "the executed notebook shows no figure"
    html = (tmp_path / "out" / "residual.html").read_text(encoding="utf8")
    assert len(re.findall(r"<img ", html)) >= len(images)
    shown = re.findall(r'\\\(\\alpha\\\)</span>\s*=\s*<span class="pasted-text">([^<]*)</span>', html)
    assert shown and set(shown) == {"0.3"}, shown                    # the prose quotes the rerun's alpha
    for src in re.findall(r'<img [^>]*src="([^"]+)"', html):
        assert (tmp_path / "out" / src).is_file(), src
