"""The explorer page in a real headless browser with the network blocked (reuses the browser
fixture of tests/book/test_browser.py: Debian's chromium driven by playwright, every request to
another host aborted and recorded).

The page is the full build's (conftest.built_book: the explorer at its default samples, served from
_build/html), opened in one browser context per module: its pages share the context's HTTP cache (a
load takes ~0.3 s instead of ~0.8 s in a new context), and the explorer keeps nothing in storage
(its state lives in the URL's hash). Checked: the page loads over http and from disk with no request
leaving the machine and no console error; each control changes the figures, the RP and the verdict
to the values stored for that setting (read back from the page's data block and decoded in Python);
the pinned comparison and the shareable #hash; keyboard-only use; a 390 px wide screen without
horizontal page scroll.
"""

from __future__ import annotations

import json
import math
import re

import papermill
import pytest
from bookutils import BOOK
from test_browser import LOCAL_HOSTS, LOCAL_SCHEMES, browser, serve_directory  # noqa: F401  (browser: the shared chromium)
from test_explorer import fill_command, fixed, unpack

from companion import explorer
from recency_lib import SimConfig

pytestmark = pytest.mark.book

MINUS = "\u2212"
PM = "\u00a0\u00b1\u00a0"  # the page's "±" between no-break spaces
# The book theme (pydata-sphinx-theme) logs this on a first visit of ANY page of the book, before
# a colour mode is stored: <html data-mode=""> is not one of auto/light/dark. Not the explorer's.
THEME_NOISE = ("Got invalid theme mode",)


@pytest.fixture(scope="module")
def explorer_site(built_book):
    """The built book's explorer page, served over http and as a file."""
    html = built_book.html / "explorer.html"
    assert html.is_file(), built_book.tail()
    with serve_directory(built_book.html) as url:
        yield {"http": url + "explorer.html", "file": html.as_uri(), "path": html}


def default_samples() -> int:
    """The explorer notebook's ``samples`` parameter, as the build ran it."""
    return int(
        papermill.inspect_notebook(str(BOOK / "explorer.ipynb"))["samples"]["default"].replace(
            "_", ""
        )
    )


@pytest.fixture(scope="module")
def blocked_context(browser):  # noqa: F811
    """One context of the shared chromium for the module (module docstring), in which every request
    to another host is aborted and recorded: (context, log) with log = {"blocked",
    "failed", "bad_status"}."""
    from urllib.parse import urlsplit

    log = {"blocked": [], "failed": [], "bad_status": []}
    context = browser.new_context(service_workers="block")

    def route(r):
        parts = urlsplit(r.request.url)
        if parts.scheme in LOCAL_SCHEMES or (parts.hostname or "") in LOCAL_HOSTS:
            r.continue_()
        else:
            log["blocked"].append(r.request.url)
            r.abort("blockedbyclient")

    context.route("**/*", route)
    context.on("requestfailed", lambda req: log["failed"].append(f"{req.url} ({req.failure})"))
    context.on(
        "response",
        lambda resp: resp.status >= 400 and log["bad_status"].append(f"{resp.status} {resp.url}"),
    )
    yield context, log
    context.close()


@pytest.fixture(scope="module")
def explorer_tab(blocked_context):
    """One page (tab) of the module's context, reused by every test: a new page costs a renderer
    start (~0.7 s a load), a navigation in the same one ~0.3 s. Every opening is still a full load
    of the document (from about:blank), so each test starts with the page's scripts run afresh."""
    context, _ = blocked_context
    page = context.new_page()
    page.errors = []
    page.on("pageerror", lambda exc: page.errors.append(f"uncaught: {exc}"))
    page.on(
        "console",
        lambda msg: (
            msg.type == "error"
            and not msg.text.startswith(THEME_NOISE)
            and page.errors.append(f"console: {msg.text}")
        ),
    )
    yield page
    page.close()


