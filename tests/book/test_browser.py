"""Open every page of the built book in a real headless browser with the network blocked.

Debian's chromium (/usr/bin/chromium, `apt-get install chromium`) is driven by the
playwright Python package (never `playwright install`: it downloads browsers). The site
is served from 127.0.0.1; any request to another host is aborted and recorded.

For each page in _toc.yml:
* math is typeset: every `.math` element holds an `mjx-container`, there is no MathJax
  error box (`mjx-merror`, e.g. an undefined macro), no raw TeX (`$$`, `\\begin{`, `\\(`,
  `\\[`) is left in the visible text, and a page whose source has math shows some;
* every `<img>` loaded (naturalWidth > 0);
* every `prf:` statement in the source is rendered: for a numbered kind, a
  `div.proof.<kind>.admonition` (with `id=<label>` when it has one) whose
  `p.admonition-title > span.caption-number` reads "<Kind> <number>" (e.g. "Theorem 1");
  for `prf:proof`, a `div.proof.admonition` that starts with "Proof.";
* no request left the machine, no local request failed (the favicon included), no uncaught
  script error, no error on the console.

The reader-facing layout (layout_problems; checked by test_page_in_browser on the same
opening of the page), on every page:
* at 1400x900: no element wider than the content column outside a scroll container; every image
  shown at >= 90 % of its natural width (the width it declares, for an image drawn at a higher
  resolution for the column); every numbered Definition / Theorem /
  Proposition box followed by a figure or table within 700 px; no paragraph over 150 words and
  no bold run over 25; on the landing page the verdict table starts above 900 px;
* at 390x844: no horizontal scroll of the page; no table cell hidden (a table reflows, or scrolls
  inside its own box); every figure shown at >= 75 % of its natural width (its smallest text, 9 pt at
  the natural size, stays >= 9 CSS px), scrolling sideways inside its own box where it must.

Without chromium (or playwright) the tests are skipped, unless the environment variable CI
is set: then they fail.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import os
import re
import shutil
import threading
from pathlib import Path
from urllib.parse import urlsplit

import pytest

pytestmark = pytest.mark.book

REPO = Path(__file__).resolve().parents[2]
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
    "--disable-default-apps", "--disable-extensions", "--no-default-browser-check",
    "--metrics-recording-only", "--disable-domain-reliability",
    # defence in depth: no host name resolves except localhost
    "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE localhost , EXCLUDE 127.0.0.1",
]
LOCAL_HOSTS = {"127.0.0.1", "localhost", "::1", "[::1]"}
LOCAL_SCHEMES = {"data", "blob", "about", "file", "chrome-error"}
# A numbered prf kind -> the word in its title ("prf:theorem" -> "Theorem 1").
PRF_UNNUMBERED = {"proof"}
PRF_DIRECTIVE = re.compile(
    r"^[ \t]*(?P<fence>`{3,}|:{3,})[ \t]*\{prf:(?P<kind>[a-z]+)\}[^\n]*\n"
    r"(?P<opts>(?:[ \t]*:[\w-]+:[^\n]*\n)*)",
    re.M,
)
CODE_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})(?![ \t]*\{)[^\n]*\n.*?^[ \t]*\1[ \t]*$", re.M | re.S)
WIDE, NARROW = {"width": 1400, "height": 900}, {"width": 390, "height": 844}
EVIDENCE_PX = 700          # a statement box's figure or table must start within this distance
MAX_PARAGRAPH_WORDS = 150
MAX_BOLD_WORDS = 25
FIRST_SCREEN_PX = 900      # the landing page's verdict table starts above this
MIN_IMAGE_SCALE = 0.9
HAS_MATH = re.compile(r"\$|\\begin\{|\{math\}|\\\(|\\\[")
RAW_TEX = ["$$", "\\begin{", "\\end{", "\\(", "\\)", "\\[", "\\]"]


def _ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def _unavailable(reason: str):
    if _ci():
        pytest.fail(f"{reason} (CI is set, so the browser test may not be skipped)", pytrace=False)
    pytest.skip(f"{reason}; install it with `apt-get install -y chromium` (skipped outside CI)")


def _chromium() -> str:
    path = os.environ.get("CHROMIUM", "/usr/bin/chromium")
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        path = shutil.which("chromium") or ""
    if not path:
        _unavailable("chromium is not installed (looked for /usr/bin/chromium and `chromium`)")
    return path


# --------------------------------------------------------------------------- sources

def expected_statements(text: str) -> list[dict]:
    """prf directives in a page's markdown: kind, label, numbered."""
    found = []
    for m in PRF_DIRECTIVE.finditer(text):
        opts = dict(
            (k.lower(), v.strip())
            for k, v in re.findall(r"^[ \t]*:([\w-]+):[ \t]*([^\n]*)$", m.group("opts"), re.M)
        )
        kind = m.group("kind")
        found.append({
            "kind": kind,
            "label": opts.get("label"),
            "numbered": kind not in PRF_UNNUMBERED and "nonumber" not in opts,
        })
    return found


