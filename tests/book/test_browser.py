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
opening of the page, resized from 1400 to 390 px), on every page:
* at 1400x900: no element wider than the content column outside a scroll container; every image
  shown at >= 90 % of its natural width (the width it declares, for an image drawn at a higher
  resolution for the column); every numbered Definition / Theorem /
  Proposition box followed by a figure or table within 700 px; no paragraph over 150 words and
  no bold run over 25; on the landing page the verdict table starts above 900 px;
* at 390x844: no horizontal scroll of the page; no table cell hidden (a table reflows, or scrolls
  inside its own box);
* at both widths, with every dropdown open (fit_problems): every figure fits its column, in no
  sideways-scrolling box (a tap shows it at its natural width: test_figure_enlarges_on_a_phone); no
  number with its error ("0.5231 ± 0.0012", "(1.64 ± 0.12) × 10⁻⁴") breaks across lines, wherever it
  stands; every table fits the column or scrolls inside its own box, which then shows a cue at its
  cut edge (a fade); and no emoji, which a machine without an emoji font draws as an empty box.

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
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-default-apps",
    "--disable-extensions",
    "--no-default-browser-check",
    "--metrics-recording-only",
    "--disable-domain-reliability",
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
EVIDENCE_PX = 700  # a statement box's figure or table must start within this distance
MAX_PARAGRAPH_WORDS = 150
MAX_BOLD_WORDS = 25
FIRST_SCREEN_PX = 900  # the landing page's verdict table starts above this
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
        found.append(
            {
                "kind": kind,
                "label": opts.get("label"),
                "numbered": kind not in PRF_UNNUMBERED and "nonumber" not in opts,
            }
        )
    return found


def source_has_math(text: str) -> bool:
    return bool(HAS_MATH.search(CODE_FENCE.sub("", text)))


# --------------------------------------------------------------------------- fixtures


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
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
        self.context.on(
            "requestfailed", lambda req: self.failed.append(f"{req.url} ({req.failure})")
        )
        self.context.on(
            "response",
            lambda resp: resp.status >= 400 and self.bad_status.append(f"{resp.status} {resp.url}"),
        )
        self.page = self.context.new_page()
        self.page.on("pageerror", lambda exc: self.errors.append(str(exc)))
        self.page.on("console", lambda msg: msg.type == "error" and self.console.append(msg.text))
        self.page.goto(url, wait_until="load", timeout=60_000)
        self.page.evaluate(
            "async () => { if (window.MathJax && MathJax.startup && MathJax.startup.promise) "
            "await MathJax.startup.promise; }"
        )

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
  await Promise.all(imgs.map(img => img.complete ? null : new Promise(res => {
    img.addEventListener('load', res);
    img.addEventListener('error', res);
  })));
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
    shown = run.page.evaluate(
        "() => Array.from(document.querySelectorAll('div.cell.tag_parameters .cell_input, "
        "div.cell.tag_injected-parameters')).filter(e => e.checkVisibility() "
        "&& !e.closest('details:not([open])')).length"
    )
    if shown:
        problems.append(
            f"{shown} parameters cell(s) shown expanded; "
            "allowed: collapsed (hide-cell or companion.js)"
        )
    return problems


def toc_pages():
    from bookutils import toc_pages as pages

    return pages()


def test_page_in_browser(open_page, toc_page, page_markdown, built_book):
    """Both sets of checks of the module docstring on one opening of the page, at 1400 px and then
    resized to 390 px: a page load with its MathJax typesetting is most of a check's cost, so the
    checks share it. Its URL carries ALL_AT_ONCE (a query and a hash that once made the theme's or
    Sphinx's scripts throw); the pages with scripts of their own get every odd URL on its own in
    test_no_script_error_for_odd_queries_and_hashes, and a load at 390 px with touch in
    test_figure_enlarges_on_a_phone (the explorer's: test_usable_at_390px)."""
    run = open_page(toc_page, WIDE, ALL_AT_ONCE)
    problems = browser_problems(run, toc_page, page_markdown)
    layout = layout_problems(
        run,
        toc_page,
        expected_content(built_book.html / f"{toc_page}.html", page_markdown(toc_page)),
    )
    problems += [f"layout: {p}" for p in layout]
    assert not problems, f"{toc_page}.html:\n  " + "\n  ".join(problems)


# --------------------------------------------------------------------------- reader-facing layout