@pytest.fixture
def page_of(blocked_context, explorer_tab, explorer_site):
    """Open the explorer (http unless told otherwise) at a viewport size in the module's tab, loaded
    afresh; the tab's console errors and the context's request log start empty."""
    _, log = blocked_context

    def open_page(width=1400, height=900, url=None, hash_=""):
        page = explorer_tab
        page.goto("about:blank")
        for key in log:
            log[key].clear()
        page.errors.clear()
        page.set_viewport_size({"width": width, "height": height})
        page.goto((url or explorer_site["http"]) + hash_, wait_until="load", timeout=60_000)
        page.wait_for_function(
            "() => document.querySelector('#rx-explorer.rx-ready')", timeout=30_000
        )
        return page

    yield open_page, log


@pytest.fixture(scope="module")
def data(explorer_site):
    """The page's data block, read from the built file (test_loads_offline_without_errors checks
    that the page holds exactly this): decoding it from the page on every test cost 0.25 s each."""
    found = re.search(
        r'<script\b[^>]*\bid="rx-explorer-data"[^>]*>(.*?)</script>',
        explorer_site["path"].read_text(encoding="utf8"),
        re.S,
    )
    assert found, f"{explorer_site['path']} has no data block"
    return json.loads(found.group(1))


# --------------------------------------------------------------------------- expectations


def page_data(page) -> dict:
    return page.evaluate(
        "() => JSON.parse(document.getElementById('rx-explorer-data').textContent)"
    )


def js_fixed(k: int, dec: int) -> str:
    s = fixed(k, dec)
    return MINUS + s[1:] if s.startswith("-") else s


def cfg_of(meta, s) -> SimConfig:
    """The setting of a page state (indices into the grid's axes)."""
    return SimConfig(
        alpha=meta["alphas"][s["ia"]],
        gamma=meta["gammas"][s["ig"]],
        d=meta["ds"][s["id"]],
        norm=meta["norms"][s["inorm"]],
    )


def expected_view(data, s) -> dict:
    """What the page must show for state s, from the data block decoded in Python."""
    meta = data["meta"]
    cfg = cfg_of(meta, s)
    key = explorer.setting_key(cfg)  # the page must name settings as the library does
    lay = data["settings"][key]["layers"][s["layer"] - 1]
    n, dec = meta["n"], lay["dec"]
    off = [lay["oS"] + k for k in unpack(lay["S"])]
    diag = [lay["oD"] + k for k in unpack(lay["D"])]
    se = unpack(lay["E"])
    lo, hi = min(off), max(off)
    lut = meta["lut"]
    fills, cells, a, b = [], [], 0, 0
    for i in range(n):
        for j in range(i + 1):
            v = off[a] if j < i else diag[i]
            if j < i:
                a += 1
                # the page's Math.round((v - lo) / (hi - lo) * (len - 1)):
                # same doubles, round half up
                fills.append(
                    lut[math.floor((v - lo) / (hi - lo) * (len(lut) - 1) + 0.5)]
                    if hi > lo
                    else lut[len(lut) >> 1]
                )
            cells.append(f"{js_fixed(v, dec)}{PM}{js_fixed(se[b], dec)}")
            b += 1
    rp = lay["rp"]
    return {
        "key": f"{key}-L{s['layer']}",
        "fills": fills,
        "cells": cells,
        "rp": f"{js_fixed(rp[0], rp[2])}{PM}{js_fixed(rp[1], rp[2])}",
        "verdict": meta["verdicts"][lay["v"]],
        "cli": fill_command(meta["commands"]["cli"], cfg),
        "papermill": fill_command(meta["commands"]["papermill"], cfg),
        "closed_form": data["settings"][key]["h"]["c"] is not None,
        # layer 2 at alpha 0 left undecided here: the chapter that decides it, named
        "elsewhere": meta["elsewhere"].get(f"{cfg.norm}-{meta['gamma_labels'][s['ig']]}")
        if s["layer"] == 2 and cfg.alpha == 0 and meta["verdicts"][lay["v"]] == "undecided"
        else None,
    }


def expected_rp(data, s) -> tuple[float, float]:
    """The stored RP and its SE of state s, as numbers."""
    rp = data["settings"][explorer.setting_key(cfg_of(data["meta"], s))]["layers"][s["layer"] - 1][
        "rp"
    ]
    return rp[0] / 10 ** rp[2], rp[1] / 10 ** rp[2]