def source_has_math(text: str) -> bool:
    return bool(HAS_MATH.search(CODE_FENCE.sub("", text)))


# --------------------------------------------------------------------------- fixtures

class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # noqa: D401 - silence the access log
        pass


@contextlib.contextmanager
def serve_directory(directory: Path):
    """Serve ``directory`` on 127.0.0.1 (a random free port) from a thread; yields the base URL."""
    handler = functools.partial(_QuietHandler, directory=str(directory))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def site(built_book):
    """Serve _build/html on 127.0.0.1 (a random free port) from a thread."""
    with serve_directory(built_book.html) as url:
        yield url


@pytest.fixture(scope="module")
def browser():
    """A headless chromium; :func:`open_page` gives each page a fresh context (empty storage, so a
    first-visit console error shows on every page) with the network blocked."""
    executable = _chromium()
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("the playwright Python package is not installed")
    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=executable, headless=True, args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


class PageRun:
    """One page opened in a fresh browser context: the page, and what went wrong on the way."""

    def __init__(self, chromium, url: str, viewport: dict):
        self.blocked, self.failed, self.bad_status, self.errors, self.console = [], [], [], [], []
        self.context = chromium.new_context(viewport=viewport, service_workers="block")
        self.context.route("**/*", self._route)
        self.context.on("requestfailed", lambda req: self.failed.append(f"{req.url} ({req.failure})"))
        self.context.on("response", lambda resp: resp.status >= 400 and self.bad_status.append(f"{resp.status} {resp.url}"))
        self.page = self.context.new_page()
        self.page.on("pageerror", lambda exc: self.errors.append(str(exc)))
        self.page.on("console", lambda msg: msg.type == "error" and self.console.append(msg.text))
        self.page.goto(url, wait_until="load", timeout=60_000)
        self.page.evaluate("async () => { if (window.MathJax && MathJax.startup && MathJax.startup.promise) "
                           "await MathJax.startup.promise; }")

    def _route(self, r):
        parts = urlsplit(r.request.url)
        if parts.scheme in LOCAL_SCHEMES or (parts.hostname or "") in LOCAL_HOSTS:
            r.continue_()
        else:
            self.blocked.append(r.request.url)
            r.abort("blockedbyclient")

    def close(self):
        self.context.close()


@pytest.fixture
def open_page(browser, site):
    runs = []

    def opener(docname: str, viewport: dict = WIDE, suffix: str = "") -> PageRun:
        run = PageRun(browser, site + f"{docname}.html{suffix}", viewport)
        runs.append(run)
        return run

    yield opener
    for run in runs:
        run.close()


# --------------------------------------------------------------------------- the check

