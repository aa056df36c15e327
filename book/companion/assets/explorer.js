/* The explorer of the LayerNorm / recency-bias companion (recency_lib/explorer.py writes the page).
 * Reads the JSON block #rx-explorer-data and draws, for the chosen setting: the mean-score heatmap
 * (diagonal hatched, outside the colour scale), the recency probability with its SE, the
 * Definition-1 verdict, h(j) against its closed form, RP against alpha for every layer, and two
 * settings side by side. No network, no libraries. Does nothing on a page without the explorer. */
(function () {
  "use strict";
  var root = document.getElementById("rx-explorer");
  var dataEl = document.getElementById("rx-explorer-data");
  if (!root || !dataEl) return;
  /* The book theme's Font Awesome replaces its icons once the page is parsed (its script is
     deferred: it reads this after this script has run) and by default then watches every change of
     the page for new ones, which doubled each redraw here (the SVG nodes of three heatmaps, two
     charts and a table: ~12 ms of work queued for the next frame per drawing). This page adds no
     icon after loading. */
  window.FontAwesomeConfig = { observeMutations: false };
  var DATA = JSON.parse(dataEl.textContent);
  var M = DATA.meta;
  var SVGNS = "http://www.w3.org/2000/svg";
  var DIGITS64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  var LAYER_COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"];
  var MINUS = "\u2212", PM = "\u00a0\u00b1\u00a0";   // "±" between no-break spaces

  // ---------------------------------------------------------------- decoding (explorer.py: pack)
  function unpack(text) {
    var w = +text.charAt(0), out = [];
    for (var s = 1; s < text.length; s += w) {
      var k = 0;
      for (var c = 0; c < w; c++) k = 64 * k + DIGITS64.indexOf(text.charAt(s + c));
      out.push(k);
    }
    return out;
  }
  function scaledArray(offset, text) { return unpack(text).map(function (k) { return offset + k; }); }
  function fixed(k, dec) { return minus((k / Math.pow(10, dec)).toFixed(dec)); }
  function minus(s) { return s.charAt(0) === "-" ? MINUS + s.slice(1) : s; }
  function decimals(se, digits) {              // explorer.decimals
    if (!(isFinite(se) && se > 0)) return 9;
    return Math.min(9, Math.max(0, digits - 1 - Math.floor(Math.log10(se))));
  }

  function settingKey(s) {
    return "a" + M.alpha_labels[s.ia] + "-g" + M.gamma_labels[s.ig] + "-d" + M.ds[s.id] + "-" + M.norms[s.inorm];
  }
  /* One layer of one setting: ints (scaled by 10^dec) of the (n, n) means and SEs, decoded values. */
  function layerOf(s) {
    var st = DATA.settings[settingKey(s)], L = st.layers[s.layer - 1], n = M.n, dec = L.dec;
    var off = scaledArray(L.oS, L.S), diag = scaledArray(L.oD, L.D), se = unpack(L.E);
    var mean = [], err = [], a = 0, b = 0;
    for (var i = 0; i < n; i++) {
      mean.push([]); err.push([]);
      for (var j = 0; j <= i; j++) {
        mean[i].push(j < i ? off[a++] : diag[i]);
        err[i].push(se[b++]);
      }
    }
    return { mean: mean, err: err, dec: dec, rp: L.rp, rpe: L.rpe, v: M.verdicts[L.v], why: M.reasons[L.why],
             dir: M.directions[L.dir], h: st.h };
  }

  // ---------------------------------------------------------------- small DOM helpers
  function $(id) { return document.getElementById(id); }
  function svgEl(tag, attrs, parent, text) {
    var e = document.createElementNS(SVGNS, tag);
    for (var k in attrs) if (attrs[k] !== null && attrs[k] !== undefined) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    if (parent) parent.appendChild(e);
    return e;
  }
  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); }
  function settingText(s) {
    return "\u03b1 = " + M.alpha_labels[s.ia] + ", \u03b3 = " + M.gamma_labels[s.ig] + ", d = " + M.ds[s.id] +
      ", " + M.norm_labels[s.inorm] + ", layer " + s.layer;
  }
  function rpText(L) { return fixed(L.rp[0], L.rp[2]) + PM + fixed(L.rp[1], L.rp[2]); }
  function zText(z) { return (z > 0 ? "+" : z < 0 ? MINUS : "") + Math.abs(z).toFixed(1); }

  /* Nice axis ticks covering [lo, hi]. */
  function ticks(lo, hi, count) {
    var span = hi - lo, raw = span / count, p = Math.pow(10, Math.floor(Math.log10(raw))), f = raw / p;
    var step = (f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10) * p, out = [];
    for (var t = Math.ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) out.push(t);
    return { values: out, dec: Math.max(0, -Math.floor(Math.log10(step) + 1e-9)) };
  }
  function paddedRange(values, include) {
    var lo = Math.min.apply(null, values.concat(include)), hi = Math.max.apply(null, values.concat(include));
    if (hi - lo < 1e-12 * Math.max(1, Math.abs(hi))) { lo -= 0.5e-3 * Math.max(1, Math.abs(lo)); hi += 0.5e-3 * Math.max(1, Math.abs(hi)); }
    var pad = 0.06 * (hi - lo);
    return [lo - pad, hi + pad];
  }

  // ---------------------------------------------------------------- heatmap
  var hatchCount = 0;
  /* Mean-score heatmap of one layer: query i down, key j across, diagonal hatched and left out of
     the colour scale (as the book's Figure 1), colour bar of the off-diagonal range below. */
  function drawHeatmap(svg, L, compact) {
    clear(svg);
    var n = M.n, cell = compact ? 24 : 30, left = 30, top = 6, grid = n * cell;
    // (in the large map the bar's label has a line of its own: long limits would run into it)
    var width = left + grid + 8, barTop = top + grid + 30, note = compact ? 0 : 13;
    var height = barTop + 34 + note;
    svg.setAttribute("viewBox", "0 0 " + width + " " + height);
    var hatch = "rx-hatch-" + (++hatchCount);
    var defs = svgEl("defs", {}, svg);
    var pat = svgEl("pattern", { id: hatch, width: 6, height: 6, patternUnits: "userSpaceOnUse",
                                 patternTransform: "rotate(" + M.diagonal.angle + ")" }, defs);
    svgEl("line", { x1: 0, y1: 0, x2: 0, y2: 6, class: "rx-hatch-line", stroke: M.diagonal.colour }, pat);
    var lo = Infinity, hi = -Infinity, dlo = Infinity, dhi = -Infinity, i, j;
    for (i = 0; i < n; i++) for (j = 0; j <= i; j++) {
      var v = L.mean[i][j];
      if (j < i) { lo = Math.min(lo, v); hi = Math.max(hi, v); } else { dlo = Math.min(dlo, v); dhi = Math.max(dhi, v); }
    }
    var lut = M.lut, g = svgEl("g", { class: "rx-cells" }, svg);
    for (i = 0; i < n; i++) for (j = 0; j <= i; j++) {
      var x = left + j * cell, y = top + i * cell, diag = i === j;
      var k = hi > lo ? Math.round((L.mean[i][j] - lo) / (hi - lo) * (lut.length - 1)) : (lut.length >> 1);
      var r = svgEl("rect", { x: x, y: y, width: cell, height: cell, fill: diag ? "url(#" + hatch + ")" : lut[k],
                              class: diag ? "rx-diag" : null, "data-i": i + 1, "data-j": j + 1 }, g);
      svgEl("title", {}, r, "query i = " + (i + 1) + ", key j = " + (j + 1) + ": S = " +
            fixed(L.mean[i][j], L.dec) + PM + fixed(L.err[i][j], L.dec) + (diag ? " (diagonal, not on the colour scale)" : ""));
    }
    var axis = svgEl("g", { class: "rx-axis" }, svg), step = n > 12 ? Math.ceil(n / 10) : 1;
    for (i = 0; i < n; i += step) {
      svgEl("text", { x: left - 4, y: top + (i + 0.5) * cell, "text-anchor": "end", "dominant-baseline": "central" }, axis, String(i + 1));
      svgEl("text", { x: left + (i + 0.5) * cell, y: top + grid + 11, "text-anchor": "middle" }, axis, String(i + 1));
    }
    svgEl("text", { x: left + grid / 2, y: top + grid + 24, "text-anchor": "middle", class: "rx-label" }, axis, "key j");
    svgEl("text", { x: 9, y: top + grid / 2, "text-anchor": "middle", class: "rx-label",
                    transform: "rotate(-90 9 " + (top + grid / 2) + ")" }, axis, "query i");
    // colour bar of the off-diagonal range
    var gid = hatch + "-bar", grad = svgEl("linearGradient", { id: gid, x1: 0, x2: 1, y1: 0, y2: 0 }, defs);
    for (var s = 0; s <= 16; s++) svgEl("stop", { offset: (s / 16).toFixed(4), "stop-color": lut[Math.round(s / 16 * (lut.length - 1))] }, grad);
    svgEl("rect", { x: left, y: barTop, width: grid, height: 9, fill: "url(#" + gid + ")" }, svg);
    var lab = svgEl("g", { class: "rx-axis" }, svg);
    svgEl("text", { x: left, y: barTop + 21, "text-anchor": "start" }, lab, fixed(lo, L.dec));
    svgEl("text", { x: left + grid, y: barTop + 21, "text-anchor": "end" }, lab, fixed(hi, L.dec));
    if (!compact) {      // in the small side-by-side maps the two limits fill the line
      svgEl("text", { x: left + grid / 2, y: barTop + 34, "text-anchor": "middle", class: "rx-label" }, lab,
            "mean score below the diagonal");
    }
    svgEl("rect", { x: left, y: barTop + 25 + note, width: 9, height: 9, fill: "url(#" + hatch + ")", class: "rx-diag" }, svg);
    svgEl("text", { x: left + 13, y: barTop + 33 + note, class: "rx-note-text" }, svg,
          (compact ? "diagonal: " : "diagonal (hatched, not on the scale): ") + (dlo === dhi ? fixed(dlo, L.dec) : fixed(dlo, L.dec) + " to " + fixed(dhi, L.dec)));
    return { lo: lo, hi: hi };
  }

  // ---------------------------------------------------------------- line charts
  /* Axes of a line chart; returns the x and y maps. */
  function frame(svg, w, h, xr, yr, xlabel, ylabel, xt) {
    clear(svg);
    svg.setAttribute("viewBox", "0 0 " + w + " " + h);
    var L = 60, R = 8, T = 26, B = 34;
    var sx = function (x) { return L + (x - xr[0]) / (xr[1] - xr[0]) * (w - L - R); };
    var sy = function (y) { return h - B - (y - yr[0]) / (yr[1] - yr[0]) * (h - T - B); };
    var ax = svgEl("g", { class: "rx-axis" }, svg);
    svgEl("rect", { x: L, y: T, width: w - L - R, height: h - T - B, class: "rx-plot-bg" }, ax);
    var yt = ticks(yr[0], yr[1], 4);
    yt.values.forEach(function (t) {
      svgEl("line", { x1: L, x2: w - R, y1: sy(t), y2: sy(t), class: "rx-grid" }, ax);
      svgEl("text", { x: L - 4, y: sy(t), "text-anchor": "end", "dominant-baseline": "central" }, ax, minus(t.toFixed(yt.dec)));
    });
    xt.values.forEach(function (t, k) {
      svgEl("text", { x: sx(t), y: h - B + 13, "text-anchor": "middle" }, ax, xt.labels[k]);
    });
    svgEl("text", { x: L + (w - L - R) / 2, y: h - 6, "text-anchor": "middle", class: "rx-label" }, ax, xlabel);
    svgEl("text", { x: 10, y: T + (h - T - B) / 2, "text-anchor": "middle", class: "rx-label",
                    transform: "rotate(-90 10 " + (T + (h - T - B) / 2) + ")" }, ax, ylabel);
    return { x: sx, y: sy };
  }
  function errorBar(g, x, y0, y1, cls) {
    svgEl("line", { x1: x, x2: x, y1: y0, y2: y1, class: cls }, g);
    svgEl("line", { x1: x - 3, x2: x + 3, y1: y0, y2: y0, class: cls }, g);
    svgEl("line", { x1: x - 3, x2: x + 3, y1: y1, y2: y1, class: cls }, g);
  }

  /* h(j) / h(1): simulated (points with +-1 SE) and the corrected closed form (dashed). */
  function drawH(svg, h) {
    var n = M.n, scale = Math.pow(10, h.dec);
    var m = unpack(h.m).map(function (k) { return k / scale; }), e = unpack(h.e).map(function (k) { return k / scale; });
    var c = h.c === null ? null : unpack(h.c).map(function (k) { return k / scale; });
    var ys = [];
    for (var j = 0; j < n; j++) { ys.push(m[j] - e[j], m[j] + e[j]); if (c) ys.push(c[j]); }
    var xs = [], labels = [];
    for (j = 1; j <= n; j++) { xs.push(j); labels.push(String(j)); }
    var f = frame(svg, 360, 230, [0.5, n + 0.5], paddedRange(ys, [1]), "key j", "h(j) / h(1)", { values: xs, labels: labels });
    var g = svgEl("g", {}, svg);
    if (c) {
      svgEl("polyline", { points: c.map(function (v, k) { return f.x(k + 1) + "," + f.y(v); }).join(" "), class: "rx-theory" }, g);
    }
    for (j = 0; j < n; j++) {
      errorBar(g, f.x(j + 1), f.y(m[j] - e[j]), f.y(m[j] + e[j]), "rx-err");
      var dot = svgEl("circle", { cx: f.x(j + 1), cy: f.y(m[j]), r: 3.2, class: "rx-sim" }, g);
      svgEl("title", {}, dot, "j = " + (j + 1) + ": simulated " + fixed(Math.round(m[j] * scale), h.dec) + PM +
            fixed(Math.round(e[j] * scale), h.dec) + (c ? "; closed form " + fixed(Math.round(c[j] * scale), h.dec) : ""));
    }
    var leg = svgEl("g", { class: "rx-legend" }, svg);
    svgEl("circle", { cx: 64, cy: 9, r: 3.2, class: "rx-sim" }, leg);
    svgEl("text", { x: 72, y: 9, "dominant-baseline": "central" }, leg, "simulation \u00b1 SE");
    if (c) {
      svgEl("line", { x1: 180, x2: 202, y1: 9, y2: 9, class: "rx-theory" }, leg);
      svgEl("text", { x: 206, y: 9, "dominant-baseline": "central" }, leg, "closed form (corrected)");
    }
    return { mean: m, se: e, closed: c };
  }

  /* Recency probability against alpha for every layer (current gamma, d, norm); current point ringed. */
  function drawRpChart(svg, s) {
    var A = M.alphas.length, ys = [0.5], series = [];
    for (var l = 1; l <= M.layers; l++) {
      var pts = [];
      for (var a = 0; a < A; a++) {
        var rp = DATA.settings[settingKey({ ia: a, ig: s.ig, id: s.id, inorm: s.inorm })].layers[l - 1].rp;
        var sc = Math.pow(10, rp[2]), v = rp[0] / sc, e = rp[1] / sc;
        pts.push({ a: M.alphas[a], v: v, e: e, text: rpText({ rp: rp }) });
        ys.push(v - e, v + e);
      }
      series.push(pts);
    }
    var xr = [M.alphas[0] - 0.05, M.alphas[A - 1] + 0.05];
    var f = frame(svg, 360, 250, xr, paddedRange(ys, [0.5]), "anisotropy \u03b1", "recency probability",
                  { values: M.alphas, labels: M.alpha_labels });
    svgEl("line", { x1: f.x(xr[0]), x2: f.x(xr[1]), y1: f.y(0.5), y2: f.y(0.5), class: "rx-half" }, svg);
    series.forEach(function (pts, k) {
      var col = LAYER_COLOURS[k % LAYER_COLOURS.length], cur = k + 1 === s.layer;
      var g = svgEl("g", { class: "rx-series" + (cur ? " rx-current" : ""), stroke: col, fill: col }, svg);
      svgEl("polyline", { points: pts.map(function (p) { return f.x(p.a) + "," + f.y(p.v); }).join(" "), fill: "none",
                          "stroke-width": cur ? 2.4 : 1.3 }, g);
      pts.forEach(function (p) {
        errorBar(g, f.x(p.a), f.y(p.v - p.e), f.y(p.v + p.e), "rx-err-col");
        var dot = svgEl("circle", { cx: f.x(p.a), cy: f.y(p.v), r: cur ? 3 : 2.2, stroke: "none" }, g);
        svgEl("title", {}, dot, "layer " + (k + 1) + ", \u03b1 = " + p.a + ": RP = " + p.text);
      });
    });
    var p = series[s.layer - 1][s.ia];
    svgEl("circle", { cx: f.x(p.a), cy: f.y(p.v), r: 7.5, class: "rx-marker", id: "rx-rp-marker",
                      "data-alpha": M.alpha_labels[s.ia], "data-layer": s.layer }, svg);
    var leg = svgEl("g", { class: "rx-legend" }, svg);
    for (l = 0; l < M.layers; l++) {
      var x = 64 + 72 * l;
      svgEl("line", { x1: x, x2: x + 14, y1: 9, y2: 9, stroke: LAYER_COLOURS[l % LAYER_COLOURS.length], "stroke-width": l + 1 === s.layer ? 2.6 : 1.4 }, leg);
      svgEl("text", { x: x + 18, y: 9, "dominant-baseline": "central" }, leg, "layer " + (l + 1));
    }
  }

  // ---------------------------------------------------------------- table of numbers
  function drawTable(table, L) {
    clear(table);
    var n = M.n, head = table.createTHead().insertRow(), body = table.createTBody();
    var th = document.createElement("th");
    th.textContent = "i \\ j"; th.scope = "col"; head.appendChild(th);
    for (var j = 0; j < n; j++) { th = document.createElement("th"); th.scope = "col"; th.textContent = String(j + 1); head.appendChild(th); }
    for (var i = 0; i < n; i++) {
      var row = body.insertRow();
      th = document.createElement("th"); th.scope = "row"; th.textContent = String(i + 1); row.appendChild(th);
      for (j = 0; j < n; j++) {
        var td = row.insertCell();
        if (j <= i) {
          td.textContent = fixed(L.mean[i][j], L.dec) + PM + fixed(L.err[i][j], L.dec);
          if (i === j) td.className = "rx-diag-cell";
        }
      }
    }
  }

  // ---------------------------------------------------------------- state and controls
  var init = JSON.parse(root.getAttribute("data-rx-init"));
  function fromSpec(spec) {
    return { ia: M.alphas.indexOf(spec.alpha), ig: M.gammas.indexOf(spec.gamma), id: M.ds.indexOf(spec.d),
             inorm: M.norms.indexOf(spec.norm), layer: spec.layer };
  }
  var state = fromSpec(init.start), pinned = fromSpec(init.pinned);
  var form = $("rx-controls"), alphaIn = $("rx-alpha"), dIn = $("rx-d");
  function radio(name) { return form.querySelectorAll('input[name="' + name + '"]'); }
  /* The setting the controls show; a control whose value the data does not know (an option or a
     radio added or edited in the page, a slider moved past its range) is ignored: the state keeps
     its last known value there, and the controls are set back to the state. */
  function readControls() {
    var next = Object.assign({}, state), known = true;
    function take(key, index, count) {
      if (index >= 0 && index < count && index === Math.floor(index)) next[key] = index; else known = false;
    }
    take("ia", alphaIn.value === "" ? -1 : +alphaIn.value, M.alphas.length);
    take("id", M.ds.indexOf(+dIn.value), M.ds.length);
    radio("rx-gamma").forEach(function (r) { if (r.checked) take("ig", M.gamma_labels.indexOf(r.value), M.gammas.length); });
    radio("rx-norm").forEach(function (r) { if (r.checked) take("inorm", M.norms.indexOf(r.value), M.norms.length); });
    radio("rx-layer").forEach(function (r) {
      if (r.checked) { var l = +r.value; if (l >= 1 && l <= M.layers && l === Math.floor(l)) next.layer = l; else known = false; }
    });
    state = next;
    if (!known) writeControls();
  }
  function writeControls() {
    alphaIn.value = state.ia;
    dIn.value = String(M.ds[state.id]);
    radio("rx-gamma").forEach(function (r) { r.checked = r.value === M.gamma_labels[state.ig]; });
    radio("rx-norm").forEach(function (r) { r.checked = r.value === M.norms[state.inorm]; });
    radio("rx-layer").forEach(function (r) { r.checked = +r.value === state.layer; });
  }
  function fill(template, s) {
    var values = { alpha: M.alpha_labels[s.ia], gamma: M.gamma_labels[s.ig], norm: M.norms[s.inorm],
                   d: String(M.ds[s.id]), slug: settingKey(s) };
    return template.replace(/\{(alpha|gamma|norm|d|slug)\}/g, function (_, k) { return values[k]; });
  }
  /* A shell command, wrapped only between arguments: "--flag value" pairs never break (a break
     after the hyphen of "--layers" reads as two words); the text, and so a copy, is unchanged. */
  function showCommand(code, command) {
    clear(code);
    var words = command.split(" "), parts = [];
    for (var k = 0; k < words.length; k++) {
      var w = words[k];
      if (/^-/.test(w) && k + 1 < words.length && !/^-/.test(words[k + 1]) && words[k + 1] !== "&&") w += " " + words[++k];
      parts.push(w);
    }
    parts.forEach(function (p, k) {
      if (k) code.appendChild(document.createTextNode(" "));
      var span = document.createElement("span");
      span.className = "rx-arg";
      span.textContent = p;
      code.appendChild(span);
    });
  }

  function directionText(L) {
    var sc = Math.pow(10, L.rp[2]), z = (L.rp[0] / sc - 0.5) / (L.rp[1] / sc);
    var zs = (isFinite(z) ? " (" + zText(z) + " SE from 0.5" : " (") + "; " + L.rpe + ")";
    if (L.dir === "recency") return "Later keys score higher" + zs + ".";
    if (L.dir === "primacy") return "Earlier keys score higher" + zs + ".";
    return "No order resolved at " + M.direction_z + " SE" + zs + ".";
  }
  /* The reason recency_lib's one rule gives (SimResult.decision): the same words as the API and the CLI. */
  function verdictText(L) {
    return "Adjacent steps S(i, j) " + MINUS + " S(i, j " + MINUS + " 1), j \u2264 i, tested together (" +
      Math.round(100 * M.level) + " % family-wise over " + M.steps + " steps): " + L.why + ".";
  }
  /* Layer 2 at alpha = 0, undecided here: the chapter that decides it with a stronger estimator. */
  function elsewhereText(s, L) {
    var said = M.elsewhere[M.norms[s.inorm] + "-" + M.gamma_labels[s.ig]];
    return said && s.layer === 2 && M.alphas[s.ia] === 0 && L.v === "undecided" ? " " + said : "";
  }

  function render() {
    var L = layerOf(state);
    $("rx-alpha-out").textContent = M.alpha_labels[state.ia];
    alphaIn.setAttribute("aria-valuetext", "\u03b1 = " + M.alpha_labels[state.ia]);
    $("rx-setting-text").textContent = settingText(state) + " \u00b7 " + M.samples.toLocaleString("en-US") +
      " sequences of n = " + M.n + " tokens";
    var range = drawHeatmap($("rx-heatmap"), L, false);
    $("rx-heatmap").setAttribute("data-key", settingKey(state) + "-L" + state.layer);
    $("rx-heatmap").setAttribute("data-range", fixed(range.lo, L.dec) + " " + fixed(range.hi, L.dec));
    $("rx-rp").textContent = rpText(L);
    $("rx-read-title").textContent = "Recency in layer " + state.layer;
    $("rx-direction").textContent = directionText(L);
    $("rx-verdict").textContent = L.v;
    $("rx-verdict").className = "rx-verdict-" + L.v;
    $("rx-verdict-detail").textContent = verdictText(L) + elsewhereText(state, L);
    drawH($("rx-hchart"), L.h);
    $("rx-h-caption").textContent = "h(j) = 1/\u2016x\u2c7c\u2016 for the output x of layer 1, normalised to h(1) = 1; " +
      "layer 2 scores S(i, j) = g(i) h(j) below the diagonal (Eq. (40)). Independent of the layer control. " +
      (L.h.c === null ? "Without normalization the paper has no closed form; only the simulation is shown."
                      : "Dashed: theory.h_corrected (Eq. (41) with the residual's scale corrected).");
    drawRpChart($("rx-rpchart"), state);
    $("rx-rpchart-caption").textContent = "\u03b3 = " + M.gamma_labels[state.ig] + ", d = " + M.ds[state.id] + ", " +
      M.norm_labels[state.inorm] + ". Bars: \u00b1 1 SE (often smaller than the dots); dashed: 0.5, no order; " +
      "ring: the current setting.";
    drawCompare();
    drawTable($("rx-table"), L);
    var more = M.rerun_samples, ratio = Math.sqrt(more / M.samples).toFixed(1);
    $("rx-provenance").textContent = "recency_lib " + M.library_version + ", " + M.engine + " engine" +
      (M.kernel ? " (" + M.kernel + " kernel)" : "") + "; the grid's simulations took " + M.cpu_seconds + " CPU seconds.";
    $("rx-cmd-intro").textContent = "Each setting here averages " + M.samples.toLocaleString("en-US") +
      " sequences (seed " + M.seed + "). To recompute " + settingText(state).replace(/, layer \d+$/, "") + " with " +
      more.toLocaleString("en-US") + " sequences (standard errors " + ratio + " times smaller), run one of these " +
      "from the repository's root:";
    showCommand($("rx-cmd-cli"), fill(M.commands.cli, state));
    showCommand($("rx-cmd-papermill"), fill(M.commands.papermill, state));
    showCommand($("rx-cmd-same"), fill(M.commands.same, state));
    var hash = "#" + settingKey(state) + "-L" + state.layer;   // a link to this setting
    if (window.location.hash !== hash) {
      try { history.replaceState(null, "", hash); } catch (err) { /* some browsers refuse it on file: URLs */ }
    }
  }

  function drawCompare() {
    var A = layerOf(state), B = layerOf(pinned);
    drawHeatmap($("rx-heat-a"), A, true);
    drawHeatmap($("rx-heat-b"), B, true);
    $("rx-cap-a").textContent = "A (current): " + settingText(state) + ". RP = " + rpText(A) + "; Definition 1 " + A.v + ".";
    $("rx-cap-b").textContent = "B: " + settingText(pinned) + ". RP = " + rpText(B) + "; Definition 1 " + B.v + ".";
    var sa = Math.pow(10, A.rp[2]), sb = Math.pow(10, B.rp[2]);
    var diff = A.rp[0] / sa - B.rp[0] / sb, se = Math.sqrt(Math.pow(A.rp[1] / sa, 2) + Math.pow(B.rp[1] / sb, 2));
    var dec = decimals(se, 2);
    $("rx-diff").textContent = "RP(A) " + MINUS + " RP(B) = " + minus(diff.toFixed(dec)) + PM + se.toFixed(dec) +
      " (SEs added in quadrature; both settings use seed " + M.seed + ", so their errors are correlated and this SE is approximate).";
    $("rx-heat-b").setAttribute("data-key", settingKey(pinned) + "-L" + pinned.layer);
  }

  /* The setting a link names (#a0.3-g1-d256-rms-L3), read when the page loads and whenever the hash
     changes later (a link followed on the page, an edited address). A hash that is a setting's but not
     one of this grid's (or malformed) leaves the setting as it was and says so under the controls; any
     other hash (a section's anchor) is not the explorer's and changes nothing. True: a new setting. */
  var linkNote = $("rx-link-note");
  function fromHash() {
    var hash = window.location.hash;
    if (!/^#a\d/.test(hash)) return false;
    var m = /^#a([0-9.]+)-g([0-9.]+)-d(\d+)-([a-z]+)-L(\d+)$/.exec(hash);
    var s = m && { ia: M.alpha_labels.indexOf(m[1]), ig: M.gamma_labels.indexOf(m[2]), id: M.ds.indexOf(+m[3]),
                   inorm: M.norms.indexOf(m[4]), layer: +m[5] };
    if (s && s.ia >= 0 && s.ig >= 0 && s.id >= 0 && s.inorm >= 0 && s.layer >= 1 && s.layer <= M.layers) {
      linkNote.hidden = true;
      state = s;
      return true;
    }
    var shownHash = hash.length > 60 ? hash.slice(0, 60) + "\u2026" : hash;
    linkNote.textContent = "The link\u2019s setting " + shownHash + " is not one of this grid\u2019s; shown instead: " +
      settingText(state) + ".";
    linkNote.hidden = false;
    return false;
  }

  var shown = null;   // the setting on screen: a control fires "input" and "change", draw once
  function update() {
    readControls();
    var now = settingKey(state) + "-L" + state.layer;
    if (now !== shown) { shown = now; render(); }
  }
  function fromControls() { linkNote.hidden = true; update(); }
  form.addEventListener("input", fromControls);
  form.addEventListener("change", fromControls);
  window.addEventListener("hashchange", function () { if (fromHash()) { writeControls(); update(); } });
  form.addEventListener("submit", function (ev) { ev.preventDefault(); });
  $("rx-pin").addEventListener("click", function () { pinned = Object.assign({}, state); drawCompare(); });
  $("rx-swap").addEventListener("click", function () {
    var t = pinned; pinned = state; state = Object.assign({}, t); writeControls(); update();
  });
  fromHash();
  writeControls();
  update();
  root.classList.add("rx-ready");
  window.rxExplorer = { data: DATA, state: function () { return Object.assign({}, state); }, key: settingKey };
})();