SHOWN_JS = r"""
() => {
  const q = s => document.querySelector(s);
  const heat = q('#rx-heatmap');
  return {
    key: heat.getAttribute('data-key'),
    fills: Array.from(heat.querySelectorAll('.rx-cells rect:not(.rx-diag)'))
      .map(r => r.getAttribute('fill')),
    svg: heat.innerHTML,
    cells: Array.from(q('#rx-table').querySelectorAll('td'))
      .map(td => td.textContent).filter(t => t),
    rp: q('#rx-rp').textContent, verdict: q('#rx-verdict').textContent,
    detail: q('#rx-verdict-detail').textContent,
    cli: q('#rx-cmd-cli').textContent, papermill: q('#rx-cmd-papermill').textContent,
    hPoints: q('#rx-hchart').querySelectorAll('circle.rx-sim').length - 1,
    closedForm: !!q('#rx-hchart polyline.rx-theory'),
    marker: [q('#rx-rp-marker').getAttribute('data-alpha'),
             +q('#rx-rp-marker').getAttribute('data-layer')],
    hash: window.location.hash,
  };
}
"""


def state_of(page) -> dict:
    return page.evaluate("() => window.rxExplorer.state()")


def check_shows(page, data) -> dict:
    """The page shows exactly what its data says for its current state; returns what it shows."""
    s = state_of(page)
    want = expected_view(data, s)
    shown = page.evaluate(SHOWN_JS)
    assert shown["key"] == want["key"]
    assert shown["hash"] == "#" + want["key"]
    assert shown["fills"] == want["fills"], "heatmap colours differ from the stored means"
    assert shown["cells"] == want["cells"], "table differs from the stored means and SEs"
    assert shown["rp"] == want["rp"]
    assert shown["verdict"] == want["verdict"]
    assert shown["detail"].endswith(". " + want["elsewhere"] if want["elsewhere"] else "."), shown
    assert (shown["cli"], shown["papermill"]) == (want["cli"], want["papermill"])
    assert shown["hPoints"] == data["meta"]["n"]
    assert shown["closedForm"] == want["closed_form"]
    assert shown["marker"] == [data["meta"]["alpha_labels"][s["ia"]], s["layer"]]
    return shown


def assert_clean(page, log):
    page.wait_for_timeout(200)
    assert log["blocked"] == [], f"requests that would leave the machine: {log['blocked']}"
    assert log["failed"] == [] and log["bad_status"] == [], (log["failed"], log["bad_status"])
    assert page.errors == [], page.errors


# --------------------------------------------------------------------------- tests


@pytest.mark.parametrize("via", ["http", "file"])
def test_loads_offline_without_errors(page_of, explorer_site, via, data):
    open_page, log = page_of
    page = open_page(url=explorer_site[via])
    assert page_data(page) == data
    assert data["meta"]["samples"] == default_samples() and len(data["settings"]) == 240
    check_shows(page, data)
    assert_clean(page, log)


def test_the_theme_replaces_its_icons_once_and_does_not_watch_the_drawings(page_of):
    """Font Awesome's watch for new icons doubled each redraw (explorer.js turns it off before the
    theme's deferred script reads its configuration); the theme's icons are replaced as before."""
    open_page, log = page_of
    page = open_page()
    page.wait_for_function("() => !document.querySelector('i[class*=\"fa-\"]')", timeout=10_000)
    watching, icons = page.evaluate(
        "() => [FontAwesome.config.observeMutations, "
        "document.querySelectorAll('svg.svg-inline--fa').length]"
    )
    assert watching is False and icons > 0, (watching, icons)
    assert_clean(page, log)