PAGE_REPORT_JS = r"""
async (rawTex) => {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
    await MathJax.startup.promise;
  }
  const imgs = Array.from(document.images);
  for (const img of imgs) { if (img.loading === 'lazy') img.loading = 'eager'; }
  await Promise.all(imgs.map(img => img.complete ? null :
      new Promise(res => { img.addEventListener('load', res); img.addEventListener('error', res); })));
  const brokenImages = imgs.filter(img => !(img.complete && img.naturalWidth > 0))
      .map(img => img.getAttribute('src'));

  const mathEls = Array.from(document.querySelectorAll('.math'));
  const untypeset = mathEls.filter(el => !el.querySelector('mjx-container'))
      .map(el => el.textContent.trim().slice(0, 80));
  const mathErrors = Array.from(document.querySelectorAll('mjx-merror'))
      .map(el => el.getAttribute('data-mjx-error') || el.textContent.slice(0, 80));

  const skip = 'pre, code, script, style, textarea, noscript, mjx-container, .highlight';
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT, {
    acceptNode(node) {
      const p = node.parentElement;
      if (!p || p.closest(skip)) return NodeFilter.FILTER_REJECT;
      if (p.checkVisibility && !p.checkVisibility()) return NodeFilter.FILTER_REJECT;
      return NodeFilter.FILTER_ACCEPT;
    }});
  const rawTexLeft = [];
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const t = n.nodeValue;
    const i = Math.min(...rawTex.map(pat => t.indexOf(pat)).filter(i => i >= 0));
    if (Number.isFinite(i)) rawTexLeft.push(t.slice(Math.max(0, i - 30), i + 50));
  }

  const boxes = Array.from(document.querySelectorAll('div.proof.admonition')).map(d => {
    const title = d.querySelector(':scope > p.admonition-title');
    const num = title && title.querySelector('span.caption-number');
    const r = d.getBoundingClientRect();
    return {
      classes: Array.from(d.classList), id: d.id,
      number: num ? num.textContent.trim() : null,
      title: title ? title.textContent.trim() : null,
      text: d.textContent.trim().slice(0, 60),
      visible: r.width > 0 && r.height > 0,
    };
  });
  return {
    mathJaxLoaded: !!(window.MathJax && MathJax.startup),
    mjx: document.querySelectorAll('mjx-container').length,
    mathEls: mathEls.length, untypeset, mathErrors, rawTexLeft, brokenImages,
    images: imgs.length, boxes,
  };
}
"""


def _match_box(stmt: dict, boxes: list[dict], used: set[int]) -> dict | None:
    for i, box in enumerate(boxes):
        if i in used:
            continue
        if stmt["kind"] == "proof":
            ok = box["classes"] == ["proof", "admonition"]
        else:
            ok = stmt["kind"] in box["classes"]
        if ok and (stmt["label"] is None or box["id"] == stmt["label"]):
            used.add(i)
            return box
    return None


def browser_problems(run, toc_page: str, page_markdown) -> list[str]:
    """What the in-browser checks (module docstring) find wrong on the page opened in ``run``."""
    report = run.page.evaluate(PAGE_REPORT_JS, RAW_TEX)
    run.page.wait_for_timeout(200)  # let late requests (fonts) show up in the log
    log = {"blocked": run.blocked, "failed": run.failed, "bad_status": run.bad_status}
    errors = run.errors

    text = page_markdown(toc_page)
    problems: list[str] = []

    # math
    if source_has_math(text) and report["mjx"] == 0:
        problems.append("the source has math but the page shows no typeset formula (mjx-container)")
    if report["mathEls"] and not report["mathJaxLoaded"]:
        problems.append("the page has math but MathJax did not load")
    if report["untypeset"]:
        problems.append(f"math left untypeset: {report['untypeset'][:5]}")
    if report["mathErrors"]:
        problems.append(f"MathJax errors (undefined macro?): {report['mathErrors'][:5]}")
    if report["rawTexLeft"]:
        problems.append(f"raw TeX in the visible text: {report['rawTexLeft'][:5]}")

    # images
    if report["brokenImages"]:
        problems.append(f"images that did not load: {report['brokenImages']}")

    # prf statements
    used: set[int] = set()
    for stmt in expected_statements(text):
        box = _match_box(stmt, report["boxes"], used)
        what = f"prf:{stmt['kind']}" + (f" ({stmt['label']})" if stmt["label"] else "")
        if box is None:
            problems.append(f"{what} is not rendered as a div.proof box")
            continue
        if not box["visible"]:
            problems.append(f"{what} is rendered but not visible")
        if stmt["kind"] == "proof":
            if not box["text"].startswith("Proof"):
                problems.append(f"{what} does not start with 'Proof': {box['text']!r}")
        elif stmt["numbered"]:
            word = stmt["kind"].capitalize()
            if not re.fullmatch(rf"{word} \d+(\.\d+)*", box["number"] or ""):
                problems.append(f"{what} has title {box['number']!r}, expected '{word} <number>'")

    # network
    if log["blocked"]:
        problems.append(f"requests that would leave the machine: {sorted(set(log['blocked']))}")
    if log["bad_status"]:
        problems.append(f"local requests that failed: {log['bad_status']}")
    failed = [f for f in log["failed"] if f.split(" ")[0] not in log["blocked"]]
    if failed:
        problems.append(f"failed requests: {failed}")
    if errors:
        problems.append(f"uncaught script errors: {errors}")
    if run.console:
        problems.append(f"console errors: {run.console}")
    shown = run.page.evaluate("() => Array.from(document.querySelectorAll('div.cell.tag_parameters .cell_input, "
                              "div.cell.tag_injected-parameters')).filter(e => e.checkVisibility() "
                              "&& !e.closest('details:not([open])')).length")
    if shown:
        problems.append(f"{shown} parameters cell(s) shown expanded; allowed: collapsed (hide-cell or companion.js)")
    return problems


