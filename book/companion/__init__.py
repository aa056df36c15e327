"""companion: the book's own code beside its pages, on top of the simulator :mod:`recency_lib`.

Verdicts, number formatting, figures, tables, Appendix A's errata, the explorer, Appendix B's
papermill grid (:mod:`~companion.grid`), every page's parameter checks (:mod:`~companion.params`)
and reruns of a chapter (``python -m companion rerun``, :mod:`~companion.rerun`). It imports
``recency_lib``, never the reverse."""

import os


def in_book() -> bool:
    """True while the book builds (book/_ext/fresh_cache.py sets ``COMPANION_IN_BOOK``): pages then
    glue figures and tables for the book to place; outside it (a rerun) they display them too."""
    return os.environ.get("COMPANION_IN_BOOK") == "1"