@pytest.mark.parametrize("control", ["alpha", "gamma", "d", "norm", "layer"])
def test_each_control_changes_the_figure_and_the_rp(page_of, data, control):
    open_page, log = page_of
    page = open_page()
    before = check_shows(page, data)
    s0 = state_of(page)
    if control == "alpha":
        page.locator("#rx-alpha").fill(str(s0["ia"] + 2))
    elif control == "gamma":
        page.get_by_role("radio", name="1", exact=True).first.check()  # the γ group comes first
    elif control == "d":
        page.get_by_label("hidden size d").select_option("1024")
    elif control == "norm":
        page.get_by_role("radio", name="RMSNorm").check()
    else:
        page.locator('input[name="rx-layer"][value="4"]').check()
    s1 = state_of(page)
    changed = {k for k in s0 if s0[k] != s1[k]}
    assert changed == {
        {"alpha": "ia", "gamma": "ig", "d": "id", "norm": "inorm", "layer": "layer"}[control]
    }
    after = check_shows(page, data)
    assert after["svg"] != before["svg"] and after["key"] != before["key"]
    assert_clean(page, log)


def test_compare_pin_swap_and_hash(page_of, data):
    open_page, log = page_of
    page = open_page(hash_="#a0.3-g1-d256-rms-L3")
    assert state_of(page) == {"ia": 3, "ig": 1, "id": 2, "inorm": 2, "layer": 3}
    check_shows(page, data)
    assert page.locator("#rx-heat-a").get_attribute("viewBox") and page.locator(
        "#rx-heat-b"
    ).get_attribute("viewBox")
    pinned_before = page.locator("#rx-heat-b").get_attribute("data-key")
    page.get_by_role("button", name="Keep the current setting as B").click()
    assert (
        page.locator("#rx-heat-b").get_attribute("data-key")
        == "a0.3-g1-d256-rms-L3"
        != pinned_before
    )
    page.get_by_role("radio", name="none").check()
    page.get_by_role("button", name="Swap A and B").click()
    assert (
        state_of(page)["inorm"] == 2
        and page.locator("#rx-heat-b").get_attribute("data-key") == "a0.3-g1-d256-none-L3"
    )
    assert page.get_by_role("radio", name="RMSNorm").is_checked()
    check_shows(page, data)
    # RP(A) - RP(B) with the SEs in quadrature, at the digits two significant ones of that SE allow
    a, b = (
        expected_rp(data, state)
        for state in (
            {"ia": 3, "ig": 1, "id": 2, "inorm": 2, "layer": 3},
            {"ia": 3, "ig": 1, "id": 2, "inorm": 0, "layer": 3},
        )
    )
    se = math.sqrt(a[1] ** 2 + b[1] ** 2)  # as the page computes it
    dec = explorer.decimals(se, 2)
    want = (
        f"RP(A) {MINUS} RP(B) = {a[0] - b[0]:.{dec}f}".replace("= -", f"= {MINUS}")
        + f"{PM}{se:.{dec}f} ("
    )
    assert page.locator("#rx-diff").text_content().startswith(want)
    assert_clean(page, log)


def test_keyboard_only(page_of, data):
    open_page, log = page_of
    page = open_page()

    def tab_to(predicate_js: str, limit: int = 120):
        for _ in range(limit):
            page.keyboard.press("Tab")
            if page.evaluate(
                f"() => {{ const e = document.activeElement; return !!e && ({predicate_js}); }}"
            ):
                return
        pytest.fail(f"Tab never reached an element with {predicate_js}")

    s = state_of(page)
    tab_to("e.id === 'rx-alpha'")
    page.keyboard.press("ArrowRight")
    assert state_of(page)["ia"] == s["ia"] + 1
    check_shows(page, data)
    tab_to("e.name === 'rx-gamma'", 3)
    page.keyboard.press("ArrowRight")
    assert state_of(page)["ig"] == (s["ig"] + 1) % len(data["meta"]["gammas"])
    tab_to("e.id === 'rx-d'", 3)
    page.keyboard.press("ArrowDown")
    assert state_of(page)["id"] == s["id"] + 1
    tab_to("e.name === 'rx-norm'", 3)
    page.keyboard.press("ArrowRight")
    assert state_of(page)["inorm"] == (s["inorm"] + 1) % 3
    tab_to("e.name === 'rx-layer'", 3)
    page.keyboard.press("ArrowRight")
    assert state_of(page)["layer"] == s["layer"] + 1
    current = check_shows(page, data)["key"]
    tab_to("e.id === 'rx-pin'")
    page.keyboard.press("Enter")
    assert page.locator("#rx-heat-b").get_attribute("data-key") == current
    tab_to("e.tagName === 'SUMMARY'")
    page.keyboard.press("Enter")
    assert page.locator("details.rx-table-box").evaluate("d => d.open")
    assert_clean(page, log)