def toc_pages():
    from bookutils import toc_pages as pages

    return pages()


def test_page_in_browser(open_page, toc_page, page_markdown):
    """Both sets of checks of the module docstring on one opening of the page at 1400 px, plus one at
    390 px for the sideways scroll: a page load with its MathJax typesetting is most of a check's
    cost, so the checks share them. The 390 px opening is also the odd-URL check (the URL
    carries ALL_AT_ONCE: a query and a hash that once made the theme's or Sphinx's scripts throw); the
    pages with scripts of their own get every odd URL on its own in
    test_no_script_error_for_odd_queries_and_hashes."""
    run = open_page(toc_page, WIDE)
    problems = browser_problems(run, toc_page, page_markdown)
    layout, _ = layout_problems(open_page, toc_page, wide=run, narrow_suffix=ALL_AT_ONCE)
    problems += [f"layout: {p}" for p in layout]
    assert not problems, f"{toc_page}.html:\n  " + "\n  ".join(problems)


# --------------------------------------------------------------------------- reader-facing layout

LAYOUT_JS = r"""
async (limits) => {
  const imgs = Array.from(document.images);
  for (const img of imgs) { if (img.loading === 'lazy') img.loading = 'eager'; }
  await Promise.all(imgs.map(img => img.complete ? null :
      new Promise(res => { img.addEventListener('load', res); img.addEventListener('error', res); })));
  const art = document.querySelector('article.bd-article');
  if (!art) return {missing: true};
  const cs = getComputedStyle(art), box = art.getBoundingClientRect();
  const left = box.left + parseFloat(cs.paddingLeft), right = box.right - parseFloat(cs.paddingRight);
  const column = right - left;
  // shown on the page: laid out, and not inside a closed <details> (a dropdown or a hidden cell,
  // whose content Chromium still lays out) unless it is that details' summary
  const visible = el => {
    const r = el.getBoundingClientRect();
    if (!(r.width > 0 && r.height > 0) || !el.checkVisibility()) return false;
    const closed = el.closest('details:not([open])');
    return !closed || !!el.closest('summary');
  };
  const name = el => el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') +
      (el.classList.length ? '.' + Array.from(el.classList).slice(0, 3).join('.') : '');
  const where = el => { const h = []; for (let p = el; p && p !== art && h.length < 4; p = p.parentElement) h.unshift(name(p)); return h.join(' > '); };

  // 1. nothing wider than the column, unless a scroll (or clipping) container inside the column holds it
  const SCROLL = new Set(['auto', 'scroll', 'hidden', 'clip']);
  const inside = r => r.left >= left - 1 && r.right <= right + 1;
  const held = el => {
    for (let p = el.parentElement; p && p !== art; p = p.parentElement) {
      if (SCROLL.has(getComputedStyle(p).overflowX) && inside(p.getBoundingClientRect())) return true;
    }
    return false;
  };
  const wide = [];
  for (const el of art.querySelectorAll('*')) {
    if (!visible(el)) continue;
    const r = el.getBoundingClientRect();
    if (inside(r) || held(el)) continue;
    if (wide.some(w => w.el.contains(el))) continue;
    wide.push({el, text: `${where(el)} (${Math.round(r.left - left)}..${Math.round(r.right - left)} px of ${Math.round(column)})`});
  }

  // 2. images at (nearly) their natural size: the width they declare (an image drawn at twice the
  //    resolution for the column says so in its width attribute), else their pixel width. Shrinking
  //    an image to the column is what made the old 1392 px figures unreadable, so it does not count.
  const small = [];
  for (const img of art.querySelectorAll('img')) {
    if (!visible(img) || !img.naturalWidth) continue;
    const shown = img.getBoundingClientRect().width;
    const natural = parseFloat(img.getAttribute('width')) || img.naturalWidth;
    if (shown < limits.scale * natural) small.push(`${img.getAttribute('src')}: ${Math.round(shown)} of ${Math.round(natural)} px`);
  }

  // 3. statement boxes followed by their evidence
  const KINDS = ['definition', 'theorem', 'proposition', 'lemma', 'corollary'];
  const evidence = Array.from(art.querySelectorAll('figure, table, img')).filter(visible)
      .filter(el => !el.closest('div.proof'));
  const far = [];
  for (const b of art.querySelectorAll('div.proof.admonition')) {
    const num = b.querySelector(':scope > p.admonition-title span.caption-number');
    if (!num || !KINDS.some(k => b.classList.contains(k)) || !visible(b)) continue;
    const bottom = b.getBoundingClientRect().bottom;
    const next = evidence.filter(el => b.compareDocumentPosition(el) & Node.DOCUMENT_POSITION_FOLLOWING)
        .map(el => el.getBoundingClientRect().top - bottom);
    const gap = next.length ? Math.min(...next) : Infinity;
    if (!(gap <= limits.evidence)) far.push(`${num.textContent.trim()}: ${Number.isFinite(gap) ? Math.round(gap) + ' px' : 'no figure or table after it'}`);
  }

  // 4. paragraphs and bold runs: words of the visible text, a formula counting as one word
  const words = el => {
    let count = 0;
    const walk = node => {
      if (node.nodeType === Node.TEXT_NODE) { count += node.nodeValue.split(/\s+/).filter(Boolean).length; return; }
      if (node.nodeType !== Node.ELEMENT_NODE) return;
      if (node.matches('mjx-container')) { count += 1; return; }
      if (node.matches('script, style, mjx-assistive-mml')) return;
      for (const c of node.childNodes) walk(c);
    };
    walk(el);
    return count;
  };
  const long = Array.from(art.querySelectorAll('p')).filter(visible).map(p => [words(p), p])
      .filter(([w]) => w > limits.paragraph).map(([w, p]) => `${w} words: ${p.textContent.trim().slice(0, 60)}`);
  const bold = Array.from(art.querySelectorAll('strong, b')).filter(visible).map(b => [words(b), b])
      .filter(([w]) => w > limits.bold).map(([w, b]) => `${w} words: ${b.textContent.trim().slice(0, 60)}`);

  // 5. the verdict table (a table with a "verdict" column) and where it starts on the page
  const verdictTable = Array.from(art.querySelectorAll('table')).find(t =>
      Array.from(t.querySelectorAll('th')).some(th => /verdict/i.test(th.textContent)));
  const verdictTop = verdictTable ? verdictTable.getBoundingClientRect().top + window.scrollY : null;
  return {column, wide: wide.map(w => w.text), small, far, long, bold, verdictTop};
}
"""

