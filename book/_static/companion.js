// Click (or Enter on) a figure to see it enlarged; click again or press Escape to close.
(() => {
  const SELECTOR = "article figure img, article .cell_output img";
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
    const img = e.target.closest(SELECTOR);
    if (img) open(img);
  });
  document.addEventListener("keydown", (e) => {
    const img = e.target.closest && e.target.closest(SELECTOR);
    if (img && e.key === "Enter") open(img);
  });
  document.addEventListener("DOMContentLoaded", () => {
    document.querySelectorAll(SELECTOR).forEach((img) => {
      img.tabIndex = 0;
      img.title = img.title || "Click to enlarge";
    });
  });
})();