def test_usable_at_390px(page_of, data):
    open_page, log = page_of
    page = open_page(390, 844)
    widths = page.evaluate(
        "() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]"
    )
    assert widths[0] <= widths[1] <= 390, f"horizontal page scroll at 390 px: {widths}"
    boxes = page.evaluate("""() => Array.from(document.querySelectorAll(
        '#rx-explorer input, #rx-explorer select, #rx-explorer button, ' +
        '#rx-explorer svg.rx-svg, #rx-explorer pre'))
        .map(e => {
          const r = e.getBoundingClientRect();
          return [e.id || e.name || e.tagName, r.left, r.right, r.width];
        })""")
    outside = [b for b in boxes if b[1] < 0 or b[2] > 390]
    assert not outside, f"elements beyond the 390 px screen: {outside}"
    heat = next(b for b in boxes if b[0] == "rx-heatmap")
    assert heat[3] >= 300, f"the heatmap is only {heat[3]:.0f} px wide"
    page.locator('input[name="rx-layer"][value="3"]').click()
    assert state_of(page)["layer"] == 3
    check_shows(page, data)
    assert_clean(page, log)


# ------------------------------------------------------------------------ hostile URLs and controls

ODD_URLS = [
    "?q=x",
    "?q=",
    "?q=%3Cscript%3Ealert(1)%3C%2Fscript%3E",
    "?highlight=x",
    "?highlight=%E0%A4%A",
    "?q=x&highlight=y#top",
    "#%",
    "#%E0%A4%A",
    "#<img src=x onerror=alert(1)>",
    "#a9-g9-d1-x-L1",
    "#a0.3-g1-d256-rms-L99",
    "?q=x#a0.3-g1-d256-rms-L3",
    "?",
    "#",
    "?q=" + "x" * 5000,
]


@pytest.mark.parametrize("suffix", ODD_URLS)
def test_no_script_error_for_any_query_or_hash(page_of, explorer_site, suffix, data):
    """Sphinx's search script (loaded on every page) searched for ?q=... and threw on a page without
    its results box ("Cannot read properties of null (reading 'appendChild')");
    every URL loads clean."""
    open_page, _log = page_of
    page = open_page(url=explorer_site["http"] + suffix)
    page.wait_for_timeout(300)
    assert page.errors == [], page.errors
    check_shows(page, data)


def test_the_search_page_still_searches(blocked_context, explorer_tab, explorer_site):
    """The fix of Sphinx's search script for pages without a results box leaves the search page's
    own search working: it finishes and lists the explorer."""
    _, log = blocked_context
    page = explorer_tab
    page.goto("about:blank")
    for key in log:
        log[key].clear()
    page.errors.clear()
    page.goto(
        explorer_site["http"].replace("explorer.html", "search.html") + "?q=explorer",
        wait_until="load",
    )
    # Sphinx's search shows "Searching" at once, lists the pages one by one, then says it finished
    page.wait_for_function(
        "() => { const h = document.querySelector('#search-results h2');"
        " return !!h && h.textContent.startsWith('Search Results'); }",
        timeout=30_000,
    )
    assert (
        "search finished" in page.locator("#search-results p.search-summary").text_content().lower()
    )
    assert "explorer" in page.locator("#search-results ul.search").text_content().lower()
    assert_clean(page, log)