LAYOUT_JS = r"""
async (limits) => {
  const imgs = Array.from(document.images);
  for (const img of imgs) { if (img.loading === 'lazy') img.loading = 'eager'; }
  await Promise.all(imgs.map(img => img.complete ? null : new Promise(res => {
    img.addEventListener('load', res);
    img.addEventListener('error', res);
  })));
  const art = document.querySelector('article.bd-article');
  if (!art) return {missing: true};
  const cs = getComputedStyle(art), box = art.getBoundingClientRect();
  const left = box.left + parseFloat(cs.paddingLeft);
  const right = box.right - parseFloat(cs.paddingRight);
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
  const where = el => {
    const h = [];
    for (let p = el; p && p !== art && h.length < 4; p = p.parentElement) h.unshift(name(p));
    return h.join(' > ');
  };

  // 1. nothing wider than the column, unless a scroll (or clipping) container inside the column
  //    holds it
  const SCROLL = new Set(['auto', 'scroll', 'hidden', 'clip']);
  const inside = r => r.left >= left - 1 && r.right <= right + 1;
  const held = el => {
    for (let p = el.parentElement; p && p !== art; p = p.parentElement) {
      if (SCROLL.has(getComputedStyle(p).overflowX) && inside(p.getBoundingClientRect())) {
        return true;
      }
    }
    return false;
  };
  const wide = [];
  for (const el of art.querySelectorAll('*')) {
    if (!visible(el)) continue;
    const r = el.getBoundingClientRect();
    if (inside(r) || held(el)) continue;
    if (wide.some(w => w.el.contains(el))) continue;
    const span = `${Math.round(r.left - left)}..${Math.round(r.right - left)}`;
    wide.push({el, text: `${where(el)} (${span} px of ${Math.round(column)})`});
  }

  // 2. images at (nearly) their natural size: the width they declare (an image drawn at twice the
  //    resolution for the column says so in its width attribute), else their pixel width.
  //    Shrinking an image to the column is what made the old 1392 px figures unreadable, so it
  //    does not count.
  const small = [];
  for (const img of art.querySelectorAll('img')) {
    if (!visible(img) || !img.naturalWidth) continue;
    const shown = img.getBoundingClientRect().width;
    const natural = parseFloat(img.getAttribute('width')) || img.naturalWidth;
    if (shown < limits.scale * natural) {
      small.push(`${img.getAttribute('src')}: ${Math.round(shown)} of ${Math.round(natural)} px`);
    }
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
    const next = evidence
        .filter(el => b.compareDocumentPosition(el) & Node.DOCUMENT_POSITION_FOLLOWING)
        .map(el => el.getBoundingClientRect().top - bottom);
    const gap = next.length ? Math.min(...next) : Infinity;
    const distance = Number.isFinite(gap) ? Math.round(gap) + ' px' : 'no figure or table after it';
    if (!(gap <= limits.evidence)) far.push(`${num.textContent.trim()}: ${distance}`);
  }

  // 4. paragraphs and bold runs: words of the visible text, a formula counting as one word
  //    (counted over the whole text, so a word split over elements, "(" + a number in its span +
  //    ",", is one word)
  const words = el => {
    let text = '';
    const walk = node => {
      if (node.nodeType === Node.TEXT_NODE) { text += node.nodeValue; return; }
      if (node.nodeType !== Node.ELEMENT_NODE) return;
      if (node.matches('mjx-container')) { text += ' \u2200 '; return; }
      if (node.matches('script, style, mjx-assistive-mml')) return;
      for (const c of node.childNodes) walk(c);
    };
    walk(el);
    return text.split(/\s+/).filter(Boolean).length;
  };
  const excerpt = ([w, el]) => `${w} words: ${el.textContent.trim().slice(0, 60)}`;
  const long = Array.from(art.querySelectorAll('p')).filter(visible).map(p => [words(p), p])
      .filter(([w]) => w > limits.paragraph).map(excerpt);
  const bold = Array.from(art.querySelectorAll('strong, b')).filter(visible).map(b => [words(b), b])
      .filter(([w]) => w > limits.bold).map(excerpt);

  // 5. the verdict table (a table with a "verdict" column) and where it starts on the page
  const verdictTable = Array.from(art.querySelectorAll('table')).find(t =>
      Array.from(t.querySelectorAll('th')).some(th => /verdict/i.test(th.textContent)));
  const verdictTop =
      verdictTable ? verdictTable.getBoundingClientRect().top + window.scrollY : null;
  return {column, wide: wide.map(w => w.text), small, far, long, bold, verdictTop};
}
"""

