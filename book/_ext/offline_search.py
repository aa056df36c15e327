"""The search page, read offline: every result with a summary, its math typeset.

Sphinx's search page fetches each result's page to show a summary of its text. From ``file://`` the
browser refuses those fetches (no summaries, a "Failed to fetch" script error per result), and over
HTTP the summary shows the page's math as raw TeX ("\\(S^{(4)}\\)"). This extension

* writes the text of every page into ``_static/page-texts.js`` when the build has finished: the
  page's main content (``[role="main"]``, what Sphinx's summaries read) reduced to its text and the
  elements with an id, which a result's anchor names; the search page alone loads it, and
  ``companion.js`` answers the search's fetches from it;
* loads MathJax on the search page (the book's offline copy, ``mathjax_path``, and its configuration
  with the book's macros), which typesets the formulas of the summaries (``companion.js``).

Reading a page's text takes 0.01-0.15 s, so each text is kept in ``TEXTS_CACHE`` of the
doctree folder under the hash of the page's main content, from which alone it is read: a build that
rewrote a page without changing that content (a rerun's site, a new announcement) reads it back.
"""

from __future__ import annotations

import hashlib
import html
import json
import os
import re
from html.parser import HTMLParser
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.util import logging

logger = logging.getLogger(__name__)

#: Below ``_static`` of the built site; read by the search page only.
TEXTS = "page-texts.js"
#: In the doctree folder: {docname: [hash of the page's main content, its text]}.
TEXTS_CACHE = "page-texts.json"
#: What Sphinx's summaries leave out of a page's text (searchtools.js, Search.htmlToText): these
#: elements and a class.
DROPPED_TAGS, DROPPED_CLASS = ("script", "style"), "headerlink"
#: Elements without an end tag (HTML's void elements).
VOID = frozenset("area base br col embed hr img input link meta param source track wbr".split())
_SPACE = re.compile(r"\s+")


class _MainText(HTMLParser):
    """The text of the first ``role="main"`` element, read as a stream (a tree of the page, as
    BeautifulSoup builds it, took three times as long)."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.out: list[str] = []
        self.open: list[tuple[str, bool, bool]] = []  # (tag, wrote a <div id>, dropped) per element
        self.run: list[str] = []  # the text since the last tag
        self.dropping = 0  # dropped elements open
        self.found = self.done = False

    def _end_run(self) -> None:
        if self.run:
            self.out.append(html.escape(_SPACE.sub(" ", "".join(self.run)), quote=False))
            self.run = []

    def handle_starttag(self, tag, attrs):
        if self.done:
            return
        attrs = dict(attrs)
        if not self.found:  # outside the main content until it starts
            if attrs.get("role") == "main" and tag not in VOID:
                self.found = True
                self.open.append((tag, False, False))
            return
        self._end_run()
        dropped = not self.dropping and (
            tag in DROPPED_TAGS or DROPPED_CLASS in (attrs.get("class") or "").split()
        )
        ident = attrs.get("id") if not (self.dropping or dropped) else None
        if ident:
            self.out.append(f'<div id="{html.escape(ident)}">')
        if tag in VOID:
            if ident:
                self.out.append("</div>")
            return
        self.open.append((tag, bool(ident), dropped))
        self.dropping += dropped

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        if tag not in VOID:
            self.handle_endtag(tag)

    def handle_endtag(self, tag):
        if self.done or tag not in (t for t, _, _ in self.open):
            return  # an end without its start is no element
        self._end_run()
        while self.open:
            name, wrapped, dropped = self.open.pop()
            self.dropping -= dropped
            if wrapped:
                self.out.append("</div>")
            if name == tag:
                break
        self.done = not self.open

    def handle_data(self, data):
        if self.open and not self.dropping and not self.done:
            self.run.append(data)

    def handle_comment(self, data):  # a comment ends a run of text, and is none
        self._end_run()

    handle_decl = handle_pi = unknown_decl = handle_comment

    def close(self):  # the text after the last tag ends there
        super().close()
        self._end_run()


def page_text(page_html: str) -> str:
    """A page's main content as the search's summaries read it: its text (runs of white space as one
    space), inside ``<div id=...>`` for every element that has an id, in ``<div role="main">``."""
    reader = _MainText()
    reader.feed(page_html)
    reader.close()
    return '<div role="main">' + "".join(reader.out) + "</div>" if reader.found else ""


def on_html_page_context(app: Sphinx, pagename, templatename, context, doctree) -> None:
    """On the search page: MathJax as any page with math gets it, and the page texts."""
    if pagename != "search" or app.builder.format != "html":
        return
    if app.config.mathjax3_config:
        app.add_js_file(None, body="window.MathJax = " + json.dumps(app.config.mathjax3_config))
    app.add_js_file(app.config.mathjax_path, loading_method="defer")
    app.add_js_file(TEXTS)


def main_content(page_html: str) -> str:
    """The page's ``<main role="main">`` element as written (Sphinx's themes have one)."""
    start = page_html.find('role="main"')
    if start < 0:
        return ""
    return page_html[page_html.rfind("<", 0, start) : page_html.rfind("</main>") + len("</main>")]


def _cached_texts(path: Path) -> dict:
    try:
        cached = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return cached if isinstance(cached, dict) else {}


def on_build_finished(app: Sphinx, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html":
        return
    store = Path(app.doctreedir, TEXTS_CACHE)
    cached, kept, texts = _cached_texts(store), {}, {}
    for docname in sorted(app.env.found_docs):
        page = Path(app.outdir, app.builder.get_target_uri(docname))
        if not page.is_file():
            continue
        main = main_content(page.read_text(encoding="utf-8"))
        key = hashlib.sha256(main.encode("utf-8")).hexdigest()
        hit = cached.get(docname)
        text = hit[1] if isinstance(hit, list) and hit[:1] == [key] else page_text(main)
        texts[docname], kept[docname] = text, [key, text]
    tmp = store.with_name(f"{TEXTS_CACHE}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(kept), encoding="utf-8")
    tmp.replace(store)
    target = Path(app.outdir, "_static", TEXTS)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(
        "window.COMPANION_PAGE_TEXTS = " + json.dumps(texts, sort_keys=True) + ";\n",
        encoding="utf-8",
    )
    logger.info("offline_search: the texts of %d pages for the search's summaries", len(texts))


def setup(app: Sphinx):
    app.setup_extension("sphinx.ext.mathjax")
    app.connect("html-page-context", on_html_page_context)
    app.connect("build-finished", on_build_finished)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
