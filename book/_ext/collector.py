"""Python's garbage collector in the Sphinx process: fewer young collections while the book builds.

Reading and writing the pages makes millions of docutils nodes, and the default thresholds (a young
collection every 700 allocations) have the collector walk them again and again. While Sphinx works,
the thresholds are :data:`companion.grid.COLLECTOR_THRESHOLDS` (the build's kernels use the same);
the pages are the same, only when unreachable objects are freed changes.
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
