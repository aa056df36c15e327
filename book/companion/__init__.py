"""companion: the book's own code, beside its pages.

The simulator is :mod:`recency_lib` (installable on its own); this package is what the chapters
share on top of it and nothing the simulator needs: the verdicts on the paper's claims
(:mod:`~companion.claims`), number formatting and tables (:mod:`~companion.report`), the pages' own
studies (:mod:`~companion.landing`, :mod:`~companion.theorem1`: the size of Theorem 1's effect,
:mod:`~companion.depth`, :mod:`~companion.position`), the book's
conventions (:mod:`~companion.conventions`), figures (:mod:`~companion.plotting`), the errata and
closed-form tables of Appendix A (:mod:`~companion.closedforms`, :mod:`~companion.errata`,
:mod:`~companion.symbolic`), chapter 8's studies (:mod:`~companion.beyond`), the explorer page
(:mod:`~companion.explorer`), the papermill grid of Appendix B (:mod:`~companion.grid`) and the
reproducibility page's provenance (:mod:`~companion.provenance`).

The arrow points one way: ``companion`` imports ``recency_lib``, never the reverse.

Every page checks its parameters first, each by its own name (:mod:`~companion.params`).
``python -m companion rerun PAGE OUT_DIR -p NAME VALUE ...`` reruns a chapter with other parameters
(checked the same way before any work; the derived sample sizes follow ``samples``) and renders it in its
chapter's place in the book, whose other pages come from the book's build, with a banner saying what ran;
``python -m companion render NOTEBOOK`` renders an executed notebook so (:mod:`companion.rerun`).
"""

import os


def in_book() -> bool:
    """True while the book is being built (its extension sets ``COMPANION_IN_BOOK``): pages then glue
    figures and tables for the book to place; a rerun outside the build also displays them, so the
    executed notebook shows its results in Jupyter or nbconvert."""
    return os.environ.get("COMPANION_IN_BOOK") == "1"
