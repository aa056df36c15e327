"""A rerun seen as a page of the book: `python -m companion rerun book/residual.ipynb OUT -p alpha
... -p gamma ... -p samples ...` once showed the book's defaults in its parameters, raw labels
(`thm-1`, "the residual connection of :"), figures numbered from 1, no search, 38 lines of progress
bars, and ran the page's derived sample sizes at their defaults. Now the run takes its chapter's
place in a copy of the book built around the book's own pages (companion.rerun), its banner says
what ran, and samples sets every derived size.

The rerun here is small (samples 2,000) in a results cache of its own; the book's other pages come
from the session's build (the ``built_book`` fixture), as a reader's rerun takes them from theirs.
"""

from __future__ import annotations

import html as html_module
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from bookutils import BOOK, REPO, computed_once, toc_pages

pytestmark = pytest.mark.book

COMPANION = [sys.executable, "-m", "companion"]
ARGS = ["-p", "alpha", "0.3", "-p", "gamma", "0.5", "-p", "samples", "2000", "-p", "workers", "1"]
#: samples_first_order's default (400,000) times 2,000 / 100,000: it follows samples.
FIRST_ORDER = 8_000


def text_of(page_html: str) -> str:
    """The visible text of a page's article (tags and attributes gone, entities decoded)."""
    article = re.search(r'<article class="bd-article">(.*?)</article>', page_html, re.S).group(1)
    article = re.sub(r"<script.*?</script>", " ", article, flags=re.S)
    text = " ".join(html_module.unescape(re.sub(r"<[^>]+>", " ", article)).split())
    return re.sub(r"\(\s+", "(", re.sub(r"\s+([),.:;])", r"\1", text))


def announcement(page_html: str) -> str:
    """The site's announcement at the top of a page (its HTML)."""
    found = re.search(r'bd-header-announcement__content">(.*?)</div>', page_html, re.S)
    assert found, "no announcement"
    return found.group(1)


def article(page_html: str) -> str:
    return re.search(r'<article class="bd-article">(.*?)</article>', page_html, re.S).group(1)


def banner_rows(page_html: str) -> dict[str, tuple[str, str]]:
    """parameter -> (this run, the book) of the rerun banner's table."""
    box = re.search(r'<div class="[^"]*\brerun-banner\b[^"]*">(.*?)</table>', page_html, re.S)
    assert box, "no rerun banner with a table"
    block = box.group(1)
    rows = {}
    for row in re.findall(r"<tr[^>]*>(.*?)</tr>", block, re.S):
        cells = [
            " ".join(html_module.unescape(re.sub(r"<[^>]+>", " ", c)).split())
            for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)
        ]
        if cells:
            rows[cells[0]] = (cells[1], cells[2])
    return rows


@pytest.fixture(scope="session")
def rerun_site(built_book, seeded_cache, tmp_path_factory):
    """A rerun of chapter 4 (alpha 0.3, gamma 0.5, samples 2,000) into a folder of its own: (folder,
    stderr). Made once per test run, whichever worker asks first (computed_once: a module fixture
    ran once per worker, and again when the workers' order came back to the module). The tests
    only read it (a test that writes works on a copy)."""

    def compute(folder: Path) -> None:
        env = {**os.environ, "RECENCY_LIB_CACHE": seeded_cache(folder / "cache")}
        out = folder / "out"
        result = subprocess.run(
            [*COMPANION, "rerun", str(BOOK / "residual.ipynb"), str(out), *ARGS],
            capture_output=True,
            text=True,
            timeout=1800,
            env=env,
        )
        assert result.returncode == 0, result.stderr[-3000:]
        assert result.stdout.strip() == str(out / "residual.html")
        (folder / "stderr.txt").write_text(result.stderr, encoding="utf-8")

    folder = computed_once(tmp_path_factory, "rerun-site", compute)
    return folder / "out", (folder / "stderr.txt").read_text(encoding="utf-8")