LIMITS = {
    "scale": MIN_IMAGE_SCALE,
    "evidence": EVIDENCE_PX,
    "paragraph": MAX_PARAGRAPH_WORDS,
    "bold": MAX_BOLD_WORDS,
}
PAGE_SCROLL_JS = (
    "() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]"
)
# after a resize: two frames, by which the page's ResizeObservers (companion.js) have run
RESIZED_JS = "() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))"
NARROW_JS = r"""
async () => {
  const art = document.querySelector('article.bd-article');
  if (!art) return {hidden: []};
  const open = el => !el.closest('details:not([open])');
  const hidden = Array.from(art.querySelectorAll('table td, table th')).filter(open)
      .filter(c => !c.checkVisibility() || c.getBoundingClientRect().width < 1)
      .map(c =>
          (c.closest('table').className || 'table') + ': ' + c.textContent.trim().slice(0, 30));
  return {hidden};
}
"""

# What fills the column, on a page opened at either width with every dropdown open: figures, numbers
# with their errors, tables. The number pattern is the test's own reading of companion.report.pm and
# num ("0.5231 ± 0.0012", "(7.2 ± 0.8) × 10⁻⁵", "1.2 × 10⁻⁷"; ordinary or no-break spaces), matched
# over the whole text of a block (p, td, li, ...), so a number split over elements counts as one.
FIT_JS = r"""
async () => {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) await MathJax.startup.promise;
  const art = document.querySelector('article.bd-article');
  if (!art) return {missing: true};
  document.querySelectorAll('details:not([open])').forEach(d => { d.open = true; });
  const imgs = Array.from(document.images);
  for (const img of imgs) { if (img.loading === 'lazy') img.loading = 'eager'; }
  await Promise.all(imgs.map(img => img.complete ? null : new Promise(res => {
    img.addEventListener('load', res);
    img.addEventListener('error', res);
  })));
  // resize observers
  await new Promise(res => requestAnimationFrame(() => requestAnimationFrame(res)));
  const cs = getComputedStyle(art), box = art.getBoundingClientRect();
  const left = box.left + parseFloat(cs.paddingLeft);
  const right = box.right - parseFloat(cs.paddingRight);
  const shown = el => el.checkVisibility() && el.getBoundingClientRect().width > 0;
  const scrolls = el => ['auto', 'scroll'].includes(getComputedStyle(el).overflowX);
  const ancestors = el => {
    const a = [];
    for (let p = el.parentElement; p && p !== art; p = p.parentElement) a.push(p);
    return a;
  };
  const src = el => (el.getAttribute('src') || '').split('/').pop().slice(0, 24);

  // (a) figures: within the column, in no box that scrolls sideways
  const figures = Array.from(art.querySelectorAll('figure img, .cell_output img'));
  const visibleFigures = figures.filter(shown);
  const wideFigures = visibleFigures.filter(img => {
    const r = img.getBoundingClientRect();
    return r.left < left - 1 || r.right > right + 1 ||
        ancestors(img).some(a => scrolls(a) && a.scrollWidth > a.clientWidth + 1);
  }).map(img => {
    const width = Math.round(img.getBoundingClientRect().width);
    return `${src(img)}: ${width} px in ${Math.round(right - left)}`;
  });

  // (b) numbers with their errors, each on one line
  const S = '[ \\u00a0]', DIG = '\\d+(?:[.,]\\d+)*', SUP = '[⁻⁰¹²³⁴⁵⁶⁷⁸⁹]+';
  const NUMBER = new RegExp(
      `\\(?[−+-]?${DIG}${S}±${S}(?:${DIG}|\\?|∞)\\)?(?:${S}×${S}10${SUP})?`, 'g');
  const SKIP = 'script, style, pre, code, textarea, mjx-container, .math, svg';
  const blockOf = el => { for (let p = el; p && p !== art; p = p.parentElement) {
      if (!getComputedStyle(p).display.startsWith('inline')) return p; } return art; };
  const blocks = new Set();
  const walker = document.createTreeWalker(art, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const el = n.parentElement;
    if (n.nodeValue.includes('±') && !el.closest(SKIP) && shown(el)) blocks.add(blockOf(el));
  }
  let numbers = 0;
  const broken = [], unread = [];
  for (const block of blocks) {
    const nodes = [], starts = [];
    let text = '';
    const w = document.createTreeWalker(block, NodeFilter.SHOW_TEXT);
    for (let n = w.nextNode(); n; n = w.nextNode()) {
      if (n.parentElement.closest(SKIP)) continue;
      nodes.push(n); starts.push(text.length); text += n.nodeValue;
    }
    const at = offset => {
      let i = starts.length - 1;
      while (i > 0 && starts[i] > offset) i--;
      return [nodes[i], offset - starts[i]];
    };
    const covered = new Set();
    for (const m of text.matchAll(NUMBER)) {
      numbers++;
      for (let k = m.index; k < m.index + m[0].length; k++) covered.add(k);
      const range = document.createRange();
      range.setStart(...at(m.index));
      const [endNode, endOffset] = at(m.index + m[0].length - 1);
      range.setEnd(endNode, endOffset + 1);
      const rects = Array.from(range.getClientRects()).filter(r => r.width > 0 && r.height > 0);
      const top = Math.max(...rects.map(r => r.top));
      const bottom = Math.min(...rects.map(r => r.bottom));
      if (rects.length && top >= bottom - 1) broken.push(m[0]);
    }
    for (let k = text.indexOf('±'); k >= 0; k = text.indexOf('±', k + 1)) {
      if (!covered.has(k) && /\d[ \u00a0]$/.test(text.slice(0, k))) {
        unread.push(text.slice(Math.max(0, k - 20), k + 20));
      }
    }
  }

  const FITS_COLUMNS = 5;  // a table of at most this many columns fits a wide screen's column
  // (c) tables: within the column, or scrolling inside a box that shows a cue while it is cut
  const tables = Array.from(art.querySelectorAll('table')).filter(shown);
  const cut = [], uncued = [], narrowCut = [];
  for (const table of tables) {
    const head = Array.from(table.querySelectorAll('th')).slice(0, 4)
        .map(th => th.textContent.trim()).join('|').slice(0, 50);
    const scroller = ancestors(table).find(scrolls);
    const r = (scroller || table).getBoundingClientRect();
    if (r.left < left - 1 || r.right > right + 1) {
      uncued.push(`${head}: wider than the column`);
      continue;
    }
    if (!scroller || scroller.scrollWidth <= scroller.clientWidth + 1) continue;
    cut.push(head);
    const columns = table.rows[0] ? table.rows[0].cells.length : 0;
    if (columns <= FITS_COLUMNS && window.innerWidth >= 1200) {  // a per-layer table: 4 layers
      narrowCut.push(`${head}: ${columns} columns`);
      continue;
    }
    const st = getComputedStyle(scroller);
    const cue = [st.maskImage, st.webkitMaskImage, st.boxShadow, st.backgroundImage]
        .some(v => v && v !== 'none');
    const widths = `${scroller.clientWidth} of ${scroller.scrollWidth} px`;
    if (!cue) uncued.push(`${head}: cut at ${widths}, no cue`);
  }

  // on a narrow (touch) screen each figure says that a tap enlarges it (no zoom cursor there)
  const noTapCue = window.innerWidth > 700 ? [] : Array.from(art.querySelectorAll('figure'))
      .filter(f => shown(f) && f.querySelector('img'))
      .filter(f => !getComputedStyle(f, '::before').content.includes('tap'))
      .map(f => (f.querySelector('figcaption') || f).textContent.trim().slice(0, 40));

  // a display formula wider than the column scrolls with the tables' cue (companion.js)
  for (const math of art.querySelectorAll('mjx-container[display="true"]')) {
    const st = getComputedStyle(math);
    const faded = [st.maskImage, st.webkitMaskImage].some(v => v && v !== 'none');
    if (shown(math) && math.scrollWidth > math.clientWidth + 1 && !faded) {
      uncued.push('a display formula: cut, no cue');
    }
  }

  // a citation is read and copied whole: it wraps, never hides past the column's edge
  for (const pre of art.querySelectorAll('div.highlight-bibtex pre')) {
    if (shown(pre) && pre.scrollWidth > pre.clientWidth + 1) uncued.push('a citation block: cut');
  }

  // (d) emoji (drawn as an empty box without an emoji font)
  const emoji = [];
  const ew = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let n = ew.nextNode(); n; n = ew.nextNode()) {
    const el = n.parentElement;
    if (/\p{Emoji_Presentation}|\uFE0F/u.test(n.nodeValue) && !el.closest('script, style') &&
        shown(el)) {
      emoji.push(n.nodeValue.trim().slice(0, 30));
    }
  }
  return {figures: figures.length, visibleFigures: visibleFigures.length, wideFigures, numbers,
          broken, unread, tables: tables.length, cut, uncued, narrowCut, noTapCue, emoji};
}
"""


