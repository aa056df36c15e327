"""The book's Sphinx extensions for the reader offline: the page texts of the search's summaries
(book/_ext/offline_search.py) and the execution table's status in words
(book/_ext/exec_status.py)."""

from __future__ import annotations

import json
import re
import sys

import pytest
from bookutils import BOOK, toc_pages

sys.path.insert(0, str(BOOK / "_ext"))
import exec_status
import offline_search

PAGE = """<html><body><nav id="nav">menu</nav>
<main role="main"><article>
<section id="intro"><h1>Intro<a class="headerlink" href="#intro">#</a></h1>
<p>The trend of <span class="math">\\(S^{(2)}\\)</span> is
   <span class="pasted-text">0.5 &plusmn; 0.1</span> &amp; rises.</p><!-- a comment -->
<script>var x = "<not text>";</script><style>p { color: red }</style>
<section id="deeper"><p>More &lt;here&gt;.</p></section></section>
</article></main><footer>foot</footer></body></html>"""


def test_page_text_keeps_the_text_and_the_anchors_of_the_main_content():
    text = offline_search.page_text(PAGE)
    assert text == (
        '<div role="main"> <div id="intro">Intro The trend of \\(S^{(2)}\\) is 0.5 ± 0.1 &amp; '
        "rises.  "
        '<div id="deeper">More &lt;here&gt;.</div></div> </div>'
    ), text
    assert offline_search.page_text("<html><body><p>no main</p></body></html>") == ""


def test_page_text_reads_void_elements_dropped_ones_inside_others_and_stray_end_tags():
    """As a tree of the page reads them (BeautifulSoup's, which the reader replaced: the built
    book's pages read the same either way): an element without an end tag holds nothing, a dropped
    element drops all it holds, an end tag without its start closes nothing, and the text ends with
    the main element."""
    page = (
        '<p id="before">not main</p><div role="main" id="main">a<br id="x">b<img id="y"/>'
        '<span class="x headerlink" id="q">b<i id="r">c</i><script>d</script></span>'
        "<p>e</b>f<!-- g -->h</p></div><p>after</p>"
    )
    assert offline_search.page_text(page) == (
        '<div role="main">a<div id="x"></div>b<div id="y"></div>efh</div>'
    ), offline_search.page_text(page)


def test_a_page_whose_main_content_is_unchanged_is_not_read_again(tmp_path, monkeypatch):
    """The texts are kept by the hash of each page's main content: a page rewritten around it (a
    rerun's announcement) is read back, a page whose content changed is read again."""
    from types import SimpleNamespace

    out, doctrees = tmp_path / "html", tmp_path / ".doctrees"
    out.mkdir()
    doctrees.mkdir()
    builder = SimpleNamespace(format="html", get_target_uri=lambda doc: f"{doc}.html")
    app = SimpleNamespace(
        builder=builder, outdir=str(out), doctreedir=str(doctrees), env=SimpleNamespace()
    )
    app.env.found_docs = {"a", "b"}
    read = []
    page_text = offline_search.page_text
    monkeypatch.setattr(offline_search, "page_text", lambda h: read.append(h) or page_text(h))

    def build(a_page: str) -> dict:
        (out / "a.html").write_text(a_page, encoding="utf-8")
        (out / "b.html").write_text(PAGE, encoding="utf-8")
        read.clear()
        offline_search.on_build_finished(app, None)
        js = (out / "_static" / offline_search.TEXTS).read_text(encoding="utf-8")
        return json.loads(js.split(" = ", 1)[1].rstrip().rstrip(";"))

    from companion import rerun

    assert rerun.SEARCH_TEXTS == offline_search.TEXTS_CACHE  # a rerun's render starts from them
    first = build(PAGE)
    assert len(read) == 2 and first["a"] == first["b"] == page_text(PAGE)
    assert build(PAGE.replace("menu", "a rerun's announcement")) == first and read == []
    changed = build(PAGE.replace("rises", "falls"))
    assert len(read) == 1 and "falls" in changed["a"] and changed["b"] == first["b"]


def test_execution_status_in_words():
    assert set(exec_status.STATUS_WORDS) == {"\u2705", "\u274c"}
    assert all(re.fullmatch(r"[a-z]+", w) for w in exec_status.STATUS_WORDS.values())


@pytest.mark.book
def test_built_site_has_the_search_texts_and_the_status_words(built_book):
    """Every page's text for the search page (which loads it, with MathJax), and the reproducibility
    page's execution table with a word in its status column for every executed chapter."""
    texts = (built_book.html / "_static" / offline_search.TEXTS).read_text(encoding="utf8")
    prefix = "window.COMPANION_PAGE_TEXTS = "
    assert texts.startswith(prefix)
    pages = json.loads(texts[len(prefix) :].rstrip().rstrip(";"))
    assert set(toc_pages()) <= set(pages)
    assert all(
        pages[p].startswith('<div role="main">') and len(pages[p]) > 200 for p in toc_pages()
    ), {p: len(pages[p]) for p in toc_pages()}
    search = (built_book.html / "search.html").read_text(encoding="utf8")
    assert re.search(rf'src="_static/{re.escape(offline_search.TEXTS)}(\?v=\w+)?"', search), (
        "no page texts"
    )
    assert "_static/mathjax/tex-mml-chtml.js" in search, "no MathJax on the search page"
    repro = (built_book.html / "reproducibility.html").read_text(encoding="utf8")
    assert not set(exec_status.STATUS_WORDS) & set(repro)
    table = repro[repro.index('<th class="head"><p>Status</p></th>') :]
    table = table[: table.index("</table>")]
    statuses = re.findall(r"<td><p>(?:<abbr[^>]*>)?([^<]*)(?:</abbr>)?</p></td>\s*</tr>", table)
    chapters = [p for p in toc_pages() if (BOOK / f"{p}.ipynb").is_file()]
    assert len(statuses) >= len(chapters) and set(statuses) == {"ok"}, statuses
