"""How the book writes numbers, verdict words, tables and downloads: one function for each.

Numbers
    :func:`pm` ("0.5231 ± 0.0012", "(7.2 ± 0.8) × 10⁻⁵"), :func:`num` ("0.0312", "1.2 × 10⁻⁷"),
    :func:`count` ("100,000"), :func:`zscore` / :func:`z_text` ("+3.2", "−12"). Unicode minus and
    superscripts, so the same string reads right in prose, tables and figure labels.
Verdicts
    :func:`badge`: a verdict word as a coloured MyST badge (the words themselves are defined with the
    claims, :mod:`companion.claims`, and by :func:`recency_lib.metrics.definition1_verdict`).
Tables
    :func:`table`: rows of strings -> a MyST pipe table (math in ``$...$`` is typeset, no index
    column, numbers right-aligned; the theme puts wide tables in a scroll box). Longer than
    ``max_rows``: a summary, then the full table in a dropdown, with a CSV/JSON download.
Downloads
    :func:`download`: columns of numbers -> links to CSV and JSON files embedded in the page as
    ``data:`` URIs (work offline and on any static host); :func:`result_columns` flattens simulation
    results into such columns (mean, SE and the recency probability of every panel).

Sentences are not built here: a chapter's prose is written in its markdown cells and these
functions produce only the pieces that are glued into it.
"""

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

from recency_lib.validation import check_int

from .significance import real, zscore

MINUS = "\u2212"
PM = "\u00b1"
_SUPERSCRIPT = str.maketrans(
    "-0123456789", "\u207b\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079"
)
SCI_BELOW = 1e-3  # magnitudes below this are written with a power of ten
SCI_FROM = 1e5  # ... and so are magnitudes from this up


# -- numbers ----------------------------------------------------------------------------------------


def _minus(text: str) -> str:
    return text.replace("-", MINUS)


def power_of_ten(k: int) -> str:
    """ "10⁻⁵" for k = -5."""
    return "10" + str(int(k)).translate(_SUPERSCRIPT)


def error_digits(se: float) -> int:
    """Significant digits of a standard error (the Particle Data Group's rule): two when its three
    leading digits are 100-354, one when they are 355-949; 950-999 rounds up to 1.0 (two digits)."""
    lead = int(f"{se:.2e}".replace(".", "")[:3])
    return 2 if lead < 355 or lead >= 950 else 1


def _decimals(se: float) -> int:
    """Decimal places that show ``se`` to :func:`error_digits` significant digits (an error whose
    leading digits are 950-999 is rounded up to the next power of ten: 0.096 -> 0.10)."""
    mantissa, exp = f"{se:.2e}".split("e")  # three leading digits, after rounding
    exponent = int(exp) + (1 if int(mantissa.replace(".", "")) >= 950 else 0)
    return error_digits(se) - 1 - exponent


def pm(mean, se, *, min_places: int = 0) -> str:
    """A Monte-Carlo estimate with its standard error, the book's one format.

    The error gets one or two significant digits (:func:`error_digits`) and the mean the same
    decimal places (at least ``min_places``): 0.52314, 0.00123 -> "0.5231 ± 0.0012". Magnitudes
    below 10⁻³ or from 10⁵ up share a power of ten: 7.2e-5, 8e-6 -> "(7.2 ± 0.8) × 10⁻⁵". An exact
    value (:func:`is_exact`: an error of 0 or of float rounding) prints the number alone
    (:func:`num`); a non-finite mean prints as "nan"/"∞".
    """
    mean, se = real("mean", mean), real("se", se)
    min_places = check_int("min_places", min_places, 0, 12)
    if not math.isfinite(mean):
        return num(mean)
    if math.isnan(se):
        return f"{num(mean)} {PM} ?"
    if se < 0:
        raise ValueError(f"se={se!r} is out of range; allowed: a standard error >= 0")
    if is_exact(mean, se) or math.isinf(se):
        return num(mean) if not math.isinf(se) else f"{num(mean)} {PM} \u221e"
    big = max(abs(mean), se)
    if SCI_BELOW <= big < SCI_FROM:
        places = max(min_places, _decimals(se), 0)
        return _minus(f"{mean:.{places}f} {PM} {se:.{places}f}")
    k = math.floor(math.log10(big))
    m, s = mean / 10**k, se / 10**k
    places = max(_decimals(s), 0)
    return _minus(f"({m:.{places}f} {PM} {s:.{places}f}) \u00d7 ") + power_of_ten(k)