LIMITS = {"scale": MIN_IMAGE_SCALE, "evidence": EVIDENCE_PX, "paragraph": MAX_PARAGRAPH_WORDS, "bold": MAX_BOLD_WORDS}
PAGE_SCROLL_JS = "() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]"
#: On a phone a figure keeps at least this share of its natural width (its 9 pt text >= 9 CSS px).
NARROW_IMAGE_SCALE = 0.75
NARROW_JS = r"""
async (scale) => {
  const imgs = Array.from(document.images);
  for (const img of imgs) { if (img.loading === 'lazy') img.loading = 'eager'; }
  await Promise.all(imgs.map(img => img.complete ? null :
      new Promise(res => { img.addEventListener('load', res); img.addEventListener('error', res); })));
  const art = document.querySelector('article.bd-article');
  if (!art) return {hidden: [], small: []};
  const open = el => !el.closest('details:not([open])');
  const hidden = Array.from(art.querySelectorAll('table td, table th')).filter(open)
      .filter(c => !c.checkVisibility() || c.getBoundingClientRect().width < 1)
      .map(c => (c.closest('table').className || 'table') + ': ' + c.textContent.trim().slice(0, 30));
  const small = Array.from(art.querySelectorAll('figure img, .cell_output img')).filter(open)
      .filter(img => img.naturalWidth && img.checkVisibility())
      .filter(img => img.getBoundingClientRect().width < scale * (parseFloat(img.getAttribute('width')) || img.naturalWidth))
      .map(img => `${img.getAttribute('src')}: ${Math.round(img.getBoundingClientRect().width)} px`);
  return {hidden, small};
}
"""


