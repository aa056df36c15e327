"""How the book writes numbers ("0.5231 ± 0.0012", "1.2 × 10⁻⁷", "100,000", "+3.2"), verdict
badges, MyST tables and data downloads: the pieces glued into a page's prose."""

from __future__ import annotations

import base64
import csv
import io
import json
import math
import numbers
import re
from dataclasses import dataclass

import numpy as np

from recency_lib.rounding import is_exact  # noqa: F401  (quoted by pages)
from recency_lib.stats import MINUS, minus, num, pm  # noqa: F401

from .significance import zscore


def nowrap(text: str) -> str:
    """``text`` with non-breaking spaces: one line in a narrow table cell."""
    return text.replace(" ", "\u00a0")


def count(k) -> str:
    """An integer count with thousands separators: "100,000"."""
    return minus(f"{int(k):,}")


def percent(fraction, sig: int = 2) -> str:
    """A fraction as a percentage: 0.0534 -> "5.3 %"."""
    return f"{num(100 * float(fraction), sig)} %"


_UNITS = (("s", 1.0), ("min", 60.0), ("h", 3600.0), ("days", 86400.0), ("years", 365.25 * 86400.0))


def duration(seconds, sig: int = 2) -> str:
    """A compute time in the largest unit it reaches: "42 s", "3.5 min", "1 day", "16 years"."""
    if math.isinf(seconds):
        return "\u221e"
    unit, size = next(((u, f) for u, f in reversed(_UNITS) if seconds >= f), _UNITS[0])
    text = num(seconds / size, sig)
    if text == "1" and unit in ("days", "years"):  # "1 day", not "1 days"
        unit = unit[:-1]
    return f"{text} {unit}"


def zdiff(a, se_a, b, se_b) -> float:
    """z-score of a - b for two independent estimates."""
    return zscore(float(a) - float(b), math.hypot(se_a, se_b))


def z_text(z) -> str:
    """A z-score with its sign: "+3.2", "−0.4", "+12" (no decimals from 10 on), "0.0", "+∞"."""
    z = float(z)
    if math.isnan(z):
        return "nan"
    if math.isinf(z):
        return ("+" if z > 0 else MINUS) + "\u221e"
    text = f"{z:+.1f}" if abs(z) < 9.95 else f"{z:+.0f}"
    return "0.0" if text in ("+0.0", "-0.0") else minus(text)


def listing(values, fmt=lambda v: f"{v:g}", empty: str = "none") -> str:
    """ "0.2, 0.4 and 0.6" (or ``empty``): values glued into a sentence."""
    items = [fmt(v) for v in values]
    if len(items) < 2:
        return items[0] if items else empty
    return ", ".join(items[:-1]) + " and " + items[-1]


def score_label(layer: int, i=None, j=None) -> str:
    """The score of 1-based ``layer`` as math: "$S^{(2)}$", "$S^{(2)}_{10,1}$" (query i, key j)."""
    sub = "" if i is None else f"_{{{i},{j}}}" if j is not None else f"_{{{i}}}"
    return f"$S^{{({layer})}}{sub}$"


def source(obj) -> Markdown:
    """The source of a function or class as a highlighted block headed by its dotted name."""
    import inspect

    code = inspect.getsource(obj).rstrip()
    return Markdown(f"`{obj.__module__}.{obj.__qualname__}`\n\n````python\n{code}\n````")


# -- glue and verdict badges ----------------------------------------------------------------------


def show(key: str, value) -> None:
    """Glue ``value`` under ``key``; outside the book's build (a rerun) display it too."""
    from myst_nb import glue

    from . import in_book

    glue(key, value, display=not in_book())


def glue_numbers(numbers: dict) -> None:
    """Glue every ``key -> text`` of ``numbers`` without display (cited with ``{glue:text}``)."""
    from myst_nb import glue

    for key, text in numbers.items():
        glue(key, text, display=False)


#: Badge colour (sphinx-design) of a verdict word's first word; anything else is grey.
BADGE_COLOURS = {"holds": "success", "contradicted": "danger", "violated": "danger"}