def expected_content(page: Path, markdown: str) -> dict:
    """What FIT_JS must find on a page (its built HTML ``page``, its source's ``markdown``), so that
    its checks cannot pass on nothing: as many figures as the source glues ({glue:figure}),
    a number with its error where the page's text has one, a table where the page has one."""
    html = page.read_text(encoding="utf8")
    text = re.sub(r"<(pre|script|style)\b.*?</\1>|<[^>]+>", " ", html, flags=re.S)
    return {
        "figures": len(re.findall(r"\{glue:figure\}", markdown)),
        "numbers": bool(re.search("\\d[ \u00a0]\u00b1[ \u00a0][\\d?\u221e]", text)),
        "tables": "<table" in html,
    }


def fit_problems(run: PageRun, width: int, expected: dict | None) -> list[str]:
    """FIT_JS on the page open in ``run`` (it opens every dropdown): what does not fit, and what was
    expected but not found."""
    found = run.page.evaluate(FIT_JS)
    if found.get("missing"):
        return ["no article.bd-article"]
    at = f"at {width} px"
    problems = [
        f"{at} {what}: {found[key][:6]}"
        for key, what in (
            ("wideFigures", "figures wider than the column or scrolling sideways"),
            ("broken", "numbers with their errors broken across lines"),
            ("unread", "a '±' the check does not read as a number with its error"),
            ("uncued", "tables cut without a cue"),
            ("narrowCut", f"tables of at most 5 columns cut (they fit at {WIDE['width']} px)"),
            ("noTapCue", "figures that do not say a tap enlarges them"),
            ("emoji", "emoji (an empty box without an emoji font)"),
        )
        if found[key]
    ]
    if expected is not None:
        if found["figures"] < expected["figures"] or (
            expected["figures"] and not found["visibleFigures"]
        ):
            problems.append(
                f"{at} {found['figures']} figures ({found['visibleFigures']} shown); "
                f"the source glues {expected['figures']}"
            )
        if expected["numbers"] and not found["numbers"]:
            problems.append(f"{at} no number with its error found, but the page has some")
        if expected["tables"] and not found["tables"]:
            problems.append(f"{at} no table shown, but the page has some")
    return problems