# An SE below this fraction of the value (at least 1) is float rounding, not noise. Float64 rounding of
# order-one scores is ~1e-16; a simulated quantity can be far below 1e-9 and still noisy (Theorem 1's
# trend at d = 256: about 1e-9 +/- 1e-9), so the bound sits well below that and well above rounding.
EXACT_RTOL = 1e-12


def is_exact(value, se) -> bool:
    """True when ``se`` is zero or float rounding (<= EXACT_RTOL * max(1, |value|)): a quantity
    without sampling noise, such as a diagonal score sqrt(d) after normalization."""
    return float(se) <= EXACT_RTOL * max(1.0, abs(float(value)))


def num(x, sig: int = 3) -> str:
    """A number without an error, to ``sig`` significant digits: "0.0312", "8", "1.2 × 10⁻⁷",
    "3.4 × 10⁵"; an integer-valued float below 10⁵ prints without decimals ("64")."""
    x = real("x", x)
    sig = check_int("sig", sig, 1, 17)
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return ("" if x > 0 else MINUS) + "\u221e"
    if x == 0:
        return "0"
    if SCI_BELOW <= abs(x) < SCI_FROM:
        if x == round(x) and abs(x) >= 10 ** (sig - 1):
            return _minus(f"{x:.0f}")
        text = f"{x:.{sig}g}"
        if "e" in text:  # e.g. 1.2e+04 from :g; write it out
            text = f"{x:.0f}"
        return _minus(text)
    mant, exp = f"{x:.{sig - 1}e}".split("e")
    return _minus(mant) + " \u00d7 " + power_of_ten(int(exp))


NBSP = "\u00a0"


def nowrap(text: str) -> str:
    """``text`` with its spaces made non-breaking, so that "1.5470 ± 0.0015" or "(7 ± 2) × 10⁻⁶"
    stays on one line in a narrow table cell."""
    if not isinstance(text, str):
        raise ValueError(f"text={text!r} is not allowed; allowed: a string")
    return text.replace(" ", NBSP)


def count(k) -> str:
    """An integer count with thousands separators: "100,000"."""
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, numbers.Integral):
        raise ValueError(f"k={k!r} is not an integer; allowed: an integer count")
    return _minus(f"{int(k):,}")


def percent(fraction, sig: int = 2) -> str:
    """A fraction as a percentage: 0.0534 -> "5.3 %"."""
    return f"{num(100 * real('fraction', fraction), sig)} %"


_UNITS = (("s", 1.0), ("min", 60.0), ("h", 3600.0), ("days", 86400.0), ("years", 365.25 * 86400.0))


def duration(seconds, sig: int = 2) -> str:
    """A compute time for prose, in the largest unit it reaches (up to years), to ``sig`` significant
    digits: 42 -> "42 s", 210 -> "3.5 min", 22000 -> "6.1 h", 90000 -> "1 day", 5e8 -> "16 years"; "∞" when
    infinite."""
    seconds = real("seconds", seconds)
    if math.isnan(seconds) or seconds < 0:
        raise ValueError(f"seconds={seconds!r} is out of range; allowed: a duration >= 0")
    if math.isinf(seconds):
        return "\u221e"
    unit, size = next(((u, f) for u, f in reversed(_UNITS) if seconds >= f), _UNITS[0])
    text = num(seconds / size, sig)
    if text == "1" and unit in ("days", "years"):  # "1 day", not "1 days"
        unit = unit[:-1]
    return f"{text} {unit}"