@pytest.mark.parametrize("control", ["d", "gamma", "norm", "layer", "alpha"])
def test_controls_with_unknown_values_are_ignored(page_of, data, control):
    """A <select> given an unknown option threw "Cannot read properties of undefined (reading
    'layers')"; a control whose value the data does not know now leaves the setting as it was."""
    open_page, _log = page_of
    page = open_page()
    before = state_of(page)
    page.evaluate(
        """(control) => {
      const fire = (el) => { el.dispatchEvent(new Event("input", {bubbles: true}));
                             el.dispatchEvent(new Event("change", {bubbles: true})); };
      if (control === "d") {
        const sel = document.getElementById("rx-d"), opt = document.createElement("option");
        opt.value = "12345"; opt.textContent = "12345"; sel.appendChild(opt);
        sel.value = "12345"; fire(sel);
      } else if (control === "alpha") {
        const r = document.getElementById("rx-alpha"); r.max = "999"; r.value = "500"; fire(r);
      } else {
        const name = "rx-" + control, first = document.querySelector('input[name="' + name + '"]');
        const odd = first.cloneNode(); odd.value = control === "layer" ? "99" : "nonsense";
        first.parentNode.appendChild(odd); odd.checked = true; fire(odd);
      }
    }""",
        control,
    )
    page.wait_for_timeout(100)
    assert page.errors == [], page.errors
    assert state_of(page) == before
    check_shows(page, data)


def test_a_hash_changed_after_loading_shows_its_setting_and_a_bad_link_says_so(page_of, data):
    """The page once read its hash only when it loaded: an address edited afterwards (or a link
    followed on the page) left the old setting on screen, and a link to a setting the grid lacks
    silently became the default one. Now a new setting's hash shows that setting; a setting's hash
    that is not in the grid (or malformed) keeps the setting and says so under the controls until a
    control is used; another anchor (a section's) changes nothing."""
    open_page, log = page_of
    page = open_page(hash_="#a0.3-g1-d256-rms-L3")
    note = (
        "() => { const n = document.getElementById('rx-link-note'); "
        "return n.hidden ? null : n.textContent; }"
    )
    assert page.evaluate(note) is None
    page.evaluate("() => { location.hash = '#a0.9-g1-d1024-rms-L4'; }")
    page.wait_for_function("() => window.rxExplorer.state().layer === 4")
    assert state_of(page) == {"ia": 9, "ig": 1, "id": 3, "inorm": 2, "layer": 4}
    assert page.evaluate(note) is None
    check_shows(page, data)
    page.evaluate("() => { location.hash = '#a0.95-g1-d1024-rms-L4'; }")  # not an alpha of the grid
    page.wait_for_timeout(200)
    assert state_of(page) == {"ia": 9, "ig": 1, "id": 3, "inorm": 2, "layer": 4}
    assert "#a0.95-g1-d1024-rms-L4 is not one of this grid" in page.evaluate(note)
    page.evaluate("() => { location.hash = '#recompute'; }")  # not a setting: nothing changes
    page.wait_for_timeout(200)
    assert state_of(page)["layer"] == 4
    page.locator('input[name="rx-layer"][value="2"]').check()
    assert page.evaluate(note) is None and state_of(page)["layer"] == 2
    check_shows(page, data)
    page = open_page(hash_="#a9-g9-d1-x-L1")  # a malformed link
    assert "#a9-g9-d1-x-L1 is not one of this grid" in page.evaluate(note)
    assert_clean(page, log)


OVERLAPS_JS = """(svg) => {
  const bad = [];  // labels of one heatmap on one line and running into each other
  const texts = [...svg.querySelectorAll('text')]
      .map(t => [t.textContent, t.getBoundingClientRect()]).filter(([, r]) => r.width > 0);
  for (let a = 0; a < texts.length; a++) for (let b = a + 1; b < texts.length; b++) {
    const [s, r] = texts[a], [u, q] = texts[b];
    const oneLine = Math.abs((r.top + r.bottom) - (q.top + q.bottom)) / 2 <
        0.5 * Math.min(r.height, q.height);
    if (oneLine && r.left < q.right - 0.5 && q.left < r.right - 0.5) bad.push(s + ' / ' + u);
  }
  return bad;
}"""