def layout_problems(run: PageRun, docname: str, expected: dict | None = None) -> list[str]:
    """Everything the reader-facing checks find wrong on the page open in ``run`` at 1400x900
    (empty when it passes); then the same page resized to 390x844, as a window or a turned phone
    is (companion.js follows a resize: its ResizeObserver), for the phone's checks. ``expected``
    (expected_content): what fit_problems must find at both widths."""
    found = run.page.evaluate(LAYOUT_JS, LIMITS)
    if found.get("missing"):
        return [f"{docname}.html has no article.bd-article"]
    problems = []
    for key, what in (
        ("wide", f"wider than the {found['column']:.0f} px column, outside a scroll box"),
        ("small", f"images shown below {MIN_IMAGE_SCALE:.0%} of their natural width"),
        ("far", f"statement boxes without a figure or table within {EVIDENCE_PX} px"),
        ("long", f"paragraphs over {MAX_PARAGRAPH_WORDS} words"),
        ("bold", f"bold runs over {MAX_BOLD_WORDS} words"),
    ):
        if found[key]:
            problems.append(f"{what}: {found[key][:6]}")
    if docname == "index":
        top = found["verdictTop"]
        if top is None or top >= FIRST_SCREEN_PX:
            problems.append(
                f"the verdict table starts at {top} px; allowed: above {FIRST_SCREEN_PX} px"
            )
    problems += fit_problems(run, WIDE["width"], expected)
    logs = (run.errors, run.console, run.blocked, run.failed, run.bad_status)
    before = [len(log) for log in logs]
    run.page.set_viewport_size(NARROW)
    run.page.evaluate(RESIZED_JS)
    scroll, client = run.page.evaluate(PAGE_SCROLL_JS)
    if scroll > client + 1:
        problems.append(
            f"at 390 px the page scrolls sideways: {scroll} px of content in {client} px"
        )
    phone = run.page.evaluate(NARROW_JS)
    if phone["hidden"]:
        problems.append(f"at 390 px table cells are hidden: {phone['hidden'][:6]}")
    problems += fit_problems(run, NARROW["width"], expected)
    run.page.wait_for_timeout(200)  # late script errors and requests
    after = [entry for log, seen in zip(logs, before) for entry in log[seen:]]
    if after:
        problems.append(f"at 390 px: script errors or failed requests {after}")
    return problems