def zdiff(a, se_a, b, se_b) -> float:
    """z-score of a - b for two independent estimates: (a - b) / sqrt(se_a^2 + se_b^2)."""
    return zscore(real("a", a) - real("b", b), math.hypot(real("se_a", se_a), real("se_b", se_b)))


def z_text(z) -> str:
    """A z-score with its sign: "+3.2", "−0.4", "+12" (no decimals from 10 on), "0.0", "+∞"."""
    z = real("z", z)
    if math.isnan(z):
        return "nan"
    if math.isinf(z):
        return ("+" if z > 0 else MINUS) + "\u221e"
    text = f"{z:+.1f}" if abs(z) < 9.95 else f"{z:+.0f}"
    return "0.0" if text in ("+0.0", "-0.0") else _minus(text)


def listing(values, fmt=lambda v: f"{v:g}", empty: str = "none") -> str:
    """ "0.2, 0.4 and 0.6" (or ``empty``): a list of values glued into a sentence."""
    items = [fmt(v) for v in values]
    if not items:
        return empty
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


# -- labels -------------------------------------------------------------------------------------------


def score_label(layer: int, i: int | str | None = None, j: int | str | None = None) -> str:
    """The score of layer ``layer`` (1-based, the paper's S^(l)) as math: "$S^{(2)}$",
    "$S^{(2)}_{10,1}$" (1-based query i and key j)."""
    layer = check_int("layer", layer, 1)
    sub = "" if i is None else f"_{{{i},{j}}}" if j is not None else f"_{{{i}}}"
    return f"$S^{{({layer})}}{sub}$"


def source(obj) -> Markdown:
    """The source code of a library function or class as a highlighted block, headed by its
    dotted name: what a chapter shows next to the equation the code implements."""
    import inspect

    if not (inspect.isfunction(obj) or inspect.isclass(obj)):
        raise ValueError(f"obj={obj!r} is not allowed; allowed: a function or class of recency_lib")
    code = inspect.getsource(obj).rstrip()
    return Markdown(f"`{obj.__module__}.{obj.__qualname__}`\n\n````python\n{code}\n````")


# -- verdict badges -------------------------------------------------------------------------------------

#: Badge colour (sphinx-design) of each verdict word's first word; anything else is grey.
BADGE_COLOURS = {
    "holds": "success",
    "contradicted": "danger",
    "not": "secondary",
    "violated": "danger",
    "undecided": "secondary",
}


def show(key: str, value) -> None:
    """Glue ``value`` (a table, a verdict table, a number) under ``key`` for the page to place; outside the
    book's build (a papermill rerun) display it as well, so the executed notebook shows it."""
    from myst_nb import glue

    from . import in_book

    glue(key, value, display=not in_book())


def glue_numbers(numbers: dict) -> None:
    """Glue every ``key -> text`` of ``numbers`` (what a ``companion.pages`` function returns for the
    prose) without displaying it: the numbers a page's markdown cites with ``{glue:text}``."""
    from myst_nb import glue

    for key, text in numbers.items():
        glue(key, text, display=False)


def badge(word: str) -> str:
    """A verdict word as a MyST badge role, coloured by its first word ("holds" green,
    "contradicted" red, "open" grey; a qualified verdict such as "holds after correction" keeps
    the colour of its first word but is drawn as an outline)."""
    if not isinstance(word, str) or not word.strip():
        raise ValueError(f"word={word!r} is not allowed; allowed: a non-empty verdict word")
    first = word.split()[0].rstrip(",;:")
    colour = BADGE_COLOURS.get(first, "secondary")
    style = colour if word.strip() == first else f"{colour}-line"
    return f"{{bdg-{style}}}`{_escape_role(word)}`"