def badge(word: str) -> str:
    """A verdict word as a MyST badge coloured by its first word (qualified: outlined)."""
    first = word.split()[0].rstrip(",;:")
    colour = BADGE_COLOURS.get(first, "secondary")
    style = colour if word.strip() == first else f"{colour}-line"
    text = word.replace("`", "'").replace(";", "\\;")  # after a ";", sphinx-design sees a tooltip
    return f"{{bdg-{style}}}`{text}`"


# -- tables ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Markdown:
    """A piece of MyST markdown: rendered when displayed; glued, placed with ``{glue:md}``."""

    text: str

    def _repr_markdown_(self) -> str:
        return self.text

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True)
class Html:
    """A piece of HTML: shown as it is when displayed; glued, placed with ``{glue}``. Never parsed
    as Markdown: a data link's URI, read by markdown-it one character at a time, cost every read of
    the book over a second. ``plain`` is what a reader of text alone sees (its text/plain: the
    page keeps that form too until it is written, and Sphinx reads it for quotes)."""

    text: str
    plain: str

    def _repr_html_(self) -> str:
        return self.text

    def _repr_pretty_(self, printer, cycle) -> None:
        printer.text(self.plain)

    def __str__(self) -> str:
        return self.text


_NUMERIC = re.compile(r"^[\s(]*[-+\u2212]?(\d|\.\d|\u221e)")


def _cell(value) -> str:
    if isinstance(value, str):
        text = value
    elif isinstance(value, numbers.Real) and not isinstance(value, bool):
        text = num(value)
    else:
        text = str(value)
    if "\n" in text:
        raise ValueError(f"table cell {text!r} has a line break; allowed: one line of markdown")
    return text.replace("|", "\\|")


def _cells(rows, columns=None) -> tuple[list[str], list[list[str]]]:
    """Column names and cell texts of ``rows``: dicts (column -> value) or a dict of columns."""
    if isinstance(rows, dict):
        rows = [dict(zip(rows, values)) for values in zip(*rows.values())]
    columns = list(columns or dict.fromkeys(k for r in rows for k in r))
    return columns, [[_cell(r[c]) for c in columns] for r in rows]


def _pipe_table(columns: list[str], cells: list[list[str]], align=None) -> str:
    """A pipe table; by default the first and text columns left-aligned, numbers right-aligned."""
    if align is None:
        numeric = [all(_NUMERIC.match(c) or c in ("", "—") for c in col) for col in zip(*cells)]
        align = ["l", *("r" if x else "l" for x in numeric[1:])]
    head = "| " + " | ".join(_cell(c) for c in columns) + " |"
    rule = "|" + "|".join({"l": ":---", "r": "---:", "c": ":---:"}[a] for a in align) + "|"
    return "\n".join([head, rule, *("| " + " | ".join(r) + " |" for r in cells)])


def table(
    rows,
    columns=None,
    *,
    align: str | None = None,
    max_rows: int = 20,
    summary=None,
    name: str | None = None,
    title: str = "Full table",
    css_class: str | None = None,
) -> Markdown:
    """A MyST table of ``rows`` (dicts column -> cell, or a dict of columns; numbers via
    :func:`num`), aligned by ``align`` ("lrc" per column) or by content. Over ``max_rows``: the
    ``summary`` rows, then the full table in a dropdown ``title`` with a download ``name``."""
    columns, cells = _cells(rows, columns)
    full = _pipe_table(columns, cells, align)
    if css_class is not None:
        full = f":::{{table}}\n:class: {css_class}\n\n{full}\n:::"
    if len(cells) <= max_rows:
        return Markdown(full)
    if not name:
        raise ValueError(
            f"a table of {len(cells)} rows is longer than max_rows={max_rows}; "
            "allowed: pass name='...' (its download) and a summary, or raise max_rows"
        )
    parts = [] if summary is None else [_pipe_table(*_cells(summary))]
    link = download(name, {c: [r[k] for r in cells] for k, c in enumerate(columns)})
    parts.append(f":::{{dropdown}} {title} ({count(len(cells))} rows)\n\n{full}\n\n{link}\n:::")
    return Markdown("\n\n".join(parts))


