"""Drop duplicate <script> entries from every HTML page.

Sphinx 7.4 re-adds scripts registered after ``Builder.init()`` with ``filename or ''``, so a
body-only script registered with ``filename=None`` (sphinx-thebe's configuration:
``const THEBE_JS_URL = ...``) appears twice on each page, and the browser reports
"Identifier 'THEBE_JS_URL' has already been declared". Here ``None`` and ``''`` count as
the same file name and only the first of equal scripts is kept.
"""

from __future__ import annotations

from sphinx.application import Sphinx


def _key(js) -> tuple:
    filename = getattr(js, "filename", js) or ""
    attrs = getattr(js, "attributes", {}) or {}
    return (str(filename), getattr(js, "priority", 500), tuple(sorted(attrs.items())))


def on_html_page_context(app: Sphinx, pagename, templatename, context, doctree) -> None:
    scripts = context.get("script_files")
    if not isinstance(scripts, list):
        return
    seen: set[tuple] = set()
    unique = []
    for js in scripts:
        key = _key(js)
        if key not in seen:
            seen.add(key)
            unique.append(js)
    scripts[:] = unique


def setup(app: Sphinx):
    app.connect("html-page-context", on_html_page_context, priority=999)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