def _escape_role(text: str) -> str:
    # a badge's text after its last ";" would become a tooltip (sphinx-design): escape it
    return text.replace("`", "'").replace(";", "\\;")


# -- Markdown that myst-nb renders (display() it, or glue it and place it with {glue:md}) --------------


@dataclass(frozen=True)
class Markdown:
    """A piece of MyST markdown. Displayed in a cell it renders as MyST (the book sets
    ``nb_render_markdown_format: myst``); glued (``glue(key, obj, display=False)``) it is placed with
    ``{glue:md}`key``` inline or the ``{glue:md}`` directive with ``:format: myst``."""

    text: str

    def _repr_markdown_(self) -> str:
        return self.text

    def __str__(self) -> str:
        return self.text


_NUMERIC = re.compile(r"^[\s(]*[-+\u2212]?(\d|\.\d|\u221e)")


def _cell(value) -> str:
    text = (
        value
        if isinstance(value, str)
        else (
            num(value)
            if isinstance(value, numbers.Real) and not isinstance(value, bool)
            else str(value)
        )
    )
    if "\n" in text:
        raise ValueError(f"table cell {text!r} has a line break; allowed: one line of markdown")
    return text.replace("|", "\\|")


def _pipe_table(columns: list[str], rows: list[list[str]], align: list[str]) -> str:
    head = "| " + " | ".join(_cell(c) for c in columns) + " |"
    rule = "|" + "|".join({"l": ":---", "r": "---:", "c": ":---:"}[a] for a in align) + "|"
    body = ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join([head, rule, *body])


def _normalise_rows(rows, columns):
    if isinstance(rows, dict):  # columns -> values
        names = list(rows)
        lengths = {len(v) for v in rows.values()}
        if len(lengths) > 1:
            raise ValueError(
                f"rows: columns have different lengths {sorted(lengths)}; allowed: equal lengths"
            )
        n = lengths.pop() if lengths else 0
        rows = [{k: rows[k][r] for k in names} for r in range(n)]
    rows = list(rows)
    if not rows:
        raise ValueError("rows=[] is empty; allowed: at least one row")
    if not all(isinstance(r, dict) for r in rows):
        raise ValueError(
            "rows: every row must be a dict (column -> value); allowed: a list of dicts "
            "or a dict of columns"
        )
    if columns is None:
        columns = list(dict.fromkeys(k for r in rows for k in r))
    missing = [c for c in columns if any(c not in r for r in rows)]
    if missing:
        raise ValueError(
            f"columns {missing} are missing from some rows; allowed: every row has every column"
        )
    return list(columns), [[_cell(r[c]) for c in columns] for r in rows]


def _alignment(columns, cells, align):
    if align is not None:
        if len(align) != len(columns) or any(a not in "lrc" for a in align):
            raise ValueError(
                f"align={align!r} is not allowed; allowed: one of 'l', 'r', 'c' per column "
                f"({len(columns)} columns)"
            )
        return list(align)
    out = []
    for k in range(len(columns)):
        col = [r[k] for r in cells]
        out.append("r" if k > 0 and all(_NUMERIC.match(c) or c in ("", "—") for c in col) else "l")
    return out


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
    """A compact table as MyST markdown: no index column, math labels in ``$...$``, numbers
    right-aligned (the first column and text columns left-aligned; or ``align="lrr..."``).

    ``rows``: a list of dicts (column -> cell) or a dict of columns; cells are markdown strings,
    format numbers with :func:`pm`/:func:`num` first (bare numbers go through :func:`num`).
    With more than ``max_rows`` rows the page shows ``summary`` (rows in the same form, or nothing)
    and the full table folded in a dropdown titled ``title`` with the number of rows; ``name``
    (required then) names the CSV/JSON download of the full table (:func:`download`).
    ``css_class``: a class on the table, for page-specific styling (e.g. "verdict-table").
    """
    max_rows = check_int("max_rows", max_rows, 1)
    columns, cells = _normalise_rows(rows, columns)
    full = _pipe_table(columns, cells, _alignment(columns, cells, align))
    if css_class is not None:
        if not re.fullmatch(r"[a-z][a-z0-9-]*", str(css_class)):
            raise ValueError(
                f"css_class={css_class!r} is not allowed; allowed: lower-case letters, digits and '-'"
            )
        full = f":::{{table}}\n:class: {css_class}\n\n{full}\n:::"
    if len(cells) <= max_rows:
        return Markdown(full)
    if not name:
        raise ValueError(
            f"a table of {len(cells)} rows is longer than max_rows={max_rows}; "
            f"allowed: pass name='...' (its download) and a summary, or raise max_rows"
        )
    parts = []
    if summary is not None:
        s_columns, s_cells = _normalise_rows(summary, None)
        parts.append(_pipe_table(s_columns, s_cells, _alignment(s_columns, s_cells, None)))
    data = {c: [r[k] for r in cells] for k, c in enumerate(columns)}
    link = download(name, data)
    parts.append(
        f":::{{dropdown}} {title} ({count(len(cells))} rows)\n\n{full}\n\n{link.text}\n:::"
    )
    return Markdown("\n\n".join(parts))


