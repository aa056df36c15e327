// The companion's page behaviour (loaded on every page; keep it small):
// 1. click (tap, or Enter on) a figure to see it enlarged, at least at its natural width, scrolling
//    inside the overlay on a narrow screen; click again or press Escape to close;
// 2. every page's papermill parameters cell is collapsed, whether or not it is tagged hide-cell;
// 3. a number with its error ("0.5231 ± 0.0012", "(7.2 ± 0.8) × 10⁻⁵") or with its power of ten
//    ("1.2 × 10⁻⁷") never breaks inside: each is wrapped in span.num (white-space: nowrap);
// 4. a table or a display formula wider than its scroll box says so: the box (table-scroll) gets
//    cut-right / cut-left (companion.css fades that edge) while there is more to that side, updated
//    as the reader scrolls;
// 5. Sphinx's search script (searchtools.js, loaded on every page by the theme) searches whenever the
//    URL has ?q=..., and throws on a page without its #search-results box: there it does nothing. On
//    the search page a result's summary comes from the page texts the build wrote
//    (_static/page-texts.js, book/_ext/offline_search.py; a browser refuses to fetch the pages
//    themselves from file://), its math typeset by MathJax, and TeX in a result's title reads as text.
(() => {
  // ---------------------------------------------------------------- 5. search
  // Before any other DOMContentLoaded listener (capture on window runs before the document's
  // listeners, whatever the order the scripts were loaded in): searchtools' own listener calls
  // Search.init, which calls Search.performSearch.
  window.addEventListener("DOMContentLoaded", () => {
    try {
      if (typeof Search === "undefined" || !Search || typeof Search.performSearch !== "function") return;
      const perform = Search.performSearch;
      Search.performSearch = (query) => {
        if (!document.getElementById("search-results")) return;   // not the search page
        return perform(query);
      };
      if (typeof Search.makeSearchSummary === "function") {
        const summary = Search.makeSearchSummary;
        Search.makeSearchSummary = (html, keywords, anchor) => withMath(summary(html, keywords, anchor));
      }
    } catch (err) { /* a theme without Sphinx's search: nothing to guard */ }
  }, true);

  // The summaries' source: a page's text from _static/page-texts.js, never a fetch of the page.
  const pageTexts = () => window.COMPANION_PAGE_TEXTS;
  if (typeof window.fetch === "function") {
    const fetchPage = window.fetch;
    window.fetch = (resource, ...rest) => {
      const texts = pageTexts();
      if (texts && typeof resource === "string") {
        const root = new URL(document.documentElement.dataset.content_root || "./", document.baseURI);
        const url = new URL(resource, document.baseURI);
        const suffix = (typeof DOCUMENTATION_OPTIONS !== "undefined" && DOCUMENTATION_OPTIONS.FILE_SUFFIX) || ".html";
        const path = url.href.split(/[?#]/)[0];
        if (path.startsWith(root.href) && path.endsWith(suffix)) {
          const doc = decodeURIComponent(path.slice(root.href.length, path.length - suffix.length));
          if (Object.prototype.hasOwnProperty.call(texts, doc)) {
            return Promise.resolve(new Response(texts[doc], {headers: {"Content-Type": "text/html"}}));
          }
        }
      }
      return fetchPage(resource, ...rest);
    };
  }

  // TeX as plain text: for a result's title (Sphinx indexes a formula in a heading as its TeX,
  // "At \alpha = 1") and for a summary's math when MathJax is not there.
  const GREEK = {alpha: "α", beta: "β", gamma: "γ", delta: "δ", epsilon: "ε", varepsilon: "ε", zeta: "ζ",
    eta: "η", theta: "θ", kappa: "κ", lambda: "λ", mu: "μ", nu: "ν", xi: "ξ", pi: "π", rho: "ρ", sigma: "σ",
    tau: "τ", phi: "φ", varphi: "φ", chi: "χ", psi: "ψ", omega: "ω", Gamma: "Γ", Delta: "Δ", Theta: "Θ",
    Lambda: "Λ", Sigma: "Σ", Phi: "Φ", Psi: "Ψ", Omega: "Ω", pm: "±", times: "×", cdot: "·", le: "≤",
    leq: "≤", ge: "≥", geq: "≥", neq: "≠", ne: "≠", approx: "≈", sim: "∼", propto: "∝", infty: "∞",
    to: "→", rightarrow: "→", sqrt: "√", sum: "∑", prod: "∏", ldots: "…", dots: "…", cdots: "⋯",
    in: "∈", partial: "∂", nabla: "∇", top: "ᵀ", T: "ᵀ", lVert: "‖", rVert: "‖", Vert: "‖", mid: "|",
    langle: "⟨", rangle: "⟩", E: "E", R: "ℝ", N: "N", quad: " ", qquad: " "};
  const SUP = {"0": "⁰", "1": "¹", "2": "²", "3": "³", "4": "⁴", "5": "⁵", "6": "⁶", "7": "⁷", "8": "⁸",
    "9": "⁹", "(": "⁽", ")": "⁾", "+": "⁺", "-": "⁻", "−": "⁻", "n": "ⁿ", "i": "ⁱ"};
  const SUB = {"0": "₀", "1": "₁", "2": "₂", "3": "₃", "4": "₄", "5": "₅", "6": "₆", "7": "₇", "8": "₈",
    "9": "₉", "(": "₍", ")": "₎", "+": "₊", "-": "₋", "i": "ᵢ", "j": "ⱼ", "k": "ₖ", "n": "ₙ", ",": ","};
  const script = (text, table, mark) => {
    const chars = Array.from(text);
    return chars.every((c) => c in table) ? chars.map((c) => table[c]).join("") : mark + text;
  };
  const plainTeX = (tex) => tex
      .replace(/\\[()[\]]/g, "")
      .replace(/\\(?:begin|end)\{[^}]*\}/g, "")
      .replace(/\\(?:mathrm|mathbf|mathit|mathcal|mathbb|text|operatorname|boldsymbol)\s*\{([^{}]*)\}/g, "$1")
      .replace(/\\([A-Za-z]+)/g, (m, name) => (name in GREEK ? GREEK[name] : name))
      .replace(/\\[,;:!> ]/g, " ")
      .replace(/\^\{([^{}]*)\}|\^(\S)/g, (m, a, b) => script(a !== undefined ? a : b, SUP, "^"))
      .replace(/_\{([^{}]*)\}|_(\S)/g, (m, a, b) => script(a !== undefined ? a : b, SUB, "_"))
      .replace(/[{}]/g, "").replace(/\\/g, "").replace(/\s+/g, " ");

  // A summary is a cut of the page's text: math cut by either end is dropped, whole formulas become
  // math spans (class nohighlight: Sphinx's highlighter leaves them alone) that MathJax typesets.
  const MATH = /\\\([\s\S]*?\\\)|\\\[[\s\S]*?\\\]|\\begin\{([a-z]+\*?)\}[\s\S]*?\\end\{\1\}/g;
  const CLOSE = /^[\s\S]*?(\\\)|\\\]|\\end\{[a-z]+\*?\})/;
  const OPEN = /(\\\(|\\\[|\\begin\{[a-z]+\*?\})[\s\S]*$/;
  const withMath = (summary) => {
    if (!summary) return summary;
    if (!summary.textContent.includes("\\")) { keepNumbersWhole(summary); return summary; }
    const text = summary.textContent;
    const parts = [];
    let last = 0;
    for (const m of text.matchAll(MATH)) {
      parts.push([false, text.slice(last, m.index)], [true, m[0]]);
      last = m.index + m[0].length;
    }
    parts.push([false, text.slice(last)]);
    if (CLOSE.test(parts[0][1])) parts[0][1] = parts[0][1].replace(CLOSE, "...");
    const end = parts[parts.length - 1];
    if (OPEN.test(end[1])) end[1] = end[1].replace(OPEN, "...");
    summary.textContent = "";
    for (const [math, part] of parts) {
      if (!math) { summary.appendChild(document.createTextNode(part)); continue; }
      const span = summary.appendChild(document.createElement("span"));
      span.className = "math notranslate nohighlight";
      span.textContent = part;
    }
    keepNumbersWhole(summary);
    queueMicrotask(() => {                         // once searchtools has put the summary in its result
      const mj = window.MathJax;
      const plain = () => summary.querySelectorAll("span.math").forEach((s) => {
        if (!s.querySelector("mjx-container")) s.textContent = plainTeX(s.textContent);
      });
      if (mj && mj.startup && mj.startup.promise && typeof mj.typesetPromise === "function") {
        mj.startup.promise.then(() => mj.typesetPromise([summary])).catch(plain);
      } else {
        plain();
      }
    });
    return summary;
  };
  const plainTitles = (root) => root.querySelectorAll("ul.search li > a").forEach((a) => {
    if (a.textContent.includes("\\")) a.textContent = plainTeX(a.textContent);
  });

  // ---------------------------------------------------------------- 1. figures enlarge
  const FIGURES = "article figure img, article .cell_output img";
  const open = (img) => {
    const overlay = document.createElement("div");
    overlay.className = "zoom-overlay";
    overlay.setAttribute("role", "dialog");
    overlay.setAttribute("aria-label", "Enlarged figure: click or press Escape to close");
    const big = document.createElement("img");
    big.src = img.currentSrc || img.src;
    big.alt = img.alt;
    const natural = parseFloat(img.getAttribute("width")) || img.naturalWidth;
    if (natural > 0) big.style.setProperty("--natural-width", `${natural}px`);
    overlay.appendChild(big);
    const close = () => { overlay.remove(); document.removeEventListener("keydown", onKey); img.focus(); };
    const onKey = (e) => { if (e.key === "Escape") close(); };
    overlay.addEventListener("click", close);
    document.addEventListener("keydown", onKey);
    document.body.appendChild(overlay);
  };
  document.addEventListener("click", (e) => {
    const img = e.target.closest && e.target.closest(FIGURES);
    if (img) open(img);
  });
  document.addEventListener("keydown", (e) => {
    const img = e.target.closest && e.target.closest(FIGURES);
    if (img && e.key === "Enter") open(img);
  });

  // ---------------------------------------------------------------- 2. parameters collapsed
  const collapseParameters = () => {
    document.querySelectorAll("div.cell.tag_parameters").forEach((cell) => {
      const input = cell.querySelector(":scope > .cell_input");
      if (!input) return;                               // already inside a hide-cell toggle
      const details = document.createElement("details");
      details.className = "admonition hide above-input";
      details.innerHTML = '<summary aria-label="Toggle the parameters of this page">' +
        '<p class="collapsed admonition-title">Show the parameters of this page (papermill reruns it with others)</p>' +
        '<p class="expanded admonition-title">Hide the parameters</p></summary>';
      cell.insertBefore(details, input);
      details.appendChild(input);
    });
  };

  // ---------------------------------------------------------------- 3. numbers unbroken
  // companion.report's formats: pm ("0.5231 ± 0.0012", "(7.2 ± 0.8) × 10⁻⁵", "0.5 ± ?", "1 ± ∞") and
  // num ("1.2 × 10⁻⁷"), with ordinary or no-break spaces.
  const S = "[ \\u00a0]";
  const DIGITS = "\\d+(?:[.,]\\d+)*";
  const VALUE = `[−+-]?${DIGITS}`;
  const ERROR = `(?:${DIGITS}|\\?|∞)`;
  const POWER = `×${S}10[⁻⁰¹²³⁴⁵⁶⁷⁸⁹]+`;
  const NUMBER = new RegExp(`\\(${VALUE}${S}±${S}${ERROR}\\)${S}${POWER}|${VALUE}${S}±${S}${ERROR}|${VALUE}${S}${POWER}`, "g");
  const SKIP = "script, style, pre, code, textarea, .math, mjx-container, svg, .num";
  const keepNumbersWhole = (root) => {
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT, {
      acceptNode: (node) => (/[±×]/.test(node.nodeValue) && node.parentElement && !node.parentElement.closest(SKIP)
                             ? NodeFilter.FILTER_ACCEPT : NodeFilter.FILTER_REJECT),
    });
    const found = [];
    for (let n = walker.nextNode(); n; n = walker.nextNode()) found.push(n);
    for (const node of found) {
      const text = node.nodeValue;
      const matches = Array.from(text.matchAll(NUMBER));
      if (!matches.length) continue;
      const frag = document.createDocumentFragment();
      let last = 0;
      for (const m of matches) {
        frag.appendChild(document.createTextNode(text.slice(last, m.index)));
        const span = frag.appendChild(document.createElement("span"));
        span.className = "num";
        span.textContent = m[0];
        last = m.index + m[0].length;
      }
      frag.appendChild(document.createTextNode(text.slice(last)));
      node.parentNode.replaceChild(frag, node);
    }
  };

  // ---------------------------------------------------------------- 4. cut tables say so
  // A table's scroll box: its nearest ancestor that scrolls sideways (the theme's
  // .pst-scrollable-table-container, a cell's output, the explorer's box).
  const scrollBox = (table) => {
    for (let p = table.parentElement; p && p !== document.body; p = p.parentElement) {
      const overflow = getComputedStyle(p).overflowX;
      if (overflow === "auto" || overflow === "scroll") return p;
    }
    return null;
  };
  const markCut = (box) => {
    const more = box.scrollWidth - box.clientWidth;
    box.classList.toggle("cut-left", more > 1 && box.scrollLeft > 1);
    box.classList.toggle("cut-right", more > 1 && box.scrollLeft < more - 1);
    // a table cut by a few pixels fades over no more than that (at least 16 px, at most 40 px)
    if (more > 1) box.style.setProperty("--fade", `${Math.min(40, Math.max(16, more))}px`);
  };
  const watchCuts = () => {
    const resized = typeof ResizeObserver === "function"
      ? new ResizeObserver((entries) => entries.forEach((e) => markCut(e.target.closest(".table-scroll"))))
      : null;
    document.querySelectorAll("article table").forEach((table) => {
      const box = scrollBox(table);
      if (!box || box.classList.contains("table-scroll")) return;
      box.classList.add("table-scroll");
      box.addEventListener("scroll", () => markCut(box), {passive: true});
      if (resized) {                   // a window resized, a dropdown opened, math typeset in a cell
        resized.observe(box);
        resized.observe(table);
      }
      markCut(box);
    });
  };

  // display math too: once MathJax has typeset a formula (its box resizes), a formula wider than
  // the column is cut with the same cue
  const watchMath = () => {
    if (typeof ResizeObserver !== "function") return;
    const resized = new ResizeObserver((entries) => entries.forEach((e) => {
      const box = e.target.querySelector('mjx-container[display="true"]') || e.target;
      if (!box.classList.contains("table-scroll")) {
        box.classList.add("table-scroll");
        box.addEventListener("scroll", () => markCut(box), {passive: true});
      }
      markCut(box);
    }));
    document.querySelectorAll("article div.math").forEach((math) => resized.observe(math));
  };

  document.addEventListener("DOMContentLoaded", () => {
    collapseParameters();
    document.querySelectorAll(FIGURES).forEach((img) => {
      img.tabIndex = 0;
      img.title = img.title || "Click to enlarge";
    });
    keepNumbersWhole(document.body);
    watchCuts();
    watchMath();
    const results = document.getElementById("search-results");
    if (results) new MutationObserver(() => plainTitles(results)).observe(results, {childList: true, subtree: true});
  });
})();