def test_the_banner_says_what_ran_and_nothing_else(rerun_site):
    out, _ = rerun_site
    page = (out / "residual.html").read_text(encoding="utf8")
    assert re.search(r"<h1>4\. Residual connection \u2014 rerun", page)
    rows = banner_rows(page)
    assert rows == {
        "samples": ("2,000", "100,000"),
        "samples_first_order": (f"{FIRST_ORDER:,} \u2020", "400,000"),
        "alpha": ("0.3", "0.5"),
        "gamma": ("0.5", "1.0"),
        "workers": ("1", "2"),
    }
    head = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    text = text_of(page)
    assert f"from commit {head[:12]}" in text and "uncommitted changes" in text and " UTC" in text
    assert "follows samples" in text
    # the verdict on Proposition 2 with the settings that decided it: alpha 0 and the run's alpha,
    # the run's gamma
    assert re.search(
        r"Proposition 2: \w[\w ]*(?: \(the book[^)]*\))?, from 2 checks at "
        r"LayerNorm, \u03b1 = 0, \u03b3 = 0\.5, d = 64; "
        r"LayerNorm, \u03b1 = 0\.3, \u03b3 = 0\.5, d = 64",
        text.replace("\\(d\\)", "d"),
    ), text[:3000]
    # its verdicts held against the book's build of the page (fresh_cache's stamps record them)
    from companion import rerun

    book = rerun.book_verdicts("residual")
    assert book and book.get("Proposition 2"), book
    assert re.search(r"(is|are) the book\u2019s verdict|differs? from the book\u2019s", text)


def test_the_figures_that_ran_are_shown_and_the_prose_quotes_the_runs_alpha(rerun_site):
    """The executed notebook holds its figures and the page shows each (its files in OUT); the prose
    quotes the run's alpha, never the book's."""
    out, _ = rerun_site
    nb = json.loads((out / "residual.ipynb").read_text())
    images = [
        o
        for c in nb["cells"]
        if c["cell_type"] == "code"
        for o in c.get("outputs", [])
        if o.get("output_type") == "display_data"
        and any(k.startswith("image/") for k in o.get("data", {}))
    ]
    assert images, "the executed notebook shows no figure"
    page = (out / "residual.html").read_text(encoding="utf8")
    assert len(re.findall(r"<img ", article(page))) >= len(images)
    shown = re.findall(
        r'\\\(\\alpha\\\)</span>\s*=\s*<span class="pasted-text">([^<]*)</span>', page
    )
    assert shown and set(shown) == {"0.3"}, shown
    for src in re.findall(r'<img [^>]*src="([^"]+)"', page):
        assert (out / src).is_file(), src


def test_the_parameters_dropdown_shows_the_values_that_ran(rerun_site):
    out, _ = rerun_site
    page = (out / "residual.html").read_text(encoding="utf8")
    cell = re.search(r'<div class="cell tag_parameters.*?</pre>', page, re.S).group(0)
    code = html_module.unescape(re.sub(r"<[^>]+>", "", cell))
    for line in (
        "samples: int = 2_000  # [book: 100_000]",
        f"samples_first_order: int = {FIRST_ORDER:_}  # [book: 400_000, follows samples]",
        "alpha: float = 0.3  # [book: 0.5]",
        "gamma: float = 0.5  # [book: 1.0]",
        "seed: int = 0  # root random seed",
    ):
        assert line in code, code
    assert "tag_injected-parameters" not in page  # folded into the parameters cell
    nb = json.loads((out / "residual.ipynb").read_text())
    assert nb["metadata"]["papermill"]["parameters"] == {
        "alpha": 0.3,
        "gamma": 0.5,
        "samples": 2000,
        "workers": 1,
        "samples_first_order": FIRST_ORDER,
    }
    record = nb["metadata"]["companion_rerun"]
    assert (
        record["followed"] == ["samples_first_order"]
        and record["ran"]["samples_first_order"] == FIRST_ORDER
    )