# -- downloads ------------------------------------------------------------------------------------------

MAX_DOWNLOAD_BYTES = (
    3_000_000  # a data: URI lives in the page; larger data belongs in a reduced form
)
_SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


def _plain(value):
    """A JSON/CSV-ready scalar: floats at full precision (NaN -> None), numpy scalars unwrapped."""
    if isinstance(value, (np.generic,)):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None if math.isnan(value) else ("inf" if value > 0 else "-inf")
    return value


def columns(names, rows) -> dict[str, list]:
    """Download columns named ``names`` from ``rows``, tuples of values in that order."""
    rows = list(rows)
    return {k: [r[i] for r in rows] for i, k in enumerate(names)}


def _columns(data) -> dict[str, list]:
    if not isinstance(data, dict) or not data:
        raise ValueError(
            f"data={type(data).__name__} is not allowed; allowed: a non-empty dict of columns"
        )
    cols = {
        str(k): [_plain(v) for v in np.asarray(col, dtype=object).ravel()]
        for k, col in data.items()
    }
    lengths = {len(v) for v in cols.values()}
    if len(lengths) != 1:
        raise ValueError(
            f"data: columns have different lengths {sorted(lengths)}; allowed: equal lengths"
        )
    return cols


def csv_text(data) -> str:
    """Columns (a dict of equal-length sequences) as CSV text with a header row."""
    cols = _columns(data)
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(cols)
    w.writerows(zip(*cols.values()))
    return out.getvalue()


def json_text(data, name: str = "") -> str:
    """Columns as JSON: {"name": ..., "columns": [...], "data": [[row], ...]} (NaN -> null)."""
    cols = _columns(data)
    return json.dumps(
        {"name": name, "columns": list(cols), "data": [list(r) for r in zip(*cols.values())]},
        allow_nan=False,
        separators=(",", ":"),
    )


def data_uri(text: str, mime: str) -> str:
    return f"data:{mime};charset=utf-8;base64," + base64.b64encode(text.encode()).decode("ascii")


