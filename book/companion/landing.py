"""What the landing page, the introduction and the preliminaries compute beyond the verdicts.

* :func:`findings`: the verdict words the landing page states in its opening sentences (its numbers are
  :mod:`companion.quantities`', the chapters' own);
* :func:`repository_url`, :func:`bib_entry`, :func:`book_bibtex`: the landing page's Cite section, from
  ``_config.yml`` (the repository's URL, the one place to change it), ``book/references.bib`` (the
  paper) and ``CITATION.cff`` (the book's title, authors and year), with the simulator's version;
* statistics.ordered_rows (a statistic for ``recency_lib.engines.sequence_statistic``) and
  :func:`single_sequence_order`: how often a single sequence's own score matrix satisfies Definition 1;
* :func:`exact_entries`, :func:`typical_score_se`: what the dense-versus-Gram check compares, and at
  which precision.

Functions take results and never simulate.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from recency_lib.result import SimResult
from recency_lib.validation import check_int

from . import report

ROOT = Path(__file__).resolve().parents[2]  # the repository: _config.yml, CITATION.cff
CONFIG = ROOT / "_config.yml"
CITATION = ROOT / "CITATION.cff"
REFERENCES = ROOT / "book" / "references.bib"


# -- the opening sentences of the landing page -----------------------------------------------------

#: The claims the landing page's opening sentences quote, by the verdict's claim name.
FINDING_CLAIMS = ("Figure 1", "Theorem 1", "Eq. (5)", "Theorem 1, corrected", "Proposition 1")


def findings(verdicts) -> dict[str, str]:
    """glue key suffix -> the verdict word of each claim of :data:`FINDING_CLAIMS` ("fig1", "thm1", "eq5",
    "corr", "prop1"), what the landing page's opening states."""
    by = {v.claim: v for v in verdicts}
    missing = [c for c in FINDING_CLAIMS if c not in by]
    if missing:
        raise ValueError(
            f"verdicts lack {', '.join(missing)}; allowed: the list of claims.verdict_table"
        )
    return dict(zip(("fig1", "thm1", "eq5", "corr", "prop1"), (by[c].word for c in FINDING_CLAIMS)))


# -- the Cite section ------------------------------------------------------------------------------


def _yaml(path) -> dict:
    import yaml

    with open(path, encoding="utf-8") as fh:
        data = yaml.safe_load(fh)
    if not isinstance(data, dict):
        raise ValueError(f"{path} is not a YAML mapping")
    return data


def repository_url(config=CONFIG) -> str:
    """The companion's repository, ``repository.url`` of the top-level ``_config.yml``."""
    url = (_yaml(config).get("repository") or {}).get("url")
    if not isinstance(url, str) or not url.startswith("https://"):
        raise ValueError(f"{config}: repository.url is {url!r}; allowed: an https:// URL")
    return url


def bib_entry(key: str, path=REFERENCES) -> str:
    """The BibTeX entry ``key`` of ``path`` (book/references.bib), verbatim."""
    text = Path(path).read_text(encoding="utf-8")
    m = re.search(r"@\w+\{" + re.escape(key) + r",", text)
    if not m:
        raise ValueError(f"key={key!r} is not in {Path(path).name}")
    depth = 0
    for k in range(text.index("{", m.start()), len(text)):
        depth += {"{": 1, "}": -1}.get(text[k], 0)
        if depth == 0:
            return text[m.start() : k + 1]
    raise ValueError(f"{Path(path).name}: the entry {key!r} is not closed")


def _bib_value(text: str) -> str:
    return str(text).replace("\u2014", "---").replace("\u2013", "--")


def book_bibtex(
    version: str, url: str | None = None, citation=CITATION, key: str = "companion"
) -> str:
    """The book's BibTeX entry: title, authors and year of ``CITATION.cff``'s preferred citation, the
    repository's URL (:func:`repository_url` unless given) and ``version`` (recency_lib.__version__)."""
    cff = _yaml(citation).get("preferred-citation") or {}
    authors = " and ".join(
        "{" + _bib_value(a["name"]) + "}"
        if "name" in a
        else f"{_bib_value(a['family-names'])}, {_bib_value(a.get('given-names', ''))}".rstrip(", ")
        for a in cff.get("authors", [])
    )
    fields = {
        "title": _bib_value(cff.get("title", "")),
        "author": authors,
        "year": str(cff.get("year", "")),
        "version": str(version),
        "url": url or repository_url(),
        "note": "Companion to Kim et al., Findings of ACL 2026 (arXiv:2509.21042)",
    }
    width = max(map(len, fields))
    body = ",\n".join(f"  {k.ljust(width)} = {{{v}}}" for k, v in fields.items() if v)
    return f"@software{{{key},\n{body}\n}}"


