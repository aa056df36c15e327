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
* no request left the machine, no local request failed, no uncaught script error.

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

REPO = Path(__file__).resolve().parents[1]
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
def browser(tmp_path_factory):
    executable = _chromium()
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("the playwright Python package is not installed")
    with sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("chromium-profile")),
            executable_path=executable, headless=True, args=CHROMIUM_ARGS,
            viewport={"width": 1280, "height": 900}, service_workers="block",
        )
        log = {"blocked": [], "failed": [], "bad_status": []}

        def route(r):
            url = r.request.url
            parts = urlsplit(url)
            if parts.scheme in LOCAL_SCHEMES or (parts.hostname or "") in LOCAL_HOSTS:
                r.continue_()
            else:
                log["blocked"].append(url)
                r.abort("blockedbyclient")

        context.route("**/*", route)
        context.on("requestfailed", lambda req: log["failed"].append(f"{req.url} ({req.failure})"))
        context.on("response", lambda resp: resp.status >= 400 and not resp.url.endswith("/favicon.ico")
                   and log["bad_status"].append(f"{resp.status} {resp.url}"))
        try:
            yield context, log
        finally:
            context.close()


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


def test_page_in_browser(browser, site, toc_page, page_markdown):
    context, log = browser
    for key in log:
        log[key].clear()
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        page.goto(site + f"{toc_page}.html", wait_until="load", timeout=60_000)
        report = page.evaluate(PAGE_REPORT_JS, RAW_TEX)
        page.wait_for_timeout(200)  # let late requests (fonts) show up in the log
    finally:
        page.close()

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

    assert not problems, f"{toc_page}.html:\n  " + "\n  ".join(problems)
