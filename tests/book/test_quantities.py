"""One value per quantity: a number the book quotes on several pages is glued on each under its
``q-`` key (companion.quantities), and every page of the built book shows the same text for it."""

from __future__ import annotations

import pytest
from bookutils import REPO, page_source, toc_pages

from companion import quantities


def test_at_renames_the_quantities_of_one_hidden_size():
    values = {
        "q-theorem1-trend-64": "a",
        "q-theorem1-trend-64-z": "+5",
        "q-eq5-ratio-64": "b",
        "q-theorem1-trend-16": "c",
    }
    assert quantities.at(values, 64, "page") == {
        "page-theorem1-trend": "a",
        "page-theorem1-trend-z": "+5",
        "page-eq5-ratio": "b",
    }
    assert quantities.at(values, 32, "page") == {}


def glued_quantities(cache, path) -> dict[str, str]:
    """``q-`` key -> text of the executed page ``path`` (its current version in the build's
    execution cache)."""
    _, nb = cache.merge_match_into_file(str(path))
    out = {}
    for cell in nb.cells:
        for o in cell.get("outputs", []):
            name = o.get("metadata", {}).get("scrapbook", {}).get("name", "")
            if name.startswith("q-"):
                out[name] = next(v for k, v in o["data"].items() if k.endswith("text/plain"))
    return out


@pytest.mark.book
def test_every_page_quotes_a_quantity_with_one_value(built_book):
    from jupyter_cache import get_cache

    cache = get_cache(REPO / "_build" / ".jupyter_cache")
    by_key: dict[str, dict[str, str]] = {}
    for page in toc_pages():
        path = page_source(page)
        if path.suffix != ".ipynb":
            continue
        for key, text in glued_quantities(cache, path).items():
            by_key.setdefault(key, {})[page] = text
    shared = {k: pages for k, pages in by_key.items() if len(pages) > 1}
    assert len(shared) >= 5, sorted(by_key)  # not vacuous: Theorem 1's and Proposition 1's numbers
    assert {
        "q-theorem1-trend-64",
        "q-eq5-ratio-64",
        "q-corrected-ratio-64",
        "q-prop1-trend-64",
    } <= set(shared)
    differ = {k: pages for k, pages in by_key.items() if len(set(pages.values())) > 1}
    assert not differ, differ