# -- downloads -------------------------------------------------------------------------------------

MAX_DOWNLOAD_BYTES = 3_000_000  # a data: URI lives in the page; larger data needs a reduced form


def _plain(value):
    """A JSON/CSV-ready scalar: numpy scalars unwrapped, NaN -> None, ±inf -> "inf" / "-inf"."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None if math.isnan(value) else ("inf" if value > 0 else "-inf")
    return value


def columns(names, rows) -> dict[str, list]:
    """Download columns named ``names`` from ``rows``, tuples of values in that order."""
    rows = list(rows)
    return {k: [r[i] for r in rows] for i, k in enumerate(names)}


def download(name: str, data) -> Html:
    """Links that download ``data`` (equal-length columns) as CSV and JSON ``data:`` URIs."""
    cols = {
        str(k): [_plain(v) for v in np.asarray(c, dtype=object).ravel()] for k, c in data.items()
    }
    rows = list(zip(*cols.values()))
    text = io.StringIO()
    csv.writer(text, lineterminator="\n").writerows([list(cols), *rows])
    payload = {"name": name, "columns": list(cols), "data": [list(r) for r in rows]}
    files = {
        "csv": (text.getvalue(), "text/csv"),
        "json": (json.dumps(payload, allow_nan=False, separators=(",", ":")), "application/json"),
    }
    size = sum(len(t.encode()) for t, _ in files.values())
    if size > MAX_DOWNLOAD_BYTES:
        raise ValueError(
            f"data of {name!r} is {size:,} bytes; allowed: at most {MAX_DOWNLOAD_BYTES:,} "
            "(download the plotted numbers, not every sample)"
        )
    links = []
    for ext, (content, mime) in files.items():
        uri = f"data:{mime};charset=utf-8;base64," + base64.b64encode(content.encode()).decode()
        attrs = f'class="data-download" download="{name}.{ext}" href="{uri}"'
        links.append(f"<a {attrs}>{ext.upper()}</a>")
    html = '<span class="data-downloads">Data: ' + " · ".join(links) + "</span>"
    return Html(html, f"Data: {name}.csv · {name}.json")


def result_columns(results, labels, *, matrices: bool = True) -> dict:
    """Download columns of ``results`` named by ``labels``: per setting and 1-based layer the RP,
    then (``matrices``) each mean score ± SE at (i, j)."""
    rows = []
    for label, res in zip(labels, results):
        cfg = res.config
        setting = (label, cfg.alpha, cfg.gamma, cfg.norm, cfg.n, cfg.d, cfg.samples)
        for layer in range(1, cfg.layers + 1):
            rows.append((*setting, layer, "recency_probability", "", "", *res.rp(layer)[:2]))
            if matrices:
                m, e = res.score_mean[layer - 1], res.score_sem[layer - 1]
                for i, j in zip(*np.tril_indices(cfg.n)):
                    score = (float(m[i, j]), float(e[i, j]))
                    rows.append((*setting, layer, "score", int(i) + 1, int(j) + 1, *score))
    names = "setting alpha gamma norm n d samples layer quantity i j mean se".split()
    return columns(names, rows)


def curve_columns(series: dict, x_name: str = "x") -> dict[str, list]:
    """Download columns of curves: label -> (x, mean, se), se None for a closed form."""
    cols = {"series": [], x_name: [], "mean": [], "se": []}
    for label, (x, mean, se) in series.items():
        x = np.asarray(x, dtype=float).ravel()
        se = np.full(x.shape, np.nan) if se is None else np.asarray(se, dtype=float).ravel()
        cols["series"] += [str(label)] * x.size
        cols[x_name] += x.tolist()
        cols["mean"] += np.asarray(mean, dtype=float).ravel().tolist()
        cols["se"] += se.tolist()
    return cols