def test_the_sample_sizes_that_ran_follow_samples(rerun_site):
    """The page's own table names the sequences of each run: 2,000 for Figure 1's, 8,000 for the
    first-order runs (not the default 400,000)."""
    out, _ = rerun_site
    text = text_of((out / "residual.html").read_text(encoding="utf8"))
    assert "8,000 sequences" in text and "400,000" not in text.split("Every other parameter")[1]
    assert "2,000 sequences per setting" in text


def test_cross_references_citations_and_numbers_are_the_books(rerun_site):
    out, _ = rerun_site
    page = (out / "residual.html").read_text(encoding="utf8")
    text = text_of(page)
    source = (BOOK / "residual.ipynb").read_text(encoding="utf8")
    labels = set(re.findall(r"\{(?:prf:ref|numref)\}`(?:[^`<]*<)?([\w-]+)>?`", source))
    assert {"thm-1", "def-1", "prop-3", "thm-1-corrected"} <= labels
    for label in labels:
        assert not re.search(rf"(?<![\w-]){re.escape(label)}(?![\w-])", text), (
            f"raw label {label!r} on the page"
        )
    for role in ("{doc}", "{prf:ref}", "{numref}", "{cite", "{glue"):
        assert role not in text
    assert "residual connection of He et al. (2016):" in text and " of:" not in text
    assert "Xiong et al. (2020)" in text
    for target in set(re.findall(r'href="([\w-]+\.html)(?:#[^"]*)?"', page)):
        assert (out / target).is_file(), target
    assert 'href="references.html#' in page  # the citations link to the bibliography
    book = built_page("residual")
    numbers = lambda s: re.findall(r'class="caption-number">([^<]*)<', s)  # noqa: E731
    assert numbers(page) == numbers(book) and numbers(page)  # "Book fig. 9", "Proposition 2", ...
    assert re.findall(r'<span class="caption-number">(Proposition \d+)', page) == ["Proposition 2"]


def built_page(name: str) -> str:
    return (REPO / "_build" / "html" / f"{name}.html").read_text(encoding="utf8")


def test_every_other_page_is_the_books_and_the_site_opens_offline(rerun_site):
    """The whole site is in OUT: the book's pages as the book built them (their links to chapter 4
    name it a rerun), the search index, the static files; every page says that the site holds a
    rerun."""
    out, _ = rerun_site
    assert (
        (out / "searchindex.js").is_file()
        and (out / "search.html").is_file()
        and (out / "_static").is_dir()
    )
    index = (out / "searchindex.js").read_text(encoding="utf8")
    assert "Residual connection \u2014 rerun" in json.dumps(
        json.loads(index[index.index("(") + 1 : index.rindex(")")]), ensure_ascii=False
    )
    for name in toc_pages():
        page = (out / f"{name}.html").read_text(encoding="utf8")
        assert "Not the book as published" in announcement(
            page
        ) and 'href="residual.html"' in announcement(page)
        if name in ("residual", "reproducibility"):  # the rerun; the book's execution table
            continue
        assert article(page).replace(" \u2014 rerun", "") == article(built_page(name)), name
        for src in re.findall(r'<img [^>]*src="([^"]+)"', page):
            assert src.startswith("data:") or (out / src).is_file(), (name, src)


def test_no_progress_in_the_page_and_the_terminal_shows_it(rerun_site):
    out, err = rerun_site
    nb = json.loads((out / "residual.ipynb").read_text())
    streams = "".join(
        "".join(o.get("text", ""))
        for c in nb["cells"]
        for o in c.get("outputs", [])
        if o.get("output_type") == "stream"
    )
    assert "%|" not in streams and "%|" not in (out / "residual.html").read_text(encoding="utf8")
    lines = err.splitlines()
    assert lines[0].startswith("residual: expected time about ") and "an estimate" in lines[0]
    steps = [line for line in lines if re.match(r"residual: \[\d+/\d+\] \d+:\d\d ", line)]
    code_cells = sum(c["cell_type"] == "code" for c in nb["cells"])
    assert len(steps) == code_cells and steps[-1].startswith(
        f"residual: [{code_cells}/{code_cells}]"
    )
    assert any(line.startswith("residual: ran in ") for line in lines)


