// The companion's page behaviour (loaded on every page; keep it small):
// 1. click (or Enter on) a figure to see it enlarged; click again or press Escape to close;
// 2. every page's papermill parameters cell is collapsed, whether or not it is tagged hide-cell;
// 3. Sphinx's search script (searchtools.js, loaded on every page by the theme) searches whenever the
//    URL has ?q=..., and throws on a page without its #search-results box: there it does nothing.
(() => {
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
    } catch (err) { /* a theme without Sphinx's search: nothing to guard */ }
  }, true);
  const FIGURES = "article figure img, article .cell_output img";
  const open = (img) => {
    const overlay = document.createElement("div");
    overlay.className = "zoom-overlay";
    overlay.setAttribute("role", "dialog");
    overlay.setAttribute("aria-label", "Enlarged figure: click or press Escape to close");
    const big = document.createElement("img");
    big.src = img.currentSrc || img.src;
    big.alt = img.alt;
    overlay.appendChild(big);
    const close = () => { overlay.remove(); document.removeEventListener("keydown", onKey); img.focus(); };
    const onKey = (e) => { if (e.key === "Escape") close(); };
    overlay.addEventListener("click", close);
    document.addEventListener("keydown", onKey);
    document.body.appendChild(overlay);
  };
  document.addEventListener("click", (e) => {
    const img = e.target.closest(FIGURES);
    if (img) open(img);
  });
  document.addEventListener("keydown", (e) => {
    const img = e.target.closest && e.target.closest(FIGURES);
    if (img && e.key === "Enter") open(img);
  });
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
  document.addEventListener("DOMContentLoaded", () => {
    collapseParameters();
    document.querySelectorAll(FIGURES).forEach((img) => {
      img.tabIndex = 0;
      img.title = img.title || "Click to enlarge";
    });
  });
})();