def download(name: str, data, formats=("csv", "json")) -> Markdown:
    """Links that download ``data`` (a dict of equal-length columns) as ``<name>.csv`` and
    ``<name>.json``, embedded in the page as ``data:`` URIs: "Data: CSV · JSON".

    Glue it (``glue("fig-1-data", download(...), display=False)``) and place it under the figure with
    ``{glue:md}`fig-1-data```. Raises ValueError when the files would exceed
    :data:`MAX_DOWNLOAD_BYTES` (then download a reduced form: the plotted numbers only).
    """
    if not isinstance(name, str) or not _SAFE_NAME.match(name):
        raise ValueError(
            f"name={name!r} is not allowed; allowed: letters, digits, '.', '_' and '-'"
        )
    bad = [f for f in formats if f not in ("csv", "json")]
    if bad or not formats:
        raise ValueError(f"formats={formats!r} is not allowed; allowed: 'csv' and/or 'json'")
    files = {
        "csv": (csv_text(data), "text/csv"),
        "json": (json_text(data, name), "application/json"),
    }
    size = sum(len(files[f][0].encode()) for f in formats)
    if size > MAX_DOWNLOAD_BYTES:
        raise ValueError(
            f"data of {name!r} is {size:,} bytes; allowed: at most {MAX_DOWNLOAD_BYTES:,} "
            f"(download the plotted numbers, not every sample)"
        )
    links = [
        f'<a class="data-download" download="{name}.{f}" href="{data_uri(*files[f])}">{f.upper()}</a>'
        for f in formats
    ]
    return Markdown('<span class="data-downloads">Data: ' + " · ".join(links) + "</span>")


def result_columns(results, labels=None, *, layers=None, matrices: bool = True) -> dict[str, list]:
    """The numbers behind a figure of simulation results, as download columns: one row per
    (setting, layer, query i, key j) with the mean score and its SE (``matrices=True``, causal
    triangle, 1-based indices), and one row per (setting, layer) with the recency probability
    (i and j empty; the book's estimate, SimResult.rp). Every row carries the setting's alpha, gamma, norm, n, d and samples.

    ``results``: SimResults (a list, or a dict label -> SimResult); ``layers``: 1-based layers
    to include (default all).
    """
    if isinstance(results, dict):
        labels, results = list(results), list(results.values())
    results = list(results)
    labels = list(labels) if labels is not None else [str(k) for k in range(1, len(results) + 1)]
    if len(labels) != len(results):
        raise ValueError(
            f"labels has length {len(labels)}; allowed: one label per result ({len(results)})"
        )
    rows = []
    for label, res in zip(labels, results):
        cfg = res.config
        setting = (label, cfg.alpha, cfg.gamma, cfg.norm, cfg.n, cfg.d, cfg.samples)
        for layer in range(1, cfg.layers + 1) if layers is None else layers:
            layer = check_int("layer", layer, 1, cfg.layers)
            rows.append((*setting, layer, "recency_probability", "", "", *res.rp(layer)[:2]))
            if matrices:
                rows += [
                    (
                        *setting,
                        layer,
                        "score",
                        int(i) + 1,
                        int(j) + 1,
                        float(res.score_mean[layer - 1, i, j]),
                        float(res.score_sem[layer - 1, i, j]),
                    )
                    for i, j in zip(*np.tril_indices(cfg.n))
                ]
    return columns(
        (
            "setting",
            "alpha",
            "gamma",
            "norm",
            "n",
            "d",
            "samples",
            "layer",
            "quantity",
            "i",
            "j",
            "mean",
            "se",
        ),
        rows,
    )


def curve_columns(series: dict, x_name: str = "x") -> dict[str, list]:
    """Download columns of plotted curves: ``series`` maps a label to (x, mean, se) (se may be
    None for a closed form); one row per point."""
    cols = {"series": [], x_name: [], "mean": [], "se": []}
    for label, (x, mean, se) in series.items():
        x = np.asarray(x, dtype=float).ravel()
        mean = np.asarray(mean, dtype=float).ravel()
        se = np.full(x.shape, np.nan) if se is None else np.asarray(se, dtype=float).ravel()
        if not (x.shape == mean.shape == se.shape):
            raise ValueError(
                f"series {label!r}: x, mean and se have shapes {x.shape}, {mean.shape}, "
                f"{se.shape}; allowed: equal lengths"
            )
        cols["series"] += [str(label)] * x.size
        cols[x_name] += x.tolist()
        cols["mean"] += mean.tolist()
        cols["se"] += se.tolist()
    return cols