def layout_problems(open_page, docname: str, wide: PageRun | None = None, narrow_suffix: str = "") -> tuple[list[str], dict]:
    """Everything the reader-facing checks find wrong on one page (empty when it passes), and the
    measurements at 1400x900 (on ``wide``, the page already open at that size, if given). The 390 px
    opening's URL ends in ``narrow_suffix``; a script error there is a problem too."""
    run = wide if wide is not None else open_page(docname, WIDE)
    found = run.page.evaluate(LAYOUT_JS, LIMITS)
    problems = []
    if found.get("missing"):
        return [f"{docname}.html has no article.bd-article"], found
    for key, what in (("wide", f"wider than the {found['column']:.0f} px column, outside a scroll box"),
                      ("small", f"images shown below {MIN_IMAGE_SCALE:.0%} of their natural width"),
                      ("far", f"statement boxes without a figure or table within {EVIDENCE_PX} px"),
                      ("long", f"paragraphs over {MAX_PARAGRAPH_WORDS} words"),
                      ("bold", f"bold runs over {MAX_BOLD_WORDS} words")):
        if found[key]:
            problems.append(f"{what}: {found[key][:6]}")
    if wide is None and (run.console or run.errors):      # (browser_problems reports them on a shared run)
        problems.append(f"console errors: {run.console + run.errors}")
    if docname == "index":
        top = found["verdictTop"]
        if top is None or top >= FIRST_SCREEN_PX:
            problems.append(f"the verdict table starts at {top} px; allowed: above {FIRST_SCREEN_PX} px")
    narrow = open_page(docname, NARROW, narrow_suffix)
    scroll, client = narrow.page.evaluate(PAGE_SCROLL_JS)
    found["narrow_scroll"] = scroll - client
    if scroll > client + 1:
        problems.append(f"at 390 px the page scrolls sideways: {scroll} px of content in {client} px")
    phone = narrow.page.evaluate(NARROW_JS, NARROW_IMAGE_SCALE)
    if phone["hidden"]:
        problems.append(f"at 390 px table cells are hidden: {phone['hidden'][:6]}")
    if phone["small"]:
        problems.append(f"at 390 px figures shrink below {NARROW_IMAGE_SCALE:.0%} of their natural width "
                        f"(text under 9 px): {phone['small'][:6]}")
    narrow.page.wait_for_timeout(200)                     # late script errors and requests
    if narrow.errors or narrow.console or narrow.blocked or narrow.failed or narrow.bad_status:
        problems.append(f"at 390 px ({docname}.html{narrow_suffix}): script errors {narrow.errors + narrow.console}, "
                        f"requests {narrow.blocked + narrow.failed + narrow.bad_status}")
    return problems, found