def test_citations_link_to_the_references_page(built_book, page_markdown):
    """The references page exists, lists the paper, and every page that cites ({cite:t}, {cite:p})
    links each citation to an entry of it."""
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
        assert set(targets) <= ids, (
            f"{page}.html links to missing references: {sorted(set(targets) - ids)}"
        )
        citing.append(page)
    assert len(citing) >= 2, citing


def test_landing_figure_enlarges_and_its_numbers_download(open_page):
    """Click to enlarge (companion.js) and the data: URI downloads (report.download)
    work in a browser."""
    import base64

    run = open_page("index")
    img = run.page.locator("article figure img").first
    img.click()
    assert run.page.locator(".zoom-overlay img").count() == 1
    big = run.page.evaluate(
        "() => document.querySelector('.zoom-overlay img').getBoundingClientRect().width"
    )
    assert big > run.page.evaluate(
        "() => document.querySelector('article figure img').getBoundingClientRect().width"
    )
    run.page.keyboard.press("Escape")
    assert run.page.locator(".zoom-overlay").count() == 0
    links = run.page.evaluate(
        "() => Array.from(document.querySelectorAll('a.data-download'))"
        ".map(a => [a.getAttribute('download'), a.getAttribute('href')])"
    )
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
ODD_SUFFIXES = (
    "?q=x",
    "?q=%3Cb%3E&highlight=%E0%A4%A",
    "#%E0%A4%A",
    "?q=x#<img src=x onerror=alert(1)>",
)
# (consecutive suffixes differ in their query: every one is a full page load). Every suffix on the
# pages with scripts of their own (the explorer's: each part of these and more, in
# test_explorer_browser.py's ODD_URLS); every page, these too, opened with one URL that holds all
# of them at once (test_page_in_browser: the others share the theme's and Sphinx's scripts).
EVERY_SUFFIX_PAGES = {"index", "layernorm"}
ALL_AT_ONCE = "?q=%3Cb%3E&highlight=%E0%A4%A#<img src=x onerror=alert(1)>%E0%A4%A"


@pytest.mark.parametrize("page", sorted(EVERY_SUFFIX_PAGES))
def test_no_script_error_for_odd_queries_and_hashes(browser, site, page):
    """Each odd URL loaded in turn in one browser context (every suffix changes the query, so each
    is a full load that runs every script again), on the pages with scripts of their own;
    every other page gets ALL_AT_ONCE in test_page_in_browser's opening."""
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


def test_figure_enlarges_on_a_phone(browser, site):
    """At 390 px a figure takes the column's width; a tap shows it at its natural width at least, in
    an overlay that scrolls sideways (the page does not); Escape closes it,
    and so does a tap on it."""
    context = browser.new_context(
        viewport=NARROW, has_touch=True, is_mobile=True, service_workers="block"
    )
    try:
        page = context.new_page()
        page.goto(site + "layernorm.html", wait_until="load", timeout=60_000)
        img = page.locator("article figure img").first
        img.scroll_into_view_if_needed()
        shown, natural = img.evaluate(
            "i => [i.getBoundingClientRect().width, "
            "parseFloat(i.getAttribute('width')) || i.naturalWidth]"
        )
        column = page.evaluate(
            "() => { const a = document.querySelector('article.bd-article'), "
            "s = getComputedStyle(a);"
            " return a.clientWidth - parseFloat(s.paddingLeft) - parseFloat(s.paddingRight); }"
        )
        assert natural > column >= shown > 0.9 * column, (shown, column, natural)
        img.tap()
        overlay = page.locator(".zoom-overlay")
        assert overlay.count() == 1
        big = page.evaluate(
            "() => { const o = document.querySelector('.zoom-overlay'); return {"
            "width: o.querySelector('img').getBoundingClientRect().width, scroll: o.scrollWidth,"
            "client: o.clientWidth, page: document.documentElement.scrollWidth}; }"
        )
        assert big["width"] >= natural - 1 and big["scroll"] > big["client"], big
        assert big["page"] <= NARROW["width"], big
        page.keyboard.press("Escape")
        assert overlay.count() == 0
        img.tap()
        overlay.tap()
        assert overlay.count() == 0
    finally:
        context.close()


