"""What the landing page and the preliminaries compute beside the verdicts: the opening's words,
the Cite section, Definition 1 on single sequences, the dense-versus-Gram check's entries."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from recency_lib.result import SimResult

from . import report
from .claims import lower_entries

ROOT = Path(__file__).resolve().parents[2]  # the repository: _config.yml, CITATION.cff
CONFIG = ROOT / "_config.yml"
CITATION = ROOT / "CITATION.cff"
REFERENCES = ROOT / "book" / "references.bib"

#: The claims of the landing page's opening, by the glue key's suffix.
FINDING_CLAIMS = {
    "fig1": "Figure 1",
    "thm1": "Theorem 1",
    "eq5": "Eq. (5)",
    "corr": "Theorem 1, corrected",
    "prop1": "Proposition 1",
}


def findings(verdicts) -> dict[str, str]:
    """The glue key's suffix -> the verdict word of each claim of :data:`FINDING_CLAIMS`."""
    by = {v.claim: v.word for v in verdicts}
    return {key: by[claim] for key, claim in FINDING_CLAIMS.items()}


# -- the Cite section ------------------------------------------------------------------------------


def _yaml(path) -> dict:
    import yaml

    return yaml.safe_load(Path(path).read_text(encoding="utf-8"))


def repository_url(config=CONFIG) -> str:
    """The companion's repository, ``repository.url`` of the top-level ``_config.yml``."""
    url = (_yaml(config).get("repository") or {}).get("url")
    if not isinstance(url, str) or not url.startswith("https://"):
        raise ValueError(f"{config}: repository.url is {url!r}; allowed: an https:// URL")
    return url


def bib_entry(key: str, path=REFERENCES) -> str:
    """The BibTeX entry ``key`` of ``path``, verbatim."""
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
    """The book's BibTeX entry from ``CITATION.cff``'s preferred citation, ``url``, ``version``."""
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


# -- Definition 1 on single sequences --------------------------------------------------------------


@dataclass(frozen=True)
class SingleOrder:
    """The ``share`` (``count``) of sequences whose own score matrix of ``layer`` is in order, and
    per query ``rows`` (i = 3..n) the share whose row i is, beside ``exchangeable`` = 1/(i - 1)!,
    the chance for i - 1 exchangeable keys."""

    layer: int
    share: float
    count: int
    rows: np.ndarray
    row_share: np.ndarray
    row_se: np.ndarray
    exchangeable: np.ndarray


def single_sequence_order(stat, layer: int) -> SingleOrder:
    """:class:`SingleOrder` of 1-based ``layer`` of a statistics.ordered_rows statistic."""
    mean, sem = np.asarray(stat.mean)[layer - 1], np.asarray(stat.sem)[layer - 1]  # (n + 1,)
    rows, share = np.arange(3, mean.shape[0]), float(mean[0])
    chance = np.array([1.0 / math.factorial(i - 1) for i in rows])
    count = round(share * stat.samples)
    return SingleOrder(layer, share, count, rows, mean[rows], sem[rows], chance)


def single_order_rows(orders) -> list[dict]:
    """The table of layers' :class:`SingleOrder`: per query i the shares in order and 1/(i-1)!."""
    first = orders[0]
    return [
        {
            "query $i$": str(int(i)),
            **{f"layer {o.layer}": report.pm(o.row_share[k], o.row_se[k]) for o in orders},
            "$1/(i-1)!$": report.num(first.exchangeable[k], 3),
        }
        for k, i in enumerate(first.rows)
    ]


# -- the dense-versus-Gram check -------------------------------------------------------------------


def exact_entries(res_a: SimResult, res_b: SimResult) -> dict[str, int]:
    """How many noiseless entries (claims.lower_entries) both results share, by kind."""
    return {
        key: int(np.sum(lower_entries(res_a, name)[2] & lower_entries(res_b, name)[2]))
        for name, key in (("score", "score"), ("attn", "attention"))
    }


def typical_score_se(res: SimResult, layer: int) -> float:
    """The median SE of the off-diagonal mean scores of the 1-based ``layer`` (NaN when n < 2)."""
    lower = np.tri(res.config.n, k=-1, dtype=bool)
    if not np.any(lower):
        return math.nan
    return float(np.median(res.score_sem[layer - 1][lower]))