def bibtex_block(entry: str) -> report.Markdown:
    """A BibTeX entry as a highlighted block for {glue:md}."""
    return report.Markdown(f"```bibtex\n{entry}\n```")


# -- Definition 1 on single sequences ------------------------------------------------------------------


@dataclass(frozen=True)
class SingleOrder:
    """How often one sequence's own score matrix of one layer has recency bias (:func:`single_sequence_order`):
    ``share`` ± ``se`` of the ``samples`` sequences, ``count`` of them, and per query ``rows`` (1-based
    i = 3..n) the share whose row i is in order (± SE), beside ``exchangeable``, 1/(i - 1)!: the chance
    that i - 1 exchangeable keys come in increasing order."""

    layer: int
    samples: int
    share: float
    se: float
    count: int
    rows: np.ndarray
    row_share: np.ndarray
    row_se: np.ndarray
    exchangeable: np.ndarray


def single_sequence_order(stat, layer: int) -> SingleOrder:
    """:class:`SingleOrder` of 1-based ``layer`` from ``stat``, a SequenceStatistic of statistics.ordered_rows."""
    layers = stat.config.layers
    layer = check_int("layer", layer, 1, layers)
    mean, sem = np.asarray(stat.mean)[layer - 1], np.asarray(stat.sem)[layer - 1]
    n = mean.shape[0] - 1
    rows = np.arange(3, n + 1)
    return SingleOrder(
        layer,
        int(stat.samples),
        float(mean[0]),
        float(sem[0]),
        int(round(mean[0] * stat.samples)),
        rows,
        mean[rows],
        sem[rows],
        np.array([1.0 / math.factorial(i - 1) for i in rows]),
    )


def single_order_rows(orders) -> list[dict]:
    """The table of several :class:`SingleOrder` (one per layer, same setting): per query i, the share of
    sequences whose row i is in order in each layer, and 1/(i - 1)!."""
    orders = list(orders)
    if not orders or any(o.rows.shape != orders[0].rows.shape for o in orders):
        raise ValueError("orders must be a non-empty list of SingleOrder of one setting")
    return [
        {
            "query $i$": str(int(i)),
            **{f"layer {o.layer}": report.pm(o.row_share[k], o.row_se[k]) for o in orders},
            "$1/(i-1)!$": report.num(orders[0].exchangeable[k], 3),
        }
        for k, i in enumerate(orders[0].rows)
    ]


# -- the dense-versus-Gram check ------------------------------------------------------------------------


def exact_entries(res_a: SimResult, res_b: SimResult) -> dict[str, int]:
    """How many of the entries that ``claims.engines_agree`` compares without sampling noise are scores
    ("score": the diagonal, sqrt(d) after normalization) and attention weights ("attention": A_11 = 1),
    by the same rule (an SE of float rounding in both results)."""
    lower = np.tri(res_a.config.n, dtype=bool)
    out = {}
    for name, key in (("score", "score"), ("attn", "attention")):
        m1, s1 = (getattr(res_a, f"{name}_{k}")[:, lower] for k in ("mean", "sem"))
        m2, s2 = (getattr(res_b, f"{name}_{k}")[:, lower] for k in ("mean", "sem"))
        rtol = report.EXACT_RTOL
        exact = (s1 <= rtol * np.maximum(1.0, np.abs(m1))) & (
            s2 <= rtol * np.maximum(1.0, np.abs(m2))
        )
        out[key] = int(np.sum(exact))
    return out


def typical_score_se(res: SimResult, layer: int) -> float:
    """The median standard error of the off-diagonal mean scores of 1-based ``layer``: the precision of a
    comparison of mean scores. NaN when n < 2."""
    layer = check_int("layer", layer, 1, res.config.layers)
    n = res.config.n
    lower = np.tri(n, k=-1, dtype=bool)
    if not np.any(lower):
        return math.nan
    return float(np.median(res.score_sem[layer - 1][lower]))
