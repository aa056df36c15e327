"""The README's recipes run as typed: every command of its recipe sections (companion.provenance.
readme_recipes, the blocks the Reproducibility page shows), from a folder that looks like the
repository's root to them (``book`` and ``.venv`` link to the checkout's), so what they write lands
in that folder's ``out/``, never in the checkout's.

Two commands are not run here, each for its reason: ``jupyter-book build book`` is the build of the
session (the ``built_book`` fixture runs that very command, and the reruns need it), and the
paper-scale rerun, 10^7 sequences per setting, whose measured time the README quotes."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess

import pytest
from bookutils import REPO
from test_rerun_site import announcement, banner_rows, text_of

from companion import provenance

pytestmark = pytest.mark.book

NOT_HERE = {
    "At the paper's scale": "10^7 sequences per setting: its time is measured once, in the README"
}


def commands() -> list[tuple[str, str]]:
    """(section, command) for every line of the recipes, backslash continuations joined, comments
    dropped."""
    out = []
    for section, blocks in provenance.readme_recipes().items():
        for block in blocks:
            for line in block.replace("\\\n", " ").splitlines():
                line = line.split(" # ")[0].strip() if not line.lstrip().startswith("#") else ""
                if line:
                    out.append((section, line))
    return out


def test_the_recipes_are_found_and_use_the_venv():
    found = commands()
    assert len(found) >= 8, found
    assert all(c.startswith(".venv/bin/") for _, c in found), [
        c for _, c in found if not c.startswith(".venv/bin/")
    ]


def test_every_recipe_runs_as_typed(built_book, tmp_path):
    """Every recipe command in the README's order; then what they wrote: each run's page and
    notebook in out/ (never in the sources), the template's result file and the command line's, the
    terminal naming the results cache of each rerun, and one site in out/ in which every run keeps
    its place (each run's bar names all the others; the search index holds them; chapter 4's banner
    and text are after every later command what its own rerun made them, but for links naming the
    other runs' pages reruns). One test: a second worker waiting for these runs would idle."""
    root = tmp_path / "checkout"
    root.mkdir()
    for name in ("book", ".venv"):
        (root / name).symlink_to(REPO / name)
    env = {**os.environ, "RECENCY_LIB_PROGRESS": "0"}
    ran, first = [], None
    for section, command in commands():
        if section in NOT_HERE or command.startswith(".venv/bin/jupyter-book build"):
            continue
        done = subprocess.run(
            shlex.split(command), cwd=root, capture_output=True, text=True, timeout=900, env=env
        )
        assert done.returncode == 0, f"{command}\n{done.stderr[-3000:]}"
        ran.append((command, done.stderr))
        chapter4 = root / "out" / "residual.html"
        if chapter4.is_file():
            page = chapter4.read_text(encoding="utf-8")
            now = banner_rows(page), text_of(page).replace(" \u2014 rerun", "")  # links to runs
            first = first or now
            assert now == first, f"chapter 4 changed by {command}"
    assert len(ran) >= 7
    reruns = [err for command, err in ran if " companion rerun " in command]
    assert len(reruns) == 4 and all("results cache: " in err for err in reruns), reruns
    out = root / "out"
    runs = ("residual", "input_distribution", "setting_template", "appendix_b")
    for page in runs:
        assert (out / f"{page}.html").is_file(), page
        assert json.loads((out / f"{page}.ipynb").read_text())["cells"], page
    assert (out / "a03.json").is_file()  # the template's result file, in out/
    assert (out / "result.json").is_file() and (out / "layers.svg").is_file()  # the command line's
    assert not list((REPO / "book").glob("*.json")), "a recipe wrote into the sources"
    index = (out / "searchindex.js").read_text()
    for page in runs:
        bar = announcement((out / f"{page}.html").read_text(encoding="utf-8"))
        for other in runs:
            assert other == page or f'href="{other}.html"' in bar, (page, other)
        assert f'"{page}"' in index, page
    later = banner_rows((out / "input_distribution.html").read_text(encoding="utf-8"))
    assert set(later) == {"alphas"} and later["alphas"][0] == "[0.3, 0.7]", later  # not chapter 4's


def page_text(html_dir, name: str) -> str:
    """A built page's words (tags dropped, entities decoded, spaces collapsed)."""
    import html

    raw = (html_dir / f"{name}.html").read_text(encoding="utf-8")
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", raw)).split())


def test_the_numbers_the_readme_quotes_are_the_books(built_book):
    """The README cannot glue: each number it quotes from the book is the one the build shows."""
    readme = " ".join((REPO / "README.md").read_text(encoding="utf-8").split())
    page = page_text(built_book.html, "layernorm")
    for quoted in ("(2.307 ± 0.004) × 10⁻⁶", "(6.793 ± 0.010) × 10⁻⁶"):  # Theorem 1, Prop. 1
        assert quoted in readme and quoted in page, quoted
    crossing = float(re.search(r"cross at \\\( ?d\^\* ?\\\) = ([\d.]+)", page)[1])
    assert f"above d ≈ {round(crossing)}" in readme, crossing  # the mean steps cross
    ahead = re.search(r"stays ahead up to \\\( ?d \\approx ?\\\) (\d+)", page)[1]
    assert f"smallest step only above d ≈ {ahead}" in readme, ahead
    share = re.search(r"\(([\d.]+) ± [\d.]+\) × 10⁻⁵ of its row’s level", page)
    assert share and f"about {round(float(share[1]))} × 10⁻⁵ of a row's level" in readme