def test_citations_link_to_the_references_page(built_book, page_markdown):
    """The references page exists, lists the paper, and every page that cites ({cite:t}, {cite:p}) links
    each citation to an entry of it."""
    refs = (built_book.html / "references.html").read_text(encoding="utf8")
    assert "LayerNorm Induces Recency Bias in Transformer Decoders" in refs
    ids = set(re.findall(r'id="([^"]+)"', refs))
    citing = []
    for page in toc_pages():
        if page == "references" or not re.search(r"\{cite(:[a-z]+)?\}", page_markdown(page)):
            continue
        html = (built_book.html / f"{page}.html").read_text(encoding="utf8")
        targets = re.findall(r'href="references\.html#([^"]+)"', html)
        assert targets, f"{page}.html cites but links nothing to references.html"
        assert set(targets) <= ids, f"{page}.html links to missing references: {sorted(set(targets) - ids)}"
        citing.append(page)
    assert len(citing) >= 2, citing


def test_landing_figure_enlarges_and_its_numbers_download(open_page):
    """Click to enlarge (companion.js) and the data: URI downloads (report.download) work in a browser."""
    import base64

    run = open_page("index")
    img = run.page.locator("article figure img").first
    img.click()
    assert run.page.locator(".zoom-overlay img").count() == 1
    big = run.page.evaluate("() => document.querySelector('.zoom-overlay img').getBoundingClientRect().width")
    assert big > run.page.evaluate("() => document.querySelector('article figure img').getBoundingClientRect().width")
    run.page.keyboard.press("Escape")
    assert run.page.locator(".zoom-overlay").count() == 0
    links = run.page.evaluate("() => Array.from(document.querySelectorAll('a.data-download'))"
                              ".map(a => [a.getAttribute('download'), a.getAttribute('href')])")
    names = [name for name, _ in links]
    assert "figure-1.csv" in names and "figure-1.json" in names
    href = dict(links)["figure-1.csv"]
    head, payload = href.split(",", 1)
    assert head == "data:text/csv;charset=utf-8;base64"
    header = base64.b64decode(payload).decode().splitlines()[0].split(",")
    assert {"setting", "layer", "quantity", "i", "j", "mean", "se"} <= set(header)
    with run.page.expect_download() as dl:
        run.page.locator('a.data-download[download="figure-1.json"]').click()
    assert dl.value.suggested_filename == "figure-1.json"


# Issue 26: Sphinx's search script, loaded on every page, searched for ?q=... and threw on pages
# without its results box; no URL (query or hash) may raise a script error on any page.
ODD_SUFFIXES = ("?q=x", "?q=%3Cb%3E&highlight=%E0%A4%A", "#%E0%A4%A", "?q=x#<img src=x onerror=alert(1)>")
# (consecutive suffixes differ in their query: every one is a full page load). Every suffix on the pages
# with scripts of their own; every page, these too, opened at 390 px with one URL that holds all of them
# at once (test_page_in_browser: the others share the theme's and Sphinx's scripts).
EVERY_SUFFIX_PAGES = {"index", "explorer", "layernorm"}
ALL_AT_ONCE = "?q=%3Cb%3E&highlight=%E0%A4%A#<img src=x onerror=alert(1)>%E0%A4%A"


@pytest.mark.parametrize("page", sorted(EVERY_SUFFIX_PAGES))
def test_no_script_error_for_odd_queries_and_hashes(browser, site, page):
    """Each odd URL loaded in turn in one browser context (every suffix changes the query, so each is
    a full load that runs every script again), on the pages with scripts of their own; every other
    page gets ALL_AT_ONCE in test_page_in_browser's 390 px opening."""
    assert page in toc_pages(), page
    toc_page, suffixes = page, ODD_SUFFIXES
    run = PageRun(browser, site + f"{toc_page}.html{suffixes[0]}", WIDE)
    try:
        run.page.wait_for_timeout(200)
        errors = [f"{suffixes[0]}: {e}" for e in run.errors]
        for suffix in suffixes[1:]:
            run.errors.clear()
            run.page.goto(site + f"{toc_page}.html{suffix}", wait_until="load", timeout=60_000)
            run.page.wait_for_timeout(200)
            errors += [f"{suffix}: {e}" for e in run.errors]
    finally:
        run.close()
    assert errors == [], f"{toc_page}.html:\n  " + "\n  ".join(errors)