def test_a_cut_table_fades_at_the_edge_with_more(open_page):
    """A table wider than the column (the conclusion's contrasts at 1400 px) scrolls in its box,
    whose right edge fades while there is more to the right; scrolled to the end, the left edge
    fades instead. A table that fits does not fade."""
    run = open_page("conclusion", WIDE)
    state = r"""() => Array.from(document.querySelectorAll('article table'))
      .filter(t => t.checkVisibility()).map(t => {
        const box = t.parentElement, st = getComputedStyle(box);
        return {cut: box.scrollWidth > box.clientWidth + 1,
                mask: st.maskImage || st.webkitMaskImage,
                right: box.classList.contains('cut-right'),
                left: box.classList.contains('cut-left')};
      })"""
    boxes = run.page.evaluate(state)
    cut = [b for b in boxes if b["cut"]]
    assert cut and len(cut) < len(boxes), boxes
    assert all(b["mask"] != "none" and b["right"] and not b["left"] for b in cut), cut
    assert all(b["mask"] == "none" for b in boxes if not b["cut"]), boxes
    run.page.evaluate(
        "() => document.querySelectorAll('article .table-scroll')"
        ".forEach(b => { b.scrollLeft = b.scrollWidth; })"
    )
    run.page.wait_for_timeout(100)
    ended = [b for b in run.page.evaluate(state) if b["cut"]]
    assert all(b["mask"] != "none" and b["left"] and not b["right"] for b in ended), ended


SEARCH_WAIT_JS = r"""() => {
  const status = document.querySelector('#search-results .search-summary');
  const items = document.querySelectorAll('#search-results ul.search > li');
  return !!status && /finished/.test(status.textContent) && items.length > 0 &&
      Array.from(items).every(li => li.querySelector('p.context')) &&
      !document.querySelector('#search-results span.math:not(:has(mjx-container))');
}"""


@pytest.mark.parametrize(
    "query, title", [("trend", None), ("nothing to order", "At α = 1: nothing to order")]
)
def test_search_from_disk_reads_cleanly(browser, built_book, query, title):
    """The search page opened from disk (file://, as the book is read offline): every result has its
    summary (the page texts of offline_search, not a fetch, which a browser refuses from file://),
    the summaries' math is typeset, a result's title shows a formula as text,
    and no raw TeX is left."""
    from urllib.parse import quote

    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    run = PageRun(browser, (built_book.html / "search.html").as_uri() + "?q=" + quote(query), WIDE)
    try:
        try:
            run.page.wait_for_function(SEARCH_WAIT_JS, timeout=20_000)
        except PlaywrightTimeout:
            shown = run.page.evaluate(
                "() => (document.getElementById('search-results') || document.body).innerText"
            )
            pytest.fail(
                "no summary (or untypeset math) under some result after 20 s; errors "
                f"{run.errors + run.console}; the results read:\n{shown[:1500]}",
                pytrace=False,
            )
        found = run.page.evaluate(r"""() => ({
            titles: Array.from(document.querySelectorAll('#search-results ul.search > li > a'))
              .map(a => a.textContent),
            summaries: Array.from(document.querySelectorAll('#search-results p.context'))
              .map(p => p.innerText),
            typeset: document.querySelectorAll('#search-results p.context mjx-container').length,
            text: document.getElementById('search-results').innerText})""")
        assert len(found["summaries"]) == len(found["titles"]) >= 1, found["titles"]
        assert all(s.strip(". ") for s in found["summaries"]), found["summaries"]
        raw = [t for t in [*RAW_TEX, "\\alpha", "^{", "_{"] if t in found["text"]]
        assert not raw, f"raw TeX {raw} in the results: {found['text'][:1500]}"
        if title is None:
            assert found["typeset"] >= 1, found["summaries"]
        else:
            assert any(t.endswith(title) for t in found["titles"]), found["titles"]
        assert not (run.errors or run.console), run.errors + run.console
    finally:
        run.close()