#: Every setting and layer drawn by the page's own hash handler, one after the other with no layout
#: between them; each heatmap whose labels are new is copied as drawn (its texts and their groups)
#: into a hidden holder beside it (the same CSS, the width it has on the page), and one layout
#: measures all the copies at the end. A layout of the page after each drawing took 30 s more.
EVERY_DRAWING_JS = """([hashes, overlaps]) => {
  const check = eval(overlaps), maps = [...document.querySelectorAll('svg')]
      .filter(svg => svg.querySelector('.rx-cells'));
  const holders = maps.map(svg => {
    const holder = document.createElement('div');
    holder.style.cssText = 'position: absolute; left: 0; top: 0; visibility: hidden';
    svg.parentElement.appendChild(holder);
    return [holder, svg.getBoundingClientRect().width + 'px'];
  });
  const seen = new Set(), copies = [];
  for (const h of hashes) {
    history.replaceState(null, '', h);
    window.dispatchEvent(new HashChangeEvent('hashchange'));
    maps.forEach((svg, k) => {
      const labels = svg.getAttribute('viewBox') + [...svg.querySelectorAll('text')]
          .map(t => t.outerHTML).join('');
      if (seen.has(k + labels)) return;
      seen.add(k + labels);
      const copy = svg.cloneNode(true);  // its texts, their groups, its size: what lays them out
      copy.removeAttribute('id');
      copy.querySelectorAll(':not(g, text, text *)').forEach(e => e.remove());
      copy.style.width = holders[k][1];
      holders[k][0].appendChild(copy);
      copies.push([h + ' ' + svg.id, copy]);
    });
  }
  const found = {};
  for (const [where, copy] of copies) {
    const bad = check(copy);
    if (bad.length) found[where] = bad.slice(0, 3);
  }
  const unmeasured = copies.filter(([, copy]) => ![...copy.querySelectorAll('text')]
      .some(t => t.getBoundingClientRect().width > 0)).length;
  const [, probe] = copies[0], label = probe.querySelector('text');
  label.after(label.cloneNode(true));  // a label drawn twice in one place: the check must see it
  const seesTwice = check(probe).length > 0;
  holders.forEach(([holder]) => holder.remove());
  return [found, copies.length, unmeasured, seesTwice];
}"""


def test_no_heatmap_label_runs_into_another_in_any_setting(page_of, data):
    """At alpha 0.9, d 16, RMSNorm, layer 4 the colour bar's limits ran into its label
    ("3.9101526mean score below the diagona3.9998615"); every setting and layer, at 1400 px, in the
    main heatmap and the two side by side (EVERY_DRAWING_JS)."""
    open_page, log = page_of
    page = open_page()
    hashes = [
        f"#{key}-L{layer}"
        for key in data["settings"]
        for layer in range(1, data["meta"]["layers"] + 1)
    ]
    found, copies, unmeasured, sees_twice = page.evaluate(EVERY_DRAWING_JS, [hashes, OVERLAPS_JS])
    assert not found, list(found.items())[:5]
    assert copies > len(hashes), copies  # the main map's labels differ in most settings
    assert unmeasured == 0 and sees_twice, (unmeasured, sees_twice)  # the copies were laid out
    assert page.evaluate("() => location.hash") == hashes[-1]
    assert_clean(page, log)


def test_layer_2_at_alpha_0_names_the_chapter_that_decides_it(page_of, data):
    """The grid's layer-1 control variates leave layer 2 at α = 0 undecided; chapters 3 and 4 decide
    it with estimators built for it, and the readout says which (the referee read "undecided" as
    the book's last word)."""
    open_page, log = page_of
    for hash_, chapter in (
        ("#a0-g0-d64-layernorm-L2", "Chapter 3"),
        ("#a0-g0-d64-none-L2", "Chapter 3"),
        ("#a0-g1-d64-layernorm-L2", "Chapter 4"),
    ):
        page = open_page(hash_=hash_)
        shown = check_shows(page, data)
        assert shown["verdict"] != "undecided" or chapter in shown["detail"], (hash_, shown)
    assert_clean(page, log)
