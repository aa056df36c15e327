"""Python's garbage collector in the Sphinx process: fewer young collections while the book builds.

Reading and writing the book's pages makes millions of docutils nodes, dicts and strings, and the
default thresholds (a young collection every 700 allocations) have the collector walk them again and
again, on the one core that works alone once the pages have run (the kernels' figures and sympy do the
same). While Sphinx works, the thresholds are :data:`companion.grid.COLLECTOR_THRESHOLDS`
(the build's kernels use the same); the previous ones come back when the build has finished. The
generated pages are the same: only when unreachable objects are freed changes.
"""

from __future__ import annotations

import gc

from sphinx.application import Sphinx

from companion.grid import COLLECTOR_THRESHOLDS


def setup(app: Sphinx):
    previous = gc.get_threshold()
    gc.set_threshold(*COLLECTOR_THRESHOLDS)
    app.connect("build-finished", lambda app, exc: gc.set_threshold(*previous))
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