def test_a_book_without_a_current_build_is_shown_without_numbers_never_as_the_rerun(
    rerun_site, tmp_path
):
    """Rendered against a build folder that holds no build of the book: every other page is its
    source with a note that its numbers are missing (and the terminal says so), the rerun keeps its
    own."""
    out, _ = rerun_site
    copy = tmp_path / "out"
    copy.mkdir()
    (copy / "residual.ipynb").write_bytes((out / "residual.ipynb").read_bytes())
    result = subprocess.run(
        [*COMPANION, "render", str(copy / "residual.ipynb")],
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "COMPANION_BUILD_DIR": str(tmp_path / "nobuild")},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    others = [p for p in toc_pages() if (BOOK / f"{p}.ipynb").is_file() and p != "residual"]
    assert f"note: {len(others)} of the book's pages show no numbers here" in result.stderr
    assert "no build of the book in" in result.stderr
    layernorm = text_of((copy / "layernorm.html").read_text(encoding="utf8"))
    assert "Numbers missing here" in layernorm and "3. LayerNorm" in layernorm
    page = (copy / "residual.html").read_text(encoding="utf8")
    assert banner_rows(page) == banner_rows((out / "residual.html").read_text(encoding="utf8"))
    assert (
        "Numbers missing here" not in text_of(page) and 'class="caption-number">Book fig.' in page
    )


def test_the_rerun_page_in_a_browser_offline(rerun_site):
    """OUT/residual.html opened from disk (file://) in chromium with every request off the machine
    refused, at 1400 and 390 px: typeset math, every image loaded, no script error, no horizontal
    scroll of the page, the parameters dropdown opens on the values that ran, and the search finds
    the rerun."""
    playwright = pytest.importorskip("playwright.sync_api")
    chromium = os.environ.get("CHROMIUM", "/usr/bin/chromium")
    if not Path(chromium).is_file() and not shutil.which("chromium"):
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed (CI is set)")
        pytest.skip("chromium is not installed")
    out, _ = rerun_site
    outside, errors = [], []

    def route(r):
        if r.request.url.startswith(("file:", "data:", "blob:")):
            return r.continue_()
        outside.append(r.request.url)
        return r.abort()

    with playwright.sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=chromium if Path(chromium).is_file() else shutil.which("chromium"),
            args=["--no-sandbox", "--disable-gpu"],
        )
        try:
            for width in (1400, 390):
                page = browser.new_page(viewport={"width": width, "height": 900})
                page.on("pageerror", lambda e: errors.append(str(e)))
                page.route("**/*", route)
                page.goto((out / "residual.html").as_uri())
                page.wait_for_function(
                    "document.querySelectorAll('mjx-container').length > 20", timeout=30_000
                )
                assert (
                    page.evaluate(
                        "[...document.images].filter(i => !i.complete || !i.naturalWidth).length"
                    )
                    == 0
                )
                assert page.evaluate("document.documentElement.scrollWidth") <= width, width
                banner = page.locator(".rerun-banner")
                assert banner.is_visible() and "its deciding number" in banner.inner_text()
                fits = "(b => b.scrollWidth <= b.clientWidth + 1)"  # the banner's words wrap
                assert page.evaluate(f"{fits}(document.querySelector('.rerun-banner'))"), width
                page.locator("div.cell.tag_parameters details summary").first.click()
                shown = page.locator("div.cell.tag_parameters pre").first.inner_text()
                assert (
                    "alpha: float = 0.3" in shown
                    and f"samples_first_order: int = {FIRST_ORDER:_}" in shown
                )
                page.close()
            page = browser.new_page()
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.route("**/*", route)
            page.goto((out / "search.html").as_uri() + "?q=rerun")
            page.wait_for_selector("#search-results li", timeout=30_000)
            assert (
                "4. Residual connection \u2014 rerun"
                in page.locator("#search-results").inner_text()
            )
        finally:
            browser.close()
    assert outside == [] and errors == []
